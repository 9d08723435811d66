//! Turning a [`ScenarioConfig`] and the store into the replay engine's inputs, in named steps:
//! [`select_nodes`] (the source's node timelines, filtered and sampled), [`load_requests`],
//! [`place_windows`], [`fit_node_priors`] (survival fitted only before the first window),
//! [`memoryless_rates`], the generating laws of a synthetic fleet (`policy.truth`) and
//! [`node_hardware`]; [`build`] runs them as a pipeline of stages ([`build_with`]), each a
//! function that takes what the earlier stages made and returns its own product.
//!
//! Size: over 800 lines because the steps and the [`BuildCache`] that lets a sweep's cells
//! share them are one concept, the scenario's construction; each step is a function a
//! reader can follow in order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::config::{
    CurveReading, HardwareOverrides, NodeAttribute, NodesConfig, PoolConfig, Resolved,
    ScenarioConfig, TailModel,
};
use super::error::ScenarioError;
use crate::fit::causes::CauseGroup;
use crate::fit::{load_sessions, parse_time, SourceSessions};
use crate::policy::iteration::{EngineKind, StepCoefficients};
use crate::policy::PolicyKind;
use crate::replay::{
    self, Cluster, Grid, Node, NodeSpec, ParamPoint, Prefix, ReplayConfig, Request, Window,
    Workload,
};
use crate::rng::Rng;
use crate::store::Store;
use crate::survival::curve::{ConditionalSurvival, LinearCurve, StepCurve, WeibullTail};
use crate::survival::priors::{fit_priors, Priors, PriorsError, PriorsMeta, PriorsOptions};
use crate::survival::shrinkage::ShrinkageOptions;
use crate::survival::SurvivalError;

/// Everything a replay needs, built from the store.
pub struct Scenario {
    /// The nodes with their timelines, hardware and fitted curves.
    pub cluster: Cluster,
    /// The requests.
    pub workload: Workload,
    /// Engine settings.
    pub config: ReplayConfig,
    /// Policies x windows x seeds (x overlap).
    pub grid: Grid,
    /// The priors' cutoff: the start of the first window (trace clock, seconds).
    pub cutoff_s: f64,
    /// Observation span of the selected nodes (seconds).
    pub span_s: (f64, f64),
    /// What the build had to assume (e.g. flat priors for a training part without events).
    pub notes: Vec<String>,
}

/// One row of `nodes`: attributes and observation window.
#[derive(Debug, Clone, Default)]
struct NodeRow {
    zone: Option<String>,
    instance_type: Option<String>,
    node_group: Option<String>,
    observed_from: f64,
    observed_to: f64,
}

impl NodeRow {
    fn attribute(&self, a: NodeAttribute) -> Option<&str> {
        match a {
            NodeAttribute::Zone => self.zone.as_deref(),
            NodeAttribute::InstanceType => self.instance_type.as_deref(),
            NodeAttribute::NodeGroup => self.node_group.as_deref(),
        }
    }
}

/// The nodes a scenario replays over: the source's sessions (every session, truncated ones
/// included: they are timelines here), and the selected node indices with their rows.
pub struct SelectedNodes {
    /// The source's sessions, node ids and clock.
    pub data: SourceSessions,
    /// Selected node indices into `data.node_ids`, ascending.
    pub selected: Vec<usize>,
    /// Observation span of the selected nodes (trace clock, seconds).
    pub span_s: (f64, f64),
    /// Nodes that matched the selection before sampling.
    pub available: usize,
    rows: HashMap<String, NodeRow>,
}

fn node_rows(store: &Store, source: &str) -> Result<HashMap<String, NodeRow>, ScenarioError> {
    let cat = store.query()?;
    let mut stmt = cat
        .connection()
        .prepare(crate::queries::NODE_ATTRIBUTES.sql)
        .map_err(crate::store::StoreError::from)?;
    let rows = stmt
        .query_map([source], |r| {
            Ok((
                r.get::<_, String>(0)?,
                NodeRow {
                    zone: r.get(1)?,
                    instance_type: r.get(2)?,
                    node_group: r.get(3)?,
                    observed_from: r.get(4)?,
                    observed_to: r.get(5)?,
                },
            ))
        })
        .map_err(crate::store::StoreError::from)?;
    let mut out = HashMap::new();
    for row in rows {
        let (id, r) = row.map_err(crate::store::StoreError::from)?;
        out.insert(id, r);
    }
    Ok(out)
}

/// Step 1: a pool's selection: every node of its source that was ever up, filtered by
/// attribute and sampled (seeded by `seed`) as the pool says.
fn select_nodes(
    store: &Store,
    pool: &PoolConfig,
    seed: u64,
) -> Result<SelectedNodes, ScenarioError> {
    let source = pool.source.as_deref().unwrap_or_default();
    let data = load_sessions(store, source, None, true)?;
    let rows = node_rows(store, source)?;
    let row = |i: usize| rows.get(&data.node_ids[i]).cloned().unwrap_or_default();
    let mut selected: Vec<usize> = (0..data.node_ids.len()).collect();
    if let (Some(attr), Some(value)) = (&pool.filter_attribute, &pool.filter_value) {
        let attr = NodeAttribute::parse(attr, "nodes.filter_attribute")?;
        selected.retain(|&i| {
            row(i)
                .attribute(attr)
                .is_some_and(|v| v.contains(value.as_str()))
        });
    }
    // Nodes that were never up cannot serve.
    let mut has_sessions = vec![false; data.node_ids.len()];
    for s in &data.sessions {
        has_sessions[s.node as usize] = true;
    }
    selected.retain(|&i| has_sessions[i]);
    let available = selected.len();
    if pool.sample > 0 && selected.len() > pool.sample {
        let mut rng = Rng::new(seed ^ 0x5A3D_1E5E);
        for i in 0..pool.sample {
            let j = i + rng.below((selected.len() - i) as u64) as usize;
            selected.swap(i, j);
        }
        selected.truncate(pool.sample);
        selected.sort_unstable();
    }
    if selected.is_empty() {
        return Err(ScenarioError::Empty(format!(
            "no node of source {source} matches the [nodes] selection (or none was ever up)"
        )));
    }
    let span_s = selected
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |acc, &i| {
            let r = row(i);
            (acc.0.min(r.observed_from), acc.1.max(r.observed_to))
        });
    Ok(SelectedNodes {
        data,
        selected,
        span_s,
        available,
        rows,
    })
}

/// The pool of every node of `source` that scenario `cfg` puts in a `[[pools]]` pool (the
/// same selection as [`build`]: filter, seeded sample), by node id; empty for a scenario
/// without `[[pools]]` or whose pools do not read `source`.
pub fn pool_membership(
    store: &Store,
    cfg: &ScenarioConfig,
    source: &str,
) -> Result<HashMap<String, String>, ScenarioError> {
    let mut out = HashMap::new();
    for pool in &cfg.pools {
        if pool.source.as_deref() != Some(source) {
            continue;
        }
        let nodes = select_nodes(store, pool, cfg.replay.seed)?;
        for &i in &nodes.selected {
            out.insert(nodes.data.node_ids[i].clone(), pool.label());
        }
    }
    Ok(out)
}

