//! `op2 fmt` end to end: files rewritten in place, `--check` printing a
//! unified diff, and `-` for standard input.

use crate::support;

use predicates::prelude::*;
use predicates::str::contains;
use support::{Scratch, op2};

const UNFORMATTED: &str = "set cells;\ndat p_q:   double on cells;\n";
const FORMATTED: &str = "set cells;\ndat p_q: double on cells;\n";

#[test]
fn check_prints_a_unified_diff_and_changes_nothing() {
    let scratch = Scratch::new();
    let file = scratch.file("a.op2", UNFORMATTED);
    let clean = scratch.file("b.op2", FORMATTED);
    scratch
        .op2(&["fmt", "--check", file, clean])
        .assert()
        .code(1)
        .stdout(
            "--- a.op2\n+++ a.op2\n@@ -1,2 +1,2 @@\n set cells;\n-dat p_q:   double on cells;\n+dat p_q: double on cells;\n",
        );
    assert_eq!(
        std::fs::read_to_string(scratch.path(file)).unwrap(),
        UNFORMATTED
    );
    scratch
        .op2(&["fmt", "--check", clean])
        .assert()
        .success()
        .stdout("");
    scratch.op2(&["fmt", file]).assert().success().stdout("");
    assert_eq!(
        std::fs::read_to_string(scratch.path(file)).unwrap(),
        FORMATTED
    );
}

#[test]
fn a_dash_formats_standard_input_to_standard_output() {
    op2()
        .args(["fmt", "-"])
        .write_stdin(UNFORMATTED)
        .assert()
        .success()
        .stdout(FORMATTED);
    op2()
        .args(["fmt", "--check", "-"])
        .write_stdin(UNFORMATTED)
        .assert()
        .code(1)
        .stdout(contains("--- <stdin>").and(contains("+dat p_q: double on cells;")));
    op2()
        .args(["fmt", "--check", "-"])
        .write_stdin(FORMATTED)
        .assert()
        .success()
        .stdout("");
    op2()
        .args(["fmt", "-"])
        .write_stdin("set cells\n")
        .assert()
        .code(1)
        .stdout("")
        .stderr(contains("`<stdin>` has syntax errors"));
}

/// Regression: the diff of `--check` had no deadline, and Myers' diff takes
/// time O(lines × differing lines). A kernel of 32,000 parameters on one
/// line (split by the formatter into a line each) took 30 s, 83 s at
/// 60,000. The diff now gives up its search after a deadline and reports the
/// rest as replaced lines: at 60,000 parameters the whole command, the
/// formatting included, takes a few seconds in a debug build.
#[test]
fn check_diffs_a_long_line_in_linear_time() {
    let scratch = Scratch::new();
    let text = op2_syntax::synth::many_parameters(60_000);
    let file = scratch.file("many.op2", &text);
    let started = std::time::Instant::now();
    let output = scratch
        .op2(&["fmt", "--check", file])
        .timeout(std::time::Duration::from_secs(40))
        .output()
        .expect("run op2 fmt --check");
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(1), "{took:?}: {output:?}");
    let diff = String::from_utf8(output.stdout).expect("a UTF-8 diff");
    assert!(
        diff.starts_with("--- many.op2\n+++ many.op2\n@@ "),
        "{}",
        &diff[..200.min(diff.len())]
    );
    // The diff is whole: every parameter appears on a line of its own.
    assert!(
        diff.contains("+    double *q59999,\n"),
        "the diff lacks the last parameter"
    );
    assert!(
        diff.contains("\n-kernel k(double *q0, "),
        "the diff lacks the old line"
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path(file)).unwrap(),
        text,
        "--check changed the file"
    );
}
