//! `hazardserve km`, `hazardserve fit` and `hazardserve priors export`.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use super::{Globals, OutputArgs};
use crate::fit::{self, ByColumn};
use crate::output::{self, Col, OutputFormat};
use crate::store::Store;
use crate::survival::competing::aalen_johansen;
use crate::survival::groups::{logrank, rmst, Weighting};
use crate::survival::interval::{turnbull, Bounds, TurnbullOptions};
use crate::survival::km::KmFit;
use crate::survival::nelson_aalen::nelson_aalen;
use crate::survival::priors::PriorsEstimator;
use crate::survival::shrinkage::EstimatorChoice;
use crate::survival::validate::{validate, Split, ValidateOptions};
use crate::survival::{SurvivalData, Z_95};

/// `km` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve km --input sessions.csv --duration duration_s --event event\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --entry entry_s --format json\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --group node_id --test logrank\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --group node_id --rmst 3600\n  hazardserve km --input sessions.csv --duration duration_s --event event --nelson-aalen\n  hazardserve km --input sessions.csv --duration duration_s --event event --cause end_cause\n  hazardserve sql \"SELECT duration_s - resolution_s AS lower_s, CASE WHEN event THEN duration_s + resolution_s END AS upper_s FROM sessions WHERE source = 'cbl-preemption-4node'\" --format csv > ticks.csv\n  hazardserve km --input ticks.csv --lower lower_s --upper upper_s --open-lower"
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
    /// Instead of the survival curve, the Nelson-Aalen cumulative hazard H(t) with its
    /// variance and 95 % interval (ties broken one at a time, as lifelines; entry times
    /// honoured).
    #[arg(long, conflicts_with_all = ["test", "rmst", "group"])]
    pub nelson_aalen: bool,
    /// Column of end causes (competing risks): the Aalen-Johansen cumulative incidence of
    /// each cause with its 95 % interval, the all-cause survival, and each cause's
    /// Nelson-Aalen cumulative hazard, one block of rows per cause. A row is censored when its
    /// cause is empty, `0` or `censored`, or when its --event flag is 0. Entry times honoured.
    #[arg(long, value_name = "COL", conflicts_with_all = ["test", "rmst", "group", "nelson_aalen"])]
    pub cause: Option<String>,
    /// Column of lower bounds of interval-censored ends (with --upper): the Turnbull /
    /// NPMLE estimate instead of Kaplan-Meier. A row says the end lies in [lower, upper];
    /// lower = upper is an exact end, an empty or `inf` upper is right censoring.
    #[arg(long, value_name = "COL", requires = "upper",
          conflicts_with_all = ["entry", "test", "rmst", "group", "nelson_aalen", "cause"])]
    pub lower: Option<String>,
    /// Column of upper bounds of interval-censored ends (with --lower).
    #[arg(long, value_name = "COL", requires = "lower")]
    pub upper: Option<String>,
    /// With --lower/--upper: read each proper interval as (lower, upper], as a probe trace
    /// means it (seen up at lower, first seen down at upper), so adjacent cells do not share
    /// an end point. Default: closed intervals, as lifelines.
    #[arg(long, requires = "lower")]
    pub open_lower: bool,
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
    /// The library's weighting.
    pub fn weighting(self) -> Weighting {
        match self {
            GroupTest::Logrank => Weighting::LogRank,
            GroupTest::Wilcoxon => Weighting::Wilcoxon,
            GroupTest::TaroneWare => Weighting::TaroneWare,
            GroupTest::Peto => Weighting::Peto,
        }
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            GroupTest::Logrank => "logrank",
            GroupTest::Wilcoxon => "wilcoxon",
            GroupTest::TaroneWare => "tarone-ware",
            GroupTest::Peto => "peto",
        }
    }
}

fn parse_flag(s: &str) -> Option<bool> {
    match s {
        "1" => return Some(true),
        "0" => return Some(false),
        _ => {}
    }
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "1.0" => Some(true),
        "0" | "false" | "f" | "no" | "0.0" => Some(false),
        _ => None,
    }
}

/// The columns `km` read from its CSV.
#[derive(Debug, Default)]
struct KmColumns {
    dur: Vec<f64>,
    ev: Vec<bool>,
    ent: Vec<f64>,
    /// Group (or cause) labels in order of first appearance, and each row's index into them
    /// (for causes: 0 = censored, k = labels[k - 1]).
    labels: Vec<String>,
    grp: Vec<usize>,
    lower: Vec<f64>,
    upper: Vec<f64>,
}

