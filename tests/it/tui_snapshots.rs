//! Snapshots of every TUI screen rendered on ratatui's `TestBackend` from the demo store, at
//! 80x24 and 160x48, plus the empty-store, no-runs, help and tiny-terminal states. Only the
//! text is compared (no colours); nothing time-dependent is on screen.

use crossterm::event::KeyCode;
use hazardserve::tui::app::{App, Screen};
use hazardserve::tui::loader::Loader;
use hazardserve::tui::update::update;

use super::common;
use super::tui_common::{demo_app, key, press, pump, render};

const SIZES: [(u16, u16); 2] = [(80, 24), (160, 48)];

fn snapshot_screen(name: &str, digit: char) {
    let (mut app, mut loader) = demo_app();
    update(&mut app, key(KeyCode::Char(digit)));
    pump(&mut app, &mut loader);
    assert!(!app.is_loading(), "everything is loaded before rendering");
    for (w, h) in SIZES {
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), render(&app, w, h));
    }
}

#[test]
fn tui_screen_sources() {
    snapshot_screen("sources", '1');
}

#[test]
fn tui_screen_nodes() {
    snapshot_screen("nodes", '2');
}

#[test]
fn tui_screen_survival() {
    snapshot_screen("survival", '3');
}

#[test]
fn tui_screen_replay() {
    snapshot_screen("replay", '4');
}

#[test]
fn tui_screen_request() {
    snapshot_screen("request", '5');
}

#[test]
fn tui_screen_trigger() {
    snapshot_screen("trigger", '6');
}

#[test]
fn tui_screen_sweep() {
    snapshot_screen("sweep", '7');
}

#[test]
fn tui_sweep_cell_opens_its_comparison_on_the_replay_screen() {
    let (mut app, mut loader) = demo_app();
    // The demo's map: nodes.source x hardware.preset down, workload.load across. Down twice
    // and right once: sample-spot, phone, load 0.7.
    press(&mut app, &mut loader, "7jjl");
    assert_eq!(
        app.sel_cell.as_deref(),
        Some("nodes.source=sample-spot,hardware.preset=phone,workload.load=0.7")
    );
    insta::assert_snapshot!("sweep_selected_80x24", render(&app, 80, 24));
    press(&mut app, &mut loader, "\n");
    assert_eq!(app.screen, Screen("replay"));
    let text = render(&app, 160, 48);
    assert!(
        text.contains("nodes.source=sample-spot,hardware.preset=phone,workload.load=0.7"),
        "{text}"
    );
    for policy in ["hazard", "fastest", "least-loaded", "uptime", "oracle"] {
        assert!(text.contains(policy), "{policy} missing:\n{text}");
    }
    insta::assert_snapshot!("sweep_cell_replay_160x48", text);
    // Enter on a cell's comparison explains why there are no requests; h goes back to the map.
    press(&mut app, &mut loader, "\n");
    assert_eq!(app.screen, Screen("replay"));
    assert!(render(&app, 160, 48).contains("keeps no requests"));
    // The Request screen says so too, instead of waiting for a list that never comes.
    press(&mut app, &mut loader, "5");
    assert!(
        render(&app, 120, 30).contains("keeps its comparison, not its requests"),
        "{}",
        render(&app, 120, 30)
    );
    assert!(!app.is_loading());
    // Opening a cell pins its sweep, so a reload keeps showing this cell.
    assert_eq!(app.sweep.as_deref(), Some("demo-map"));
    press(&mut app, &mut loader, "4h");
    assert_eq!(app.screen, Screen("sweep"));
    // [ on the Replay screen leaves the cell for the stored runs.
    press(&mut app, &mut loader, "4[");
    assert!(app.cell.is_none());
    assert!(render(&app, 160, 48).contains("run-demo"));
}

#[test]
fn tui_help_overlay() {
    let (mut app, mut loader) = demo_app();
    update(&mut app, key(KeyCode::Char('?')));
    pump(&mut app, &mut loader);
    insta::assert_snapshot!("help_80x24", render(&app, 80, 24));
}

#[test]
fn tui_screens_are_stable_across_renders() {
    // Two independent loads of the same store draw the same frames (no clocks, no hash order).
    let (mut a, mut la) = demo_app();
    let (mut b, mut lb) = demo_app();
    for d in ['1', '2', '3', '4', '5', '6', '7'] {
        update(&mut a, key(KeyCode::Char(d)));
        pump(&mut a, &mut la);
        update(&mut b, key(KeyCode::Char(d)));
        pump(&mut b, &mut lb);
        assert_eq!(render(&a, 100, 30), render(&b, 100, 30), "screen {d}");
    }
}

