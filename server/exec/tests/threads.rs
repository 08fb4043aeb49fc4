//! `op2 run --threads`: the compiled engine on several threads.
//!
//! - Every thread count above one gives the same output and final state,
//!   bit for bit, run after run (the plan does not depend on the threads,
//!   and which thread runs a block changes nothing).
//! - Against one thread (the sequential engine, bit-identical to the
//!   interpreter): integer data, dats written directly, MIN and MAX, and
//!   every loop that writes through a map other than by INC are identical;
//!   floating sums through maps and into globals differ only by the order of
//!   summation, within the classic bound for two orders of one sum,
//!   `|a - b| <= 2 γ(n) Σ|x|` with `γ(n) = n u / (1 - n u)` over the `n`
//!   terms `x` (computed from the run's own data, not written down).
//! - A fault stops the run with the same message.

#![allow(clippy::print_stderr)]

use crate::support;

use std::fmt::Write;

use op2_analysis::value::Value;
use op2_exec::{Engine, LoopPlan, Reference, RuntimeError, State};
use support::{Case, first_difference, load};

const PROGRAM: &str = "\
set nodes;
set edges;
map ends: edges -> nodes[2];
map pick: nodes -> edges[1];
dat e_w: double on edges;
dat e_k: int on edges;
dat e_out: double on edges;
dat n_u: double on nodes;
dat n_in: double on nodes;
dat n_abs: double on nodes;
dat n_count: int on nodes;
dat n_isum: int on nodes;
dat e_mark: double on edges;
global g_sum: double = 0.5;
global g_abs: double = 0.5;
global g_n: int = 0;
global g_isum: ll = 0;
global g_lo: double = 1.0e300;
global g_hi: int = -1000000;

// Floating and integer sums through a map, with what bounds their rounding.
kernel flow(const double *w, const int *k, const double *u0, const double *u1,
            double *in0, double *in1, double *a0, double *a1,
            int *c0, int *c1, int *i0, int *i1) {
    double f = w[0] * (u0[0] - u1[0]) / 3.0;
    *in0 -= f;
    *in1 += f;
    *a0 += fabs(f);
    *a1 += fabs(f);
    *c0 += 1;
    *c1 += 1;
    *i0 += k[0];
    *i1 -= k[0] * 3;
}

// Writes through a map (no two nodes pick one edge, as E704 requires): run
// in element order.
kernel stamp(const double *u, double *mark) {
    *mark = u[0] * 2.0;
}

// Reads through a map, writes its own edge, reduces into globals.
kernel edge_out(const double *u0, const double *u1, const double *w, const int *k,
                double *out, double *sum, double *abs, int *n, ll *isum,
                double *lo, int *hi) {
    out[0] = u0[0] * w[0] + u1[0] / 7.0;
    *sum += out[0];
    *abs += fabs(out[0]);
    *n += 1;
    *isum += k[0];
    if (out[0] < *lo) { *lo = out[0]; }
    if (k[0] > *hi) { *hi = k[0]; }
}

main {
    for (int i = 0; i < 3; i++) {
        par_loop flow over edges (e_w READ, e_k READ, n_u[ends[0]] READ, n_u[ends[1]] READ,
            n_in[ends[0]] INC, n_in[ends[1]] INC, n_abs[ends[0]] INC, n_abs[ends[1]] INC,
            n_count[ends[0]] INC, n_count[ends[1]] INC, n_isum[ends[0]] INC, n_isum[ends[1]] INC);
    }
    par_loop stamp over nodes (n_u READ, e_mark[pick[0]] WRITE);
    par_loop edge_out over edges (n_u[ends[0]] READ, n_u[ends[1]] READ, e_w READ, e_k READ,
        e_out WRITE, g_sum INC, g_abs INC, g_n INC, g_isum INC, g_lo MIN, g_hi MAX);
    print(\"%.17g %.17g %d %.17g %d\", g_sum, g_abs, g_n, g_lo, g_hi);
}
";

/// A fixed pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn real(&mut self) -> f64 {
        (self.below(2_000_001) as f64 - 1_000_000.0) / 37_131.0
    }
}

