//! What `main` writes and how it ends: `printf` writes exactly the bytes C's
//! `printf` writes (no newline added), `print` ends its line, and
//! `exit(status)` ends the program with that status, alike in both engines
//! of `op2 run` and in `op2 simulate`; a kernel's `print` writes its lines
//! element by element in `op2 run`, device by device in `op2 simulate`.

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

/// A kernel that prints, in an indirect loop with a reduction, between
/// `main`'s own part-line output.
const KERNEL_PRINTS: &str = r#"
set nodes;
set edges;

map pedge: edges -> nodes[2];

dat p_x: double on nodes;
dat p_w: int on edges;

global g_sum: double;

kernel show(const double *a, const double *b, const int *w, double *s) {
    double d = b[0] - a[0];
    printf("edge %d: %g", w[0], d);
    if (d > 0.0)
        print(" up");
    else
        printf(" down %.2f\n", -d);
    *s += d * w[0];
}

main {
    printf("before ");
    par_loop show over edges (p_x[pedge[0]] READ, p_x[pedge[1]] READ, p_w READ, g_sum INC);
    print("sum %g", g_sum);
}
"#;

const EDGES: &[u8] = br#"{"sets": {"nodes": 3, "edges": 3},
  "maps": {"pedge": [[0, 1], [1, 2], [2, 0]]},
  "dats": {"p_x": [1.0, 0.5, 4.25], "p_w": [7, 8, 9]}}"#;

/// Runs `case` with `engine` (any fallback allowed), with the output, the
/// final state or the error, and the fallback note.
fn run_engine(
    case: &support::Case,
    engine: op2_exec::Engine,
    threads: usize,
) -> (String, Result<op2_exec::State, String>, Option<String>) {
    let mut output = String::new();
    let mut sink = |text: &str| output.push_str(text);
    let state = op2_exec::State::new(&case.analysis.program, &case.data);
    let reference = op2_exec::Reference::new(&case.analysis, state, &mut sink)
        .with_engine(engine)
        .with_threads(threads);
    let fallback = reference.fallback().map(str::to_owned);
    let result = reference.run(u64::MAX).map_err(|e| e.to_string());
    (output, result, fallback)
}

#[test]
fn a_kernel_prints_per_element_in_element_order_alike_in_both_engines() {
    let case = load("edges.op2", KERNEL_PRINTS, EDGES);
    let (interpreted, state, fallback) = run_engine(&case, op2_exec::Engine::Interp, 1);
    assert_eq!(fallback, None);
    let state = state.expect("the program runs");
    // Each edge's text after the one before, after `main`'s "before ".
    let mut expected = String::from("before ");
    let x = [1.0, 0.5, 4.25];
    let mut sum = 0.0;
    for (k, (a, b)) in [(0, 1), (1, 2), (2, 0)].into_iter().enumerate() {
        let d: f64 = x[b] - x[a];
        let w = 7 + k;
        expected.push_str(&format!("edge {w}: {d}"));
        if d > 0.0 {
            expected.push_str(" up\n");
        } else {
            expected.push_str(&format!(" down {:.2}\n", -d));
        }
        sum += d * w as f64;
    }
    expected.push_str(&format!("sum {sum}\n"));
    assert_eq!(interpreted, expected);
    // The compiled engine runs the printing kernel interpreted, with a
    // note, on any number of threads: the same bytes and state.
    for threads in [1, 4] {
        let (compiled, compiled_state, fallback) =
            run_engine(&case, op2_exec::Engine::Compiled, threads);
        assert_eq!(compiled, interpreted, "{threads} threads");
        let fallback = fallback.expect("a printing kernel is not compiled");
        assert!(
            fallback.contains("par_loop `show` is not compiled: its kernel prints"),
            "{fallback}"
        );
        assert_eq!(
            compiled_state.expect("it runs").globals,
            state.globals,
            "{threads} threads"
        );
    }
}

#[test]
fn a_kernel_that_prints_stops_both_engines_alike_at_a_fault() {
    // The third element divides by zero: the first two have printed.
    let text = "set cells;\n\ndat p_n: int on cells;\n\nkernel show(const int *n) {\n    printf(\"%d;\", 6 / (2 - n[0]));\n}\n\nmain {\n    par_loop show over cells (p_n READ);\n}\n";
    let case = load(
        "fault.op2",
        text,
        br#"{"sets": {"cells": 4}, "dats": {"p_n": [0, 1, 2, 3]}}"#,
    );
    let (interpreted, error, _) = run_engine(&case, op2_exec::Engine::Interp, 1);
    let (compiled, compiled_error, _) = run_engine(&case, op2_exec::Engine::Compiled, 2);
    assert_eq!(interpreted, "3;6;");
    assert_eq!(compiled, interpreted);
    let error = error.expect_err("division by zero");
    assert!(error.contains("fault.op2:6:19"), "{error}");
    assert_eq!(compiled_error.expect_err("division by zero"), error);
}

/// `KERNEL_PRINTS` with `main`'s lines whole, and a compiled kernel after
/// the printing one (the compiled engine declines the printing kernel half
/// way through building it, and must build the next one from scratch).
fn kernel_prints_whole_lines() -> String {
    let text = KERNEL_PRINTS
        .replace("printf(\"before \");", "print(\"before\");")
        .replace(
            "main {\n",
            "kernel twice(double *x) {\n    x[0] = 2.0 * x[0];\n}\n\nmain {\n",
        )
        .replace(
            "    print(\"sum",
            "    par_loop twice over nodes (p_x RW);\n    print(\"sum",
        );
    assert!(text.contains("print(\"before\");") && text.contains("par_loop twice"));
    text
}

