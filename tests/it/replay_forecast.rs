//! The service-time model's forecast against the engine it forecasts: a request placed on a
//! node in a generated state, with no later arrivals and exact estimates, completes exactly
//! when the policies' `T_i` said; a running request's source price counts it once; `fastest`
//! sees requests that are still prefilling.

use proptest::prelude::*;

use hazardserve::policy::iteration::{EngineKind, StepShape};
use hazardserve::policy::{
    ClusterView, Explanation, ForecastKind, NodeIdx, Params, Policy, PolicyKind, RequestView,
    StandardPolicy,
};
use hazardserve::replay::{
    simulate_with, Cluster, LengthEstimator, Node, NodeSpec, ReplayConfig, Request, RunSpec,
    Window, Workload,
};

use super::replay_support::*;

/// Places request `k` on node `script[k % len]` (queueing there when it is full); delegates
/// the placement of request `probe` to `fastest` or `hazard` and records the `T` of the node
/// it chose. Delegates migration checks of request `watch` to `hazard` and records the first
/// source price `T_i` it computed.
struct Probe {
    script: Vec<NodeIdx>,
    probe: u64,
    inner: StandardPolicy,
    placed: Option<(NodeIdx, f64, f64)>,
    watch: u64,
    source_t: Option<f64>,
}

/// The policies' constants under the `marginal` forecast: the replay of a node as the engine
/// will serve it, which these properties hold to the engine.
fn replayed() -> Params {
    Params {
        forecast: ForecastKind::Marginal,
        ..Params::default()
    }
}

impl Probe {
    fn new(script: Vec<NodeIdx>, probe: u64, kind: PolicyKind, watch: u64) -> Probe {
        Probe::with(script, probe, kind, watch, replayed())
    }

    fn with(
        script: Vec<NodeIdx>,
        probe: u64,
        kind: PolicyKind,
        watch: u64,
        params: Params,
    ) -> Probe {
        Probe {
            script,
            probe,
            inner: StandardPolicy::new(kind, params, 1),
            placed: None,
            watch,
            source_t: None,
        }
    }
}

impl Policy for Probe {
    fn kind(&self) -> PolicyKind {
        self.inner.kind()
    }

    fn place(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        if req.id == self.probe {
            let chosen = self.inner.place(view, req, out);
            if let Some(i) = chosen {
                self.placed.get_or_insert((i, out.t, out.imposed_s));
            }
            return chosen;
        }
        *out = Explanation::default();
        let i = self.script[req.id as usize % self.script.len()];
        view.nodes.get(i).is_some_and(|n| n.up).then_some(i)
    }

    fn check_migration(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        from: NodeIdx,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        let mut inner = StandardPolicy::new(PolicyKind::Hazard, *self.inner.params(), 1);
        let _ = inner.check_migration(view, req, from, out);
        if req.id == self.watch && self.source_t.is_none() {
            self.source_t = Some(out.t);
        }
        *out = Explanation::default();
        None
    }
}

#[derive(Debug, Clone)]
struct State {
    slots: Vec<u32>,
    cap: u64,
    p: f64,
    d: f64,
    f: f64,
    /// (arrival s, prompt, output, node) of the earlier requests.
    earlier: Vec<(f64, u64, u64, usize)>,
    probe_at: f64,
    probe: (u64, u64),
    policy: PolicyKind,
    /// The service-time model, and the iteration model's step shape.
    engine: EngineKind,
    shape: StepShape,
}

