//! Survival data from any CSV (`hazardserve km --input`): the duration, event, entry, group,
//! stratum, cause and interval-bound columns a header names, read in parallel when the file
//! is plain. Errors name the file, the line and the value.

use std::path::Path;

use crate::csv_input::{csv_plain_parts, csv_visit, csv_visit_part, CsvRecordError};
use crate::{IngestError, Result};

/// An error while visiting records: the CSV reader's, or one of ours.
enum Error {
    Record(CsvRecordError),
    Ingest(IngestError),
}

impl From<CsvRecordError> for Error {
    fn from(e: CsvRecordError) -> Error {
        Error::Record(e)
    }
}

/// A bad value at `line` of `file`.
fn bad(file: &str, line: u64, reason: String) -> IngestError {
    IngestError::Bad {
        file: file.to_string(),
        line,
        reason,
    }
}

fn parse_flag(s: &str) -> Option<bool> {
    match s {
        "1" => return Some(true),
        "0" => return Some(false),
        _ => {}
    }
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "1.0" => Some(true),
        "0" | "false" | "f" | "no" | "0.0" => Some(false),
        _ => None,
    }
}

/// The columns read from a survival CSV (each empty unless its column was asked for).
#[derive(Debug, Default)]
pub struct SurvivalColumns {
    /// Durations (exit ages).
    pub dur: Vec<f64>,
    /// Event indicators (true without an event column).
    pub ev: Vec<bool>,
    /// Entry ages.
    pub ent: Vec<f64>,
    /// Group (or cause) labels in order of first appearance, and each row's index into them
    /// (for causes: 0 = censored, k = labels[k - 1]).
    pub labels: Vec<String>,
    /// Each row's group (or cause) index.
    pub grp: Vec<usize>,
    /// Each row's stratum label.
    pub strata: Vec<String>,
    /// Interval-censored lower bounds.
    pub lower: Vec<f64>,
    /// Interval-censored upper bounds (infinite: right-censored).
    pub upper: Vec<f64>,
}

/// The columns to read from a survival CSV, by header name (case-insensitive).
#[derive(Debug, Clone, Default)]
pub struct SurvivalCsvSpec {
    /// Durations (not read when `lower` is given).
    pub duration: String,
    /// Event indicators (0/1, true/false, yes/no); default: a column named `event` if any,
    /// else every row is an event (not read for interval bounds).
    pub event: Option<String>,
    /// Entry ages (left truncation).
    pub entry: Option<String>,
    /// Group labels.
    pub group: Option<String>,
    /// Stratum labels.
    pub strata: Option<String>,
    /// End causes (empty, `0` or `censored`: censored).
    pub cause: Option<String>,
    /// Interval-censored lower bounds (with `upper`).
    pub lower: Option<String>,
    /// Interval-censored upper bounds (empty or `inf`: right-censored).
    pub upper: Option<String>,
}

/// Where the asked-for columns are in the CSV.
struct KmIndices {
    duration: Option<usize>,
    event: Option<usize>,
    entry: Option<usize>,
    group: Option<usize>,
    strata: Option<usize>,
    cause: Option<usize>,
    bounds: Option<(usize, usize)>,
}

/// Finds the columns `args` names in the header `cols`.
fn km_indices(name: &str, args: &SurvivalCsvSpec, cols: &[&str]) -> Result<KmIndices> {
    let find = |what: &str, c: &str| {
        cols.iter()
            .position(|h| h.trim_matches('"').eq_ignore_ascii_case(c))
            .ok_or_else(|| {
                bad(
                    name,
                    1,
                    format!("no {what} column {c:?} (columns: {})", cols.join(", ")),
                )
            })
    };
    let interval = args.lower.is_some();
    let opt = |what: &str, c: &Option<String>| c.as_deref().map(|c| find(what, c)).transpose();
    let idx = KmIndices {
        duration: if interval {
            None
        } else {
            Some(find("duration", &args.duration)?)
        },
        event: match &args.event {
            Some(c) => Some(find("event", c)?),
            None if interval => None,
            None => cols.iter().position(|h| h.eq_ignore_ascii_case("event")),
        },
        entry: opt("entry", &args.entry)?,
        group: opt("group", &args.group)?,
        strata: opt("strata", &args.strata)?,
        cause: opt("cause", &args.cause)?,
        bounds: match (opt("lower", &args.lower)?, opt("upper", &args.upper)?) {
            (Some(l), Some(u)) => Some((l, u)),
            _ => None,
        },
    };
    Ok(idx)
}

