//! The report's replay-run section: the policy comparison, calibration and completion CDFs.

use super::document::{Block, Report};
use super::error::ReportError;
use super::plots::{self, Bar};
use crate::output::{human_float, interval_text, signed_interval_text};
use crate::policy::PolicyKind;
use crate::queries::Reader;
use crate::replay::{Metric, PolicySummary};
use crate::scenario;
use crate::store::Store;

/// The header of a policy comparison table (the book's replay tables are this table).
pub const COMPARISON_HEADER: [&str; 9] = [
    "policy",
    "mean completion (s)",
    "vs fastest (s)",
    "p99 completion (s)",
    "unplanned interruptions / window",
    "vs fastest",
    "interruptions / started request",
    "unfinished / window",
    "gap closed",
];

/// One row of a policy comparison: estimates with their intervals, paired differences against
/// `fastest` (signed), and the share of the fastest-to-oracle gap closed.
fn comparison_row(s: &PolicySummary) -> Vec<String> {
    let vs = |m: Metric| {
        s.vs_fastest
            .as_ref()
            .and_then(|v| v.get(m))
            .map_or("-".into(), |d| {
                signed_interval_text(d.diff, d.ci_low.zip(d.ci_high))
            })
    };
    let gap = s
        .gap_closed
        .text(|v, ci| interval_text(v, ci.map(|c| (c[0], c[1]))));
    vec![
        s.label.to_string(),
        cell(s, Metric::MeanCompletion),
        vs(Metric::MeanCompletion),
        cell(s, Metric::P99Completion),
        cell(s, Metric::UnplannedInterruptions),
        vs(Metric::UnplannedInterruptions),
        cell(s, Metric::InterruptionsPerStarted),
        cell(s, Metric::Unfinished),
        gap,
    ]
}

/// The header of the cost table (a run whose fleet has prices).
pub const COST_HEADER: [&str; 5] = [
    "policy",
    "dollars / window",
    "goodput per dollar (tokens/$)",
    "vs fastest",
    "SLO goodput (tok/s)",
];

/// One row of the cost table.
fn cost_row(s: &PolicySummary) -> Vec<String> {
    let vs = s
        .vs_fastest
        .as_ref()
        .and_then(|v| v.get(Metric::GoodputPerDollar))
        .map_or("-".into(), |d| {
            signed_interval_text(d.diff, d.ci_low.zip(d.ci_high))
        });
    vec![
        s.label.to_string(),
        cell(s, Metric::Dollars),
        cell(s, Metric::GoodputPerDollar),
        vs,
        cell(s, Metric::SloGoodput),
    ]
}

/// One bar per policy with a value of `m`, with its interval.
fn bars_of(summary: &[PolicySummary], m: Metric) -> Vec<Bar> {
    summary
        .iter()
        .filter_map(|s| {
            let e = s.get(m);
            Some(Bar {
                label: s.label.to_string(),
                value: e.value?,
                ci: e.ci.map(|c| (c[0], c[1])),
            })
        })
        .collect()
}

/// The cost section of a priced run: the cost table, the dollars per pool and the
/// goodput-per-dollar bars. Nothing when no pool has a price.
fn cost_section(run: &str, summary: &[PolicySummary], r: &mut Report) -> Result<(), ReportError> {
    if summary
        .iter()
        .all(|s| s.get(Metric::Dollars).value.is_none())
    {
        return Ok(());
    }
    r.blocks.push(Block::Heading("Cost".to_string()));
    r.blocks.push(Block::Text(
        "Every node billed at its pool's `price_per_node_hour` while it is up (spot nodes only \
         while up), over the scored span of each window; goodput per dollar is the output \
         tokens of the requests that met their SLO per dollar. Differences are paired by \
         window against `fastest`; positive is better."
            .to_string(),
    ));
    r.blocks.push(Block::Table(
        COST_HEADER.map(String::from).to_vec(),
        summary.iter().map(cost_row).collect(),
    ));
    if let Some(f) = summary
        .iter()
        .find(|s| s.label.kind == PolicyKind::Fastest && s.label.param.is_none())
        .or_else(|| summary.first())
        .filter(|f| !f.dollars_by_pool.is_empty())
    {
        let pools: Vec<String> = f
            .dollars_by_pool
            .iter()
            .map(|(pool, d)| format!("`{pool}` {}", human_float(*d)))
            .collect();
        r.blocks.push(Block::Text(format!(
            "Dollars per window by pool (the same for every policy: the fleet is the trace's): {}.",
            pools.join(", ")
        )));
    }
    let bars = bars_of(summary, Metric::GoodputPerDollar);
    if !bars.is_empty() {
        r.blocks.push(Block::Plot(
            "goodput-per-dollar.svg".into(),
            plots::comparison(
                &format!("Goodput per dollar by policy, run {run}"),
                "SLO-met output tokens per dollar, 95% CI over windows",
                &bars,
            )?,
            "Goodput per dollar by policy".into(),
        ));
    }
    Ok(())
}

