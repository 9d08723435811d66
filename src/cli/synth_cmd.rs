//! `hazardserve synth`: write sample traces.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::args::Globals;
use crate::synth;

/// `synth` arguments.
#[derive(Debug, Args)]
pub struct SynthArgs {
    /// What to generate.
    #[command(subcommand)]
    pub what: SynthWhat,
}

/// What `synth` generates.
#[derive(Debug, Subcommand)]
pub enum SynthWhat {
    /// Availability traces in the tick-json, fta and gce-operations formats, or a control
    /// fleet whose generating laws are known (`--fleet`).
    #[command(
        after_help = "Examples:\n  # regenerate the bundled samples\n  hazardserve synth traces --out traces/samples\n  # the positive control fleet and its laws.csv (for [policy] truth)\n  hazardserve synth traces --fleet two-class --out two-class\n  hazardserve ingest --format fta --fta-censored-tail --source two-class \\\n      two-class/event_trace.tab\n  # the negative control fleet (every node exponential, the same mean)\n  hazardserve synth traces --fleet equal --out equal --source equal"
    )]
    Traces {
        /// Output directory (the request workload sample is written too, under workload/).
        /// With --fleet: event_trace.tab (FTA format) and laws.csv (the generating laws).
        #[arg(long, default_value = "traces/samples")]
        out: PathBuf,
        /// Random seed (the bundled samples use the default).
        #[arg(long, default_value_t = synth::DEFAULT_SEED)]
        seed: u64,
        /// Generate a control fleet instead of the samples: `two-class` (even nodes Weibull
        /// k 6, odd nodes k 0.5, both scale 1,200 s; down gaps exponential, mean 300 s) or
        /// `equal` (every node exponential, mean 1,200 s: the negative control).
        #[arg(long, value_enum)]
        fleet: Option<FleetArg>,
        /// Nodes of the fleet.
        #[arg(long, default_value_t = 12, requires = "fleet")]
        nodes: usize,
        /// Length of the fleet's trace, days.
        #[arg(long, default_value_t = 2.0, requires = "fleet")]
        days: f64,
        /// The source name the fleet will be ingested as (written into laws.csv, which
        /// `policy.truth` matches against `nodes.source`).
        #[arg(long, default_value = "two-class", requires = "fleet")]
        source: String,
    },
    /// An LLM request workload: Gamma arrivals with a CV, log-normal lengths.
    Workload(WorkloadArgs),
}

