//! `exit(STATUS)` ends `op2 run` and `op2 simulate` with that status, after
//! the output `main` wrote (`printf` of part of a line included) and
//! nothing more on standard output.

use crate::support;

use support::Scratch;

const PROGRAM: &str = "global g: int;\n\nmain {\n    for (int i = 0; i < 3; i++)\n        printf(\" %d\", i);\n    printf(\"\\n\");\n    printf(\"unfinished\");\n    if (g == 0)\n        exit(g + 7);\n    print(\"not reached\");\n}\n";

#[test]
fn run_and_simulate_end_with_the_programs_exit_status() {
    let scratch = Scratch::new();
    scratch.file("data.json", r#"{ "sets": {} }"#);
    scratch.file("exit.op2", PROGRAM);
    for args in [
        vec!["run", "--engine", "interp"],
        vec!["run", "--engine", "compiled"],
        vec!["simulate", "--check"],
    ] {
        let mut command_args = args.clone();
        command_args.extend(["exit.op2", "--instance", "data.json"]);
        let output = scratch.op2(&command_args).output().expect("op2 runs");
        assert_eq!(output.status.code(), Some(7), "{args:?}: {output:?}");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            " 0 1 2\nunfinished",
            "{args:?}"
        );
        assert!(
            !String::from_utf8_lossy(&output.stderr).contains("error"),
            "{args:?}: {output:?}"
        );
    }
    // `exit(0)` is a success.
    scratch.file("zero.op2", PROGRAM.replace("g + 7", "g"));
    let output = scratch
        .op2(&["run", "zero.op2", "--instance", "data.json"])
        .output()
        .expect("op2 runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}
