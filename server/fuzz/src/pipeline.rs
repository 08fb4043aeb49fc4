//! One program through every command, in process, with the properties each
//! must keep: `parse` (and its tree printed), `check` (analysis and the code
//! generator's diagnostics, every range inside its file), `fmt` (idempotent,
//! and the formatted program gives the same diagnostics and graph), `build`
//! (graph type and instance written to memory), `run` and `simulate` with an
//! iteration limit, which must agree. A panic anywhere is caught by the
//! caller and reported with the stage it happened in.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use op2_analysis::value::Value;
use op2_analysis::{Analyser, Analysis, Loader, Options};
use op2_codegen::instance::GraphInstance;
use op2_codegen::output::InstanceWriter;
use op2_exec::simulate::{self, SimulationError};
use op2_exec::{Reference, State, Tolerance};
use op2_instance::{self as instance, NoProgress};
use op2_syntax::format::{FormatError, format_parse};
use op2_syntax::{Diagnostic, Parse, Severity, print};

use crate::Finding;

/// Where the root file of every case is (a folder that does not exist:
/// imports are served from memory).
pub const ROOT: &str = "/op2-fuzz/main.op2";

/// A program and what comes with it.
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// The root file's bytes (not necessarily UTF-8).
    pub text: Vec<u8>,
    /// Files it may import, by name relative to the root's folder.
    pub imports: Vec<(String, String)>,
    /// Instance data, when the case has some.
    pub instance: Option<Vec<u8>>,
    /// Loop iterations `run` and `simulate` may do.
    pub max_iterations: u64,
    /// The delivery order seed of `simulate`.
    pub seed: u64,
    /// Whether to run and simulate it (tame campaigns run only generated
    /// programs, whose kernel loops are bounded: a mutated kernel may loop
    /// forever, which `run` and `simulate` do as C would).
    pub execute: bool,
    /// Whether to go on after `fmt` to `build`, `run` and `simulate`
    /// (`--full-every`).
    pub full: bool,
}

/// Reads imports from the case's files.
struct Memory(HashMap<PathBuf, Arc<str>>);

impl Loader for Memory {
    fn load(&self, path: &Path) -> Result<Arc<str>, String> {
        self.0
            .get(path)
            .cloned()
            .ok_or_else(|| "no such file or directory (os error 2)".to_string())
    }
}

/// What one pass did, for the campaign's counts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reached {
    /// The program had no errors and was built.
    pub built: bool,
    /// It was run (and simulated).
    pub ran: bool,
    /// Values differed that the order of floating-point sums may move by
    /// any amount, which are not compared, or that the reference run in
    /// another order moved as far (`op2_exec::explain`), which do not fail.
    pub order_dependent: bool,
}

/// Output of `print` kept per run; more is counted, not kept.
const OUTPUT_LIMIT: usize = 1 << 20;

