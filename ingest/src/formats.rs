//! Every value of `--format`: `auto`, an availability-trace adapter ([`Format`], registered in
//! [`crate::adapters::ADAPTERS`]) or a request-workload format ([`WorkloadFormat`]). The
//! command line lists and parses these; it keeps no copy of its own.

use crate::adapters::Format;
use crate::workload::WorkloadFormat;

/// What `--format` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// Sniff the format from the files (availability adapters first, then workloads).
    Auto,
    /// An availability-trace adapter.
    Trace(Format),
    /// A request-workload format.
    Workload(WorkloadFormat),
}

impl InputFormat {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Auto => "auto",
            InputFormat::Trace(f) => f.name(),
            InputFormat::Workload(w) => w.name(),
        }
    }

    /// What the files look like (one line, for `--help`).
    pub fn about(self) -> &'static str {
        match self {
            InputFormat::Auto => "Sniff the format from the files",
            InputFormat::Trace(f) => f.about(),
            InputFormat::Workload(w) => w.about(),
        }
    }

    /// Every value: `auto`, the availability adapters in sniffing order, the workload formats.
    pub fn all() -> Vec<InputFormat> {
        std::iter::once(InputFormat::Auto)
            .chain(Format::all().map(InputFormat::Trace))
            .chain(WorkloadFormat::ALL.into_iter().map(InputFormat::Workload))
            .collect()
    }

    /// Looks a command-line name up.
    pub fn from_name(name: &str) -> Option<InputFormat> {
        InputFormat::all().into_iter().find(|f| f.name() == name)
    }
}
