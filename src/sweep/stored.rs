//! Sweeps in the store (tables `sweeps` and `sweep_cells`, one source per sweep) and shard
//! files (the `sweep_cells` rows of one shard as Parquet, with a JSON sidecar) that
//! `sweep merge` commits as one sweep.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, StringArray, UInt64Array};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::cell::{CellResult, MAP_METRICS};
use super::error::SweepError;
use crate::policy::PolicyKind;
use crate::replay::{PolicyLabel, PolicySummary, Versus};
use crate::store::tables::{sweep_cells_schema, sweeps_schema};
use crate::store::{commit_tables, IngestOutcome, StagedTable, Store, StoreError, WriteLock};

fn arrow_err(source: arrow::error::ArrowError) -> SweepError {
    SweepError::Store(StoreError::Arrow {
        table: "sweep_cells".into(),
        source,
    })
}

/// The `result` JSON of a cell: its comparison rows and the pairings the map reads.
fn result_json(c: &CellResult) -> String {
    let opt = |v: &Option<Versus>| v.as_ref().map_or(Value::Null, Versus::to_json);
    json!({
        "rows": c.rows.iter().map(PolicySummary::to_json).collect::<Vec<_>>(),
        "vs_uptime": opt(&c.vs_uptime),
        "overlap_gain": opt(&c.overlap_gain),
        "migration_effect": opt(&c.migration_effect),
        "vs_pooled": opt(&c.vs_pooled),
        "retained_effect": opt(&c.retained_effect),
        "idle_effect": opt(&c.idle_effect),
        "reference": c.reference,
        "vs_reference": opt(&c.vs_reference),
        // Read by SQL (`hazardserve query sweep_pays`); recomputed from the rows when loaded.
        "pays": c.pays(),
        "load_forecast_pays": c.load_forecast_pays(),
        "migration_pays": c.migration_pays(),
        "hazard_windows": c.hazard_windows.iter().map(|(w, v)| {
            let mut o = serde_json::Map::new();
            o.insert("window".into(), json!(w));
            for (m, x) in MAP_METRICS.iter().zip(v) {
                o.insert(m.key().into(), json!(x));
            }
            Value::Object(o)
        }).collect::<Vec<_>>(),
    })
    .to_string()
}

/// The `sweep_cells` rows of `cells` under `sweep_id`, in grid order.
fn cells_batch(sweep_id: &str, cells: &[CellResult]) -> Result<RecordBatch, SweepError> {
    let mut cells: Vec<&CellResult> = cells.iter().collect();
    cells.sort_by_key(|c| c.index);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![sweep_id; cells.len()])),
        Arc::new(Int64Array::from_iter_values(
            cells.iter().map(|c| c.index as i64),
        )),
        Arc::new(StringArray::from_iter_values(cells.iter().map(|c| &c.key))),
        Arc::new(StringArray::from_iter_values(
            cells.iter().map(|c| json!(c.axes).to_string()),
        )),
        Arc::new(StringArray::from_iter_values(
            cells.iter().map(|c| &c.config),
        )),
        Arc::new(UInt64Array::from_iter_values(
            cells.iter().map(|c| c.requests),
        )),
        Arc::new(StringArray::from_iter_values(
            cells.iter().map(|c| result_json(c)),
        )),
    ];
    RecordBatch::try_new(sweep_cells_schema(), cols).map_err(arrow_err)
}

