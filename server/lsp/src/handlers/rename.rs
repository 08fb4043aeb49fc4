//! Rename, with prepareRename. The checks (a valid, unreserved, untaken
//! name that changes what no other use refers to) are in
//! [`crate::ide::navigation::rename`]; a refusal comes back as its message.
//!
//! `prepare` and `rename` answer `None` on a refusal; `try_prepare` and
//! `try_rename` give the message, for the server to return as the request's
//! error so that the editor shows it.

use std::collections::HashMap;

use tower_lsp_server::lsp_types::{Position, PrepareRenameResponse, TextEdit, Uri, WorkspaceEdit};

use super::Context;
use super::references::Locator;
use crate::ide::navigation;

/// The range to rename at `position` and its current name.
pub fn prepare(context: &Context<'_>, position: Position) -> Option<PrepareRenameResponse> {
    try_prepare(context, position).ok()
}

/// Like [`prepare`], with the reason when nothing there can be renamed.
pub fn try_prepare(
    context: &Context<'_>,
    position: Position,
) -> Result<PrepareRenameResponse, String> {
    let program = &context.analysed.analysis.program;
    let parse = context.analysed.document.parse();
    let (range, placeholder) =
        navigation::prepare_rename(program, parse, context.offset(position))?;
    Ok(PrepareRenameResponse::RangeWithPlaceholder {
        range: context.range(range),
        placeholder,
    })
}

/// The edits, by file, that rename what is at `position` to `new_name`.
pub fn rename(context: &Context<'_>, position: Position, new_name: &str) -> Option<WorkspaceEdit> {
    try_rename(context, position, new_name).ok()
}

/// Like [`rename`], with the reason when the rename is refused.
pub fn try_rename(
    context: &Context<'_>,
    position: Position,
    new_name: &str,
) -> Result<WorkspaceEdit, String> {
    let program = &context.analysed.analysis.program;
    let parse = context.analysed.document.parse();
    let edits = navigation::rename(program, parse, context.offset(position), new_name)?;
    // `WorkspaceEdit` keys its changes by `Uri`, whose interior cache does
    // not take part in hashing.
    #[allow(clippy::mutable_key_type)]
    let mut changes: HashMap<Uri, Vec<TextEdit>> = HashMap::new();
    let mut locator = Locator::new(context);
    for edit in edits {
        let location = op2_syntax::Location {
            file: edit.file,
            range: edit.range,
        };
        let Some(location) = locator.location(location) else {
            return Err("a file to edit has no path".into());
        };
        changes.entry(location.uri).or_default().push(TextEdit {
            range: location.range,
            new_text: edit.replacement,
        });
    }
    Ok(WorkspaceEdit {
        changes: Some(changes),
        ..WorkspaceEdit::default()
    })
}
