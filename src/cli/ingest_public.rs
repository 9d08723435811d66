//! `hazardserve ingest-public DIR`: ingest every known public trace under DIR, one source each.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use hazardserve_ingest::InputFormat;

use super::args::Globals;
use super::ingest::{ingest_parsed, read_inputs, report_parse};
use crate::ingest_job::{parse_inputs, source_record, Parsed};
use crate::public::PUBLIC_SOURCES;
use crate::store::IngestOutcome;

/// `ingest-public` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  hazardserve ingest-public ../shared/traces-public\n  hazardserve ingest-public ../shared/traces-public \\\n      --only gce-preemptible,fta-lanl05"
)]
pub struct IngestPublicArgs {
    /// The directory holding the public traces (as laid out in its MANIFEST.md).
    #[arg(default_value = "../shared/traces-public")]
    pub dir: PathBuf,
    /// Ingest only these sources (repeatable or comma-separated; see `traces/SOURCES.md`).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
}

/// Runs `ingest-public`.
pub fn run(globals: &Globals, args: IngestPublicArgs) -> anyhow::Result<()> {
    if !args.dir.is_dir() {
        anyhow::bail!(
            "{}: not a directory (the public traces directory, see traces/SOURCES.md)",
            args.dir.display()
        );
    }
    for name in &args.only {
        if !PUBLIC_SOURCES.iter().any(|s| s.source == name) {
            let names: Vec<&str> = PUBLIC_SOURCES.iter().map(|s| s.source).collect();
            let near = crate::diag::similar_names(name, names.iter().copied());
            anyhow::bail!(
                "unknown public source {name:?}{}; known: {}",
                crate::diag::did_you_mean(&near),
                names.join(", ")
            );
        }
    }
    // A source is there when the fixed part of each of its paths (up to the first glob
    // character) exists under DIR.
    let present = |s: &crate::public::PublicSource| {
        s.paths.iter().all(|p| {
            // Up to the directory holding the first glob character.
            let fixed = match p.find(['*', '?', '[']) {
                Some(g) => p[..g].rfind('/').map_or("", |d| &p[..d]),
                None => p,
            };
            args.dir.join(fixed).exists()
        })
    };
    let wanted: Vec<&crate::public::PublicSource> = PUBLIC_SOURCES
        .iter()
        .filter(|s| args.only.is_empty() || args.only.iter().any(|o| o == s.source))
        .collect();
    let (here, missing): (
        Vec<&crate::public::PublicSource>,
        Vec<&crate::public::PublicSource>,
    ) = wanted.into_iter().partition(|s| present(s));
    if !missing.is_empty() && !args.only.is_empty() {
        anyhow::bail!(
            "{}: not found under {}: {}",
            missing
                .iter()
                .map(|s| s.source)
                .collect::<Vec<_>>()
                .join(", "),
            args.dir.display(),
            missing
                .iter()
                .flat_map(|s| s.paths.iter().copied())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if here.is_empty() {
        let mut tops: Vec<&str> = PUBLIC_SOURCES
            .iter()
            .filter_map(|s| s.paths.first()?.split('/').next())
            .collect();
        tops.dedup();
        anyhow::bail!(
            "{}: no public traces here (looked for {}; see traces/SOURCES.md)",
            args.dir.display(),
            tops.join(", ")
        );
    }
    for s in &missing {
        globals.warn(format!(
            "warning: {}: skipped, {} is not under {}",
            s.source,
            s.paths.join(", "),
            args.dir.display()
        ));
    }
    crate::store::Store::check_writable(&globals.store)?;
    let started = std::time::Instant::now();
    let mut sessions = 0usize;
    for s in here {
        let t = std::time::Instant::now();
        let paths: Vec<String> = s
            .paths
            .iter()
            .map(|p| args.dir.join(p).to_string_lossy().into_owned())
            .collect();
        let files = read_inputs(globals, &paths).with_context(|| format!("source {}", s.source))?;
        let options = s.options();
        let parsed = parse_inputs(
            InputFormat::Trace(s.format),
            &files,
            &options,
            &Default::default(),
        )
        .with_context(|| format!("source {}", s.source))?;
        report_parse(globals, &parsed);
        if let Parsed::Trace(_, tr) = &parsed {
            sessions += tr.sessions.len();
        }
        let opts = serde_json::to_value(&options).context("encoding the ingest options")?;
        let rec = source_record(s.source, &parsed, &opts, &files);
        drop(files);
        let outcome = ingest_parsed(globals, &rec, &parsed, true)?;
        let what = if outcome == IngestOutcome::Unchanged {
            "unchanged"
        } else {
            "ingested"
        };
        globals.say(format!(
            "{}: {what}: {} file(s), {} in {:.2} s",
            s.source,
            rec.files.len(),
            parsed.summary(),
            t.elapsed().as_secs_f64()
        ));
    }
    let secs = started.elapsed().as_secs_f64();
    globals.say(format!(
        "done: {sessions} sessions in {secs:.2} s ({:.0} sessions/s)",
        sessions as f64 / secs.max(1e-9)
    ));
    Ok(())
}
