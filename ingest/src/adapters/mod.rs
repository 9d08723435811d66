//! The format adapters and the `--format` switch.
//!
//! Each adapter module has `parse(files, options) -> Trace` and `sniff(file) -> bool`
//! (a cheap look at one file that says "this is mine").

pub mod add_remove;
pub mod fta;
pub mod gce_operations;
pub mod probe_csv;
pub mod skynomad_rounds;
pub mod stunner;
pub mod tick_json;

use crate::{input::duplicate_notes, IngestError, InputFile, Options, Result, Trace};

/// An availability-trace format (`hazardserve ingest --format NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"metadata":{"gap_seconds":G},"data":[...]}` tick series (binary or k-of-N counts).
    TickJson,
    /// Timestamped probe logs: `clock,timestamp,fail` or `date,availability`.
    ProbeCsv,
    /// One JSON per probe round with per-zone created counts (SkyNomad H100).
    SkynomadRounds,
    /// GCE operation logs of preemptible VMs (per-VM lifetimes).
    GceOperations,
    /// `t_ms,add|remove,node` event logs and SpotServe JSON-lines segments.
    AddRemove,
    /// Failure Trace Archive `event_trace.tab`.
    Fta,
    /// STUNner smartphone per-user-week alternating on/off durations.
    Stunner,
}

impl Format {
    /// Every format, in the order `auto` tries them.
    pub const ALL: [Format; 7] = [
        Format::SkynomadRounds,
        Format::GceOperations,
        Format::TickJson,
        Format::Fta,
        Format::Stunner,
        Format::ProbeCsv,
        Format::AddRemove,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Format::TickJson => "tick-json",
            Format::ProbeCsv => "probe-csv",
            Format::SkynomadRounds => "skynomad-rounds",
            Format::GceOperations => "gce-operations",
            Format::AddRemove => "add-remove",
            Format::Fta => "fta",
            Format::Stunner => "stunner",
        }
    }

    /// Looks a command-line name up.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    fn sniff_one(self, f: &InputFile) -> bool {
        match self {
            Format::TickJson => tick_json::sniff(f),
            Format::ProbeCsv => probe_csv::sniff(f),
            Format::SkynomadRounds => skynomad_rounds::sniff(f),
            Format::GceOperations => gce_operations::sniff(f),
            Format::AddRemove => add_remove::sniff(f),
            Format::Fta => fta::sniff(f),
            Format::Stunner => stunner::sniff(f),
        }
    }
}

/// Decides the format of a set of files (`--format auto`): the first format that claims the
/// first file must also claim every other file (side tables such as FTA's `node.tab` are
/// accepted by the FTA adapter).
pub fn sniff(files: &[InputFile]) -> Result<Format> {
    let first = files
        .first()
        .ok_or_else(|| IngestError::Empty("no input files".into()))?;
    let format = Format::ALL
        .into_iter()
        .find(|fmt| fmt.sniff_one(first))
        .ok_or_else(|| IngestError::UnknownFormat(first.display()))?;
    if let Some(other) = files.iter().find(|f| !format.sniff_one(f)) {
        return Err(IngestError::Option(format!(
            "{}: does not look like {} like {} does; ingest different formats as separate sources",
            other.display(),
            format.name(),
            first.display()
        )));
    }
    Ok(format)
}

/// Parses all `files` of one source with the adapter for `format`, then puts the result in
/// canonical order and notes duplicated inputs.
pub fn parse(format: Format, files: &[InputFile], options: &Options) -> Result<Trace> {
    if files.is_empty() {
        return Err(IngestError::Empty("no input files".into()));
    }
    let mut trace = match format {
        Format::TickJson => tick_json::parse(files, options),
        Format::ProbeCsv => probe_csv::parse(files, options),
        Format::SkynomadRounds => skynomad_rounds::parse(files, options),
        Format::GceOperations => gce_operations::parse(files, options),
        Format::AddRemove => add_remove::parse(files, options),
        Format::Fta => fta::parse(files, options),
        Format::Stunner => stunner::parse(files, options),
    }?;
    trace.notes.extend(duplicate_notes(files));
    trace.canonicalize();
    Ok(trace)
}
