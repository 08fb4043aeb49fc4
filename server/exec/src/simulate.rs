//! Running the code generator's graph model under POETS' execution rules
//! (poets-v4.md §4): every device has a ready bit per output pin, computed
//! from its state after every handler; a send runs the pin's OnSend and
//! delivers one copy to every edge of the pin; messages are delivered in an
//! order chosen by a seeded random generator, so that any dependence of the
//! strategy or the program on arrival order shows up as a difference from
//! the reference run.
//!
//! The handlers are those of compilation.md §5 and §6, executed from the
//! graph model's plans (the same plans the C++ handlers were printed from);
//! the edges are those of `op2_codegen::topology`, the same the XML writer
//! streams. Nothing of the strategy is derived here.

use std::fmt::{self, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use op2_analysis::Analysis;
use op2_analysis::hir::Body;
use op2_analysis::model::{ArgKind, DatId, GlobalId, InvocationId, Program, SetId};
use op2_analysis::value::Value;
use op2_codegen::model::{DeviceKind, DeviceType, GraphType, PinRole, Terminator};
use op2_codegen::topology::{Counts, DeviceRef, for_each_edge};
use op2_instance::InstanceData;
use op2_syntax::ast::{AccessMode, ScalarType};
use rustc_hash::FxHashMap;

use crate::interp::{Compiled, CompiledExpr, Fault, Frame, Host};
use crate::native::KernelCalls;
use crate::native::flat::{from_slot, to_slot};
use crate::reference::{Engine, RuntimeError, add_into, combine, describe, prepare};
use crate::state::State;

/// A fault planted in the graph, to show that the simulator catches it
/// (for tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Injection {
    /// Drop the edge with this number in enumeration order.
    DropEdge(usize),
    /// Add one to the `{inv}_write_recv_total` of element `index` of `set`
    /// for the invocation at `plan` (graph order).
    WriteTotalPlusOne {
        /// The invocation's position in the graph.
        plan: usize,
        /// The set.
        set: SetId,
        /// The element.
        index: u32,
    },
    /// Subtract one from the same property.
    WriteTotalMinusOne {
        /// The invocation's position in the graph.
        plan: usize,
        /// The set.
        set: SetId,
        /// The element.
        index: u32,
    },
    /// Send the message with this number, counting from 0 only the messages
    /// that carry a floating value, with every floating value in it wrong
    /// by a relative [`PERTURBATION`].
    PerturbMessage(u64),
}

/// How wrong [`Injection::PerturbMessage`] makes a value: relative 1e-6.
pub const PERTURBATION: f64 = 1e-6;

/// How to simulate.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Seed of the delivery order.
    pub seed: u64,
    /// Loop iterations `main` may run.
    pub max_iterations: u64,
    /// A planted fault.
    pub injection: Option<Injection>,
    /// How handlers run kernels: compiled to machine code (the default),
    /// or by the interpreter (the reference); both give bit-identical
    /// results, in the same delivery order.
    pub engine: Engine,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            seed: 0,
            max_iterations: u64::MAX,
            injection: None,
            engine: Engine::Compiled,
        }
    }
}

/// Messages of one invocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Sends on pins with edges.
    pub sent: u64,
    /// Deliveries (one per edge of each send).
    pub delivered: u64,
}

/// The cost model's record of one invocation (one par_loop statement).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InvocationCost {
    /// Times it ran.
    pub runs: u64,
    /// Steps from the controller's begin to its last end, over all runs.
    pub total: u64,
    /// The longest run.
    pub longest: u64,
    /// Levels of aggregators in its tree (0: the controller reaches every
    /// device itself).
    pub depth: usize,
    /// Step at which its first begin was sent.
    pub first_begin: Option<u64>,
    /// Step at which its last begin was sent.
    pub last_begin: u64,
}

impl InvocationCost {
    /// Mean steps per run.
    pub fn mean(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        if self.runs == 0 {
            0.0
        } else {
            self.total as f64 / self.runs as f64
        }
    }
}

/// The makespan of the run under the unit-cost model of `op2 simulate`
/// (docs/simulation.md): a device handles one message per step; a send
/// takes one step per edge of its pin (at least one), and each packet can
/// be handled from the step after it left; running a kernel takes one step
/// plus one per argument; the controller's step between invocations takes
/// one. Each device handles its work in the order the seeded simulation
/// chose, as early as its inputs and its own previous work allow.
#[derive(Clone, Debug, Default)]
pub struct Cost {
    /// The fan limit of the graph (0: flat controller).
    pub fan_limit: u32,
    /// Steps until the last device finished.
    pub makespan: u64,
    /// Per invocation, in graph order (names as in `Statistics::invocations`).
    pub invocations: Vec<InvocationCost>,
    /// An iteration of `main`: the first par_loop that runs more than once,
    /// and the mean steps between two of its begins.
    pub iteration: Option<(String, f64)>,
    /// The device that was busy longest, and its busy steps.
    pub critical: Option<(String, u64)>,
}

/// What a simulation did.
#[derive(Clone, Debug, Default)]
pub struct Statistics {
    /// Per invocation, by name, in program order.
    pub invocations: Vec<(String, Traffic)>,
    /// Over all invocations.
    pub total: Traffic,
    /// Devices in the graph.
    pub devices: usize,
    /// Edges in the graph.
    pub edges: usize,
    /// Handlers run (sends and receives).
    pub steps: u64,
    /// Wall-clock time.
    pub elapsed: Duration,
    /// Kernel evaluations.
    pub evaluations: u64,
    /// The cost model.
    pub cost: Cost,
    /// With the compiled engine: why kernels run interpreted, if some do
    /// (a kernel the compiler declines, or a machine without a code
    /// generator).
    pub interpreted: Vec<String>,
}

impl Statistics {
    /// Deliveries per second of simulation.
    pub fn messages_per_second(&self) -> f64 {
        let seconds = self.elapsed.as_secs_f64();
        if seconds > 0.0 {
            #[allow(clippy::cast_precision_loss)]
            let delivered = self.total.delivered as f64;
            delivered / seconds
        } else {
            0.0
        }
    }
}

impl fmt::Display for Statistics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (name, traffic) in &self.invocations {
            writeln!(
                f,
                "  {name:<24} sent {:>12}  delivered {:>12}",
                traffic.sent, traffic.delivered
            )?;
        }
        writeln!(
            f,
            "  {:<24} sent {:>12}  delivered {:>12}",
            "total", self.total.sent, self.total.delivered
        )?;
        write!(
            f,
            "  {} devices, {} edges, {} steps, {} kernel evaluations, {:.2?}, {:.0} messages/s",
            self.devices,
            self.edges,
            self.steps,
            self.evaluations,
            self.elapsed,
            self.messages_per_second()
        )?;
        write!(f, "\n{}", self.cost_report())
    }
}

impl Statistics {
    /// The cost model's part of the report.
    pub fn cost_report(&self) -> String {
        let cost = &self.cost;
        let mut out = String::new();
        let limit = if cost.fan_limit == 0 {
            "flat controller".to_owned()
        } else {
            format!("fan limit {}", cost.fan_limit)
        };
        let _ = write!(
            out,
            "  cost model ({limit}): makespan {} steps",
            cost.makespan
        );
        if let Some((name, period)) = &cost.iteration {
            let _ = write!(
                out,
                ", {period:.1} steps per iteration of `main` (between begins of `{name}`)"
            );
        }
        if let Some((device, busy)) = &cost.critical {
            #[allow(clippy::cast_precision_loss)]
            let share = if cost.makespan == 0 {
                0.0
            } else {
                100.0 * *busy as f64 / cost.makespan as f64
            };
            let _ = write!(
                out,
                "\n  critical device `{device}`: busy {busy} steps ({share:.0}% of the makespan)"
            );
        }
        for ((name, _), invocation) in self.invocations.iter().zip(&cost.invocations) {
            let _ = write!(
                out,
                "\n  {name:<24} runs {:>8}  steps/run {:>10.1}  longest {:>8}  tree depth {}",
                invocation.runs,
                invocation.mean(),
                invocation.longest,
                invocation.depth
            );
        }
        out
    }
}

/// Why a simulation failed.
#[derive(Clone, Debug)]
pub enum SimulationError {
    /// Nothing ready, nothing in flight, `main` unfinished; or devices left
    /// mid-invocation at the end.
    Deadlock(String),
    /// A handler's invariant broke (a message for the wrong invocation, a
    /// count past its total).
    Assertion(String),
    /// The program itself failed (division by zero, index out of range,
    /// iteration limit).
    Runtime(RuntimeError),
}

