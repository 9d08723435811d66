//! The named SQL statements of `queries/`, compiled into the binary and run by DuckDB with
//! bound parameters.
//!
//! These are the program's own statements, run through a [`Reader`] whose methods return typed
//! rows (the TUI reads the store only this way and never opens DuckDB itself); the queries users
//! run by name are in [`crate::named_queries`].

use duckdb::{Row, ToSql};

use crate::store::{Catalog, Result, SourceSummary, Store};

/// One of the program's own statements (a file of `queries/`; the documented analyses users run
/// by name are [`crate::named_queries::NamedQuery`]).
#[derive(Debug, Clone, Copy)]
pub struct Statement {
    /// Name (the file name without `.sql`).
    pub name: &'static str,
    /// Number of `?` parameters it takes.
    pub params: usize,
    /// The SQL text.
    pub sql: &'static str,
}

/// Defines the program's own statements: `NAME = "file" / params`.
macro_rules! statements {
    ($($(#[$doc:meta])* $id:ident = $file:literal / $params:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $id: Statement = Statement {
                name: $file,
                params: $params,
                sql: include_str!(concat!("../queries/", $file, ".sql")),
            };
        )*
        /// Every statement the program runs through a [`Reader`].
        pub const STATEMENTS: &[Statement] = &[$($id),*];
    };
}

statements! {
    /// Every source with its counts and observation span.
    SOURCE_ROWS = "source_rows" / 0;
    /// Every replay run, newest first.
    RUNS = "runs" / 0;
    /// The scenario configuration of a run.
    RUN_CONFIG = "run_config" / 1;
    /// Every up-session of a source as a clock interval.
    SESSION_SPANS = "session_spans" / 1;
    /// Requests, completions and completion-time quantiles per policy of a run.
    COMPLETION_QUANTILES = "completion_quantiles" / 1;
    /// The number of stored requests of a policy of a run.
    REQUEST_COUNT = "request_count" / 3;
    /// The most eventful stored requests of a policy of a run.
    EVENTFUL_REQUESTS = "eventful_requests" / 4;
    /// One stored request.
    REPLAY_REQUEST = "replay_request" / 6;
    /// The time base, kind and observation span of one source.
    SOURCE_META = "source_meta" / 1;
    /// Every node of one source with its group under one attribute.
    NODE_GROUPS = "node_groups" / 2;
    /// Every up-session of one source.
    SOURCE_SESSIONS = "source_sessions" / 1;
    /// Every node of one source with its attributes and observation span.
    NODE_ATTRIBUTES = "node_attributes" / 1;
    /// Every request of one workload source.
    WORKLOAD_REQUESTS = "workload_requests" / 1;
    /// The most recent replay run.
    LATEST_RUN = "latest_run" / 0;
    /// The comparison rows of one run.
    RUN_SUMMARY = "run_summary" / 1;
    /// The cells of one sweep.
    SWEEP_CELLS = "sweep_cells" / 1;
    /// Every stored sweep, oldest first.
    SWEEP_LIST = "sweep_list" / 0;
    /// The most recent sweep.
    LATEST_SWEEP = "latest_sweep" / 0;
}

/// Levels of the completion-time quantiles of [`COMPLETION_QUANTILES`]: `0, 1/50, ..., 1`.
pub const COMPLETION_QUANTILE_STEPS: usize = 50;

/// One row of the `sources` table.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRow {
    /// Source name.
    pub source: String,
    /// Adapter that parsed it.
    pub adapter: String,
    /// Its counts and observation span (`notes` empty: they are not in the `sources` table);
    /// reachable through `Deref`.
    pub summary: SourceSummary,
}

impl std::ops::Deref for SourceRow {
    type Target = SourceSummary;
    fn deref(&self) -> &SourceSummary {
        &self.summary
    }
}

impl SourceRow {
    /// True for a request workload (no nodes).
    pub fn is_workload(&self) -> bool {
        self.nodes == 0 && self.requests > 0
    }

    /// Share of censored sessions.
    pub fn censored_share(&self) -> f64 {
        self.censored as f64 / self.sessions.max(1) as f64
    }

    /// Share of left-truncated sessions.
    pub fn truncated_share(&self) -> f64 {
        self.left_truncated as f64 / self.sessions.max(1) as f64
    }

    /// Length of the observation, seconds.
    pub fn span_s(&self) -> f64 {
        (self.observation_end - self.observation_start).max(0.0)
    }
}

