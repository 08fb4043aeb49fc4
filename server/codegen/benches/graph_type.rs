//! Building and writing the graph type of the airfoil example (budget:
//! under 10 ms, architecture.md), from source text to XML bytes; and the
//! graph type of the 5,000-line synthetic program as the language server
//! builds it after a keystroke (part of the 20 ms keystroke-to-diagnostics
//! budget): from scratch, with a warm `Generator` after a one-kernel edit
//! and after an edit in `main`, and the limits checked on it. Each time
//! includes dropping the result, as the server drops the last version's.
//! The synthetic cases also time single operations and print their
//! percentiles (`percentiles NAME: p50=… p95=…`).

#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use op2_analysis::{Analyser, Analysis, NoImports, Options, analyse_text};
use op2_syntax::Parse;

fn airfoil(c: &mut Criterion) {
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

/// Versions of the synthetic program, analysed one after the other by one
/// analyser as the language server does, so that they share the lowered
/// bodies of the kernels they have in common.
struct Versions {
    /// The program.
    before: Analysis,
    /// After a one-character edit inside one kernel in the middle (a digit
    /// typed into `1.0e3`): the kernels after it moved by one byte.
    kernel_edited: Analysis,
    /// After a one-character edit in `main` (10 iterations become 100).
    main_edited: Analysis,
}

fn synth_versions() -> Versions {
    let text = op2_syntax::synth::program(5_000);
    let middle = text.len() / 2;
    let at = text[middle..]
        .find("= 1.0e3;")
        .map(|i| middle + i + 2)
        .expect("the synthetic program has kernels that clamp to 1.0e3");
    let in_main = text
        .find("iter < 10;")
        .map(|i| i + "iter < 10".len())
        .expect("the synthetic program's main loops 10 times");
    let path = Path::new("synth.op2");
    let options = Options::default();
    let mut analyser = Analyser::new();
    let mut parse = Parse::new(text.as_str());
    let mut analyse = |parse: &Parse| {
        let analysis = analyser.analyse(path, parse, &NoImports, &options);
        assert!(!analysis.has_errors() && analysis.program.main.is_some());
        analysis
    };
    let before = analyse(&parse);
    parse.edit(at..at, "1").expect("an edit inside the text");
    let kernel_edited = analyse(&parse);
    parse.edit(at..at + 1, "").expect("an edit inside the text");
    parse
        .edit(in_main..in_main, "0")
        .expect("an edit inside the text");
    let main_edited = analyse(&parse);
    Versions {
        before,
        kernel_edited,
        main_edited,
    }
}

/// Times `count` single runs of `run` and prints their percentiles.
fn percentiles<T>(name: &str, count: usize, mut run: impl FnMut() -> T) {
    let mut samples: Vec<Duration> = (0..count)
        .map(|_| {
            let start = Instant::now();
            black_box(run());
            start.elapsed()
        })
        .collect();
    samples.sort();
    let at = |fraction: f64| {
        // Truncation is the nearest-rank percentile's rounding down.
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((count as f64 * fraction).ceil() as usize).clamp(1, count) - 1;
        samples[index].as_secs_f64() * 1e3
    };
    println!(
        "percentiles {name}: n={count} p50={:.3}ms p95={:.3}ms max={:.3}ms",
        at(0.5),
        at(0.95),
        at(1.0)
    );
}

fn synth(c: &mut Criterion) {
    let versions = synth_versions();
    let before = &versions.before;
    let kernels = before.program.kernels.len();

    let name = "synth 5000 lines graph type, fresh";
    percentiles(name, 50, || {
        op2_codegen::graph_type(&versions.kernel_edited, "synth")
    });
    c.bench_function(name, |b| {
        b.iter(|| op2_codegen::graph_type(&versions.kernel_edited, "synth"));
    });

    // Each build sees the other version, so each is one keystroke away from
    // the generator's last build.
    for (name, edited, graphs_reused) in [
        (
            "synth 5000 lines graph type, warm generator after a one-kernel edit",
            &versions.kernel_edited,
            true,
        ),
        (
            "synth 5000 lines graph type, warm generator after an edit in main",
            &versions.main_edited,
            false,
        ),
    ] {
        let mut generator = op2_codegen::Generator::new();
        generator.graph_type(before, "synth");
        let mut alternate = [edited, before].into_iter().cycle();
        percentiles(name, 200, || {
            generator.graph_type(alternate.next().expect("cycles"), "synth")
        });
        c.bench_function(name, |b| {
            b.iter(|| generator.graph_type(alternate.next().expect("cycles"), "synth"));
        });
        let stats = generator.stats();
        let builds = stats.graphs_reused + stats.graphs_built;
        let printed_per_build = usize::from(graphs_reused);
        assert!(
            stats.kernels_printed <= kernels + builds * printed_per_build
                && (stats.graphs_reused == builds - 1) == graphs_reused,
            "{name}: {stats:?}"
        );
    }

    let graph = op2_codegen::graph_type(&versions.kernel_edited, "synth");
    let name = "synth 5000 lines limits check";
    percentiles(name, 200, || {
        op2_codegen::limits::check(versions.kernel_edited.lowered(), &graph)
    });
    c.bench_function(name, |b| {
        b.iter(|| op2_codegen::limits::check(versions.kernel_edited.lowered(), &graph));
    });
}

criterion_group!(benches, airfoil, synth);
criterion_main!(benches);
