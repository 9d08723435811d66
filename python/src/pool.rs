//! The extension's worker threads: its own rayon pool, made again in a forked child. A child
//! made by `fork` (Python's `multiprocessing` on Linux) inherits the parent's memory but none
//! of its threads, so a pool the parent started would wait forever for workers that are not
//! there; every parallel fit runs in [`pool`]'s pool instead, which a process with a new id
//! builds afresh (the parent's is left as it was, never touched again).

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The pool of this process: built on first use, and again when the process id changed.
fn pool() -> PyResult<Arc<rayon::ThreadPool>> {
    static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut held = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, pool)) = held.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(pool));
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("hazardserve-{i}"))
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start worker threads: {e}")))?;
    let pool = Arc::new(pool);
    if let Some(inherited) = held.replace((pid, Arc::clone(&pool))) {
        // The parent's pool: its threads are not in this process, and dropping it would wait
        // for them.
        std::mem::forget(inherited);
    }
    Ok(pool)
}

/// Runs `work` without the GIL, in this process's pool (see the module docs).
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> PyResult<T> + Send,
) -> PyResult<T> {
    let pool = pool()?;
    py.detach(|| pool.install(work))
}
