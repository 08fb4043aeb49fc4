//! `fetch DAT into GLOBAL;`: `main` gets every value of a dat, element by
//! element, in both engines of `op2 run` (on one thread and several), bit
//! for bit; a global of another length stops the run at the statement; and
//! `op2 simulate` runs the graph's linear fetch (compilation.md, "A `fetch`
//! on POETS") and agrees with `op2 run` bit for bit, with trees and
//! without, its traffic growing linearly with the dat.

use crate::support;

use op2_analysis::value::Value;
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
fn simulate_fetches_what_run_fetches_bit_for_bit_signs_of_zero_included() {
    let case = load("spread.op2", SPREAD, MESH);
    let (expected, run_output) = case.run().expect("it runs");
    for fan_limit in [16, 0, 2] {
        let case = load("spread.op2", SPREAD, MESH).with_fan_limit(fan_limit);
        for seed in [0, 1, 7, 42] {
            // Both of the simulator's engines end alike, and each fetch is
            // one invocation.
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
            let (state, output, _) = case
                .simulate(Options {
                    seed,
                    ..Options::default()
                })
                .expect("it simulates");
            // The items are copied, not added to a zero: `-0.0` comes back
            // as `-0.0`, and the output is `run`'s.
            assert_eq!(
                support::first_difference(&expected, &state),
                None,
                "fan limit {fan_limit}, seed {seed}"
            );
            assert!(
                matches!(case.global(&state, "u")[1], Value::Double(z) if z.is_sign_negative())
            );
            assert_eq!(output, run_output, "fan limit {fan_limit}, seed {seed}");
        }
    }
}

/// A program over `n` nodes whose dats have several types and dimensions,
/// several of them split into two items per element (`double[10]`: 6 and 4
/// values; `float[20]`: 13 and 7; `ll[7]`: 6 and 1; `uint[14]`: 13 and 1),
/// changed in a loop (negating zeros into `-0.0` and back) and fetched in
/// it, one dat twice, and its instance.
fn mixed(n: usize) -> (String, Vec<u8>) {
    let text = format!(
        r#"
set nodes;

dat p_a: double[10] on nodes;
dat p_b: float[20] on nodes;
dat p_c: int[3] on nodes;
dat p_d: double on nodes;
dat p_e: ll[7] on nodes;
dat p_f: uint[14] on nodes;

global a: double[{a}];
global a2: double[{a}];
global b: float[{b}];
global c: int[{c}];
global d: double[{n}];
global e: ll[{e}];
global f: uint[{f}];

kernel step(double *a, float *b, int *c, double *d, ll *e, uint *f) {{
    a[0] = -a[0];
    a[9] = a[9] * 0.5;
    b[12] = -b[12];
    b[19] = b[19] * 3.0f;
    c[2] = c[2] - 7;
    d[0] = -d[0];
    e[6] = e[6] * 3;
    f[13] = f[13] + 1;
}}

main {{
    for (int k = 0; k < 3; k++) {{
        par_loop step over nodes (p_a RW, p_b RW, p_c RW, p_d RW, p_e RW, p_f RW);
        fetch p_a into a;
        fetch p_b into b;
        fetch p_c into c;
        fetch p_d into d;
        fetch p_e into e;
        fetch p_f into f;
        if (k == 1)
            fetch p_a into a2;
    }}
    print("%g %g %g %d %g", a[0], a[{a_last}], b[{b_last}], c[2], d[0]);
}}
"#,
        a = 10 * n,
        b = 20 * n,
        c = 3 * n,
        e = 7 * n,
        f = 14 * n,
        a_last = 10 * n - 1,
        b_last = 20 * n - 1,
    );
    let row = |i: usize, dimension: usize, zero_first: bool| -> String {
        let values: Vec<String> = (0..dimension)
            .map(|j| {
                if zero_first && j == 0 && i.is_multiple_of(2) {
                    "0".to_owned()
                } else {
                    format!("{}", i * dimension + j)
                }
            })
            .collect();
        format!("[{}]", values.join(","))
    };
    let dat = |dimension: usize, zero_first: bool| -> String {
        let rows: Vec<String> = (0..n).map(|i| row(i, dimension, zero_first)).collect();
        format!("[{}]", rows.join(","))
    };
    let d: Vec<String> = (0..n)
        .map(|i| {
            if i.is_multiple_of(3) {
                "0".to_owned()
            } else {
                format!("{}.25", i)
            }
        })
        .collect();
    let json = format!(
        r#"{{"sets": {{"nodes": {n}}}, "dats": {{"p_a": {}, "p_b": {}, "p_c": {}, "p_d": [{}], "p_e": {}, "p_f": {}}}}}"#,
        dat(10, true),
        dat(20, false),
        dat(3, false),
        d.join(","),
        dat(7, false),
        dat(14, false),
    );
    (text, json.into_bytes())
}

