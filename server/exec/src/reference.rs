//! The reference semantics of a program (language.md §8), what `op2 run`
//! does and every generated graph must reproduce: statements in order, a
//! par_loop applies its kernel to elements 0, 1, …, n-1 with its arguments
//! staged: READ, RW and WRITE see the current data; INC sees zero and its
//! result is added afterwards; MIN and MAX see the current global and
//! combine into it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use op2_analysis::Analysis;
use op2_analysis::model::{Arg, ArgKind, DatId, InvocationId, Program};
use op2_analysis::value::{self, Value};
use op2_syntax::ast::{AccessMode, BinaryOp, ScalarType};
use op2_syntax::{Encoding, LineIndex, TextRange};

use crate::interp::{Compiled, Fault, Frame, Host};
use crate::native::Native;
use crate::printer::{Printer, Printing};
use crate::state::State;

/// How `op2 run` executes par_loops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// The interpreter: the reference semantics, closures over `Value`s.
    #[default]
    Interp,
    /// Every par_loop compiled to machine code (Cranelift) over typed flat
    /// buffers, bit-identical to the interpreter; `main` stays interpreted.
    /// Where a loop cannot be compiled the interpreter runs the program
    /// and [`Reference::fallback`] says why.
    Compiled,
}

/// How one par_loop runs on several threads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopPlan {
    /// Blocks of 256 contiguous elements.
    pub blocks: usize,
    /// Colours: blocks of one colour run at the same time, colours one
    /// after the other (0 when the loop runs in element order).
    pub colours: usize,
    /// Why the loop runs on one thread in element order, when it does.
    pub sequential: Option<&'static str>,
}

/// A runtime error, named by kernel, element and line.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeError {
    /// What went wrong, with where (`file:line:column`).
    pub message: String,
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RuntimeError {}

/// Where a range is, as `file:line:column`.
pub(crate) fn position(program: &Program, file: op2_syntax::FileId, range: TextRange) -> String {
    let file = program.file(file);
    let index = LineIndex::new(&file.text);
    let at = index.line_col(range.start, Encoding::Utf32);
    format!("{}:{}:{}", file.path.display(), at.line + 1, at.col + 1)
}

/// Describes a fault inside a kernel or `main`.
pub(crate) fn describe(
    program: &Program,
    file: op2_syntax::FileId,
    fault: &Fault,
    context: &str,
) -> RuntimeError {
    let message = match fault {
        Fault::DivisionByZero(range) => format!(
            "{}: integer division by zero {context}",
            position(program, file, *range)
        ),
        Fault::IndexOutOfRange {
            range,
            index,
            length,
        } => {
            format!(
                "{}: index {index} is out of range for length {length} {context}",
                position(program, file, *range)
            )
        }
        Fault::IterationLimit(limit) => {
            format!("`main` stopped after {limit} loop iterations (--max-iterations)")
        }
        Fault::Limit { range, message } => {
            format!("{}: {message} {context}", position(program, file, *range))
        }
        Fault::Host(message) => message.clone(),
    };
    RuntimeError { message }
}

/// One invocation ready to run: its kernel compiled for its bindings.
pub(crate) struct PreparedInvocation {
    pub compiled: Compiled,
}

pub(crate) fn prepare(program: &Program) -> Vec<Option<PreparedInvocation>> {
    program
        .invocations
        .iter()
        .map(|invocation| {
            let kernel = invocation.kernel?;
            if invocation.args.iter().any(Option::is_none) {
                return None;
            }
            let lengths: Vec<usize> = invocation
                .resolved_args()
                .map(|(_, a)| a.ty.dimension as usize)
                .collect();
            Some(PreparedInvocation {
                compiled: Compiled::new(&program.kernels[kernel.index()].body, &lengths),
            })
        })
        .collect()
}

