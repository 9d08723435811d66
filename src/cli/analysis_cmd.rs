//! `hazardserve trigger` and `hazardserve crossover`: the migration trigger and the
//! transfer-vs-recompute crossover, tabulated.

use anyhow::{bail, Context};
use clap::Args;

use super::args::{Globals, OutputArgs};
use crate::output::{self, Col};
use crate::policy::analysis::{
    crossover_rows, default_prefill_rates, trigger_rows, TriggerSettings, DEFAULT_HYSTERESIS_S,
    DEFAULT_UPTIMES_S,
};
use crate::policy::calibration;
use crate::policy::presets::{self, LINKS};
use crate::policy::Params;
use crate::store::Store;
use crate::survival::curve::{ConditionalSurvival, Exponential, Weibull};

/// Parses `weibull:SHAPE,SCALE_S` or `exp:MEAN_S`.
fn parse_survival(spec: &str) -> anyhow::Result<Box<dyn ConditionalSurvival>> {
    let (kind, rest) = spec
        .split_once(':')
        .with_context(|| format!("--survival {spec:?}: use weibull:SHAPE,SCALE_S or exp:MEAN_S"))?;
    let nums: Vec<f64> = rest
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .with_context(|| format!("--survival {spec:?}: numbers expected"))?;
    match (kind, nums.as_slice()) {
        ("weibull", [k, scale]) => {
            Ok(Box::new(Weibull::new(*k, *scale).with_context(|| {
                format!("--survival {spec:?}: shape and scale must be positive")
            })?))
        }
        ("exp", [mean]) if *mean > 0.0 && mean.is_finite() => {
            Ok(Box::new(Exponential { mean: *mean }))
        }
        _ => bail!("--survival {spec:?}: use weibull:SHAPE,SCALE_S or exp:MEAN_S"),
    }
}

fn parse_list(s: &str, what: &str) -> anyhow::Result<Vec<f64>> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
        })
        .collect::<Option<Vec<_>>>()
        .with_context(|| {
            format!("{what} {s:?}: a comma-separated list of non-negative numbers expected")
        })
}

/// `trigger` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  # the design's WAN hop: 4.5k tokens, 250 tok/s; then with overlapped migration
  hazardserve trigger
  hazardserve trigger --overlap
  hazardserve trigger --survival weibull:4,3600 --link 10gbe --context 8000 \\
      --format json
  # a fitted node curve
  hazardserve trigger --source gce-preemptible --node 1003891699305298447")]