fn state() -> impl Strategy<Value = State> {
    (
        prop::collection::vec(1u32..5, 1..4),
        prop_oneof![Just(u64::MAX / 4), 3_000u64..20_000, 600u64..2_000],
        (
            50.0f64..4000.0,
            2.0f64..80.0,
            prop_oneof![Just(0.0), 0.0f64..1.5],
        ),
        prop::collection::vec((0.0f64..60.0, 1u64..3000, 1u64..400, 0usize..4), 0..14),
        (0.0f64..60.0, (1u64..3000, 1u64..400)),
        prop_oneof![Just(PolicyKind::Fastest), Just(PolicyKind::HazardNomigrate)],
        (
            prop_oneof![Just(EngineKind::Simple), Just(EngineKind::Iteration)],
            0.0f64..=1.0,
            prop_oneof![Just(0.0), 0.0f64..0.5],
            prop_oneof![1u32..64, 64u32..4096],
            prop_oneof![Just(0.0), 0.0f64..1.5],
            prop_oneof![Just(0.0), 0.0f64..0.2],
        ),
    )
        .prop_map(
            |(slots, cap, (p, d, f), earlier, (gap, probe), policy, (engine, a, c, b, e, z))| {
                let n = slots.len();
                let last = earlier.iter().map(|e| e.0).fold(0.0, f64::max);
                State {
                    earlier: earlier
                        .into_iter()
                        .map(|(a, pr, o, i)| (a, pr, o, i % n))
                        .collect(),
                    slots,
                    cap,
                    p,
                    d,
                    f,
                    probe_at: last + 0.001 + gap,
                    probe,
                    policy,
                    engine,
                    shape: StepShape {
                        fixed_share: a * (1.0 + e),
                        context_per_ktok: c,
                        max_batched_tokens: b,
                        lone_discount: e,
                        prefill_attention_per_ktok: z,
                    },
                }
            },
        )
}

fn cluster_of(s: &State) -> Cluster {
    Cluster::new(
        s.slots
            .iter()
            .enumerate()
            .map(|(i, &slots)| {
                let mut n: Node = always_up(&format!("n{i}"), slots, s.p, s.d);
                n.spec = NodeSpec {
                    kv_capacity_tokens: s.cap,
                    step: s.shape,
                    ..n.spec
                };
                n
            })
            .collect(),
    )
}

/// The earlier requests of `s` in arrival order, and the node each is scripted to.
fn earlier(s: &State) -> (Vec<Request>, Vec<usize>) {
    let mut requests: Vec<Request> = s
        .earlier
        .iter()
        .enumerate()
        .map(|(k, &(a, pr, o, _))| req(k as u64, a, pr.min(s.cap / 4), o.min(s.cap / 2)))
        .collect();
    // The engine sorts by arrival (stably): script each request's node by its rank.
    requests.sort_by_key(|a| a.arrival_us);
    let script: Vec<usize> = {
        let mut order: Vec<(i64, usize)> =
            s.earlier.iter().map(|&(a, _, _, i)| (us(a), i)).collect();
        order.sort_by_key(|x| x.0);
        order.into_iter().map(|x| x.1).collect()
    };
    let script = if script.is_empty() { vec![0] } else { script };
    (requests, script)
}

