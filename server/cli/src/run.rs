//! `op2 run` (the reference semantics) and `op2 simulate` (the generated
//! graph under POETS' rules), with the comparison that proves them equal.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use op2_analysis::order::order_dependence;
use op2_analysis::{Analyser, Analysis, Options};
use op2_exec::compare::FLOAT_PRECISION;
use op2_exec::simulate::{self, SimulationError};
use op2_exec::{
    AnotherOrder, Engine, Reference, State, Tolerance, compare, explain_by_another_order,
};
use op2_instance::{self as instance, InstanceData};
use op2_syntax::Severity;
use op2_syntax::ast::ScalarType;

use crate::check::{check_file, render};
use crate::{ColorChoice, MessageFormat, Outcome};

/// Options shared by `run` and `simulate`.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// The `.op2` program.
    pub file: PathBuf,
    /// Instance data: JSON, or OP2's HDF5 layout (told apart by content).
    #[arg(long)]
    pub instance: PathBuf,
    /// Write the final dats and globals here: OP2's HDF5 layout for `.h5`,
    /// JSON otherwise; `-` (or `/dev/stdout`) for JSON on standard output,
    /// after what the program prints.
    #[arg(long)]
    pub final_state: Option<PathBuf>,
    /// Stop `main` after this many loop iterations.
    #[arg(long)]
    pub max_iterations: Option<u64>,
    /// When to colour diagnostics (on standard error).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// Options of `run` only.
#[derive(Debug, clap::Args)]
pub struct RunOptions {
    /// How par_loops run: `compiled` (machine code, the default where the
    /// machine has a code generator) or `interp` (the reference
    /// interpreter); both give bit-identical results.
    #[arg(long, value_enum, default_value_t = EngineChoice::Compiled)]
    pub engine: EngineChoice,
    /// Threads the compiled engine runs par_loops on (0: one per available
    /// core). Above 1, loops run in blocks coloured as OP2 colours them:
    /// the same results for every thread count above 1, which differ from
    /// one thread's only in the order of floating sums (docs/benchmarks.md).
    /// At most 1024.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(0..=1024))]
    pub threads: u16,
}

/// `--engine`
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// Par_loops compiled to machine code.
    Compiled,
    /// The reference interpreter.
    Interp,
}

/// A tolerance of `--check`: a finite number, zero or more.
fn tolerance(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(_) => Err("a tolerance is a finite number, zero or more".into()),
        Err(error) => Err(error.to_string()),
    }
}

/// Options of `simulate` only.
#[derive(Debug, clap::Args)]
pub struct SimulateOptions {
    /// Seed of the message delivery order.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also run the reference semantics and compare every dat and global.
    #[arg(long)]
    pub check: bool,
    /// Relative tolerance of the comparison: a floating value passes when
    /// `|run - simulate| <= atol × (magnitude of its dat) + rtol × max(|run|, |simulate|)`.
    #[arg(long, default_value = "1e-9", value_parser = tolerance)]
    pub rtol: f64,
    /// Absolute tolerance, as a fraction of the largest magnitude of the
    /// value's dat (of the whole state for globals): for sums that cancel to
    /// about zero.
    #[arg(long, default_value = "1e-12", value_parser = tolerance)]
    pub atol: f64,
    /// Hold every value to `--rtol` and `--atol` alone. Without it, when
    /// values differ beyond them, `main` runs again with each par_loop's
    /// elements in reverse order, and a value that this other order moves
    /// about as far (a sum that cancels, a singularity) is named in a note
    /// and not counted as a failure.
    #[arg(long, requires = "check")]
    pub tolerance_only: bool,
    #[command(flatten)]
    pub fan: crate::FanLimit,
    /// How handlers run kernels: `compiled` (machine code, the default
    /// where the machine has a code generator) or `interp` (the reference
    /// interpreter); both give bit-identical results in the same order.
    #[arg(long, value_enum, default_value_t = EngineChoice::Compiled)]
    pub engine: EngineChoice,
}

struct Loaded {
    analysis: Analysis,
    data: InstanceData,
}