/// An instance of [`PROGRAM`]: `edges` edges between `nodes` nodes, with
/// `fault` (if any) the one edge whose `e_k` is 7.
fn instance(nodes: u64, edges: u64, seed: u64, fault: Option<u64>) -> String {
    let mut rng = Rng(seed);
    let list = |count: u64, f: &mut dyn FnMut(u64) -> String| {
        (0..count).map(f).collect::<Vec<_>>().join(",")
    };
    let ends = list(edges, &mut |e| {
        // Edges numbered along the nodes, mostly between near neighbours
        // (as in a renumbered mesh), some far.
        let a = (e * nodes / edges + rng.below(3)) % nodes;
        let b = if rng.below(200) == 0 {
            rng.below(nodes)
        } else {
            (a + 1 + rng.below(5)) % nodes
        };
        format!("[{a},{b}]")
    });
    // Distinct edges, one per node (nodes <= edges).
    let pick = list(nodes, &mut |n| format!("[{}]", (n * 7_919) % edges));
    let mut json = String::new();
    let _ = write!(
        json,
        "{{\"sets\":{{\"nodes\":{nodes},\"edges\":{edges}}},\"maps\":{{\"ends\":[{ends}],\"pick\":[{pick}]}},\"dats\":{{"
    );
    let w = list(edges, &mut |_| format!("{:?}", rng.real()));
    let k = list(edges, &mut |e| {
        if Some(e) == fault {
            "7".into()
        } else {
            let k = rng.below(1000) as i64 - 500 + 1000 * i64::from(e % 2 == 0);
            // Never 7.
            format!("{}", if k == 7 { 8 } else { k })
        }
    });
    let u = list(nodes, &mut |_| format!("{:?}", rng.real()));
    let start = list(nodes, &mut |_| format!("{:?}", rng.real()));
    let _ = write!(
        json,
        "\"e_w\":[{w}],\"e_k\":[{k}],\"n_u\":[{u}],\"n_in\":[{start}]}}}}"
    );
    json
}

fn run(case: &Case, threads: usize) -> Result<(State, String), RuntimeError> {
    case.run_threaded(threads)
}

/// Each invocation's plan on `threads` threads.
fn plans(case: &Case, threads: usize) -> Vec<LoopPlan> {
    let mut sink = |_: &str| {};
    let state = State::new(&case.analysis.program, &case.data);
    Reference::new(&case.analysis, state, &mut sink)
        .with_engine(Engine::Compiled)
        .with_threads(threads)
        .plans()
        .expect("several threads")
}

fn index(case: &Case, name: &str) -> usize {
    let program = &case.analysis.program;
    program
        .dats
        .iter()
        .position(|d| d.name == name)
        .or_else(|| program.globals.iter().position(|g| g.name == name))
        .unwrap_or_else(|| panic!("no `{name}`"))
}

fn double(value: Value) -> f64 {
    match value {
        Value::Double(x) => x,
        other => panic!("{other:?} is not a double"),
    }
}

/// `2 γ(n) Σ|x|`: how far two orders of summing `n` terms whose magnitudes
/// add up to `magnitude` can end apart.
fn bound(terms: usize, magnitude: f64) -> f64 {
    let nu = terms as f64 * f64::EPSILON / 2.0;
    2.0 * nu / (1.0 - nu) * magnitude
}

#[test]
fn every_thread_count_above_one_gives_the_same_bits_run_after_run() {
    let json = instance(2_600, 9_000, 1, None);
    let case = load("threads.op2", PROGRAM, json.as_bytes());
    let two = run(&case, 2).expect("runs");
    for threads in [2, 3, 4, 2, 8] {
        let again = run(&case, threads).expect("runs");
        assert_eq!(again.1, two.1, "{threads} threads print the same");
        if let Some(difference) = first_difference(&again.0, &two.0) {
            panic!("{threads} threads against 2: {difference}");
        }
    }
}

