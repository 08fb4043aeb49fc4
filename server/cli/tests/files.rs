//! What `op2` reads and writes, end to end through the built binary: only
//! regular files are read (never blocking on a FIFO or a device), sources
//! have a size limit, a file that is not `.op2` is never shown in a
//! diagnostic, imports resolve from any working directory, and file-level
//! errors follow `--message-format json`.

use crate::support;

use std::fs;
use std::time::Duration;

use predicates::prelude::*;
use predicates::str::contains;
use serde_json::json;

use support::{Scratch, json_lines};

#[test]
fn an_import_of_a_file_that_is_not_op2_is_refused_and_never_shown() {
    let scratch = Scratch::new();
    scratch.file("secret.txt", "root:TOPSECRET:0:0\n");
    let main = scratch.file(
        "main.op2",
        "import \"secret.txt\";\nimport \"/etc/shadow\";\n",
    );
    scratch
        .op2(&["check", main])
        .assert()
        .code(1)
        .stderr(contains(
            "error[E104]: cannot import `secret.txt`: only `.op2` files can be imported",
        ))
        .stderr(contains("cannot import `/etc/shadow`: only `.op2` files"))
        .stderr(contains("TOPSECRET").not())
        .stderr(contains("root:").not());
    // Nor through a link that looks like a source.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(scratch.path("secret.txt"), scratch.path("lib.op2")).unwrap();
        let main = scratch.file("main.op2", "import \"lib.op2\";\n");
        scratch
            .op2(&["check", main])
            .assert()
            .code(1)
            .stderr(contains(
                "cannot import `lib.op2`: only `.op2` files can be imported",
            ))
            .stderr(contains("TOPSECRET").not());
    }
}

#[cfg(unix)]
#[test]
fn fifos_and_devices_are_refused_without_blocking() {
    let scratch = Scratch::new();
    let status = std::process::Command::new("mkfifo")
        .arg(scratch.path("pipe.op2"))
        .status()
        .unwrap();
    assert!(status.success());
    let main = scratch.file("main.op2", "import \"pipe.op2\";\nimport \"/dev/zero\";\n");
    scratch
        .op2(&["check", main])
        .timeout(Duration::from_secs(20))
        .assert()
        .code(1)
        .stderr(contains(
            "cannot import `pipe.op2`: not a regular file (it is a FIFO)",
        ))
        .stderr(contains("cannot import `/dev/zero`: only `.op2` files"));
    for path in ["pipe.op2", "/dev/urandom", "/dev/zero", "."] {
        scratch
            .op2(&["check", path])
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(contains(format!(
                "error: cannot read `{path}`: not a regular file"
            )));
    }
    let program = scratch.file("p.op2", "set cells;\nmain { }\n");
    for command in ["run", "simulate"] {
        scratch
            .op2(&[command, program, "--instance", "/dev/zero"])
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(contains(
                "cannot read `/dev/zero`: not a regular file (it is a character device)",
            ));
    }
    scratch
        .op2(&["build", program, "--instance", "pipe.op2"])
        .timeout(Duration::from_secs(20))
        .assert()
        .code(2)
        .stderr(contains(
            "cannot read `pipe.op2`: not a regular file (it is a FIFO)",
        ));
}

#[test]
fn a_source_over_the_limit_is_refused_before_it_is_read() {
    let scratch = Scratch::new();
    let file = fs::File::create(scratch.path("huge.op2")).unwrap();
    file.set_len(op2_codegen::files::SOURCE_LIMIT + 1).unwrap();
    scratch
        .op2(&["check", "huge.op2"])
        .assert()
        .code(2)
        .stderr(contains(format!(
            "error: cannot read `huge.op2`: the file is {} bytes, over the limit of {} bytes",
            op2_codegen::files::SOURCE_LIMIT + 1,
            op2_codegen::files::SOURCE_LIMIT
        )));
}