/// Runs the reference semantics, printing through `out`.
pub struct Reference<'a> {
    program: Arc<Program>,
    state: State,
    prepared: Vec<Option<PreparedInvocation>>,
    out: &'a mut dyn FnMut(&str),
    /// The length of the line `main`'s text is on (a kernel's text does
    /// not count), for the line limit.
    unfinished_line: usize,
    /// Kernel evaluations so far.
    pub evaluations: u64,
    /// Par_loops run so far.
    pub invocations_run: u64,
    error: Option<RuntimeError>,
    progress: Option<Box<dyn FnMut(u64, u64) + 'a>>,
    native: Option<Native>,
    fallback: Option<String>,
    /// Threads asked for (0: one per core).
    threads_asked: usize,
    /// Threads the compiled engine runs loops on.
    threads_used: usize,
    /// Runs in another order the language allows ([`Reference::in_another_order`]).
    another_order: bool,
}

impl fmt::Debug for Reference<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reference")
            .field("evaluations", &self.evaluations)
            .finish_non_exhaustive()
    }
}

impl<'a> Reference<'a> {
    /// Prepares a run of `analysis` from `state`.
    pub fn new(analysis: &Analysis, state: State, out: &'a mut dyn FnMut(&str)) -> Reference<'a> {
        let prepared = prepare(&analysis.program);
        Reference {
            program: Arc::clone(&analysis.program),
            state,
            prepared,
            out,
            unfinished_line: 0,
            evaluations: 0,
            invocations_run: 0,
            error: None,
            progress: None,
            native: None,
            fallback: None,
            threads_asked: 1,
            threads_used: 1,
            another_order: false,
        }
    }

    /// Runs every par_loop in another order that the language allows
    /// (language.md §8), on one thread: its elements from the last to the
    /// first, and every INC argument, a `float` or `double` one too,
    /// starting at [`inc_identity`] and added to its target after the
    /// kernel (as a POETS device adds an increment it receives) rather
    /// than working on the target in place. Only the order and grouping of
    /// floating-point sums differ from the reference's run, so a value
    /// that differs between the two is one that the order of sums moves on
    /// this instance, by about as much as the two runs show: what
    /// `op2 simulate --check` asks of this run ([`crate::compare::explain`]).
    /// Both engines run it, bit-identical to each other; the compiled one
    /// is compiled again for it, when it was chosen before.
    #[must_use]
    pub fn in_another_order(mut self) -> Reference<'a> {
        self.another_order = true;
        self.threads_used = 1;
        if let Some(native) = self.native.take() {
            native.finish(&mut self.state);
            return self.with_engine(Engine::Compiled);
        }
        self
    }

