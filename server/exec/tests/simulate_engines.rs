//! `op2 simulate`'s two engines, the interpreter (the reference) and the
//! kernels compiled to machine code, on every program of the repository
//! that has an instance, with several seeds: the same delivery order, bit-identical final states, the
//! same output and statistics. Airfoil is compared in `airfoil.rs`,
//! generated programs in `differential.rs`.

use std::path::Path;

use crate::support;
use support::{load, repository};

const SEEDS: [u64; 4] = [0, 1, 7, 42];

/// Every `NAME.op2` next to a `NAME.instance.json` in `directory`.
fn programs(directory: &Path) -> Vec<(String, String, Vec<u8>)> {
    let mut found = Vec::new();
    let entries =
        std::fs::read_dir(directory).unwrap_or_else(|e| panic!("{}: {e}", directory.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".op2"))
        else {
            continue;
        };
        let instance = directory.join(format!("{stem}.instance.json"));
        if let Ok(json) = std::fs::read(&instance) {
            let text = std::fs::read_to_string(&path).expect("program");
            found.push((stem.to_owned(), text, json));
        }
    }
    found.sort();
    found
}

#[test]
fn every_program_with_an_instance_simulates_alike_under_both_engines() {
    let mut compared = 0;
    for directory in [
        "docs/examples",
        "server/cli/tests/simulate",
        "server/fuzz/regressions",
    ] {
        for (stem, text, json) in programs(&repository().join(directory)) {
            let analysis = op2_analysis::analyse_text(
                Path::new(&stem),
                &text,
                &op2_analysis::Options { require_main: true },
            );
            if analysis.has_errors() {
                // A regression input of syntax checking: nothing runs.
                continue;
            }
            let case = load(&stem, &text, &json);
            for seed in SEEDS {
                case.assert_engines_simulate_alike(seed, 50);
            }
            compared += 1;
        }
    }
    // docs/examples has three, the simulate tests two, the fuzz
    // regressions two: a moved directory must not empty this test.
    assert!(compared >= 7, "only {compared} programs found");
}
