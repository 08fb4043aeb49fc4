//! What an element's arguments start from where the reference (`op2 run`,
//! both engines) and the POETS graph once disagreed for reasons other than
//! the order of floating sums (the order review of issue #12, G4, G3a,
//! G3b, G7; language.md §8, "What a run computes"):
//!
//! - a MIN or MAX parameter starts, for every element, from the global's
//!   value when the par_loop began, and the element's result is combined
//!   into the running global after it (G4);
//! - combining breaks a tie between `0.0` and `-0.0` by sign: MIN takes
//!   `-0.0`, MAX `+0.0`, whatever the order (G3b);
//! - a staged floating INC argument starts from `-0.0`, so staged and in
//!   place sums agree on the sign of a zero (G3a);
//! - an indirect WRITE argument starts from zero, as the landing pad of a
//!   POETS device; a direct one from the dat's data (G7).
//!
//! `Case::run` checks that the interpreter and the compiled engine agree
//! bit for bit; `run_threaded` that the coloured blocks do too.

use crate::support;

use op2_analysis::value::Value;
use op2_exec::Tolerance;
use support::load;

fn doubles(values: &[Value]) -> Vec<f64> {
    values
        .iter()
        .map(|v| match *v {
            Value::Double(x) => x,
            other => panic!("not a double: {other:?}"),
        })
        .collect()
}

fn ints(values: &[Value]) -> Vec<i32> {
    values
        .iter()
        .map(|v| match *v {
            Value::Int(x) => x,
            other => panic!("not an int: {other:?}"),
        })
        .collect()
}

/// The bits of each double, so that `0.0` and `-0.0` differ.
fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|x| x.to_bits()).collect()
}

/// Asserts that the graph gives what the reference gives, for a few seeds
/// and with the flat controller and the deepest trees.
fn assert_graph_agrees(name: &str, text: &str, json: &str) {
    for fan_limit in [0, 2] {
        let case = load(name, text, json.as_bytes()).with_fan_limit(fan_limit);
        for seed in 0..3 {
            case.assert_agree(seed, Tolerance::default());
        }
    }
}

/// The reviewer's t6: a MAX kernel that reads its parameter, and a MIN
/// kernel that lowers it other than towards a value of the element.
const T6: &str = "\
set s;
dat v: int on s;
dat o: int on s;
global m: int = 0;
global k: int = 100;
kernel seen(const int *x, int *g, int *out) {
    *out = *g;
    if (*x > *g) *g = *x;
}
kernel lower(int *g) { *g = *g - 1; }
main {
    par_loop seen over s (v READ, m MAX, o WRITE);
    par_loop lower over s (k MIN);
}
";
const T6_INSTANCE: &str = r#"{ "sets": { "s": 4 }, "dats": { "v": [1, 2, 3, 4] } }"#;

#[test]
fn min_and_max_parameters_start_from_the_value_when_the_loop_began() {
    let case = load("t6.op2", T6, T6_INSTANCE.as_bytes());
    let (state, _) = case.run().expect("t6 runs");
    // Every element sees 0, the value `m` had when the loop began, not the
    // extreme of the elements before it (the old running value gave
    // 0, 1, 2, 3).
    assert_eq!(ints(&case.dat(&state, "o")), [0, 0, 0, 0]);
    // The final extreme of `if (x > g) g = x` does not change.
    assert_eq!(ints(&case.global(&state, "m")), [4]);
    // Every element lowers 100 to 99 (the old running value gave 96).
    assert_eq!(ints(&case.global(&state, "k")), [99]);
    assert_graph_agrees("t6.op2", T6, T6_INSTANCE);
}

/// The reviewer's t16: t6's first loop on doubles.
const T16: &str = "\
set s;
dat v: double on s;
dat o: double on s;
global m: double = 0.0;
kernel seen(const double *x, double *g, double *out) {
    *out = *g;
    if (*x > *g) *g = *x;
}
main { par_loop seen over s (v READ, m MAX, o WRITE); }
";
const T16_INSTANCE: &str = r#"{ "sets": { "s": 4 }, "dats": { "v": [1.0, 2.0, 3.0, 4.0] } }"#;

