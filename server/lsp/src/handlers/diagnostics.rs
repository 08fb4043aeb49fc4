//! Published diagnostics: codes, links to the diagnostics index, related
//! information and tags.

use op2_syntax::{Severity, Tag};
use tower_lsp_server::lsp_types::{
    CodeDescription, Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag,
    NumberOrString, Range, Uri,
};

use crate::documents::PositionEncoding;
use crate::handlers::{path_to_uri, range_in};
use crate::world::Analysed;

/// Where the diagnostics index is: beside the executable in an install
/// (`share/op2/diagnostics.md`) or in the source tree the binary was built
/// from; `None` when neither exists.
fn diagnostics_index() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let mut candidates = Vec::new();
    if let Some(bin) = exe.parent() {
        candidates.push(bin.join("../share/op2/diagnostics.md"));
    }
    candidates
        .push(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnostics.md"));
    candidates
        .into_iter()
        .find(|p| p.exists())
        .and_then(|p| p.canonicalize().ok())
}

/// The `file:` URI of the diagnostics index, found once per process (it
/// is looked for on the file system, which every diagnostic's link would
/// otherwise do again).
fn index_uri() -> Option<&'static str> {
    static INDEX: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    INDEX
        .get_or_init(|| Some(path_to_uri(&diagnostics_index()?)?.as_str().to_owned()))
        .as_deref()
}

fn code_description(code: op2_syntax::Code) -> Option<CodeDescription> {
    let href: Uri = format!("{}#{}", index_uri()?, code.as_str().to_lowercase())
        .parse()
        .ok()?;
    Some(CodeDescription { href })
}

thread_local! {
    /// How many diagnostics this thread has converted to LSP form: the
    /// work count the tests of code actions hold to the requested range.
    static CONVERTED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many diagnostics the calling thread has converted to LSP form so
/// far (requests run on one thread each, so a test can count a request's
/// work).
pub fn converted_on_this_thread() -> u64 {
    CONVERTED.get()
}

/// Converts diagnostics of one analysis to LSP form, one at a time: the
/// document's line index is the analysis's own (made once per analysis),
/// an import's is made when a diagnostic first needs it.
#[derive(Debug)]
pub struct Converter<'a> {
    analysed: &'a Analysed,
    uri: &'a Uri,
    encoding: PositionEncoding,
    indexes: Vec<std::sync::OnceLock<op2_syntax::LineIndex>>,
}

impl<'a> Converter<'a> {
    /// A converter for the diagnostics of `analysed`, a document at `uri`.
    pub fn new(analysed: &'a Analysed, uri: &'a Uri, encoding: PositionEncoding) -> Self {
        let files = analysed.analysis.program.files.len();
        Self {
            analysed,
            uri,
            encoding,
            indexes: (0..files).map(|_| std::sync::OnceLock::new()).collect(),
        }
    }

    fn index(&self, file: usize) -> Option<&op2_syntax::LineIndex> {
        if file == 0 {
            return Some(self.analysed.line_index());
        }
        let text = &self.analysed.analysis.program.files.get(file)?.text;
        Some(self.indexes[file].get_or_init(|| op2_syntax::LineIndex::new(text)))
    }

    /// One diagnostic of the document itself, in LSP form.
    pub fn convert(&self, d: &op2_syntax::Diagnostic) -> Diagnostic {
        CONVERTED.set(CONVERTED.get() + 1);
        let program = &self.analysed.analysis.program;
        let encoding = self.encoding;
        let related = d
            .related
            .iter()
            .filter_map(|r| {
                let file = r.location.file.0 as usize;
                let location_uri = if file == 0 {
                    self.uri.clone()
                } else {
                    path_to_uri(&program.files.get(file)?.path)?
                };
                Some(DiagnosticRelatedInformation {
                    location: tower_lsp_server::lsp_types::Location {
                        uri: location_uri,
                        range: range_in(self.index(file)?, r.location.range, encoding),
                    },
                    message: r.message.clone(),
                })
            })
            .collect::<Vec<_>>();
        let range = match self.index(0) {
            Some(index) => range_in(index, d.location.range, encoding),
            None => Range::default(),
        };
        Diagnostic {
            range,
            severity: Some(match d.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
                Severity::Hint => DiagnosticSeverity::HINT,
            }),
            code: Some(NumberOrString::String(d.code.as_str().into())),
            code_description: code_description(d.code),
            source: Some("op2".into()),
            message: if d.label.is_empty() {
                d.message.clone()
            } else {
                format!("{}\n{}", d.message, d.label)
            },
            related_information: (!related.is_empty()).then_some(related),
            tags: d
                .tags
                .contains(&Tag::Unnecessary)
                .then(|| vec![DiagnosticTag::UNNECESSARY]),
            data: None,
        }
    }
}

/// The most diagnostics published for one document. VS Code keeps no more
/// than this many per file either, and no client gains from a hundred
/// thousand squiggles what it loses converting, sending and reading them:
/// a `main` of 4 MB whose every line redeclares a name took two seconds a
/// keystroke (docs/benchmarks.md). `op2 check` reports them all.
pub const PUBLISHED_LIMIT: usize = 1000;

/// The order in which diagnostics keep their place under
/// [`PUBLISHED_LIMIT`]: errors first, then warnings, then hints.
fn rank(severity: Severity) -> usize {
    match severity {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Hint => 2,
    }
}

/// The diagnostics of the document itself, in LSP form, in the order of
/// their positions. Past [`PUBLISHED_LIMIT`] the first ones by severity,
/// then by position, are kept, followed by one that says how many more
/// there are, placed on the first left out. Linear in the diagnostics.
pub fn to_lsp(analysed: &Analysed, uri: &Uri, encoding: PositionEncoding) -> Vec<Diagnostic> {
    let converter = Converter::new(analysed, uri, encoding);
    let own: Vec<&op2_syntax::Diagnostic> = analysed
        .diagnostics
        .iter()
        .filter(|d| d.location.file == op2_syntax::FileId::MAIN)
        .collect();
    if own.len() <= PUBLISHED_LIMIT {
        return own.into_iter().map(|d| converter.convert(d)).collect();
    }
    // How many of each rank fit, taking the ranks in order.
    let mut of_rank = [0usize; 3];
    for d in &own {
        of_rank[rank(d.severity)] += 1;
    }
    let mut room = PUBLISHED_LIMIT;
    let fits = of_rank.map(|n| {
        let taken = n.min(room);
        room -= taken;
        taken
    });
    let mut taken = [0usize; 3];
    let mut published = Vec::with_capacity(PUBLISHED_LIMIT + 1);
    let mut first_left_out = None;
    for d in &own {
        let r = rank(d.severity);
        if taken[r] < fits[r] {
            taken[r] += 1;
            published.push(converter.convert(d));
        } else if first_left_out.is_none() {
            first_left_out = Some(*d);
        }
    }
    let left_out = own.len() - PUBLISHED_LIMIT;
    let range = first_left_out
        .zip(converter.index(0))
        .map(|(d, index)| range_in(index, d.location.range, encoding))
        .unwrap_or_default();
    published.push(Diagnostic {
        range,
        severity: Some(DiagnosticSeverity::INFORMATION),
        source: Some("op2".into()),
        message: format!(
            "{left_out} more problem{} in this file not shown (the first {PUBLISHED_LIMIT}, errors first, are): `op2 check` reports them all",
            if left_out == 1 { "" } else { "s" }
        ),
        ..Diagnostic::default()
    });
    published
}
