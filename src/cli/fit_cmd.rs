//! `hazardserve fit` and `hazardserve priors export`: survival of a source in the store.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use super::args::{Globals, OutputArgs};
use super::km_cmd::{group_test, rmst_table, GroupTest};
use crate::fit::{self, ByColumn};
use crate::output::{self, Col, OutputFormat};
use crate::store::Store;
use crate::survival::nelson_aalen::nelson_aalen;
use crate::survival::priors::PriorsEstimator;
use crate::survival::shrinkage::EstimatorChoice;
use crate::survival::validate::{validate, Split, ValidateOptions};
use crate::survival::SurvivalData;

/// Shrinkage estimator choice on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShrinkageArg {
    /// No per-node shrinkage.
    None,
    /// Beta-process prior centred on the pooled hazard (M by cross-validation).
    Beta,
    /// Gamma-frailty empirical Bayes.
    Frailty,
    /// Pick by within-node cross-validation.
    Auto,
}

impl ShrinkageArg {
    fn choice(self) -> Option<EstimatorChoice> {
        match self {
            ShrinkageArg::None => None,
            ShrinkageArg::Beta => Some(EstimatorChoice::BetaProcess),
            ShrinkageArg::Frailty => Some(EstimatorChoice::GammaFrailty),
            ShrinkageArg::Auto => Some(EstimatorChoice::Auto),
        }
    }
}