/// Reads `sweep_cells` rows back into results.
fn cells_from_batch(b: &RecordBatch) -> Result<Vec<CellResult>, SweepError> {
    let corrupt = |m: String| {
        SweepError::Store(StoreError::Corrupt {
            path: "sweep_cells".into(),
            message: m,
        })
    };
    let col = |name: &str| {
        b.column_by_name(name)
            .ok_or_else(|| corrupt(format!("no column {name}")))
    };
    let text = |name: &str| -> Result<StringArray, SweepError> {
        col(name)?
            .as_any()
            .downcast_ref::<StringArray>()
            .cloned()
            .ok_or_else(|| corrupt(format!("{name} is not text")))
    };
    let pos = col("position")?
        .as_any()
        .downcast_ref::<Int64Array>()
        .cloned()
        .ok_or_else(|| corrupt("position is not an integer".into()))?;
    let requests = col("requests")?
        .as_any()
        .downcast_ref::<UInt64Array>()
        .cloned()
        .ok_or_else(|| corrupt("requests is not an integer".into()))?;
    let (cell, axes, config, result) = (
        text("cell")?,
        text("axes")?,
        text("config")?,
        text("result")?,
    );
    let mut out = Vec::with_capacity(b.num_rows());
    for i in 0..b.num_rows() {
        let axes: Vec<(String, String)> = serde_json::from_str(axes.value(i))
            .map_err(|e| corrupt(format!("axes of {}: {e}", cell.value(i))))?;
        let r: Value = serde_json::from_str(result.value(i))
            .map_err(|e| corrupt(format!("result of {}: {e}", cell.value(i))))?;
        let rows = r["rows"]
            .as_array()
            .ok_or_else(|| corrupt(format!("result of {}: no rows", cell.value(i))))?
            .iter()
            .map(PolicySummary::from_json)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| corrupt(format!("result of {}: {e}", cell.value(i))))?;
        let versus = |k: &str| -> Result<Option<Versus>, SweepError> {
            match &r[k] {
                Value::Null => Ok(None),
                v => Versus::from_json(v)
                    .map(Some)
                    .map_err(|e| corrupt(format!("{k} of {}: {e}", cell.value(i)))),
            }
        };
        // Sweeps stored before the reference was declared compared with the best blind
        // baseline.
        let vs_reference = match &r["vs_reference"] {
            Value::Null => rows
                .iter()
                .find(|x| x.label == PolicyLabel::new(PolicyKind::Hazard))
                .and_then(|h| h.vs_best_blind.clone().or_else(|| h.vs_fastest.clone())),
            _ => versus("vs_reference")?,
        };
        out.push(CellResult {
            index: usize::try_from(pos.value(i)).unwrap_or(usize::MAX),
            key: cell.value(i).to_string(),
            axes,
            config: config.value(i).to_string(),
            rows,
            vs_uptime: versus("vs_uptime")?,
            overlap_gain: versus("overlap_gain")?,
            migration_effect: versus("migration_effect")?,
            // Sweeps stored before the twin ran have none: their hazard term reads `-`.
            vs_pooled: versus("vs_pooled")?,
            // Sweeps stored before the ablations ran have none.
            retained_effect: versus("retained_effect")?,
            idle_effect: versus("idle_effect")?,
            reference: r["reference"].as_str().unwrap_or("best-blind").to_string(),
            vs_reference,
            q_values: BTreeMap::new(),
            // Sweeps stored before per-window values were kept have none.
            hazard_windows: r["hazard_windows"]
                .as_array()
                .map(|ws| {
                    ws.iter()
                        .filter_map(|w| {
                            let window = usize::try_from(w["window"].as_u64()?).ok()?;
                            Some((window, MAP_METRICS.map(|m| w[m.key()].as_f64())))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            requests: if requests.is_null(i) {
                0
            } else {
                requests.value(i)
            },
        });
    }
    Ok(out)
}

/// The defaults a stored result depends on beyond the grid text (the engine and forecast a
/// cell runs when its scenario names none, the policies `replay.policies = []` means and the
/// twin the hazard term reads): a change of these makes earlier sweeps stale.
const RESULTS_SCHEMA: &str = "defaults=iteration+stationary;twin=hazard-pooled";

/// What a sweep's results depend on: the program version, [`RESULTS_SCHEMA`], the grid text
/// and the content of every source its cells read (nodes and workload). A sweep stored under
/// the same id with the same key is not run or stored again.
pub fn content_key<'a>(
    store: &Store,
    grid_text: &str,
    sources: impl IntoIterator<Item = &'a str>,
) -> Result<String, SweepError> {
    let mut names: Vec<&str> = sources.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    let mut key = format!("{}|{RESULTS_SCHEMA}|{grid_text}", env!("CARGO_PKG_VERSION"));
    for n in names {
        key.push('|');
        key.push_str(&store.manifest(n)?.content_key);
    }
    Ok(key)
}

/// The sources (nodes and workload) the cells of a grid read.
pub fn grid_sources(cells: &[super::grid::Cell]) -> Vec<&str> {
    cells
        .iter()
        .flat_map(|c| {
            c.config
                .pools
                .iter()
                .filter_map(|p| p.source.as_deref())
                .chain(
                    c.config
                        .pools
                        .is_empty()
                        .then_some(c.config.nodes.source.as_str()),
                )
                .chain([c.config.workload.source.as_str()])
        })
        .collect()
}

/// The sources (nodes and workload) the cells of stored results read, from their scenarios.
pub fn result_sources(cells: &[CellResult]) -> Vec<String> {
    cells
        .iter()
        .filter_map(|c| toml::from_str::<crate::scenario::ScenarioConfig>(&c.config).ok())
        .flat_map(|cfg| {
            let mut v = cfg.node_sources();
            v.push(cfg.workload.source);
            v
        })
        .collect()
}

/// Whether sweep `sweep_id` is stored with content key `key` (see [`content_key`]).
pub fn is_stored(store: &Store, sweep_id: &str, key: &str) -> bool {
    store.manifest(sweep_id).is_ok_and(|m| m.content_key == key)
}

/// Commits a finished sweep (every cell) as source `sweep_id` under content key `key` (see
/// [`content_key`]; a sweep id names one sweep, so a new sweep under an existing id replaces
/// it, and the same key again leaves the store unchanged).
pub fn save_sweep(
    store: &Store,
    lock: &WriteLock,
    sweep_id: &str,
    key: &str,
    grid_text: &str,
    cells: &[CellResult],
) -> Result<IngestOutcome, SweepError> {
    let sweeps = RecordBatch::try_new(
        sweeps_schema(),
        vec![
            Arc::new(StringArray::from(vec![sweep_id])),
            Arc::new(StringArray::from(vec![chrono::Utc::now().to_rfc3339()])),
            Arc::new(StringArray::from(vec![env!("CARGO_PKG_VERSION")])),
            Arc::new(Int64Array::from(vec![cells.len() as i64])),
            Arc::new(StringArray::from(vec![grid_text])),
        ],
    )
    .map_err(arrow_err)?;
    // The stored `pays` (read by SQL) is the map's: q-values over all of its cells.
    let mut cells = cells.to_vec();
    super::cell::assign_q_values(&mut cells);
    let tables = vec![
        StagedTable::one("sweeps", sweeps),
        StagedTable::one("sweep_cells", cells_batch(sweep_id, &cells)?),
    ];
    Ok(commit_tables(store, lock, sweep_id, key, tables, true)?)
}

/// The cells of a stored sweep, in grid order.
pub fn load_sweep(store: &Store, sweep_id: &str) -> Result<Vec<CellResult>, SweepError> {
    let cat = store.query()?;
    let conn = cat.connection();
    let mut stmt = conn
        .prepare(crate::queries::SWEEP_CELLS.sql)
        .map_err(StoreError::from)?;
    let batches: Vec<RecordBatch> = stmt
        .query_arrow([sweep_id])
        .map_err(StoreError::from)?
        .collect();
    let mut out = Vec::new();
    for b in &batches {
        out.extend(cells_from_batch(b)?);
    }
    if out.is_empty() {
        return Err(SweepError::NoSuchSweep(sweep_id.to_string()));
    }
    super::cell::assign_q_values(&mut out);
    Ok(out)
}

/// One stored sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepRow {
    /// Sweep id.
    pub sweep_id: String,
    /// When it was stored (RFC 3339, UTC).
    pub created_at: String,
    /// Cells.
    pub cells: i64,
}

/// Every stored sweep, oldest first.
pub fn list_sweeps(store: &Store) -> Result<Vec<SweepRow>, SweepError> {
    let cat = store.query()?;
    let mut stmt = cat
        .connection()
        .prepare(crate::queries::SWEEP_LIST.sql)
        .map_err(StoreError::from)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(SweepRow {
                sweep_id: r.get(0)?,
                created_at: r.get(1)?,
                cells: r.get(2)?,
            })
        })
        .map_err(StoreError::from)?;
    let mut out = Vec::new();
    for r in rows {
        out.push(r.map_err(StoreError::from)?);
    }
    Ok(out)
}

