//! The dependency API (`last_writers`, `next_readers`, `is_dead`) on a
//! Jacobi-like `main`: a `while` loop whose body reads at its top what the
//! previous iteration wrote, direct WRITEs that replace a dat, and INCs and
//! indirect WRITEs that only add to or patch what was there.

use std::path::Path;

use op2_analysis::model::{Data, InvocationId, Symbol};
use op2_analysis::{Analysis, Options, Reader, analyse_text};
use op2_syntax::{Code, FileId, Location, TextRange};

const JACOBI: &str = r#"
set nodes;
set edges;

map ends: edges -> nodes[2];

dat p_w:   double on edges;
dat p_u:   double on nodes;
dat p_r:   double on nodes;
dat p_old: double on nodes;
dat p_t:   double on nodes;

global g_rsq: double;

kernel init(double *u) { u[0] = 1.0; }
kernel residual(const double *w, const double *u0, const double *u1, double *r0, double *r1) {
    double flux = w[0] * (u0[0] - u1[0]);
    *r0 -= flux;
    *r1 += flux;
}
kernel update(double *r, double *u, double *rsq) {
    u[0] += 0.5 * r[0];
    *rsq += r[0] * r[0];
    r[0] = 0.0;
}
kernel save(const double *u, double *old) { old[0] = u[0]; }
kernel add(const double *u, double *t) { t[0] += u[0]; }
kernel patch(const double *w, double *t) { t[0] = w[0]; }
kernel copy(const double *u, double *t) { t[0] = u[0]; }
kernel sum(const double *t, double *rsq) { *rsq += t[0]; }

main {
    par_loop init over nodes (p_u WRITE);
    par_loop init as clear over nodes (p_r WRITE);
    g_rsq = 1.0;
    while (g_rsq > 1e-10) {
        par_loop residual over edges (p_w READ, p_u[ends[0]] READ, p_u[ends[1]] READ,
                                      p_r[ends[0]] INC, p_r[ends[1]] INC);
        g_rsq = 0.0;
        par_loop update over nodes (p_r RW, p_u RW, g_rsq INC);
        par_loop sum as norm over nodes (p_u READ, g_rsq INC);
    }
    par_loop save over nodes (p_u READ, p_old WRITE);

    par_loop copy over nodes (p_u READ, p_t WRITE);
    par_loop add over nodes (p_u READ, p_t INC);
    par_loop patch over edges (p_w READ, p_t[ends[0]] WRITE);
    par_loop sum over nodes (p_t READ, g_rsq INC);

    par_loop copy as overwritten over nodes (p_u READ, p_t WRITE);
    par_loop copy as replacement over nodes (p_u READ, p_t WRITE);
    par_loop sum as final_sum over nodes (p_t READ, g_rsq INC);
    print("%g", g_rsq);
}
"#;

fn analysis() -> Analysis {
    let analysis = analyse_text(
        Path::new("jacobi.op2"),
        JACOBI,
        &Options { require_main: true },
    );
    let unexpected: Vec<_> = analysis
        .diagnostics
        .iter()
        .filter(|d| !matches!(d.code, Code::H605))
        .collect();
    assert!(unexpected.is_empty(), "{unexpected:#?}");
    analysis
}

fn invocation(analysis: &Analysis, name: &str) -> InvocationId {
    let index = analysis
        .program
        .invocations
        .iter()
        .position(|i| i.name == name)
        .unwrap_or_else(|| panic!("no invocation `{name}`"));
    InvocationId(u32::try_from(index).expect("few invocations"))
}

fn data(analysis: &Analysis, name: &str) -> Data {
    match analysis.program.lookup(name) {
        Some(Symbol::Dat(id)) => Data::Dat(id),
        Some(Symbol::Global(id)) => Data::Global(id),
        other => panic!("`{name}` is not a dat or global: {other:?}"),
    }
}

fn names(analysis: &Analysis, ids: &[InvocationId]) -> Vec<String> {
    ids.iter()
        .map(|id| analysis.program.invocations[id.index()].name.clone())
        .collect()
}

fn last_writers(analysis: &Analysis, at: &str, of: &str) -> Vec<String> {
    let ids = analysis
        .dependencies
        .last_writers(invocation(analysis, at), data(analysis, of));
    let mut names = names(analysis, &ids);
    names.sort();
    names
}

fn next_readers(analysis: &Analysis, after: &str, of: &str) -> Vec<String> {
    let text = &analysis.program.file(FileId::MAIN).text;
    let mut readers: Vec<String> = analysis
        .dependencies
        .next_readers(invocation(analysis, after), data(analysis, of))
        .into_iter()
        .map(|reader| match reader {
            Reader::Invocation(id) => analysis.program.invocations[id.index()].name.clone(),
            Reader::Main(Location { range, .. }) => {
                format!("main: {}", &text[range.start as usize..range.end as usize])
            }
        })
        .collect();
    readers.sort();
    readers
}

fn is_dead(analysis: &Analysis, name: &str) -> bool {
    analysis.dependencies.is_dead(invocation(analysis, name))
}

#[test]
fn invocation_names_are_as_expected() {
    let analysis = analysis();
    let names: Vec<&str> = analysis
        .program
        .invocations
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "init",
            "clear",
            "residual",
            "update",
            "norm",
            "save",
            "copy",
            "add",
            "patch",
            "sum",
            "overwritten",
            "replacement",
            "final_sum"
        ]
    );
}

#[test]
fn the_previous_iteration_reaches_the_top_of_the_loop_body() {
    let analysis = analysis();
    // Before the first sweep `init` wrote p_u; before later ones, `update`.
    assert_eq!(
        last_writers(&analysis, "residual", "p_u"),
        ["init", "update"]
    );
    // p_r: `clear` before the loop, `update` (RW) in the previous sweep.
    assert_eq!(
        last_writers(&analysis, "residual", "p_r"),
        ["clear", "update"]
    );
}

