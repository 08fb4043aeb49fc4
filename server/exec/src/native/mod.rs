//! The compiled engine of `op2 run`: every par_loop of a program compiled
//! by Cranelift into one machine-code loop over typed flat buffers
//! ([`compile`]), run with the interpreter's exact semantics and faults.
//! `main` stays interpreted; it only sequences loops and prints. The
//! interpreter ([`crate::reference`]) remains the reference: where a loop
//! cannot be compiled the whole program runs interpreted, with the reason.

mod code;
pub(crate) mod compile;
pub(crate) mod flat;
pub(crate) mod parallel;
mod plan;

use std::sync::Arc;

use cranelift_codegen::ir::{AbiParam, types};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_module::{Linkage, Module};
use op2_analysis::model::{ArgKind, DatId, InvocationId, Program};
use op2_analysis::value::Value;

use crate::interp::Fault;
use crate::state::State;
pub(crate) use code::Rows;
use code::{Code, Loop, Maps, Memory};
use compile::{Context, Site, SiteKind, Slot};
use flat::{Buffer, from_slot, size_of, to_slot};
use plan::Plan;

use crate::reference::SplitSums;

/// A compiled loop with what it needs to report a fault.
#[derive(Debug)]
struct Compiled {
    code: Loop,
    sites: Vec<Site>,
    /// The globals the loop reads or reduces (table slots), with their type.
    globals: Vec<(usize, op2_syntax::ast::ScalarType)>,
    /// The globals it reduces by MIN or MAX, whose values when the loop
    /// begins it reads too (`Slot::GlobalStart`).
    starts: Vec<usize>,
}

/// A program compiled for one run, holding the run's dats and maps.
#[derive(Debug)]
pub(crate) struct Native {
    code: Code,
    loops: Vec<Option<Compiled>>,
    dats: Vec<Buffer>,
    maps: Maps,
    consts: Vec<Vec<u64>>,
    globals: Vec<Vec<u64>>,
    /// The values of the globals a loop reduces by MIN or MAX when it
    /// began (`Slot::GlobalStart`), for the loop running.
    starts: Vec<Vec<u64>>,
    /// With more than one thread: the pool and every loop's plan.
    threads: Option<Threads>,
    /// Every loop runs its elements from the last to the first, with its
    /// INC arguments staged (`Reference::in_another_order`), on one thread.
    reverse: bool,
    /// With `reverse`, per invocation: its floating INC targets, summed in
    /// two parts (`reference::SplitSums`).
    splits: Vec<SplitSums>,
}

/// The most threads a run uses (a larger request gets this many).
pub(crate) const MAX_THREADS: usize = 1024;

/// The stack of each thread of `--threads`' pool (4 MiB): room for a
/// compiled loop's frame (at most `compile::MAX_FRAME`) many times over.
const POOL_STACK: usize = 4 << 20;

/// Running loops on several threads.
#[derive(Debug)]
struct Threads {
    pool: Arc<rayon::ThreadPool>,
    plans: Vec<Option<Plan>>,
}

/// Why a loop stopped: a fault at an element.
#[derive(Debug)]
pub(crate) struct Stopped {
    pub fault: Fault,
    pub element: usize,
}

