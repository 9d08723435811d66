//! The report's regime map: a sweep's cells (all, or those with given axis values) as a
//! heatmap of the hazard term (`hazard` minus its hazard-blind twin `hazard-pooled`), and as a
//! table of the two verdicts' paired differences with their q-values and words (the numbers
//! of `sweep summary --format json`).

use super::document::{Block, Report};
use super::error::ReportError;
use super::plots::{self, Sign};
use crate::output::{human_float, signed_interval_text};
use crate::policy::PolicyKind;
use crate::replay::{Metric, PolicyLabel, Versus};
use crate::store::Store;
use crate::sweep::{self, AxisFilter, CellResult, FDR, VERDICT_METRIC};

/// The header of the cells table after its axis columns.
pub const CELLS_HEADER: [&str; 11] = [
    "hazard - hazard-pooled, mean completion (s)",
    "q (hazard term)",
    "hazard-pooled - fastest (s)",
    "fastest - reference (s)",
    "q (load forecast)",
    "hazard - uptime (s)",
    "hazard - fastest, interruptions / window",
    "opportunity (s / window)",
    "planned moves / window",
    "hazard term",
    "load forecast",
];

/// The header of the calibration table after its axis columns: how well each cell's forecasts
/// matched what the engine did, per policy that forecasts.
pub const MAP_CALIBRATION_HEADER: [&str; 7] = [
    "hazard T / served (median)",
    "fastest T / served (median)",
    "hazard T error (MAPE)",
    "hazard predicted / observed interruption",
    "hazard Brier",
    "memoryless Brier",
    "hazard-truth Brier",
];

/// The header of the prefix-cache table after its axis columns (a sweep whose cells cache
/// prefixes).
pub const STATE_HEADER: [&str; 14] = [
    "hazard - fastest, mean completion (s)",
    "retained-state term: hazard - hazard --no-retained (s)",
    "idle-state migration: hazard - hazard --no-idle (s)",
    "hazard - fastest, TTFT p99 (s)",
    "oracle - fastest (s)",
    "hit rate: hazard",
    "fastest",
    "cache-aware",
    "session-affinity",
    "destroyed tokens / window: hazard",
    "fastest",
    "state moves / window",
    "q",
    "hazard vs fastest",
];

/// A paired difference of `v` on `m`, signed, with its interval.
fn diff(v: Option<&Versus>, m: Metric) -> String {
    v.and_then(|v| v.get(m)).map_or("-".into(), |d| {
        signed_interval_text(d.diff, d.ci_low.zip(d.ci_high))
    })
}

/// One row per cell: the axes that vary among `cells` (and are not fixed by `filter`), then
/// the hazard term (`hazard - hazard-pooled` on mean completion, its q-value), the twin against
/// `fastest`, the load forecast (`fastest` minus the declared reference, named, its q-value),
/// `hazard - uptime`, the
/// interruptions against `fastest`, the opportunity, the planned moves, and the two verdicts.
fn cells_table(cells: &[CellResult], filter: &AxisFilter, r: &mut Report) {
    let Some(axes) = varying_axes(cells, filter) else {
        return;
    };
    let mut header: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
    header.extend(CELLS_HEADER.map(String::from));
    let rows = cells
        .iter()
        .map(|c| {
            let mut row = axis_values(c, &axes);
            let q = |name: &str| {
                c.q_value(name, VERDICT_METRIC)
                    .map_or("-".into(), |q| format!("{q:.3}"))
            };
            row.push(diff(c.vs_pooled.as_ref(), Metric::MeanCompletion));
            row.push(q("hazard_vs_pooled"));
            row.push(diff(
                c.pairing("pooled_vs_fastest").as_deref(),
                Metric::MeanCompletion,
            ));
            let load = c.pairing("fastest_vs_reference");
            row.push(format!(
                "{} ({})",
                diff(load.as_deref(), Metric::MeanCompletion),
                match (c.reference.as_str(), load.as_deref()) {
                    ("best-blind", Some(v)) => format!("best blind: {}", v.reference),
                    (name, _) => name.to_string(),
                }
            ));
            row.push(q("fastest_vs_reference"));
            row.push(diff(c.vs_uptime.as_ref(), Metric::MeanCompletion));
            row.push(diff(c.vs_fastest(), Metric::UnplannedInterruptions));
            row.push(c.opportunity_s().map_or("-".into(), human_float));
            row.push(c.planned_migrations().map_or("-".into(), human_float));
            row.push(c.hazard_term().into());
            row.push(c.load_forecast().into());
            row
        })
        .collect();
    let fixed = if filter.is_empty() {
        String::new()
    } else {
        format!(" with {}", filter.text())
    };
    r.blocks.push(Block::Text(format!(
        "The {} cells{fixed}: `hazard` minus each reference, paired by window, with 95 % \
         intervals (negative: the first better). Two verdicts are declared, on mean \
         completion, each with its Benjamini-Hochberg q-values over the map's cells: the \
         hazard term (`hazard` against `hazard-pooled`, its hazard-blind twin: the same rule \
         and planned moves with every node at the fleet's mean rate) pays when hazard is \
         lower with q < {FDR}, and has nothing to win (first) when the oracle cannot be told \
         apart from `fastest` on interruptions; `hazard-pooled - fastest` is what exposure \
         pricing and planned moves do without per-node hazards; the load forecast (`fastest` \
         against the cell's reference) pays when fastest is lower with q < {FDR}. Opportunity: the \
         interruption gap `fastest - oracle` times `fastest`'s mean loss per interruption, \
         seconds per window.",
        cells.len()
    )));
    r.blocks.push(Block::Table(header, rows));
}

