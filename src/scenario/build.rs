//! Turning a [`ScenarioConfig`] and the store into the replay engine's inputs.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{bail, Context};

use super::config::ScenarioConfig;
use crate::fit::{load_sessions, parse_time};
use crate::policy::presets::{self, HardwarePreset};
use crate::policy::PolicyKind;
use crate::replay::{
    self, Cluster, Grid, LengthEstimator, Node, NodeSpec, ParamPoint, ReplayConfig, Request,
    Window, Workload,
};
use crate::rng::Rng;
use crate::store::Store;
use crate::survival::curve::ConditionalSurvival;
use crate::survival::priors::{fit_priors, PriorsMeta, PriorsOptions};
use crate::survival::shrinkage::ShrinkageOptions;

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
}

fn preset(name: &str) -> anyhow::Result<HardwarePreset> {
    presets::hardware(name).with_context(|| {
        let names: Vec<&str> = presets::HARDWARE.iter().map(|h| h.name).collect();
        format!(
            "unknown hardware preset {name:?}; presets: {}",
            names.join(", ")
        )
    })
}

fn attribute<'a>(attrs: &'a [Option<String>; 3], name: &str) -> anyhow::Result<Option<&'a str>> {
    Ok(match name {
        "zone" => attrs[0].as_deref(),
        "instance_type" => attrs[1].as_deref(),
        "node_group" => attrs[2].as_deref(),
        other => bail!("unknown node attribute {other:?}: use zone, instance_type or node_group"),
    })
}

/// Seconds on the trace clock to engine microseconds.
fn us(t: f64) -> i64 {
    replay::input::secs_to_us(t)
}

