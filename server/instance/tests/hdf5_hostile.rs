//! HDF5 files made to hurt: counts in headers that the file's size does not
//! back, and datasets whose values live in other files. Each is refused with
//! E701 naming its dataset before anything is allocated or opened for it.

use std::path::Path;

use hdf5::File;
use op2_analysis::{Analysis, Options, analyse_text};
use op2_instance::{Loaded, NoProgress, Phase, Progress, read_file};
use op2_syntax::Code;

/// A set of `size` elements and a dat of `dimension` doubles on it.
fn program(dimension: u32) -> Analysis {
    let text = format!(
        "set s;\ndat x: double[{dimension}] on s;\nkernel k(double *v) {{ v[0] = 1.0; }}\nmain {{ par_loop k over s (x WRITE); }}\n"
    );
    let analysis = analyse_text(
        Path::new("hostile.op2"),
        &text,
        &Options { require_main: true },
    );
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    analysis
}

fn set(file: &File, size: i32) {
    file.new_dataset_builder()
        .with_data(&[size])
        .create("s")
        .unwrap();
}

fn load(analysis: &Analysis, path: &Path) -> Loaded {
    read_file(path, &analysis.program, &mut NoProgress).unwrap()
}

/// `loaded` has no data and an E701 at `/x` whose message contains `words`.
fn refused(loaded: &Loaded, words: &str) {
    assert!(loaded.data.is_none(), "{:#?}", loaded.problems);
    assert!(
        loaded
            .problems
            .iter()
            .any(|p| p.code == Code::E701 && p.path == "/x" && p.message.contains(words)),
        "no E701 at /x containing {words:?}: {:#?}",
        loaded.problems
    );
}

#[test]
fn a_dataset_that_claims_more_values_than_a_run_holds_is_refused_before_reading() {
    // 2^24 rows of 16 doubles (two gigabytes) in chunks never written: a
    // file of a few kilobytes.
    let analysis = program(16);
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("unwritten.h5");
    {
        let file = File::create(&path).unwrap();
        set(&file, 1 << 24);
        file.new_dataset::<f64>()
            .shape([1usize << 24, 16])
            .chunk([1024, 16])
            .create("x")
            .unwrap();
    }
    refused_before_reading(
        &analysis,
        &path,
        "needs 268435456 values (16777216 elements of dimension 16), which brings the dats to more than the 134217728 values",
    );
}

/// The file at `path`, of a few kilobytes, is [`refused`] from its headers:
/// not one row is read.
fn refused_before_reading(analysis: &Analysis, path: &Path, words: &str) {
    assert!(std::fs::metadata(path).unwrap().len() < 1 << 16);
    let mut progress = Rows::default();
    let loaded = read_file(path, &analysis.program, &mut progress).unwrap();
    refused(&loaded, words);
    assert_eq!(progress.read, 0);
}

/// Counts the rows the reader reports as read.
#[derive(Default)]
struct Rows {
    reading: bool,
    read: u64,
}

impl Progress for Rows {
    fn start(&mut self, phase: Phase, _total: Option<u64>) {
        self.reading = phase == Phase::Reading;
    }
    fn advance(&mut self, amount: u64) {
        if self.reading {
            self.read += amount;
        }
    }
    fn finish(&mut self) {
        self.reading = false;
    }
}

#[test]
fn a_dataset_whose_extents_overflow_is_refused() {
    let analysis = program(1);
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("overflow.h5");
    // The library cannot write such extents: write others, then change
    // every copy of them in the file's dataspace message (current and
    // maximum extents) to 2^40 by 2^40.
    {
        let file = File::create(&path).unwrap();
        set(&file, 7);
        file.new_dataset::<f64>()
            .shape([12_345usize, 54_321])
            .chunk([1, 1])
            .create("x")
            .unwrap();
    }
    let extents: Vec<u8> = [12_345u64, 54_321]
        .iter()
        .flat_map(|n| n.to_le_bytes())
        .collect();
    let huge: Vec<u8> = [1u64 << 40, 1 << 40]
        .iter()
        .flat_map(|n| n.to_le_bytes())
        .collect();
    let changed = patch(&path, &extents, &huge);
    assert!(changed > 0, "the extents were not found in the file");
    let loaded = load(&analysis, &path);
    refused(&loaded, "claims more values than fit in 64 bits");
}

