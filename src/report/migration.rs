//! The report's migration sections: the trigger curve of each source (`hazardserve trigger
//! --source S`: `risk_gain` and `dT` against the source's uptime, over its pooled curve) and
//! the transfer-versus-recompute crossover table (`hazardserve crossover`).

use plotters::prelude::SeriesLabelPosition;

use super::document::{Block, Report};
use super::error::ReportError;
use super::plots::{self, Line};
use crate::output::human_float;
use crate::policy::analysis::{
    crossover_rows, default_prefill_rates, trigger_rows, TriggerSettings, DEFAULT_HYSTERESIS_S,
    DEFAULT_UPTIMES_S,
};
use crate::policy::presets::{self, HARDWARE, LINKS};
use crate::policy::Params;
use crate::store::Store;

/// Source uptimes of the trigger plot, hours: 0 to 48 h in 15-minute steps.
fn plot_uptimes_s() -> Vec<f64> {
    (0..=192).map(|i| i as f64 * 900.0).collect()
}

/// Sources drawn in the trigger plot at most (those with the largest `risk_gain`).
pub const TRIGGER_PLOT_SOURCES: usize = 8;

/// The header of the trigger table.
pub const TRIGGER_HEADER: [&str; 6] = [
    "source",
    "dT (s)",
    "largest risk_gain (s)",
    "at uptime",
    "risk_gain at 1 h (s)",
    "fires (h in s) at some uptime",
];

/// The trigger section: per source a row of `trigger --source S` on the default grid, and
/// one plot of `risk_gain` against uptime for every source with `dT` for reference.
pub(super) fn trigger_section(
    store: &Store,
    sources: &[String],
    r: &mut Report,
) -> Result<(), ReportError> {
    let settings = TriggerSettings::DEFAULT;
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    let mut dt_line: Option<Vec<(f64, f64)>> = None;
    for source in sources {
        let priors = match crate::fit::priors_as_of(store, source, None, None, 512) {
            Ok(p) => p,
            // A source without usable sessions has no curve to trigger on.
            Err(crate::fit::PriorsExportError::NoSessions(_)) => continue,
            Err(e) => {
                return Err(ReportError::Priors {
                    source_name: source.clone(),
                    source: Box::new(e),
                })
            }
        };
        let sc = settings.scenario(
            Box::new(priors.pooled_curve()),
            Box::new(priors.pooled_curve()),
        );
        let grid = trigger_rows(&sc, &DEFAULT_UPTIMES_S, &DEFAULT_HYSTERESIS_S);
        // The earliest uptime of the largest risk_gain (a flat curve peaks at its start).
        let Some(best) = grid.iter().reduce(|best, x| {
            if x.risk_gain > best.risk_gain {
                x
            } else {
                best
            }
        }) else {
            continue;
        };
        let at_1h = grid.iter().find(|x| x.uptime_s == 3600.0);
        let mut fires: Vec<f64> = grid
            .iter()
            .flat_map(|x| x.fires.iter().filter(|f| f.fires).map(|f| f.h_s))
            .collect();
        fires.sort_by(f64::total_cmp);
        fires.dedup();
        rows.push(vec![
            source.clone(),
            human_float(best.dt),
            human_float(best.risk_gain),
            crate::output::duration_text(best.uptime_s),
            at_1h.map_or("-".into(), |x| human_float(x.risk_gain)),
            if fires.is_empty() {
                "never".into()
            } else {
                fires
                    .iter()
                    .map(|h| human_float(*h))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ]);
        let dense = trigger_rows(&sc, &plot_uptimes_s(), &[]);
        lines.push(Line {
            name: format!("risk_gain, {source}"),
            pts: dense
                .iter()
                .map(|x| (x.uptime_s / 3600.0, x.risk_gain))
                .collect(),
            dashed: false,
        });
        dt_line.get_or_insert_with(|| dense.iter().map(|x| (x.uptime_s / 3600.0, x.dt)).collect());
    }
    if rows.is_empty() {
        return Ok(());
    }
    r.blocks.push(Block::Heading("Migration trigger".into()));
    r.blocks.push(Block::Text(format!(
        "`hazardserve trigger --source S`: a request with {} tokens resident and {} to go on a \
         node at {} tok/s prefill and {} tok/s decode, moved over a {} link to a like node up \
         for {}, both on the source's pooled curve. The move fires when risk_gain > h and \
         dT < h for the hysteresis h; the table shows the default uptime grid (0 s to 2 d) \
         and the h values ({} s) at which it fires anywhere on it.",
        settings.context,
        settings.remaining,
        human_float(settings.prefill_tok_s),
        human_float(settings.decode_tok_s),
        crate::output::rate_text(settings.bandwidth_bytes_s),
        crate::output::duration_text(settings.dest_age_s),
        DEFAULT_HYSTERESIS_S
            .iter()
            .map(|h| human_float(*h))
            .collect::<Vec<_>>()
            .join(", "),
    )));
    r.blocks.push(Block::Table(
        TRIGGER_HEADER.map(String::from).to_vec(),
        rows,
    ));
    // The sources whose risk comes closest to paying for a move, so the legend stays legible.
    let n = lines.len();
    let peak = |l: &Line| l.pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    lines.sort_by(|a, b| peak(b).total_cmp(&peak(a)));
    lines.truncate(TRIGGER_PLOT_SOURCES);
    if let Some(dt) = dt_line {
        lines.push(Line {
            name: "dT (every source)".into(),
            pts: dt,
            dashed: true,
        });
    }
    r.blocks.push(Block::Plot(
        "trigger.svg".into(),
        plots::lines(
            "Migration trigger: risk_gain and dT against the source's uptime",
            "source uptime (h)",
            "seconds (s)",
            &lines,
            true,
            SeriesLabelPosition::MiddleRight,
        )?,
        format!(
            "risk_gain against uptime of the {} of {n} source(s) with the largest risk_gain, and dT",
            n.min(TRIGGER_PLOT_SOURCES)
        ),
    ));
    Ok(())
}

/// The crossover section: `hazardserve crossover`'s c* (context above which a KV transfer
/// beats recomputing) per link and destination prefill rate, one column per hardware preset.
pub(super) fn crossover_section(r: &mut Report) -> Result<(), ReportError> {
    let model = presets::LLAMA3_8B;
    let rates = default_prefill_rates();
    let rows = crossover_rows(&model, &LINKS, &rates, &Params::default());
    let mut header = vec!["link".to_string(), "bandwidth".to_string()];
    header.extend(
        HARDWARE
            .iter()
            .map(|h| format!("c* on {} ({} tok/s)", h.name, human_float(h.prefill_tok_s))),
    );
    let table: Vec<Vec<String>> = LINKS
        .iter()
        .map(|l| {
            let mut row = vec![
                l.name.to_string(),
                crate::output::rate_text(l.bandwidth_bytes_s),
            ];
            row.extend(rates.iter().map(|&p| {
                rows.iter()
                    .find(|x| x.link == l.name && x.prefill_tok_s == p)
                    .and_then(|x| x.c_star)
                    .map_or("never".into(), |c| format!("{c:.0} tokens"))
            }));
            row
        })
        .collect();
    r.blocks
        .push(Block::Heading("Transfer or recompute".into()));
    r.blocks.push(Block::Text(format!(
        "`hazardserve crossover --model {}`: the context length c* above which moving the KV \
         cache beats recomputing it on the destination (\"never\": recompute always wins), per \
         link and destination prefill rate.",
        model.name
    )));
    r.blocks.push(Block::Table(header, table));
    Ok(())
}
