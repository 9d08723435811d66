//! Format adapters for public availability traces and LLM request traces.
//!
//! Every adapter is pure parsing: it reads the bytes of one or more input files and produces a
//! [`Trace`] in the canonical model (nodes, up-sessions, rejected records), which [`batch`] turns
//! into Arrow record batches. Nothing here touches the store or DuckDB.

pub mod adapters;
pub mod batch;
pub mod error;
pub mod input;
pub mod model;
pub mod sessionize;
pub mod workload;

pub use adapters::{parse, sniff, Format};
pub use error::{IngestError, Result};
pub use input::{expand_paths, InputFile};
pub use model::{Kind, NodeInfo, Options, Polarity, Reject, Rejects, Session, TimeBase, Trace};
