//! The server's state: open documents, settings, and the latest analysis of
//! each document tagged with the version it belongs to.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use op2_analysis::{Analyser, Analysis, Loader, Options};
use op2_codegen::GraphType;
use rustc_hash::FxHashMap;
use tower_lsp_server::lsp_types::Uri;

use crate::config::Settings;
use crate::documents::{Document, PositionEncoding};

/// The analysis of one version of a document, and its graph type when the
/// program has no errors.
#[derive(Debug)]
pub struct Analysed {
    /// The version analysed.
    pub version: i32,
    /// The document as it was (text and tree of that version).
    pub document: Document,
    /// What the analysis found.
    pub analysis: Analysis,
    /// The generated graph type, for programs without errors and with
    /// `main`: what hovers, hints and lenses show.
    pub graph: Option<GraphType>,
    /// Diagnostics of the analysis and of code generation.
    pub diagnostics: Vec<op2_syntax::Diagnostic>,
}

/// One open document with its analysis state.
#[derive(Debug)]
pub struct Entry {
    /// The document's current text.
    pub document: Document,
    /// The file path of the document, when it is a `file:` URI.
    pub path: Option<PathBuf>,
    /// The analyser, which keeps unchanged kernels between runs.
    pub analyser: Arc<Mutex<Analyser>>,
    /// The latest analysis (possibly of an older version).
    pub analysed: Option<Arc<Analysed>>,
    /// The version whose diagnostics were published last.
    pub published: Option<i32>,
}

/// Everything the handlers share.
#[derive(Debug, Default)]
pub struct World {
    /// Open documents by URI.
    pub documents: FxHashMap<Uri, Entry>,
    /// Current settings.
    pub settings: Settings,
    /// The negotiated position encoding.
    pub encoding: Option<PositionEncoding>,
    /// Workspace folders (for resolving build paths).
    pub workspace_folders: Vec<PathBuf>,
    /// The client shows `$/progress` (`window.workDoneProgress`).
    pub client_progress: bool,
    /// The client accepts `workspace/inlayHint/refresh`.
    pub client_inlay_refresh: bool,
}

impl World {
    /// The negotiated encoding (UTF-16 until negotiated).
    pub fn encoding(&self) -> PositionEncoding {
        self.encoding.unwrap_or(PositionEncoding::Utf16)
    }

    /// Texts of the open documents by path, for imports that are open.
    pub fn overlay(&self) -> Overlay {
        let files = self
            .documents
            .values()
            .filter_map(|entry| {
                entry
                    .path
                    .clone()
                    .map(|p| (p, Arc::<str>::from(entry.document.text())))
            })
            .collect();
        Overlay { files }
    }
}

/// Imports are read from open documents first, then from disk.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    files: FxHashMap<PathBuf, Arc<str>>,
}

impl Loader for Overlay {
    fn load(&self, path: &Path) -> Result<Arc<str>, String> {
        if let Some(text) = self.files.get(path) {
            return Ok(Arc::clone(text));
        }
        match std::fs::read(path) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Arc::from)
                .map_err(|_| "the file is not valid UTF-8".into()),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// The path of a `file:` URI.
pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    let text = uri.as_str();
    let rest = text.strip_prefix("file://")?;
    let decoded = percent_encoding::percent_decode_str(rest)
        .decode_utf8()
        .ok()?;
    Some(PathBuf::from(decoded.as_ref()))
}

/// The graph id used for a document.
pub fn graph_id(path: Option<&Path>) -> String {
    op2_codegen::graph_id(path.unwrap_or(Path::new("program.op2")))
}

/// Analyses a document snapshot (on the blocking pool).
pub fn analyse(
    document: Document,
    path: Option<PathBuf>,
    analyser: &Mutex<Analyser>,
    overlay: &Overlay,
) -> Analysed {
    let file = path
        .clone()
        .unwrap_or_else(|| PathBuf::from("untitled.op2"));
    let analysis = {
        let mut analyser = analyser
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        analyser.analyse(&file, document.parse(), overlay, &Options::default())
    };
    let id = graph_id(path.as_deref());
    let graph = (!analysis.has_errors() && analysis.program.main.is_some())
        .then(|| op2_codegen::graph_type(&analysis, &id));
    let mut diagnostics = analysis.diagnostics.clone();
    if let Some(graph) = &graph {
        diagnostics.extend(op2_codegen::limits::check(&analysis.program, graph));
    }
    Analysed {
        version: document.version,
        document,
        analysis,
        graph,
        diagnostics,
    }
}
