//! Loading programs and instances, and running them both ways.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use op2_analysis::value::Value;
use op2_analysis::{Analysis, Options, analyse_text};
use op2_codegen::GraphType;
use op2_exec::simulate::{self, SimulationError, Statistics};
use op2_exec::{Engine, Reference, RuntimeError, State, Tolerance, compare};
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
    /// The value of the global `name` in `state`, a state of this case's
    /// program.
    pub fn global(&self, state: &State, name: &str) -> Vec<Value> {
        let index = self
            .analysis
            .program
            .globals
            .iter()
            .position(|g| g.name == name)
            .expect("the global exists");
        state.globals[index].clone()
    }

    /// The values of the dat `name` in `state`, a state of this case's
    /// program.
    pub fn dat(&self, state: &State, name: &str) -> Vec<Value> {
        let index = self
            .analysis
            .program
            .dats
            .iter()
            .position(|d| d.name == name)
            .expect("the dat exists");
        state.dats[index].clone()
    }

    /// The same case with the graph built for `fan_limit` (0: the flat
    /// controller; 2: the deepest trees).
    pub fn with_fan_limit(mut self, fan_limit: u32) -> Case {
        self.graph = op2_codegen::graph_type_with_fan_limit(&self.analysis, "test", fan_limit);
        self
    }

    /// Runs the reference semantics with the interpreter and with the
    /// compiled engine, asserts that both print the same text and end in
    /// bit-identical states (or fail with the same message), and returns
    /// the interpreter's result.
    pub fn run(&self) -> Result<(State, String), RuntimeError> {
        self.run_limited(u64::MAX)
    }

    /// [`Case::run`] with a limit on `main`'s loop iterations.
    pub fn run_limited(&self, max_iterations: u64) -> Result<(State, String), RuntimeError> {
        let interpreted = self.run_with(Engine::Interp, max_iterations);
        let compiled = self.run_with(Engine::Compiled, max_iterations);
        assert_same_run(&interpreted, &compiled);
        interpreted
    }

    /// Runs the reference semantics with one engine; panics when the
    /// compiled engine was asked for and is not used.
    pub fn run_with(
        &self,
        engine: Engine,
        max_iterations: u64,
    ) -> Result<(State, String), RuntimeError> {
        let mut output = String::new();
        let state = State::new(&self.analysis.program, &self.data);
        let mut sink = |text: &str| output.push_str(text);
        let reference = Reference::new(&self.analysis, state, &mut sink).with_engine(engine);
        assert_eq!(
            reference.fallback(),
            None,
            "the compiled engine runs every test program"
        );
        assert_eq!(reference.engine(), engine);
        let result = reference.run(max_iterations);
        result.map(|state| (state, output))
    }

    /// Runs the compiled engine on `threads` threads.
    pub fn run_threaded(&self, threads: usize) -> Result<(State, String), RuntimeError> {
        let mut output = String::new();
        let state = State::new(&self.analysis.program, &self.data);
        let mut sink = |text: &str| output.push_str(text);
        let reference = Reference::new(&self.analysis, state, &mut sink)
            .with_engine(Engine::Compiled)
            .with_threads(threads);
        assert_eq!(reference.fallback(), None);
        assert_eq!(reference.threads(), threads.max(1));
        let result = reference.run(u64::MAX);
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
        let comparison = compare(&self.analysis.program, &expected, &actual, tolerance);
        assert_eq!(
            comparison.diverged, None,
            "seed {seed}: main took another path"
        );
        let differences = comparison.differences;
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

/// The bits of a value, with its type: `0.0` and `-0.0` differ, NaNs are
/// compared by payload.
fn bits(value: &Value) -> (u8, u64) {
    match *value {
        Value::Double(x) => (0, x.to_bits()),
        Value::Float(x) => (1, u64::from(x.to_bits())),
        Value::Int(x) => (2, u64::from(x.cast_unsigned())),
        Value::Uint(x) => (3, u64::from(x)),
        Value::Ll(x) => (4, x.cast_unsigned()),
        Value::Ull(x) => (5, x),
        Value::Bool(x) => (6, u64::from(x)),
    }
}

/// The first place two states differ in a bit, if any.
pub fn first_difference(a: &State, b: &State) -> Option<String> {
    let lists = |state: &State| -> Vec<(String, Vec<(u8, u64)>)> {
        let mut all = Vec::new();
        for (i, values) in state.dats.iter().enumerate() {
            all.push((format!("dat {i}"), values.iter().map(bits).collect()));
        }
        for (i, values) in state.globals.iter().enumerate() {
            all.push((format!("global {i}"), values.iter().map(bits).collect()));
        }
        all
    };
    let (la, lb) = (lists(a), lists(b));
    if la.len() != lb.len() {
        return Some("different numbers of dats and globals".into());
    }
    for ((name, x), (_, y)) in la.iter().zip(&lb) {
        if x.len() != y.len() {
            return Some(format!("{name}: {} values against {}", x.len(), y.len()));
        }
        if let Some(k) = (0..x.len()).find(|&k| x[k] != y[k]) {
            return Some(format!("{name}[{k}]: {:?} against {:?}", x[k], y[k]));
        }
    }
    None
}

/// Asserts that two runs of one program agree bit for bit.
pub fn assert_same_run(
    interpreted: &Result<(State, String), RuntimeError>,
    compiled: &Result<(State, String), RuntimeError>,
) {
    match (interpreted, compiled) {
        (Ok((a, out_a)), Ok((b, out_b))) => {
            assert_eq!(out_a, out_b, "both engines print the same");
            if let Some(difference) = first_difference(a, b) {
                panic!("the engines' final states differ: {difference}");
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.message, b.message, "both engines fail alike"),
        (a, b) => panic!(
            "one engine failed: interpreter {:?}, compiled {:?}",
            a.as_ref().err(),
            b.as_ref().err()
        ),
    }
}

impl Case {
    /// Simulates with `seed` under the interpreter and the compiled engine
    /// and asserts that both print the same, end in bit-identical states
    /// after the same steps, deliveries, kernel evaluations and makespan,
    /// or fail with the same message. Returns the compiled run's
    /// statistics, if it succeeded.
    pub fn assert_engines_simulate_alike(
        &self,
        seed: u64,
        max_iterations: u64,
    ) -> Option<Statistics> {
        let options = |engine| simulate::Options {
            seed,
            max_iterations,
            engine,
            ..simulate::Options::default()
        };
        let interpreted = self.simulate(options(Engine::Interp));
        let compiled = self.simulate(options(Engine::Compiled));
        match (interpreted, compiled) {
            (Ok((a, out_a, stats_a)), Ok((b, out_b, stats_b))) => {
                assert_eq!(out_a, out_b, "seed {seed}: both engines print the same");
                if let Some(difference) = first_difference(&a, &b) {
                    panic!("seed {seed}: the engines' final states differ: {difference}");
                }
                assert_eq!(stats_a.steps, stats_b.steps, "seed {seed}: steps");
                assert_eq!(stats_a.total, stats_b.total, "seed {seed}: traffic");
                assert_eq!(stats_a.evaluations, stats_b.evaluations, "seed {seed}");
                assert_eq!(stats_a.cost.makespan, stats_b.cost.makespan, "seed {seed}");
                // Only a kernel that prints runs interpreted, by design
                // (language.md §5, "Printing from a kernel").
                assert!(
                    stats_b
                        .interpreted
                        .iter()
                        .all(|reason| reason.contains(": its kernel prints (")),
                    "seed {seed}: kernels ran interpreted under the compiled engine: {:?}",
                    stats_b.interpreted
                );
                Some(stats_b)
            }
            (Err(a), Err(b)) => {
                assert_eq!(a.to_string(), b.to_string(), "seed {seed}: both fail alike");
                None
            }
            (a, b) => panic!(
                "seed {seed}: one engine failed: interpreter {:?}, compiled {:?}",
                a.err().map(|e| e.to_string()),
                b.err().map(|e| e.to_string())
            ),
        }
    }
}