/// Builds the scenario. Survival priors are fitted with [`fit_priors`] on every node of the
/// availability source, using only sessions observed before the first window starts, so no
/// policy sees the future through its curves (the oracle reads the future only through the
/// engine's foresight interface).
///
/// `memoryless` uses, per node, the exponential rate `(d_i + 1) / (E_i + 1/lambda_0)`: the
/// maximum-likelihood rate `d_i / E_i` (events over time at risk before the cutoff) with one
/// pseudo-event at the pooled rate `lambda_0`, so a node without failures yet is not taken to
/// be immortal.
pub fn build(store: &Store, cfg: &ScenarioConfig) -> anyhow::Result<Scenario> {
    let source = &cfg.nodes.source;
    let data = load_sessions(store, source, None, true)
        .with_context(|| format!("loading availability source {source}"))?;
    let cat = store.query()?;
    let conn = cat.connection();

    // Node attributes and windows.
    let mut attrs: HashMap<String, ([Option<String>; 3], f64, f64)> = HashMap::new();
    {
        let mut stmt = conn.prepare(
            "SELECT node_id, zone, instance_type, node_group, observed_from, observed_to FROM nodes WHERE source = ?",
        )?;
        let rows = stmt.query_map([source.as_str()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                [
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ],
                r.get::<_, f64>(4)?,
                r.get::<_, f64>(5)?,
            ))
        })?;
        for row in rows {
            let (id, a, from, to) = row?;
            attrs.insert(id, (a, from, to));
        }
    }
    let mut selected: Vec<usize> = (0..data.node_ids.len()).collect();
    if let (Some(attr), Some(value)) = (&cfg.nodes.filter_attribute, &cfg.nodes.filter_value) {
        let mut keep = Vec::new();
        for &i in &selected {
            let a = &attrs[&data.node_ids[i]].0;
            if attribute(a, attr)?.is_some_and(|v| v.contains(value.as_str())) {
                keep.push(i);
            }
        }
        selected = keep;
    }
    // Nodes that were never up cannot serve.
    let mut has_sessions = vec![false; data.node_ids.len()];
    for s in &data.sessions {
        has_sessions[s.node as usize] = true;
    }
    selected.retain(|&i| has_sessions[i]);
    if cfg.nodes.sample > 0 && selected.len() > cfg.nodes.sample {
        let mut rng = Rng::new(cfg.replay.seed ^ 0x5A3D_1E5E);
        for i in 0..cfg.nodes.sample {
            let j = i + rng.below((selected.len() - i) as u64) as usize;
            selected.swap(i, j);
        }
        selected.truncate(cfg.nodes.sample);
        selected.sort_unstable();
    }
    if selected.is_empty() {
        bail!("no node of source {source} matches the [nodes] selection (or none was ever up)");
    }
    let span = selected
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |acc, &i| {
            let (_, from, to) = attrs[&data.node_ids[i]];
            (acc.0.min(from), acc.1.max(to))
        });

    // Workload.
    let wsrc = &cfg.workload.source;
    store
        .manifest(wsrc)
        .with_context(|| format!("workload source {wsrc}"))?;
    let mut requests = Vec::new();
    {
        let mut stmt = conn.prepare(
            "SELECT request_id, arrival_s, prompt_tokens, output_tokens FROM requests WHERE source = ? ORDER BY arrival_s, request_id",
        )?;
        let rows = stmt.query_map([wsrc.as_str()], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, f64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        for row in rows {
            let (id, t, p, o) = row?;
            requests.push(Request {
                id: id as u64,
                arrival_us: us(t),
                prompt_tokens: p.max(0) as u64,
                output_tokens: o.max(1) as u64,
            });
        }
    }
    if requests.is_empty() {
        bail!("workload source {wsrc} has no requests (ingest one with --format azure-llm, mooncake or lengths-csv)");
    }
    let workload_len_s = requests.last().map_or(0.0, |r| r.arrival_us as f64 / 1e6);

    // Windows.
    let r = &cfg.replay;
    let length = if r.window_length_s > 0.0 {
        r.window_length_s
    } else {
        (workload_len_s / r_scale(cfg)).max(60.0)
    };
    let first = match &r.window_start {
        Some(s) => parse_time(s).map_err(anyhow::Error::msg)?,
        None => span.0 + r.train_fraction.clamp(0.0, 0.95) * (span.1 - span.0),
    };
    let last = span.1 - length;
    if r.windows == 0 {
        bail!("--windows must be at least 1");
    }
    if last < first {
        bail!(
            "the observation span of {source} ({:.0} s after the training part) is shorter than one window of {length:.0} s; use a shorter --window-length or a smaller train_fraction",
            span.1 - first
        );
    }
    let starts: Vec<f64> = match r.placement.as_str() {
        "even" => (0..r.windows)
            .map(|k| {
                if r.windows == 1 {
                    first
                } else {
                    first + (last - first) * k as f64 / (r.windows - 1) as f64
                }
            })
            .collect(),
        "random" => {
            let mut rng = Rng::new(r.seed ^ 0x00D0_0DAD);
            let mut v: Vec<f64> = (0..r.windows)
                .map(|_| first + rng.uniform() * (last - first))
                .collect();
            v.sort_by(f64::total_cmp);
            v
        }
        other => bail!("placement {other:?}: use even or random"),
    };
    let windows: Vec<Window> = starts
        .iter()
        .map(|&s| Window::new(us(s), us(length)))
        .collect();
    let cutoff = starts[0];

    // Priors from before the first window (no leakage).
    let meta = PriorsMeta {
        source: source.clone(),
        cutoff_s: cutoff,
        time_base: data.time_base.clone(),
        node_ids: data.node_ids.clone(),
    };
    // Left-truncated sessions of unknown age are timelines, not lifetimes: the fit leaves them
    // out (as `fit` and `priors export` do); the node timelines keep them.
    let fit_data = load_sessions(store, source, None, false)?;
    let priors = fit_priors(
        &fit_data.sessions,
        &meta,
        &ShrinkageOptions::default(),
        &PriorsOptions::default(),
    )
    .with_context(|| format!("fitting survival priors of {source} before {cutoff}"))?;

    // Memoryless rates from the same pre-cutoff data.
    let (mut d, mut e) = (
        vec![0.0f64; data.node_ids.len()],
        vec![0.0f64; data.node_ids.len()],
    );
    for s in data.sessions.iter().filter(|s| s.start < cutoff) {
        let end = s.end.min(cutoff);
        e[s.node as usize] += (end - s.start).max(0.0);
        if s.event && s.end <= cutoff {
            d[s.node as usize] += 1.0;
        }
    }
    let (dt, et): (f64, f64) = (d.iter().sum(), e.iter().sum());
    let pooled_rate = if dt > 0.0 && et > 0.0 {
        dt / et
    } else {
        1.0 / length.max(1.0)
    };

    // Hardware.
    let base = preset(&cfg.hardware.preset)?;
    let link = crate::cli::link_by_name(&cfg.hardware.link)?;
    let model = crate::cli::model_by_name(&cfg.model.preset)?;
    let mut nodes = Vec::with_capacity(selected.len());
    for &i in &selected {
        let id = &data.node_ids[i];
        let a = &attrs[id].0;
        let mut spec = NodeSpec {
            slots: cfg.hardware.slots.max(1),
            kv_capacity_tokens: cfg.hardware.kv_capacity_tokens,
            prefill_tok_s: base.prefill_tok_s,
            decode_tok_s: base.decode_tok_s,
            bandwidth_bytes_s: link.bandwidth_bytes_s,
        };
        apply(&mut spec, &cfg.hardware.overrides)?;
        for g in &cfg.hardware.groups {
            if attribute(a, &g.attribute)?.is_some_and(|v| v.contains(g.value.as_str())) {
                if let Some(p) = &g.preset {
                    let hw = preset(p)?;
                    spec.prefill_tok_s = hw.prefill_tok_s;
                    spec.decode_tok_s = hw.decode_tok_s;
                }
                apply(&mut spec, &g.overrides)?;
            }
        }
        let mut sessions: Vec<replay::UpSession> = data
            .sessions
            .iter()
            .filter(|s| s.node as usize == i && s.end > s.start)
            .map(|s| replay::UpSession::new(us(s.start), us(s.end)))
            .collect();
        sessions.sort_by_key(|s| s.start_us);
        // Overlapping records (possible in hand-made inputs) are merged.
        let mut merged: Vec<replay::UpSession> = Vec::with_capacity(sessions.len());
        for s in sessions {
            match merged.last_mut() {
                Some(last) if s.start_us < last.end_us => last.end_us = last.end_us.max(s.end_us),
                _ => merged.push(s),
            }
        }
        let steps = priors.node_curve(id);
        let curve: Arc<dyn ConditionalSurvival> = match cfg.policy.survival_curve.as_str() {
            "step" => Arc::new(steps),
            "linear" => Arc::new(crate::survival::curve::LinearCurve::new(steps)),
            other => bail!("[policy] survival_curve {other:?}: use step or linear"),
        };
        nodes.push(Node {
            name: id.clone(),
            spec,
            sessions: merged,
            survival: curve,
            exp_rate_per_s: (d[i] + 1.0) / (e[i] + 1.0 / pooled_rate),
        });
    }

    let estimator: LengthEstimator = cfg
        .workload
        .estimator
        .parse()
        .map_err(|e| anyhow::anyhow!("[workload] estimator: {e}"))?;
    let params = cfg.policy.params(model.kv_bytes_per_token);
    let config = ReplayConfig {
        params,
        estimator,
        slo_factor: r.slo_factor,
        batch_slowdown: r.batch_slowdown,
        rate_scale: cfg.workload.rate_scale,
        loop_workload: cfg.workload.loop_workload,
        ..ReplayConfig::default()
    };
    let policies: Vec<PolicyKind> = if r.policies.is_empty() {
        PolicyKind::ALL.to_vec()
    } else {
        r.policies
            .iter()
            .map(|p| {
                p.parse::<PolicyKind>().map_err(|_| {
                    anyhow::anyhow!(
                        "unknown policy {p:?}; policies: {}",
                        PolicyKind::ALL.map(|k| k.name()).join(", ")
                    )
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    let seeds: Vec<u64> = (0..r.seeds.max(1)).map(|k| r.seed + k).collect();
    let mut grid = Grid::new(policies, windows, seeds);
    if r.include_overlap && !params.overlap {
        grid = grid.with_params(vec![
            ParamPoint {
                label: "default".into(),
                params,
            },
            ParamPoint {
                label: "overlap".into(),
                params: crate::policy::Params {
                    overlap: true,
                    ..params
                },
            },
        ]);
    }
    Ok(Scenario {
        cluster: Cluster::new(nodes),
        workload: Workload::new(requests),
        config,
        grid,
        cutoff_s: cutoff,
        span_s: span,
    })
}

/// Applies explicit figures to a node's hardware, checking they are positive.
fn apply(spec: &mut NodeSpec, o: &super::config::HardwareOverrides) -> anyhow::Result<()> {
    let pos = |v: f64, name: &str| -> anyhow::Result<f64> {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            bail!("[hardware] {name} must be positive, got {v}")
        }
    };
    if let Some(v) = o.prefill_tok_s {
        spec.prefill_tok_s = pos(v, "prefill_tok_s")?;
    }
    if let Some(v) = o.decode_tok_s {
        spec.decode_tok_s = pos(v, "decode_tok_s")?;
    }
    if let Some(v) = o.bandwidth_bytes_s {
        spec.bandwidth_bytes_s = pos(v, "bandwidth_bytes_s")?;
    }
    if let Some(v) = o.slots {
        spec.slots = v.max(1);
    }
    if let Some(v) = o.kv_capacity_tokens {
        spec.kv_capacity_tokens = v;
    }
    Ok(())
}

fn r_scale(cfg: &ScenarioConfig) -> f64 {
    if cfg.workload.rate_scale > 0.0 {
        cfg.workload.rate_scale
    } else {
        1.0
    }
}
