//! OP2's HDF5 layout: the files of `tests/fixtures` were written by h5py in
//! OP2's layout (`fixtures/make_h5.py`, from the Jacobi example's JSON);
//! the same mesh read from HDF5 and JSON gives the same data, every error
//! names its dataset (and row), and final states written here read back.

use std::path::{Path, PathBuf};

use op2_analysis::{Analysis, Options, analyse_text};
use op2_instance::{Format, InstanceData, Loaded, NoProgress, read, read_file, write_state};
use op2_syntax::{Code, Severity};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn jacobi() -> Analysis {
    let path = root().join("docs/examples/jacobi.op2");
    let text = std::fs::read_to_string(&path).unwrap();
    let analysis = analyse_text(&path, &text, &Options { require_main: true });
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    analysis
}

fn from_json(analysis: &Analysis) -> InstanceData {
    let json = std::fs::read(root().join("docs/examples/jacobi.instance.json")).unwrap();
    let loaded = read(&json, &analysis.program, &mut NoProgress);
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    loaded.data.unwrap()
}

fn load(analysis: &Analysis, name: &str) -> Loaded {
    read_file(&fixture(name), &analysis.program, &mut NoProgress).unwrap()
}

/// The one error of `loaded`, which must have `code` and `path` and a
/// message containing `words`.
fn assert_error(loaded: &Loaded, code: Code, path: &str, words: &str) {
    assert!(loaded.data.is_none(), "{:#?}", loaded.problems);
    let found = loaded
        .problems
        .iter()
        .find(|p| p.code == code && p.path == path)
        .unwrap_or_else(|| panic!("no {code:?} at {path}: {:#?}", loaded.problems));
    assert!(
        found.message.contains(words),
        "{code:?} at {path}: {:?} lacks {words:?}",
        found.message
    );
    assert_eq!(found.severity(), Severity::Error);
}

#[test]
fn formats_are_told_apart_by_content() {
    assert_eq!(
        Format::of_file(&fixture("jacobi.h5")).unwrap(),
        Format::Hdf5
    );
    assert_eq!(
        Format::of_file(&root().join("docs/examples/jacobi.instance.json")).unwrap(),
        Format::Json
    );
    // A copy of the HDF5 file under a JSON name is still HDF5.
    let directory = tempfile::tempdir().unwrap();
    let renamed = directory.path().join("mesh.json");
    std::fs::copy(fixture("jacobi.h5"), &renamed).unwrap();
    assert_eq!(Format::of_file(&renamed).unwrap(), Format::Hdf5);
}

/// A writer's exclusive lock on the file, held by another open of it (as
/// every process started while a writer had it open holds one), does not
/// stop a read: HDF5's locking would refuse the reader's shared lock.
#[test]
fn a_file_another_process_holds_locked_for_writing_is_still_read() {
    let analysis = jacobi();
    let directory = tempfile::tempdir().unwrap();
    let copy = directory.path().join("locked.h5");
    std::fs::copy(fixture("jacobi.h5"), &copy).unwrap();
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&copy)
        .unwrap();
    holder.try_lock().unwrap();
    let loaded = read_file(&copy, &analysis.program, &mut NoProgress).unwrap();
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    assert_eq!(loaded.data.unwrap(), from_json(&analysis));
    drop(holder);
}

/// A file this process has open already, with HDF5's default locking, is
/// read too (HDF5 refuses a second open with another locking flag).
#[test]
fn a_file_this_process_has_open_is_still_read() {
    let analysis = jacobi();
    let directory = tempfile::tempdir().unwrap();
    let copy = directory.path().join("open.h5");
    std::fs::copy(fixture("jacobi.h5"), &copy).unwrap();
    let held = hdf5::File::open(&copy).unwrap();
    let loaded = read_file(&copy, &analysis.program, &mut NoProgress).unwrap();
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    assert_eq!(loaded.data.unwrap(), from_json(&analysis));
    drop(held);
}

#[test]
fn hdf5_and_json_give_the_same_data() {
    let analysis = jacobi();
    let loaded = load(&analysis, "jacobi.h5");
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    assert_eq!(loaded.data.unwrap(), from_json(&analysis));
}

#[test]
fn a_missing_map_is_named() {
    let analysis = jacobi();
    let loaded = load(&analysis, "missing_map.h5");
    assert_error(
        &loaded,
        Code::E701,
        "/ends",
        "the targets of map `ends` are missing",
    );
}

#[test]
fn a_wrong_dim_is_an_error() {
    let analysis = jacobi();
    let loaded = load(&analysis, "wrong_dim.h5");
    assert_error(
        &loaded,
        Code::E703,
        "/ends",
        "rows of 3 values, but map `ends` has arity 2",
    );
}

