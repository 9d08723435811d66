//! Messages on standard error at one process-wide verbosity, so that every command and the
//! library code under it obey `-q` and `-v` alike:
//!
//! * [`warn`]: warnings (records rejected, a damaged source left out, a catalog that could not
//!   be rebuilt). Printed even with `-q`: `-q` keeps warnings and errors.
//! * [`say`]: summaries, notes and progress. Not with `-q`.
//! * [`detail`]: timings and per-item detail. Only with `-v`.
//!
//! Results go to standard output and never depend on the verbosity. Error messages share two
//! helpers: [`error_chain`] (an error and its causes on one line) and [`similar_names`] /
//! [`did_you_mean`] (suggestions for a mistyped name).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;

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

/// Whether a full-screen interface owns the terminal ([`hold`]).
static HOLDING: AtomicBool = AtomicBool::new(false);

/// The messages held meanwhile.
static HELD: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// While a full-screen interface owns the terminal (the TUI), messages are kept instead of
/// printed over it; [`release`] prints them once it has given the terminal back.
pub fn hold() {
    HOLDING.store(true, Ordering::SeqCst);
}

/// Prints the messages kept since [`hold`], in order, and prints the next ones again.
pub fn release() {
    HOLDING.store(false, Ordering::SeqCst);
    let held = HELD
        .lock()
        .map(|mut h| std::mem::take(&mut *h))
        .unwrap_or_default();
    for msg in held {
        eprintln!("{msg}");
    }
}

/// Prints `msg` on standard error, or keeps it while [`hold`]ing.
fn emit(msg: &str) {
    if HOLDING.load(Ordering::SeqCst) {
        if let Ok(mut held) = HELD.lock() {
            held.push(msg.to_string());
            return;
        }
    }
    eprintln!("{msg}");
}

/// Prints a warning (always).
pub fn warn(msg: impl AsRef<str>) {
    emit(msg.as_ref());
}

/// Prints a summary, note or progress line unless quiet.
pub fn say(msg: impl AsRef<str>) {
    if verbosity() >= Verbosity::Normal {
        emit(msg.as_ref());
    }
}

/// Prints a detail line when verbose.
pub fn detail(msg: impl AsRef<str>) {
    if verbosity() >= Verbosity::Verbose {
        emit(msg.as_ref());
    }
}

/// An error and its causes on one line, `outer: cause: cause`, each message once.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        msg.push_str(": ");
        msg.push_str(&c.to_string());
        cause = c.source();
    }
    msg
}

/// Up to three of `candidates` close to `name`: names that start with it (or that it starts
/// with), or within two edits of it (case-insensitive), closest first.
pub fn similar_names<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut near: Vec<(usize, String)> = candidates
        .into_iter()
        .filter_map(|n| {
            let l = n.to_lowercase();
            let d = edit_distance(&lower, &l);
            let prefix = !lower.is_empty() && (l.starts_with(&lower) || lower.starts_with(&l));
            (prefix || d <= 2).then(|| (if prefix { 0 } else { d }, n.to_string()))
        })
        .collect();
    near.sort();
    near.dedup();
    near.into_iter().take(3).map(|(_, n)| n).collect()
}

/// Levenshtein distance between two strings (by characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `"; did you mean a, b?"` for similar names, or nothing.
pub fn did_you_mean(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", names.join(", "))
    }
}
