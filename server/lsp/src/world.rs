//! The server's state: open documents, settings, and the latest analysis of
//! each document tagged with the version it belongs to.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use op2_analysis::{Analyser, Analysis, Loader, Options};
use op2_codegen::GraphType;
use rustc_hash::FxHashMap;
use tower_lsp_server::lsp_types::Uri;

use crate::config::Settings;
use crate::documents::{Document, OpenDocument, PositionEncoding};

/// The analysis of one version of a document, and its graph type when the
/// program has no errors.
#[derive(Debug)]
pub struct Analysed {
    /// The version analysed.
    pub version: i32,
    /// The generation analysed (see [`Entry::generation`]).
    pub generation: u64,
    /// The document as it was (text and tree of that version).
    pub document: Document,
    /// What the analysis found.
    pub analysis: Analysis,
    /// The generated graph type, for programs without errors and with
    /// `main`: what hovers, hints and lenses show.
    pub graph: Option<GraphType>,
    /// Diagnostics of the analysis and of code generation.
    pub diagnostics: Vec<op2_syntax::Diagnostic>,
    /// The line index of the text, made by the first request that needs
    /// many positions and shared by the others of this version.
    line_index: std::sync::OnceLock<op2_syntax::LineIndex>,
    /// The ranges of the diagnostics of the document itself, made by the
    /// first code action request and shared by the others of this version.
    diagnostic_ranges: std::sync::OnceLock<crate::intervals::Intervals>,
}

impl Analysed {
    /// The line index of the analysed text.
    pub fn line_index(&self) -> &op2_syntax::LineIndex {
        self.line_index
            .get_or_init(|| op2_syntax::LineIndex::new(self.document.text()))
    }

    /// The diagnostics of the document itself (not of its imports) whose
    /// range overlaps `range`, touching counts, in the order of
    /// [`Analysed::diagnostics`]. O((k + 1) log n) for k of n diagnostics,
    /// after an O(n log n) index made once per analysis.
    pub fn diagnostics_overlapping(
        &self,
        range: op2_syntax::TextRange,
    ) -> impl Iterator<Item = &op2_syntax::Diagnostic> {
        let ranges = self.diagnostic_ranges.get_or_init(|| {
            crate::intervals::Intervals::new(
                self.diagnostics
                    .iter()
                    .enumerate()
                    .filter(|(_, d)| d.location.file == op2_syntax::FileId::MAIN)
                    .map(|(i, d)| {
                        let at = d.location.range;
                        (at.start, at.end, u32::try_from(i).unwrap_or(u32::MAX))
                    })
                    .collect(),
            )
        });
        let mut found = Vec::new();
        ranges.overlapping(range.start, range.end, &mut found);
        found
            .into_iter()
            .filter_map(|i| self.diagnostics.get(i as usize))
    }
}

/// What one document's analyses reuse from one run to the next: the
/// analyser's kernels and the code generator's printed kernels. Runs of one
/// document take turns on it.
#[derive(Debug, Default)]
pub struct Engine {
    /// Keeps kernels whose text and visible declarations are unchanged.
    pub analyser: Analyser,
    /// Keeps printed kernel functions and the graph type of an unchanged
    /// program shape.
    pub generator: op2_codegen::Generator,
}

/// One open document with its analysis state.
#[derive(Debug)]
pub struct Entry {
    /// The document's current text, and its latest parse (which catches
    /// up off the server's lock).
    pub document: OpenDocument,
    /// The file path of the document, when it is a `file:` URI.
    pub path: Option<PathBuf>,
    /// The analyser and code generator of this document.
    pub engine: Arc<Mutex<Engine>>,
    /// The latest analysis (possibly of an older generation).
    pub analysed: Option<Arc<Analysed>>,
    /// Moves on at every change of what the analysis depends on: the text,
    /// and the files it imports (on disk or open). An analysis is current
    /// when it saw the current generation. Shared with a running analysis,
    /// which stops when it moves on (cancellation). Its values come from
    /// one count of the whole process ([`next_generation`]), so no two
    /// openings of a document ever share one: an analysis, a watchdog or a
    /// resolved hint of a closed opening never passes for the current
    /// opening's, whose generations all come after.
    pub generation: Arc<AtomicU64>,
    /// The generation whose diagnostics were published last.
    pub published: Option<u64>,
    /// A background worker is analysing this document (at most one runs).
    pub analysing: bool,
    /// One more than the generation of the last analysis the worker
    /// finished, successfully or not (0: none yet): requests wait here
    /// instead of analysing the same text twice.
    pub finished: tokio::sync::watch::Sender<u64>,
    /// Analyses run to the end (`op2.status` reports them).
    pub runs: u64,
    /// Analyses stopped because the text moved on.
    pub cancelled_runs: u64,
    /// The generation whose analysis the watchdog abandoned: not analysed
    /// again until the generation moves on.
    pub runaway: Option<u64>,
}

