//! Every saved input that once found a defect is replayed through the real
//! binary (a crash in one is a finding, not the end of the test run), and
//! must pass every property now.

use std::path::Path;
use std::process::Command;

#[test]
fn every_regression_input_passes() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let inputs = std::fs::read_dir(&folder)
        .expect("the regressions folder exists")
        .flatten()
        .filter(|e| {
            e.path()
                .extension()
                .is_some_and(|x| x == "op2" || x == "lsp")
        })
        .count();
    if inputs == 0 {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("SKIPPED: no regression inputs in {} yet", folder.display());
        }
        return;
    }
    let output = Command::new(env!("CARGO_BIN_EXE_op2-fuzz"))
        .arg("replay")
        .arg(&folder)
        .args(["--hang-secs", "120", "--slow-secs", "60", "--quiet"])
        .output()
        .expect("op2-fuzz runs");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{report}");
    assert!(report.contains(&format!("{inputs} cases")), "{report}");
}

/// F10 (campaign seed 22, cases 13405 and 13944): a MISSING token deep
/// inside nested blocks, or nested `if`s, overflowed the 2 MB stack of a
/// fuzz worker in the syntax error checker (tree-sitter's C recursed once
/// per level). The inputs are generated here, small and deep, rather than
/// kept (they were 32 KB and 160 KB), and replayed through the binary like
/// the files of `regressions/`, so that a stack overflow is a finding and
/// not the end of the test run.
#[test]
fn deep_inputs_with_a_missing_token_pass() {
    let depth = 20_000;
    let folder = std::env::temp_dir().join(format!("op2-fuzz-deep-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let programs = [
        (
            "deep-blocks-missing-name.op2",
            format!(
                "set s;\nkernel k(double *q) {{\n{}q[0] = ;{}\n}}\nmain {{ }}\n",
                "{".repeat(depth),
                "}".repeat(depth)
            ),
        ),
        (
            "deep-ifs-missing-semicolon.op2",
            format!(
                "kernel k(double *q) {{\n double h = 0.0;\n{}int x = 1\n}}\nmain {{ }}\n",
                "if (h) ".repeat(depth)
            ),
        ),
    ];
    for (name, text) in &programs {
        std::fs::write(folder.join(name), text).expect("write the input");
    }
    let output = Command::new(env!("CARGO_BIN_EXE_op2-fuzz"))
        .arg("replay")
        .arg(&folder)
        .args(["--hang-secs", "120", "--slow-secs", "60", "--quiet"])
        .output()
        .expect("op2-fuzz runs");
    let _ = std::fs::remove_dir_all(&folder);
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{report}");
    assert!(report.contains("2 cases"), "{report}");
}