#[test]
fn a_dim_attribute_that_disagrees_with_the_rows_is_an_error() {
    let analysis = jacobi();
    let loaded = load(&analysis, "bad_dim_attr.h5");
    assert_error(
        &loaded,
        Code::E701,
        "/ends",
        "attribute `dim` of dataset `/ends` is 3",
    );
}

#[test]
fn a_wrong_type_is_an_error() {
    let analysis = jacobi();
    let loaded = load(&analysis, "wrong_type.h5");
    assert_error(
        &loaded,
        Code::E701,
        "/p_kind",
        "dataset `/p_kind` holds 64-bit floats, but dat `p_kind` is `int`",
    );
}

#[test]
fn a_target_outside_its_set_names_the_row() {
    let analysis = jacobi();
    let loaded = load(&analysis, "outside.h5");
    assert_error(&loaded, Code::E702, "/ends[5][1]", "30");
}

#[test]
fn a_value_that_is_not_finite_names_the_row() {
    let analysis = jacobi();
    let loaded = load(&analysis, "not_finite.h5");
    assert_error(
        &loaded,
        Code::E701,
        "/p_w[3][0]",
        "NaN is not a finite number",
    );
}

#[test]
fn wrong_rows_are_an_error() {
    let analysis = jacobi();
    let loaded = load(&analysis, "wrong_rows.h5");
    assert_error(
        &loaded,
        Code::E703,
        "/p_w",
        "48 rows, but set `edges` has 49 elements",
    );
}

#[test]
fn a_huge_set_is_refused_before_anything_is_allocated() {
    let analysis = jacobi();
    let loaded = load(&analysis, "huge_set.h5");
    assert_error(
        &loaded,
        Code::E701,
        "/nodes",
        "set size 2000000000 is more than the 16777216 elements a set may have",
    );
}

#[test]
fn a_group_where_a_dataset_belongs_is_an_error() {
    let analysis = jacobi();
    let loaded = load(&analysis, "group_for_dat.h5");
    assert_error(&loaded, Code::E701, "/p_w", "is not a readable dataset");
}

#[test]
fn a_truncated_file_is_an_error() {
    let analysis = jacobi();
    let bytes = std::fs::read(fixture("jacobi.h5")).unwrap();
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("truncated.h5");
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let loaded = read_file(&path, &analysis.program, &mut NoProgress).unwrap();
    assert!(loaded.data.is_none(), "{:#?}", loaded.problems);
    assert!(
        loaded.problems.iter().any(|p| p.code == Code::E701),
        "{:#?}",
        loaded.problems
    );
}

#[test]
fn a_file_named_h5_that_is_not_hdf5_is_an_error() {
    let analysis = jacobi();
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("mesh.h5");
    std::fs::write(&path, "nodes 30\n").unwrap();
    let loaded = read_file(&path, &analysis.program, &mut NoProgress).unwrap();
    assert_error(&loaded, Code::E701, "", "the file is not HDF5");
}

#[test]
fn a_final_state_reads_back_as_instance_data() {
    let analysis = jacobi();
    let data = from_json(&analysis);
    let program = &analysis.program;
    let dats: Vec<Vec<op2_analysis::value::Value>> = program
        .dats
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let rows = data.set_size(d.set.unwrap());
            let dim = d.ty.dimension;
            (0..rows)
                .flat_map(|e| (0..dim).map(move |c| (e, c)))
                .map(|(e, c)| data.dat_value(op2_analysis::model::DatId(i as u32), dim, e, c))
                .collect()
        })
        .collect();
    let dat_refs: Vec<&[_]> = dats.iter().map(Vec::as_slice).collect();
    let consts: Vec<&[_]> = data.consts.iter().map(Vec::as_slice).collect();
    let globals: Vec<&[_]> = data.globals.iter().map(Vec::as_slice).collect();
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("state.h5");
    let maps: Vec<Option<&[u32]>> = data.maps.iter().map(|m| m.as_deref()).collect();
    write_state(
        &path,
        program,
        &data.set_sizes,
        &maps,
        &dat_refs,
        &consts,
        &globals,
    )
    .unwrap();
    // Nothing but the file itself is left in the directory.
    assert_eq!(std::fs::read_dir(directory.path()).unwrap().count(), 1);
    let loaded = read_file(&path, program, &mut NoProgress).unwrap();
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    let back = loaded.data.unwrap();
    assert_eq!(back.set_sizes, data.set_sizes);
    assert_eq!(back.consts, data.consts);
    assert_eq!(back.globals, data.globals);
    for (i, d) in program.dats.iter().enumerate() {
        let id = op2_analysis::model::DatId(i as u32);
        let rows = data.set_size(d.set.unwrap());
        for e in 0..rows {
            for c in 0..d.ty.dimension {
                assert_eq!(
                    back.dat_value(id, d.ty.dimension, e, c),
                    data.dat_value(id, d.ty.dimension, e, c)
                );
            }
        }
    }
}