impl Entry {
    /// A newly opened document.
    pub fn new(document: OpenDocument, path: Option<PathBuf>) -> Entry {
        Entry {
            document,
            path,
            engine: Arc::default(),
            analysed: None,
            generation: Arc::new(AtomicU64::new(next_generation())),
            published: None,
            analysing: false,
            finished: tokio::sync::watch::Sender::new(0),
            runs: 0,
            cancelled_runs: 0,
            runaway: None,
        }
    }

    /// The current generation.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Records a change that the current analysis did not see.
    pub fn invalidate(&self) {
        self.generation
            .fetch_max(next_generation(), Ordering::SeqCst);
    }

    /// What `op2.status` says of this document.
    pub fn status(&self, uri: &Uri) -> serde_json::Value {
        serde_json::json!({
            "uri": uri.as_str(),
            "version": self.document.version(),
            "parsedVersion": self.document.parsed_version(),
            "generation": self.generation(),
            "analysedGeneration": self.analysed.as_ref().map(|a| a.generation),
            "publishedGeneration": self.published,
            "analysing": self.analysing,
            "analyses": self.runs,
            "cancelledAnalyses": self.cancelled_runs,
        })
    }

    /// The analysis of the current generation, if there is one.
    pub fn current(&self) -> Option<&Arc<Analysed>> {
        let generation = self.generation();
        self.analysed
            .as_ref()
            .filter(|a| a.generation == generation)
    }
}

/// A generation never handed out before in this process, greater than
/// every one that was.
fn next_generation() -> u64 {
    static GENERATIONS: AtomicU64 = AtomicU64::new(1);
    GENERATIONS.fetch_add(1, Ordering::SeqCst)
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
    pub workspace_folders: crate::handlers::build::WorkspaceFolders,
    /// The client shows `$/progress` (`window.workDoneProgress`).
    pub client_progress: bool,
    /// The client accepts `workspace/inlayHint/refresh`.
    pub client_inlay_refresh: bool,
    /// The client resolves inlay hint tooltips (`inlayHint/resolve`).
    pub client_inlay_resolve: bool,
    /// Why build on save refused each document (URI, reason), each said
    /// once in the log.
    pub build_refusals: Arc<Mutex<rustc_hash::FxHashSet<(String, String)>>>,
}

impl World {
    /// The negotiated encoding (UTF-16 until negotiated).
    pub fn encoding(&self) -> PositionEncoding {
        self.encoding.unwrap_or(PositionEncoding::Utf16)
    }

    /// Texts of the open documents by path, for imports that are open,
    /// leaving out `except` (the document being analysed, whose text the
    /// analysis has already).
    ///
    /// This runs under the server's lock at every analysis, so it copies no
    /// text: each document's rope is shared (a clone of a rope is a count),
    /// and only the texts an analysis imports are made into strings, by the
    /// analysis, once each.
    pub fn overlay(&self, except: Option<&Uri>) -> Overlay {
        let files = self
            .documents
            .iter()
            .filter(|(uri, _)| Some(*uri) != except)
            .filter_map(|(_, entry)| {
                entry.path.clone().map(|p| {
                    let text = OverlayText {
                        rope: entry.document.rope(),
                        text: std::sync::OnceLock::new(),
                    };
                    (p, Arc::new(text))
                })
            })
            .collect();
        Overlay { files }
    }
}

/// Imports are read from open documents first, then from disk.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    files: FxHashMap<PathBuf, Arc<OverlayText>>,
}

/// The text of an open document as an analysis found it, made into a
/// string when (and only when) it is imported.
#[derive(Debug)]
struct OverlayText {
    rope: ropey::Rope,
    text: std::sync::OnceLock<Arc<str>>,
}