impl Native {
    /// Compiles every invocation of `program` for the run from `state`, and
    /// takes the state's dats and maps into typed buffers (given back by
    /// [`Native::finish`]). Fails, leaving `state` as it was, when some
    /// loop cannot be compiled.
    ///
    /// With `reverse`, for the run in another order: every
    /// loop's elements from the last to the first, every INC argument
    /// staged from the INC identity and added after the kernel, on one
    /// thread (`Reference::in_another_order`).
    pub(crate) fn new(
        program: &Program,
        state: &mut State,
        reverse: bool,
    ) -> Result<Native, String> {
        let mut module = code::new_module()?;
        let cx = Context {
            program,
            set_sizes: &state.set_sizes,
            consts: &state.consts,
            staged: reverse,
        };
        let mut functions = Functions::new(&module)?;
        let mut loops = Vec::with_capacity(program.invocations.len());
        for (index, invocation) in program.invocations.iter().enumerate() {
            if !runnable(invocation) {
                // The interpreter skips these too (a program with errors
                // never runs).
                loops.push(None);
                continue;
            }
            let (id, shape) = functions
                .define(
                    &mut module,
                    &format!("loop{index}"),
                    |declare_math, function, builder_context| {
                        compile::compile_loop(
                            &cx,
                            declare_math,
                            invocation,
                            function,
                            builder_context,
                        )
                    },
                )
                .map_err(|reason| {
                    format!("par_loop `{}` is not compiled: {reason}", invocation.name)
                })?;
            let set = invocation.set.map_or(0, |s| s.index());
            let elements = state.set_sizes[set];
            // What each slot's code may reach.
            let mut need = vec![0usize; shape.slots.len()];
            let mut map_bounds = vec![None; shape.slots.len()];
            let mut globals = Vec::new();
            let mut starts = Vec::new();
            let position = |slot: Slot| shape.slots.iter().position(|s| *s == slot);
            for (_, arg) in invocation.resolved_args() {
                let dimension = arg.ty.dimension as usize;
                let bytes = dimension * size_of(arg.ty.scalar);
                match arg.kind {
                    ArgKind::DirectDat(dat) => {
                        if let Some(k) = position(Slot::Dat(dat.index())) {
                            need[k] = need[k].max(elements * bytes);
                        }
                    }
                    ArgKind::IndirectDat { dat, map, .. } => {
                        let target = program.maps[map.index()]
                            .to
                            .map_or(0, |s| state.set_sizes[s.index()]);
                        if let Some(k) = position(Slot::Dat(dat.index())) {
                            need[k] = need[k].max(target * bytes);
                        }
                        if let Some(k) = position(Slot::Map(map.index())) {
                            let arity = program.maps[map.index()].arity as usize;
                            need[k] = need[k].max(elements * arity * 4);
                            map_bounds[k] = Some(target);
                        }
                    }
                    ArgKind::Index(Some((map, _))) => {
                        if let Some(k) = position(Slot::Map(map.index())) {
                            let arity = program.maps[map.index()].arity as usize;
                            need[k] = need[k].max(elements * arity * 4);
                            map_bounds[k] = Some(
                                program.maps[map.index()]
                                    .to
                                    .map_or(0, |s| state.set_sizes[s.index()]),
                            );
                        }
                    }
                    ArgKind::Global(global) | ArgKind::Info { global, .. } => {
                        if let Some(k) = position(Slot::Global(global.index())) {
                            need[k] = need[k].max(dimension * 8);
                            if !globals.iter().any(|(g, _)| *g == global.index()) {
                                globals.push((global.index(), arg.ty.scalar));
                            }
                        }
                        if let Some(k) = position(Slot::GlobalStart(global.index())) {
                            need[k] = need[k].max(dimension * 8);
                            if !starts.contains(&global.index()) {
                                starts.push(global.index());
                            }
                        }
                    }
                    ArgKind::Const(_) | ArgKind::Len(_) | ArgKind::Index(None) => {}
                }
            }
            for (k, slot) in shape.slots.iter().enumerate() {
                if let Slot::Const(c) = *slot {
                    need[k] = state.consts[c].len() * 8;
                }
            }
            loops.push(Some(Compiled {
                code: Code::bind(id, shape.slots, need, map_bounds, elements),
                sites: shape.sites,
                globals,
                starts,
            }));
        }
        let code = Code::new(module)?;
        let bounds = program
            .maps
            .iter()
            .map(|m| m.to.map_or(0, |s| state.set_sizes[s.index()]))
            .collect();
        let maps = Maps::new(std::mem::take(&mut state.maps), bounds);
        let maps = match maps {
            Ok(maps) => maps,
            Err((reason, targets)) => {
                state.maps = targets;
                return Err(reason);
            }
        };
        let dats = program
            .dats
            .iter()
            .zip(&state.dats)
            .map(|(dat, values)| Buffer::from_values(dat.ty.scalar, values))
            .collect();
        state.dats = Vec::new();
        Ok(Native {
            code,
            loops,
            dats,
            maps,
            consts: state
                .consts
                .iter()
                .map(|values| values.iter().map(|v| to_slot(*v)).collect())
                .collect(),
            globals: program.globals.iter().map(|_| Vec::new()).collect(),
            starts: program.globals.iter().map(|_| Vec::new()).collect(),
            threads: None,
            reverse,
            splits: if reverse {
                program
                    .invocations
                    .iter()
                    .map(|i| SplitSums::of(i.resolved_args().map(|(_, a)| a)))
                    .collect()
            } else {
                Vec::new()
            },
        })
    }

