//! Flags and settings shared by several commands: output, listings, and the globals.

use std::path::PathBuf;

use clap::Args;

use crate::output::OutputFormat;

/// Where and how a command writes its result table: `--format` and `--out`.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Output format: table, csv, json (an array of objects keyed by column name) or parquet.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Write the result to this file (atomically) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print every row of a table (a table of more than 40 rows shows its first and last 20
    /// and how many are between; csv, json and parquet always have every row).
    #[arg(long)]
    pub all: bool,
    /// Print every column of a table (a table fits the terminal, 100 columns when standard
    /// output is not one, and names the columns it leaves out; csv, json and parquet always
    /// have every column).
    #[arg(long)]
    pub wide: bool,
}

impl OutputArgs {
    /// A table on standard output.
    pub fn table() -> OutputArgs {
        OutputArgs {
            format: OutputFormat::Table,
            out: None,
            all: false,
            wide: false,
        }
    }

    /// Writes `batches` (one table) where and how the flags say.
    pub fn emit(
        &self,
        globals: &Globals,
        batches: &[arrow::record_batch::RecordBatch],
    ) -> anyhow::Result<()> {
        let rows = if self.all {
            crate::output::TableRows::All
        } else {
            crate::output::TableRows::Elided
        };
        let on_terminal = self.format == OutputFormat::Table && self.out.is_none();
        if on_terminal && !self.wide {
            let (shown, hidden) = crate::output::fit_width(batches, table_width())?;
            crate::output::emit_rows(&shown, self.format, None, rows)?;
            if !hidden.is_empty() {
                println!("{}", crate::output::hidden_note(&hidden));
            }
            return Ok(());
        }
        crate::output::emit_rows(batches, self.format, self.out.as_deref(), rows)?;
        self.say_written(globals, batches.iter().map(|b| b.num_rows()).sum());
        Ok(())
    }

    /// [`Self::emit`] with the columns that answer the question first: as a table, the
    /// columns named in `lead` (those present, in that order) come before the others, so the
    /// terminal's width keeps them; csv, json and parquet keep the batch's own order.
    pub fn emit_lead(
        &self,
        globals: &Globals,
        batch: arrow::record_batch::RecordBatch,
        lead: &[&str],
    ) -> anyhow::Result<()> {
        if self.format != OutputFormat::Table {
            return self.emit(globals, &[batch]);
        }
        let schema = batch.schema();
        let mut order: Vec<usize> = Vec::new();
        for i in lead.iter().filter_map(|name| schema.index_of(name).ok()) {
            if !order.contains(&i) {
                order.push(i);
            }
        }
        let rest: Vec<usize> = (0..schema.fields().len())
            .filter(|i| !order.contains(i))
            .collect();
        order.extend(rest);
        self.emit(globals, &[batch.project(&order)?])
    }

    /// Writes a JSON document of `rows` nested objects where the flags say (`--format json`
    /// of a result whose rows are not flat).
    pub fn emit_json(
        &self,
        globals: &Globals,
        value: &serde_json::Value,
        rows: usize,
    ) -> anyhow::Result<()> {
        crate::output::emit_json(value, self.out.as_deref())?;
        self.say_written(globals, rows);
        Ok(())
    }

    /// Says which file was written, when the result went to one.
    fn say_written(&self, globals: &Globals, rows: usize) {
        if let Some(path) = &self.out {
            globals.say(format!("wrote {} ({rows} rows)", path.display()));
        }
    }
}

/// The width a table on standard output keeps to: the terminal's, or 100 columns when
/// standard output is not a terminal (or its width is not known).
pub fn table_width() -> usize {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        if let Ok((cols, _)) = crossterm::terminal::size() {
            if cols >= 20 {
                return usize::from(cols);
            }
        }
    }
    100
}

/// `--format` and `--out` of listing commands.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Output (`--wide`: every column of the sources, as stored).
    #[command(flatten)]
    pub output: OutputArgs,
}

/// A listing of one source.
#[derive(Debug, Args)]
pub struct SourceListArgs {
    /// The source name (see `hazardserve sources`).
    #[arg(long)]
    pub source: String,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `sessions` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve sessions --source gce-preemptible --format json\n  hazardserve sessions --source gce-preemptible --format parquet \\\n      --out gce-sessions.parquet"
)]
pub struct SessionsArgs {
    /// The source name (see `hazardserve sources`).
    #[arg(long)]
    pub source: String,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `sql` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve sql \"SELECT source, count(*) FROM sessions GROUP BY ALL\"\n  hazardserve sql --query nodes --param source=gce-preemptible"
)]
pub struct SqlArgs {
    /// The SQL text (omit when using --query).
    pub sql: Option<String>,
    /// Run a named query from queries/ instead (`hazardserve query --list` lists them).
    #[arg(long, conflicts_with = "sql")]
    pub query: Option<String>,
    /// Parameters: KEY=VALUE, or values in the named query's declared order.
    #[arg(long = "param")]
    pub params: Vec<String>,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

pub use crate::diag::Verbosity;

/// Settings shared by every command.
#[derive(Debug, Clone)]
pub struct Globals {
    /// The store directory.
    pub store: PathBuf,
}

impl Globals {
    /// The process's verbosity ([`crate::diag::verbosity`], set once from `-q`/`-v`).
    pub fn verbosity(&self) -> Verbosity {
        crate::diag::verbosity()
    }

    /// Prints a progress or summary line on stderr unless quiet ([`crate::diag::say`]).
    pub fn say(&self, msg: impl AsRef<str>) {
        crate::diag::say(msg);
    }

    /// Prints a detail line on stderr when verbose ([`crate::diag::detail`]).
    pub fn detail(&self, msg: impl AsRef<str>) {
        crate::diag::detail(msg);
    }

    /// Prints a warning on stderr, even when quiet ([`crate::diag::warn`]).
    pub fn warn(&self, msg: impl AsRef<str>) {
        crate::diag::warn(msg);
    }
}
