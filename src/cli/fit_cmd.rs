//! `hazardserve km`, `hazardserve fit` and `hazardserve priors export`.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use super::{Globals, OutputArgs};
use crate::fit::{self, ByColumn};
use crate::output::{self, Col, OutputFormat};
use crate::store::Store;
use crate::survival::groups::{logrank, rmst, Weighting};
use crate::survival::km::KmFit;
use crate::survival::priors::PriorsEstimator;
use crate::survival::shrinkage::EstimatorChoice;
use crate::survival::validate::{validate, Split, ValidateOptions};
use crate::survival::{SurvivalData, Z_95};

/// `km` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve km --input sessions.csv --duration duration_s --event event\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --entry entry_s --format json\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --group node_id --test logrank\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --group node_id --rmst 3600"
)]
pub struct KmArgs {
    /// A CSV file with a header row.
    #[arg(long)]
    pub input: PathBuf,
    /// Column of durations (ages at exit when --entry is given).
    #[arg(long, default_value = "duration")]
    pub duration: String,
    /// Column of event flags (1/0, true/false). Default: the column `event` when the file has
    /// one, else every row is an event.
    #[arg(long)]
    pub event: Option<String>,
    /// Column of entry ages (left truncation).
    #[arg(long)]
    pub entry: Option<String>,
    /// Column of group labels, for --test and --rmst.
    #[arg(long)]
    pub group: Option<String>,
    /// Instead of the curve, test whether the --group groups differ: the log-rank test
    /// (two-group or k-group chi-square, k - 1 degrees of freedom) or a weighted variant
    /// (wilcoxon weighs each event time by the number at risk, tarone-ware by its square root,
    /// peto by the Peto-Peto survival). Right-censored data only (no --entry).
    #[arg(long, value_enum, requires = "group", conflicts_with_all = ["entry", "rmst"])]
    pub test: Option<GroupTest>,
    /// Instead of the curve, the restricted mean survival time to this horizon (the area
    /// under the Kaplan-Meier curve up to it) with a 95 % interval from its Greenwood
    /// variance, per --group group (or overall), and for two groups their difference.
    /// Right-censored data only (no --entry).
    #[arg(long, value_name = "H", conflicts_with = "entry")]
    pub rmst: Option<f64>,
    /// Where and how to write the curve.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `km --test`: the weighting of the group test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupTest {
    /// Every event time weighs 1.
    Logrank,
    /// Weighted by the number at risk (Gehan-Breslow).
    Wilcoxon,
    /// Weighted by the square root of the number at risk.
    TaroneWare,
    /// Weighted by the Peto-Peto survival.
    Peto,
}

impl GroupTest {
    fn weighting(self) -> Weighting {
        match self {
            GroupTest::Logrank => Weighting::LogRank,
            GroupTest::Wilcoxon => Weighting::Wilcoxon,
            GroupTest::TaroneWare => Weighting::TaroneWare,
            GroupTest::Peto => Weighting::Peto,
        }
    }

    fn name(self) -> &'static str {
        match self {
            GroupTest::Logrank => "logrank",
            GroupTest::Wilcoxon => "wilcoxon",
            GroupTest::TaroneWare => "tarone-ware",
            GroupTest::Peto => "peto",
        }
    }
}

fn parse_flag(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "1.0" => Some(true),
        "0" | "false" | "f" | "no" | "0.0" => Some(false),
        _ => None,
    }
}

