//! One module per screen; each has a `render(&App, &mut Frame, Rect)` that draws the body.

pub mod nodes;
pub mod replay;
pub mod request;
pub mod sources;
pub mod survival;
pub mod sweep;
pub mod trigger;
