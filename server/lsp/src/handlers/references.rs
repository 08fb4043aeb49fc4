//! References and highlights.
use tower_lsp_server::lsp_types::{DocumentHighlight, Location, Position};
use super::Context;
pub fn references(_c: &Context<'_>, _p: Position, _include_declaration: bool) -> Option<Vec<Location>> { None }
pub fn highlights(_c: &Context<'_>, _p: Position) -> Option<Vec<DocumentHighlight>> { None }
