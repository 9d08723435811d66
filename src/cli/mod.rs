//! The command-line interface: flags are parsed here, validated into configs, and dispatched
//! to one module per command.

mod analysis_cmd;
mod args;
mod demo;
mod fit_cmd;
mod ingest;
mod ingest_public;
mod km_cmd;
mod list;
mod query_cmd;
mod reference;
mod replay_cmd;
mod report_cmd;
mod shell_cmd;
mod store_cmd;
mod sweep_cmd;
mod synth_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use args::{Globals, ListArgs, SessionsArgs, SourceListArgs, SqlArgs, Verbosity};

/// Hazard-aware LLM serving on unreliable nodes: ingest availability traces, fit survival,
/// replay scheduling policies.
#[derive(Debug, Parser)]
#[command(
    name = "hazardserve",
    version,
    about,
    after_help = "Examples:
  hazardserve demo
  hazardserve ingest-public ../shared/traces-public
  hazardserve sources
  hazardserve fit --source gce-preemptible
  hazardserve sessions --source cbl-preemption-4node --format csv > sessions.csv
  hazardserve tui

Exit status: 0 success, 1 failure, 2 usage error, 3 the store is being written by another
process (try again when it is done)."
)]
pub struct Cli {
    /// The store directory.
    #[arg(
        long,
        global = true,
        env = "HAZARDSERVE_STORE",
        default_value = "./hazardserve-store"
    )]
    pub store: PathBuf,
    /// Print only warnings and errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail (timings, per-item detail).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the main job on the bundled samples: ingest, fit, replay every policy, map regimes.
    Demo(demo::DemoArgs),
    /// Ingest an availability trace (files, directories or globs) as one source.
    Ingest(ingest::IngestArgs),
    /// Ingest every known public trace under a directory (one source per trace).
    IngestPublic(ingest_public::IngestPublicArgs),
    /// List the sources in the store.
    #[command(after_help = "Examples:
  hazardserve sources
  hazardserve sources --format json")]
    Sources(ListArgs),
    /// List the nodes of a source.
    #[command(after_help = "Examples:
  hazardserve nodes --source gce-preemptible
  hazardserve nodes --source stunner-80 --format csv > stunner-nodes.csv")]
    Nodes(SourceListArgs),
    /// List or export the up-sessions of a source.
    Sessions(SessionsArgs),
    /// List the rejected records of a source.
    #[command(after_help = "Examples:
  hazardserve rejects --source bamboo-events
  hazardserve rejects --source gce-preemptible --format json")]
    Rejects(SourceListArgs),
    /// Run SQL against the store's tables (sources, nodes, sessions, rejects, requests, runs,
    /// replay_requests, replay_summary, sweeps, sweep_cells).
    Sql(SqlArgs),
    /// Run a named analysis from queries/ (availability, churn, censoring, ...) with bound
    /// parameters; --list describes them.
    Query(query_cmd::QueryArgs),
    /// Kaplan-Meier estimate of any CSV (durations, events, optional entry ages).
    Km(km_cmd::KmArgs),
    /// Fit pooled and per-node survival of a source's up-sessions, with the hazard-shape verdict.
    Fit(fit_cmd::FitArgs),
    /// Hazard priors for serving systems.
    #[command(
        subcommand,
        after_help = "Example:
  hazardserve priors export --source gce-preemptible --out gce-priors.json"
    )]
    Priors(fit_cmd::PriorsCommand),
    /// Tabulate the pre-emptive migration trigger for a two-node hop over source uptimes.
    Trigger(analysis_cmd::TriggerArgs),
    /// Tabulate the context size above which KV transfer beats recompute, per link and prefill rate.
    Crossover(analysis_cmd::CrossoverArgs),
    /// List the hardware, model and link presets with their figures and sources.
    Presets(analysis_cmd::PresetsArgs),
    /// Replay a request workload over a source's nodes under every policy and compare them.
    Replay(replay_cmd::ReplayArgs),
    /// Print the policy comparison of a stored replay run (default: the latest).
    Compare(replay_cmd::CompareArgs),
    /// Run a grid of scenarios (the regime map), shard it on a cluster, merge and summarise it.
    Sweep(sweep_cmd::SweepArgs),
    /// Maintain the store.
    #[command(
        subcommand,
        after_help = "Examples:
  hazardserve store verify
  hazardserve store rebuild
  hazardserve store remove --source sample-gce"
    )]
    Store(store_cmd::StoreCommand),
    /// Generate sample traces from distributions measured on public traces.
    #[command(after_help = "Examples:
  hazardserve synth traces --out traces/samples
  hazardserve synth workload --class long-output --out long-output.csv")]
    Synth(synth_cmd::SynthArgs),
    /// Write a Markdown + HTML report with SVG plots (survival, policy comparison, regime map).
    Report(report_cmd::ReportArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(shell_cmd::CompletionsArgs),
    /// Print the manual page (or write one per command with --out-dir, or Markdown).
    Man(shell_cmd::ManArgs),
    /// Inspect the store in a terminal UI (sources, nodes, survival, replay, requests, trigger,
    /// sweeps).
    Tui(crate::tui::TuiArgs),
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    crate::diag::set_verbosity(if cli.quiet {
        Verbosity::Quiet
    } else if cli.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    });
    let globals = Globals {
        store: cli.store.clone(),
    };
    let started = std::time::Instant::now();
    let name = cli.command.name();
    let result = dispatch(&globals, cli.command);
    globals.detail(format!(
        "{name} took {:.2} s",
        started.elapsed().as_secs_f64()
    ));
    result
}

