//! Reading, validating and writing the graph instance of an airfoil-like
//! mesh of about a million cells (budget: a 1,000,000-element mesh in under
//! 5 s and 2 GB, architecture.md), from JSON bytes in memory to XML bytes
//! counted by a sink. Prints the peak resident memory after one run.
//!
//! `OP2_BENCH_CELLS_SIDE` overrides the side of the square mesh (1000).

#![allow(clippy::print_stderr, clippy::cast_precision_loss)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::{self, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use op2_analysis::{Options, analyse_text};
use op2_codegen::instance::GraphInstance;
use op2_codegen::output::InstanceWriter;
use op2_instance::{self as instance, NoProgress, Phase, Progress};

/// An airfoil-like instance: a structured `side × side` quad mesh with
/// interior edges, boundary edges on all four sides (wall below, far field
/// elsewhere), node coordinates and the free stream. Written into one string
/// so that the peak memory reported is mostly the build's.
fn mesh(side: usize) -> String {
    let (ni, nj) = (side, side);
    let node = |i: usize, j: usize| j * (ni + 1) + i;
    let cell = |i: usize, j: usize| j * ni + i;
    let nodes = (ni + 1) * (nj + 1);
    let cells = ni * nj;
    let edges = (ni - 1) * nj + ni * (nj - 1);
    let bedges = 2 * (ni + nj);
    let mut out = String::with_capacity(cells * 140);
    let _ = write!(
        out,
        "{{\"sets\":{{\"nodes\":{nodes},\"edges\":{edges},\"bedges\":{bedges},\"cells\":{cells}}},\"maps\":{{"
    );
    // Interior edges: the side shared with the cell to the right, and with
    // the cell above; first their nodes, then their cells.
    for (key, of_cells) in [("pedge", false), ("pecell", true)] {
        let _ = write!(out, "\"{key}\":[");
        let mut sep = "";
        for j in 0..nj {
            for i in 0..ni {
                if i + 1 < ni {
                    let (a, b) = if of_cells {
                        (cell(i, j), cell(i + 1, j))
                    } else {
                        (node(i + 1, j), node(i + 1, j + 1))
                    };
                    let _ = write!(out, "{sep}[{a},{b}]");
                    sep = ",";
                }
                if j + 1 < nj {
                    let (a, b) = if of_cells {
                        (cell(i, j), cell(i, j + 1))
                    } else {
                        (node(i + 1, j + 1), node(i, j + 1))
                    };
                    let _ = write!(out, "{sep}[{a},{b}]");
                    sep = ",";
                }
            }
        }
        out.push_str("],");
    }
    // Boundary edges: nodes, cell inside, kind (1 wall, 2 far field).
    let mut boundary = Vec::with_capacity(bedges);
    for i in 0..ni {
        boundary.push((node(i, 0), node(i + 1, 0), cell(i, 0), 1));
        boundary.push((node(i + 1, nj), node(i, nj), cell(i, nj - 1), 2));
    }
    for j in 0..nj {
        boundary.push((node(0, j + 1), node(0, j), cell(0, j), 2));
        boundary.push((node(ni, j), node(ni, j + 1), cell(ni - 1, j), 2));
    }
    type Render<'a> = &'a dyn Fn(&(usize, usize, usize, u8)) -> String;
    let list = |out: &mut String, key: &str, item: Render<'_>| {
        let items: Vec<String> = boundary.iter().map(item).collect();
        let _ = write!(out, "\"{key}\":[{}]", items.join(","));
    };
    list(&mut out, "pbedge", &|(a, b, _, _)| format!("[{a},{b}]"));
    out.push(',');
    list(&mut out, "pbecell", &|(_, _, c, _)| format!("[{c}]"));
    out.push_str(",\"pcell\":[");
    for j in 0..nj {
        for i in 0..ni {
            let sep = if i == 0 && j == 0 { "" } else { "," };
            let _ = write!(
                out,
                "{sep}[{},{},{},{}]",
                node(i, j),
                node(i + 1, j),
                node(i + 1, j + 1),
                node(i, j + 1)
            );
        }
    }
    out.push_str("]},\"dats\":{\"p_x\":[");
    for j in 0..=nj {
        for i in 0..=ni {
            let sep = if i == 0 && j == 0 { "" } else { "," };
            // Full-precision coordinates, as a real mesh has.
            let (px, py) = (
                -2.0 + 4.0 * i as f64 / ni as f64 + 1e-3 * (j as f64).sin(),
                2.0 * j as f64 / nj as f64 + 1e-3 * (i as f64).cos(),
            );
            let _ = write!(out, "{sep}[{px:?},{py:?}]");
        }
    }
    out.push_str("],");
    list(&mut out, "p_bound", &|(_, _, _, kind)| kind.to_string());
    out.push_str("},\"consts\":{\"qinf\":[1.0,0.4732863856704763,0.0,2.612000150442132]}}");
    out
}

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
    let mut writer = GraphInstance::new(&analysis.program, &data, progress);
    let (devices, edges) = writer
        .write(&mut out, graph)
        .expect("the instance is written");
    op2_codegen::xml::write_end(&mut out).expect("a sink accepts everything");
    (devices, edges, out.0)
}

/// Peak resident memory of this process so far, from `/proc/self/status`.
fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn instance(c: &mut Criterion) {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/airfoil.op2"
    ));
    let text = std::fs::read_to_string(path).expect("the airfoil example exists");
    let analysis = analyse_text(path, &text, &Options { require_main: true });
    assert!(!analysis.has_errors());
    let graph = op2_codegen::graph_type(&analysis, "airfoil");
    let side = std::env::var("OP2_BENCH_CELLS_SIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let json = mesh(side);
    eprintln!(
        "airfoil-like mesh {side}x{side}: {} cells, {:.1} MB of JSON; peak memory after generating it: {}",
        side * side,
        json.len() as f64 / 1e6,
        peak_memory()
    );
    let start = Instant::now();
    let mut timing = Timing::default();
    let (devices, edges, bytes) = build(json.as_bytes(), &analysis, &graph, &mut timing);
    eprintln!(
        "one run: {devices} devices, {edges} edges, {:.1} MB of XML in {:.2?}; peak memory (VmHWM): {}",
        bytes as f64 / 1e6,
        start.elapsed(),
        peak_memory()
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
    group.finish();
}

criterion_group!(benches, instance);
criterion_main!(benches);
