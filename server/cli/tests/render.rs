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