    /// Chooses the engine; [`Engine::Compiled`] compiles every par_loop
    /// now (about a millisecond per loop), or records in
    /// [`Reference::fallback`] why the interpreter will run instead.
    #[must_use]
    pub fn with_engine(mut self, engine: Engine) -> Reference<'a> {
        self.native = None;
        self.fallback = None;
        if engine == Engine::Compiled {
            match Native::new(&self.program, &mut self.state, self.another_order) {
                Ok(native) => self.native = Some(native),
                Err(reason) => self.fallback = Some(reason),
            }
        }
        let threads = self.threads_asked;
        self.with_threads(threads)
    }

    /// Runs par_loops on `threads` threads (0: one per available core; at
    /// most 1024; 1, the default: in element order, bit-identical to the
    /// interpreter). Only the compiled engine uses threads. A loop runs on
    /// several threads in blocks coloured as OP2's plans colour them when
    /// no order of its elements can change its result beyond the rounding
    /// of sums (see `native::plan`); the results are the same for every
    /// thread count above one, and differ from one thread's only in the
    /// order of floating sums through maps and into globals.
    #[must_use]
    pub fn with_threads(mut self, threads: usize) -> Reference<'a> {
        self.threads_asked = threads;
        self.threads_used = match self.native.as_mut() {
            Some(native) => native.set_threads(&self.program, threads),
            None => 1,
        };
        self
    }

    /// The threads par_loops run on.
    pub fn threads(&self) -> usize {
        self.threads_used
    }

    /// How each invocation (in the program's order) runs on several
    /// threads; `None` on one thread.
    pub fn plans(&self) -> Option<Vec<LoopPlan>> {
        self.native.as_ref()?.plans()
    }

    /// Why the compiled engine was asked for and the interpreter runs.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// The engine that runs the par_loops.
    pub fn engine(&self) -> Engine {
        if self.native.is_some() {
            Engine::Compiled
        } else {
            Engine::Interp
        }
    }

    /// Calls `progress` with the par_loops run and kernel evaluations so far
    /// after every par_loop (for a progress display).
    #[must_use]
    pub fn with_progress(mut self, progress: impl FnMut(u64, u64) + 'a) -> Reference<'a> {
        self.progress = Some(Box::new(progress));
        self
    }

    /// Runs `main` to its end (or `max_iterations` loop iterations) and
    /// returns the final state.
    pub fn run(mut self, max_iterations: u64) -> Result<State, RuntimeError> {
        let program = Arc::clone(&self.program);
        let Some(main) = program.main.as_deref() else {
            return Ok(self.state);
        };
        let compiled = Compiled::new(main, &[]);
        let mut slots = vec![Value::Int(0); compiled.layout.size];
        let mut globals = std::mem::take(&mut self.state.globals);
        let consts = self.state.consts.clone();
        let lengths = self.state.lengths();
        // On several threads `main` runs on the loops' pool (see
        // `native::parallel::on_pool`).
        let pool = self.native.as_ref().and_then(Native::pool);
        let mut run_main = || {
            let mut frame = Frame {
                slots: &mut slots,
                consts: &consts,
                lengths: &lengths,
                globals: &mut globals,
                host: Some(&mut self),
                budget: max_iterations,
            };
            compiled.run_main(&mut frame)
        };
        let result = match pool {
            // SAFETY: `main`'s interpreter and the output callback it
            // borrows (which may hold the caller's locked stdout) are only
            // used through while this thread waits: written to, never
            // unlocked or read as thread-local state on the pool's thread.
            #[allow(unsafe_code)]
            Some(pool) => unsafe { crate::native::parallel::on_pool(&pool, run_main) },
            None => run_main(),
        };
        if let Some(native) = self.native.take() {
            native.finish(&mut self.state);
        }
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        let main_file = program.main_location.map(|l| l.file).unwrap_or_default();
        match result {
            Ok(exit_status) => {
                self.state.globals = globals;
                self.state.exit_status = exit_status;
                Ok(self.state)
            }
            Err(Fault::IterationLimit(_)) => Err(describe(
                &program,
                main_file,
                &Fault::IterationLimit(max_iterations),
                "",
            )),
            Err(fault) => Err(describe(&program, main_file, &fault, "in `main`")),
        }
    }

    fn run_invocation(
        &mut self,
        id: InvocationId,
        globals: &mut [Vec<Value>],
    ) -> Result<(), RuntimeError> {
        let program = Arc::clone(&self.program);
        let invocation = &program.invocations[id.index()];
        let Some(prepared) = self.prepared[id.index()].as_ref() else {
            return Ok(());
        };
        let (Some(_), Some(set)) = (invocation.kernel, invocation.set) else {
            return Ok(());
        };
        if let Some(native) = self.native.as_mut() {
            return match native.run(id, globals) {
                Ok(evaluations) => {
                    self.evaluations += evaluations;
                    Ok(())
                }
                Err(stopped) => {
                    self.evaluations += stopped.element as u64;
                    Err(kernel_fault(&program, id, stopped.element, &stopped.fault))
                }
            };
        }
        let layout = &prepared.compiled.layout;
        let mut slots = vec![Value::Int(0); layout.size];
        let lengths = self.state.lengths();
        let consts = &self.state.consts;
        let elements = self.state.set_sizes[set.index()];
        let args: Vec<_> = invocation.resolved_args().map(|(_, a)| a.clone()).collect();
        // Every element's copy of an `INFO` global, and of a MIN or MAX
        // one, starts from the global's value when the loop began, as on
        // POETS, where each device gets it in the begin message (and as in
        // OP2's parallel back ends, where every thread starts from it).
        let starts: Vec<Option<Vec<Value>>> = args
            .iter()
            .map(|arg| match (arg.kind, arg.mode) {
                (ArgKind::Info { global, .. }, _)
                | (ArgKind::Global(global), AccessMode::Min | AccessMode::Max) => {
                    Some(globals[global.index()].clone())
                }
                _ => None,
            })
            .collect();
        // Which arguments start from their target, per element (see
        // `in_place`).
        let plan = inc_plan(&args, self.another_order);
        let mut in_place = vec![false; args.len()];
        let mut rows = vec![0; args.len()];
        // In the other order, the floating INC targets sum the second half
        // of the elements and the first apart (`SplitSums`).
        let split = if self.another_order && elements >= 2 {
            SplitSums::of(&args)
        } else {
            SplitSums::default()
        };
        let half = elements / 2;
        let mut parts: Option<(Parts, Option<Parts>)> =
            (!split.is_empty()).then(|| (split.take(&mut self.state.dats, globals), None));
        for step in 0..elements {
            if step == elements - half
                && let Some((_, second @ None)) = parts.as_mut()
            {
                *second = Some(split.take(&mut self.state.dats, globals));
            }
            let element = if self.another_order {
                elements - 1 - step
            } else {
                step
            };
            in_place_args(&args, &plan, &mut in_place, &mut rows, |kind| {
                self.state.row_of(&program, kind, element)
            });
            // Stage the arguments.
            for (k, arg) in args.iter().enumerate() {
                let (base, length) = layout.params[k];
                let target = &mut slots[base..base + length];
                let staged = arg.mode == AccessMode::Inc && !in_place[k];
                match arg.kind {
                    ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. } => {
                        if staged {
                            target.fill(inc_identity(arg.ty.scalar));
                        } else if let (ArgKind::IndirectDat { .. }, AccessMode::Write) =
                            (arg.kind, arg.mode)
                        {
                            // The incoming value of WRITE is unspecified
                            // (W503); an indirect one starts at zero, as a
                            // POETS device's landing pad does the first
                            // time (later it keeps the last execution's).
                            target.fill(Value::zero(arg.ty.scalar));
                        } else {
                            let row = self.state.row_of(&program, arg.kind, element);
                            target.copy_from_slice(
                                &self.state.dats[dat.index()][row * length..(row + 1) * length],
                            );
                        }
                    }
                    ArgKind::Global(global) => {
                        if staged {
                            target.fill(inc_identity(arg.ty.scalar));
                        } else if let Some(start) = &starts[k] {
                            target.copy_from_slice(start);
                        } else {
                            target.copy_from_slice(&globals[global.index()]);
                        }
                    }
                    ArgKind::Info { .. } => {
                        if let Some(start) = &starts[k] {
                            target.copy_from_slice(start);
                        }
                    }
                    ArgKind::Const(id) => target.copy_from_slice(&consts[id.index()]),
                    ArgKind::Len(set) => target[0] = Value::Int(lengths[set.index()]),
                    ArgKind::Index(_) => {
                        target[0] = index_value(self.state.row_of(&program, arg.kind, element));
                    }
                }
            }
            let mut no_globals: [Vec<Value>; 0] = [];
            // A kernel that prints is never compiled, so it runs here on one
            // thread and its text comes out element by element in order.
            // The line limit counts the evaluation's own text, as the line
            // buffer of the device that runs it on POETS holds it; `main`'s
            // line is the controller's and does not count it.
            let mut line = 0;
            let mut printer = Printer {
                out: &mut *self.out,
                unfinished_line: &mut line,
                of: Printing::Kernel,
            };
            let mut frame = Frame {
                slots: &mut slots,
                consts,
                lengths: &lengths,
                globals: &mut no_globals,
                host: Some(&mut printer),
                budget: crate::interp::MAX_KERNEL_ITERATIONS,
            };
            if let Err(fault) = prepared.compiled.run(&mut frame) {
                return Err(kernel_fault(&program, id, element, &fault));
            }
            self.evaluations += 1;
            // Which `INFO` globals this element sets: those whose MIN or MAX
            // global it improves, judged before anything is combined.
            let improved: Vec<bool> = args
                .iter()
                .map(|arg| match arg.kind {
                    ArgKind::Info { of, .. } => {
                        let reference = &args[of as usize];
                        let (base, _) = layout.params[of as usize];
                        match reference.kind {
                            ArgKind::Global(global) => {
                                improves(slots[base], globals[global.index()][0], reference.mode)
                            }
                            _ => false,
                        }
                    }
                    _ => false,
                })
                .collect();
            // Store the results back.
            for (k, arg) in args.iter().enumerate() {
                let (base, length) = layout.params[k];
                let values = &slots[base..base + length];
                match (arg.kind, arg.mode) {
                    (ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. }, mode) => {
                        let row = self.state.row_of(&program, arg.kind, element);
                        let stored =
                            &mut self.state.dats[dat.index()][row * length..(row + 1) * length];
                        match mode {
                            AccessMode::Write | AccessMode::Rw => stored.copy_from_slice(values),
                            AccessMode::Inc if in_place[k] => stored.copy_from_slice(values),
                            AccessMode::Inc => add_into(stored, values),
                            _ => {}
                        }
                    }
                    (ArgKind::Global(global), AccessMode::Inc) if in_place[k] => {
                        globals[global.index()].copy_from_slice(values);
                    }
                    (ArgKind::Global(global), AccessMode::Inc) => {
                        add_into(&mut globals[global.index()], values)
                    }
                    (ArgKind::Global(global), mode @ (AccessMode::Min | AccessMode::Max)) => {
                        combine(&mut globals[global.index()], values, mode);
                    }
                    (ArgKind::Info { global, .. }, _) if improved[k] => {
                        globals[global.index()].copy_from_slice(values);
                    }
                    _ => {}
                }
            }
        }
        if let Some((saved, Some(second))) = parts {
            split.combine(&mut self.state.dats, globals, saved, &second);
        }
        Ok(())
    }
}

