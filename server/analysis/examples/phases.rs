//! Times the phases of analysing a generated program (a profiling aid):
//! `cargo run --release -p op2-analysis --example phases -- 5000 [ROUNDS] [forward]`.
//!
//! Each round types a digit into a literal of a kernel in the middle of the
//! file, or deletes it again (the benchmark's keystroke), and re-analyses
//! with a warm analyser; with `forward`, each round types one more digit, so
//! that the kernels after it move further every time, as in real typing.
//! With many rounds it ends with the median and 95th percentile of the
//! re-analyses, which makes it a convenient target for `perf record`.

#![allow(clippy::print_stdout)]

use std::path::Path;
use std::time::{Duration, Instant};

use op2_analysis::{Analyser, NoImports, Options};
use op2_syntax::{FileId, Parse, synth};

fn main() {
    let mut args = std::env::args().skip(1);
    let lines = args.next().and_then(|n| n.parse().ok()).unwrap_or(5_000);
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(5);
    let forward = args.next().is_some_and(|a| a == "forward");
    let text = synth::program(lines);
    let mut parse = Parse::new(text.as_str());
    let mut analyser = Analyser::new();
    let offset = text[text.len() / 2..]
        .find("= 1.0e3;")
        .map(|i| i + text.len() / 2 + 2)
        .expect("a kernel body");
    let mut times: Vec<Duration> = Vec::with_capacity(rounds);
    // The previous analysis stays alive while the next is computed, as in
    // the language server, so nothing it shares can be reused in place.
    let mut previous = None;
    for round in 0..rounds {
        if round > 0 {
            if forward || round % 2 == 1 {
                parse.edit(offset..offset, "1").expect("valid edit");
            } else {
                parse.edit(offset..offset + 1, "").expect("valid edit");
            }
        }
        let start = Instant::now();
        let analysis =
            analyser.analyse(Path::new("p.op2"), &parse, &NoImports, &Options::default());
        let total = start.elapsed();
        if round > 0 {
            times.push(total);
        }
        if round < 5 {
            let start = Instant::now();
            let errors = parse.errors(FileId::MAIN).len();
            let syntax = start.elapsed();
            println!(
                "round {round}: syntax errors {syntax:?} ({errors}), whole analysis {total:?} ({} diagnostics), cache {:?}",
                analysis.diagnostics.len(),
                analyser.kernel_cache_stats()
            );
        }
        previous = Some(analysis);
    }
    drop(previous);
    if !times.is_empty() {
        times.sort();
        let at = |q: f64| {
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let index = ((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1;
            times[index]
        };
        println!(
            "{} warm re-analyses: median {:?}, p95 {:?}",
            times.len(),
            at(0.5),
            at(0.95)
        );
    }
}