/// One row per cell of a sweep whose cells cache prefixes: what `hazard` gains over `fastest`,
/// the hazard-blind policy with the same forecast (both with the cache in `T_i`) on mean completion and TTFT,
/// paired by window, the oracle's gain for scale, the prefix hit rate of the policies, the
/// cached tokens nodes' ends destroyed and the idle-state copies. Nothing without such cells.
fn state_table(cells: &[CellResult], filter: &AxisFilter, r: &mut Report) {
    let cached = |c: &CellResult| {
        c.rows
            .iter()
            .any(|s| s.get(Metric::PrefixHitRate).value.is_some())
    };
    if !cells.iter().any(cached) {
        return;
    }
    let Some(axes) = varying_axes(cells, filter) else {
        return;
    };
    let mut header: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
    header.extend(STATE_HEADER.map(String::from));
    let num = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    let shown: Vec<&CellResult> = cells.iter().filter(|c| cached(c)).collect();
    // Benjamini-Hochberg over the table's cells, on mean completion, per pairing: hazard -
    // fastest, and each ablation's.
    let q_of = |pairing: &dyn Fn(&CellResult) -> Option<&Versus>| {
        let p: Vec<Option<f64>> = shown
            .iter()
            .map(|c| {
                pairing(c)
                    .and_then(|v| v.get(Metric::MeanCompletion))
                    .and_then(|d| d.p_value)
            })
            .collect();
        crate::replay::stats::bh_q_values(&p)
    };
    let q = q_of(&|c| c.vs_fastest());
    let q_retained = q_of(&|c| c.retained_effect.as_ref());
    let q_idle = q_of(&|c| c.idle_effect.as_ref());
    // A paired difference and its q-value.
    let with_q = |v: Option<&Versus>, q: Option<f64>| match q {
        Some(q) => format!("{} (q {q:.3})", diff(v, Metric::MeanCompletion)),
        None => diff(v, Metric::MeanCompletion),
    };
    let rows = shown
        .iter()
        .enumerate()
        .zip(&q)
        .map(|((k, c), &q)| {
            let row_of = |k: PolicyKind| c.rows.iter().find(|s| s.label == PolicyLabel::new(k));
            let value = |k: PolicyKind, m: Metric| row_of(k).and_then(|s| s.get(m).value);
            let mut row = axis_values(c, &axes);
            row.push(diff(c.vs_fastest(), Metric::MeanCompletion));
            row.push(with_q(c.retained_effect.as_ref(), q_retained[k]));
            row.push(with_q(c.idle_effect.as_ref(), q_idle[k]));
            row.push(diff(c.vs_fastest(), Metric::TtftP99));
            row.push(diff(
                row_of(PolicyKind::Oracle).and_then(|s| s.vs_fastest.as_ref()),
                Metric::MeanCompletion,
            ));
            for k in [
                PolicyKind::Hazard,
                PolicyKind::Fastest,
                PolicyKind::CacheAware,
                PolicyKind::SessionAffinity,
            ] {
                row.push(num(value(k, Metric::PrefixHitRate), 3));
            }
            for k in [PolicyKind::Hazard, PolicyKind::Fastest] {
                row.push(value(k, Metric::CacheDestroyedTokens).map_or("-".into(), human_float));
            }
            row.push(
                value(PolicyKind::Hazard, Metric::StateMigrations).map_or("-".into(), human_float),
            );
            row.push(num(q, 3));
            row.push(
                match (
                    c.vs_fastest().and_then(|v| v.get(Metric::MeanCompletion)),
                    q,
                ) {
                    (Some(d), Some(q)) if q < FDR && d.diff < 0.0 => "pays".into(),
                    (Some(d), Some(q)) if q < FDR && d.diff > 0.0 => "loses".into(),
                    (Some(_), Some(_)) => "no difference".into(),
                    _ => "-".into(),
                },
            );
            row
        })
        .collect();
    r.blocks.push(Block::Text(
        "Prefix caches per cell: `hazard` (placement by `E_i = T_i + L_i + R_i`, `R_i` the \
         retained-state term, and idle-state migration) minus `fastest`, the hazard-blind policy \
         (`T_i` alone; both price only the uncached prefill), paired by window with 95 % \
         intervals; what each state term buys, `hazard` minus its ablation paired by window \
         (with its Benjamini-Hochberg q-value over the table's cells): \
         `hazard --no-retained` (without `R_i`) and `hazard --no-idle` (without idle-state \
         migration), where the sweep runs them (`replay.include_ablations`); the oracle's gain \
         over `fastest` for scale; the share of prompt tokens \
         read from cache under each policy; the cached prompt tokens nodes' ends destroyed and \
         the idle conversations' state copied off risky nodes, per window. The verdict on \
         mean completion: pays (loses) when `hazard` is lower (higher) with a \
         Benjamini-Hochberg q-value below the map's FDR over this table's cells."
            .into(),
    ));
    r.blocks.push(Block::Table(header, rows));
}

