//! The grid file of a sweep: a base scenario and axes of scenario overrides whose product is
//! the set of cells.
//!
//! ```toml
//! [base]                      # any scenario keys, as `replay --write-config` writes them
//! "replay.windows" = 10       # (or: config = "reports/scenarios/gce-azure-conv.toml")
//! [axes]                      # dotted scenario key = list of values; cells = their product
//! "nodes.source" = ["gce-preemptible", "stunner-80"]
//! "hardware.preset" = ["a100", "m1-max"]
//! ```
//!
//! An axis may set several keys together: `"hardware.preset+model.preset" = [["a100",
//! "llama-3-8b"], ["phone", "llama-3.2-1b"]]` (a phone runs a small model) gives two cells,
//! not four.
//!
//! The axis `fleet` swaps whole fleets: each value names a scenario file (relative to the
//! grid file's directory, then to the working directory) whose `[nodes]` and `[[pools]]`
//! replace the cell's, so fleet mixes cross with the other axes (`"fleet" =
//! ["../scenarios/fleet-spot-h100.toml", "../scenarios/fleet-two-cloud.toml"]`); the cell key
//! shows the file's stem.
//!
//! Base keys may be written dotted (`"replay.windows" = 10`) or as tables (`[base.replay]`).
//! `config = "FILE"` starts from a scenario file (relative to the grid file's directory, then to
//! the working directory); the other base keys override it. Every cell's scenario is checked
//! like a `replay` scenario before any cell runs, so a typo in a key or a value fails at once
//! with the key named.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toml::{Table, Value};

use super::error::SweepError;
use crate::scenario::ScenarioConfig;

/// One axis: a dotted scenario key and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Dotted scenario key, e.g. `hardware.preset`.
    pub key: String,
    /// Its values, in file order.
    pub values: Vec<Value>,
    /// For the [`FLEET_AXIS`]: each value's fleet (the `nodes` and `pools` of its file), in
    /// value order; empty otherwise.
    pub fleets: Vec<Fleet>,
}

/// The axis key that swaps whole fleets (module docs).
pub const FLEET_AXIS: &str = "fleet";

/// A fleet read from a scenario file: its `[nodes]` and `[[pools]]`, as TOML values.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    nodes: Value,
    pools: Value,
}

impl Fleet {
    /// Reads the fleet of scenario file `p` (resolved against `dir`).
    fn read(dir: &Path, p: &str) -> Result<Fleet, String> {
        let path = resolve(dir, p);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let cfg = ScenarioConfig::from_toml(&text, &path.display().to_string())
            .map_err(|e| e.to_string())?;
        let t = Value::try_from(&cfg).map_err(|e| e.to_string())?;
        Ok(Fleet {
            nodes: t
                .get("nodes")
                .cloned()
                .unwrap_or(Value::Table(Table::new())),
            pools: t.get("pools").cloned().unwrap_or(Value::Array(Vec::new())),
        })
    }

    /// Puts the fleet into a scenario table.
    fn apply(&self, t: &mut Table) {
        t.insert("nodes".into(), self.nodes.clone());
        t.insert("pools".into(), self.pools.clone());
    }
}

/// A parsed grid file.
#[derive(Debug, Clone)]
pub struct GridFile {
    /// Where it was read from (for messages).
    pub file: String,
    /// The base scenario (the `config` file, if any, with the other base keys applied).
    pub base: Table,
    /// The axes, in file order.
    pub axes: Vec<Axis>,
    /// The grid file's text (stored with the sweep; shards of one sweep must share it).
    pub text: String,
}

/// One cell of a grid: one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Position in the grid's product order (first axis slowest).
    pub index: usize,
    /// `key=value` per axis, joined by `,` (the cell's stable name).
    pub key: String,
    /// `(axis key, value)` per axis.
    pub values: Vec<(String, Value)>,
    /// The cell's scenario.
    pub config: ScenarioConfig,
}