#[test]
fn tui_empty_store_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    hazardserve::store::Store::open_or_create(tmp.path()).unwrap();
    let mut loader = Loader::new(tmp.path());
    let mut app = App::new(None);
    pump(&mut app, &mut loader);
    insta::assert_snapshot!("empty_store_sources_80x24", render(&app, 80, 24));
    for d in ['2', '3', '4', '5', '6', '7'] {
        update(&mut app, key(KeyCode::Char(d)));
        pump(&mut app, &mut loader);
        let text = render(&app, 80, 24);
        assert!(
            text.contains("hazardserve demo") || text.contains("screen 1"),
            "screen {d} of an empty store explains what to do:\n{text}"
        );
    }
    assert_eq!(app.screen, Screen("sweep"));
}

#[test]
fn tui_missing_store_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nowhere");
    let mut loader = Loader::new(&missing);
    let mut app = App::new(None);
    pump(&mut app, &mut loader);
    let text = render(&app, 80, 24);
    assert!(text.contains("There is no store at"), "{text}");
    assert!(text.contains("hazardserve demo"), "{text}");
    assert!(!missing.exists(), "the TUI never creates a store");
}

#[test]
fn tui_store_without_runs_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = common::hs(tmp.path());
    c.args([
        "ingest",
        "--format",
        "tick-json",
        "--polarity",
        "available",
        "--source",
        "sample-spot",
    ])
    .arg(common::samples().join("tick-json"));
    common::ok(c);
    let mut loader = Loader::new(tmp.path());
    let mut app = App::new(None);
    pump(&mut app, &mut loader);
    update(&mut app, key(KeyCode::Char('4')));
    pump(&mut app, &mut loader);
    insta::assert_snapshot!("no_runs_replay_80x24", render(&app, 80, 24));
    update(&mut app, key(KeyCode::Char('5')));
    pump(&mut app, &mut loader);
    assert!(render(&app, 80, 24).contains("No replay runs in this store yet"));
    // The source screens work without runs.
    update(&mut app, key(KeyCode::Char('3')));
    pump(&mut app, &mut loader);
    assert!(render(&app, 80, 24).contains("P(up 1 h more)"));
}

#[test]
fn tui_tiny_terminal_asks_for_more_room() {
    let (app, _) = demo_app();
    let text = render(&app, 40, 10);
    assert!(text.contains("enlarge it"), "{text}");
}

#[test]
fn tui_unknown_run_is_reported_on_screen() {
    let mut loader = Loader::new(super::tui_common::demo_store());
    let mut app = App::new(Some("run-nope".into()));
    pump(&mut app, &mut loader);
    update(&mut app, key(KeyCode::Char('4')));
    pump(&mut app, &mut loader);
    let text = render(&app, 100, 30);
    assert!(text.contains("no run \"run-nope\""), "{text}");
    assert!(
        text.contains("run-demo"),
        "lists the runs there are:\n{text}"
    );
}

#[test]
fn tui_reload_key_reads_a_sweep_stored_after_the_tui_opened() {
    use super::sweep::{availability, requests, store_with, POLICIES};
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(
        tmp.path(),
        &availability(6, 20_000.0, 3, |r| Some(300.0 + 2000.0 * r.unit())),
        &requests(600.0, 0.5, 300, 2),
    );
    let mut loader = Loader::new(&store);
    let mut app = App::new(None);
    pump(&mut app, &mut loader);
    press(&mut app, &mut loader, "7");
    let before = render(&app, 80, 24);
    assert!(before.contains("No sweeps in this store yet"), "{before}");

    let grid = common::write(
        tmp.path(),
        "grid.toml",
        &format!(
            "[base]\n\"nodes.source\" = \"cluster\"\n\"workload.source\" = \"reqs\"\n\"replay.windows\" = 2\n{POLICIES}[axes]\n\"hardware.preset\" = [\"a100\", \"phone\"]\n"
        ),
    );
    let mut c = common::hs(&store);
    c.args(["-q", "sweep", "--id", "later", "--grid"])
        .arg(&grid);
    common::ok(c);
    // Without a reload the TUI still shows what it read when it opened.
    press(&mut app, &mut loader, "7");
    assert!(render(&app, 80, 24).contains("No sweeps in this store yet"));
    press(&mut app, &mut loader, "r");
    assert!(!app.is_loading());
    let after = render(&app, 80, 24);
    assert!(
        after.contains("later") && after.contains("hardware.preset"),
        "{after}"
    );
    assert!(after.contains("store reloaded"), "{after}");
    // One axis: its values go down the map.
    assert!(after.contains("a100") && after.contains("phone"), "{after}");
    press(&mut app, &mut loader, "j\n");
    assert_eq!(app.screen, Screen("replay"));
    assert_eq!(app.cell.as_deref(), Some("hardware.preset=phone"));
}

