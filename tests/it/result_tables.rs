//! The book's result tables are `hazardserve report`'s tables: every block between
//! `<!-- report-table KEY -->` and `<!-- /report-table -->`, in any page of `docs/src` or in
//! README.md, must equal the table that a fresh report prints, made by the commands the pages
//! show (`ingest-public`, the Azure conv workload, `replay --config
//! reports/scenarios/<KEY>.toml`, `report`). A stale table fails the test;
//! `HAZARDSERVE_BLESS=1` rewrites the blocks instead. Each table has one home: a key in two
//! places fails, and so does a table of [`RESULT_TABLES`] that no page holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hazardserve::report::{
    CALIBRATION_HEADER, CAUSES_HEADER, CELLS_HEADER, COMPARISON_HEADER, COST_HEADER, GROUPS_HEADER,
    MAP_CALIBRATION_HEADER, SHAPE_HEADER, STATE_HEADER, TICKS_HEADER, VALIDATION_HEADER,
};

use crate::common::{hs, ok, shared};

const BEGIN: &str = "<!-- report-table ";

/// The book's slice of the regime map (`report-table regime-map-slice`): these cells of
/// `reports/sweeps/regime-map.toml`, run with `sweep --where` and reported with
/// `report --where`. A cell's result depends only on its own scenario, so the slice's numbers
/// are the full map's.
const MAP_SLICE: [&str; 3] = [
    "workload.source=long-output",
    "hardware.link=10gbe",
    "policy.survival_curve+policy.tail=linear+exponential",
];
const END: &str = "<!-- /report-table -->";

/// The committed result tables: each must be in exactly one page.
const RESULT_TABLES: [&str; 29] = [
    "hazard-shape",
    "causes",
    "ticks",
    "groups",
    "validation",
    "gce-azure-conv",
    "gce-azure-conv-calibration",
    "cbl-p3-azure-conv",
    "cbl-p3-azure-conv-calibration",
    "fleet-spot-h100",
    "fleet-spot-h100-cost",
    "fleet-spot-h100-calibration",
    "fleet-swarm",
    "fleet-swarm-cost",
    "fleet-swarm-calibration",
    "fleet-two-cloud",
    "fleet-two-cloud-cost",
    "fleet-two-cloud-calibration",
    "fleets-sweep",
    "regime-map-slice",
    "regime-map-slice-calibration",
    "two-class-control",
    "two-class-control-calibration",
    "engine-fidelity",
    "engine-slice",
    "engine-slice-calibration",
    "stateful-slice-cache",
    "stateful-slice",
    "stateful-slice-calibration",
];

/// The table of `md` whose header row is `header`, as Markdown lines (header, rule, rows).
fn table(md: &str, header: &[&str]) -> Option<String> {
    let head = format!("| {} |", header.join(" | "));
    table_where(md, |l| l == head)
}

/// The first table of `md` whose header row satisfies `is_header`.
fn table_where(md: &str, is_header: impl Fn(&str) -> bool) -> Option<String> {
    let mut lines = md.lines().skip_while(|l| !is_header(l));
    let first = lines.next()?;
    let mut out = vec![first];
    out.extend(lines.take_while(|l| l.starts_with('|')));
    Some(out.join("\n"))
}

/// A page's generated blocks: key and body (the lines between the markers).
fn blocks(readme: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = readme;
    while let Some(i) = rest.find(BEGIN) {
        let after = &rest[i + BEGIN.len()..];
        let key_end = after
            .find("-->")
            .expect("a report-table marker ends with -->");
        let key = after[..key_end].trim().to_string();
        let body_start = after[key_end..]
            .find('\n')
            .map_or(after.len(), |n| key_end + n + 1);
        let body = &after[body_start..];
        let end = body.find(END).expect("every report-table block is closed");
        out.push((key, body[..end].trim_end().to_string()));
        rest = &body[end..];
    }
    out
}

/// `report --out DIR [--source S]...`'s Markdown.
fn report(store: &Path, dir: &Path, sources: &[String]) -> String {
    let mut c = hs(store);
    c.args(["-q", "report", "--out"]).arg(dir);
    for s in sources {
        c.args(["--source", s]);
    }
    ok(c);
    std::fs::read_to_string(dir.join("report.md")).unwrap()
}

