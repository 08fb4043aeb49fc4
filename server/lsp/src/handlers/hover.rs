//! Hover.
use tower_lsp_server::lsp_types::{Hover, Position};
use super::Context;
pub fn hover(_c: &Context<'_>, _p: Position) -> Option<Hover> { None }