/// The most recent sweep id, if any.
pub fn latest_sweep(store: &Store) -> Result<Option<String>, SweepError> {
    let cat = store.query()?;
    let mut stmt = cat
        .connection()
        .prepare(crate::queries::LATEST_SWEEP.sql)
        .map_err(StoreError::from)?;
    let mut rows = stmt.query([]).map_err(StoreError::from)?;
    Ok(match rows.next().map_err(StoreError::from)? {
        Some(r) => Some(r.get(0).map_err(StoreError::from)?),
        None => None,
    })
}

/// The sidecar of a shard file: which grid, which shard, which cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// Program version that ran the shard.
    pub version: String,
    /// The grid file's text.
    pub grid: String,
    /// The shard, 0-based.
    pub shard: usize,
    /// Shards in all.
    pub of: usize,
    /// Cells in the whole grid.
    pub grid_cells: usize,
    /// The keys of this shard's cells.
    pub cells: Vec<String>,
}

fn shard_stem(shard: usize, of: usize) -> String {
    format!("shard-{shard}-of-{of}")
}

/// Writes one shard's results into `dir` (`shard-I-of-N.parquet` and `.json`), atomically.
pub fn write_shard(
    dir: &Path,
    info: &ShardInfo,
    cells: &[CellResult],
) -> Result<PathBuf, SweepError> {
    std::fs::create_dir_all(dir).map_err(|e| SweepError::Io {
        path: dir.to_path_buf(),
        source: e,
    })?;
    let stem = shard_stem(info.shard, info.of);
    let parquet = dir.join(format!("{stem}.parquet"));
    let batch = cells_batch("", cells)?;
    crate::store::replace_file(&parquet, |tmp| {
        crate::store::write_parquet(tmp, &batch).map(|_| ())
    })?;
    let sidecar = dir.join(format!("{stem}.json"));
    let text = serde_json::to_string_pretty(info).unwrap_or_default();
    crate::store::write_atomic(&sidecar, text.as_bytes())?;
    Ok(parquet)
}

