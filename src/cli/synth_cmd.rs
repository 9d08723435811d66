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
        /// Output directory.
        #[arg(long, default_value = "traces/samples")]
        out: PathBuf,
        /// Random seed (the bundled samples use the default).
        #[arg(long, default_value_t = synth::DEFAULT_SEED)]
        seed: u64,
    },
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
    }
    Ok(())
}