impl Loader for Overlay {
    fn load(&self, path: &Path) -> Result<Arc<str>, String> {
        if let Some(open) = self
            .files
            .get(path)
            .filter(|_| op2_codegen::files::is_source_path(path))
        {
            let text = open.text.get_or_init(|| Arc::from(open.rope.to_string()));
            return Ok(Arc::clone(text));
        }
        // The same rules as `op2 check`: `.op2` regular files within the
        // size limit, never blocking on a FIFO or a device.
        op2_codegen::files::read_import(path)
            .map(Arc::from)
            .map_err(|error| error.to_string())
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

/// Analyses a document snapshot (on the blocking pool), never cancelled.
pub fn analyse(
    document: Document,
    path: Option<PathBuf>,
    engine: &Mutex<Engine>,
    overlay: &Overlay,
) -> Analysed {
    analyse_cancellable(document, 0, path, engine, overlay, &|| false)
        .expect("an analysis that is never cancelled completes")
}

/// Analyses a document snapshot of generation `generation` (on the blocking
/// pool): the analysis, then the graph type and the code generator's checks
/// for a program without errors. Returns `None` as soon as `cancelled`
/// says the result is no longer wanted.
pub fn analyse_cancellable(
    document: Document,
    generation: u64,
    path: Option<PathBuf>,
    engine: &Mutex<Engine>,
    overlay: &Overlay,
    cancelled: &dyn Fn() -> bool,
) -> Option<Analysed> {
    let file = path
        .clone()
        .unwrap_or_else(|| PathBuf::from("untitled.op2"));
    // Runs of one document take turns on its engine; a run that waited
    // for the lock may be stale already.
    let mut engine = engine
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if cancelled() {
        return None;
    }
    // The analyser asks between items and phases, and stays valid when it
    // stops.
    let analysis = engine
        .analyser
        .analyse_cancellable(
            &file,
            document.parse(),
            overlay,
            &Options::default(),
            cancelled,
        )
        .ok()?;
    if cancelled() {
        return None;
    }
    let id = graph_id(path.as_deref());
    let graph = (!analysis.has_errors() && analysis.program.main.is_some())
        .then(|| engine.generator.graph_type(&analysis, &id));
    drop(engine);
    let mut diagnostics = analysis.diagnostics.clone();
    if let Some(graph) = &graph {
        diagnostics.extend(op2_codegen::limits::check(analysis.lowered(), graph));
    }
    Some(Analysed {
        version: document.version,
        generation,
        document,
        analysis,
        graph,
        diagnostics,
        line_index: std::sync::OnceLock::new(),
        diagnostic_ranges: std::sync::OnceLock::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = "set cells;\ndat p: double on cells;\n\
        kernel k(double *x) { x[0] = 1.0; }\n\
        main { par_loop k over cells (p WRITE); }\n";

    #[test]
    fn a_cancelled_analysis_gives_nothing_and_leaves_the_engine_usable() {
        let engine = Mutex::new(Engine::default());
        let overlay = Overlay::default();
        let document = Document::new(PROGRAM, 1);
        let cancelled = analyse_cancellable(document.clone(), 1, None, &engine, &overlay, &|| true);
        assert!(cancelled.is_none());
        // Cancelled at each point where the analysis or the server asks in
        // turn: the first check, the analyser's checks, the one before code
        // generation.
        let completes_at = (1..100).find(|&stop_at| {
            let calls = std::cell::Cell::new(0);
            analyse_cancellable(document.clone(), 1, None, &engine, &overlay, &|| {
                calls.set(calls.get() + 1);
                calls.get() >= stop_at
            })
            .is_some()
        });
        assert!(
            completes_at.is_some_and(|n| n > 3),
            "runs stop at several points, then complete: {completes_at:?}"
        );
        let warm = analyse(document.clone(), None, &engine, &overlay);
        let fresh = analyse(document, None, &Mutex::default(), &overlay);
        assert_eq!(
            format!("{:?}", warm.diagnostics),
            format!("{:?}", fresh.diagnostics)
        );
        assert!(warm.graph.is_some(), "a valid program has its graph type");
    }

    #[test]
    fn generations_move_on_and_no_two_openings_share_one() {
        let entry = Entry::new(OpenDocument::new(PROGRAM, 1), None);
        let first = entry.generation();
        entry.invalidate();
        let second = entry.generation();
        assert!(second > first);
        assert!(entry.current().is_none());
        // The same document opened again (after a close, or a second
        // `didOpen`) starts past every generation of the first opening,
        // even one the first reaches afterwards.
        let again = Entry::new(OpenDocument::new(PROGRAM, 1), None);
        entry.invalidate();
        assert!(again.generation() > second);
        assert_ne!(again.generation(), entry.generation());
        again.invalidate();
        assert!(again.generation() > entry.generation());
    }
}
