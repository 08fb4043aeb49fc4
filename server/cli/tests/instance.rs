//! OP2's HDF5 meshes end to end: `op2 instance convert` and `check`, `op2
//! run` giving the same output from the JSON and the HDF5 form of a mesh
//! (converted here, and written by h5py in OP2's layout), and `--final-state
//! X.h5` read back with OP2's names and shapes.

use crate::support;

use std::path::{Path, PathBuf};

use op2_analysis::{Options, analyse_text};
use op2_instance::{DatValues, NoProgress, read_file, read_file_in_child, read_file_using};
use support::Scratch;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example(name: &str) -> String {
    root()
        .join("docs/examples")
        .join(name)
        .display()
        .to_string()
}

fn airfoil_mesh() -> String {
    let mesh = root().join("../shared/data/airfoil_I10_J15.json");
    assert!(
        mesh.exists(),
        "the shared mesh data is missing at {}",
        mesh.display()
    );
    mesh.display().to_string()
}

/// `op2 ARGS…` in `scratch`, which must succeed; its standard output.
fn ok(scratch: &Scratch, args: &[&str]) -> String {
    let output = scratch.op2(args).output().unwrap();
    assert!(
        output.status.success(),
        "op2 {args:?}:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// `op2 run PROGRAM --instance MESH --final-state FINAL`; its output.
fn run_to(scratch: &Scratch, program: &str, mesh: &str, fin: &str) -> String {
    ok(
        scratch,
        &["run", program, "--instance", mesh, "--final-state", fin],
    )
}

/// `op2 run` of `program` on the JSON mesh and on its HDF5 conversion give
/// the same output and the same final state.
fn same_run(program: &str, json: &str) {
    let scratch = Scratch::new();
    let converted = ok(
        &scratch,
        &["instance", "convert", json, "mesh.h5", "--program", program],
    );
    assert!(converted.contains("OP2's HDF5 layout"), "{converted}");
    let from_json = run_to(&scratch, program, json, "json.json");
    let from_h5 = run_to(&scratch, program, "mesh.h5", "h5.json");
    assert!(!from_json.trim().is_empty(), "{program} printed nothing");
    assert_eq!(from_json, from_h5, "{program}: output");
    let read = |name: &str| std::fs::read(scratch.path(name)).unwrap();
    assert_eq!(read("json.json"), read("h5.json"), "{program}: final state");
}

#[test]
fn run_gives_the_same_output_from_json_and_converted_hdf5() {
    same_run(&example("jacobi.op2"), &example("jacobi.instance.json"));
    same_run(&example("airfoil.op2"), &airfoil_mesh());
}

#[test]
fn run_gives_the_same_output_from_an_h5py_file_in_op2_layout() {
    let scratch = Scratch::new();
    let program = example("jacobi.op2");
    let fixture = root().join("server/instance/tests/fixtures/jacobi.h5");
    let fixture = fixture.display().to_string();
    let from_json = ok(
        &scratch,
        &[
            "run",
            &program,
            "--instance",
            &example("jacobi.instance.json"),
        ],
    );
    let from_h5 = ok(&scratch, &["run", &program, "--instance", &fixture]);
    assert_eq!(from_json, from_h5);
}

#[test]
fn a_final_state_in_hdf5_has_op2s_names_and_shapes() {
    let scratch = Scratch::new();
    let program = example("airfoil.op2");
    let mesh = airfoil_mesh();
    run_to(&scratch, &program, &mesh, "final.h5");
    let file = hdf5::File::open(scratch.path("final.h5")).unwrap();
    let shape = |name: &str| file.dataset(name).unwrap().shape();
    // Sets hold their sizes, maps and dats a row per element.
    for (set, size) in [
        ("nodes", 496),
        ("edges", 865),
        ("bedges", 70),
        ("cells", 450),
    ] {
        assert_eq!(shape(set), [1], "{set}");
        let value = file.dataset(set).unwrap().read_raw::<i32>().unwrap();
        assert_eq!(value, [size], "{set}");
    }
    for (name, rows, dim) in [
        ("pedge", 865, 2),
        ("pecell", 865, 2),
        ("pcell", 450, 4),
        ("p_x", 496, 2),
        ("p_q", 450, 4),
        ("p_adt", 450, 1),
        ("p_bound", 70, 1),
    ] {
        assert_eq!(shape(name), [rows, dim], "{name}");
        let dataset = file.dataset(name).unwrap();
        let attr = |a: &str| dataset.attr(a).unwrap().read_raw::<i32>().unwrap();
        assert_eq!(attr("dim"), [dim as i32], "{name}");
    }
    let type_of = |name: &str| {
        let attr = file.dataset(name).unwrap().attr("type").unwrap();
        let text = attr.read_scalar::<hdf5::types::FixedAscii<32>>().unwrap();
        text.as_str().trim_end_matches('\0').to_owned()
    };
    assert_eq!(type_of("p_q"), "double");
    assert_eq!(type_of("pedge"), "int");
    assert_eq!(shape("rms"), [1]);

    // And it reads back as instance data whose dats are those of the run's
    // JSON final state.
    run_to(&scratch, &program, &mesh, "final.json");
    let path = Path::new(&program);
    let analysis = analyse_text(
        path,
        &std::fs::read_to_string(path).unwrap(),
        &Options::default(),
    );
    let loaded = read_file(
        &scratch.path("final.h5"),
        &analysis.program,
        &mut NoProgress,
    )
    .unwrap();
    assert!(!loaded.has_errors(), "{:#?}", loaded.problems);
    let data = loaded.data.unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(scratch.path("final.json")).unwrap()).unwrap();
    for (index, dat) in analysis.program.dats.iter().enumerate() {
        let DatValues::Given(column) = &data.dats[index] else {
            panic!("dat `{}` is in the final state", dat.name);
        };
        let flat: Vec<f64> = match &json["dats"][&dat.name] {
            serde_json::Value::Array(rows) => rows
                .iter()
                .flat_map(|row| match row {
                    serde_json::Value::Array(values) => values.clone(),
                    value => vec![value.clone()],
                })
                .map(|v| v.as_f64().unwrap())
                .collect(),
            other => panic!("dat `{}` in final.json: {other}", dat.name),
        };
        assert_eq!(column.len(), flat.len(), "{}", dat.name);
        for (k, &expected) in flat.iter().enumerate() {
            let op2_analysis::value::Value::Double(got) =
                column.get(k).convert(op2_syntax::ast::ScalarType::Double)
            else {
                unreachable!()
            };
            assert_eq!(got.to_bits(), expected.to_bits(), "{}[{k}]", dat.name);
        }
    }
}

#[test]
fn check_names_every_missing_or_mismatched_entry() {
    let scratch = Scratch::new();
    let program = example("airfoil.op2");
    ok(
        &scratch,
        &[
            "instance",
            "convert",
            &airfoil_mesh(),
            "mesh.h5",
            "--program",
            &program,
        ],
    );
    let fits = ok(&scratch, &["instance", "check", &program, "mesh.h5"]);
    assert!(fits.contains("`mesh.h5` fits"), "{fits}");
    assert!(fits.contains("4 sets, 5 maps"), "{fits}");

    // A JSON mesh of another program: every set and map the program needs
    // is named, and what it does not declare is warned about.
    let output = scratch
        .op2(&[
            "instance",
            "check",
            &program,
            &example("jacobi.instance.json"),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "error[E701]",
        "sets.cells: the size of set `cells` is missing",
        "maps.pedge: the targets of map `pedge` are missing",
        "maps.pcell: the targets of map `pcell` are missing",
        "warning[W705]",
        "dats.p_w: the program declares no dat `p_w`",
        "does not fit",
    ] {
        assert!(stderr.contains(expected), "{expected:?} in:\n{stderr}");
    }

    // The h5py fixture with a wrong dim names the dataset.
    let wrong = root().join("server/instance/tests/fixtures/wrong_dim.h5");
    let output = scratch
        .op2(&[
            "instance",
            "check",
            &example("jacobi.op2"),
            &wrong.display().to_string(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(": /ends: "), "{stderr}");
}

#[test]
fn convert_writes_nothing_when_the_data_has_errors_or_the_directory_is_missing() {
    let scratch = Scratch::new();
    let airfoil = example("airfoil.op2");
    let output = scratch
        .op2(&[
            "instance",
            "convert",
            &example("jacobi.instance.json"),
            "out.h5",
            "--program",
            &airfoil,
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nothing written to `out.h5`"), "{stderr}");
    assert!(!scratch.path("out.h5").exists());

    let output = scratch
        .op2(&[
            "instance",
            "convert",
            &example("jacobi.instance.json"),
            "missing/out.h5",
            "--program",
            &example("jacobi.op2"),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot write `missing/out.h5`: the directory `missing` does not exist"),
        "{stderr}"
    );
}

/// A mesh whose HDF5 metadata is damaged (two bytes of a file `op2 instance
/// convert` wrote: a layout message's version, 3 to 2, and an address):
/// `op2 instance check` must say so and end with status 1.
#[test]
fn a_damaged_hdf5_file_is_an_error_not_a_crash() {
    let damaged = root().join("server/instance/tests/fixtures/damaged/layout-version.h5");
    let output = support::op2()
        .args(["instance", "check", &example("jacobi.op2")])
        .arg(&damaged)
        .output()
        .expect("op2 runs");
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("E701")
            && stderr.contains("the HDF5 library failed reading this file")
            && stderr.contains("layout-version.h5"),
        "{stderr}"
    );
}

/// Reads `file` for `program` (a path under docs/examples) in this process
/// and in a child running the built `op2` as the HDF5 reader: the problems
/// and the data must be the same.
fn same_in_child_and_in_process(program: &str, file: &Path) {
    let path = PathBuf::from(program);
    let text = std::fs::read_to_string(&path).unwrap();
    let analysis = analyse_text(&path, &text, &Options { require_main: true });
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    let reader = PathBuf::from(env!("CARGO_BIN_EXE_op2"));
    let here = read_file_using(file, &analysis.program, &mut NoProgress, None).unwrap();
    let child = read_file_using(file, &analysis.program, &mut NoProgress, Some(&reader)).unwrap();
    assert_eq!(here.problems, child.problems, "{}", file.display());
    assert_eq!(here.data, child.data, "{}", file.display());
    assert!(
        !child
            .problems
            .iter()
            .any(|p| p.message.contains("the HDF5 library failed")),
        "{}: {:#?}",
        file.display(),
        child.problems
    );
}

/// Every HDF5 fixture (good and wrong in each way the tests of the
/// instance crate know), a converted airfoil mesh, and a file with more
/// problems than are shown (the summary counts those not shown): the child
/// process reads them exactly as the in-process reader does.
#[test]
fn hdf5_files_read_in_a_child_give_what_they_give_in_process() {
    let fixtures = root().join("server/instance/tests/fixtures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "h5"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for file in &files {
        same_in_child_and_in_process(&example("jacobi.op2"), file);
    }

    let scratch = Scratch::new();
    let program = example("airfoil.op2");
    let json = airfoil_mesh();
    ok(
        &scratch,
        &[
            "instance",
            "convert",
            &json,
            "mesh.h5",
            "--program",
            &program,
        ],
    );
    same_in_child_and_in_process(&program, &scratch.path("mesh.h5"));

    // 80 values that are not finite: 50 shown, 30 counted in a summary.
    let many = scratch.path("many.h5");
    std::fs::copy(fixtures.join("jacobi.h5"), &many).unwrap();
    {
        let file = hdf5::File::open_rw(&many).unwrap();
        file.new_dataset::<f64>()
            .shape([80])
            .create("p_u")
            .unwrap()
            .write_raw(&[f64::NAN; 80])
            .unwrap();
    }
    same_in_child_and_in_process(&example("jacobi.op2"), &many);
    let text = std::fs::read_to_string(example("jacobi.op2")).unwrap();
    let path = PathBuf::from(example("jacobi.op2"));
    let analysis = analyse_text(&path, &text, &Options { require_main: true });
    let reader = PathBuf::from(env!("CARGO_BIN_EXE_op2"));
    let loaded = read_file_using(&many, &analysis.program, &mut NoProgress, Some(&reader)).unwrap();
    assert!(
        loaded
            .problems
            .iter()
            .any(|p| p.message.starts_with("30 more problems like the 50 above")),
        "{:#?}",
        loaded.problems
    );
}

/// The reader process limits its own address space to what it is given:
/// a mesh that needs more (a dat of 2^26 doubles, half a gigabyte, in
/// chunks never written: a file of a few kilobytes) ends as an E701 of the
/// file that says so, where a reader without the limit reads it all. A
/// small mesh reads under the same limit, so the limit is what stops the
/// large one.
#[test]
fn the_hdf5_reader_process_keeps_to_its_memory_limit() {
    let path = PathBuf::from("limit.op2");
    let text = "set s;\ndat x: double[4] on s;\nkernel k(double *v) { v[0] = 1.0; }\nmain { par_loop k over s (x WRITE); }\n";
    let analysis = analyse_text(&path, text, &Options { require_main: true });
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    let reader = PathBuf::from(env!("CARGO_BIN_EXE_op2"));
    let limit = 256 << 20;
    let scratch = Scratch::new();
    let mesh = |name: &str, rows: usize| {
        let path = scratch.path(name);
        let file = hdf5::File::create(&path).unwrap();
        file.new_dataset_builder()
            .with_data(&[rows as i32])
            .create("s")
            .unwrap();
        file.new_dataset::<f64>()
            .shape([rows, 4])
            .chunk([rows.min(4096), 4])
            .create("x")
            .unwrap();
        file.close().unwrap();
        path
    };

    let small = mesh("small.h5", 3);
    let loaded =
        read_file_in_child(&small, &analysis.program, &mut NoProgress, &reader, limit).unwrap();
    assert!(loaded.data.is_some(), "{:#?}", loaded.problems);

    let large = mesh("large.h5", 1 << 24);
    assert!(std::fs::metadata(&large).unwrap().len() < 1 << 16);
    let loaded =
        read_file_in_child(&large, &analysis.program, &mut NoProgress, &reader, limit).unwrap();
    assert!(loaded.data.is_none(), "{:#?}", loaded.problems);
    assert_eq!(loaded.problems.len(), 1, "{:#?}", loaded.problems);
    assert_eq!(loaded.problems[0].code, op2_syntax::Code::E701);
    assert!(
        loaded.problems[0].message.starts_with(
            "the HDF5 library failed reading this file: the reader process ran out of its memory limit of 256 MiB (memory allocation of "
        ),
        "{:#?}",
        loaded.problems
    );
}

/// `op2 run` and `op2 simulate` print the instance data's problems as
/// `op2 build` and `op2 instance check` do: severity, code, JSON path and
/// where the program declares what the path names.
#[test]
fn run_and_simulate_print_instance_problems_with_their_codes() {
    let scratch = Scratch::new();
    let mut mesh: serde_json::Value =
        serde_json::from_slice(&std::fs::read(example("dot_product.instance.json")).unwrap())
            .unwrap();
    mesh["sets"]["zzz"] = serde_json::json!(3);
    scratch.file("extra.json", serde_json::to_vec(&mesh).unwrap());
    let first = mesh["sets"]
        .as_object()
        .and_then(|sets| sets.keys().find(|k| *k != "zzz").cloned())
        .unwrap();
    mesh["sets"].as_object_mut().unwrap().remove(&first);
    scratch.file("bad.json", serde_json::to_vec(&mesh).unwrap());
    let program = example("dot_product.op2");
    for command in ["run", "simulate"] {
        scratch
            .op2(&[command, &program, "--instance", "extra.json"])
            .assert()
            .success()
            .stderr(predicates::str::contains(
                "warning[W705]: extra.json: sets.zzz: the program declares no set `zzz`",
            ));
        scratch
            .op2(&[command, &program, "--instance", "bad.json"])
            .assert()
            .code(1)
            .stderr(predicates::str::contains(format!(
                "error[E701]: bad.json: sets.{first}: the size of set `{first}` is missing"
            )))
            .stderr(predicates::str::contains("--> "))
            .stderr(predicates::str::contains(
                "error: `bad.json` has errors; nothing was run",
            ));
    }
}
