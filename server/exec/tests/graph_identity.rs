//! The identities and the tie rule of the graph's reductions
//! (compilation.md §10), in `op2 simulate` on its own: a floating MIN or
//! MAX partial starts at `+inf` or `-inf`, so an infinite global survives
//! the aggregators; a floating INC partial starts at `-0.0`, IEEE's
//! additive identity, so a sum of `-0.0` terms stays `-0.0` as it does in
//! place in `op2 run`; and MIN prefers `-0.0` to `0.0` and MAX `0.0` to
//! `-0.0`, so which zero a reduction (or an `INFO` global) ends with does
//! not depend on the order the values arrive in. The programs are the order
//! review's (t14, t2, t3e), with their variants for MAX, `float`, a global
//! and a direct dat. Every case is simulated with several seeds, with the
//! flat controller, the deepest trees and the default fan limit.

use crate::support;

use op2_analysis::value::Value;
use op2_exec::simulate;
use op2_exec::{Engine, State};
use support::{Case, load};

/// Fan limits: the flat controller, the deepest trees (aggregators of two
/// children), the default.
const FAN_LIMITS: [Option<u32>; 3] = [Some(0), Some(2), None];

fn case(name: &str, text: &str, json: &str, fan_limit: Option<u32>) -> Case {
    let case = load(name, text, json.as_bytes());
    match fan_limit {
        Some(limit) => case.with_fan_limit(limit),
        None => case,
    }
}

fn simulated(case: &Case, seed: u64, engine: Engine) -> State {
    let options = simulate::Options {
        seed,
        engine,
        ..simulate::Options::default()
    };
    match case.simulate(options) {
        Ok((state, _, _)) => state,
        Err(e) => panic!("seed {seed}, {engine:?}: {e}"),
    }
}

/// Runs `check` on the state `op2 simulate` ends in for `text` and `json`,
/// with seeds 0 to 7, every fan limit and the given engines.
fn each_simulation(
    name: &str,
    text: &str,
    json: &str,
    engines: &[Engine],
    check: impl Fn(&Case, &State, &str),
) {
    for fan_limit in FAN_LIMITS {
        let case = case(name, text, json, fan_limit);
        for &engine in engines {
            for seed in 0..8 {
                let state = simulated(&case, seed, engine);
                let context = format!("{name}, fan limit {fan_limit:?}, {engine:?}, seed {seed}");
                check(&case, &state, &context);
            }
        }
    }
}

const BOTH: [Engine; 2] = [Engine::Interp, Engine::Compiled];

/// The single value of a global or of a one-element dat, with its bits.
fn only(values: &[Value]) -> Value {
    assert_eq!(values.len(), 1, "one value");
    values[0]
}

