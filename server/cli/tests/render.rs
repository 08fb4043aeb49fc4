//! Snapshots of rendered diagnostics, human and JSON, for programs with
//! several kinds of problem. Update with `INSTA_UPDATE=always cargo test -p
//! op2-cli --test integration render::` and review the diff.

use std::path::Path;
use std::process::Command;

fn check(file: &str, json: bool) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut command = Command::new(env!("CARGO_BIN_EXE_op2"));
    command
        .current_dir(&dir)
        .args(["check", "--color", "never"])
        .arg(format!("render/{file}"));
    if json {
        command.args(["--message-format", "json"]);
    }
    let output = command.output().expect("op2 runs");
    let text =
        String::from_utf8(if json { output.stdout } else { output.stderr }).expect("UTF-8 output");
    format!("exit: {}\n{text}", output.status.code().unwrap_or(-1))
}

#[test]
fn conflict_human() {
    insta::assert_snapshot!(check("conflict.op2", false));
}

#[test]
fn conflict_json() {
    insta::assert_snapshot!(check("conflict.op2", true));
}

#[test]
fn modes_human() {
    insta::assert_snapshot!(check("modes.op2", false));
}

#[test]
fn syntax_human() {
    insta::assert_snapshot!(check("syntax.op2", false));
}

/// Runs `op2 ARGS` in `directory` with colour off and returns its stderr.
fn stderr_of(directory: &Path, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_op2"))
        .current_dir(directory)
        .args(args)
        .args(["--color", "never"])
        .output()
        .expect("op2 runs");
    String::from_utf8(output.stderr).expect("UTF-8 output")
}

#[test]
fn text_from_files_cannot_drive_the_terminal() {
    let directory = tempfile::tempdir().unwrap();
    // An escape sequence in the source line a snippet shows, and a bidi
    // override.
    std::fs::write(
        directory.path().join("p.op2"),
        "set s;\nmain { int y = 1; /* \u{1b}[2J\u{202E} */ zz; }\n",
    )
    .unwrap();
    let stderr = stderr_of(directory.path(), &["check", "p.op2"]);
    assert!(stderr.contains("cannot find `zz`"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(!stderr.contains('\u{202E}'), "{stderr:?}");
    // The same offsets: the label still points at `zz`.
    assert!(stderr.contains("/* ?[2J\u{FFFD} */ zz; }"), "{stderr}");
    // An escape sequence in an instance's key, quoted by a message.
    std::fs::write(directory.path().join("q.op2"), "set s;\nmain { }\n").unwrap();
    std::fs::write(
        directory.path().join("mesh.json"),
        r#"{"sets": {"s": 1, "\u001b[31mred": 2}}"#,
    )
    .unwrap();
    let stderr = stderr_of(
        directory.path(),
        &["instance", "check", "q.op2", "mesh.json"],
    );
    assert!(stderr.contains("W705"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(stderr.contains("\u{241B}[31mred"), "{stderr}");
}
