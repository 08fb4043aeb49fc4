//! Formatting.
use tower_lsp_server::lsp_types::TextEdit;
use super::Context;
pub fn formatting(_c: &Context<'_>) -> Option<Vec<TextEdit>> { None }
