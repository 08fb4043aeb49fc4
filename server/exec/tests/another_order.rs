//! The reference run in another order (`Reference::in_another_order`): each
//! par_loop's elements from the last to the first, every INC argument
//! summed apart and added after its kernel, each floating target summing
//! the two halves of the set apart, bit-identical in both engines;
//! and what `op2 simulate --check` lets it explain (`op2_exec::explain`).

use crate::support;

use op2_analysis::value::Value;
use op2_exec::{Engine, Reference, State, Tolerance, compare, explain};
use support::{Case, load};

/// Runs `case` in another order with `engine`, chosen before or after
/// asking for the other order (`engine_first`), with its printed text and
/// the engine that ran.
fn another_order_with(case: &Case, engine: Engine, engine_first: bool) -> (State, String, Engine) {
    let mut output = String::new();
    let state = State::new(&case.analysis.program, &case.data);
    let mut sink = |text: &str| output.push_str(text);
    let reference = Reference::new(&case.analysis, state, &mut sink);
    let reference = if engine_first {
        reference
            .with_engine(engine)
            .with_threads(2)
            .in_another_order()
    } else {
        reference
            .in_another_order()
            .with_engine(engine)
            .with_threads(2)
    };
    assert_eq!(reference.threads(), 1, "the other order runs on one thread");
    let ran = reference.engine();
    let state = reference.run(u64::MAX).expect("runs in another order");
    (state, output, ran)
}

/// [`another_order_with`], the engine chosen first.
fn another_order(case: &Case, engine: Engine) -> (State, String) {
    let (state, output, _) = another_order_with(case, engine, true);
    (state, output)
}

