//! What an availability-trace adapter is to the rest of the crate: an [`Adapter`] (its name,
//! its parser and its sniffer), and [`Format`], a handle to one. The registry of every adapter
//! is [`super::ADAPTERS`].

use crate::{InputFile, Options, Result, Trace};

/// One availability-trace adapter. An adapter's file defines `pub const FORMAT: Format` over
/// its `Adapter`; one line in [`super::ADAPTERS`] registers it.
#[derive(Debug)]
pub struct Adapter {
    /// The command-line name (`hazardserve ingest --format NAME`).
    pub name: &'static str,
    /// One line for `--help`: what the files look like.
    pub about: &'static str,
    /// Parses the files of one source (see [`super::parse`] for what it adds).
    pub parse: fn(&[InputFile], &Options) -> Result<Trace>,
    /// A cheap look at one file that says "this is mine" (`--format auto`).
    pub sniff: fn(&InputFile) -> bool,
    /// Node keys come from file names: two inputs with the same stem are refused.
    pub keys_from_file_names: bool,
}

/// An availability-trace format: a handle to one registered [`Adapter`], compared by name.
#[derive(Clone, Copy)]
pub struct Format(pub &'static Adapter);

impl Format {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// What the files look like (one line).
    pub fn about(self) -> &'static str {
        self.0.about
    }

    /// Every registered format, in the order `auto` tries them.
    pub fn all() -> impl Iterator<Item = Format> {
        super::ADAPTERS.iter().copied()
    }

    /// Looks a command-line name up among the registered formats.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::all().find(|f| f.name() == name)
    }

    /// Whether the adapter claims `f`.
    pub(crate) fn sniff_one(self, f: &InputFile) -> bool {
        (self.0.sniff)(f)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Format {}

impl std::hash::Hash for Format {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Format({})", self.name())
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