/// One stored replay run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// Run id.
    pub run_id: String,
    /// Availability source of the nodes.
    pub nodes_source: String,
    /// Workload source.
    pub workload_source: String,
    /// Windows replayed.
    pub windows: i64,
    /// Seeds (JSON text as stored).
    pub seeds: String,
    /// Priors cutoff (trace clock, seconds).
    pub cutoff_s: f64,
}

/// One up-session of a node as a clock interval.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSpan {
    /// Node key.
    pub node_id: String,
    /// First observed instant (source clock, seconds).
    pub start: f64,
    /// End (source clock, seconds).
    pub end: f64,
    /// Ended by a failure (false: censored).
    pub event: bool,
}

/// Requests of one policy and parameter point of a run, with completion-time quantiles.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionQuantiles {
    /// Stored policy name.
    pub policy: String,
    /// Stored parameter point.
    pub param: String,
    /// Requests over all runs.
    pub requests: u64,
    /// Completed requests over all runs.
    pub completed: u64,
    /// Completion-time quantiles at the levels `i / COMPLETION_QUANTILE_STEPS` (empty when
    /// nothing completed).
    pub quantiles: Vec<f64>,
}

/// Identifies a request of a policy's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestKey {
    /// Window index.
    pub window: i64,
    /// Seed.
    pub seed: u64,
    /// Index of the request in its run.
    pub request: u64,
}

/// One stored request outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// Window index.
    pub window: i64,
    /// Seed.
    pub seed: u64,
    /// Index of the request in its run.
    pub request: u64,
    /// Workload id.
    pub request_id: u64,
    /// Arrival, seconds after the window start.
    pub arrival_s: f64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// First node.
    pub first_node: Option<String>,
    /// Final node.
    pub final_node: Option<String>,
    /// Stints.
    pub nodes_visited: u32,
    /// Time to first token, seconds.
    pub ttft_s: Option<f64>,
    /// Completion time, seconds.
    pub completion_s: Option<f64>,
    /// Unplanned interruptions.
    pub interruptions: u32,
    /// Planned migrations.
    pub migrations: u32,
    /// SLO met.
    pub slo_met: bool,
    /// Why it was dropped, if it was.
    pub dropped: Option<String>,
}

impl RequestRow {
    /// The key of this request in its run grid.
    pub fn key(&self) -> RequestKey {
        RequestKey {
            window: self.window,
            seed: self.seed,
            request: self.request,
        }
    }

    /// One row selected by [`EVENTFUL_REQUESTS`] or [`REPLAY_REQUEST`].
    fn from_row(r: &Row<'_>) -> duckdb::Result<RequestRow> {
        Ok(RequestRow {
            window: r.get(0)?,
            seed: r.get(1)?,
            request: r.get(2)?,
            request_id: r.get(3)?,
            arrival_s: r.get(4)?,
            prompt_tokens: r.get(5)?,
            output_tokens: r.get(6)?,
            first_node: r.get(7)?,
            final_node: r.get(8)?,
            nodes_visited: r.get(9)?,
            ttft_s: r.get(10)?,
            completion_s: r.get(11)?,
            interruptions: r.get(12)?,
            migrations: r.get(13)?,
            slo_met: r.get(14)?,
            dropped: r.get(15)?,
        })
    }
}

/// Runs the program's named statements on one store (one in-memory catalog for all of them)
/// and returns typed rows.
pub struct Reader {
    cat: Catalog,
}

impl Reader {
    /// A reader over the committed files of `store`.
    pub fn open(store: &Store) -> Result<Reader> {
        Ok(Reader {
            cat: store.query()?,
        })
    }