/// The replay configuration of the forecast-equals-engine properties, under the `marginal`
/// forecast ([`replayed`]; the default `stationary` one holds the load of a node that batches
/// instead, which no arrival-free replay reproduces).
fn config(f: f64, engine: EngineKind) -> ReplayConfig {
    ReplayConfig {
        batch_slowdown: f,
        engine,
        estimator: LengthEstimator::Exact,
        validate: true,
        params: replayed(),
        ..ReplayConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The acceptance property: the forecast `T_i` of the node the policy chose equals the
    /// engine's completion of that request to 1e-9 relative, whatever the node holds
    /// (prefilling, decoding, queued requests, KV-bound queues, batch slowdown), under both
    /// service-time models (the iteration model with any step shape and token budget).
    /// The `marginal` forecast's `D`, the delay the probe imposes on the requests already on
    /// the node it chose, equals the engine's: the sum over every earlier request of its
    /// completion with the probe minus without it (to 1e-9 relative, a microsecond of rounding
    /// per request), and its `T` is still the probe's completion.
    #[test]
    fn marginal_delay_equals_the_engine(s in state()) {
        let cluster = cluster_of(&s);
        let (mut requests, script) = earlier(&s);
        let probe_id = requests.len() as u64;
        let cfg = config(s.f, s.engine);
        let params = Params { forecast: ForecastKind::Marginal, ..cfg.params };
        let spec = RunSpec::new(s.policy, Window::new(0, us(1e7)), 1, params);
        let alone = {
            let mut policy = Probe::with(script.clone(), probe_id, s.policy, u64::MAX, params);
            simulate_with(&cluster, &Workload::new(requests.clone()), &cfg, &spec, &mut policy)
                .expect("replay runs")
        };
        requests.push(req(probe_id, s.probe_at, s.probe.0.min(s.cap / 4), s.probe.1.min(s.cap / 2)));
        let mut policy = Probe::with(script, probe_id, s.policy, u64::MAX, params);
        let out = simulate_with(&cluster, &Workload::new(requests), &cfg, &spec, &mut policy)
            .expect("replay runs");
        let (_, t, imposed) = policy.placed.expect("the probe was placed");
        let done = out.records[probe_id as usize].completion_s.expect("the probe completes");
        prop_assert!((t - done).abs() <= 1e-9 * done.max(1e-6), "forecast {t} s, engine {done} s");
        let mut delay = 0.0;
        let mut total = 0.0;
        for (with, without) in out.records.iter().zip(&alone.records) {
            let (a, b) = (with.completion_s.expect("completes"), without.completion_s.expect("completes"));
            delay += a - b;
            total += a;
        }
        let n = alone.records.len() as f64;
        prop_assert!(imposed >= 0.0);
        prop_assert!(
            (imposed - delay.max(0.0)).abs() <= 1e-9 * total.max(1.0) + 1e-6 * n,
            "marginal forecast imposes {imposed} s, the engine {delay} s"
        );
    }

    #[test]
    fn forecast_equals_the_engine(s in state()) {
        let cluster = cluster_of(&s);
        let (mut requests, script) = earlier(&s);
        let probe_id = requests.len() as u64;
        requests.push(req(probe_id, s.probe_at, s.probe.0.min(s.cap / 4), s.probe.1.min(s.cap / 2)));
        let mut policy = Probe::new(script, probe_id, s.policy, u64::MAX);
        let cfg = config(s.f, s.engine);
        let spec = RunSpec::new(s.policy, Window::new(0, us(1e7)), 1, cfg.params);
        let out = simulate_with(&cluster, &Workload::new(requests), &cfg, &spec, &mut policy)
            .expect("replay runs");
        let (_, t, _) = policy.placed.expect("the probe was placed");
        let rec = &out.records[probe_id as usize];
        let done = rec.completion_s.expect("the probe completes");
        prop_assert!(
            (t - done).abs() <= 1e-9 * done.max(1e-6),
            "forecast {t} s, engine {done} s"
        );
    }

    /// The same property with prefix caches (the iteration engine): every request carries
    /// conversations' prefix blocks of 16 tokens ([`conversations`]), so the probe and the
    /// requests before it hit, pin and insert blocks on the nodes they are scripted to, and
    /// finite KV evicts; the forecast prices the probe's prefill less the prompt tokens its
    /// node's cache holds, and is still the engine's completion. Every cached forecast is
    /// checked against a fresh one on the way (`validate`).
    #[test]
    fn forecast_equals_the_engine_with_prefix_caches(s in state()) {
        let s = State { engine: EngineKind::Iteration, ..s };
        let cluster = cluster_of(&s);
        let (mut requests, script) = earlier(&s);
        let probe_id = requests.len() as u64;
        requests.push(req(probe_id, s.probe_at, s.probe.0.min(s.cap / 4), s.probe.1.min(s.cap / 2)));
        let workload = conversations(Workload::new(requests), 16);
        let mut policy = Probe::new(script, probe_id, s.policy, u64::MAX);
        let cfg = config(s.f, s.engine);
        let spec = RunSpec::new(s.policy, Window::new(0, us(1e7)), 1, cfg.params);
        let out = simulate_with(&cluster, &workload, &cfg, &spec, &mut policy)
            .expect("replay runs");
        let (_, t, _) = policy.placed.expect("the probe was placed");
        let rec = &out.records[probe_id as usize];
        let done = rec.completion_s.expect("the probe completes");
        prop_assert!(
            (t - done).abs() <= 1e-9 * done.max(1e-6),
            "forecast {t} s, engine {done} s (hit {} tokens)", rec.prefix_hit_tokens
        );
    }
}

/// Some probe in the cached property hits: the property is not vacuous.
#[test]
fn a_probe_after_its_conversation_hits_and_the_forecast_prices_it() {
    let cluster = Cluster::new(vec![always_up("a", 4, 2000.0, 20.0)]);
    let requests = vec![req(0, 0.0, 800, 10), req(1, 30.0, 1600, 10)];
    let workload = conversations(Workload::new(requests), 16);
    let mut policy = Probe::new(vec![0], 1, PolicyKind::Fastest, u64::MAX);
    let cfg = config(0.0, EngineKind::Iteration);
    let spec = RunSpec::new(PolicyKind::Fastest, Window::new(0, us(1e4)), 1, cfg.params);
    let out = simulate_with(&cluster, &workload, &cfg, &spec, &mut policy).expect("replay runs");
    let rec = &out.records[1];
    // Another conversation: only the shared first block (the system prompt) hits.
    assert_eq!(rec.prefix_hit_tokens, 16);
    let (_, t, _) = policy.placed.expect("placed");
    let done = rec.completion_s.expect("completes");
    assert!(
        (t - done).abs() <= 1e-9 * done,
        "forecast {t} s, engine {done} s"
    );
}

/// Migration's source price counts the request once: four requests decode together on one
/// node (batch slowdown 1: each at d / 4); at the first check the source's `T_i` of one of
/// them is exactly its remaining time in the engine, not the `rem b / d` longer that pricing
/// it as a fifth decoder would give.
#[test]
fn migration_source_counts_the_request_once() {
    // Under `marginal` (the replay) with lengths that differ, and under the default
    // `stationary` forecast with equal ones (all four leave together: the load it holds is
    // the load there is).
    for (forecast, step) in [(ForecastKind::Marginal, 100), (ForecastKind::Stationary, 0)] {
        let cluster = Cluster::new(vec![
            always_up("a", 8, 1e6, 20.0),
            always_up("b", 8, 1e6, 20.0),
        ]);
        let requests: Vec<Request> = (0..4).map(|k| req(k, 0.0, 10, 400 + step * k)).collect();
        let params = Params {
            forecast,
            ..replayed()
        };
        let mut policy = Probe::with(vec![0], u64::MAX, PolicyKind::Hazard, 0, params);
        let cfg = ReplayConfig {
            params,
            ..config(1.0, EngineKind::Simple)
        };
        let spec = RunSpec::new(PolicyKind::Hazard, Window::new(0, us(1e4)), 1, cfg.params);
        let out = simulate_with(&cluster, &Workload::new(requests), &cfg, &spec, &mut policy)
            .expect("replay runs");
        let t_i = policy.source_t.expect("a migration check priced request 0");
        let check_at = cfg.params.check_interval_s;
        let finish = out.records[0].completion_s.expect("completes") - 0.0;
        assert!(
            (t_i - (finish - check_at)).abs() <= 1e-9 * finish,
            "{forecast:?}: T_i {t_i} s against the engine's {} s",
            finish - check_at
        );
        // Counting it twice would add rem * b / d' with d' the rate of five decoders.
        let rem_at_check = 400.0 - check_at * 20.0 / 4.0;
        let doubled = rem_at_check / (20.0 / 5.0);
        assert!(
            t_i < doubled,
            "{forecast:?}: T_i {t_i} s is the double-counted price"
        );
    }
}

/// On a homogeneous cluster with long prefills, requests arriving while earlier ones are
/// still prefilling are spread over the nodes by `fastest` exactly as `least-loaded` spreads
/// them (the forecast sees the prefilling residents).
#[test]
fn fastest_spreads_requests_arriving_during_prefill() {
    let cluster = Cluster::new(
        (0..4)
            .map(|i| always_up(&format!("n{i}"), 8, 200.0, 10.0))
            .collect(),
    );
    // 10 s prefills, arrivals 1 s apart.
    let requests: Vec<Request> = (0..4).map(|k| req(k, k as f64, 2000, 100)).collect();
    let cfg = ReplayConfig {
        batch_slowdown: 1.0,
        ..checked()
    };
    let first = |kind| -> Vec<Option<u32>> {
        run(&cluster, requests.clone(), &cfg, kind, 1000.0)
            .records
            .iter()
            .map(|r| r.first_node)
            .collect()
    };
    let fastest = first(PolicyKind::Fastest);
    assert_eq!(fastest, first(PolicyKind::LeastLoaded));
    let mut nodes = fastest.clone();
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 4, "fastest stacked requests: {fastest:?}");
}