/// `synth workload` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve synth workload --out w.csv --rate 5 --duration 3600\n  hazardserve synth workload --out w.csv --cv 1\n  hazardserve ingest --format lengths-csv --source w w.csv\n  hazardserve synth workload --class long-output --out long-output.csv\n  hazardserve ingest --format lengths-csv --source long-output long-output.csv\n  # multi-turn conversations with prefix blocks (Qwen-Bailian JSON lines)\n  hazardserve synth workload --class conversation --out conv.jsonl\n  hazardserve ingest --format qwen-bailian --source synth-conv conv.jsonl\n  # longer, faster conversations behind a larger shared prompt (agent-like)\n  hazardserve synth workload --class conversation --turns 6 --think 20 \\\n      --system-prompt 2048 --out agent.jsonl\n\nLengths drawn above --max-prompt / --max-output are written at the cap; the number clipped\nis reported. With --class conversation, --rate counts conversations, --prompt-mu/-sigma\nset the first user message, --max-prompt is the context window (a conversation ends before\na longer prompt), and the other defaults and their sources are listed in the docs of\nhazardserve::synth::conversation."
)]
pub struct WorkloadArgs {
    /// Output file: lengths-csv (arrival_s,prompt_tokens,output_tokens), or with
    /// `--class conversation` Qwen-Bailian JSON lines.
    #[arg(long)]
    pub out: PathBuf,
    /// Mean arrival rate, requests/s (`--class conversation`: conversations/s).
    #[arg(long, default_value_t = 0.5)]
    pub rate: f64,
    /// Coefficient of variation of inter-arrival times (1 = Poisson; Gamma otherwise).
    #[arg(long, default_value_t = 1.09)]
    pub cv: f64,
    /// Length, seconds.
    #[arg(long, default_value_t = 3600.0)]
    pub duration: f64,
    /// Request class whose lengths are the defaults: `chat` (Azure conv 2023) or
    /// `long-output` (reasoning/agentic: outputs with median ~3,400 and mean ~4,700 tokens, after
    /// DeepSeek-R1's measured mean; capped at 32,768).
    #[arg(long, value_enum, default_value_t = RequestClass::Chat)]
    pub class: RequestClass,
    /// `--class conversation`: mean turns per conversation (geometric; default 2.0, as
    /// LMSYS-Chat-1M).
    #[arg(long)]
    pub turns: Option<f64>,
    /// `--class conversation`: median seconds between a turn's arrival and the next's
    /// (log-normal; default 131, as measured on the Mooncake conversation trace).
    #[arg(long)]
    pub think: Option<f64>,
    /// `--class conversation`: tokens of the system prompt every conversation shares
    /// (default 512, as the Mooncake conversation trace's shared first block).
    #[arg(long)]
    pub system_prompt: Option<u32>,
    /// Mean of ln(prompt tokens) (default: the class's).
    #[arg(long)]
    pub prompt_mu: Option<f64>,
    /// Standard deviation of ln(prompt tokens).
    #[arg(long)]
    pub prompt_sigma: Option<f64>,
    /// Mean of ln(output tokens).
    #[arg(long)]
    pub output_mu: Option<f64>,
    /// Standard deviation of ln(output tokens).
    #[arg(long)]
    pub output_sigma: Option<f64>,
    /// Largest prompt, tokens (default: the class's, 16,384).
    #[arg(long)]
    pub max_prompt: Option<u32>,
    /// Largest output, tokens (default: the class's: 1,000 for chat, as the Azure trace caps
    /// them; 32,768 for long-output).
    #[arg(long)]
    pub max_output: Option<u32>,
    /// Random seed.
    #[arg(long, default_value_t = synth::DEFAULT_SEED)]
    pub seed: u64,
}

/// The control fleets of `synth traces --fleet`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FleetArg {
    /// Half increasing-hazard (Weibull k 6), half decreasing-hazard (k 0.5) nodes.
    TwoClass,
    /// Every node exponential with the same mean (1,200 s): the negative control.
    Equal,
}

/// The request classes of `synth workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RequestClass {
    /// Azure LLM inference 2023, conv.
    Chat,
    /// Reasoning / agentic requests with long outputs.
    LongOutput,
    /// Multi-turn conversations with a shared system prompt and prefix blocks, written as
    /// Qwen-Bailian JSON lines.
    Conversation,
}

/// `synth workload --class conversation`.
fn conversation(globals: &Globals, a: &WorkloadArgs) -> anyhow::Result<()> {
    let d = synth::ConversationParams::default();
    let p = synth::ConversationParams {
        rate: a.rate,
        cv: a.cv,
        duration_s: a.duration,
        mean_turns: a.turns.unwrap_or(d.mean_turns),
        think_mu: a.think.map_or(d.think_mu, f64::ln),
        system_tokens: a.system_prompt.unwrap_or(d.system_tokens),
        first_mu: a.prompt_mu.unwrap_or(d.first_mu),
        first_sigma: a.prompt_sigma.unwrap_or(d.first_sigma),
        output_mu: a.output_mu.unwrap_or(d.output_mu),
        output_sigma: a.output_sigma.unwrap_or(d.output_sigma),
        max_output: a.max_output.unwrap_or(d.max_output),
        max_prompt: a.max_prompt.unwrap_or(d.max_prompt),
        ..d
    };
    if !(p.mean_turns.is_finite() && p.mean_turns >= 1.0) {
        anyhow::bail!("--turns must be at least 1, got {}", p.mean_turns);
    }
    if let Some(t) = a.think.filter(|t| !(t.is_finite() && *t > 0.0)) {
        anyhow::bail!("--think must be positive, got {t}");
    }
    if p.max_output == 0 || u64::from(p.max_prompt) <= u64::from(p.system_tokens) {
        anyhow::bail!(
            "--max-output must be at least 1 and --max-prompt above the system prompt ({} tokens)",
            p.system_tokens
        );
    }
    let (text, counts) = synth::conversations_jsonl(&p, a.seed);
    crate::store::write_atomic(&a.out, text.as_bytes())?;
    globals.say(format!(
        "wrote {} ({} requests in {} conversations)",
        a.out.display(),
        counts.requests,
        counts.conversations
    ));
    if counts.context_full > 0 {
        globals.say(format!(
            "note: {} conversations ended early because the next prompt would exceed --max-prompt ({} tokens)",
            counts.context_full, p.max_prompt
        ));
    }
    Ok(())
}

