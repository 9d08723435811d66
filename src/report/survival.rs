//! The report's survival sections: per source the pooled Kaplan-Meier curve with its band,
//! the per-group curves and the Weibull fit; the hazard-shape table of `fit`; the Weibull
//! likelihood-ratio test; the out-of-time validation of `fit --validate`; and node
//! availability timelines.

use super::document::{file_safe, Block, Report};
use super::error::ReportError;
use super::plots::{self, SurvivalPlot, TimelineRow};
use crate::fit::{self, ByColumn, SourceSessions};
use crate::output::{duration_text, human_float, interval_text};
use crate::store::Store;
use crate::survival::validate::{validate, Split, ValidateOptions};

fn opt(x: Option<f64>) -> String {
    x.map_or("-".into(), human_float)
}

pub(super) fn survival_section(
    store: &Store,
    sources: &[String],
    r: &mut Report,
) -> Result<(), ReportError> {
    r.blocks
        .push(Block::Heading("Survival of node up-sessions".into()));
    r.blocks.push(Block::Text(
        "Pooled Kaplan-Meier curve of each source (censored sessions count as still up, never \
         as failures; left-truncated sessions enter at their age) with its 95 % band, the \
         fitted Weibull survival dashed, and the hazard-shape verdict of `hazardserve fit`."
            .into(),
    ));
    let mut shape_rows = Vec::new();
    let mut weibull_rows = Vec::new();
    let mut validation_rows = Vec::new();
    let mut plots = Vec::new();
    let mut empty = Vec::new();
    let mut timelines = Vec::new();
    let mut cause_rows = Vec::new();
    let mut tick_rows = Vec::new();
    let mut cause_plots = Vec::new();
    let mut group_rows = Vec::new();
    for source in sources {
        let data = fit::load_sessions(store, source, None, false)?;
        let fits = fit::fit_groups(&data, None).map_err(|e| ReportError::Fit {
            source_name: source.clone(),
            source: Box::new(e),
        })?;
        let Some(g) = fits.first().filter(|g| g.sessions > 0) else {
            empty.push(format!("`{source}`"));
            continue;
        };
        let p = fit::pooled_curve(&data).map_err(|e| ReportError::Fit {
            source_name: source.clone(),
            source: Box::new(e),
        })?;
        shape_rows.push(shape_row(source, g));
        weibull_rows.push(vec![
            source.clone(),
            match (g.weibull_shape, g.weibull_shape_lo, g.weibull_shape_hi) {
                (Some(k), lo, hi) => interval_text(k, lo.zip(hi)),
                _ => "-".into(),
            },
            g.weibull_scale_s.map_or("-".into(), duration_text),
            opt(g.lr_p_value),
        ]);
        validation_rows.push(validation_row(source, &data));
        if let Some((rows, plot)) = cause_rows_of(source, &data)? {
            cause_rows.extend(rows);
            cause_plots.push(plot);
        }
        if let Some(row) = tick_row(source, &data, g)? {
            tick_rows.push(row);
        }
        timelines.push(timeline_plot(source, &data)?);
        let h = |t: f64| t / 3600.0;
        let steps: Vec<(f64, f64)> =
            p.km.t
                .iter()
                .zip(&p.km.s)
                .map(|(&t, &s)| (h(t), s))
                .collect();
        let band: Vec<(f64, f64, f64)> =
            p.km.t
                .iter()
                .zip(p.lo.iter().zip(&p.hi))
                .map(|(&t, (&lo, &hi))| (h(t), lo, hi))
                .collect();
        let (curves, test) = group_curves(store, source)?;
        group_rows.extend(test);
        let title = format!("{source}: {} sessions, {}", g.sessions, g.verdict);
        let svg = plots::survival(&SurvivalPlot {
            title: &title,
            steps,
            band,
            weibull: g.weibull_shape.zip(g.weibull_scale_s.map(h)),
            groups: curves
                .into_iter()
                .map(|(name, steps)| (name, steps.into_iter().map(|(t, s)| (h(t), s)).collect()))
                .collect(),
        })?;
        plots.push(Block::Plot(
            format!("survival-{}.svg", file_safe(source)),
            svg,
            format!("Survival of {source}"),
        ));
    }
    r.blocks.push(Block::Table(
        SHAPE_HEADER.map(String::from).to_vec(),
        shape_rows,
    ));
    if !empty.is_empty() {
        r.blocks.push(Block::Text(format!(
            "No usable sessions (not in the tables): {}.",
            empty.join(", ")
        )));
    }
    r.blocks.push(Block::Text(
        "The Weibull fit drawn dashed in the plots, with the likelihood-ratio test of its shape \
         against the exponential (k = 1):"
            .into(),
    ));
    r.blocks.push(Block::Table(
        [
            "source",
            "Weibull k [95% CI]",
            "Weibull scale",
            "LR p (vs exponential)",
        ]
        .map(String::from)
        .to_vec(),
        weibull_rows,
    ));
    r.blocks.push(Block::Text(format!(
        "Out-of-time validation (`hazardserve fit --validate --split {VALIDATION_SPLIT}`): \
         fitted on what was known before {:.0} % of the observation span, scored on the \
         conditional survival of every session live at the split; integrated IPCW Brier score \
         (lower is better) / Harrell's C, each with its 95 % interval (a percentile bootstrap \
         over the test sessions; none below two).",
        VALIDATION_SPLIT * 100.0
    )));
    r.blocks.push(Block::Table(
        VALIDATION_HEADER.map(String::from).to_vec(),
        validation_rows,
    ));
    if !cause_rows.is_empty() {
        r.blocks.push(Block::Text(
            "How sessions end (`hazardserve fit --by-cause`), for every source whose sessions \
             end in more than one way: the Aalen-Johansen cumulative incidence of each end cause \
             (censored sessions are never a cause), at 1 h, 6 h and 24 h and at the end of \
             follow-up with its 95 % interval; the incidences and the survival sum to 1."
                .into(),
        ));
        r.blocks.push(Block::Table(
            CAUSES_HEADER.map(String::from).to_vec(),
            cause_rows,
        ));
    }
    if !tick_rows.is_empty() {
        r.blocks.push(Block::Text(
            "Sources observed by probes: a session of d seconds between probes r apart lasted \
             between d - r and d + r. The median of the interval-censored NPMLE (Turnbull; what \
             `hazardserve fit` reports for them) beside Kaplan-Meier's on the tick times \
             (`fit --exact-times`):"
                .into(),
        ));
        r.blocks.push(Block::Table(
            TICKS_HEADER.map(String::from).to_vec(),
            tick_rows,
        ));
    }
    if !group_rows.is_empty() {
        r.blocks.push(Block::Text(format!(
            "Do the groups drawn in the plots below differ? Per source, the groups of the first \
             attribute with 2 to 50 values (every group, not only the drawn ones): the k-group \
             log-rank test (`hazardserve fit --by ATTR --test logrank`) and the groups with the \
             shortest and longest restricted mean survival to {} (`fit --by ATTR --rmst {}`) \
             with their sizes and 95 % intervals. Sources whose sessions carry entry ages are left out \
             (the test takes right-censored sessions only).",
            duration_text(GROUP_RMST_HORIZON_S),
            GROUP_RMST_HORIZON_S
        )));
        r.blocks.push(Block::Table(
            GROUPS_HEADER.map(String::from).to_vec(),
            group_rows,
        ));
    }
    r.blocks.extend(plots);
    r.blocks.extend(cause_plots);
    if !timelines.is_empty() {
        r.blocks.push(Block::Heading("Node availability".into()));
        r.blocks.push(Block::Text(format!(
            "Per source, up to {TIMELINE_NODES} nodes (those with the most sessions): the \
             observed window in grey, up-sessions in blue, a red tick where a session ended by a \
             failure (a censored end has none: the node was not seen to fail)."
        )));
        r.blocks.extend(timelines);
    }
    Ok(())
}