/// The cells table and the forecast calibration table of `reports/sweeps/<id>.toml` run as
/// sweep `id` and reported with `report --source SOURCE --sweep ID` into `dir`.
fn sweep_cells(
    store: &Path,
    root: &Path,
    dir: &Path,
    id: &str,
    source: &str,
) -> (String, String, Option<String>) {
    let mut c = hs(store);
    c.current_dir(root)
        .args(["-q", "sweep", "--grid"])
        .arg(format!("reports/sweeps/{id}.toml"))
        .args(["--id", id]);
    ok(c);
    let mut c = hs(store);
    c.args(["-q", "report", "--out"])
        .arg(dir)
        .args(["--source", source, "--sweep", id]);
    ok(c);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let cells = table_where(&md, |l| l.starts_with('|') && l.contains(CELLS_HEADER[0]))
        .unwrap_or_else(|| panic!("no cells table:\n{md}"));
    let calibration = table_where(&md, |l| {
        l.starts_with('|') && l.contains(MAP_CALIBRATION_HEADER[0])
    })
    .unwrap_or_else(|| panic!("no calibration table:\n{md}"));
    let state = table_where(&md, |l| l.starts_with('|') && l.contains(STATE_HEADER[0]));
    (cells, calibration, state)
}

#[test]
fn result_tables_are_what_report_prints_now() {
    let (Some(traces), Some(workloads)) = (shared("traces-public"), shared("workloads-public"))
    else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("pub");
    let mut c = hs(&store);
    c.args(["-q", "ingest-public"]).arg(&traces);
    ok(c);
    let mut fresh: BTreeMap<String, String> = BTreeMap::new();
    let public = report(&store, &tmp.path().join("pub-report"), &[]);
    for (key, header) in [
        ("hazard-shape", &SHAPE_HEADER[..]),
        ("validation", &VALIDATION_HEADER[..]),
        ("causes", &CAUSES_HEADER[..]),
        ("ticks", &TICKS_HEADER[..]),
        ("groups", &GROUPS_HEADER[..]),
    ] {
        let t = table(&public, header).unwrap_or_else(|| panic!("no {key} table:\n{public}"));
        fresh.insert(key.into(), t);
    }
    crate::common::ingest(
        &store,
        "azure-llm",
        "azure-conv",
        &workloads.join("azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"),
    );
    // Every block of every page, with the page it is in: each key has one home.
    let pages = crate::common::doc_pages(root);
    let mut home: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut keys: Vec<(String, String)> = Vec::new();
    for (path, text) in &pages {
        for (key, body) in blocks(text) {
            if let Some(other) = home.insert(key.clone(), path.clone()) {
                panic!(
                    "result table {key:?} is in both {} and {}: a table has one page",
                    other.display(),
                    path.display()
                );
            }
            keys.push((key, body));
        }
    }
    for key in RESULT_TABLES {
        assert!(
            home.contains_key(key),
            "no page of docs/src holds the result table {key:?}"
        );
    }
    // The long-output workload and the positive control fleet (committed, with its laws):
    // the map slice and the control scenario read them.
    crate::common::ingest_long_output(&store, tmp.path());
    crate::common::ingest_control_fleet(&store);
    if keys.iter().any(|(k, _)| k == "regime-map-slice") {
        let wheres: Vec<&str> = MAP_SLICE.iter().flat_map(|w| ["--where", w]).collect();
        let mut c = hs(&store);
        c.current_dir(root)
            .args(["-q", "sweep", "--grid", "reports/sweeps/regime-map.toml"])
            .args(&wheres)
            .args(["--id", "regime-map-slice"]);
        ok(c);
        let dir = tmp.path().join("map-report");
        let mut c = hs(&store);
        c.args(["-q", "report", "--out"])
            .arg(&dir)
            .args(["--source", "parcae-p3", "--sweep", "regime-map-slice"])
            .args(&wheres);
        ok(c);
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        let t = table_where(&md, |l| l.starts_with('|') && l.contains(CELLS_HEADER[0]))
            .unwrap_or_else(|| panic!("no cells table:\n{md}"));
        fresh.insert("regime-map-slice".into(), t);
        let t = table_where(&md, |l| {
            l.starts_with('|') && l.contains(MAP_CALIBRATION_HEADER[0])
        })
        .unwrap_or_else(|| panic!("no calibration table:\n{md}"));
        fresh.insert("regime-map-slice-calibration".into(), t);
    }
    // The fleet sweep (`report-table fleets-sweep`: every cell of `reports/sweeps/fleets.toml`,
    // reported with `report --sweep fleets`) and the engine slice of the regime map
    // (`engine-slice`: `reports/sweeps/engine-slice.toml`): both read the Mooncake conversation
    // workload.
    // The stateful slice (`stateful-slice`: `reports/sweeps/stateful-slice.toml`) also reads
    // the synthetic conversations its comment's command writes, and has the prefix-cache
    // table (`stateful-slice-cache`).
    let sweeps = [
        ("fleets-sweep", "fleets", "skynomad-h100"),
        ("engine-slice", "engine-slice", "gce-preemptible"),
        ("stateful-slice", "stateful-slice", "gce-preemptible"),
    ];
    if sweeps.iter().any(|s| keys.iter().any(|(k, _)| k == s.0)) {
        crate::common::ingest(
            &store,
            "mooncake",
            "mooncake-conversation",
            &workloads.join("mooncake-fast25/conversation_trace.jsonl"),
        );
    }
    if keys.iter().any(|(k, _)| k == "stateful-slice") {
        let conv = tmp.path().join("synth-conversation.jsonl");
        let mut c = hs(&store);
        c.args([
            "-q",
            "synth",
            "workload",
            "--class",
            "conversation",
            "--rate",
            "1",
        ])
        .args(["--duration", "3600", "--out"])
        .arg(&conv);
        ok(c);
        crate::common::ingest(&store, "qwen-bailian", "synth-conversation", &conv);
    }
    for (key, id, source) in sweeps {
        if keys.iter().any(|(k, _)| k == key) {
            let (cells, calibration, state) =
                sweep_cells(&store, root, &tmp.path().join(id), id, source);
            fresh.insert(key.into(), cells);
            fresh.insert(format!("{key}-calibration"), calibration);
            if let Some(t) = state {
                fresh.insert(format!("{key}-cache"), t);
            }
        }
    }
    // The iteration engine's fidelity table (`hazardserve presets --fidelity`).
    if keys.iter().any(|(k, _)| k == "engine-fidelity") {
        let t = hazardserve::policy::calibration::fidelity_markdown();
        fresh.insert("engine-fidelity".into(), t.trim_end().to_string());
    }
    // `KEY-calibration` is the forecast calibration table of scenario KEY's report, and
    // `KEY-cost` its cost table (a priced fleet).
    const CALIBRATION: &str = "-calibration";
    const COST: &str = "-cost";
    for (key, _) in &keys {
        if fresh.contains_key(key) || key.ends_with(CALIBRATION) || key.ends_with(COST) {
            continue;
        }
        let scenario: PathBuf = root.join("reports/scenarios").join(format!("{key}.toml"));
        assert!(
            scenario.exists(),
            "block {key:?} of {} is neither a report table nor a committed scenario",
            home[key].display()
        );
        let text = std::fs::read_to_string(&scenario).unwrap();
        let cfg = hazardserve::scenario::ScenarioConfig::from_toml(&text, key).unwrap();
        let sources = cfg.node_sources();
        let mut c = hs(&store);
        c.current_dir(root)
            .args(["-q", "replay", "--config"])
            .arg(&scenario);
        ok(c);
        // No placement of a committed scenario priced a node without the engine's forecast.
        let mut c = hs(&store);
        c.args(["-q", "compare", "--format", "json"]);
        let rows: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
        for row in rows.as_array().unwrap() {
            assert_eq!(
                row["forecast_fallbacks"].as_f64(),
                Some(0.0),
                "{key}: forecast fallbacks in {row}"
            );
        }
        let md = report(&store, &tmp.path().join(key), &sources);
        let t = table(&md, &COMPARISON_HEADER).unwrap_or_else(|| panic!("no comparison:\n{md}"));
        fresh.insert(key.clone(), t);
        let t = table(&md, &CALIBRATION_HEADER)
            .unwrap_or_else(|| panic!("no calibration table:\n{md}"));
        fresh.insert(format!("{key}{CALIBRATION}"), t);
        if let Some(t) = table(&md, &COST_HEADER) {
            fresh.insert(format!("{key}{COST}"), t);
            // A priced fleet's report also has the dollars by pool and the bars.
            assert!(md.contains("Dollars per window by pool"), "{md}");
            assert!(md.contains("goodput-per-dollar.svg"), "{md}");
            assert!(
                tmp.path().join(key).join("goodput-per-dollar.svg").exists(),
                "{key}: no goodput-per-dollar plot"
            );
        }
    }
    for (key, _) in &keys {
        assert!(
            fresh.contains_key(key),
            "block {key:?} of {} names no committed scenario",
            home[key].display()
        );
    }
    if std::env::var_os("HAZARDSERVE_BLESS").is_some() {
        for (path, text) in &pages {
            let mut out = text.clone();
            for (key, old) in blocks(text) {
                let marker = format!("{BEGIN}{key} -->");
                let at = out.find(&marker).unwrap();
                let body = at + out[at..].find('\n').unwrap() + 1;
                let new = if old.is_empty() {
                    format!("{}\n", fresh[&key])
                } else {
                    fresh[&key].clone()
                };
                out.replace_range(body..body + old.len(), &new);
            }
            if out != *text {
                std::fs::write(path, out).unwrap();
            }
        }
        return;
    }
    for (key, old) in &keys {
        assert!(
            *old == fresh[key],
            "result table {key:?} of {} differs from a fresh report (rerun with \
             HAZARDSERVE_BLESS=1 to regenerate it):\n--- page\n{old}\n--- report\n{}",
            home[key].display(),
            fresh[key]
        );
    }
}