    /// Runs loops on `threads` threads from now on (0: one per available
    /// core; at most [`MAX_THREADS`]): the loops whose plan allows it
    /// ([`plan`]) in coloured blocks, the others in element order. Returns
    /// the number of threads, 1 when no pool could be made.
    pub(crate) fn set_threads(&mut self, program: &Program, threads: usize) -> usize {
        let threads = if threads == 0 {
            std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
        } else {
            threads
        }
        .min(MAX_THREADS);
        self.threads = None;
        if threads < 2 || self.reverse {
            return 1;
        }
        let Ok(pool) = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|k| format!("op2-run-{k}"))
            // Not `RUST_MIN_STACK`'s, whatever it is: compiled loops may use
            // up to `compile::MAX_FRAME` of it.
            .stack_size(POOL_STACK)
            .build()
        else {
            return 1;
        };
        let maps = &self.maps;
        let lookup = |m: usize| {
            let (targets, rows) = maps.targets(m);
            let arity = program.maps[m].arity as usize;
            (targets, arity, rows)
        };
        let plans = program
            .invocations
            .iter()
            .zip(&self.loops)
            .map(|(invocation, compiled)| {
                let compiled = compiled.as_ref()?;
                Some(plan::plan(invocation, compiled.code.elements, &lookup))
            })
            .collect();
        self.threads = Some(Threads {
            pool: Arc::new(pool),
            plans,
        });
        threads
    }

    /// The pool loops run on, when they run on several threads.
    pub(crate) fn pool(&self) -> Option<Arc<rayon::ThreadPool>> {
        self.threads.as_ref().map(|t| Arc::clone(&t.pool))
    }

    /// How each invocation runs on the threads: `None` on one thread.
    pub(crate) fn plans(&self) -> Option<Vec<crate::reference::LoopPlan>> {
        let threads = self.threads.as_ref()?;
        Some(
            threads
                .plans
                .iter()
                .zip(&self.loops)
                .map(|(plan, compiled)| {
                    let blocks = compiled
                        .as_ref()
                        .map_or(0, |c| c.code.elements.div_ceil(plan::BLOCK));
                    match plan {
                        Some(Plan::Coloured { colours, .. }) => crate::reference::LoopPlan {
                            blocks,
                            colours: colours.len(),
                            sequential: None,
                        },
                        Some(Plan::Sequential(reason)) => crate::reference::LoopPlan {
                            blocks,
                            colours: 0,
                            sequential: Some(reason),
                        },
                        None => crate::reference::LoopPlan {
                            blocks: 0,
                            colours: 0,
                            sequential: Some("not run"),
                        },
                    }
                })
                .collect(),
        )
    }

    /// Runs invocation `id` on `globals` (`main`'s). Returns the kernel
    /// evaluations, or the fault and the element it happened at (the
    /// elements before it are applied, as in the interpreter).
    pub(crate) fn run(
        &mut self,
        id: InvocationId,
        globals: &mut [Vec<Value>],
    ) -> Result<u64, Stopped> {
        let Some(compiled) = &self.loops[id.index()] else {
            return Ok(0);
        };
        for &(g, ty) in &compiled.globals {
            if let Some(bad) = globals[g].iter().find(|v| v.ty() != ty) {
                return Err(Stopped {
                    fault: Fault::Host(format!(
                        "internal error: a global holds {bad} where its type is {ty}; run with `--engine interp`"
                    )),
                    element: 0,
                });
            }
            self.globals[g] = globals[g].iter().map(|v| to_slot(*v)).collect();
        }
        for &g in &compiled.starts {
            self.starts[g].clone_from(&self.globals[g]);
        }
        let mut memory = Memory {
            dats: &mut self.dats,
            maps: &self.maps,
            globals: &mut self.globals,
            starts: &self.starts,
            consts: &self.consts,
        };
        let elements = compiled.code.elements;
        let plan = self
            .threads
            .as_ref()
            .and_then(|t| Some((&t.pool, t.plans[id.index()].as_ref()?)));
        let result = match plan {
            Some((
                pool,
                Plan::Coloured {
                    colours,
                    reductions,
                },
            )) => {
                let starts: Vec<Vec<u64>> = reductions
                    .iter()
                    .map(|r| memory.globals[r.global].clone())
                    .collect();
                let result = self
                    .code
                    .bind_memory(&compiled.code, &mut memory)
                    .and_then(|bound| {
                        parallel::run(pool, &bound, elements, colours, reductions, &starts)
                    });
                result.map(|totals| {
                    for (r, total) in reductions.iter().zip(totals) {
                        self.globals[r.global] = total;
                    }
                })
            }
            _ if self.reverse => run_in_parts(
                &self.code,
                &compiled.code,
                &mut memory,
                elements,
                &self.splits[id.index()],
            ),
            _ => self.code.run(&compiled.code, &mut memory, 0, elements),
        };
        for &(g, ty) in &compiled.globals {
            globals[g] = self.globals[g].iter().map(|&s| from_slot(s, ty)).collect();
        }
        match result {
            Ok(()) => Ok(elements as u64),
            Err(stop) => Err(Stopped {
                fault: fault_at(&compiled.sites, &stop),
                element: usize::try_from(stop.element).unwrap_or(0),
            }),
        }
    }

    /// The values of a dat now (for `fetch`), element-major.
    pub(crate) fn dat_values(&self, dat: DatId) -> Vec<Value> {
        self.dats[dat.index()].to_values()
    }

    /// Gives the dats and maps back to `state`.
    pub(crate) fn finish(self, state: &mut State) {
        state.dats = self.dats.iter().map(Buffer::to_values).collect();
        state.maps = self.maps.into_inner();
    }
}