impl Cell {
    /// The shard (of `n`) this cell belongs to: from a hash of its key, so a cell keeps its
    /// shard when axes gain values or cells are reordered.
    pub fn shard_of(&self, n: usize) -> usize {
        let h = Sha256::digest(self.key.as_bytes());
        let mut b = [0u8; 8];
        b.copy_from_slice(&h[..8]);
        (u64::from_le_bytes(b) % n.max(1) as u64) as usize
    }
}

/// A value as a cell key shows it: strings bare (a fleet file by its stem), the values of a
/// joint axis joined by `+`, everything else as TOML.
pub(crate) fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) if s.ends_with(".toml") => Path::new(s)
            .file_stem()
            .map_or_else(|| s.clone(), |x| x.to_string_lossy().into_owned()),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(value_text).collect::<Vec<_>>().join("+"),
        other => other.to_string(),
    }
}

/// Sets an axis value: one key, or for a joint axis `k1+k2+...` one array value per key.
fn set_axis(t: &mut Table, key: &str, v: Value) -> Result<(), String> {
    if !key.contains('+') {
        return set_path(t, key, v);
    }
    let keys: Vec<&str> = key.split('+').collect();
    match v {
        Value::Array(vals) if vals.len() == keys.len() => {
            for (k, x) in keys.iter().zip(vals) {
                set_path(t, k, x)?;
            }
            Ok(())
        }
        _ => Err(format!(
            "a value of the joint axis {key:?} is a list of {} values, one per key",
            keys.len()
        )),
    }
}

impl Axis {
    /// Sets value `k` of the axis in a scenario table (a fleet, or the key's value).
    fn set(&self, t: &mut Table, k: usize) -> Result<(), String> {
        match self.fleets.get(k) {
            Some(f) => {
                f.apply(t);
                Ok(())
            }
            None => set_axis(t, &self.key, self.values[k].clone()),
        }
    }
}

