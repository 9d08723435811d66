//! `trigger` and `crossover` through the real binary.

use crate::common::{fails, hs, ok};

fn rows(args: &[&str]) -> Vec<serde_json::Value> {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = hs(tmp.path());
    c.args(args).args(["--format", "json"]);
    serde_json::from_str::<serde_json::Value>(&ok(c))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn num(r: &serde_json::Value, k: &str) -> f64 {
    r[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {r}"))
}

#[test]
fn trigger_reproduces_the_wan_finding_and_overlap_changes_the_price() {
    // The design's hop: 4.5k tokens of context, 250 tok/s prefill, a 100 Mb/s WAN link.
    let plain = rows(&["trigger"]);
    assert!(plain.len() >= 10);
    for r in &plain {
        for k in [
            "uptime_s",
            "l_i",
            "c_transfer",
            "c_recompute",
            "c_planned",
            "l_j",
            "risk_gain",
            "dt",
        ] {
            assert!(r.get(k).is_some(), "{k} missing: {r}");
        }
        // C_planned is the ~18 s re-prefill (transfer over WAN is far slower) ...
        let c = num(r, "c_planned");
        assert!((c - 18.1).abs() < 0.5, "{r}");
        assert_eq!(c, num(r, "c_recompute"));
        assert!(num(r, "c_transfer") > c);
        // ... which exceeds L_i, so risk_gain < 0 at every uptime, whatever h is.
        assert!(c > num(r, "l_i"), "{r}");
        assert!(num(r, "risk_gain") < 0.0, "{r}");
        let fires = r["fires"].as_array().unwrap();
        assert!(fires.len() >= 3);
        assert!(fires.iter().all(|f| f["fires"] == false), "{r}");
    }
    // Overlap: only the catch-up is paid, an order of magnitude less, but still no gain here.
    let overlap = rows(&["trigger", "--overlap"]);
    for (p, o) in plain.iter().zip(&overlap) {
        assert!(num(o, "c_planned") < num(p, "c_planned") / 5.0, "{o}");
        assert!(num(o, "risk_gain") > num(p, "risk_gain"), "{o}");
    }
    // On a spot-like source (increasing hazard, near its typical reclaim age) overlap fires.
    let spot = rows(&[
        "trigger",
        "--overlap",
        "--survival",
        "weibull:4,3600",
        "--remaining",
        "2000",
        "--uptimes",
        "5400",
        "--h",
        "2",
    ]);
    assert!(spot[0]["fires"][0]["fires"] == true, "{:?}", spot[0]);
}

#[test]
fn crossover_covers_every_tier_and_reports_never_as_null() {
    let v = rows(&[
        "crossover",
        "--model",
        "llama-3-8b",
        "--prefill",
        "250,11048",
    ]);
    assert_eq!(v.len(), 10);
    for r in &v {
        for k in ["link", "bandwidth_bytes_s", "prefill_tok_s", "c_star"] {
            assert!(r.get(k).is_some(), "{k} missing: {r}");
        }
    }
    let wan: Vec<_> = v.iter().filter(|r| r["link"] == "wan-100mbps").collect();
    assert!(
        wan.iter().all(|r| r["c_star"].is_null()),
        "transfer never wins over WAN: {wan:?}"
    );
    let nv = v
        .iter()
        .find(|r| r["link"] == "nvlink" && r["prefill_tok_s"] == 11048.0)
        .unwrap();
    let c = num(nv, "c_star");
    assert!((500.0..2000.0).contains(&c), "{nv}");

    let tmp = tempfile::tempdir().unwrap();
    let mut c = hs(tmp.path());
    c.args(["crossover", "--model", "gpt-17"]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("llama-3-8b"), "{err}");
}
