//! The one function that changes the TUI's state, [`update`], and the key bindings it applies.
//!
//! `update` never blocks and never touches the store: after every message it lets the state
//! queue the loads the current screen needs ([`App::take_jobs`]). Selections are kept by key,
//! so moving through a filtered or sorted list never selects another item by accident.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::app::{App, Load, Msg, Screen};
use super::data::{LoadJob, TRIGGER_CONTEXTS};
use crate::sweep::MAP_METRICS;

/// Applies one message to the app.
pub fn update(app: &mut App, msg: Msg) {
    match msg {
        Msg::Tick => {
            app.tick = app.tick.wrapping_add(1);
            return;
        }
        Msg::Resize(w, h) => {
            app.size = (w, h);
            return;
        }
        Msg::Key(k) => {
            if k.kind == KeyEventKind::Release {
                return;
            }
            app.notice = None;
            on_key(app, k);
        }
        Msg::Loaded(LoadJob::Reload(n), result) => {
            app.in_flight.retain(|j| *j != LoadJob::Reload(n));
            if n == app.reloads {
                // Whatever arrived between the key and the loader emptying its caches may be
                // stale: start from nothing.
                app.loads.clear();
                app.notice = Some(match result {
                    Ok(_) => "store reloaded".into(),
                    Err(e) => format!("reload failed: {e}"),
                });
            }
        }
        Msg::Loaded(job, result) => {
            app.in_flight.retain(|j| *j != job);
            let state = match result {
                Ok(l) => Load::Ready(l),
                Err(e) => Load::Failed(e),
            };
            app.loads.insert(job, state);
        }
        Msg::Dropped(job) => {
            app.in_flight.retain(|j| *j != job);
            app.loads.remove(&job);
        }
    }
    app.normalize();
}

fn on_key(app: &mut App, k: KeyEvent) {
    if k.modifiers.contains(KeyModifiers::CONTROL) && matches!(k.code, KeyCode::Char('c')) {
        app.quit = true;
        return;
    }
    let list = app.screen.list();
    if let Some(buf) = app.input.as_mut() {
        match k.code {
            KeyCode::Esc => {
                app.input = None;
                app.filters[list.slot()].clear();
            }
            KeyCode::Enter | KeyCode::Down | KeyCode::Up | KeyCode::Tab => {
                app.input = None;
            }
            KeyCode::Backspace => {
                buf.pop();
                app.filters[list.slot()] = buf.clone();
            }
            KeyCode::Char(c) => {
                buf.push(c);
                app.filters[list.slot()] = buf.clone();
            }
            _ => {}
        }
        return;
    }
    if app.help {
        match k.code {
            KeyCode::Char('q') => app.quit = true,
            _ => app.help = false,
        }
        return;
    }
    match k.code {
        KeyCode::Char('q') => app.quit = true,
        KeyCode::Esc => {
            if app.filters[list.slot()].is_empty() {
                app.quit = true;
            } else {
                app.filters[list.slot()].clear();
                app.notice = Some("filter cleared".into());
            }
        }
        KeyCode::Tab => app.screen = Screen::ALL[(app.screen.index() + 1) % Screen::ALL.len()],
        KeyCode::BackTab => {
            app.screen =
                Screen::ALL[(app.screen.index() + Screen::ALL.len() - 1) % Screen::ALL.len()]
        }
        KeyCode::Char(c @ '1'..='7') => {
            let i = (c as usize).saturating_sub('1' as usize);
            if let Some(&s) = Screen::ALL.get(i) {
                app.screen = s;
            }
        }
        KeyCode::Char('r') => app.reload(),
        _ if app.screen == Screen::Sweep && sweep_key(app, k.code) => {}
        KeyCode::Char('h') | KeyCode::Left | KeyCode::Backspace
            if app.screen == Screen::Replay && app.cell.is_some() =>
        {
            app.screen = Screen::Sweep;
        }
        KeyCode::Char('[') | KeyCode::Char(']') if app.cell.is_some() => {
            app.cell = None;
            app.sel_policy = None;
            app.notice = Some("the stored replay runs".into());
        }
        KeyCode::Char('j') | KeyCode::Down => move_by(app, 1),
        KeyCode::Char('k') | KeyCode::Up => move_by(app, -1),
        KeyCode::PageDown => move_by(app, 10),
        KeyCode::PageUp => move_by(app, -10),
        KeyCode::Char('g') | KeyCode::Home => move_by(app, isize::MIN / 2),
        KeyCode::Char('G') | KeyCode::End => move_by(app, isize::MAX / 2),
        KeyCode::Enter | KeyCode::Char('l') | KeyCode::Right => drill_down(app),
        KeyCode::Char('h') | KeyCode::Left | KeyCode::Backspace => {
            if let Some(p) = app.screen.parent() {
                app.screen = p;
            }
        }
        KeyCode::Char('/') => {
            app.input = Some(app.filters[list.slot()].clone());
        }
        KeyCode::Char('s') | KeyCode::Char('S') => {
            let cols = list.sort_columns();
            if cols.is_empty() {
                app.notice = Some("nothing to sort on this screen".into());
                return;
            }
            let s = &mut app.sorts[list.slot()];
            if k.code == KeyCode::Char('S') {
                s.descending = !s.descending;
            } else {
                s.column = (s.column + 1) % cols.len();
                // Names and run order ascending, numbers largest first.
                s.descending = s.column != 0;
            }
            app.notice = Some(format!(
                "sorted by {} {}",
                cols.get(s.column).copied().unwrap_or(""),
                if s.descending { "↓" } else { "↑" }
            ));
        }
        KeyCode::Char('?') => app.help = true,
        KeyCode::Char('+') | KeyCode::Char('=') if app.screen == Screen::Trigger => {
            app.context_idx = (app.context_idx + 1).min(TRIGGER_CONTEXTS.len() - 1);
        }
        KeyCode::Char('-') | KeyCode::Char('_') if app.screen == Screen::Trigger => {
            app.context_idx = app.context_idx.saturating_sub(1);
        }
        KeyCode::Char('[') => switch_run(app, 1),
        KeyCode::Char(']') => switch_run(app, -1),
        _ => {}
    }
}

