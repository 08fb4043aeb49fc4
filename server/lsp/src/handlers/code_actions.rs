//! `textDocument/codeAction`: a quick fix for every fix the diagnostics in
//! the requested range carry.

use std::collections::HashMap;

use op2_syntax::{FileId, Location, TextRange};
use tower_lsp_server::lsp_types::{
    CodeAction, CodeActionKind, CodeActionOrCommand, CodeActionResponse, Range, TextEdit, Uri,
    WorkspaceEdit,
};

use super::Context;
use crate::handlers::diagnostics;
use crate::handlers::references::Locator;

/// The quick fixes of the diagnostics that overlap `range`.
// `WorkspaceEdit` keys its changes by `Uri`, which clippy thinks mutable;
// nothing mutates a key here.
#[allow(clippy::mutable_key_type)]
pub fn code_actions(context: &Context<'_>, range: Range) -> Option<CodeActionResponse> {
    let requested = TextRange::new(
        context.offset(range.start),
        context.offset(range.end).max(context.offset(range.start)),
    );
    // Only the diagnostics over the range are looked at and converted to
    // their published form: editors ask on every move of the cursor, and a
    // broken document may have tens of thousands of diagnostics.
    let converter = diagnostics::Converter::new(context.analysed, context.uri, context.encoding);
    // Fixes may edit imported files: each one's lines are indexed once per
    // request, not once per edit (the document's own edits go through its
    // rope, without indexing the whole text at each move of the cursor).
    let mut imports = Locator::new(context);
    let mut actions = Vec::new();
    for diagnostic in context.analysed.diagnostics_overlapping(requested) {
        if diagnostic.fixes.is_empty() {
            continue;
        }
        let lsp_diagnostic = converter.convert(diagnostic);
        for (i, fix) in diagnostic.fixes.iter().enumerate() {
            let mut changes: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
            for edit in &fix.edits {
                let location = Location {
                    file: edit.file,
                    range: edit.range,
                };
                let located = if edit.file == FileId::MAIN {
                    context.location(location)
                } else {
                    imports.location(location)
                };
                let Some(location) = located else {
                    continue;
                };
                changes.entry(location.uri).or_default().push(TextEdit {
                    range: location.range,
                    new_text: edit.replacement.clone(),
                });
            }
            if changes.is_empty() {
                continue;
            }
            actions.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: fix.title.clone(),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![lsp_diagnostic.clone()]),
                edit: Some(WorkspaceEdit {
                    changes: Some(changes),
                    ..WorkspaceEdit::default()
                }),
                is_preferred: Some(i == 0),
                ..CodeAction::default()
            }));
        }
    }
    Some(actions)
}
