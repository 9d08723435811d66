//! Runs [`LoadJob`]s against one store, synchronously (the tests call [`Loader::run`] directly;
//! [`super::worker::Worker`] calls it on a background thread).
//!
//! The loader asks the layers below for everything: typed store rows from
//! [`crate::queries::Reader`], per-node statistics from [`crate::fit::fit_nodes`], stored run
//! summaries from [`crate::scenario`], request explanations from
//! [`crate::scenario::explain`], trigger tables from [`crate::policy::analysis`]. What it adds
//! is the caching (fitted sources and rebuilt scenarios are reused by later jobs) and the
//! view-only parts: availability strips, completion-time CDFs, shared node-id prefixes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, Context};

use super::data::{
    shared_prefix, CauseShare, CellOrigin, LoadJob, Loaded, Metric, NodeData, NodeShrinkage,
    Overview, PolicyPoint, PolicyRow, ReplayData, RequestExplain, RequestKey, RequestList, RunRow,
    SourceData, StoreState, SweepCell, SweepData, TriggerData, TriggerKey, VerdictView, POOLED,
    REQUEST_LIMIT, STRIP_BINS, STRIP_FULL, STRIP_UNOBSERVED,
};
use crate::fit::{self, NodeFitOptions};
use crate::policy::analysis::{trigger_rows, TriggerSettings, DEFAULT_UPTIMES_S};
use crate::queries::{Reader, COMPLETION_QUANTILE_STEPS};
use crate::replay::PolicySummary;
use crate::scenario::{self, explain, Scenario};
use crate::store::{Store, StoreError};
use crate::survival::curve::ConditionalSurvival;
use crate::survival::priors::PriorsEstimator;
use crate::sweep;

/// Executes jobs against one store, caching what later jobs reuse (fitted sources, scenarios).
pub struct Loader {
    root: PathBuf,
    sources: HashMap<String, Arc<SourceData>>,
    scenarios: HashMap<String, Arc<Scenario>>,
}

impl Loader {
    /// A loader of the store at `root` (nothing is opened yet).
    pub fn new(root: &Path) -> Loader {
        Loader {
            root: root.to_path_buf(),
            sources: HashMap::new(),
            scenarios: HashMap::new(),
        }
    }

    fn store(&self) -> anyhow::Result<Store> {
        Ok(Store::open(&self.root)?)
    }

    /// Runs one job; errors are rendered as one line with their causes.
    pub fn run(&mut self, job: &LoadJob) -> Result<Loaded, String> {
        if *job == LoadJob::Overview && super::fault::fault("tui-loader-panic") {
            panic!("injected loader fault");
        }
        let r = match job {
            LoadJob::Overview => self.overview().map(Loaded::Overview),
            LoadJob::Verdict(s) => self.verdict(s).map(Loaded::Verdict),
            LoadJob::Source(s) => self.source(s).map(Loaded::Source),
            LoadJob::Replay(run) => self
                .replay(run.as_deref())
                .map(|r| Loaded::Replay(r.map(Arc::new))),
            LoadJob::Requests { run, policy } => self
                .requests(run, policy)
                .map(|r| Loaded::Requests(Arc::new(r))),
            LoadJob::Explain { run, policy, key } => self
                .explain(run, policy, *key)
                .map(|r| Loaded::Explain(Arc::new(r))),
            LoadJob::Trigger(k) => self.trigger(k).map(|r| Loaded::Trigger(Arc::new(r))),
            LoadJob::Sweep(id) => self
                .sweep(id.as_deref())
                .map(|r| Loaded::Sweep(r.map(Arc::new))),
            LoadJob::Reload(_) => {
                self.sources.clear();
                self.scenarios.clear();
                Ok(Loaded::Reloaded)
            }
        };
        r.map_err(|e| {
            let mut msg = e.to_string();
            for cause in e.chain().skip(1) {
                msg.push_str(&format!(": {cause}"));
            }
            msg
        })
    }