impl Command {
    /// The command's name on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Demo(_) => "demo",
            Command::Ingest(_) => "ingest",
            Command::IngestPublic(_) => "ingest-public",
            Command::Sources(_) => "sources",
            Command::Nodes(_) => "nodes",
            Command::Sessions(_) => "sessions",
            Command::Rejects(_) => "rejects",
            Command::Sql(_) => "sql",
            Command::Query(_) => "query",
            Command::Report(_) => "report",
            Command::Completions(_) => "completions",
            Command::Man(_) => "man",
            Command::Store(_) => "store",
            Command::Km(_) => "km",
            Command::Trigger(_) => "trigger",
            Command::Replay(_) => "replay",
            Command::Compare(_) => "compare",
            Command::Sweep(_) => "sweep",
            Command::Crossover(_) => "crossover",
            Command::Presets(_) => "presets",
            Command::Fit(_) => "fit",
            Command::Priors(_) => "priors",
            Command::Synth(_) => "synth",
            Command::Tui(_) => "tui",
        }
    }
}

/// Runs one command.
fn dispatch(globals: &Globals, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Demo(a) => demo::run(globals, a),
        Command::Ingest(a) => ingest::run(globals, a),
        Command::IngestPublic(a) => ingest_public::run(globals, a),
        Command::Sources(a) => list::sources(globals, a),
        Command::Nodes(a) => list::nodes(globals, a),
        Command::Sessions(a) => list::sessions(globals, a),
        Command::Rejects(a) => list::rejects(globals, a),
        Command::Sql(a) => list::sql(globals, a),
        Command::Query(a) => query_cmd::run(globals, a),
        Command::Report(a) => report_cmd::run(globals, a),
        Command::Completions(a) => shell_cmd::completions(a, Cli::command()),
        Command::Man(a) => shell_cmd::man(a, Cli::command()),
        Command::Store(c) => store_cmd::run(globals, c),
        Command::Km(a) => km_cmd::km(globals, a),
        Command::Trigger(a) => analysis_cmd::trigger(globals, a),
        Command::Replay(a) => replay_cmd::replay(globals, a),
        Command::Compare(a) => replay_cmd::compare(globals, a),
        Command::Sweep(a) => sweep_cmd::sweep(globals, a),
        Command::Crossover(a) => analysis_cmd::crossover(globals, a),
        Command::Presets(a) => analysis_cmd::presets_cmd(globals, a),
        Command::Fit(a) => fit_cmd::fit(globals, a),
        Command::Priors(c) => fit_cmd::priors(globals, c),
        Command::Synth(a) => synth_cmd::run(globals, a),
        Command::Tui(a) => crate::tui::run(&globals.store, a.run),
    }
}

/// The binary's entry point: parse, run, print any error and its causes (each once) as one
/// line, exit 1 on failure.
/// Exit status when another process is writing the store (0 success, 1 failure, 2 usage).
pub const EXIT_LOCKED: u8 = 3;

/// Runs the command line; exit status 0 on success, 1 on failure, 2 on a usage error (clap's)
/// and [`EXIT_LOCKED`] when another process holds the store's writer lock.
pub fn main() -> ExitCode {
    // Die quietly when the reader of our output goes away (`hazardserve sessions ... | head`),
    // like other command-line tools, instead of reporting a broken pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut msg = format!("error: {e}");
            for cause in e.chain().skip(1) {
                msg.push_str(&format!(": {cause}"));
            }
            eprintln!("{msg}");
            let locked = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<crate::store::StoreError>(),
                    Some(crate::store::StoreError::Locked(..))
                )
            });
            if locked {
                ExitCode::from(EXIT_LOCKED)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
