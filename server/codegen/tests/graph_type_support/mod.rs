//! Shared by the graph type tests: loading programs (the bundled examples and
//! the test programs under `tests/programs/`), building their graph type and
//! writing it as XML.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use op2_analysis::{Analysis, Options, analyse_text};
use op2_codegen::GraphType;

/// `docs/examples/` of the repository.
pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples")
}

/// `tests/programs/` of this crate.
pub fn programs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs")
}

/// The stems of the `.op2` files in `dir`, sorted.
pub fn op2_stems(dir: &Path) -> Vec<String> {
    let mut stems: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.extension()? == "op2").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    stems.sort();
    stems
}

/// Analyses `text` as a program to be built, failing on any error.
pub fn analyse_source(path: &Path, text: &str) -> Analysis {
    let analysis = analyse_text(path, text, &Options { require_main: true });
    let errors: Vec<String> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.severity == op2_syntax::Severity::Error)
        .map(|d| {
            let start = d.location.range.start as usize;
            let line = text[..start.min(text.len())].matches('\n').count() + 1;
            format!("{}:{line}: {} {}", path.display(), d.code, d.message)
        })
        .collect();
    assert!(
        errors.is_empty(),
        "the program has errors:\n{}",
        errors.join("\n")
    );
    analysis
}

/// Analyses the file at `path`, failing on any error.
pub fn analyse_file(path: &Path) -> (String, Analysis) {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let analysis = analyse_source(path, &text);
    (text, analysis)
}

/// The graph type of an analysed program, with the program's stem as id.
pub fn build(analysis: &Analysis, id: &str) -> GraphType {
    op2_codegen::graph_type(analysis, id)
}

/// The whole document for a graph type alone (no instance).
pub fn xml(graph: &GraphType) -> String {
    let mut out = Vec::new();
    op2_codegen::xml::write_graph_type(&mut out, graph).expect("writing to memory");
    op2_codegen::xml::write_end(&mut out).expect("writing to memory");
    String::from_utf8(out).expect("the XML writer writes UTF-8")
}

/// Graph type and XML of a program given as text, named `id`.
pub fn graph_of_source(id: &str, text: &str) -> (Analysis, GraphType, String) {
    let path = PathBuf::from(format!("{id}.op2"));
    let analysis = analyse_source(&path, text);
    let graph = build(&analysis, id);
    let xml = xml(&graph);
    (analysis, graph, xml)
}
