//! C semantics on IEEE hardware, each with the value a C compiler gives
//! (every expected value below was checked against the same computation
//! compiled with gcc -O0 on x86-64, except the one undefined conversion
//! noted in `out_of_range_conversion_saturates`): float versus double rounding,
//! integer division and overflow, f-suffixed literals, conversions at
//! assignment. Every program runs under the reference and the simulation,
//! and both must print exactly the expected text.

use crate::support;

use support::load;

const INSTANCE: &str =
    r#"{"sets": {"cells": 3}, "dats": {"p_f": [0.1, 0.2, 0.3], "p_i": [7, -7, 2147483647]}}"#;

fn check(body: &str, expected: &str) {
    let simulated = simulate_check(body, expected);
    assert_eq!(simulated, expected, "simulation of `{body}`");
}

/// Checks the reference's output of `body` and returns the simulation's.
fn simulate_check(body: &str, expected: &str) -> String {
    let program = format!(
        "set cells;\n\
         dat p_f: float on cells;\n\
         dat p_i: int on cells;\n\
         global g_f: float = 0.0f;\n\
         global g_d: double = 0.0;\n\
         global g_i: int = 0;\n\
         global g_u: uint = 0u;\n\
         global g_l: ll = 0;\n\
         kernel sum_f(const float *f, float *s) {{ *s += f[0] * 3.0f; }}\n\
         kernel sum_i(const int *i, int *s) {{ *s += i[0] / 2 + i[0] % 3; }}\n\
         main {{\n\
             par_loop sum_f over cells (p_f READ, g_f INC);\n\
             par_loop sum_i over cells (p_i READ, g_i INC);\n\
             {body}\n\
         }}\n"
    );
    let case = load("c.op2", &program, INSTANCE.as_bytes());
    let (_, output) = case.run().unwrap_or_else(|e| panic!("{body}: {e}"));
    assert_eq!(output, expected, "reference of `{body}`");
    let (_, simulated, _) = case
        .simulate(Default::default())
        .unwrap_or_else(|e| panic!("{body}: {e}"));
    simulated
}

#[test]
fn float_arithmetic_is_single_precision() {
    // 0.1f*3 + 0.2f*3 + 0.3f*3 summed in float: in element order by the
    // reference; in the order the three ends arrive by the simulation,
    // which is a float sum of the three in one of the six orders.
    let simulated = simulate_check("print(\"%.9g\", g_f);", "1.80000007\n");
    let parts = [0.1f32 * 3.0, 0.2f32 * 3.0, 0.3f32 * 3.0];
    let orders = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let sum: f32 = simulated.trim().parse().expect("a float");
    assert!(
        orders
            .iter()
            .any(|o| ((0.0f32 + parts[o[0]]) + parts[o[1]]) + parts[o[2]] == sum),
        "simulation's float sum {simulated}"
    );
    check(
        "g_f = 0.1f + 0.2f; print(\"%.17g\", g_f);",
        "0.30000001192092896\n",
    );
    check(
        "g_d = 0.1 + 0.2; print(\"%.17g\", g_d);",
        "0.30000000000000004\n",
    );
    check(
        "g_d = 1.0f / 3.0f; print(\"%.17g\", g_d);",
        "0.3333333432674408\n",
    );
    check(
        "g_d = 1.0f / 3.0; print(\"%.17g\", g_d);",
        "0.33333333333333331\n",
    );
}

#[test]
fn f_suffixed_literals_are_floats() {
    check("g_d = 1.4f; print(\"%.17g\", g_d);", "1.3999999761581421\n");
    check("g_d = 1.4; print(\"%.17g\", g_d);", "1.3999999999999999\n");
    check(
        "g_d = 0.5f * 0.1; print(\"%.17g\", g_d);",
        "0.050000000000000003\n",
    );
}

/// A literal that starts with 0 is octal, as in C (gcc: `15 8 4294967295
/// 24`): `017` was read as 17. An octal literal is typed as a hex one, so
/// `037777777777` is a `uint`.
#[test]
fn literals_with_a_leading_zero_are_octal() {
    check(
        "g_i = 017; g_u = 010u; print(\"%d %u %u %d\", g_i, g_u, 037777777777, 010 + 0x10);",
        "15 8 4294967295 24\n",
    );
}

#[test]
fn integer_division_truncates_and_wraps() {
    // 7/2 + 7%3 = 3 + 1; -7/2 + -7%3 = -3 - 1; MAX/2 + MAX%3 = 1073741823 + 1.
    check("print(\"%d\", g_i);", "1073741824\n");
    check(
        "g_i = -7 / 2; print(\"%d %d %d\", g_i, -7 % 2, 7 % -2);",
        "-3 -1 1\n",
    );
    check(
        "g_i = 2147483647; g_i = g_i + 1; print(\"%d\", g_i);",
        "-2147483648\n",
    );
    check(
        "g_u = 0u - 1u; print(\"%u %x\", g_u, g_u);",
        "4294967295 ffffffff\n",
    );
    check(
        "g_l = 2147483647; g_l = g_l + 1; print(\"%d\", g_l);",
        "2147483648\n",
    );
    check("print(\"%d\", -1 < 1u);", "0\n");
}

#[test]
fn conversions_at_assignment() {
    check("g_i = 3.99; print(\"%d\", g_i);", "3\n");
    check("g_i = -3.99; print(\"%d\", g_i);", "-3\n");
    check("g_d = 1 / 2; print(\"%g\", g_d);", "0\n");
    check("g_d = 1.0 / 2; print(\"%g\", g_d);", "0.5\n");
    check("g_f = 16777217; print(\"%.1f\", g_f);", "16777216.0\n");
    check("g_u = -1; print(\"%u\", g_u);", "4294967295\n");
}

#[test]
fn out_of_range_conversion_saturates() {
    // Undefined in C. x86 gives INT_MIN; op2 saturates, as the RISC-V cores
    // of POETS hardware (`fcvt.w.d`) do. Pinned here so that a change is
    // deliberate.
    check("g_i = (int) 2.5e9; print(\"%d\", g_i);", "2147483647\n");
    check("g_i = (int) -2.5e9; print(\"%d\", g_i);", "-2147483648\n");
}

#[test]
fn division_by_zero_names_the_place() {
    let program = "set cells;\ndat p_i: int on cells;\nglobal g: int = 0;\n\
        kernel k(const int *i, int *s) { *s += 10 / i[0]; }\n\
        main { par_loop k over cells (p_i READ, g INC); print(\"%d\", g); }\n";
    let case = load(
        "div.op2",
        program,
        br#"{"sets": {"cells": 3}, "dats": {"p_i": [1, 0, 2]}}"#,
    );
    let error = case.run().expect_err("division by zero");
    assert!(error.message.contains("div.op2:4:"), "{error}");
    assert!(error.message.contains("element 1"), "{error}");
    assert!(error.message.contains("kernel `k`"), "{error}");
    let error = case
        .simulate(Default::default())
        .expect_err("division by zero");
    assert!(error.to_string().contains("element 1"), "{error}");
}