/// A loop of the run in another order: its elements from the last, the
/// floating INC targets summing the second half and the first apart, as the
/// interpreter does (`reference::SplitSums`, the same arithmetic on the
/// same values, so both engines stay bit-identical).
fn run_in_parts(
    code: &Code,
    lp: &Loop,
    memory: &mut Memory<'_>,
    elements: usize,
    split: &SplitSums,
) -> Result<(), code::Stop> {
    if split.is_empty() || elements < 2 {
        return code.run_reverse(lp, memory, 0, elements);
    }
    let half = elements / 2;
    let (mut dats, mut globals) = split_values(memory, split);
    let saved = split.take(&mut dats, &mut globals);
    store_split(memory, split, &dats, &globals);
    code.run_reverse(lp, memory, half, elements)?;
    let (mut dats, mut globals) = split_values(memory, split);
    let second = split.take(&mut dats, &mut globals);
    store_split(memory, split, &dats, &globals);
    code.run_reverse(lp, memory, 0, half)?;
    let (mut dats, mut globals) = split_values(memory, split);
    split.combine(&mut dats, &mut globals, saved, &second);
    store_split(memory, split, &dats, &globals);
    Ok(())
}

/// `split`'s targets in `memory` as values, at their indices (the others
/// empty).
fn split_values(memory: &Memory<'_>, split: &SplitSums) -> (Vec<Vec<Value>>, Vec<Vec<Value>>) {
    let mut dats = vec![Vec::new(); memory.dats.len()];
    for &(d, _) in &split.dats {
        dats[d] = memory.dats[d].to_values();
    }
    let mut globals = vec![Vec::new(); memory.globals.len()];
    for &(g, ty) in &split.globals {
        globals[g] = memory.globals[g]
            .iter()
            .map(|&s| from_slot(s, ty))
            .collect();
    }
    (dats, globals)
}