#[test]
fn external_storage_is_not_read() {
    let analysis = program(1);
    let directory = tempfile::tempdir().unwrap();
    let secret = directory.path().join("secret.bin");
    std::fs::write(&secret, 42.0f64.to_le_bytes()).unwrap();
    let path = directory.path().join("external.h5");
    {
        let file = File::create(&path).unwrap();
        set(&file, 1);
        file.new_dataset::<f64>()
            .shape([1usize, 1])
            .external(secret.to_str().unwrap(), 0, 8)
            .create("x")
            .unwrap();
    }
    let loaded = load(&analysis, &path);
    refused(&loaded, "keeps its values in other files");
}

#[test]
fn an_external_link_is_not_followed() {
    let analysis = program(1);
    let directory = tempfile::tempdir().unwrap();
    let other = directory.path().join("other.h5");
    {
        let file = File::create(&other).unwrap();
        file.new_dataset_builder()
            .with_data(&ndarray::arr2(&[[42.0f64]]))
            .create("x")
            .unwrap();
    }
    let path = directory.path().join("linked.h5");
    {
        let file = File::create(&path).unwrap();
        set(&file, 1);
        file.link_external(other.to_str().unwrap(), "x", "x")
            .unwrap();
    }
    let loaded = load(&analysis, &path);
    refused(&loaded, "is a soft or external link");
}

#[test]
fn a_dataset_whose_chunk_is_gigantic_is_refused_before_reading() {
    // One row, in a deflated chunk of 2^27 doubles (a gigabyte). A valid
    // chunk decompresses to that, and libhdf5 holds a filtered chunk whole
    // to read any row of it. This one was never written (a file of a few
    // kilobytes), which libhdf5 1.10.8 reads without allocating it: before
    // the check the row was read, with no problem.
    let analysis = program(1);
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("chunk.h5");
    {
        let file = File::create(&path).unwrap();
        set(&file, 1);
        file.new_dataset::<f64>()
            .shape(1..)
            .chunk(1usize << 27)
            .deflate(1)
            .create("x")
            .unwrap();
    }
    refused_before_reading(
        &analysis,
        &path,
        "dataset `/x` is stored in chunks of 1073741824 bytes (134217728 values of 8 bytes), more than the 67108864 bytes a chunk may have",
    );
}

/// Replaces every copy of `from` in the file at `path` by `to` (same
/// length), and says how many there were.
fn patch(path: &Path, from: &[u8], to: &[u8]) -> usize {
    let mut bytes = std::fs::read(path).unwrap();
    let mut changed = 0;
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(from.len()).position(|w| w == from) {
        bytes[at + found..at + found + from.len()].copy_from_slice(to);
        at += found + from.len();
        changed += 1;
    }
    std::fs::write(path, &bytes).unwrap();
    changed
}

/// A file at `path` with a set of one element and its dat `x` of one row
/// of two doubles, which it returns (the file closes when it is dropped).
fn one_row(path: &Path) -> hdf5::Dataset {
    let file = File::create(path).unwrap();
    set(&file, 1);
    file.new_dataset_builder()
        .with_data(&ndarray::arr2(&[[7.0f64, 2.0]]))
        .create("x")
        .unwrap()
}

#[test]
fn an_attribute_that_claims_2_to_the_62_points_is_refused_before_reading() {
    // 2^62 points of a 4-byte integer: the library's own size wraps to
    // zero, so it opens the attribute; reading it as 8-byte integers would
    // ask for 2^65 bytes.
    let analysis = program(2);
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("attribute.h5");
    one_row(&path)
        .new_attr_builder()
        .with_data(&vec![7i32; 3_001])
        .create("dim")
        .unwrap();
    let changed = patch(&path, &3_001u64.to_le_bytes(), &(1u64 << 62).to_le_bytes());
    assert!(
        changed > 0,
        "the attribute's extent was not found in the file"
    );
    let loaded = load(&analysis, &path);
    refused(
        &loaded,
        "attribute `dim` of dataset `/x` is not one integer",
    );
}

