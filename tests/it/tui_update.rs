//! Unit tests of the TUI's `update`: navigation, filtering, sorting and the loads it queues.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use hazardserve::store::SourceSummary;
use hazardserve::tui::app::{App, List, Msg, Screen};
use hazardserve::tui::data::{LoadJob, Loaded, Overview, RunRow, SourceRow, StoreState};
use hazardserve::tui::screens;
use hazardserve::tui::update::update;

use super::tui_common::{demo_app, key, press};

fn row(name: &str, nodes: i64, sessions: i64, censored: i64, span: f64) -> SourceRow {
    SourceRow {
        source: name.into(),
        adapter: "tick-json".into(),
        summary: SourceSummary {
            kind: if nodes == 0 {
                "llm-requests"
            } else {
                "spot-lifetime"
            }
            .into(),
            time_base: "relative".into(),
            nodes,
            sessions,
            events: sessions - censored,
            censored,
            left_truncated: 0,
            requests: if nodes == 0 { 100 } else { 0 },
            rejects: 0,
            observation_start: 0.0,
            observation_end: span,
            notes: Vec::new(),
        },
    }
}

/// An app with a synthetic overview loaded (its later loads are never answered).
fn app() -> App {
    let mut app = App::new(None);
    assert_eq!(app.take_jobs(), vec![LoadJob::Overview]);
    let ov = Overview {
        state: StoreState::Ready,
        store: "/store".into(),
        sources: vec![
            row("alpha", 10, 100, 50, 1000.0),
            row("beta", 30, 50, 5, 5000.0),
            row("gamma", 20, 300, 30, 2000.0),
            row("requests", 0, 0, 0, 60.0),
        ],
        runs: vec![RunRow {
            run_id: "run-1".into(),
            nodes_source: "gamma".into(),
            workload_source: "requests".into(),
            windows: 2,
            seeds: "[1]".into(),
            cutoff_s: 10.0,
        }],
    };
    update(
        &mut app,
        Msg::Loaded(LoadJob::Overview, Ok(Loaded::Overview(ov))),
    );
    app
}

fn names(app: &App) -> Vec<String> {
    app.visible_sources()
        .iter()
        .map(|r| r.source.clone())
        .collect()
}

#[test]
fn tui_update_first_loads() {
    let mut app = app();
    // The run's source is selected by default and loaded first; the other sources' verdicts
    // are queued in the background; the replay run is prefetched.
    assert_eq!(app.sel_source.as_deref(), Some("gamma"));
    let jobs = app.take_jobs();
    assert!(jobs.contains(&LoadJob::Source("gamma".into())));
    assert!(jobs.contains(&LoadJob::Replay(None)));
    assert!(jobs.contains(&LoadJob::Verdict("alpha".into())));
    assert!(jobs.contains(&LoadJob::Verdict("beta".into())));
    assert!(
        !jobs.contains(&LoadJob::Verdict("gamma".into())),
        "its source load fits it"
    );
    assert!(!jobs
        .iter()
        .any(|j| matches!(j, LoadJob::Verdict(s) if s == "requests")));
    assert!(app.is_loading());
    // Nothing is queued twice.
    update(&mut app, key(KeyCode::Char('j')));
    update(&mut app, key(KeyCode::Char('k')));
    assert!(app.take_jobs().is_empty());
}

#[test]
fn tui_update_screens_cycle() {
    let mut app = app();
    let mut seen = Vec::new();
    for _ in 0..screens::all().len() {
        seen.push(app.screen);
        update(&mut app, key(KeyCode::Tab));
    }
    assert_eq!(seen, screens::all());
    assert_eq!(app.screen, Screen("sources"), "Tab wraps around");
    update(&mut app, key(KeyCode::BackTab));
    assert_eq!(app.screen, Screen("sweep"), "Shift-Tab wraps backwards");
    for (d, s) in ['1', '2', '3', '4', '5', '6', '7']
        .iter()
        .zip(screens::all())
    {
        update(&mut app, key(KeyCode::Char(*d)));
        assert_eq!(app.screen, s);
    }
}