/// A fault in the kernel of invocation `id` at `element`.
fn kernel_fault(
    program: &Program,
    id: InvocationId,
    element: usize,
    fault: &Fault,
) -> RuntimeError {
    let invocation = &program.invocations[id.index()];
    let kernel = invocation.kernel.map(|k| &program.kernels[k.index()]);
    let set = invocation
        .set
        .map_or("", |s| program.sets[s.index()].name.as_str());
    let context = format!(
        "in kernel `{}` (invocation `{}`, element {element} of `{set}`)",
        kernel.map_or("", |k| k.name.as_str()),
        invocation.name,
    );
    let file = kernel.map(|k| k.location.file).unwrap_or_default();
    describe(program, file, fault, &context)
}

/// Whether an INC argument may work on its target in place: a `float` or
/// `double` one, whose kernel (E502) only adds to it, so that starting from
/// the target's value instead of zero changes nothing but the order in
/// which the sums round. That order is then OP2's sequential build's, which
/// hands the kernel a pointer into the dat or the global. An integer INC
/// argument keeps its zeroed copy: `*a += 1.5` on an `int` truncates the
/// increment alone, as every POETS device does (language.md §8).
pub(crate) fn may_work_in_place(arg: &Arg) -> bool {
    arg.mode == AccessMode::Inc && arg.ty.scalar.is_floating()
}