#[test]
fn against_one_thread_only_floating_sums_differ_and_within_their_bound() {
    for (nodes, edges, seed) in [(2_600, 9_000, 2), (300, 5_000, 3), (20_000, 30_000, 4)] {
        let json = instance(nodes, edges, seed, None);
        let case = load("threads.op2", PROGRAM, json.as_bytes());
        // flow (colours), stamp (element order), edge_out (one colour).
        let plans = plans(&case, 2);
        assert_eq!(plans.len(), 3);
        assert!(
            plans[0].sequential.is_none() && plans[0].colours > 1,
            "{plans:?}"
        );
        assert_eq!(plans[0].blocks, (edges as usize).div_ceil(256));
        assert!(plans[1].sequential.is_some(), "{plans:?}");
        assert_eq!((plans[2].colours, plans[2].sequential), (1, None));
        let (one, _) = run(&case, 1).expect("runs");
        let (many, _) = run(&case, 2).expect("runs");
        // Bit-identical: integers, direct writes, MIN/MAX, the loop that
        // writes through a map (run in element order).
        for name in ["n_count", "n_isum", "e_mark", "e_out"] {
            let d = index(&case, name);
            assert!(
                one.dats[d] == many.dats[d],
                "{name} differs between 1 and 2 threads"
            );
        }
        for name in ["g_n", "g_isum", "g_lo", "g_hi"] {
            let g = index(&case, name);
            assert_eq!(
                one.globals[g], many.globals[g],
                "{name} differs between 1 and 2 threads"
            );
        }
        // Floating sums through the map: each node's `n_in` is its start
        // value plus 3 × (its edges' contributions), `n_abs` their
        // magnitudes.
        let (d_in, d_abs, d_count) = (
            index(&case, "n_in"),
            index(&case, "n_abs"),
            index(&case, "n_count"),
        );
        let start = State::new(&case.analysis.program, &case.data);
        let mut differing = 0;
        for node in 0..nodes as usize {
            let count = match one.dats[d_count][node] {
                Value::Int(n) => usize::try_from(n).expect("a count"),
                other => panic!("{other:?}"),
            };
            let magnitude = double(start.dats[d_in][node]).abs() + double(one.dats[d_abs][node]);
            let (a, b) = (double(one.dats[d_in][node]), double(many.dats[d_in][node]));
            let limit = bound(count + 1, magnitude * (1.0 + 1e-9));
            assert!(
                (a - b).abs() <= limit,
                "n_in[{node}]: {a:e} against {b:e}, beyond {limit:e}"
            );
            let (a, b) = (
                double(one.dats[d_abs][node]),
                double(many.dats[d_abs][node]),
            );
            assert!((a - b).abs() <= bound(count, a * (1.0 + 1e-9)));
            differing += usize::from(one.dats[d_in][node] != many.dats[d_in][node]);
        }
        // The global sum over every edge, starting from 0.5.
        let (g_sum, g_abs) = (index(&case, "g_sum"), index(&case, "g_abs"));
        let magnitude = double(one.globals[g_abs][0]);
        let (a, b) = (
            double(one.globals[g_sum][0]),
            double(many.globals[g_sum][0]),
        );
        assert!(
            (a - b).abs() <= bound(edges as usize + 1, magnitude * (1.0 + 1e-9)),
            "g_sum: {a:e} against {b:e}"
        );
        eprintln!(
            "{nodes} nodes, {edges} edges, flow in {} colours of {} blocks: {differing} of {nodes} n_in differ from one thread's in some bit; g_sum {a:e} against {b:e}",
            plans[0].colours, plans[0].blocks
        );
    }
}

#[test]
fn a_fault_stops_every_thread_count_with_the_sequential_message() {
    let json = instance(2_600, 9_000, 5, Some(6_123));
    let text = PROGRAM.replace("*i0 += k[0];", "*i0 += k[0] / (k[0] - 7);");
    let case = load("threads.op2", &text, json.as_bytes());
    let sequential = run(&case, 1).expect_err("edge 6123 divides by zero");
    assert!(
        sequential.message.contains("integer division by zero")
            && sequential.message.contains("element 6123"),
        "{}",
        sequential.message
    );
    for threads in [2, 3, 4] {
        let error = run(&case, threads).expect_err("the fault stops the run");
        assert_eq!(error.message, sequential.message, "{threads} threads");
    }
}

#[test]
fn the_interpreter_ignores_threads_and_one_thread_is_the_interpreter_bit_for_bit() {
    let json = instance(500, 3_000, 6, None);
    let case = load("threads.op2", PROGRAM, json.as_bytes());
    let interpreted = {
        let mut output = String::new();
        let state = State::new(&case.analysis.program, &case.data);
        let mut sink = |text: &str| output.push_str(text);
        let reference = Reference::new(&case.analysis, state, &mut sink)
            .with_threads(4)
            .with_engine(Engine::Interp);
        assert_eq!(reference.threads(), 1);
        reference.run(u64::MAX).map(|state| (state, output))
    };
    let compiled = run(&case, 1);
    support::assert_same_run(&interpreted, &compiled);
}

