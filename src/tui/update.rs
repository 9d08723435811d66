//! The one function that changes the TUI's state, [`update`], and the key bindings it applies.
//!
//! `update` never blocks and never touches the store: after every message it lets the state
//! queue the loads the current screen needs ([`App::take_jobs`]). Selections are kept by key,
//! so moving through a filtered or sorted list never selects another item by accident.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::app::{App, Load, Msg};
use super::data::LoadJob;
use super::screens;

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
    let jobs = screens::get(app.screen).jobs(app);
    app.request_loads(jobs);
}

fn on_key(app: &mut App, k: KeyEvent) {
    if k.modifiers.contains(KeyModifiers::CONTROL) && matches!(k.code, KeyCode::Char('c')) {
        app.quit = true;
        return;
    }
    let screen = screens::get(app.screen);
    let list = screen.list();
    if let Some(buf) = app.input.as_mut() {
        match k.code {
            KeyCode::Esc => {
                app.input = None;
                app.filters.remove(&list);
            }
            KeyCode::Enter | KeyCode::Down | KeyCode::Up | KeyCode::Tab => {
                app.input = None;
            }
            KeyCode::Backspace => {
                buf.pop();
                app.filters.insert(list, buf.clone());
            }
            KeyCode::Char(c) => {
                buf.push(c);
                app.filters.insert(list, buf.clone());
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
            if app.filter(list).is_empty() {
                app.quit = true;
            } else {
                app.filters.remove(&list);
                app.notice = Some("filter cleared".into());
            }
        }
        KeyCode::Tab => {
            let all = screens::all();
            app.screen = all[(screens::index(app.screen) + 1) % all.len()];
        }
        KeyCode::BackTab => {
            let all = screens::all();
            app.screen = all[(screens::index(app.screen) + all.len() - 1) % all.len()];
        }
        KeyCode::Char(c @ '1'..='9') => {
            let i = (c as usize).saturating_sub('1' as usize);
            if let Some(&s) = screens::all().get(i) {
                app.screen = s;
            }
        }
        KeyCode::Char('r') => app.reload(),
        _ if screen.key(app, k.code) => {}
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
            if let Some(p) = screen.parent() {
                app.screen = p;
            }
        }
        KeyCode::Char('/') => {
            app.input = Some(app.filter(list).to_string());
        }
        KeyCode::Char('s') | KeyCode::Char('S') => {
            let cols = list.sort_columns();
            if cols.is_empty() {
                app.notice = Some("nothing to sort on this screen".into());
                return;
            }
            let s = app.sorts.entry(list).or_default();
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
        KeyCode::Char('[') => switch_run(app, 1),
        KeyCode::Char(']') => switch_run(app, -1),
        _ => {}
    }
}

fn drill_down(app: &mut App) {
    let screen = screens::get(app.screen);
    if screen.enter(app) {
        return;
    }
    match screen.child() {
        Some(c) => app.screen = c,
        None => app.notice = Some("nothing further to open here".into()),
    }
}

/// Moves the selection of the current screen's list by `delta` rows (clamped).
fn move_by(app: &mut App, delta: isize) {
    let list = screens::get(app.screen).list();
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
