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
