//! `op2 fmt` end to end: files rewritten in place, `--check` printing a
//! unified diff, and `-` for standard input.

use crate::support;

mod patch;

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

/// Standard input is held to a file's rules: at most the 16 MiB source
/// limit, and its first byte that is not UTF-8 named by line and column.
#[test]
fn standard_input_is_held_to_the_rules_of_a_file() {
    op2()
        .args(["fmt", "-"])
        .write_stdin(b"set a;\n\xff\n".to_vec())
        .assert()
        .code(2)
        .stderr(contains(
            "error: <stdin>:2:1: the file is not valid UTF-8 (byte 7)",
        ));
    let limit = op2_codegen::files::SOURCE_LIMIT as usize;
    op2()
        .args(["fmt", "-"])
        .write_stdin(vec![b' '; limit + 1])
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains(
            "cannot read standard input: it is more than 16777216 bytes, over the limit for a program",
        ));
}

/// A file that cannot be read is reported and the files after it are
/// formatted, as `op2 check` goes on; the exit status is 2.
#[test]
fn an_unreadable_file_does_not_stop_the_others() {
    let scratch = Scratch::new();
    let first = scratch.file("a.op2", UNFORMATTED);
    let last = scratch.file("b.op2", UNFORMATTED);
    scratch
        .op2(&["fmt", first, "missing.op2", last])
        .assert()
        .code(2)
        .stderr(contains("error: cannot read `missing.op2`"));
    for file in [first, last] {
        assert_eq!(
            std::fs::read_to_string(scratch.path(file)).unwrap(),
            FORMATTED,
            "{file}"
        );
    }
}

/// A file made read-only is not reformatted (the rename over it needs only
/// the directory): refused as an editor would refuse to save it, and the
/// other files are formatted.
#[cfg(unix)]
#[test]
fn a_read_only_file_is_not_rewritten() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    let locked = scratch.file("locked.op2", UNFORMATTED);
    let other = scratch.file("other.op2", UNFORMATTED);
    std::fs::set_permissions(scratch.path(locked), std::fs::Permissions::from_mode(0o444)).unwrap();
    scratch
        .op2(&["fmt", locked, other])
        .assert()
        .code(2)
        .stderr(contains(
            "error: cannot write `locked.op2`: the file is read-only",
        ));
    assert_eq!(
        std::fs::read_to_string(scratch.path(locked)).unwrap(),
        UNFORMATTED
    );
    assert_eq!(
        std::fs::read_to_string(scratch.path(other)).unwrap(),
        FORMATTED
    );
}

/// Regression: the diff of `--check` took time O(lines × differing lines):
/// a kernel of 32,000 parameters on one line (split by the formatter into a
/// line each) took 30 s, 83 s at 60,000; then a deadline of 0.5 s made its
/// length depend on the machine's speed. The lines found once in each text
/// now anchor the diff, and the search between them is bounded by a count
/// of steps: at 60,000 parameters the whole command, the formatting
/// included, takes a few seconds in a debug build, and the diff is the
/// shortest one, the same on every machine: the old kernel and par_loop
/// lines removed, their formatted lines added, the kernel's body kept.
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
    let formatted = formatted(&text);
    assert_eq!(patch::apply(&text, &diff), formatted);
    let (removed, added) = changed_lines(&diff);
    // The shortest diff: only the two long lines are not in the formatted
    // text, and every other line of it is.
    let (old_lines, new_lines) = (text.lines().count(), formatted.lines().count());
    assert_eq!(removed, 2, "{}", &diff[..200.min(diff.len())]);
    assert_eq!(added, new_lines - (old_lines - 2));
    assert_eq!(
        std::fs::read_to_string(scratch.path(file)).unwrap(),
        text,
        "--check changed the file"
    );
}

/// `op2 fmt -`'s output for `text`.
fn formatted(text: &str) -> String {
    let output = op2()
        .args(["fmt", "-"])
        .write_stdin(text)
        .output()
        .expect("run op2 fmt -");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The lines a diff removes and adds.
fn changed_lines(diff: &str) -> (usize, usize) {
    let body = diff.lines().skip(2);
    let removed = body.clone().filter(|l| l.starts_with('-')).count();
    let added = body.filter(|l| l.starts_with('+')).count();
    (removed, added)
}

/// Where the diff's search would pass its limit (`WORK_LIMIT`, 4,194,304
/// steps: about 2,900 differing lines with no line found once in each text),
/// the rest is shown as replaced lines, the same on every machine, and the
/// diff still gives the formatted text. Here 6,000 statements, every other
/// one indented wrongly, all alike: 3,000 lines must go and the search
/// would need about 3,000 × 6,000 steps.
#[test]
fn check_shows_a_change_past_its_limit_as_replaced_lines() {
    let scratch = Scratch::new();
    let mut text = String::from("main {\n    int x = 0;\n");
    for i in 0..6_000 {
        text.push_str(if i % 2 == 0 {
            "  x = x + 1;\n"
        } else {
            "    x = x + 1;\n"
        });
    }
    text.push_str("}\n");
    let file = scratch.file("alike.op2", &text);
    let output = scratch
        .op2(&["fmt", "--check", file])
        .output()
        .expect("run op2 fmt --check");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let diff = String::from_utf8(output.stdout).expect("a UTF-8 diff");
    assert_eq!(patch::apply(&text, &diff), formatted(&text));
    // Every line between the first and the last wrongly indented one
    // replaced: 5,999 removed, 5,999 added, in one hunk.
    assert_eq!(changed_lines(&diff), (5_999, 5_999));
    assert_eq!(diff.lines().filter(|l| l.starts_with("@@ ")).count(), 1);
    let again = scratch
        .op2(&["fmt", "--check", file])
        .output()
        .expect("run op2 fmt --check");
    assert_eq!(String::from_utf8(again.stdout).unwrap(), diff);
}

/// `op2 fmt` replaces a file with one of the same permission bits: a
/// private file stays private, an executable one executable.
#[cfg(unix)]
#[test]
fn formatting_keeps_the_permission_bits() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new();
    for mode in [0o600, 0o755, 0o640] {
        let file = scratch.file("a.op2", UNFORMATTED);
        std::fs::set_permissions(scratch.path(file), std::fs::Permissions::from_mode(mode))
            .unwrap();
        scratch.op2(&["fmt", file]).assert().success();
        assert_eq!(
            std::fs::read_to_string(scratch.path(file)).unwrap(),
            FORMATTED
        );
        let now = std::fs::metadata(scratch.path(file))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(now, mode, "{mode:o} became {now:o}");
    }
}