#[test]
fn dats_of_every_shape_are_fetched_bit_for_bit_in_windows_with_and_without_trees() {
    // 37 elements: with the default fan limit, `p_a` is 74 items in windows
    // of 16, through a tree of 3 aggregators; with 3, windows of 3 through
    // 3 levels.
    let (text, json) = mixed(37);
    let base = load("mixed.op2", &text, &json);
    let (expected, run_output) = base.run().expect("it runs");
    // The odd number of negations leaves `-0.0` in the fetched globals.
    let d = base.global(&expected, "d");
    assert!(matches!(d[0], Value::Double(z) if z == 0.0 && z.is_sign_negative()));
    for fan_limit in [16, 0, 3, 2] {
        let case = load("mixed.op2", &text, &json).with_fan_limit(fan_limit);
        for seed in [0, 3, 11] {
            let (state, output, statistics) = case
                .simulate(Options {
                    seed,
                    ..Options::default()
                })
                .unwrap_or_else(|e| panic!("fan limit {fan_limit}, seed {seed}: {e}"));
            assert_eq!(
                support::first_difference(&expected, &state),
                None,
                "fan limit {fan_limit}, seed {seed}"
            );
            assert_eq!(output, run_output, "fan limit {fan_limit}, seed {seed}");
            // Every fetch ran, `p_a`'s twice over.
            let fetches = statistics
                .invocations
                .iter()
                .filter(|(name, _)| name.starts_with("op2_fetch_"))
                .count();
            assert_eq!(fetches, 7, "fan limit {fan_limit}");
        }
        if fan_limit == 3 {
            case.assert_engines_simulate_alike(5, u64::MAX)
                .expect("both engines simulate it");
        }
    }
}

/// The deliveries, and the values they carry, of the fetches of `p_u`
/// (`double[2]`) over `n` nodes with `fan_limit`.
fn fetch_traffic(n: usize, fan_limit: u32) -> (u64, u64) {
    let text = format!(
        "set nodes;\n\ndat p_u: double[2] on nodes;\n\nglobal u: double[{}];\n\nmain {{\n    fetch p_u into u;\n    print(\"%g\", u[1]);\n}}\n",
        2 * n
    );
    let rows: Vec<String> = (0..n).map(|i| format!("[{i}, -{i}]")).collect();
    let json = format!(
        r#"{{"sets": {{"nodes": {n}}}, "dats": {{"p_u": [{}]}}}}"#,
        rows.join(",")
    );
    let case = load("traffic.op2", &text, json.as_bytes()).with_fan_limit(fan_limit);
    let (state, _, statistics) = case
        .simulate(Options::default())
        .unwrap_or_else(|e| panic!("{n} nodes: {e}"));
    let (expected, _) = case.run().expect("it runs");
    assert_eq!(
        support::first_difference(&expected, &state),
        None,
        "{n} nodes"
    );
    let (_, traffic) = &statistics.invocations[0];
    (traffic.delivered, traffic.values)
}

#[test]
fn a_fetchs_traffic_grows_linearly_with_the_dat() {
    // Four times the nodes: about four times the deliveries and the values
    // they carry, without trees and with trees of one depth (one level of
    // aggregators of at most 16 for 50 and for 200 nodes); a reduction
    // whose every end message carries the whole global would carry
    // sixteen times the values. (A tree that grows a level adds an edge to
    // every item's way up: the cost is linear at each depth.)
    for (fan_limit, n) in [(16, 50), (0, 150)] {
        let (deliveries, values) = fetch_traffic(n, fan_limit);
        let (deliveries_4, values_4) = fetch_traffic(4 * n, fan_limit);
        for (what, small, large) in [
            ("deliveries", deliveries, deliveries_4),
            ("values", values, values_4),
        ] {
            assert!(
                large >= 3 * small && large <= 5 * small,
                "fan limit {fan_limit}: {what} {small} for {n} nodes, {large} for {}",
                4 * n
            );
        }
    }
}

/// Fuzz case 523280 (campaign of 804b51b, seed 4), made small: a `fetch` in
/// a loop of `main`. The graph's fetch copies the dat (the second and third
/// fetch do not add to the first, as the reduction of before did until it
/// zeroed the global), and the fetch adds no loop to `main`: `op2
/// simulate` counts the same loop iterations against `--max-iterations` as
/// `op2 run`, ending where `run` ends and stopping where `run` stops. The
/// reduction once zeroed the global in a loop of `main`, which stopped the
/// simulation after 3 of the 8 + 1 iterations it then counted.
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

/// An aggregator's buffer holds a window's items, so it never overflows
/// (the tests above); one of a single slot does, under some delivery
/// order, and the simulator reports it as the generated code's fault
/// rather than losing an item.
#[test]
fn an_overflowing_item_buffer_is_reported_as_a_fault_of_the_generated_code() {
    let (text, json) = mixed(37);
    let case = load("mixed.op2", &text, &json);
    let (expected, _) = case.run().expect("it runs");
    let mut overflowed = 0;
    for seed in 0..20 {
        let result = case.simulate(Options {
            seed,
            injection: Some(op2_exec::simulate::Injection::FetchBufferSlots(1)),
            ..Options::default()
        });
        match result {
            Ok((state, _, _)) => assert_eq!(
                support::first_difference(&expected, &state),
                None,
                "seed {seed}"
            ),
            Err(error) => {
                let message = error.to_string();
                assert!(
                    message.starts_with("handler assertion failed: ")
                        && message.contains(
                            "the item buffer of a fetch's aggregator overflowed, a fault of the generated code"
                        )
                        && message.contains("tree_op2_fetch_"),
                    "seed {seed}: {message}"
                );
                overflowed += 1;
            }
        }
    }
    assert!(
        overflowed > 0,
        "no seed of 20 overflowed a buffer of one item"
    );
}
