//! A simulation whose state the instance would make too large is refused
//! with a limit naming the largest part, before anything sized by the
//! instance is allocated: a few hundred bytes of input never abort the
//! process on a failed allocation of tens of gigabytes.

use crate::support;

use op2_exec::simulate::{Options, SimulationError};

/// A global of 65,536 values READ over a set of `cells` elements: each
/// element of the set holds a copy of it.
const WIDE_GLOBAL: &str = "set cells;
dat x: double on cells;
global w: double[65536];
kernel k(double *x, const double *w) { x[0] = x[0] + w[5]; }
main {
    w[5] = 1.0;
    par_loop k over cells (x RW, w READ);
    print(\"done %g\", w[5]);
}
";

fn refusal(text: &str, json: &str) -> Option<String> {
    let case = support::load("limits.op2", text, json.as_bytes());
    match case.simulate(Options::default()) {
        Err(SimulationError::Limit(message)) => Some(message),
        Err(other) => panic!("{other}"),
        Ok(_) => None,
    }
}

#[test]
fn a_wide_global_on_every_element_of_a_large_set_is_a_limit() {
    // 65,536 × 65,536 × 8 bytes: 32 GiB, where `op2 run` holds it once.
    let message = refusal(WIDE_GLOBAL, r#"{"sets": {"cells": 65536}}"#).expect("refused");
    assert!(
        message.starts_with("the simulation would hold about "),
        "{message}"
    );
    assert!(
        message.contains(
            "the largest part is a copy of global `w` (65536 values) on each of the 65536 elements of `cells`, about 32.0 GiB"
        ),
        "{message}"
    );
    // The same program on a small set runs.
    assert_eq!(refusal(WIDE_GLOBAL, r#"{"sets": {"cells": 16}}"#), None);
}

#[test]
fn many_devices_are_a_limit() {
    // Eight sets of 2^24 elements, no dats: 134 million devices.
    let mut text = String::from("global g: double = 0.0;\nkernel k(double *g) { *g += 1.0; }\n");
    let mut sets = Vec::new();
    for i in 0..8 {
        text.push_str(&format!("set s{i};\n"));
        sets.push(format!("\"s{i}\": 16777216"));
    }
    text.push_str("main {\n");
    for i in 0..8 {
        text.push_str(&format!("    par_loop k over s{i} (g INC);\n"));
    }
    text.push_str("    print(\"%g\", g);\n}\n");
    let json = format!("{{\"sets\": {{{}}}}}", sets.join(", "));
    let message = refusal(&text, &json).expect("refused");
    assert!(
        message.contains("the largest part is the 16777216 devices of set `s"),
        "{message}"
    );
}