/// At most this many `float` or `double` INC arguments of one dat, or of
/// one global, in one par_loop work on their target in place
/// ([`may_work_in_place`]); where a loop has more on one dat or global, all
/// of that dat's or global's INC arguments in the loop start at zero and
/// are added afterwards. Each in-place argument of a dat compares its row
/// with those of the earlier ones of the same dat, per element, so the
/// limit keeps that work, and the compiled loop's code for it, linear in
/// the number of arguments (language.md §8, reliability.md "Limits").
pub const MAX_IN_PLACE_INC: usize = 32;

/// How one argument of a par_loop starts and ends, decided once per loop
/// by [`in_place_plan`] and followed by both engines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IncPlace {
    /// Not in place: an INC argument starts at [`inc_identity`] and what
    /// the kernel leaves in it is added to the target (an integer INC, a
    /// global passed before in the loop, a dat or global with more than
    /// [`MAX_IN_PLACE_INC`] floating INC arguments); every other argument
    /// is staged as its mode says (an indirect WRITE from zero).
    Staged,
    /// A floating INC argument that starts from its target's value and is
    /// stored back, unless, for the element, one of these earlier arguments
    /// (of the same dat, fewer than [`MAX_IN_PLACE_INC`]) names the same
    /// row: then it starts at [`inc_identity`] and is added after them.
    InPlace {
        /// The earlier floating INC arguments of the same dat.
        unless: Vec<usize>,
    },
}