/// The forecast calibration on an always-up cluster with exact lengths, where no arrival
/// changes an earlier request's service (no batch slowdown, free slots): every cost-based
/// policy's `T` at placement is the realised service time (median ratio 1 to 1e-9, no error)
/// and nothing is lost (Brier 0); `compare --format json`'s `forecast` object carries it.
#[test]
fn calibration_is_exact_when_the_forecast_assumptions_hold() {
    let cluster = Cluster::new(vec![
        always_up("a", 4, 500.0, 20.0),
        always_up("b", 2, 300.0, 10.0),
    ]);
    let requests: Vec<Request> = (0..12)
        .map(|k| req(k, 0.7 * k as f64, 100 + 37 * k, 5 + 11 * k))
        .collect();
    let cfg = ReplayConfig {
        batch_slowdown: 0.0,
        estimator: LengthEstimator::Exact,
        ..checked()
    };
    for kind in [
        PolicyKind::Fastest,
        PolicyKind::Hazard,
        PolicyKind::HazardNomigrate,
        PolicyKind::Memoryless,
        PolicyKind::Oracle,
    ] {
        let out = run(&cluster, requests.clone(), &cfg, kind, 1e4);
        let rows = hazardserve::replay::aggregate(&[out.metrics()], &Default::default());
        let f = rows[0].forecast.as_ref().expect("a calibration");
        assert_eq!(f.t_n, 12, "{kind}: every request is scored");
        let ratio = f.t_ratio_median.expect("a ratio");
        assert!((ratio - 1.0).abs() <= 1e-9, "{kind}: median ratio {ratio}");
        assert!(f.t_mape.expect("a MAPE") <= 1e-9, "{kind}");
        assert_eq!(f.interruption_brier, Some(0.0), "{kind}");
        let json = rows[0].to_json();
        let r = json["forecast"]["t_ratio_median"]
            .as_f64()
            .expect("JSON field");
        assert!((r - 1.0).abs() <= 1e-9);
        assert!(json["forecast"]["t_mape"].is_number());
        assert!(json["forecast"]["interruption_brier"].is_number());
    }
}

