//! The airfoil example on the shared meshes: 100 iterations simulated with
//! adversarial delivery agree with the reference run.

#![allow(clippy::print_stderr)]

use crate::support;

use op2_exec::Tolerance;
use support::{load, repository};

fn airfoil_case(mesh: &str, iterations: u32) -> Option<support::Case> {
    let path = repository().join("../shared/data").join(mesh);
    let Ok(json) = std::fs::read(&path) else {
        eprintln!(
            "SKIPPED LOUDLY: {} is missing; the shared meshes live beside the repository",
            path.display()
        );
        return None;
    };
    // Fewer outer iterations through the instance's consts.
    let mut document: serde_json::Value = serde_json::from_slice(&json).expect("valid JSON");
    document["consts"]["niter"] = serde_json::json!(iterations);
    let json = serde_json::to_vec(&document).expect("serialisable");
    let text = std::fs::read_to_string(repository().join("docs/examples/airfoil.op2"))
        .expect("airfoil example");
    Some(load("airfoil.op2", &text, &json))
}

#[test]
fn airfoil_100_iterations_agree_on_the_small_mesh() {
    let Some(case) = airfoil_case("airfoil_I10_J15.json", 100) else {
        return;
    };
    let (_, output) = case.run().expect("the reference runs");
    assert_eq!(
        output.lines().count(),
        1,
        "prints at iteration 100: {output}"
    );
    for seed in [1, 2] {
        // Over 100 iterations, summation order changes the last bits of the
        // residuals, and those feed back into the state.
        let statistics = case.assert_agree(seed, Tolerance::DEFAULT);
        assert!(statistics.total.delivered > 1_000_000, "{statistics}");
    }
}

/// The kernels compiled for `op2 simulate` against the interpreter on the
/// small mesh: bit-identical under several delivery orders.
#[test]
fn airfoil_simulates_alike_under_both_engines() {
    let Some(case) = airfoil_case("airfoil_I10_J15.json", 3) else {
        return;
    };
    for seed in [0, 1, 7, 42] {
        let statistics = case
            .assert_engines_simulate_alike(seed, u64::MAX)
            .expect("airfoil simulates");
        assert!(statistics.evaluations > 1000, "{statistics}");
    }
}
