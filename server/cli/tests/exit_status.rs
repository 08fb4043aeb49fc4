//! `exit(STATUS)` ends `op2 run` and `op2 simulate` with that status, after
//! the output `main` wrote (`printf` of part of a line included) and
//! nothing more on standard output.

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

#[test]
fn a_kernel_that_prints_runs_and_is_refused_by_simulate_and_build() {
    let scratch = Scratch::new();
    scratch.file(
        "data.json",
        r#"{ "sets": { "cells": 3 }, "dats": { "p_n": [4, 5, 6] } }"#,
    );
    scratch.file("show.op2", KERNEL_PRINTS);
    let check = scratch
        .op2(&["check", "show.op2"])
        .output()
        .expect("op2 runs");
    assert!(check.status.success(), "{check:?}");
    for engine in ["interp", "compiled"] {
        let output = scratch
            .op2(&[
                "run",
                "--engine",
                engine,
                "show.op2",
                "--instance",
                "data.json",
            ])
            .output()
            .expect("op2 runs");
        assert!(output.status.success(), "{engine}: {output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "[4][5][6]\n",
            "{engine}"
        );
    }
    for args in [
        vec!["simulate", "show.op2", "--instance", "data.json"],
        vec![
            "build",
            "show.op2",
            "--instance",
            "data.json",
            "-o",
            "show.xml",
        ],
    ] {
        let output = scratch.op2(&args).output().expect("op2 runs");
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(
                "error[E608]: kernel `show` prints; `printf` in a kernel runs only in `op2 run`"
            ) && stderr.contains("show.op2:6:5"),
            "{args:?}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{args:?}: {output:?}");
    }
    assert!(!scratch.path("show.xml").exists());
}
