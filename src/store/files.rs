//! Files the store writes: Parquet parts, atomic replacement, durable directories, hashes,
//! and the fault points the crash tests stop at.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use sha2::{Digest, Sha256};

use super::error::{io_err, Result, StoreError};

/// Writes `batch` to `path` as zstd Parquet, fsyncs it, and returns its sha256.
pub fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<String> {
    write_parquet_batches(path, batch.schema(), std::iter::once(Ok(batch.clone()))).map(|(h, _)| h)
}

/// Writes `batches` (all of `schema`) to `path` as zstd Parquet, one at a time, fsyncs it, and
/// returns its sha256 and row count.
pub(crate) fn write_parquet_batches(
    path: &Path,
    schema: SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<(String, u64)> {
    let perr = |e: parquet::errors::ParquetError| StoreError::Parquet {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    fault_point("write a Parquet file");
    let file = File::create(path).map_err(io_err(path))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut w = ArrowWriter::try_new(file, schema, Some(props)).map_err(perr)?;
    let mut rows = 0u64;
    for batch in batches {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        w.write(&batch).map_err(perr)?;
    }
    let file = w.into_inner().map_err(perr)?;
    fault_point("fsync a Parquet file");
    file.sync_all().map_err(io_err(path))?;
    Ok((sha256_file(path)?, rows))
}

/// Whether `path` looks like a complete Parquet file: at least 12 bytes, starting and ending
/// with the magic `PAR1` (a file cut short by a crash or a full disk lacks the trailing one).
pub(crate) fn has_parquet_footer(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let check = || -> std::io::Result<bool> {
        let mut f = File::open(path)?;
        if f.metadata()?.len() < 12 {
            return Ok(false);
        }
        let mut head = [0u8; 4];
        f.read_exact(&mut head)?;
        f.seek(SeekFrom::End(-4))?;
        let mut tail = [0u8; 4];
        f.read_exact(&mut tail)?;
        Ok(&head == b"PAR1" && &tail == b"PAR1")
    };
    check().unwrap_or(false)
}

/// sha256 of a file (hex).
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(io_err(path))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(io_err(path))?;
    Ok(hazardserve_ingest::input::hex(&h.finalize()))
}

/// Writes `bytes` to `path` atomically (see [`replace_file`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_file(path, |tmp| std::fs::write(tmp, bytes).map_err(io_err(path)))
}

/// Replaces `path` atomically, the one temp-file-then-rename of the crate: `fill` writes the new
/// content to a temporary path beside `path` (`<name>.tmp-<pid>`, which [`recover`] removes if
/// the process dies); the file is then fsynced, renamed over `path`, and the directory fsynced.
/// On any error the temporary file is removed and `path` is left as it was. Errors name `path`
/// (what the caller asked for), not the temporary file.
pub fn replace_file<E: From<StoreError>>(
    path: &Path,
    fill: impl FnOnce(&Path) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let tmp = temp_path(path);
    let _ = std::fs::remove_file(&tmp);
    fault_point("write a temporary file");
    let done = fill(&tmp).and_then(|()| {
        fault_point("fsync a temporary file");
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err(path))?;
        fault_point("rename a temporary file into place");
        std::fs::rename(&tmp, path).map_err(io_err(path))?;
        fault_point("fsync the directory of a renamed file");
        Ok(sync_dir(parent_dir(path))?)
    });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// The temporary file of [`replace_file`] for `path`.
pub(super) fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Whether `name` is the [`replace_file`] temporary of the file `of` (`<of>.tmp-<digits>`),
/// or DuckDB's write-ahead log beside it (`<of>.tmp-<digits>.wal`).
pub(super) fn is_temp_of(name: &str, of: &str) -> bool {
    let Some(rest) = name.strip_prefix(of).and_then(|r| r.strip_prefix(".tmp-")) else {
        return false;
    };
    let pid = rest.strip_suffix(".wal").unwrap_or(rest);
    !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())
}

/// Creates `dir` (and its missing parents inside the store) and makes each new entry durable
/// in its parent, so a crash after the commit cannot lose a directory that a manifest names.
pub(super) fn create_dir_durable(root: &Path, dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut d = dir;
    while !d.is_dir() && d != root {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) => d = p,
            None => break,
        }
    }
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    for m in missing.iter().rev() {
        sync_dir(parent_dir(m))?;
    }
    Ok(())
}

pub(super) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes the entries of `dir` (renames into it, removals) durable.
#[cfg(unix)]
pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// Directories cannot be opened for fsync here; renames are durable once the files are.
#[cfg(not(unix))]
pub(super) fn sync_dir(_dir: &Path) -> Result<()> {
    Ok(())
}

pub(super) fn new_txid() -> String {
    let now = chrono::Utc::now();
    format!("{}-{}", now.format("%Y%m%dT%H%M%S%6f"), std::process::id())
}

/// Whether [`enable_fault_injection`] switched the fault points on in this process.
#[cfg(feature = "fault-injection")]
static FAULTS_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Switches the fault points on for this process (the `hazardserve-faults` binary does, first
/// thing; the `hazardserve` binary never does).
#[cfg(feature = "fault-injection")]
pub(crate) fn enable_fault_injection() {
    FAULTS_ON.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// `HAZARDSERVE_FAULT`, when the fault points are on in this process.
#[cfg(feature = "fault-injection")]
pub(crate) fn fault_mode() -> Option<String> {
    if !FAULTS_ON.load(std::sync::atomic::Ordering::SeqCst) {
        return None;
    }
    std::env::var("HAZARDSERVE_FAULT").ok()
}

/// Test hook (only built with the `fault-injection` feature, which the integration tests enable,
/// and on only in the `hazardserve-faults` binary; otherwise a no-op that never reads the
/// environment). `HAZARDSERVE_FAULT` selects:
///
/// - `pause-before-commit`: the writer stops just before its commit point, so a test can kill it
///   there;
/// - `trace`: every fault point a write passes prints `fault point N: <name>` on stderr (N counts
///   from 1), so a test learns how many points a write has;
/// - `kill-at:N`: the process kills itself with SIGKILL at the Nth fault point, as a crash or
///   `kill -9` would, leaving whatever was half-done on disk.
#[cfg(feature = "fault-injection")]
pub(crate) fn fault_point(name: &str) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PASSED: AtomicUsize = AtomicUsize::new(0);
    let Some(mode) = fault_mode() else {
        return;
    };
    let n = PASSED.fetch_add(1, Ordering::SeqCst) + 1;
    if mode == name {
        eprintln!("fault point reached: {name}");
        std::thread::sleep(std::time::Duration::from_secs(120));
    } else if mode == "trace" {
        eprintln!("fault point {n}: {name}");
    } else if mode
        .strip_prefix("kill-at:")
        .and_then(|k| k.parse::<usize>().ok())
        == Some(n)
    {
        eprintln!("fault point {n}: {name}: killing this process");
        // SAFETY: raise(2) with a valid signal number has no memory-safety preconditions.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
}

/// Without the `fault-injection` feature there are no fault points.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn fault_point(_name: &str) {}
