//! Prints a synthetic valid program of about N lines (default 5,000), the
//! one the benchmarks use: `cargo run -p op2-syntax --example gen -- 5000`.

use std::io::Write;

fn main() {
    let lines = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5_000);
    let _ = std::io::stdout().write_all(op2_syntax::synth::program(lines).as_bytes());
}
