//! Arguments, globals, consts and locals longer than the compiled code
//! unrolls (more than 16 components: staging, storing back, `INFO` starts
//! and zeroed locals become loops in the code) run under both engines to
//! bit-identical states, and simulate alike under both engines and to the
//! reference; a `bool[65536]` dat compiles in linear time (fuzz campaign
//! seed 25, cases 5141 and 12346: minutes, and a panic in `op2 run`).

use crate::support;

use op2_analysis::value::Value;
use op2_exec::Tolerance;
use support::load;

const PROGRAM: &str = "\
set cells;
set nodes;

map c2n: cells -> nodes[2];

const weights: int[20] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4};

dat q: double[20] on cells;
dat x: float[18] on nodes;
dat acc: float[18] on nodes;
dat wide: bool[65536] on cells;

global total: double[17];
global best: int;
global g_where: int[17];

kernel mix(
    double *q,
    const float *a,
    const float *b,
    float *inc_a,
    float *inc_b,
    const int *w,
    bool *wide,
    double *total,
    int *best,
    int *at,
    const int *cell,
) {
    double scratch[30] = {1.0, 2.0};
    for (int i = 0; i < 20; i++) {
        scratch[i + 2] = q[i] * (double) w[i];
        q[i] = q[i] * 0.5 + (double) (a[i % 18] - b[(i + 3) % 18]);
    }
    for (int i = 0; i < 18; i++) {
        inc_a[i] += a[i] * 0.25f + (float) i;
        inc_b[i] -= b[i] - (float) w[i];
    }
    for (int i = 0; i < 17; i++) total[i] += scratch[i + 1] + scratch[29];
    wide[*cell * 7 + 65000] = !wide[*cell + 3];
    int score = weights[(*cell * 3) % 20] * 10 + *cell;
    if (score > *best) {
        *best = score;
        for (int i = 0; i < 17; i++) at[i] = *cell * 100 + i;
    }
}

main {
    for (int it = 0; it < 2; it++) {
        for (int i = 0; i < 17; i++) total[i] = 0.0;
        best = -1;
        par_loop mix over cells (
            q RW,
            x[c2n[0]] READ,
            x[c2n[1]] READ,
            acc[c2n[0]] INC,
            acc[c2n[1]] INC,
            weights READ,
            wide RW,
            total INC,
            best MAX,
            g_where INFO(best),
            idx,
        );
        print(\"%g %g %d %d %d\", total[0], total[16], best, g_where[0], g_where[16]);
    }
}
";

const CELLS: usize = 9;
const NODES: usize = 6;
const WEIGHTS: [i64; 20] = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4];

fn instance() -> String {
    let rows: Vec<String> = (0..CELLS)
        .map(|c| format!("[{},{}]", c % NODES, (c * 5 + 1) % NODES))
        .collect();
    let rows_of = |elements: usize, dimension: usize, value: fn(usize) -> f64| -> Vec<String> {
        (0..elements)
            .map(|e| {
                let row: Vec<String> = (0..dimension)
                    .map(|c| format!("{:?}", value(e * dimension + c)))
                    .collect();
                format!("[{}]", row.join(","))
            })
            .collect()
    };
    let x = rows_of(NODES, 18, |k| (k % 7) as f64 * 0.75 - 1.0);
    let q = rows_of(CELLS, 20, |k| (k % 11) as f64 * 0.5);
    format!(
        "{{\"sets\":{{\"cells\":{CELLS},\"nodes\":{NODES}}},\"maps\":{{\"c2n\":[{}]}},\"dats\":{{\"x\":[{}],\"q\":[{}]}}}}",
        rows.join(","),
        x.join(","),
        q.join(",")
    )
}

fn ints(values: &[Value]) -> Vec<i64> {
    values.iter().map(|v| v.as_i64().expect("an int")).collect()
}