/// The header of the prefix-cache table of a run whose nodes cached prefixes.
pub const CACHE_HEADER: [&str; 7] = [
    "policy",
    "prefix hit rate",
    "prefill tokens / window",
    "destroyed tokens / window",
    "state moves / window",
    "TTFT p50 (s)",
    "TTFT p99 (s)",
];

/// The prefix-cache section of a run whose nodes cached prefixes: the table and the bars of
/// the hit rate and of the cached tokens destroyed, by policy. Nothing otherwise.
fn cache_section(run: &str, summary: &[PolicySummary], r: &mut Report) -> Result<(), ReportError> {
    if summary
        .iter()
        .all(|s| s.get(Metric::PrefixHitRate).value.is_none())
    {
        return Ok(());
    }
    r.blocks.push(Block::Heading("Prefix caches".to_string()));
    r.blocks.push(Block::Text(
        "Every node caches prompt blocks as vLLM's automatic prefix caching does, and a node's \
         end destroys its cache. The hit rate is the share of prompt tokens a request's first \
         prefill read from cache; the prefill tokens are those computed (prompts less their \
         hits, and every re-prefill); destroyed tokens are the cached prompt tokens nodes' ends \
         destroyed; state moves copy an idle conversation's blocks off a risky node. Means over \
         windows with 95 % intervals."
            .to_string(),
    ));
    let rows = summary
        .iter()
        .map(|s| {
            vec![
                s.label.to_string(),
                cell(s, Metric::PrefixHitRate),
                cell(s, Metric::PrefillTokens),
                cell(s, Metric::CacheDestroyedTokens),
                cell(s, Metric::StateMigrations),
                cell(s, Metric::TtftP50),
                cell(s, Metric::TtftP99),
            ]
        })
        .collect();
    r.blocks
        .push(Block::Table(CACHE_HEADER.map(String::from).to_vec(), rows));
    for (file, metric, title, axis) in [
        (
            "prefix-hit-rate.svg",
            Metric::PrefixHitRate,
            "Prefix hit rate by policy",
            "share of prompt tokens read from cache, 95% CI over windows",
        ),
        (
            "cache-destroyed.svg",
            Metric::CacheDestroyedTokens,
            "Cached state destroyed by nodes' ends, by policy",
            "cached prompt tokens destroyed per window, 95% CI over windows",
        ),
    ] {
        let bars = bars_of(summary, metric);
        if !bars.is_empty() {
            r.blocks.push(Block::Plot(
                file.into(),
                plots::comparison(&format!("{title}, run {run}"), axis, &bars)?,
                title.into(),
            ));
        }
    }
    Ok(())
}

/// The header of the forecast calibration table.
pub const CALIBRATION_HEADER: [&str; 7] = [
    "policy",
    "T scored",
    "T forecast / served (median)",
    "T error (MAPE)",
    "placements scored",
    "predicted / observed interruption",
    "Brier",
];

/// One row of the calibration table; `None` without a calibration.
fn calibration_row(s: &PolicySummary) -> Option<Vec<String>> {
    let f = s.forecast.as_ref()?;
    let num = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    Some(vec![
        s.label.to_string(),
        f.t_n.to_string(),
        num(f.t_ratio_median, 3),
        f.t_mape
            .map_or("-".into(), |v| format!("{:.1} %", 100.0 * v)),
        f.interruption_n.to_string(),
        match (f.interruption_predicted, f.interruption_rate) {
            (Some(p), Some(o)) => format!("{p:.3} / {o:.3}"),
            _ => "-".into(),
        },
        num(f.interruption_brier, 4),
    ])
}