/// With batch slowdown, requests that arrive later slow the earlier ones down: the forecast
/// (which assumes no later arrivals) under-predicts, and the calibration says so.
#[test]
fn calibration_sees_later_arrivals() {
    let cluster = Cluster::new(vec![always_up("a", 8, 1e4, 10.0)]);
    let requests: Vec<Request> = (0..6).map(|k| req(k, 0.5 * k as f64, 10, 200)).collect();
    let cfg = ReplayConfig {
        batch_slowdown: 1.0,
        estimator: LengthEstimator::Exact,
        ..checked()
    };
    let out = run(&cluster, requests, &cfg, PolicyKind::Fastest, 1e4);
    let rows = hazardserve::replay::aggregate(&[out.metrics()], &Default::default());
    let f = rows[0].forecast.as_ref().expect("a calibration");
    assert!(f.t_ratio_median.expect("a ratio") < 0.9, "{f:?}");
    assert!(f.t_mape.expect("a MAPE") > 0.1);
}

/// The forecast averaged over draws of the unknown lengths (`length_draws`), with the
/// `marginal` or `stationary` delay or without, stays the forecast the engine checks: in
/// validation mode every cached answer of every draw is compared with a fresh replay of the
/// node (a mismatch fails the run), on nodes that fail and recover, with queues. With exact
/// lengths the draws change nothing.
#[test]
fn length_draws_keep_the_cached_forecast_exact() {
    let cluster = Cluster::new(vec![
        node("a", 2, 400.0, 20.0, &[(-1e6, Some(40.0)), (55.0, None)]),
        node("b", 3, 300.0, 15.0, &[(-1e6, Some(90.0)), (100.0, None)]),
        always_up("c", 1, 500.0, 25.0),
    ]);
    let requests: Vec<Request> = (0..60)
        .map(|k| req(k, 1.7 * k as f64, 50 + 37 * (k % 7), 40 + 61 * (k % 5)))
        .collect();
    let workload = Workload::new(requests);
    for estimator in [
        LengthEstimator::Lognormal { sigma: 0.5 },
        LengthEstimator::Exact,
    ] {
        let cfg = ReplayConfig {
            batch_slowdown: 0.4,
            estimator,
            validate: true,
            ..ReplayConfig::default()
        };
        for kind in [
            PolicyKind::Fastest,
            PolicyKind::Hazard,
            PolicyKind::HazardNomigrate,
        ] {
            for forecast in [
                ForecastKind::Own,
                ForecastKind::Marginal,
                ForecastKind::Stationary,
            ] {
                let run = |draws: u32| {
                    let params = Params {
                        forecast,
                        length_draws: draws,
                        ..cfg.params
                    };
                    let spec = RunSpec::new(kind, Window::new(0, us(400.0)), 1, params);
                    hazardserve::replay::simulate(&cluster, &workload, &cfg, &spec)
                        .unwrap_or_else(|e| panic!("{kind} {forecast:?} {draws} draws: {e}"))
                };
                let (one, eight) = (run(1), run(8));
                if estimator == LengthEstimator::Exact {
                    assert_eq!(one.records, eight.records, "{kind} {forecast:?}");
                }
            }
        }
    }
}