#[test]
fn a_type_attribute_of_bytes_that_are_not_ascii_is_reported_safely() {
    // The library hands back a string stored as ASCII without checking it
    // is; its bytes are only ever read as bytes.
    let analysis = program(2);
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("type.h5");
    let text = hdf5::types::FixedAscii::<8>::from_ascii(b"qzdouble").unwrap();
    one_row(&path)
        .new_attr::<hdf5::types::FixedAscii<8>>()
        .create("type")
        .unwrap()
        .write_scalar(&text)
        .unwrap();
    let changed = patch(&path, b"qzdouble", b"\xff\xfedouble");
    assert_eq!(changed, 1);
    let loaded = load(&analysis, &path);
    refused(
        &loaded,
        "attribute `type` of dataset `/x` is \"\u{FFFD}\u{FFFD}double\", but it holds 64-bit floats",
    );
}

/// Reads `path` with a reader process that is the shell script `script`
/// (standing for an op2 whose libhdf5 crashed or went astray); the one
/// problem must be an E701 of the file whose message contains `words`.
#[cfg(target_os = "linux")]
fn read_by_script(script: &str, words: &str) {
    use std::os::unix::fs::PermissionsExt;
    let analysis = program(2);
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("mesh.h5");
    {
        let file = File::create(&path).unwrap();
        set(&file, 3);
    }
    let reader = directory.path().join("reader");
    std::fs::write(&reader, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&reader, std::fs::Permissions::from_mode(0o755)).unwrap();
    let loaded =
        op2_instance::read_file_using(&path, &analysis.program, &mut NoProgress, Some(&reader))
            .unwrap();
    assert!(loaded.data.is_none(), "{:#?}", loaded.problems);
    assert_eq!(loaded.problems.len(), 1, "{:#?}", loaded.problems);
    let problem = &loaded.problems[0];
    assert_eq!(problem.code, Code::E701);
    assert!(
        problem
            .message
            .starts_with("the HDF5 library failed reading this file: ")
            && problem.message.contains(words),
        "{:?} lacks {words:?}",
        problem.message
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_reader_process_that_fails_or_writes_nonsense_is_an_error_not_a_panic_or_an_allocation() {
    // One test, so that no other thread of it forks while a script is
    // still open for writing (exec would fail with "text file busy").
    read_by_script("kill -SEGV $$", "killed by signal 11");
    read_by_script(
        "echo 'free(): invalid pointer' >&2; kill -ABRT $$",
        "killed by signal 6 (free(): invalid pointer)",
    );
    read_by_script("exit 3", "exited with status 3");
    // Not the reader's output at all.
    read_by_script("echo hello", "does not start as a reader's output does");
    // Nothing.
    read_by_script("true", "does not start as a reader's output does");
    // Out of its address space: Rust's allocator failed and aborted.
    read_by_script(
        "echo 'memory allocation of 1073741824 bytes failed' >&2; kill -ABRT $$",
        "the reader process ran out of its memory limit of 2560 MiB (memory allocation of 1073741824 bytes failed)",
    );
    // Data given, then a count of sets claiming eight exabytes.
    read_by_script(
        r"printf 'op2-h5r1\001\377\377\377\377\377\377\377\177'",
        "sets, but the program declares 1",
    );
    // Truncated inside the sets: one set, tag 2 (a size), no size.
    read_by_script(
        r"printf 'op2-h5r1\001\001\000\000\000\000\000\000\000\002'",
        "4 bytes expected, 0 remain",
    );
    // No data, then a count of problems claiming 2^63 items.
    read_by_script(
        r"printf 'op2-h5r1\000\000\000\000\000\000\000\000\200'",
        "a count of 9223372036854775808 items",
    );
}