#[test]
fn tui_update_drill_down_and_back() {
    let mut app = app();
    for expected in [Screen("nodes"), Screen("survival"), Screen("trigger")] {
        update(&mut app, key(KeyCode::Enter));
        assert_eq!(app.screen, expected);
    }
    update(&mut app, key(KeyCode::Enter));
    assert_eq!(app.screen, Screen("trigger"), "nothing below the trigger");
    assert!(app.notice.is_some());
    for expected in [
        Screen("survival"),
        Screen("nodes"),
        Screen("sources"),
        Screen("sources"),
    ] {
        update(&mut app, key(KeyCode::Backspace));
        assert_eq!(app.screen, expected);
    }
    // A workload source opens the replay.
    update(&mut app, key(KeyCode::Char('G')));
    assert_eq!(app.sel_source.as_deref(), Some("requests"));
    update(&mut app, key(KeyCode::Enter));
    assert_eq!(app.screen, Screen("replay"));
    update(&mut app, key(KeyCode::Enter));
    assert_eq!(app.screen, Screen("request"));
    update(&mut app, key(KeyCode::Left));
    assert_eq!(app.screen, Screen("replay"));
}

#[test]
fn tui_update_moves_and_clamps() {
    let mut app = app();
    assert_eq!(names(&app), ["alpha", "beta", "gamma", "requests"]);
    assert_eq!(app.selected_index(List::Sources), Some(2));
    update(&mut app, key(KeyCode::Char('j')));
    assert_eq!(app.sel_source.as_deref(), Some("requests"));
    update(&mut app, key(KeyCode::Down));
    assert_eq!(
        app.sel_source.as_deref(),
        Some("requests"),
        "clamped at the end"
    );
    update(&mut app, key(KeyCode::Char('g')));
    assert_eq!(app.sel_source.as_deref(), Some("alpha"));
    update(&mut app, key(KeyCode::Up));
    assert_eq!(
        app.sel_source.as_deref(),
        Some("alpha"),
        "clamped at the start"
    );
    update(&mut app, key(KeyCode::PageDown));
    assert_eq!(app.sel_source.as_deref(), Some("requests"));
    // Selecting a source queues its load and forgets the node of the previous one.
    update(&mut app, key(KeyCode::Char('k')));
    assert_eq!(app.sel_source.as_deref(), Some("gamma"));
    update(&mut app, key(KeyCode::Char('k')));
    assert_eq!(app.sel_source.as_deref(), Some("beta"));
    assert!(app.take_jobs().contains(&LoadJob::Source("beta".into())));
    assert_eq!(app.sel_node, None);
}

#[test]
fn tui_update_filters() {
    let mut app = app();
    update(&mut app, key(KeyCode::Char('/')));
    assert_eq!(app.input.as_deref(), Some(""));
    for c in "alp".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    assert_eq!(names(&app), ["alpha"], "the list filters while typing");
    assert_eq!(
        app.sel_source.as_deref(),
        Some("alpha"),
        "selection follows the filter"
    );
    // While typing, keys are text, not commands.
    update(&mut app, key(KeyCode::Char('q')));
    assert!(!app.quit);
    update(&mut app, key(KeyCode::Backspace));
    assert_eq!(app.filter(List::Sources), "alp");
    update(&mut app, key(KeyCode::Enter));
    assert_eq!(app.input, None);
    assert_eq!(app.filter(List::Sources), "alp", "Enter keeps the filter");
    // The kind matches too; no match leaves the selection alone.
    update(&mut app, key(KeyCode::Char('/')));
    for c in "llm".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    assert_eq!(app.filter(List::Sources), "alpllm");
    assert!(names(&app).is_empty());
    update(&mut app, key(KeyCode::Esc));
    assert_eq!(app.input, None);
    assert_eq!(
        app.filter(List::Sources),
        "",
        "Esc while typing clears the filter"
    );
    assert_eq!(names(&app).len(), 4);
    update(&mut app, key(KeyCode::Char('/')));
    for c in "LLM".chars() {
        update(&mut app, key(KeyCode::Char(c)));
    }
    update(&mut app, key(KeyCode::Enter));
    assert_eq!(
        names(&app),
        ["requests"],
        "case-insensitive, on the kind too"
    );
    // Esc clears an active filter before it quits.
    update(&mut app, key(KeyCode::Esc));
    assert!(!app.quit);
    assert_eq!(names(&app).len(), 4);
    // Filters are per list.
    update(&mut app, key(KeyCode::Char('2')));
    assert_eq!(app.filter(List::Nodes), "");
}