/// The [`IncPlace`] of every argument of a par_loop: [`in_place_plan`], or
/// every argument [`IncPlace::Staged`] in the reference's other order
/// (`Reference::in_another_order`), where each INC is summed apart and
/// added after its kernel. The interpreter and the compiled engine both ask
/// here.
pub fn inc_plan(args: &[Arg], every_staged: bool) -> Vec<IncPlace> {
    if every_staged {
        vec![IncPlace::Staged; args.len()]
    } else {
        in_place_plan(args)
    }
}

/// The [`IncPlace`] of every argument of a par_loop, in order. Arguments are
/// grouped by their target (a dat or a global) in one pass, so the plan,
/// and the per-element row compares it asks for (at most
/// `MAX_IN_PLACE_INC - 1` per argument), are linear in `args.len()`.
pub fn in_place_plan(args: &[Arg]) -> Vec<IncPlace> {
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    enum Target {
        Dat(DatId),
        Global(usize),
    }
    let target = |arg: &Arg| -> Option<Target> {
        if !may_work_in_place(arg) {
            return None;
        }
        match arg.kind {
            ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. } => Some(Target::Dat(dat)),
            ArgKind::Global(global) => Some(Target::Global(global.index())),
            _ => None,
        }
    };
    let mut groups: HashMap<Target, Vec<usize>> = HashMap::new();
    for (k, arg) in args.iter().enumerate() {
        if let Some(t) = target(arg) {
            groups.entry(t).or_default().push(k);
        }
    }
    let mut plan = vec![IncPlace::Staged; args.len()];
    for (t, members) in groups {
        if members.len() > MAX_IN_PLACE_INC {
            continue;
        }
        match t {
            // A global passed again names the same target: only the first
            // works in place.
            Target::Global(_) => plan[members[0]] = IncPlace::InPlace { unless: Vec::new() },
            Target::Dat(_) => {
                for (n, &k) in members.iter().enumerate() {
                    plan[k] = IncPlace::InPlace {
                        unless: members[..n].to_vec(),
                    };
                }
            }
        }
    }
    plan
}

