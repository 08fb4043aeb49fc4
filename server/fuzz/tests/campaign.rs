//! The fuzzer in the test suite: a short campaign with a fixed seed through
//! the real binary (so a stack overflow or an abort in a case is a finding,
//! not the end of the test run), and the harness's own checks: a panic, a
//! stack overflow, an abort and a hang in a case each become a finding and
//! the campaign goes on to its end.

#![allow(clippy::print_stdout)]

use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitStatus;

/// `op2-fuzz` with `args`, its findings in a fresh temporary folder, quiet.
fn fuzz(args: &[&str], env: &[(&str, &str)]) -> (ExitStatus, String) {
    let out = tempfile_dir();
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.extend([OsStr::new("--out"), out.as_os_str(), OsStr::new("--quiet")]);
    crate::op2_fuzz(all, env)
}

fn tempfile_dir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "op2-fuzz-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The suite's campaign: 2,000 cases, tame (no hostile sizes or malformed
/// messages while those defects are open; docs/reliability.md), with the
/// known open defects of `known-open.txt` listed but not failing.
#[test]
fn a_short_campaign_finds_nothing_new() {
    let known = Path::new(env!("CARGO_MANIFEST_DIR")).join("known-open.txt");
    let (status, report) = fuzz(
        &[
            "--cases",
            "2000",
            "--seed",
            "20261125",
            "--jobs",
            "1",
            "--tame",
            "--slow-secs",
            "60",
            "--hang-secs",
            "120",
            "--known",
            known.to_str().expect("a UTF-8 path"),
        ],
        &[],
    );
    println!("{report}");
    assert!(status.success(), "the campaign found something:\n{report}");
    assert!(report.contains("2000 cases (seed 20261125"), "{report}");
}

fn self_test(what: &str, expect: &str) {
    let (status, report) = fuzz(
        &["--cases", "4", "--seed", "1", "--hang-secs", "5", "--tame"],
        &[("OP2_FUZZ_SELF_TEST", what)],
    );
    assert_eq!(status.code(), Some(1), "{report}");
    assert!(
        report.contains("4 cases (seed 1"),
        "every case ran: {report}"
    );
    assert!(report.contains("1 findings"), "{report}");
    assert!(report.contains("seed 1 case 1: "), "{report}");
    assert!(report.contains(expect), "{what}: {report}");
}

#[test]
fn a_panic_is_a_finding() {
    self_test("panic", "panic in case: panicked at");
}

#[test]
fn a_stack_overflow_is_a_finding() {
    self_test("overflow", "has overflowed its stack");
}

#[test]
fn an_abort_is_a_finding() {
    self_test("abort", "crash in process: the worker killed by signal 6");
}

#[test]
fn a_hang_is_a_finding() {
    self_test("hang", "hang in process: no answer within 5 s");
}

/// The `case` lines of a campaign with `--print-cases`, from case 100 on,
/// in order of index, and the report.
fn cases_from_100(args: &[&str]) -> (Vec<String>, String) {
    let mut all = vec!["--seed", "7", "--tame", "--print-cases"];
    all.extend_from_slice(args);
    let (status, report) = fuzz(&all, &[]);
    assert!(status.success(), "{report}");
    let mut cases: Vec<(u64, String)> = report
        .lines()
        .filter_map(|line| {
            let index = line
                .strip_prefix("case ")?
                .split(' ')
                .next()?
                .parse()
                .ok()?;
            Some((index, line.to_string()))
        })
        .filter(|(index, _)| *index >= 100)
        .collect();
    cases.sort();
    (cases.into_iter().map(|(_, line)| line).collect(), report)
}

/// A campaign run in chunks runs the cases of one whole run: cases 100..110
/// run alone (`--from 100 --cases 10`, one job) are, input for input and in
/// how far each went, cases 100..110 of a run of 0..110 (two jobs).
#[test]
fn a_range_runs_the_same_cases_as_a_whole_run() {
    let (alone, report) = cases_from_100(&["--from", "100", "--cases", "10", "--jobs", "1"]);
    assert!(
        report.contains("10 cases (seed 7, cases 100..110)"),
        "the summary names the range: {report}"
    );
    let (whole, report) = cases_from_100(&["--cases", "110", "--jobs", "2"]);
    assert!(
        report.contains("110 cases (seed 7, cases 0..110)"),
        "{report}"
    );
    assert_eq!(alone.len(), 10, "{alone:?}");
    assert_eq!(alone, whole);
    // The fingerprints tell cases apart.
    let mut fingerprints: Vec<&str> = alone
        .iter()
        .filter_map(|line| line.split(' ').nth(2))
        .collect();
    fingerprints.sort_unstable();
    fingerprints.dedup();
    assert_eq!(fingerprints.len(), 10, "{alone:?}");
}
