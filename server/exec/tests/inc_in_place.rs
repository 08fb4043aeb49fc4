//! A `float` or `double` INC argument works on its target in place, as
//! OP2's sequential build hands the kernel a pointer into the dat or the
//! global: a kernel that adds to one INC argument several times per call
//! rounds each addition into the target in turn (language.md §8, "What a
//! run computes"). Where two INC arguments of one element name the same
//! target, the later starts at zero and its sum is added after the earlier
//! is stored, so neither loses the other's additions. Both engines agree
//! bit for bit (`Case::run` checks it); the expected values are summed here
//! in Rust `f32` in the order the semantics give, and each test first shows
//! that the old order (a zeroed copy per element, added afterwards) gives
//! different bits for its inputs, so the test tells the two apart.

use crate::support;

use op2_analysis::value::Value;
use support::{Case, load};

/// Four additions to one indirect INC argument and to one global INC
/// argument per call, as OP2's airfoil `update` does to `rms`.
const REPEATED: &str = "\
set cells;
set nodes;
map cn: cells -> nodes[1];
dat x: float on cells;
dat acc: float on nodes;
global total: float;

kernel bump(const float *x, float *a, float *t) {
    for (int i = 0; i < 4; i++) {
        *a += x[0] * (i + 1);
        *t += x[0] * x[0] * (i + 1);
    }
}

main {
    par_loop bump over cells (x READ, acc[cn[0]] INC, total INC);
}
";

fn floats(case: &Case, state: &op2_exec::State, dat: &str) -> Vec<f32> {
    case.dat(state, dat)
        .iter()
        .map(|v| match *v {
            Value::Float(x) => x,
            other => panic!("{dat} holds {other:?}"),
        })
        .collect()
}

/// Instance JSON: the sets, the rows of map `map.0`, `x` on the cells, `acc`
/// (when given) and the global `total`.
fn instance(sets: &str, map: (&str, &[String]), xs: &[f32], acc: &[f32], total: f32) -> String {
    let list = |values: &[f32]| {
        values
            .iter()
            .map(f32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let acc = if acc.is_empty() {
        String::new()
    } else {
        format!(r#", "acc": [{}]"#, list(acc))
    };
    format!(
        r#"{{"sets": {{{sets}}}, "maps": {{"{}": [{}]}},
             "dats": {{"x": [{}]{acc}}}, "globals": {{"total": {total}}}}}"#,
        map.0,
        map.1.join(", "),
        list(xs),
    )
}

fn float_global(case: &Case, state: &op2_exec::State, name: &str) -> f32 {
    match case.global(state, name)[..] {
        [Value::Float(x)] => x,
        ref other => panic!("{name} is {other:?}"),
    }
}

/// The test's inputs tell the two orders apart: the old order's results
/// (`_old`) differ from the new in the bits of `total` and of some `acc`.
fn assert_orders_differ(acc: &[f32], acc_old: &[f32], total: f32, total_old: f32) {
    assert_ne!(total.to_bits(), total_old.to_bits(), "total: the same bits");
    assert!(
        acc.iter()
            .zip(acc_old)
            .any(|(a, b)| a.to_bits() != b.to_bits()),
        "acc: the same bits"
    );
}

/// Runs `text` on `json` with both engines (`Case::run`: bit-identical)
/// and requires `acc` and `total` to end with exactly these bits.
fn assert_runs_to(text: &str, json: &str, acc: &[f32], total: f32) {
    let case = load("inc.op2", text, json.as_bytes());
    let (state, _) = case.run().expect("the run succeeds");
    assert_eq!(
        float_global(&case, &state, "total").to_bits(),
        total.to_bits()
    );
    let got = floats(&case, &state, "acc");
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        acc.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "acc: {got:?} against {acc:?}"
    );
}

/// The increments of element `x`: `(to a, to t)` for `i = 0..4`.
fn increments(x: f32) -> Vec<(f32, f32)> {
    (1..=4).map(|n| (x * n as f32, x * x * n as f32)).collect()
}

