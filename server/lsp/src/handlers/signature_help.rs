//! Signature help.
use tower_lsp_server::lsp_types::{Position, SignatureHelp};
use super::Context;
pub fn signature_help(_c: &Context<'_>, _p: Position) -> Option<SignatureHelp> { None }