/// A group's label and its Kaplan-Meier (time, S) steps.
type GroupSteps = (String, Vec<(f64, f64)>);

/// Groups drawn per source at most (the largest by sessions).
pub const MAX_GROUPS: usize = 7;

/// The Kaplan-Meier steps of each group of `source` (by node group, else zone, else instance
/// type: the first attribute with 2 to 50 values), at most [`MAX_GROUPS`] of them, the
/// largest first; empty when no attribute splits the source.
fn group_curves(
    store: &Store,
    source: &str,
) -> Result<(Vec<GroupSteps>, Option<Vec<String>>), ReportError> {
    for (by, name) in [
        (ByColumn::NodeGroup, "node_group"),
        (ByColumn::Zone, "zone"),
        (ByColumn::InstanceType, "instance_type"),
    ] {
        let data = fit::load_sessions(store, source, Some(by), false)?;
        let groups = data.groups();
        if !(2..=50).contains(&groups.len()) {
            continue;
        }
        let test = group_test_row(source, name, &data, &groups)?;
        let mut sized: Vec<(usize, String)> = groups
            .into_iter()
            .map(|g| {
                let n = data
                    .sessions
                    .iter()
                    .filter(|s| data.node_groups[s.node as usize] == g)
                    .count();
                (n, g)
            })
            .filter(|(n, _)| *n > 0)
            .collect();
        sized.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let mut out = Vec::new();
        for (n, g) in sized.into_iter().take(MAX_GROUPS) {
            let part = data.subset(|s| data.node_groups[s.node as usize] == g);
            let c = fit::pooled_curve(&part).map_err(|e| ReportError::Fit {
                source_name: source.to_string(),
                source: Box::new(e),
            })?;
            let steps = c.km.t.iter().copied().zip(c.km.s.iter().copied()).collect();
            out.push((format!("{g} ({n} sessions)"), steps));
        }
        return Ok((out, test));
    }
    Ok((Vec::new(), None))
}