/// Runs `synth`.
pub fn run(globals: &Globals, args: SynthArgs) -> anyhow::Result<()> {
    match args.what {
        SynthWhat::Traces {
            out,
            seed,
            fleet,
            nodes,
            days,
            source,
        } => {
            let written = match fleet {
                None => synth::write_samples(&out, seed)?,
                Some(which @ (FleetArg::TwoClass | FleetArg::Equal)) => {
                    if nodes < 2 {
                        anyhow::bail!(
                            "--nodes must be at least 2 (one of each class), got {nodes}"
                        );
                    }
                    if !(days.is_finite() && days > 0.0) {
                        anyhow::bail!("--days must be positive, got {days}");
                    }
                    if source.trim().is_empty() || source.contains(',') {
                        anyhow::bail!("--source must be a non-empty name without commas");
                    }
                    let opts = synth::FleetOptions {
                        nodes,
                        days,
                        source,
                    };
                    let fleet = match which {
                        FleetArg::TwoClass => synth::Fleet::TwoClass,
                        FleetArg::Equal => synth::Fleet::Equal,
                    };
                    synth::traces::write_files(&out, fleet.files(&opts, seed))?
                }
            };
            for p in &written {
                globals.say(format!("wrote {}", p.display()));
            }
        }
        SynthWhat::Workload(a) => {
            for (v, name) in [
                (a.rate, "--rate"),
                (a.cv, "--cv"),
                (a.duration, "--duration"),
            ] {
                if !(v.is_finite() && v > 0.0) {
                    anyhow::bail!("{name} must be positive, got {v}");
                }
            }
            let base = match a.class {
                RequestClass::Chat => synth::WorkloadParams::default(),
                RequestClass::LongOutput => synth::LONG_OUTPUT,
                RequestClass::Conversation => return conversation(globals, &a),
            };
            if a.turns.is_some() || a.think.is_some() || a.system_prompt.is_some() {
                anyhow::bail!("--turns, --think and --system-prompt need --class conversation");
            }
            let p = synth::WorkloadParams {
                rate: a.rate,
                cv: a.cv,
                duration_s: a.duration,
                prompt_mu: a.prompt_mu.unwrap_or(base.prompt_mu),
                prompt_sigma: a.prompt_sigma.unwrap_or(base.prompt_sigma),
                output_mu: a.output_mu.unwrap_or(base.output_mu),
                output_sigma: a.output_sigma.unwrap_or(base.output_sigma),
                max_prompt: a.max_prompt.unwrap_or(base.max_prompt),
                max_output: a.max_output.unwrap_or(base.max_output),
            };
            if p.max_prompt == 0 || p.max_output == 0 {
                anyhow::bail!("--max-prompt and --max-output must be at least 1");
            }
            let (csv, clipped) = synth::workload_csv_counted(&p, a.seed);
            crate::store::write_atomic(&a.out, csv.as_bytes())?;
            globals.say(format!(
                "wrote {} ({} requests)",
                a.out.display(),
                clipped.requests
            ));
            for (n, what, cap, flag) in [
                (clipped.prompts, "prompts", p.max_prompt, "--max-prompt"),
                (clipped.outputs, "outputs", p.max_output, "--max-output"),
            ] {
                if n > 0 {
                    globals.say(format!(
                        "note: {n} of {} {what} ({:.1} %) were drawn above {cap} tokens and written as {cap} (raise {flag} to keep them)",
                        clipped.requests,
                        100.0 * n as f64 / clipped.requests.max(1) as f64
                    ));
                }
            }
        }
    }
    Ok(())
}