impl fmt::Display for SimulationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimulationError::Deadlock(report) => write!(f, "deadlock: {report}"),
            SimulationError::Assertion(report) => write!(f, "handler assertion failed: {report}"),
            SimulationError::Runtime(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for SimulationError {}

/// A small, fast, seedable generator (SplitMix64): the delivery order must
/// be reproducible from the seed alone.
#[derive(Clone, Debug)]
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[allow(clippy::cast_possible_truncation)]
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The part of a set device type an invocation uses, with pin indices.
struct PlanInfo {
    /// Position of the invocation in the graph.
    plan: usize,
    invocation: InvocationId,
    iterates: bool,
    begin_in: usize,
    read_sends: Vec<(DatId, usize)>,
    read_recvs: Vec<(usize, usize)>,
    execute_out: usize,
    write_sends: Vec<(usize, usize)>,
    write_recvs: Vec<(DatId, bool, usize)>,
    end_out: usize,
    /// Argument indices that have a landing pad, in slot order.
    buffers: Vec<usize>,
}

/// What an input pin of a set device type does.
#[derive(Clone, Copy)]
enum Input {
    Begin(usize),
    ReadRecv { plan: usize, buffer: usize },
    WriteRecv { plan: usize, dat: DatId, add: bool },
}

/// What an output pin of a set device type does.
#[derive(Clone, Copy)]
enum Output {
    ReadSend { plan: usize, bit: usize },
    Execute { plan: usize },
    WriteSend { plan: usize, bit: usize },
    End { plan: usize },
}

struct TypeInfo {
    set: SetId,
    plans: Vec<PlanInfo>,
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    /// Globals with a landing pad on this type, in slot order.
    pads: Vec<GlobalId>,
}

#[derive(Clone, Default)]
struct PlanState {
    in_progress: bool,
    read_send_mask: u32,
    read_recv_count: u32,
    write_send_mask: u32,
    write_recv_count: u32,
    buffers: Vec<Vec<Value>>,
    /// Per `INFO` global of the plan: the element that set it, or
    /// `NO_ELEMENT` (the generated `element_G`).
    info_elements: Vec<u32>,
}

#[derive(Clone)]
struct ElementState {
    plans: Vec<PlanState>,
    pads: Vec<Vec<Value>>,
}

/// A message on its way.
#[derive(Clone)]
struct InFlight {
    device: usize,
    pin: usize,
    plan: usize,
    payload: Arc<Vec<Value>>,
    /// The step of the cost model from which it can be handled.
    arrival: u64,
}

/// An aggregator of an invocation's tree (compilation.md §11).
#[derive(Clone)]
struct Aggregator {
    /// Position of the invocation in the graph.
    plan: usize,
    /// Its number in the tree.
    index: u32,
    /// `{inv}_end_total`.
    end_total: u32,
    /// The globals of the begin message, to forward.
    begin: Vec<Value>,
    /// The partial reductions of its children.
    partials: Vec<Value>,
    begin_pending: bool,
    end_count: u32,
}

/// `main` compiled for the controller.
struct ControllerProgram {
    blocks: Vec<(Compiled, TerminatorCode)>,
    /// Per block, where a loop iteration is counted against
    /// `--max-iterations`.
    loops: Vec<LoopMarks>,
}

/// A loop iteration is counted where the reference interpreter counts it:
/// when control enters a loop's body (after a `while` or `for` condition
/// held, and before every run of a `do` body), so both stop at the same
/// point.
#[derive(Clone, Copy, Debug, Default)]
struct LoopMarks {
    /// The head of a `while` or `for` loop (a jump back leads to it): going
    /// on into the body is an iteration.
    head: bool,
    /// The body of a `do` loop (its condition jumps back to it): entering
    /// it is an iteration.
    body: bool,
}

impl ControllerProgram {
    /// Whether going from block `from` to block `to` starts a loop
    /// iteration; `then_block` is the block `from`'s condition leads to
    /// when true, if it has one.
    fn iterates(&self, from: usize, to: usize, then_block: Option<usize>) -> bool {
        let marks = |block: usize| self.loops.get(block).copied().unwrap_or_default();
        (marks(from).head && then_block.is_none_or(|then_block| then_block == to)) || marks(to).body
    }
}

enum TerminatorCode {
    Goto(usize),
    Branch(CompiledExpr, usize, usize),
    ParLoop(usize, usize),
    Exit,
}

struct Controller {
    program: ControllerProgram,
    slots: Vec<Value>,
    pc: usize,
    running: bool,
    begin_pending: usize,
    end_count: u32,
    finished: bool,
    /// Per `INFO` global of the running invocation: the element of the
    /// best partial so far (the generated `element_G`).
    info_elements: Vec<u32>,
}

/// The simulation.
struct Simulator<'a> {
    program: Arc<Program>,
    graph: &'a GraphType,
    state: State,
    counts: Counts,
    types: Vec<TypeInfo>,
    /// Per device: the index of its set type (devices from 1).
    owners: Vec<usize>,
    /// Per set type: the device index of its element 0.
    bases: Vec<usize>,
    elements: Vec<ElementState>,
    /// Per device, per output pin: the range of its edges in `edges`.
    fanout: Vec<Vec<(usize, usize)>>,
    /// Destinations: (device, input pin).
    edges: Vec<(usize, usize)>,
    controller: Controller,
    /// Device index of the first aggregator; aggregators follow the set
    /// devices, invocation by invocation.
    first_aggregator: usize,
    aggregators: Vec<Aggregator>,
    /// The cost model's clock of each device: the step at which it is next
    /// free.
    clocks: Vec<u64>,
    /// Steps each device spent handling messages and sends.
    busy: Vec<u64>,
    /// The cost model's record per invocation.
    costs: Vec<InvocationCost>,
    /// When the controller started the current invocation.
    invocation_start: u64,
    kernels: Vec<Option<crate::reference::PreparedInvocation>>,
    /// The kernels compiled to machine code (the compiled engine).
    calls: Option<KernelCalls>,
    /// Reused staging slots of a compiled kernel call.
    staged: Vec<u64>,
    in_flight: Vec<InFlight>,
    ready: Vec<usize>,
    ready_position: Vec<usize>,
    /// Ready output pins per device, as of its last handler.
    ready_masks: Vec<u64>,
    /// Set sizes as `int`s, for `len`.
    lengths: Vec<i32>,
    /// Reused kernel frame.
    scratch: Vec<Value>,
    /// The globals one kernel run has already added to, reused.
    incremented: Vec<GlobalId>,
    random: Random,
    statistics: Statistics,
    out: &'a mut dyn FnMut(&str),
    /// Loop iterations of `main` left, of `max_iterations`.
    budget: u64,
    max_iterations: u64,
    progress: &'a mut dyn FnMut(&Statistics),
    /// Messages with a floating value sent so far, and the one to perturb.
    floating_sent: u64,
    perturb: Option<u64>,
}

const NOT_READY: usize = usize::MAX;

/// Steps between two calls of the progress callback.
pub const PROGRESS_STEPS: u64 = 1 << 18;

/// Simulates `graph` (built from `analysis`) on `data`, printing through
/// `out`, and returns the final state and statistics.
pub fn simulate(
    analysis: &Analysis,
    graph: &GraphType,
    data: &InstanceData,
    options: Options,
    out: &mut dyn FnMut(&str),
) -> Result<(State, Statistics), SimulationError> {
    simulate_with_progress(analysis, graph, data, options, out, &mut |_| {})
}

/// Like [`simulate`], calling `progress` with the statistics so far every
/// [`PROGRESS_STEPS`] steps (for a progress display).
pub fn simulate_with_progress(
    analysis: &Analysis,
    graph: &GraphType,
    data: &InstanceData,
    options: Options,
    out: &mut dyn FnMut(&str),
    progress: &mut dyn FnMut(&Statistics),
) -> Result<(State, Statistics), SimulationError> {
    let start = Instant::now();
    let mut simulator = Simulator::new(analysis, graph, data, options, out, progress);
    simulator.run()?;
    simulator.statistics.elapsed = start.elapsed();
    simulator.statistics.cost = simulator.cost();
    Ok((simulator.state, simulator.statistics))
}

fn identity(ty: ScalarType, mode: AccessMode) -> Value {
    // The finite extremes the generated handlers use (compilation.md §10).
    match (mode, ty) {
        (AccessMode::Min, ScalarType::Double) => Value::Double(f64::MAX),
        (AccessMode::Max, ScalarType::Double) => Value::Double(f64::MIN),
        (AccessMode::Min, ScalarType::Float) => Value::Float(f32::MAX),
        (AccessMode::Max, ScalarType::Float) => Value::Float(f32::MIN),
        (AccessMode::Min, ScalarType::Int) => Value::Int(i32::MAX),
        (AccessMode::Max, ScalarType::Int) => Value::Int(i32::MIN),
        (AccessMode::Min, ScalarType::Uint) => Value::Uint(u32::MAX),
        (AccessMode::Min, ScalarType::Ll) => Value::Ll(i64::MAX),
        (AccessMode::Max, ScalarType::Ll) => Value::Ll(i64::MIN),
        (AccessMode::Min, ScalarType::Ull) => Value::Ull(u64::MAX),
        (AccessMode::Min, ScalarType::Bool) => Value::Bool(true),
        _ => Value::zero(ty),
    }
}

fn pin_index(device: &DeviceType, role: PinRole, output: bool) -> usize {
    let pins = if output {
        &device.outputs
    } else {
        &device.inputs
    };
    pins.iter()
        .position(|p| p.role == role)
        .unwrap_or(usize::MAX)
}

