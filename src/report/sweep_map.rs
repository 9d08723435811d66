//! The report's regime map: a sweep's cells (all, or those with given axis values) as a
//! heatmap of `hazard` minus the declared reference, and as a table of `hazard`'s paired
//! differences with their q-values (the numbers of `sweep summary --format json`).

use super::plots::{self, Sign};
use super::{Block, Report, ReportError};
use crate::output::{human_float, signed_interval_text};
use crate::replay::{Metric, Versus};
use crate::store::Store;
use crate::sweep::{self, AxisFilter, CellResult, FDR, VERDICT_METRIC};

/// The header of the cells table after its axis columns.
pub const CELLS_HEADER: [&str; 8] = [
    "hazard - fastest, mean completion (s)",
    "hazard - reference (s)",
    "q",
    "hazard - uptime (s)",
    "hazard - fastest, interruptions / window",
    "opportunity (s / window)",
    "planned moves / window",
    "verdict",
];

/// A paired difference of `v` on `m`, signed, with its interval.
fn diff(v: Option<&Versus>, m: Metric) -> String {
    v.and_then(|v| v.get(m)).map_or("-".into(), |d| {
        signed_interval_text(d.diff, d.ci_low.zip(d.ci_high))
    })
}

/// One row per cell: the axes that vary among `cells` (and are not fixed by `filter`), then
/// `hazard`'s paired differences on mean completion against `fastest`, the best hazard-blind
/// baseline (named) and `uptime`, on interruptions against `fastest`, its planned moves, and
/// whether it pays.
fn cells_table(cells: &[CellResult], filter: &AxisFilter, r: &mut Report) {
    let Some(first) = cells.first() else {
        return;
    };
    let axes: Vec<&str> = first
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
        .collect();
    let mut header: Vec<String> = axes.iter().map(|a| a.to_string()).collect();
    header.extend(CELLS_HEADER.map(String::from));
    let rows = cells
        .iter()
        .map(|c| {
            let mut row: Vec<String> = axes
                .iter()
                .map(|a| {
                    c.axes
                        .iter()
                        .find(|(k, _)| k == a)
                        .map_or("-".into(), |(_, v)| v.clone())
                })
                .collect();
            let reference = c.vs_reference.as_ref();
            row.push(diff(c.vs_fastest(), Metric::MeanCompletion));
            row.push(format!(
                "{} ({})",
                diff(reference, Metric::MeanCompletion),
                match (c.reference.as_str(), reference) {
                    ("best-blind", Some(v)) => format!("best blind: {}", v.reference),
                    (name, _) => name.to_string(),
                }
            ));
            row.push(
                c.q_value("hazard_vs_reference", VERDICT_METRIC)
                    .map_or("-".into(), |q| format!("{q:.3}")),
            );
            row.push(diff(c.vs_uptime.as_ref(), Metric::MeanCompletion));
            row.push(diff(c.vs_fastest(), Metric::UnplannedInterruptions));
            row.push(c.opportunity_s().map_or("-".into(), human_float));
            row.push(c.planned_migrations().map_or("-".into(), human_float));
            row.push(c.verdict().into());
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
         intervals (negative: hazard better). The verdict is declared: `hazard` against the \
         cell's reference on mean completion, with its Benjamini-Hochberg q-value over the \
         map's cells; a cell pays when hazard is lower with q < {FDR}, and has nothing to win \
         when the oracle cannot be told apart from `fastest` on interruptions. Opportunity: \
         the interruption gap `fastest - oracle` times `fastest`'s mean loss per \
         interruption, seconds per window.",
        cells.len()
    )));
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
                    let d = c.vs_reference.as_ref().and_then(|v| v.get(VERDICT_METRIC));
                    let sign = match (d, c.verdict()) {
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
    r.blocks.push(Block::Text(format!(
        "{} cells; `hazard` minus each cell's declared reference on mean completion (s), paired \
         by window: green where hazard is better and red where it is worse with a \
         Benjamini-Hochberg q-value below {FDR} over the map's cells, grey otherwise; `*` \
         marks the {pays} cells where hazard pays. Rows: {}; columns: {} \
         (`hazardserve sweep summary {id}`).",
        cells.len(),
        layout.row_axes().join(" · "),
        layout.column_axis().unwrap_or("-"),
    )));
    let svg = plots::heatmap(
        &format!("Regime map {id}: hazard minus the reference, mean completion (s)"),
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
    Ok(())
}
