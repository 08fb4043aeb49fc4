//! Kernel evaluations per second (the reference run) and simulated messages
//! per second (the graph simulator), each under the interpreter and the
//! compiled engine, on the airfoil example and the small shared mesh, 10
//! and 2 outer iterations.

#![allow(clippy::print_stderr)]

use std::hint::black_box;
use std::path::Path;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use op2_analysis::{Options, analyse_text};
use op2_exec::simulate::{self, simulate};
use op2_exec::{Engine, Reference, State};
use op2_instance::{NoProgress, read};

fn airfoil(iterations: u32) -> Option<(op2_analysis::Analysis, op2_instance::InstanceData)> {
    airfoil_on("airfoil_I10_J15", iterations)
}

fn airfoil_on(
    mesh: &str,
    iterations: u32,
) -> Option<(op2_analysis::Analysis, op2_instance::InstanceData)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let json = std::fs::read(root.join(format!("../shared/data/{mesh}.json"))).ok()?;
    let mut document: serde_json::Value = serde_json::from_slice(&json).ok()?;
    document["consts"]["niter"] = serde_json::json!(iterations);
    let json = serde_json::to_vec(&document).ok()?;
    let text = std::fs::read_to_string(root.join("docs/examples/airfoil.op2")).ok()?;
    let analysis = analyse_text(
        Path::new("airfoil.op2"),
        &text,
        &Options { require_main: true },
    );
    let data = read(&json, &analysis.program, &mut NoProgress).data?;
    Some((analysis, data))
}

/// Benchmarks one whole reference run of `analysis` on `data` under
/// `engine`, from a fresh state every iteration (the compiled engine's time
/// includes compiling the loops, once per run, as `op2 run` does).
fn bench_reference(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    analysis: &op2_analysis::Analysis,
    data: &op2_instance::InstanceData,
    engine: Engine,
) {
    group.bench_function(name, |b| {
        b.iter(|| {
            let mut sink = |_: &str| {};
            let state = State::new(&analysis.program, data);
            black_box(
                Reference::new(analysis, state, &mut sink)
                    .with_engine(engine)
                    .run(u64::MAX)
                    .expect("runs"),
            )
        });
    });
}

fn exec(c: &mut Criterion) {
    let Some((analysis, data)) = airfoil(10) else {
        eprintln!("SKIPPED LOUDLY: the shared airfoil mesh is missing");
        return;
    };
    // 4,120 kernel evaluations per outer iteration on this mesh.
    let evaluations = {
        let mut count = 0;
        let mut sink = |_: &str| {};
        Reference::new(&analysis, State::new(&analysis.program, &data), &mut sink)
            .with_progress(|_, evaluations| count = evaluations)
            .run(u64::MAX)
            .expect("the airfoil runs");
        count
    };
    let mut group = c.benchmark_group("reference");
    group.sample_size(10);
    group.throughput(Throughput::Elements(evaluations));
    // Both engines side by side; the compiled one's time includes
    // compiling the five loops (once per run, as `op2 run` does).
    for (engine, name) in [
        (
            Engine::Interp,
            "airfoil 10 iterations, interpreter (kernel evaluations)",
        ),
        (
            Engine::Compiled,
            "airfoil 10 iterations, compiled (kernel evaluations)",
        ),
    ] {
        bench_reference(&mut group, name, &analysis, &data, engine);
    }
    group.finish();

    let Some((analysis, data)) = airfoil(2) else {
        return;
    };
    let graph = op2_codegen::graph_type(&analysis, "airfoil");
    let mut sink = |_: &str| {};
    let (_, statistics) = simulate(
        &analysis,
        &graph,
        &data,
        simulate::Options::default(),
        &mut sink,
    )
    .expect("simulates");
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    group.throughput(Throughput::Elements(statistics.total.delivered));
    // Both engines side by side, in the same delivery order; the compiled
    // one's time includes compiling the five kernels (once per run, as
    // `op2 simulate` does).
    for (engine, name) in [
        (
            Engine::Interp,
            "airfoil 2 iterations, interpreter (messages delivered)",
        ),
        (
            Engine::Compiled,
            "airfoil 2 iterations, compiled (messages delivered)",
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut sink = |_: &str| {};
                black_box(
                    simulate(
                        &analysis,
                        &graph,
                        &data,
                        simulate::Options {
                            seed: 3,
                            engine,
                            ..Default::default()
                        },
                        &mut sink,
                    )
                    .expect("simulates"),
                )
            });
        });
    }
    group.finish();
}