impl<'a> Simulator<'a> {
    fn new(
        analysis: &Analysis,
        graph: &'a GraphType,
        data: &InstanceData,
        options: Options,
        out: &'a mut dyn FnMut(&str),
        progress: &'a mut dyn FnMut(&Statistics),
    ) -> Simulator<'a> {
        let program = Arc::clone(&analysis.program);
        let state = State::new(&program, data);
        let mut counts = Counts::new(&program, graph, data);
        match options.injection {
            Some(Injection::WriteTotalPlusOne { plan, set, index }) => {
                if let Some(s) = graph.invocations[plan]
                    .involved_sets
                    .iter()
                    .position(|x| *x == set)
                {
                    counts.write_recv_total[plan][s][index as usize] += 1;
                }
            }
            Some(Injection::WriteTotalMinusOne { plan, set, index }) => {
                if let Some(s) = graph.invocations[plan]
                    .involved_sets
                    .iter()
                    .position(|x| *x == set)
                {
                    let total = &mut counts.write_recv_total[plan][s][index as usize];
                    *total = total.saturating_sub(1);
                }
            }
            _ => {}
        }
        let plan_position = |id: InvocationId| {
            graph
                .invocations
                .iter()
                .position(|p| p.id == id)
                .unwrap_or(0)
        };

        // Static information per set device type.
        let mut types = Vec::new();
        let mut set_base = FxHashMap::default();
        let mut device_count = 1;
        for device in &graph.device_types {
            let DeviceKind::Set(set) = device.kind else {
                continue;
            };
            let mut plans = Vec::new();
            let mut inputs: Vec<Input> = vec![Input::Begin(0); device.inputs.len()];
            let mut outputs: Vec<Output> = vec![Output::Execute { plan: 0 }; device.outputs.len()];
            for (index, plan) in device.plans.iter().enumerate() {
                let id = plan.invocation;
                let mut buffers: Vec<usize> = Vec::new();
                for arg in plan.read_recvs.iter().chain(&plan.write_sends) {
                    if !buffers.contains(arg) {
                        buffers.push(*arg);
                    }
                }
                let info = PlanInfo {
                    plan: plan_position(id),
                    invocation: id,
                    iterates: plan.iterates,
                    begin_in: pin_index(device, PinRole::Begin(id), false),
                    read_sends: plan
                        .read_sends
                        .iter()
                        .map(|d| (*d, pin_index(device, PinRole::DatReadSend(id, *d), true)))
                        .collect(),
                    read_recvs: plan
                        .read_recvs
                        .iter()
                        .map(|a| (*a, pin_index(device, PinRole::ArgReadRecv(id, *a), false)))
                        .collect(),
                    execute_out: pin_index(device, PinRole::Execute(id), true),
                    write_sends: plan
                        .write_sends
                        .iter()
                        .map(|a| (*a, pin_index(device, PinRole::ArgWriteSend(id, *a), true)))
                        .collect(),
                    write_recvs: plan
                        .write_recvs
                        .iter()
                        .map(|(d, add)| {
                            (
                                *d,
                                *add,
                                pin_index(
                                    device,
                                    PinRole::DatWriteRecv {
                                        invocation: id,
                                        dat: *d,
                                        add: *add,
                                    },
                                    false,
                                ),
                            )
                        })
                        .collect(),
                    end_out: pin_index(device, PinRole::End(id), true),
                    buffers: buffers.clone(),
                };
                inputs[info.begin_in] = Input::Begin(index);
                for (arg, pin) in &info.read_recvs {
                    let buffer = buffers.iter().position(|b| b == arg).unwrap_or(0);
                    inputs[*pin] = Input::ReadRecv {
                        plan: index,
                        buffer,
                    };
                }
                for (dat, add, pin) in &info.write_recvs {
                    inputs[*pin] = Input::WriteRecv {
                        plan: index,
                        dat: *dat,
                        add: *add,
                    };
                }
                for (bit, (_, pin)) in info.read_sends.iter().enumerate() {
                    outputs[*pin] = Output::ReadSend { plan: index, bit };
                }
                outputs[info.execute_out] = Output::Execute { plan: index };
                for (bit, (_, pin)) in info.write_sends.iter().enumerate() {
                    outputs[*pin] = Output::WriteSend { plan: index, bit };
                }
                outputs[info.end_out] = Output::End { plan: index };
                plans.push(info);
            }
            let pads: Vec<GlobalId> = program
                .globals
                .iter()
                .enumerate()
                .map(|(g, _)| GlobalId(u32::try_from(g).unwrap_or(u32::MAX)))
                .filter(|g| {
                    device.state.iter().any(|m| {
                        m.name == op2_codegen::names::global_state(&program.globals[g.index()].name)
                    })
                })
                .collect();
            set_base.insert(set, (device_count, types.len()));
            device_count += state.set_sizes[set.index()];
            types.push(TypeInfo {
                set,
                plans,
                inputs,
                outputs,
                pads,
            });
        }

        // Per-element state.
        let mut elements = Vec::with_capacity(device_count);
        let mut owners: Vec<usize> = vec![usize::MAX; device_count];
        for (t, info) in types.iter().enumerate() {
            let template = ElementState {
                plans: info
                    .plans
                    .iter()
                    .map(|p| PlanState {
                        buffers: p
                            .buffers
                            .iter()
                            .map(|a| {
                                let arg = program.invocations[p.invocation.index()].args[*a]
                                    .as_ref()
                                    .map(|a| a.ty);
                                let ty = arg.map_or(ScalarType::Double, |t| t.scalar);
                                vec![Value::zero(ty); arg.map_or(1, |t| t.dimension as usize)]
                            })
                            .collect(),
                        ..PlanState::default()
                    })
                    .collect(),
                pads: info
                    .pads
                    .iter()
                    .map(|g| {
                        vec![
                            Value::zero(program.globals[g.index()].ty.scalar);
                            program.globals[g.index()].ty.dimension as usize
                        ]
                    })
                    .collect(),
            };
            let (base, _) = set_base[&info.set];
            for element in 0..state.set_sizes[info.set.index()] {
                owners[base + element] = t;
            }
            elements.extend(std::iter::repeat_n(
                template,
                state.set_sizes[info.set.index()],
            ));
        }

        // The aggregators of each invocation's tree, after the set devices.
        let first_aggregator = device_count;
        let mut tree_bases = Vec::with_capacity(graph.invocations.len());
        let mut aggregators = Vec::new();
        for (plan_index, plan) in graph.invocations.iter().enumerate() {
            tree_bases.push(first_aggregator + aggregators.len());
            let width = |globals: &mut dyn Iterator<Item = GlobalId>| -> usize {
                globals
                    .map(|g| program.globals[g.index()].ty.dimension as usize)
                    .sum()
            };
            let begin_width = width(&mut plan.begin_globals.iter().copied());
            let end_width = width(&mut plan.end_globals.iter().map(|(g, _)| *g))
                + width(&mut plan.infos.iter().map(|i| i.global))
                + plan.infos.len();
            for (index, &end_total) in counts.tree_end_total[plan_index].iter().enumerate() {
                aggregators.push(Aggregator {
                    plan: plan_index,
                    index: u32::try_from(index).unwrap_or(u32::MAX),
                    end_total,
                    begin: vec![Value::Int(0); begin_width],
                    partials: vec![Value::Int(0); end_width],
                    begin_pending: false,
                    end_count: 0,
                });
            }
        }
        let device_count = first_aggregator + aggregators.len();

        // Edges, from the topology the XML writer streams.
        let device_index = |device: DeviceRef| match device {
            DeviceRef::Global => 0,
            DeviceRef::Element { set, index } => set_base
                .get(&set)
                .map_or(usize::MAX, |(base, _)| base + index as usize),
            DeviceRef::Aggregator { invocation, index } => {
                tree_bases[plan_position(invocation)] + index as usize
            }
        };
        let device_type_of = |index: usize| -> &DeviceType {
            if index == 0 {
                &graph.device_types[0]
            } else if index >= first_aggregator {
                let plan = &graph.invocations[aggregators[index - first_aggregator].plan];
                graph
                    .tree_device_type(plan.id)
                    .unwrap_or(&graph.device_types[0])
            } else {
                let set = types[owners[index]].set;
                graph.set_device_type(set).unwrap_or(&graph.device_types[0])
            }
        };
        let mut lists: Vec<Vec<Vec<(usize, usize)>>> = (0..device_count)
            .map(|d| vec![Vec::new(); device_type_of(d).outputs.len()])
            .collect();
        let mut number = 0usize;
        for_each_edge(&program, graph, data, |edge| {
            let dropped = options.injection == Some(Injection::DropEdge(number));
            number += 1;
            if dropped {
                return;
            }
            let source = device_index(edge.source.0);
            let destination = device_index(edge.destination.0);
            let out_pin = pin_index(device_type_of(source), edge.source.1, true);
            let in_pin = pin_index(device_type_of(destination), edge.destination.1, false);
            lists[source][out_pin].push((destination, in_pin));
        });
        let mut edges = Vec::with_capacity(number);
        let fanout = lists
            .into_iter()
            .map(|pins| {
                pins.into_iter()
                    .map(|list| {
                        let start = edges.len();
                        edges.extend(list);
                        (start, edges.len())
                    })
                    .collect()
            })
            .collect();

