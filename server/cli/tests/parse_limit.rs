//! Inputs on which tree-sitter's error recovery is superlinear (F11, F12)
//! end with E002 through `op2 check` and `op2 fmt`, within the time their
//! size allows; the unbounded parses take half a minute to minutes, far
//! beyond the timeout here, and do not report E002 at all. The syntax
//! crate's `tests/limit.rs` tests the give-up itself.

use std::time::Duration;

use crate::support::{Scratch, json_lines, with_code};
use op2_syntax::synth;

/// Far above the few seconds these take (1 s plus 1 s per 256 KiB reached
/// for each parse, a few parses), far below the unbounded parse.
const GENEROUS: Duration = Duration::from_secs(120);

#[test]
fn check_reports_where_parsing_of_a_run_of_errors_stopped() {
    let scratch = Scratch::new();
    let file = scratch.file("broken.op2", synth::broken_statement_lines(6_000));
    let output = scratch
        .op2(&["check", "--message-format", "json", file])
        .timeout(GENEROUS)
        .output()
        .expect("op2 runs");
    assert!(!output.status.success(), "E002 is an error");
    let records = json_lines(&output.stdout);
    let stops = with_code(&records, "E002");
    assert_eq!(stops.len(), 1, "{records:?}");
    let line = stops[0]["line"].as_u64().expect("a line");
    assert!(
        line > 3,
        "the kernel's head and first lines are checked: line {line}"
    );
    // The lines before it still get their errors (the first `s[2] =}`).
    assert!(
        with_code(&records, "E001")
            .iter()
            .any(|r| r["line"].as_u64().is_some_and(|l| l < line)),
        "{records:?}"
    );
    // `op2 parse` prints the tree of the lines before and fails, saying where.
    let output = scratch
        .op2(&["parse", file])
        .timeout(GENEROUS)
        .output()
        .expect("op2 runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error[E002]: broken.op2:"), "{stderr}");
    // Lines that end in a lone `\r` are counted as lines too.
    let text = synth::broken_statement_lines(6_000).replace('\n', "\r");
    let file = scratch.file("broken_cr.op2", text);
    let output = scratch
        .op2(&["parse", file])
        .timeout(GENEROUS)
        .output()
        .expect("op2 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line: usize = stderr
        .split("error[E002]: broken_cr.op2:")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("E002 with a line: {stderr}"));
    assert!(
        line > 3,
        "the give-up is past the kernel's head: line {line}"
    );
}

#[test]
fn fmt_refuses_deep_nesting_with_an_error_and_leaves_the_file_alone() {
    let scratch = Scratch::new();
    let text = synth::nested_ifs_with_a_stray_bracket(6_000);
    let file = scratch.file("nested.op2", &text);
    let output = scratch
        .op2(&["fmt", file])
        .timeout(GENEROUS)
        .output()
        .expect("op2 runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the parser gave up"), "{stderr}");
    let after = std::fs::read_to_string(scratch.path(file)).expect("the file");
    assert_eq!(after, text, "the file is left as it was");
}