/// `hazardserve km`.
pub fn km(globals: &Globals, args: KmArgs) -> anyhow::Result<()> {
    let name = args.input.display().to_string();
    let file = std::fs::File::open(&args.input).with_context(|| format!("{name}: cannot read"))?;
    // Quoted fields, CRLF and a byte-order mark are handled by the CSV reader.
    let mut rows = hazardserve_ingest::csv_records(std::io::BufReader::new(file));
    let header = match rows.next() {
        None => bail!("{name}: empty input"),
        Some(Err(e)) => bail!("{name}:{}: {}", e.line, e.reason),
        Some(Ok((_, h))) => h,
    };
    let cols: Vec<String> = header
        .iter()
        .map(|c| c.trim_matches('"').to_string())
        .collect();
    let find = |c: &str| cols.iter().position(|h| h.eq_ignore_ascii_case(c));
    let di = find(&args.duration).with_context(|| {
        format!(
            "{name}:1: no duration column {:?} (columns: {})",
            args.duration,
            cols.join(", ")
        )
    })?;
    let ei = match &args.event {
        Some(c) => Some(find(c).with_context(|| {
            format!(
                "{name}:1: no event column {c:?} (columns: {})",
                cols.join(", ")
            )
        })?),
        None => find("event"),
    };
    let ni = match &args.entry {
        Some(c) => Some(find(c).with_context(|| format!("{name}:1: no entry column {c:?}"))?),
        None => None,
    };
    let gi = match &args.group {
        Some(c) => Some(find(c).with_context(|| {
            format!(
                "{name}:1: no group column {c:?} (columns: {})",
                cols.join(", ")
            )
        })?),
        None => None,
    };
    if gi.is_some() && args.test.is_none() && args.rmst.is_none() {
        bail!("--group needs --test or --rmst (the curve itself is pooled)");
    }
    let (mut dur, mut ev, mut ent) = (Vec::new(), Vec::new(), Vec::new());
    // Group labels in order of first appearance, and each row's index into them.
    let (mut labels, mut grp): (Vec<String>, Vec<usize>) = (Vec::new(), Vec::new());
    let mut label_index: std::collections::HashMap<String, usize> = Default::default();
    for row in rows {
        let (lineno, f) = row.map_err(|e| anyhow::anyhow!("{name}:{}: {}", e.line, e.reason))?;
        let get = |k: usize| f.get(k).unwrap_or("");
        let d: f64 = get(di)
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .with_context(|| format!("{name}:{lineno}: duration {:?} is not a number", get(di)))?;
        let e = match ei {
            Some(k) => parse_flag(get(k))
                .with_context(|| format!("{name}:{lineno}: event {:?} is not 0/1", get(k)))?,
            None => true,
        };
        if let Some(k) = ni {
            let v: f64 = get(k)
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .with_context(|| format!("{name}:{lineno}: entry {:?} is not a number", get(k)))?;
            ent.push(v);
        }
        if let Some(k) = gi {
            let l = get(k).trim();
            if l.is_empty() {
                bail!("{name}:{lineno}: the group is empty");
            }
            let g = match label_index.get(l) {
                Some(&g) => g,
                None => {
                    labels.push(l.to_string());
                    label_index.insert(l.to_string(), labels.len() - 1);
                    labels.len() - 1
                }
            };
            grp.push(g);
        }
        dur.push(d);
        ev.push(e);
    }
    if let Some(test) = args.test {
        let b = group_test(&name, &dur, &ev, &grp, &labels, test)?;
        return args.output.emit(globals, &[b]);
    }
    if let Some(h) = args.rmst {
        let b = rmst_table(&name, &dur, &ev, gi.map(|_| (&grp[..], &labels[..])), h)?;
        return args.output.emit(globals, &[b]);
    }
    let data = if ni.is_some() {
        SurvivalData::new(&dur, &ev).with_entry(&ent)
    } else {
        SurvivalData::new(&dur, &ev)
    };
    let fit = KmFit::fit_data(&data).with_context(|| format!("{name}: cannot fit"))?;
    let view = fit.view();
    let (lo, hi) = view.confidence_interval(Z_95);
    let b = output::batch(vec![
        (
            "timeline",
            Col::F64(view.timeline().iter().map(|&x| Some(x)).collect()),
        ),
        (
            "n_at_risk",
            Col::I64(view.n_at_risk().iter().map(|&x| Some(x as i64)).collect()),
        ),
        (
            "n_event",
            Col::I64(view.n_event().iter().map(|&x| Some(x as i64)).collect()),
        ),
        (
            "survival",
            Col::F64(view.survival_values().iter().map(|&x| Some(x)).collect()),
        ),
        ("ci_lower", Col::F64(lo.into_iter().map(Some).collect())),
        ("ci_upper", Col::F64(hi.into_iter().map(Some).collect())),
    ])?;
    args.output.emit(globals, &[b])?;
    globals.say(match view.median() {
        Some(m) => format!("median: {m}"),
        None => format!(
            "median: not reached (survival stays above 0.5 up to {})",
            view.timeline().last().copied().unwrap_or(0.0)
        ),
    });
    Ok(())
}

