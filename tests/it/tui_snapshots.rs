//! Snapshots of every TUI screen rendered on ratatui's `TestBackend` from the demo store, at
//! 80x24 and 160x48, plus the empty-store, no-runs, help and tiny-terminal states. Only the
//! text is compared (no colours); nothing time-dependent is on screen.

use crossterm::event::KeyCode;
use hazardserve::tui::app::{App, Screen};
use hazardserve::tui::loader::Loader;
use hazardserve::tui::update::update;

use super::common;
use super::tui_common::{demo_app, key, pump, render};

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
    for d in ['1', '2', '3', '4', '5', '6'] {
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
    for d in ['2', '3', '4', '5', '6'] {
        update(&mut app, key(KeyCode::Char(d)));
        pump(&mut app, &mut loader);
        let text = render(&app, 80, 24);
        assert!(
            text.contains("hazardserve demo") || text.contains("screen 1"),
            "screen {d} of an empty store explains what to do:\n{text}"
        );
    }
    assert_eq!(app.screen, Screen::Trigger);
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
