//! `hazardserve synth`: write sample traces.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Globals;
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
    /// Availability traces in the tick-json, fta and gce-operations formats.
    #[command(
        after_help = "Example:\n  hazardserve synth traces --out traces/samples   # regenerates the bundled samples"
    )]
    Traces {
        /// Output directory (the request workload sample is written too, under workload/).
        #[arg(long, default_value = "traces/samples")]
        out: PathBuf,
        /// Random seed (the bundled samples use the default).
        #[arg(long, default_value_t = synth::DEFAULT_SEED)]
        seed: u64,
    },
    /// An LLM request workload: Gamma arrivals with a CV, log-normal lengths.
    Workload(WorkloadArgs),
}

/// `synth workload` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve synth workload --out w.csv --rate 5 --duration 3600\n  hazardserve synth workload --out w.csv --cv 1 && hazardserve ingest --source w w.csv"
)]
pub struct WorkloadArgs {
    /// Output CSV (lengths-csv: arrival_s,prompt_tokens,output_tokens).
    #[arg(long)]
    pub out: PathBuf,
    /// Mean arrival rate, requests/s.
    #[arg(long, default_value_t = 0.5)]
    pub rate: f64,
    /// Coefficient of variation of inter-arrival times (1 = Poisson; Gamma otherwise).
    #[arg(long, default_value_t = 1.09)]
    pub cv: f64,
    /// Length, seconds.
    #[arg(long, default_value_t = 3600.0)]
    pub duration: f64,
    /// Mean of ln(prompt tokens) (default: Azure conv 2023).
    #[arg(long, default_value_t = 6.633)]
    pub prompt_mu: f64,
    /// Standard deviation of ln(prompt tokens).
    #[arg(long, default_value_t = 0.985)]
    pub prompt_sigma: f64,
    /// Mean of ln(output tokens).
    #[arg(long, default_value_t = 5.019)]
    pub output_mu: f64,
    /// Standard deviation of ln(output tokens).
    #[arg(long, default_value_t = 0.859)]
    pub output_sigma: f64,
    /// Random seed.
    #[arg(long, default_value_t = synth::DEFAULT_SEED)]
    pub seed: u64,
}

/// Runs `synth`.
pub fn run(globals: &Globals, args: SynthArgs) -> anyhow::Result<()> {
    match args.what {
        SynthWhat::Traces { out, seed } => {
            let written = synth::write_samples(&out, seed)?;
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
            let p = synth::WorkloadParams {
                rate: a.rate,
                cv: a.cv,
                duration_s: a.duration,
                prompt_mu: a.prompt_mu,
                prompt_sigma: a.prompt_sigma,
                output_mu: a.output_mu,
                output_sigma: a.output_sigma,
                ..synth::WorkloadParams::default()
            };
            let csv = synth::workload_csv(&p, a.seed);
            crate::store::write_atomic(&a.out, csv.as_bytes())?;
            globals.say(format!(
                "wrote {} ({} requests)",
                a.out.display(),
                csv.lines().count() - 1
            ));
        }
    }
    Ok(())
}
