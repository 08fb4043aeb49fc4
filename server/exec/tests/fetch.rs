//! `fetch DAT into GLOBAL;`: `main` gets every value of a dat, element by
//! element, in both engines of `op2 run` (on one thread and several), bit
//! for bit; a global of another length stops the run at the statement; and
//! `op2 simulate` runs the graph's reduction (compilation.md, "A `fetch` on
//! POETS") and agrees with `op2 run`, but for the sign of a zero.

use crate::support;

use op2_analysis::value::Value;
use op2_exec::Tolerance;
use op2_exec::simulate::Options;
use op2_exec::{Engine, Reference, State};
use support::load;

/// Every node adds what its edges give it, then `main` fetches the nodes'
/// values twice: between the loops and after them, where a later loop
/// changed the dat again.
const SPREAD: &str = r#"
set nodes;
set edges;

map ends: edges -> nodes[2];

dat p_w: double on edges;
dat p_u: double[2] on nodes;

global u: double[8];
global before: double[8];

kernel spread(const double *w, double *a, double *b) {
    a[0] += w[0];
    b[1] -= w[0];
}

kernel negate(double *u) {
    u[0] = -u[0];
    u[1] = -u[1];
}

main {
    par_loop spread over edges (p_w READ, p_u[ends[0]] INC, p_u[ends[1]] INC);
    fetch p_u into before;
    par_loop negate over nodes (p_u RW);
    fetch p_u into u;
    for (int n = 0; n < 4; n++)
        print("%d: %g %g (%g %g)", n, u[2 * n], u[2 * n + 1], before[2 * n], before[2 * n + 1]);
}
"#;

const MESH: &[u8] =
    br#"{"sets": {"nodes": 4, "edges": 3}, "maps": {"ends": [[0, 1], [1, 2], [0, 3]]}, "dats": {"p_w": [0.5, 0.25, 2.0], "p_u": [[0, 0], [0, 0], [0, 0], [0, 0]]}}"#;

fn doubles(values: &[f64]) -> Vec<Value> {
    values.iter().map(|&v| Value::Double(v)).collect()
}

#[test]
fn fetch_copies_the_dat_element_by_element_in_both_engines() {
    let case = load("spread.op2", SPREAD, MESH);
    // `run` compares the interpreter and the compiled engine bit for bit.
    let (state, output) = case.run().expect("the program runs");
    // Node 0 gets 0.5 and 2.0 as first end; node 1 is the second end of
    // edge 0 and the first of edge 1; node 3 the second end of edge 2.
    let before = [2.5, 0.0, 0.25, -0.5, 0.0, -0.25, 0.0, -2.0];
    assert_eq!(case.global(&state, "before"), doubles(&before));
    let after: Vec<f64> = before.iter().map(|v| -v).collect();
    assert_eq!(case.global(&state, "u"), doubles(&after));
    // The sign of zero is kept: -0.0 is fetched as -0.0.
    assert!(matches!(case.global(&state, "u")[1], Value::Double(z) if z.is_sign_negative()));
    assert_eq!(
        output,
        "0: -2.5 -0 (2.5 0)\n1: -0.25 0.5 (0.25 -0.5)\n2: -0 0.25 (0 -0.25)\n3: -0 2 (0 -2)\n"
    );
    // The compiled engine on several threads fetches the same.
    for threads in [2, 4] {
        let (other, threaded) = case.run_threaded(threads).expect("runs on threads");
        assert_eq!(other.globals, state.globals, "{threads} threads");
        assert_eq!(threaded, output, "{threads} threads");
    }
}

#[test]
fn a_global_of_another_length_is_refused_with_the_instance_and_stops_the_run() {
    // With the instance data, before anything runs (E609 at the fetch).
    let text = SPREAD.replace("global u: double[8];", "global u: double[6];");
    let analysis = op2_analysis::analyse_text(
        std::path::Path::new("short.op2"),
        &text,
        &op2_analysis::Options { require_main: true },
    );
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    let loaded = op2_instance::read(MESH, &analysis.program, &mut op2_instance::NoProgress);
    assert!(loaded.data.is_none());
    let problem = &loaded.problems[0];
    assert_eq!(problem.code, op2_syntax::Code::E609, "{problem:#?}");
    assert_eq!(
        problem.message,
        "`fetch p_u into u` copies 8 values (set `nodes` has 4 elements, of 2 each), but global `u` holds 6"
    );
    assert_eq!(
        &text[problem.location.range.start as usize..][..17],
        "fetch p_u into u;"
    );
    // A state made otherwise (a library caller's) stops at the fetch, in
    // both engines alike.
    let case = load("spread.op2", SPREAD, MESH);
    let u = case
        .analysis
        .program
        .globals
        .iter()
        .position(|g| g.name == "u")
        .expect("u");
    let mut results = Vec::new();
    for engine in [Engine::Interp, Engine::Compiled] {
        let mut state = State::new(&case.analysis.program, &case.data);
        state.globals[u].truncate(6);
        let mut sink = |_: &str| {};
        let result = Reference::new(&case.analysis, state, &mut sink)
            .with_engine(engine)
            .run(u64::MAX);
        results.push(result.expect_err("the global is too short").message);
    }
    assert_eq!(results[0], results[1]);
    assert!(
        results[0].starts_with("spread.op2:27:5: `fetch` copies 8 values"),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains("into a global of 6 (E609)"),
        "{}",
        results[0]
    );
}

