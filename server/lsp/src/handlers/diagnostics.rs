//! Published diagnostics: codes, links to the diagnostics index, related
//! information and tags.

use op2_syntax::{Severity, Tag};
use tower_lsp_server::lsp_types::{
    CodeDescription, Diagnostic, DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag,
    NumberOrString, Uri,
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

fn code_description(code: op2_syntax::Code) -> Option<CodeDescription> {
    let index = diagnostics_index()?;
    let uri = path_to_uri(&index)?;
    let href: Uri = format!("{}#{}", uri.as_str(), code.as_str().to_lowercase())
        .parse()
        .ok()?;
    Some(CodeDescription { href })
}

/// The diagnostics of the document itself, in LSP form.
pub fn to_lsp(analysed: &Analysed, uri: &Uri, encoding: PositionEncoding) -> Vec<Diagnostic> {
    let program = &analysed.analysis.program;
    let indexes: Vec<op2_syntax::LineIndex> = program
        .files
        .iter()
        .map(|f| op2_syntax::LineIndex::new(&f.text))
        .collect();
    analysed
        .diagnostics
        .iter()
        .filter(|d| d.location.file == op2_syntax::FileId::MAIN)
        .map(|d| {
            let related = d
                .related
                .iter()
                .filter_map(|r| {
                    let file = r.location.file.0 as usize;
                    let location_uri = if file == 0 {
                        uri.clone()
                    } else {
                        path_to_uri(&program.files.get(file)?.path)?
                    };
                    Some(DiagnosticRelatedInformation {
                        location: tower_lsp_server::lsp_types::Location {
                            uri: location_uri,
                            range: range_in(indexes.get(file)?, r.location.range, encoding),
                        },
                        message: r.message.clone(),
                    })
                })
                .collect::<Vec<_>>();
            Diagnostic {
                range: range_in(&indexes[0], d.location.range, encoding),
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
        })
        .collect()
}