/// Checks the program (refusing one with errors) and reads its instance.
fn load(common: &Common) -> Result<Option<Loaded>> {
    if let Some(path) = common.final_state.as_deref().filter(|p| !is_stdout(p)) {
        crate::output::file_in_existing_directory(path)?;
        crate::output::writable(path, op2_codegen::output::Links::Follow)?;
    }
    let mut analyser = Analyser::new();
    let (analysis, report) =
        check_file(&mut analyser, &common.file, &Options { require_main: true })?;
    if let Some(path) = common.final_state.as_deref().filter(|p| !is_stdout(p)) {
        crate::output::not_an_input(
            path,
            "name another file with `--final-state`",
            crate::output::program_files(&analysis.program)
                .chain([(common.instance.as_path(), "the instance data")]),
        )?;
    }
    let has_errors = report
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    if has_errors || !report.diagnostics.is_empty() {
        render(
            std::slice::from_ref(&report),
            MessageFormat::Human,
            common.color,
        )?;
    }
    if has_errors {
        writeln!(
            io::stderr().lock(),
            "error: `{}` has errors; nothing was run",
            crate::render::visible_path(&common.file)
        )?;
        return Ok(None);
    }
    crate::source::check_instance(&common.instance)?;
    let mut progress = instance::TerminalProgress::stderr();
    let loaded = instance::read_file(&common.instance, &analysis.program, progress.as_mut())
        .with_context(|| format!("cannot read `{}`", common.instance.display()))?;
    drop(progress);
    // As `op2 build` and `op2 instance check` print them: severity, code,
    // and where the program declares what the problem names.
    crate::build::print_problems(&common.instance, &report, &loaded.problems, common.color)?;
    let mut stderr = io::stderr().lock();
    match loaded.data {
        Some(data) => Ok(Some(Loaded { analysis, data })),
        None => {
            writeln!(
                stderr,
                "error: `{}` has errors; nothing was run",
                crate::render::visible_path(&common.instance)
            )?;
            Ok(None)
        }
    }
}

/// Whether `--final-state` names standard output: `-`, or one of the names
/// the system gives it. Written to as a stream, not replaced: renaming a
/// file over `/dev/stdout` replaced the file the shell redirected it to,
/// and what the program printed there with it (review of 2026-11-29), and
/// refused a pipe (not a regular file).
fn is_stdout(path: &Path) -> bool {
    matches!(
        path.to_str(),
        Some("-" | "/dev/stdout" | "/dev/fd/1" | "/proc/self/fd/1")
    )
}

fn write_final_state(path: Option<&Path>, analysis: &Analysis, state: &State) -> Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    if is_stdout(path) {
        let json = state.final_state_json(&analysis.program);
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(json.as_bytes())
            .and_then(|()| stdout.flush())
            .context("cannot write the final state to standard output")?;
        return Ok(());
    }
    if instance::Format::of_name(path) == instance::Format::Hdf5 {
        let sizes: Vec<u32> = state.set_sizes.iter().map(|&n| n as u32).collect();
        let dats: Vec<&[_]> = state.dats.iter().map(Vec::as_slice).collect();
        let globals: Vec<&[_]> = state.globals.iter().map(Vec::as_slice).collect();
        let maps: Vec<Option<&[u32]>> = state.maps.iter().map(|m| Some(m.as_slice())).collect();
        instance::write_state(path, &analysis.program, &sizes, &maps, &dats, &[], &globals)
            .with_context(|| format!("cannot write `{}`", path.display()))?;
    } else {
        let json = state.final_state_json(&analysis.program);
        op2_codegen::output::write_file_atomically(path, json.as_bytes())
            .with_context(|| format!("cannot write `{}`", path.display()))?;
    }
    Ok(())
}

