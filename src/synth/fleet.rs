//! Synthetic fleets whose generating laws are known, for controls: an FTA `event_trace.tab`
//! (ingest with `--format fta --fta-censored-tail`) and the `laws.csv` that `policy.truth` reads
//! ([`crate::survival::truth`]), so `hazard-truth` can price with the true law.
//!
//! The **two-class** fleet is the positive control of the hazard question: nodes that differ
//! strongly in age-dependent risk at the same scale. Even nodes have up-sessions ~ Weibull(k =
//! 6, lambda = 1,200 s), a sharply increasing hazard around a typical reclaim age (almost every
//! session ends between 12 and 26 minutes); odd nodes ~ Weibull(k = 0.5, lambda = 1,200 s), a
//! decreasing hazard (many sessions die within minutes, the survivors live for hours). Down
//! gaps are exponential with a mean of 5 minutes. A scheduler that reads `S(t | a)` should
//! avoid an even node close to 20 minutes old and prefer an odd node that has already lived
//! long; a hazard-blind one cannot tell them apart.
//!
//! The **equal** fleet is the negative control: every node's up-sessions are exponential with
//! the same mean (1,200 s), so neither a node's age nor its own rate says anything about when
//! it will go, and no policy that reads them can beat one that does not, once the curves and
//! rates are fitted on the training part only (a policy told rates that include the windows'
//! own failures would).

use std::fmt::Write as _;

use super::traces::SampleFile;
use crate::rng::Rng;
use crate::survival::truth::{Law, HEADER};

/// The fleets `synth traces --fleet` generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fleet {
    /// Half increasing-hazard (Weibull k 6), half decreasing-hazard (Weibull k 0.5) nodes, both
    /// with scale 1,200 s.
    TwoClass,
    /// Every node exponential with the mean [`SCALE_S`]: the negative control.
    Equal,
}

/// Shape of the increasing-hazard class.
pub const INCREASING_SHAPE: f64 = 6.0;
/// Shape of the decreasing-hazard class.
pub const DECREASING_SHAPE: f64 = 0.5;
/// Scale of both classes, seconds.
pub const SCALE_S: f64 = 1200.0;
/// Mean down gap, seconds.
pub const DOWN_MEAN_S: f64 = 300.0;

/// How big a generated fleet is.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetOptions {
    /// Nodes (even indices increasing-hazard, odd decreasing).
    pub nodes: usize,
    /// Length of the trace, days.
    pub days: f64,
    /// The store source name the trace will be ingested as (written into `laws.csv`).
    pub source: String,
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            nodes: 12,
            days: 2.0,
            source: "two-class".into(),
        }
    }
}

impl Fleet {
    /// The generating law of node `i`.
    pub fn law(&self, i: usize) -> Law {
        match self {
            Fleet::Equal => Law::Exponential { mean_s: SCALE_S },
            Fleet::TwoClass => Law::Weibull {
                shape: if i.is_multiple_of(2) {
                    INCREASING_SHAPE
                } else {
                    DECREASING_SHAPE
                },
                scale_s: SCALE_S,
            },
        }
    }

    /// The trace (`event_trace.tab`, FTA format: each node starts with a down interval, then
    /// alternates up and down and ends with a down row; the session live at the end is for
    /// `--fta-censored-tail` to add as censored) and
    /// `laws.csv`, deterministic for `seed`.
    pub fn files(&self, opts: &FleetOptions, seed: u64) -> Vec<SampleFile> {
        let t0 = 1_704_067_200.0; // 2024-01-01T00:00:00Z
        let t1 = t0 + opts.days * 86_400.0;
        let mut trace = String::from(
            "event_id\tcomponent_id\tnode_id\tplatform_id\tnode_name\tevent_type\tevent_start_time\tevent_stop_time\tevent_end_reason\n",
        );
        let mut laws = format!("{HEADER}\n");
        for node in 0..opts.nodes {
            let law = self.law(node);
            let _ = writeln!(laws, "{}", law.row(&opts.source, &node.to_string()));
            let mut rng = Rng::stream(seed, 900 + node as u64);
            let mut t = t0;
            let mut up = false;
            let mut k = 0;
            loop {
                let len = if up {
                    match law {
                        Law::Weibull { shape, scale_s } => rng.weibull(shape, scale_s),
                        Law::Exponential { mean_s } => rng.exponential(mean_s),
                    }
                } else {
                    rng.exponential(DOWN_MEAN_S)
                };
                // Whole seconds, at least one.
                let end = (t + len.max(1.0)).round().max(t + 1.0);
                if up && end >= t1 {
                    // The session outlives the trace: it is left out, and `ingest --format fta
                    // --fta-censored-tail` adds it back as a right-censored session from the
                    // last repair to the trace's end (censored, not failed).
                    break;
                }
                let reason = if up { 1005 } else { 8000 };
                let _ = writeln!(
                    trace,
                    "{k}\t0\t{node}\t1\tc{node:02}\t{}\t{}\t{}\t{reason}",
                    up as u8, t as i64, end as i64
                );
                k += 1;
                t = end;
                if !up && end >= t1 {
                    break;
                }
                up = !up;
            }
        }
        vec![
            SampleFile {
                rel: "event_trace.tab".into(),
                content: trace,
            },
            SampleFile {
                rel: "laws.csv".into(),
                content: laws,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::survival::truth::parse;

    #[test]
    fn two_class_laws_and_sessions_match() {
        let opts = FleetOptions {
            nodes: 4,
            days: 20.0,
            source: "tc".into(),
        };
        let files = Fleet::TwoClass.files(&opts, 7);
        assert_eq!(files, Fleet::TwoClass.files(&opts, 7));
        let laws = parse(&files[1].content, "laws.csv").unwrap();
        assert_eq!(laws.len(), 4);
        assert_eq!(laws[&("tc".into(), "1".into())], Fleet::TwoClass.law(1));
        // Up sessions of each class: the increasing class is tight around its scale, the
        // decreasing one spread (median scale * ln 2^(1/k)).
        let mut ups: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for l in files[0].content.lines().skip(1) {
            let f: Vec<&str> = l.split('\t').collect();
            if f[5] == "1" {
                let node: usize = f[2].parse().unwrap();
                let len = f[7].parse::<f64>().unwrap() - f[6].parse::<f64>().unwrap();
                ups[node % 2].push(len);
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let m_inc = median(&mut ups[0]);
        let m_dec = median(&mut ups[1]);
        let want_inc = SCALE_S * std::f64::consts::LN_2.powf(1.0 / INCREASING_SHAPE);
        let want_dec = SCALE_S * std::f64::consts::LN_2.powf(1.0 / DECREASING_SHAPE);
        assert!(
            (m_inc - want_inc).abs() < 0.05 * want_inc,
            "{m_inc} vs {want_inc}"
        );
        assert!(
            (m_dec - want_dec).abs() < 0.25 * want_dec,
            "{m_dec} vs {want_dec}"
        );
    }
}
