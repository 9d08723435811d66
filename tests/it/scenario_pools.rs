//! Fleets of several pools: each node keeps its own pool's hardware, priors (fitted on its own
//! source before that source's own training cut) and price; always-up pools are never
//! interrupted; misconfigured pools are errors that name the pool and the key.

use std::path::{Path, PathBuf};

use hazardserve::policy::presets;
use hazardserve::replay::run_grid;
use hazardserve::scenario::{build, PoolConfig, ScenarioConfig};
use hazardserve::store::Store;

use crate::common::{hs, ok, samples, tick_series, write_tick_json};

/// Ingests `nodes` tick series of `ticks` ticks of `gap_s` seconds as source `source`.
fn ingest_ticks(store: &Path, dir: &Path, source: &str, nodes: u64, ticks: usize, gap_s: u32) {
    let traces = dir.join(format!("{source}-traces/preemption"));
    std::fs::create_dir_all(&traces).unwrap();
    for node in 0..nodes {
        write_tick_json(&traces, node, gap_s, &tick_series(node + 7 * nodes, ticks));
    }
    let mut c = hs(store);
    c.args([
        "-q",
        "ingest",
        "--format",
        "tick-json",
        "--polarity",
        "available",
        "--source",
        source,
    ])
    .arg(dir.join(format!("{source}-traces")));
    ok(c);
}

/// A store with two sources of different spans (so different training cuts) and the sample
/// workload.
fn two_source_store(dir: &Path) -> PathBuf {
    let store = dir.join("store");
    ingest_ticks(&store, dir, "spot-a", 3, 2_000, 30);
    ingest_ticks(&store, dir, "spot-b", 4, 3_000, 60);
    let mut c = hs(&store);
    c.args(["-q", "ingest", "--source", "sample-requests"])
        .arg(samples().join("workload"));
    ok(c);
    store
}

/// The error with its causes, `: `-separated.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut c = e.source();
    while let Some(x) = c {
        s.push_str(": ");
        s.push_str(&x.to_string());
        c = x.source();
    }
    s
}

fn pool(name: &str, source: Option<&str>, preset: &str, price: f64) -> PoolConfig {
    PoolConfig {
        name: Some(name.into()),
        source: source.map(str::to_string),
        preset: Some(preset.into()),
        price_per_node_hour: price,
        ..PoolConfig::default()
    }
}

fn fleet() -> ScenarioConfig {
    let mut cfg = ScenarioConfig::default();
    let mut b = pool("b", Some("spot-b"), "rtx4090", 0.5);
    b.overrides.slots = Some(3);
    let mut od = pool("od", None, "h100", 4.0);
    od.always_up = Some(2);
    cfg.pools = vec![pool("a", Some("spot-a"), "a100", 2.0), b, od];
    cfg.replay.window_length_s = 900.0;
    cfg.replay.windows = 3;
    cfg.replay.policies = vec!["hazard".into(), "least-loaded".into()];
    cfg.replay.include_overlap = false;
    cfg
}