#[test]
fn long_arguments_run_and_simulate_alike_under_both_engines() {
    let json = instance();
    let case = load("long_arrays.op2", PROGRAM, json.as_bytes());
    // Both engines, bit for bit.
    let (state, output) = case.run().expect("the reference run succeeds");
    assert_eq!(output.lines().count(), 2, "{output}");
    // The MAX and its `INFO`, by brute force: the first cell with the
    // highest score (a later equal score does not improve it).
    let score = |c: usize| WEIGHTS[(c * 3) % 20] * 10 + c as i64;
    let winner = (0..CELLS).fold(0, |w, c| if score(c) > score(w) { c } else { w });
    assert_eq!(ints(&case.global(&state, "best")), [score(winner)]);
    let expected: Vec<i64> = (0..17).map(|i| winner as i64 * 100 + i).collect();
    assert_eq!(ints(&case.global(&state, "g_where")), expected);
    // The wide dat: each cell sets its component cell*7+65000 (from
    // components below 12, never written), and nothing else.
    let wide = case
        .analysis
        .program
        .dats
        .iter()
        .position(|d| d.name == "wide")
        .expect("the dat exists");
    let set: Vec<usize> = state.dats[wide]
        .iter()
        .enumerate()
        .filter(|(_, v)| **v == Value::Bool(true))
        .map(|(k, _)| k)
        .collect();
    let expected: Vec<usize> = (0..CELLS).map(|c| c * 65_536 + c * 7 + 65_000).collect();
    assert_eq!(set, expected);
    for fan_limit in [0, 2] {
        let case = load("long_arrays.op2", PROGRAM, json.as_bytes()).with_fan_limit(fan_limit);
        for seed in [0, 5] {
            case.assert_engines_simulate_alike(seed, 10);
            case.assert_agree(
                seed,
                Tolerance {
                    relative: 0.0,
                    absolute: 0.0,
                },
            );
        }
    }
}

/// Five locals of 65,536 doubles: 2.5 MiB of arrays, more than a pool
/// thread's stack (a review found `op2 run --threads 2` and `op2 simulate`
/// dying with SIGSEGV on this shape). The compiled engine declines the
/// kernel, the interpreter runs it, and nothing else changes.
const BIG_FRAME: &str = "\
set cells;

dat q: double on cells;

kernel big(double *q) {
    double a[65536];
    double b[65536];
    double c[65536];
    double d[65536];
    double e[65536];
    a[65535] = *q;
    b[1] = a[65535] + 1.0;
    c[2] = b[1] * 2.0;
    d[3] = c[2] - 1.0;
    e[65534] = d[3] + a[7];
    *q = e[65534];
}

main {
    par_loop big over cells (q RW);
    print(\"%g\", 1.0);
}
";

#[test]
fn arrays_past_the_frame_limit_run_interpreted() {
    let json = r#"{"sets":{"cells":4},"dats":{"q":[1.5,2.5,3.5,4.5]}}"#;
    let case = load("big_frame.op2", BIG_FRAME, json.as_bytes());
    let mut output = String::new();
    let state = op2_exec::State::new(&case.analysis.program, &case.data);
    let mut sink = |text: &str| output.push_str(text);
    let reference = op2_exec::Reference::new(&case.analysis, state, &mut sink)
        .with_engine(op2_exec::Engine::Compiled)
        .with_threads(2);
    let reason = reference
        .fallback()
        .expect("the compiled engine declines")
        .to_owned();
    assert!(reason.contains("bytes of stack"), "{reason}");
    let state = reference.run(u64::MAX).expect("the interpreter runs it");
    let q = case
        .analysis
        .program
        .dats
        .iter()
        .position(|d| d.name == "q")
        .expect("the dat exists");
    let expected: Vec<Value> = [1.5, 2.5, 3.5, 4.5]
        .iter()
        .map(|x| Value::Double((x + 1.0) * 2.0 - 1.0))
        .collect();
    assert_eq!(state.dats[q], expected);
    // The simulator's compiled handlers decline it the same way.
    let (_, _, statistics) = case
        .simulate(op2_exec::simulate::Options {
            seed: 3,
            max_iterations: 10,
            ..Default::default()
        })
        .expect("the simulation runs");
    assert!(
        statistics
            .interpreted
            .iter()
            .any(|r| r.contains("bytes of stack")),
        "{:?}",
        statistics.interpreted
    );
}