/// Reads every shard under `dirs` and checks that together they are one whole grid: one grid
/// text, one shard count, each shard once, each cell once. Returns the grid text and the cells.
pub fn read_shards(dirs: &[PathBuf]) -> Result<(String, Vec<CellResult>), SweepError> {
    let mut found: Vec<(PathBuf, ShardInfo)> = Vec::new();
    for d in dirs {
        let entries = std::fs::read_dir(d).map_err(|e| SweepError::Io {
            path: d.clone(),
            source: e,
        })?;
        let mut names: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "json")
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("shard-"))
            })
            .collect();
        names.sort();
        for p in names {
            let text = std::fs::read_to_string(&p).map_err(|e| SweepError::Io {
                path: p.clone(),
                source: e,
            })?;
            let info: ShardInfo = serde_json::from_str(&text).map_err(|e| SweepError::Shard {
                path: p.clone(),
                message: format!("not a shard sidecar: {e}"),
            })?;
            found.push((p, info));
        }
    }
    let Some((first_path, first)) = found.first().cloned() else {
        return Err(SweepError::NoShards(dirs.to_vec()));
    };
    let mut seen = vec![false; first.of];
    let mut cells = Vec::new();
    for (p, info) in &found {
        let bad = |message: String| SweepError::Shard {
            path: p.clone(),
            message,
        };
        if info.grid != first.grid || info.of != first.of {
            return Err(bad(format!(
                "from another sweep than {} (grid or shard count differs)",
                first_path.display()
            )));
        }
        if info.shard >= info.of || std::mem::replace(&mut seen[info.shard], true) {
            return Err(bad(format!(
                "shard {} of {} given twice or out of range",
                info.shard, info.of
            )));
        }
        let parquet = p.with_extension("parquet");
        let file = std::fs::File::open(&parquet).map_err(|e| SweepError::Io {
            path: parquet.clone(),
            source: e,
        })?;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .and_then(|b| b.build())
            .map_err(|e| bad(format!("{}: {e}", parquet.display())))?;
        let mut got = Vec::new();
        for b in reader {
            let b = b.map_err(|e| bad(format!("{}: {e}", parquet.display())))?;
            got.extend(cells_from_batch(&b)?);
        }
        let keys: Vec<&str> = got.iter().map(|c| c.key.as_str()).collect();
        if keys != info.cells.iter().map(String::as_str).collect::<Vec<_>>() {
            return Err(bad(
                "its Parquet file does not hold the cells its sidecar lists".into(),
            ));
        }
        cells.extend(got);
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, &s)| !s)
        .map(|(i, _)| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(SweepError::MissingShards {
            of: first.of,
            missing: missing.join(", "),
        });
    }
    cells.sort_by_key(|c| c.index);
    super::cell::assign_q_values(&mut cells);
    if cells.len() != first.grid_cells || cells.windows(2).any(|w| w[0].key == w[1].key) {
        return Err(SweepError::Shard {
            path: first_path,
            message: format!(
                "the shards hold {} cells, the grid has {}",
                cells.len(),
                first.grid_cells
            ),
        });
    }
    Ok((first.grid, cells))
}
