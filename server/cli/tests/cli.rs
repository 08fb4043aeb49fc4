//! `op2 check` and `op2 parse` end to end: the built binary, real files,
//! exit codes and exactly what is printed.

use crate::support;

use predicates::prelude::*;
use predicates::str::contains;
use serde_json::{Value, json};

use support::{Scratch, examples, json_lines, op2, with_code};

/// A program the parser and the analyser accept without a word.
const CLEAN: &str = r#"set cells;
dat p_q: double on cells;
global total: double;
kernel init(double *q) { q[0] = 1.0; }
kernel sum(const double *q, double *t) { *t += q[0]; }
main {
    par_loop init over cells (p_q WRITE);
    par_loop sum over cells (p_q READ, total INC);
    print("%g", total);
}
"#;

/// Two syntax errors after multi-byte text on their lines: `é` is two bytes
/// and one UTF-16 unit, `😀` four bytes and two units; both are one column.
const NON_ASCII: &str = "set cells;\n\
                         /* é 😀 */ set nodes\n\
                         set edges;\n\
                         kernel k(double *q) { /* é */ q[0] = 😀 1.0; }\n";

#[test]
fn check_reports_a_syntax_error_rustc_style_and_exits_1() {
    let scratch = Scratch::new();
    let file = scratch.file("broken.op2", "set cells\nset nodes;\n");
    scratch
        .op2(&["check", file])
        .assert()
        .code(1)
        .stdout("")
        .stderr(contains("error[E001]: expected `;`, found keyword `set`"))
        .stderr(contains("broken.op2:1:10"))
        .stderr(contains("1 │ set cells"))
        .stderr(contains("help: insert `;`"))
        .stderr(contains("error: could not check due to"));
}

#[test]
fn check_reports_every_file_it_is_given() {
    let scratch = Scratch::new();
    let clean = scratch.file("clean.op2", CLEAN);
    let broken = scratch.file("broken.op2", "main { x = 1 }\n");
    scratch
        .op2(&["check", clean, broken])
        .assert()
        .code(1)
        .stderr(contains("broken.op2:1:13"))
        .stderr(contains("clean.op2").not());
}

#[test]
fn json_has_the_documented_keys_and_counts_columns_in_characters() {
    let scratch = Scratch::new();
    let file = scratch.file("unicode.op2", NON_ASCII);
    let output = scratch
        .op2(&["check", "--message-format", "json", file])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let records = json_lines(&output.stdout);
    for record in &records {
        let mut keys: Vec<&str> = record
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "code",
                "column",
                "end_column",
                "end_line",
                "file",
                "fixes",
                "label",
                "line",
                "message",
                "related",
                "severity"
            ],
            "{record}"
        );
        for related in record["related"].as_array().expect("related is a list") {
            let mut keys: Vec<&str> = related
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            assert_eq!(keys, ["column", "file", "line", "message"], "{record}");
        }
    }

    let syntax: Vec<&Value> = with_code(&records, "E001");
    assert_eq!(
        syntax,
        [
            // After `/* é 😀 */ set nodes`: 19 characters (24 bytes, 20
            // UTF-16 units), so column 20.
            &json!({
                "code": "E001",
                "severity": "error",
                "message": "expected `;`, found keyword `set`",
                "file": "unicode.op2",
                "line": 2,
                "column": 20,
                "end_line": 2,
                "end_column": 20,
                "label": "",
                "related": [
                    {"message": "unexpected token", "file": "unicode.op2", "line": 3, "column": 1}
                ],
                // The fix as rustc gives it: the range (here empty, an
                // insertion) in lines and columns and in bytes (24 + 10).
                "fixes": [{
                    "title": "insert `;`",
                    "edits": [{
                        "file": "unicode.op2", "line": 2, "column": 20, "end_line": 2,
                        "end_column": 20, "byte_start": 34, "byte_end": 34, "replacement": ";"
                    }]
                }],
            }),
            // `😀` is one column wide, though two UTF-16 units.
            &json!({
                "code": "E001",
                "severity": "error",
                "message": "unexpected `😀`",
                "file": "unicode.op2",
                "line": 4,
                "column": 38,
                "end_line": 4,
                "end_column": 39,
                "label": "",
                "related": [],
                "fixes": [],
            }),
        ]
    );
}

