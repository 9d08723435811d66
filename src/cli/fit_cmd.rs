//! `hazardserve km`, `hazardserve fit` and `hazardserve priors export`.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use super::Globals;
use crate::fit::{self, ByColumn};
use crate::output::{self, render, Col, OutputFormat};
use crate::store::Store;
use crate::survival::km::KmFit;
use crate::survival::priors::PriorsEstimator;
use crate::survival::shrinkage::EstimatorChoice;
use crate::survival::validate::{validate, Split, ValidateOptions};
use crate::survival::{SurvivalData, Z_95};

/// `km` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve km --input sessions.csv --duration duration_s --event event\n  hazardserve km --input trial.csv --duration T --event E --entry entry --format json"
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
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

fn parse_flag(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "1.0" => Some(true),
        "0" | "false" | "f" | "no" | "0.0" => Some(false),
        _ => None,
    }
}

/// `hazardserve km`.
pub fn km(_globals: &Globals, args: KmArgs) -> anyhow::Result<()> {
    let name = args.input.display().to_string();
    let text =
        std::fs::read_to_string(&args.input).with_context(|| format!("{name}: cannot read"))?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        bail!("{name}: empty input");
    };
    let cols: Vec<&str> = header
        .split(',')
        .map(|c| c.trim().trim_matches('"'))
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
    let (mut dur, mut ev, mut ent) = (Vec::new(), Vec::new(), Vec::new());
    for (i, line) in lines {
        let f: Vec<&str> = line
            .split(',')
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        let lineno = i + 1;
        let get = |k: usize| f.get(k).copied().unwrap_or("");
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
        dur.push(d);
        ev.push(e);
    }
    let data = if ni.is_some() {
        SurvivalData::new(&dur, &ev).with_entry(&ent)
    } else {
        SurvivalData::new(&dur, &ev)
    };
    let fit = KmFit::fit_data(&data).with_context(|| format!("{name}: cannot fit"))?;
    let view = fit.view();
    let (lo, hi) = view.confidence_interval(Z_95);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.format == OutputFormat::Json {
        let v = serde_json::json!({
            "timeline": view.timeline(),
            "n_at_risk": view.n_at_risk(),
            "n_event": view.n_event(),
            "survival": view.survival_values(),
            "ci_lower": lo,
            "ci_upper": hi,
            "median": view.median(),
        });
        serde_json::to_writer(&mut out, &v)?;
        println!();
        return Ok(());
    }
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
    render(&[b], args.format, &mut out)?;
    if args.format == OutputFormat::Table {
        match view.median() {
            Some(m) => println!("median: {m}"),
            None => println!("median: not reached"),
        }
    }
    Ok(())
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
    after_help = "Examples:\n  hazardserve fit --source gce-preemptible\n  hazardserve fit --source gce-preemptible --by zone --format json\n  hazardserve fit --source cbl-preemption-1node --validate --split 0.7"
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
    /// Print the pooled curve's steps too.
    #[arg(long)]
    pub curve: bool,
    /// Score the estimators out of time instead: fit before --split, test on sessions live then.
    #[arg(long, requires = "split")]
    pub validate: bool,
    /// Split: a fraction of the observation span in (0, 1), seconds on the source's clock, or an
    /// RFC 3339 timestamp.
    #[arg(long)]
    pub split: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

fn parse_split(s: &str) -> anyhow::Result<Split> {
    if let Ok(v) = s.trim().parse::<f64>() {
        if v > 0.0 && v < 1.0 {
            return Ok(Split::Fraction(v));
        }
    }
    Ok(Split::At(fit::parse_time(s).map_err(anyhow::Error::msg)?))
}

