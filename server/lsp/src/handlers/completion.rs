//! Completion.
use tower_lsp_server::lsp_types::{CompletionResponse, Position};
use super::Context;
pub fn completion(_c: &Context<'_>, _p: Position) -> Option<CompletionResponse> { None }
