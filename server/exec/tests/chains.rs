//! Long operator chains: `x + x + … + x` is a syntax tree as deep as the sum
//! is long, and every pass (lowering, kernel analysis, code generation,
//! interpretation, simulation) must take it on an ordinary test thread's
//! stack. A chain means exactly what the same expression fully parenthesised
//! means (nested binary operators), which the equivalence tests compare
//! through the reference, the simulation and the printed C++.

use crate::support;

use support::load;

const INSTANCE: &str = r#"{"sets": {"cells": 3}, "dats": {"p_i": [1, 2, 3]}}"#;

/// A program whose kernel and `main` each compute `expr`-built values.
fn program(kernel_value: &str, main_value: &str, format: &str) -> String {
    format!(
        "set cells;\n\
         dat p_i: int on cells;\n\
         global g_s: ll = 0;\n\
         global g_v: double = 1.25;\n\
         kernel sum(const int *i, ll *s) {{ int x = i[0]; *s += {kernel_value}; }}\n\
         main {{\n\
             par_loop sum over cells (p_i READ, g_s INC);\n\
             g_v = {main_value};\n\
             print(\"{format}\", g_s, g_v);\n\
         }}\n"
    )
}

fn run_both(name: &str, text: &str) -> String {
    let case = load(name, text, INSTANCE.as_bytes());
    let (_, output) = case.run().unwrap_or_else(|e| panic!("{name}: {e}"));
    let (_, simulated, _) = case
        .simulate(Default::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(output, simulated, "{name}: reference and simulation");
    output
}

#[test]
fn a_chain_of_100000_operators_runs_both_ways() {
    let terms = 100_000;
    let kernel_value = vec!["x"; terms].join(" + ");
    let main_value = vec!["0.5"; terms].join(" + ");
    let text = program(&kernel_value, &main_value, "%d %.1f");
    // (1 + 2 + 3) * 100000 and 0.5 * 100000.
    assert_eq!(run_both("long.op2", &text), "600000 50000.0\n");
}

/// `first op₁ r₁ op₂ r₂ …` written flat and written `((first op₁ r₁) op₂ r₂)…`.
fn flat_and_nested(first: &str, steps: &[(&str, &str)]) -> (String, String) {
    let mut flat = first.to_owned();
    let mut nested = first.to_owned();
    for (op, right) in steps {
        flat = format!("{flat} {op} {right}");
        nested = format!("({nested} {op} {right})");
    }
    (flat, nested)
}

#[test]
fn a_chain_means_the_nested_operators() {
    // Integer operators over int, uint and ll operands, with the running
    // value's type changing along the way (to uint, ll, int after a
    // comparison), and floating operators over float, double and int. The
    // operators come in order of falling precedence, so that the flat text
    // is one left-associated chain.
    let int_steps = [
        ("*", "3u"),
        ("/", "2"),
        ("%", "5000000000"),
        ("*", "x"),
        ("+", "7"),
        ("-", "2u"),
        ("+", "x"),
        ("<<", "2"),
        (">>", "1"),
        ("<<", "3u"),
        ("<", "5000000000"),
        (">=", "0"),
        ("==", "1"),
        ("!=", "x"),
        ("&", "3"),
        ("^", "5"),
        ("|", "8u"),
        ("&&", "x"),
        ("||", "0"),
    ];
    let float_steps = [
        ("*", "0.25f"),
        ("/", "3"),
        ("*", "1.5f"),
        ("/", "0.7"),
        ("*", "g_v"),
        ("*", "3u"),
        ("/", "1.1f"),
        ("*", "2"),
        ("/", "9.5"),
        ("+", "0.1"),
        ("-", "2.0"),
        ("+", "7"),
        ("+", "0.1f"),
        ("-", "1e-3"),
        ("+", "1u"),
        ("-", "0.3f"),
        ("+", "5000000000"),
        ("-", "5000000000"),
    ];
    let (int_flat, int_nested) = flat_and_nested("x", &int_steps);
    let (float_flat, float_nested) = flat_and_nested("g_v", &float_steps);
    let flat = program(&int_flat, &float_flat, "%d %.17g");
    let nested = program(&int_nested, &float_nested, "%d %.17g");
    let flat_output = run_both("flat.op2", &flat);
    assert_eq!(flat_output, run_both("nested.op2", &nested));
    // The C++ printed for the kernel is the same text too.
    let xml = |name: &str, text: &str| {
        let case = load(name, text, INSTANCE.as_bytes());
        let mut out = Vec::new();
        op2_codegen::xml::write_graph_type(&mut out, &case.graph).expect("written");
        String::from_utf8(out).expect("UTF-8")
    };
    let flat_xml = xml("flat.op2", &flat);
    assert!(flat_xml.contains(" << "), "the kernel is in the graph");
    assert_eq!(flat_xml, xml("nested.op2", &nested));
}

/// A kernel of `n` locals, each the one before times 1.0001, all added at
/// its end: `n` values live at once.
fn live_values(n: usize) -> String {
    let mut kernel = String::from("kernel k(const double *x, double *o) {\n double a0 = x[0];\n");
    for i in 1..n {
        kernel.push_str(&format!(" double a{i} = a{} * 1.0001;\n", i - 1));
    }
    let sum: Vec<String> = (0..n).rev().map(|i| format!("a{i}")).collect();
    kernel.push_str(&format!(" o[0] = {};\n}}\n", sum.join(" + ")));
    format!(
        "set cells;\ndat p_x: double on cells = 1.0;\ndat p_o: double on cells;\n{kernel}\
         main {{ par_loop k over cells (p_x READ, p_o WRITE); }}\n"
    )
}

/// 8,000 values live at once, past `LARGE_FUNCTION`'s instructions: the
/// single-pass register allocator compiles it (the backtracking one took
/// seconds, growing with the square of the values) and the compiled engine
/// gives the interpreter's bits (`Case::run` runs both and compares).
#[test]
fn many_values_live_at_once_compile_with_the_single_pass_allocator_alike() {
    let case = load(
        "live.op2",
        &live_values(8_000),
        br#"{"sets": {"cells": 3}}"#,
    );
    let (state, _) = case.run().expect("runs");
    let value = case.dat(&state, "p_o")[0];
    assert!(
        matches!(value, op2_analysis::value::Value::Double(v) if v > 8_000.0),
        "{value:?}"
    );
}

/// 70,000 values live at once need more stack than the compiled engine
/// allows a frame (1 MiB, their spill slots 16 bytes each): the loop is
/// not compiled and the interpreter runs the program, saying why (the
/// frame was not checked, and a thread with a small stack died of it).
#[test]
fn a_frame_past_the_stack_limit_is_not_compiled() {
    let case = load(
        "live.op2",
        &live_values(70_000),
        br#"{"sets": {"cells": 1}}"#,
    );
    let mut output = String::new();
    let state = op2_exec::State::new(&case.analysis.program, &case.data);
    let mut sink = |text: &str| output.push_str(text);
    let reference = op2_exec::Reference::new(&case.analysis, state, &mut sink)
        .with_engine(op2_exec::Engine::Compiled);
    let why = reference.fallback().expect("falls back").to_owned();
    assert!(
        why.contains("bytes of stack, more than the compiled engine's 1048576"),
        "{why}"
    );
    assert_eq!(reference.engine(), op2_exec::Engine::Interp);
    reference.run(u64::MAX).expect("the interpreter runs it");
}
