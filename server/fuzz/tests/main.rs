//! Every integration test of this crate, in one test binary: each `tests/*.rs` is a
//! module here (one link of the whole graph instead of one per file; docs/benchmarks.md,
//! "The test command"). A new test file needs its `mod` line below, which
//! `op2-cli`'s `layout::every_test_file_is_compiled` checks; run one file's tests with
//! `cargo test -p op2-fuzz --test integration FILE::`.

mod campaign;
mod generator;
mod import;
mod regressions;

use std::ffi::OsStr;
use std::process::{Command, ExitStatus};

/// A fresh folder whose name begins with `prefix`, removed with everything
/// in it when the guard is dropped: at the end of the test, or as a failing
/// test unwinds.
fn temporary_folder(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("a temporary folder")
}

/// Runs the `op2-fuzz` binary with `args` and the environment variables
/// `env` set, and returns how it ended and its report: its standard output
/// and standard error, joined.
fn op2_fuzz<S: AsRef<OsStr>>(
    args: impl IntoIterator<Item = S>,
    env: &[(&str, &str)],
) -> (ExitStatus, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_op2-fuzz"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("op2-fuzz runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status, report)
}