#[test]
fn a_double_max_parameter_starts_from_the_value_when_the_loop_began() {
    let case = load("t16.op2", T16, T16_INSTANCE.as_bytes());
    let (state, _) = case.run().expect("t16 runs");
    assert_eq!(doubles(&case.dat(&state, "o")), [0.0; 4]);
    assert_eq!(doubles(&case.global(&state, "m")), [4.0]);
    assert_graph_agrees("t16.op2", T16, T16_INSTANCE);
}

/// More elements than one block of the threaded engine, whose chunks each
/// reduce into a partial of their own: every element still sees the value
/// when the loop began, on any number of threads.
#[test]
fn min_and_max_parameters_start_from_the_loop_start_on_threads_too() {
    const TEXT: &str = "\
set s;
dat v: int on s;
dat o: int on s;
dat p: int on s;
global m: int = 0;
global k: int = 5000;
kernel seen(const int *x, int *g, int *h, int *out, int *low) {
    *out = *g;
    *low = *h;
    if (*x > *g) *g = *x;
    if (*x < *h) *h = *x;
}
main { par_loop seen over s (v READ, m MAX, k MIN, o WRITE, p WRITE); }
";
    let n = 1000;
    let numbers: Vec<i32> = (0..n).map(|i| ((i * 37) % 1001) as i32).collect();
    let values: Vec<String> = numbers.iter().map(i32::to_string).collect();
    let json = format!(
        r#"{{ "sets": {{ "s": {n} }}, "dats": {{ "v": [{}] }} }}"#,
        values.join(", ")
    );
    let case = load("threads.op2", TEXT, json.as_bytes());
    let (sequential, _) = case.run().expect("runs");
    assert_eq!(ints(&case.dat(&sequential, "o")), vec![0; n]);
    assert_eq!(ints(&case.dat(&sequential, "p")), vec![5000; n]);
    let largest = numbers.iter().copied().max().unwrap_or(0);
    let smallest = numbers.iter().copied().min().unwrap_or(0);
    assert_eq!(ints(&case.global(&sequential, "m")), [largest]);
    assert_eq!(ints(&case.global(&sequential, "k")), [smallest]);
    for threads in [2, 4] {
        let (threaded, _) = case.run_threaded(threads).expect("runs threaded");
        if let Some(difference) = support::first_difference(&sequential, &threaded) {
            panic!("{threads} threads: {difference}");
        }
    }
}

/// MIN over `v` (a `double` dat) into `lo`, MAX into `hi`, each kernel
/// copying the element's value into its parameter.
const ZEROS: &str = "\
set s;
dat v: double on s;
global lo: double = 1.0;
global hi: double = -1.0;
global r: double;
global q: double;
kernel low(const double *x, double *g) { *g = *x; }
kernel high(const double *x, double *g) { *g = *x; }
main {
    par_loop low over s (v READ, lo MIN);
    par_loop high over s (v READ, hi MAX);
    r = 1.0 / lo;
    q = 1.0 / hi;
}
";

fn zeros_instance(values: &[f64]) -> String {
    let values: Vec<String> = values.iter().map(|x| format!("{x:?}")).collect();
    format!(
        r#"{{ "sets": {{ "s": {} }}, "dats": {{ "v": [{}] }} }}"#,
        values.len(),
        values.join(", ")
    )
}