#[test]
fn tui_no_color_draws_in_the_terminal_colours_and_marks_the_selection_reversed() {
    use ratatui::style::{Color, Modifier};
    let (mut app, mut loader) = demo_app();
    press(&mut app, &mut loader, "7");
    let draw = |app: &App| {
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 30)).unwrap();
        t.draw(|f| hazardserve::tui::view::view(app, f)).unwrap();
        t.backend().buffer().clone()
    };
    let coloured = draw(&app);
    assert!(coloured.content.iter().any(|c| c.fg != Color::Reset));
    app.no_color = true;
    let plain = draw(&app);
    assert!(plain
        .content
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
    assert!(plain
        .content
        .iter()
        .any(|c| c.modifier.contains(Modifier::REVERSED)));
    // The same text either way.
    assert_eq!(
        super::tui_common::buffer_text(&coloured),
        super::tui_common::buffer_text(&plain)
    );
}

#[test]
fn the_capture_of_the_sweep_screen_on_the_front_page_and_in_the_book_is_what_the_tui_draws() {
    let (mut app, mut loader) = demo_app();
    press(&mut app, &mut loader, "7");
    let frame = render(&app, 80, 24);
    let capture: String = frame.lines().take(13).map(|l| format!("{l}\n")).collect();
    for page in ["README.md", "docs/src/tui.md"] {
        let text =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(page))
                .unwrap();
        assert!(
            text.contains(&capture),
            "{page}: the TUI capture differs from the screen; now it is:\n{capture}"
        );
    }
}

/// A source whose sessions end in more than one way shows how they end on the Survival screen
/// (competing risks: each cause's share of the ends and its cumulative incidence); a source
/// with one cause shows no such line.
#[test]
fn tui_survival_shows_the_end_causes_of_a_multi_cause_source() {
    let (mut app, mut loader) = demo_app();
    press(&mut app, &mut loader, "1");
    // Down the list, then up it, until the source is selected.
    for k in "jjjjjjkkkkkkkkkkkk".chars() {
        if app.sel_source.as_deref() == Some("sample-hpc") {
            break;
        }
        press(&mut app, &mut loader, &k.to_string());
    }
    assert_eq!(app.sel_source.as_deref(), Some("sample-hpc"));
    press(&mut app, &mut loader, "3");
    let text = render(&app, 160, 48);
    assert!(text.contains("ends (pooled):"), "{text}");
    assert!(text.contains("failure:"), "{text}");
    // Shares of the ends: whole percentages on screen, at most 4 causes listed.
    let line = text
        .lines()
        .find(|l| l.contains("ends (pooled):"))
        .expect("the cause line");
    assert!(line.matches(" % (incidence ").count() >= 2, "{line}");
}

/// A fleet of pools: the Nodes screen gains a pool column and the Replay screen a cost line
/// (dollars per window by pool, and the selected policy's goodput per dollar); an unpriced,
/// unpooled run shows neither.
#[test]
fn tui_shows_pools_and_cost_when_the_run_has_them() {
    use hazardserve::tui::app::Load;
    use hazardserve::tui::data::{Loaded, Metric};
    use std::sync::Arc;

    let (mut app, mut loader) = demo_app();
    press(&mut app, &mut loader, "2");
    let plain = render(&app, 160, 48);
    assert!(!plain.contains(" pool "), "{plain}");
    press(&mut app, &mut loader, "4");
    let plain = render(&app, 160, 48);
    assert!(!plain.contains("cost per window"), "{plain}");

    let mut sources = 0;
    let mut runs = 0;
    for l in app.loads.values_mut() {
        match l {
            Load::Ready(Loaded::Source(d)) => {
                let d = Arc::make_mut(d);
                for (k, n) in d.nodes.iter_mut().enumerate() {
                    n.pool = Some(if k % 2 == 0 { "spot-h100" } else { "on-demand" }.into());
                }
                sources += 1;
            }
            Load::Ready(Loaded::Replay(Some(r))) => {
                let r = Arc::make_mut(r);
                for (k, p) in r.rows.iter_mut().enumerate() {
                    p.dollars = Metric {
                        value: Some(30.5),
                        ci: Some((27.5, 33.1)),
                    };
                    p.goodput_per_dollar = Metric {
                        value: Some(445_000.0 + k as f64),
                        ci: Some((439_000.0, 451_000.0)),
                    };
                    p.dollars_by_pool =
                        vec![("on-demand".into(), 7.25), ("spot-h100".into(), 23.25)];
                }
                runs += 1;
            }
            _ => {}
        }
    }
    assert!(
        sources > 0 && runs > 0,
        "{sources} sources, {runs} runs loaded"
    );
    let replay = render(&app, 160, 48);
    let line = replay
        .lines()
        .find(|l| l.contains("cost per window"))
        .unwrap_or_else(|| panic!("no cost line:\n{replay}"));
    assert!(line.contains("on-demand $7.25"), "{line}");
    assert!(line.contains("spot-h100 $23.25"), "{line}");
    assert!(line.contains("goodput/$"), "{line}");
    press(&mut app, &mut loader, "2");
    let nodes = render(&app, 160, 48);
    assert!(nodes.contains("pool"), "{nodes}");
    assert!(
        nodes.contains("spot-h100") && nodes.contains("on-demand"),
        "{nodes}"
    );
}
