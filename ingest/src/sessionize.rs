//! Turning sampled up/down states into up-sessions (the tick rule of the traces MANIFEST).
//!
//! Sample `i` at time `t_i` says the node was up or down during `[t_i, t_{i+1})`. A maximal run of
//! up samples `i0 … i1-1` is one session `[t_{i0}, t_{i1})`, ended by an event (the node went
//! away) when sample `i1` exists and is down. A run that reaches the last sample, or a hole in the
//! observation (a spacing larger than `HOLE_FACTOR × gap`), is right-censored at the last up
//! sample's time plus `gap`. A run that starts at the first sample, or right after a hole, is left
//! truncated: its true start is unknown.

use crate::model::{end_cause, NodeInfo, NodeKey, Session};

/// A spacing larger than this many nominal gaps is an observation hole.
pub const HOLE_FACTOR: f64 = 2.0;

/// One observation of a node's state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// When the sample was taken (seconds).
    pub t: f64,
    /// Whether the node was up.
    pub up: bool,
}

/// How sessions from one series are labelled.
#[derive(Debug, Clone)]
pub struct SeriesLabels<'a> {
    /// Node key.
    pub node_id: &'a str,
    /// Nominal spacing of samples in seconds (also the resolution of the times).
    pub gap: f64,
    /// `end_cause` for a session ended by a down sample (e.g. `preempted`, `unobtainable`).
    pub event_cause: &'a str,
}

/// Sessions of a uniformly spaced series: sample `i` is at `origin + i × gap`.
pub fn ticks_to_sessions(ups: &[bool], origin: f64, labels: &SeriesLabels) -> Vec<Session> {
    let samples: Vec<Sample> = ups
        .iter()
        .enumerate()
        .map(|(i, &up)| Sample {
            t: origin + i as f64 * labels.gap,
            up,
        })
        .collect();
    samples_to_sessions(&samples, labels)
}

/// Sessions of a time-ordered series of samples (see the module docs for the rule).
pub fn samples_to_sessions(samples: &[Sample], labels: &SeriesLabels) -> Vec<Session> {
    let gap = labels.gap;
    let node: NodeKey = labels.node_id.into();
    let mut out = Vec::new();
    let mut run: Option<(usize, bool)> = None; // (first index, left truncated)
    for i in 0..samples.len() {
        let hole_before = i > 0 && samples[i].t - samples[i - 1].t > HOLE_FACTOR * gap;
        if hole_before {
            if let Some((i0, lt)) = run.take() {
                out.push(session(
                    samples,
                    i0,
                    lt,
                    samples[i - 1].t + gap,
                    false,
                    "observation-gap",
                    (&node, labels),
                ));
            }
        }
        let s = samples[i];
        match (s.up, run) {
            (true, None) => run = Some((i, i == 0 || hole_before)),
            (false, Some((i0, lt))) => {
                out.push(session(
                    samples,
                    i0,
                    lt,
                    s.t,
                    true,
                    labels.event_cause,
                    (&node, labels),
                ));
                run = None;
            }
            _ => {}
        }
    }
    if let (Some((i0, lt)), Some(last)) = (run, samples.last()) {
        out.push(session(
            samples,
            i0,
            lt,
            last.t + gap,
            false,
            "observation-end",
            (&node, labels),
        ));
    }
    out
}

fn session(
    samples: &[Sample],
    i0: usize,
    left_truncated: bool,
    end: f64,
    event: bool,
    cause: &str,
    (node, labels): (&NodeKey, &SeriesLabels),
) -> Session {
    Session {
        node_id: node.clone(),
        start: samples[i0].t,
        end,
        event,
        end_cause: end_cause(cause),
        left_truncated,
        entry_s: 0.0,
        resolution_s: labels.gap,
    }
}

/// The node record of a sampled series: observed from the first sample to the last plus a gap.
pub fn series_node(samples: &[Sample], node_id: &str, gap: f64) -> NodeInfo {
    NodeInfo {
        node_id: node_id.to_string(),
        observed_from: samples.first().map_or(0.0, |s| s.t),
        observed_to: samples.last().map_or(0.0, |s| s.t + gap),
        ..NodeInfo::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> SeriesLabels<'static> {
        SeriesLabels {
            node_id: "n",
            gap: 10.0,
            event_cause: "preempted",
        }
    }

    #[test]
    fn tick_rule_runs_censoring_and_truncation() {
        let ups = [true, true, false, true, false, false, true, true];
        let s = ticks_to_sessions(&ups, 0.0, &labels());
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].start, s[0].end, s[0].event, s[0].left_truncated),
            (0.0, 20.0, true, true)
        );
        assert_eq!(
            (s[1].start, s[1].end, s[1].event, s[1].left_truncated),
            (30.0, 40.0, true, false)
        );
        assert_eq!((s[2].start, s[2].end, s[2].event), (60.0, 80.0, false));
        assert_eq!(s[2].end_cause, "observation-end");
    }

    #[test]
    fn hole_censors_and_truncates() {
        let samples = [
            Sample { t: 0.0, up: false },
            Sample { t: 10.0, up: true },
            Sample { t: 20.0, up: true },
            Sample { t: 100.0, up: true },
            Sample {
                t: 110.0,
                up: false,
            },
        ];
        let s = samples_to_sessions(&samples, &labels());
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].start, s[0].end, s[0].event), (10.0, 30.0, false));
        assert_eq!(s[0].end_cause, "observation-gap");
        assert!(!s[0].left_truncated);
        assert_eq!(
            (s[1].start, s[1].end, s[1].event, s[1].left_truncated),
            (100.0, 110.0, true, true)
        );
    }

    #[test]
    fn all_down_gives_nothing() {
        assert!(ticks_to_sessions(&[false; 5], 0.0, &labels()).is_empty());
    }
}
