//! `op2 completions SHELL` and `op2 man`, generated from the command
//! definitions: they know every command and option.

#![allow(clippy::print_stderr)]

use crate::support;

use predicates::prelude::*;
use predicates::str::contains;
use support::{Scratch, op2};

#[test]
fn completions_for_every_shell_know_the_commands_and_options() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let output = op2().args(["completions", shell]).output().expect("runs");
        assert!(output.status.success(), "{shell}");
        let script = String::from_utf8(output.stdout).expect("UTF-8");
        for word in [
            "simulate",
            "explain",
            "rtol",
            "message-format",
            "completions",
        ] {
            assert!(script.contains(word), "{shell} completion lacks `{word}`");
        }
    }
    op2()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(contains("invalid value 'tcsh'"));
}

#[test]
fn the_bash_completion_is_valid_bash() {
    let scratch = Scratch::new();
    let output = op2().args(["completions", "bash"]).output().expect("runs");
    std::fs::write(scratch.path("op2.bash"), &output.stdout).expect("written");
    let status = std::process::Command::new("bash")
        .arg("-n")
        .arg(scratch.path("op2.bash"))
        .status();
    match status {
        Ok(status) => assert!(status.success(), "bash -n rejects the script"),
        Err(error) => eprintln!("SKIPPED LOUDLY: no bash to check the script with: {error}"),
    }
}

#[test]
fn man_prints_the_page_or_writes_one_per_command() {
    op2()
        .arg("man")
        .assert()
        .success()
        .stdout(contains(".TH op2 1").and(contains("simulate")));
    let scratch = Scratch::new();
    std::fs::create_dir(scratch.path("man1")).expect("created");
    scratch
        .op2(&["man", "--out-dir", "man1"])
        .assert()
        .success();
    for page in [
        "op2",
        "op2-check",
        "op2-build",
        "op2-simulate",
        "op2-fmt",
        "op2-explain",
    ] {
        let text = std::fs::read_to_string(scratch.path(&format!("man1/{page}.1")))
            .unwrap_or_else(|e| panic!("{page}.1: {e}"));
        assert!(text.contains(&format!(".TH {page} 1")), "{page}: {text}");
    }
    let check = std::fs::read_to_string(scratch.path("man1/op2-check.1")).expect("read");
    assert!(check.contains("deny") && check.contains("quiet"), "{check}");
    // Every page is ASCII (groff in the C locale warns on Unicode it has no
    // glyph for): the help's `…` and `×` become `...` and roff's `\(mu`.
    for entry in std::fs::read_dir(scratch.path("man1")).expect("listed") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        let line = text.lines().find(|line| !line.is_ascii());
        assert!(line.is_none(), "{}: {line:?}", path.display());
    }
    let simulate = std::fs::read_to_string(scratch.path("man1/op2-simulate.1")).expect("read");
    assert!(simulate.contains("atol \\(mu"), "{simulate}");
    // The pages' names are op2's own: a symbolic link at one is refused,
    // and no page is written.
    #[cfg(unix)]
    {
        std::fs::create_dir(scratch.path("linked")).expect("created");
        scratch.file("secret", "SECRET\n");
        std::os::unix::fs::symlink("../secret", scratch.path("linked/op2-fmt.1")).expect("linked");
        scratch
            .op2(&["man", "--out-dir", "linked"])
            .assert()
            .code(2)
            .stderr(contains(
                "cannot write `linked/op2-fmt.1`: it is a symbolic link",
            ))
            // Its own help: `op2 man` has no `-o`.
            .stderr(contains(
                "help: remove the link, or write the pages into another `--out-dir`",
            ))
            .stderr(contains("`-o`").not());
        assert_eq!(
            std::fs::read_to_string(scratch.path("secret")).expect("read"),
            "SECRET\n"
        );
        assert!(!scratch.path("linked/op2.1").exists());
    }
    scratch
        .op2(&["man", "--out-dir", "missing"])
        .assert()
        .code(2)
        .stderr(contains("the directory `missing` does not exist"));
}
