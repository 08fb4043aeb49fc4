//! Reading and validating instance data from a file: the same airfoil-like
//! mesh as JSON and in OP2's HDF5 layout, through `read_file`, the function
//! `op2 run`, `simulate`, `build` and the language server call. Page cache
//! warm (each file is read once before timing).
//!
//! `OP2_BENCH_CELLS_SIDE` sets the side of the square mesh (300: 90,000
//! cells). Peak memory is per process, so it is measured apart, with the
//! `instance_file` example (docs/benchmarks.md).

#![allow(clippy::print_stderr, clippy::cast_precision_loss)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use op2_instance::{self as instance, NoProgress};

fn read(c: &mut Criterion) {
    let analysis = instance::synth::airfoil_example();
    assert!(!analysis.has_errors());
    let program = &analysis.program;
    let side = std::env::var("OP2_BENCH_CELLS_SIDE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let json = dir.path().join("mesh.json");
    let hdf5 = dir.path().join("mesh.h5");
    std::fs::write(&json, instance::synth::airfoil_like(side)).expect("the JSON is written");
    let data = instance::read_file(&json, program, &mut NoProgress)
        .expect("the JSON is read")
        .data
        .expect("the generated mesh is valid");
    instance::write_file(&hdf5, program, &data).expect("the HDF5 is written");
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |m| m.len()) as f64 / 1e6;
    eprintln!(
        "airfoil-like mesh {side}x{side} ({} cells): {:.1} MB of JSON, {:.1} MB of HDF5",
        side * side,
        size(&json),
        size(&hdf5)
    );

    let mut group = c.benchmark_group(format!("read_file airfoil {side}x{side}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10));
    for (name, file) in [("json", &json), ("hdf5", &hdf5)] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let loaded = instance::read_file(black_box(file), program, &mut NoProgress)
                    .expect("the file is read");
                assert!(loaded.data.is_some());
                black_box(loaded)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
