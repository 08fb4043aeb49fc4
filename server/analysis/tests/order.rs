//! `order_dependence`: which dats and globals may end a run with values that
//! depend on the order of floating-point sums, and whether by rounding or by
//! any amount.

use std::path::Path;

use op2_analysis::model::{Data, Symbol};
use op2_analysis::order::{OrderDependence, Sensitivity, order_dependence};
use op2_analysis::{Analysis, Options, analyse_text};
use op2_syntax::Severity;

fn analyse(text: &str) -> (Analysis, OrderDependence) {
    let analysis = analyse_text(
        Path::new("order.op2"),
        text,
        &Options { require_main: true },
    );
    let errors: Vec<_> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let order = order_dependence(&analysis.program);
    (analysis, order)
}

fn of(analysis: &(Analysis, OrderDependence), name: &str) -> Sensitivity {
    let data = match analysis.0.program.lookup(name) {
        Some(Symbol::Dat(id)) => Data::Dat(id),
        Some(Symbol::Global(id)) => Data::Global(id),
        other => panic!("`{name}` is not a dat or global: {other:?}"),
    };
    analysis.1.of(data)
}

const DECLARATIONS: &str = r#"
set cells;
set edges;
map ends: edges -> cells[2];
dat flux: double on cells = 0.0;
dat weight: double on edges = 1.5;
dat count: int on cells = 0;
dat exact: double on cells = 2.0;
"#;

fn program(rest: &str) -> String {
    format!("{DECLARATIONS}{rest}")
}

#[test]
fn an_integer_truncated_from_an_incremented_double_may_differ_by_any_amount() {
    // The fuzz campaign's case (seed 9, 1516280): a double dat incremented
    // through a map, then truncated into an int global.
    let text = program(
        r#"
global total: int = 0;
global sum: double = 0.0;
global scaled: double = 0.0;
kernel spread(const double *w, double *a, double *b) { *a += *w; *b += *w; }
kernel truncate(const double *f, int *t, double *s) { *t += (double) (*f * 8.0); *s += *f; }
kernel scale(const double *f, double *s) { *s += *f * 2.0; }
main {
    par_loop spread over edges (weight READ, flux[ends[0]] INC, flux[ends[1]] INC);
    par_loop truncate over cells (flux READ, total INC, sum INC);
    par_loop scale over cells (flux READ, scaled INC);
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "flux"), Sensitivity::Rounding);
    assert_eq!(of(&order, "total"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "sum"), Sensitivity::Rounding);
    assert_eq!(of(&order, "scaled"), Sensitivity::Rounding);
    assert_eq!(of(&order, "weight"), Sensitivity::Exact);
    assert_eq!(of(&order, "exact"), Sensitivity::Exact);
}

#[test]
fn integers_from_exact_values_stay_exact() {
    let text = program(
        r#"
global n: int = 0;
dat tallied: int on cells = 0;
kernel tally(const double *w, const int *c, int *out, int *total) {
    *out += (int) (*w * 4.0) + *c;
    *total += *c + 1;
}
main {
    par_loop tally over edges (weight READ, count[ends[0]] READ, tallied[ends[1]] INC, n INC);
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "tallied"), Sensitivity::Exact);
    assert_eq!(of(&order, "n"), Sensitivity::Exact);
}

#[test]
fn a_branch_on_an_order_dependent_value_decides_what_it_assigns() {
    let text = program(
        r#"
dat chosen: double on cells = 0.0;
dat plain: double on cells = 0.0;
dat steady: double on cells = 0.0;
kernel spread(const double *w, double *a) { *a += *w; }
kernel choose(const double *f, double *c, double *p) {
    if (*f > 0.5) { *c = 1.0; }
    *p = *f * 3.0;
}
kernel keep(const double *e, double *s) {
    if (*e > 0.5) { *s = *e; } else { *s = 0.0; }
}
main {
    par_loop spread over edges (weight READ, flux[ends[0]] INC);
    par_loop choose over cells (flux READ, chosen WRITE, plain WRITE);
    par_loop keep over cells (exact READ, steady WRITE);
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "chosen"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "plain"), Sensitivity::Rounding);
    assert_eq!(of(&order, "steady"), Sensitivity::Exact);
}

