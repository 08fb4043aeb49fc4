//! Find references and document highlights.

use std::borrow::Cow;

use op2_syntax::{FileId, LineIndex};
use rustc_hash::FxHashMap;
use tower_lsp_server::lsp_types::{
    DocumentHighlight, DocumentHighlightKind, Location, Position, Uri,
};

use super::{Context, path_to_uri, range_in};
use crate::ide::navigation;

/// Converts many locations, indexing the lines of each file once (the
/// answer to a rename or a search may hold hundreds).
pub(crate) struct Locator<'c, 'a> {
    context: &'c Context<'a>,
    /// The document's own index is the analysis's, made once per version.
    files: FxHashMap<FileId, Option<(Uri, Cow<'a, LineIndex>)>>,
}

impl<'c, 'a> Locator<'c, 'a> {
    pub(crate) fn new(context: &'c Context<'a>) -> Self {
        Locator {
            context,
            files: FxHashMap::default(),
        }
    }

    /// The LSP location, or `None` for a file without a path.
    pub(crate) fn location(&mut self, location: op2_syntax::Location) -> Option<Location> {
        let context = self.context;
        let entry = self.files.entry(location.file).or_insert_with(|| {
            if location.file == FileId::MAIN {
                return Some((
                    context.uri.clone(),
                    Cow::Borrowed(context.analysed.line_index()),
                ));
            }
            let file = context
                .analysed
                .analysis
                .program
                .files
                .get(location.file.0 as usize)?;
            Some((
                path_to_uri(&file.path)?,
                Cow::Owned(LineIndex::new(&file.text)),
            ))
        });
        let (uri, index) = entry.as_ref()?;
        Some(Location {
            uri: uri.clone(),
            range: range_in(index, location.range, context.encoding),
        })
    }
}

/// Every place, in every file of the program, that names what is at
/// `position`; its declaration too when `include_declaration` is set.
pub fn references(
    context: &Context<'_>,
    position: Position,
    include_declaration: bool,
) -> Option<Vec<Location>> {
    let program = &context.analysed.analysis.program;
    let parse = context.analysed.document.parse();
    let (target, _) = navigation::target_at(program, parse, context.offset(position))?;
    let references = navigation::references(program, parse, &target);
    let mut locator = Locator::new(context);
    Some(
        references
            .into_iter()
            .filter(|r| include_declaration || !r.is_declaration)
            .filter_map(|r| locator.location(r.location))
            .collect(),
    )
}

/// The places in the document that name what is at `position`: writes
/// (assignments, writing par_loop arguments, declarations with a value) as
/// write, other declarations as text, the rest as read.
pub fn highlights(context: &Context<'_>, position: Position) -> Option<Vec<DocumentHighlight>> {
    let program = &context.analysed.analysis.program;
    let parse = context.analysed.document.parse();
    let (target, _) = navigation::target_at(program, parse, context.offset(position))?;
    let references = navigation::references_in_document(program, parse, &target);
    let index = context.analysed.line_index();
    Some(
        references
            .into_iter()
            .map(|r| DocumentHighlight {
                range: range_in(index, r.location.range, context.encoding),
                kind: Some(if r.is_write {
                    DocumentHighlightKind::WRITE
                } else if r.is_declaration {
                    DocumentHighlightKind::TEXT
                } else {
                    DocumentHighlightKind::READ
                }),
            })
            .collect(),
    )
}
