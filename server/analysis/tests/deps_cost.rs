//! The cost of the dependency analysis (`is_dead`, behind H605) grows
//! linearly with the program: counted as the entries the liveness analysis
//! stores or visits, not timed. N par_loops each on its own dat made the
//! former per-node sets of live dats hold N²/2 entries.

use std::fmt::Write;
use std::path::Path;

use op2_analysis::{Options, analyse_text};
use op2_syntax::Severity;

/// `n` dats on one set and `n` par_loops, each on its own dat, in `main`,
/// wrapped in `depth` levels of `while` (and an `if` inside each).
fn program(n: usize, depth: usize) -> String {
    let mut text = String::from("set cells;\nglobal g: int;\n");
    for i in 0..n {
        let _ = writeln!(text, "dat d_{i}: double on cells;");
    }
    text.push_str("kernel k(double *x) { x[0] += 1.0; }\nmain {\n");
    for _ in 0..depth {
        text.push_str("while (g > 0) { if (g > 1) {\n");
    }
    for i in 0..n {
        let _ = writeln!(text, "    par_loop k over cells (d_{i} RW);");
    }
    for _ in 0..depth {
        text.push_str("} g = g - 1; }\n");
    }
    text.push_str("}\n");
    text
}

fn work(n: usize, depth: usize) -> usize {
    let analysis = analyse_text(
        Path::new("cost.op2"),
        &program(n, depth),
        &Options::default(),
    );
    assert!(
        analysis
            .diagnostics
            .iter()
            .all(|d| d.severity != Severity::Error),
        "{:?}",
        analysis.diagnostics
    );
    analysis.dependencies.liveness_work()
}

fn assert_linear(depth: usize) {
    let small = work(1_000, depth);
    let large = work(2_000, depth);
    assert!(small > 0);
    assert!(
        large * 10 <= small * 22,
        "work at 2,000 loops ({large}) is more than 2.2 times the work at 1,000 ({small})"
    );
}

#[test]
fn straight_line_loops_on_distinct_dats_cost_linear_work() {
    assert_linear(0);
}

#[test]
fn nested_loops_on_distinct_dats_cost_linear_work() {
    assert_linear(3);
}