/// The axes that vary among `cells` and are not fixed by `filter` (`None` without cells).
fn varying_axes<'a>(cells: &'a [CellResult], filter: &AxisFilter) -> Option<Vec<&'a str>> {
    let first = cells.first()?;
    Some(
        first
            .axes
            .iter()
            .map(|(k, _)| k.as_str())
            .filter(|k| !filter.fixes(k))
            .filter(|k| {
                let value = |c: &CellResult| {
                    c.axes
                        .iter()
                        .find(|(ck, _)| ck == k)
                        .map(|(_, v)| v.clone())
                };
                cells.iter().any(|c| value(c) != value(first))
            })
            .collect(),
    )
}

/// `c`'s value of each of `axes`.
fn axis_values(c: &CellResult, axes: &[&str]) -> Vec<String> {
    axes.iter()
        .map(|a| {
            c.axes
                .iter()
                .find(|(k, _)| k == a)
                .map_or("-".into(), |(_, v)| v.clone())
        })
        .collect()
}

/// One row per cell: the calibration of the forecasts the policies placed by, so a reader can
/// tell a wrong load model (`T / served` away from 1) from a wrong hazard model (a poor Brier
/// score, predicted far from observed) in every cell of the map.
fn calibration_table(cells: &[CellResult], filter: &AxisFilter, r: &mut Report) {
    let Some(axes) = varying_axes(cells, filter) else {
        return;
    };
    let mut header: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
    header.extend(MAP_CALIBRATION_HEADER.map(String::from));
    let num = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    let rows = cells
        .iter()
        .map(|c| {
            let f = |k: PolicyKind| {
                c.rows
                    .iter()
                    .find(|s| s.label == PolicyLabel::new(k))
                    .and_then(|s| s.forecast.as_ref())
            };
            let h = f(PolicyKind::Hazard);
            let mut row = axis_values(c, &axes);
            row.push(num(h.and_then(|h| h.t_ratio_median), 3));
            row.push(num(
                f(PolicyKind::Fastest).and_then(|h| h.t_ratio_median),
                3,
            ));
            row.push(
                h.and_then(|h| h.t_mape)
                    .map_or("-".into(), |v| format!("{:.1} %", 100.0 * v)),
            );
            row.push(
                match h.map(|h| (h.interruption_predicted, h.interruption_rate)) {
                    Some((Some(p), Some(o))) => format!("{p:.3} / {o:.3}"),
                    _ => "-".into(),
                },
            );
            for k in [
                PolicyKind::Hazard,
                PolicyKind::Memoryless,
                PolicyKind::HazardTruth,
            ] {
                row.push(num(f(k).and_then(|h| h.interruption_brier), 4));
            }
            row
        })
        .collect();
    r.blocks.push(Block::Text(
        "Forecast calibration per cell: the `T` a policy forecast at a request's first \
         placement against the service time of the requests served there without interruption \
         (median ratio, and for `hazard` the mean absolute percentage error), and `hazard`'s \
         predicted probability that the node fails first against what happened (mean \
         prediction / observed share, Brier score; `memoryless` and, on fleets with known \
         laws, `hazard-truth` for comparison). A ratio away from 1 is a wrong load model; a \
         poor Brier score beside a good ratio is a wrong hazard model."
            .into(),
    ));
    r.blocks.push(Block::Table(header, rows));
}

