//! Document and workspace symbols.
use tower_lsp_server::lsp_types::{DocumentSymbolResponse, WorkspaceSymbol};
use super::Context;
pub fn document_symbols(_c: &Context<'_>) -> Option<DocumentSymbolResponse> { None }
pub fn workspace_symbols(_c: &Context<'_>, _query: &str) -> Vec<WorkspaceSymbol> { Vec::new() }
