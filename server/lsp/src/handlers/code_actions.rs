//! Code actions.
use tower_lsp_server::lsp_types::{CodeActionResponse, Range};
use super::Context;
pub fn code_actions(_c: &Context<'_>, _range: Range) -> Option<CodeActionResponse> { None }