/// Runs the program through every command. `instance` makes one when the
/// case has none and the program builds.
pub fn check(
    program: &Program,
    make_instance: &mut dyn FnMut(&op2_analysis::model::Program) -> Option<Vec<u8>>,
) -> Result<Reached, Finding> {
    let mut reached = Reached::default();
    let text = String::from_utf8_lossy(&program.text).into_owned();
    let root = Path::new(ROOT);
    let folder = root.parent().unwrap_or(Path::new("/"));
    let mut files: HashMap<PathBuf, Arc<str>> = HashMap::new();
    for (name, body) in &program.imports {
        files.insert(folder.join(name), Arc::from(body.as_str()));
    }
    files.insert(root.to_path_buf(), Arc::from(text.as_str()));
    let loader = Memory(files);

    // parse
    crate::enter("parse");
    let parse = Parse::new(text.as_str());
    check_tree_output(&parse)?;
    let syntax = parse.errors(op2_syntax::FileId::MAIN);
    check_diagnostics("parse", &syntax, &[text.as_str()])?;

    // check
    crate::enter("check");
    let options = Options { require_main: true };
    let analysis = Analyser::new().analyse(root, &parse, &loader, &options);
    let mut diagnostics = analysis.diagnostics.clone();
    diagnostics.extend(op2_codegen::diagnostics(
        &analysis,
        &op2_codegen::graph_id(root),
    ));
    let texts: Vec<&str> = analysis.program.files.iter().map(|f| &*f.text).collect();
    check_diagnostics("check", &diagnostics, &texts)?;
    let has_errors = diagnostics.iter().any(|d| d.severity == Severity::Error);

    // fmt
    crate::enter("fmt");
    let graph_xml = (!has_errors).then(|| graph_xml(&analysis));
    // `format_parse` is `op2 fmt`'s `format` given the parse made above,
    // and it gives the parse of the formatted text, which the second pass
    // and the analysis of the formatted program use (each the same as
    // `Parse::new` of that text: parsing it again would check nothing more).
    match format_parse(&parse) {
        Ok((formatted, reformatted)) => {
            match format_parse(&reformatted) {
                Ok((again, _)) if again == formatted => {}
                Ok(_) => return Err(Finding::property("fmt", "formatting is not idempotent")),
                Err(error) => {
                    return Err(Finding::property(
                        "fmt",
                        format!("the formatted program does not format again: {error}"),
                    ));
                }
            }
            let again = Analyser::new().analyse(root, &reformatted, &loader, &options);
            let codes = |a: &Analysis| {
                let mut codes: Vec<&str> = a.diagnostics.iter().map(|d| d.code.as_str()).collect();
                codes.sort_unstable();
                codes
            };
            if codes(&again) != codes(&analysis) {
                return Err(Finding::property(
                    "fmt",
                    format!(
                        "the formatted program has other diagnostics: {:?} before, {:?} after",
                        codes(&analysis),
                        codes(&again)
                    ),
                ));
            }
            if let Some(before) = &graph_xml
                && graph_xml_of(&again) != *before
            {
                return Err(Finding::property(
                    "fmt",
                    "the formatted program gives another graph",
                ));
            }
        }
        Err(FormatError::Internal(message)) => {
            return Err(Finding::property(
                "fmt",
                format!("internal error: {message}"),
            ));
        }
        Err(FormatError::Syntax(_) | FormatError::TooDeep) => {}
    }

    // build
    if !program.full {
        return Ok(reached);
    }
    // Entered only when there is something to build, so that a slow case
    // is not blamed on a stage it never ran.
    if has_errors || analysis.program.main.is_none() {
        return Ok(reached);
    }
    crate::enter("build");
    let graph = op2_codegen::graph_type(&analysis, &op2_codegen::graph_id(root));
    if op2_codegen::limits::check(analysis.lowered(), &graph)
        .iter()
        .any(|d| d.severity == Severity::Error)
    {
        return Ok(reached);
    }
    reached.built = true;
    let mut sink = Counting::default();
    op2_codegen::xml::write_graph_type(&mut sink, &graph)
        .map_err(|e| Finding::property("build", format!("writing to memory failed: {e}")))?;
    let json = match &program.instance {
        Some(json) => json.clone(),
        None => match make_instance(&analysis.program) {
            Some(json) => json,
            None => return Ok(reached),
        },
    };
    let loaded = instance::read(&json, &analysis.program, &mut NoProgress);
    let Some(data) = loaded.data else {
        return Ok(reached);
    };
    crate::enter("hdf5");
    hdf5(
        &analysis.program,
        &data,
        crate::damages_hdf5().then_some(program.seed),
    )?;
    if !program.execute {
        return Ok(reached);
    }
    let mut progress = NoProgress;
    let mut writer = GraphInstance::new(analysis.lowered(), &data, &mut progress);
    if let Err(error) = writer.write(&mut sink, &graph) {
        // An instance the limits refuse is an answer, not a failure.
        let _ = error;
    }
    if dat_values(&analysis.program, &data) > EXECUTE_VALUES {
        return Ok(reached);
    }

    // run
    crate::enter("run");
    reached.ran = true;
    let mut output = Output::default();
    let state = State::new(&analysis.program, &data);
    let mut print = |s: &str| output.push(s);
    let expected = Reference::new(&analysis, state, &mut print).run(program.max_iterations);
    let printed = output.kept;

    // `op2 run`'s own engine: every loop compiled, on one thread
    // (bit-identical to the interpreter) and on two (`--threads 2`: `main`
    // on the pool, loops in coloured blocks; only the order of floating
    // sums may differ).
    crate::enter("run compiled");
    let (compiled, compiled_printed) = run_compiled(&analysis, &data, program.max_iterations, 1);
    engines_agree(&expected, &printed, &compiled, &compiled_printed)?;
    drop(compiled);
    crate::enter("run threads");
    let (threaded, _) = run_compiled(&analysis, &data, program.max_iterations, 2);
    threads_agree(
        &analysis,
        &data,
        program.max_iterations,
        &expected,
        &threaded,
    )?;
    drop(threaded);

    // simulate
    crate::enter("simulate");
    let mut output = Output::default();
    let mut print = |s: &str| output.push(s);
    let options = simulate::Options {
        seed: program.seed,
        max_iterations: program.max_iterations,
        injection: None,
        engine: op2_exec::Engine::Compiled,
    };
    let simulated = simulate::simulate(&analysis, &graph, &data, options, &mut print);
    match (&expected, &simulated) {
        (_, Err(error @ (SimulationError::Deadlock(_) | SimulationError::Assertion(_)))) => {
            return Err(Finding::property("simulate", error.to_string()));
        }
        (Ok(expected), Ok((actual, _))) => {
            let comparison =
                compare_as_check(&analysis, &data, program.max_iterations, expected, actual);
            reached.order_dependent = !comparison.order_dependent.is_empty()
                || !comparison.explained.is_empty()
                || comparison.diverged.is_some_and(|d| d.order_dependent);
            if let Some(diverged) = comparison.diverged.filter(|d| !d.order_dependent) {
                return Err(Finding::property(
                    "simulate",
                    format!(
                        "the simulation took another path through main than the reference run, with no condition of main that the order of sums moves: {} par_loops started in run, {} in simulate; exit {:?} in run, {:?} in simulate",
                        diverged.expected_loops,
                        diverged.actual_loops,
                        diverged.expected_exit,
                        diverged.actual_exit
                    ),
                ));
            }
            let differences = comparison.differences;
            if let Some(first) = differences.first() {
                return Err(Finding::property(
                    "simulate",
                    format!(
                        "the simulation differs from the reference run in {} value(s), first {}: run {:?} simulate {:?}",
                        differences.len(),
                        first.path,
                        first.expected,
                        first.actual
                    ),
                ));
            }
        }
        // A fault in one engine only (an integer division by zero, an
        // index out of range, a kernel's iteration limit) is the order of
        // sums' when some value may differ by any amount between them
        // (`op2_analysis::order`): it may be a divisor, an index or a
        // loop's bound.
        (Ok(_), Err(SimulationError::Runtime(_))) | (Err(_), Ok(_))
            if op2_analysis::order::order_dependence(&analysis.program).jumps =>
        {
            reached.order_dependent = true;
        }
        (Ok(_), Err(SimulationError::Runtime(error))) => {
            return Err(Finding::property(
                "simulate",
                format!("the simulation failed where the reference run did not: {error}"),
            ));
        }
        (Err(error), Ok(_)) => {
            return Err(Finding::property(
                "simulate",
                format!("the reference run failed where the simulation did not: {error}"),
            ));
        }
        (Err(_), Err(SimulationError::Runtime(_))) => {}
        // A graph past a documented limit of the simulator (`MAX_SENDS`,
        // or the payload slots in flight, in docs/reliability.md's limits)
        // is not a finding: the simulator refuses it with an error saying
        // which limit (`MAX_SENDS` before anything runs, naming the
        // par_loop's place, the device type and the pin), and the CLI ends
        // with status 1.
        (_, Err(SimulationError::Limit(_))) => {}
    }
    Ok(reached)
}