/// `op2 run --threads`: the compiled engine on one and on two threads, the
/// 7,200-cell airfoil, 50 outer iterations (compiling the loops and making
/// the plans included, as `op2 run` does).
fn threads(c: &mut Criterion) {
    let Some((analysis, data)) = airfoil_on("airfoil_I40_J60", 50) else {
        eprintln!("SKIPPED LOUDLY: the shared airfoil mesh is missing");
        return;
    };
    let mut evaluations = 0;
    let mut sink = |_: &str| {};
    let reference = Reference::new(&analysis, State::new(&analysis.program, &data), &mut sink)
        .with_engine(Engine::Compiled)
        .with_threads(2);
    eprintln!("plans on 2 threads: {:?}", reference.plans());
    reference
        .with_progress(|_, e| evaluations = e)
        .run(u64::MAX)
        .expect("the airfoil runs");
    let mut group = c.benchmark_group("threads");
    group.sample_size(10);
    group.throughput(Throughput::Elements(evaluations));
    for threads in [1, 2] {
        group.bench_function(
            format!("airfoil 7200 cells 50 iterations, {threads} thread(s) (kernel evaluations)"),
            |b| {
                b.iter(|| {
                    let mut sink = |_: &str| {};
                    let state = State::new(&analysis.program, &data);
                    black_box(
                        Reference::new(&analysis, state, &mut sink)
                            .with_engine(Engine::Compiled)
                            .with_threads(threads)
                            .run(u64::MAX)
                            .expect("runs"),
                    )
                });
            },
        );
    }
    group.finish();
}

/// `main` reading a dat of `n` values: `fetch p_u into u;` against what `op2
/// import` wrote for `op_fetch_data` before the statement existed (a loop
/// zeroing the global, then a par_loop in which every element adds its
/// value into its own INC copy of the whole global).
fn fetch(c: &mut Criterion) {
    let mut group = c.benchmark_group("fetch");
    group.sample_size(10);
    for n in [1024usize, 4096] {
        let declarations =
            format!("set nodes;\n\ndat p_u: double on nodes;\n\nglobal u: double[{n}];\n\n");
        let statement = format!("{declarations}main {{\n    fetch p_u into u;\n}}\n");
        let par_loop = format!(
            "{declarations}kernel copy(const double *d, const int *i, double *h) {{\n    h[i[0]] += d[0];\n}}\n\nmain {{\n    for (int k = 0; k < {n}; k++)\n        u[k] = 0.0;\n    par_loop copy over nodes (p_u READ, idx, u INC);\n}}\n"
        );
        let values: Vec<String> = (0..n).map(|i| format!("{}.5", i % 97)).collect();
        let json = format!(
            "{{\"sets\": {{\"nodes\": {n}}}, \"dats\": {{\"p_u\": [{}]}}}}",
            values.join(", ")
        );
        group.throughput(Throughput::Elements(n as u64));
        for (text, how) in [
            (&statement, "fetch"),
            (&par_loop, "par_loop with a global INC"),
        ] {
            let analysis = analyse_text(
                Path::new("fetch.op2"),
                text,
                &Options { require_main: true },
            );
            assert!(!analysis.has_errors(), "{:?}", analysis.diagnostics);
            let data = read(json.as_bytes(), &analysis.program, &mut NoProgress)
                .data
                .expect("the instance reads");
            for (engine, engine_name) in [
                (Engine::Interp, "interpreter"),
                (Engine::Compiled, "compiled"),
            ] {
                let name = format!("{n} values, {how}, {engine_name}");
                bench_reference(&mut group, &name, &analysis, &data, engine);
            }
        }
    }
    group.finish();
}

criterion_group!(benches, exec, threads, fetch);
criterion_main!(benches);