    /// Runs `q` with `params` bound and maps every row with `f`.
    fn rows<T>(
        &self,
        q: &Statement,
        params: &[&dyn ToSql],
        f: impl FnMut(&Row<'_>) -> duckdb::Result<T>,
    ) -> Result<Vec<T>> {
        debug_assert_eq!(q.params, params.len(), "parameters of query {}", q.name);
        let mut stmt = self.cat.connection().prepare(q.sql)?;
        let rows = stmt.query_map(params, f)?;
        Ok(rows.collect::<duckdb::Result<Vec<T>>>()?)
    }

    /// Runs `q`, which returns exactly one row, with `params` bound.
    fn one<T>(
        &self,
        q: &Statement,
        params: &[&dyn ToSql],
        f: impl FnOnce(&Row<'_>) -> duckdb::Result<T>,
    ) -> Result<T> {
        debug_assert_eq!(q.params, params.len(), "parameters of query {}", q.name);
        Ok(self.cat.connection().query_row(q.sql, params, f)?)
    }

    /// Every source, by name.
    pub fn sources(&self) -> Result<Vec<SourceRow>> {
        self.rows(&SOURCE_ROWS, &[], |r| {
            Ok(SourceRow {
                source: r.get(0)?,
                adapter: r.get(1)?,
                summary: SourceSummary {
                    kind: r.get(2)?,
                    time_base: r.get(3)?,
                    nodes: r.get(4)?,
                    sessions: r.get(5)?,
                    events: r.get(6)?,
                    censored: r.get(7)?,
                    left_truncated: r.get(8)?,
                    requests: r.get(9)?,
                    rejects: r.get(10)?,
                    observation_start: r.get(11)?,
                    observation_end: r.get(12)?,
                    notes: Vec::new(),
                },
            })
        })
    }

    /// Every replay run, newest first.
    pub fn runs(&self) -> Result<Vec<RunRow>> {
        self.rows(&RUNS, &[], |r| {
            Ok(RunRow {
                run_id: r.get(0)?,
                nodes_source: r.get(1)?,
                workload_source: r.get(2)?,
                windows: r.get(3)?,
                seeds: r.get(4)?,
                cutoff_s: r.get(5)?,
            })
        })
    }

    /// The scenario configuration (TOML) of run `run_id`.
    pub fn run_config(&self, run_id: &str) -> Result<String> {
        self.one(&RUN_CONFIG, &[&run_id], |r| r.get(0))
    }

    /// Every up-session of `source` (left-truncated ones included), in no particular order.
    pub fn session_spans(&self, source: &str) -> Result<Vec<SessionSpan>> {
        self.rows(&SESSION_SPANS, &[&source], |r| {
            Ok(SessionSpan {
                node_id: r.get(0)?,
                start: r.get(1)?,
                end: r.get(2)?,
                event: r.get::<_, i8>(3)? != 0,
            })
        })
    }

    /// Requests, completions and completion-time quantiles of every policy and parameter point
    /// of run `run_id`.
    pub fn completion_quantiles(&self, run_id: &str) -> Result<Vec<CompletionQuantiles>> {
        let rows = self.rows(&COMPLETION_QUANTILES, &[&run_id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?.max(0) as u64,
                r.get::<_, i64>(3)?.max(0) as u64,
                r.get::<_, Option<f64>>(5)?,
            ))
        })?;
        let mut out: Vec<CompletionQuantiles> = Vec::new();
        for (policy, param, requests, completed, q) in rows {
            let same = out
                .last()
                .is_some_and(|g| g.policy == policy && g.param == param);
            if !same {
                out.push(CompletionQuantiles {
                    policy,
                    param,
                    requests,
                    completed,
                    quantiles: Vec::new(),
                });
            }
            if let (Some(q), Some(g)) = (q, out.last_mut()) {
                g.quantiles.push(q);
            }
        }
        Ok(out)
    }

    /// The number of stored requests of `policy` at parameter point `param` in run `run_id`.
    pub fn request_count(&self, run_id: &str, policy: &str, param: &str) -> Result<u64> {
        let n: i64 = self.one(&REQUEST_COUNT, &[&run_id, &policy, &param], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    /// At most `limit` stored requests of `policy` at `param` in run `run_id`, the most
    /// eventful first (interruptions plus migrations, then the slowest, unfinished first).
    pub fn eventful_requests(
        &self,
        run_id: &str,
        policy: &str,
        param: &str,
        limit: usize,
    ) -> Result<Vec<RequestRow>> {
        let limit = limit as i64;
        self.rows(
            &EVENTFUL_REQUESTS,
            &[&run_id, &policy, &param, &limit],
            RequestRow::from_row,
        )
    }

    /// The stored request `key` of `policy` at `param` in run `run_id`.
    pub fn request(
        &self,
        run_id: &str,
        policy: &str,
        param: &str,
        key: RequestKey,
    ) -> Result<RequestRow> {
        self.one(
            &REPLAY_REQUEST,
            &[
                &run_id,
                &policy,
                &param,
                &key.window,
                &key.seed,
                &key.request,
            ],
            RequestRow::from_row,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `?` placeholders outside `--` comments.
    fn placeholders(sql: &str) -> usize {
        sql.lines()
            .map(|l| l.split("--").next().unwrap_or(""))
            .map(|l| l.matches('?').count())
            .sum()
    }

    #[test]
    fn every_statement_declares_its_parameters() {
        for q in STATEMENTS {
            assert_eq!(placeholders(q.sql), q.params, "query {}", q.name);
        }
    }
}
