//! `hazardserve km`: the survival estimators on any CSV (not the store): Kaplan-Meier,
//! Nelson-Aalen, competing risks, interval censoring, group tests and restricted means.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

use hazardserve_ingest::survival_csv::{
    intern, read_survival_csv, SurvivalColumns, SurvivalCsvSpec,
};

use super::args::{Globals, OutputArgs};
use crate::output::{self, Col};
use crate::survival::competing::aalen_johansen;
use crate::survival::groups::{logrank, logrank_stratified, rmst, Weighting};
use crate::survival::interval::{turnbull, Bounds, TurnbullOptions};
use crate::survival::km::KmFit;
use crate::survival::nelson_aalen::nelson_aalen;
use crate::survival::{SurvivalData, Z_95};

/// `km` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve km --input sessions.csv --duration duration_s --event event\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --entry entry_s --format json\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --group node_id --test logrank\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --group node_id --test logrank --strata left_truncated\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --group node_id --rmst 3600\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --nelson-aalen\n  hazardserve km --input sessions.csv --duration duration_s --event event \\\n      --cause end_cause\n  hazardserve sql --format csv > ticks.csv \\\n      \"SELECT duration_s - resolution_s AS lower_s, CASE WHEN event \\\n      THEN duration_s + resolution_s END AS upper_s FROM sessions \\\n      WHERE source = 'cbl-preemption-4node'\"\n  hazardserve km --input ticks.csv --lower lower_s --upper upper_s --open-lower"
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
    /// With --test: a column of strata. The test compares the groups within each stratum
    /// (risk sets never mix strata) and sums observed, expected and covariance over them, as
    /// R's survdiff(... + strata(s)): a difference that only reflects how the groups spread
    /// over the strata is not counted.
    #[arg(long, value_name = "COL", requires = "test")]
    pub strata: Option<String>,
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

/// The columns `args` names, as the ingest crate's survival CSV reader takes them.
fn csv_spec(args: &KmArgs) -> SurvivalCsvSpec {
    SurvivalCsvSpec {
        duration: args.duration.clone(),
        event: args.event.clone(),
        entry: args.entry.clone(),
        group: args.group.clone(),
        strata: args.strata.clone(),
        cause: args.cause.clone(),
        lower: args.lower.clone(),
        upper: args.upper.clone(),
    }
}

/// `hazardserve km`.
pub fn km(globals: &Globals, args: KmArgs) -> anyhow::Result<()> {
    let name = args.input.display().to_string();
    if args.group.is_some() && args.test.is_none() && args.rmst.is_none() {
        bail!("--group needs --test or --rmst (the curve itself is pooled)");
    }
    let c = read_survival_csv(&args.input, &csv_spec(&args))?;
    if args.lower.is_some() {
        let b = interval_table(globals, &name, &c, args.open_lower)?;
        return args.output.emit(globals, &[b]);
    }
    if let Some(test) = args.test {
        let strata: Option<Vec<&str>> = args
            .strata
            .is_some()
            .then(|| c.strata.iter().map(String::as_str).collect());
        let b = group_test(
            &name,
            &c.dur,
            &c.ev,
            &c.grp,
            &c.labels,
            test,
            strata.as_deref(),
        )?;
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
        let (na_lo, na_hi) = na.interval();
        let f = |v: &[f64]| Col::F64(v.iter().map(|&x| Some(x)).collect());
        let i = |v: &[u32]| Col::I64(v.iter().map(|&x| Some(i64::from(x))).collect());
        let b = output::batch(vec![
            ("timeline", f(&na.timeline)),
            ("n_at_risk", i(&na.n_at_risk)),
            ("n_event", i(&na.n_event)),
            ("cumulative_hazard", f(&na.cumulative_hazard)),
            ("variance", f(&na.variance)),
            ("ci_lower", f(&na_lo)),
            ("ci_upper", f(&na_hi)),
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
    c: &SurvivalColumns,
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
        let (lo, hi) = fit
            .interval(k.cause)
            .context("a cause that occurred has an interval")?;
        let var = fit
            .variance(k.cause)
            .context("a cause that occurred has a variance")?;
        let na = fit
            .cause_hazard(k.cause, true)
            .context("a cause that occurred has a hazard")?;
        let (na_lo, na_hi) = na.interval();
        for i in 0..fit.timeline.len() {
            cause.push(Some(label.clone()));
            at_risk.push(Some(i64::from(fit.n_at_risk[i])));
            events.push(Some(i64::from(k.n_event[i])));
            for (col, x) in cols.iter_mut().zip([
                fit.timeline[i],
                k.cif[i],
                var[i],
                lo[i],
                hi[i],
                fit.overall_survival[i],
                na.cumulative_hazard[i],
                na_lo[i],
                na_hi[i],
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
    c: &SurvivalColumns,
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

/// `km --test`: one row, the test of every group against the others; with `strata` (a label
/// per row) within strata, and a `strata` column giving how many there were.
pub(super) fn group_test(
    name: &str,
    dur: &[f64],
    ev: &[bool],
    grp: &[usize],
    labels: &[String],
    test: GroupTest,
    strata: Option<&[&str]>,
) -> anyhow::Result<arrow::record_batch::RecordBatch> {
    if labels.len() < 2 {
        bail!(
            "{name}: a group test needs at least two groups (found {})",
            labels.len()
        );
    }
    let strata = strata.map(|rows| {
        let (mut index, mut names) = (std::collections::HashMap::new(), Vec::new());
        let idx: Vec<usize> = rows
            .iter()
            .map(|l| intern(l, &mut names, &mut index))
            .collect();
        (idx, names.len())
    });
    let r = match &strata {
        Some((s, _)) => logrank_stratified(dur, ev, grp, labels.len(), s, test.weighting()),
        None => logrank(dur, ev, grp, labels.len(), test.weighting()),
    }
    .with_context(|| format!("{name}: cannot test"))?;
    let per_group = |v: &[f64]| {
        labels
            .iter()
            .zip(v)
            .map(|(l, x)| format!("{l} {x:.6}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut cols = vec![
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
    ];
    if let Some((_, n)) = strata {
        cols.insert(2, ("strata", Col::I64(vec![Some(n as i64)])));
    }
    Ok(output::batch(cols)?)
}

/// `km --rmst H`: a row per group (or one overall), and for two groups their difference.
pub(super) fn rmst_table(
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