/// The horizon of the group table's restricted means, seconds (6 h).
pub const GROUP_RMST_HORIZON_S: f64 = 6.0 * 3600.0;

/// The header of the group-comparison table (the book's `groups` table is this table).
pub const GROUPS_HEADER: [&str; 7] = [
    "source",
    "groups by",
    "groups",
    "log-rank chi2 (df)",
    "p",
    "RMST to 6 h: shortest group",
    "longest group",
];

/// `fit --by ATTR --test logrank` and `fit --by ATTR --rmst 21600` of the groups the plot
/// draws (every group with sessions, not only the drawn ones): the k-group log-rank statistic
/// with its degrees of freedom and p-value, and the groups with the smallest and largest
/// restricted mean to 6 h with their 95 % intervals. `None` when a group has sessions with
/// entry ages (the test takes right-censored sessions only) or fewer than two groups have
/// sessions.
fn group_test_row(
    source: &str,
    by: &str,
    data: &SourceSessions,
    groups: &[String],
) -> Result<Option<Vec<String>>, ReportError> {
    use crate::survival::groups::{logrank, rmst, Weighting};
    let fail = |e: crate::survival::SurvivalError| ReportError::Fit {
        source_name: source.to_string(),
        source: Box::new(e),
    };
    let (mut dur, mut ev, mut grp) = (Vec::new(), Vec::new(), Vec::new());
    let mut means: Vec<(f64, f64, &str, usize)> = Vec::new();
    for g in groups {
        let (exit, event, entry) = fit::group_columns(data, g);
        if entry.iter().any(|&e| e > 0.0) {
            return Ok(None);
        }
        if exit.is_empty() {
            continue;
        }
        let r = rmst(&exit, &event, &[GROUP_RMST_HORIZON_S]).map_err(fail)?[0];
        means.push((r.rmst, r.variance_greenwood.sqrt(), g, exit.len()));
        grp.extend(std::iter::repeat_n(means.len() - 1, exit.len()));
        dur.extend(exit);
        ev.extend(event);
    }
    if means.len() < 2 {
        return Ok(None);
    }
    let t = logrank(&dur, &ev, &grp, means.len(), Weighting::LogRank).map_err(fail)?;
    means.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mean_text = |(m, se, g, n): (f64, f64, &str, usize)| {
        let z = 1.959963984540054;
        format!(
            "{g} ({n} sessions): {} [{}, {}]",
            duration_text(m),
            duration_text((m - z * se).max(0.0)),
            duration_text((m + z * se).min(GROUP_RMST_HORIZON_S))
        )
    };
    Ok(Some(vec![
        source.to_string(),
        by.to_string(),
        means.len().to_string(),
        format!("{} ({})", human_float(t.statistic), t.degrees_of_freedom),
        if t.p_value < 1e-4 {
            "< 1e-4".to_string()
        } else {
            format!("{:.4}", t.p_value)
        },
        mean_text(means[0]),
        mean_text(means[means.len() - 1]),
    ]))
}