/// The most dat values (set size × dimension, summed over the dats) of a
/// case that goes on to run and simulate in the worker. Those stages hold
/// several copies of every dat at once (the reference run's final state, as
/// values, until the simulation is compared with it; each engine's own; the
/// simulator's), about 80 bytes per value together: the campaign of 0295429
/// (seed 18, case 1095160) aborted its worker at the 4 GiB limit with a
/// `ull[65536]` dat on 716 elements, 47 million values, which `op2 run`
/// alone runs in 1.1 GB. Past this many values a case stops after the
/// build, which covers the instance's limits (`MAX_DAT_VALUES`, 2^27, is
/// checked there); the engines' work per value does not change with the
/// count, and 2^24 values take about 1.3 GB here.
pub const EXECUTE_VALUES: u64 = 1 << 24;

/// The values every dat of `program` holds in a run on `data`.
fn dat_values(program: &op2_analysis::Program, data: &op2_instance::InstanceData) -> u64 {
    program
        .dats
        .iter()
        .filter_map(|d| {
            let size = data.set_sizes.get(d.set?.index())?;
            Some(u64::from(*size) * u64::from(d.ty.dimension))
        })
        .sum()
}

/// A run of `op2 run`'s compiled engine on `threads` threads, with what it
/// printed.
fn run_compiled(
    analysis: &Analysis,
    data: &op2_instance::InstanceData,
    max_iterations: u64,
    threads: usize,
) -> (Result<State, op2_exec::RuntimeError>, String) {
    let mut output = Output::default();
    let mut print = |s: &str| output.push(s);
    let state = State::new(&analysis.program, data);
    let result = Reference::new(analysis, state, &mut print)
        .with_engine(op2_exec::Engine::Compiled)
        .with_threads(threads)
        .run(max_iterations);
    (result, output.kept)
}