        let controller = Controller {
            program: compile_controller(&program, graph),
            slots: vec![
                Value::Int(0);
                program
                    .main
                    .as_deref()
                    .map_or(0, |m| crate::interp::Layout::new(&[], m).size)
            ],
            pc: 0,
            running: true,
            info_elements: Vec::new(),
            begin_pending: 0,
            end_count: 0,
            finished: false,
        };
        let statistics = Statistics {
            invocations: graph
                .invocations
                .iter()
                .map(|p| (p.name.clone(), Traffic::default()))
                .collect(),
            devices: device_count,
            edges: edges.len(),
            ..Statistics::default()
        };
        let kernels = prepare(&program);
        let mut statistics = statistics;
        let calls = match options.engine {
            Engine::Interp => None,
            Engine::Compiled => match KernelCalls::new(&program, &state.set_sizes, &state.consts) {
                Ok(calls) => {
                    statistics.interpreted.clone_from(&calls.declined);
                    Some(calls)
                }
                Err(reason) => {
                    statistics.interpreted.push(reason);
                    None
                }
            },
        };
        let bases = types.iter().map(|info| set_base[&info.set].0).collect();
        let mut simulator = Simulator {
            program,
            graph,
            state,
            counts,
            types,
            owners,
            bases,
            elements,
            fanout,
            edges,
            controller,
            first_aggregator,
            aggregators,
            clocks: vec![0; device_count],
            busy: vec![0; device_count],
            costs: vec![InvocationCost::default(); graph.invocations.len()],
            invocation_start: 0,
            kernels,
            calls,
            staged: Vec::new(),
            in_flight: Vec::new(),
            ready: Vec::new(),
            ready_position: vec![NOT_READY; device_count],
            ready_masks: vec![0; device_count],
            lengths: Vec::new(),
            scratch: Vec::new(),
            incremented: Vec::new(),
            random: Random(options.seed),
            statistics,
            out,
            budget: options.max_iterations,
            max_iterations: options.max_iterations,
            progress,
            floating_sent: 0,
            perturb: match options.injection {
                Some(Injection::PerturbMessage(number)) => Some(number),
                _ => None,
            },
        };
        simulator.lengths = simulator.state.lengths();
        simulator.update_ready(0);
        simulator
    }

    fn device_location(&self, device: usize) -> Option<(usize, SetId, u32)> {
        if device == 0 {
            return None;
        }
        let t = *self.owners.get(device)?;
        let index = u32::try_from(device - self.bases[t]).unwrap_or(u32::MAX);
        Some((t, self.types[t].set, index))
    }

    fn device_name(&self, device: usize) -> String {
        if let Some(aggregator) = self.aggregator(device) {
            return op2_codegen::names::tree_device(
                &self.graph.invocations[aggregator.plan].name,
                aggregator.index as usize,
            );
        }
        match self.device_location(device) {
            None => op2_codegen::names::GLOBAL_DEVICE.to_owned(),
            Some((_, set, index)) => {
                op2_codegen::names::set_device(&self.program.sets[set.index()].name, index as usize)
            }
        }
    }

    /// The aggregator at device index `device`, if it is one.
    fn aggregator(&self, device: usize) -> Option<&Aggregator> {
        device
            .checked_sub(self.first_aggregator)
            .and_then(|a| self.aggregators.get(a))
    }

    /// The output pins of `device` that are ready, as a bit mask by pin
    /// index.
    fn ready_pins(&self, device: usize) -> u64 {
        if let Some(a) = self.aggregator(device) {
            // Output 0 forwards the begin, output 1 sends the end
            // (`op2_codegen::build::tree_device`).
            return u64::from(a.begin_pending)
                | (u64::from(a.end_count != 0 && a.end_count == a.end_total) << 1);
        }
        if device == 0 {
            let c = &self.controller;
            if c.finished {
                return 0;
            }
            let mut mask = u64::from(c.running);
            if c.begin_pending > 0 {
                mask |= 1 << c.begin_pending;
            }
            return mask;
        }
        let Some((t, set, index)) = self.device_location(device) else {
            return 0;
        };
        let info = &self.types[t];
        let element = &self.elements[device - 1];
        let mut mask = 0u64;
        for (p, plan) in info.plans.iter().enumerate() {
            let s = &element.plans[p];
            if !s.in_progress {
                continue;
            }
            for (bit, (_, pin)) in plan.read_sends.iter().enumerate() {
                if s.read_send_mask & (1 << bit) != 0 {
                    mask |= 1 << pin;
                }
            }
            if s.read_recv_count == self.counts.read_total(self.graph, plan.plan, set, index) {
                mask |= 1 << plan.execute_out;
            }
            for (bit, (_, pin)) in plan.write_sends.iter().enumerate() {
                if s.write_send_mask & (1 << bit) != 0 {
                    mask |= 1 << pin;
                }
            }
            if s.read_send_mask == 0
                && s.write_send_mask == 0
                && s.write_recv_count == self.counts.write_total(self.graph, plan.plan, set, index)
            {
                mask |= 1 << plan.end_out;
            }
        }
        mask
    }

    fn update_ready(&mut self, device: usize) {
        let mask = self.ready_pins(device);
        self.ready_masks[device] = mask;
        let ready = mask != 0;
        let position = self.ready_position[device];
        match (ready, position == NOT_READY) {
            (true, true) => {
                self.ready_position[device] = self.ready.len();
                self.ready.push(device);
            }
            (false, false) => {
                let last = self.ready.len() - 1;
                self.ready.swap(position, last);
                self.ready_position[self.ready[position]] = position;
                self.ready.pop();
                self.ready_position[device] = NOT_READY;
            }
            _ => {}
        }
    }

    fn run(&mut self) -> Result<(), SimulationError> {
        while !self.controller.finished {
            let choices = self.ready.len() + self.in_flight.len();
            if choices == 0 {
                return Err(SimulationError::Deadlock(self.stuck_report()));
            }
            let choice = self.random.below(choices);
            self.statistics.steps += 1;
            if self.statistics.steps.is_multiple_of(PROGRESS_STEPS) {
                (self.progress)(&self.statistics);
            }
            if choice < self.ready.len() {
                let device = self.ready[choice];
                let mask = self.ready_masks[device];
                // A random ready pin: the k-th set bit.
                let mut k = self.random.below(mask.count_ones() as usize);
                let mut bits = mask;
                while k > 0 {
                    bits &= bits - 1;
                    k -= 1;
                }
                let pin = bits.trailing_zeros() as usize;
                self.send(device, pin)?;
            } else {
                let message = self.in_flight.swap_remove(choice - self.ready.len());
                self.receive(message)?;
            }
        }
        // The program ended: nothing may be left half done.
        let pending: Vec<String> = (1..self.elements.len() + 1)
            .filter(|d| self.elements[d - 1].plans.iter().any(|p| p.in_progress))
            .take(8)
            .map(|d| self.device_report(d))
            .collect();
        let aggregators_pending = self
            .aggregators
            .iter()
            .filter(|a| a.begin_pending || a.end_count != 0)
            .count();
        if !pending.is_empty() || !self.in_flight.is_empty() || aggregators_pending > 0 {
            return Err(SimulationError::Deadlock(format!(
                "`main` ended with {} message(s) in flight, {aggregators_pending} aggregator(s) and these devices still inside an invocation:\n{}",
                self.in_flight.len(),
                pending.join("\n")
            )));
        }
        Ok(())
    }

    /// The cost model's summary of the run.
    fn cost(&self) -> Cost {
        let mut invocations = self.costs.clone();
        for (invocation, tree) in invocations.iter_mut().zip(&self.counts.trees) {
            invocation.depth = tree.depth();
        }
        let iteration = self
            .graph
            .invocations
            .iter()
            .zip(&invocations)
            .filter(|(_, c)| c.runs > 1)
            .min_by_key(|(_, c)| c.first_begin)
            .map(|(plan, c)| {
                #[allow(clippy::cast_precision_loss)]
                let period =
                    (c.last_begin - c.first_begin.unwrap_or(0)) as f64 / (c.runs - 1) as f64;
                (plan.name.clone(), period)
            });
        let critical = self
            .busy
            .iter()
            .enumerate()
            .max_by_key(|(_, busy)| **busy)
            .map(|(device, busy)| (self.device_name(device), *busy));
        Cost {
            fan_limit: self.graph.fan_limit,
            makespan: self.clocks.iter().copied().max().unwrap_or(0),
            invocations,
            iteration,
            critical,
        }
    }

    fn device_report(&self, device: usize) -> String {
        if let Some(a) = self.aggregator(device) {
            return format!(
                "  {}: begin_pending {}, end_count {}/{}",
                self.device_name(device),
                u8::from(a.begin_pending),
                a.end_count,
                a.end_total
            );
        }
        let Some((t, set, index)) = self.device_location(device) else {
            let c = &self.controller;
            return format!(
                "  global: pc {}, running {}, begin_pending {}, end_count {}",
                c.pc, c.running, c.begin_pending, c.end_count
            );
        };
        let info = &self.types[t];
        let mut report = String::new();
        for (p, plan) in info.plans.iter().enumerate() {
            let s = &self.elements[device - 1].plans[p];
            if !s.in_progress {
                continue;
            }
            let name = &self.graph.invocations[plan.plan].name;
            let _ = write!(
                report,
                "  {} in `{name}`: read_recv_count {}/{}, write_recv_count {}/{}, read_send_mask {:#x}, write_send_mask {:#x}",
                self.device_name(device),
                s.read_recv_count,
                self.counts.read_total(self.graph, plan.plan, set, index),
                s.write_recv_count,
                self.counts.write_total(self.graph, plan.plan, set, index),
                s.read_send_mask,
                s.write_send_mask,
            );
        }
        report
    }

    fn stuck_report(&self) -> String {
        let c = &self.controller;
        let waiting = self.graph.invocations.iter().enumerate().find(|(i, _)| {
            // The controller sent the begin of this invocation when its end
            // count is being collected: that is the last ParLoop taken.
            *i + 1 == c.begin_pending
        });
        let mut stuck: Vec<String> = (1..self.elements.len() + 1)
            .filter(|d| self.elements[d - 1].plans.iter().any(|p| p.in_progress))
            .take(12)
            .map(|d| self.device_report(d))
            .collect();
        let total_stuck = (1..self.elements.len() + 1)
            .filter(|d| self.elements[d - 1].plans.iter().any(|p| p.in_progress))
            .count();
        stuck.extend(
            (self.first_aggregator..self.first_aggregator + self.aggregators.len())
                .filter(|&d| {
                    let a = &self.aggregators[d - self.first_aggregator];
                    a.begin_pending || a.end_count != 0
                })
                .take(4)
                .map(|d| self.device_report(d)),
        );
        if total_stuck > stuck.len() {
            stuck.push(format!("  … and {} more", total_stuck - stuck.len()));
        }
        let invocation =
            waiting.map_or_else(|| self.last_invocation_name(), |(_, p)| p.name.clone());
        format!(
            "nothing is ready and nothing is in flight while `main` waits for `{invocation}`\n  global: end_count {} of {}\n{}",
            c.end_count,
            self.last_end_total(),
            if stuck.is_empty() {
                "  no device is inside an invocation: a begin or end message was lost".to_owned()
            } else {
                stuck.join("\n")
            }
        )
    }

    fn last_invocation_name(&self) -> String {
        self.last_plan().map_or_else(
            || "?".to_owned(),
            |p| self.graph.invocations[p].name.clone(),
        )
    }

    fn last_end_total(&self) -> u32 {
        self.last_plan().map_or(0, |p| self.counts.end_total[p])
    }

    /// The invocation the controller last started.
    fn last_plan(&self) -> Option<usize> {
        let pc = self.controller.pc;
        self.controller
            .program
            .blocks
            .iter()
            .find_map(|(_, t)| match t {
                TerminatorCode::ParLoop(plan, next) if *next == pc => Some(*plan),
                _ => None,
            })
    }

    /// The cost model: handling a message takes the device one step, from
    /// the step it arrives or the device is free, whichever is later.
    fn charge_receive(&mut self, device: usize, arrival: u64) {
        let clock = &mut self.clocks[device];
        *clock = (*clock).max(arrival) + 1;
        self.busy[device] += 1;
    }

    /// The cost model: a handler that takes `steps` steps of the device.
    fn charge(&mut self, device: usize, steps: u64) {
        self.clocks[device] += steps;
        self.busy[device] += steps;
    }

    fn deliver(&mut self, device: usize, pin: usize, plan: usize, mut payload: Vec<Value>) {
        let (start, end) = self.fanout[device][pin];
        // One step per edge: the sender emits a packet per destination, and
        // packet i can be handled one step after it left.
        let sent_at = self.clocks[device];
        self.charge(device, ((end - start) as u64).max(1));
        if start == end {
            return;
        }
        if let Some(target) = self.perturb
            && payload.iter().any(|v| v.ty().is_floating())
        {
            if self.floating_sent == target {
                for value in &mut payload {
                    if let Value::Double(x) = value {
                        *x *= 1.0 + PERTURBATION;
                    } else if let Value::Float(x) = value {
                        *x *= 1.0 + PERTURBATION as f32;
                    }
                }
            }
            self.floating_sent += 1;
        }
        let payload = Arc::new(payload);
        self.statistics.total.sent += 1;
        self.statistics.invocations[plan].1.sent += 1;
        let delivered = (end - start) as u64;
        self.statistics.total.delivered += delivered;
        self.statistics.invocations[plan].1.delivered += delivered;
        for (i, &(destination, input)) in self.edges[start..end].iter().enumerate() {
            self.in_flight.push(InFlight {
                device: destination,
                pin: input,
                plan,
                payload: Arc::clone(&payload),
                arrival: sent_at + i as u64 + 1,
            });
        }
    }

    fn send(&mut self, device: usize, pin: usize) -> Result<(), SimulationError> {
        if device == 0 {
            self.controller_send(pin)?;
            self.update_ready(0);
            return Ok(());
        }
        if device >= self.first_aggregator {
            let a = &mut self.aggregators[device - self.first_aggregator];
            let plan = a.plan;
            let payload = if pin == 0 {
                a.begin_pending = false;
                a.begin.clone()
            } else {
                a.end_count = 0;
                a.partials.clone()
            };
            self.deliver(device, pin, plan, payload);
            self.update_ready(device);
            return Ok(());
        }
        let Some((t, _, index)) = self.device_location(device) else {
            return Ok(());
        };
        let (p, role) = match self.types[t].outputs[pin] {
            Output::ReadSend { plan, bit } => (plan, (0, bit)),
            Output::Execute { plan } => (plan, (1, 0)),
            Output::WriteSend { plan, bit } => (plan, (2, bit)),
            Output::End { plan } => (plan, (3, 0)),
        };
        let plan_index = self.types[t].plans[p].plan;
        match role {
            (0, bit) => {
                // Send `dat_D` once; the edges fan it out.
                let dat = self.types[t].plans[p].read_sends[bit].0;
                let dimension = self.program.dats[dat.index()].ty.dimension as usize;
                let row = index as usize * dimension;
                let payload = self.state.dats[dat.index()][row..row + dimension].to_vec();
                self.elements[device - 1].plans[p].read_send_mask &= !(1 << bit);
                self.deliver(device, pin, plan_index, payload);
            }
            (1, _) => self.execute(device, t, p, index)?,
            (2, bit) => {
                let arg = self.types[t].plans[p].write_sends[bit].0;
                let buffer = self.types[t].plans[p]
                    .buffers
                    .iter()
                    .position(|b| *b == arg)
                    .unwrap_or(0);
                let payload = self.elements[device - 1].plans[p].buffers[buffer].clone();
                self.elements[device - 1].plans[p].write_send_mask &= !(1 << bit);
                self.deliver(device, pin, plan_index, payload);
            }
            _ => {
                // End: the partial reductions, or identities where the kernel
                // did not run.
                let plan = &self.graph.invocations[plan_index];
                let iterates = self.types[t].plans[p].iterates;
                let mut payload = Vec::new();
                for (global, mode) in &plan.end_globals {
                    let g = &self.program.globals[global.index()];
                    if iterates {
                        let pad = self.types[t]
                            .pads
                            .iter()
                            .position(|x| x == global)
                            .unwrap_or(0);
                        payload.extend_from_slice(&self.elements[device - 1].pads[pad]);
                    } else {
                        payload.extend(std::iter::repeat_n(
                            identity(g.ty.scalar, *mode),
                            g.ty.dimension as usize,
                        ));
                    }
                }
                for (i, info) in plan.infos.iter().enumerate() {
                    let g = &self.program.globals[info.global.index()];
                    let element = if iterates {
                        let pad = self.types[t]
                            .pads
                            .iter()
                            .position(|x| *x == info.global)
                            .unwrap_or(0);
                        payload.extend_from_slice(&self.elements[device - 1].pads[pad]);
                        self.elements[device - 1].plans[p]
                            .info_elements
                            .get(i)
                            .copied()
                            .unwrap_or(NO_ELEMENT)
                    } else {
                        payload.extend(std::iter::repeat_n(
                            Value::zero(g.ty.scalar),
                            g.ty.dimension as usize,
                        ));
                        NO_ELEMENT
                    };
                    payload.push(Value::Uint(element));
                }
                let state = &mut self.elements[device - 1].plans[p];
                state.write_recv_count = 0;
                state.in_progress = false;
                self.deliver(device, pin, plan_index, payload);
            }
        }
        self.update_ready(device);
        Ok(())
    }

    fn execute(
        &mut self,
        device: usize,
        t: usize,
        p: usize,
        index: u32,
    ) -> Result<(), SimulationError> {
        let plan_index = self.types[t].plans[p].plan;
        if self.types[t].plans[p].iterates {
            let id = self.types[t].plans[p].invocation;
            self.run_kernel(device, t, p, id, index as usize)?;
            let arguments = self.program.invocations[id.index()].args.len() as u64;
            self.charge(device, 1 + arguments);
        } else {
            self.charge(device, 1);
        }
        let write_mask = {
            let bits = self.types[t].plans[p].write_sends.len();
            if bits >= 32 {
                u32::MAX
            } else {
                (1u32 << bits) - 1
            }
        };
        let state = &mut self.elements[device - 1].plans[p];
        state.read_recv_count = 0;
        state.write_recv_count += 1;
        state.write_send_mask = write_mask;
        let _ = plan_index;
        Ok(())
    }

    /// Runs the kernel on one iteration element: INC landing pads are
    /// zeroed first, then the kernel works on the device's own data in
    /// place, as the generated C++ does.
    fn run_kernel(
        &mut self,
        device: usize,
        t: usize,
        p: usize,
        id: InvocationId,
        element: usize,
    ) -> Result<(), SimulationError> {
        let program = Arc::clone(&self.program);
        let invocation = &program.invocations[id.index()];
        let Some(prepared) = self.kernels[id.index()].as_ref() else {
            return Ok(());
        };
        let layout = &prepared.compiled.layout;
        let mut slots = std::mem::take(&mut self.scratch);
        slots.resize(layout.size, Value::Int(0));
        let lengths = &self.lengths;
        for (position, (k, arg)) in invocation.resolved_args().enumerate() {
            let (base, length) = layout.params[position];
            let zero = Value::zero(arg.ty.scalar);
            let target = &mut slots[base..base + length];
            match arg.kind {
                // An INC argument of a direct dat is a zeroed temporary,
                // added to the dat after the kernel.
                ArgKind::DirectDat(_) if arg.mode == AccessMode::Inc => target.fill(zero),
                ArgKind::DirectDat(dat) => {
                    target.copy_from_slice(
                        &self.state.dats[dat.index()][element * length..(element + 1) * length],
                    );
                }
                ArgKind::IndirectDat { .. } => {
                    let buffer = self.types[t].plans[p]
                        .buffers
                        .iter()
                        .position(|b| *b == k)
                        .unwrap_or(0);
                    let values = &mut self.elements[device - 1].plans[p].buffers[buffer];
                    if arg.mode == AccessMode::Inc {
                        values.fill(zero);
                    }
                    target.copy_from_slice(values);
                }
                ArgKind::Global(global) => {
                    let pad = self.types[t]
                        .pads
                        .iter()
                        .position(|g| *g == global)
                        .unwrap_or(0);
                    let values = &mut self.elements[device - 1].pads[pad];
                    if arg.mode == AccessMode::Inc {
                        // Each INC argument its own zeroed copy, however
                        // often the global is passed.
                        values.fill(zero);
                        target.fill(zero);
                    } else {
                        target.copy_from_slice(values);
                    }
                }
                ArgKind::Info { global, .. } => {
                    let pad = self.types[t]
                        .pads
                        .iter()
                        .position(|g| *g == global)
                        .unwrap_or(0);
                    target.copy_from_slice(&self.elements[device - 1].pads[pad]);
                }
                ArgKind::Const(c) => target.copy_from_slice(&self.state.consts[c.index()]),
                ArgKind::Len(set) => target[0] = Value::Int(lengths[set.index()]),
                // The device's own index, or the map's target, as the
                // generated properties `index` and `{inv}_arg{i}_index`.
                ArgKind::Index(_) => {
                    target[0] = crate::reference::index_value(
                        self.state.row_of(&program, arg.kind, element),
                    );
                }
            }
        }
        // The starting value of the MIN or MAX global each `INFO` follows.
        let plan_index = self.types[t].plans[p].plan;
        let starts: Vec<Value> = self.graph.invocations[plan_index]
            .infos
            .iter()
            .map(|info| {
                let pad = self.types[t]
                    .pads
                    .iter()
                    .position(|g| *g == info.of)
                    .unwrap_or(0);
                self.elements[device - 1].pads[pad][0]
            })
            .collect();
        let mut no_globals: [Vec<Value>; 0] = [];
        let compiled = self.calls.as_ref().and_then(|calls| {
            let offsets = calls.offsets(id)?;
            Some((calls, offsets))
        });
        let result = if let Some((calls, offsets)) = compiled
            && let Some(staged) = stage(invocation, layout, offsets, &slots, &mut self.staged)
        {
            // The same staging, the kernel compiled: its parameters in
            // 8-byte slots and back.
            let result = calls.call(id, staged);
            unstage(invocation, layout, offsets, staged, &mut slots);
            result
        } else {
            let mut frame = Frame {
                slots: &mut slots,
                consts: &self.state.consts,
                lengths,
                globals: &mut no_globals,
                host: None,
                budget: crate::interp::MAX_KERNEL_ITERATIONS,
            };
            prepared.compiled.run(&mut frame)
        };
        if let Err(fault) = result {
            let kernel = &program.kernels[invocation.kernel.map_or(0, |k| k.index())];
            let set = invocation
                .set
                .map_or("?", |s| program.sets[s.index()].name.as_str());
            let context = format!(
                "in kernel `{}` (invocation `{}`, element {element} of `{set}`)",
                kernel.name, invocation.name
            );
            return Err(SimulationError::Runtime(describe(
                &program,
                kernel.location.file,
                &fault,
                &context,
            )));
        }
        self.statistics.evaluations += 1;
        // The kernel wrote through its pointers: copy everything back, and
        // add each INC temporary into its dat or global partial, as the
        // generated C++ does (the first INC argument of a global is its
        // partial itself, zeroed: copying equals adding to zero).
        let mut incremented = std::mem::take(&mut self.incremented);
        incremented.clear();
        for (position, (k, arg)) in invocation.resolved_args().enumerate() {
            let (base, length) = layout.params[position];
            let values = &slots[base..base + length];
            match arg.kind {
                ArgKind::DirectDat(dat) if arg.mode == AccessMode::Inc => add_into(
                    &mut self.state.dats[dat.index()][element * length..(element + 1) * length],
                    values,
                ),
                ArgKind::DirectDat(dat) => {
                    if arg.mode != AccessMode::Read {
                        self.state.dats[dat.index()][element * length..(element + 1) * length]
                            .copy_from_slice(values);
                    }
                }
                ArgKind::IndirectDat { .. } => {
                    let buffer = self.types[t].plans[p]
                        .buffers
                        .iter()
                        .position(|b| *b == k)
                        .unwrap_or(0);
                    self.elements[device - 1].plans[p].buffers[buffer].copy_from_slice(values);
                }
                ArgKind::Global(global) => {
                    let pad = self.types[t]
                        .pads
                        .iter()
                        .position(|g| *g == global)
                        .unwrap_or(0);
                    let partial = &mut self.elements[device - 1].pads[pad];
                    if matches!(arg.mode, AccessMode::Min | AccessMode::Max) {
                        // Each MIN or MAX copy combines into the partial,
                        // as the reference combines each into the global.
                        combine(partial, values, arg.mode);
                    } else if arg.mode != AccessMode::Inc {
                        partial.copy_from_slice(values);
                    } else if incremented.contains(&global) {
                        add_into(partial, values);
                    } else {
                        incremented.push(global);
                        partial.copy_from_slice(values);
                    }
                }
                ArgKind::Info { global, .. } => {
                    let pad = self.types[t]
                        .pads
                        .iter()
                        .position(|g| *g == global)
                        .unwrap_or(0);
                    self.elements[device - 1].pads[pad].copy_from_slice(values);
                }
                ArgKind::Const(_) | ArgKind::Len(_) | ArgKind::Index(_) => {}
            }
        }
        // `element_G`: this element, when it improved on the start of `R`.
        let infos = &self.graph.invocations[plan_index].infos;
        let mut elements = Vec::with_capacity(infos.len());
        for (info, start) in infos.iter().zip(starts) {
            let pad = self.types[t]
                .pads
                .iter()
                .position(|g| *g == info.of)
                .unwrap_or(0);
            let value = self.elements[device - 1].pads[pad][0];
            elements.push(if crate::reference::improves(value, start, info.mode) {
                u32::try_from(element).unwrap_or(NO_ELEMENT)
            } else {
                NO_ELEMENT
            });
        }
        self.elements[device - 1].plans[p].info_elements = elements;
        self.incremented = incremented;
        self.scratch = slots;
        Ok(())
    }

    fn assertion(&self, device: usize, message: &str) -> SimulationError {
        SimulationError::Assertion(format!(
            "{}: {message}\n{}",
            self.device_name(device),
            self.device_report(device)
        ))
    }

    fn receive(&mut self, message: InFlight) -> Result<(), SimulationError> {
        let device = message.device;
        self.charge_receive(device, message.arrival);
        if device == 0 {
            self.controller_receive(message)?;
            self.update_ready(0);
            return Ok(());
        }
        if device >= self.first_aggregator {
            self.aggregator_receive(message)?;
            self.update_ready(device);
            return Ok(());
        }
        let Some((t, set, index)) = self.device_location(device) else {
            return Ok(());
        };
        let input = self.types[t].inputs[message.pin];
        let p = match input {
            Input::Begin(p)
            | Input::ReadRecv { plan: p, .. }
            | Input::WriteRecv { plan: p, .. } => p,
        };
        let plan_index = self.types[t].plans[p].plan;
        if message.plan != plan_index {
            return Err(
                self.assertion(device, "a message arrived on the pin of another invocation")
            );
        }
        // Step 1: the first message of the invocation.
        let read_mask = {
            let bits = self.types[t].plans[p].read_sends.len();
            if bits >= 32 {
                u32::MAX
            } else {
                (1u32 << bits) - 1
            }
        };
        {
            let state = &mut self.elements[device - 1].plans[p];
            if !state.in_progress {
                state.in_progress = true;
                state.read_send_mask = read_mask;
            }
        }
        let read_total = self.counts.read_total(self.graph, plan_index, set, index);
        let write_total = self.counts.write_total(self.graph, plan_index, set, index);
        match input {
            Input::Begin(_) => {
                if self.types[t].plans[p].iterates {
                    let plan = &self.graph.invocations[plan_index];
                    let mut offset = 0;
                    for global in &plan.begin_globals {
                        let dimension = self.program.globals[global.index()].ty.dimension as usize;
                        if let Some(pad) = self.types[t].pads.iter().position(|g| g == global) {
                            self.elements[device - 1].pads[pad]
                                .copy_from_slice(&message.payload[offset..offset + dimension]);
                        }
                        offset += dimension;
                    }
                }
                self.elements[device - 1].plans[p].read_recv_count += 1;
            }
            Input::ReadRecv { buffer, .. } => {
                let state = &mut self.elements[device - 1].plans[p];
                state.buffers[buffer].copy_from_slice(&message.payload);
                state.read_recv_count += 1;
            }
            Input::WriteRecv { dat, add, .. } => {
                let dimension = self.program.dats[dat.index()].ty.dimension as usize;
                let row = index as usize * dimension;
                let stored = &mut self.state.dats[dat.index()][row..row + dimension];
                if add {
                    add_into(stored, &message.payload);
                } else {
                    stored.copy_from_slice(&message.payload);
                }
                self.elements[device - 1].plans[p].write_recv_count += 1;
            }
        }
        let state = &self.elements[device - 1].plans[p];
        if state.read_recv_count > read_total || state.write_recv_count > write_total {
            return Err(self.assertion(
                device,
                "more messages arrived than the device's count properties allow",
            ));
        }
        self.update_ready(device);
        Ok(())
    }

    /// An aggregator's inputs: input 0 takes the begin from its parent,
    /// input 1 an end from a child (`op2_codegen::build::tree_device`).
    fn aggregator_receive(&mut self, message: InFlight) -> Result<(), SimulationError> {
        let device = message.device;
        let a = &self.aggregators[device - self.first_aggregator];
        if message.plan != a.plan {
            return Err(
                self.assertion(device, "a message arrived on the pin of another invocation")
            );
        }
        let plan = &self.graph.invocations[a.plan];
        let a = &mut self.aggregators[device - self.first_aggregator];
        if message.pin == 0 {
            a.begin.clone_from(&message.payload);
            let mut offset = 0;
            for (global, mode) in &plan.end_globals {
                let g = &self.program.globals[global.index()];
                let dimension = g.ty.dimension as usize;
                a.partials[offset..offset + dimension].fill(identity(g.ty.scalar, *mode));
                offset += dimension;
            }
            for info in &plan.infos {
                offset += self.program.globals[info.global.index()].ty.dimension as usize;
                a.partials[offset] = Value::Uint(NO_ELEMENT);
                offset += 1;
            }
            a.begin_pending = true;
            return Ok(());
        }
        // Before the MIN or MAX partial it follows takes this child's.
        for slot in info_slots(&self.program, plan) {
            info_combine(&mut a.partials, &message.payload, &slot);
        }
        let mut offset = 0;
        for (global, mode) in &plan.end_globals {
            let dimension = self.program.globals[global.index()].ty.dimension as usize;
            let partial = &message.payload[offset..offset + dimension];
            let target = &mut a.partials[offset..offset + dimension];
            match mode {
                AccessMode::Inc => add_into(target, partial),
                mode => combine(target, partial, *mode),
            }
            offset += dimension;
        }
        a.end_count += 1;
        if a.end_count > a.end_total {
            return Err(self.assertion(
                device,
                "more end messages arrived than the aggregator has children",
            ));
        }
        Ok(())
    }

    fn controller_send(&mut self, pin: usize) -> Result<(), SimulationError> {
        if pin == 0 {
            self.charge(0, 1);
            return self.step();
        }
        // Begin of the invocation at graph position pin - 1.
        let plan_index = pin - 1;
        self.invocation_start = self.clocks[0];
        let cost = &mut self.costs[plan_index];
        cost.first_begin.get_or_insert(self.invocation_start);
        cost.last_begin = self.invocation_start;
        let plan = &self.graph.invocations[plan_index];
        let mut payload = Vec::new();
        for global in &plan.begin_globals {
            payload.extend_from_slice(&self.state.globals[global.index()]);
        }
        self.controller.begin_pending = 0;
        self.controller.end_count = 0;
        self.controller.info_elements = vec![NO_ELEMENT; plan.infos.len()];
        self.deliver(0, pin, plan_index, payload);
        if self.counts.end_total[plan_index] == 0 {
            self.controller.running = true;
            self.invocation_done(plan_index);
        }
        Ok(())
    }

    fn controller_receive(&mut self, message: InFlight) -> Result<(), SimulationError> {
        let plan_index = message.pin;
        if plan_index != message.plan {
            return Err(
                self.assertion(0, "an end message arrived on the pin of another invocation")
            );
        }
        let plan = &self.graph.invocations[plan_index];
        // Before the MIN or MAX global it follows takes this partial.
        for (i, (info, slot)) in plan
            .infos
            .iter()
            .zip(info_slots(&self.program, plan))
            .enumerate()
        {
            let InfoSlot {
                r, at, dimension, ..
            } = slot;
            let current = self.state.globals[info.of.index()][0];
            let incoming = message.payload[r];
            let element = message.payload[at + dimension];
            let held = Value::Uint(self.controller.info_elements[i]);
            if takes(incoming, current, element, held, info.mode) {
                self.controller.info_elements[i] = match element {
                    Value::Uint(e) => e,
                    _ => NO_ELEMENT,
                };
                self.state.globals[info.global.index()]
                    .copy_from_slice(&message.payload[at..at + dimension]);
            }
        }
        let mut offset = 0;
        for (global, mode) in &plan.end_globals {
            let dimension = self.program.globals[global.index()].ty.dimension as usize;
            let partial = &message.payload[offset..offset + dimension];
            let target = &mut self.state.globals[global.index()];
            match mode {
                AccessMode::Inc => add_into(target, partial),
                mode => combine(target, partial, *mode),
            }
            offset += dimension;
        }
        self.controller.end_count += 1;
        if self.controller.end_count > self.counts.end_total[plan_index] {
            return Err(self.assertion(
                0,
                "more end messages arrived than the invocation has devices",
            ));
        }
        if self.controller.end_count == self.counts.end_total[plan_index] {
            self.controller.end_count = 0;
            self.controller.running = true;
            self.invocation_done(plan_index);
        }
        Ok(())
    }

    /// The cost model: the invocation at `plan_index` ended now.
    fn invocation_done(&mut self, plan_index: usize) {
        let span = self.clocks[0] - self.invocation_start;
        let cost = &mut self.costs[plan_index];
        cost.runs += 1;
        cost.total += span;
        cost.longest = cost.longest.max(span);
    }

    /// The step pin: run `main`'s blocks until a par_loop or the end.
    fn step(&mut self) -> Result<(), SimulationError> {
        let program = Arc::clone(&self.program);
        let lengths = self.state.lengths();
        let main_file = program.main_location.map(|l| l.file).unwrap_or_default();
        let stopped = || {
            SimulationError::Runtime(describe(
                &program,
                main_file,
                &Fault::IterationLimit(self.max_iterations),
                "",
            ))
        };
        loop {
            let pc = self.controller.pc;
            let Some((block, terminator)) = self.controller.program.blocks.get(pc) else {
                self.controller.finished = true;
                self.controller.running = false;
                return Ok(());
            };
            let mut printer = Printer {
                out: &mut *self.out,
            };
            let result = {
                let mut frame = Frame {
                    slots: &mut self.controller.slots,
                    consts: &self.state.consts,
                    lengths: &lengths,
                    globals: &mut self.state.globals,
                    host: Some(&mut printer),
                    budget: u64::MAX,
                };
                block.run(&mut frame).and_then(|()| match terminator {
                    TerminatorCode::Branch(condition, then_block, else_block) => {
                        Ok(Some(if condition.eval(&mut frame)?.is_true() {
                            *then_block
                        } else {
                            *else_block
                        }))
                    }
                    _ => Ok(None),
                })
            };
            let next = result.map_err(|fault| {
                SimulationError::Runtime(describe(&program, main_file, &fault, "in `main`"))
            })?;
            let (target, then_block) = match terminator {
                TerminatorCode::Goto(next) => (Some(*next), None),
                TerminatorCode::Branch(_, then_block, _) => {
                    (Some(next.unwrap_or(0)), Some(*then_block))
                }
                TerminatorCode::ParLoop(..) | TerminatorCode::Exit => (None, None),
            };
            if let Some(target) = target {
                if self.controller.program.iterates(pc, target, then_block) {
                    if self.budget == 0 {
                        return Err(stopped());
                    }
                    self.budget -= 1;
                }
                self.controller.pc = target;
                continue;
            }
            match terminator {
                TerminatorCode::Goto(_) | TerminatorCode::Branch(..) => {}
                TerminatorCode::ParLoop(plan, next) => {
                    self.controller.pc = *next;
                    self.controller.running = false;
                    self.controller.begin_pending = plan + 1;
                    return Ok(());
                }
                TerminatorCode::Exit => {
                    self.controller.running = false;
                    self.controller.finished = true;
                    return Ok(());
                }
            }
        }
    }
}

