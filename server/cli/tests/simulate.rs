//! `op2 simulate --check` end to end: the defaults pass every bundled
//! example, and a failing check names a tolerance that passes.

use crate::support;

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
    let output = simulate(
        "scatter",
        &[
            "--seed",
            "42",
            "--rtol",
            "0",
            "--atol",
            "0",
            "--tolerance-only",
        ],
    )
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
        simulate(
            "scatter",
            &["--seed", "42", name, value, other, "0", "--tolerance-only"],
        )
        .success();
    }
}

/// The fuzz campaign's case (seed 9, 1516280; `server/fuzz/regressions`):
/// an `int` global takes truncated terms of a double dat that the two
/// engines increment in different orders, so one term is 8812 in one and
/// 8813 in the other. The check names the global in a note and passes.
#[test]
fn a_value_the_order_of_sums_moves_by_any_amount_is_named_not_failed() {
    let regressions = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let stem = "simulate-int-truncated-from-incremented-double";
    let directory = tempfile::tempdir().expect("a temporary folder");
    let program = directory.path().join("program.op2");
    std::fs::copy(regressions.join(format!("{stem}.op2")), &program).expect("copied");
    std::fs::copy(
        regressions.join(format!("{stem}.imports/lib.op2")),
        directory.path().join("lib.op2"),
    )
    .expect("copied");
    let output = op2()
        .arg("simulate")
        .arg(&program)
        .arg("--instance")
        .arg(regressions.join(format!("{stem}.instance.json")))
        .args([
            "--check",
            "--seed",
            "6973588195043848320",
            "--max-iterations",
            "16",
        ])
        .output()
        .expect("op2 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "note: 1 value(s) of `g_1` differ (first globals.g_1: run 38435 simulate 38438); they are not compared"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "check: the simulation agrees with `op2 run` on every dat and global compared"
        ),
        "{stderr}"
    );
}

/// The review of 2026-11-28 (t1b): how often `main` runs a par_loop
/// depends on a sum, 0.1 + 0.2 + 0.3, that the two engines add in other
/// orders. The check says that the paths differ and why, and passes; a
/// program whose paths differ without such a condition would fail.
#[test]
fn a_path_through_main_that_the_order_of_sums_decides_is_named_not_failed() {
    let directory = tempfile::tempdir().expect("a temporary folder");
    let program = directory.path().join("path.op2");
    let instance = directory.path().join("path.json");
    std::fs::write(
        &program,
        "set s;\ndat x: double on s;\ndat y: int on s;\nglobal g: double;\n\
         kernel add(const double *a, double *sum) { *sum += *a; }\n\
         kernel bump(int *v) { *v += 1; }\n\
         main {\n    par_loop add over s (x READ, g INC);\n\
         \x20   int n = (int) ((g - 0.6) * 1e17);\n\
         \x20   for (int i = 0; i < n; i++) par_loop bump over s (y INC);\n}\n",
    )
    .expect("written");
    std::fs::write(
        &instance,
        r#"{ "sets": { "s": 3 }, "dats": { "x": [0.1, 0.2, 0.3] } }"#,
    )
    .expect("written");
    let mut diverged = 0;
    for seed in ["0", "1", "2", "3"] {
        let output = op2()
            .arg("simulate")
            .arg(&program)
            .arg("--instance")
            .arg(&instance)
            .args(["--check", "--seed", seed])
            .output()
            .expect("op2 runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "seed {seed}: {stderr}");
        if stderr.contains("note: the simulation took another path through `main` than `op2 run`") {
            assert!(
                stderr.contains("so the final states are not compared"),
                "{stderr}"
            );
            diverged += 1;
        }
    }
    assert!(diverged > 0, "some seed adds the sum in another order");
}

#[test]
fn a_tolerance_that_is_not_a_finite_number_of_zero_or_more_is_refused() {
    for argument in ["--rtol=NaN", "--atol=-1e-9", "--rtol=inf"] {
        let output = simulate("scatter", &[argument])
            .code(2)
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("a tolerance is a finite number, zero or more"),
            "{argument}: {stderr}"
        );
    }
}

