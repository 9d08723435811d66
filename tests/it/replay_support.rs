//! Helpers shared by the replay tests: small clusters, workloads and scripted policies.

#![allow(dead_code)]

use std::sync::Arc;

use hazardserve::policy::{
    ClusterView, Explanation, MoveMethod, NodeIdx, Params, Policy, PolicyKind, RequestView,
};
use hazardserve::replay::{
    simulate, Cluster, Node, NodeSpec, ReplayConfig, Request, RunOutput, RunSpec, UpSession,
    Window, Workload,
};
use hazardserve::survival::curve::{ConditionalSurvival, Exponential};

/// Seconds to microseconds.
pub fn us(s: f64) -> i64 {
    (s * 1e6).round() as i64
}

/// A curve that never fails (what a fit of a trace without failures gives).
pub fn flat() -> Arc<dyn ConditionalSurvival> {
    Arc::new(Exponential {
        mean: f64::INFINITY,
    })
}

/// A node with `slots`, prefill `p`, decode `d`, sessions given in seconds (`None` end = open).
pub fn node(name: &str, slots: u32, p: f64, d: f64, sessions: &[(f64, Option<f64>)]) -> Node {
    Node {
        name: name.to_string(),
        spec: NodeSpec {
            slots,
            kv_capacity_tokens: 1_000_000,
            prefill_tok_s: p,
            decode_tok_s: d,
            bandwidth_bytes_s: 1.25e9,
            step: Default::default(),
        },
        sessions: sessions
            .iter()
            .map(|&(a, b)| UpSession::new(us(a), b.map_or(UpSession::OPEN_END, us)))
            .collect(),
        survival: flat(),
        exp_rate_per_s: 0.0,
        truth: None,
    }
}

/// A node up for the whole trace.
pub fn always_up(name: &str, slots: u32, p: f64, d: f64) -> Node {
    node(name, slots, p, d, &[(-1e6, None)])
}

/// A request arriving `arrival_s` after the window start.
pub fn req(id: u64, arrival_s: f64, prompt: u64, output: u64) -> Request {
    Request {
        id,
        arrival_us: us(arrival_s),
        prompt_tokens: prompt,
        output_tokens: output,
    }
}

/// Validation mode on, the simple engine (the ablation, whose service times these tests work
/// out by hand) with the `own` forecast, everything else default.
pub fn checked() -> ReplayConfig {
    simple(ReplayConfig {
        validate: true,
        ..ReplayConfig::default()
    })
}

/// `cfg` on the simple engine with the `own` forecast, whatever the defaults are: the tests
/// that work service times out by hand name the engine and forecast they assume.
pub fn simple(cfg: ReplayConfig) -> ReplayConfig {
    ReplayConfig {
        engine: hazardserve::policy::iteration::EngineKind::Simple,
        params: hazardserve::policy::Params {
            forecast: hazardserve::policy::ForecastKind::Own,
            ..cfg.params
        },
        ..cfg
    }
}

/// One run of `policy` over `[0, length_s)` with seed 1.
pub fn run(
    cluster: &Cluster,
    requests: Vec<Request>,
    cfg: &ReplayConfig,
    policy: PolicyKind,
    length_s: f64,
) -> RunOutput {
    let spec = RunSpec::new(policy, Window::new(0, us(length_s)), 1, cfg.params);
    simulate(cluster, &Workload::new(requests), cfg, &spec).expect("replay runs")
}

/// Asserts two times agree within 2 us (the clock rounds durations up to the microsecond).
pub fn close(a: Option<f64>, b: f64) {
    let a = a.expect("a value");
    assert!((a - b).abs() <= 2e-6, "{a} vs {b}");
}

/// A scripted policy: places on the first feasible node of `prefer`; on its first migration
/// check of each request that is on `from`, moves it to `to` with the given cost, method and
/// overlap window.
pub struct Scripted {
    pub prefer: Vec<NodeIdx>,
    pub from: NodeIdx,
    pub to: NodeIdx,
    pub cost_s: f64,
    pub method: MoveMethod,
    pub window_s: f64,
    pub moved: Vec<u64>,
}

impl Scripted {
    pub fn new(prefer: Vec<NodeIdx>) -> Scripted {
        Scripted {
            prefer,
            from: usize::MAX,
            to: usize::MAX,
            cost_s: 0.0,
            method: MoveMethod::Recompute,
            window_s: 0.0,
            moved: Vec::new(),
        }
    }
}