/// Seconds on the trace clock to engine microseconds.
fn us(t: f64) -> i64 {
    replay::input::secs_to_us(t)
}

/// Step 2: the workload's requests, in arrival order, with their prefix blocks when the
/// source has any.
fn load_requests(store: &Store, cfg: &ScenarioConfig) -> Result<Workload, ScenarioError> {
    let wsrc = &cfg.workload.source;
    store.manifest(wsrc)?;
    let cat = store.query()?;
    let mut stmt = cat
        .connection()
        .prepare(crate::queries::WORKLOAD_REQUESTS.sql)
        .map_err(crate::store::StoreError::from)?;
    let rows = stmt
        .query_map([wsrc.as_str()], |r| {
            Ok((
                (
                    r.get::<_, i64>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                ),
                r.get::<_, Option<i32>>(4)?,
                r.get::<_, Option<String>>(5)?,
                r.get::<_, Option<String>>(6)?,
            ))
        })
        .map_err(crate::store::StoreError::from)?;
    let mut requests = Vec::new();
    let mut prefixes = Vec::new();
    let mut conversation_ids = Vec::new();
    for row in rows {
        let ((id, t, p, o), block_tokens, blocks, conversation) =
            row.map_err(crate::store::StoreError::from)?;
        conversation_ids.push(conversation);
        requests.push(Request {
            id: id as u64,
            arrival_us: us(t),
            prompt_tokens: p.max(0) as u64,
            output_tokens: o.max(1) as u64,
        });
        let blocks = parse_blocks(blocks.as_deref()).ok_or_else(|| {
            ScenarioError::Empty(format!(
                "workload source {wsrc}: request {id} has unreadable prefix blocks"
            ))
        })?;
        prefixes.push(Prefix::new(block_tokens.unwrap_or(0).max(0) as u32, blocks));
    }
    if requests.is_empty() {
        return Err(ScenarioError::Empty(format!(
            "workload source {wsrc} has no requests (ingest one with --format azure-llm, mooncake, qwen-bailian or lengths-csv)"
        )));
    }
    let arrivals: Vec<i64> = requests.iter().map(|r| r.arrival_us).collect();
    let conversations =
        super::conversations::conversation_keys(&conversation_ids, &arrivals, &prefixes);
    let w = Workload::new(requests).with_conversations(conversations);
    Ok(if prefixes.iter().any(|p| !p.is_empty()) {
        w.with_prefixes(prefixes)
    } else {
        w
    })
}

/// Block ids written `1,2,3` (none: empty or NULL); `None` when one is not a non-negative
/// integer.
fn parse_blocks(text: Option<&str>) -> Option<Vec<u64>> {
    match text {
        None | Some("") => Some(Vec::new()),
        Some(t) => t.split(',').map(|x| x.trim().parse::<u64>().ok()).collect(),
    }
}

/// Step 3: where the windows fall on each source's clock. Windows are `window_length_s` long
/// (0: the workload's length divided by its rate scale, at least 60 s). On each source the
/// first window starts after `train_fraction` of that source's span (or at `window_start`,
/// one source only), so every source's training cut is its own; the windows then sit at the
/// same offsets after each source's first one, spaced evenly or at seeded random offsets up
/// to the end of the shortest source. Returns each source's first start (in `spans` order),
/// the offsets and the length.
fn place_windows(
    cfg: &ScenarioConfig,
    spans: &[(String, (f64, f64))],
    workload_len_s: f64,
) -> Result<(Vec<f64>, Vec<f64>, f64), ScenarioError> {
    let r = &cfg.replay;
    let length = if r.window_length_s > 0.0 {
        r.window_length_s
    } else {
        (workload_len_s / cfg.workload.rate_scale).max(60.0)
    };
    let mut firsts = Vec::with_capacity(spans.len());
    let mut range = f64::INFINITY;
    for (source, span_s) in spans {
        let first = match &r.window_start {
            Some(s) => parse_time(s)
                .map_err(|e| ScenarioError::invalid("replay.window_start", e.to_string()))?,
            None => span_s.0 + r.train_fraction * (span_s.1 - span_s.0),
        };
        let last = span_s.1 - length;
        if last < first {
            return Err(ScenarioError::Empty(format!(
                "the observation span of {source} ({:.0} s after the training part) is shorter than one window of {length:.0} s; use a shorter --window-length or a smaller train_fraction",
                span_s.1 - first
            )));
        }
        firsts.push(first);
        range = range.min(last - first);
    }
    let n = r.windows;
    // Windows are disjoint (paired comparisons need independent windows): `n` of them need
    // `(n - 1) length` of room between the first start and the last.
    let free = range - n.saturating_sub(1) as f64 * length;
    if free < 0.0 {
        return Err(ScenarioError::invalid(
            "replay.windows",
            format!(
                "{n} disjoint windows of {length:.0} s do not fit in the {:.0} s after the \
                 training part of the shortest source; use fewer windows, a shorter \
                 window_length_s or a smaller train_fraction",
                range + length
            ),
        ));
    }
    let offsets: Vec<f64> = if r.placement == "random" {
        // Seeded random gaps: sorted uniform points on the free room, each window after the
        // previous one's end.
        let mut rng = Rng::new(r.seed ^ 0x00D0_0DAD);
        let mut v: Vec<f64> = (0..n).map(|_| rng.uniform() * free).collect();
        v.sort_by(f64::total_cmp);
        v.iter()
            .enumerate()
            .map(|(k, u)| u + k as f64 * length)
            .collect()
    } else {
        (0..n)
            .map(|k| {
                if n == 1 {
                    0.0
                } else {
                    range * k as f64 / (n - 1) as f64
                }
            })
            .collect()
    };
    Ok((firsts, offsets, length))
}

/// Step 4: survival priors of every node of the source, fitted only on what was observed
/// before `cutoff` (no leakage). Left-truncated sessions of unknown age are timelines, not
/// lifetimes: the fit leaves them out (as `fit` and `priors export` do). A training part
/// without any event gives `None` (flat priors, S = 1) and a note, not an error.
fn fit_node_priors(
    announced: &[CauseGroup],
    data: &SourceSessions,
    cutoff: f64,
    notes: &mut Vec<String>,
) -> Result<Option<Priors>, ScenarioError> {
    let source = &data.source;
    let meta = PriorsMeta {
        source: source.clone(),
        cutoff_s: cutoff,
        time_base: data.time_base.clone(),
        node_ids: data.node_ids.clone(),
    };
    let fit_data = censor_announced(data.known_ages(), announced);
    let any_event = fit_data.sessions.iter().any(|s| s.event && s.end <= cutoff);
    if !any_event {
        notes.push(format!(
            "no session of {source} ended in an event before the first window: flat survival priors (S = 1) for every node"
        ));
        return Ok(None);
    }
    match fit_priors(
        &fit_data.sessions,
        &meta,
        &ShrinkageOptions::default(),
        &PriorsOptions::default(),
    ) {
        Ok(p) => Ok(Some(p)),
        Err(PriorsError::Survival(SurvivalError::NoEvents(_) | SurvivalError::Empty)) => {
            notes.push(format!(
                "no usable event of {source} before the first window: flat survival priors (S = 1)"
            ));
            Ok(None)
        }
        Err(cause) => Err(ScenarioError::Priors {
            name: source.clone(),
            cutoff: format!("{cutoff}"),
            cause,
        }),
    }
}