#[test]
fn tui_update_sorts() {
    let mut app = app();
    let before = app.sel_source.clone();
    let order = |app: &App| names(app);
    update(&mut app, key(KeyCode::Char('s')));
    assert_eq!(app.sort(List::Sources).column, 1);
    assert!(
        app.sort(List::Sources).descending,
        "numbers sort largest first"
    );
    assert_eq!(
        order(&app),
        ["beta", "gamma", "alpha", "requests"],
        "by nodes"
    );
    update(&mut app, key(KeyCode::Char('s')));
    assert_eq!(
        order(&app),
        ["gamma", "alpha", "beta", "requests"],
        "by sessions"
    );
    update(&mut app, key(KeyCode::Char('s')));
    assert_eq!(
        order(&app),
        ["alpha", "gamma", "beta", "requests"],
        "by censored share"
    );
    update(&mut app, key(KeyCode::Char('s')));
    assert_eq!(
        order(&app),
        ["beta", "gamma", "alpha", "requests"],
        "by span"
    );
    update(&mut app, key(KeyCode::Char('S')));
    assert_eq!(
        order(&app),
        ["requests", "alpha", "gamma", "beta"],
        "reversed"
    );
    update(&mut app, key(KeyCode::Char('s')));
    assert_eq!(
        order(&app),
        ["alpha", "beta", "gamma", "requests"],
        "back to names"
    );
    assert_eq!(app.sel_source, before, "sorting keeps the selected item");
    assert!(app.notice.as_deref().is_some_and(|n| n.contains("name")));
    // Screens without a table say so.
    update(&mut app, key(KeyCode::Char('6')));
    update(&mut app, key(KeyCode::Char('s')));
    assert!(app
        .notice
        .as_deref()
        .is_some_and(|n| n.contains("nothing to sort")));
}

#[test]
fn tui_update_help_and_quit() {
    let mut app = app();
    update(&mut app, key(KeyCode::Char('?')));
    assert!(app.help);
    update(&mut app, key(KeyCode::Char('j')));
    assert!(!app.help, "any key closes the help");
    assert_eq!(
        app.sel_source.as_deref(),
        Some("gamma"),
        "and does nothing else"
    );
    update(&mut app, key(KeyCode::Char('q')));
    assert!(app.quit);
    let mut app2 = self::app();
    update(&mut app2, key(KeyCode::Esc));
    assert!(app2.quit);
    let mut app3 = self::app();
    update(
        &mut app3,
        Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
    );
    assert!(app3.quit);
}

#[test]
fn tui_update_loads_and_drops() {
    let mut app = app();
    let _ = app.take_jobs();
    // A failed load is kept (shown), not retried in a loop.
    update(
        &mut app,
        Msg::Loaded(LoadJob::Source("gamma".into()), Err("boom".into())),
    );
    assert!(app.take_jobs().is_empty());
    // A job the loader dropped is asked for again while still needed.
    update(&mut app, Msg::Dropped(LoadJob::Replay(None)));
    assert_eq!(app.take_jobs(), vec![LoadJob::Replay(None)]);
    // The spinner ticks only; resizes are recorded.
    let t = app.tick;
    update(&mut app, Msg::Tick);
    assert_eq!(app.tick, t + 1);
    update(&mut app, Msg::Resize(100, 40));
    assert_eq!(app.size, (100, 40));
    // Replay loaded without runs: nothing more is asked for the request screen.
    update(
        &mut app,
        Msg::Loaded(LoadJob::Replay(None), Ok(Loaded::Replay(None))),
    );
    update(&mut app, key(KeyCode::Char('5')));
    assert!(app.take_jobs().is_empty());
    let _ = Arc::new(());
}

