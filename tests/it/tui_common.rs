//! Helpers of the TUI tests: the demo store, a synchronous loader pump, text rendering.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use hazardserve::tui::app::{App, Msg};
use hazardserve::tui::loader::Loader;
use hazardserve::tui::update::update;
use hazardserve::tui::view::view;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use super::common;

/// A demo store built once per test process with the real binary
/// (`hazardserve --store DIR demo --samples traces/samples`).
pub fn demo_store() -> &'static Path {
    static STORE: OnceLock<PathBuf> = OnceLock::new();
    STORE.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        // Stores of earlier runs (other process ids) older than an hour are removed.
        if let Ok(entries) = std::fs::read_dir(base) {
            for e in entries.flatten() {
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|d| d.as_secs() > 3600);
                if old && e.file_name().to_string_lossy().starts_with("tui-demo-") {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = base.join(format!("tui-demo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut c = common::hs(&dir);
        c.arg("demo").arg("--samples").arg(common::samples());
        common::ok(c);
        dir
    })
}

/// Runs every queued job synchronously until nothing is queued.
pub fn pump(app: &mut App, loader: &mut Loader) {
    for _ in 0..200 {
        let jobs = app.take_jobs();
        if jobs.is_empty() {
            return;
        }
        for j in jobs {
            let r = loader.run(&j);
            update(app, Msg::Loaded(j, r));
        }
    }
    panic!("the app keeps queueing jobs");
}

/// An app on the demo store with everything the first screen needs loaded.
pub fn demo_app() -> (App, Loader) {
    let mut loader = Loader::new(demo_store());
    let mut app = App::new(None);
    pump(&mut app, &mut loader);
    (app, loader)
}

/// A key press.
pub fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Presses keys (characters of `keys`), loading whatever they ask for.
pub fn press(app: &mut App, loader: &mut Loader, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\t' => KeyCode::Tab,
            '\x1b' => KeyCode::Esc,
            '\x08' => KeyCode::Backspace,
            c => KeyCode::Char(c),
        };
        update(app, key(code));
        pump(app, loader);
    }
}

/// The symbols of a buffer, one line per row, trailing blanks removed.
pub fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        for x in area.left()..area.right() {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Renders the app at `w` x `h` and returns the text.
pub fn render(app: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("test terminal");
    t.draw(|f| view(app, f)).expect("draw");
    buffer_text(t.backend().buffer())
}