#[test]
fn min_prefers_negative_zero_and_max_positive_zero_in_any_order() {
    let orders: [&[f64]; 4] = [
        &[0.0, -0.0],
        &[-0.0, 0.0],
        &[0.0, -0.0, 0.0, -0.0, 0.0],
        &[-0.0, 0.0, -0.0, 0.0, -0.0],
    ];
    for values in orders {
        let case = load("zeros.op2", ZEROS, zeros_instance(values).as_bytes());
        let (state, _) = case.run().expect("runs");
        assert_eq!(
            bits(&doubles(&case.global(&state, "lo"))),
            bits(&[-0.0]),
            "MIN over {values:?}"
        );
        assert_eq!(
            bits(&doubles(&case.global(&state, "hi"))),
            bits(&[0.0]),
            "MAX over {values:?}"
        );
        assert_eq!(doubles(&case.global(&state, "r")), [f64::NEG_INFINITY]);
        assert_eq!(doubles(&case.global(&state, "q")), [f64::INFINITY]);
    }
    // The same over the chunks of the threaded engine: 600 alternating
    // zeros, each chunk's partial combined in chunk order.
    let many: Vec<f64> = (0..600)
        .map(|i| if i % 2 == 0 { 0.0 } else { -0.0 })
        .collect();
    let case = load("zeros.op2", ZEROS, zeros_instance(&many).as_bytes());
    let (sequential, _) = case.run().expect("runs");
    assert_eq!(
        bits(&doubles(&case.global(&sequential, "lo"))),
        bits(&[-0.0])
    );
    assert_eq!(
        bits(&doubles(&case.global(&sequential, "hi"))),
        bits(&[0.0])
    );
    let (threaded, _) = case.run_threaded(4).expect("runs threaded");
    if let Some(difference) = support::first_difference(&sequential, &threaded) {
        panic!("4 threads: {difference}");
    }
}

/// A NaN global stays NaN under MIN and MAX, the zero rule
/// notwithstanding.
#[test]
fn min_and_max_keep_a_nan_global() {
    let text = ZEROS.replace(
        "par_loop low over",
        "lo = 0.0 / 0.0;\n    hi = lo;\n    par_loop low over",
    );
    let case = load("nan.op2", &text, zeros_instance(&[0.0, -0.0]).as_bytes());
    let (state, _) = case.run().expect("runs");
    assert!(doubles(&case.global(&state, "lo"))[0].is_nan());
    assert!(doubles(&case.global(&state, "hi"))[0].is_nan());
}

/// An `INFO` global follows the zero rule too: it records the element that
/// set the MIN's `-0.0`, not the first zero.
#[test]
fn info_records_the_element_of_the_signed_zero_extreme() {
    const TEXT: &str = "\
set s;
dat v: double on s;
global lo: double = 1.0;
global at: int = -1;
kernel low(const double *x, const int *i, double *g, int *w) {
    if (*x <= *g) { *g = *x; *w = *i; }
}
main { par_loop low over s (v READ, idx, lo MIN, at INFO(lo)); }
";
    let case = load(
        "info.op2",
        TEXT,
        zeros_instance(&[0.0, 0.0, -0.0, -0.0]).as_bytes(),
    );
    let (state, _) = case.run().expect("runs");
    assert_eq!(bits(&doubles(&case.global(&state, "lo"))), bits(&[-0.0]));
    assert_eq!(ints(&case.global(&state, "at")), [2]);
}

/// Two INC arguments of one element on the same row: the first works in
/// place, the second is staged and added after it. With `-0.0` in the dat
/// and `-= 0.0` from both, the exact sum is `-0.0`: the staged copy must
/// start from `-0.0` (a `+0.0` start gave `-0.0 + (0.0 - 0.0) = +0.0`).
/// A global passed twice takes the same path.
#[test]
fn a_staged_floating_inc_starts_from_negative_zero() {
    const TEXT: &str = "\
set cells;
set edges;
map e2c: edges -> cells[2];
dat d: double on cells;
dat r: double on cells;
global g: double;
global h: double;
kernel negzero(double *v) { *v = -0.0; }
kernel sub(double *a, double *b, double *s, double *t) {
    *a -= 0.0; *b -= 0.0; *s -= 0.0; *t -= 0.0;
}
kernel inv(const double *v, double *out) { *out = 1.0 / *v; }
main {
    g = -0.0;
    par_loop negzero over cells (d WRITE);
    par_loop sub over edges (d[e2c[0]] INC, d[e2c[1]] INC, g INC, g INC);
    par_loop inv over cells (d READ, r WRITE);
    h = 1.0 / g;
}
";
    let json =
        r#"{ "sets": { "cells": 1, "edges": 3 }, "maps": { "e2c": [[0, 0], [0, 0], [0, 0]] } }"#;
    let case = load("staged.op2", TEXT, json.as_bytes());
    let (state, _) = case.run().expect("runs");
    assert_eq!(bits(&doubles(&case.dat(&state, "d"))), bits(&[-0.0]));
    assert_eq!(doubles(&case.dat(&state, "r")), [f64::NEG_INFINITY]);
    assert_eq!(bits(&doubles(&case.global(&state, "g"))), bits(&[-0.0]));
    assert_eq!(doubles(&case.global(&state, "h")), [f64::NEG_INFINITY]);
}

