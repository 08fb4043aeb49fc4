//! `op2 simulate --check` end to end: the defaults pass every bundled
//! example, and a failing check names a tolerance that passes.

mod support;

use std::path::PathBuf;

use support::op2;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples")
}

fn simulate(stem: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    let directory = examples();
    let program = directory.join(format!("{stem}.op2"));
    let instance = directory.join(format!("{stem}.instance.json"));
    let mut command = op2();
    command
        .arg("simulate")
        .arg(&program)
        .arg("--instance")
        .arg(&instance)
        .arg("--check")
        .args(extra);
    command.assert()
}

#[test]
fn the_default_tolerance_passes_every_bundled_example() {
    for stem in ["dot_product", "scatter", "jacobi"] {
        for seed in ["0", "7", "42"] {
            let output = simulate(stem, &["--seed", seed]).get_output().clone();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(output.status.success(), "{stem} --seed {seed}:\n{stderr}");
            assert!(
                stderr.contains("(rtol 1e-9, atol 1e-12)"),
                "{stem}: names the tolerance: {stderr}"
            );
        }
    }
}

#[test]
fn a_failing_check_names_tolerances_that_pass() {
    // With no tolerance at all, summation order shows.
    let output = simulate("scatter", &["--seed", "42", "--rtol", "0", "--atol", "0"])
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let help = stderr
        .lines()
        .find(|line| line.starts_with("help: "))
        .unwrap_or_else(|| panic!("a help line: {stderr}"));
    let flags: Vec<&str> = help.split('`').skip(1).step_by(2).collect();
    assert_eq!(flags.len(), 2, "{help}");
    for flag in flags {
        let (name, value) = flag.split_once(' ').expect("`--flag value`");
        let other = if name == "--rtol" { "--atol" } else { "--rtol" };
        // Each suggestion passes with the other tolerance kept at 0.
        simulate("scatter", &["--seed", "42", name, value, other, "0"]).success();
    }
}