impl GridFile {
    /// Reads and checks a grid file.
    pub fn read(path: &Path) -> Result<GridFile, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|e| SweepError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        GridFile::parse(&text, &path.display().to_string(), dir)
    }

    /// Parses a grid file's text; `dir` resolves a relative `config` path.
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<GridFile, SweepError> {
        let bad = |message: String| SweepError::Grid {
            file: file.to_string(),
            message,
        };
        let doc: Table = toml::from_str(text).map_err(|e| bad(e.to_string().trim().into()))?;
        for k in doc.keys() {
            if k != "base" && k != "axes" {
                return Err(bad(format!(
                    "unknown section [{k}]: a grid has [base] and [axes]"
                )));
            }
        }
        let section = |name: &str| -> Result<Table, SweepError> {
            match doc.get(name) {
                None => Ok(Table::new()),
                Some(Value::Table(t)) => Ok(t.clone()),
                Some(_) => Err(bad(format!("[{name}] must be a table"))),
            }
        };
        let base_keys = section("base")?;
        let mut base = Value::try_from(ScenarioConfig::default())
            .map_err(|e| bad(e.to_string()))?
            .as_table()
            .cloned()
            .unwrap_or_default();
        let mut overrides = Vec::new();
        for (k, v) in &base_keys {
            if k == "config" {
                let Value::String(p) = v else {
                    return Err(bad("base.config must be a file name".into()));
                };
                let path = resolve(dir, p);
                let cfg_text = std::fs::read_to_string(&path).map_err(|e| {
                    bad(format!("base.config: cannot read {}: {e}", path.display()))
                })?;
                let cfg = ScenarioConfig::from_toml(&cfg_text, &path.display().to_string())
                    .map_err(|e| bad(e.to_string()))?;
                base = Value::try_from(cfg)
                    .map_err(|e| bad(e.to_string()))?
                    .as_table()
                    .cloned()
                    .unwrap_or_default();
            } else {
                flatten(k, v, &mut overrides);
            }
        }
        for (k, v) in overrides {
            set_path(&mut base, &k, v).map_err(|m| bad(format!("base: {m}")))?;
        }
        to_config(&base).map_err(|m| bad(format!("base: {m}")))?;
        let mut axes = Vec::new();
        for (key, v) in section("axes")? {
            let values = match v {
                Value::Array(a) if !a.is_empty() => a,
                Value::Array(_) => return Err(bad(format!("axes.{key}: no values"))),
                Value::Table(_) => {
                    return Err(bad(format!(
                    "axes.{key}: write the axis key quoted and dotted, e.g. \"{key}.name\" = [...]"
                )))
                }
                other => vec![other],
            };
            let fleets = if key == FLEET_AXIS {
                values
                    .iter()
                    .map(|v| match v {
                        Value::String(p) => {
                            Fleet::read(dir, p).map_err(|m| bad(format!("axes.{key} = {p}: {m}")))
                        }
                        other => Err(bad(format!(
                            "axes.{key}: each value is a scenario file name, got {other}"
                        ))),
                    })
                    .collect::<Result<Vec<_>, _>>()?
            } else {
                Vec::new()
            };
            axes.push(Axis {
                key,
                values,
                fleets,
            });
        }
        let grid = GridFile {
            file: file.to_string(),
            base,
            axes,
            text: text.to_string(),
        };
        // Every value of every axis on its own, so the error names the one that is wrong.
        for a in &grid.axes {
            for (k, v) in a.values.iter().enumerate() {
                let mut t = grid.base.clone();
                a.set(&mut t, k)
                    .and_then(|()| to_config(&t))
                    .map_err(|m| bad(format!("axes.{} = {}: {m}", a.key, value_text(v))))?;
            }
        }
        Ok(grid)
    }

    /// The number of cells (the product of the axes' lengths).
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// Whether the grid has no cells (never: a grid without axes has one cell).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every cell, in product order (first axis slowest), each checked as a scenario.
    pub fn cells(&self) -> Result<Vec<Cell>, SweepError> {
        let n = self.len();
        let mut out = Vec::with_capacity(n);
        for index in 0..n {
            let mut rest = index;
            let mut picks = vec![0usize; self.axes.len()];
            for (i, a) in self.axes.iter().enumerate().rev() {
                picks[i] = rest % a.values.len();
                rest /= a.values.len();
            }
            let mut t = self.base.clone();
            let mut values = Vec::with_capacity(self.axes.len());
            for (a, &p) in self.axes.iter().zip(&picks) {
                a.set(&mut t, p).map_err(|m| self.bad(m))?;
                values.push((a.key.clone(), a.values[p].clone()));
            }
            let config = to_config(&t).map_err(|m| self.bad(m))?;
            let key = if values.is_empty() {
                "base".to_string()
            } else {
                values
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_text(v)))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            out.push(Cell {
                index,
                key,
                values,
                config,
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        for c in &out {
            if !seen.insert(c.key.as_str()) {
                return Err(self.bad(format!(
                    "two cells are both {:?}: an axis repeats a value",
                    c.key
                )));
            }
        }
        Ok(out)
    }

    fn bad(&self, message: String) -> SweepError {
        SweepError::Grid {
            file: self.file.clone(),
            message,
        }
    }
}

fn resolve(dir: &Path, p: &str) -> PathBuf {
    let rel = dir.join(p);
    if rel.exists() {
        rel
    } else {
        PathBuf::from(p)
    }
}

/// `(dotted key, value)` for every leaf of `v` under `prefix` (tables are walked; arrays and
/// scalars are leaves).
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, Value)>) {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                flatten(&format!("{prefix}.{k}"), x, out);
            }
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

/// Sets the dotted `key` of a scenario table. Only keys the scenario has can be set.
fn set_path(t: &mut Table, key: &str, v: Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    let (last, sections) = parts.split_last().ok_or("empty key")?;
    let mut cur = t;
    for (i, p) in sections.iter().enumerate() {
        cur = match cur.get_mut(*p) {
            Some(Value::Table(x)) => x,
            Some(_) => return Err(format!("{} is not a section", parts[..=i].join("."))),
            None => {
                return Err(format!(
                    "unknown scenario section {:?}",
                    parts[..=i].join(".")
                ))
            }
        };
    }
    if sections.is_empty() {
        return Err(format!(
            "{key:?} is a section, not a key: name a key in it, e.g. \"{key}.source\""
        ));
    }
    cur.insert((*last).to_string(), v);
    Ok(())
}