/// The threaded engine's INC partials of the chunks after the first start
/// from `-0.0` too: 600 elements adding `-0.0` to a `-0.0` global leave it
/// `-0.0` on any number of threads.
#[test]
fn threaded_inc_partials_start_from_negative_zero() {
    const TEXT: &str = "\
set s;
dat v: double on s;
global g: double;
kernel add(const double *x, double *t) { *t += *x; }
main {
    g = -0.0;
    par_loop add over s (v READ, g INC);
}
";
    let case = load(
        "partials.op2",
        TEXT,
        zeros_instance(&[-0.0; 600]).as_bytes(),
    );
    let (sequential, _) = case.run().expect("runs");
    assert_eq!(
        bits(&doubles(&case.global(&sequential, "g"))),
        bits(&[-0.0])
    );
    for threads in [2, 4] {
        let (threaded, _) = case.run_threaded(threads).expect("runs threaded");
        if let Some(difference) = support::first_difference(&sequential, &threaded) {
            panic!("{threads} threads: {difference}");
        }
    }
}

/// The reviewer's t2: one in-place INC of `-0.0` by `-= 0.0` stays `-0.0`
/// in `op2 run` (unchanged by this file's rules: it shows the in-place
/// sum the staged one now agrees with).
#[test]
fn an_in_place_inc_keeps_negative_zero() {
    const TEXT: &str = "\
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
    let json = r#"{ "sets": { "cells": 1, "edges": 2 }, "maps": { "e2c": [[0],[0]] } }"#;
    let case = load("t2.op2", TEXT, json.as_bytes());
    let (state, _) = case.run().expect("runs");
    assert_eq!(doubles(&case.dat(&state, "r")), [f64::NEG_INFINITY]);
}

/// The reviewer's t8: a kernel that reads its WRITE parameter (W503). An
/// indirect WRITE starts from zero, as a POETS device's landing pad; a
/// direct one from the data, which the device holds.
const T8: &str = "\
set cells;
set edges;
map e2c: edges -> cells[1];
dat d: double on cells = 5.0;
dat w: double on edges = 7.0;
kernel bump(double *v) { *v = *v + 1.0; }
main {
    par_loop bump over edges (d[e2c[0]] WRITE);
    par_loop bump over edges (w WRITE);
}
";
const T8_INSTANCE: &str = r#"{ "sets": { "cells": 2, "edges": 2 }, "maps": { "e2c": [[0],[1]] } }"#;

#[test]
fn an_indirect_write_starts_from_zero_and_a_direct_one_from_the_data() {
    let case = load("t8.op2", T8, T8_INSTANCE.as_bytes());
    let (state, _) = case.run().expect("t8 runs");
    assert_eq!(doubles(&case.dat(&state, "d")), [1.0, 1.0]);
    assert_eq!(doubles(&case.dat(&state, "w")), [8.0, 8.0]);
    assert_graph_agrees("t8.op2", T8, T8_INSTANCE);
}

/// Every component of an indirect WRITE starts from zero, also one the
/// kernel leaves alone, and in every execution of the loop.
#[test]
fn every_component_of_an_indirect_write_starts_from_zero_each_time() {
    const TEXT: &str = "\
set cells;
set edges;
map e2c: edges -> cells[1];
dat d: double[2] on cells = 5.0;
dat n: int on cells = 9;
kernel first(double *v, int *k) { v[0] = v[0] + 2.0; *k = *k + 1; }
main {
    for (int i = 0; i < 3; i++) {
        par_loop first over edges (d[e2c[0]] WRITE, n[e2c[0]] WRITE);
    }
}
";
    let case = load("components.op2", TEXT, T8_INSTANCE.as_bytes());
    let (state, _) = case.run().expect("runs");
    assert_eq!(doubles(&case.dat(&state, "d")), [2.0, 0.0, 2.0, 0.0]);
    assert_eq!(ints(&case.dat(&state, "n")), [1, 1]);
}
