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

#[test]
fn a_missing_out_directory_is_created_and_removed_again_when_nothing_is_written() {
    let scratch = tempfile::tempdir().unwrap();
    // The import fails before it writes: the directory it made goes again.
    let out = scratch.path().join("ported");
    let output = Command::new(env!("CARGO_BIN_EXE_op2"))
        .arg("import")
        .arg(app("late", "late.cpp"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(!out.exists(), "the empty directory stayed");
    if op2_import_compiler_missing() {
        return;
    }
    // A faithful import writes its two files into the directory it made.
    let chain = app("chain", "chain.cpp");
    let output = Command::new(env!("CARGO_BIN_EXE_op2"))
        .arg("import")
        .arg(&chain)
        .arg("--out")
        .arg(&out)
        .current_dir(chain.parent().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(out.join("chain.op2").is_file());
    assert!(out.join("chain.json").is_file());
}

#[test]
fn a_compilation_database_given_is_used_for_each_unit_and_its_errors_name_the_json_path() {
    if op2_import_compiler_missing() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let units = app("units", "units.cpp");
    let dir = units.parent().unwrap();
    let entry = |file: &str| serde_json::json!({"directory": dir, "file": file, "arguments": ["c++", "-c", file]});
    let database = work.path().join("compile_commands.json");
    let import = |database_text: String| {
        std::fs::write(&database, database_text).unwrap();
        Command::new(env!("CARGO_BIN_EXE_op2"))
            .arg("import")
            .arg(&units)
            .args(["units_mesh.cpp", "units_kernels.cpp", "units_host.cpp"].map(|f| dir.join(f)))
            .arg("--out")
            .arg(work.path())
            .arg("--compile-commands")
            .arg(&database)
            .current_dir(dir)
            .output()
            .unwrap()
    };
    let files = [
        "units.cpp",
        "units_mesh.cpp",
        "units_kernels.cpp",
        "units_host.cpp",
    ];
    let output = import(serde_json::Value::from(files.map(entry).to_vec()).to_string());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "note: each translation unit was compiled with its flags in `{}` (entries `[0]`, `[1]`, `[2]`, `[3]`)\n",
            database.display()
        )),
        "{stdout}"
    );
    std::fs::remove_file(work.path().join("units.op2")).unwrap();
    // An entry of the last unit whose command is not closed: nothing written.
    let mut entries: Vec<serde_json::Value> = files[..3].iter().map(|f| entry(f)).collect();
    entries.push(serde_json::json!({"directory": dir, "file": "units_host.cpp", "command": "c++ -c 'units_host.cpp"}));
    let output = import(serde_json::Value::from(entries).to_string());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "error: {}: `[3].command`: the `'` at byte 7 is not closed\n",
            database.display()
        )
    );
    assert!(!work.path().join("units.op2").exists());
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