/// Nodes per availability timeline at most.
pub const TIMELINE_NODES: usize = 20;

/// The availability timeline of `data`'s busiest nodes, in hours or (beyond three days) days
/// since the start of the source's observation.
fn timeline_plot(source: &str, data: &SourceSessions) -> Result<Block, ReportError> {
    let (from, to) = data.observation;
    let (unit, per) = if to - from > 3.0 * 86_400.0 {
        ("d", 86_400.0)
    } else {
        ("h", 3_600.0)
    };
    let x = |t: f64| (t - from) / per;
    let mut counts = vec![0usize; data.node_ids.len()];
    for s in &data.sessions {
        counts[s.node as usize] += 1;
    }
    let mut nodes: Vec<usize> = (0..data.node_ids.len())
        .filter(|&i| counts[i] > 0)
        .collect();
    nodes.sort_by(|&a, &b| counts[b].cmp(&counts[a]).then(a.cmp(&b)));
    nodes.truncate(TIMELINE_NODES);
    let rows: Vec<TimelineRow> = nodes
        .iter()
        .map(|&i| {
            let id = &data.node_ids[i];
            let label = if id.chars().count() > 18 {
                format!("{}…", id.chars().take(17).collect::<String>())
            } else {
                id.clone()
            };
            let (a, b) = data.node_observed.get(i).copied().unwrap_or((from, to));
            TimelineRow {
                label,
                observed: (x(a), x(b)),
                up: data
                    .sessions
                    .iter()
                    .filter(|s| s.node as usize == i)
                    .map(|s| (x(s.start), x(s.end), s.event))
                    .collect(),
            }
        })
        .collect();
    let total = counts.iter().filter(|&&c| c > 0).count();
    let title = format!("{source}: availability of {} of {total} nodes", rows.len());
    let svg = plots::timeline(
        &title,
        &format!("time since the observation started ({unit})"),
        &rows,
    )?;
    Ok(Block::Plot(
        format!("availability-{}.svg", file_safe(source)),
        svg,
        format!("Node availability of {source}"),
    ))
}

/// The header of the end-cause table (the book's `causes` table is this table).
pub const CAUSES_HEADER: [&str; 8] = [
    "source",
    "cause",
    "ends",
    "share of ends",
    "incidence by 1 h",
    "by 6 h",
    "by 24 h",
    "by the end [95 % CI]",
];

/// The header of the tick-source table (the book's `ticks` table is this table).
pub const TICKS_HEADER: [&str; 5] = [
    "source",
    "probe interval",
    "median, ticks as exact (KM)",
    "median, interval-censored (NPMLE)",
    "NPMLE - KM",
];

/// A source's end-cause table rows and its stacked plot.
type CauseRows = (Vec<Vec<String>>, Block);