/// A program whose only diagnostic is a warning (W503).
const WARNING: &str = r#"set cells;
dat p_q: double on cells;
global total: double;
kernel init(double *q) { q[0] = q[0] + 1.0; }
kernel sum(const double *q, double *t) { *t += q[0]; }
main {
    par_loop init over cells (p_q WRITE);
    par_loop sum over cells (p_q READ, total INC);
    print("%g", total);
}
"#;

#[test]
fn a_clean_file_exits_0_and_says_what_was_checked() {
    let scratch = Scratch::new();
    let file = scratch.file("clean.op2", CLEAN);
    let other = scratch.file("other.op2", CLEAN);
    scratch
        .op2(&["check", file])
        .assert()
        .success()
        .stdout("")
        .stderr("checked 1 file: no problems\n");
    scratch
        .op2(&["check", file, other])
        .assert()
        .success()
        .stdout("")
        .stderr("checked 2 files: no problems\n");
    for quiet in ["-q", "--quiet"] {
        scratch
            .op2(&["check", quiet, file])
            .assert()
            .success()
            .stdout("")
            .stderr("");
    }
    scratch
        .op2(&["check", "--message-format", "json", file])
        .assert()
        .success()
        .stdout("")
        .stderr("");
}

#[test]
fn deny_warnings_turns_warnings_into_errors() {
    let scratch = Scratch::new();
    let file = scratch.file("warning.op2", WARNING);
    scratch
        .op2(&["check", file])
        .assert()
        .success()
        .stderr(contains("warning[W503]").and(contains("warning: 1 warning emitted")));
    for deny in [
        &["-D", "warnings"][..],
        &["--deny", "warnings"],
        &["-Dwarnings"],
    ] {
        let mut args = vec!["check"];
        args.extend_from_slice(deny);
        args.push(file);
        scratch.op2(&args).assert().code(1).stderr(
            contains("error[W503]").and(contains("could not check due to 1 previous error")),
        );
    }
    // `build` refuses to write the graph.
    scratch
        .op2(&["build", "-D", "warnings", file])
        .assert()
        .code(1)
        .stderr(contains("error[W503]").and(contains("nothing written")));
    assert!(!scratch.path("warning.graph.xml").exists());
    scratch.op2(&["build", file]).assert().success();
    assert!(scratch.path("warning.graph.xml").exists());
}

