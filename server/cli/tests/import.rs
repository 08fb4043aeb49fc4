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

/// `op2 import MAIN --out OUT`, run.
fn import_into(main: &Path, out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_op2"))
        .arg("import")
        .arg(main)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn a_declaration_after_the_first_par_loop_exits_1_with_its_location() {
    let out = tempfile::tempdir().unwrap();
    let output = import_into(&app("late", "late.cpp"), out.path());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("late.cpp:11:16: `op_decl_dat` after the first `op_par_loop`"),
        "{stderr}"
    );
    assert!(std::fs::read_dir(out.path()).unwrap().next().is_none());
}

/// A file name with an escape sequence (a valid name on Unix) is shown,
/// not sent to the terminal, in the import's messages.
#[test]
fn an_escape_sequence_in_a_file_name_is_shown_not_sent() {
    let out = tempfile::tempdir().unwrap();
    let output = import_into(&out.path().join("e\x1b]0;T\x07.cpp"), out.path());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        !stderr.contains('\x1b') && !stderr.contains('\x07'),
        "{stderr:?}"
    );
    assert!(stderr.contains("e\u{241b}]0;T\u{2407}.cpp"), "{stderr}");
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
    assert!(stdout.contains("translated (8):"), "{stdout}");
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

/// A temporary directory holding the C++ application `text` as `name`, and
/// its path; none (after saying so) when there is no compiler to capture it.
fn application(name: &str, text: &str) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    if op2_import_compiler_missing() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join(name);
    std::fs::write(&source, text).unwrap();
    Some((dir, source))
}

/// An application whose set-up says its process id, then waits two minutes
/// before its first par_loop.
#[cfg(target_os = "linux")]
const SLOW_SET_UP: &str = r#"#include "op_seq.h"
#include <cstdio>
#include <unistd.h>

inline void touch(double *x) { x[0] = 1.0; }

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  FILE *f = fopen("pid.tmp", "w");
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  rename("pid.tmp", "pid.txt");
  sleep(120);
  op_set nodes = op_decl_set(3, "nodes");
  op_dat p_x = op_decl_dat(nodes, 1, "double", (double *)0, "p_x");
  op_par_loop(touch, "touch", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_WRITE));
  op_exit();
}
"#;

/// Whether process `pid` has ended (gone, or a zombie nobody reaped).
#[cfg(target_os = "linux")]
fn ended(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_during_the_set_up_ends_the_application_too() {
    use std::time::{Duration, Instant};
    let Some((dir, source)) = application("slow.cpp", SLOW_SET_UP) else {
        return;
    };
    let out = dir.path().join("out");
    let mut op2 = Command::new(env!("CARGO_BIN_EXE_op2"))
        .arg("import")
        .arg(&source)
        .arg("--out")
        .arg(&out)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let said = dir.path().join("pid.txt");
    let started = Instant::now();
    while !said.exists() {
        assert!(op2.try_wait().unwrap().is_none(), "op2 import ended early");
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no set-up ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = std::fs::read_to_string(&said).unwrap();
    // Ctrl-C reaches op2's own process group only.
    let sent = Command::new("kill")
        .args(["-INT", &op2.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    op2.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ended(&pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = !ended(&pid);
    if left {
        let _ = Command::new("kill").args(["-KILL", pid.trim()]).status();
    }
    assert!(!left, "the set-up {} outlived op2 import", pid.trim());
}

/// A set-up that fails is reported as one, with its exit status and what
/// it printed, whatever it left in the capture: here a byte that is not
/// UTF-8 (a name cut in the middle of a character by a crash), which was
/// reported as a malformed capture instead (review of 2026-11-29).
#[test]
fn a_failed_set_up_is_reported_whatever_its_capture_holds() {
    let Some((dir, source)) = application(
        "broken.cpp",
        r#"#include "op_seq.h"
#include <cstdio>
#include <cstdlib>

inline void touch(double *x) { x[0] = 1.0; }

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  op_set nodes = op_decl_set(3, "nodes");
  if (const char *capture = getenv("OP2_IMPORT_CAPTURE")) {
    FILE *f = fopen(capture, "a");
    fputc(0xff, f);
    fclose(f);
  }
  printf("cannot read the mesh\n");
  fflush(stdout);
  exit(3);
  op_dat p_x = op_decl_dat(nodes, 1, "double", (double *)0, "p_x");
  op_par_loop(touch, "touch", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_WRITE));
  op_exit();
}
"#,
    ) else {
        return;
    };
    let output = import_into(&source, &dir.path().join("out"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("the application ended (exit status 3) before its first `op_par_loop`"),
        "{stderr}"
    );
    assert!(stderr.contains("cannot read the mesh"), "{stderr}");
    assert!(!stderr.contains("malformed"), "{stderr}");
}
