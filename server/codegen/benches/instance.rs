//! Reading, validating and writing the graph instance of an airfoil-like
//! mesh of about a million cells (budget: a 1,000,000-element mesh in under
//! 5 s and 2 GB, architecture.md), from JSON bytes in memory to XML bytes
//! counted by a sink. Prints the peak resident memory after one run.
//!
//! `OP2_BENCH_CELLS_SIDE` overrides the side of the square mesh (1000).

#![allow(clippy::print_stderr, clippy::cast_precision_loss)]

use std::hint::black_box;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use op2_codegen::instance::GraphInstance;
use op2_codegen::output::InstanceWriter;
use op2_instance::{self as instance, NoProgress, Phase, Progress};

/// Counts what it is given.
#[derive(Default)]
struct Counting(u64);

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Times the phases.
#[derive(Default)]
struct Timing {
    current: Option<(Phase, Instant)>,
    phases: Vec<(Phase, Duration)>,
}

impl Progress for Timing {
    fn start(&mut self, phase: Phase, _total: Option<u64>) {
        self.finish();
        self.current = Some((phase, Instant::now()));
    }

    fn advance(&mut self, _amount: u64) {}

    fn finish(&mut self) {
        if let Some((phase, start)) = self.current.take() {
            self.phases.push((phase, start.elapsed()));
        }
    }
}

/// Reads, validates and writes; returns devices, edges and bytes.
fn build(
    json: &[u8],
    analysis: &op2_analysis::Analysis,
    graph: &op2_codegen::GraphType,
    progress: &mut dyn Progress,
) -> (u64, u64, u64) {
    let loaded = instance::read(json, &analysis.program, progress);
    let data = loaded.data.expect("the generated instance is valid");
    let mut out = Counting::default();
    op2_codegen::xml::write_graph_type(&mut out, graph).expect("a sink accepts everything");
    let mut writer = GraphInstance::new(analysis.lowered(), &data, progress);
    let (devices, edges) = writer
        .write(&mut out, graph)
        .expect("the instance is written");
    op2_codegen::xml::write_end(&mut out).expect("a sink accepts everything");
    (devices, edges, out.0)
}

fn instance(c: &mut Criterion) {
    let analysis = instance::synth::airfoil_example();
    assert!(!analysis.has_errors());
    let graph = op2_codegen::graph_type(&analysis, "airfoil");
    let side = std::env::var("OP2_BENCH_CELLS_SIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let json = instance::synth::airfoil_like(side);
    eprintln!(
        "airfoil-like mesh {side}x{side}: {} cells, {:.1} MB of JSON; peak memory after generating it: {}",
        side * side,
        json.len() as f64 / 1e6,
        instance::synth::peak_memory()
    );
    let start = Instant::now();
    let mut timing = Timing::default();
    let (devices, edges, bytes) = build(json.as_bytes(), &analysis, &graph, &mut timing);
    eprintln!(
        "one run: {devices} devices, {edges} edges, {:.1} MB of XML in {:.2?}; peak memory (VmHWM): {}",
        bytes as f64 / 1e6,
        start.elapsed(),
        instance::synth::peak_memory()
    );
    for (phase, time) in &timing.phases {
        eprintln!("  {:>16}: {time:.2?}", phase.label());
    }

    let mut group = c.benchmark_group("instance");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(40));
    group.bench_function(
        format!("airfoil {side}x{side} read, validate, write"),
        |b| {
            b.iter(|| {
                black_box(build(
                    black_box(json.as_bytes()),
                    &analysis,
                    &graph,
                    &mut NoProgress,
                ))
            });
        },
    );
    // The fan check `op2 build` runs before writing (W801/E802 per pin):
    // one more pass over the same edges, side by side with the build.
    let data = instance::read(json.as_bytes(), &analysis.program, &mut NoProgress)
        .data
        .expect("the generated instance is valid");
    group.bench_function(format!("airfoil {side}x{side} fan check"), |b| {
        b.iter(|| {
            black_box(op2_codegen::limits::check_instance(
                analysis.lowered(),
                &graph,
                black_box(&data),
            ))
        });
    });
    group.finish();
}

criterion_group!(benches, instance);
criterion_main!(benches);
