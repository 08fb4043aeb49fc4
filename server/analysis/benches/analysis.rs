//! Analysis of a generated 5,000-line program: from scratch, and again after
//! a one-character edit inside one kernel with the kernel cache warm (the
//! language server's case on every keystroke).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use op2_analysis::{Analyser, NoImports, Options};
use op2_syntax::{Parse, synth};

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
            b.iter_batched(
                || {
                    if typed {
                        parse.edit(offset..offset + 1, "").expect("valid edit");
                    } else {
                        parse.edit(offset..offset, "1").expect("valid edit");
                    }
                    typed = !typed;
                    parse.clone()
                },
                |parse| black_box(analyser.analyse(path, &parse, &NoImports, &options)),
                criterion::BatchSize::SmallInput,
            );
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