/// Keys of the Sweep screen: moves over the map, opens a cell, switches the metric or the
/// sweep. Returns false for keys it leaves to the common bindings.
fn sweep_key(app: &mut App, code: KeyCode) -> bool {
    match code {
        KeyCode::Char('j') | KeyCode::Down => move_cell(app, 1, 0),
        KeyCode::Char('k') | KeyCode::Up => move_cell(app, -1, 0),
        KeyCode::PageDown => move_cell(app, 10, 0),
        KeyCode::PageUp => move_cell(app, -10, 0),
        KeyCode::Char('g') | KeyCode::Home => move_cell(app, isize::MIN / 2, 0),
        KeyCode::Char('G') | KeyCode::End => move_cell(app, isize::MAX / 2, 0),
        KeyCode::Char('l') | KeyCode::Right => move_cell(app, 0, 1),
        KeyCode::Char('h') | KeyCode::Left => move_cell(app, 0, -1),
        KeyCode::Enter => match (
            app.sel_cell.clone(),
            app.sweep_data().map(|d| d.sweep_id.clone()),
        ) {
            (Some(key), Some(sweep)) => {
                // Pinned, so that a reload that brings a newer sweep keeps this cell.
                app.sweep = Some(sweep);
                app.notice = Some(format!("cell {key}"));
                app.cell = Some(key);
                app.sel_policy = None;
                app.screen = Screen::Replay;
            }
            _ => app.notice = Some("no cell to open".into()),
        },
        KeyCode::Char('m') => {
            app.map_metric = (app.map_metric + 1) % MAP_METRICS.len();
            app.notice = Some(format!(
                "colouring by {}",
                MAP_METRICS[app.map_metric].key()
            ));
        }
        KeyCode::Char('[') => switch_sweep(app, 1),
        KeyCode::Char(']') => switch_sweep(app, -1),
        _ => return false,
    }
    true
}