#[test]
fn airfoil_on_threads_agrees_with_one_thread() {
    let root = support::repository();
    let Ok(json) = std::fs::read(root.join("../shared/data/airfoil_I10_J15.json")) else {
        eprintln!("SKIPPED LOUDLY: the shared airfoil mesh is missing");
        return;
    };
    let mut document: serde_json::Value = serde_json::from_slice(&json).expect("JSON");
    document["consts"]["niter"] = serde_json::json!(20);
    let json = serde_json::to_vec(&document).expect("JSON");
    let text = std::fs::read_to_string(root.join("docs/examples/airfoil.op2")).expect("airfoil");
    let case = load("airfoil.op2", &text, &json);
    // Every loop of the airfoil runs on the threads.
    let plans = plans(&case, 2);
    assert_eq!(plans.len(), 5);
    assert!(plans.iter().all(|p| p.sequential.is_none()), "{plans:?}");
    eprintln!("airfoil, 450 cells: {plans:?}");
    let (one, _) = run(&case, 1).expect("runs");
    let (two, out_two) = run(&case, 2).expect("runs");
    let (four, out_four) = run(&case, 4).expect("runs");
    assert_eq!(out_two, out_four);
    assert_eq!(first_difference(&two, &four), None);
    let differences = op2_exec::compare(
        &case.analysis.program,
        &one,
        &two,
        op2_exec::Tolerance {
            relative: 1e-12,
            absolute: 1e-14,
        },
    )
    .differences;
    assert!(
        differences.is_empty(),
        "{:?}",
        &differences[..differences.len().min(3)]
    );
}

/// The peak of this process's address space (`VmPeak`), in bytes.
fn address_space_peak() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmPeak:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .expect("VmPeak");
    kib * 1024
}

/// A loop that reduces globals over many blocks holds a bounded amount of
/// partials, whatever the number of blocks: 16,384 blocks reducing 64
/// globals of `double[16]` (8 KiB together) once took a partial per block,
/// 128 MiB (and 8 GiB for a `double[16384]` over 2^24 elements, which
/// aborted). The test runs itself again as a child process, alone (the
/// address space's peak is the process's) with one malloc arena, where
/// after a warm-up run the loop may grow the peak by 32 MiB at most; and
/// gives the sequential engine's output.
#[test]
fn reducing_globals_over_many_blocks_holds_bounded_partials() {
    const CHILD: &str = "OP2_THREADS_BOUNDED_PARTIALS_CHILD";
    const NAME: &str = "threads::reducing_globals_over_many_blocks_holds_bounded_partials";
    if std::env::var_os(CHILD).is_none() {
        let exe = std::env::current_exe().expect("the test binary");
        let output = std::process::Command::new(exe)
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            // One malloc arena for every thread (glibc): a thread's first
            // allocation would otherwise reserve an arena of 64 MiB or more
            // of address space, at a moment the scheduler decides.
            .env("MALLOC_ARENA_MAX", "1")
            .output()
            .expect("runs the child");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        eprintln!("{stderr}");
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "the child failed ({}):\n{stdout}\n{stderr}",
            output.status
        );
        return;
    }
    let globals = 64;
    let mut text = String::from("set cells;\n");
    for g in 0..globals {
        let _ = writeln!(text, "global g{g}: double[16];");
    }
    let params: Vec<String> = (0..globals).map(|g| format!("double *g{g}")).collect();
    let _ = writeln!(text, "kernel k({}) {{", params.join(", "));
    for g in 0..globals {
        let _ = writeln!(text, "    g{g}[{}] += 1.0;", g % 16);
    }
    let args: Vec<String> = (0..globals).map(|g| format!("g{g} INC")).collect();
    let _ = writeln!(
        text,
        "}}\nmain {{\n    par_loop k over cells ({});\n    print(\"%.17g %.17g\", g0[0], g{}[{}]);\n}}",
        args.join(", "),
        globals - 1,
        (globals - 1) % 16
    );
    let case = |cells: usize| {
        let json = format!("{{\"sets\": {{\"cells\": {cells}}}}}");
        load("partials.op2", &text, json.as_bytes())
    };
    run(&case(256), 2).expect("the warm-up runs");
    let cells = 16_384 * 256;
    let big = case(cells);
    assert_eq!(plans(&big, 2)[0].blocks, 16_384);
    let before = address_space_peak();
    let started = std::time::Instant::now();
    let (_, two) = run(&big, 2).expect("runs on two threads");
    let grown = address_space_peak().saturating_sub(before);
    eprintln!(
        "the two-thread run grew the address space's peak by {grown} bytes from {before} ({:?})",
        started.elapsed()
    );
    assert!(grown <= 32 << 20, "grew by {grown} bytes");
    let (_, one) = run(&big, 1).expect("runs on one thread");
    assert_eq!(two, one);
    assert_eq!(two.trim_end(), format!("{cells} {cells}"));
}