pub struct TriggerArgs {
    /// Session curve of both nodes: weibull:SHAPE,SCALE_S or exp:MEAN_S (default weibull:0.6,14400).
    #[arg(long, conflicts_with = "source")]
    pub survival: Option<String>,
    /// Take the curve from this stored source (fitted with shrinkage).
    #[arg(long)]
    pub source: Option<String>,
    /// Node of --source (default: the pooled curve).
    #[arg(long, requires = "source")]
    pub node: Option<String>,
    /// Context tokens already resident on the source (prompt + generated).
    #[arg(long, default_value_t = TriggerSettings::DEFAULT.context)]
    pub context: u64,
    /// Tokens still expected.
    #[arg(long, default_value_t = TriggerSettings::DEFAULT.remaining)]
    pub remaining: u64,
    /// Prefill rate of both nodes, tokens/s.
    #[arg(long, default_value_t = TriggerSettings::DEFAULT.prefill_tok_s)]
    pub prefill: f64,
    /// Decode rate of both nodes, tokens/s.
    #[arg(long, default_value_t = TriggerSettings::DEFAULT.decode_tok_s)]
    pub decode: f64,
    /// Link tier: wan, 1gbe, 10gbe, rdma, nvlink.
    #[arg(long, default_value = "wan", conflicts_with = "bandwidth")]
    pub link: String,
    /// Link bandwidth in bytes/s instead of a tier.
    #[arg(long)]
    pub bandwidth: Option<f64>,
    /// Model preset (KV bytes per token; the same default as `crossover` and scenarios).
    #[arg(long, default_value = "llama-3-8b", conflicts_with = "kv_bytes")]
    pub model: String,
    /// KV bytes per token instead of a model preset.
    #[arg(long)]
    pub kv_bytes: Option<f64>,
    /// Overlapped migration: the destination prefills while the source keeps decoding.
    #[arg(long)]
    pub overlap: bool,
    /// Destination uptime, seconds.
    #[arg(long, default_value_t = TriggerSettings::DEFAULT.dest_age_s)]
    pub dest_age: f64,
    /// Source uptimes to tabulate, seconds (comma-separated).
    #[arg(long)]
    pub uptimes: Option<String>,
    /// Hysteresis values h, seconds (comma-separated).
    #[arg(long)]
    pub h: Option<String>,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `hazardserve trigger`.
pub fn trigger(globals: &Globals, args: TriggerArgs) -> anyhow::Result<()> {
    for (v, name) in [(args.prefill, "--prefill"), (args.decode, "--decode")] {
        if !(v.is_finite() && v > 0.0) {
            bail!("{name} must be a positive rate, got {v}");
        }
    }
    let (src_curve, dst_curve): (Box<dyn ConditionalSurvival>, Box<dyn ConditionalSurvival>) =
        match (&args.survival, &args.source) {
            (Some(spec), _) => (parse_survival(spec)?, parse_survival(spec)?),
            (None, Some(source)) => {
                let store = Store::open(&globals.store)?;
                let priors = crate::fit::priors_as_of(&store, source, None, None, 512)?;
                match &args.node {
                    Some(n) => {
                        if priors.node(n).is_none() {
                            bail!("no node {n:?} in source {source} (see `hazardserve nodes --source {source}`)");
                        }
                        (
                            Box::new(priors.node_curve(n)),
                            Box::new(priors.node_curve(n)),
                        )
                    }
                    None => (
                        Box::new(priors.pooled_curve()),
                        Box::new(priors.pooled_curve()),
                    ),
                }
            }
            (None, None) => (
                Box::new(crate::policy::analysis::VOLUNTEER_WEIBULL),
                Box::new(crate::policy::analysis::VOLUNTEER_WEIBULL),
            ),
        };
    let bandwidth_bytes_s = match args.bandwidth {
        Some(b) if b.is_finite() && b > 0.0 => b,
        Some(b) => bail!("--bandwidth must be positive bytes/s, got {b}"),
        None => presets::find_link(&args.link)?.bandwidth_bytes_s,
    };
    let kv_bytes_per_token = match args.kv_bytes {
        Some(k) if k.is_finite() && k > 0.0 => k,
        Some(k) => bail!("--kv-bytes must be positive, got {k}"),
        None => presets::find_model(&args.model)?.kv_bytes_per_token,
    };
    let settings = TriggerSettings {
        context: args.context,
        remaining: args.remaining,
        prefill_tok_s: args.prefill,
        decode_tok_s: args.decode,
        bandwidth_bytes_s,
        kv_bytes_per_token,
        overlap: args.overlap,
        dest_age_s: args.dest_age,
    };
    let sc = settings.scenario(src_curve, dst_curve);
    let uptimes = match &args.uptimes {
        Some(s) => parse_list(s, "--uptimes")?,
        None => DEFAULT_UPTIMES_S.to_vec(),
    };
    let hs = match &args.h {
        Some(s) => parse_list(s, "--h")?,
        None => DEFAULT_HYSTERESIS_S.to_vec(),
    };
    let rows = trigger_rows(&sc, &uptimes, &hs);
    let b = output::batch(vec![
        (
            "uptime_s",
            Col::F64(rows.iter().map(|r| Some(r.uptime_s)).collect()),
        ),
        ("l_i", Col::F64(rows.iter().map(|r| Some(r.l_i)).collect())),
        (
            "c_transfer",
            Col::F64(rows.iter().map(|r| Some(r.c_transfer)).collect()),
        ),
        (
            "c_recompute",
            Col::F64(rows.iter().map(|r| Some(r.c_recompute)).collect()),
        ),
        (
            "c_planned",
            Col::F64(rows.iter().map(|r| Some(r.c_planned)).collect()),
        ),
        ("l_j", Col::F64(rows.iter().map(|r| Some(r.l_j)).collect())),
        (
            "risk_gain",
            Col::F64(rows.iter().map(|r| Some(r.risk_gain)).collect()),
        ),
        ("dt", Col::F64(rows.iter().map(|r| Some(r.dt)).collect())),
        (
            "fires_at_h_s",
            Col::F64List(
                rows.iter()
                    .map(|r| r.fires.iter().filter(|f| f.fires).map(|f| f.h_s).collect())
                    .collect(),
            ),
        ),
    ])?;
    globals.say(format!(
        "hysteresis h tried (s): {}; fires_at_h_s lists those at which the migration fires",
        hs.iter()
            .map(|h| output::human_float(*h))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    args.output.emit(globals, &[b])
}

/// `crossover` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve crossover --model llama-3-8b\n  hazardserve crossover --model llama-2-7b --prefill 250,2000,11048 \\\n      --format json"
)]
pub struct CrossoverArgs {
    /// Model preset (KV bytes per token; `hazardserve presets` lists them).
    #[arg(long, default_value = "llama-3-8b")]
    pub model: String,
    /// Destination prefill rates, tokens/s (comma-separated; default: the hardware presets).
    #[arg(long)]
    pub prefill: Option<String>,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `hazardserve crossover`.
pub fn crossover(globals: &Globals, args: CrossoverArgs) -> anyhow::Result<()> {
    let model = presets::find_model(&args.model)?;
    let rates = match &args.prefill {
        Some(s) => {
            let v = parse_list(s, "--prefill")?;
            if v.iter().any(|&p| p <= 0.0) {
                bail!("--prefill rates must be positive");
            }
            v
        }
        None => default_prefill_rates(),
    };
    let rows = crossover_rows(&model, &LINKS, &rates, &Params::default());
    let b = output::batch(vec![
        (
            "link",
            Col::Str(rows.iter().map(|r| Some(r.link.clone())).collect()),
        ),
        (
            "bandwidth_bytes_s",
            Col::F64(rows.iter().map(|r| Some(r.bandwidth_bytes_s)).collect()),
        ),
        (
            "prefill_tok_s",
            Col::F64(rows.iter().map(|r| Some(r.prefill_tok_s)).collect()),
        ),
        ("c_star", Col::F64(rows.iter().map(|r| r.c_star).collect())),
    ])?;
    if rows.iter().any(|r| r.c_star.is_none()) {
        globals.say("note: an empty (null) c_star means KV transfer never beats recompute there");
    }
    args.output.emit(globals, &[b])
}

/// `presets` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve presets
  hazardserve presets --format json
  hazardserve presets --fidelity --format csv

Hardware figures are single-request llama.cpp benchmarks (prefill, decode) with the decode
slowdown b per other concurrent request fitted to a batched benchmark of the device class;
models give KV bytes per token from their config.json; links give bandwidth. Scenario keys:
[hardware] preset, [model] preset, [hardware] link, [hardware] engine.

The iteration engine's step (fixed share a, context cost c per 1,000 tokens, token budget B)
keeps each tier's measured prefill and decode rates and reads its batch slowdown as a step;
--fidelity prints each measured row beside the model's figure and the error, and a published
batched table beside the step model fitted to it.")]
pub struct PresetsArgs {
    /// Print the iteration model's fidelity table instead: every published measurement the
    /// tiers are fitted to, the model's figure and the error, and the model's time to first
    /// token behind a concurrent long prompt (no published measurement).
    #[arg(long)]
    pub fidelity: bool,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `hazardserve presets`: every hardware, model and link preset with its figures and source.
pub fn presets_cmd(globals: &Globals, args: PresetsArgs) -> anyhow::Result<()> {
    if args.fidelity {
        return fidelity_cmd(globals, &args);
    }
    let mut kind = Vec::new();
    let mut name = Vec::new();
    let mut figures = Vec::new();
    let mut source = Vec::new();
    for h in presets::HARDWARE {
        kind.push(Some("hardware".to_string()));
        name.push(Some(h.name.to_string()));
        figures.push(Some(format!(
            "prefill {} tok/s, decode {} tok/s, batch slowdown {} ({}); iteration step: fixed share {:.3}, context {:.4} per 1k tokens, lone discount {:.3}, prefill attention {:.4} per 1k tokens, budget {}",
            h.prefill_tok_s,
            h.decode_tok_s,
            h.batch_slowdown,
            h.measured_with,
            h.step.fixed_share,
            h.step.context_per_ktok,
            h.step.lone_discount,
            h.step.prefill_attention_per_ktok,
            h.step.max_batched_tokens
        )));
        source.push(Some(format!(
            "{}; iteration step: the batch slowdown read as a step, prefill at 1/p per token once compute-bound (presets --fidelity)",
            h.source
        )));
    }
    for m in presets::MODELS {
        kind.push(Some("model".to_string()));
        name.push(Some(m.name.to_string()));
        figures.push(Some(format!(
            "{} layers, {} KV heads, head dim {}: {} KV bytes/token",
            m.layers, m.kv_heads, m.head_dim, m.kv_bytes_per_token
        )));
        source.push(Some(m.source.to_string()));
    }
    for (alias, l) in presets::LINK_ALIASES.iter().zip(LINKS) {
        kind.push(Some("link".to_string()));
        name.push(Some(alias.to_string()));
        figures.push(Some(format!(
            "{} bytes/s ({})",
            l.bandwidth_bytes_s, l.name
        )));
        source.push(Some(l.source.to_string()));
    }
    let b = output::batch(vec![
        ("kind", Col::Str(kind)),
        ("name", Col::Str(name)),
        ("figures", Col::Str(figures)),
        ("source", Col::Str(source)),
    ])?;
    args.output.emit(globals, &[b])
}

/// `presets --fidelity`: the iteration model against the measurements it is fitted to.
fn fidelity_cmd(globals: &Globals, args: &PresetsArgs) -> anyhow::Result<()> {
    let rows = calibration::fidelity();
    let b = output::batch(vec![
        (
            "tier",
            Col::Str(rows.iter().map(|r| Some(r.tier.clone())).collect()),
        ),
        (
            "figure",
            Col::Str(rows.iter().map(|r| Some(r.figure.clone())).collect()),
        ),
        (
            "measured",
            Col::F64(rows.iter().map(|r| r.measured).collect()),
        ),
        (
            "model",
            Col::F64(rows.iter().map(|r| Some(r.model)).collect()),
        ),
        (
            "error_pct",
            Col::F64(rows.iter().map(|r| r.error.map(|e| 100.0 * e)).collect()),
        ),
    ])?;
    globals.say(
        "rows without a measurement (a preset's prefill at 8,192 tokens, batch 8 and 32, TTFT behind a long prompt) are the model's alone",
    );
    for t in calibration::REFERENCE_TABLES {
        if let Some(f) = calibration::fit(t) {
            globals.say(format!(
                "{}: alpha {:.2} ms, beta {:.4} ms/token, gamma {:.3} ms/sequence, delta {:.3e} ms/context token, epsilon {:.2} ms, zeta {:.3e} ms/token^2 ({}; {})",
                t.name,
                1e3 * f.alpha,
                1e3 * f.beta,
                1e3 * f.gamma,
                1e3 * f.delta,
                1e3 * f.epsilon,
                1e3 * f.zeta,
                t.setup,
                t.source
            ));
        }
    }
    for t in calibration::KERNEL_PROFILES {
        if let Some(f) = calibration::fit_roofline(t) {
            globals.say(format!(
                "{}: floor {:.2} ms, {:.4} ms/token once compute-bound, knee at {:.0} tokens ({}; {})",
                t.name,
                1e3 * f.alpha,
                1e3 * f.beta,
                f.alpha / f.beta,
                t.setup,
                t.source
            ));
        }
    }
    args.output.emit(globals, &[b])
}
