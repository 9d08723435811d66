//! No leakage from the future into what the policies see: the survival curves a scenario gives
//! the nodes are fitted only on sessions observed before the first window, so a trace that
//! differs only after that instant yields identical curves and rates.

use std::path::Path;

use hazardserve::scenario::{build, ScenarioConfig};
use hazardserve::store::Store;

use crate::common::{hs, ok, samples, tick_series, write_tick_json};

fn store_with(dir: &Path, name: &str, change_tail: bool) -> std::path::PathBuf {
    let traces = dir.join(format!("{name}-traces/preemption"));
    std::fs::create_dir_all(&traces).unwrap();
    for node in 0..3u64 {
        let mut data = tick_series(node + 1, 2000);
        if change_tail {
            // Everything after tick 1200 (beyond the cutoff at half of the span) differs.
            for (i, v) in data.iter_mut().enumerate().skip(1200) {
                *v = ((i / 3) % 2) as u8;
            }
        }
        write_tick_json(&traces, node, 30, &data);
    }
    let store = dir.join(format!("{name}-store"));
    let mut c = hs(&store);
    c.args([
        "ingest",
        "--format",
        "tick-json",
        "--polarity",
        "available",
        "--source",
        "spot",
    ])
    .arg(dir.join(format!("{name}-traces")));
    ok(c);
    let mut c = hs(&store);
    c.args(["ingest", "--source", "sample-requests"])
        .arg(samples().join("workload"));
    ok(c);
    store
}

#[test]
fn curves_do_not_depend_on_the_trace_after_the_first_window() {
    let tmp = tempfile::tempdir().unwrap();
    let a = store_with(tmp.path(), "a", false);
    let b = store_with(tmp.path(), "b", true);
    let mut cfg = ScenarioConfig::default();
    cfg.nodes.source = "spot".into();
    cfg.replay.window_length_s = 600.0;
    cfg.replay.windows = 3;
    let sa = build(&Store::open(&a).unwrap(), &cfg).unwrap();
    let sb = build(&Store::open(&b).unwrap(), &cfg).unwrap();
    assert_eq!(sa.cutoff_s, sb.cutoff_s);
    assert!(
        sa.cutoff_s < 1200.0 * 30.0,
        "cutoff {} is before the change",
        sa.cutoff_s
    );
    assert_eq!(sa.cluster.nodes.len(), 3);
    let mut differs_after = false;
    for (na, nb) in sa.cluster.nodes.iter().zip(&sb.cluster.nodes) {
        assert_eq!(na.name, nb.name);
        assert_eq!(na.exp_rate_per_s, nb.exp_rate_per_s, "{}", na.name);
        for age in [0.0, 30.0, 300.0, 1000.0, 5000.0] {
            for t in [10.0, 60.0, 600.0, 3600.0] {
                assert_eq!(
                    na.survival.conditional(age, t),
                    nb.survival.conditional(age, t),
                    "{} at a={age} t={t}",
                    na.name
                );
            }
        }
        differs_after |= na.sessions != nb.sessions;
    }
    // The timelines themselves (which only the engine and the oracle read) do differ.
    assert!(differs_after);
}