/// `fit` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Columns:\n  verdict   hazard shape: decreasing, increasing, constant, bathtub or capped, chosen by AIC\n            over seven maximum-likelihood models; \"too few events (n)\" below --min-events\n  model     the model that decided; aic_gap: its AIC lead over the next model\n  ibs_model the model with the best held-out integrated Brier score (fitted on alternate\n            sessions, scored on the others): a second opinion on the fit\n  evidence  that model's parameters with 95 % intervals, and the rule that fired\n  median    Kaplan-Meier median, or \"> t (not reached)\" when S stays above 0.5; for tick\n            sources the interval-censored NPMLE's (see times)\n  times     exact, or the probe interval whose NPMLE gave median and s_* (--exact-times:\n            Kaplan-Meier on the tick times)\n  m         beta-process prior strength: how many of a node's own sessions the pooled curve\n            is worth (small: nodes follow their own data; large: the pooled curve)\n  theta     gamma-frailty variance: how much node hazards differ (0: not at all)\n  notes     estimates at the edge of their search range, and what that means\n\nExamples:\n  hazardserve fit --source gce-preemptible\n  hazardserve fit --source gce-preemptible --by zone --format json\n  hazardserve fit --source gce-preemptible --hazard\n  hazardserve fit --source cbl-preemption-1node --validate --split 0.7\n  hazardserve fit --source gce-preemptible --by-cause\n  hazardserve fit --source fta-lanl05 --by-cause \\\n      --cause-group 'failure:*=failure'\n  hazardserve fit --source cbl-availability-1node --exact-times\n  hazardserve fit --source gce-preemptible --by zone --test logrank\n  hazardserve fit --source gce-preemptible --by zone --test logrank \\\n      --strata instance-type\n  hazardserve fit --source gce-preemptible --by zone --rmst 7200\n  hazardserve fit --source spotserve --nelson-aalen"
)]
pub struct FitArgs {
    /// The source to fit.
    #[arg(long)]
    pub source: String,
    /// Fit one pooled curve per value of this node attribute.
    #[arg(long, value_enum)]
    pub by: Option<ByColumn>,
    /// Per-node shrinkage toward the pooled curve.
    #[arg(long, value_enum, default_value_t = ShrinkageArg::Auto)]
    pub shrinkage: ShrinkageArg,
    /// Also use left-truncated sessions of unknown age (they bias lifetimes short).
    #[arg(long)]
    pub include_truncated: bool,
    /// Print the pooled curves' steps (one table: group, t_s, survival) instead of the
    /// summary.
    #[arg(long, conflicts_with = "validate")]
    pub curve: bool,
    /// Score the estimators out of time instead: fit before --split, test on sessions live then
    /// (one row per estimator and calibration horizon; IBS and C with 95 % bootstrap intervals
    /// over the test sessions).
    #[arg(long)]
    pub validate: bool,
    /// Print each group's smoothed hazard instead (one table: group, t_s, hazard_per_h with its
    /// 95 % interval): kernel-smoothed Nelson-Aalen increments, boundary-corrected, with a
    /// cross-validated bandwidth.
    #[arg(long, conflicts_with_all = ["validate", "curve"])]
    pub hazard: bool,
    /// Fewer observed ends than this in a group: no hazard-shape verdict ("too few events")
    /// and null parametric columns.
    #[arg(long, default_value_t = fit::DEFAULT_MIN_EVENTS)]
    pub min_events: usize,
    /// Treat tick times as exact. By default a source observed by probes (`resolution_s` > 0)
    /// has its medians and S(1 h / 6 h / 24 h) from the interval-censored NPMLE (Turnbull): a
    /// session of d seconds between probes r apart lasted between d - r and d + r. The
    /// hazard-shape models always use the tick times.
    #[arg(long)]
    pub exact_times: bool,
    /// Competing risks instead: per group and end cause, the Aalen-Johansen cumulative
    /// incidence at 1 h / 6 h / 24 h (24 h with its 95 % interval) and at the end of
    /// follow-up (end_s), and the cause-specific Nelson-Aalen cumulative hazard at 24 h; with
    /// --curve, every step. Censored sessions are
    /// never a cause; entry ages are honoured.
    #[arg(long, conflicts_with_all = ["validate", "hazard"])]
    pub by_cause: bool,
    /// With --by-cause: report every end cause matching PATTERN (a trailing * is a wildcard)
    /// as NAME, e.g. 'failure:*=failure'. Repeatable; the first match wins.
    #[arg(long, value_name = "PATTERN[=NAME]", requires = "by_cause")]
    pub cause_group: Vec<crate::fit::causes::CauseGroup>,
    /// Test whether the --by groups differ instead: the log-rank test (k groups, k - 1
    /// degrees of freedom) or a weighted variant. Right-censored sessions only.
    #[arg(long, value_enum, requires = "by", conflicts_with_all = ["validate", "hazard", "curve", "by_cause"])]
    pub test: Option<GroupTest>,
    /// With --test: stratify by this node attribute. The groups are compared within each
    /// stratum (risk sets never mix strata) and the strata summed, as R's
    /// survdiff(... + strata(s)): zones compared within instance types, say.
    #[arg(long, value_enum, value_name = "ATTRIBUTE", requires = "test")]
    pub strata: Option<ByColumn>,
    /// The restricted mean survival time to this horizon in seconds per group, with its 95 %
    /// interval (Greenwood), and for two groups their difference. Right-censored sessions only.
    #[arg(long, value_name = "SECONDS", conflicts_with_all = ["validate", "hazard", "curve", "by_cause", "test"])]
    pub rmst: Option<f64>,
    /// Print each group's Nelson-Aalen cumulative hazard instead (one table: group, t_s,
    /// cumulative_hazard with its 95 % interval).
    #[arg(long, conflicts_with_all = ["validate", "hazard", "curve", "by_cause", "test", "rmst"])]
    pub nelson_aalen: bool,
    /// Split of --validate: a fraction of the observation span in (0, 1), seconds on the
    /// source's clock, or an RFC 3339 timestamp.
    #[arg(long, default_value = "0.6")]
    pub split: String,
    /// Where and how to write the result.
    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_split(s: &str) -> anyhow::Result<Split> {
    if let Ok(v) = s.trim().parse::<f64>() {
        if v > 0.0 && v < 1.0 {
            return Ok(Split::Fraction(v));
        }
    }
    Ok(Split::At(fit::parse_time(s)?))
}

/// `fit --by-cause`: per group and cause, the cumulative incidence at the summary horizons
/// (or, with --curve, every step).
fn print_causes(
    globals: &Globals,
    data: &fit::SourceSessions,
    args: &FitArgs,
) -> anyhow::Result<()> {
    // (group, cause, [cif 1 h, 6 h, 24 h, 24 h lo, hi, hazard 24 h, cif at end, share], events,
    // last time)
    type CauseRow = (String, String, Vec<Option<f64>>, i64, f64);
    let mut rows: Vec<CauseRow> = Vec::new();
    let mut steps: Vec<(String, String, f64, f64, f64, f64)> = Vec::new();
    for g in data.groups() {
        let gc = fit::causes::group_causes(data, &g, &args.cause_group)
            .with_context(|| format!("competing risks of group {g}"))?;
        let f = &gc.fit;
        if f.causes.is_empty() {
            globals.say(format!("{g}: no session ended by an event (all censored)"));
            continue;
        }
        let nan = |x: f64| Some(x).filter(|v| !v.is_nan());
        for k in &f.causes {
            let label = gc.label(k.cause).to_string();
            let (ci_lower, ci_upper) = f
                .interval(k.cause)
                .context("a cause that occurred has an interval")?;
            let hazard = f
                .cause_hazard(k.cause, true)
                .context("a cause that occurred has a hazard")?;
            let events: u32 = k.n_event.iter().sum();
            if args.curve {
                for i in 0..f.timeline.len() {
                    if i > 0 && k.n_event[i] == 0 {
                        continue;
                    }
                    steps.push((
                        g.clone(),
                        label.clone(),
                        f.timeline[i],
                        k.cif[i],
                        ci_lower[i],
                        ci_upper[i],
                    ));
                }
                continue;
            }
            let at = |h: f64| f.index_at(h);
            let mut vals: Vec<Option<f64>> = fit::HORIZONS_S
                .iter()
                .map(|&h| Some(at(h).map_or(0.0, |i| k.cif[i])))
                .collect();
            let i24 = at(fit::HORIZONS_S[2]);
            vals.push(i24.and_then(|i| nan(ci_lower[i])));
            vals.push(i24.and_then(|i| nan(ci_upper[i])));
            vals.push(Some(i24.map_or(0.0, |i| hazard.cumulative_hazard[i])));
            vals.push(k.cif.last().copied());
            let total: u32 = f.n_event_any.iter().sum();
            vals.push(Some(f64::from(events) / f64::from(total.max(1))));
            let end = f.timeline.last().copied().unwrap_or(0.0);
            rows.push((g.clone(), label, vals, i64::from(events), end));
        }
    }
    if args.curve {
        let b = output::batch(vec![
            (
                "group",
                Col::Str(steps.iter().map(|r| Some(r.0.clone())).collect()),
            ),
            (
                "cause",
                Col::Str(steps.iter().map(|r| Some(r.1.clone())).collect()),
            ),
            ("t_s", Col::F64(steps.iter().map(|r| Some(r.2)).collect())),
            ("cif", Col::F64(steps.iter().map(|r| Some(r.3)).collect())),
            (
                "ci_lower",
                Col::F64(
                    steps
                        .iter()
                        .map(|r| Some(r.4).filter(|v| !v.is_nan()))
                        .collect(),
                ),
            ),
            (
                "ci_upper",
                Col::F64(
                    steps
                        .iter()
                        .map(|r| Some(r.5).filter(|v| !v.is_nan()))
                        .collect(),
                ),
            ),
        ])?;
        return args.output.emit(globals, &[b]);
    }
    let col = |k: usize| Col::F64(rows.iter().map(|r| r.2[k]).collect());
    let b = output::batch(vec![
        (
            "group",
            Col::Str(rows.iter().map(|r| Some(r.0.clone())).collect()),
        ),
        (
            "cause",
            Col::Str(rows.iter().map(|r| Some(r.1.clone())).collect()),
        ),
        ("events", Col::I64(rows.iter().map(|r| Some(r.3)).collect())),
        ("share", col(7)),
        ("cif_1h", col(0)),
        ("cif_6h", col(1)),
        ("cif_24h", col(2)),
        ("cif_24h_lo", col(3)),
        ("cif_24h_hi", col(4)),
        ("cum_hazard_24h", col(5)),
        ("cif_end", col(6)),
        ("end_s", Col::F64(rows.iter().map(|r| Some(r.4)).collect())),
    ])?;
    // The answer first: how much each cause ends by the end of the data, then by 1, 6, 24 h.
    args.output.emit_lead(
        globals,
        b,
        &[
            "group", "cause", "events", "share", "cif_end", "cif_1h", "cif_6h", "cif_24h",
        ],
    )
}

/// `fit --test`, `fit --rmst` and `fit --nelson-aalen` on each --by group's sessions.
fn print_group_estimates(
    globals: &Globals,
    data: &fit::SourceSessions,
    args: &FitArgs,
    node_strata: Option<&[String]>,
) -> anyhow::Result<()> {
    let groups = data.groups();
    let cols: Vec<(Vec<f64>, Vec<bool>, Vec<f64>)> =
        groups.iter().map(|g| fit::group_columns(data, g)).collect();
    let truncated: usize = cols
        .iter()
        .map(|c| c.2.iter().filter(|&&e| e > 0.0).count())
        .sum();
    if args.nelson_aalen {
        let (mut group, mut t, mut h, mut lo, mut hi) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (g, (exit, event, entry)) in groups.iter().zip(&cols) {
            if exit.is_empty() {
                continue;
            }
            let mut d = SurvivalData::new(exit, event);
            if entry.iter().any(|&e| e > 0.0) {
                d = d.with_entry(entry);
            }
            let na = nelson_aalen(&d, true).with_context(|| format!("group {g}"))?;
            let (na_lo, na_hi) = na.interval();
            for i in 0..na.timeline.len() {
                if i > 0 && na.n_event[i] == 0 {
                    continue;
                }
                group.push(Some(g.clone()));
                t.push(Some(na.timeline[i]));
                h.push(Some(na.cumulative_hazard[i]));
                lo.push(Some(na_lo[i]));
                hi.push(Some(na_hi[i]));
            }
        }
        let b = output::batch(vec![
            ("group", Col::Str(group)),
            ("t_s", Col::F64(t)),
            ("cumulative_hazard", Col::F64(h)),
            ("ci_lower", Col::F64(lo)),
            ("ci_upper", Col::F64(hi)),
        ])?;
        return args.output.emit(globals, &[b]);
    }
    if truncated > 0 {
        bail!(
            "source {}: {truncated} session(s) have entry ages (left truncation); the log-rank test and RMST here take right-censored sessions only",
            args.source
        );
    }
    let (mut dur, mut ev, mut grp) = (Vec::new(), Vec::new(), Vec::new());
    for (k, (exit, event, _)) in cols.iter().enumerate() {
        dur.extend_from_slice(exit);
        ev.extend_from_slice(event);
        grp.extend(std::iter::repeat_n(k, exit.len()));
    }
    let name = format!("source {}", args.source);
    if let Some(test) = args.test {
        // The strata of the sessions in the order group_columns lists them.
        let strata: Option<Vec<&str>> = node_strata.map(|labels| {
            groups
                .iter()
                .flat_map(|g| {
                    data.sessions
                        .iter()
                        .filter(move |s| {
                            data.node_groups.get(s.node as usize) == Some(g) && s.end > s.start
                        })
                        .map(|s| labels.get(s.node as usize).map_or("(none)", String::as_str))
                })
                .collect()
        });
        let b = group_test(&name, &dur, &ev, &grp, &groups, test, strata.as_deref())?;
        return args.output.emit(globals, &[b]);
    }
    let h = args.rmst.unwrap_or_default();
    let by = args.by.is_some().then_some((&grp[..], &groups[..]));
    let b = rmst_table(&name, &dur, &ev, by, h)?;
    args.output.emit(globals, &[b])
}

/// `fit --hazard`: each group's kernel-smoothed hazard with its pointwise 95 % interval.
fn print_hazard(
    globals: &Globals,
    data: &fit::SourceSessions,
    args: &FitArgs,
) -> anyhow::Result<()> {
    use crate::survival::hazard::{smoothed_hazard, HazardOptions};
    let (mut group, mut t, mut h, mut lo, mut hi, mut bw) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let per_h = |x: f64| Some(x * 3600.0);
    for g in data.groups() {
        let (exit, event, entry) = fit::group_columns(data, &g);
        let events = event.iter().filter(|&&e| e).count();
        if events < args.min_events {
            globals.say(format!(
                "{g}: too few events ({events} < {}) for a smoothed hazard",
                args.min_events
            ));
            continue;
        }
        let truncated = entry.iter().any(|&e| e > 0.0);
        let sh = smoothed_hazard(
            &exit,
            &event,
            truncated.then_some(entry.as_slice()),
            &HazardOptions::default(),
        )
        .with_context(|| format!("smoothing the hazard of group {g}"))?;
        globals.say(format!(
            "{g}: {} events, bandwidth {:.3} ({:?}, {:?} scale)",
            sh.events, sh.bandwidth, sh.bandwidth_method, sh.scale
        ));
        for p in &sh.points {
            group.push(Some(g.clone()));
            t.push(Some(p.t));
            h.push(per_h(p.hazard));
            lo.push(per_h(p.ci_low));
            hi.push(per_h(p.ci_high));
            bw.push(Some(sh.bandwidth));
        }
    }
    let b = output::batch(vec![
        ("group", Col::Str(group)),
        ("t_s", Col::F64(t)),
        ("hazard_per_h", Col::F64(h)),
        ("ci_low_per_h", Col::F64(lo)),
        ("ci_high_per_h", Col::F64(hi)),
        ("bandwidth", Col::F64(bw)),
    ])?;
    args.output.emit(globals, &[b])
}

/// What a time on a source's clock means, for messages.
fn clock_words(time_base: &str) -> &'static str {
    if time_base == "utc" {
        "UTC clock"
    } else {
        "relative clock: seconds from the trace's start, so give --split as a fraction or in seconds"
    }
}

