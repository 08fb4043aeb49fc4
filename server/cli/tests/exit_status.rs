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

const KERNEL_PRINTS: &str = "set cells;\n\ndat p_n: int on cells;\n\nkernel show(const int *n) {\n    printf(\"[%d]\", n[0]);\n    print(\" cell\");\n}\n\nmain {\n    print(\"cells:\");\n    par_loop show over cells (p_n READ);\n    print(\"end\");\n}\n";

/// A scratch directory with `text` as `file` and `data` as `data.json`,
/// which `op2 check` accepts.
fn checked(file: &str, text: &str, data: &str) -> Scratch {
    let scratch = Scratch::new();
    scratch.file("data.json", data);
    scratch.file(file, text);
    let check = scratch.op2(&["check", file]).output().expect("op2 runs");
    assert!(check.status.success(), "{check:?}");
    scratch
}

/// `op2 build FILE --instance data.json -o out.xml` in `scratch`, which
/// succeeds: the graph it writes.
fn built(scratch: &Scratch, file: &str) -> String {
    let output = scratch
        .op2(&["build", file, "--instance", "data.json", "-o", "out.xml"])
        .output()
        .expect("op2 runs");
    assert!(output.status.success(), "{output:?}");
    std::fs::read_to_string(scratch.path("out.xml")).expect("the graph is written")
}

/// The lines of `text`, sorted: its lines as a multiset.
fn sorted_lines(text: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(text)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort_unstable();
    lines
}

/// A kernel that prints runs in both engines of `op2 run`, in element
/// order; `op2 simulate --check` prints the same lines in the order of its
/// devices and agrees on the state; `op2 build` writes the graph, whose
/// execute handler logs the kernel's lines.
#[test]
fn a_kernel_that_prints_runs_simulates_and_builds() {
    let scratch = checked(
        "show.op2",
        KERNEL_PRINTS,
        r#"{ "sets": { "cells": 3 }, "dats": { "p_n": [4, 5, 6] } }"#,
    );
    let expected = "cells:\n[4] cell\n[5] cell\n[6] cell\nend\n";
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
            expected,
            "{engine}"
        );
    }
    for seed in ["0", "1", "2", "3"] {
        let output = scratch
            .op2(&[
                "simulate",
                "--check",
                "--seed",
                seed,
                "show.op2",
                "--instance",
                "data.json",
            ])
            .output()
            .expect("op2 runs");
        assert!(output.status.success(), "seed {seed}: {output:?}");
        assert_eq!(
            sorted_lines(&output.stdout),
            sorted_lines(expected.as_bytes()),
            "seed {seed}"
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.starts_with("cells:\n") && stdout.ends_with("end\n"),
            "{stdout}"
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("check: the simulation agrees with `op2 run`"),
            "{stderr}"
        );
    }
    let graph = built(&scratch, "show.op2");
    assert!(graph.contains(
        "op2_print.length = op2_print_flush(op2_print.line, op2_print.length, op2_log);"
    ));
}

const FETCHES: &str = "set cells;\n\ndat p_n: int[2] on cells;\n\nglobal n: int[6];\n\nkernel twice(int *n) {\n    n[1] = 2 * n[0];\n}\n\nmain {\n    par_loop twice over cells (p_n RW);\n    fetch p_n into n;\n    for (int i = 0; i < 6; i++)\n        printf(\"[%d]\", n[i]);\n    print(\"\");\n}\n";

/// A `fetch` runs in both engines, `op2 simulate --check` prints the same
/// and agrees with `op2 run` on every value (negative ones included), and
/// `op2 build` writes the reduction's invocation.
#[test]
fn a_fetch_runs_simulates_with_check_and_builds() {
    let scratch = checked(
        "fetch.op2",
        FETCHES,
        r#"{ "sets": { "cells": 3 }, "dats": { "p_n": [[4, 0], [5, 0], [-6, 0]] } }"#,
    );
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
    let xml = built(&scratch, "fetch.op2");
    assert!(xml.contains("op2_fetch_p_n_begin"), "{xml}");
    assert!(xml.contains("op2_fetch_p_n_end"), "{xml}");
}

/// Output that cannot be written (a full disk) is the command's error, in
/// `op2 simulate` as in `op2 run`: exit status 2, not a success.
#[cfg(target_os = "linux")]
#[test]
fn output_that_cannot_be_written_is_an_error() {
    let scratch = Scratch::new();
    scratch.file("data.json", r#"{ "sets": {} }"#);
    scratch.file("p.op2", "main {\n    print(\"hello\");\n}\n");
    for command in ["run", "simulate"] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let output = std::process::Command::new(assert_cmd::cargo::cargo_bin!("op2"))
            .current_dir(scratch.path("."))
            .args([command, "p.op2", "--instance", "data.json"])
            .stdout(full)
            .output()
            .expect("op2 runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{command}: {stderr}"
        );
    }
}