fn assert_bits(value: Value, expected: Value, context: &str) {
    let same = match (value, expected) {
        (Value::Double(a), Value::Double(b)) => a.to_bits() == b.to_bits(),
        (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
        (a, b) => a == b,
    };
    assert!(same, "{context}: {value:?}, expected {expected:?}");
}

/// 40 elements of `x`, each `value`.
fn forty(dat: &str, value: &str) -> String {
    let values = vec![value; 40].join(", ");
    format!("{{\"sets\": {{\"s\": 40}}, \"dats\": {{\"{dat}\": [{values}]}}}}")
}

// G8: the MIN/MAX identity against an infinite global.

/// t14: `m` is `+inf`, and every element's `x * 10.0` overflows to `+inf`
/// too, so no element lowers it.
const T14_MIN: &str = "\
set s;
dat v: double on s;
global m: double;
kernel low(const double *x, double *g) { *g = fmin(*g, *x * 10.0); }
main {
    m = 1.0 / 0.0;
    par_loop low over s (v READ, m MIN);
}
";

const T14_MAX: &str = "\
set s;
dat v: double on s;
global m: double;
kernel high(const double *x, double *g) { *g = fmax(*g, *x * -10.0); }
main {
    m = -1.0 / 0.0;
    par_loop high over s (v READ, m MAX);
}
";

const T14_FLOAT: &str = "\
set s;
dat v: float on s;
global lo: float;
global hi: float;
kernel both(const float *x, float *l, float *h) {
    *l = fmin(*l, *x * 10.0f);
    *h = fmax(*h, *x * -10.0f);
}
main {
    lo = 1.0f / 0.0f;
    hi = -1.0f / 0.0f;
    par_loop both over s (v READ, lo MIN, hi MAX);
}
";

#[test]
fn an_infinite_global_stays_infinite_through_min_and_max_partials() {
    let json = forty("v", "1e308");
    each_simulation("t14_min", T14_MIN, &json, &BOTH, |case, state, context| {
        let m = only(&case.global(state, "m"));
        assert_bits(m, Value::Double(f64::INFINITY), context);
    });
    each_simulation("t14_max", T14_MAX, &json, &BOTH, |case, state, context| {
        let m = only(&case.global(state, "m"));
        assert_bits(m, Value::Double(f64::NEG_INFINITY), context);
    });
    let json = forty("v", "3e38");
    each_simulation(
        "t14_float",
        T14_FLOAT,
        &json,
        &BOTH,
        |case, state, context| {
            let lo = only(&case.global(state, "lo"));
            assert_bits(lo, Value::Float(f32::INFINITY), context);
            let hi = only(&case.global(state, "hi"));
            assert_bits(hi, Value::Float(f32::NEG_INFINITY), context);
        },
    );
    // And `op2 run` agrees (it reduces into the global itself).
    let case = load("t14_min", T14_MIN, forty("v", "1e308").as_bytes());
    let (state, _) = case.run().expect("the run succeeds");
    assert_bits(
        only(&case.global(&state, "m")),
        Value::Double(f64::INFINITY),
        "op2 run",
    );
}

// G3a: an INC partial starts at -0.0.

/// t2: `d` is `-0.0`, then two edges each add `-= 0.0` to it through a
/// map: `-0.0 - 0.0` is `-0.0` in place, so `d` stays `-0.0` and `r` is
/// `-inf`. (From a `+0.0` partial, `d` became `+0.0` and `r` `+inf`.)
const T2_INDIRECT: &str = "\
set cells;
set edges;
map e2c: edges -> cells[1];
dat d: double on cells;
dat r: double on cells;
kernel negzero(double *v) { *v = -0.0; }
kernel sub(double *v) { *v -= 0.0; }
kernel inv(const double *v, double *out) { *out = 1.0 / *v; }
main {
    par_loop negzero over cells (d WRITE);
    par_loop sub over edges (d[e2c[0]] INC);
    par_loop inv over cells (d READ, r WRITE);
}
";

const T2_JSON: &str = r#"{ "sets": { "cells": 1, "edges": 2 }, "maps": { "e2c": [[0],[0]] } }"#;

/// The same sum into a `float` global (the first INC argument's partial is
/// the device's state; the second its own temporary) and into a direct
/// dat (a temporary added after the kernel), over 40 elements.
const T2_GLOBAL_DIRECT: &str = "\
set s;
dat d: double on s;
global g: float;
kernel negzero(double *v) { *v = -0.0; }
kernel sub(float *a, float *b) { *a -= 0.0f; *b -= 0.0f; }
kernel subd(double *v) { *v -= 0.0; }
main {
    g = -0.0f;
    par_loop negzero over s (d WRITE);
    par_loop sub over s (g INC, g INC);
    par_loop subd over s (d INC);
}
";

// Both engines: the compiled engine's execute handlers
// (`native::compile::compile_handler`, `RowStart::Zero` and `ZeroRow`) start
// an INC parameter at the INC identity too.
#[test]
fn a_sum_of_negative_zeros_stays_negative_zero_on_the_graph() {
    each_simulation("t2", T2_INDIRECT, T2_JSON, &BOTH, |case, state, context| {
        assert_bits(only(&case.dat(state, "d")), Value::Double(-0.0), context);
        let r = only(&case.dat(state, "r"));
        assert_bits(r, Value::Double(f64::NEG_INFINITY), context);
    });
    let json = forty("d", "0.0");
    each_simulation(
        "t2_global_direct",
        T2_GLOBAL_DIRECT,
        &json,
        &BOTH,
        |case, state, context| {
            assert_bits(only(&case.global(state, "g")), Value::Float(-0.0), context);
            for d in case.dat(state, "d") {
                assert_bits(d, Value::Double(-0.0), context);
            }
        },
    );
}

// G3b: MIN prefers -0.0, MAX +0.0.

/// t3e: the MIN of 40 values alternating `0.0` and `-0.0` is `-0.0`
/// whatever order they arrive in, so `1.0 / m` is `-inf`; the MAX `0.0`.
const T3E: &str = "\
set s;
dat x: double on s;
global m: double = 1.0;
global n: double = -1.0;
global r: double;
global q: double;
kernel low(const double *v, double *g) { *g = *v; }
kernel high(const double *v, double *g) { *g = *v; }
main {
    par_loop low over s (x READ, m MIN);
    par_loop high over s (x READ, n MAX);
    r = 1.0 / m;
    q = 1.0 / n;
}
";

/// An `INFO` global follows the better zero: of the elements that reach
/// the MIN, the first whose value is `-0.0` (element 1 with `0.0` first,
/// element 0 with `-0.0` first); for MAX the first `0.0`.
const T3E_INFO: &str = "\
set s;
dat x: float on s;
global m: float = 1.0f;
global n: float = -1.0f;
global at_m: int = -1;
global at_n: int = -1;
kernel low(const float *v, const int *i, float *g, int *w) { *g = *v; *w = *i; }
main {
    par_loop low over s (x READ, idx, m MIN, at_m INFO(m));
    par_loop low over s (x READ, idx, n MAX, at_n INFO(n));
}
";

fn alternating(first: &str, second: &str) -> String {
    let values: Vec<&str> = (0..40)
        .map(|k| if k % 2 == 0 { first } else { second })
        .collect();
    format!(
        "{{\"sets\": {{\"s\": 40}}, \"dats\": {{\"x\": [{}]}}}}",
        values.join(", ")
    )
}

#[test]
fn min_and_max_break_a_tie_between_zeros_by_sign() {
    for json in [alternating("0.0", "-0.0"), alternating("-0.0", "0.0")] {
        each_simulation("t3e", T3E, &json, &BOTH, |case, state, context| {
            assert_bits(only(&case.global(state, "m")), Value::Double(-0.0), context);
            assert_bits(only(&case.global(state, "n")), Value::Double(0.0), context);
            let r = only(&case.global(state, "r"));
            assert_bits(r, Value::Double(f64::NEG_INFINITY), context);
            let q = only(&case.global(state, "q"));
            assert_bits(q, Value::Double(f64::INFINITY), context);
        });
    }
    for (json, negative_first) in [
        (alternating("0.0", "-0.0"), false),
        (alternating("-0.0", "0.0"), true),
    ] {
        let (at_min, at_max) = if negative_first { (0, 1) } else { (1, 0) };
        each_simulation(
            "t3e_info",
            T3E_INFO,
            &json,
            &BOTH,
            |case, state, context| {
                assert_bits(only(&case.global(state, "m")), Value::Float(-0.0), context);
                assert_bits(only(&case.global(state, "n")), Value::Float(0.0), context);
                let at_m = only(&case.global(state, "at_m"));
                assert_bits(at_m, Value::Int(at_min), context);
                let at_n = only(&case.global(state, "at_n"));
                assert_bits(at_n, Value::Int(at_max), context);
            },
        );
    }
}

// With `op2 run`'s side (reference.rs: -0.0 as the staged INC start, the
// same tie rule), run and simulate agree on every one of these programs.

/// `op2 simulate` ends where `op2 run` does, bit for bit, for each seed and
/// fan limit, with the given engines.
fn assert_run_and_simulate_agree(name: &str, text: &str, json: &str, engines: &[Engine]) {
    let (expected, _) = load(name, text, json.as_bytes())
        .run()
        .unwrap_or_else(|e| panic!("{name}: the run fails: {}", e.message));
    each_simulation(name, text, json, engines, |_, state, context| {
        if let Some(difference) = support::first_difference(&expected, state) {
            panic!("{context}: run and simulate differ: {difference}");
        }
    });
}

#[test]
fn run_and_simulate_agree_bit_for_bit_on_the_review_programs() {
    let t14 = forty("v", "1e308");
    assert_run_and_simulate_agree("t14_min", T14_MIN, &t14, &BOTH);
    assert_run_and_simulate_agree("t14_max", T14_MAX, &t14, &BOTH);
    assert_run_and_simulate_agree("t14_float", T14_FLOAT, &forty("v", "3e38"), &BOTH);
    for json in [alternating("0.0", "-0.0"), alternating("-0.0", "0.0")] {
        assert_run_and_simulate_agree("t3e", T3E, &json, &BOTH);
        assert_run_and_simulate_agree("t3e_info", T3E_INFO, &json, &BOTH);
    }
    // The interpreter engine only, as in the test of G3a above.
    assert_run_and_simulate_agree("t2", T2_INDIRECT, T2_JSON, &BOTH);
    let json = forty("d", "0.0");
    assert_run_and_simulate_agree("t2_global_direct", T2_GLOBAL_DIRECT, &json, &BOTH);
}