/// The sessions with every announced end (`nodes.announced_causes`) censored: the policies'
/// curves are then the survival of the unannounced causes, `exp(-sum of their cumulative
/// hazards)`, the cause-specific reading in which a planned end is "not a failure" (it is
/// priced as a planned hop instead, [`crate::policy::cost::announced_loss`]).
fn censor_announced(mut data: SourceSessions, announced: &[CauseGroup]) -> SourceSessions {
    if announced.is_empty() {
        return data;
    }
    for (s, c) in data.sessions.iter_mut().zip(&data.causes) {
        if s.event && NodesConfig::is_announced(announced, c) {
            s.event = false;
        }
    }
    data
}

/// Checks that each `nodes.announced_causes` pattern matches an end cause of the source, so
/// that a misspelt cause is an error rather than a silent no-op.
fn check_announced(data: &SourceSessions, announced: &[CauseGroup]) -> Result<(), ScenarioError> {
    for g in announced {
        if !data.causes.iter().any(|c| g.matches(c)) {
            let mut known: Vec<&str> = data
                .causes
                .iter()
                .map(String::as_str)
                .filter(|c| !c.is_empty())
                .collect();
            known.sort_unstable();
            known.dedup();
            return Err(ScenarioError::invalid(
                "nodes.announced_causes",
                format!(
                    "{:?} matches no end cause of source {}; its causes: {}",
                    g.pattern,
                    data.source,
                    if known.is_empty() {
                        "none recorded".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// Step 5: the `memoryless` baseline's per-node exponential rates, from sessions that ended
/// before `cutoff` only (events over the exposure of ended sessions), so the rate carries no
/// age signal from the session live at the cutoff, shrunk toward the pooled rate
/// ([`replay::shrunk_exp_rates`]). `fallback_mean_s` sets the pooled rate when nothing ended.
fn memoryless_rates(data: &SourceSessions, cutoff: f64, fallback_mean_s: f64) -> Vec<f64> {
    let n = data.node_ids.len();
    let (mut d, mut e) = (vec![0.0f64; n], vec![0.0f64; n]);
    for s in data.sessions.iter().filter(|s| s.end <= cutoff) {
        e[s.node as usize] += (s.end - s.start).max(0.0);
        if s.event {
            d[s.node as usize] += 1.0;
        }
    }
    replay::shrunk_exp_rates(&d, &e, 1.0 / fallback_mean_s.max(1.0))
}

/// Step 6: the hardware of one node of pool `pool` (an index into
/// [`ScenarioConfig::pool_list`]): the pool's preset and link (default `[hardware]`'s),
/// `[hardware]`'s explicit figures, the pool's, then every matching `[[hardware.groups]]`
/// entry in order.
fn node_hardware(
    cfg: &ScenarioConfig,
    resolved: &Resolved,
    pool: (usize, &PoolConfig),
    row: &NodeRow,
) -> NodeSpec {
    let (preset, link) = &resolved.pools[pool.0];
    let base = preset.as_ref().unwrap_or(&resolved.hardware);
    let mut spec = NodeSpec {
        slots: cfg.hardware.slots.max(1),
        kv_capacity_tokens: cfg.hardware.kv_capacity_tokens,
        prefill_tok_s: base.prefill_tok_s,
        decode_tok_s: base.decode_tok_s,
        bandwidth_bytes_s: link.bandwidth_bytes_s,
        step: base.step,
    };
    apply(&mut spec, &cfg.hardware.overrides);
    apply(&mut spec, &pool.1.overrides);
    for (g, (attr, preset)) in cfg.hardware.groups.iter().zip(&resolved.groups) {
        if row
            .attribute(*attr)
            .is_some_and(|v| v.contains(g.value.as_str()))
        {
            if let Some(hw) = preset {
                spec.prefill_tok_s = hw.prefill_tok_s;
                spec.decode_tok_s = hw.decode_tok_s;
                spec.step = hw.step;
            }
            apply(&mut spec, &g.overrides);
        }
    }
    spec
}

/// Applies explicit figures (validated positive by [`ScenarioConfig::validate`]).
fn apply(spec: &mut NodeSpec, o: &HardwareOverrides) {
    if let Some(v) = o.prefill_tok_s {
        spec.prefill_tok_s = v;
    }
    if let Some(v) = o.decode_tok_s {
        spec.decode_tok_s = v;
    }
    if let Some(v) = o.bandwidth_bytes_s {
        spec.bandwidth_bytes_s = v;
    }
    if let Some(v) = o.slots {
        spec.slots = v.max(1);
    }
    if let Some(v) = o.kv_capacity_tokens {
        spec.kv_capacity_tokens = v;
    }
}

/// The up-session timeline of node `i`, moved `shift_s` seconds on the clock (a source's
/// offset to the scenario's clock; 0 for the source that sets it): sessions sorted by start,
/// overlapping records (possible in hand-made inputs) merged. Each keeps whether its end was
/// observed (`event`) or censored, its end cause, and its left truncation, so the engine can
/// treat censored ends as "not observed" and give truncated sessions their age.
fn timeline(
    data: &SourceSessions,
    announced: &[CauseGroup],
    i: usize,
    shift_s: f64,
) -> Vec<replay::UpSession> {
    let mut sessions: Vec<replay::UpSession> = (0..data.sessions.len())
        .filter(|&k| {
            let s = &data.sessions[k];
            s.node as usize == i && s.end > s.start
        })
        .map(|k| {
            let s = &data.sessions[k];
            let cause = data.causes.get(k).map_or("", String::as_str);
            let truncated = data.left_truncated.get(k).copied().unwrap_or(false);
            replay::UpSession::new(us(s.start + shift_s), us(s.end + shift_s))
                .with_end(!s.event, cause)
                .with_truncation(truncated, s.entry)
                .with_announced(NodesConfig::is_announced(announced, cause))
        })
        .collect();
    sessions.sort_by_key(|s| s.start_us);
    let mut merged: Vec<replay::UpSession> = Vec::with_capacity(sessions.len());
    for s in sessions {
        match merged.last_mut() {
            Some(last) if s.start_us < last.end_us => {
                if s.end_us > last.end_us {
                    let start = last.start_us;
                    *last = replay::UpSession {
                        start_us: start,
                        ..s
                    };
                }
            }
            _ => merged.push(s),
        }
    }
    merged
}

/// Step 6: the generating laws of the selected nodes from `policy.truth`, for `hazard-truth`:
/// `None` when the file is not set or lists no node of the source (then `hazard-truth` is
/// not run); an error when it lists some of the selected nodes but not all.
fn truth_laws(
    cfg: &ScenarioConfig,
    data: &SourceSessions,
    selected: &[usize],
    notes: &mut Vec<String>,
) -> Result<Option<HashMap<String, crate::survival::truth::Law>>, ScenarioError> {
    if cfg.policy.truth.trim().is_empty() {
        return Ok(None);
    }
    let path = std::path::Path::new(cfg.policy.truth.trim());
    let laws = crate::survival::truth::read(path, &data.source)?;
    if laws.is_empty() {
        notes.push(format!(
            "policy.truth: {} has no generating law for source {}",
            path.display(),
            data.source
        ));
        return Ok(None);
    }
    if let Some(&i) = selected
        .iter()
        .find(|&&i| !laws.contains_key(&data.node_ids[i]))
    {
        return Err(ScenarioError::invalid(
            "policy.truth",
            format!(
                "{} has no generating law for node {} of source {}",
                path.display(),
                data.node_ids[i],
                data.source
            ),
        ));
    }
    Ok(Some(laws))
}

/// The policies to run: the scenario's list, or all. `hazard-truth` needs the fleet's
/// generating laws (`has_truth`); without them it is left out with a note. The routers
/// (`cache-aware`, `session-affinity`) need prefix caching (`cached`): without it they are
/// left out of the default list, and a list naming them is an error.
fn policies(
    cfg: &ScenarioConfig,
    (has_truth, cached): (bool, bool),
    notes: &mut Vec<String>,
) -> Result<Vec<PolicyKind>, ScenarioError> {
    let mut out = listed_policies(cfg)?;
    if !cached {
        if let Some(k) = out.iter().find(|k| k.routes_all()) {
            if !cfg.replay.policies.is_empty() {
                return Err(ScenarioError::invalid(
                    "replay.policies",
                    format!(
                        "{k} routes by prefix cache and needs a workload with prefix blocks (mooncake, qwen-bailian) and [hardware] prefix_cache = true"
                    ),
                ));
            }
        }
        out.retain(|k| !k.routes_all());
    }
    if !has_truth && out.contains(&PolicyKind::HazardTruth) {
        out.retain(|&k| k != PolicyKind::HazardTruth);
        if !cfg.replay.policies.is_empty() {
            notes.push(format!(
                "hazard-truth not run: no generating laws for source {} (policy.truth; synthetic fleets only)",
                cfg.node_sources().join(" and ")
            ));
        }
    }
    if out.is_empty() {
        return Err(ScenarioError::invalid(
            "replay.policies",
            "leaves no policy to run (hazard-truth needs policy.truth)",
        ));
    }
    Ok(out)
}

/// The scenario's policy list, parsed (all when empty).
fn listed_policies(cfg: &ScenarioConfig) -> Result<Vec<PolicyKind>, ScenarioError> {
    if cfg.replay.policies.is_empty() {
        return Ok(PolicyKind::ALL.to_vec());
    }
    cfg.replay
        .policies
        .iter()
        .map(|p| {
            p.parse::<PolicyKind>().map_err(|_| {
                ScenarioError::invalid(
                    "replay.policies",
                    format!(
                        "unknown policy {p:?}; policies: {}",
                        PolicyKind::ALL.map(|k| k.name()).join(", ")
                    ),
                )
            })
        })
        .collect()
}

/// `steps` with the exponential tail `policy.tail` asks for: `flat` drops it, `last-interval`
/// replaces it with the hazard of the curve's own last interval,
/// `-ln(s_n / s_{n-1}) / (t_n - t_{n-1})` (kept when that is undefined); `exponential` and
/// `weibull` keep the pooled rate (the Weibull tail is a wrapper, see [`build`]).
fn with_tail(steps: StepCurve, tail: TailModel) -> StepCurve {
    let (t, s) = (steps.times(), steps.values());
    let rate = match tail {
        TailModel::Flat => None,
        TailModel::LastInterval => {
            let n = t.len();
            let (t0, s0) = match n {
                0 => return steps,
                1 => (0.0, 1.0),
                _ => (t[n - 2], s[n - 2]),
            };
            let r = -(s[n - 1] / s0).ln() / (t[n - 1] - t0);
            if r.is_finite() && r >= 0.0 {
                Some(r)
            } else {
                return steps;
            }
        }
        TailModel::Exponential | TailModel::Weibull => return steps,
    };
    StepCurve::new(t.to_vec(), s.to_vec(), rate).unwrap_or(steps)
}

/// The capacity and arrival rate behind `workload.load`.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedLoad {
    /// Mean up capacity over the windows, requests/s: the mean of
    /// [`OfferedLoad::window_capacity_req_s`].
    pub capacity_req_s: f64,
    /// Up capacity of each window, requests/s: `C_w = sum_i slots_i * u_iw / s_i`, with
    /// `u_iw` node `i`'s up fraction in window `w` and `s_i` its mean service time of a request
    /// with every slot busy. Under the simple model prefills run side by side:
    /// `s_i = mean_r(prompt_r / p_i + output_r * (1 + b (slots_i - 1)) / d_i)`. Under the
    /// iteration model ([`crate::policy::iteration`]) the node's steps are shared: a request
    /// takes `tau_r = prompt_r beta + output_r (alpha / k + gamma + delta (prompt_r + output_r))`
    /// of them with `k = slots_i` decoders per step, and `s_i = slots_i mean_r(tau_r)` (so the
    /// same `load` is the same share of what each engine can serve).
    pub window_capacity_req_s: Vec<f64>,
    /// The workload's own arrival rate, requests/s: `n / period`, with the loop period of the
    /// engine (`span + span / (n - 1)`, at least 1 s).
    pub base_rate_req_s: f64,
}

impl OfferedLoad {
    /// The arrival-rate scale of each window at load `load`: `L * C_w / lambda_0`, so that
    /// every window is offered the fraction `L` of its own up capacity (0 where no node is up).
    pub fn window_scales(&self, load: f64) -> Vec<f64> {
        self.window_capacity_req_s
            .iter()
            .map(|c| {
                if self.base_rate_req_s > 0.0 {
                    load * c / self.base_rate_req_s
                } else {
                    0.0
                }
            })
            .collect()
    }
}

/// The offered-load figures of a cluster, its windows and a workload: `workload.load = L`
/// replays window `w` at `rate_scale_w = L * C_w / lambda_0` ([`OfferedLoad`]), so the offered
/// work is the fraction `L` of that window's up capacity whatever the hardware (a phone
/// decodes ~10x slower than an A100: the trace's own rate would only measure an overloaded
/// queue there) and whatever the fleet's size in the window (a spot fleet with a tenth of its
/// instances up in one window is not handed the arrivals of the others).
pub fn offered_load(
    nodes: &[Node],
    windows: &[Window],
    requests: &[replay::Request],
    batch_slowdown: f64,
    engine: EngineKind,
    censored_ends: replay::CensoredEnds,
) -> OfferedLoad {
    let n = requests.len();
    // Mean service time per distinct (prefill, decode, slots, step): a fleet has few tiers.
    type Key = (u64, u64, u32, [u64; 5]);
    let mut services: Vec<(Key, f64)> = Vec::new();
    let mut capacity = vec![0.0; windows.len()];
    for node in nodes {
        let s = &node.spec;
        let key = (
            s.prefill_tok_s.to_bits(),
            s.decode_tok_s.to_bits(),
            s.slots,
            [
                s.step.fixed_share.to_bits(),
                s.step.context_per_ktok.to_bits(),
                s.step.lone_discount.to_bits(),
                s.step.prefill_attention_per_ktok.to_bits(),
                u64::from(s.step.max_batched_tokens),
            ],
        );
        let service = match services.iter().find(|(k, _)| *k == key) {
            Some(&(_, v)) => v,
            None => {
                let slots = f64::from(s.slots.max(1));
                let stretch = 1.0 + batch_slowdown * (slots - 1.0);
                let step = match engine {
                    EngineKind::Simple => None,
                    EngineKind::Iteration => {
                        StepCoefficients::of(s.prefill_tok_s, s.decode_tok_s, s.step)
                    }
                };
                let v = requests
                    .iter()
                    .map(|r| {
                        let (pr, out) = (r.prompt_tokens as f64, r.output_tokens as f64);
                        match &step {
                            None => pr / s.prefill_tok_s + out * stretch / s.decode_tok_s,
                            Some(c) => {
                                slots
                                    * (c.prefill_work_s(pr)
                                        + out * (c.alpha / slots + c.gamma + c.delta * (pr + out)))
                            }
                        }
                    })
                    .sum::<f64>()
                    / n.max(1) as f64;
                services.push((key, v));
                v
            }
        };
        if service.is_nan() || service <= 0.0 {
            continue;
        }
        let slots = f64::from(s.slots.max(1));
        let mut up = Vec::new();
        for (w, c) in windows.iter().zip(capacity.iter_mut()) {
            let (a, b) = (w.start_us, w.start_us.saturating_add(w.length_us));
            // Up as the replay plays the window: a censored end is not a failure.
            up.clear();
            node.up_intervals(a, b, censored_ends, &mut up);
            let covered: i64 = up.iter().map(|&(x, y)| (y - x).max(0)).sum();
            let up = covered as f64 / (b - a).max(1) as f64;
            *c += slots * up / service;
        }
    }
    let span_us = requests.iter().map(|r| r.arrival_us).max().unwrap_or(0);
    let period_us = if n > 1 {
        span_us.saturating_add(span_us / (n as i64 - 1))
    } else {
        span_us
    }
    .max(1_000_000);
    OfferedLoad {
        capacity_req_s: capacity.iter().sum::<f64>() / capacity.len().max(1) as f64,
        window_capacity_req_s: capacity,
        base_rate_req_s: n as f64 / (period_us as f64 / 1e6),
    }
}

/// The warm-up and drain margin of the scenario's windows: the configured values, or
/// [`crate::scenario::config::auto_warmup_s`] and [`crate::scenario::config::auto_drain_s`]
/// of each request's unloaded service time `P_r / p + L_r / d` on the median node (the
/// median prefill and decode rates of the cluster).
fn steady_state_margins(
    cfg: &ScenarioConfig,
    nodes: &[Node],
    requests: &[replay::Request],
    window_length_s: f64,
) -> (f64, f64) {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        crate::replay::metrics::percentile_sorted(&v, 0.5).unwrap_or(f64::NAN)
    };
    let p = median(nodes.iter().map(|n| n.spec.prefill_tok_s).collect());
    let d = median(nodes.iter().map(|n| n.spec.decode_tok_s).collect());
    let service: Vec<f64> = if p > 0.0 && d > 0.0 {
        requests
            .iter()
            .map(|r| r.prompt_tokens as f64 / p + r.output_tokens as f64 / d)
            .collect()
    } else {
        Vec::new()
    };
    let r = &cfg.replay;
    (
        r.warmup_s
            .unwrap_or_else(|| crate::scenario::config::auto_warmup_s(&service, window_length_s)),
        r.drain_s
            .unwrap_or_else(|| crate::scenario::config::auto_drain_s(&service, window_length_s)),
    )
}

/// What scenarios built from one store share, so a sweep's cells that share a source,
/// selection and training cut read the store and fit the priors once: the selected nodes and
/// their sessions with their end causes (by source, filter, sample and seed; the store's
/// sessions are read once per build), the workload's requests (by source) and the fitted
/// priors (by source, announced causes and cutoff). Safe to share between threads; a value two threads ask for at once may be computed twice, never
/// stored twice. Only for one store whose inputs do not change while it lives.
#[derive(Default)]
pub struct BuildCache {
    nodes: Mutex<HashMap<String, Arc<SelectedNodes>>>,
    requests: Mutex<HashMap<String, Arc<Workload>>>,
    priors: Mutex<HashMap<(String, u64), Arc<FittedPriors>>>,
}

/// Priors fitted before a cutoff (`None`: flat) and the notes the fit left.
type FittedPriors = (Option<Priors>, Vec<String>);

/// The cached value of `key` in `map`, or `make()`'s, stored.
fn cached<K: std::hash::Hash + Eq, V>(
    map: &Mutex<HashMap<K, Arc<V>>>,
    key: K,
    make: impl FnOnce() -> Result<V, ScenarioError>,
) -> Result<Arc<V>, ScenarioError> {
    if let Some(v) = map.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(Arc::clone(v));
    }
    let v = Arc::new(make()?);
    let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
    Ok(Arc::clone(m.entry(key).or_insert(v)))
}

/// Builds the scenario: validates it, then runs the steps of this module. Survival priors
/// are fitted only on sessions observed before the first window starts, so no policy sees the
/// future through its curves (the oracle reads the future only through the engine).
pub fn build(store: &Store, cfg: &ScenarioConfig) -> Result<Scenario, ScenarioError> {
    build_with(store, cfg, &BuildCache::default())
}

/// [`build`], reusing what `cache` already holds from earlier scenarios of the same store
/// (a sweep passes one cache to every cell). A pipeline of seven stages, each reading what the
/// earlier ones made: [`select_pools`], the workload ([`load_requests`]), [`frame_windows`],
/// [`assemble_fleet`], [`scale_windows`], [`replay_config`] and [`policy_grid`].
pub(crate) fn build_with(
    store: &Store,
    cfg: &ScenarioConfig,
    cache: &BuildCache,
) -> Result<Scenario, ScenarioError> {
    let resolved = cfg.validate()?;
    let mut notes = Vec::new();
    let pools = cfg.pool_list();
    let selections = select_pools(store, cfg, &pools, cache)?;
    let mut workload: Workload = cached(&cache.requests, cfg.workload.source.clone(), || {
        load_requests(store, cfg)
    })?
    .as_ref()
    .clone();
    if !cfg.hardware.prefix_cache {
        // Stateless on purpose: every request's blocks ignored.
        workload.prefixes.clear();
        workload.conversations.clear();
    } else if workload.has_prefixes() && cfg.engine()? == EngineKind::Simple {
        return Err(ScenarioError::invalid(
            "hardware.prefix_cache",
            format!(
                "workload source {} has prefix blocks but the simple engine has no prefix cache: use engine = \"iteration\", or set prefix_cache = false to replay every request statelessly",
                cfg.workload.source
            ),
        ));
    }
    if workload.has_prefixes() {
        // The gap between turns, fitted on the workload's first `train_fraction` (its
        // training history; windows replay the whole workload).
        let arrivals: Vec<f64> = workload
            .requests
            .iter()
            .map(|r| r.arrival_us as f64 / 1e6)
            .collect();
        let span = arrivals.iter().copied().fold(0.0, f64::max);
        let cut = cfg.replay.train_fraction * span;
        let reuse = super::conversations::fit_reuse_gap(&arrivals, &workload.conversations, cut);
        match &reuse {
            Some(g) => notes.push(format!(
                "workload: {:.0} % of turns have a next turn, median gap {:.0} s (the retained-state term's, fitted on the workload's first {:.0} s)",
                100.0 * g.mass,
                g.cells[crate::policy::retained::GAP_CELLS / 2],
                cut
            )),
            None => notes.push(
                "workload: no conversation shows a next turn in its training history: the retained-state term is 0".into(),
            ),
        }
        workload.reuse = reuse;
    }
    let requests = std::mem::take(&mut workload.requests);
    let frame = frame_windows(cfg, &pools, &selections, &requests, &mut notes)?;
    let fleet = assemble_fleet(
        cfg,
        &resolved,
        cache,
        &pools,
        &selections,
        &frame,
        &mut notes,
    )?;
    let batch_slowdown = cfg
        .replay
        .batch_slowdown
        .unwrap_or(resolved.hardware.batch_slowdown);
    let rates = scale_windows(
        cfg,
        &fleet.nodes,
        &frame.windows,
        &requests,
        batch_slowdown,
        &mut notes,
    )?;
    let config = replay_config(
        cfg,
        &resolved,
        (&fleet.nodes, &requests),
        frame.length,
        (rates.rate_scale, batch_slowdown),
        &mut notes,
    )?;
    let cached = workload.has_prefixes();
    let grid = policy_grid(
        cfg,
        config.params,
        (fleet.has_truth, cached),
        rates,
        &mut notes,
    )?;
    let pool_info: Vec<replay::Pool> = pools
        .iter()
        .map(|p| replay::Pool {
            name: p.label(),
            price_per_node_hour: p.price_per_node_hour,
        })
        .collect();
    Ok(Scenario {
        cluster: Cluster::new(fleet.nodes).with_pools(pool_info, fleet.pool_of),
        workload: Workload {
            requests,
            ..workload
        },
        config,
        grid,
        cutoff_s: frame.first_ref,
        span_s: frame.reference_span(),
        notes,
    })
}

/// Stage 1 of [`build_with`]: each pool's selection ([`select_nodes`], shared through the
/// cache; `None`: an always-up pool). In a `[[pools]]` fleet every error names the pool and
/// its key.
fn select_pools(
    store: &Store,
    cfg: &ScenarioConfig,
    pools: &[PoolConfig],
    cache: &BuildCache,
) -> Result<Vec<Option<Arc<SelectedNodes>>>, ScenarioError> {
    let pooled = !cfg.pools.is_empty();
    let mut selections = Vec::with_capacity(pools.len());
    for (k, pool) in pools.iter().enumerate() {
        let Some(source) = &pool.source else {
            selections.push(None);
            continue;
        };
        let pool_err = |key: &'static str, message: String| ScenarioError::Pool {
            pool: format!("{:?} (pools[{k}])", pool.label()),
            key,
            message,
        };
        let nodes_key = format!(
            "{}\u{1f}{:?}\u{1f}{:?}\u{1f}{}\u{1f}{}",
            source, pool.filter_attribute, pool.filter_value, pool.sample, cfg.replay.seed
        );
        let selected = match cached(&cache.nodes, nodes_key, || {
            select_nodes(store, pool, cfg.replay.seed)
        }) {
            Ok(s) => s,
            Err(e) if pooled => {
                let key = match e {
                    ScenarioError::Empty(_) if pool.filter_value.is_some() => "filter_value",
                    _ => "source",
                };
                return Err(pool_err(key, crate::diag::error_chain(&e)));
            }
            Err(e) => return Err(e),
        };
        if pooled && pool.sample > selected.available {
            return Err(pool_err(
                "sample",
                format!(
                    "{} is larger than the {} node(s) of source {source} that match and were ever up",
                    pool.sample, selected.available
                ),
            ));
        }
        selections.push(Some(selected));
    }
    Ok(selections)
}

/// The windows on the scenario's clock, and where each source's trace falls on it.
struct Frame {
    /// Each source's span: the union of its pools' selected nodes' spans (trace clock).
    spans: Vec<(String, (f64, f64))>,
    /// Each source's first window start (its own clock, after its training cut).
    firsts: Vec<f64>,
    /// The scenario's clock is that of the source whose first window starts latest: this
    /// start, which is also the priors' cutoff.
    first_ref: f64,
    /// The windows' offsets from the first window's start.
    offsets: Vec<f64>,
    /// Window length, seconds.
    length: f64,
    /// The windows on the scenario's clock.
    windows: Vec<Window>,
}

impl Frame {
    /// A source's first window start and the shift that moves its clock onto the scenario's
    /// (never to negative times, which the engine's clock does not have).
    fn shift_of(&self, source: &str) -> (f64, f64) {
        let k = self
            .spans
            .iter()
            .position(|(s, _)| s == source)
            .unwrap_or(0);
        (self.firsts[k], self.first_ref - self.firsts[k])
    }

    /// The span of the source whose clock is the scenario's.
    fn reference_span(&self) -> (f64, f64) {
        let k = self
            .firsts
            .iter()
            .position(|&f| f == self.first_ref)
            .unwrap_or(0);
        self.spans[k].1
    }

    /// When always-up nodes are up: from the earliest source's span start (on the scenario's
    /// clock) to past the last window.
    fn always_up(&self) -> (f64, f64) {
        let from = self
            .spans
            .iter()
            .map(|(s, span)| span.0 + self.shift_of(s).1)
            .fold(f64::INFINITY, f64::min);
        let to =
            self.first_ref + self.offsets.last().copied().unwrap_or(0.0) + 2.0 * self.length + 1.0;
        (from, to)
    }
}

/// Stage 3 of [`build_with`]: the sources' spans, the windows placed after each source's
/// training cut ([`place_windows`]) and the scenario's clock.
fn frame_windows(
    cfg: &ScenarioConfig,
    pools: &[PoolConfig],
    selections: &[Option<Arc<SelectedNodes>>],
    requests: &[Request],
    notes: &mut Vec<String>,
) -> Result<Frame, ScenarioError> {
    let workload_len_s = requests.last().map_or(0.0, |r| r.arrival_us as f64 / 1e6);
    let mut spans: Vec<(String, (f64, f64))> = Vec::new();
    for (pool, sel) in pools.iter().zip(selections) {
        let (Some(source), Some(sel)) = (&pool.source, sel) else {
            continue;
        };
        match spans.iter_mut().find(|(s, _)| s == source) {
            Some((_, span)) => *span = (span.0.min(sel.span_s.0), span.1.max(sel.span_s.1)),
            None => spans.push((source.clone(), sel.span_s)),
        }
    }
    let (firsts, offsets, length) = place_windows(cfg, &spans, workload_len_s)?;
    let first_ref = firsts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let windows: Vec<Window> = offsets
        .iter()
        .map(|&o| Window::new(us(first_ref + o), us(length)))
        .collect();
    if spans.len() > 1 {
        notes.push(format!(
            "pools: each source's windows start after its own training cut, at the same offsets: {}",
            spans
                .iter()
                .zip(&firsts)
                .map(|((s, _), f)| format!("{s} from {f:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(Frame {
        spans,
        firsts,
        first_ref,
        offsets,
        length,
        windows,
    })
}

/// The cluster's nodes, in pool order.
struct Fleet {
    nodes: Vec<Node>,
    /// Each node's pool.
    pool_of: Vec<u16>,
    /// Every pool from a source has generating laws (`policy.truth`): `hazard-truth` can run.
    has_truth: bool,
}

/// Stage 4 of [`build_with`]: every pool's nodes, with hardware ([`node_hardware`]), timelines
/// on the scenario's clock ([`timeline`]), survival curves fitted before the cut
/// ([`fit_node_priors`], shared through the cache) and read as the scenario says, memoryless
/// rates ([`memoryless_rates`]) and generating laws ([`truth_laws`]).
fn assemble_fleet(
    cfg: &ScenarioConfig,
    resolved: &Resolved,
    cache: &BuildCache,
    pools: &[PoolConfig],
    selections: &[Option<Arc<SelectedNodes>>],
    frame: &Frame,
    notes: &mut Vec<String>,
) -> Result<Fleet, ScenarioError> {
    let pooled = !cfg.pools.is_empty();
    let linear = cfg.policy.survival_curve == CurveReading::Linear;
    let flat = || -> Result<StepCurve, ScenarioError> {
        StepCurve::new(Vec::new(), Vec::new(), None)
            .map_err(|e| ScenarioError::invalid("policy.survival_curve", e.to_string()))
    };
    let mut fleet = Fleet {
        nodes: Vec::new(),
        pool_of: Vec::new(),
        has_truth: true,
    };
    // Always-up nodes never fail: their one session ends censored.
    let (always_from, always_to) = frame.always_up();
    for (k, (pool, sel)) in pools.iter().zip(selections).enumerate() {
        let label = pool.label();
        let name_of = |id: &str| {
            if pooled {
                format!("{label}/{id}")
            } else {
                id.to_string()
            }
        };
        let Some(nodes) = sel else {
            for j in 0..pool.always_up.unwrap_or(0) {
                let steps = flat()?;
                fleet.nodes.push(Node {
                    name: name_of(&j.to_string()),
                    spec: node_hardware(cfg, resolved, (k, pool), &NodeRow::default()),
                    sessions: vec![
                        replay::UpSession::new(us(always_from), us(always_to)).with_end(true, "")
                    ],
                    survival: Arc::new(LinearCurve::new(steps.clone())),
                    exp_rate_per_s: 0.0,
                    truth: Some(Arc::new(steps)),
                });
                fleet.pool_of.push(k as u16);
            }
            continue;
        };
        let data = &nodes.data;
        let (pool_cutoff, shift_s) = frame.shift_of(&data.source);
        let announced = pool.announced()?;
        check_announced(data, &announced)?;
        let fitted = cached(
            &cache.priors,
            (
                format!(
                    "{}\u{1f}{}",
                    data.source,
                    pool.announced_causes.join("\u{1f}")
                ),
                pool_cutoff.to_bits(),
            ),
            || {
                let mut fit_notes = Vec::new();
                let p = fit_node_priors(&announced, data, pool_cutoff, &mut fit_notes)?;
                Ok((p, fit_notes))
            },
        )?;
        let (priors, fit_notes) = (&fitted.0, &fitted.1);
        notes.extend(fit_notes.iter().cloned());
        let rates = if announced.is_empty() {
            memoryless_rates(data, pool_cutoff, frame.length)
        } else {
            memoryless_rates(
                &censor_announced(data.clone(), &announced),
                pool_cutoff,
                frame.length,
            )
        };
        let weibull = match (priors, cfg.policy.tail) {
            (Some(p), TailModel::Weibull) => match &p.pooled.parametric {
                Some(w) => Some((w.weibull_shape, w.weibull_scale_s)),
                None => {
                    notes.push(
                        "policy.tail = weibull: the pooled fit has too few events for a Weibull; exponential tail used"
                            .into(),
                    );
                    None
                }
            },
            _ => None,
        };
        let laws = truth_laws(cfg, data, &nodes.selected, notes)?;
        fleet.has_truth &= laws.is_some();
        for &i in &nodes.selected {
            let id = &data.node_ids[i];
            let row = nodes.rows.get(id).cloned().unwrap_or_default();
            let steps = match priors {
                Some(p) => p.node_curve(id),
                None => flat()?,
            };
            fleet.nodes.push(Node {
                name: name_of(id),
                spec: node_hardware(cfg, resolved, (k, pool), &row),
                sessions: timeline(data, &announced, i, shift_s),
                survival: read_curve(with_tail(steps, cfg.policy.tail), linear, weibull),
                exp_rate_per_s: rates[i],
                truth: laws.as_ref().and_then(|l| l.get(id)).map(|l| l.curve()),
            });
            fleet.pool_of.push(k as u16);
        }
    }
    Ok(fleet)
}

/// A node's fitted curve as the policies read it: linear between knots or as steps, with a
/// Weibull tail `(shape, scale)` past the last knot when the scenario asks for one.
fn read_curve(
    steps: StepCurve,
    linear: bool,
    weibull: Option<(f64, f64)>,
) -> Arc<dyn ConditionalSurvival> {
    let last_t = steps.times().last().copied().unwrap_or(0.0);
    match (linear, weibull) {
        (true, None) => Arc::new(LinearCurve::new(steps)),
        (false, None) => Arc::new(steps),
        (true, Some((k, l))) => {
            match WeibullTail::new(LinearCurve::new(steps.clone()), last_t, k, l) {
                Some(c) => Arc::new(c),
                None => Arc::new(LinearCurve::new(steps)),
            }
        }
        (false, Some((k, l))) => match WeibullTail::new(steps.clone(), last_t, k, l) {
            Some(c) => Arc::new(c),
            None => Arc::new(steps),
        },
    }
}

/// The windows replayed and their arrival-rate scales.
struct Rates {
    /// The mean scale (`workload.rate_scale` without `workload.load`).
    rate_scale: f64,
    /// Each replayed window's own scale (empty: `rate_scale` everywhere).
    window_scales: Vec<f64>,
    /// The windows replayed (with `workload.load`, those with a node up).
    windows: Vec<Window>,
}

/// Stage 5 of [`build_with`]: `workload.load` sets each window at the fraction `load` of its
/// own up capacity under the configured engine ([`offered_load`]); windows with no node up
/// are not replayed, and a note lists them.
fn scale_windows(
    cfg: &ScenarioConfig,
    nodes: &[Node],
    windows: &[Window],
    requests: &[Request],
    batch_slowdown: f64,
    notes: &mut Vec<String>,
) -> Result<Rates, ScenarioError> {
    let Some(load) = cfg.workload.load else {
        return Ok(Rates {
            rate_scale: cfg.workload.rate_scale,
            window_scales: Vec::new(),
            windows: windows.to_vec(),
        });
    };
    let l = offered_load(
        nodes,
        windows,
        requests,
        batch_slowdown,
        cfg.engine()?,
        // The rule the scenario's replay plays censored ends by (stay up).
        ReplayConfig::default().censored_ends,
    );
    if !(l.capacity_req_s > 0.0 && l.base_rate_req_s > 0.0) {
        return Err(ScenarioError::Empty(format!(
            "workload.load: no up capacity in the windows (capacity {:.3} requests/s) or no arrivals",
            l.capacity_req_s
        )));
    }
    let scales = l.window_scales(load);
    let dark: Vec<usize> = (0..scales.len())
        .filter(|&k| scales[k].is_nan() || scales[k] <= 0.0)
        .collect();
    if !dark.is_empty() {
        notes.push(format!(
            "workload.load: {} of {} windows have no node up (starting at {}): not replayed",
            dark.len(),
            windows.len(),
            dark.iter()
                .take(3)
                .map(|&k| (windows[k].start_us / 1_000_000).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let (kept, scales): (Vec<Window>, Vec<f64>) = windows
        .iter()
        .zip(&scales)
        .filter(|(_, s)| **s > 0.0)
        .map(|(w, s)| (*w, *s))
        .unzip();
    let caps: Vec<f64> = scales.iter().map(|s| s * l.base_rate_req_s).collect();
    let (lo, hi) = caps
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &c| (a.min(c), b.max(c)));
    let mean = caps.iter().sum::<f64>() / caps.len().max(1) as f64;
    notes.push(if caps.len() > 1 && hi > lo * (1.0 + 1e-9) {
        format!(
            "workload.load {load}: each window at {load} of its own up capacity: {lo:.4} to {hi:.4} requests/s (mean {mean:.4}), arrival rate x{:.4} to x{:.4}",
            lo / l.base_rate_req_s,
            hi / l.base_rate_req_s
        )
    } else {
        format!(
            "workload.load {load}: arrival rate x{:.4} ({mean:.4} requests/s against a mean up capacity of {:.4} requests/s)",
            mean / l.base_rate_req_s,
            mean / load
        )
    });
    Ok(Rates {
        rate_scale: scales.iter().sum::<f64>() / scales.len().max(1) as f64,
        window_scales: scales,
        windows: kept,
    })
}

/// Stage 6 of [`build_with`]: the engine's settings, with the warm-up and drain margins from
/// the workload's service times ([`steady_state_margins`]) unless the scenario sets them.
fn replay_config(
    cfg: &ScenarioConfig,
    resolved: &Resolved,
    (nodes, requests): (&[Node], &[Request]),
    length: f64,
    (rate_scale, batch_slowdown): (f64, f64),
    notes: &mut Vec<String>,
) -> Result<ReplayConfig, ScenarioError> {
    let r = &cfg.replay;
    let (warmup_s, drain_s) = steady_state_margins(cfg, nodes, requests, length);
    if r.warmup_s.is_none() || r.drain_s.is_none() {
        notes.push(format!(
            "replay: arrivals scored from {warmup_s:.1} s into each window (warm-up) to {drain_s:.1} s before its end (drain margin), of {length:.0} s{}",
            if r.warmup_s.is_none() && r.drain_s.is_none() {
                " (both from the workload's service times; set replay.warmup_s and replay.drain_s to choose)"
            } else {
                ""
            }
        ));
    }
    Ok(ReplayConfig {
        params: cfg.policy.params(resolved.model.kv_bytes_per_token),
        estimator: cfg.workload.estimator,
        slo_factor: r.slo_factor,
        batch_slowdown,
        engine: cfg.engine()?,
        rate_scale,
        loop_workload: cfg.workload.loop_workload,
        warmup_s,
        drain_s,
        prefix_cache: cfg.hardware.prefix_cache,
        ..ReplayConfig::default()
    })
}

/// Stage 7 of [`build_with`]: policies x windows x seeds, and the overlap point of the
/// migrating policies when `replay.include_overlap` asks for it.
fn policy_grid(
    cfg: &ScenarioConfig,
    params: crate::policy::Params,
    has: (bool, bool),
    rates: Rates,
    notes: &mut Vec<String>,
) -> Result<Grid, ScenarioError> {
    let r = &cfg.replay;
    let seeds: Vec<u64> = (0..r.seeds.max(1)).map(|k| r.seed + k).collect();
    let grid = Grid::new(policies(cfg, has, notes)?, rates.windows, seeds)
        .with_rate_scales(rates.window_scales);
    let overlap = r.include_overlap && !params.overlap;
    // The stateful ablations: `hazard` without the retained-state term, and without the
    // idle-state migration (only with prefix caching, where they change anything).
    let ablations = r.include_ablations && has.1;
    if r.include_ablations && !has.1 {
        notes.push(
            "replay.include_ablations: no prefix caching in this scenario, so no ablation runs"
                .into(),
        );
    }
    if !overlap && !ablations {
        return Ok(grid);
    }
    let mut points = vec![ParamPoint {
        label: "default".into(),
        params,
        policies: None,
    }];
    if overlap {
        // Overlap changes only planned moves: the other policies are not run again.
        points.push(ParamPoint {
            label: "overlap".into(),
            params: crate::policy::Params {
                overlap: true,
                ..params
            },
            policies: Some(
                // The twin is paired with `hazard` at the default point only.
                PolicyKind::ALL
                    .into_iter()
                    .filter(|k| k.migrates() && *k != PolicyKind::HazardPooled)
                    .collect(),
            ),
        });
    }
    if ablations {
        for (label, p) in [
            (
                "no-retained",
                crate::policy::Params {
                    retained_state: false,
                    ..params
                },
            ),
            (
                "no-idle",
                crate::policy::Params {
                    idle_migration: false,
                    ..params
                },
            ),
        ] {
            points.push(ParamPoint {
                label: label.into(),
                params: p,
                policies: Some(vec![PolicyKind::Hazard]),
            });
        }
    }
    Ok(grid.with_params(points))
}