const VISITS: &str = "set cells;
dat v: double on cells;
dat w: double on cells;
kernel show(const int *i, const double *v, double *w) {
    print(\"%d \", *i);
    *w = *v * 2.0;
}
main { par_loop show over cells (idx, v READ, w WRITE); }
";

#[test]
fn the_elements_are_visited_from_the_last_and_the_results_are_the_same() {
    let case = load(
        "visits.op2",
        VISITS,
        br#"{ "sets": { "cells": 4 }, "dats": { "v": [1.0, 2.0, 3.0, 4.0] } }"#,
    );
    // A kernel that prints runs in the interpreter.
    let (expected, printed) = case.run_with(Engine::Interp, u64::MAX).expect("runs");
    assert_eq!(printed, "0 \n1 \n2 \n3 \n");
    for engine in [Engine::Interp, Engine::Compiled] {
        let (other, printed) = another_order(&case, engine);
        assert_eq!(printed, "3 \n2 \n1 \n0 \n", "{engine:?}");
        assert_eq!(other.dats, expected.dats, "{engine:?}");
    }
}

/// Review G6's third program: `d += exp(46); d -= exp(46)` on a `d` of 1.
/// In place (OP2's sequential build) the 1 is lost, `(1 + 1e20) - 1e20`;
/// summed apart and added afterwards (a POETS device) it is kept.
const BIG_TERMS: &str = "set cells;
set edges;
map e2c: edges -> cells[1];
dat x: double on edges;
dat d: double on cells;
kernel add(const double *a, double *sum) {
    *sum += exp(*a);
    *sum -= exp(*a);
}
main { par_loop add over edges (x READ, d[e2c[0]] INC); }
";

#[test]
fn an_increment_is_summed_apart_and_added_after_its_kernel() {
    let case = load(
        "big_terms.op2",
        BIG_TERMS,
        br#"{ "sets": { "cells": 2, "edges": 1 }, "maps": { "e2c": [[0]] }, "dats": { "x": [46.0], "d": [1.0, 5.0] } }"#,
    );
    let (expected, _) = case.run().expect("runs");
    let (other, _) = another_order(&case, Engine::Compiled);
    let d = |state: &State| state.dats[1].clone();
    assert_eq!(d(&expected), [Value::Double(0.0), Value::Double(5.0)]);
    assert_eq!(d(&other), [Value::Double(1.0), Value::Double(5.0)]);
}

/// A `float` global and a `float` dat through a map, each incremented by
/// the same term from every element: element order sums them one term at a
/// time, which reversing the elements leaves bit for bit as it is. The other
/// order sums the second half of the elements and the first apart, each from
/// `-0.0`, and adds the old value, the second part and the first, in both
/// engines (the campaign of 9cd26a9's case 1305780).
const LONG_SUMS: &str = "set cells;
set nodes;
map c2n: cells -> nodes[1];
dat n: float on nodes;
global g: float;
kernel add(float *total, float *node) {
    *total += 0.1;
    *node += 0.1;
}
main { par_loop add over cells (g INC, n[c2n[0]] INC); }
";

#[test]
fn floating_increments_are_summed_in_two_halves() {
    let cells = 1001;
    let map: Vec<String> = (0..cells).map(|_| "[0]".to_owned()).collect();
    let json = format!(
        r#"{{ "sets": {{ "cells": {cells}, "nodes": 1 }}, "maps": {{ "c2n": [{}] }}, "dats": {{ "n": [3.0] }}, "globals": {{ "g": [2.0] }} }}"#,
        map.join(",")
    );
    let case = load("long_sums.op2", LONG_SUMS, json.as_bytes());
    // 0.1 as the kernel's `float` sees it: the double constant converted.
    #[allow(clippy::cast_possible_truncation)]
    let term = 0.1f64 as f32;
    let part = |terms: usize| (0..terms).fold(-0.0f32, |sum, _| sum + term);
    let half = cells / 2;
    let sequential = |start: f32| (0..cells).fold(start, |sum, _| sum + term);
    let in_parts = |start: f32| (start + part(cells - half)) + part(half);
    let (expected, _) = case.run().expect("runs");
    assert_eq!(expected.globals[0], [Value::Float(sequential(2.0))]);
    assert_eq!(expected.dats[0], [Value::Float(sequential(3.0))]);
    assert_ne!(sequential(2.0), in_parts(2.0), "the parts move the sum");
    for engine in [Engine::Interp, Engine::Compiled] {
        let (other, _) = another_order(&case, engine);
        assert_eq!(
            other.globals[0],
            [Value::Float(in_parts(2.0))],
            "{engine:?}"
        );
        assert_eq!(other.dats[0], [Value::Float(in_parts(3.0))], "{engine:?}");
    }
}

/// A state of `case` with dat `dat`'s values replaced by `values`.
fn with_dat(state: &State, dat: usize, values: &[f64]) -> State {
    let mut state = state.clone();
    state.dats[dat] = values.iter().map(|&v| Value::Double(v)).collect();
    state
}

#[test]
fn only_a_difference_that_the_other_order_moves_as_far_is_explained() {
    let case = load(
        "double.op2",
        "set cells;
dat v: double on cells;
dat w: double on cells;
kernel twice(const double *v, double *w) { *w = *v * 2.0; }
main { par_loop twice over cells (v READ, w WRITE); }
",
        br#"{ "sets": { "cells": 4 }, "dats": { "v": [1.0, 2.0, 3.0, 4.0] } }"#,
    );
    let (expected, _) = case.run().expect("runs");
    let program = &case.analysis.program;
    let tolerance = Tolerance::DEFAULT;
    // `w` is [2, 4, 6, 8]. The other order moves w[0] by 1e-6, w[1] to a
    // NaN, w[2] by 1e-14 (within the tolerance) and leaves w[3].
    let other = with_dat(&expected, 1, &[2.0 + 1e-6, f64::NAN, 6.0 + 1e-14, 8.0]);
    // The run compared moves w[0] by 16e-6 (explained) and then by 17e-6
    // (not), w[1] by any amount (explained), w[2] and w[3] by 1e-6 (not).
    for (w0, explained) in [(2.0 + 16e-6, 2), (2.0 + 17e-6, 1)] {
        let actual = with_dat(&expected, 1, &[w0, 1e300, 6.0 + 1e-6, 8.0 + 1e-6]);
        let mut comparison = compare(program, &expected, &actual, tolerance);
        assert_eq!(comparison.differences.len(), 4);
        explain(program, &expected, &other, &mut comparison, tolerance);
        let paths = |list: Vec<String>| list.join(" ");
        assert_eq!(comparison.explained.len(), explained, "{comparison:?}");
        assert_eq!(
            comparison.explained[0].difference.path, "dats.w[1]",
            "the worst first"
        );
        assert!(comparison.explained[0].other.as_f64().is_nan());
        let failing = paths(
            comparison
                .differences
                .iter()
                .map(|d| d.path.clone())
                .collect(),
        );
        assert!(
            failing.contains("dats.w[2]") && failing.contains("dats.w[3]"),
            "{failing}"
        );
        assert!(!comparison.agrees());
    }
    // A state whose path through `main` differs explains nothing.
    let mut other = other;
    other.exit_status = Some(3);
    let actual = with_dat(&expected, 1, &[2.0 + 1e-6, 4.0, 6.0, 8.0]);
    let mut comparison = compare(program, &expected, &actual, tolerance);
    explain(program, &expected, &other, &mut comparison, tolerance);
    assert!(comparison.explained.is_empty());
    assert_eq!(comparison.differences.len(), 1);
}

/// A ring of nodes whose edges increment both their ends through a map,
/// sum squares into a global and take its MIN and MAX: the interpreter and
/// the compiled engine give the same bits in another order, as they do in
/// element order, and the other order moves the sums.
const RING: &str = "set nodes;
set edges;
map ends: edges -> nodes[2];
dat w: double on edges;
dat f: float on edges;
dat sum: double on nodes;
dat fsum: float on nodes;
global g: double;
global low: double = 1.0e9;
global high: double = -1.0e9;
kernel spread(
    const double *w,
    const float *f,
    double *a,
    double *b,
    float *fa,
    double *g,
    double *low,
    double *high
) {
    *a += *w;
    *b -= 0.5 * *w;
    *fa += *f;
    *g += *w * *w;
    *low = fmin(*low, *w);
    *high = fmax(*high, *w);
}
main {
    for (int i = 0; i < 3; i++) {
        par_loop spread over edges (
            w READ,
            f READ,
            sum[ends[0]] INC,
            sum[ends[1]] INC,
            fsum[ends[0]] INC,
            g INC,
            low MIN,
            high MAX,
        );
    }
}
";

fn ring(nodes: usize, edges: usize) -> Case {
    let ends: Vec<String> = (0..edges)
        .map(|e| format!("[{},{}]", e % nodes, (e * 7 + 3) % nodes))
        .collect();
    let w: Vec<String> = (0..edges)
        .map(|e| {
            format!(
                "{:?}",
                ((e * 37 % 101) as f64 - 50.0) / 7.0 + 1e-3 * e as f64
            )
        })
        .collect();
    let f: Vec<String> = (0..edges)
        .map(|e| format!("{:?}", ((e * 13 % 29) as f64 - 14.0) / 3.0))
        .collect();
    let json = format!(
        r#"{{ "sets": {{ "nodes": {nodes}, "edges": {edges} }}, "maps": {{ "ends": [{}] }}, "dats": {{ "w": [{}], "f": [{}] }} }}"#,
        ends.join(","),
        w.join(","),
        f.join(",")
    );
    load("ring.op2", RING, json.as_bytes())
}

#[test]
fn both_engines_give_the_same_bits_in_another_order() {
    let case = ring(97, 1000);
    let (forward, _) = case.run().expect("runs");
    let (interpreted, _, ran) = another_order_with(&case, Engine::Interp, true);
    assert_eq!(ran, Engine::Interp);
    for engine_first in [true, false] {
        let (compiled, _, ran) = another_order_with(&case, Engine::Compiled, engine_first);
        assert_eq!(ran, Engine::Compiled);
        if let Some(difference) = support::first_difference(&interpreted, &compiled) {
            panic!("the engines differ in another order: {difference}");
        }
        assert_eq!(compiled.globals, interpreted.globals);
    }
    // The other order moves the sums, and only the sums: MIN and MAX are
    // the same.
    assert_ne!(
        forward.dats, interpreted.dats,
        "another order moves some sum"
    );
    for name in ["low", "high"] {
        assert_eq!(case.global(&forward, name), case.global(&interpreted, name));
    }
}