#[test]
fn imports_with_leading_parent_directories_resolve_from_any_directory() {
    let scratch = Scratch::new();
    fs::create_dir_all(scratch.path("a/b")).unwrap();
    fs::create_dir_all(scratch.path("imp")).unwrap();
    scratch.file("imp/lib2.op2", "set cells;\n");
    // A decoy where the wrong resolution (`a/b/imp/lib2.op2` with the
    // `..`s dropped, or `imp/` beside the working directory) would land.
    fs::create_dir_all(scratch.path("a/b/imp")).unwrap();
    scratch.file("a/b/imp/lib2.op2", "set wrong;\n");
    let program = "import \"../../imp/lib2.op2\";\ndat p: double on cells;\n";
    scratch.file("a/b/main.op2", program);
    for (dir, path) in [
        ("a/b", "main.op2"),
        ("a", "b/main.op2"),
        (".", "a/b/main.op2"),
    ] {
        scratch
            .op2(&["check", path])
            .current_dir(scratch.path(dir))
            .assert()
            .success()
            .stderr("checked 2 files: no problems\n");
    }
}

#[test]
fn file_level_errors_follow_the_message_format() {
    let scratch = Scratch::new();
    let clean = scratch.file("clean.op2", "set cells;\n");
    scratch.file("latin1.op2", b"set cells;\nset n\xe9;\n");
    let output = scratch
        .op2(&[
            "check",
            "--message-format",
            "json",
            "missing.op2",
            clean,
            "latin1.op2",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let records = json_lines(&output.stdout);
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!(records[0]["file"], "missing.op2");
    assert_eq!(records[0]["severity"], "error");
    assert_eq!(records[0]["code"], json!(null));
    assert_eq!(records[0]["line"], json!(null));
    assert!(
        records[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot read `missing.op2`: "),
        "{records:#?}"
    );
    assert_eq!(records[1]["file"], "latin1.op2");
    assert_eq!(
        (records[1]["line"].clone(), records[1]["column"].clone()),
        (json!(2), json!(6))
    );
    // Every field of a diagnostic, so that a reader of every line finds
    // them on these too.
    for record in &records {
        assert_eq!(record["label"], json!(""), "{record}");
        assert_eq!(record["related"], json!([]), "{record}");
        assert_eq!(record["fixes"], json!([]), "{record}");
    }
}

/// A program with a set whose graph instance is as large as the instance
/// data says.
const ONE_SET: &str = "set cells;\ndat p: double on cells;\n\
    kernel k(double *x) { x[0] = 1.0; }\n\
    main { par_loop k over cells (p WRITE); }\n";

#[cfg(unix)]
#[test]
fn output_never_replaces_what_is_not_a_regular_file() {
    use std::os::unix::fs::{FileTypeExt, symlink};
    let scratch = Scratch::new();
    let program = scratch.file("p.op2", ONE_SET);
    assert!(
        std::process::Command::new("mkfifo")
            .arg(scratch.path("pipe.xml"))
            .status()
            .unwrap()
            .success()
    );
    fs::create_dir(scratch.path("dir.xml")).unwrap();
    symlink(scratch.path("pipe.xml"), scratch.path("to-pipe.xml")).unwrap();
    symlink(scratch.path("gone"), scratch.path("dangling.xml")).unwrap();
    for (output, kind) in [
        ("pipe.xml", "a FIFO"),
        ("dir.xml", "a directory"),
        ("to-pipe.xml", "a symbolic link to a FIFO"),
        ("dangling.xml", "a symbolic link to nothing"),
        ("/dev/null", "a character device"),
    ] {
        scratch
            .op2(&["build", program, "-o", output])
            .timeout(Duration::from_secs(20))
            .assert()
            .code(2)
            .stderr(contains(format!(
                "cannot write `{output}`: not a regular file (it is {kind})"
            )));
    }
    assert!(
        fs::symlink_metadata(scratch.path("pipe.xml"))
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(
        fs::symlink_metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    // A link to a regular file: the file is written, the link stays.
    scratch.file("real.xml", "old");
    symlink(scratch.path("real.xml"), scratch.path("link.xml")).unwrap();
    scratch
        .op2(&["build", program, "-o", "link.xml"])
        .assert()
        .success();
    assert!(
        fs::symlink_metadata(scratch.path("link.xml"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        fs::read_to_string(scratch.path("real.xml"))
            .unwrap()
            .contains("<Graphs")
    );
    let leftovers: Vec<_> = fs::read_dir(scratch.path("."))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The audit's repository: `dot_product.graph.xml` in it is a symbolic link
/// to a private file outside it. `op2 build dot_product.op2` names that
/// output itself, so it refuses the link and writes nothing; the same path
/// named with `-o` is the user's choice, and the link is followed.
#[cfg(unix)]
#[test]
fn a_derived_output_is_never_written_through_a_symbolic_link() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let scratch = Scratch::new();
    fs::create_dir(scratch.path("repo")).unwrap();
    fs::create_dir(scratch.path("victim")).unwrap();
    let victim = scratch.path("victim/bashrc");
    fs::write(&victim, "SECRET\n").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o600)).unwrap();
    fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/examples/dot_product.op2"
        ),
        scratch.path("repo/dot_product.op2"),
    )
    .unwrap();
    symlink(
        "../victim/bashrc",
        scratch.path("repo/dot_product.graph.xml"),
    )
    .unwrap();
    let untouched = || {
        assert_eq!(fs::read_to_string(&victim).unwrap(), "SECRET\n");
        assert_eq!(
            fs::metadata(&victim).unwrap().permissions().mode() & 0o777,
            0o600
        );
    };
    support::op2()
        .current_dir(scratch.path("repo"))
        .args(["build", "dot_product.op2"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains(
            "cannot write `dot_product.graph.xml`: it is a symbolic link",
        ))
        .stderr(contains("name the output with `-o`"));
    untouched();
    assert!(
        fs::symlink_metadata(scratch.path("repo/dot_product.graph.xml"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let leftovers: Vec<_> = fs::read_dir(scratch.path("repo"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Named on the command line, the link is followed.
    support::op2()
        .current_dir(scratch.path("repo"))
        .args(["build", "dot_product.op2", "-o", "dot_product.graph.xml"])
        .assert()
        .success();
    assert!(fs::read_to_string(&victim).unwrap().contains("<Graphs"));
}

/// A file name holding an escape sequence never reaches the terminal as
/// one: not in a diagnostic's header, not in `nothing written`, not in the
/// `wrote …` summary nor in an error.
#[cfg(unix)]
#[test]
fn escape_sequences_in_file_names_are_shown_not_sent() {
    use std::os::unix::fs::symlink;
    let scratch = Scratch::new();
    let bad = scratch.file("e\x1b]0;T\x07.op2", "set cells;\ndat p double on cells;\n");
    let good = scratch.file("g\x1b]0;T\x07.op2", ONE_SET);
    symlink("nowhere", scratch.path("g\x1b]0;T\x07.graph.xml")).unwrap();
    let no_escape = |output: &std::process::Output| {
        for stream in [&output.stdout, &output.stderr] {
            assert!(
                !stream.contains(&0x1b) && !stream.contains(&0x07),
                "{}",
                String::from_utf8_lossy(stream)
            );
        }
    };
    for args in [
        vec!["check", bad],
        vec!["build", bad],
        // Refused: the derived output is a symbolic link.
        vec!["build", good],
        vec!["fmt", bad],
        // A file that is not there.
        vec!["check", "m\x1b]0;T\x07.op2"],
    ] {
        let output = scratch.op2(&args).output().unwrap();
        assert!(!output.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains('\u{241B}'),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        no_escape(&output);
    }
    fs::remove_file(scratch.path("g\x1b]0;T\x07.graph.xml")).unwrap();
    let output = scratch.op2(&["build", good]).output().unwrap();
    assert!(output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .starts_with("wrote g\u{241B}]0;T\u{2407}.graph.xml")
    );
    no_escape(&output);
}

/// SIGTERM, then in a second run SIGINT, sent to `op2 ARGS` (run in
/// `scratch`) while a temporary file whose name starts with `temporary`
/// exists: the process ends by the signal (the shell's 143 and 130), and
/// neither the temporary file nor `target` is left.
#[cfg(unix)]
fn a_signal_mid_write_leaves_nothing(
    scratch: &Scratch,
    args: &[&str],
    temporary: &str,
    target: &str,
) {
    let temporary_in = |dir: &std::path::Path| {
        fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with(temporary))
    };
    use rustix::process::{Pid, Signal, kill_process};
    for (signal, name) in [(Signal::TERM, "TERM"), (Signal::INT, "INT")] {
        // Each temporary file waits a minute once made
        // (`op2_instance::temporary::HOLD_VARIABLE`), so the signal lands
        // while it exists however fast the machine writes or slow it polls.
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("op2"))
            .current_dir(scratch.path("."))
            .args(args)
            .env(op2_instance::temporary::HOLD_VARIABLE, "60000")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        let started = std::time::Instant::now();
        while !temporary_in(&scratch.path(".")) {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{args:?} ended before its temporary file was seen"
            );
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{args:?}: no temporary file"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        kill_process(pid, signal).unwrap();
        let status = child.wait().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "{args:?}: SIG{name} did not end the process ({status})"
        );
        assert!(
            !temporary_in(&scratch.path(".")),
            "{args:?}: a temporary file survived SIG{name} ({status})"
        );
        assert!(
            !scratch.path(target).exists(),
            "{args:?}: the output was written although SIG{name} came first"
        );
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(signal.as_raw()), "{args:?}: {status}");
    }
}

/// SIGINT or SIGTERM while a build writes its temporary file: the file is
/// removed and the process ends by the signal.
#[cfg(unix)]
#[test]
fn no_temporary_file_survives_a_signal() {
    let scratch = Scratch::new();
    let program = scratch.file("p.op2", ONE_SET);
    scratch.file("big.json", r#"{"sets": {"cells": 3000}}"#);
    a_signal_mid_write_leaves_nothing(
        &scratch,
        &["build", program, "--instance", "big.json", "-o", "out.xml"],
        ".op2-build-",
        "out.xml",
    );
}

/// A program with a dat (given by its initial value) and its instance of
/// 3,000 cells (the temporary file waits for the signal, whatever its size).
const LARGE_DAT: &str = "set cells;\ndat p: double[2] on cells = 1.0;\n\
    kernel k(double *x) { x[0] = x[1] + 1.0; }\n\
    main { par_loop k over cells (p RW); }\n";
const LARGE_INSTANCE: &str = r#"{"sets": {"cells": 3000}}"#;

/// The same for `op2 instance convert`'s output.
#[cfg(unix)]
#[test]
fn no_temporary_file_of_a_conversion_survives_a_signal() {
    let scratch = Scratch::new();
    let program = scratch.file("p.op2", LARGE_DAT);
    scratch.file("big.json", LARGE_INSTANCE);
    a_signal_mid_write_leaves_nothing(
        &scratch,
        &[
            "instance",
            "convert",
            "big.json",
            "out.h5",
            "--program",
            program,
        ],
        ".op2-",
        "out.h5",
    );
}

/// The same for the final state `op2 run --final-state` writes.
#[cfg(unix)]
#[test]
fn no_temporary_file_of_a_final_state_survives_a_signal() {
    let scratch = Scratch::new();
    let program = scratch.file("p.op2", LARGE_DAT);
    scratch.file("big.json", LARGE_INSTANCE);
    a_signal_mid_write_leaves_nothing(
        &scratch,
        &[
            "run",
            program,
            "--instance",
            "big.json",
            "--final-state",
            "out.h5",
        ],
        ".op2-",
        "out.h5",
    );
}