/// The parameters of a kernel call staged in the interpreter's frame
/// `slots` (`layout`), as 8-byte slots for the compiled call (`offsets`),
/// or `None` when a value does not have its argument's type (the
/// interpreter then runs the call, as `op2 run`'s compiled engine refuses
/// such a global).
fn stage<'s>(
    invocation: &op2_analysis::model::Invocation,
    layout: &crate::interp::Layout,
    offsets: &[usize],
    slots: &[Value],
    staged: &'s mut Vec<u64>,
) -> Option<&'s mut [u64]> {
    staged.clear();
    staged.resize(offsets.last().copied().unwrap_or(0), 0);
    for (position, (_, arg)) in invocation.resolved_args().enumerate() {
        if matches!(arg.kind, ArgKind::Const(_) | ArgKind::Len(_)) {
            continue;
        }
        let (base, length) = layout.params[position];
        let target = &mut staged[offsets[position]..offsets[position] + length];
        for (slot, value) in target.iter_mut().zip(&slots[base..base + length]) {
            if value.ty() != arg.ty.scalar {
                return None;
            }
            *slot = to_slot(*value);
        }
    }
    Some(staged.as_mut_slice())
}

/// The parameters a compiled kernel call left in `staged`, back into the
/// interpreter's frame `slots`.
fn unstage(
    invocation: &op2_analysis::model::Invocation,
    layout: &crate::interp::Layout,
    offsets: &[usize],
    staged: &[u64],
    slots: &mut [Value],
) {
    for (position, (_, arg)) in invocation.resolved_args().enumerate() {
        if matches!(arg.kind, ArgKind::Const(_) | ArgKind::Len(_)) {
            continue;
        }
        let (base, length) = layout.params[position];
        let source = &staged[offsets[position]..offsets[position] + length];
        for (value, slot) in slots[base..base + length].iter_mut().zip(source) {
            *value = from_slot(*slot, arg.ty.scalar);
        }
    }
}

