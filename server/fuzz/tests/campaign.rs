//! The fuzzer in the test suite: a short campaign with a fixed seed through
//! the real binary (so a stack overflow or an abort in a case is a finding,
//! not the end of the test run), and the harness's own checks: a panic, a
//! stack overflow, an abort and a hang in a case each become a finding and
//! the campaign goes on to its end, and the slow and hang limits count the
//! case's CPU time, with a longer limit on its wall time.

#![allow(clippy::print_stdout)]

use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitStatus;

/// `op2-fuzz` with `args`, its findings in a fresh temporary folder, quiet.
fn fuzz(args: &[&str], env: &[(&str, &str)]) -> (ExitStatus, String) {
    let out = crate::temporary_folder("op2-fuzz-test-");
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.extend([
        OsStr::new("--out"),
        out.path().as_os_str(),
        OsStr::new("--quiet"),
    ]);
    crate::op2_fuzz(all, env)
}

/// The suite's campaign: 2,000 cases with every hostile input (huge sizes,
/// deep nesting, malformed protocol messages, mutated kernels run and
/// simulated), every case through every command, with the known open
/// defects of `known-open.txt` listed but not failing (docs/reliability.md).
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
            "2",
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

fn self_test(what: &str, expect: &str) -> String {
    self_test_with(what, &["--hang-secs", "5"], expect)
}

/// Four cases with `args`, case 1 misbehaving as `what` says
/// (`OP2_FUZZ_SELF_TEST`): one finding, `expect` in its report, and the
/// other cases run.
fn self_test_with(what: &str, args: &[&str], expect: &str) -> String {
    let mut all = vec!["--cases", "4", "--seed", "1", "--tame"];
    all.extend_from_slice(args);
    let (status, report) = fuzz(&all, &[("OP2_FUZZ_SELF_TEST", what)]);
    assert_eq!(status.code(), Some(1), "{report}");
    assert!(
        report.contains("4 cases (seed 1"),
        "every case ran: {report}"
    );
    assert!(report.contains("1 findings"), "{report}");
    assert!(report.contains("seed 1 case 1: "), "{report}");
    assert!(report.contains(expect), "{what}: {report}");
    report
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
    let report = self_test("abort", "crash in process: the worker killed by signal 6");
    assert!(report.contains(" (saved in "), "{report}");
}

/// A case whose making kills the worker kills the process that makes it
/// again to save it too: the finding says that nothing was saved and that
/// the defect is the generator's (it said "saved in" with nothing there).
#[test]
fn a_case_that_cannot_be_made_is_reported_unsaved() {
    let report = self_test(
        "abort-making",
        "crash in process: the worker killed by signal 6",
    );
    assert!(
        report.contains(
            "(not saved: the process that makes the case again to save it ended too (killed \
             by signal 6)"
        ),
        "{report}"
    );
    assert!(
        report.contains("a defect of op2-fuzz's generator"),
        "{report}"
    );
    assert!(!report.contains("saved in"), "{report}");
}

/// A case asleep for ever uses no CPU time: the limit on its wall time
/// stops it, and the finding says so.
#[test]
fn a_hang_is_a_finding() {
    self_test_with(
        "hang",
        &["--hang-secs", "5", "--hang-wall-secs", "5"],
        "hang in process: no answer within 5 s of wall time (--hang-wall-secs",
    );
}

/// A case busy for ever passes the limit on its CPU time long before the
/// one on its wall time.
#[test]
fn a_busy_hang_is_stopped_by_its_cpu_time() {
    self_test_with(
        "spin",
        &["--hang-secs", "2", "--hang-wall-secs", "600"],
        "s of CPU time, over the limit of 2 s of CPU (--hang-secs)",
    );
}

