//! Messages on standard error at one process-wide verbosity, so that every command and the
//! library code under it obey `-q` and `-v` alike:
//!
//! * [`warn`]: warnings (records rejected, a damaged source left out, a catalog that could not
//!   be rebuilt). Printed even with `-q`: `-q` keeps warnings and errors.
//! * [`say`]: summaries, notes and progress. Not with `-q`.
//! * [`detail`]: timings and per-item detail. Only with `-v`.
//!
//! Results go to standard output and never depend on the verbosity.

use std::sync::atomic::{AtomicU8, Ordering};

/// How chatty the process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Warnings and errors only (`-q`).
    Quiet = 0,
    /// Summaries, notes and progress too (the default).
    Normal = 1,
    /// Timings and per-item detail too (`-v`).
    Verbose = 2,
}

static LEVEL: AtomicU8 = AtomicU8::new(Verbosity::Normal as u8);

/// Sets the process's verbosity (the binary does, once, from `-q`/`-v`).
pub fn set_verbosity(v: Verbosity) {
    LEVEL.store(v as u8, Ordering::Relaxed);
}

/// The process's verbosity.
pub fn verbosity() -> Verbosity {
    match LEVEL.load(Ordering::Relaxed) {
        0 => Verbosity::Quiet,
        1 => Verbosity::Normal,
        _ => Verbosity::Verbose,
    }
}

/// Prints a warning (always).
pub fn warn(msg: impl AsRef<str>) {
    eprintln!("{}", msg.as_ref());
}

/// Prints a summary, note or progress line unless quiet.
pub fn say(msg: impl AsRef<str>) {
    if verbosity() >= Verbosity::Normal {
        eprintln!("{}", msg.as_ref());
    }
}

/// Prints a detail line when verbose.
pub fn detail(msg: impl AsRef<str>) {
    if verbosity() >= Verbosity::Verbose {
        eprintln!("{}", msg.as_ref());
    }
}
