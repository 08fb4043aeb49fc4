//! Arbitrary bytes and random token sequences never make the analyser panic
//! or hang: it always returns a model and diagnostics.

use std::path::Path;

use op2_analysis::{Options, analyse_text};
use proptest::prelude::*;

/// Tokens of the language, a few broken ones, and names that resolve.
const TOKENS: &[&str] = &[
    "set",
    "map",
    "dat",
    "const",
    "global",
    "kernel",
    "main",
    "par_loop",
    "over",
    "as",
    "on",
    "import",
    "len",
    "print",
    "printf",
    "exit",
    "fetch",
    "into",
    "if",
    "else",
    "for",
    "while",
    "do",
    "break",
    "continue",
    "return",
    "READ",
    "WRITE",
    "RW",
    "INC",
    "MIN",
    "MAX",
    "double",
    "float",
    "int",
    "uint",
    "ll",
    "ull",
    "bool",
    "true",
    "false",
    "cells",
    "edges",
    "p_q",
    "p_x",
    "pedge",
    "k",
    "g",
    "q",
    "n",
    "x",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ":",
    ",",
    "->",
    "=",
    "+=",
    "-=",
    "*=",
    "++",
    "--",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    ">",
    "<=",
    "==",
    "!=",
    "&&",
    "||",
    "!",
    "?",
    "&",
    "|",
    "^",
    "~",
    "<<",
    ">>",
    "0",
    "1",
    "2",
    "4",
    "0.5f",
    "1e300",
    "0x7fffffff",
    "4294967296u",
    "99999999999999999999",
    "\"s\"",
    "\"%d\"",
    "sqrt",
    "fabs",
    "pow",
    "foo",
    "//",
    "/*",
    "*/",
    "\n",
    "é",
    "😀",
];

const PROGRAM: &str = "set cells; set edges; map pedge: edges -> cells[2];\n\
    dat p_q: double[4] on cells; global g: double = 0;\n\
    kernel k(const double *q, double *g) { for (int n = 0; n < 4; n++) *g += q[n]; }\n\
    main { par_loop k over edges (p_q[pedge[0]] READ, g INC); print(\"%g\", g); }\n";

fn analyse(text: &str) {
    let analysis = analyse_text(Path::new("fuzz.op2"), text, &Options { require_main: true });
    // Every range lies inside the text, on character boundaries.
    for diagnostic in &analysis.diagnostics {
        let range = diagnostic.location.range;
        assert!(
            range.start <= range.end && range.end as usize <= text.len(),
            "{diagnostic:?} outside the text"
        );
        assert!(
            text.is_char_boundary(range.start as usize)
                && text.is_char_boundary(range.end as usize),
            "{diagnostic:?} splits a character"
        );
        assert!(!diagnostic.message.is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        analyse(&text);
    }

    #[test]
    fn random_token_sequences_never_panic(tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..200)) {
        analyse(&tokens.join(" "));
    }

    #[test]
    fn mutated_programs_never_panic(cut in 0usize..PROGRAM.len(), tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..6)) {
        let mut text = PROGRAM.to_owned();
        let cut = (0..=cut).rev().find(|c| text.is_char_boundary(*c)).unwrap_or(0);
        text.insert_str(cut, &tokens.join(" "));
        analyse(&text);
    }
}

#[test]
fn arbitrary_bytes_decoded_lossily_never_panic() {
    // The CLI refuses invalid UTF-8, but the editor may send anything
    // decodable; replacement characters must be harmless.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    analyse(&String::from_utf8_lossy(&bytes));
}

#[test]
fn deep_nesting_does_not_overflow() {
    let depth = 2_000;
    let body = format!("{}x = 1;{}", "{ ".repeat(depth), " }".repeat(depth));
    analyse(&format!("main {{ int x; {body} }}"));
    let expr = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
    analyse(&format!("const c: int = {expr};"));
    let unary = format!("{}1", "-".repeat(depth));
    analyse(&format!("const c: int = {unary};"));
}

/// Consts that each use the next one, declared first to last: each is
/// evaluated once its value is known (in dependency order, not by passes over
/// the declarations, which took one pass per const), and a cycle at the end
/// is still reported.
#[test]
fn consts_declared_before_the_consts_they_use_are_evaluated() {
    let count = 5_000;
    let mut text = String::new();
    for i in 0..count {
        text.push_str(&format!("const c_{i}: int = c_{} + 1;\n", i + 1));
    }
    text.push_str(&format!("const c_{count}: int = 7;\n"));
    text.push_str("const x: int = y;\nconst y: int = x + c_0;\nmain { }\n");
    let analysis = analyse_text(Path::new("chain.op2"), &text, &Options::default());
    let value = |name: &str| {
        let constant = analysis
            .program
            .consts
            .iter()
            .find(|c| c.name == name)
            .expect("declared");
        format!("{:?}", constant.value)
    };
    assert_eq!(value("c_0"), format!("Some([Int({})])", 7 + count));
    assert_eq!(value("c_4999"), "Some([Int(8)])");
    let cycles: Vec<&str> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("depends on itself"))
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(
        cycles,
        [
            "the value of `x` depends on itself",
            "the value of `y` depends on itself"
        ]
    );
    let errors = analysis
        .diagnostics
        .iter()
        .filter(|d| d.severity == op2_syntax::Severity::Error)
        .count();
    assert_eq!(errors, 2, "{:?}", analysis.diagnostics);
}