/// On nodes that gain nothing from batching (`b = 1`: a phone's decoders share one request's
/// rate; under the iteration model a step with no fixed share), the `stationary` forecast is
/// the `marginal` one (`service::drains`): every policy's run is the same under both, in
/// validation mode, under both engines. On nodes that batch they differ. (The mutation that
/// never drains fails the first half, the one that always does the second.)
#[test]
fn on_nodes_that_do_not_batch_the_stationary_forecast_is_the_marginal_one() {
    let fleet = |fixed_share: f64| {
        let mut nodes = vec![
            node("a", 3, 400.0, 20.0, &[(-1e6, Some(60.0)), (70.0, None)]),
            always_up("b", 2, 300.0, 15.0),
            always_up("c", 4, 500.0, 25.0),
        ];
        for n in &mut nodes {
            n.spec.step = StepShape {
                fixed_share,
                ..n.spec.step
            };
        }
        Cluster::new(nodes)
    };
    let requests: Vec<Request> = (0..80)
        .map(|k| req(k, 0.9 * k as f64, 40 + 53 * (k % 5), 30 + 47 * (k % 7)))
        .collect();
    let workload = Workload::new(requests);
    let run = |cluster: &Cluster, cfg: &ReplayConfig, kind: PolicyKind, forecast: ForecastKind| {
        let params = Params {
            forecast,
            ..cfg.params
        };
        let spec = RunSpec::new(kind, Window::new(0, us(200.0)), 1, params);
        hazardserve::replay::simulate(cluster, &workload, cfg, &spec)
            .unwrap_or_else(|e| panic!("{kind} {forecast:?}: {e}"))
            .records
    };
    for engine in [EngineKind::Simple, EngineKind::Iteration] {
        let (phones, batching) = (fleet(0.0), fleet(0.7));
        let cfg = |batch_slowdown: f64| ReplayConfig {
            engine,
            batch_slowdown,
            validate: true,
            ..ReplayConfig::default()
        };
        let mut differ = false;
        for kind in [PolicyKind::Fastest, PolicyKind::Hazard] {
            assert_eq!(
                run(&phones, &cfg(1.0), kind, ForecastKind::Stationary),
                run(&phones, &cfg(1.0), kind, ForecastKind::Marginal),
                "{engine:?} {kind}"
            );
            differ |= run(&batching, &cfg(0.3), kind, ForecastKind::Stationary)
                != run(&batching, &cfg(0.3), kind, ForecastKind::Marginal);
        }
        assert!(differ, "{engine:?}: the forecasts differ where nodes batch");
    }
}

/// `length_draws` outside 1..=256 is refused with the name of the setting.
#[test]
fn length_draws_out_of_range_is_refused() {
    let cluster = Cluster::new(vec![always_up("a", 2, 400.0, 20.0)]);
    let workload = Workload::new(vec![req(0, 0.0, 10, 10)]);
    let cfg = ReplayConfig::default();
    for draws in [0, 257] {
        let params = Params {
            length_draws: draws,
            ..cfg.params
        };
        let spec = RunSpec::new(PolicyKind::Fastest, Window::new(0, us(100.0)), 1, params);
        let err = hazardserve::replay::simulate(&cluster, &workload, &cfg, &spec)
            .expect_err("refused")
            .to_string();
        assert!(err.contains("length_draws"), "{err}");
    }
}