#[test]
fn a_return_or_break_under_such_a_branch_decides_what_follows() {
    let text = program(
        r#"
dat after_return: double on cells = 0.0;
dat after_break: double on cells = 0.0;
dat unrelated: double on cells = 0.0;
kernel spread(const double *w, double *a) { *a += *w; }
kernel early(const double *f, double *out) {
    if (*f > 0.5) return;
    *out = 2.0;
}
kernel counted(const double *f, double *out, double *other) {
    double n = 0.0;
    for (int i = 0; i < 10; i++) {
        if (*f * i > 3.0) break;
        n += 1.0;
    }
    *out = n;
    *other = 4.0;
}
main {
    par_loop spread over edges (weight READ, flux[ends[0]] INC);
    par_loop early over cells (flux READ, after_return RW);
    par_loop counted over cells (flux READ, after_break WRITE, unrelated WRITE);
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "after_return"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "after_break"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "unrelated"), Sensitivity::Exact);
}

#[test]
fn rounding_functions_and_comparisons_jump_where_arithmetic_does_not() {
    let text = program(
        r#"
dat floored: double on cells = 0.0;
dat compared: double on cells = 0.0;
dat smooth: double on cells = 0.0;
dat selected: double on cells = 0.0;
kernel spread(const double *w, double *a) { *a += *w; }
kernel shapes(const double *f, double *a, double *b, double *c, double *d) {
    *a = floor(*f);
    *b = (*f < 1.0) + 0.5;
    *c = sqrt(fabs(*f)) * fmax(*f, 1.0);
    *d = *f > 2.0 ? 1.0 : 2.0;
}
main {
    par_loop spread over edges (weight READ, flux[ends[0]] INC);
    par_loop shapes over cells (flux READ, floored WRITE, compared WRITE, smooth WRITE, selected WRITE);
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "floored"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "compared"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "smooth"), Sensitivity::Rounding);
    assert_eq!(of(&order, "selected"), Sensitivity::Arbitrary);
}

#[test]
fn main_carries_sensitivity_between_globals_and_loops() {
    let text = program(
        r#"
global total: double = 0.0;
global whole: int = 0;
global twice: double = 0.0;
dat spread_back: double on cells = 0.0;
kernel sum(const double *w, double *t) { *t += *w; }
kernel put(const int *n, double *out) { *out = *n * 1.0; }
main {
    par_loop sum over edges (weight READ, total INC);
    whole = (int) total;
    twice = total * 2.0;
    par_loop put over cells (whole READ, spread_back WRITE);
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "total"), Sensitivity::Rounding);
    assert_eq!(of(&order, "whole"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "twice"), Sensitivity::Rounding);
    assert_eq!(of(&order, "spread_back"), Sensitivity::Arbitrary);
}

#[test]
fn a_long_chain_of_locals_assigned_backwards_is_followed_to_its_end() {
    // Each local takes the next one, declared later: a propagation that
    // went once over the body in order would stop after one step.
    let n = 300;
    let mut body = String::new();
    for i in 0..=n {
        body.push_str(&format!("    double t{i} = 0.0;\n"));
    }
    body.push_str("    for (int k = 0; k < 2; k++) {\n");
    for i in 0..n {
        body.push_str(&format!("        t{i} = t{};\n", i + 1));
    }
    body.push_str(&format!(
        "        t{n} = *f;\n    }}\n    *out = (int) t0;\n"
    ));
    let text = program(&format!(
        r#"
dat last: int on cells = 0;
kernel spread(const double *w, double *a) {{ *a += *w; }}
kernel pass(const double *f, int *out) {{
{body}}}
main {{
    par_loop spread over edges (weight READ, flux[ends[0]] INC);
    par_loop pass over cells (flux READ, last WRITE);
}}
"#
    ));
    let order = analyse(&text);
    assert_eq!(of(&order, "last"), Sensitivity::Arbitrary);
}

#[test]
fn the_airfoil_only_rounds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/airfoil.op2");
    let text = std::fs::read_to_string(&root).expect("the airfoil example");
    let order = analyse(&text);
    let program = &order.0.program;
    for (dat, level) in program.dats.iter().zip(&order.1.dats) {
        assert_ne!(*level, Sensitivity::Arbitrary, "dat `{}`", dat.name);
    }
    for (global, level) in program.globals.iter().zip(&order.1.globals) {
        assert_ne!(*level, Sensitivity::Arbitrary, "global `{}`", global.name);
    }
    assert_eq!(of(&order, "rms"), Sensitivity::Rounding);
    assert!(!order.1.main_branches);
    assert!(!order.1.jumps);
}