/// Sets `in_place[k]` for one element as `plan` ([`in_place_plan`]) says:
/// whether argument `k` starts from its target's value and is stored back,
/// rather than starting at zero and being added to it. `row(kind)` is the
/// element's row of a dat argument; `rows` is scratch of `args.len()`. A
/// later argument on the same row (a map that names one row twice for the
/// element, a direct and an indirect INC of one dat) starts at zero so that
/// its additions come on top of the earlier one's.
pub(crate) fn in_place_args(
    args: &[Arg],
    plan: &[IncPlace],
    in_place: &mut [bool],
    rows: &mut [usize],
    row: impl Fn(ArgKind) -> usize,
) {
    for (k, (arg, place)) in args.iter().zip(plan).enumerate() {
        in_place[k] = match place {
            IncPlace::Staged => false,
            IncPlace::InPlace { unless } => {
                if let ArgKind::DirectDat(_) | ArgKind::IndirectDat { .. } = arg.kind {
                    rows[k] = row(arg.kind);
                }
                unless.iter().all(|&j| rows[j] != rows[k])
            }
        };
    }
}

/// `target += values`, component by component, in the target's type.
pub(crate) fn add_into(target: &mut [Value], values: &[Value]) {
    for (t, v) in target.iter_mut().zip(values) {
        let ty = t.ty();
        *t = value::binary(BinaryOp::Add, *t, *v).map_or(*t, |sum| sum.convert(ty));
    }
}

/// The floating INC targets of a par_loop (dats and globals, each once,
/// with their scalar type), which the reference's other order sums in two
/// parts (`Reference::in_another_order`): the elements of the second half
/// of the set, then those of the first, each part from INC's identity, and
/// then the target takes its old value plus the second part plus the
/// first. Recursive sums of many like terms round alike in any element
/// order, so reversing the elements alone would not move them; summing in
/// parts moves them about as much as other orders do (blocks on threads,
/// the simulator's trees).
#[derive(Clone, Debug, Default)]
pub(crate) struct SplitSums {
    pub dats: Vec<(usize, ScalarType)>,
    pub globals: Vec<(usize, ScalarType)>,
}

/// What a split sum's targets held at one point, dats then globals, in
/// [`SplitSums`]' order.
pub(crate) type Parts = (Vec<Vec<Value>>, Vec<Vec<Value>>);

impl SplitSums {
    pub(crate) fn of<'a>(args: impl IntoIterator<Item = &'a Arg>) -> SplitSums {
        let mut split = SplitSums::default();
        for arg in args {
            if arg.mode != AccessMode::Inc || !arg.ty.scalar.is_floating() {
                continue;
            }
            match arg.kind {
                ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. } => {
                    split.dats.push((dat.index(), arg.ty.scalar));
                }
                ArgKind::Global(global) => split.globals.push((global.index(), arg.ty.scalar)),
                _ => {}
            }
        }
        for list in [&mut split.dats, &mut split.globals] {
            list.sort_unstable_by_key(|&(i, _)| i);
            list.dedup_by_key(|&mut (i, _)| i);
        }
        split
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.dats.is_empty() && self.globals.is_empty()
    }

    /// Takes the targets' values out of `dats` and `globals`, leaving INC's
    /// identity in each component.
    pub(crate) fn take(&self, dats: &mut [Vec<Value>], globals: &mut [Vec<Value>]) -> Parts {
        let take = |values: &mut Vec<Value>, ty: ScalarType| {
            let identity = inc_identity(ty);
            values
                .iter_mut()
                .map(|v| std::mem::replace(v, identity))
                .collect::<Vec<Value>>()
        };
        (
            self.dats
                .iter()
                .map(|&(d, ty)| take(&mut dats[d], ty))
                .collect(),
            self.globals
                .iter()
                .map(|&(g, ty)| take(&mut globals[g], ty))
                .collect(),
        )
    }

    /// With the first half's sums in the targets: each target becomes
    /// `saved + second + first`, added in that order.
    pub(crate) fn combine(
        &self,
        dats: &mut [Vec<Value>],
        globals: &mut [Vec<Value>],
        saved: Parts,
        second: &Parts,
    ) {
        let put = |target: &mut Vec<Value>, saved: Vec<Value>, second: &[Value]| {
            let first = std::mem::replace(target, saved);
            add_into(target, second);
            add_into(target, &first);
        };
        for (((d, _), saved), second) in self.dats.iter().zip(saved.0).zip(&second.0) {
            put(&mut dats[*d], saved, second);
        }
        for (((g, _), saved), second) in self.globals.iter().zip(saved.1).zip(&second.1) {
            put(&mut globals[*g], saved, second);
        }
    }
}

