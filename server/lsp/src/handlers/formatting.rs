//! `textDocument/formatting`: the whole document in the canonical layout of
//! [`op2_syntax::format`], as one edit, formatted from the parse the
//! document snapshot already has (so the answer is that of the snapshot's
//! version, and the text is not parsed again). A document with syntax
//! errors, or whose parse gave up, is left alone.

use tower_lsp_server::lsp_types::TextEdit;

use super::Context;

/// One edit replacing the whole text, none when it is already formatted,
/// `None` when it has syntax errors.
pub fn formatting(context: &Context<'_>) -> Option<Vec<TextEdit>> {
    let document = &context.analysed.document;
    let text = document.text();
    let (formatted, _) = op2_syntax::format::format_parse(document.parse()).ok()?;
    if formatted == text {
        return Some(Vec::new());
    }
    let whole = op2_syntax::TextRange::new(0, u32::try_from(text.len()).ok()?);
    Some(vec![TextEdit {
        range: context.range(whole),
        new_text: formatted,
    }])
}
