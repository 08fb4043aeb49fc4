//! What `main` writes and how it ends: `printf` writes exactly the bytes C's
//! `printf` writes (no newline added), `print` ends its line, and
//! `exit(status)` ends the program with that status, alike in both engines
//! of `op2 run` and in `op2 simulate`.

use crate::support;

use op2_exec::simulate::{Options, SimulationError};
use support::load;

const GRID: &str = r#"
set cells;

dat p_u: double on cells = 1.5;

global g_sum: double;

kernel add(const double *u, double *s) {
    *s += u[0];
}

main {
    par_loop add over cells (p_u READ, g_sum INC);
    for (int j = 0; j < 2; j++) {
        for (int i = 0; i < 3; i++) {
            printf(" %7.4f", g_sum + i * j);
        }
        printf("\n");
    }
    printf("a");
    print("b %d", 2);
    printf("%s", "");
    printf("tail");
    for (int k = 0; k < 10; k++) {
        while (1) {
            if (g_sum > 1.0) exit(3 + k);
        }
    }
    print("not reached");
}
"#;

const CELLS: &[u8] = br#"{"sets": {"cells": 4}}"#;

#[test]
fn printf_writes_exactly_what_c_writes_and_exit_ends_with_its_status() {
    // `printf("%s", "")` is not in the language: drop it.
    let text = GRID.replace("    printf(\"%s\", \"\");\n", "");
    let case = load("grid.op2", &text, CELLS);
    // Both engines, compared byte for byte by `run`.
    let (state, output) = case.run().expect("the program runs");
    assert_eq!(
        output,
        "  6.0000  6.0000  6.0000\n  6.0000  7.0000  8.0000\nab 2\ntail"
    );
    // The innermost loops are left at once: the first `k` exits.
    assert_eq!(state.exit_status, Some(3));
    for seed in [0, 7] {
        let (simulated, sim_output, _) = case
            .simulate(Options {
                seed,
                ..Options::default()
            })
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(sim_output, output, "seed {seed}");
        assert_eq!(simulated.exit_status, Some(3), "seed {seed}");
    }
}

#[test]
fn a_program_that_ends_or_returns_has_no_exit_status() {
    let text = "global g: double;\n\nmain {\n    print(\"%g\", g);\n    if (g == 0.0) return;\n    exit(2);\n}\n";
    let case = load("end.op2", text, br#"{"sets": {}}"#);
    let (state, output) = case.run().expect("the program runs");
    assert_eq!((output.as_str(), state.exit_status), ("0\n", None));
    let (simulated, _, _) = case.simulate(Options::default()).expect("it simulates");
    assert_eq!(simulated.exit_status, None);
    let zero = load("zero.op2", "main {\n    exit(0);\n}\n", br#"{"sets": {}}"#);
    assert_eq!(zero.run().expect("runs").0.exit_status, Some(0));
}

#[test]
fn a_computed_exit_status_outside_a_byte_stops_the_run_at_the_exit() {
    let text = "main {\n    int n = 300;\n    exit(n);\n}\n";
    let case = load("status.op2", text, br#"{"sets": {}}"#);
    let error = case.run().expect_err("300 is no exit status").to_string();
    assert!(
        error.contains("status.op2:3:10") && error.contains("exit status 300 is outside 0..=255"),
        "{error}"
    );
    simulation_fails_alike(&case, &error);
}

#[test]
fn a_line_longer_than_the_controllers_buffer_stops_the_run_at_the_print() {
    // 4096 bytes fit, the newline included; the 4097th does not, whether
    // `printf` or `print` adds it to the unfinished line.
    let text = "main {\n    for (int i = 0; i < 4095; i++) printf(\"x\");\n    printf(\"\\n\");\n    for (int i = 0; i < 4096; i++) printf(\"y\");\n    print(\"\");\n}\n";
    let case = load("long.op2", text, br#"{"sets": {}}"#);
    let error = case.run().expect_err("the line is too long").to_string();
    assert!(
        error.contains("long.op2:5:5")
            && error.contains("this writes 1 byte after the 4096 bytes of an unfinished line"),
        "{error}"
    );
    simulation_fails_alike(&case, &error);
}

/// `op2 simulate` stops with the same error as `op2 run`.
fn simulation_fails_alike(case: &support::Case, error: &str) {
    match case.simulate(Options::default()) {
        Err(SimulationError::Runtime(e)) => assert_eq!(e.to_string(), error),
        other => panic!("expected the same error, got {other:?}"),
    }
}
