//! Format adapters for public availability traces and LLM request traces.
//!
//! Every adapter is pure parsing: it reads the bytes of one or more input files and produces a
//! [`Trace`] in the canonical model (nodes, up-sessions, rejected records), which [`batch`] turns
//! into Arrow record batches. Nothing here touches the store or DuckDB.
//!
//! Bad input never stops an ingest of many files unless asked to (`strict`): a bad record, a file
//! that is not valid UTF-8 in places, a truncated or corrupt file, a decompression bomb or an
//! unreadable path each become rejects naming the file, the line (or record; 0 for a whole
//! file) and the problem, and the other records go on. Under `strict` the first such problem is
//! an error with the same file, line and reason.

#![warn(missing_docs)]

pub mod adapters;
pub mod batch;
pub mod csv_input;
pub mod error;
pub mod formats;
pub mod input;
pub mod model;
pub mod sessionize;
pub mod survival_csv;
pub mod workload;

pub use adapters::{parse, sniff, Format};
pub use csv::StringRecord;
pub use csv_input::{
    csv_plain_parts, csv_records, csv_visit, csv_visit_part, CsvRecordError, CsvRecords, PlainCsv,
};
pub use error::{IngestError, Result};
pub use formats::InputFormat;
pub use input::{expand_paths, read_inputs, InputFile, ReadOptions};
pub use model::{
    Kind, NodeInfo, Observation, Options, Polarity, Reject, Rejects, Session, TimeBase, Trace,
};
