//! Every command that writes a file refuses, before any work, a place in a
//! directory that does not exist, naming the directory with the command
//! that creates it; none creates directories (docs/compilation.md, "Output
//! files").

use crate::support;

use std::path::Path;

use predicates::str::contains;

use support::Scratch;

/// The scatter example and its instance, in a scratch directory.
fn scatter() -> Scratch {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
    let scratch = Scratch::new();
    let read = |name: &str| std::fs::read(examples.join(name)).unwrap();
    scratch.file("scatter.op2", read("scatter.op2"));
    scratch.file("mesh.json", read("scatter.instance.json"));
    scratch
}

/// `op2 ARGS` fails with `error: WHAT: the directory `missing` does not
/// exist`, says how to create it, and creates nothing.
fn refused(scratch: &Scratch, args: &[&str], what: &str) {
    scratch
        .op2(args)
        .assert()
        .code(2)
        .stderr(contains(format!(
            "error: {what}: the directory `missing` does not exist"
        )))
        .stderr(contains(
            "help: create it first (`mkdir -p missing`); op2 does not create directories",
        ));
    assert!(!scratch.path("missing").exists(), "{args:?} created it");
}

#[test]
fn build_refuses_an_output_in_a_missing_directory() {
    let scratch = scatter();
    refused(
        &scratch,
        &[
            "build",
            "scatter.op2",
            "--instance",
            "mesh.json",
            "-o",
            "missing/g.xml",
        ],
        "cannot write `missing/g.xml`",
    );
    // Beside the source (no -o) needs no check, and an existing one works.
    std::fs::create_dir(scratch.path("out")).unwrap();
    scratch
        .op2(&["build", "scatter.op2", "-o", "out/g.xml"])
        .assert()
        .success();
    assert!(scratch.path("out/g.xml").is_file());
}

#[test]
fn run_and_simulate_refuse_a_final_state_in_a_missing_directory_before_running() {
    let scratch = scatter();
    for (command, file) in [("run", "missing/s.json"), ("simulate", "missing/s.h5")] {
        refused(
            &scratch,
            &[
                command,
                "scatter.op2",
                "--instance",
                "mesh.json",
                "--final-state",
                file,
            ],
            &format!("cannot write `{file}`"),
        );
    }
    // Before running: nothing the program prints was printed.
    scratch
        .op2(&[
            "run",
            "scatter.op2",
            "--instance",
            "mesh.json",
            "--final-state",
            "missing/s.json",
        ])
        .assert()
        .stdout("");
}

#[test]
fn instance_convert_refuses_an_output_in_a_missing_directory() {
    let scratch = scatter();
    refused(
        &scratch,
        &[
            "instance",
            "convert",
            "mesh.json",
            "missing/m.h5",
            "--program",
            "scatter.op2",
        ],
        "cannot write `missing/m.h5`",
    );
}

#[test]
fn import_and_man_refuse_a_missing_output_directory() {
    let scratch = scatter();
    scratch.file("app.cpp", "int main() { return 0; }\n");
    // `import` creates the last part of `--out` (tests/import.rs), not
    // the directories above it.
    refused(
        &scratch,
        &["import", "app.cpp", "--out", "missing/ported"],
        "`--out`",
    );
    refused(&scratch, &["man", "--out-dir", "missing"], "`--out-dir`");
}

#[test]
fn a_file_where_the_directory_should_be_is_named_as_such() {
    let scratch = scatter();
    scratch.file("plain", "x");
    scratch
        .op2(&["build", "scatter.op2", "-o", "plain/g.xml"])
        .assert()
        .code(2)
        .stderr(contains(
            "error: cannot write `plain/g.xml`: `plain` is not a directory",
        ));
}
