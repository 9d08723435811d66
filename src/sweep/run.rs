//! Running a grid's cells in parallel (or reusing a stored sweep of the same grid and inputs),
//! and splitting a grid into shards.

use std::path::PathBuf;

use rayon::prelude::*;

use super::cell::{run_cell_with, CellResult};
use super::error::SweepError;
use super::grid::Cell;
use super::stored::{content_key, grid_sources, is_stored, load_sweep, save_sweep};
use crate::store::{Store, WriteLock};

/// A slice of a grid: shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: usize,
    /// Shards in all.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = SweepError;

    /// Parses `I/N`.
    fn from_str(s: &str) -> Result<Shard, SweepError> {
        let bad = || SweepError::BadShard(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// The cells of `grid` that `shard` runs (all of them without a shard).
pub fn shard_cells(cells: Vec<Cell>, shard: Option<Shard>) -> Vec<Cell> {
    match shard {
        None => cells,
        Some(s) => cells
            .into_iter()
            .filter(|c| c.shard_of(s.count) == s.index)
            .collect(),
    }
}

/// Runs `cells` on a pool of `jobs` threads (0 = one per core), calling `progress` with the
/// number done after each cell. The cells share one [`crate::scenario::build::BuildCache`]:
/// each source's sessions and each training cut's priors are read and
/// fitted once. The results are in grid order; the first failing cell (in grid order) is the
/// error.
pub fn run_cells(
    store: &Store,
    cells: &[Cell],
    jobs: usize,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<Vec<CellResult>, SweepError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| SweepError::Io {
            path: PathBuf::from("(thread pool)"),
            source: std::io::Error::other(e.to_string()),
        })?;
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Cells that share a source, selection and training cut share its sessions and priors.
    let cache = crate::scenario::build::BuildCache::default();
    let results: Vec<Result<CellResult, SweepError>> = pool.install(|| {
        // One task per cell: a slow cell never holds the others back on its thread.
        cells
            .par_iter()
            .with_max_len(1)
            .map(|c| {
                let r = run_cell_with(store, c, &cache).map_err(|source| SweepError::Cell {
                    cell: c.key.clone(),
                    source,
                });
                progress(done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1);
                r
            })
            .collect()
    });
    results.into_iter().collect()
}

/// Runs `cells` (of the grid `grid_text`) and stores them as sweep `id`, unless the store
/// already holds sweep `id` of this grid over these inputs (the same content key), which is
/// then read back instead. Returns the cells in grid order and whether they were reused.
pub fn run_or_reuse(
    store: &Store,
    id: &str,
    grid_text: &str,
    cells: &[Cell],
    jobs: usize,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<(Vec<CellResult>, bool), SweepError> {
    let key = content_key(store, grid_text, grid_sources(cells))?;
    if is_stored(store, id, &key) {
        return Ok((load_sweep(store, id)?, true));
    }
    let results = run_cells(store, cells, jobs, progress)?;
    let lock = WriteLock::acquire_wait(store)?;
    save_sweep(store, &lock, id, &key, grid_text, &results)?;
    Ok((results, false))
}