#[test]
fn simulate_runs_the_reduction_and_agrees_with_run_but_for_the_sign_of_zero() {
    let case = load("spread.op2", SPREAD, MESH);
    for seed in [0, 1, 7, 42] {
        // Every dat and global agrees numerically, both of the simulator's
        // engines end alike, and each fetch is one invocation.
        case.assert_agree(seed, Tolerance::DEFAULT);
        let statistics = case
            .assert_engines_simulate_alike(seed, 1_000)
            .expect("the simulation succeeds");
        let names: Vec<&str> = statistics
            .invocations
            .iter()
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(
            names,
            ["spread", "negate", "op2_fetch_p_u", "op2_fetch_p_u_1"],
            "seed {seed}"
        );
    }
    let (state, output, _) = case.simulate(Options::default()).expect("it simulates");
    let before = [2.5, 0.0, 0.25, -0.5, 0.0, -0.25, 0.0, -2.0];
    assert_eq!(case.global(&state, "before"), doubles(&before));
    // The reduction adds each value to a zero: `-0.0` comes back as `0.0`,
    // the only difference from `op2 run`'s output.
    let after: Vec<f64> = before.iter().map(|v| 0.0 - v).collect();
    assert_eq!(case.global(&state, "u"), doubles(&after));
    assert!(matches!(case.global(&state, "u")[1], Value::Double(z) if z.is_sign_positive()));
    assert_eq!(
        output,
        "0: -2.5 0 (2.5 0)\n1: -0.25 0.5 (0.25 -0.5)\n2: 0 0.25 (0 -0.25)\n3: 0 2 (0 -2)\n"
    );
}

/// Fuzz case 523280 (campaign of 804b51b, seed 4), made small: a `fetch` in
/// a loop of `main`. The graph's reduction starts from a zeroed global (the
/// second and third fetch do not add to the first), and the zeroing is no
/// loop of `main`: `op2 simulate` counts the same loop iterations against
/// `--max-iterations` as `op2 run`, ending where `run` ends and stopping
/// where `run` stops. It used to zero the global in a loop of `main`, which
/// stopped the simulation after 3 of the 8 + 1 iterations it then counted.
#[test]
fn a_fetch_in_a_loop_counts_the_iterations_of_run_and_starts_from_zero() {
    const BUMP: &str = r#"
set nodes;

dat p_u: double[2] on nodes;

global u: double[8];

kernel bump(double *u) {
    u[0] += 1.0;
    u[1] -= 0.5;
}

main {
    for (int step = 0; step < 3; step++) {
        par_loop bump over nodes (p_u RW);
        fetch p_u into u;
    }
    print("%g %g", u[0], u[7]);
}
"#;
    const NODES: &[u8] =
        br#"{"sets": {"nodes": 4}, "dats": {"p_u": [[0, 0], [1, 1], [2, 2], [3, 3]]}}"#;
    let case = load("bump.op2", BUMP, NODES);
    let expected = doubles(&[3.0, -1.5, 4.0, -0.5, 5.0, 0.5, 6.0, 1.5]);
    let limited = |max_iterations| Options {
        max_iterations,
        ..Options::default()
    };
    // The loop's three iterations are all `run` counts.
    let (state, output) = case.run_limited(3).expect("three iterations are allowed");
    assert_eq!(case.global(&state, "u"), expected);
    assert_eq!(output, "3 1.5\n");
    let stopped = case.run_limited(2).expect_err("two are not");
    assert!(
        stopped
            .message
            .contains("`main` stopped after 2 loop iterations"),
        "{}",
        stopped.message
    );
    // `simulate` ends and stops alike, and fetches the dat, not the sum of
    // three fetches.
    for seed in [0, 5] {
        let (state, output, _) = case
            .simulate(Options { seed, ..limited(3) })
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(case.global(&state, "u"), expected, "seed {seed}");
        assert_eq!(output, "3 1.5\n", "seed {seed}");
    }
    let stopped = case
        .simulate(limited(2))
        .expect_err("two iterations are not enough for simulate either");
    assert!(
        stopped
            .to_string()
            .contains("`main` stopped after 2 loop iterations"),
        "{stopped}"
    );
}
