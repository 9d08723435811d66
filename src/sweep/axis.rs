//! Comparing the values of one grid axis: which curve reading, link or tier makes `hazard`
//! do best, and where.
//!
//! Cells that agree on every other axis (a *context*) replay the same windows of the same
//! trace with the same requests, so `hazard` under one value of the axis pairs by window with
//! `hazard` under another. Per context the difference is the mean over windows of
//! `hazard[value] - hazard[reference]` with its paired t interval (the one the comparison rows
//! use, [`crate::replay::stats`]); over contexts it is the mean of the per-context differences,
//! with a t interval over contexts (windows of one context are not independent draws of the
//! map, so contexts are the units). `better`/`worse` count the contexts whose own interval
//! excludes 0.

use std::collections::BTreeMap;

use super::cell::{CellResult, MAP_METRICS};
use super::error::SweepError;
use crate::replay::metrics::Better;
use crate::replay::stats::paired_t;
use crate::replay::{Metric, PairedDiff};

/// One value of the axis against the reference value, over the contexts of one group.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisRow {
    /// The value of the `within` axis the row summarises (`all` without one).
    pub within: String,
    /// The axis value.
    pub value: String,
    /// The reference value.
    pub reference: String,
    /// Contexts with both values and per-window results.
    pub contexts: usize,
    /// Mean over contexts of `hazard[value] - hazard[reference]` (negative = the value is
    /// better, positive for a metric where higher is better), with the cluster-bootstrap
    /// interval.
    pub diff: Option<PairedDiff>,
    /// Contexts where the value is better with a paired interval that excludes 0.
    pub better: usize,
    /// Contexts where it is worse so.
    pub worse: usize,
}

