//! One file per request: each takes a [`Context`] (the analysis of the
//! current version, the encoding, the settings), converts positions in,
//! asks the LSP-free [`crate::ide`] queries, and converts the answer out.

pub mod build;
pub mod code_actions;
pub mod code_lens;
pub mod completion;
pub mod definition;
pub mod diagnostics;
pub mod folding;
pub mod formatting;
pub mod hover;
pub mod import;
pub mod inlay_hints;
pub mod references;
pub mod rename;
pub mod semantic_tokens;
pub mod signature_help;
pub mod symbols;

use op2_syntax::{FileId, LineIndex, TextRange};
use tower_lsp_server::lsp_types::{
    self as lsp, CodeActionProviderCapability, CodeLensOptions, CompletionOptions,
    ExecuteCommandOptions, FoldingRangeProviderCapability, HoverProviderCapability,
    InlayHintOptions, InlayHintServerCapabilities, OneOf, Position, PositionEncodingKind,
    RenameOptions, SaveOptions, SelectionRangeProviderCapability, SemanticTokensFullOptions,
    SemanticTokensOptions, SemanticTokensServerCapabilities, ServerCapabilities,
    SignatureHelpOptions, TextDocumentSyncCapability, TextDocumentSyncKind,
    TextDocumentSyncOptions, TextDocumentSyncSaveOptions, Uri, WorkDoneProgressOptions,
    WorkspaceFoldersServerCapabilities, WorkspaceServerCapabilities,
};

use crate::config::Settings;
use crate::documents::PositionEncoding;
use crate::world::Analysed;

/// What a request handler works on.
#[derive(Debug)]
pub struct Context<'a> {
    /// The analysis of the document's current version.
    pub analysed: &'a Analysed,
    /// The negotiated encoding.
    pub encoding: PositionEncoding,
    /// Current settings.
    pub settings: &'a Settings,
    /// The document.
    pub uri: &'a Uri,
}

impl Context<'_> {
    /// Byte offset of a position in the document.
    pub fn offset(&self, position: Position) -> u32 {
        u32::try_from(self.analysed.document.offset(position, self.encoding)).unwrap_or(u32::MAX)
    }

    /// LSP range of a byte range in the document.
    pub fn range(&self, range: TextRange) -> lsp::Range {
        self.analysed.document.range(range, self.encoding)
    }

    /// LSP location of a location in any file of the program (imports
    /// included), or `None` for a file that has no path.
    pub fn location(&self, location: op2_syntax::Location) -> Option<lsp::Location> {
        if location.file == FileId::MAIN {
            return Some(lsp::Location {
                uri: self.uri.clone(),
                range: self.range(location.range),
            });
        }
        let file = self
            .analysed
            .analysis
            .program
            .files
            .get(location.file.0 as usize)?;
        let uri = path_to_uri(&file.path)?;
        let index = LineIndex::new(&file.text);
        Some(lsp::Location {
            uri,
            range: range_in(&index, location.range, self.encoding),
        })
    }
}

/// A range in a text indexed by `index`.
pub fn range_in(index: &LineIndex, range: TextRange, encoding: PositionEncoding) -> lsp::Range {
    let convert = |offset| {
        let at = index.line_col(offset, encoding.line_index_encoding());
        Position::new(at.line, at.col)
    };
    lsp::Range {
        start: convert(range.start),
        end: convert(range.end),
    }
}

/// The `file:` URI of a path (absolute paths only).
pub fn path_to_uri(path: &std::path::Path) -> Option<Uri> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let text = absolute.to_str()?;
    const SET: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
        .add(b' ')
        .add(b'#')
        .add(b'%')
        .add(b'?')
        .add(b'"');
    let encoded = percent_encoding::utf8_percent_encode(text, SET).to_string();
    format!("file://{encoded}").parse().ok()
}

/// Everything the server offers.
pub fn capabilities(encoding: PositionEncoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(match encoding {
            PositionEncoding::Utf8 => PositionEncodingKind::UTF8,
            PositionEncoding::Utf16 => PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions {
                    include_text: Some(false),
                })),
                ..TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_highlight_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: WorkDoneProgressOptions::default(),
        })),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["[".into(), "(".into(), ",".into(), " ".into()]),
            ..CompletionOptions::default()
        }),
        signature_help_provider: Some(SignatureHelpOptions {
            trigger_characters: Some(vec!["(".into(), ",".into()]),
            retrigger_characters: Some(vec![" ".into()]),
            work_done_progress_options: WorkDoneProgressOptions::default(),
        }),
        document_symbol_provider: Some(OneOf::Left(true)),
        workspace_symbol_provider: Some(OneOf::Left(true)),
        semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
            SemanticTokensOptions {
                legend: semantic_tokens::legend(),
                full: Some(SemanticTokensFullOptions::Delta { delta: Some(true) }),
                range: None,
                work_done_progress_options: WorkDoneProgressOptions::default(),
            },
        )),
        inlay_hint_provider: Some(OneOf::Right(InlayHintServerCapabilities::Options(
            InlayHintOptions {
                resolve_provider: Some(true),
                work_done_progress_options: WorkDoneProgressOptions::default(),
            },
        ))),
        code_lens_provider: Some(CodeLensOptions {
            resolve_provider: Some(false),
        }),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        folding_range_provider: Some(FoldingRangeProviderCapability::Simple(true)),
        selection_range_provider: Some(SelectionRangeProviderCapability::Simple(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![
                crate::server::commands::BUILD.into(),
                crate::server::commands::IMPORT.into(),
                crate::server::commands::SHOW_DEVICE_TYPE.into(),
                crate::server::commands::GRAPH_PATH.into(),
                crate::server::commands::STATUS.into(),
            ],
            work_done_progress_options: WorkDoneProgressOptions::default(),
        }),
        // Folders added and removed reach the server: it writes only inside
        // the folders open now.
        workspace: Some(WorkspaceServerCapabilities {
            workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                supported: Some(true),
                change_notifications: Some(OneOf::Left(true)),
            }),
            file_operations: None,
        }),
        ..ServerCapabilities::default()
    }
}