/// A number as prose or a table prints it: its value, the unit after it (`s`, `min`, `h`,
/// `d`, `%` or none) and the half-width of its last printed digit (the rounding it allows).
#[derive(Debug, Clone, PartialEq)]
struct Printed {
    value: f64,
    unit: String,
    half_ulp: f64,
}

/// Parses `token` (`-0.073`, `+2.066e-5`, `214,561`) as a printed number.
fn printed(token: &str, unit: &str) -> Option<Printed> {
    let t = token.replace(',', "");
    let value: f64 = t.parse().ok()?;
    if !value.is_finite() || !t.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    let (mantissa, exp) = match t.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (t.as_str(), 0),
    };
    let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    Some(Printed {
        value,
        unit: unit.to_string(),
        half_ulp: 0.5 * 10f64.powi(exp - decimals),
    })
}

/// Every `value [low, high]` in `text` (each with an optional unit), as printed.
fn intervals(text: &str) -> Vec<[Printed; 3]> {
    const UNITS: [&str; 6] = ["s", "ms", "min", "h", "d", "%"];
    let one = |s: &str| -> Option<Printed> {
        let mut words = s.split_whitespace();
        let num = words.next()?;
        let unit = words.next().unwrap_or("");
        if words.next().is_some() || !(unit.is_empty() || UNITS.contains(&unit)) {
            return None;
        }
        printed(num, unit)
    };
    // One line: prose wraps an interval across lines.
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = text.as_str();
    let mut out = Vec::new();
    for (i, _) in text.match_indices(" [") {
        let Some(close) = text[i + 2..].find(']') else {
            continue;
        };
        let inside = &text[i + 2..i + 2 + close];
        let Some((lo, hi)) = inside.split_once(", ") else {
            continue;
        };
        // The value: the last word before the bracket, or the last two (a number and a unit).
        let before: Vec<&str> = text[..i].split_whitespace().rev().take(2).collect();
        let trim = |w: &str| {
            w.trim_start_matches(|c: char| "(*`".contains(c))
                .to_string()
        };
        let value = match before.as_slice() {
            [u, n, ..] if UNITS.contains(u) => one(&format!("{} {u}", trim(n))),
            [n, ..] => one(&trim(n)),
            _ => None,
        };
        if let (Some(v), Some(l), Some(h)) = (value, one(lo), one(hi)) {
            out.push([v, l, h]);
        }
    }
    out
}

