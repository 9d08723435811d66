//! What a screen is to the rest of the TUI: one trait, [`Component`]. The frame
//! ([`super::view`]), the key handling ([`super::update`]) and the loads reach a screen only
//! through it and the registry in [`super::screens`], so adding a screen is one file and one
//! registry line.

use crossterm::event::KeyCode;
use ratatui::layout::Rect;
use ratatui::Frame;

use super::app::{App, List, Screen};
use super::data::LoadJob;

/// One screen of the TUI.
pub trait Component: Sync {
    /// Its id ([`App::screen`] holds it; other screens name it as their parent or child).
    fn id(&self) -> Screen;
    /// Its tab title.
    fn title(&self) -> &'static str;
    /// The list it moves through (its filter and sort).
    fn list(&self) -> List;
    /// The screen Enter (or `l`, Right) leads to.
    fn child(&self) -> Option<Screen> {
        None
    }
    /// The screen `h` (or Left, Backspace) returns to.
    fn parent(&self) -> Option<Screen> {
        None
    }
    /// The key hints of the status line.
    fn hints(&self, app: &App) -> &'static str;
    /// Its own keys in the help (key, what it does), after the common ones.
    fn help(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// The loads it needs besides the common ones (the overview, the selected source, the
    /// latest run, the sources' verdicts), asked for after every message while it is shown.
    fn jobs(&self, _app: &App) -> Vec<LoadJob> {
        Vec::new()
    }
    /// A key, before the common bindings see it; true when the screen handled it.
    fn key(&self, _app: &mut App, _code: KeyCode) -> bool {
        false
    }
    /// Enter (`l`, Right): true when the screen handled it, else it opens [`Component::child`].
    fn enter(&self, _app: &mut App) -> bool {
        false
    }
    /// Draws the screen's body.
    fn render(&self, app: &App, f: &mut Frame, area: Rect);
}