/// Where `km`'s columns are in its CSV.
struct KmIndices {
    duration: Option<usize>,
    event: Option<usize>,
    entry: Option<usize>,
    group: Option<usize>,
    cause: Option<usize>,
    bounds: Option<(usize, usize)>,
}

/// Finds the columns `args` names in the header `cols`.
fn km_indices(name: &str, args: &KmArgs, cols: &[&str]) -> anyhow::Result<KmIndices> {
    let find = |what: &str, c: &str| {
        cols.iter()
            .position(|h| h.trim_matches('"').eq_ignore_ascii_case(c))
            .with_context(|| {
                format!(
                    "{name}:1: no {what} column {c:?} (columns: {})",
                    cols.join(", ")
                )
            })
    };
    let interval = args.lower.is_some();
    let opt = |what: &str, c: &Option<String>| c.as_deref().map(|c| find(what, c)).transpose();
    let idx = KmIndices {
        duration: if interval {
            None
        } else {
            Some(find("duration", &args.duration)?)
        },
        event: match &args.event {
            Some(c) => Some(find("event", c)?),
            None if interval => None,
            None => cols.iter().position(|h| h.eq_ignore_ascii_case("event")),
        },
        entry: opt("entry", &args.entry)?,
        group: opt("group", &args.group)?,
        cause: opt("cause", &args.cause)?,
        bounds: match (opt("lower", &args.lower)?, opt("upper", &args.upper)?) {
            (Some(l), Some(u)) => Some((l, u)),
            _ => None,
        },
    };
    if idx.group.is_some() && args.test.is_none() && args.rmst.is_none() {
        bail!("--group needs --test or --rmst (the curve itself is pooled)");
    }
    Ok(idx)
}

/// Reads the CSV of `km` into the columns its flags ask for; errors name the file, line and
/// value.
fn read_km_csv(args: &KmArgs) -> anyhow::Result<KmColumns> {
    let name = args.input.display().to_string();
    let bytes = std::fs::read(&args.input).with_context(|| format!("{name}: cannot read"))?;
    let mut idx: Option<KmIndices> = None;
    let mut out = KmColumns::default();
    let mut label_index: std::collections::HashMap<String, usize> = Default::default();
    let number = |lineno: u64, what: &str, v: &str| -> anyhow::Result<f64> {
        v.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .with_context(|| format!("{name}:{lineno}: {what} {v:?} is not a number"))
    };
    // Quoted fields, CRLF and a byte-order mark are handled by the CSV reader.
    let visited = hazardserve_ingest::csv_visit::<anyhow::Error>(&bytes, |lineno, f| {
        let Some(ix) = &idx else {
            idx = Some(km_indices(&name, args, f)?);
            return Ok(());
        };
        let get = |k: usize| f.get(k).copied().unwrap_or("");
        if let Some((l, u)) = ix.bounds {
            let lo = number(lineno, "lower bound", get(l))?;
            let up = match get(u).to_ascii_lowercase().as_str() {
                "" | "inf" | "+inf" | "infinity" => f64::INFINITY,
                _ => number(lineno, "upper bound", get(u))?,
            };
            if up < lo {
                bail!("{name}:{lineno}: upper bound {up} is below lower bound {lo}");
            }
            out.lower.push(lo);
            out.upper.push(up);
            return Ok(());
        }
        if let Some(k) = ix.duration {
            out.dur.push(number(lineno, "duration", get(k))?);
        }
        let e = match ix.event {
            Some(k) => parse_flag(get(k))
                .with_context(|| format!("{name}:{lineno}: event {:?} is not 0/1", get(k)))?,
            None => true,
        };
        out.ev.push(e);
        if let Some(k) = ix.entry {
            out.ent.push(number(lineno, "entry", get(k))?);
        }
        if let Some(k) = ix.group {
            let l = get(k);
            if l.is_empty() {
                bail!("{name}:{lineno}: the group is empty");
            }
            out.grp.push(intern(l, &mut out.labels, &mut label_index));
        }
        if let Some(k) = ix.cause {
            let l = get(k);
            let censored = !e || l.is_empty() || l == "0" || l.eq_ignore_ascii_case("censored");
            out.grp.push(if censored {
                0
            } else {
                intern(l, &mut out.labels, &mut label_index) + 1
            });
        }
        Ok(())
    });
    visited.map_err(
        |e| match e.downcast_ref::<hazardserve_ingest::CsvRecordError>() {
            Some(c) => anyhow::anyhow!("{name}:{}: {}", c.line, c.reason),
            None => e,
        },
    )?;
    if idx.is_none() {
        bail!("{name}: empty input");
    }
    if out.dur.is_empty() && out.lower.is_empty() {
        bail!("{name}: no data rows");
    }
    Ok(out)
}

