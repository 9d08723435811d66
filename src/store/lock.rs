//! The writer lock: one writer at a time per store, with a clear message for the second.

use std::fs::File;
use std::io::Write;

use super::dir::Store;
use super::error::{io_err, Result, StoreError};
use super::journal::recover;

/// Held while a process writes to the store; released on drop (and by the OS if it dies).
#[derive(Debug)]
pub struct WriteLock {
    _file: File,
}

impl WriteLock {
    /// Takes the writer lock without waiting, then removes what a killed writer left behind.
    pub fn acquire(store: &Store) -> Result<WriteLock> {
        Self::take(store, false)
    }

    /// Takes the writer lock, waiting for another writer to finish (after printing one line
    /// that says so), then removes what a killed writer left behind. For work that must not be
    /// thrown away, such as a finished replay.
    pub fn acquire_wait(store: &Store) -> Result<WriteLock> {
        Self::take(store, true)
    }

    fn take(store: &Store, wait: bool) -> Result<WriteLock> {
        let path = store.root().join(".lock");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_err(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) if wait => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                crate::diag::say(format!(
                    "waiting for another writer of {} to finish ({})...",
                    store.root().display(),
                    holder.trim()
                ));
                file.lock().map_err(io_err(&path))?;
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                let holder = holder.trim();
                let who = if holder.is_empty() {
                    String::new()
                } else {
                    format!(" ({holder})")
                };
                return Err(StoreError::Locked(store.root().to_path_buf(), who));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&path)(e)),
        }
        file.set_len(0).map_err(io_err(&path))?;
        let _ = write!(file, "pid {}", std::process::id());
        recover(store)?;
        Ok(WriteLock { _file: file })
    }
}
