//! Rename.
use tower_lsp_server::lsp_types::{Position, PrepareRenameResponse, WorkspaceEdit};
use super::Context;
pub fn prepare(_c: &Context<'_>, _p: Position) -> Option<PrepareRenameResponse> { None }
pub fn rename(_c: &Context<'_>, _p: Position, _new_name: &str) -> Option<WorkspaceEdit> { None }