/// Runs the reference semantics to the end.
fn reference(
    loaded: &Loaded,
    max_iterations: u64,
    engine: Engine,
    threads: usize,
    out: &mut dyn FnMut(&str),
) -> Result<State, op2_exec::RuntimeError> {
    let state = State::new(&loaded.analysis.program, &loaded.data);
    let bar = spinner();
    let reference = Reference::new(&loaded.analysis, state, out)
        .with_engine(engine)
        .with_threads(threads);
    if let Some(reason) = reference.fallback() {
        let _ = writeln!(
            io::stderr().lock(),
            "note: running the interpreter: {reason}"
        );
    }
    if threads != 1 && reference.engine() == Engine::Interp {
        let _ = writeln!(
            io::stderr().lock(),
            "note: the interpreter runs par_loops on one thread; `--threads` applies to the compiled engine"
        );
    }
    if reference.engine() == Engine::Compiled && reference.threads() < 2 {
        // One thread's results differ from those of every count above one
        // in the order of floating sums: never given for another count
        // without a word.
        if threads >= 2 {
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            return Err(op2_exec::RuntimeError {
                message: format!(
                    "cannot start {threads} threads for `--threads {threads}`: the system refused the thread pool, and nothing was run\nhelp: ask for fewer threads, or `--threads 1` for the order of one thread"
                ),
            });
        }
        if threads == 0 {
            let _ = writeln!(
                io::stderr().lock(),
                "note: `--threads 0` found one core: par_loops run on one thread, in element order"
            );
        }
    }
    let result = reference
        .with_progress(|invocations, evaluations| {
            if let Some(bar) = &bar
                && invocations % 64 == 0
            {
                bar.set_message(format!(
                    "{invocations} par_loops run, {evaluations} kernel evaluations"
                ));
            }
        })
        .run(max_iterations);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result
}

/// A spinner on standard error when it is a terminal: long runs show that
/// they are alive and how far they got.
fn spinner() -> Option<indicatif::ProgressBar> {
    if !io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}") {
        bar.set_style(style);
    }
    Some(bar)
}

