//! Conversion between JSON and OP2's HDF5 layout (`write_file`, what `op2
//! instance convert` calls): JSON → HDF5 → JSON is exact (the same values
//! bit for bit, in every scalar type; a second round gives the same bytes),
//! only what the file gave is written, and writes are atomic (a file
//! written over keeps its permission bits).

use std::path::{Path, PathBuf};

use op2_analysis::{Analysis, Options, analyse_text};
use op2_instance::{InstanceData, NoProgress, read, read_file, write_file};
use serde_json::Value as Json;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn analyse(path: &Path, text: &str) -> Analysis {
    let analysis = analyse_text(path, text, &Options::default());
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    analysis
}

fn example(name: &str) -> Analysis {
    let path = root().join("docs/examples").join(name);
    analyse(&path, &std::fs::read_to_string(&path).unwrap())
}

fn load(path: &Path, analysis: &Analysis) -> InstanceData {
    let loaded = read_file(path, &analysis.program, &mut NoProgress).unwrap();
    assert!(
        !loaded.has_errors(),
        "{}: {:#?}",
        path.display(),
        loaded.problems
    );
    loaded.data.unwrap()
}

/// Every number of `a` equals the number at the same place in `b` as a
/// double (`0` and `0.0` are the same value), everything else equal. (A
/// `float` is written with the fewest digits that give back the same
/// `float`, so this holds for originals written that way; the typed data
/// is compared exactly in every case.)
fn same_values(a: &Json, b: &Json, at: &str) {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert_eq!(x.to_bits(), y.to_bits(), "{at}: {x} != {y}");
        }
        (Json::Array(x), Json::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: lengths");
            for (k, (x, y)) in x.iter().zip(y).enumerate() {
                same_values(x, y, &format!("{at}[{k}]"));
            }
        }
        (Json::Object(x), Json::Object(y)) => {
            let keys = |o: &serde_json::Map<String, Json>| {
                let mut k: Vec<String> = o.keys().cloned().collect();
                k.sort();
                k
            };
            assert_eq!(keys(x), keys(y), "{at}: keys");
            for (key, x) in x {
                same_values(x, &y[key], &format!("{at}.{key}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// JSON → HDF5 → JSON → HDF5 → JSON for `original`, checking at each step.
fn round_trip(analysis: &Analysis, original: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let h5 = dir.path().join("mesh.h5");
    let json = dir.path().join("mesh.json");
    let (h5_again, json_again) = (dir.path().join("again.h5"), dir.path().join("again.json"));
    let program = &analysis.program;

    let first = load(original, analysis);
    write_file(&h5, program, &first).unwrap();
    assert_eq!(load(&h5, analysis), first, "HDF5 holds the same data");
    write_file(&json, program, &first).unwrap();
    let from_h5 = load(&h5, analysis);
    write_file(&json, program, &from_h5).unwrap();
    assert_eq!(load(&json, analysis), first, "and so does its JSON");

    let parse = |p: &Path| serde_json::from_slice::<Json>(&std::fs::read(p).unwrap()).unwrap();
    same_values(&parse(original), &parse(&json), "");

    write_file(&h5_again, program, &load(&json, analysis)).unwrap();
    write_file(&json_again, program, &load(&h5_again, analysis)).unwrap();
    assert_eq!(
        std::fs::read(&json).unwrap(),
        std::fs::read(&json_again).unwrap(),
        "a second round trip gives the same bytes"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".op2-"))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
}

#[test]
fn json_to_hdf5_to_json_is_exact_for_jacobi() {
    round_trip(
        &example("jacobi.op2"),
        &root().join("docs/examples/jacobi.instance.json"),
    );
}

#[test]
fn json_to_hdf5_to_json_is_exact_for_airfoil() {
    let mesh = root().join("../shared/data/airfoil_I10_J15.json");
    assert!(
        mesh.exists(),
        "the shared mesh data is missing at {}",
        mesh.display()
    );
    round_trip(&example("airfoil.op2"), &mesh);
}

const TYPES: &str = "
set cells;
set nodes;
map corners: cells -> nodes[3];
dat p_d: double[2] on cells;
dat p_f: float on cells;
dat p_i: int on nodes;
dat p_u: uint on nodes;
dat p_l: ll[2] on nodes;
dat p_ul: ull on nodes;
dat p_b: bool on cells;
dat p_unset: double on cells;
const c_f: float[2];
const c_given: double = 1.0;
const c_kept: int = 3;
global g_b: bool;
global g_l: ll;
";

const TYPES_JSON: &str = r#"{
  "sets": { "cells": 2, "nodes": 3 },
  "maps": { "corners": [[0, 1, 2], [2, 1, 0]] },
  "dats": {
    "p_d": [[0.1, -1e-300], [1.7976931348623157e308, 5e-324]],
    "p_f": [0.1, 3.4028235e38],
    "p_i": [-2147483648, 2147483647, 0],
    "p_u": [4294967295, 0, 1],
    "p_l": [[-9223372036854775808, 9223372036854775807], [1, 2], [3, 4]],
    "p_ul": [18446744073709551615, 0, 7],
    "p_b": [true, false]
  },
  "consts": { "c_f": [0.2, 1.1754944e-38], "c_given": 0 },
  "globals": { "g_b": true, "g_l": -5 }
}"#;

#[test]
fn every_scalar_type_survives_the_round_trip_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let program_path = dir.path().join("types.op2");
    let analysis = analyse(&program_path, TYPES);
    let original = dir.path().join("types.json");
    std::fs::write(&original, TYPES_JSON).unwrap();
    round_trip(&analysis, &original);

    // Only what the file gave is written: no initialiser, no kept const.
    let data = read(TYPES_JSON.as_bytes(), &analysis.program, &mut NoProgress)
        .data
        .unwrap();
    let out = dir.path().join("out.json");
    write_file(&out, &analysis.program, &data).unwrap();
    let written: Json = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(written["dats"].get("p_unset").is_none(), "{written}");
    assert!(written["consts"].get("c_kept").is_none(), "{written}");
    // In the declared type: `0` for a double const is written `0.0`.
    assert_eq!(written["consts"]["c_given"].to_string(), "0.0");
}

#[test]
fn a_write_into_a_missing_directory_or_over_a_directory_fails_and_leaves_nothing() {
    let analysis = example("jacobi.op2");
    let data = load(
        &root().join("docs/examples/jacobi.instance.json"),
        &analysis,
    );
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/mesh.h5");
    let error = write_file(&missing, &analysis.program, &data).unwrap_err();
    assert!(error.to_string().contains("does not exist"), "{error}");
    let error = write_file(dir.path(), &analysis.program, &data).unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "{error}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[cfg(unix)]
#[test]
fn a_file_written_over_keeps_its_permission_bits() {
    use std::os::unix::fs::PermissionsExt;
    let analysis = analyse(
        Path::new("p.op2"),
        "set s;\ndat x: double on s;\nkernel k(double *v) { v[0] = 1.0; }\nmain { par_loop k over s (x WRITE); }\n",
    );
    let directory = tempfile::tempdir().unwrap();
    let source = directory.path().join("mesh.json");
    std::fs::write(
        &source,
        r#"{"sets": {"s": 2}, "dats": {"x": [[1.0], [2.0]]}}"#,
    )
    .unwrap();
    let data = load(&source, &analysis);
    for name in ["mesh.h5", "copy.json"] {
        let path = directory.path().join(name);
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_file(&path, &analysis.program, &data).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}");
        // A new file is an ordinary output.
        let new = directory.path().join(format!("new-{name}"));
        write_file(&new, &analysis.program, &data).unwrap();
        let mode = std::fs::metadata(&new).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "new {name}");
    }
}
