//! `hazardserve ingest`: read trace files, parse them with an adapter, commit one source.

use std::io::IsTerminal;
use std::path::Path;

use anyhow::{bail, Context};
use clap::Args;
use hazardserve_ingest::workload::WorkloadOptions;
use hazardserve_ingest::{self as ingest, InputFile, InputFormat, Options, Polarity};

use super::args::Globals;
use crate::ingest_job::{commit_parsed, parse_inputs, source_record, Parsed};
use crate::store::{self, IngestOutcome, SourceRecord, Store, WriteLock};

/// `--format`: every value the ingest crate knows ([`InputFormat::all`]), each with its line of
/// help; the command line keeps no list of its own.
fn format_parser() -> impl clap::builder::TypedValueParser<Value = InputFormat> {
    use clap::builder::TypedValueParser;
    let values = InputFormat::all()
        .into_iter()
        .map(|f| clap::builder::PossibleValue::new(f.name()).help(f.about()));
    clap::builder::PossibleValuesParser::new(values).try_map(|name: String| {
        InputFormat::from_name(&name).ok_or_else(|| format!("unknown format {name:?}"))
    })
}

/// Polarity of binary series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolarityArg {
    /// 1 = available / running.
    Available,
    /// 1 = preempted / unavailable.
    Unavailable,
}

/// `ingest` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve ingest --format gce-operations --source gce \\
      ../shared/traces-public/gcp-preemptible-scispot/data
  hazardserve ingest --format tick-json --polarity available \\
      --source cbl-preempt \\
      ../shared/traces-public/cantbelate-spot-traces/preemption/1-node
  hazardserve ingest --format probe-csv --threshold 1 --source bamboo-probes \\
      '../shared/traces-public/bamboo/doc/data/*.csv'
  hazardserve ingest --format fta --source lanl --strict \\
      ../shared/traces-public/fta-lanl05

Bad records are kept out of the sessions and listed by `hazardserve rejects --source S`;
--strict stops at the first one instead. Re-ingesting identical content changes nothing.")]
pub struct IngestArgs {
    /// Files, directories (read recursively) or glob patterns; `.gz` is read transparently.
    #[arg(required = true)]
    pub paths: Vec<String>,
    /// The trace format.
    #[arg(long, default_value = "auto", value_parser = format_parser())]
    pub format: InputFormat,
    /// Source name (default: derived from the first path).
    #[arg(long)]
    pub source: Option<String>,
    /// Meaning of 1 in binary tick series (required where the format is ambiguous).
    #[arg(long, value_enum)]
    pub polarity: Option<PolarityArg>,
    /// k-of-N threshold for count series: up when count >= K.
    #[arg(long, value_name = "K")]
    pub threshold: Option<u32>,
    /// Override the tick width in seconds (for files whose header is wrong).
    #[arg(long, value_name = "SECONDS")]
    pub gap_seconds: Option<f64>,
    /// FTA: add a censored session after each node's last repair (an approximation).
    #[arg(long)]
    pub fta_censored_tail: bool,
    /// Stop at the first bad record with `file:line: reason`.
    #[arg(long)]
    pub strict: bool,
    /// Replace the source if it exists with different content.
    #[arg(long)]
    pub replace: bool,
    /// Largest size one compressed input (gzip file, tar archive or gzip member) may
    /// decompress to, in bytes or with a K, M or G suffix (1024-based); past it the file is
    /// refused with a clear error, so a gzip bomb cannot exhaust memory.
    #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = parse_size)]
    pub max_decompressed: u64,
    /// lengths-csv: the arrival-time column.
    #[arg(long, value_name = "NAME", help_heading = "Request workloads")]
    pub arrival_col: Option<String>,
    /// lengths-csv: unit of the arrival column (s, ms, us, ns; default from the name's suffix).
    #[arg(long, value_name = "UNIT", help_heading = "Request workloads")]
    pub arrival_unit: Option<String>,
    /// lengths-csv: the prompt-token column.
    #[arg(long, value_name = "NAME", help_heading = "Request workloads")]
    pub prompt_col: Option<String>,
    /// lengths-csv: the output-token column.
    #[arg(long, value_name = "NAME", help_heading = "Request workloads")]
    pub output_col: Option<String>,
    /// lengths-csv without arrival times: Poisson arrivals at this rate (requests/s).
    #[arg(long, value_name = "REQ_PER_S", help_heading = "Request workloads")]
    pub rate: Option<f64>,
    /// Seed of synthetic arrivals.
    #[arg(long, default_value_t = 1, help_heading = "Request workloads")]
    pub seed: u64,
}

impl IngestArgs {
    fn workload_options(&self) -> WorkloadOptions {
        WorkloadOptions {
            arrival_col: self.arrival_col.clone(),
            arrival_unit: self.arrival_unit.clone(),
            prompt_col: self.prompt_col.clone(),
            output_col: self.output_col.clone(),
            rate: self.rate,
            seed: self.seed,
            strict: self.strict,
        }
    }

    fn options(&self) -> anyhow::Result<Options> {
        if let Some(g) = self.gap_seconds {
            if !(g.is_finite() && g > 0.0) {
                bail!("--gap-seconds must be a positive number of seconds, got {g}");
            }
        }
        if self.threshold == Some(0) {
            bail!("--threshold must be at least 1");
        }
        Ok(Options {
            polarity: self.polarity.map(|p| match p {
                PolarityArg::Available => Polarity::Available,
                PolarityArg::Unavailable => Polarity::Unavailable,
            }),
            threshold: self.threshold,
            gap_seconds: self.gap_seconds,
            strict: self.strict,
            fta_censored_tail: self.fta_censored_tail,
        })
    }
}

