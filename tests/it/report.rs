//! `hazardserve report`: its numbers are the ones `fit --format json` and `compare --format
//! json` print, every SVG parses and names its axes with units, the HTML page is
//! self-contained, and headless Chromium renders it with the plots visible (not blank).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{hs, ok, skip};
use crate::tui_common::demo_store;

fn json(store: &Path, args: &[&str]) -> Value {
    let mut c = hs(store);
    c.args(["-q"]).args(args).args(["--format", "json"]);
    serde_json::from_str(&ok(c)).unwrap()
}

fn human(x: f64) -> String {
    hazardserve::output::human_float(x)
}

fn make_report(dir: &Path) {
    let mut c = hs(demo_store());
    c.args(["-q", "report", "--out"])
        .arg(dir)
        .args(["--run", "run-demo", "--sweep", "demo-map"]);
    ok(c);
}

/// A row of the end-cause, tick-source or group-comparison table (they follow the validation
/// table when a source has rows in them).
fn cause_or_tick(l: &str) -> bool {
    let cells: Vec<&str> = l.split(" | ").collect();
    cells.len() == 8 && cells[3].ends_with('%')
        || cells.len() == 5 && l.ends_with(" s |")
        || cells.len() == 7 && cells[5].contains(" sessions): ")
}

#[test]
fn report_numbers_come_from_fit_and_compare_and_its_plots_are_well_formed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rep");
    make_report(&dir);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    // Survival rows: the pooled fit of `fit --format json`.
    for source in ["sample-gce", "sample-hpc", "sample-spot"] {
        let fit = json(demo_store(), &["fit", "--source", source]);
        let g = &fit.as_array().unwrap()[0];
        let k = human(g["weibull_shape"].as_f64().unwrap());
        // Rows before the regime map (whose cells table has a row per source too).
        let rows: Vec<&str> = md
            .split("## Regime map")
            .next()
            .unwrap()
            .lines()
            .filter(|l| l.starts_with(&format!("| {source} |")) && !cause_or_tick(l))
            .collect();
        assert_eq!(
            rows.len(),
            4,
            "shape, Weibull, validation and trigger rows of {source}:\n{md}"
        );
        let (shape, weibull, validation) = (rows[0], rows[1], rows[2]);
        assert!(
            weibull.contains(&format!("| {k} [")),
            "{weibull} lacks k = {k}"
        );
        assert!(shape.contains(g["verdict"].as_str().unwrap()), "{shape}");
        let sessions = g["sessions"].as_u64().unwrap();
        assert!(
            sessions < 1000,
            "the check below prints no thousands separator"
        );
        assert!(shape.contains(&format!("| {sessions} |")), "{shape}");
        // The median's interval is the one of `fit --format json`.
        let dur = |k: &str| g[k].as_f64().map(hazardserve::output::duration_text);
        if let (Some(m), Some(lo)) = (dur("median_s"), dur("median_ci_low_s")) {
            let hi = dur("median_ci_high_s").unwrap_or_else(|| "> ".into());
            assert!(
                shape.contains(&format!("| {m} [{lo}, {hi}")),
                "{shape} lacks the median {m} [{lo}, {hi}"
            );
        }
        if let Some(m) = g["shape_model"].as_str() {
            assert!(shape.contains(&format!("| {m} (")), "{shape} lacks {m}");
        }
        // Validation: the scores of `fit --validate`, at the report's split.
        let v = json(
            demo_store(),
            &["fit", "--source", source, "--validate", "--split", "0.6"],
        );
        for est in v.as_array().unwrap() {
            let r3 = |k: &str| est[k].as_f64().map(|x| (x * 1000.0).round() / 1000.0);
            let score = |k: &str| {
                let (lo, hi) = (format!("{k}_ci_low"), format!("{k}_ci_high"));
                match (r3(k), r3(&lo), r3(&hi)) {
                    (Some(x), Some(lo), Some(hi)) => Some(format!("{x} [{lo}, {hi}]")),
                    (Some(x), _, _) => Some(x.to_string()),
                    _ => None,
                }
            };
            let (Some(ibs), Some(c)) = (score("ibs"), score("concordance")) else {
                continue;
            };
            let text = format!("{ibs} / {c}");
            assert!(
                validation.contains(&text),
                "{validation} lacks {text} of {est}"
            );
        }
    }
    // Per-group curves: sample-spot splits by zone (its first attribute with 2 to 50 values);
    // each group is drawn with the session count of `fit --by zone`.
    let svg = std::fs::read_to_string(dir.join("survival-sample-spot.svg")).unwrap();
    let zones = json(
        demo_store(),
        &["fit", "--source", "sample-spot", "--by", "zone"],
    );
    assert!(zones.as_array().unwrap().len() >= 2, "{zones}");
    for g in zones.as_array().unwrap() {
        let label = format!(
            "{} ({} sessions)",
            g["group"].as_str().unwrap(),
            g["sessions"]
        );
        assert!(svg.contains(&label), "the survival plot lacks {label}");
    }
    // Trigger rows: `trigger --source S --format json` on the default grid.
    for source in ["sample-gce", "sample-hpc", "sample-spot"] {
        let t = json(demo_store(), &["trigger", "--source", source]);
        let best = t
            .as_array()
            .unwrap()
            .iter()
            .max_by(|a, b| {
                a["risk_gain"]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&b["risk_gain"].as_f64().unwrap())
            })
            .unwrap();
        let row = md
            .lines()
            .filter(|l| l.starts_with(&format!("| {source} |")) && !cause_or_tick(l))
            .nth(3)
            .unwrap_or_else(|| panic!("no trigger row of {source}:\n{md}"));
        let expect = format!(
            "| {source} | {} | {} |",
            human(best["dt"].as_f64().unwrap()),
            human(best["risk_gain"].as_f64().unwrap())
        );
        assert!(
            row.starts_with(&expect),
            "{row} does not start with {expect}"
        );
    }
    // Crossover: every c* of `crossover --format json` in its link's row, under its rate.
    let x = json(demo_store(), &["crossover"]);
    let header: Vec<&str> = md
        .lines()
        .find(|l| l.starts_with("| link | bandwidth |"))
        .expect("a crossover table")
        .split(" | ")
        .collect();
    for c in x.as_array().unwrap() {
        let link = c["link"].as_str().unwrap();
        let rate = format!("({} tok/s)", human(c["prefill_tok_s"].as_f64().unwrap()));
        let col = header
            .iter()
            .position(|h| h.contains(&rate))
            .unwrap_or_else(|| panic!("no column for {rate} in {header:?}"));
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {link} |")))
            .unwrap_or_else(|| panic!("no crossover row of {link}"));
        let cell = c["c_star"]
            .as_f64()
            .map_or("never".to_string(), |v| format!("{v:.0} tokens"));
        let got = row.split(" | ").nth(col).unwrap().trim_end_matches(" |");
        assert_eq!(got, cell, "c* of {link} at {rate}");
    }
    // Policy rows: `compare --format json`.
    let cmp = json(demo_store(), &["compare", "run-demo"]);
    for p in cmp.as_array().unwrap() {
        let name = p["policy"].as_str().unwrap();
        let mean = human(p["mean_completion_s"].as_f64().unwrap());
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no row of {name}"));
        assert!(row.contains(&format!("| {mean} [")), "{row} lacks {mean}");
    }
    // The regime map's cells: the paired differences of `sweep summary --format json`.
    let map = json(demo_store(), &["sweep", "summary", "demo-map"]);
    let table: Vec<&str> = md
        .split("## Regime map")
        .nth(1)
        .unwrap()
        .split("Forecast calibration per cell")
        .next()
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("| sample-"))
        .collect();
    assert_eq!(table.len(), map.as_array().unwrap().len());
    for (cell, row) in map.as_array().unwrap().iter().zip(&table) {
        for (key, col) in [
            ("hazard_vs_pooled", 3),
            ("pooled_vs_fastest", 5),
            ("hazard_vs_uptime", 8),
        ] {
            let d = &cell[key]["mean_completion_s"];
            let text = hazardserve::output::signed_interval_text(
                d["diff"].as_f64().unwrap(),
                d["ci_low"].as_f64().zip(d["ci_high"].as_f64()),
            );
            let got = row.split(" | ").nth(col).unwrap();
            assert_eq!(got, text, "{key} of {} in {row}", cell["cell"]);
        }
        let reference = cell["reference"].as_str().unwrap();
        assert!(
            row.contains(&format!("({reference}")),
            "{row} lacks {reference}"
        );
        let (term, load) = (
            cell["hazard_term"].as_str().unwrap(),
            cell["load_forecast"].as_str().unwrap(),
        );
        assert!(row.ends_with(&format!("| {term} | {load} |")), "{row}");
        assert_eq!(
            term == "pays",
            cell["pays"].as_bool().unwrap(),
            "{row}: the hazard term's verdict and pays agree"
        );
        assert_eq!(
            load == "pays",
            cell["load_forecast_pays"].as_bool().unwrap(),
            "{row}: the load forecast's verdict and its flag agree"
        );
    }
    // The regime map is there with its cell count.
    assert!(
        md.contains("## Regime map: sweep demo-map") && md.contains("12 cells"),
        "{md}"
    );
    // Every SVG parses and names both axes with a unit in parentheses.
    let mut svgs = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "svg") {
            svgs += 1;
            let text = std::fs::read_to_string(&p).unwrap();
            let doc = roxmltree::Document::parse(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let texts: Vec<String> = doc
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .filter_map(|n| n.text().map(str::to_string))
                .collect();
            let with_unit = texts
                .iter()
                .filter(|t| t.contains('(') && t.contains(')'))
                .count();
            assert!(
                with_unit >= 1,
                "{}: no axis label with a unit in {texts:?}",
                p.display()
            );
            assert!(texts.len() >= 4, "{}: {texts:?}", p.display());
            assert!(md.contains(&format!("]({})", e.file_name().to_string_lossy())));
        }
    }
    assert_eq!(
        svgs, 11,
        "3 survival plots, 3 availability timelines, the end causes of sample-hpc (the only \
         sample whose ends have more than one cause), the trigger, the comparison, the CDFs, \
         the map"
    );
    assert!(dir.join("causes-sample-hpc.svg").exists());
    // The plot of the README and the book's Reports page is this one, as the report draws it.
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/src/images/report-survival-sample-spot.svg"
    ))
    .unwrap();
    assert!(
        committed == std::fs::read_to_string(dir.join("survival-sample-spot.svg")).unwrap(),
        "docs/src/images/report-survival-sample-spot.svg is stale: regenerate it with `hazardserve report`"
    );
    // One self-contained page: every plot inline, nothing fetched.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 11);
    assert!(
        !html.contains("src=\"http") && !html.contains("<script"),
        "the page fetches nothing"
    );
    // The page renders what the Markdown means: the hazard-shape verdicts in bold, no literal
    // markers left in a cell.
    assert!(
        html.contains("<td><strong>decreasing</strong></td>"),
        "no bold verdict in the page"
    );
    assert!(!html.contains("<td>**"), "a literal ** in a table cell");
}

#[test]
fn chromium_renders_the_report_with_its_plots() {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(chromium) = chromium else {
        skip("headless Chromium is not installed (Debian: apt-get install chromium)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rep");
    make_report(&dir);
    let shot = tmp.path().join("shot.png");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1100,2600",
        ])
        .arg(format!(
            "--user-data-dir={}",
            tmp.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", dir.join("report.html").display()))
        .output()
        .expect("run chromium");
    assert!(
        shot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&shot).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    // Not blank: many pixels are not white, and the plots' blue curve is drawn.
    let mut non_white = 0usize;
    let mut blue = 0usize;
    for p in pixels.chunks(px) {
        let (r, g, b) = (p[0], p[1], p[2]);
        if !(r > 245 && g > 245 && b > 245) {
            non_white += 1;
        }
        if b > 150 && r < 80 && g > 90 && g < 150 {
            blue += 1;
        }
    }
    let total = pixels.len() / px;
    assert!(
        non_white * 50 > total,
        "mostly blank: {non_white} of {total} pixels drawn"
    );
    assert!(
        blue > 500,
        "the Kaplan-Meier curves are not drawn ({blue} blue pixels)"
    );
}
