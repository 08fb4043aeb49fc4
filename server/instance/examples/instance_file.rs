//! The peak-memory harness of docs/benchmarks.md ("Instance data"): one
//! process per measurement, run under `/usr/bin/time`.
//!
//! `instance_file write SIDE DIR`: writes the airfoil-like mesh of
//! `synth::airfoil_like(SIDE)` as `DIR/mesh.json` and `DIR/mesh.h5`.
//! `instance_file read FILE`: reads and validates FILE for
//! `docs/examples/airfoil.op2` with `read_file`, and prints the time and the
//! peak resident memory (`VmHWM`) before and after.
//! `instance_file naca I J DIR`: writes OP2's NACA0012 airfoil mesh of
//! `naca::naca0012(I, J)` as `DIR/airfoil_I{I}_J{J}.json` and as OP2's
//! `DIR/new_grid.dat`, for side-by-side runs against OP2's applications
//! (docs/benchmarks.md, "Execution").

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use op2_instance::{self as instance, NoProgress};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let analysis = instance::synth::airfoil_example();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["write", side, dir] => {
            let side: usize = side.parse().expect("SIDE is a number");
            let dir = PathBuf::from(dir);
            let json = dir.join("mesh.json");
            std::fs::write(&json, instance::synth::airfoil_like(side)).expect("JSON written");
            let data = instance::read_file(&json, &analysis.program, &mut NoProgress)
                .expect("JSON read")
                .data
                .expect("the mesh is valid");
            instance::write_file(&dir.join("mesh.h5"), &analysis.program, &data)
                .expect("HDF5 written");
            println!("wrote {} and mesh.h5", json.display());
            ExitCode::SUCCESS
        }
        ["read", file] => {
            let before = instance::synth::peak_memory();
            let start = Instant::now();
            let loaded = instance::read_file(Path::new(file), &analysis.program, &mut NoProgress)
                .expect("the file is read");
            let elapsed = start.elapsed();
            let elements = loaded
                .data
                .as_ref()
                .map_or(0, instance::InstanceData::elements);
            println!(
                "{file}: {elements} elements in {elapsed:.2?}; peak memory before {before}, after {}",
                instance::synth::peak_memory()
            );
            ExitCode::from(u8::from(loaded.data.is_none()))
        }
        ["naca", i, j, dir] => {
            let (i, j): (usize, usize) = (i.parse().expect("I"), j.parse().expect("J"));
            let mesh = instance::naca::naca0012(i, j).expect("I and J in range");
            let dir = PathBuf::from(dir);
            let json = dir.join(format!("airfoil_I{i}_J{j}.json"));
            std::fs::write(&json, mesh.to_json()).expect("JSON written");
            std::fs::write(dir.join("new_grid.dat"), mesh.to_op2_dat())
                .expect("new_grid.dat written");
            println!(
                "wrote {} and new_grid.dat ({} cells)",
                json.display(),
                mesh.cells.len()
            );
            ExitCode::SUCCESS
        }
        _ => {
            println!(
                "usage: instance_file write SIDE DIR | instance_file read FILE | instance_file naca I J DIR"
            );
            ExitCode::from(2)
        }
    }
}