/// The index of `label` in `labels`, appended when new.
fn intern(
    label: &str,
    labels: &mut Vec<String>,
    index: &mut std::collections::HashMap<String, usize>,
) -> usize {
    if let Some(&g) = index.get(label) {
        return g;
    }
    labels.push(label.to_string());
    index.insert(label.to_string(), labels.len() - 1);
    labels.len() - 1
}

/// `hazardserve km`.
pub fn km(globals: &Globals, args: KmArgs) -> anyhow::Result<()> {
    let name = args.input.display().to_string();
    let c = read_km_csv(&args)?;
    if args.lower.is_some() {
        let b = interval_table(globals, &name, &c, args.open_lower)?;
        return args.output.emit(globals, &[b]);
    }
    if let Some(test) = args.test {
        let b = group_test(&name, &c.dur, &c.ev, &c.grp, &c.labels, test)?;
        return args.output.emit(globals, &[b]);
    }
    if let Some(h) = args.rmst {
        let groups = args.group.is_some().then_some((&c.grp[..], &c.labels[..]));
        let b = rmst_table(&name, &c.dur, &c.ev, groups, h)?;
        return args.output.emit(globals, &[b]);
    }
    let entry = args.entry.is_some().then_some(&c.ent[..]);
    if args.cause.is_some() {
        let b = competing_table(&name, &c, entry)?;
        return args.output.emit(globals, &[b]);
    }
    let mut data = SurvivalData::new(&c.dur, &c.ev);
    if let Some(e) = entry {
        data = data.with_entry(e);
    }
    if args.nelson_aalen {
        let na = nelson_aalen(&data, true).with_context(|| format!("{name}: cannot fit"))?;
        let f = |v: &[f64]| Col::F64(v.iter().map(|&x| Some(x)).collect());
        let i = |v: &[u32]| Col::I64(v.iter().map(|&x| Some(i64::from(x))).collect());
        let b = output::batch(vec![
            ("timeline", f(&na.timeline)),
            ("n_at_risk", i(&na.n_at_risk)),
            ("n_event", i(&na.n_event)),
            ("cumulative_hazard", f(&na.cumulative_hazard)),
            ("variance", f(&na.variance)),
            ("ci_lower", f(&na.ci_lower)),
            ("ci_upper", f(&na.ci_upper)),
        ])?;
        return args.output.emit(globals, &[b]);
    }
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

/// `km --cause`: one block of rows per cause (incidence, interval, cause-specific hazard).
fn competing_table(
    name: &str,
    c: &KmColumns,
    entry: Option<&[f64]>,
) -> anyhow::Result<arrow::record_batch::RecordBatch> {
    let causes: Vec<u32> = c.grp.iter().map(|&g| g as u32).collect();
    let fit =
        aalen_johansen(&c.dur, &causes, entry).with_context(|| format!("{name}: cannot fit"))?;
    if fit.causes.is_empty() {
        bail!("{name}: no row has an end cause (every row is censored)");
    }
    let num = |x: f64| Some(x).filter(|v| !v.is_nan());
    let mut cols: Vec<Vec<Option<f64>>> = vec![Vec::new(); 9];
    let (mut cause, mut at_risk, mut events) = (Vec::new(), Vec::new(), Vec::new());
    for k in &fit.causes {
        let label = c.labels[k.cause as usize - 1].clone();
        let (lo, hi) = k.interval();
        let na = fit
            .cause_hazard(k.cause, true)
            .context("a cause that occurred has a hazard")?;
        for i in 0..fit.timeline.len() {
            cause.push(Some(label.clone()));
            at_risk.push(Some(i64::from(fit.n_at_risk[i])));
            events.push(Some(i64::from(k.n_event[i])));
            for (col, x) in cols.iter_mut().zip([
                fit.timeline[i],
                k.cif[i],
                k.variance[i],
                lo[i],
                hi[i],
                fit.overall_survival[i],
                na.cumulative_hazard[i],
                na.ci_lower[i],
                na.ci_upper[i],
            ]) {
                col.push(num(x));
            }
        }
    }
    let mut it = cols.into_iter().map(Col::F64);
    let mut next = || it.next().unwrap_or(Col::F64(Vec::new()));
    Ok(output::batch(vec![
        ("cause", Col::Str(cause)),
        ("timeline", next()),
        ("n_at_risk", Col::I64(at_risk)),
        ("n_event", Col::I64(events)),
        ("cif", next()),
        ("variance", next()),
        ("ci_lower", next()),
        ("ci_upper", next()),
        ("survival_any", next()),
        ("cumulative_hazard", next()),
        ("ch_ci_lower", next()),
        ("ch_ci_upper", next()),
    ])?)
}

/// `km --lower --upper`: the NPMLE's two survival curves on the bounds' timeline.
fn interval_table(
    globals: &Globals,
    name: &str,
    c: &KmColumns,
    open_lower: bool,
) -> anyhow::Result<arrow::record_batch::RecordBatch> {
    let bounds = if open_lower {
        Bounds::OpenLower
    } else {
        Bounds::Closed
    };
    let fit = turnbull(&c.lower, &c.upper, bounds, &TurnbullOptions::default())
        .with_context(|| format!("{name}: cannot fit"))?;
    let (up, lo) = fit.curves();
    let median = |upper: bool| {
        fit.quantile(0.5, upper)
            .map_or("not reached".to_string(), |m| m.to_string())
    };
    globals.say(format!(
        "{} Turnbull intervals, log-likelihood {:.6}{}; median between {} (mass at left ends) and {} (at right ends)",
        fit.intervals.len(),
        fit.log_likelihood,
        if fit.converged {
            String::new()
        } else {
            format!(" (not converged: Kuhn-Tucker violation {:.2e})", fit.kkt_violation)
        },
        median(false),
        median(true),
    ));
    let f = |v: &[f64]| Col::F64(v.iter().map(|&x| Some(x)).collect());
    Ok(output::batch(vec![
        ("timeline", f(&fit.timeline)),
        ("survival_upper", f(&up)),
        ("survival_lower", f(&lo)),
    ])?)
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
    after_help = "Columns:\n  verdict   hazard shape: decreasing, increasing, constant, bathtub or capped, chosen by AIC\n            over seven maximum-likelihood models; \"too few events (n)\" below --min-events\n  model     the model that decided; aic_gap: its AIC lead over the next model\n  ibs_model the model with the best held-out integrated Brier score (fitted on alternate\n            sessions, scored on the others): a second opinion on the fit\n  evidence  that model's parameters with 95 % intervals, and the rule that fired\n  median    Kaplan-Meier median, or \"> t (not reached)\" when S stays above 0.5; for tick\n            sources the interval-censored NPMLE's (see times)\n  times     exact, or the probe interval whose NPMLE gave median and s_* (--exact-times:\n            Kaplan-Meier on the tick times)\n  m         beta-process prior strength: how many of a node's own sessions the pooled curve\n            is worth (small: nodes follow their own data; large: the pooled curve)\n  theta     gamma-frailty variance: how much node hazards differ (0: not at all)\n  notes     estimates at the edge of their search range, and what that means\n\nExamples:\n  hazardserve fit --source gce-preemptible\n  hazardserve fit --source gce-preemptible --by zone --format json\n  hazardserve fit --source gce-preemptible --hazard\n  hazardserve fit --source cbl-preemption-1node --validate --split 0.7\n  hazardserve fit --source gce-preemptible --by-cause\n  hazardserve fit --source fta-lanl05 --by-cause --cause-group 'failure:*=failure'\n  hazardserve fit --source cbl-availability-1node --exact-times\n  hazardserve fit --source gce-preemptible --by zone --test logrank\n  hazardserve fit --source gce-preemptible --by zone --rmst 7200\n  hazardserve fit --source spotserve --nelson-aalen"
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
            let (ci_lower, ci_upper) = k.interval();
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
    args.output.emit(globals, &[b])
}

/// `fit --test`, `fit --rmst` and `fit --nelson-aalen` on each --by group's sessions.
fn print_group_estimates(
    globals: &Globals,
    data: &fit::SourceSessions,
    args: &FitArgs,
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
            for i in 0..na.timeline.len() {
                if i > 0 && na.n_event[i] == 0 {
                    continue;
                }
                group.push(Some(g.clone()));
                t.push(Some(na.timeline[i]));
                h.push(Some(na.cumulative_hazard[i]));
                lo.push(Some(na.ci_lower[i]));
                hi.push(Some(na.ci_upper[i]));
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
        let b = group_test(&name, &dur, &ev, &grp, &groups, test)?;
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
        return print_group_estimates(globals, &data, &args);
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
                Some(m) => format!("{m:.0} s"),
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
