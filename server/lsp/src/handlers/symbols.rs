//! Document symbols (the outline: declarations, kernels with their
//! parameters, `main` with its par_loops by invocation name) and workspace
//! symbols (every file of the program, filtered by a case-insensitive
//! subsequence of the query).

use tower_lsp_server::lsp_types::{
    DocumentSymbol, DocumentSymbolResponse, OneOf, SymbolKind, WorkspaceSymbol,
};

use op2_syntax::LineIndex;

use super::references::Locator;
use super::{Context, range_in};
use crate::ide::navigation::{self, OutlineSymbol};

/// The outline of the document.
pub fn document_symbols(context: &Context<'_>) -> Option<DocumentSymbolResponse> {
    let program = &context.analysed.analysis.program;
    let symbols = navigation::document_symbols(program, context.analysed.document.parse());
    // One index for the many ranges of a large file.
    let index = context.analysed.line_index();
    Some(DocumentSymbolResponse::Nested(
        symbols
            .iter()
            .map(|s| document_symbol(context, index, s))
            .collect(),
    ))
}

fn document_symbol(
    context: &Context<'_>,
    index: &LineIndex,
    symbol: &OutlineSymbol,
) -> DocumentSymbol {
    let children: Vec<DocumentSymbol> = symbol
        .children
        .iter()
        .map(|c| document_symbol(context, index, c))
        .collect();
    #[allow(deprecated)]
    DocumentSymbol {
        name: symbol.name.clone(),
        detail: (!symbol.detail.is_empty()).then(|| symbol.detail.clone()),
        kind: kind(symbol.kind),
        tags: None,
        deprecated: None,
        range: range_in(index, symbol.full_range, context.encoding),
        selection_range: range_in(index, symbol.location.range, context.encoding),
        children: (!children.is_empty()).then_some(children),
    }
}

/// The symbols of the document's program matching `query`.
pub fn workspace_symbols(context: &Context<'_>, query: &str) -> Vec<WorkspaceSymbol> {
    let program = &context.analysed.analysis.program;
    let mut locator = Locator::new(context);
    navigation::workspace_symbols(program, query)
        .into_iter()
        .filter_map(|symbol| {
            Some(WorkspaceSymbol {
                name: symbol.name,
                kind: kind(symbol.kind),
                tags: None,
                container_name: symbol.container,
                location: OneOf::Left(locator.location(symbol.location)?),
                data: None,
            })
        })
        .collect()
}

/// The closest LSP kinds: a set is a collection of elements (struct), a
/// map connects two (interface), a dat is an array over a set.
fn kind(kind: navigation::SymbolKind) -> SymbolKind {
    match kind {
        navigation::SymbolKind::Set => SymbolKind::STRUCT,
        navigation::SymbolKind::Map => SymbolKind::INTERFACE,
        navigation::SymbolKind::Dat => SymbolKind::ARRAY,
        navigation::SymbolKind::Const => SymbolKind::CONSTANT,
        navigation::SymbolKind::Global => SymbolKind::VARIABLE,
        navigation::SymbolKind::Kernel | navigation::SymbolKind::Main => SymbolKind::FUNCTION,
        navigation::SymbolKind::Param => SymbolKind::VARIABLE,
        navigation::SymbolKind::Invocation => SymbolKind::EVENT,
    }
}
