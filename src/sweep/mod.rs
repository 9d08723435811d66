//! Sweeps: the regime map. A grid file names a base scenario and axes of overrides; each cell
//! of their product is one scenario, replayed by the same engine as `hazardserve replay`, and
//! the map reads, per cell, whether `hazard` beats the hazard-blind baselines and the age
//! heuristic, and whether pre-emptive migration pays.
//!
//! - [`grid`]: the grid file and its cells;
//! - [`cell`]: running one cell and its verdict;
//! - [`stored`]: sweeps in the store, and shard files for clusters.
//!
//! Cells run in parallel on a rayon pool; every cell's result depends only on its scenario (the
//! engine and the bootstrap are seeded), so a sweep is the same whatever `--jobs` is and however
//! it is sharded.

use std::path::PathBuf;

use rayon::prelude::*;

pub mod axis;
pub mod cell;
pub mod filter;
pub mod grid;
pub mod layout;
pub mod stored;

pub use axis::{compare_axis, AxisRow};
pub use cell::{assign_q_values, run_cell, CellResult, FDR, MAP_METRICS, PAIRINGS, VERDICT_METRIC};
pub use filter::AxisFilter;
pub use grid::{Cell, GridFile};
pub use layout::{MapLayout, SweepAxis};
pub use stored::{
    content_key, grid_sources, is_stored, latest_sweep, list_sweeps, load_sweep, read_shards,
    result_sources, save_sweep, write_shard, ShardInfo, SweepRow,
};

use crate::scenario::ScenarioError;
use crate::store::{Store, StoreError};

/// Why a sweep could not be read, run or stored.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The grid file is wrong.
    #[error("{file}: {message}")]
    Grid {
        /// The grid file.
        file: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A cell's scenario failed.
    #[error("cell {cell}")]
    Cell {
        /// The cell's key.
        cell: String,
        /// Why.
        #[source]
        source: ScenarioError,
    },
    /// A file could not be read or written.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A shard file is not what `sweep merge` needs.
    #[error("{}: {message}", path.display())]
    Shard {
        /// The shard file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No shard files in the given directories.
    #[error("no shard files (shard-I-of-N.json) in {}", .0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoShards(Vec<PathBuf>),
    /// Shards are missing.
    #[error("shards {missing} of {of} are missing (shards are numbered 0 to {of} - 1)")]
    MissingShards {
        /// Shards in all.
        of: usize,
        /// The missing shard numbers.
        missing: String,
    },
    /// No sweep of that id in the store.
    #[error("no sweep {0:?} in the store (`hazardserve sweep list` lists them)")]
    NoSuchSweep(String),
    /// A shard request like `4/3`.
    #[error("--shard {0}: use I/N with 0 <= I < N, e.g. 0/3")]
    BadShard(String),
    /// An axis comparison was asked for something the sweep does not have.
    #[error("{0}")]
    Axis(String),
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

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
/// each source's sessions and each training cut's priors are read and fitted once. The results are in grid order; the first failing cell (in
/// grid order) is the error.
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
                let r = cell::run_cell_with(store, c, &cache).map_err(|source| SweepError::Cell {
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