/// Whether `prose` is `table` rounded as prose prints it: the same units, each table number
/// printed at least as finely as the prose's, and within the half-width of the prose's last
/// digit of it.
fn rounds_to(prose: &[Printed; 3], table: &[Printed; 3]) -> bool {
    prose.iter().zip(table).all(|(p, t)| {
        let slack = p.half_ulp * 1.000_001 + 1e-15;
        p.unit == t.unit && t.half_ulp <= slack && (p.value - t.value).abs() <= slack
    })
}

/// Text outside code blocks and outside `report-table` blocks: the prose.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let (mut code, mut table) = (false, false);
    for l in text.lines() {
        if l.starts_with("```") {
            code = !code;
            continue;
        }
        if l.starts_with(BEGIN) {
            table = true;
        }
        if !code && !table {
            out.push_str(l);
            out.push('\n');
        }
        if l.starts_with(END) {
            table = false;
        }
    }
    out
}

/// The front page's numbers and the trace pages' medians are the result tables' numbers: every
/// `value [low, high]` in the prose of README.md and `docs/src/traces/` is, rounded as printed,
/// a cell of a `report-table` block (which `result_tables_are_what_report_prints_now`
/// makes again), so a rerun that changes a table fails here until the prose follows it.
#[test]
fn the_front_page_and_trace_pages_quote_the_result_tables() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = crate::common::doc_pages(root);
    let cells: Vec<[Printed; 3]> = pages
        .iter()
        .flat_map(|(_, text)| blocks(text))
        .flat_map(|(_, body)| intervals(&body))
        .collect();
    assert!(
        cells.len() > 500,
        "only {} intervals in the tables",
        cells.len()
    );
    let mut checked = 0;
    let mut missing = Vec::new();
    for (path, text) in &pages {
        let rel = path.strip_prefix(root).unwrap();
        if !(rel == Path::new("README.md") || rel.starts_with("docs/src/traces")) {
            continue;
        }
        for q in intervals(&prose(text)) {
            checked += 1;
            if !cells.iter().any(|t| rounds_to(&q, t)) {
                missing.push(format!(
                    "{}: {:?}",
                    rel.display(),
                    q.map(|p| (p.value, p.unit))
                ));
            }
        }
    }
    assert!(checked >= 15, "only {checked} intervals quoted");
    eprintln!(
        "{checked} quoted intervals checked against {} table cells",
        cells.len()
    );
    assert!(
        missing.is_empty(),
        "intervals quoted in prose that no result table holds (rounded as printed):\n{}",
        missing.join("\n")
    );
}

#[test]
fn interval_parsing_and_rounding() {
    let got = intervals("by -0.073 [-0.117, -0.028] s, median 1.1 h [56 min, 1.3 h] and x [a, b]");
    assert_eq!(got.len(), 2, "{got:?}");
    let table = intervals("| -0.07253 [-0.1174, -0.02767] | 1.1 h [56 min, 1.3 h] |");
    assert!(rounds_to(&got[0], &table[0]));
    assert!(rounds_to(&got[1], &table[1]));
    // A digit off, or another unit, is not the table's number.
    let off = intervals("-0.074 [-0.117, -0.028]");
    assert!(!rounds_to(&off[0], &table[0]));
    let unit = intervals("1.1 min [56 min, 1.3 h]");
    assert!(!rounds_to(&unit[0], &table[1]));
    // A coarser table cell is no source for finer prose.
    let fine = intervals("-0.07256 [-0.1174, -0.02767]");
    let coarse = intervals("| -0.07 [-0.1, -0.03] |");
    assert!(!rounds_to(&fine[0], &coarse[0]));
    assert!(!rounds_to(&fine[0], &table[0]));
    let e = intervals("+2.066e-5 [0, 4.649e-5]");
    assert_eq!(e[0][0].half_ulp, 0.5e-8);
}
