//! Reading one source's sessions out of the store into the survival module's input.

use crate::store::{Store, StoreError};
use crate::survival::validate::SurvivalSession;

/// A node attribute to split a source by (`fit --by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ByColumn {
    /// Zone or region.
    Zone,
    /// Instance or machine type.
    InstanceType,
    /// Node group (campaign, sub-trace, system).
    NodeGroup,
}

impl ByColumn {
    fn sql(self) -> &'static str {
        match self {
            ByColumn::Zone => "zone",
            ByColumn::InstanceType => "instance_type",
            ByColumn::NodeGroup => "node_group",
        }
    }
}

/// The sessions of one source, with node indices.
#[derive(Debug, Clone, Default)]
pub struct SourceSessions {
    /// Source name.
    pub source: String,
    /// `utc` or `relative`.
    pub time_base: String,
    /// `kind` of the source.
    pub kind: String,
    /// Node key of each node index (every node of the source, sorted).
    pub node_ids: Vec<String>,
    /// Group of each node index (`--by` value; `all` without `--by`, `(none)` when missing).
    pub node_groups: Vec<String>,
    /// Observation window (from, to) of each node index (source clock, seconds).
    pub node_observed: Vec<(f64, f64)>,
    /// Observation span of the source (start, end; source clock, seconds).
    pub observation: (f64, f64),
    /// The sessions used (node index = position in `node_ids`).
    pub sessions: Vec<SurvivalSession>,
    /// The end cause of each session (parallel to `sessions`), e.g. `preempted`,
    /// `lifetime-cap`, `observation-end`.
    pub causes: Vec<String>,
    /// The observation tick of each session (parallel to `sessions`; 0 when times are exact).
    pub resolution_s: Vec<f64>,
    /// Whether each session was already up when observation began (parallel to `sessions`).
    pub left_truncated: Vec<bool>,
    /// Left-truncated sessions of unknown age that were left out.
    pub excluded_truncated: usize,
}

impl SourceSessions {
    /// The same source with only the sessions `keep` accepts (their causes and ticks with
    /// them).
    pub fn subset(&self, keep: impl Fn(&SurvivalSession) -> bool) -> SourceSessions {
        let rows: Vec<usize> = (0..self.sessions.len())
            .filter(|&i| keep(&self.sessions[i]))
            .collect();
        self.rows(&rows)
    }

    /// The same source without the left-truncated sessions of unknown age (no entry age:
    /// they cannot enter an estimator), counted in `excluded_truncated`: what
    /// [`load_sessions`] returns without `include_truncated`.
    pub fn known_ages(&self) -> SourceSessions {
        let unknown = |i: usize| {
            self.left_truncated.get(i).copied().unwrap_or(false) && self.sessions[i].entry == 0.0
        };
        let rows: Vec<usize> = (0..self.sessions.len()).filter(|&i| !unknown(i)).collect();
        let mut out = self.rows(&rows);
        out.excluded_truncated = self.excluded_truncated + self.sessions.len() - rows.len();
        out
    }

    /// The same source with only the sessions at `rows` (with their parallel columns).
    fn rows(&self, rows: &[usize]) -> SourceSessions {
        fn pick<T: Clone>(v: &[T], rows: &[usize]) -> Vec<T> {
            rows.iter().filter_map(|&i| v.get(i).cloned()).collect()
        }
        SourceSessions {
            sessions: pick(&self.sessions, rows),
            causes: pick(&self.causes, rows),
            resolution_s: pick(&self.resolution_s, rows),
            left_truncated: pick(&self.left_truncated, rows),
            ..self.clone()
        }
    }

    /// The rows of `sessions` in `group` that lasted longer than an instant (what every
    /// estimator fits; see [`super::group_columns`]).
    pub fn group_rows(&self, group: &str) -> Vec<usize> {
        (0..self.sessions.len())
            .filter(|&i| {
                let s = &self.sessions[i];
                s.end > s.start
                    && self
                        .node_groups
                        .get(s.node as usize)
                        .is_some_and(|g| g == group)
            })
            .collect()
    }

    /// The distinct groups, sorted.
    pub fn groups(&self) -> Vec<String> {
        let mut g = self.node_groups.clone();
        g.sort();
        g.dedup();
        g
    }
}

/// Loads every session of `source`. Left-truncated sessions whose age at their first
/// observation is unknown (`left_truncated` with `entry_s = 0`) only give a lower bound on a
/// lifetime; they are left out unless `include_truncated`.
pub fn load_sessions(
    store: &Store,
    source: &str,
    by: Option<ByColumn>,
    include_truncated: bool,
) -> Result<SourceSessions, StoreError> {
    store.manifest(source)?;
    let cat = store.query()?;
    let conn = cat.connection();
    let (time_base, kind, obs_start, obs_end): (String, String, f64, f64) =
        conn.query_row(crate::queries::SOURCE_META.sql, [source], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    let group_column = by.map_or("", |b| b.sql());
    let mut stmt = conn.prepare(crate::queries::NODE_GROUPS.sql)?;
    let mut out = SourceSessions {
        source: source.to_string(),
        time_base,
        kind,
        observation: (obs_start, obs_end),
        ..SourceSessions::default()
    };
    let rows = stmt.query_map([group_column, source], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, f64>(2)?,
            r.get::<_, f64>(3)?,
        ))
    })?;
    for row in rows {
        let (id, g, from, to) = row?;
        out.node_ids.push(id);
        out.node_groups.push(g);
        out.node_observed.push((from, to));
    }
    let index: std::collections::HashMap<&str, u32> = out
        .node_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i as u32))
        .collect();
    let mut stmt = conn.prepare(crate::queries::SOURCE_SESSIONS.sql)?;
    let rows = stmt.query_map([source], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, f64>(1)?,
            r.get::<_, f64>(2)?,
            r.get::<_, i8>(3)?,
            r.get::<_, f64>(4)?,
            r.get::<_, bool>(5)?,
            r.get::<_, Option<String>>(6)?,
            r.get::<_, f64>(7)?,
        ))
    })?;
    let mut sessions = Vec::new();
    for row in rows {
        let (id, start, end, event, entry, lt, cause, resolution) = row?;
        // Sessions of nodes missing from `nodes` cannot happen in a valid store; skip them.
        let Some(&node) = index.get(id.as_str()) else {
            continue;
        };
        sessions.push(SurvivalSession::new(node, start, end, event != 0).with_entry(entry));
        out.causes.push(cause.unwrap_or_default());
        out.resolution_s.push(resolution);
        out.left_truncated.push(lt);
    }
    out.sessions = sessions;
    Ok(if include_truncated {
        out
    } else {
        out.known_ages()
    })
}