pub fn run(common: &Common, options: &RunOptions) -> Result<Outcome> {
    let Some(loaded) = load(common)? else {
        return Ok(Outcome::Errors);
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut failed_write = None;
    let mut print = |text: &str| {
        if let Err(error) = out.write_all(text.as_bytes()) {
            failed_write.get_or_insert(error);
        }
    };
    let engine = match options.engine {
        EngineChoice::Compiled => Engine::Compiled,
        EngineChoice::Interp => Engine::Interp,
    };
    let result = reference(
        &loaded,
        common.max_iterations.unwrap_or(u64::MAX),
        engine,
        usize::from(options.threads),
        &mut print,
    );
    if let Some(error) = failed_write {
        return Err(error.into());
    }
    out.flush()?;
    match result {
        Ok(state) => {
            write_final_state(common.final_state.as_deref(), &loaded.analysis, &state)?;
            Ok(ended(&state))
        }
        Err(error) => {
            writeln!(io::stderr().lock(), "error: {error}")?;
            Ok(Outcome::Errors)
        }
    }
}

pub fn simulate(common: &Common, options: &SimulateOptions) -> Result<Outcome> {
    let Some(loaded) = load(common)? else {
        return Ok(Outcome::Errors);
    };
    let graph = op2_codegen::graph_type_with_fan_limit(
        &loaded.analysis,
        &op2_codegen::graph_id(&common.file),
        options.fan.fan_limit,
    );
    let stdout = io::stdout();
    let mut out = stdout.lock();
    // As `op2 run`: the first failed write to standard output is the
    // command's error (a full disk, a closed pipe), not lost.
    let mut failed_write = None;
    let mut print = |text: &str| {
        if let Err(error) = out.write_all(text.as_bytes()) {
            failed_write.get_or_insert(error);
        }
    };
    let sim_options = simulate::Options {
        seed: options.seed,
        max_iterations: common.max_iterations.unwrap_or(u64::MAX),
        injection: None,
        engine: match options.engine {
            EngineChoice::Compiled => Engine::Compiled,
            EngineChoice::Interp => Engine::Interp,
        },
    };
    let bar = spinner();
    let mut progress = |statistics: &simulate::Statistics| {
        if let Some(bar) = &bar {
            bar.set_message(format!(
                "{} messages delivered ({:.2} M/s), {} kernel evaluations",
                statistics.total.delivered,
                statistics.messages_per_second() / 1e6,
                statistics.evaluations
            ));
        }
    };
    let result = simulate::simulate_with_progress(
        &loaded.analysis,
        &graph,
        &loaded.data,
        sim_options,
        &mut print,
        &mut progress,
    );
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if let Some(error) = failed_write {
        return Err(error.into());
    }
    out.flush()?;
    let mut stderr = io::stderr().lock();
    let (state, statistics) = match result {
        Ok(result) => result,
        Err(error @ (SimulationError::Deadlock(_) | SimulationError::Assertion(_))) => {
            writeln!(stderr, "error: {error}")?;
            return Ok(Outcome::Failed);
        }
        // A graph past a limit of the simulator is refused like a program
        // that fails: the input's error, exit status 1.
        Err(error @ (SimulationError::Runtime(_) | SimulationError::Limit(_))) => {
            writeln!(stderr, "error: {error}")?;
            return Ok(Outcome::Errors);
        }
    };
    for reason in &statistics.interpreted {
        writeln!(stderr, "note: {reason}")?;
    }
    writeln!(
        stderr,
        "simulation statistics (seed {}):\n{statistics}",
        options.seed
    )?;
    write_final_state(common.final_state.as_deref(), &loaded.analysis, &state)?;
    if !options.check {
        return Ok(ended(&state));
    }
    let mut sink = |_: &str| {};
    let expected = match reference(
        &loaded,
        common.max_iterations.unwrap_or(u64::MAX),
        Engine::Compiled,
        1,
        &mut sink,
    ) {
        Ok(state) => state,
        Err(error) if order_dependence(&loaded.analysis.program).jumps => bail!(
            "the reference run failed where the simulation did not: {error}\nnote: some values of this program may differ by any amount with the order of floating-point sums (a conversion to an integer, a comparison or a branch of an order-dependent value), and one of them may be what faulted in one run and not in the other"
        ),
        Err(error) => bail!("the reference run failed where the simulation did not: {error}"),
    };
    let tolerance = Tolerance {
        relative: options.rtol,
        absolute: options.atol,
    };
    let mut comparison = compare(&loaded.analysis.program, &expected, &state, tolerance);
    if !options.tolerance_only
        && comparison.diverged.is_none()
        && !comparison.differences.is_empty()
    {
        // Values that differ beyond the tolerance: does another order of
        // the same sums move them as far (cancellation, a singularity)?
        let bar = spinner();
        if let Some(bar) = &bar {
            bar.set_message(format!(
                "{} value(s) differ: running `main` again with each par_loop's elements in reverse order",
                comparison.differences.len()
            ));
        }
        let another = explain_by_another_order(
            &loaded.analysis,
            State::new(&loaded.analysis.program, &loaded.data),
            common.max_iterations.unwrap_or(u64::MAX),
            &expected,
            &mut comparison,
            tolerance,
        );
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        if let AnotherOrder::Failed(error) = another {
            writeln!(
                stderr,
                "note: running `main` again in another order, to see whether the order of floating-point sums moves the values that differ as far, failed: {error}"
            )?;
        }
    }
    if let Some(diverged) = comparison.diverged {
        let exited = |exit: Option<u8>| exit.map_or(String::new(), |s| format!(", `exit({s})`"));
        let paths = format!(
            "`op2 run` started {} par_loop(s){} and the simulation {}{}",
            diverged.expected_loops,
            exited(diverged.expected_exit),
            diverged.actual_loops,
            exited(diverged.actual_exit)
        );
        if diverged.order_dependent {
            writeln!(
                stderr,
                "note: the simulation took another path through `main` than `op2 run` ({paths}): a condition of `main` depends on a value that the order of floating-point sums moves (language.md §8), so the final states are not compared"
            )?;
            return Ok(ended(&state));
        }
        writeln!(
            stderr,
            "error: the simulation took another path through `main` than `op2 run` ({paths}), and no condition of `main` depends on the order of sums"
        )?;
    }
    order_dependent_note(&mut stderr, &comparison)?;
    explained_note(&mut stderr, &comparison)?;
    let differences = comparison.differences;
    if differences.is_empty() && comparison.diverged.is_none() {
        writeln!(
            stderr,
            "check: the simulation agrees with `op2 run` on every dat and global{} (rtol {:e}, atol {:e})",
            if comparison.order_dependent.is_empty() && comparison.explained.is_empty() {
                ""
            } else {
                " compared"
            },
            options.rtol,
            options.atol
        )?;
        return Ok(ended(&state));
    }
    if differences.is_empty() {
        return Ok(Outcome::Errors);
    }
    writeln!(
        stderr,
        "error: the simulation differs from `op2 run` in {} value(s); the worst:",
        differences.len()
    )?;
    for difference in differences.iter().take(10) {
        write!(
            stderr,
            "  {}: run {} simulate {}",
            difference.path,
            op2_exec::state::json_number(difference.expected),
            op2_exec::state::json_number(difference.actual),
        )?;
        if difference.tolerable() {
            // `absolute` counts in the type's precision (the `atol` it
            // needs); the user is shown the plain ratio to the data.
            let of_data = if difference.expected.ty() == ScalarType::Float {
                difference.absolute * FLOAT_PRECISION
            } else {
                difference.absolute
            };
            writeln!(
                stderr,
                " (relative difference {:.3e}, {:.3e} of the data's magnitude)",
                difference.relative, of_data
            )?;
        } else {
            writeln!(stderr)?;
        }
    }
    let passing = op2_exec::passing(&differences, tolerance);
    let would_pass = match (passing.relative, passing.absolute) {
        (Some(rtol), Some(atol)) => format!("`--rtol {rtol:e}` or `--atol {atol:e}`"),
        (Some(rtol), None) => format!("`--rtol {rtol:e}`"),
        (None, Some(atol)) => format!("`--atol {atol:e}`"),
        (None, None) => String::new(),
    };
    if would_pass.is_empty() {
        writeln!(
            stderr,
            "note: no tolerance would pass: integers or NaNs differ"
        )?;
    } else {
        writeln!(
            stderr,
            "help: {would_pass} would pass; a difference far beyond the defaults is more likely a wrong result than the order of summation"
        )?;
    }
    Ok(Outcome::Errors)
}

/// Says which values differ where the order of floating-point sums may move
/// them by any amount, which the check does not hold to the tolerance.
fn order_dependent_note(
    stderr: &mut dyn Write,
    comparison: &op2_exec::Comparison,
) -> io::Result<()> {
    let Some(first) = comparison.order_dependent.first() else {
        return Ok(());
    };
    let names = names_of(comparison.order_dependent.iter().map(|d| d.path.as_str()));
    writeln!(
        stderr,
        "note: {} value(s) of {names} differ (first {}: run {} simulate {}); they are not compared: each is computed through a conversion to an integer, a comparison or a branch of a value that the order of floating-point sums moves (language.md §8), or from a WRITE argument read before it is written (W503)",
        comparison.order_dependent.len(),
        first.path,
        op2_exec::state::json_number(first.expected),
        op2_exec::state::json_number(first.actual),
    )
}

/// Says which values differ beyond the tolerance by no more than running
/// `main` again in another order moves them ([`op2_exec::explain`]), which
/// the check does not count as failures.
fn explained_note(stderr: &mut dyn Write, comparison: &op2_exec::Comparison) -> io::Result<()> {
    let Some(first) = comparison.explained.first() else {
        return Ok(());
    };
    let names = names_of(
        comparison
            .explained
            .iter()
            .map(|e| e.difference.path.as_str()),
    );
    writeln!(
        stderr,
        "note: {} value(s) of {names} differ beyond the tolerance, by at most {}× as much as running `main` again in another order moves them (each par_loop's elements in reverse, each increment summed apart and added after its kernel, each floating target summing the two halves of the set apart; the worst, {}: run {} simulate {}, the other order {}); the order of floating-point sums explains them on this instance (a long sum, a sum that cancels, or a division, `pow`, `log` or `sqrt` near a singularity, makes a few units in the last place of the terms far more), so they are not failures (`--tolerance-only` holds them to the tolerance)",
        comparison.explained.len(),
        op2_exec::ANOTHER_ORDER_FACTOR,
        first.difference.path,
        op2_exec::state::json_number(first.difference.expected),
        op2_exec::state::json_number(first.difference.actual),
        op2_exec::state::json_number(first.other),
    )
}

/// The dats and globals of `paths` (`dats.q[3][1]`, `globals.rms`), once
/// each in order of first appearance, as `` `q`, `rms` ``, at most five and
/// how many more.
fn names_of<'p>(paths: impl Iterator<Item = &'p str>) -> String {
    let mut names: Vec<&str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for path in paths {
        let name = path.split_once('.').map_or(path, |(_, rest)| rest);
        let name = name.split_once('[').map_or(name, |(name, _)| name);
        if seen.insert(name) {
            names.push(name);
        }
    }
    let shown: Vec<String> = names.iter().take(5).map(|n| format!("`{n}`")).collect();
    let more = if names.len() > 5 {
        format!(" and {} more", names.len() - 5)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

/// How a run that went well ends: with the status of the program's `exit`,
/// if it called one.
fn ended(state: &State) -> Outcome {
    match state.exit_status {
        Some(status) if status != 0 => Outcome::Exit(status),
        _ => Outcome::Success,
    }
}
