//! Code lenses and the generated device type as text.
use tower_lsp_server::lsp_types::CodeLens;
use super::Context;
pub fn code_lenses(_c: &Context<'_>) -> Option<Vec<CodeLens>> { None }
pub fn device_type_text(_c: &Context<'_>, _set: Option<&str>) -> Option<String> { None }
