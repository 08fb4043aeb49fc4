//! Times the phases of analysing a generated program (a profiling aid):
//! `cargo run --release -p op2-analysis --example phases -- 5000`.

#![allow(clippy::print_stdout)]

use std::path::Path;
use std::time::Instant;

use op2_analysis::{Analyser, NoImports, Options};
use op2_syntax::{FileId, Parse, synth};

fn main() {
    let lines = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);
    let text = synth::program(lines);
    let mut parse = Parse::new(text.as_str());
    let mut analyser = Analyser::new();
    let offset = text[text.len() / 2..]
        .find("= 1.0e3;")
        .map(|i| i + text.len() / 2 + 2)
        .expect("a kernel body");
    for round in 0..5 {
        if round > 0 {
            parse.edit(offset..offset, "1").expect("valid edit");
        }
        let start = Instant::now();
        let errors = parse.errors(FileId::MAIN).len();
        let syntax = start.elapsed();
        let start = Instant::now();
        let analysis =
            analyser.analyse(Path::new("p.op2"), &parse, &NoImports, &Options::default());
        let total = start.elapsed();
        println!(
            "round {round}: syntax errors {syntax:?} ({errors}), whole analysis {total:?} ({} diagnostics), cache {:?}",
            analysis.diagnostics.len(),
            analyser.kernel_cache_stats()
        );
    }
}
