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

/// The quick fixes of the diagnostics that overlap `range`.
// `WorkspaceEdit` keys its changes by `Uri`, which clippy thinks mutable;
// nothing mutates a key here.
#[allow(clippy::mutable_key_type)]
pub fn code_actions(context: &Context<'_>, range: Range) -> Option<CodeActionResponse> {
    let requested = TextRange::new(
        context.offset(range.start),
        context.offset(range.end).max(context.offset(range.start)),
    );
    // The published form of each diagnostic of this document, in the same
    // order as the document's diagnostics.
    let shown: Vec<&op2_syntax::Diagnostic> = context
        .analysed
        .diagnostics
        .iter()
        .filter(|d| d.location.file == FileId::MAIN)
        .collect();
    let published = diagnostics::to_lsp(context.analysed, context.uri, context.encoding);
    let mut actions = Vec::new();
    for (diagnostic, lsp_diagnostic) in shown.into_iter().zip(published) {
        let at = diagnostic.location.range;
        let overlaps = at.start <= requested.end && requested.start <= at.end;
        if !overlaps {
            continue;
        }
        for (i, fix) in diagnostic.fixes.iter().enumerate() {
            let mut changes: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
            for edit in &fix.edits {
                let Some(location) = context.location(Location {
                    file: edit.file,
                    range: edit.range,
                }) else {
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