impl Policy for Scripted {
    fn kind(&self) -> PolicyKind {
        // A migrating kind, so that the engine schedules migration checks.
        PolicyKind::Hazard
    }

    fn place(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        *out = Explanation::default();
        let need = req.kv_need();
        // Only the nodes a decision visits are current ([`ClusterView::candidates`]).
        self.prefer
            .iter()
            .copied()
            .find(|&i| view.candidates().any(|(j, n)| j == i && n.can_admit(need)))
    }

    fn check_migration(
        &mut self,
        _view: &ClusterView<'_>,
        req: &RequestView,
        from: NodeIdx,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        *out = Explanation::default();
        if from != self.from || self.moved.contains(&req.id) {
            return None;
        }
        self.moved.push(req.id);
        out.c_planned = self.cost_s;
        out.method = Some(self.method);
        out.window_s = self.window_s;
        Some(self.to)
    }
}

/// A chaotic policy for stress tests: random feasible placement, random moves with random
/// costs, methods and overlap windows (SplitMix64-seeded).
pub struct Chaos {
    pub rng: hazardserve::rng::SplitMix64,
}

impl Chaos {
    fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl Policy for Chaos {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Hazard
    }

    fn place(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        *out = Explanation::default();
        let need = req.kv_need();
        let feasible = view.nodes.iter().filter(|n| n.can_admit(need)).count() as u64;
        if feasible == 0 {
            return None;
        }
        let k = self.rng.below(feasible) as usize;
        view.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.can_admit(need))
            .nth(k)
            .map(|(i, _)| i)
    }

    fn check_migration(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        from: NodeIdx,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        *out = Explanation::default();
        if self.unit() < 0.5 {
            return None;
        }
        // Mostly a feasible node; sometimes any index at all, even down, full or out of range
        // ones: the engine must refuse what it cannot do.
        let need = req.kv_need();
        let feasible = view
            .nodes
            .iter()
            .enumerate()
            .filter(|&(j, n)| j != from && n.can_admit(need))
            .count() as u64;
        let j = if feasible > 0 && self.unit() < 0.8 {
            let k = self.rng.below(feasible) as usize;
            view.nodes
                .iter()
                .enumerate()
                .filter(|&(j, n)| j != from && n.can_admit(need))
                .nth(k)
                .map_or(from, |(j, _)| j)
        } else {
            self.rng.below(view.nodes.len() as u64 + 1) as usize
        };
        if j == from {
            return None;
        }
        out.c_planned = 3.0 * self.unit();
        out.method = Some(if self.unit() < 0.5 {
            MoveMethod::Transfer
        } else {
            MoveMethod::Recompute
        });
        out.window_s = if self.unit() < 0.5 {
            0.0
        } else {
            3.0 * self.unit()
        };
        Some(j)
    }
}

/// Default policy constants.
pub fn params() -> Params {
    Params::default()
}

/// `w` with prefix blocks of `block` tokens: request `k` belongs to conversation `k % 8`; its
/// prompt's blocks are one shared first block (a system prompt) and then its conversation's
/// blocks, as many as its prompt holds, so that requests of one conversation share their
/// leading blocks up to the shorter prompt. The conversations are the workload's, with a gap
/// between turns of 30 s, 2 or 10 minutes (60 / 30 / 10 %), so that the retained-state term,
/// idle-state migration and the oracle's foresight of the next turn all run.
pub fn conversations(w: Workload, block: u32) -> Workload {
    let ids = (0..w.requests.len())
        .map(|k| Some((k % 8) as u64))
        .collect();
    let gap = hazardserve::policy::retained::ReuseGap::from_steps(
        &[30.0, 120.0, 600.0],
        &[0.4, 0.1, 0.0],
    );
    let prefixes = w
        .requests
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let n = r.prompt_tokens / u64::from(block);
            let conv = (k % 8) as u64;
            let blocks = (0..n)
                .map(|b| if b == 0 { 7 } else { 1000 * (conv + 1) + b })
                .collect();
            hazardserve::replay::Prefix::new(block, blocks)
        })
        .collect();
    w.with_prefixes(prefixes)
        .with_conversations(ids)
        .with_reuse(gap)
}
