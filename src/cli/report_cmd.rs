//! `hazardserve report`: the Markdown + HTML report with SVG plots.

use std::path::PathBuf;

use clap::Args;

use super::args::Globals;
use crate::report::{self, ReportOptions};
use crate::store::Store;
use crate::sweep::AxisFilter;

/// `report` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve report --out report/
  hazardserve report --out report/ --source gce-preemptible --source stunner-80
  hazardserve report --out report/ --run run-demo --sweep demo-map
  hazardserve report --out report/ --sweep demo-map \\
      --where hardware.preset=phone

Writes report.md (with the plots as SVG files beside it) and report.html (one self-contained
page, plots inline, no network).")]
pub struct ReportArgs {
    /// Directory to write into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Availability sources to plot (repeatable; default: every source with nodes).
    #[arg(long)]
    pub source: Vec<String>,
    /// The replay run to compare (default: the latest, when there is one).
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Add the regime map of this sweep.
    #[arg(long, value_name = "ID")]
    pub sweep: Option<String>,
    /// Only the sweep's cells whose axis KEY has VALUE (repeatable; axis keys as in
    /// `sweep summary`).
    #[arg(long = "where", value_name = "KEY=VALUE", requires = "sweep", value_parser = AxisFilter::parse_pair)]
    pub where_: Vec<(String, String)>,
}

/// Runs `report`.
pub fn run(globals: &Globals, args: ReportArgs) -> anyhow::Result<()> {
    let store = Store::open(&globals.store)?;
    let r = report::build(
        &store,
        &ReportOptions {
            sources: args.source,
            run: args.run,
            sweep: args.sweep,
            sweep_where: AxisFilter(args.where_),
        },
    )?;
    let files = r.write(&args.out)?;
    globals.say(format!(
        "wrote {} files into {} (open {})",
        files.len(),
        args.out.display(),
        args.out.join("report.html").display()
    ));
    Ok(())
}