/// `op2 COMMAND loops.op2 --max-iterations LIMIT`: exit code, what `main`
/// printed, and the error line.
fn stopped(command: &str, limit: u64) -> (Option<i32>, String, Vec<String>) {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/simulate");
    let output = op2()
        .arg(command)
        .arg(directory.join("loops.op2"))
        .arg("--instance")
        .arg(directory.join("loops.instance.json"))
        .args(["--max-iterations", &limit.to_string()])
        .output()
        .expect("op2 runs");
    let errors = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|line| line.starts_with("error"))
        .map(str::to_owned)
        .collect();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        errors,
    )
}

#[test]
fn simulate_stops_at_the_iteration_limit_where_run_stops() {
    // `while`, `do`, `for` with `continue` and `for (;;)` with `break`
    // run 3 + 2 + 2 + 3 = 10 iterations in all: every limit below that
    // stops both commands at the same point of the output, and 10 or more
    // lets both finish.
    for limit in 0..=11 {
        let run = stopped("run", limit);
        let simulate = stopped("simulate", limit);
        assert_eq!(run, simulate, "--max-iterations {limit}");
        if limit < 10 {
            assert_ne!(run.0, Some(0), "--max-iterations {limit}: {run:?}");
            assert_eq!(
                run.2,
                [format!(
                    "error: `main` stopped after {limit} loop iterations (--max-iterations)"
                )],
                "--max-iterations {limit}"
            );
        } else {
            assert_eq!(run.0, Some(0), "--max-iterations {limit}: {run:?}");
            assert!(run.1.ends_with("total 9\n"), "{run:?}");
        }
    }
}

/// `op2 simulate` never reaches the simulator's limit of 32 sends per
/// invocation (`SimulationError::Limit`, which op2-exec's
/// `an_invocation_with_more_sends_than_the_simulator_keeps_is_refused`
/// checks): `sends.op2`'s par_loop has 33 write sends, more than POETS'
/// 32 output pins, so the check refuses it first with E802, status 1, and
/// nothing runs.
#[test]
fn a_loop_past_the_simulators_sends_is_refused_by_the_check_first() {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/simulate");
    let program = std::fs::read_to_string(directory.join("sends.op2")).expect("the fixture");
    let sends = op2_exec::simulate::MAX_SENDS + 1;
    assert_eq!(
        program.matches(" INC").count(),
        sends,
        "the fixture's sends"
    );
    let output = op2()
        .arg("simulate")
        .arg(directory.join("sends.op2"))
        .arg("--instance")
        .arg(directory.join("sends.instance.json"))
        .output()
        .expect("op2 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error[E802]: device type `set_cells` would need 35 output pins")
            && stderr.contains("sends.op2` has errors; nothing was run")
            && !stderr.contains("the simulator keeps"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

/// Review G6: values whose rounding a later operation makes far larger
/// than the tolerance, without any branch on them (`simulate/singular.op2`:
/// a sum that cancels, a reciprocal of it, `pow` of a negative base;
/// `simulate/big_terms.op2`: terms far larger than the data). The check
/// runs `main` again in another order, which moves each as far, names them
/// in a note and passes; `--tolerance-only` holds them to the tolerance and
/// fails, as the check did before.
#[test]
fn a_value_that_another_order_moves_as_far_is_named_not_failed() {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/simulate");
    for (stem, seed, values) in [
        ("singular", "3", "3 value(s) of `s`, `t`, `r`"),
        ("big_terms", "0", "1 value(s) of `d`"),
    ] {
        let check = |extra: &[&str]| {
            op2()
                .arg("simulate")
                .arg(directory.join(format!("{stem}.op2")))
                .arg("--instance")
                .arg(directory.join(format!("{stem}.instance.json")))
                .args(["--check", "--seed", seed])
                .args(extra)
                .output()
                .expect("op2 runs")
        };
        let output = check(&[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stem}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "note: {values} differ beyond the tolerance, by at most 16× as much as running `main` again in another order moves them"
            )),
            "{stem}: {stderr}"
        );
        assert!(
            stderr.contains(
                "check: the simulation agrees with `op2 run` on every dat and global compared"
            ),
            "{stem}: {stderr}"
        );
        let output = check(&["--tolerance-only"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stem}: {stderr}");
        assert!(
            stderr.contains("error: the simulation differs from `op2 run` in"),
            "{stem}: {stderr}"
        );
        assert!(!stderr.contains("another order"), "{stem}: {stderr}");
    }
}
