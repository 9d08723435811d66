//! Every public trace in ../shared/traces-public ingests through the real binary with the right
//! adapter, and the counts measured independently on these files come out (or are explained).

use std::path::{Path, PathBuf};

use hazardserve::public::PUBLIC_SOURCES;

use crate::common::{hs, ok, shared};

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn sql(store: &Path, q: &str) -> serde_json::Value {
    let mut c = hs(store);
    c.args(["sql", "--format", "json", q]);
    serde_json::from_str(&ok(c)).unwrap()
}

fn int(v: &serde_json::Value, key: &str) -> i64 {
    v[0][key]
        .as_i64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn every_public_trace_ingests_with_its_adapter_and_the_counts_hold() {
    let Some(dir) = shared("traces-public") else {
        return;
    };
    // Every data file is read by exactly one catalogue entry (MANIFEST.md and SHA256SUMS are
    // documentation).
    let mut all = Vec::new();
    files_under(&dir, &mut all);
    for f in &all {
        let rel = f.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
        if rel == "MANIFEST.md" || rel == "SHA256SUMS" {
            continue;
        }
        let owners: Vec<&str> = PUBLIC_SOURCES
            .iter()
            .filter(|s| {
                s.paths
                    .iter()
                    .any(|p| rel == *p || rel.starts_with(&format!("{p}/")))
            })
            .map(|s| s.source)
            .collect();
        assert_eq!(owners.len(), 1, "{rel} is read by {owners:?}");
    }

    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.arg("ingest-public").arg(&dir);
    ok(c);

    let sources = sql(
        &store,
        "SELECT source, sessions, rejects FROM sources ORDER BY source",
    );
    let rows = sources.as_array().unwrap();
    assert_eq!(rows.len(), PUBLIC_SOURCES.len());
    for r in rows {
        assert_eq!(r["rejects"], 0, "{r}");
        assert!(r["sessions"].as_i64().unwrap() > 0, "{r}");
    }

    // FTA LANL: 3,577 nodes (951 of them without an up interval) and 19,874 up intervals.
    let v = sql(
        &store,
        "SELECT nodes, sessions, events FROM sources WHERE source = 'fta-lanl05'",
    );
    assert_eq!(
        (int(&v, "nodes"), int(&v, "sessions"), int(&v, "events")),
        (3577, 19874, 19874)
    );

    // Bamboo p3: 177 instances, 167 ended by preemption, 10 censored (and Parcae's LF copy agrees).
    for (source, prefix) in [("bamboo-events", "p3-trace/%"), ("parcae-p3", "%")] {
        let v = sql(
            &store,
            &format!("SELECT count(*) AS n, sum(event)::BIGINT AS e FROM sessions WHERE source = '{source}' AND node_id LIKE '{prefix}'"),
        );
        assert_eq!((int(&v, "n"), int(&v, "e")), (177, 167), "{source}");
    }

    // Can't Be Late binary files: 3,859 up-runs, 21 right-censored, 7 left-truncated.
    let v = sql(
        &store,
        "SELECT sum(sessions)::BIGINT AS n, sum(censored)::BIGINT AS c, sum(left_truncated)::BIGINT AS lt FROM sources WHERE source IN ('cbl-availability-1node', 'cbl-preemption-1node')",
    );
    assert_eq!((int(&v, "n"), int(&v, "c"), int(&v, "lt")), (3859, 21, 7));

    // GCE: 2,170 VMs. The independent count of 869 preempted sessions includes 64 inserts that
    // failed (the operation carries an `error`: quota, exhausted zone) and were followed seconds
    // later by a `preempted` operation; no VM ran, so they are not sessions here. It excludes
    // the 2 VMs first seen at their preemption (left truncated): 869 - 64 + 2 = 807. The 351
    // sessions that reached the 24-hour cap are their own end cause.
    let v = sql(
        &store,
        "SELECT (SELECT nodes FROM sources WHERE source = 'gce-preemptible') AS vms, sum(event)::BIGINT AS ended, count(*) FILTER (end_cause = 'lifetime-cap') AS cap FROM sessions WHERE source = 'gce-preemptible'",
    );
    assert_eq!(
        (int(&v, "vms"), int(&v, "ended"), int(&v, "cap")),
        (2170, 807, 351)
    );

    // Polarity: the published 2022-10-26 JSON (1 = available) and the raw probe CSVs of the same
    // campaign (fail = 1) give the same up-runs per series: same count, same tick lengths.
    let json_runs = sql(
        &store,
        "SELECT regexp_extract(node_id, '[^/]+$') AS series, count(*) AS n, sum(round(duration_s / 600))::BIGINT AS ticks, sum(event)::BIGINT AS e FROM sessions WHERE source = 'cbl-availability-1node' AND node_id LIKE '%aws-10-26-2022%' GROUP BY ALL ORDER BY series",
    );
    let csv_runs = sql(
        &store,
        "SELECT regexp_extract(node_id, '[^/]+$') AS series, count(*) AS n, sum(round(duration_s / 600))::BIGINT AS ticks, sum(event)::BIGINT AS e FROM sessions WHERE source = 'cbl-raw-probes' AND node_id LIKE '%2022-10-26T22-05%' GROUP BY ALL ORDER BY series",
    );
    assert_eq!(json_runs.as_array().unwrap().len(), 8);
    assert_eq!(json_runs, csv_runs);
}