/// Writes `split`'s targets back into `memory`.
fn store_split(
    memory: &mut Memory<'_>,
    split: &SplitSums,
    dats: &[Vec<Value>],
    globals: &[Vec<Value>],
) {
    for &(d, ty) in &split.dats {
        memory.dats[d] = Buffer::from_values(ty, &dats[d]);
    }
    for &(g, _) in &split.globals {
        memory.globals[g] = globals[g].iter().map(|&v| to_slot(v)).collect();
    }
}

/// Whether an invocation runs at all: the interpreter skips one whose
/// kernel, set or some argument does not resolve (a program with errors
/// never runs).
fn runnable(invocation: &op2_analysis::model::Invocation) -> bool {
    invocation.kernel.is_some()
        && invocation.set.is_some()
        && invocation.args.iter().all(Option::is_some)
}

/// The fault of the interpreter that compiled code stopped with at `stop`.
fn fault_at(sites: &[Site], stop: &code::Stop) -> Fault {
    match sites.get(stop.site.wrapping_sub(1)).copied() {
        Some(Site {
            kind: SiteKind::Division,
            range,
        }) => Fault::DivisionByZero(range),
        Some(Site {
            kind: SiteKind::Index { length, unsigned },
            range,
        }) => Fault::IndexOutOfRange {
            range,
            #[allow(clippy::cast_sign_loss)]
            index: if unsigned {
                i128::from(stop.index as u64)
            } else {
                i128::from(stop.index)
            },
            length,
        },
        Some(Site {
            kind: SiteKind::Operands,
            range,
        }) => Fault::Host(format!("invalid operands at {range:?}")),
        Some(Site {
            kind: SiteKind::LoopLimit,
            range,
        }) => crate::interp::kernel_loop_limit(range),
        None => Fault::Host("internal error: an unknown fault site".into()),
    }
}

/// Defining functions of [`compile::loop_signature`] in one module, with
/// the math functions their code calls declared once.
struct Functions {
    signature: cranelift_codegen::ir::Signature,
    declared: Vec<(String, cranelift_module::FuncId)>,
    builder_context: FunctionBuilderContext,
    /// The code generator for functions past
    /// [`compile::LARGE_FUNCTION`] instructions.
    single_pass: Arc<dyn cranelift_codegen::isa::TargetIsa>,
}

impl Functions {
    fn new(module: &cranelift_jit::JITModule) -> Result<Functions, String> {
        Ok(Functions {
            signature: compile::loop_signature(module.isa().default_call_conv()),
            declared: Vec::new(),
            builder_context: FunctionBuilderContext::new(),
            single_pass: code::isa(true)?,
        })
    }

