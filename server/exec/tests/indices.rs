//! `idx` arguments (the element's index, and the index a map reaches) and
//! `INFO` globals (what the kernel stored at the element where a MIN or
//! MAX global reached its extreme): the interpreter, the compiled engine
//! on one and two threads, and the simulation of the generated graph with
//! the flat controller and with trees, over several delivery orders, all
//! give the same integers, and those are what the definitions say,
//! computed here from the instance by brute force.

use crate::support;

use op2_analysis::value::Value;
use op2_exec::{Engine, Reference, State, Tolerance};
use support::{Case, assert_same_run, load};

const FAN_LIMITS: [u32; 3] = [0, 16, 2];

const PROGRAM: &str = "\
set nodes;
set edges;

map pedge: edges -> nodes[2];

dat p_v: double on nodes;
dat p_code: int on edges;

global g_start: double;
global g_big: double;
global g_where: int[3];
global g_small: double;
global g_at: int;

kernel jump(
    const double *a,
    const double *b,
    const int *edge,
    const int *n1,
    double *big,
    int *where,
    double *small,
    int *at,
    int *code,
) {
    double d = fabs(a[0] - b[0]);
    if (d > *big) {
        *big = d;
        where[0] = *edge;
        where[1] = *n1;
        where[2] = where[2] + 1;
    }
    if (d < *small) {
        *small = d;
        *at = *edge;
    }
    code[0] = *edge * 1000 + *n1;
}