/// Finds `main`'s loops from the jumps back of its blocks: in a depth-first
/// walk from the entry (iterative: `main` may have any number of blocks), a
/// jump to a block still on the walk's path closes a loop. A `goto` back
/// leads to a `while` or `for` head (from the end of the body, a `continue`
/// or the step), a branch back to the body of a `do` loop (from its
/// condition); nothing else jumps back in structured code.
fn loop_marks(blocks: &[op2_codegen::model::Block]) -> Vec<LoopMarks> {
    let successors = |block: usize| -> [Option<usize>; 2] {
        match blocks.get(block).map(|b| &b.terminator) {
            Some(Terminator::Goto(next) | Terminator::ParLoop { next, .. }) => [Some(*next), None],
            Some(Terminator::Branch {
                then_block,
                else_block,
                ..
            }) => [Some(*then_block), Some(*else_block)],
            Some(Terminator::Exit) | None => [None, None],
        }
    };
    let mut marks = vec![LoopMarks::default(); blocks.len()];
    if blocks.is_empty() {
        return marks;
    }
    let mut visited = vec![false; blocks.len()];
    let mut on_path = vec![false; blocks.len()];
    // The path: each block with the index of the successor to follow next.
    let mut path = vec![(0usize, 0usize)];
    visited[0] = true;
    on_path[0] = true;
    while let Some((block, next)) = path.last_mut() {
        let from = *block;
        let Some(to) = successors(from).get(*next).copied() else {
            on_path[from] = false;
            path.pop();
            continue;
        };
        *next += 1;
        let Some(to) = to.filter(|&to| to < blocks.len()) else {
            continue;
        };
        if on_path[to] {
            match blocks[from].terminator {
                Terminator::Branch { then_block, .. } if then_block == to => {
                    marks[to].body = true;
                }
                _ => marks[to].head = true,
            }
        } else if !visited[to] {
            visited[to] = true;
            on_path[to] = true;
            path.push((to, 0));
        }
    }
    marks
}