#[test]
fn every_node_keeps_its_pools_hardware_priors_and_price() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&two_source_store(tmp.path())).unwrap();
    let cfg = fleet();
    let sc = build(&store, &cfg).unwrap();
    let c = &sc.cluster;
    assert_eq!(c.nodes.len(), 3 + 4 + 2);
    assert_eq!(c.pools.len(), 3);
    let (a100, rtx, h100) = (
        presets::find_hardware("a100").unwrap(),
        presets::find_hardware("rtx4090").unwrap(),
        presets::find_hardware("h100").unwrap(),
    );
    // The same sources alone, as single-pool scenarios.
    let alone = |source: &str| {
        let mut one = ScenarioConfig::default();
        one.nodes.source = source.into();
        one.replay = cfg.replay.clone();
        build(&store, &one).unwrap()
    };
    let (sa, sb) = (alone("spot-a"), alone("spot-b"));
    for (i, n) in c.nodes.iter().enumerate() {
        let p = c.pool(i);
        let (pool_name, preset, slots, price) = match p {
            0 => ("a", &a100, 8, 2.0),
            1 => ("b", &rtx, 3, 0.5),
            _ => ("od", &h100, 8, 4.0),
        };
        assert!(n.name.starts_with(&format!("{pool_name}/")), "{}", n.name);
        assert_eq!(n.spec.prefill_tok_s, preset.prefill_tok_s, "{}", n.name);
        assert_eq!(n.spec.decode_tok_s, preset.decode_tok_s, "{}", n.name);
        assert_eq!(n.spec.slots, slots, "{}", n.name);
        assert_eq!(c.pools[p].price_per_node_hour, price);
        // Priors: each node's curve is the one its own source gives it alone (fitted before
        // that source's own cut), at every age and horizon.
        let single = match p {
            0 => Some(&sa),
            1 => Some(&sb),
            _ => None,
        };
        let id = n.name.split_once('/').unwrap().1;
        match single {
            Some(s) => {
                let m = s.cluster.nodes.iter().find(|m| m.name == id).unwrap();
                for (age, t) in [(0.0, 60.0), (300.0, 600.0), (3_000.0, 1_200.0)] {
                    assert_eq!(
                        n.survival.conditional(age, t),
                        m.survival.conditional(age, t),
                        "{}",
                        n.name
                    );
                }
                assert_eq!(n.exp_rate_per_s, m.exp_rate_per_s);
                // The sessions are the source's, moved so that its first window falls on the
                // scenario's: same lengths, one shift per source.
                assert_eq!(n.sessions.len(), m.sessions.len());
                let shift = n.sessions[0].start_us - m.sessions[0].start_us;
                let w0 = sc.grid.windows[0].start_us;
                assert_eq!(shift, w0 - s.grid.windows[0].start_us);
                for (x, y) in n.sessions.iter().zip(&m.sessions) {
                    assert_eq!(
                        (x.start_us - y.start_us, x.end_us - y.end_us),
                        (shift, shift)
                    );
                }
            }
            None => {
                assert_eq!(n.survival.conditional(1e6, 1e6), 1.0);
                assert_eq!(n.exp_rate_per_s, 0.0);
            }
        }
    }
    // Different spans: different cuts, so spot-b is shifted.
    assert_ne!(sa.cutoff_s, sb.cutoff_s);
    assert!(
        sc.notes.iter().any(|n| n.contains("own training cut")),
        "{:?}",
        sc.notes
    );
}

#[test]
fn an_always_up_pool_is_never_interrupted_and_every_pool_is_billed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&two_source_store(tmp.path())).unwrap();
    let mut cfg = fleet();
    cfg.workload.load = Some(0.8);
    let sc = build(&store, &cfg).unwrap();
    let od: Vec<usize> = (0..sc.cluster.nodes.len())
        .filter(|&i| sc.cluster.pool(i) == 2)
        .collect();
    for w in &sc.grid.windows {
        for &i in &od {
            let mut up = Vec::new();
            sc.cluster.nodes[i].up_intervals(
                w.start_us,
                w.start_us + w.length_us,
                Default::default(),
                &mut up,
            );
            assert_eq!(up, vec![(w.start_us, w.start_us + w.length_us)]);
        }
    }
    let runs = run_grid(&sc.cluster, &sc.workload, &sc.config, &sc.grid).unwrap();
    let mut on_od = 0;
    for r in &runs {
        // Two always-up H100s bill 4 $/h each for the whole scored span at least.
        let span_h = (r.scored_s[1] - r.scored_s[0]) / 3_600.0;
        let od_dollars = r.cost.per_pool[2].1;
        assert!(
            (od_dollars - 2.0 * 4.0 * span_h).abs() < 1e-9,
            "{od_dollars}"
        );
        assert!(r.cost.per_pool[0].1 > 0.0 && r.cost.per_pool[1].1 > 0.0);
        for rec in &r.records {
            if let (Some(f), 1) = (rec.final_node, rec.nodes_visited) {
                if od.contains(&(f as usize)) {
                    on_od += 1;
                    assert_eq!(rec.interruptions, 0, "{rec:?}");
                }
            }
        }
    }
    assert!(on_od > 0, "no request ran on the on-demand pool");
}

