//! The screens, one file each (a type implementing [`Component`]), and [`REGISTRY`]: the one
//! list of them, in tab order. Nothing else in the TUI names a screen's file.

mod nodes;
mod replay;
mod request;
mod sources;
mod survival;
mod sweep;
mod trigger;

use super::app::Screen;
use super::component::Component;

/// Every screen, in tab order (keys 1-9 select the first nine).
pub static REGISTRY: &[&dyn Component] = &[
    &sources::Sources,
    &nodes::Nodes,
    &survival::Survival,
    &replay::Replay,
    &request::Request,
    &trigger::Trigger,
    &sweep::Sweep,
];

/// The screen with id `id` (the first screen when no screen has it).
pub fn get(id: Screen) -> &'static dyn Component {
    REGISTRY
        .iter()
        .copied()
        .find(|c| c.id() == id)
        .unwrap_or(REGISTRY[0])
}

/// Position of `id` in [`REGISTRY`] (0 when no screen has it).
pub fn index(id: Screen) -> usize {
    REGISTRY.iter().position(|c| c.id() == id).unwrap_or(0)
}

/// Every screen id, in tab order.
pub fn all() -> Vec<Screen> {
    REGISTRY.iter().map(|c| c.id()).collect()
}