/// Compares the values of `axis` for `hazard` on `metric` (one of [`MAP_METRICS`]), each
/// against `reference` (default: the axis's first value), grouped by the values of `within`.
pub fn compare_axis(
    cells: &[CellResult],
    axis: &str,
    within: Option<&str>,
    reference: Option<&str>,
    metric: Metric,
) -> Result<Vec<AxisRow>, SweepError> {
    let bad = |message: String| SweepError::Axis(message);
    let m = MAP_METRICS
        .iter()
        .position(|x| *x == metric)
        .ok_or_else(|| {
            bad(format!(
                "metric {} is not one the sweep keeps per window ({})",
                metric.key(),
                MAP_METRICS.map(|m| m.key()).join(", ")
            ))
        })?;
    let axes: Vec<&str> = cells
        .first()
        .map(|c| c.axes.iter().map(|(k, _)| k.as_str()).collect())
        .unwrap_or_default();
    for (what, key) in [("--axis", Some(axis)), ("--within", within)] {
        if let Some(k) = key {
            if !axes.contains(&k) {
                return Err(bad(format!(
                    "{what} {k}: not an axis of this sweep (axes: {})",
                    axes.join(", ")
                )));
            }
        }
    }
    if within == Some(axis) {
        return Err(bad("--within must name another axis than --axis".into()));
    }
    if let Some(c) = cells.iter().find(|c| c.hazard_windows.is_empty()) {
        return Err(bad(format!(
            "cell {} has no per-window values of hazard (it was stored by an older version, or \
             hazard did not run): run the sweep again",
            c.key
        )));
    }
    let value_of = |c: &CellResult, k: &str| -> String {
        c.axes
            .iter()
            .find(|(ak, _)| ak == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut values: Vec<String> = Vec::new();
    let mut groups: Vec<String> = Vec::new();
    // context -> axis value -> cell
    let mut contexts: BTreeMap<Vec<(String, String)>, BTreeMap<String, &CellResult>> =
        BTreeMap::new();
    for c in cells {
        let v = value_of(c, axis);
        if !values.contains(&v) {
            values.push(v.clone());
        }
        let g = within.map_or_else(|| "all".to_string(), |w| value_of(c, w));
        if !groups.contains(&g) {
            groups.push(g);
        }
        let ctx: Vec<(String, String)> =
            c.axes.iter().filter(|(k, _)| k != axis).cloned().collect();
        contexts.entry(ctx).or_default().insert(v, c);
    }
    let reference = match reference {
        Some(r) if values.iter().any(|v| v == r) => r.to_string(),
        Some(r) => {
            return Err(bad(format!(
                "--reference {r}: not a value of {axis} (values: {})",
                values.join(", ")
            )))
        }
        None => values.first().cloned().unwrap_or_default(),
    };
    let mut rows = Vec::new();
    for g in &groups {
        for v in values.iter().filter(|v| **v != reference) {
            let mut means = Vec::new();
            let (mut better, mut worse) = (0, 0);
            for (ctx, by_value) in &contexts {
                if let Some(w) = within {
                    let in_group = ctx.iter().any(|(k, x)| k == w && x == g);
                    if !in_group {
                        continue;
                    }
                }
                let (Some(a), Some(b)) = (by_value.get(v), by_value.get(&reference)) else {
                    continue;
                };
                let diffs: Vec<f64> = a
                    .hazard_windows
                    .iter()
                    .filter_map(|(w, x)| Some(x[m]? - b.hazard_windows.get(w)?[m]?))
                    .collect();
                if diffs.is_empty() {
                    continue;
                }
                let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
                let d = paired_diff(mean, &diffs);
                // Lower is better except for a metric where higher is (goodput per dollar).
                let good = if metric.def().better == Better::Higher {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Less
                };
                match d.direction() {
                    Some(o) if o == good => better += 1,
                    Some(_) => worse += 1,
                    None => {}
                }
                means.push(mean);
            }
            let diff = (!means.is_empty()).then(|| {
                let mean = means.iter().sum::<f64>() / means.len() as f64;
                paired_diff(mean, &means)
            });
            rows.push(AxisRow {
                within: g.clone(),
                value: v.clone(),
                reference: reference.clone(),
                contexts: means.len(),
                diff,
                better,
                worse,
            });
        }
    }
    Ok(rows)
}

/// The mean `diff` of `diffs` with its paired t interval and p-value ([`paired_t`]).
fn paired_diff(diff: f64, diffs: &[f64]) -> PairedDiff {
    let t = paired_t(diffs);
    PairedDiff {
        diff,
        ci_low: t.map(|t| t.ci[0]),
        ci_high: t.map(|t| t.ci[1]),
        p_value: t.and_then(|t| t.p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(reading: &str, source: &str, per_window: &[f64]) -> CellResult {
        CellResult {
            index: 0,
            key: format!("source={source},reading={reading}"),
            axes: vec![
                ("source".into(), source.into()),
                ("reading".into(), reading.into()),
            ],
            config: String::new(),
            rows: Vec::new(),
            vs_uptime: None,
            overlap_gain: None,
            migration_effect: None,
            vs_pooled: None,
            retained_effect: None,
            idle_effect: None,
            reference: "least-loaded".into(),
            vs_reference: None,
            q_values: Default::default(),
            requests: 0,
            hazard_windows: per_window
                .iter()
                .enumerate()
                .map(|(w, &x)| (w, [Some(x), None, None, Some(x)]))
                .collect(),
        }
    }

    /// Two readings in two sources: step is about 1 lower than linear in every window of a
    /// (-1, -0.9, -1.1), about 2 higher in every window of b (2.1, 1.9, 2): differences with
    /// spread (identical ones would be no test).
    fn two_contexts() -> Vec<CellResult> {
        vec![
            cell("linear", "a", &[10.0, 20.0, 30.0]),
            cell("step", "a", &[9.0, 19.1, 28.9]),
            cell("linear", "b", &[5.0, 6.0, 7.0]),
            cell("step", "b", &[7.1, 7.9, 9.0]),
        ]
    }

    #[test]
    fn pairs_by_window_within_each_context() {
        // In source a, step is 1 s better in every window; in b it is 2 s worse.
        let cells = two_contexts();
        let rows = compare_axis(
            &cells,
            "reading",
            Some("source"),
            None,
            Metric::MeanCompletion,
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].within.as_str(), rows[0].value.as_str()),
            ("a", "step")
        );
        assert_eq!(rows[0].reference, "linear");
        let d = rows[0].diff.unwrap();
        assert!((d.diff + 1.0).abs() < 1e-12, "{d:?}");
        assert_eq!((rows[0].better, rows[0].worse), (1, 0));
        assert!((rows[1].diff.unwrap().diff - 2.0).abs() < 1e-12);
        assert_eq!((rows[1].better, rows[1].worse), (0, 1));
        // Pooled: one context better, one worse; the mean of the context means is +0.5.
        let all = compare_axis(&cells, "reading", None, None, Metric::MeanCompletion).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].contexts, 2);
        assert!((all[0].diff.unwrap().diff - 0.5).abs() < 1e-12);
        assert_eq!((all[0].better, all[0].worse), (1, 1));
    }

    #[test]
    fn a_higher_is_better_metric_counts_the_other_way() {
        // The same values read as goodput per dollar: step's -1 is worse in a, +2 better in b.
        let cells = two_contexts();
        let rows = compare_axis(
            &cells,
            "reading",
            Some("source"),
            None,
            Metric::GoodputPerDollar,
        )
        .unwrap();
        assert_eq!((rows[0].better, rows[0].worse), (0, 1));
        assert_eq!((rows[1].better, rows[1].worse), (1, 0));
    }

    #[test]
    fn names_what_is_wrong() {
        let cells = vec![cell("linear", "a", &[1.0]), cell("step", "a", &[1.0])];
        let e = compare_axis(&cells, "tier", None, None, Metric::MeanCompletion)
            .unwrap_err()
            .to_string();
        assert!(e.contains("tier") && e.contains("source, reading"), "{e}");
        let e = compare_axis(
            &cells,
            "reading",
            None,
            Some("flat"),
            Metric::MeanCompletion,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("linear, step"), "{e}");
        let e = compare_axis(&cells, "reading", None, None, Metric::SloGoodput)
            .unwrap_err()
            .to_string();
        assert!(e.contains("per window"), "{e}");
    }
}
