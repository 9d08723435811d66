//! `hazardserve store ...`: rebuild the catalog, verify the files, remove a source.

use anyhow::bail;
use clap::Subcommand;

use super::args::Globals;
use crate::store::{self, Catalog, Store, WriteLock};

/// Store maintenance commands.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Recreate catalog.duckdb from the Parquet files (after moving the store, or if it is lost).
    #[command(
        after_help = "Example:\n  # a copied or moved store: rebuild its catalog for the new place\n  cp -r hazardserve-store store-copy && \\\n      hazardserve --store store-copy store rebuild"
    )]
    Rebuild,
    /// Re-check every file's sha256, row count and schema against its manifest.
    #[command(after_help = "Example:\n  hazardserve store verify")]
    Verify,
    /// Remove a source and its files.
    #[command(after_help = "Example:\n  hazardserve store remove --source gce")]
    Remove {
        /// The source to remove.
        #[arg(long)]
        source: String,
    },
}

/// Runs a store command.
pub fn run(globals: &Globals, cmd: StoreCommand) -> anyhow::Result<()> {
    let st = Store::open(&globals.store)?;
    match cmd {
        StoreCommand::Rebuild => {
            let _lock = WriteLock::acquire(&st)?;
            Catalog::rebuild_file(&st)?;
            let (readable, left_out) = st.readable()?;
            globals.say(format!(
                "rebuilt {} over {} source(s){}",
                st.catalog_path().display(),
                readable.len(),
                if left_out.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {} damaged source(s) left out (see `hazardserve store verify`)",
                        left_out.len()
                    )
                }
            ));
        }
        StoreCommand::Verify => {
            let report = store::verify(&st)?;
            for n in &report.notes {
                globals.say(format!("note: {n}"));
            }
            for p in &report.problems {
                globals.warn(format!("problem: {p}"));
            }
            if !report.problems.is_empty() {
                bail!(
                    "{} problem(s) found in {}",
                    report.problems.len(),
                    st.root().display()
                );
            }
            globals.say(format!(
                "ok: {} source(s), {} file(s), {} rows verified",
                report.sources, report.files, report.rows
            ));
        }
        StoreCommand::Remove { source } => {
            let lock = WriteLock::acquire(&st)?;
            store::remove_source(&st, &lock, &source)?;
            globals.say(format!("removed source {source}"));
        }
    }
    Ok(())
}
