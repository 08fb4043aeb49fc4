//! Building and writing the graph type of the airfoil example (budget:
//! under 10 ms, architecture.md), from source text to XML bytes.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use op2_analysis::{Options, analyse_text};

fn graph_type(c: &mut Criterion) {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/airfoil.op2"
    ));
    let text = std::fs::read_to_string(path).expect("the airfoil example exists");
    let options = Options { require_main: true };
    let analysis = analyse_text(path, &text, &options);
    assert!(!analysis.has_errors());

    c.bench_function("airfoil graph type from analysis to XML", |b| {
        b.iter(|| {
            let graph = op2_codegen::graph_type(&analysis, "airfoil");
            let mut out = Vec::with_capacity(64 * 1024);
            op2_codegen::xml::write_graph_type(&mut out, &graph).expect("writing to memory");
            black_box(out)
        });
    });
    c.bench_function("airfoil build from source text to XML", |b| {
        b.iter(|| {
            let analysis = analyse_text(path, &text, &options);
            let graph = op2_codegen::graph_type(&analysis, "airfoil");
            let mut out = Vec::with_capacity(64 * 1024);
            op2_codegen::xml::write_graph_type(&mut out, &graph).expect("writing to memory");
            black_box(out)
        });
    });
}

criterion_group!(benches, graph_type);
criterion_main!(benches);