/// `hazardserve fit`.
pub fn fit(globals: &Globals, args: FitArgs) -> anyhow::Result<()> {
    let store = Store::open(&globals.store)?;
    let mut data = fit::load_sessions(&store, &args.source, args.by, args.include_truncated)?;
    if data.sessions.is_empty() && data.excluded_truncated > 0 {
        // Every session was already up when observation began: they are all we have.
        globals.say(format!(
            "note: all {} sessions are left-truncated of unknown age; fitting them anyway (lifetimes are lower bounds)",
            data.excluded_truncated
        ));
        data = fit::load_sessions(&store, &args.source, args.by, true)?;
    } else if data.excluded_truncated > 0 {
        globals.say(format!(
            "note: {} left-truncated session(s) of unknown age left out (--include-truncated keeps them)",
            data.excluded_truncated
        ));
    }
    if data.sessions.is_empty() {
        bail!("source {} has no usable sessions", args.source);
    }
    if args.validate {
        let split = parse_split(&args.split)?;
        let (from, to) = data.observation;
        let clock = clock_words(&data.time_base);
        if let Split::At(t) = split {
            if !(t > from && t < to) {
                bail!(
                    "--split {}: {} is outside the observation of source {} ({} to {}; {clock})",
                    args.split,
                    crate::output::clock_time(t, &data.time_base),
                    args.source,
                    crate::output::clock_time(from, &data.time_base),
                    crate::output::clock_time(to, &data.time_base),
                );
            }
        }
        let report =
            validate(&data.sessions, split, &ValidateOptions::default()).with_context(|| {
                format!(
                    "validating source {} (observed {} to {}; {clock})",
                    args.source,
                    crate::output::clock_time(from, &data.time_base),
                    crate::output::clock_time(to, &data.time_base)
                )
            })?;
        globals.say(format!(
            "split at {} ({} clock): {} training rows, {} test sessions ({} ended after the split)",
            crate::output::clock_time(report.split_time_s, &data.time_base),
            data.time_base,
            report.n_train,
            report.n_test,
            report.n_test_events
        ));
        // One row per estimator and calibration horizon.
        let (mut est, mut n_test, mut ibs, mut conc) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut ibs_lo, mut ibs_hi, mut conc_lo, mut conc_hi) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut horizon, mut predicted, mut observed) = (Vec::new(), Vec::new(), Vec::new());
        for r in &report.rows {
            let name = serde_json::to_value(r.estimator)?
                .as_str()
                .map(String::from);
            let points: Vec<Option<&crate::survival::validate::CalibrationPoint>> =
                if r.calibration.is_empty() {
                    vec![None]
                } else {
                    r.calibration.iter().map(Some).collect()
                };
            for c in points {
                est.push(name.clone());
                n_test.push(Some(r.n_test as i64));
                ibs.push(r.ibs);
                conc.push(r.concordance);
                ibs_lo.push(r.ibs_ci.map(|c| c[0]));
                ibs_hi.push(r.ibs_ci.map(|c| c[1]));
                conc_lo.push(r.concordance_ci.map(|c| c[0]));
                conc_hi.push(r.concordance_ci.map(|c| c[1]));
                horizon.push(c.map(|c| c.horizon_s));
                predicted.push(c.map(|c| c.predicted));
                observed.push(c.map(|c| c.observed));
            }
        }
        let b = output::batch(vec![
            ("estimator", Col::Str(est)),
            ("n_test", Col::I64(n_test)),
            ("ibs", Col::F64(ibs)),
            ("ibs_ci_low", Col::F64(ibs_lo)),
            ("ibs_ci_high", Col::F64(ibs_hi)),
            ("concordance", Col::F64(conc)),
            ("concordance_ci_low", Col::F64(conc_lo)),
            ("concordance_ci_high", Col::F64(conc_hi)),
            ("horizon_s", Col::F64(horizon)),
            ("predicted", Col::F64(predicted)),
            ("observed", Col::F64(observed)),
        ])?;
        return args.output.emit(globals, &[b]);
    }
    if args.hazard {
        return print_hazard(globals, &data, &args);
    }
    if args.by_cause {
        return print_causes(globals, &data, &args);
    }
    if args.test.is_some() || args.rmst.is_some() || args.nelson_aalen {
        // Each node's stratum label (node indices are the same in every load of a source).
        let strata = match args.strata {
            Some(by) => Some(fit::load_sessions(&store, &args.source, Some(by), true)?.node_groups),
            None => None,
        };
        return print_group_estimates(globals, &data, &args, strata.as_deref());
    }
    let mut fits = fit::fit_groups_with(&data, args.shrinkage.choice(), args.min_events)
        .with_context(|| format!("fitting source {}", args.source))?;
    let mut times = vec!["exact".to_string(); fits.len()];
    if !args.exact_times {
        for (g, t) in fits.iter_mut().zip(times.iter_mut()) {
            let Some(tf) = fit::ticks::group_ticks(&data, &g.group)
                .with_context(|| format!("interval-censored fit of group {}", g.group))?
            else {
                continue;
            };
            let km_median = g.median.clone();
            g.median_s = tf.median_s();
            g.median = match g.median_s {
                Some(m) => output::duration_text(m),
                None => "not reached".to_string(),
            };
            g.median_ci_low_s = None;
            g.median_ci_high_s = None;
            g.s_1h = Some(tf.survival(fit::HORIZONS_S[0]));
            g.s_6h = Some(tf.survival(fit::HORIZONS_S[1]));
            g.s_24h = Some(tf.survival(fit::HORIZONS_S[2]));
            *t = format!("{:.0} s ticks", tf.resolution_s);
            globals.say(format!(
                "{}: probes {:.0} s apart, so median and s_* are the interval-censored NPMLE's (Turnbull; median {} against {} with tick times as exact; --exact-times for Kaplan-Meier)",
                g.group, tf.resolution_s, g.median, km_median
            ));
        }
    }
    if args.curve {
        let (mut group, mut t, mut surv) = (Vec::new(), Vec::new(), Vec::new());
        for g in &fits {
            for &(ti, si) in &g.curve {
                group.push(Some(g.group.clone()));
                t.push(Some(ti));
                surv.push(Some(si));
            }
        }
        let b = output::batch(vec![
            ("group", Col::Str(group)),
            ("t_s", Col::F64(t)),
            ("survival", Col::F64(surv)),
        ])?;
        return args.output.emit(globals, &[b]);
    }
    let col = |f: &dyn Fn(&fit::GroupFit) -> Option<f64>| Col::F64(fits.iter().map(f).collect());
    let b = output::batch(vec![
        (
            "group",
            Col::Str(fits.iter().map(|g| Some(g.group.clone())).collect()),
        ),
        (
            "nodes",
            Col::I64(fits.iter().map(|g| Some(g.nodes as i64)).collect()),
        ),
        (
            "sessions",
            Col::I64(fits.iter().map(|g| Some(g.sessions as i64)).collect()),
        ),
        (
            "events",
            Col::I64(fits.iter().map(|g| Some(g.events as i64)).collect()),
        ),
        ("median_s", col(&|g| g.median_s)),
        (
            "median",
            Col::Str(fits.iter().map(|g| Some(g.median.clone())).collect()),
        ),
        ("s_1h", col(&|g| g.s_1h)),
        ("s_6h", col(&|g| g.s_6h)),
        ("s_24h", col(&|g| g.s_24h)),
        (
            "times",
            Col::Str(times.iter().map(|t| Some(t.clone())).collect()),
        ),
        ("weibull_shape", col(&|g| g.weibull_shape)),
        ("weibull_shape_lo", col(&|g| g.weibull_shape_lo)),
        ("weibull_shape_hi", col(&|g| g.weibull_shape_hi)),
        ("weibull_scale_s", col(&|g| g.weibull_scale_s)),
        ("lr_p_value", col(&|g| g.lr_p_value)),
        (
            "verdict",
            Col::Str(fits.iter().map(|g| Some(g.verdict.to_string())).collect()),
        ),
        (
            "model",
            Col::Str(fits.iter().map(|g| g.shape_model.clone()).collect()),
        ),
        ("aic_gap", col(&|g| g.aic_gap)),
        (
            "ibs_model",
            Col::Str(fits.iter().map(|g| g.ibs_model.clone()).collect()),
        ),
        (
            "evidence",
            Col::Str(fits.iter().map(|g| g.evidence.clone()).collect()),
        ),
        (
            "shrinkage",
            Col::Str(fits.iter().map(|g| Some(g.shrinkage.clone())).collect()),
        ),
        ("m", col(&|g| g.m)),
        ("theta", col(&|g| g.theta)),
        (
            "notes",
            Col::Str(
                fits.iter()
                    .map(|g| (!g.notes.is_empty()).then(|| g.notes.join("; ")))
                    .collect(),
            ),
        ),
    ])?;
    // The answer first: the median with its interval and the hazard's shape.
    args.output.emit_lead(
        globals,
        b,
        &[
            "group", "nodes", "sessions", "events", "median", "verdict", "model", "s_1h", "s_6h",
            "s_24h",
        ],
    )
}