/// An element index as the `int` an `idx` argument passes (set sizes are at
/// most 2^24, so it is exact).
pub(crate) fn index_value(index: usize) -> Value {
    Value::Int(i32::try_from(index).unwrap_or(i32::MAX))
}

/// Where a staged INC argument starts: `-0.0` for `float` and `double`,
/// IEEE's additive identity (`x + -0.0` is `x` bit for bit for every `x`,
/// `-0.0` included, where `-0.0 + 0.0` is `+0.0`), so that a staged sum and
/// one in place agree on the sign of a zero; zero for the integer types.
pub(crate) fn inc_identity(ty: ScalarType) -> Value {
    match Value::zero(ty) {
        Value::Double(_) => Value::Double(-0.0),
        Value::Float(_) => Value::Float(-0.0),
        zero => zero,
    }
}

/// The sign of `value` when it is a floating zero: `Some(true)` for `-0.0`.
fn zero_sign(value: Value) -> Option<bool> {
    match value {
        Value::Double(v) if v == 0.0 => Some(v.is_sign_negative()),
        Value::Float(v) if v == 0.0 => Some(v.is_sign_negative()),
        _ => None,
    }
}

/// True when `value` is strictly better than `current` for a MIN or MAX
/// reduction: smaller for MIN, larger for MAX, and between the zeros of a
/// `float` or `double`, `-0.0` for MIN and `+0.0` for MAX, so that the
/// result does not depend on the order the values come in (a NaN is never
/// better, and nothing is better than a NaN). It decides what [`combine`]
/// takes and which element sets an `INFO` global.
pub(crate) fn improves(value: Value, current: Value, mode: AccessMode) -> bool {
    let op = if mode == AccessMode::Min {
        BinaryOp::Lt
    } else {
        BinaryOp::Gt
    };
    value::binary(op, value, current).is_ok_and(Value::is_true)
        || match (zero_sign(value), zero_sign(current)) {
            (Some(negative), Some(was_negative)) => {
                negative != was_negative && negative == (mode == AccessMode::Min)
            }
            _ => false,
        }
}

/// Combines partial MIN/MAX values into the target: each component takes
/// the value where it [`improves`] on it.
pub(crate) fn combine(target: &mut [Value], values: &[Value], mode: AccessMode) {
    for (t, v) in target.iter_mut().zip(values) {
        if improves(*v, *t, mode) {
            *t = v.convert(t.ty());
        }
    }
}

impl Host for Reference<'_> {
    fn print(&mut self, text: &str) {
        (self.out)(text);
    }

    fn unfinished_line(&mut self) -> &mut usize {
        &mut self.unfinished_line
    }

    fn par_loop(
        &mut self,
        invocation: InvocationId,
        globals: &mut [Vec<Value>],
    ) -> Result<(), Fault> {
        self.state.path.record(invocation);
        match self.run_invocation(invocation, globals) {
            Ok(()) => {
                self.invocations_run += 1;
                if let Some(progress) = self.progress.as_mut() {
                    progress(self.invocations_run, self.evaluations);
                }
                Ok(())
            }
            Err(error) => {
                let message = error.message.clone();
                self.error = Some(error);
                Err(Fault::Host(message))
            }
        }
    }

    fn dat_values(&mut self, dat: DatId) -> Result<Vec<Value>, Fault> {
        // The compiled engine holds the dats while it runs.
        Ok(match self.native.as_ref() {
            Some(native) => native.dat_values(dat),
            None => self.state.dats[dat.index()].clone(),
        })
    }
}