/// Passes `print` output to the simulation's writer.
struct Printer<'o> {
    out: &'o mut dyn FnMut(&str),
}

impl Host for Printer<'_> {
    fn print(&mut self, text: &str) {
        (self.out)(text);
    }

    fn par_loop(
        &mut self,
        _invocation: InvocationId,
        _globals: &mut [Vec<Value>],
    ) -> Result<(), Fault> {
        // Blocks never contain par_loops: they end blocks.
        Ok(())
    }
}

/// Compiles the controller's blocks. Each block is compiled as a body over
/// `main`'s locals; a branch condition is compiled as an assignment of its
/// value to a scratch slot after the locals.
fn compile_controller(program: &Program, graph: &GraphType) -> ControllerProgram {
    let Some(main) = program.main.as_deref() else {
        return ControllerProgram {
            blocks: Vec::new(),
            loops: Vec::new(),
        };
    };
    let plan_position = |id: InvocationId| {
        graph
            .invocations
            .iter()
            .position(|p| p.id == id)
            .unwrap_or(0)
    };
    let blocks = graph
        .controller
        .blocks
        .iter()
        .map(|block| {
            let body = Body {
                locals: main.locals.clone(),
                statements: block.statements.clone(),
            };
            let compiled = Compiled::new(&body, &[]);
            let terminator = match &block.terminator {
                Terminator::Goto(next) => TerminatorCode::Goto(*next),
                Terminator::Branch {
                    condition,
                    then_block,
                    else_block,
                } => TerminatorCode::Branch(
                    CompiledExpr::new(main, condition),
                    *then_block,
                    *else_block,
                ),
                Terminator::ParLoop { invocation, next } => {
                    TerminatorCode::ParLoop(plan_position(*invocation), *next)
                }
                Terminator::Exit => TerminatorCode::Exit,
            };
            (compiled, terminator)
        })
        .collect();
    let loops = loop_marks(&graph.controller.blocks);
    ControllerProgram { blocks, loops }
}

