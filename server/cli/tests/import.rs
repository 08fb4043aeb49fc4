//! `op2 import` through the binary: the report on standard output, the
//! exit status, and errors on standard error.

use std::path::Path;
use std::process::Command;

fn app(dir: &str, file: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/apps")
        .join(dir)
        .join(file)
}

#[test]
fn a_declaration_after_the_first_par_loop_exits_1_with_its_location() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_op2"))
        .arg("import")
        .arg(app("late", "late.cpp"))
        .arg("--out")
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("late.cpp:11:16: `op_decl_dat` after the first `op_par_loop`"),
        "{stderr}"
    );
    assert!(std::fs::read_dir(out.path()).unwrap().next().is_none());
}

#[test]
fn a_faithful_import_writes_both_files_and_exits_0() {
    if op2_import_compiler_missing() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let chain = app("chain", "chain.cpp");
    let output = Command::new(env!("CARGO_BIN_EXE_op2"))
        .arg("import")
        .arg(&chain)
        .arg("--out")
        .arg(out.path())
        .current_dir(chain.parent().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("translated (6):"), "{stdout}");
    assert!(stdout.contains("  | chain of 12 nodes"), "{stdout}");
    assert!(out.path().join("chain.op2").is_file());
    assert!(out.path().join("chain.json").is_file());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("running the set-up to its first par_loop"),
        "{stderr}"
    );
}

/// True (after saying so loudly) when no C++ compiler exists.
#[allow(clippy::print_stderr)]
fn op2_import_compiler_missing() -> bool {
    let found = ["c++", "g++", "clang++"].iter().any(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) || std::env::var_os("CXX").is_some();
    if !found {
        eprintln!("SKIPPED: no C++ compiler, so op2 import cannot capture");
    }
    !found
}
