//! `textDocument/completion`: what may be typed at the cursor, from
//! [`crate::ide::completion`].

use tower_lsp_server::lsp_types::{
    CompletionItem, CompletionItemKind, CompletionResponse, InsertTextFormat, Position,
};

use super::Context;
use crate::ide::completion::{self, CompletionKind};

/// The completions at `position`.
pub fn completion(context: &Context<'_>, position: Position) -> Option<CompletionResponse> {
    let analysed = context.analysed;
    let offset = context.offset(position) as usize;
    let items = completion::completions(
        analysed.document.parse(),
        &analysed.analysis.program,
        offset,
    );
    let items = items
        .into_iter()
        .map(|item| {
            let is_snippet = item.snippet.is_some();
            CompletionItem {
                kind: Some(kind(item.kind)),
                detail: item.detail,
                sort_text: Some(format!("{}{}", item.rank, item.label)),
                insert_text: item.snippet,
                insert_text_format: is_snippet.then_some(InsertTextFormat::SNIPPET),
                label: item.label,
                ..CompletionItem::default()
            }
        })
        .collect();
    Some(CompletionResponse::Array(items))
}

fn kind(kind: CompletionKind) -> CompletionItemKind {
    match kind {
        CompletionKind::Keyword => CompletionItemKind::KEYWORD,
        CompletionKind::Snippet => CompletionItemKind::SNIPPET,
        CompletionKind::Type | CompletionKind::Set => CompletionItemKind::CLASS,
        CompletionKind::Map => CompletionItemKind::FIELD,
        CompletionKind::Dat
        | CompletionKind::Global
        | CompletionKind::Local
        | CompletionKind::Parameter => CompletionItemKind::VARIABLE,
        CompletionKind::Const => CompletionItemKind::CONSTANT,
        CompletionKind::Kernel | CompletionKind::Builtin => CompletionItemKind::FUNCTION,
        CompletionKind::Mode => CompletionItemKind::ENUM_MEMBER,
        CompletionKind::Index => CompletionItemKind::VALUE,
    }
}
