//! Analysis of a generated 5,000-line program: from scratch, and again after
//! one-character edits inside one kernel with the analyser warm (the
//! language server's case on every keystroke).
//!
//! The re-analyses hold the previous analysis while the next is computed and
//! drop the one before, untimed, as the language server does: it publishes
//! one version's analysis and keeps it until the next replaces it.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use op2_analysis::{Analyser, Analysis, NoImports, Options};
use op2_syntax::{Parse, synth};

/// Times `iterations` re-analyses, each after `keystroke` edited the parse,
/// holding the previous analysis meanwhile.
fn reanalyse(
    analyser: &mut Analyser,
    parse: &mut Parse,
    iterations: u64,
    mut keystroke: impl FnMut(&mut Parse),
) -> Duration {
    let path = Path::new("bench.op2");
    let options = Options::default();
    let mut held: Option<Analysis> = None;
    let mut total = Duration::ZERO;
    for _ in 0..iterations {
        keystroke(parse);
        let start = Instant::now();
        let analysis = black_box(analyser.analyse(path, parse, &NoImports, &options));
        total += start.elapsed();
        held = Some(analysis);
    }
    drop(held);
    total
}

fn analysis(c: &mut Criterion) {
    let text = synth::program(5_000);
    let path = Path::new("bench.op2");
    let options = Options::default();
    let parse = Parse::new(text.as_str());
    {
        let analysis = Analyser::new().analyse(path, &parse, &NoImports, &options);
        assert!(
            analysis.diagnostics.is_empty(),
            "the generated program is clean: {:?}",
            analysis.diagnostics.first()
        );
    }

    c.bench_function("analyse 5000 lines from scratch", |b| {
        b.iter(|| black_box(Analyser::new().analyse(path, &parse, &NoImports, &options)));
    });

    // Type a digit into a literal in a kernel in the middle, then delete it.
    let offset = text[text.len() / 2..]
        .find("= 1.0e3;")
        .map(|i| i + text.len() / 2 + 2)
        .expect("a kernel body");
    let mut analyser = Analyser::new();
    let mut parse = Parse::new(text.as_str());
    analyser.analyse(path, &parse, &NoImports, &options);
    let mut typed = false;
    c.bench_function(
        "re-analyse 5000 lines after a one-character edit in a kernel",
        |b| {
            b.iter_custom(|iterations| {
                reanalyse(&mut analyser, &mut parse, iterations, |parse| {
                    if typed {
                        parse.edit(offset..offset + 1, "").expect("valid edit");
                    } else {
                        parse.edit(offset..offset, "1").expect("valid edit");
                    }
                    typed = !typed;
                })
            });
        },
    );

    // Type sixteen digits one by one, then delete them one by one: every
    // keystroke moves the kernels after it further (typing one character
    // and deleting it moves them back to where they were two versions ago).
    let mut analyser = Analyser::new();
    let mut parse = Parse::new(text.as_str());
    analyser.analyse(path, &parse, &NoImports, &options);
    let mut step = 0usize;
    c.bench_function(
        "re-analyse 5000 lines while typing and deleting in a kernel",
        |b| {
            b.iter_custom(|iterations| {
                reanalyse(&mut analyser, &mut parse, iterations, |parse| {
                    if step % 32 < 16 {
                        parse.edit(offset..offset, "1").expect("valid edit");
                    } else {
                        parse.edit(offset..offset + 1, "").expect("valid edit");
                    }
                    step += 1;
                })
            });
        },
    );

    let mut analyser = Analyser::new();
    let mut parse = Parse::new(text.as_str());
    analyser.analyse(path, &parse, &NoImports, &options);
    let mut typed = false;
    c.bench_function(
        "keystroke to diagnostics 5000 lines (reparse + re-analyse)",
        |b| {
            b.iter(|| {
                if typed {
                    parse.edit(offset..offset + 1, "").expect("valid edit");
                } else {
                    parse.edit(offset..offset, "1").expect("valid edit");
                }
                typed = !typed;
                black_box(analyser.analyse(path, &parse, &NoImports, &options))
            });
        },
    );
    let (hits, misses) = analyser.kernel_cache_stats();
    assert!(
        hits > 100 * misses,
        "kernels are reused: {hits} hits, {misses} misses"
    );
}

criterion_group!(benches, analysis);
criterion_main!(benches);