/// The end-cause rows of a source whose events have more than one cause, and its stacked
/// cumulative-incidence plot; `None` for a single cause.
fn cause_rows_of(source: &str, data: &SourceSessions) -> Result<Option<CauseRows>, ReportError> {
    // Causes of less than 5 % of the ends (beyond the five largest) are shown as `other`.
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for (s, c) in data.sessions.iter().zip(&data.causes) {
        if s.event && s.end > s.start {
            *counts.entry(c.as_str()).or_default() += 1;
        }
    }
    let total_ends: usize = counts.values().sum();
    let mut ranked: Vec<(&str, usize)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let minor: Vec<fit::causes::CauseGroup> = ranked
        .iter()
        .enumerate()
        .filter(|(i, (_, n))| *i >= 5 || 20 * n < total_ends)
        .map(|(_, (c, _))| fit::causes::CauseGroup {
            pattern: c.to_string(),
            name: "other".into(),
        })
        .collect();
    let gc = fit::causes::group_causes(data, "all", &minor).map_err(|e| ReportError::Fit {
        source_name: source.to_string(),
        source: Box::new(e),
    })?;
    let f = &gc.fit;
    if f.causes.len() < 2 {
        return Ok(None);
    }
    let total: u32 = f.n_event_any.iter().sum();
    let mut rows = Vec::new();
    let at = |k: &crate::survival::competing::CauseIncidence, h: f64| {
        f.index_at(h).map_or(0.0, |i| k.cif[i])
    };
    // Largest share first, `other` last.
    let mut order: Vec<&crate::survival::competing::CauseIncidence> = f.causes.iter().collect();
    order.sort_by_key(|k| {
        (
            gc.label(k.cause) == "other",
            std::cmp::Reverse(k.n_event.iter().sum::<u32>()),
        )
    });
    for k in order {
        let ends: u32 = k.n_event.iter().sum();
        let (lo, hi) = f.interval(k.cause).unwrap_or_default();
        let last = k.cif.len() - 1;
        let ci = lo
            .get(last)
            .zip(hi.get(last))
            .map(|(&a, &b)| (a, b))
            .filter(|(a, b)| a.is_finite() && b.is_finite());
        rows.push(vec![
            source.to_string(),
            gc.label(k.cause).to_string(),
            thousands(ends as usize),
            format!("{:.1} %", 100.0 * f64::from(ends) / f64::from(total.max(1))),
            opt3(Some(at(k, fit::HORIZONS_S[0]))),
            opt3(Some(at(k, fit::HORIZONS_S[1]))),
            opt3(Some(at(k, fit::HORIZONS_S[2]))),
            match ci {
                Some((a, b)) => format!("{:.3} [{a:.3}, {b:.3}]", k.cif[last]),
                None => format!("{:.3}", k.cif[last]),
            },
        ]);
    }
    // Stacked: the first cause, the first two, ..., all of them (= 1 - S).
    let h = |t: f64| t / 3600.0;
    let mut stacked = vec![0.0; f.timeline.len()];
    let mut series = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for k in &f.causes {
        for (s, c) in stacked.iter_mut().zip(&k.cif) {
            *s += c;
        }
        names.push(gc.label(k.cause).to_string());
        let mut pts = Vec::with_capacity(2 * f.timeline.len());
        let mut prev = 0.0;
        for (&t, &y) in f.timeline.iter().zip(&stacked) {
            pts.push((h(t).max(0.0), prev));
            pts.push((h(t).max(0.0), y));
            prev = y;
        }
        series.push(plots::Line {
            name: names.join(" + "),
            pts,
            dashed: false,
        });
    }
    let svg = plots::lines(
        &format!("{source}: cumulative incidence by end cause (stacked)"),
        "time since the session started (h)",
        "share of sessions ended",
        &series,
        true,
        plotters::prelude::SeriesLabelPosition::UpperLeft,
    )?;
    Ok(Some((
        rows,
        Block::Plot(
            format!("causes-{}.svg", file_safe(source)),
            svg,
            format!("Cumulative incidence by end cause of {source}"),
        ),
    )))
}

/// The tick-source row of a source observed by probes (`None` when its times are exact).
fn tick_row(
    source: &str,
    data: &SourceSessions,
    g: &fit::GroupFit,
) -> Result<Option<Vec<String>>, ReportError> {
    let tf = fit::ticks::group_ticks(data, "all").map_err(|e| ReportError::Fit {
        source_name: source.to_string(),
        source: Box::new(e),
    })?;
    let Some(tf) = tf else {
        return Ok(None);
    };
    let (km, np) = (g.median_s, tf.median_s());
    Ok(Some(vec![
        source.to_string(),
        duration_text(tf.resolution_s),
        km.map_or("not reached".into(), duration_text),
        np.map_or("not reached".into(), duration_text),
        match (km, np) {
            (Some(a), Some(b)) if (b - a).abs() < 0.5 => "0 s".into(),
            (Some(a), Some(b)) => format!("{:+.0} s", b - a),
            _ => "-".into(),
        },
    ]))
}