/// A fault is reported at the lowest element that faults, as the sequential
/// engine reports it, even where a later block of an earlier colour faults
/// too: blocks 0 and 1 share node 0 (colours 0 and 1), block 2 has node 1
/// (colour 0, with block 0); elements 300 (block 1) and 600 (block 2)
/// divide by zero. Colour 0 runs first and finds element 600; block 1 is
/// run after it all the same and its element 300 is the fault. With and
/// without a reduced global (two ways of running blocks).
#[test]
fn a_fault_is_reported_at_the_lowest_faulting_element_on_every_thread_count() {
    let cells = 3 * 256;
    let map: Vec<String> = (0..cells)
        .map(|e| format!("[{}]", usize::from(e >= 512)))
        .collect();
    let d: Vec<String> = (0..cells)
        .map(|e| if e == 300 || e == 600 { "0" } else { "1" }.to_string())
        .collect();
    let json = format!(
        "{{\"sets\": {{\"cells\": {cells}, \"nodes\": 2}}, \"maps\": {{\"m\": [{}]}}, \"dats\": {{\"d\": [{}]}}}}",
        map.join(","),
        d.join(",")
    );
    for (global, arg) in [("global s: double;", ", s INC"), ("", "")] {
        let text = format!(
            "set cells;
set nodes;
map m: cells -> nodes[1];
dat d: int on cells;
dat y: double on nodes;
{global}
kernel k(const int *d, double *y{}) {{
    int q = 10 / d[0];
    *y += q;
    {}
}}
main {{
    par_loop k over cells (d READ, y[m[0]] INC{arg});
}}
",
            if arg.is_empty() { "" } else { ", double *s" },
            if arg.is_empty() { "" } else { "*s += q;" },
        );
        let case = load("fault.op2", &text, json.as_bytes());
        let plan = &plans(&case, 2)[0];
        assert_eq!((plan.blocks, plan.colours), (3, 2), "{plan:?}");
        let sequential = run(&case, 1).expect_err("element 300 divides by zero");
        assert!(
            sequential.message.contains("element 300 of `cells`"),
            "{}",
            sequential.message
        );
        for threads in [2, 3] {
            let error = run(&case, threads).expect_err("the fault stops the run");
            assert_eq!(
                error.message, sequential.message,
                "{threads} threads {arg:?}"
            );
        }
    }
}

/// On several threads `main` runs on the loops' pool, so that each loop
/// starts its blocks there instead of being handed to the pool and waited
/// for (two hand-overs between threads per loop, about 9,000 loops in the
/// 7,200-cell airfoil's 1000 iterations): what `main` prints comes from a
/// thread of the pool. On one thread there is no pool.
#[test]
fn main_runs_on_the_pool_of_the_loops() {
    let case = load(
        "printing.op2",
        "set cells;
dat x: double on cells = 0.5;
global g: double;
kernel add(const double *a, double *sum) { *sum += *a; }
main {
    for (int i = 0; i < 3; i++) {
        par_loop add over cells (x READ, g INC);
        print(\"%g\\n\", g);
    }
}
",
        br#"{ "sets": { "cells": 2000 } }"#,
    );
    for (threads, on_pool) in [(1, false), (2, true)] {
        let mut seen = Vec::new();
        let mut out = |_: &str| seen.push(rayon::current_thread_index().is_some());
        let state = State::new(&case.analysis.program, &case.data);
        Reference::new(&case.analysis, state, &mut out)
            .with_engine(Engine::Compiled)
            .with_threads(threads)
            .run(u64::MAX)
            .expect("runs");
        assert_eq!(seen.len(), 3, "{threads} thread(s)");
        assert!(
            seen.iter().all(|&p| p == on_pool),
            "{threads} thread(s): {seen:?}"
        );
    }
}
