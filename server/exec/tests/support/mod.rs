//! Loading programs and instances, and running them both ways.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use op2_analysis::{Analysis, Options, analyse_text};
use op2_codegen::GraphType;
use op2_exec::simulate::{self, SimulationError, Statistics};
use op2_exec::{Reference, RuntimeError, State, Tolerance, compare};
use op2_instance::{InstanceData, NoProgress, read};

pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub struct Case {
    pub analysis: Analysis,
    pub graph: GraphType,
    pub data: InstanceData,
}

/// Analyses `text` and reads `json` for it; panics with the problems.
pub fn load(name: &str, text: &str, json: &[u8]) -> Case {
    let analysis = analyse_text(Path::new(name), text, &Options { require_main: true });
    assert!(
        !analysis.has_errors(),
        "{name}: {:#?}",
        analysis.diagnostics
    );
    let loaded = read(json, &analysis.program, &mut NoProgress);
    let data = loaded
        .data
        .unwrap_or_else(|| panic!("{name}: instance problems {:#?}", loaded.problems));
    let graph = op2_codegen::graph_type(&analysis, "test");
    Case {
        analysis,
        graph,
        data,
    }
}

pub fn example(stem: &str) -> Case {
    let directory = repository().join("docs/examples");
    let text =
        std::fs::read_to_string(directory.join(format!("{stem}.op2"))).expect("example program");
    let json =
        std::fs::read(directory.join(format!("{stem}.instance.json"))).expect("example instance");
    load(stem, &text, &json)
}

impl Case {
    pub fn run(&self) -> Result<(State, String), RuntimeError> {
        let mut output = String::new();
        let state = State::new(&self.analysis.program, &self.data);
        let mut sink = |text: &str| output.push_str(text);
        let result = Reference::new(&self.analysis, state, &mut sink).run(u64::MAX);
        result.map(|state| (state, output))
    }

    pub fn simulate(
        &self,
        options: simulate::Options,
    ) -> Result<(State, String, Statistics), SimulationError> {
        let mut output = String::new();
        let mut sink = |text: &str| output.push_str(text);
        let result =
            simulate::simulate(&self.analysis, &self.graph, &self.data, options, &mut sink);
        result.map(|(state, statistics)| (state, output, statistics))
    }

    /// Runs the reference and the simulation with `seed` and asserts that
    /// every dat and global agrees.
    pub fn assert_agree(&self, seed: u64, tolerance: Tolerance) -> Statistics {
        let (expected, run_output) = self.run().expect("the reference run succeeds");
        let options = simulate::Options {
            seed,
            ..simulate::Options::default()
        };
        let (actual, sim_output, statistics) = self
            .simulate(options)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let differences = compare(&self.analysis.program, &expected, &actual, tolerance);
        assert!(
            differences.is_empty(),
            "seed {seed}: {} differences, worst {:?}",
            differences.len(),
            &differences[..differences.len().min(5)]
        );
        assert_eq!(
            run_output.lines().count(),
            sim_output.lines().count(),
            "seed {seed}: both print as many lines"
        );
        statistics
    }
}