#[test]
fn what_a_loops_condition_assigns_depends_on_how_often_it_runs() {
    // The review of 2026-11-28 (t4): `i++` in the condition runs once per
    // iteration, and the iterations are decided by an arbitrary `n`.
    let text = program(
        r#"
dat counted: int on cells = 0;
dat stepped: int on cells = 0;
kernel spread(const double *w, double *a) { *a += *w; }
kernel steps(const double *f, int *o, int *p) {
    int n = (int) ((*f - 0.6) * 1e17);
    int i = 0;
    while (i++ < n) { }
    *o = i;
    int j = 0;
    for (int k = 0; k < n; j++) { k++; }
    *p = j;
}
main {
    par_loop spread over edges (weight READ, flux[ends[0]] INC);
    par_loop steps over cells (flux READ, counted WRITE, stepped WRITE);
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "counted"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "stepped"), Sensitivity::Arbitrary);
}

#[test]
fn mains_branches_decide_what_main_assigns_and_are_reported() {
    // The review's t1 and t7: a branch of `main` on a sum, and an `exit`
    // under one before an assignment.
    let text = program(
        r#"
global g: double = 0.0;
global c: int = 0;
global before: int = 0;
global after: int = 0;
kernel sum(const double *w, double *s) { *s += *w; }
main {
    before = 5;
    par_loop sum over edges (weight READ, g INC);
    if (g == 0.6) { c = 1; } else { c = 2; }
    if (g != 0.6) exit(3);
    after = 1;
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "c"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "after"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "before"), Sensitivity::Exact);
    assert!(order.1.main_branches);
    assert!(order.1.jumps);
}

#[test]
fn branches_of_main_on_exact_values_are_not_reported() {
    let text = program(
        r#"
global n: int = 0;
global g: double = 0.0;
kernel sum(const double *w, double *s) { *s += *w; }
main {
    for (int i = 0; i < 3; i++) {
        par_loop sum over edges (weight READ, g INC);
        n = n + 1;
        if (n > 10) return;
    }
}
"#,
    );
    let order = analyse(&text);
    assert!(!order.1.main_branches);
    assert!(!order.1.jumps);
    assert_eq!(of(&order, "n"), Sensitivity::Exact);
    assert_eq!(of(&order, "g"), Sensitivity::Rounding);
}

#[test]
fn a_min_or_max_is_the_same_in_every_order() {
    // The review's O1: `if (x > *m) *m = x;` compares the parameter, which
    // made every MIN and MAX global arbitrary while they were seeded as
    // order-dependent; their combination does not depend on the order.
    let text = program(
        r#"
global top: double = 0.0;
global low: double = 100.0;
global picked: int = 0;
kernel extremes(const double *w, double *t, double *l) {
    if (*w > *t) { *t = *w; }
    *l = fmin(*l, *w);
}
kernel pick(const double *t, int *p) { if (*t > 1.0) { *p += 1; } }
main {
    par_loop extremes over edges (weight READ, top MAX, low MIN);
    par_loop pick over cells (top READ, picked INC);
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "top"), Sensitivity::Exact);
    assert_eq!(of(&order, "low"), Sensitivity::Exact);
    assert_eq!(of(&order, "picked"), Sensitivity::Exact);
}

#[test]
fn a_write_argument_read_before_it_is_written_is_unspecified() {
    // The review's G7, in a loop: the graph's landing pad of an indirect
    // WRITE keeps what the last execution left there (W503 warns).
    let text = program(
        r#"
dat patched: double on cells = 5.0;
dat written: double on cells = 5.0;
kernel bump(double *v) { *v = *v + 1.0; }
kernel put(double *v) { *v = 1.0; }
main {
    for (int i = 0; i < 3; i++) {
        par_loop bump over edges (patched[ends[0]] WRITE);
        par_loop put over edges (written[ends[0]] WRITE);
    }
}
"#,
    );
    let order = analyse(&text);
    assert_eq!(of(&order, "patched"), Sensitivity::Arbitrary);
    assert_eq!(of(&order, "written"), Sensitivity::Exact);
}