/// `priors` subcommands.
#[derive(Debug, Subcommand)]
pub enum PriorsCommand {
    /// Export per-node and pooled hazard priors for a serving system (schema: docs/priors.schema.json).
    #[command(
        after_help = "Examples:\n  hazardserve priors export --source gce-preemptible --out gce-priors.json\n  hazardserve priors export --source gce-preemptible \\\n      --before 2019-03-20T00:00:00Z --out p.parquet --format parquet"
    )]
    Export(PriorsExportArgs),
}

/// `priors export` arguments.
#[derive(Debug, Args)]
pub struct PriorsExportArgs {
    /// The source.
    #[arg(long)]
    pub source: String,
    /// Output file.
    #[arg(long)]
    pub out: PathBuf,
    /// File format: json is the versioned priors document (docs/priors.schema.json); parquet
    /// and csv are flat rows (scope, node_id, t, s).
    #[arg(long, value_enum, default_value_t = OutputFormat::Json)]
    pub format: OutputFormat,
    /// Fit only on what was observed before this time (seconds or RFC 3339); default: the end
    /// of observation.
    #[arg(long)]
    pub before: Option<String>,
    /// Node-curve estimator.
    #[arg(long, value_enum, default_value_t = ShrinkageArg::Auto)]
    pub shrinkage: ShrinkageArg,
    /// Maximum steps per curve (fewer = smaller file; curves stay exact at their steps).
    #[arg(long, default_value_t = 128)]
    pub max_points: usize,
}

