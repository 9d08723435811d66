//! The format adapters and the `--format` switch.
//!
//! Each adapter module has `parse(files, options) -> Trace` and `sniff(file) -> bool`
//! (a cheap look at one file that says "this is mine"), and registers both as its
//! [`Format`] in [`ADAPTERS`].

pub mod add_remove;
mod format;
pub mod fta;
pub mod gce_operations;
pub mod probe_csv;
pub mod skynomad_rounds;
pub mod stunner;
pub mod tick_json;

pub use format::{Adapter, Format};

use crate::{input::duplicate_notes, IngestError, InputFile, Options, Rejects, Result, Trace};

/// Every availability-trace adapter, in the order `--format auto` tries them. Adding an
/// adapter: its file in this folder (with `pub const FORMAT`) and one line here.
pub static ADAPTERS: &[Format] = &[
    skynomad_rounds::FORMAT,
    gce_operations::FORMAT,
    tick_json::FORMAT,
    fta::FORMAT,
    stunner::FORMAT,
    probe_csv::FORMAT,
    add_remove::FORMAT,
];

/// Decides the format of a set of files (`--format auto`): the first file that some format
/// claims decides it, and every other file must be claimed by that format too, or by none (a
/// truncated or corrupt file that no sniffer recognises is left to the adapter, which rejects
/// it); a file claimed only by another format is an error (side tables such as FTA's `node.tab`
/// are accepted by the FTA adapter). Defective inputs ([`InputFile::defect`]) are not looked
/// at; when every input is defective the first one's defect is the error.
pub fn sniff(files: &[InputFile]) -> Result<Format> {
    let first = files
        .first()
        .ok_or_else(|| IngestError::Empty("no input files".into()))?;
    let readable: Vec<&InputFile> = files.iter().filter(|f| f.defect.is_none()).collect();
    if readable.is_empty() {
        return Err(defect_error(first));
    }
    let claim = |f: &InputFile| Format::all().find(|fmt| fmt.sniff_one(f));
    let Some((decider, format)) = readable.iter().find_map(|f| claim(f).map(|fmt| (*f, fmt)))
    else {
        return Err(IngestError::UnknownFormat(readable[0].display()));
    };
    for other in &readable {
        if format.sniff_one(other) {
            continue;
        }
        if let Some(theirs) = claim(other) {
            return Err(IngestError::Option(format!(
                "{}: looks like {}, not {} like {} does; ingest different formats as separate \
                 sources",
                other.display(),
                theirs.name(),
                format.name(),
                decider.display()
            )));
        }
    }
    Ok(format)
}

/// The error for a defective input: its defect as a whole-file `Bad` error (record 0).
pub(crate) fn defect_error(f: &InputFile) -> IngestError {
    IngestError::Bad {
        file: f.display(),
        line: 0,
        reason: f.defect.clone().unwrap_or_default(),
    }
}

/// Splits off the defective inputs: each becomes a whole-file reject (record 0) in `rejects`, or
/// the error under `strict`; when no input is left, the first defect is the error. Borrows
/// `files` when none is defective (the usual case: no copy of the contents).
pub(crate) fn readable_inputs<'a>(
    files: &'a [InputFile],
    rejects: &mut Rejects,
) -> Result<std::borrow::Cow<'a, [InputFile]>> {
    if files.iter().all(|f| f.defect.is_none()) {
        return Ok(std::borrow::Cow::Borrowed(files));
    }
    let mut good = Vec::with_capacity(files.len());
    for f in files {
        match &f.defect {
            Some(reason) => rejects.defect(&f.display(), 0, "", reason.clone())?,
            None => good.push(f.clone()),
        }
    }
    if good.is_empty() {
        return Err(defect_error(&files[0]));
    }
    Ok(std::borrow::Cow::Owned(good))
}

/// Refuses two inputs whose [`InputFile::stem_key`] is the same, for the formats whose node keys
/// are built from it: two nodes would silently become one.
pub(crate) fn check_unique_keys<'a>(files: impl IntoIterator<Item = &'a InputFile>) -> Result<()> {
    let mut seen: std::collections::HashMap<String, &InputFile> = Default::default();
    for f in files {
        if let Some(first) = seen.insert(f.stem_key(), f) {
            return Err(IngestError::DuplicateKey {
                key: f.stem_key(),
                first: first.display(),
                second: f.display(),
            });
        }
    }
    Ok(())
}

/// Parses all `files` of one source with the adapter for `format`, then puts the result in
/// canonical order and notes duplicated inputs.
///
/// Defective inputs (files that could not be read, see [`InputFile::defect`]) become
/// whole-file rejects (record 0) and the other files are parsed, or, under `strict`, the first
/// problem in file order is the error (a bad record of an earlier file, or the defect); when
/// every file is defective the first defect is the error. For the
/// formats whose node keys come from file names (tick-json, probe-csv, add-remove, stunner, fta
/// event tables), two inputs with the same [`InputFile::stem_key`] are refused
/// ([`IngestError::DuplicateKey`]).
pub fn parse(format: Format, files: &[InputFile], options: &Options) -> Result<Trace> {
    if files.is_empty() {
        return Err(IngestError::Empty("no input files".into()));
    }
    if let Some(e) = strict_defect(files, options.strict, |prefix| {
        dispatch(format, prefix, options).err()
    }) {
        return Err(e);
    }
    let mut defects = Rejects::new(options.strict);
    let good = readable_inputs(files, &mut defects)?;
    if format.0.keys_from_file_names {
        check_unique_keys(good.iter())?;
    }
    let mut trace = dispatch(format, &good, options)?;
    let mut rejects = defects.into_vec();
    rejects.append(&mut trace.rejects);
    trace.rejects = rejects;
    trace.notes.extend(duplicate_notes(files));
    trace.canonicalize();
    Ok(trace)
}

fn dispatch(format: Format, files: &[InputFile], options: &Options) -> Result<Trace> {
    (format.0.parse)(files, options)
}

/// Under `strict`, the error for the first problem in file order when some input is defective:
/// a bad record in the files before the first defective one (found by parsing just those with
/// `parse_prefix`), else that defect. `None` when not strict or nothing is defective.
pub(crate) fn strict_defect(
    files: &[InputFile],
    strict: bool,
    parse_prefix: impl FnOnce(&[InputFile]) -> Option<IngestError>,
) -> Option<IngestError> {
    if !strict {
        return None;
    }
    let k = files.iter().position(|f| f.defect.is_some())?;
    if k > 0 {
        if let Some(e @ IngestError::Bad { .. }) = parse_prefix(&files[..k]) {
            return Some(e);
        }
    }
    Some(defect_error(&files[k]))
}