#[test]
fn tui_update_nodes_sort_and_trigger_keys_on_the_demo() {
    let (mut app, mut loader) = demo_app();
    press(&mut app, &mut loader, "2");
    let d = app.selected_source_data().cloned().expect("loaded");
    let ids =
        |app: &App| -> Vec<String> { app.visible_nodes(&d).iter().map(|n| n.id.clone()).collect() };
    assert_eq!(ids(&app).len(), 4);
    assert_eq!(app.sel_node.as_deref(), Some(ids(&app)[0].as_str()));
    press(&mut app, &mut loader, "s");
    let by_sessions: Vec<usize> = app.visible_nodes(&d).iter().map(|n| n.sessions).collect();
    let mut sorted = by_sessions.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(by_sessions, sorted, "sessions, largest first");
    press(&mut app, &mut loader, "ss");
    let ages: Vec<Option<f64>> = app
        .visible_nodes(&d)
        .iter()
        .map(|n| n.current_age_s)
        .collect();
    assert_eq!(ages.last(), Some(&None), "nodes down at the end sort last");
    // Filter nodes, then the survival screen moves through the same list.
    press(&mut app, &mut loader, "/west\n");
    assert_eq!(ids(&app).len(), 2);
    assert!(app.sel_node.as_deref().is_some_and(|n| n.contains("west")));
    press(&mut app, &mut loader, "\nj");
    assert_eq!(app.screen, Screen("survival"));
    assert_eq!(app.sel_node.as_deref(), Some(ids(&app)[1].as_str()));
    // Trigger: destination list and context size.
    press(&mut app, &mut loader, "\n");
    assert_eq!(app.screen, Screen("trigger"));
    let k0 = app.trigger_key().expect("key");
    assert_eq!(k0.to, "(pooled)");
    assert_eq!(k0.context, 4500);
    press(&mut app, &mut loader, "j++++++++");
    let k1 = app.trigger_key().expect("key");
    assert_ne!(k1.to, "(pooled)");
    assert_eq!(k1.context, 64_000, "clamped at the largest size");
    press(&mut app, &mut loader, "---------");
    assert_eq!(app.trigger_key().map(|k| k.context), Some(500));
    assert!(matches!(
        app.trigger(),
        Some(hazardserve::tui::app::Load::Ready(_))
    ));
}

#[test]
fn tui_update_request_selection_and_explanation() {
    let (mut app, mut loader) = demo_app();
    press(&mut app, &mut loader, "4\n");
    assert_eq!(app.screen, Screen("request"));
    assert_eq!(app.sel_policy.as_deref(), Some("hazard"));
    let first = app.sel_request.expect("a request is selected");
    press(&mut app, &mut loader, "j");
    assert_ne!(app.sel_request, Some(first));
    match app.explain() {
        Some(hazardserve::tui::app::Load::Ready(x)) => {
            assert!(x.matches_stored, "{}", x.note);
            assert!(x.events.len() >= 3);
        }
        other => panic!("explanation not loaded: {:?}", other.map(|_| ())),
    }
    // Another policy lists its own requests.
    press(&mut app, &mut loader, "hj\n");
    assert_eq!(app.sel_policy.as_deref(), Some("hazard-nomigrate"));
    assert!(matches!(
        app.requests(),
        Some(hazardserve::tui::app::Load::Ready(_))
    ));
}

#[test]
fn tui_worker_answers_off_thread() {
    let (tx, rx) = std::sync::mpsc::channel();
    let worker =
        hazardserve::tui::worker::Worker::spawn(super::tui_common::demo_store(), tx).unwrap();
    worker.send(LoadJob::Overview);
    worker.send(LoadJob::Source("sample-spot".into()));
    let mut got = Vec::new();
    while got.len() < 2 {
        match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(Msg::Loaded(job, result)) => {
                assert!(result.is_ok(), "{job:?}: {:?}", result.err());
                got.push(job);
            }
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => panic!("no answer from the worker: {e}"),
        }
    }
    assert!(got.contains(&LoadJob::Overview));
    assert!(got.contains(&LoadJob::Source("sample-spot".into())));
}