    /// Builds a function with `build` and defines it in `module` as `name`.
    fn define<T>(
        &mut self,
        module: &mut cranelift_jit::JITModule,
        name: &str,
        build: impl FnOnce(
            compile::DeclareMath<'_>,
            &mut cranelift_codegen::ir::Function,
            &mut FunctionBuilderContext,
        ) -> Result<T, String>,
    ) -> Result<(cranelift_module::FuncId, T), String> {
        let mut context = module.make_context();
        context.func.signature = self.signature.clone();
        let shape = {
            let module_ref = &mut *module;
            let declared = &mut self.declared;
            let mut declare_math =
                |name: &str, arity: usize, func: &mut cranelift_codegen::ir::Function| {
                    let id = match declared.iter().find(|(n, _)| n == name) {
                        Some((_, id)) => *id,
                        None => {
                            let mut sig = module_ref.make_signature();
                            for _ in 0..arity {
                                sig.params.push(AbiParam::new(types::F64));
                            }
                            sig.returns.push(AbiParam::new(types::F64));
                            let id = module_ref
                                .declare_function(name, Linkage::Import, &sig)
                                .expect("math functions are declared once, consistently");
                            declared.push((name.to_owned(), id));
                            id
                        }
                    };
                    module_ref.declare_func_in_func(id, func)
                };
            let built = build(
                &mut declare_math,
                &mut context.func,
                &mut self.builder_context,
            );
            if built.is_err() {
                // A build declined half way (a kernel that prints) leaves
                // the builder's context holding its blocks: the next
                // function must start from an empty one.
                self.builder_context = FunctionBuilderContext::new();
            }
            built?
        };
        // A large function gets the register allocator whose time is
        // linear in it: the backtracking one took 7.8 s for a kernel of
        // 16,000 locals all live at its end (700 KB), growing with the
        // square of their number.
        let instructions = context.func.dfg.num_insts();
        let isa = if instructions > compile::LARGE_FUNCTION {
            &*self.single_pass
        } else {
            module.isa()
        };
        context
            .compile(isa, &mut Default::default())
            .map_err(|e| format!("{:?}", e.inner))?;
        let compiled = context
            .compiled_code()
            .ok_or("the code generator gave no code")?;
        // The frame, spill slots included: what the stack must hold.
        let frame = compiled
            .buffer
            .frame_layout()
            .map_or(0, |layout| layout.frame_to_fp_offset as usize);
        if frame > compile::MAX_STACK {
            return Err(format!(
                "its code needs {frame} bytes of stack, more than the compiled engine's {}",
                compile::MAX_STACK
            ));
        }
        let alignment = u64::from(compiled.buffer.alignment);
        let id = module
            .declare_function(name, Linkage::Local, &self.signature)
            .map_err(|e| e.to_string())?;
        let relocs: Vec<cranelift_module::ModuleReloc> = compiled
            .buffer
            .relocs()
            .iter()
            .map(|reloc| cranelift_module::ModuleReloc::from_mach_reloc(reloc, &context.func, id))
            .collect();
        module
            .define_function_bytes(id, alignment, compiled.code_buffer(), &relocs)
            .map_err(|e| format!("{e:?}"))?;
        module.clear_context(&mut context);
        Ok((id, shape))
    }
}

/// Every execute handler of a program compiled, as the simulator calls
/// them (one per device and execute): staging from the element's rows,
/// the kernel and the store-back in one function
/// ([`compile::compile_handler`]).
pub(crate) struct KernelCalls {
    calls: Vec<Option<Call>>,
    /// The consts' slots the calls read, kept alive for their tables.
    _consts: Vec<Vec<u64>>,
    /// Owns the machine code; dropped after `calls`.
    _code: Code,
    /// Why some kernels are not compiled (they run interpreted).
    pub(crate) declined: Vec<String>,
}

/// One invocation's compiled handler and its fault sites.
type Call = (code::KernelCall, Vec<Site>);

impl std::fmt::Debug for KernelCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KernelCalls")
    }
}