/// `element_G` when no element set an `INFO` global
/// (`op2_codegen::names::NO_ELEMENT`).
const NO_ELEMENT: u32 = op2_codegen::names::NO_ELEMENT;

/// Where an `INFO` global's partial lies in an `{inv}_end` payload (and in
/// an aggregator's partials, laid out alike): `R` at `r`, the value at `at`
/// (`dimension` components), then the element.
struct InfoSlot {
    r: usize,
    at: usize,
    dimension: usize,
    mode: AccessMode,
}

fn info_slots(program: &Program, plan: &op2_codegen::model::InvocationPlan) -> Vec<InfoSlot> {
    let mut offset = 0;
    let mut globals = Vec::with_capacity(plan.end_globals.len());
    for (global, _) in &plan.end_globals {
        globals.push((*global, offset));
        offset += program.globals[global.index()].ty.dimension as usize;
    }
    let mut slots = Vec::with_capacity(plan.infos.len());
    for info in &plan.infos {
        let dimension = program.globals[info.global.index()].ty.dimension as usize;
        let r = globals
            .iter()
            .find(|(g, _)| *g == info.of)
            .map_or(0, |(_, at)| *at);
        slots.push(InfoSlot {
            r,
            at: offset,
            dimension,
            mode: info.mode,
        });
        offset += dimension + 1;
    }
    slots
}

/// Whether an incoming `INFO` partial (`R` = `incoming`, element
/// `element`) replaces the one held (`R` = `current`, element `held`), as
/// the generated code decides: an element beats none; of two, the strictly
/// better `R`, and on a tie the lower element.
fn takes(incoming: Value, current: Value, element: Value, held: Value, mode: AccessMode) -> bool {
    let (Value::Uint(element), Value::Uint(held)) = (element, held) else {
        return false;
    };
    element != NO_ELEMENT
        && (held == NO_ELEMENT
            || crate::reference::improves(incoming, current, mode)
            || (incoming == current && element < held))
}

/// An aggregator's combination of a child's `INFO` partial into its own.
fn info_combine(partials: &mut [Value], payload: &[Value], slot: &InfoSlot) {
    let InfoSlot {
        r,
        at,
        dimension,
        mode,
    } = *slot;
    if takes(
        payload[r],
        partials[r],
        payload[at + dimension],
        partials[at + dimension],
        mode,
    ) {
        partials[at..=at + dimension].copy_from_slice(&payload[at..=at + dimension]);
    }
}
