//! Snapshots of the whole graph type XML of small programs, one per shape of
//! invocation: direct arguments only, indirect reads with indirect
//! increments, global reductions, and control flow in `main`. Review a
//! changed snapshot against compilation.md §4–§6 and poets-v4.md before
//! accepting it (`INSTA_UPDATE=always` or `cargo insta review`).

use crate::graph_type_support;

use std::path::PathBuf;

use graph_type_support::{analyse_source, xml};

/// The XML of the flat controller (`--fan-limit 0`): these snapshots are
/// the strategy without trees, byte for byte.
fn snapshot_xml(id: &str, text: &str) -> String {
    snapshot_xml_with(id, text, 0)
}

fn snapshot_xml_with(id: &str, text: &str, fan_limit: u32) -> String {
    let analysis = analyse_source(&PathBuf::from(format!("{id}.op2")), text);
    xml(&op2_codegen::graph_type_with_fan_limit(
        &analysis, id, fan_limit,
    ))
}

/// One direct READ and one direct WRITE over a single set: no messages but
/// begin and end, and the kernel called on the dats in place.
#[test]
fn direct_arguments_only() {
    let xml = snapshot_xml(
        "direct",
        r"
set cells;

dat p_a: double on cells = 1.0;
dat p_b: double[2] on cells;

kernel spread(const double *a, double b[2]) {
    b[0] = 2.0 * a[0];
    b[1] = a[0];
}

main {
    par_loop spread over cells (p_a READ, p_b WRITE);
}
",
    );
    insta::assert_snapshot!(xml);
}

/// Indirect reads of one node dat at both ends of an edge and indirect
/// increments of another: a read-send pin per dat, a read-recv and a
/// write-send pin per argument, a write-recv pin per dat, INC buffers zeroed
/// before the kernel.
#[test]
fn indirect_read_and_increment() {
    let xml = snapshot_xml(
        "indirect",
        r"
set nodes;
set edges;

map ends: edges -> nodes[2];

dat p_w: double on edges = 1.0;
dat p_u: double on nodes;
dat p_r: double on nodes;

kernel flux(const double *w, const double *u0, const double *u1, double *r0, double *r1) {
    double f = w[0] * (u0[0] - u1[0]);
    *r0 -= f;
    *r1 += f;
}

main {
    par_loop flux over edges (
        p_w          READ,
        p_u[ends[0]] READ,
        p_u[ends[1]] READ,
        p_r[ends[0]] INC,
        p_r[ends[1]] INC,
    );
}
",
    );
    insta::assert_snapshot!(xml);
}

/// Globals read, incremented and reduced with MIN and MAX over edges, with
/// an indirect read so that the nodes take part without running the kernel
/// and report identities in their end messages.
#[test]
fn global_reductions() {
    let xml = snapshot_xml("reductions", REDUCTIONS);
    insta::assert_snapshot!(xml);
}

const REDUCTIONS: &str = r#"
set nodes;
set edges;

map ends: edges -> nodes[2];

dat p_x: double on nodes;

global g_scale: float = 2.0f;
global g_lo:    double;
global g_hi:    int[2];
global g_count: int;

kernel span(const double *x0, const double *x1, const float *scale, double *lo, int hi[2],
            int *count) {
    double d = scale[0] * (x1[0] - x0[0]);
    *lo = fmin(*lo, d);
    hi[0] = max(hi[0], (int) d);
    hi[1] = max(hi[1], -(int) d);
    *count += 1;
}

main {
    g_lo = 1.0e300;
    g_hi[0] = -1000;
    g_hi[1] = -1000;
    par_loop span over edges (
        p_x[ends[0]] READ,
        p_x[ends[1]] READ,
        g_scale      READ,
        g_lo         MIN,
        g_hi         MAX,
        g_count      INC,
    );
    print("%g %d %d %d", g_lo, g_hi[0], g_hi[1], g_count);
}
"#;

/// With trees, the graph type is the flat one plus one aggregator device
/// type per invocation, which forwards the begin (READ, MIN and MAX
/// globals) and combines the ends' partials: MIN and MAX from the type's
/// extremes, INC from zero.
#[test]
fn global_reductions_with_trees() {
    let flat = snapshot_xml("reductions", REDUCTIONS);
    let trees = snapshot_xml_with("reductions", REDUCTIONS, 4);
    let start = trees
        .find("      <DeviceType id=\"tree_span\">")
        .expect("an aggregator device type");
    let end = trees[start..].find("</DeviceType>\n").expect("its end") + start + 14;
    let aggregator = &trees[start..end];
    let mut rest = trees[..start].to_owned();
    rest.push_str(&trees[end..]);
    assert_eq!(rest, flat, "trees add the aggregator device type only");
    insta::assert_snapshot!(aggregator);
}

/// `main` with locals, an array, `if`/`else`, `for`, `while`, `do`,
/// `break`, `continue`, an early `return` and `print`, around one par_loop:
/// the controller's state machine.
#[test]
fn control_flow_in_main() {
    let xml = snapshot_xml(
        "control",
        r#"
const limit: int = 5;

set cells;

dat p_v: double on cells = 1.0;

global g_sum: double;

kernel total(const double *v, double *sum) {
    *sum += v[0];
}

main {
    double last[2] = {0.0, 0.0};
    int n = 0;
    for (int i = 0; i < limit; i++) {
        if (i == 1) continue;
        g_sum = 0.0;
        par_loop total over cells (p_v READ, g_sum INC);
        last[i % 2] = g_sum;
        if (g_sum > 100.0) break;
        else n++;
    }
    while (n > 2) n--;
    do {
        n += 2;
    } while (n < 3);
    if (n == 0) {
        print("nothing");
        return;
    }
    print("n %d, last %g %g", n, last[0], last[1]);
}
"#,
    );
    insta::assert_snapshot!(xml);
}
