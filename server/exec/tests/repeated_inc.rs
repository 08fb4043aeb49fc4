//! INC arguments given more than once, and INC of integer dats with
//! increments that are not integers (fuzz findings F3 and F4): every
//! integer INC argument sees its own zeroed copy whose value is added to
//! the target (language.md §8), under `op2 run` and in the generated graph,
//! with the flat controller and with trees. (A `float` or `double` INC
//! argument works on its target in place under `op2 run`: `inc_in_place`.)

use crate::support;

use op2_analysis::value::Value;
use op2_exec::{State, Tolerance};
use support::{Case, load};

const FAN_LIMITS: [u32; 3] = [0, 16, 2];

/// Runs the reference and the simulation (several seeds, every fan limit)
/// and returns the reference's state and output; the simulation must agree
/// exactly, integers included.
fn agreed(name: &str, text: &str, json: &str) -> (Case, State, String) {
    for fan_limit in FAN_LIMITS {
        let case = load(name, text, json.as_bytes()).with_fan_limit(fan_limit);
        for seed in [0, 1, 7] {
            case.assert_agree(seed, Tolerance::default());
        }
    }
    let case = load(name, text, json.as_bytes());
    let (state, output) = case.run().expect("the reference run succeeds");
    (case, state, output)
}

#[test]
fn a_global_passed_twice_with_inc_sums_both_copies() {
    let text = "set cells;\n\
                global total: int;\n\
                kernel count2(int *a, int *b) {\n    *a += 3;\n    *b += 4;\n}\n\
                main {\n    total = 0;\n    par_loop count2 over cells (total INC, total INC);\n    \
                print(\"total = %d\", total);\n}\n";
    let (case, state, output) = agreed("f3.op2", text, r#"{"sets": {"cells": 4}}"#);
    // Four cells add 3 and 4 each.
    assert_eq!(output, "total = 28\n");
    assert_eq!(case.global(&state, "total"), vec![Value::Int(28)]);
}

#[test]
fn integer_inc_adds_the_truncated_increment_not_the_truncated_sum() {
    // `*a += 1.5` on an int sees a zeroed copy: the increment truncates to
    // 1 and is added to -5, giving -4 (adding in place would give
    // (int)(-5 + 1.5) = -3). The indirect INC arguments add theirs to the
    // element the map names, each its own copy.
    let text = "set s;\n\
                map m: s -> s[1];\n\
                dat d: int on s;\n\
                dat x: double on s;\n\
                kernel bump(const double *x, int *a, int *b, int *c) {\n    \
                *a += x[0];\n    *b -= x[0] * 0.5;\n    *c += x[0] * 0.5;\n}\n\
                main {\n    par_loop bump over s (x READ, d INC, d[m[0]] INC, d[m[0]] INC);\n}\n";
    let json = r#"{"sets": {"s": 2}, "maps": {"m": [[1], [0]]},
                   "dats": {"d": [-5, 10], "x": [1.5, -2.75]}}"#;
    let (case, state, _) = agreed("f4.op2", text, json);
    // Element 0 (x = 1.5): own += (int)1.5 = 1; on element 1:
    // -= (int)0.75 = 0 and += (int)0.75 = 0.
    // Element 1 (x = -2.75): own += (int)-2.75 = -2; on element 0:
    // -= (int)-1.375 = +1 and += (int)-1.375 = -1.
    assert_eq!(
        case.dat(&state, "d"),
        vec![Value::Int(-5 + 1 + 1 - 1), Value::Int(10 - 2)]
    );
}

#[test]
fn repeated_and_mixed_inc_of_every_width_agree() {
    // The shape of the fuzz case F4: the same indirect INC twice with a
    // direct INC of the same dat, a wide dat, repeated globals of dimension
    // two, over a map from the set to itself, in a loop.
    let text = std::fs::read_to_string(
        support::repository().join("server/codegen/tests/programs/cpp_repeated_inc.op2"),
    )
    .unwrap();
    let n = 9usize;
    let map: Vec<String> = (0..n)
        .map(|i| format!("[{}, {}, {}]", (i + 1) % n, (2 * i) % n, (5 * i + 3) % n))
        .collect();
    let d_1: Vec<String> = (0..n).map(|i| format!("{}", 3 * i as i64 - 7)).collect();
    let d_2: Vec<String> = (0..n)
        .map(|i| format!("[{}, {}]", 5 * i as i64 - 20, i))
        .collect();
    let d_x: Vec<String> = (0..n)
        .map(|i| format!("{}", (i as f64 - 4.0) * 1.3))
        .collect();
    let json = format!(
        r#"{{"sets": {{"s": {n}}}, "maps": {{"m_0": [{}]}},
             "dats": {{"d_1": [{}], "d_2": [{}], "d_x": [{}]}}}}"#,
        map.join(", "),
        d_1.join(", "),
        d_2.join(", "),
        d_x.join(", ")
    );
    let (case, state, output) = agreed("repeated.op2", &text, &json);
    // The two global INC arguments add 3 and 4 per element.
    assert_eq!(case.global(&state, "g"), vec![Value::Int(7 * n as i32)]);
    assert!(output.starts_with(&format!("g = {}, ", 7 * n)), "{output}");
}

#[test]
fn a_global_passed_twice_with_min_combines_both_copies() {
    // Each MIN copy starts from the global and lowers it; both count.
    let text = "set cells;\n\
                dat x: double on cells;\n\
                global lo: double;\n\
                global hi: int;\n\
                kernel low2(const double *x, double *a, double *b, int *c, int *d) {\n    \
                if (x[0] < *a) *a = x[0];\n    if (x[0] * 2.0 < *b) *b = x[0] * 2.0;\n    \
                if (x[0] > *c) *c = x[0];\n    if (1 - x[0] > *d) *d = 1 - x[0];\n}\n\
                main {\n    lo = 100.0;\n    hi = -100;\n    \
                par_loop low2 over cells (x READ, lo MIN, lo MIN, hi MAX, hi MAX);\n    \
                print(\"%g %d\", lo, hi);\n}\n";
    let json = r#"{"sets": {"cells": 3}, "dats": {"x": [3.0, -2.0, 7.0]}}"#;
    let (_, _, output) = agreed("min.op2", text, json);
    assert_eq!(output, "-4 7\n");
}