fn f(v: Option<f64>) -> Col {
    Col::F64(vec![v])
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
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.validate {
        let split = parse_split(args.split.as_deref().unwrap_or_default())?;
        let report = validate(&data.sessions, split, &ValidateOptions::default())
            .with_context(|| format!("validating source {}", args.source))?;
        if args.format == OutputFormat::Json {
            serde_json::to_writer_pretty(&mut out, &report)?;
            println!();
            return Ok(());
        }
        globals.say(format!(
            "split at {:.0} s: {} training rows, {} test sessions ({} ended after the split)",
            report.split_time_s, report.n_train, report.n_test, report.n_test_events
        ));
        let rows = &report.rows;
        let horizons: Vec<f64> = rows
            .first()
            .map(|r| r.calibration.iter().map(|c| c.horizon_s).collect())
            .unwrap_or_default();
        let mut cols = vec![
            (
                "estimator",
                Col::Str(
                    rows.iter()
                        .map(|r| {
                            Some(
                                serde_json::to_value(r.estimator)
                                    .ok()
                                    .and_then(|v| v.as_str().map(String::from))
                                    .unwrap_or_default(),
                            )
                        })
                        .collect(),
                ),
            ),
            (
                "n_test",
                Col::I64(rows.iter().map(|r| Some(r.n_test as i64)).collect()),
            ),
            ("ibs", Col::F64(rows.iter().map(|r| r.ibs).collect())),
            (
                "concordance",
                Col::F64(rows.iter().map(|r| r.concordance).collect()),
            ),
        ];
        let names: Vec<String> = horizons
            .iter()
            .map(|h| format!("cal_{:.0}s_pred/obs", h))
            .collect();
        for (k, name) in names.iter().enumerate() {
            cols.push((
                name.as_str(),
                Col::Str(
                    rows.iter()
                        .map(|r| {
                            r.calibration
                                .get(k)
                                .map(|c| format!("{:.3}/{:.3}", c.predicted, c.observed))
                        })
                        .collect(),
                ),
            ));
        }
        let b = output::batch(cols)?;
        render(&[b], args.format, &mut out)?;
        return Ok(());
    }
    let fits = fit::fit_groups(&data, args.shrinkage.choice())
        .with_context(|| format!("fitting source {}", args.source))?;
    if args.format == OutputFormat::Json {
        let v: Vec<serde_json::Value> = fits
            .iter()
            .map(|g| {
                let mut v = serde_json::to_value(g).unwrap_or_default();
                if args.curve {
                    v["curve"] = serde_json::json!({
                        "t": g.curve.iter().map(|p| p.0).collect::<Vec<_>>(),
                        "s": g.curve.iter().map(|p| p.1).collect::<Vec<_>>(),
                    });
                }
                v
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &v)?;
        println!();
        return Ok(());
    }
    let mut batches = Vec::new();
    for g in &fits {
        batches.push(output::batch(vec![
            ("group", Col::Str(vec![Some(g.group.clone())])),
            ("nodes", Col::I64(vec![Some(g.nodes as i64)])),
            ("sessions", Col::I64(vec![Some(g.sessions as i64)])),
            ("events", Col::I64(vec![Some(g.events as i64)])),
            ("median_h", f(g.median_s.map(|m| m / 3600.0))),
            ("s_1h", f(g.s_1h)),
            ("s_6h", f(g.s_6h)),
            ("s_24h", f(g.s_24h)),
            ("weibull_k", f(g.weibull_shape)),
            ("k_ci_lo", f(g.weibull_shape_lo)),
            ("k_ci_hi", f(g.weibull_shape_hi)),
            ("scale_h", f(g.weibull_scale_s.map(|s| s / 3600.0))),
            ("lr_p", f(g.lr_p_value)),
            ("hazard", Col::Str(vec![Some(g.verdict.clone())])),
            ("shrinkage", Col::Str(vec![Some(g.shrinkage.clone())])),
            ("m", f(g.m)),
            ("theta", f(g.theta)),
        ])?);
    }
    render(&batches, args.format, &mut out)?;
    if args.curve {
        for g in &fits {
            writeln_curve(&mut out, g, args.format)?;
        }
    }
    Ok(())
}

fn writeln_curve(
    out: &mut dyn std::io::Write,
    g: &fit::GroupFit,
    format: OutputFormat,
) -> anyhow::Result<()> {
    writeln!(out, "pooled curve of {}:", g.group)?;
    let b = output::batch(vec![
        ("t_s", Col::F64(g.curve.iter().map(|p| Some(p.0)).collect())),
        (
            "survival",
            Col::F64(g.curve.iter().map(|p| Some(p.1)).collect()),
        ),
    ])?;
    render(&[b], format, out)?;
    Ok(())
}

/// `priors` subcommands.
#[derive(Debug, Subcommand)]
pub enum PriorsCommand {
    /// Export per-node and pooled hazard priors for a serving system (schema: docs/priors.schema.json).
    #[command(
        after_help = "Examples:\n  hazardserve priors export --source gce-preemptible --out gce-priors.json\n  hazardserve priors export --source gce-preemptible --before 2019-03-20T00:00:00Z --out p.parquet --format parquet"
    )]
    Export(PriorsExportArgs),
}

/// Export formats of priors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PriorsFormat {
    /// The versioned JSON document.
    Json,
    /// Flat rows (scope, node_id, t, s) as Parquet.
    Parquet,
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
    /// File format.
    #[arg(long, value_enum, default_value_t = PriorsFormat::Json)]
    pub format: PriorsFormat,
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

/// Fits priors of a source as of `before` (default: the end of its observation).
pub fn priors_for(
    store: &Store,
    source: &str,
    before: Option<f64>,
    shrinkage: ShrinkageArg,
    max_points: usize,
) -> anyhow::Result<crate::survival::priors::Priors> {
    let data = fit::load_sessions(store, source, None, false)?;
    let estimator = match shrinkage {
        ShrinkageArg::Beta => Some(PriorsEstimator::Beta),
        ShrinkageArg::Frailty => Some(PriorsEstimator::Frailty),
        ShrinkageArg::None => Some(PriorsEstimator::None),
        ShrinkageArg::Auto => None,
    };
    fit::source_priors(&data, before, estimator, max_points)
        .with_context(|| format!("fitting priors of {source}"))?
        .with_context(|| format!("source {source} has no usable sessions"))
}

/// `hazardserve priors ...`.
pub fn priors(globals: &Globals, cmd: PriorsCommand) -> anyhow::Result<()> {
    let PriorsCommand::Export(args) = cmd;
    let store = Store::open(&globals.store)?;
    let before = args
        .before
        .as_deref()
        .map(fit::parse_time)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let priors = priors_for(
        &store,
        &args.source,
        before,
        args.shrinkage,
        args.max_points,
    )?;
    match args.format {
        PriorsFormat::Json => {
            let text = priors.to_json()?;
            crate::store::write_atomic(&args.out, text.as_bytes())?;
        }
        PriorsFormat::Parquet => {
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
            let tmp = args.out.with_extension("parquet.tmp");
            crate::store::write_parquet(&tmp, &b)?;
            std::fs::rename(&tmp, &args.out)?;
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