pub(super) fn sweep_section(
    store: &Store,
    id: &str,
    filter: &AxisFilter,
    r: &mut Report,
) -> Result<(), ReportError> {
    let cells = filter
        .apply(sweep::load_sweep(store, id)?, |c| c.axes.clone())
        .map_err(|problem| ReportError::SweepWhere {
            sweep: id.to_string(),
            problem,
        })?;
    r.blocks
        .push(Block::Heading(format!("Regime map: sweep {id}")));
    let layout = sweep::MapLayout::of(&cells);
    let rows: Vec<String> = layout.rows.iter().map(|r| r.join(" · ")).collect();
    let grid: Vec<Vec<(Sign, String)>> = layout
        .grid
        .iter()
        .map(|row| {
            row.iter()
                .map(|slot| {
                    let Some(c) = slot.map(|i| &cells[i]) else {
                        return (Sign::Missing, String::new());
                    };
                    let d = c.vs_pooled.as_ref().and_then(|v| v.get(VERDICT_METRIC));
                    let sign = match (d, c.hazard_term()) {
                        (None, _) => Sign::Missing,
                        (Some(_), "pays") => Sign::Better,
                        (Some(_), "loses") => Sign::Worse,
                        (Some(_), _) => Sign::Tie,
                    };
                    let text = d.map_or("-".into(), |d| human_float(d.diff))
                        + if c.pays() { " *" } else { "" };
                    (sign, text)
                })
                .collect()
        })
        .collect();
    let column_axis = layout.column_axis().unwrap_or("(one column)");
    let pays = cells.iter().filter(|c| c.pays()).count();
    let nothing = cells
        .iter()
        .filter(|c| c.hazard_term() == "nothing to win")
        .count();
    let load = cells.iter().filter(|c| c.load_forecast_pays()).count();
    r.blocks.push(Block::Text(format!(
        "{} cells; the hazard term, `hazard` minus `hazard-pooled` (its hazard-blind twin) on mean \
         completion (s), paired by window: green where hazard is better and red where it is \
         worse with a Benjamini-Hochberg q-value below {FDR} over the map's cells, grey \
         otherwise (also where there is nothing to win: {nothing} cells); `*` marks the {pays} \
         cells where the hazard term pays. The load forecast (`fastest` against the cell's \
         reference) pays in {load}. Rows: {}; columns: {} (`hazardserve sweep summary {id}`).",
        cells.len(),
        layout.row_axes().join(" · "),
        layout.column_axis().unwrap_or("-"),
    )));
    let svg = plots::heatmap(
        &format!("Regime map {id}: hazard minus hazard-pooled, mean completion (s)"),
        column_axis,
        &rows,
        &layout.columns,
        &grid,
    )?;
    r.blocks.push(Block::Plot(
        "regime-map.svg".into(),
        svg,
        "Where hazard-awareness pays".into(),
    ));
    cells_table(&cells, filter, r);
    state_table(&cells, filter, r);
    calibration_table(&cells, filter, r);
    Ok(())
}