/// The slow limit counts CPU time: a case that takes 3 s of wall time
/// asleep (as one held by a paused campaign or starved by a loaded machine
/// would) is not slow at a limit of 1 s; one that takes 1.5 s of CPU time
/// is, and its finding says which time passed the limit.
#[test]
fn only_cpu_time_makes_a_case_slow() {
    let (status, report) = fuzz(
        &["--cases", "4", "--seed", "1", "--tame", "--slow-secs", "1"],
        &[("OP2_FUZZ_SELF_TEST", "sleep")],
    );
    assert!(status.success(), "a case asleep is slow: {report}");
    assert!(report.contains("0 findings"), "{report}");
    // The summary lists all four cases, the one asleep with its 3 s of
    // wall time and little CPU time.
    let (cpu, wall) = times_of_case_1(&report);
    assert!(cpu < 1.0 && wall >= 3.0, "{report}");
    let report = self_test_with("busy", &["--slow-secs", "1"], "slow in case: took 1.");
    assert!(
        report.contains("s of CPU time, over the limit of 1 s of CPU (--slow-secs)"),
        "{report}"
    );
}

/// The CPU and wall time of case 1 in the summary's list of the slowest.
fn times_of_case_1(report: &str) -> (f64, f64) {
    let slowest = report
        .lines()
        .find(|l| l.starts_with("mean case"))
        .expect("a summary of times");
    let times = slowest
        .split("seed 1 case 1 (")
        .nth(1)
        .and_then(|rest| rest.split_once(" s of wall time)"))
        .map(|(times, _)| times)
        .expect("case 1 among the slowest");
    let (cpu, wall) = times.split_once(" s of CPU, ").expect("two times");
    (cpu.parse().unwrap(), wall.parse().unwrap())
}

/// A campaign paused (SIGSTOP to its process group, as for another
/// engineer's timing rounds) for longer than its wall-clock limit, in the
/// middle of a case that needs 1.5 s of CPU time, finds nothing: the pause
/// counts towards neither limit.
#[cfg(unix)]
#[test]
fn a_pause_of_the_campaign_makes_no_case_slow_or_hung() {
    use std::io::{BufRead, BufReader, Read};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let out = crate::temporary_folder("op2-fuzz-test-");
    let mut campaign = Command::new(env!("CARGO_BIN_EXE_op2-fuzz"))
        .args([
            "--cases",
            "4",
            "--seed",
            "1",
            "--tame",
            "--jobs",
            "1",
            "--print-cases",
        ])
        .args(["--slow-secs", "3", "--hang-secs", "3"])
        .args(["--hang-wall-secs", "10"])
        .arg("--out")
        .arg(out.path())
        .arg("--quiet")
        .env("OP2_FUZZ_SELF_TEST", "busy")
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("op2-fuzz runs");
    let group = format!("-{}", campaign.id());
    let mut stdout = BufReader::new(campaign.stdout.take().expect("a pipe"));
    let mut report = String::new();
    // Case 1 (1.5 s of CPU time) begins as soon as case 0 is done.
    while !report.contains("case 0 ") {
        let mut line = String::new();
        if stdout.read_line(&mut line).expect("the report") == 0 {
            break;
        }
        report.push_str(&line);
    }
    let signal = |name: &str| {
        let status = Command::new("kill")
            .args([name, "--", &group])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {name}");
    };
    // Into its 1.5 s of CPU time, past the making of the case.
    std::thread::sleep(std::time::Duration::from_millis(500));
    signal("-STOP");
    std::thread::sleep(std::time::Duration::from_secs(14));
    signal("-CONT");
    stdout.read_to_string(&mut report).expect("the report");
    let status = campaign.wait().expect("op2-fuzz ends");
    let _ = campaign
        .stderr
        .take()
        .map(|mut e| e.read_to_string(&mut report));
    assert!(status.success(), "the pause made a finding: {report}");
    assert!(
        report.contains("4 cases (seed 1") && report.contains("0 findings"),
        "{report}"
    );
    // The pause held case 1: its wall time has the 14 s in it.
    let (cpu, wall) = times_of_case_1(&report);
    assert!(cpu >= 1.5 && wall >= 14.0, "{report}");
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
