//! Helpers shared by the CLI's end-to-end tests: running the built `op2`
//! binary in a scratch directory and reading what it prints.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

/// A scratch directory to write `.op2` files into and run `op2` in, so that
/// paths in the output are the short relative ones the test wrote.
#[derive(Debug)]
pub struct Scratch {
    dir: TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch {
            dir: TempDir::new().expect("a temporary directory"),
        }
    }

    /// Writes `contents` (text or raw bytes) to `name` and returns `name`.
    pub fn file<'n>(&self, name: &'n str, contents: impl AsRef<[u8]>) -> &'n str {
        fs::write(self.dir.path().join(name), contents).expect("the scratch file is written");
        name
    }

    /// Where `name` is in this directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `op2 ARGS…`, run in this directory.
    pub fn op2(&self, args: &[&str]) -> Command {
        let mut command = op2();
        command.current_dir(self.dir.path()).args(args);
        command
    }
}

/// The `op2` binary built for these tests, with colour off.
pub fn op2() -> Command {
    let mut command = assert_cmd::cargo::cargo_bin_cmd!("op2");
    command.env("NO_COLOR", "1").env_remove("CLICOLOR_FORCE");
    command
}

/// The lines of `--message-format json` output, each parsed as one JSON
/// object (the format promises exactly that).
pub fn json_lines(stdout: &[u8]) -> Vec<Value> {
    let stdout = std::str::from_utf8(stdout).expect("JSON output is UTF-8");
    stdout
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("not one JSON object per line ({error}): {line}"));
            assert!(value.is_object(), "not an object: {line}");
            value
        })
        .collect()
}

/// The records of JSON output with the code `code`.
pub fn with_code<'a>(records: &'a [Value], code: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|record| record["code"] == code)
        .collect()
}

/// Every program in `docs/examples`.
pub fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
    let mut programs: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "op2"))
        .collect();
    programs.sort();
    assert!(
        !programs.is_empty(),
        "no example programs in {}",
        dir.display()
    );
    programs
}