#[test]
fn an_inc_does_not_kill_earlier_writers() {
    let analysis = analysis();
    // `residual` only adds to p_r: what `clear` or the previous `update`
    // stored is still part of the value `update` reads.
    assert_eq!(
        last_writers(&analysis, "update", "p_r"),
        ["clear", "residual", "update"]
    );
    // The same after the loop: `add` adds to what `copy` wrote, and the
    // indirect WRITE of `patch` replaces only some elements.
    assert_eq!(
        last_writers(&analysis, "sum", "p_t"),
        ["add", "copy", "patch"]
    );
    assert!(!is_dead(&analysis, "copy"));
    assert!(!is_dead(&analysis, "add"));
}

#[test]
fn a_direct_write_kills_earlier_writers() {
    let analysis = analysis();
    // `save` sees `update`'s p_u, or `init`'s when the loop runs no sweep
    // at all: a `while` body may run zero times.
    assert_eq!(last_writers(&analysis, "save", "p_u"), ["init", "update"]);
    // Inside the sweep, after `update` (RW) has replaced p_u on every
    // element, neither `init` nor the previous sweep reaches `norm`.
    assert_eq!(last_writers(&analysis, "norm", "p_u"), ["update"]);
    // `replacement` overwrites p_t directly: `overwritten` is dead and
    // reaches no one.
    assert_eq!(last_writers(&analysis, "final_sum", "p_t"), ["replacement"]);
    assert!(is_dead(&analysis, "overwritten"));
    assert!(!is_dead(&analysis, "replacement"));
    assert_eq!(
        next_readers(&analysis, "overwritten", "p_t"),
        Vec::<String>::new()
    );
    // An assignment in `main` replaces a global: no invocation's INC
    // reaches `update` through it.
    assert_eq!(
        last_writers(&analysis, "update", "g_rsq"),
        Vec::<String>::new()
    );
}

#[test]
fn next_readers_follow_the_loop_and_stop_at_kills() {
    let analysis = analysis();
    // What `update` writes to p_u is read next by `norm`; what `norm`
    // leaves, by the following sweep's `residual` or after the loop by
    // `save`.
    assert_eq!(next_readers(&analysis, "update", "p_u"), ["norm"]);
    assert_eq!(next_readers(&analysis, "norm", "p_u"), ["residual", "save"]);
    // p_r: by `update` itself in the next sweep (`residual` only adds).
    assert_eq!(next_readers(&analysis, "update", "p_r"), ["update"]);
    // g_rsq: by the loop condition in `main`.
    assert_eq!(
        next_readers(&analysis, "update", "g_rsq"),
        ["main: g_rsq > 1e-10"]
    );
    // `init` stores p_u for the first sweep.
    assert_eq!(next_readers(&analysis, "init", "p_u"), ["residual", "save"]);
}

#[test]
fn dead_loops() {
    let analysis = analysis();
    assert!(!is_dead(&analysis, "init"));
    assert!(!is_dead(&analysis, "clear"));
    assert!(!is_dead(&analysis, "residual"));
    assert!(!is_dead(&analysis, "update"));
    assert!(!is_dead(&analysis, "norm"));
    // Nothing reads p_old.
    assert!(is_dead(&analysis, "save"));
    let hinted: Vec<TextRange> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::H605)
        .map(|d| d.location.range)
        .collect();
    let invocation_range = |name: &str| {
        analysis.program.invocations[invocation(&analysis, name).index()]
            .location
            .range
    };
    assert_eq!(
        hinted,
        [invocation_range("save"), invocation_range("overwritten")]
    );
}

#[test]
fn loop_carried_results_are_live() {
    // `b`'s p_s is read only by the next iteration's `a`.
    let text = r#"
set cells;
dat p_q: double on cells;
dat p_s: double on cells;
global total: double;
kernel copy(const double *q, double *s) { s[0] = q[0]; }
kernel sum(const double *s, double *t) { *t += s[0]; }
main {
    for (int i = 0; i < 10; i++) {
        par_loop sum as a over cells (p_s READ, total INC);
        par_loop copy as b over cells (p_q READ, p_s WRITE);
    }
    print("%g", total);
}
"#;
    let analysis = analyse_text(Path::new("loop.op2"), text, &Options::default());
    assert!(
        analysis.diagnostics.is_empty(),
        "{:#?}",
        analysis.diagnostics
    );
    assert!(!is_dead(&analysis, "b"));
    assert_eq!(next_readers(&analysis, "b", "p_s"), ["a"]);
    assert_eq!(last_writers(&analysis, "a", "p_s"), ["b"]);
}

#[test]
fn a_break_first_in_an_endless_for_leaves_it() {
    // The graph once dropped a `break` taken straight from the head of
    // `for (;;)`: what followed the loop seemed unreachable, `w` dead.
    let text = r#"
set cells;
dat p_a: double on cells;
global total: double;
kernel fill(double *x) { x[0] = 1.0; }
kernel sum(const double *x, double *t) { *t += x[0]; }
main {
    par_loop fill as w over cells (p_a WRITE);
    for (;;) {
        break;
    }
    par_loop sum as r over cells (p_a READ, total INC);
    print("%g", total);
}
"#;
    let analysis = analyse_text(Path::new("endless.op2"), text, &Options::default());
    assert!(
        analysis.diagnostics.is_empty(),
        "{:#?}",
        analysis.diagnostics
    );
    assert!(!is_dead(&analysis, "w"));
    assert_eq!(next_readers(&analysis, "w", "p_a"), ["r"]);
    assert_eq!(last_writers(&analysis, "r", "p_a"), ["w"]);
}
