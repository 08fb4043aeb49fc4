//! `textDocument/formatting`: the whole document in the canonical layout of
//! [`op2_syntax::format`], as one edit. A document with syntax errors is
//! left alone.

use tower_lsp_server::lsp_types::TextEdit;

use super::Context;

/// One edit replacing the whole text, none when it is already formatted,
/// `None` when it has syntax errors.
pub fn formatting(context: &Context<'_>) -> Option<Vec<TextEdit>> {
    let text = context.analysed.document.text();
    let formatted = op2_syntax::format::format(text).ok()?;
    if formatted == text {
        return Some(Vec::new());
    }
    let whole = op2_syntax::TextRange::new(0, u32::try_from(text.len()).ok()?);
    Some(vec![TextEdit {
        range: context.range(whole),
        new_text: formatted,
    }])
}
