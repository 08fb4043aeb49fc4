//! The suite's campaign of `op2 import`'s translation (`op2-fuzz --import`):
//! the import's test applications mutated and generated hostile ones at
//! full size (nesting and repetitions up to 100,000, captures of 2^40
//! elements), through the real binary so that a stack overflow or an abort
//! is a finding rather than the end of the test run. 60 cases: their cost is
//! in a few hostile applications (cases 1, 20 and 22 of this seed take 3.2,
//! 1.8 and 1.2 s of CPU time), about 7 s of CPU in all.

#![allow(clippy::print_stdout)]

use std::ffi::OsStr;

#[test]
fn a_short_import_campaign_finds_nothing() {
    // Removed with its findings when the test ends, passing or not.
    let out = crate::temporary_folder("op2-fuzz-import-test-");
    let flags = "--import --quiet --cases 60 --seed 20261127 --jobs 2 \
                 --slow-secs 60 --hang-secs 120 --out";
    let args = flags.split_whitespace().map(OsStr::new);
    let (status, report) = crate::op2_fuzz(args.chain([out.path().as_os_str()]), &[]);
    println!("{report}");
    assert!(status.success(), "the campaign found something:\n{report}");
    assert!(report.contains("60 cases (seed 20261127"), "{report}");
}

/// The hostile shapes of names, small, translated as they mean to be: the
/// macro that names `t` reads each block's own `t`, and the sources' names
/// push the fresh names on (the kernels' `x_inc` to `x_inc___`, the
/// blocks' `len` past `len_`, `len_1` and `len_2`).
#[test]
fn the_hostile_shapes_of_names_translate_as_meant() {
    use op2_fuzz::import::{hostile, translate};
    use op2_fuzz::rng::Rng;
    let (_, shadowed) = translate(&hostile(&mut Rng::new(1), 10, 3));
    let program = shadowed.expect("translates").program;
    assert_eq!(program.matches("(t * 2.0)").count(), 4, "{program}");
    let (_, fresh) = translate(&hostile(&mut Rng::new(1), 11, 3));
    let fresh = fresh.expect("translates");
    assert_eq!(
        fresh.program.matches("double x_inc___[1] = {0.0};").count(),
        3,
        "{}",
        fresh.program
    );
    assert!(
        fresh.program.contains("int len_3 = 1;"),
        "{}",
        fresh.program
    );
}