    fn overview(&self) -> anyhow::Result<Overview> {
        let store_label = self.root.display().to_string();
        let store = match Store::open(&self.root) {
            Ok(s) => s,
            Err(StoreError::Missing(_)) => {
                return Ok(Overview {
                    state: StoreState::Missing,
                    store: store_label,
                    sources: Vec::new(),
                    runs: Vec::new(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        let reader = Reader::open(&store)?;
        let sources = reader.sources()?;
        let runs = reader.runs()?;
        Ok(Overview {
            state: if sources.is_empty() {
                StoreState::Empty
            } else {
                StoreState::Ready
            },
            store: store_label,
            sources,
            runs,
        })
    }

    fn verdict(&self, source: &str) -> anyhow::Result<VerdictView> {
        if let Some(d) = self.sources.get(source) {
            if let Some(v) = &d.verdict {
                return Ok(v.clone());
            }
        }
        let store = self.store()?;
        let data = fit::load_sessions(&store, source, None, false)?;
        if data.sessions.is_empty() {
            return Ok(no_sessions_verdict());
        }
        let fits = fit::fit_groups(&data, None)?;
        fits.first()
            .map(VerdictView::from_fit)
            .context("the fit returned no group")
    }

    fn source(&mut self, source: &str) -> anyhow::Result<Arc<SourceData>> {
        if let Some(d) = self.sources.get(source) {
            return Ok(d.clone());
        }
        let store = self.store()?;
        let d = Arc::new(load_source(&store, source)?);
        self.sources.insert(source.to_string(), d.clone());
        Ok(d)
    }

    fn replay(&self, run: Option<&str>) -> anyhow::Result<Option<ReplayData>> {
        let store = self.store()?;
        let reader = Reader::open(&store)?;
        let runs = reader.runs()?;
        let info = match run {
            Some(id) => runs
                .iter()
                .find(|r| r.run_id == id)
                .cloned()
                .with_context(|| {
                    let ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
                    format!(
                        "no run {id:?} in the store (runs: {})",
                        if ids.is_empty() {
                            "none".to_string()
                        } else {
                            ids.join(", ")
                        }
                    )
                })?,
            None => match runs.first() {
                Some(r) => r.clone(),
                None => return Ok(None),
            },
        };
        let summary = scenario::load_summary(&store, &info.run_id)?;
        let mut cdfs: HashMap<(String, String), (u64, u64, Vec<f64>)> = HashMap::new();
        for q in reader.completion_quantiles(&info.run_id)? {
            cdfs.insert((q.policy, q.param), (q.requests, q.completed, q.quantiles));
        }
        let rows = summary
            .iter()
            .map(|s| {
                let (requests, completed, q) = cdfs
                    .get(&(s.label.kind.name().to_string(), param_of(s)))
                    .cloned()
                    .unwrap_or_default();
                let share = completed as f64 / requests.max(1) as f64;
                let cdf = q
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| (x, share * i as f64 / COMPLETION_QUANTILE_STEPS as f64))
                    .collect();
                policy_row(s, requests, completed, cdf)
            })
            .collect();
        Ok(Some(ReplayData {
            run: info,
            runs: runs.into_iter().map(|r| r.run_id).collect(),
            rows,
            cell: None,
        }))
    }

    fn sweep(&self, id: Option<&str>) -> anyhow::Result<Option<SweepData>> {
        let store = self.store()?;
        let mut sweeps: Vec<String> = sweep::list_sweeps(&store)?
            .into_iter()
            .map(|r| r.sweep_id)
            .collect();
        sweeps.reverse();
        let id = match id {
            Some(id) => id.to_string(),
            None => match sweeps.first() {
                Some(s) => s.clone(),
                None => return Ok(None),
            },
        };
        let cells = sweep::load_sweep(&store, &id)?
            .into_iter()
            .map(|result| {
                let cfg: Option<scenario::ScenarioConfig> = toml::from_str(&result.config).ok();
                let run = RunRow {
                    run_id: result.key.clone(),
                    nodes_source: cfg.as_ref().map_or_else(String::new, |c| c.nodes_label()),
                    workload_source: cfg
                        .as_ref()
                        .map_or_else(String::new, |c| c.workload.source.clone()),
                    windows: cfg.as_ref().map_or(0, |c| c.replay.windows as i64),
                    seeds: cfg
                        .as_ref()
                        .map_or_else(String::new, |c| c.replay.seeds.to_string()),
                    cutoff_s: f64::NAN,
                };
                let rows = result
                    .rows
                    .iter()
                    .map(|s| policy_row(s, s.requests, s.requests, Vec::new()))
                    .collect();
                let replay = Arc::new(ReplayData {
                    run,
                    runs: Vec::new(),
                    rows,
                    cell: Some(CellOrigin {
                        sweep_id: id.clone(),
                        key: result.key.clone(),
                    }),
                });
                SweepCell { result, replay }
            })
            .collect();
        Ok(Some(SweepData::new(id, sweeps, cells)))
    }

    fn requests(&self, run: &str, point: &PolicyPoint) -> anyhow::Result<RequestList> {
        let (policy, param) = (&point.policy, &point.param);
        let reader = Reader::open(&self.store()?)?;
        let total = reader.request_count(run, policy, param)?;
        let rows = reader.eventful_requests(run, policy, param, REQUEST_LIMIT)?;
        Ok(RequestList { rows, total })
    }

    fn scenario(&mut self, store: &Store, run: &str) -> anyhow::Result<Arc<Scenario>> {
        if let Some(s) = self.scenarios.get(run) {
            return Ok(s.clone());
        }
        let sc = Arc::new(explain::rebuild(store, run)?);
        self.scenarios.insert(run.to_string(), sc.clone());
        Ok(sc)
    }

    fn explain(
        &mut self,
        run: &str,
        point: &PolicyPoint,
        key: RequestKey,
    ) -> anyhow::Result<RequestExplain> {
        let (policy, param) = (point.policy.clone(), point.param.clone());
        let store = self.store()?;
        let stored = Reader::open(&store)?
            .request(run, &policy, &param, key)
            .map_err(|e| {
                anyhow!(
                    "request #{} of {policy} in window {} of {run}: {e}",
                    key.request,
                    key.window
                )
            })?;
        let sc = self.scenario(&store, run)?;
        explain::explain_request(&sc, run, &policy, &param, &stored)
    }

    fn trigger(&mut self, k: &TriggerKey) -> anyhow::Result<TriggerData> {
        let data = self.source(&k.source)?;
        let priors = data.priors.as_ref().with_context(|| {
            format!(
                "no survival curves for {}: {}",
                k.source,
                data.priors_error.as_deref().unwrap_or("the fit failed")
            )
        })?;
        let curve = |id: &str| -> Box<dyn ConditionalSurvival> {
            if id == POOLED {
                Box::new(priors.pooled_curve())
            } else {
                Box::new(priors.node_curve(id))
            }
        };
        // `hazardserve trigger`'s hop, at the context chosen on the screen.
        let settings = TriggerSettings {
            context: k.context.max(1),
            ..TriggerSettings::DEFAULT
        };
        let remaining = settings.remaining;
        let sc = settings.scenario(curve(&k.from), curve(&k.to));
        let grid: Vec<f64> = (0..=120)
            .map(|i| 10f64.powf(i as f64 * 5.4 / 120.0))
            .collect();
        let curve_rows = trigger_rows(&sc, &grid, &[sc.params.hysteresis_s])
            .into_iter()
            .map(|r| (r.uptime_s, r.risk_gain, r.dt))
            .collect();
        let rows = trigger_rows(&sc, &DEFAULT_UPTIMES_S, &[sc.params.hysteresis_s]);
        Ok(TriggerData {
            curve: curve_rows,
            rows,
            h: sc.params.hysteresis_s,
            dest_age_s: sc.dest_age_s,
            remaining,
        })
    }
}

/// The stored parameter point of a summary row (`default` when it has none).
fn param_of(s: &PolicySummary) -> String {
    s.label
        .param
        .clone()
        .unwrap_or_else(|| "default".to_string())
}

/// A comparison row as the Replay screen shows it, from the row `compare --format json` prints.
fn policy_row(s: &PolicySummary, requests: u64, completed: u64, cdf: Vec<(f64, f64)>) -> PolicyRow {
    let v = &s.to_json();
    let metric = |k: &str| Metric {
        value: v.get(k).and_then(|x| x.as_f64()),
        ci: v
            .get(format!("{k}_ci"))
            .and_then(|c| Some((c.get(0)?.as_f64()?, c.get(1)?.as_f64()?))),
    };
    PolicyRow {
        name: s.label.to_string(),
        policy: s.label.kind.name().to_string(),
        param: param_of(s),
        mean: metric("mean_completion_s"),
        p50: metric("p50_completion_s"),
        p99: metric("p99_completion_s"),
        ttft_p50: metric("ttft_p50_s"),
        slo: metric("slo_attainment"),
        unfinished: metric("unfinished"),
        goodput: metric("slo_goodput"),
        interruptions: metric("unplanned_interruptions"),
        migrations: metric("planned_migrations"),
        gap_closed: metric("gap_closed"),
        t_ratio: s.forecast.as_ref().and_then(|f| f.t_ratio_median),
        brier: s.forecast.as_ref().and_then(|f| f.interruption_brier),
        hit_rate: metric("prefix_hit_rate"),
        destroyed: metric("cache_destroyed_tokens"),
        dollars: metric("dollars"),
        goodput_per_dollar: metric("goodput_per_dollar"),
        dollars_by_pool: s
            .dollars_by_pool
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect(),
        requests,
        completed,
        cdf,
    }
}

fn no_sessions_verdict() -> VerdictView {
    VerdictView {
        verdict: "n/a (no sessions)".into(),
        model: None,
        shape: None,
        shape_ci: None,
        scale_s: None,
        p_value: None,
        median_s: None,
        sessions: 0,
    }
}

/// Per node: the up-time in each strip bin, and the strip bins where censored sessions end.
type NodeStrips = (Vec<Vec<f64>>, Vec<Vec<u16>>);

/// Availability strips of every node: per node, the up-time of each of [`STRIP_BINS`] bins
/// over the source's span (in bins), and the bins where a censored session ends. Every session
/// counts, left-truncated ones included.
fn strips(
    reader: &Reader,
    data: &fit::SourceSessions,
    bin_of: impl Fn(f64) -> f64,
) -> anyhow::Result<NodeStrips> {
    let n = data.node_ids.len();
    let index: HashMap<&str, usize> = data
        .node_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut up = vec![vec![0f64; STRIP_BINS]; n];
    let mut censor_bins: Vec<Vec<u16>> = vec![Vec::new(); n];
    for s in reader.session_spans(&data.source)? {
        let Some(&i) = index.get(s.node_id.as_str()) else {
            continue;
        };
        let (a, b) = (bin_of(s.start), bin_of(s.end));
        let mut k = a.floor() as usize;
        while (k as f64) < b && k < STRIP_BINS {
            let lo = a.max(k as f64);
            let hi = b.min(k as f64 + 1.0);
            up[i][k] += (hi - lo).max(0.0);
            k += 1;
        }
        if !s.event {
            let c = (b.ceil() as usize).saturating_sub(1).min(STRIP_BINS - 1);
            censor_bins[i].push(c as u16);
        }
    }
    for cb in &mut censor_bins {
        cb.sort_unstable();
        cb.dedup();
    }
    Ok((up, censor_bins))
}

/// The pooled smoothed hazard of a source, when it has at least the minimum of events.
fn pooled_hazard(data: &fit::SourceSessions) -> Option<crate::survival::hazard::SmoothedHazard> {
    use crate::survival::hazard::{smoothed_hazard, HazardOptions};
    let (mut exit, mut event, mut entry) = (Vec::new(), Vec::new(), Vec::new());
    for g in data.groups() {
        let (x, e, n) = fit::group_columns(data, &g);
        exit.extend(x);
        event.extend(e);
        entry.extend(n);
    }
    if event.iter().filter(|&&e| e).count() < fit::DEFAULT_MIN_EVENTS {
        return None;
    }
    let truncated = entry.iter().any(|&e| e > 0.0);
    smoothed_hazard(
        &exit,
        &event,
        truncated.then_some(entry.as_slice()),
        &HazardOptions::default(),
    )
    .ok()
}

/// The pool of each node of `source` in the latest replay run, when that run's scenario has
/// `[[pools]]` reading the source (empty otherwise, or when anything cannot be read: the
/// column is then left out).
fn latest_pools(store: &Store, source: &str) -> std::collections::HashMap<String, String> {
    let read = || -> Option<std::collections::HashMap<String, String>> {
        let id = scenario::latest_run(store).ok()??;
        let text = Reader::open(store).ok()?.run_config(&id).ok()?;
        let cfg: scenario::ScenarioConfig = toml::from_str(&text).ok()?;
        scenario::pool_membership(store, &cfg, source).ok()
    };
    read().unwrap_or_default()
}

/// Loads and fits one availability source.
fn load_source(store: &Store, source: &str) -> anyhow::Result<SourceData> {
    let data = fit::load_sessions(store, source, None, false)?;
    let (obs_start, obs_end) = data.observation;
    let span_len = (obs_end - obs_start).max(1e-9);
    let bin_of = |t: f64| -> f64 {
        ((t - obs_start) / span_len * STRIP_BINS as f64).clamp(0.0, STRIP_BINS as f64)
    };
    let (up, censor_bins) = strips(&Reader::open(store)?, &data, bin_of)?;
    let fits = fit::fit_nodes(&data, &NodeFitOptions::default())?;
    let shrinkage = match &fits.priors {
        Some(p) => NodeShrinkage {
            estimator: match p.estimator {
                PriorsEstimator::Beta => "beta",
                PriorsEstimator::Frailty => "frailty",
                PriorsEstimator::None => "none",
            }
            .to_string(),
            m: p.parameters.m,
            theta: p.parameters.theta,
        },
        None => NodeShrinkage {
            estimator: "none".into(),
            ..NodeShrinkage::default()
        },
    };
    let mut nodes = Vec::with_capacity(fits.nodes.len());
    for ((node, bins), (observed, cb)) in fits
        .nodes
        .into_iter()
        .zip(up)
        .zip(data.node_observed.iter().zip(censor_bins))
    {
        let (oa, ob) = (bin_of(observed.0), bin_of(observed.1));
        let strip: Vec<u8> = bins
            .iter()
            .enumerate()
            .map(|(k, &u)| {
                let (lo, hi) = (k as f64, k as f64 + 1.0);
                let covered = (hi.min(ob) - lo.max(oa)).max(0.0);
                if covered <= 0.0 {
                    STRIP_UNOBSERVED
                } else {
                    ((u / covered).clamp(0.0, 1.0) * STRIP_FULL as f64).round() as u8
                }
            })
            .collect();
        nodes.push(NodeData::new(node, strip, cb));
    }
    let pools = latest_pools(store, source);
    for n in &mut nodes {
        n.pool = pools.get(&n.id).cloned();
    }
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    let id_prefix = shared_prefix(&data.node_ids);
    let hazard = pooled_hazard(&data);
    let causes = cause_shares(&data);
    Ok(SourceData {
        source: source.to_string(),
        time_base: data.time_base.clone(),
        span: (obs_start, obs_end),
        nodes,
        pooled: fits.pooled,
        verdict: fits.pooled_fit.as_ref().map(VerdictView::from_fit),
        hazard,
        shrinkage,
        priors: fits.priors,
        priors_error: fits.priors_error,
        excluded_truncated: data.excluded_truncated,
        id_prefix,
        causes,
    })
}

/// The end causes of a source's pooled sessions (empty with fewer than two causes, or when the
/// fit fails: the screen then shows no cause line).
fn cause_shares(data: &fit::SourceSessions) -> Vec<CauseShare> {
    let Ok(gc) = fit::causes::group_causes(data, "all", &[]) else {
        return Vec::new();
    };
    let f = &gc.fit;
    if f.causes.len() < 2 {
        return Vec::new();
    }
    let total: u32 = f.n_event_any.iter().sum();
    let mut out: Vec<CauseShare> = f
        .causes
        .iter()
        .map(|k| CauseShare {
            cause: gc.label(k.cause).to_string(),
            share: f64::from(k.n_event.iter().sum::<u32>()) / f64::from(total.max(1)),
            incidence: k.cif.last().copied().unwrap_or(0.0),
        })
        .collect();
    out.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.cause.cmp(&b.cause)));
    out
}
