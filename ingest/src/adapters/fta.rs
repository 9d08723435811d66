//! Adapter stub (to be written).

use crate::{InputFile, IngestError, Options, Result, Trace};

/// Parses the files of one source.
pub fn parse(_files: &[InputFile], _options: &Options) -> Result<Trace> {
    Err(IngestError::Option("fta: not implemented yet".into()))
}

/// Whether `file` looks like this format.
pub fn sniff(_file: &InputFile) -> bool {
    false
}
