//! Kernel loops are bounded: one kernel evaluation may run at most
//! 2^24 loop iterations (all its loops together) in every engine, and a
//! loop that goes past it stops `op2 run` and `op2 simulate` with an error
//! naming the loop, where it would otherwise run forever.

use crate::support;

use std::path::PathBuf;

use support::{Scratch, op2};

const LIMIT: u64 = 1 << 24;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/simulate")
}

/// Exit code and the error lines of `op2 ARGS`.
fn outcome(command: &mut assert_cmd::Command) -> (Option<i32>, Vec<String>) {
    let output = command.output().expect("op2 runs");
    let errors = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.starts_with("error"))
        .map(str::to_owned)
        .collect();
    (output.status.code(), errors)
}

#[test]
fn a_loop_that_never_ends_stops_at_the_limit_in_every_engine() {
    let program = fixtures().join("kernel_loop.op2");
    let instance = fixtures().join("kernel_loop.instance.json");
    let runs = [
        vec!["run", "--engine", "interp"],
        vec!["run", "--engine", "compiled"],
        vec!["simulate"],
    ];
    for args in runs {
        let (code, errors) = outcome(
            op2()
                .args(&args)
                .arg(&program)
                .arg("--instance")
                .arg(&instance),
        );
        assert_eq!(code, Some(1), "{args:?}: {errors:?}");
        assert_eq!(errors.len(), 1, "{args:?}: {errors:?}");
        let expected = format!(
            "kernel_loop.op2:9:5: this loop went past the limit of {LIMIT} loop iterations of one kernel evaluation in kernel `spin` (invocation `spin`, element "
        );
        assert!(errors[0].contains(&expected), "{args:?}: {errors:?}");
    }
}

/// A kernel whose loops run `outer` × (1 + `inner`) iterations in all.
fn nested(outer: u64, inner: u64) -> String {
    format!(
        "set cells;\ndat q: double on cells;\n\
         kernel count(double *q) {{\n    double k = 0.0;\n\
         \x20   for (int i = 0; i < {outer}; i++) {{\n\
         \x20       int j = 0;\n\
         \x20       while (j < {inner}) {{ j++; k = k + 1.0; }}\n\
         \x20   }}\n    q[0] = k;\n}}\n\
         main {{\n    par_loop count over cells (q WRITE);\n    print(\"done\");\n}}\n"
    )
}

#[test]
fn the_limit_counts_every_loop_of_one_evaluation_together() {
    let scratch = Scratch::new();
    scratch.file("data.json", r#"{ "sets": { "cells": 2 } }"#);
    // 4096 outer iterations, each with 4095 inner ones: exactly the limit.
    scratch.file("at.op2", nested(4096, 4095));
    scratch.file("past.op2", nested(4096, 4096));
    assert_eq!(4096 * (1 + 4095), LIMIT);
    let (code, errors) = outcome(&mut scratch.op2(&["run", "at.op2", "--instance", "data.json"]));
    assert_eq!((code, errors), (Some(0), vec![]));
    let (code, errors) = outcome(&mut scratch.op2(&["run", "past.op2", "--instance", "data.json"]));
    assert_eq!(code, Some(1), "{errors:?}");
    // The inner loop is the one that crosses the limit.
    assert!(
        errors[0].contains("past.op2:7:9: this loop went past the limit"),
        "{errors:?}"
    );
}