fn to_config(t: &Table) -> Result<ScenarioConfig, String> {
    let cfg: ScenarioConfig = Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    cfg.validate().map_err(|e| e.to_string())?;
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GridFile, SweepError> {
        GridFile::parse(text, "g.toml", Path::new("."))
    }

    #[test]
    fn cells_are_the_product_in_file_order() {
        let g = parse(
            "[base]\n\"replay.windows\" = 3\n[base.workload]\nrate_scale = 2.0\n[axes]\n\"replay.seed\" = [1, 2, 3]\n\"policy.overlap\" = [false, true]\n\"hardware.preset\" = [\"m1-max\", \"a100\"]\n",
        )
        .unwrap();
        assert_eq!(g.len(), 12);
        let cells = g.cells().unwrap();
        assert_eq!(
            cells[0].key,
            "replay.seed=1,policy.overlap=false,hardware.preset=m1-max"
        );
        assert_eq!(
            cells[11].key,
            "replay.seed=3,policy.overlap=true,hardware.preset=a100"
        );
        assert!(cells[6].config.policy.overlap);
        assert_eq!(cells[6].config.replay.seed, 2);
        assert_eq!(cells[6].config.hardware.preset, "m1-max");
        assert!(cells
            .iter()
            .all(|c| c.config.replay.windows == 3 && c.config.workload.rate_scale == 2.0));
    }

    #[test]
    fn errors_name_the_key_and_the_value() {
        let e = parse("[axes]\n\"hardware.preset\" = [\"a100\", \"a1000\"]\n").unwrap_err();
        assert!(
            e.to_string().contains("axes.hardware.preset = a1000"),
            "{e}"
        );
        let e = parse("[axes]\n\"replay.windowz\" = [1]\n").unwrap_err();
        assert!(e.to_string().contains("windowz"), "{e}");
        let e = parse("[base]\n\"nodez.source\" = \"x\"\n").unwrap_err();
        assert!(e.to_string().contains("nodez"), "{e}");
        let e = parse("[axis]\n").unwrap_err();
        assert!(e.to_string().contains("[axis]"), "{e}");
        let e = parse("[axes]\n\"replay.seed\" = [1, 1]\n")
            .unwrap()
            .cells()
            .unwrap_err();
        assert!(e.to_string().contains("repeats"), "{e}");
    }

    #[test]
    fn joint_axes_set_keys_together() {
        let g = parse("[axes]\n\"hardware.preset+model.preset\" = [[\"a100\", \"llama-3-8b\"], [\"phone\", \"llama-3.2-1b\"]]\n\"replay.seed\" = [1, 2]\n").unwrap();
        let cells = g.cells().unwrap();
        assert_eq!(cells.len(), 4);
        assert_eq!(
            cells[2].key,
            "hardware.preset+model.preset=phone+llama-3.2-1b,replay.seed=1"
        );
        assert_eq!(cells[2].config.hardware.preset, "phone");
        assert_eq!(cells[2].config.model.preset, "llama-3.2-1b");
        let e = parse("[axes]\n\"hardware.preset+model.preset\" = [\"a100\"]\n").unwrap_err();
        assert!(e.to_string().contains("one per key"), "{e}");
    }

    #[test]
    fn shards_partition_the_cells_by_key() {
        let g = parse("[axes]\n\"replay.seed\" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n\"policy.overlap\" = [false, true]\n").unwrap();
        let cells = g.cells().unwrap();
        let mut counts = [0; 3];
        for c in &cells {
            counts[c.shard_of(3)] += 1;
        }
        assert_eq!(counts.iter().sum::<usize>(), 20);
        assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
        // The shard of a cell depends on its key only.
        let moved = parse("[axes]\n\"replay.seed\" = [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]\n\"policy.overlap\" = [true, false]\n").unwrap().cells().unwrap();
        for c in &moved {
            let same = cells.iter().find(|x| x.key == c.key).unwrap();
            assert_eq!(c.shard_of(3), same.shard_of(3));
        }
    }
}