/// `km --test`: one row, the test of every group against the others.
fn group_test(
    name: &str,
    dur: &[f64],
    ev: &[bool],
    grp: &[usize],
    labels: &[String],
    test: GroupTest,
) -> anyhow::Result<arrow::record_batch::RecordBatch> {
    if labels.len() < 2 {
        bail!(
            "{name}: a group test needs at least two groups (found {})",
            labels.len()
        );
    }
    let r = logrank(dur, ev, grp, labels.len(), test.weighting())
        .with_context(|| format!("{name}: cannot test"))?;
    let per_group = |v: &[f64]| {
        labels
            .iter()
            .zip(v)
            .map(|(l, x)| format!("{l} {x:.6}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    Ok(output::batch(vec![
        ("test", Col::Str(vec![Some(test.name().to_string())])),
        ("groups", Col::I64(vec![Some(labels.len() as i64)])),
        ("statistic", Col::F64(vec![Some(r.statistic)])),
        (
            "degrees_of_freedom",
            Col::I64(vec![Some(r.degrees_of_freedom as i64)]),
        ),
        ("p_value", Col::F64(vec![Some(r.p_value)])),
        ("observed", Col::Str(vec![Some(per_group(&r.observed))])),
        ("expected", Col::Str(vec![Some(per_group(&r.expected))])),
    ])?)
}

/// `km --rmst H`: a row per group (or one overall), and for two groups their difference.
fn rmst_table(
    name: &str,
    dur: &[f64],
    ev: &[bool],
    groups: Option<(&[usize], &[String])>,
    h: f64,
) -> anyhow::Result<arrow::record_batch::RecordBatch> {
    let parts: Vec<(String, Vec<f64>, Vec<bool>)> = match groups {
        None => vec![("all".to_string(), dur.to_vec(), ev.to_vec())],
        Some((grp, labels)) => labels
            .iter()
            .enumerate()
            .map(|(g, l)| {
                let rows = grp.iter().enumerate().filter(|(_, &x)| x == g);
                let (d, e) = rows.map(|(i, _)| (dur[i], ev[i])).unzip();
                (l.clone(), d, e)
            })
            .collect(),
    };
    let mut fits = Vec::new();
    for (label, d, e) in &parts {
        let r = rmst(d, e, &[h]).with_context(|| format!("{name}: group {label}"))?;
        fits.push((label.clone(), r[0]));
    }
    // (label, rmst, Greenwood variance, variance of min(T, H))
    type Row = (String, f64, f64, f64);
    let mut rows: Vec<Row> = fits
        .iter()
        .map(|(l, r)| (l.clone(), r.rmst, r.variance_greenwood, r.variance))
        .collect();
    if let [(a, ra), (b, rb)] = &fits[..] {
        rows.push((
            format!("{a} - {b}"),
            ra.rmst - rb.rmst,
            ra.variance_greenwood + rb.variance_greenwood,
            f64::NAN,
        ));
    }
    let col = |f: &dyn Fn(&Row) -> f64| {
        Col::F64(
            rows.iter()
                .map(|r| Some(f(r)).filter(|x| !x.is_nan()))
                .collect(),
        )
    };
    Ok(output::batch(vec![
        (
            "group",
            Col::Str(rows.iter().map(|r| Some(r.0.clone())).collect()),
        ),
        ("horizon", Col::F64(vec![Some(h); rows.len()])),
        ("rmst", col(&|r| r.1)),
        ("se", col(&|r| r.2.sqrt())),
        ("ci_lower", col(&|r| r.1 - Z_95 * r.2.sqrt())),
        ("ci_upper", col(&|r| r.1 + Z_95 * r.2.sqrt())),
        ("variance_min_t_h", col(&|r| r.3)),
    ])?)
}

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
    after_help = "Columns:\n  verdict   hazard shape: decreasing, increasing, constant, bathtub or capped, chosen by AIC\n            over seven maximum-likelihood models; \"too few events (n)\" below --min-events\n  model     the model that decided; aic_gap: its AIC lead over the next model\n  ibs_model the model with the best held-out integrated Brier score (fitted on alternate\n            sessions, scored on the others): a second opinion on the fit\n  evidence  that model's parameters with 95 % intervals, and the rule that fired\n  median    Kaplan-Meier median, or \"> t (not reached)\" when S stays above 0.5\n  m         beta-process prior strength: how many of a node's own sessions the pooled curve\n            is worth (small: nodes follow their own data; large: the pooled curve)\n  theta     gamma-frailty variance: how much node hazards differ (0: not at all)\n  notes     estimates at the edge of their search range, and what that means\n\nExamples:\n  hazardserve fit --source gce-preemptible\n  hazardserve fit --source gce-preemptible --by zone --format json\n  hazardserve fit --source gce-preemptible --hazard\n  hazardserve fit --source cbl-preemption-1node --validate --split 0.7"
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
    let fits = fit::fit_groups_with(&data, args.shrinkage.choice(), args.min_events)
        .with_context(|| format!("fitting source {}", args.source))?;
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
    args.output.emit(globals, &[b])
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
