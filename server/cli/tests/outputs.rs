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

/// `op2 ARGS` refuses to write over a file it reads, before any work: the
/// file keeps its bytes and nothing runs.
fn input_kept(scratch: &Scratch, args: &[&str], output: &str, what: &str, help: &str) {
    let before = std::fs::read(scratch.path(output)).unwrap();
    scratch
        .op2(args)
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains(format!(
            "error: cannot write `{output}`: it is {what}"
        )))
        .stderr(contains("which this command reads; nothing was written"))
        .stderr(contains(format!("help: {help}")));
    assert_eq!(
        std::fs::read(scratch.path(output)).unwrap(),
        before,
        "{args:?} changed `{output}`"
    );
}

#[test]
fn no_command_writes_over_a_file_it_reads() {
    let scratch = scatter();
    scratch.file("lib.op2", "set spare;\n");
    let program = std::fs::read_to_string(scratch.path("scatter.op2")).unwrap();
    scratch.file("main.op2", format!("import \"lib.op2\";\n{program}"));
    let build = |output: &str| {
        vec!["build", "main.op2", "--instance", "mesh.json", "-o"]
            .into_iter()
            .chain([output])
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let with_o = "name another file with `-o`";
    for (output, what) in [
        ("main.op2", "the program"),
        ("lib.op2", "a file the program imports"),
        ("mesh.json", "the instance data"),
    ] {
        let args = build(output);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        input_kept(&scratch, &args, output, what, with_o);
    }
    for command in ["run", "simulate"] {
        for (output, what) in [
            ("mesh.json", "the instance data"),
            ("main.op2", "the program"),
        ] {
            input_kept(
                &scratch,
                &[
                    command,
                    "main.op2",
                    "--instance",
                    "mesh.json",
                    "--final-state",
                    output,
                ],
                output,
                what,
                "name another file with `--final-state`",
            );
        }
    }
    input_kept(
        &scratch,
        &[
            "instance",
            "convert",
            "mesh.json",
            "mesh.json",
            "--program",
            "main.op2",
        ],
        "mesh.json",
        "the instance data",
        "name another output file",
    );
    // Through a link, the input is named as the command was given it.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("mesh.json", scratch.path("state.json")).unwrap();
        scratch
            .op2(&[
                "run",
                "main.op2",
                "--instance",
                "mesh.json",
                "--final-state",
                "state.json",
            ])
            .assert()
            .code(2)
            .stderr(contains(
                "error: cannot write `state.json`: it is the instance data (`mesh.json`)",
            ));
    }
}

/// `op2 COMMAND scatter.op2 --instance mesh.json --final-state NAME`.
fn final_state<'a>(command: &'a str, name: &'a str) -> [&'a str; 6] {
    [
        command,
        "scatter.op2",
        "--instance",
        "mesh.json",
        "--final-state",
        name,
    ]
}

#[test]
fn a_final_state_that_cannot_be_written_is_refused_before_running() {
    let scratch = scatter();
    std::fs::create_dir(scratch.path("dir")).unwrap();
    for command in ["run", "simulate"] {
        scratch
            .op2(&final_state(command, "dir"))
            .assert()
            .code(2)
            .stdout("")
            .stderr(contains(
                "error: cannot write `dir`: not a regular file (it is a directory)",
            ));
    }
}

/// `--final-state -` (or `/dev/stdout`) writes the final state as JSON on
/// standard output, after what the program printed, as a stream: no file
/// named `-`, and a redirected standard output is written to, not replaced
/// (the rename of an atomic write replaced it, and what the program had
/// printed there with it).
#[test]
fn a_final_state_on_standard_output_follows_what_the_program_printed() {
    let scratch = scatter();
    for command in ["run", "simulate"] {
        for name in ["-", "/dev/stdout"] {
            let output = scratch.op2(&final_state(command, name)).output().unwrap();
            assert!(output.status.success(), "{command} {name}: {output:?}");
            let stdout = String::from_utf8(output.stdout).unwrap();
            let json = stdout.find("{\n").expect("the final state");
            let printed = scratch
                .op2(&[command, "scatter.op2", "--instance", "mesh.json"])
                .output()
                .unwrap()
                .stdout;
            assert_eq!(&stdout.as_bytes()[..json], printed, "{command} {name}");
            let state: serde_json::Value = serde_json::from_str(&stdout[json..]).unwrap();
            assert!(state["dats"].is_object(), "{command} {name}: {state}");
            assert!(!scratch.path("-").exists());
        }
    }
}
