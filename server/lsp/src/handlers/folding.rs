//! Folding and selection ranges.
use tower_lsp_server::lsp_types::{FoldingRange, Position, SelectionRange};
use super::Context;
pub fn folding_ranges(_c: &Context<'_>) -> Option<Vec<FoldingRange>> { None }
pub fn selection_ranges(_c: &Context<'_>, _positions: &[Position]) -> Option<Vec<SelectionRange>> { None }