#[test]
fn repeated_float_increments_round_into_the_target_in_turn() {
    let cells = 40;
    let nodes = 3;
    let xs: Vec<f32> = (0..cells)
        .map(|k| 0.1 + (k as f32) * 0.377 - ((k * k) % 7) as f32 * 0.0131)
        .collect();
    let map: Vec<usize> = (0..cells).map(|k| (k * 5 + 1) % nodes).collect();
    let acc0: Vec<f32> = vec![1000.25, -3.5e3, 0.1];
    let total0: f32 = 12345.67;
    let rows: Vec<String> = map.iter().map(|m| format!("[{m}]")).collect();
    let json = instance(
        &format!(r#""cells": {cells}, "nodes": {nodes}"#),
        ("cn", &rows),
        &xs,
        &acc0,
        total0,
    );
    // OP2's sequential order: each addition into the target in turn.
    let (mut acc, mut total) = (acc0.clone(), total0);
    // The old order: each element's additions summed from zero, then added.
    let (mut acc_old, mut total_old) = (acc0.clone(), total0);
    for (k, &x) in xs.iter().enumerate() {
        let (mut a, mut t) = (0.0f32, 0.0f32);
        for (da, dt) in increments(x) {
            acc[map[k]] += da;
            total += dt;
            a += da;
            t += dt;
        }
        acc_old[map[k]] += a;
        total_old += t;
    }
    assert_orders_differ(&acc, &acc_old, total, total_old);

    assert_runs_to(REPEATED, &json, &acc, total);
}

/// Two INC arguments of one element on the same target: through one map
/// whose two entries are one row for some elements, a direct and an
/// indirect INC of one dat, and one global passed twice.
const ALIASED: &str = "\
set cells;
map cc: cells -> cells[2];
dat x: float on cells;
dat acc: float on cells;
global total: float;

kernel both(const float *x, float *a0, float *a1, float *own, float *t0, float *t1) {
    for (int i = 0; i < 3; i++) {
        *a0 += x[0] * (i + 1);
        *a1 += x[0] * x[0];
        *own += x[0] + x[0];
        *t0 += x[0];
        *t1 += x[0] * x[0];
    }
}

main {
    par_loop both over cells (x READ, acc[cc[0]] INC, acc[cc[1]] INC, acc INC, total INC, total INC);
}
";

#[test]
fn inc_arguments_on_one_target_add_up_and_both_engines_agree() {
    let cells = 16;
    let xs: Vec<f32> = (0..cells)
        .map(|k| 0.3 + (k as f32) * 1.137 - ((k * 3) % 5) as f32 * 0.071)
        .collect();
    // Some elements name one row twice, some their own row, some others.
    let map: Vec<[usize; 2]> = (0..cells)
        .map(|k| match k % 4 {
            0 => [(k + 1) % cells, (k + 1) % cells],
            1 => [k, (k + 2) % cells],
            2 => [(k + 3) % cells, k],
            _ => [(k + 5) % cells, (k + 7) % cells],
        })
        .collect();
    let acc0: Vec<f32> = (0..cells).map(|k| 700.3 - k as f32 * 91.7).collect();
    let total0: f32 = 77777.7;
    let rows: Vec<String> = map.iter().map(|[a, b]| format!("[{a}, {b}]")).collect();
    let json = instance(
        &format!(r#""cells": {cells}"#),
        ("cc", &rows),
        &xs,
        &acc0,
        total0,
    );
    // The semantics: in argument order, the first argument on a target
    // starts from its value and is stored back; a later one on the same
    // target starts at zero and is added after it.
    let (mut acc, mut total) = (acc0.clone(), total0);
    let (mut acc_old, mut total_old) = (acc0.clone(), total0);
    for (k, &x) in xs.iter().enumerate() {
        let rows = [map[k][0], map[k][1], k];
        let mut params = [0.0f32; 5];
        let mut starts_at_target = [false; 5];
        for (j, &row) in rows.iter().enumerate() {
            starts_at_target[j] = !rows[..j].contains(&row);
            if starts_at_target[j] {
                params[j] = acc[row];
            }
        }
        starts_at_target[3] = true;
        params[3] = total;
        let mut old = [0.0f32; 5];
        for i in 1..=3 {
            for p in [&mut params, &mut old] {
                p[0] += x * i as f32;
                p[1] += x * x;
                p[2] += x + x;
                p[3] += x;
                p[4] += x * x;
            }
        }
        for (j, &row) in rows.iter().enumerate() {
            if starts_at_target[j] {
                acc[row] = params[j];
            } else {
                acc[row] += params[j];
            }
            acc_old[row] += old[j];
        }
        total = params[3];
        total += params[4];
        total_old += old[3];
        total_old += old[4];
    }
    assert_orders_differ(&acc, &acc_old, total, total_old);
    // Neither argument's additions are lost: within rounding, the total is
    // the starting value plus every contribution.
    let exact: f64 = f64::from(total0)
        + xs.iter()
            .map(|&x| 3.0 * (f64::from(x) + f64::from(x) * f64::from(x)))
            .sum::<f64>();
    assert!((f64::from(total) - exact).abs() < 1e-3 * exact.abs());

    assert_runs_to(ALIASED, &json, &acc, total);
}

#[test]
fn threads_start_block_zero_from_the_global_and_the_others_from_zero() {
    // 600 cells: three blocks of 256, each reducing `total` in place into a
    // partial of its own (block 0's from the global, the others' from
    // zero), added in block order afterwards. `acc` is reached through a
    // map of one row per cell, so the blocks share no row.
    let cells = 600;
    let xs: Vec<f32> = (0..cells)
        .map(|k| 0.01 + (k % 97) as f32 * 0.1371)
        .collect();
    let total0: f32 = 9.75;
    let rows: Vec<String> = (0..cells)
        .map(|k| format!("[{}]", (k * 7) % cells))
        .collect();
    let json = instance(
        &format!(r#""cells": {cells}, "nodes": {cells}"#),
        ("cn", &rows),
        &xs,
        &[],
        total0,
    );
    // The partials in place, and in the old order (each element's sum
    // from zero added to its block's partial).
    let (mut partials, mut partials_old) = (Vec::new(), Vec::new());
    for (block, chunk) in xs.chunks(256).enumerate() {
        let mut t = if block == 0 { total0 } else { 0.0 };
        let mut t_old = t;
        for &x in chunk {
            let mut sum = 0.0f32;
            for (_, dt) in increments(x) {
                t += dt;
                sum += dt;
            }
            t_old += sum;
        }
        partials.push(t);
        partials_old.push(t_old);
    }
    let (mut total, mut total_old) = (partials[0], partials_old[0]);
    for (&p, &p_old) in partials[1..].iter().zip(&partials_old[1..]) {
        total += p;
        total_old += p_old;
    }
    assert_ne!(
        total.to_bits(),
        total_old.to_bits(),
        "the inputs tell the orders apart"
    );
    let case = load("threads.op2", REPEATED, json.as_bytes());
    for threads in [2, 3] {
        let (state, _) = case.run_threaded(threads).expect("the run succeeds");
        assert_eq!(
            float_global(&case, &state, "total").to_bits(),
            total.to_bits(),
            "{threads} threads"
        );
    }
}

/// A row of 20 components, past the compiled engine's unrolled arguments
/// (its components are a loop in the code), through a map that names one
/// row twice for some elements.
const WIDE: &str = "\
set cells;
map cc: cells -> cells[2];
dat x: float on cells;
dat w: float[20] on cells;

kernel spread(const float *x, float *a, float *b) {
    for (int i = 0; i < 20; i++) {
        a[i] += x[0] * i;
        b[i] += x[0];
        a[i] += x[0] * x[0];
    }
}

main {
    par_loop spread over cells (x READ, w[cc[0]] INC, w[cc[1]] INC);
}
";

#[test]
fn a_wide_row_named_twice_adds_both_arguments_in_both_engines() {
    let (cells, dim) = (10usize, 20usize);
    let xs: Vec<f32> = (0..cells).map(|k| 0.7 + k as f32 * 0.913).collect();
    let map: Vec<[usize; 2]> = (0..cells)
        .map(|k| {
            if k % 3 == 0 {
                [k, k]
            } else {
                [k, (k + 4) % cells]
            }
        })
        .collect();
    let w0: Vec<f32> = (0..cells * dim).map(|i| 100.3 + i as f32 * 7.31).collect();
    let (mut w, mut w_old) = (w0.clone(), w0.clone());
    for (k, &x) in xs.iter().enumerate() {
        let [r0, r1] = map[k];
        for i in 0..dim {
            let (at0, at1) = (r0 * dim + i, r1 * dim + i);
            // The first argument starts from its row; the second from its
            // row too, unless that is the first's row: then from zero.
            let mut a = w[at0];
            let mut b = if r1 == r0 { 0.0 } else { w[at1] };
            let (mut a_old, mut b_old) = (0.0f32, 0.0f32);
            a += x * i as f32;
            a_old += x * i as f32;
            b += x;
            b_old += x;
            a += x * x;
            a_old += x * x;
            w[at0] = a;
            if r1 == r0 {
                w[at1] += b;
            } else {
                w[at1] = b;
            }
            w_old[at0] += a_old;
            w_old[at1] += b_old;
        }
    }
    assert!(
        w.iter()
            .zip(&w_old)
            .any(|(a, b)| a.to_bits() != b.to_bits()),
        "the inputs tell the orders apart"
    );
    let rows: Vec<String> = map.iter().map(|[a, b]| format!("[{a}, {b}]")).collect();
    let rows_of_w: Vec<String> = w0
        .chunks(dim)
        .map(|row| {
            format!(
                "[{}]",
                row.iter()
                    .map(f32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    let json = format!(
        r#"{{"sets": {{"cells": {cells}}}, "maps": {{"cc": [{}]}},
             "dats": {{"x": [{}], "w": [{}]}}}}"#,
        rows.join(", "),
        xs.iter().map(f32::to_string).collect::<Vec<_>>().join(", "),
        rows_of_w.join(", ")
    );
    let case = load("wide.op2", WIDE, json.as_bytes());
    let (state, _) = case.run().expect("the run succeeds");
    let got = floats(&case, &state, "w");
    assert_eq!(
        got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        w.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        "w: {got:?} against {w:?}"
    );
}

/// A loop with `n` INC arguments on `acc` through one map of arity `n` and
/// `n` on `total`; each parameter gets `x` and then `x * x`.
fn many_incs(n: usize) -> String {
    let params: Vec<String> = (0..n)
        .map(|i| format!("float *a{i}"))
        .chain((0..n).map(|i| format!("float *t{i}")))
        .collect();
    let body: String = (0..n)
        .map(|i| {
            format!(
                "    *a{i} += x[0];\n    *a{i} += x[0] * x[0];\n    \
                 *t{i} += x[0];\n    *t{i} += x[0] * x[0];\n"
            )
        })
        .collect();
    let args: Vec<String> = (0..n)
        .map(|i| format!("acc[cc[{i}]] INC"))
        .chain((0..n).map(|_| "total INC".to_string()))
        .collect();
    format!(
        "set cells;\nmap cc: cells -> cells[{n}];\ndat x: float on cells;\n\
         dat acc: float on cells;\nglobal total: float;\n\n\
         kernel many(const float *x, {}) {{\n{body}}}\n\n\
         main {{\n    par_loop many over cells (x READ, {});\n}}\n",
        params.join(", "),
        args.join(", "),
    )
}

/// `acc` and `total` after the loop of [`many_incs`]`(n)`, with each
/// argument in place (`in_place`: the first on its target starts from it)
/// or all of them staged (start at zero, added in argument order).
fn many_incs_result(
    xs: &[f32],
    map: &[Vec<usize>],
    acc0: &[f32],
    total0: f32,
    in_place: bool,
) -> (Vec<f32>, f32) {
    let (mut acc, mut total) = (acc0.to_vec(), total0);
    for (k, &x) in xs.iter().enumerate() {
        let n = map[k].len();
        let staged = 0.0f32 + x + x * x;
        // Every element's rows are distinct, so each `acc` argument is the
        // first on its row; of the `total` ones only the first is.
        for &row in &map[k] {
            acc[row] = if in_place {
                acc[row] + x + x * x
            } else {
                acc[row] + staged
            };
        }
        for i in 0..n {
            total = if in_place && i == 0 {
                total + x + x * x
            } else {
                total + staged
            };
        }
    }
    (acc, total)
}

#[test]
fn past_the_limit_every_inc_argument_of_a_dat_or_global_is_staged_in_both_engines() {
    let limit = op2_exec::reference::MAX_IN_PLACE_INC;
    let cells = limit + 8;
    let xs: Vec<f32> = (0..cells)
        .map(|k| 0.7 + (k as f32) * 0.913 - ((k * 5) % 9) as f32 * 0.0571)
        .collect();
    let acc0: Vec<f32> = (0..cells).map(|k| 5003.1 - k as f32 * 311.9).collect();
    let total0: f32 = 65432.1;
    // At the limit the arguments work in place, one past it all are staged
    // (and the test's inputs tell the two apart).
    for (n, in_place) in [(limit, true), (limit + 1, false)] {
        let map: Vec<Vec<usize>> = (0..cells)
            .map(|k| (0..n).map(|i| (k + 3 * i) % cells).collect())
            .collect();
        assert!(map.iter().all(|rows| {
            let mut sorted = rows.clone();
            sorted.sort_unstable();
            sorted.dedup();
            sorted.len() == n
        }));
        let (acc, total) = many_incs_result(&xs, &map, &acc0, total0, in_place);
        let (acc_other, total_other) = many_incs_result(&xs, &map, &acc0, total0, !in_place);
        assert_orders_differ(&acc, &acc_other, total, total_other);
        let rows: Vec<String> = map
            .iter()
            .map(|rows| {
                let list: Vec<String> = rows.iter().map(usize::to_string).collect();
                format!("[{}]", list.join(", "))
            })
            .collect();
        let json = instance(
            &format!(r#""cells": {cells}"#),
            ("cc", &rows),
            &xs,
            &acc0,
            total0,
        );
        assert_runs_to(&many_incs(n), &json, &acc, total);
    }
}

/// The plan both engines follow (`in_place_plan`): the interpreter compares
/// an argument's row, per element, with the rows of the arguments in its
/// `unless`, and the compiled loop emits one compare for each. Grouped by
/// target, each argument lists at most `MAX_IN_PLACE_INC - 1` earlier
/// arguments, all of its own dat, so that work is linear in the arguments.
#[test]
fn the_in_place_plan_compares_an_argument_only_with_earlier_ones_of_its_dat() {
    use op2_exec::reference::{IncPlace, MAX_IN_PLACE_INC, in_place_plan};
    let plan_of = |text: &str| {
        let analysis = op2_analysis::analyse_text(
            std::path::Path::new("many.op2"),
            text,
            &op2_analysis::Options { require_main: true },
        );
        assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
        let args: Vec<_> = analysis.program.invocations[0]
            .resolved_args()
            .map(|(_, a)| a.clone())
            .collect();
        in_place_plan(&args)
    };
    let unless = |place: &IncPlace| match place {
        IncPlace::InPlace { unless } => unless.clone(),
        IncPlace::Staged => panic!("staged"),
    };
    // 1,000 arguments on `acc` and 1,000 on `total`: all staged, no compare.
    let plan = plan_of(&many_incs(1000));
    assert_eq!(plan.len(), 2001);
    assert!(plan.iter().all(|p| *p == IncPlace::Staged));
    // At the limit: each `acc` argument lists the earlier ones (the
    // arguments `1..=limit`; `x` is argument 0), `total` only its first.
    let limit = MAX_IN_PLACE_INC;
    let plan = plan_of(&many_incs(limit));
    for i in 0..limit {
        assert_eq!(unless(&plan[1 + i]), (1..1 + i).collect::<Vec<_>>());
    }
    assert_eq!(unless(&plan[1 + limit]), Vec::<usize>::new());
    assert!(plan[2 + limit..].iter().all(|p| *p == IncPlace::Staged));
    // Two dats' arguments interleaved, a READ and an integer INC among
    // them: each lists only its own dat's.
    let n = 20;
    let mut params = Vec::new();
    let mut args = Vec::new();
    for i in 0..n {
        params.push(format!(
            "float *a{i}, double *b{i}, const float *r{i}, int *c{i}"
        ));
        args.push(format!(
            "acc[cc[{i}]] INC, other[cc[{i}]] INC, x[cc[{i}]] READ, count[cc[{i}]] INC"
        ));
    }
    let text = format!(
        "set cells;\nmap cc: cells -> cells[{n}];\ndat acc: float on cells;\n\
         dat other: double on cells;\ndat count: int on cells;\ndat x: float on cells;\n\
         kernel k({}) {{}}\nmain {{\n    par_loop k over cells ({});\n}}\n",
        params.join(", "),
        args.join(", ")
    );
    let plan = plan_of(&text);
    for i in 0..n {
        let earlier = |offset: usize| (0..i).map(|j| 4 * j + offset).collect::<Vec<_>>();
        assert_eq!(unless(&plan[4 * i]), earlier(0));
        assert_eq!(unless(&plan[4 * i + 1]), earlier(1));
        assert_eq!(plan[4 * i + 2], IncPlace::Staged);
        assert_eq!(plan[4 * i + 3], IncPlace::Staged);
    }
}