/// The header of the hazard-shape table (the book's hazard-shape table is this table).
pub const SHAPE_HEADER: [&str; 8] = [
    "source",
    "sessions",
    "events",
    "median up [95 % CI]",
    "hazard",
    "model (ΔAIC to next)",
    "held-out IBS best",
    "evidence: parameters [95 % CI]",
];

/// One row of the hazard-shape table: the verdict of `fit --shrinkage none` and its evidence.
fn shape_row(source: &str, g: &fit::GroupFit) -> Vec<String> {
    let last = || duration_text(g.curve.last().map_or(0.0, |&(t, _)| t));
    let median = match g.median_s {
        Some(m) => {
            let (lo, hi) = (g.median_ci_low_s, g.median_ci_high_s);
            format!(
                "{} [{}, {}]",
                duration_text(m),
                lo.map_or_else(|| "-".into(), duration_text),
                hi.map_or_else(|| format!("> {}", last()), duration_text)
            )
        }
        None => format!("> {}", last()),
    };
    let model = match (&g.shape_model, g.aic_gap) {
        (Some(m), Some(gap)) => format!("{m} ({gap:.1})"),
        (Some(m), None) => m.clone(),
        _ => "-".into(),
    };
    vec![
        source.to_string(),
        thousands(g.sessions),
        thousands(g.events),
        median,
        format!("**{}**", g.verdict),
        model,
        g.ibs_model.clone().unwrap_or_else(|| "-".into()),
        g.shape
            .as_ref()
            .and_then(fit::evidence_parameters)
            .or_else(|| g.evidence.clone())
            .unwrap_or_else(|| "-".into()),
    ]
}

/// The split of the report's out-of-time validation (a fraction of the observation span).
pub const VALIDATION_SPLIT: f64 = 0.6;

/// The estimators of the validation table, in its column order.
const VALIDATION_ESTIMATORS: [&str; 5] = ["node_km", "pooled_km", "beta", "frailty", "exponential"];

/// The header of the validation table (the book's validation table is this table).
pub const VALIDATION_HEADER: [&str; 7] = [
    "source",
    "test sessions",
    "node KM",
    "pooled KM",
    "beta",
    "frailty",
    "exponential",
];

/// One row of the validation table: IBS / C of every estimator, as `fit --validate` prints
/// them; a source that cannot be validated at the split says why.
fn validation_row(source: &str, data: &fit::SourceSessions) -> Vec<String> {
    let report = match validate(
        &data.sessions,
        Split::Fraction(VALIDATION_SPLIT),
        &ValidateOptions::default(),
    ) {
        Ok(r) => r,
        Err(e) => {
            let mut row = vec![source.to_string(), "-".into()];
            row.push(format!("not validated: {e}"));
            row.extend(std::iter::repeat_n(String::new(), 4));
            return row;
        }
    };
    let mut row = vec![source.to_string(), thousands(report.n_test)];
    for name in VALIDATION_ESTIMATORS {
        let r = report.rows.iter().find(|r| {
            serde_json::to_value(r.estimator)
                .ok()
                .is_some_and(|v| v.as_str() == Some(name))
        });
        row.push(r.map_or("-".into(), |r| {
            format!(
                "{} / {}",
                with_ci(r.ibs, r.ibs_ci),
                with_ci(r.concordance, r.concordance_ci)
            )
        }));
    }
    row
}

/// A score rounded to three decimal places with its bootstrap interval (`0.041 [0.03,
/// 0.052]`), `-` for none.
fn with_ci(x: Option<f64>, ci: Option<[f64; 2]>) -> String {
    match (x, ci) {
        (Some(_), Some([lo, hi])) => {
            format!("{} [{}, {}]", opt3(x), opt3(Some(lo)), opt3(Some(hi)))
        }
        _ => opt3(x),
    }
}

/// Rounded to three decimal places, `-` for none.
fn opt3(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{}", (v * 1000.0).round() / 1000.0))
}

/// A count with thousands separators (`226,263`).
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
