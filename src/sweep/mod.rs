//! Sweeps: the regime map. A grid file names a base scenario and axes of overrides; each cell
//! of their product is one scenario, replayed by the same engine as `hazardserve replay`, and
//! the map reads, per cell, whether `hazard` beats the hazard-blind baselines and the age
//! heuristic, and whether pre-emptive migration pays.
//!
//! - [`grid`]: the grid file and its cells;
//! - [`cell`]: running one cell and its verdict;
//! - [`stored`]: sweeps in the store, and shard files for clusters;
//! - `run`: running cells in parallel, and shards; `error`: [`SweepError`].
//!
//! Cells run in parallel on a rayon pool; every cell's result depends only on its scenario (the
//! engine and the bootstrap are seeded), so a sweep is the same whatever `--jobs` is and however
//! it is sharded.

pub mod axis;
pub mod cell;
mod error;
pub mod filter;
pub mod grid;
pub mod layout;
mod run;
pub mod stored;

pub use axis::{compare_axis, AxisRow};
pub use cell::{assign_q_values, run_cell, CellResult, FDR, MAP_METRICS, PAIRINGS, VERDICT_METRIC};
pub use error::SweepError;
pub use filter::AxisFilter;
pub use grid::{Cell, GridFile};
pub use layout::{MapLayout, SweepAxis};
pub use run::{run_cells, run_or_reuse, shard_cells, Shard};
pub use stored::{
    content_key, grid_sources, is_stored, latest_sweep, list_sweeps, load_sweep, read_shards,
    result_sources, save_sweep, write_shard, ShardInfo, SweepRow,
};