/// The lines of `text`, sorted: its lines as a multiset.
fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}

#[test]
fn the_simulator_prints_a_kernels_lines_in_the_delivery_order() {
    let case = load("edges.op2", &kernel_prints_whole_lines(), EDGES);
    let (output, state, _) = run_engine(&case, op2_exec::Engine::Interp, 1);
    let state = state.expect("the program runs");
    assert_eq!(output.lines().count(), 5, "{output}");
    let mut orders = std::collections::BTreeSet::new();
    for engine in [op2_exec::Engine::Compiled, op2_exec::Engine::Interp] {
        for seed in 0..32 {
            let (simulated, sim_output, statistics) = case
                .simulate(Options {
                    seed,
                    engine,
                    ..Options::default()
                })
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            // The same lines, `main`'s in their place around the loop's.
            assert_eq!(
                sorted_lines(&sim_output),
                sorted_lines(&output),
                "seed {seed}, {engine:?}"
            );
            let lines: Vec<&str> = sim_output.lines().collect();
            assert_eq!(lines[0], "before");
            assert!(lines[4].starts_with("sum "), "{sim_output}");
            assert_eq!(simulated.globals, state.globals, "seed {seed}");
            assert_eq!(statistics.evaluations, 6);
            orders.insert(sim_output);
        }
    }
    // The edges print in the order their devices ran, which the seed
    // decides, not in element order.
    assert!(orders.len() > 1, "one order for every seed: {orders:?}");
}

#[test]
fn in_the_simulator_each_evaluation_ends_its_line_and_mains_waits_for_its_own_end() {
    // Every edge leaves its line unfinished, as `main` does before the loop.
    let text = "set edges;\n\ndat p_w: int on edges;\n\nkernel show(const int *w) {\n    printf(\"edge %d\", w[0]);\n}\n\nmain {\n    printf(\"before \");\n    par_loop show over edges (p_w READ);\n    print(\"after\");\n}\n";
    let case = load(
        "parts.op2",
        text,
        br#"{"sets": {"edges": 3}, "dats": {"p_w": [7, 8, 9]}}"#,
    );
    let (output, state, _) = run_engine(&case, op2_exec::Engine::Interp, 1);
    state.expect("the program runs");
    // `op2 run` writes one stream, as OP2's sequential build does.
    assert_eq!(output, "before edge 7edge 8edge 9after\n");
    for seed in 0..8 {
        let (_, sim_output, _) = case
            .simulate(Options {
                seed,
                ..Options::default()
            })
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        // Each device logs its own line; the controller logs its line when
        // `main` ends it.
        let lines: Vec<&str> = sim_output.lines().collect();
        assert_eq!(lines.len(), 4, "{sim_output}");
        assert_eq!(lines[3], "before after");
        let mut edges = lines[..3].to_vec();
        edges.sort_unstable();
        assert_eq!(edges, ["edge 7", "edge 8", "edge 9"], "seed {seed}");
    }
}

#[test]
fn a_kernels_line_limit_counts_its_own_evaluation_alike_in_run_and_simulate() {
    // 40 edges of 200 bytes each: 8000 bytes in one line of `op2 run`'s
    // stream, but no line buffer holds more than one edge's 200, and the
    // controller's holds `main`'s 4008.
    let text = "set edges;\n\ndat p_w: int on edges;\n\nkernel show(const int *w) {\n    for (int i = 0; i < 2; i++) printf(\"%100d\", w[0]);\n}\n\nmain {\n    printf(\"before \");\n    par_loop show over edges (p_w READ);\n    for (int i = 0; i < 4; i++) printf(\"%1000d\", i);\n    printf(\"\\n\");\n}\n";
    let case = load("many.op2", text, br#"{"sets": {"edges": 40}}"#);
    let (output, state, _) = run_engine(&case, op2_exec::Engine::Interp, 1);
    state.expect("no line buffer overflows");
    assert_eq!(output.len(), 7 + 40 * 200 + 4001);
    let (_, sim_output, _) = case.simulate(Options::default()).expect("it simulates");
    assert_eq!(sim_output.len(), output.len() + 40);
    // One evaluation that prints more than a line buffer holds stops both
    // at the same statement.
    let text = text.replace("i < 2", "i < 41");
    let case = load("long.op2", &text, br#"{"sets": {"edges": 1}}"#);
    let (_, result, _) = run_engine(&case, op2_exec::Engine::Interp, 1);
    let error = result.expect_err("one line of 4100 bytes");
    assert!(
        error.contains("long.op2:6:34")
            && error.contains(
                "this writes 100 bytes after the 4000 bytes of an unfinished line, more than the 4096 of a POETS line buffer"
            ),
        "{error}"
    );
    simulation_fails_alike(&case, &error);
}

/// The statistics count the epochs that ran: a `main` that only prints
/// ends in the first.
#[test]
fn a_main_that_only_prints_ends_in_one_epoch() {
    let case = load(
        "one.op2",
        "main {\n    print(\"x\");\n}\n",
        br#"{"sets": {}}"#,
    );
    let (_, _, statistics) = case.simulate(Options::default()).expect("simulates");
    assert_eq!(statistics.epochs, 1, "{statistics}");
}
