//! `exit(STATUS)` ends `op2 run` and `op2 simulate` with that status, after
//! the output `main` wrote (`printf` of part of a line included) and
//! nothing more on standard output; what only `op2 run` runs (a kernel's
//! print) is refused by `op2 simulate` and `op2 build`, and a `fetch`, which
//! the graph runs as a reduction, is simulated and built.

use crate::support;

use support::Scratch;

const PROGRAM: &str = "global g: int;\n\nmain {\n    for (int i = 0; i < 3; i++)\n        printf(\" %d\", i);\n    printf(\"\\n\");\n    printf(\"unfinished\");\n    if (g == 0)\n        exit(g + 7);\n    print(\"not reached\");\n}\n";

#[test]
fn run_and_simulate_end_with_the_programs_exit_status() {
    let scratch = Scratch::new();
    scratch.file("data.json", r#"{ "sets": {} }"#);
    scratch.file("exit.op2", PROGRAM);
    for args in [
        vec!["run", "--engine", "interp"],
        vec!["run", "--engine", "compiled"],
        vec!["simulate", "--check"],
    ] {
        let mut command_args = args.clone();
        command_args.extend(["exit.op2", "--instance", "data.json"]);
        let output = scratch.op2(&command_args).output().expect("op2 runs");
        assert_eq!(output.status.code(), Some(7), "{args:?}: {output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            " 0 1 2\nunfinished",
            "{args:?}"
        );
        assert!(
            !String::from_utf8_lossy(&output.stderr).contains("error"),
            "{args:?}: {output:?}"
        );
    }
    // `exit(0)` is a success.
    scratch.file("zero.op2", PROGRAM.replace("g + 7", "g"));
    let output = scratch
        .op2(&["run", "zero.op2", "--instance", "data.json"])
        .output()
        .expect("op2 runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

const KERNEL_PRINTS: &str = "set cells;\n\ndat p_n: int on cells;\n\nkernel show(const int *n) {\n    printf(\"[%d]\", n[0]);\n}\n\nmain {\n    par_loop show over cells (p_n READ);\n    print(\"\");\n}\n";

/// `op2 check` accepts `text` (written as `file`), `op2 run` prints
/// `stdout` in both engines, and `op2 simulate` and `op2 build` exit with
/// status 1, write nothing and give `error` at `at` (E608).
fn runs_but_is_refused_by_simulate_and_build(
    file: &str,
    text: &str,
    data: &str,
    stdout: &str,
    error: &str,
    at: &str,
) {
    let scratch = Scratch::new();
    scratch.file("data.json", data);
    scratch.file(file, text);
    let check = scratch.op2(&["check", file]).output().expect("op2 runs");
    assert!(check.status.success(), "{check:?}");
    for engine in ["interp", "compiled"] {
        let output = scratch
            .op2(&["run", "--engine", engine, file, "--instance", "data.json"])
            .output()
            .expect("op2 runs");
        assert!(output.status.success(), "{engine}: {output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout), stdout, "{engine}");
    }
    for args in [
        vec!["simulate", file, "--instance", "data.json"],
        vec!["build", file, "--instance", "data.json", "-o", "out.xml"],
    ] {
        let output = scratch.op2(&args).output().expect("op2 runs");
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(error) && stderr.contains(at),
            "{args:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?}: {output:?}");
    }
    assert!(!scratch.path("out.xml").exists());
}

#[test]
fn a_kernel_that_prints_runs_and_is_refused_by_simulate_and_build() {
    runs_but_is_refused_by_simulate_and_build(
        "show.op2",
        KERNEL_PRINTS,
        r#"{ "sets": { "cells": 3 }, "dats": { "p_n": [4, 5, 6] } }"#,
        "[4][5][6]\n",
        "error[E608]: kernel `show` prints; `printf` in a kernel runs only in `op2 run`",
        "show.op2:6:5",
    );
}

const FETCHES: &str = "set cells;\n\ndat p_n: int[2] on cells;\n\nglobal n: int[6];\n\nkernel twice(int *n) {\n    n[1] = 2 * n[0];\n}\n\nmain {\n    par_loop twice over cells (p_n RW);\n    fetch p_n into n;\n    for (int i = 0; i < 6; i++)\n        printf(\"[%d]\", n[i]);\n    print(\"\");\n}\n";

/// A `fetch` runs in both engines, `op2 simulate --check` prints the same
/// and agrees with `op2 run` on every value (negative ones included), and
/// `op2 build` writes the reduction's invocation.
#[test]
fn a_fetch_runs_simulates_with_check_and_builds() {
    let scratch = Scratch::new();
    scratch.file(
        "data.json",
        r#"{ "sets": { "cells": 3 }, "dats": { "p_n": [[4, 0], [5, 0], [-6, 0]] } }"#,
    );
    scratch.file("fetch.op2", FETCHES);
    let check = scratch
        .op2(&["check", "fetch.op2"])
        .output()
        .expect("op2 runs");
    assert!(check.status.success(), "{check:?}");
    let expected = "[4][8][5][10][-6][-12]\n";
    for args in [
        vec!["run", "--engine", "interp"],
        vec!["run", "--engine", "compiled"],
        vec!["simulate", "--check"],
        vec!["simulate", "--check", "--fan-limit", "0"],
    ] {
        let mut command_args = args.clone();
        command_args.extend(["fetch.op2", "--instance", "data.json"]);
        let output = scratch.op2(&command_args).output().expect("op2 runs");
        assert!(output.status.success(), "{args:?}: {output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            expected,
            "{args:?}"
        );
        if args[0] == "simulate" {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                stderr.contains("check: the simulation agrees with `op2 run`"),
                "{args:?}: {stderr}"
            );
        }
    }
    let build = scratch
        .op2(&[
            "build",
            "fetch.op2",
            "--instance",
            "data.json",
            "-o",
            "out.xml",
        ])
        .output()
        .expect("op2 runs");
    assert!(build.status.success(), "{build:?}");
    let xml = std::fs::read_to_string(scratch.path("out.xml")).expect("the graph is written");
    assert!(xml.contains("op2_fetch_p_n_begin"), "{xml}");
    assert!(xml.contains("op2_fetch_p_n_end"), "{xml}");
}
