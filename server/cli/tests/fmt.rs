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
