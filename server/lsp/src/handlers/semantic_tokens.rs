//! Semantic tokens.
use tower_lsp_server::lsp_types::{SemanticTokens, SemanticTokensFullDeltaResult, SemanticTokensLegend};
use super::Context;
pub fn legend() -> SemanticTokensLegend { SemanticTokensLegend::default() }
pub fn full(_c: &Context<'_>) -> Option<SemanticTokens> { None }
pub fn delta(_c: &Context<'_>, _previous: &str) -> Option<SemanticTokensFullDeltaResult> { None }