/// Whether two values are the same bits (`0.0` and `-0.0` differ, a NaN is
/// a NaN of the same bits).
fn same_bits(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// The first value of two final states that is not the same bits, named.
fn first_other_bits(a: &State, b: &State) -> Option<String> {
    for (kind, left, right) in [
        ("dat", &a.dats, &b.dats),
        ("global", &a.globals, &b.globals),
    ] {
        for (index, (x, y)) in left.iter().zip(right).enumerate() {
            if x.len() != y.len() {
                return Some(format!(
                    "{kind} {index} has {} values against {}",
                    x.len(),
                    y.len()
                ));
            }
            if let Some(at) = x.iter().zip(y).position(|(p, q)| !same_bits(*p, *q)) {
                return Some(format!(
                    "{kind} {index} [{at}]: {:?} against {:?}",
                    x[at], y[at]
                ));
            }
        }
    }
    (a.exit_status != b.exit_status || a.path != b.path)
        .then(|| "the path through `main` or the exit status".to_string())
}

/// The compiled engine on one thread gives the interpreter's result bit for
/// bit (issue 15): the same final state and printed text, or the same error.
fn engines_agree(
    expected: &Result<State, op2_exec::RuntimeError>,
    printed: &str,
    compiled: &Result<State, op2_exec::RuntimeError>,
    compiled_printed: &str,
) -> Result<(), Finding> {
    let differs = |what: String| {
        Err(Finding::property(
            "run compiled",
            format!("the compiled engine differs from the interpreter: {what}"),
        ))
    };
    match (expected, compiled) {
        (Ok(a), Ok(b)) => {
            if let Some(what) = first_other_bits(a, b) {
                return differs(what);
            }
            if printed != compiled_printed {
                return differs("the printed text".into());
            }
        }
        (Err(a), Err(b)) if a.message == b.message => {}
        (Err(a), Err(b)) => {
            return differs(format!("error {:?} against {:?}", a.message, b.message));
        }
        (Ok(_), Err(b)) => return differs(format!("it failed where the interpreter did not: {b}")),
        (Err(a), Ok(_)) => return differs(format!("it ran where the interpreter failed: {a}")),
    }
    Ok(())
}

/// `actual`'s final state against the reference's, `expected`, as `op2
/// simulate --check` compares them: values the order of sums may move by
/// any amount are listed apart (`op2_analysis::order`) and not held to the
/// tolerance, and, where both took the same path through `main`, values
/// beyond it that the reference run in another order moves as far (a sum
/// that cancels, a singularity) are explained, not differences.
fn compare_as_check(
    analysis: &Analysis,
    data: &op2_instance::InstanceData,
    max_iterations: u64,
    expected: &State,
    actual: &State,
) -> op2_exec::Comparison {
    let tolerance = Tolerance {
        relative: 1e-6,
        absolute: 1e-9,
    };
    let mut comparison = op2_exec::compare(&analysis.program, expected, actual, tolerance);
    if comparison.diverged.is_none() {
        op2_exec::explain_by_another_order(
            analysis,
            State::new(&analysis.program, data),
            max_iterations,
            expected,
            &mut comparison,
            tolerance,
        );
    }
    comparison
}

/// Two threads give one thread's result but for the order of floating sums:
/// the same outcome (the same error, where no value may move by any amount
/// with that order, `op2_analysis::order`), and final states that agree as
/// `op2 simulate --check` requires of the simulation.
fn threads_agree(
    analysis: &Analysis,
    data: &op2_instance::InstanceData,
    max_iterations: u64,
    expected: &Result<State, op2_exec::RuntimeError>,
    threaded: &Result<State, op2_exec::RuntimeError>,
) -> Result<(), Finding> {
    let finding = |what: String| Err(Finding::property("run threads", what));
    let order = op2_analysis::order::order_dependence(&analysis.program);
    match (expected, threaded) {
        (Ok(expected), Ok(actual)) => {
            let comparison = compare_as_check(analysis, data, max_iterations, expected, actual);
            if comparison.diverged.is_some_and(|d| d.order_dependent) {
                return Ok(());
            }
            if comparison.diverged.is_some() {
                return finding("two threads took another path through main than one".into());
            }
            if let Some(first) = comparison.differences.first() {
                return finding(format!(
                    "two threads differ from one in {} value(s), first {}: {:?} against {:?}",
                    comparison.differences.len(),
                    first.path,
                    first.expected,
                    first.actual
                ));
            }
        }
        (Err(a), Err(b)) if a.message == b.message || order.jumps => {}
        _ if order.jumps => {}
        (Err(a), Err(b)) => {
            return finding(format!(
                "two threads failed with {:?}, one with {:?}",
                b.message, a.message
            ));
        }
        (Ok(_), Err(b)) => return finding(format!("two threads failed where one did not: {b}")),
        (Err(a), Ok(_)) => return finding(format!("two threads ran where one failed: {a}")),
    }
    Ok(())
}

/// The instance through OP2's HDF5 layout: written (to a temporary file:
/// libhdf5 reads files) and read back, which must give the same data; then,
/// when `damage` is given (the binary running the case is an HDF5 reader,
/// as `op2-fuzz` is: [`crate::set_damages_hdf5`]), read again with bytes
/// changed, through a reader process: libhdf5 may crash there on a damaged
/// file (docs/reliability.md); this process must not, whatever the
/// problems.
fn hdf5(
    program: &op2_analysis::model::Program,
    data: &instance::InstanceData,
    damage: Option<u64>,
) -> Result<(), Finding> {
    let failed = |what: &str, error: &dyn std::fmt::Display| {
        Finding::property("hdf5", format!("{what}: {error}"))
    };
    let directory = tempfile::tempdir().map_err(|e| failed("no temporary folder", &e))?;
    let path = directory.path().join("mesh.h5");
    instance::write_file(&path, program, data).map_err(|e| failed("writing failed", &e))?;
    let back = instance::read_file(&path, program, &mut NoProgress)
        .map_err(|e| failed("reading back failed", &e))?;
    if back.data.as_ref() != Some(data) {
        return Err(Finding::property(
            "hdf5",
            format!(
                "the data read back differs from the data written (problems: {:?})",
                back.problems
            ),
        ));
    }
    let Some(seed) = damage else {
        return Ok(());
    };
    let mut bytes = std::fs::read(&path).map_err(|e| failed("reading the file failed", &e))?;
    if bytes.is_empty() {
        return Ok(());
    }
    let mut rng = crate::rng::Rng::for_case(seed, HDF5_DAMAGE);
    for _ in 0..rng.range(1, 9) {
        let at = rng.below(bytes.len());
        bytes[at] = rng.next_u64() as u8;
    }
    std::fs::write(&path, &bytes).map_err(|e| failed("writing the damaged file failed", &e))?;
    let reader = Path::new("/proc/self/exe");
    let _ = instance::read_file_using(&path, program, &mut NoProgress, Some(reader));
    Ok(())
}

/// The random stream of the bytes the `hdf5` stage changes, apart from the
/// case's own.
const HDF5_DAMAGE: u64 = 0x4844_4635;

/// The graph type's XML, for comparing two analyses of one program.
fn graph_xml(analysis: &Analysis) -> Vec<u8> {
    graph_xml_of(analysis)
}

fn graph_xml_of(analysis: &Analysis) -> Vec<u8> {
    let graph = op2_codegen::graph_type(analysis, &op2_codegen::graph_id(Path::new(ROOT)));
    let mut out = Vec::new();
    let _ = op2_codegen::xml::write_graph_type(&mut out, &graph);
    out
}

/// Every diagnostic points inside its file, on character boundaries, and
/// its message follows the style (not empty, no trailing period).
fn check_diagnostics(
    stage: &'static str,
    diagnostics: &[Diagnostic],
    texts: &[&str],
) -> Result<(), Finding> {
    for d in diagnostics {
        let mut locations = vec![(d.location, "primary")];
        locations.extend(d.related.iter().map(|r| (r.location, "related")));
        for (location, what) in locations {
            let Some(text) = texts.get(location.file.0 as usize) else {
                return Err(Finding::property(
                    stage,
                    format!(
                        "{} {what} location in file {} of {}",
                        d.code.as_str(),
                        location.file.0,
                        texts.len()
                    ),
                ));
            };
            let (start, end) = (location.range.start as usize, location.range.end as usize);
            if !is_range(text, start, end) {
                return Err(Finding::property(
                    stage,
                    format!(
                        "{} {what} range {start}..{end} is not a range of its file ({} bytes): {}",
                        d.code.as_str(),
                        text.len(),
                        d.message
                    ),
                ));
            }
        }
        for fix in &d.fixes {
            for edit in &fix.edits {
                let Some(text) = texts.get(edit.file.0 as usize) else {
                    continue;
                };
                let (start, end) = (edit.range.start as usize, edit.range.end as usize);
                if !is_range(text, start, end) {
                    return Err(Finding::property(
                        stage,
                        format!(
                            "{} fix edit {start}..{end} is outside its file",
                            d.code.as_str()
                        ),
                    ));
                }
            }
        }
        if d.message.is_empty() || (d.message.ends_with('.') && !d.message.ends_with("..")) {
            return Err(Finding::property(
                stage,
                format!(
                    "{} message breaks the style: {:?}",
                    d.code.as_str(),
                    d.message
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `start..end` is a range of `text` between characters.
fn is_range(text: &str, start: usize, end: usize) -> bool {
    start <= end && end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end)
}

/// Longest line `op2 parse` may print: the indentation, a `[depth N] `, a
/// field, `MISSING`, a kind, four positions and a snippet whose bytes may each
/// be escaped (`\u{1b}`), with room to spare.
const TREE_LINE_LIMIT: usize = 2 * print::MAX_INDENT + 10 * print::MAX_SNIPPET + 256;

/// Prints the tree with `op2 parse`'s printer and checks that its output is
/// linear in the tree: no line longer than [`TREE_LINE_LIMIT`].
fn check_tree_output(parse: &Parse) -> Result<(), Finding> {
    let mut tree = Vec::new();
    print::write_tree(&mut tree, parse)
        .map_err(|e| Finding::property("parse", format!("op2 parse's printer failed: {e}")))?;
    if let Some((at, line)) = tree
        .split(|&b| b == b'\n')
        .enumerate()
        .find(|(_, line)| line.len() > TREE_LINE_LIMIT)
    {
        return Err(Finding::property(
            "parse",
            format!(
                "op2 parse printed a line of {} bytes (line {}), more than {TREE_LINE_LIMIT}",
                line.len(),
                at + 1
            ),
        ));
    }
    Ok(())
}

#[derive(Default)]
struct Counting {
    bytes: u64,
}

impl std::io::Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `print` wrote: counted, and kept up to [`OUTPUT_LIMIT`].
#[derive(Default)]
struct Output {
    kept: String,
}

impl Output {
    fn push(&mut self, text: &str) {
        if self.kept.len() < OUTPUT_LIMIT {
            let room = OUTPUT_LIMIT - self.kept.len();
            let mut end = text.len().min(room);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            self.kept.push_str(&text[..end]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(dat: Vec<Value>) -> State {
        State {
            set_sizes: vec![dat.len()],
            maps: Vec::new(),
            arities: Vec::new(),
            dats: vec![dat],
            globals: vec![vec![Value::Int(1)]],
            consts: Vec::new(),
            exit_status: None,
            path: op2_exec::state::Path::default(),
        }
    }

    #[test]
    fn the_engines_must_agree_bit_for_bit() {
        let one = state(vec![Value::Double(0.0), Value::Double(f64::NAN)]);
        // Equal as numbers (`0.0 == -0.0`), not as bits.
        let signed = state(vec![Value::Double(-0.0), Value::Double(f64::NAN)]);
        assert_eq!(first_other_bits(&one, &one.clone()), None);
        let found = first_other_bits(&one, &signed).expect("a zero's sign differs");
        assert!(found.starts_with("dat 0 [0]"), "{found}");
        assert!(engines_agree(&Ok(one.clone()), "x", &Ok(one.clone()), "x").is_ok());
        assert!(engines_agree(&Ok(one.clone()), "x", &Ok(signed), "x").is_err());
        assert!(engines_agree(&Ok(one.clone()), "x", &Ok(one.clone()), "y").is_err());
        let mut exited = one.clone();
        exited.exit_status = Some(1);
        assert!(engines_agree(&Ok(one), "", &Ok(exited), "").is_err());
    }
}