#[test]
fn misconfigured_pools_name_the_pool_and_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(&two_source_store(tmp.path())).unwrap();
    let err = |edit: &dyn Fn(&mut ScenarioConfig)| {
        let mut cfg = fleet();
        edit(&mut cfg);
        match build(&store, &cfg) {
            Ok(_) => panic!("built"),
            Err(e) => chain(&e),
        }
    };
    let e = err(&|c| c.pools[0].source = Some("spot-z".into()));
    assert!(e.starts_with("pool \"a\" (pools[0]): source"), "{e}");
    assert!(e.contains("spot-z"), "{e}");
    let e = err(&|c| c.pools[1].sample = 5);
    assert!(
        e.starts_with("pool \"b\" (pools[1]): sample 5 is larger than the 4 node(s)"),
        "{e}"
    );
    let e = err(&|c| c.pools[2].price_per_node_hour = -0.5);
    assert_eq!(
        e,
        "pool \"od\" (pools[2]): price_per_node_hour must be >= 0, got -0.5"
    );
    let e = err(&|c| c.pools[2].always_up = Some(0));
    assert!(
        e.starts_with("pool \"od\" (pools[2]): always_up must be at least 1"),
        "{e}"
    );
    let e = err(&|c| {
        c.pools[0].filter_attribute = Some("zone".into());
        c.pools[0].filter_value = Some("nowhere".into());
    });
    assert!(e.starts_with("pool \"a\" (pools[0]): filter_value"), "{e}");
    let e = err(&|c| c.pools[1].preset = Some("rtx4091".into()));
    assert!(
        e.starts_with("pool \"b\" (pools[1]): preset") && e.contains("rtx4090"),
        "{e}"
    );
    let e = err(&|c| c.pools[1].name = Some("a".into()));
    assert!(e.contains("pools[1]") && e.contains("name"), "{e}");
    let e = err(&|c| c.pools[2].always_up = None);
    assert!(
        e.starts_with("pool \"od\" (pools[2]): source missing"),
        "{e}"
    );
    let e = err(&|c| c.nodes.source = "spot-a".into());
    assert!(e.contains("[nodes]"), "{e}");
    // The TOML form is checked the same way, with unknown keys named.
    let toml = "[[pools]]\nname = \"x\"\nsource = \"spot-a\"\nprice_per_nodehour = 1\n";
    let e = ScenarioConfig::from_toml(toml, "f.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("f.toml") && e.contains("price_per_nodehour"),
        "{e}"
    );
}

#[test]
fn a_pools_file_replays_from_the_cli_and_records_its_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_source_store(tmp.path());
    let file = tmp.path().join("fleet.toml");
    std::fs::write(
        &file,
        "[[pools]]\nname = \"spot\"\nsource = \"spot-a\"\npreset = \"a100\"\nprice_per_node_hour = 2.0\n\n\
         [[pools]]\nname = \"od\"\nalways_up = 1\npreset = \"h100\"\nprice_per_node_hour = 4.0\n\n\
         [replay]\nwindows = 2\nwindow_length_s = 600\npolicies = [\"hazard\", \"least-loaded\"]\ninclude_overlap = false\n",
    )
    .unwrap();
    let mut c = hs(&store);
    c.args(["replay", "--config"])
        .arg(&file)
        .args(["--format", "json"]);
    let out = ok(c);
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = &rows[0];
    assert!(row["dollars"].as_f64().unwrap() > 0.0, "{row}");
    assert!(row["goodput_per_dollar"].as_f64().is_some(), "{row}");
    assert!(
        row["dollars_by_pool"]["od"].as_f64().unwrap() > 0.0,
        "{row}"
    );
    // `--source` cannot override a pooled fleet.
    let mut c = hs(&store);
    c.args(["replay", "--config"])
        .arg(&file)
        .args(["--source", "spot-b"]);
    let o = crate::common::fails(c);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("[[pools]]"), "{e}");
}
