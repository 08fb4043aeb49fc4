//! Inlay hints.
use tower_lsp_server::lsp_types::{InlayHint, Range};
use super::Context;
pub fn inlay_hints(_c: &Context<'_>, _range: Range) -> Option<Vec<InlayHint>> { None }