impl KernelCalls {
    /// Compiles the execute handler of every invocation of `program` that
    /// has one in `handlers` (its arguments' rows, by invocation) for a run
    /// with `consts` and `set_sizes`; an invocation that cannot be compiled
    /// is left to the interpreter, with the reason in `declined`. Fails only
    /// when the machine has no code generator.
    pub(crate) fn new(
        program: &Program,
        set_sizes: &[usize],
        consts: &[Vec<Value>],
        handlers: &[Option<Vec<compile::HandlerArg>>],
    ) -> Result<KernelCalls, String> {
        let mut module = code::new_module()?;
        let cx = Context {
            program,
            set_sizes,
            consts,
            staged: false,
        };
        let mut functions = Functions::new(&module)?;
        let mut defined = Vec::with_capacity(program.invocations.len());
        let mut declined = Vec::new();
        for (index, invocation) in program.invocations.iter().enumerate() {
            let Some(handler) = handlers.get(index).and_then(Option::as_ref) else {
                defined.push(None);
                continue;
            };
            if !runnable(invocation) {
                defined.push(None);
                continue;
            }
            let result = functions.define(
                &mut module,
                &format!("call{index}"),
                |declare_math, function, builder_context| {
                    compile::compile_handler(
                        &cx,
                        declare_math,
                        invocation,
                        handler,
                        function,
                        builder_context,
                    )
                },
            );
            match result {
                Ok((id, shape)) => {
                    let rows = handler.iter().map(|arg| arg.row).collect();
                    defined.push(Some((id, shape, rows)));
                }
                Err(reason) => {
                    declined.push(format!(
                        "the kernel of par_loop `{}` runs interpreted: {reason}",
                        invocation.name
                    ));
                    defined.push(None);
                }
            }
        }
        let code = Code::new(module)?;
        let consts: Vec<Vec<u64>> = consts
            .iter()
            .map(|values| values.iter().map(|v| to_slot(*v)).collect())
            .collect();
        let calls = defined
            .into_iter()
            .map(|entry| {
                let (id, shape, rows) = entry?;
                let call = code.kernel_call(id, rows, &shape.slots, &consts);
                Some((call, shape.sites))
            })
            .collect();
        Ok(KernelCalls {
            calls,
            _consts: consts,
            _code: code,
            declined,
        })
    }

    /// Whether invocation `id`'s handler is compiled.
    pub(crate) fn compiled(&self, id: InvocationId) -> bool {
        self.calls.get(id.index()).is_some_and(Option::is_some)
    }

    /// Binds invocation `id`'s handler to its rows in `groups`, as its
    /// [`compile::HandlerArg`]s say, for `elements` elements
    /// ([`code::KernelCall::bind`]); nothing for a handler not compiled.
    pub(crate) fn bind(&mut self, id: InvocationId, groups: [&mut Rows; 3], elements: usize) {
        if let Some((call, _)) = self.calls.get_mut(id.index()).and_then(Option::as_mut) {
            call.bind(groups, elements);
        }
    }

    /// Invocation `id`'s handler, when it is compiled.
    fn entry(&mut self, id: InvocationId) -> Result<&mut Call, Fault> {
        self.calls
            .get_mut(id.index())
            .and_then(Option::as_mut)
            .ok_or_else(|| {
                Fault::Host("internal error: a kernel call that was not compiled".into())
            })
    }

    /// The extra slots (its indices) that invocation `id`'s next call
    /// reads.
    pub(crate) fn extra_mut(&mut self, id: InvocationId) -> Result<&mut [u64], Fault> {
        Ok(self.entry(id)?.0.extra_mut())
    }

    /// Runs invocation `id`'s handler on `element`, on the rows of
    /// `groups` it is bound to ([`KernelCalls::bind`]) and its extra slots.
    pub(crate) fn call(
        &mut self,
        id: InvocationId,
        groups: [&mut Rows; 3],
        element: usize,
    ) -> Result<(), Fault> {
        let (call, sites) = self.entry(id)?;
        call.call(groups, element).map_err(|stop| {
            if stop.site == 0 {
                Fault::Host("internal error: a handler's row out of range".into())
            } else {
                fault_at(sites, &stop)
            }
        })
    }
}