main {
    g_big = g_start;
    g_where[0] = -1;
    g_where[1] = -1;
    g_where[2] = 0;
    g_small = 1.0e9;
    g_at = -7;
    par_loop jump over edges (
        p_v[pedge[0]] READ,
        p_v[pedge[1]] READ,
        idx,
        idx[pedge[1]],
        g_big         MAX,
        g_where       INFO(g_big),
        g_small       MIN,
        g_at          INFO(g_small),
        p_code        WRITE,
    );
    print(\"%g at %d %d %d; %g at %d\", g_big, g_where[0], g_where[1], g_where[2], g_small, g_at);
}
";

/// A ring of `nodes` nodes whose edges join `e` and `(e * 7 + 3) % nodes`,
/// with values that repeat (so that extremes tie), and the start of the MAX.
fn instance(nodes: usize, start: f64) -> (String, Vec<[usize; 2]>, Vec<f64>) {
    let edges: Vec<[usize; 2]> = (0..nodes).map(|e| [e, (e * 7 + 3) % nodes]).collect();
    let values: Vec<f64> = (0..nodes).map(|n| ((n * 5) % 9) as f64 * 0.5).collect();
    let rows: Vec<String> = edges.iter().map(|[a, b]| format!("[{a},{b}]")).collect();
    let v: Vec<String> = values.iter().map(|x| format!("{x:?}")).collect();
    let json = format!(
        "{{\"sets\":{{\"nodes\":{nodes},\"edges\":{nodes}}},\"maps\":{{\"pedge\":[{}]}},\"dats\":{{\"p_v\":[{}]}},\"globals\":{{\"g_start\":{start:?}}}}}",
        rows.join(","),
        v.join(",")
    );
    (json, edges, values)
}

fn ints(values: &[Value]) -> Vec<i64> {
    values.iter().map(|v| v.as_i64().expect("an int")).collect()
}

/// Runs every engine and the simulation (each fan limit, three seeds) and
/// requires the same final state, integers exactly; returns the state.
fn agreed(json: &str) -> (Case, State) {
    let case = load("indices.op2", PROGRAM, json.as_bytes());
    let (state, _) = case.run().expect("the reference run succeeds");
    for threads in [2, 3] {
        let mut output = String::new();
        let mut sink = |text: &str| output.push_str(text);
        let threaded = Reference::new(
            &case.analysis,
            State::new(&case.analysis.program, &case.data),
            &mut sink,
        )
        .with_engine(Engine::Compiled)
        .with_threads(threads)
        .run(u64::MAX)
        .map(|state| (state, String::new()));
        assert_same_run(&Ok((state.clone(), String::new())), &threaded);
    }
    for fan_limit in FAN_LIMITS {
        let case = load("indices.op2", PROGRAM, json.as_bytes()).with_fan_limit(fan_limit);
        for seed in [0, 1, 7] {
            case.assert_agree(
                seed,
                Tolerance {
                    relative: 0.0,
                    absolute: 0.0,
                },
            );
        }
    }
    (case, state)
}

#[test]
fn idx_passes_the_element_and_the_index_a_map_reaches() {
    let (json, edges, _) = instance(23, 0.0);
    let (case, state) = agreed(&json);
    let code = state.dats[case
        .analysis
        .program
        .dats
        .iter()
        .position(|d| d.name == "p_code")
        .expect("p_code")]
    .clone();
    let expected: Vec<i64> = edges
        .iter()
        .enumerate()
        .map(|(e, [_, b])| (e * 1000 + b) as i64)
        .collect();
    assert_eq!(ints(&code), expected);
}

#[test]
fn info_takes_the_first_element_that_reaches_the_extreme() {
    let (json, edges, values) = instance(26, 0.0);
    let (case, state) = agreed(&json);
    let jumps: Vec<f64> = edges
        .iter()
        .map(|[a, b]| (values[*a] - values[*b]).abs())
        .collect();
    let big = jumps.iter().copied().fold(0.0, f64::max);
    let first_big = jumps
        .iter()
        .position(|&d| d == big)
        .expect("a largest jump");
    let small = jumps.iter().copied().fold(1.0e9, f64::min);
    let first_small = jumps.iter().position(|&d| d == small).expect("a smallest");
    // The test is only worth something when the extremes tie.
    assert!(jumps.iter().filter(|&&d| d == big).count() > 1, "{jumps:?}");
    assert!(
        jumps.iter().filter(|&&d| d == small).count() > 1,
        "{jumps:?}"
    );
    assert_eq!(case.global(&state, "g_big"), vec![Value::Double(big)]);
    // The winner's copy of `g_where` started from the global's value, so
    // its counter is 1 on every engine whatever the order.
    assert_eq!(
        ints(&case.global(&state, "g_where")),
        vec![first_big as i64, edges[first_big][1] as i64, 1]
    );
    assert_eq!(case.global(&state, "g_small"), vec![Value::Double(small)]);
    assert_eq!(ints(&case.global(&state, "g_at")), vec![first_small as i64]);
}

#[test]
fn info_keeps_its_value_when_no_element_improves_the_extreme() {
    // The MAX starts above every jump: no element raises it.
    let (json, _, _) = instance(17, 100.0);
    let (case, state) = agreed(&json);
    assert_eq!(case.global(&state, "g_big"), vec![Value::Double(100.0)]);
    assert_eq!(ints(&case.global(&state, "g_where")), vec![-1, -1, 0]);
}

/// An `ull` index past the largest `ll` (from a dat, so that no check
/// sees it) is out of range in every engine, named as it is: it was taken
/// as 0 and read the first component.
#[test]
fn an_ull_index_past_the_largest_ll_is_out_of_range_in_every_engine() {
    let program = "set cells;\n\
        dat p_q: double[2] on cells = {5.0, 6.0};\n\
        dat p_u: ull on cells;\n\
        dat p_o: double on cells;\n\
        kernel k(const double *q, const ull *u, double *o) { o[0] = q[u[0]]; }\n\
        main { par_loop k over cells (p_q READ, p_u READ, p_o WRITE); }\n";
    for (index, fault) in [
        ("9223372036854775808", true),
        ("18446744073709551615", true),
        ("1", false),
    ] {
        let instance = format!(r#"{{"sets": {{"cells": 1}}, "dats": {{"p_u": [{index}]}}}}"#);
        let case = load("u.op2", program, instance.as_bytes());
        let expected = format!("index {index} is out of range for length 2");
        match case.run() {
            Err(e) => {
                assert!(fault, "{index}: {e}");
                assert!(e.to_string().contains(&expected), "{index}: {e}");
            }
            Ok((state, _)) => {
                assert!(!fault, "{index}: ran");
                assert_eq!(case.dat(&state, "p_o"), [Value::Double(6.0)]);
            }
        }
        let simulated = case.simulate(Default::default());
        match simulated {
            Err(e) => assert!(fault && e.to_string().contains(&expected), "{index}: {e}"),
            Ok(_) => assert!(!fault, "{index}: simulated"),
        }
    }
}

/// A cast on a literal index converts it, as C does and as `op2 check`
/// reads it: `q[(bool)5]` is `q[1]` and `q[(int)4294967296]` is `q[0]`
/// (each was taken as written, out of range).
#[test]
fn a_cast_on_a_literal_index_is_the_index_it_converts_to() {
    let program = "set cells;\n\
        dat p_q: double[2] on cells = {5.0, 6.0};\n\
        dat p_o: double on cells;\n\
        kernel k(const double *q, double *o) { o[0] = q[(bool)5] * 10.0 + q[(int)4294967296]; }\n\
        main { par_loop k over cells (p_q READ, p_o WRITE); }\n";
    let case = load("c.op2", program, br#"{"sets": {"cells": 1}}"#);
    let (state, _) = case.run().expect("runs");
    assert_eq!(case.dat(&state, "p_o"), [Value::Double(65.0)]);
    let (simulated, _, _) = case.simulate(Default::default()).expect("simulates");
    assert_eq!(case.dat(&simulated, "p_o"), [Value::Double(65.0)]);
}

/// `min` and `max` are C++'s `std::min` and `std::max` (`b < a ? b : a`,
/// `a < b ? b : a`) in both engines, the simulation and the generated C++
/// (`op2_min`, `op2_max`): of two equal zeros, or of a NaN and a number,
/// each gives the first. The C++'s `max` was `a > b ? a : b`, so hardware
/// and `op2 run` printed different zeros, and an imported `std::min` gave
/// the second.
#[test]
fn min_and_max_of_equal_zeros_and_a_nan_are_std_min_and_max_everywhere() {
    let program = "set cells;\n\
        dat p_z: double on cells = 0.0;\n\
        dat p_one: double on cells = 1.0;\n\
        dat p_o: double[6] on cells;\n\
        kernel k(const double *z, const double *one, double o[6]) {\n\
            double nan = z[0] / z[0];\n\
            o[0] = max(z[0], -z[0]); o[1] = max(-z[0], z[0]);\n\
            o[2] = (double) isnan(max(nan, one[0])); o[3] = (double) isnan(max(one[0], nan));\n\
            o[4] = min(z[0], -z[0]); o[5] = (double) isnan(min(nan, one[0]));\n\
        }\n\
        main { par_loop k over cells (p_z READ, p_one READ, p_o WRITE); }\n";
    let case = load("m.op2", program, br#"{"sets": {"cells": 1}}"#);
    let (state, _) = case.run().expect("runs");
    let (simulated, _, _) = case.simulate(Default::default()).expect("simulates");
    for state in [state, simulated] {
        let bits: Vec<u64> = case
            .dat(&state, "p_o")
            .iter()
            .map(|v| match v {
                Value::Double(d) => d.to_bits(),
                other => panic!("{other:?}"),
            })
            .collect();
        let expected: Vec<u64> = [0.0_f64, -0.0, 1.0, 0.0, 0.0, 1.0]
            .iter()
            .map(|d| d.to_bits())
            .collect();
        assert_eq!(bits, expected);
    }
}

/// A compound assignment or `++` evaluates its place's index once, as C
/// does: `a[i++] += 5` adds to `a[0]` and leaves `i` at 1 (the index was
/// evaluated again to read the old value: `a[1] = a[0] + 5`, `i` at 2), in
/// both engines and the simulation, for `int` and `bool` elements.
#[test]
fn a_compound_assignment_evaluates_its_index_once() {
    let program = "set cells;\n\
        dat p_o: double[8] on cells;\n\
        kernel k(double o[8]) {\n\
            int a[4] = {10, 20, 30, 40};\n\
            int i = 0;\n\
            a[i++] += 5;\n\
            a[i++]++;\n\
            bool f[4] = {false, true, false, false};\n\
            int j = 0;\n\
            f[j++] += 1;\n\
            ++f[j++];\n\
            f[j++]--;\n\
            o[0] = (double) a[0]; o[1] = (double) a[1]; o[2] = (double) a[2]; o[3] = (double) i;\n\
            o[4] = (double) f[0]; o[5] = (double) f[1]; o[6] = (double) f[2]; o[7] = (double) j;\n\
        }\n\
        main { par_loop k over cells (p_o WRITE); }\n";
    let case = load("c.op2", program, br#"{"sets": {"cells": 1}}"#);
    let expected: Vec<Value> = [15.0, 21.0, 30.0, 2.0, 1.0, 1.0, 1.0, 3.0]
        .into_iter()
        .map(Value::Double)
        .collect();
    let (state, _) = case.run().expect("runs");
    assert_eq!(case.dat(&state, "p_o"), expected);
    let (simulated, _, _) = case.simulate(Default::default()).expect("simulates");
    assert_eq!(case.dat(&simulated, "p_o"), expected);
}