/// `hazardserve priors ...`.
pub fn priors(globals: &Globals, cmd: PriorsCommand) -> anyhow::Result<()> {
    let PriorsCommand::Export(args) = cmd;
    let store = Store::open(&globals.store)?;
    let before = args.before.as_deref().map(fit::parse_time).transpose()?;
    let estimator = match args.shrinkage {
        ShrinkageArg::Beta => Some(PriorsEstimator::Beta),
        ShrinkageArg::Frailty => Some(PriorsEstimator::Frailty),
        ShrinkageArg::None => Some(PriorsEstimator::None),
        ShrinkageArg::Auto => None,
    };
    let priors = fit::priors_as_of(&store, &args.source, before, estimator, args.max_points)?;
    match args.format {
        OutputFormat::Json => {
            let text = priors.to_json()?;
            crate::store::write_atomic(&args.out, text.as_bytes())?;
        }
        OutputFormat::Table => {
            bail!("--format table: priors export writes a file; use json, parquet or csv")
        }
        format => {
            let rows = priors.rows();
            let b = output::batch(vec![
                (
                    "scope",
                    Col::Str(rows.iter().map(|r| Some(r.scope.to_string())).collect()),
                ),
                (
                    "node_id",
                    Col::Str(rows.iter().map(|r| r.node_id.clone()).collect()),
                ),
                ("t", Col::F64(rows.iter().map(|r| Some(r.t)).collect())),
                ("s", Col::F64(rows.iter().map(|r| Some(r.s)).collect())),
            ])?;
            output::emit(&[b], format, Some(&args.out))?;
        }
    }
    globals.say(format!(
        "wrote {} ({} nodes, estimator {:?}, cutoff {})",
        args.out.display(),
        priors.nodes.len(),
        priors.estimator,
        priors.cutoff_s
    ));
    Ok(())
}