/// An estimate of a comparison row with its interval.
fn cell(s: &PolicySummary, m: Metric) -> String {
    let e = s.get(m);
    e.value
        .map_or("-".into(), |v| interval_text(v, e.ci.map(|c| (c[0], c[1]))))
}

pub(super) fn run_section(
    store: &Store,
    reader: &Reader,
    info: &crate::queries::RunRow,
    r: &mut Report,
) -> Result<(), ReportError> {
    let run = info.run_id.as_str();
    let summary = scenario::load_summary(store, run)?;
    r.blocks
        .push(Block::Heading(format!("Policy comparison: run {run}")));
    r.blocks.push(Block::Text(format!(
        "`{}` replayed over the nodes of `{}`, {} windows (`hazardserve compare {run}`). \
         Differences are the policy minus `fastest`, paired by window; negative is better.",
        info.workload_source, info.nodes_source, info.windows
    )));
    let rows: Vec<Vec<String>> = summary.iter().map(comparison_row).collect();
    r.blocks.push(Block::Table(
        COMPARISON_HEADER.map(String::from).to_vec(),
        rows,
    ));
    let calibration: Vec<Vec<String>> = summary.iter().filter_map(calibration_row).collect();
    if !calibration.is_empty() {
        r.blocks
            .push(Block::Heading("Forecast calibration".to_string()));
        r.blocks.push(Block::Text(
            "Each policy's `T` at a request's first placement against the realised service \
             time of the requests served there without interruption or move (median ratio: 1 \
             is exact, above 1 over-predicts), and its predicted probability `1 - S(T | a)` \
             that the node fails first against what happened (Brier score; placements moved \
             by plan or open at the window end are censored, not scored). A ratio far from 1 \
             is a wrong load model; a poor Brier score beside a good ratio is a wrong hazard \
             model."
                .to_string(),
        ));
        r.blocks.push(Block::Table(
            CALIBRATION_HEADER.map(String::from).to_vec(),
            calibration,
        ));
    }
    cost_section(run, &summary, r)?;
    cache_section(run, &summary, r)?;
    if let Some(f) = summary
        .iter()
        .find(|s| s.label.kind == PolicyKind::Fastest && s.label.param.is_none())
        .filter(|f| !f.interruptions_by_cause.is_empty())
    {
        let causes: Vec<String> = f
            .interruptions_by_cause
            .iter()
            .map(|(cause, n)| format!("{} `{cause}`", human_float(*n)))
            .collect();
        r.blocks.push(Block::Text(format!(
            "Unplanned interruptions of `fastest` per window, by the end cause of the session \
             behind them: {}.",
            causes.join(", ")
        )));
    }
    let bars: Vec<Bar> = summary
        .iter()
        .filter_map(|s| {
            let e = s.get(Metric::MeanCompletion);
            Some(Bar {
                label: s.label.to_string(),
                value: e.value?,
                ci: e.ci.map(|c| (c[0], c[1])),
            })
        })
        .collect();
    r.blocks.push(Block::Plot(
        "comparison-mean.svg".into(),
        plots::comparison(
            &format!("Mean completion time by policy, run {run}"),
            "mean completion time (s), 95% CI over windows",
            &bars,
        )?,
        "Mean completion time by policy".into(),
    ));
    let steps = crate::queries::COMPLETION_QUANTILE_STEPS as f64;
    let series: Vec<(String, Vec<(f64, f64)>)> = reader
        .completion_quantiles(run)?
        .into_iter()
        .map(|q| {
            let share = q.completed as f64 / q.requests.max(1) as f64;
            let name = if q.param == "default" {
                q.policy.clone()
            } else {
                format!("{} --{}", q.policy, q.param)
            };
            let pts = q
                .quantiles
                .iter()
                .enumerate()
                .map(|(i, &x)| (x, share * i as f64 / steps))
                .collect();
            (name, pts)
        })
        .collect();
    r.blocks.push(Block::Plot(
        "completion-cdf.svg".into(),
        plots::cdfs(&format!("Completion-time CDF, run {run}"), &series)?,
        "Completion-time CDF of every policy".into(),
    ));
    Ok(())
}
