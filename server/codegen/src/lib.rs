//! The code generator of op2: from an analysed program to a POETS
//! application graph (compilation.md), as a [`model::GraphType`] that the XML
//! writer prints and the simulator runs.
//!
//! The generator consumes the analysis' semantic model and lowered bodies,
//! never the syntax tree. [`diagnostics`] reports the limits of the format
//! (W801, E802, E312 collisions) through the same channel as the analyser,
//! so that `op2 check` and the editor show them before anything is built.
//!
//! [`graph_type`] builds a graph type once, as `op2 build` does; a
//! [`Generator`] builds the successive versions of an edited program for the
//! language server, reusing what is unchanged since its last build, with the
//! same result.

pub mod build;
mod controller;
mod cpp;
mod fetch;
pub mod files;
mod generator;
pub mod instance;
mod kernels;
pub mod limits;
pub mod model;
pub mod names;
pub mod output;
mod same;
pub mod topology;
pub mod xml;

use std::path::Path;

use op2_analysis::Analysis;
use op2_syntax::Diagnostic;

pub use build::{graph_type, graph_type_with_fan_limit};
pub use generator::{Generator, GeneratorStats};
pub use model::{DEFAULT_FAN_LIMIT, GraphType, MAX_FAN_LIMIT};

/// The diagnostics of code generation for an analysed program: empty when
/// the program has errors (nothing would be generated).
pub fn diagnostics(analysis: &Analysis, graph_id: &str) -> Vec<Diagnostic> {
    if analysis.has_errors() || analysis.program.main.is_none() {
        return Vec::new();
    }
    let graph = graph_type(analysis, graph_id);
    limits::check(analysis.lowered(), &graph)
}

/// The graph id of a program file: its stem as a C identifier
/// (`airfoil.op2` gives `airfoil`, `my-case.op2` gives `my_case`).
pub fn graph_id(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("graph");
    let mut id: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.is_empty() || id.starts_with(|c: char| c.is_ascii_digit()) {
        id.insert_str(0, "g_");
    }
    id
}