/// `-D warnings` counts the instance data's warnings too: an entry the
/// program does not declare (W705) writes no graph.
#[test]
fn deny_warnings_counts_the_instance_datas_warnings() {
    let scratch = Scratch::new();
    let file = scratch.file("clean.op2", "set cells;\ndat p: double on cells;\nkernel k(double *x) { x[0] = 1.0; }\nmain {\n    par_loop k over cells (p WRITE);\n    print(\"done\");\n}\n");
    scratch.file("mesh.json", r#"{"sets": {"cells": 4, "extra": 2}}"#);
    scratch
        .op2(&[
            "build",
            "-D",
            "warnings",
            file,
            "--instance",
            "mesh.json",
            "-o",
            "g.xml",
        ])
        .assert()
        .code(1)
        .stderr(
            contains("error[W705]: mesh.json: sets.extra: the program declares no set `extra`")
                .and(contains("error: nothing written: `mesh.json` has 1 error")),
        );
    assert!(!scratch.path("g.xml").exists());
    scratch
        .op2(&["build", file, "--instance", "mesh.json", "-o", "g.xml"])
        .assert()
        .success()
        .stderr(contains("warning[W705]"));
    assert!(scratch.path("g.xml").exists());
}

#[test]
fn a_missing_file_exits_2_naming_it() {
    let scratch = Scratch::new();
    scratch
        .op2(&["check", "no_such_file.op2"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("no_such_file.op2"));
}

#[test]
fn a_file_that_is_not_utf8_is_an_error_naming_the_place() {
    let scratch = Scratch::new();
    // Latin-1 `é` (0xE9) on the second line, after `set n`.
    let file = scratch.file("latin1.op2", b"set cells;\nset n\xe9;\n");
    scratch
        .op2(&["check", file])
        .assert()
        .code(2)
        .stderr(contains("latin1.op2:2:6"))
        .stderr(contains("not valid UTF-8"));
}

#[test]
fn parse_prints_the_tree_with_field_names() {
    let scratch = Scratch::new();
    let file = scratch.file("cells.op2", "set cells;\nmap pcell: cells -> cells[2];\n");
    scratch
        .op2(&["parse", file])
        .assert()
        .success()
        .stdout(contains("source_file [0, 0] - [2, 0]"))
        .stdout(contains("set_declaration [0, 0] - [0, 10]"))
        .stdout(contains("name: identifier [0, 4] - [0, 9] \"cells\""))
        .stdout(contains("from: identifier"))
        .stdout(contains("arity: integer_literal [1, 26] - [1, 27] \"2\""));
}

#[test]
fn parse_shows_missing_tokens_and_exits_1() {
    let scratch = Scratch::new();
    let file = scratch.file("broken.op2", "set cells\n");
    scratch
        .op2(&["parse", file])
        .assert()
        .code(1)
        .stdout(contains("MISSING ;"));
}

/// The analyser may report other things about the examples as it grows;
/// what this test guards is that each one parses.
#[test]
fn every_example_checks_without_syntax_errors() {
    for example in examples() {
        let path = example.to_str().expect("a UTF-8 path");
        let output = op2()
            .args(["check", "--message-format", "json", path])
            .output()
            .expect("op2 runs");
        let records = json_lines(&output.stdout);
        assert!(
            with_code(&records, "E001").is_empty(),
            "{path}: {records:#?}"
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{path}: {records:#?}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// `--fan-limit` takes at most 65536 (`op2_codegen::MAX_FAN_LIMIT`),
/// refused when the command line is read, before the program is read or a
/// fetch's aggregator buffers are sized (`--fan-limit 4294967295` made
/// `op2 build` ask for hundreds of gigabytes); 65536 itself builds.
#[test]
fn a_fan_limit_past_the_largest_is_refused_when_the_command_line_is_read() {
    for command in ["build", "simulate"] {
        for limit in ["65537", "4294967295"] {
            op2()
                .args([command, "missing.op2", "--instance", "missing.json"])
                .args(["--fan-limit", limit])
                .assert()
                .code(2)
                .stderr(contains(format!(
                    "invalid value '{limit}' for '--fan-limit <FAN_LIMIT>': a tree may have at most 65536 children per device; 0 means no trees"
                )));
        }
    }
    let scratch = Scratch::new();
    scratch.file(
        "fetch.op2",
        "set cells;\ndat p_v: double[6] on cells;\nglobal g: double[12];\nmain {\n    fetch p_v into g;\n    print(\"%g\", g[11]);\n}\n",
    );
    scratch.file("data.json", r#"{ "sets": { "cells": 2 } }"#);
    let output = scratch
        .op2(&[
            "build",
            "fetch.op2",
            "--instance",
            "data.json",
            "-o",
            "out.xml",
        ])
        .args(["--fan-limit", "65536"])
        .output()
        .expect("op2 runs");
    assert!(output.status.success(), "{output:?}");
    let xml = std::fs::read_to_string(scratch.path("out.xml")).expect("the graph");
    assert!(xml.contains("double buffer_value[393216];"), "{xml}");
}