/// Moves the map selection by rows and columns (clamped; empty slots are skipped over).
fn move_cell(app: &mut App, drow: isize, dcol: isize) {
    let Some(d) = app.sweep_data().cloned() else {
        return;
    };
    let rows = app.visible_map_rows(&d);
    if rows.is_empty() {
        return;
    }
    let (r0, c0) = app
        .sel_cell
        .as_deref()
        .and_then(|k| d.position(k))
        .and_then(|(r, c)| Some((rows.iter().position(|&x| x == r)?, c)))
        .unwrap_or((0, 0));
    let last_row = rows.len() as isize - 1;
    let last_col = d.columns.len() as isize - 1;
    let mut r = (r0 as isize).saturating_add(drow).clamp(0, last_row);
    let mut c = (c0 as isize).saturating_add(dcol).clamp(0, last_col);
    // Step on past empty slots in the direction of travel.
    loop {
        if let Some(i) = d.grid[rows[r as usize]][c as usize] {
            app.sel_cell = Some(d.cells[i].result.key.clone());
            return;
        }
        let (nr, nc) = (r + drow.signum(), c + dcol.signum());
        if (drow == 0 && dcol == 0) || nr < 0 || nr > last_row || nc < 0 || nc > last_col {
            return;
        }
        (r, c) = (nr, nc);
    }
}

/// Shows the sweep `delta` places further in the store's sweep list (newest first).
fn switch_sweep(app: &mut App, delta: isize) {
    let Some(d) = app.sweep_data() else {
        app.notice = Some("no sweep loaded".into());
        return;
    };
    let sweeps = d.sweeps.clone();
    let cur = d.sweep_id.clone();
    let pos = sweeps.iter().position(|x| *x == cur).unwrap_or(0) as isize;
    let new = (pos + delta).clamp(0, sweeps.len() as isize - 1) as usize;
    match sweeps.get(new) {
        Some(id) if *id != cur => {
            app.sweep = Some(id.clone());
            app.sel_cell = None;
            app.cell = None;
            app.notice = Some(format!("sweep {id}"));
        }
        _ => {
            app.notice = Some(if sweeps.len() <= 1 {
                "this store has one sweep".into()
            } else {
                "no more sweeps that way".into()
            })
        }
    }
}

fn drill_down(app: &mut App) {
    if app.screen == Screen::Replay && app.cell.is_some() {
        app.notice = Some(
            "a sweep cell keeps no requests: replay its scenario (`hazardserve replay --config`) to see them"
                .into(),
        );
        return;
    }
    if app.screen == Screen::Sources {
        let workload = app
            .selected_source_row()
            .filter(|r| r.nodes == 0)
            .map(|r| (r.source.clone(), r.is_workload()));
        if let Some((name, is_workload)) = workload {
            app.screen = Screen::Replay;
            if is_workload {
                app.notice = Some(format!("{name} is a request workload: its replays"));
            }
            return;
        }
    }
    match app.screen.child() {
        Some(c) => app.screen = c,
        None => app.notice = Some("nothing further to open here".into()),
    }
}

/// Moves the selection of the current screen's list by `delta` rows (clamped).
fn move_by(app: &mut App, delta: isize) {
    let list = app.screen.list();
    let (keys, sel) = app.list_keys(list);
    if keys.is_empty() {
        return;
    }
    let pos = sel
        .and_then(|s| keys.iter().position(|k| *k == s))
        .unwrap_or(0) as isize;
    let new = (pos + delta).clamp(0, keys.len() as isize - 1) as usize;
    if let Some(k) = keys.get(new) {
        app.set_selected(list, k.clone());
    }
}

/// Shows the run `delta` places further in the store's run list (newest first).
fn switch_run(app: &mut App, delta: isize) {
    let Some(r) = app.replay_data() else {
        app.notice = Some("no replay run loaded".into());
        return;
    };
    let runs = r.runs.clone();
    let cur = r.run.run_id.clone();
    let pos = runs.iter().position(|x| *x == cur).unwrap_or(0) as isize;
    let new = (pos + delta).clamp(0, runs.len() as isize - 1) as usize;
    match runs.get(new) {
        Some(id) if *id != cur => {
            app.run = Some(id.clone());
            app.sel_policy = None;
            app.sel_request = None;
            app.notice = Some(format!("run {id}"));
        }
        _ => {
            app.notice = Some(if runs.len() <= 1 {
                "this store has one run".into()
            } else {
                "no more runs that way".into()
            })
        }
    }
}
