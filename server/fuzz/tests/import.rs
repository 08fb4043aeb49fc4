//! The suite's campaign of `op2 import`'s translation (`op2-fuzz --import`):
//! the import's test applications mutated and generated hostile ones, tame
//! (small depths and counts), through the real binary so that a stack
//! overflow or an abort is a finding rather than the end of the test run.

#![allow(clippy::print_stdout)]

use std::ffi::OsStr;

#[test]
fn a_short_import_campaign_finds_nothing() {
    let out = std::env::temp_dir().join(format!("op2-fuzz-import-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let flags = "--import --tame --quiet --cases 120 --seed 20261127 --jobs 1 \
                 --slow-secs 60 --hang-secs 120 --out";
    let args = flags.split_whitespace().map(OsStr::new);
    let (status, report) = crate::op2_fuzz(args.chain([out.as_os_str()]), &[]);
    println!("{report}");
    assert!(status.success(), "the campaign found something:\n{report}");
    assert!(report.contains("120 cases (seed 20261127"), "{report}");
    let _ = std::fs::remove_dir_all(&out);
}