/// Reads the survival CSV at `path` into the columns `spec` asks for (`hazardserve km
/// --input`); errors name the file, line and value. A plain file (no quotes) is cut at line
/// ends and read on every core, the pieces then joined in order (labels keep their order of
/// first appearance in the file).
pub fn read_survival_csv(path: &Path, spec: &SurvivalCsvSpec) -> Result<SurvivalColumns> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| IngestError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // A record error (not UTF-8) with the file's name; the visitors' own errors already have it.
    let named = |e: Error| match e {
        Error::Record(c) => bad(&name, c.line, c.reason),
        Error::Ingest(e) => e,
    };
    let plain = csv_plain_parts(&bytes, cores).map_err(|c| named(c.into()))?;
    let out = match plain {
        Some(plain) => {
            let ix = km_indices(&name, spec, &plain.header)?;
            let pieces: Vec<std::result::Result<SurvivalColumns, Error>> =
                std::thread::scope(|sc| {
                    let handles: Vec<_> = plain
                        .parts
                        .iter()
                        .map(|&(first, body)| {
                            let (name, ix) = (&name, &ix);
                            sc.spawn(move || {
                                let mut out = SurvivalColumns::default();
                                let mut index = Default::default();
                                csv_visit_part::<Error>(first, body, |line, f| {
                                    km_record(name, ix, line, f, &mut out, &mut index)
                                        .map_err(Error::Ingest)
                                })?;
                                Ok(out)
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                        .collect()
                });
            let mut out = SurvivalColumns::default();
            let mut index = Default::default();
            for piece in pieces {
                let piece = piece.map_err(named)?;
                out.append(piece, ix.cause.is_some(), &mut index);
            }
            out
        }
        None => {
            let mut ix: Option<KmIndices> = None;
            let mut out = SurvivalColumns::default();
            let mut index = Default::default();
            // Quoted fields, CRLF and a byte-order mark are handled by the CSV reader.
            let visited = csv_visit::<Error>(&bytes, |line, f| match &ix {
                None => {
                    ix = Some(km_indices(&name, spec, f).map_err(Error::Ingest)?);
                    Ok(())
                }
                Some(ix) => {
                    km_record(&name, ix, line, f, &mut out, &mut index).map_err(Error::Ingest)
                }
            });
            visited.map_err(named)?;
            if ix.is_none() {
                return Err(IngestError::Option(format!("{name}: empty input")));
            }
            out
        }
    };
    if out.dur.is_empty() && out.lower.is_empty() {
        return Err(IngestError::Option(format!("{name}: no data rows")));
    }
    Ok(out)
}

impl SurvivalColumns {
    /// Appends the rows of `other` (read from a later piece of the same file), re-indexing its
    /// labels into this one's (`cause`: index 0 is censoring, label k is index k + 1).
    fn append(
        &mut self,
        other: SurvivalColumns,
        cause: bool,
        index: &mut std::collections::HashMap<String, usize>,
    ) {
        let remap: Vec<usize> = other
            .labels
            .iter()
            .map(|l| intern(l, &mut self.labels, index))
            .collect();
        self.dur.extend(other.dur);
        self.ev.extend(other.ev);
        self.ent.extend(other.ent);
        self.lower.extend(other.lower);
        self.upper.extend(other.upper);
        self.strata.extend(other.strata);
        self.grp
            .extend(other.grp.into_iter().map(|g| match (cause, g) {
                (true, 0) => 0,
                (true, g) => remap[g - 1] + 1,
                (false, g) => remap[g],
            }));
    }
}

/// One data record of the CSV into `out` (labels interned through `index`).
fn km_record(
    name: &str,
    ix: &KmIndices,
    lineno: u64,
    f: &[&str],
    out: &mut SurvivalColumns,
    index: &mut std::collections::HashMap<String, usize>,
) -> Result<()> {
    let number = |what: &str, v: &str| -> Result<f64> {
        v.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| bad(name, lineno, format!("{what} {v:?} is not a number")))
    };
    let get = |k: usize| f.get(k).copied().unwrap_or("");
    if let Some((l, u)) = ix.bounds {
        let lo = number("lower bound", get(l))?;
        let up = match get(u).to_ascii_lowercase().as_str() {
            "" | "inf" | "+inf" | "infinity" => f64::INFINITY,
            _ => number("upper bound", get(u))?,
        };
        if up < lo {
            return Err(bad(
                name,
                lineno,
                format!("upper bound {up} is below lower bound {lo}"),
            ));
        }
        out.lower.push(lo);
        out.upper.push(up);
        return Ok(());
    }
    if let Some(k) = ix.duration {
        out.dur.push(number("duration", get(k))?);
    }
    let e = match ix.event {
        Some(k) => parse_flag(get(k))
            .ok_or_else(|| bad(name, lineno, format!("event {:?} is not 0/1", get(k))))?,
        None => true,
    };
    out.ev.push(e);
    if let Some(k) = ix.entry {
        out.ent.push(number("entry", get(k))?);
    }
    if let Some(k) = ix.group {
        let l = get(k);
        if l.is_empty() {
            return Err(bad(name, lineno, "the group is empty".to_string()));
        }
        out.grp.push(intern(l, &mut out.labels, index));
    }
    if let Some(k) = ix.strata {
        out.strata.push(get(k).to_string());
    }
    if let Some(k) = ix.cause {
        let l = get(k);
        let censored = !e || l.is_empty() || l == "0" || l.eq_ignore_ascii_case("censored");
        out.grp.push(if censored {
            0
        } else {
            intern(l, &mut out.labels, index) + 1
        });
    }
    Ok(())
}

/// The index of `label` in `labels` (looked up through `index`), appended when new.
pub fn intern(
    label: &str,
    labels: &mut Vec<String>,
    index: &mut std::collections::HashMap<String, usize>,
) -> usize {
    if let Some(&g) = index.get(label) {
        return g;
    }
    labels.push(label.to_string());
    index.insert(label.to_string(), labels.len() - 1);
    labels.len() - 1
}