/// Derives a source name from a path argument: its last component, sanitised.
fn derive_source_name(path: &str) -> String {
    let base = Path::new(path.trim_end_matches('/'))
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "source".into());
    let base = base.strip_suffix(".gz").unwrap_or(&base);
    let base = match base.rfind('.') {
        Some(i) if i > 0 => &base[..i],
        _ => base,
    };
    let s: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(100)
        .collect();
    let mut s = s.trim_start_matches('.').to_string();
    // ".tmp-" is reserved for the store's temporary files (see `validate_source_name`).
    while let Some(i) = s.to_ascii_lowercase().find(".tmp-") {
        s.replace_range(i..i + 1, "-");
    }
    if s.is_empty() {
        "source".into()
    } else {
        s
    }
}

/// Parses a size: bytes, or a number with a K, M or G suffix (powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(format!("{s:?}: the suffix must be K, M or G")),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 4G, 512M, 1000000)"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{s:?}: the size must be positive"));
    }
    Ok((n * mult as f64) as u64)
}

/// Reads every input with the default limits (see [`read_inputs_with`]).
pub fn read_inputs(globals: &Globals, paths: &[String]) -> anyhow::Result<Vec<InputFile>> {
    read_inputs_with(globals, paths, &ingest::ReadOptions::default())
}

/// Reads every input, with a progress bar on a terminal. A file that cannot be read (or
/// decompresses past `options`' cap) becomes a defective input that the adapters report as a
/// reject (lenient) or an error (strict); it never stops the others.
fn read_inputs_with(
    globals: &Globals,
    paths: &[String],
    options: &ingest::ReadOptions,
) -> anyhow::Result<Vec<InputFile>> {
    let found = ingest::expand_paths(paths)?;
    let bar = if std::io::stderr().is_terminal()
        && globals.verbosity() != super::args::Verbosity::Quiet
        && found.len() > 20
    {
        let b = indicatif::ProgressBar::new(found.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("reading {bar:40} {pos}/{len} files {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let mut files = Vec::with_capacity(found.len());
    for (path, rel) in &found {
        files.extend(InputFile::read_all_with(path, rel, options)?);
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(files)
}

/// Ingests parsed inputs as a source (`rec` from [`source_record`]); returns what happened.
pub fn ingest_parsed(
    globals: &Globals,
    rec: &SourceRecord,
    parsed: &Parsed,
    replace: bool,
) -> anyhow::Result<IngestOutcome> {
    store::validate_source_name(&rec.source)?;
    let st = Store::open_or_create(&globals.store)?;
    let lock = WriteLock::acquire(&st)?;
    Ok(commit_parsed(&st, &lock, rec, parsed, replace)?)
}

/// `hazardserve ingest`.
pub fn run(globals: &Globals, args: IngestArgs) -> anyhow::Result<()> {
    let options = args.options()?;
    let wopts = args.workload_options();
    // A bad --store or source name fails before any input is read.
    Store::check_writable(&globals.store)?;
    let source = match &args.source {
        Some(s) => s.clone(),
        None => derive_source_name(&args.paths[0]),
    };
    store::validate_source_name(&source)?;
    let started = std::time::Instant::now();
    let read_opts = ingest::ReadOptions {
        max_decompressed_bytes: args.max_decompressed,
    };
    let files = read_inputs_with(globals, &args.paths, &read_opts)?;
    let parsed = parse_inputs(args.format, &files, &options, &wopts)?;
    report_parse(globals, &parsed);
    let opts_json = match &parsed {
        Parsed::Trace(..) => serde_json::to_value(&options),
        Parsed::Workload(..) => serde_json::to_value(&wopts),
    }
    .context("encoding the ingest options")?;
    let rec = source_record(&source, &parsed, &opts_json, &files);
    let n_files = files.len();
    // The input bytes are not needed past parsing: free them before the tables are built.
    drop(files);
    let outcome = ingest_parsed(globals, &rec, &parsed, args.replace)
        .with_context(|| format!("ingesting source {source}"))?;
    let what = match outcome {
        IngestOutcome::Unchanged => "unchanged (identical content already ingested)",
        IngestOutcome::Committed { replaced: true } => "replaced",
        IngestOutcome::Committed { replaced: false } => "ingested",
    };
    globals.say(format!(
        "{source}: {what}: {} file(s) as {}, {:.2} s",
        n_files,
        parsed.summary(),
        started.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// Prints notes and a summary of rejects on stderr.
pub fn report_parse(globals: &Globals, parsed: &Parsed) {
    let (notes, rejects) = parsed.notes_and_rejects();
    // A note that every file of a directory raises is said once, with a count.
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for note in notes.iter() {
        match counted.iter_mut().find(|(n, _)| *n == note.as_str()) {
            Some((_, c)) => *c += 1,
            None => counted.push((note.as_str(), 1)),
        }
    }
    for (note, n) in counted {
        if n > 1 {
            globals.say(format!("note ({n} times): {note}"));
        } else {
            globals.say(format!("note: {note}"));
        }
    }
    if !rejects.is_empty() {
        globals.warn(format!(
            "warning: {} record(s) rejected (good records kept; see `hazardserve rejects`):",
            rejects.len()
        ));
        for r in rejects.iter().take(5) {
            globals.warn(format!("  {}:{}: {}", r.file, r.line, r.reason));
        }
        if rejects.len() > 5 {
            globals.warn(format!("  ... and {} more", rejects.len() - 5));
        }
    }
}
