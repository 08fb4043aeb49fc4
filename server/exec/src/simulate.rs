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
use op2_syntax::TextRange;
use op2_syntax::ast::{AccessMode, ScalarType};
use rustc_hash::FxHashMap;

use crate::interp::{Compiled, CompiledExpr, Fault, Frame};
use crate::native::compile::{HandlerArg, RowBack, RowSource, RowStart};
use crate::native::flat::{from_slot, to_slot};
use crate::native::{KernelCalls, Rows};
use crate::printer::{Printer, Printing};
use order::{Bits, DeviceSort, Wheel};
use store::{Column, Payloads, add_slots, column_values, combine_slots, copy_slots, rows};

mod fetch;
mod order;
mod store;
use crate::reference::{
    Engine, RuntimeError, add_into, combine, describe, improves, inc_identity, prepare,
};
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
    /// Give every fetch's aggregator a buffer of this many items instead of
    /// a window's (compilation.md, "A `fetch` on POETS"), so that it can
    /// overflow.
    FetchBufferSlots(u32),
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
    /// Values delivered: the components of each delivery's payload (a
    /// fetch's item carries its number and its values).
    pub values: u64,
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
    /// Epochs of the seeded order (docs/compilation.md, "The delivery
    /// order").
    pub epochs: u64,
    /// Wall-clock time (so far, in the progress callback).
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
    /// Deliveries per second of simulation (`elapsed` includes building
    /// the graph's state and compiling the kernels).
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
            "  {} devices, {} edges, {} steps in {} epochs, {} kernel evaluations, {:.2?}, {:.0} deliveries/s",
            self.devices,
            self.edges,
            self.steps,
            self.epochs,
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
    /// The graph is past a limit of the simulator: an invocation sends
    /// more than [`MAX_SENDS`] messages from one element (refused before
    /// anything runs, naming the invocation, the device type and the pin),
    /// or more payload slots are in flight at once than a `u32` numbers.
    Limit(String),
}

impl fmt::Display for SimulationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimulationError::Deadlock(report) => write!(f, "deadlock: {report}"),
            SimulationError::Assertion(report) => write!(f, "handler assertion failed: {report}"),
            SimulationError::Runtime(error) => write!(f, "{error}"),
            SimulationError::Limit(report) => write!(f, "{report}"),
        }
    }
}

impl std::error::Error for SimulationError {}

/// The part of a set device type an invocation uses, with pin indices.
struct PlanInfo {
    /// Position of the invocation in the graph.
    plan: usize,
    /// Where its element 0's progress is in `Simulator::progress`.
    progress: usize,
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
    /// Position of the type's set among the invocation's involved sets,
    /// where its count properties are (`Counts`).
    involved: Option<usize>,
    /// Per argument (by index): its landing pad (in `buffers`) or, for a
    /// global or an `INFO` global, its pad (in `TypeInfo::pads`); 0
    /// otherwise.
    arg_store: Vec<usize>,
    /// Per begin global of the invocation: its pad, if the type has one.
    begin_pads: Vec<Option<usize>>,
    /// Per end global of the invocation: its pad.
    end_pads: Vec<usize>,
    /// Per `INFO` global of the invocation: the pads of `G` and of the MIN
    /// or MAX global `R` it follows.
    info_pads: Vec<(usize, usize)>,
    /// Per resolved argument: where its components start in a kernel
    /// call's staging slots; after them, the number of slots.
    offsets: Vec<usize>,
    /// The kernel call's staging and store-back steps (the interpreter's).
    stage: Vec<Stage>,
    store: Vec<Store>,
    /// Per resolved argument: its row and how the compiled handler stages
    /// and stores it (`KernelCalls`); the rows' column groups are the
    /// dats, the invocation's landing pads and the type's pads, its extra
    /// slots the `indices`.
    handler: Vec<HandlerArg>,
    /// The index arguments, in order: the extra slots of a compiled call.
    indices: Vec<ArgKind>,
    /// Per read send (by bit), per write send: its output pin's bit.
    read_send_pins: Vec<PinBit>,
    write_send_pins: Vec<PinBit>,
    /// The bits of the execute and end pins, and of all the invocation's
    /// output pins (per word of the ready mask they are in).
    execute_pin: PinBit,
    end_pin: PinBit,
    pins: Vec<(usize, u64)>,
    /// The word of the ready mask all the invocation's pins are in, when
    /// they are in one (always when the type has at most 64 pins), and
    /// their bits there.
    word: Option<(usize, u64)>,
    /// The bits of the read sends' and write sends' pins in their words.
    read_send_bits: Vec<u64>,
    write_send_bits: Vec<u64>,
    /// A bit per read send and per write send (all set past 31).
    read_mask: u32,
    write_mask: u32,
    /// For a fetch, its items per element (`FetchPlan::parts`): the plan
    /// has a request input and an item output, and its elements' progress
    /// holds the generated `{inv}_sent` in `read_recv_count`, `{inv}_last`
    /// in `write_recv_count` and the element's first item in `read_total`
    /// (compilation.md, "A `fetch` on POETS"); `in_progress` stays false.
    fetch_parts: Option<u32>,
}

/// One step of staging a kernel call's arguments into their slots
/// (`at..at + length` of the staging buffer), worked out once per
/// invocation and set device type.
#[derive(Clone, Copy)]
enum Stage {
    /// Slots set to `slot`: an INC argument of a direct dat is a temporary
    /// that starts at INC's identity (`identity`), added to the dat after
    /// the kernel; a const's or a length's slots are zeros.
    Fill { at: usize, length: usize, slot: u64 },
    /// The element's row of a dat.
    Dat {
        dat: usize,
        at: usize,
        length: usize,
    },
    /// The element's landing pad, set first to `start` (INC's identity)
    /// for an INC argument.
    Buffer {
        buffer: usize,
        at: usize,
        length: usize,
        start: Option<u64>,
    },
    /// A global's pad (an `INFO` global's too); for an INC argument, the
    /// pad and the slots set to `start` (INC's identity): each INC argument
    /// its own fresh copy, however often the global is passed.
    Pad {
        pad: usize,
        at: usize,
        length: usize,
        start: Option<u64>,
    },
    /// The device's own index, or the map's target, as the generated
    /// properties `index` and `{inv}_arg{i}_index`.
    Index { kind: ArgKind, at: usize },
}

/// One step of storing a kernel call's slots back, as the generated C++
/// does after the kernel wrote through its pointers.
#[derive(Clone, Copy)]
enum Store {
    /// Into the element's row of a dat, added (an INC temporary) or copied
    /// (a written one).
    Dat {
        dat: usize,
        at: usize,
        length: usize,
        add: bool,
    },
    /// Into the element's landing pad.
    Buffer {
        buffer: usize,
        at: usize,
        length: usize,
    },
    /// Into a global's pad, as `PadStore` says.
    Pad {
        pad: usize,
        at: usize,
        length: usize,
        how: PadStore,
    },
}

/// How a kernel call's slots go back into a global's pad.
#[derive(Clone, Copy)]
enum PadStore {
    /// Copied: the first INC argument of a global is its partial itself,
    /// started at INC's identity (copying equals adding to it); a READ
    /// global; an `INFO` global.
    Copy,
    /// Added: an INC argument of a global passed INC before.
    Add,
    /// Combined: each MIN or MAX copy combines into the partial, as the
    /// reference combines each into the global.
    Combine(AccessMode),
}

/// The staging and store-back steps of `invocation`'s kernel call on a set
/// device type, from its arguments' landing pads and pads (`arg_store`)
/// and their slots (`offsets`), and the same as the compiled handler's
/// rows (`PlanInfo::handler`).
fn staging(
    invocation: &op2_analysis::model::Invocation,
    arg_store: &[usize],
    offsets: &[usize],
) -> (Vec<Stage>, Vec<Store>, Vec<HandlerArg>) {
    let mut stage = Vec::new();
    let mut store = Vec::new();
    let mut handler = Vec::new();
    let mut incremented = Vec::new();
    let mut indices = 0;
    for (position, (k, arg)) in invocation.resolved_args().enumerate() {
        let at = offsets[position];
        let length = arg.ty.dimension as usize;
        let inc = arg.mode == AccessMode::Inc;
        let inc_start = inc.then(|| to_slot(identity(arg.ty.scalar, AccessMode::Inc)));
        let column = |group: u8, column: usize| RowSource::Column {
            group,
            column: u32::try_from(column).unwrap_or(u32::MAX),
            width: arg.ty.dimension,
        };
        let row = |row, start, back| HandlerArg { row, start, back };
        match arg.kind {
            ArgKind::DirectDat(dat) => {
                let dat = dat.index();
                stage.push(if inc {
                    Stage::Fill {
                        at,
                        length,
                        slot: inc_start.unwrap_or(0),
                    }
                } else {
                    Stage::Dat { dat, at, length }
                });
                if arg.mode != AccessMode::Read {
                    store.push(Store::Dat {
                        dat,
                        at,
                        length,
                        add: inc,
                    });
                }
                handler.push(match arg.mode {
                    AccessMode::Inc => row(column(0, dat), RowStart::Zero, RowBack::Add),
                    AccessMode::Read => row(column(0, dat), RowStart::Load, RowBack::Keep),
                    _ => row(column(0, dat), RowStart::Load, RowBack::Copy),
                });
            }
            ArgKind::IndirectDat { .. } => {
                let buffer = arg_store[k];
                stage.push(Stage::Buffer {
                    buffer,
                    at,
                    length,
                    start: inc_start,
                });
                store.push(Store::Buffer { buffer, at, length });
                let start = if inc {
                    RowStart::ZeroRow
                } else {
                    RowStart::Load
                };
                handler.push(row(column(1, buffer), start, RowBack::Copy));
            }
            ArgKind::Global(_) | ArgKind::Info { .. } => {
                let pad = arg_store[k];
                let global = match arg.kind {
                    ArgKind::Global(global) => Some(global),
                    _ => None,
                };
                stage.push(Stage::Pad {
                    pad,
                    at,
                    length,
                    start: inc_start.filter(|_| global.is_some()),
                });
                let how = match (global, arg.mode) {
                    (Some(_), mode @ (AccessMode::Min | AccessMode::Max)) => {
                        PadStore::Combine(mode)
                    }
                    (Some(global), AccessMode::Inc) if incremented.contains(&global) => {
                        PadStore::Add
                    }
                    (Some(global), AccessMode::Inc) => {
                        incremented.push(global);
                        PadStore::Copy
                    }
                    _ => PadStore::Copy,
                };
                store.push(Store::Pad {
                    pad,
                    at,
                    length,
                    how,
                });
                let start = if inc && global.is_some() {
                    RowStart::ZeroRow
                } else {
                    RowStart::Load
                };
                let back = match how {
                    PadStore::Copy => RowBack::Copy,
                    PadStore::Add => RowBack::Add,
                    PadStore::Combine(mode) => RowBack::Combine(mode),
                };
                handler.push(row(column(2, pad), start, back));
            }
            ArgKind::Index(_) => {
                stage.push(Stage::Index { kind: arg.kind, at });
                let extra = RowSource::Extra(indices);
                indices += 1;
                handler.push(row(extra, RowStart::Load, RowBack::Keep));
            }
            // Compiled in, or put in the interpreter's frame; their slots
            // zeroed, as every slot is before a call.
            ArgKind::Const(_) | ArgKind::Len(_) => {
                stage.push(Stage::Fill {
                    at,
                    length,
                    slot: 0,
                });
                handler.push(row(RowSource::None, RowStart::Load, RowBack::Keep));
            }
        }
    }
    (stage, store, handler)
}

/// Where output pin `pin` is in a device's ready mask: a bit of one of
/// its words (pin `64w + b` is bit `b` of word `w`).
#[derive(Clone, Copy, Debug, Default)]
struct PinBit {
    word: usize,
    bit: u64,
}

impl PinBit {
    fn of(pin: usize) -> PinBit {
        PinBit {
            word: pin / 64,
            bit: 1 << (pin % 64),
        }
    }
}

/// The words of a ready mask wide enough for `pins` output pins (at
/// least one).
fn mask_words(pins: usize) -> usize {
    pins.div_ceil(64).max(1)
}

/// The set bits of `pins`, gathered per word.
fn pin_words(pins: impl IntoIterator<Item = PinBit>) -> Vec<(usize, u64)> {
    let mut words: Vec<(usize, u64)> = Vec::new();
    for pin in pins {
        match words.iter_mut().find(|(w, _)| *w == pin.word) {
            Some((_, bits)) => *bits |= pin.bit,
            None => words.push((pin.word, pin.bit)),
        }
    }
    words.sort_unstable();
    words
}

/// A device's clock in the cost model.
#[derive(Clone, Copy, Debug, Default)]
struct Clock {
    /// The step at which the device is next free.
    at: u64,
    /// Steps it spent handling messages and sends.
    busy: u64,
}

/// The index of the `k`-th set bit (from 0) of `mask`, bit `b` of word `w`
/// being `64w + b`; 0 when there are not that many.
#[inline]
fn kth_set_bit(mask: &[u64], mut k: u32) -> usize {
    for (w, &word) in mask.iter().enumerate() {
        let here = word.count_ones();
        if k >= here {
            k -= here;
            continue;
        }
        return w * 64 + kth_bit_of_word(word, k);
    }
    debug_assert!(false, "fewer set bits in the ready mask than the pick");
    0
}

/// The index of the `k`-th set bit (from 0) of `word`, which has more
/// than `k` set bits.
#[inline]
fn kth_bit_of_word(word: u64, mut k: u32) -> usize {
    let mut bits = word;
    while k > 0 {
        bits &= bits - 1;
        k -= 1;
    }
    debug_assert!(bits != 0, "fewer set bits in the ready mask than the pick");
    (bits.trailing_zeros() % 64) as usize
}

/// The edges of a send's output pin and the step the send leaves at.
#[derive(Clone, Copy)]
struct Fan {
    start: usize,
    end: usize,
    sent_at: u64,
}

impl Fan {
    fn deliveries(self) -> u32 {
        u32::try_from(self.end - self.start).unwrap_or(u32::MAX)
    }
}

/// A payload's id in the pool, or the error of a full pool: a limit of the
/// simulator (ids are `u32`), not a broken invariant of the graph.
fn stored(id: Result<u32, store::Full>) -> Result<u32, SimulationError> {
    id.map_err(|_| {
        SimulationError::Limit(
            "more than 4294967295 slots of message payloads in flight at once: past what the simulator can number (simulate a smaller instance)".to_owned(),
        )
    })
}

/// The most read sends, and the most write sends, one invocation may have
/// on one set device type: each element keeps a bit per send
/// (`Progress::read_send_mask`, `write_send_mask`). POETS allows 32 output
/// pins per device type in all (E802), so a graph for POETS never comes
/// near it; the library refuses a graph past it rather than never sending.
pub const MAX_SENDS: usize = 32;

/// A bit per send (at most [`MAX_SENDS`]).
fn send_mask(sends: usize) -> u32 {
    debug_assert!(sends <= MAX_SENDS, "{sends} sends");
    if sends >= 32 {
        u32::MAX
    } else {
        (1u32 << sends) - 1
    }
}

/// The error of an invocation with more than [`MAX_SENDS`] read or write
/// sends on a set device type, naming the invocation and where it is, the
/// device type, its first output pin past the limit and what to do.
fn too_many_sends(
    program: &Program,
    device: &DeviceType,
    set: &str,
    info: &PlanInfo,
) -> SimulationError {
    let invocation = &program.invocations[info.invocation.index()];
    let at =
        crate::reference::position(program, invocation.location.file, invocation.location.range);
    let (sends, kind, pin) = if info.read_sends.len() > MAX_SENDS {
        (info.read_sends.len(), "read", info.read_sends[MAX_SENDS].1)
    } else {
        (
            info.write_sends.len(),
            "write",
            info.write_sends[MAX_SENDS].1,
        )
    };
    let pin = device.outputs.get(pin).map_or("?", |p| p.name.as_str());
    SimulationError::Limit(format!(
        "{at}: `{}` would send {sends} {kind} messages from one element of `{set}`, more than the {MAX_SENDS} the simulator keeps per invocation: device type `{}` has no room for pin `{pin}` (split the par_loop into loops of at most {MAX_SENDS} indirect arguments each)",
        invocation.name, device.id
    ))
}

impl PlanInfo {
    /// The ready output pins of an element in state `s` of this
    /// invocation, as bits of the one word of the ready mask its pins are
    /// in (`PlanInfo::word`): [`PlanInfo::ready`] when that word is all.
    #[inline]
    fn ready_in_word(&self, s: &Progress) -> u64 {
        if !s.in_progress {
            return 0;
        }
        let pins = |mask: u32, pins: &[u64]| -> u64 {
            let mut ready = 0;
            let mut bits = mask;
            while bits != 0 {
                let pin = pins.get(bits.trailing_zeros() as usize);
                debug_assert!(pin.is_some(), "a send bit without a pin");
                if let Some(pin) = pin {
                    ready |= pin;
                }
                bits &= bits - 1;
            }
            ready
        };
        let mut mask = pins(s.read_send_mask, &self.read_send_bits)
            | pins(s.write_send_mask, &self.write_send_bits);
        if s.read_recv_count == s.read_total {
            mask |= self.execute_pin.bit;
        }
        if s.read_send_mask == 0 && s.write_send_mask == 0 && s.write_recv_count == s.write_total {
            mask |= self.end_pin.bit;
        }
        mask
    }

    /// After a message counted in state `s` (in progress before it): its
    /// count decides one pin, the execute pin for a read (or begin)
    /// message, the end pin for a write, and no other pin changed; `mask`
    /// is the word of the device's ready mask this invocation's pins are
    /// in (`PlanInfo::word`).
    #[inline(always)]
    fn recount(&self, s: &Progress, counted: Counted, mask: &mut u64) {
        let (bit, ready) = match counted {
            Counted::Read => (self.execute_pin.bit, s.read_recv_count == s.read_total),
            Counted::Write => (
                self.end_pin.bit,
                s.read_send_mask == 0
                    && s.write_send_mask == 0
                    && s.write_recv_count == s.write_total,
            ),
        };
        *mask = (*mask & !bit) | if ready { bit } else { 0 };
    }

    /// After a read or write send on the pin of bit `sent` (of the word of
    /// the ready mask this invocation's pins are in, `mask`), state `s`
    /// having cleared its send bit: that pin is no longer ready (each send
    /// has a pin of its own), and the end pin is once nothing is left to
    /// send and every write has arrived; no other pin changed.
    #[inline(always)]
    fn sent(&self, s: &Progress, sent: u64, mask: &mut u64) {
        *mask &= !sent;
        if s.read_send_mask == 0 && s.write_send_mask == 0 && s.write_recv_count == s.write_total {
            *mask |= self.end_pin.bit;
        }
    }

    /// Recomputes this invocation's ready pins of `device` (in state `s`)
    /// in `masks` (`words` words per device); the device's other pins stay.
    #[inline(always)]
    fn refresh(&self, s: &Progress, masks: &mut [u64], words: usize, device: usize) {
        if let Some((word, bits)) = self.word {
            let mask = &mut masks[device * words + word];
            *mask = (*mask & !bits) | self.ready_in_word(s);
        } else {
            let mask = &mut masks[device * words..(device + 1) * words];
            for &(word, bits) in &self.pins {
                let word = mask.get_mut(word);
                debug_assert!(word.is_some(), "a pin past the ready mask");
                if let Some(word) = word {
                    *word &= !bits;
                }
            }
            self.ready(s, mask);
        }
    }

    /// Sets in `mask` (a device's ready mask) the ready output pins of an
    /// element in state `s` of this invocation (the generated
    /// `ReadyToSend`, this invocation's part).
    #[inline]
    fn ready(&self, s: &Progress, mask: &mut [u64]) {
        if !s.in_progress {
            return;
        }
        let mut set = |pin: PinBit| {
            let word = mask.get_mut(pin.word);
            debug_assert!(word.is_some(), "a pin past the ready mask");
            if let Some(word) = word {
                *word |= pin.bit;
            }
        };
        for (sends, pins) in [
            (s.read_send_mask, &self.read_send_pins),
            (s.write_send_mask, &self.write_send_pins),
        ] {
            let mut bits = sends;
            while bits != 0 {
                let pin = pins.get(bits.trailing_zeros() as usize);
                debug_assert!(pin.is_some(), "a send bit without a pin");
                if let Some(pin) = pin {
                    set(*pin);
                }
                bits &= bits - 1;
            }
        }
        if s.read_recv_count == s.read_total {
            set(self.execute_pin);
        }
        if s.read_send_mask == 0 && s.write_send_mask == 0 && s.write_recv_count == s.write_total {
            set(self.end_pin);
        }
    }
}

/// Whether an element of a fetch (`parts` items each) has an item to send:
/// one it has not sent, in the window it was asked for.
#[inline(always)]
fn fetch_ready(s: &Progress, parts: u32) -> bool {
    s.read_recv_count < parts && s.read_total + s.read_recv_count < s.write_recv_count
}

impl PlanInfo {
    /// A fetch's part of [`PlanInfo::ready`]: its item pin.
    fn ready_fetch(&self, s: &Progress, mask: &mut [u64]) {
        if let Some(parts) = self.fetch_parts
            && fetch_ready(s, parts)
            && let Some(word) = mask.get_mut(self.end_pin.word)
        {
            *word |= self.end_pin.bit;
        }
    }

    /// A fetch's part of [`PlanInfo::refresh`]: its item pin of `device`
    /// in `masks` (`words` words per device), the other pins kept.
    fn refresh_fetch(&self, s: &Progress, masks: &mut [u64], words: usize, device: usize) {
        let ready = self.fetch_parts.is_some_and(|parts| fetch_ready(s, parts));
        if let Some(word) = masks.get_mut(device * words + self.end_pin.word) {
            *word = (*word & !self.end_pin.bit) | if ready { self.end_pin.bit } else { 0 };
        }
    }
}

/// Which count of its invocation's progress a received message adds to.
#[derive(Clone, Copy)]
enum Counted {
    Read,
    Write,
}

/// What an input pin of a set device type does.
#[derive(Clone, Copy)]
enum Input {
    Begin(usize),
    ReadRecv { plan: usize, buffer: usize },
    WriteRecv { plan: usize, dat: DatId, add: bool },
}

/// A set device type's input pin as a delivery reaches it: what it does
/// and where, looked up once per delivery (an edge to a set device holds
/// its receiver's index in place of the pin).
#[derive(Clone, Copy)]
struct Receiver {
    /// The set device type.
    t: u32,
    /// The invocation's plan (`Simulator::plans`), and its position in the
    /// graph.
    p: u32,
    plan: u32,
    /// The device index of the type's element 0.
    base: u32,
    input: Input,
}

/// What an output pin of a set device type does: for which plan, and
/// which of its sends. (The plan is outside the role so that a send
/// dispatches on the role once.)
#[derive(Clone, Copy)]
struct Output {
    plan: usize,
    role: Role,
}

/// Which of its invocation's sends an output pin makes.
#[derive(Clone, Copy)]
enum Role {
    /// Its read send `bit`.
    ReadSend(usize),
    Execute,
    /// Its write send `bit`.
    WriteSend(usize),
    End,
}

struct TypeInfo {
    set: SetId,
    /// Its invocations' plans (`Simulator::plans`, `plan_columns`) but
    /// its fetches'.
    plans: std::ops::Range<usize>,
    /// Its fetches' plans, right after: kept apart so that the ready pins
    /// of the others are found without asking whether each is a fetch.
    fetch_plans: std::ops::Range<usize>,
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    /// Globals with a landing pad on this type, in slot order.
    pads: Vec<GlobalId>,
}

/// Where one element is in one invocation: its handshake state and its
/// count properties, kept together since every handler reads them all to
/// decide the ready pins.
#[derive(Clone, Copy, Debug, Default)]
struct Progress {
    read_send_mask: u32,
    read_recv_count: u32,
    write_send_mask: u32,
    write_recv_count: u32,
    /// `{inv}_read_recv_total`.
    read_total: u32,
    /// `{inv}_write_recv_total`.
    write_total: u32,
    in_progress: bool,
}

/// The state of one invocation on every element of a set device type,
/// as columns (structure of arrays); its progress is in
/// `Simulator::progress`.
struct PlanColumns {
    /// The landing pads, in `PlanInfo::buffers` order.
    buffers: Rows,
    /// Per element, per `INFO` global of the invocation: the element that
    /// set it, or `NO_ELEMENT` (the generated `element_G`).
    info_elements: Column,
}

/// The globals' state of every element of a set device type.
struct TypeColumns {
    /// The globals' pads, in `TypeInfo::pads` order.
    pads: Rows,
}

/// A message on its way: 24 bytes, its payload shared in [`Payloads`].
#[derive(Clone, Copy)]
struct InFlight {
    /// The step of the cost model from which it can be handled.
    arrival: u64,
    device: u32,
    /// The input pin; for a set device, its receiver
    /// (`Simulator::receivers`).
    pin: u32,
    plan: u32,
    payload: u32,
}

/// The types of a payload's components, for [`Injection::PerturbMessage`].
#[derive(Clone, Copy)]
enum PayloadTypes {
    /// All of one type.
    Uniform(ScalarType),
    /// The begin globals of the invocation at this graph position.
    Begin(usize),
    /// Its end globals.
    End(usize),
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
    /// The ends received; for a fetch's aggregator, the items in its
    /// buffer.
    end_count: u32,
    /// For a fetch's aggregator: its items and its buffer.
    fetch: Option<FetchBuffer>,
}

impl Aggregator {
    /// Whether its end pin is ready: all its children's ends arrived, or a
    /// fetch's aggregator holds an item.
    #[inline(always)]
    fn end_ready(&self) -> bool {
        self.end_count != 0 && (self.fetch.is_some() || self.end_count == self.end_total)
    }
}

/// A fetch's aggregator (compilation.md, "A `fetch` on POETS"): the items
/// of its leaves, `[lo, hi)` (the generated `item_lo`, `item_hi`), and the
/// buffer of `window` items of `width` slots each (the item's number and
/// its values), `end_count` of them held.
#[derive(Clone)]
struct FetchBuffer {
    lo: u32,
    hi: u32,
    window: u32,
    width: usize,
    slots: Vec<u64>,
}

/// What the simulator keeps of a fetch (`op2_codegen::model::FetchPlan`),
/// per invocation in graph order.
#[derive(Clone, Copy)]
struct FetchRun {
    plan: op2_codegen::model::FetchPlan,
    /// Its items: the set's size times the items per element.
    items: u32,
    /// Items asked for at once.
    window: u32,
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
    /// The end of `main`, with `exit`'s status and where it is written.
    Exit(Option<(CompiledExpr, TextRange)>),
}

struct Controller {
    program: ControllerProgram,
    slots: Vec<Value>,
    pc: usize,
    running: bool,
    begin_pending: usize,
    end_count: u32,
    finished: bool,
    /// The length of the line `main`'s output is on, for the line limit
    /// (`crate::printf::continue_line`).
    unfinished_line: usize,
    /// When a kernel prints: the line `main` has not finished, held back
    /// as the generated controller holds it in its line buffer, so that a
    /// device's lines never land in the middle of it (compilation.md,
    /// "Printing from a kernel").
    held: Option<String>,
    /// Per `INFO` global of the running invocation: the element of the
    /// best partial so far (the generated `element_G`).
    info_elements: Vec<u32>,
    /// The window a fetch asked for, `[first, last)` (the generated
    /// `fetch_first`, `fetch_last`); `last` is 0 between fetches.
    window: (u32, u32),
}

/// The simulation.
struct Simulator<'a> {
    program: Arc<Program>,
    graph: &'a GraphType,
    state: State,
    counts: Counts,
    types: Vec<TypeInfo>,
    /// Per device: the index of its set type (devices from 1 to
    /// `first_aggregator`).
    owners: Vec<u32>,
    /// Per set type: the device index of its element 0.
    bases: Vec<usize>,
    /// Per set type: its elements' pads.
    columns: Vec<TypeColumns>,
    /// The invocations' plans on the set device types, type after type.
    plans: Vec<PlanInfo>,
    /// Per plan: its elements' state.
    plan_columns: Vec<PlanColumns>,
    /// Per plan, per element (from `PlanInfo::progress` on): where the
    /// element is in the invocation.
    states: Vec<Progress>,
    /// The dats' values.
    dats: Rows,
    /// Per device: the index in `pin_ends` of its output pin 0; then the
    /// number of output pins of all devices.
    pin_base: Vec<u32>,
    /// 0, then per output pin of every device, in device order: the end
    /// of its edges in `edges` (each starts where the one before ends, at
    /// the entry before its own).
    pin_ends: Vec<u32>,
    /// Destinations: (device, input pin or, for a set device, its
    /// receiver), grouped by source device and output pin, in the
    /// topology's order.
    edges: Vec<(u32, u32)>,
    /// The set device types' input pins, type after type.
    receivers: Vec<Receiver>,
    payloads: Payloads,
    /// Reused slots of a payload being sent.
    outgoing: Vec<u64>,
    /// Per invocation, in graph order: its payloads' layout.
    layouts: Vec<PayloadLayout>,
    /// Reused values of a payload being combined.
    values: Vec<Value>,
    controller: Controller,
    /// Device index of the first aggregator; aggregators follow the set
    /// devices, invocation by invocation.
    first_aggregator: usize,
    aggregators: Vec<Aggregator>,
    /// The cost model's clock of each device.
    clocks: Vec<Clock>,
    /// The cost model's record per invocation.
    costs: Vec<InvocationCost>,
    /// When the controller started the current invocation.
    invocation_start: u64,
    kernels: Vec<Option<crate::reference::PreparedInvocation>>,
    /// The kernels compiled to machine code (the compiled engine).
    calls: Option<KernelCalls>,
    /// Reused staging slots of a compiled kernel call.
    staged: Vec<u64>,
    /// The messages in flight, each waiting for the epoch it is due in.
    wheel: Wheel<InFlight>,
    /// Sorts an epoch's due messages by receiver.
    due_sort: DeviceSort<InFlight>,
    /// The current epoch.
    epoch: u64,
    /// The ready devices, each waiting for the epoch it sends in
    /// (`listed` per device).
    ready: Wheel<u32>,
    /// Sorts an epoch's due senders.
    ready_sort: DeviceSort<u32>,
    listed: Vec<bool>,
    /// Ready output pins per device, as of its last handler: `words` words
    /// per device (pin `64w + b` is bit `b` of word `w`), wide enough for
    /// the device type with the most output pins.
    ready_masks: Vec<u64>,
    words: usize,
    /// A reused mask of `words` words.
    mask_scratch: Vec<u64>,
    /// Set sizes as `int`s, for `len`.
    lengths: Vec<i32>,
    /// Reused kernel frame.
    scratch: Vec<Value>,
    /// The starts of the MIN or MAX globals `INFO` globals follow in one
    /// kernel run, reused.
    info_starts: Vec<u64>,
    /// The seeded random bits of the order.
    bits: Bits,
    statistics: Statistics,
    out: &'a mut dyn FnMut(&str),
    /// Loop iterations of `main` left, of `max_iterations`.
    budget: u64,
    max_iterations: u64,
    progress: &'a mut dyn FnMut(&Statistics),
    /// When the simulation started, for the progress callback's rate.
    started: Instant,
    /// Messages with a floating value sent so far, and the one to perturb.
    floating_sent: u64,
    perturb: Option<u64>,
    /// Per invocation, in graph order: the fetch it is, if it is one.
    fetches: Vec<Option<FetchRun>>,
    /// A fetch's requests in flight: a request that does not meet its
    /// receiver's items may still be on its way when `main` ends.
    requests_in_flight: usize,
}

/// The bit of the controller's ready mask that stands for its pending
/// begin's pin (`Controller::begin_pending`, one of 1 + the number of
/// invocations); bit 0 is its step pin, pin 0. Every begin pin is past
/// pin 0, so the two are picked in the order of their pins.
const CONTROLLER_BEGIN: usize = 1;

/// The most bytes of state a simulation may hold, as [`check_memory`]
/// estimates them before allocating any (docs/reliability.md, *Limits*):
/// the 1M-cell airfoil holds 1.9 GB.
pub const MAX_STATE_BYTES: u64 = 1 << 34;

/// What each device costs besides the columns [`check_memory`] counts one
/// by one: its owner, clock, ready masks, pin table and flags, and its
/// share of the edges and of the messages and payloads in flight (the
/// 1M-cell airfoil, 4.5 M devices, holds about 430 bytes a device in all,
/// its columns included; a set with no dats about 155).
const BYTES_PER_DEVICE: u64 = 256;

/// A number of bytes for a message: `1.5 GiB`, `512 MiB`.
fn in_binary_units(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    if bytes as f64 >= GIB {
        format!("{:.1} GiB", bytes as f64 / GIB)
    } else {
        format!("{:.0} MiB", bytes as f64 / MIB)
    }
}

/// Refuses, before anything sized by the instance is allocated, a
/// simulation whose state would pass [`MAX_STATE_BYTES`]: per element of
/// each set, a device and a copy of every global its type holds and of
/// every argument it buffers, for each of its par_loops; per aggregator of
/// each reduction tree, its begin and end values. A global of 65,536
/// values on a set of 65,536 elements asks for 32 GiB where `op2 run`
/// holds it once. The largest part is named.
fn check_memory(
    program: &Program,
    graph: &GraphType,
    data: &InstanceData,
    types: &[TypeInfo],
    plans: &[PlanInfo],
) -> Result<(), SimulationError> {
    let mut total = 0u64;
    let mut largest = (0u64, String::new());
    let mut add = |bytes: u64, what: &dyn Fn() -> String| {
        total = total.saturating_add(bytes);
        if bytes > largest.0 {
            largest = (bytes, what());
        }
    };
    for info in types {
        let n = u64::from(data.set_size(info.set));
        let set = &program.sets[info.set.index()].name;
        add(n.saturating_mul(BYTES_PER_DEVICE), &|| {
            format!("the {n} devices of set `{set}`")
        });
        for g in &info.pads {
            let global = &program.globals[g.index()];
            let values = u64::from(global.ty.dimension);
            add(n.saturating_mul(values).saturating_mul(8), &|| {
                format!(
                    "a copy of global `{}` ({values} values) on each of the {n} elements of `{set}`",
                    global.name
                )
            });
        }
        for p in &plans[info.plans.start..info.fetch_plans.end] {
            let invocation = &program.invocations[p.invocation.index()];
            let buffered: u64 = p
                .buffers
                .iter()
                .filter_map(|a| invocation.args.get(*a)?.as_ref())
                .map(|a| u64::from(a.ty.dimension))
                .sum();
            let infos = graph.invocations[p.plan].infos.len() as u64;
            // The landing pads and INFO elements, 8 bytes a value; the
            // handshake state and its two totals.
            let per_element = (buffered + infos) * 8 + size_of::<Progress>() as u64 + 8;
            add(n.saturating_mul(per_element), &|| {
                format!(
                    "the state of par_loop `{}` ({buffered} values buffered) on each of the {n} elements of `{set}`",
                    invocation.name
                )
            });
        }
    }
    let fan = u64::from(graph.fan_limit);
    for plan in &graph.invocations {
        if fan < 2 {
            break;
        }
        let elements: u64 = plan
            .involved_sets
            .iter()
            .map(|s| u64::from(data.set_size(*s)))
            .sum();
        let values = |globals: &mut dyn Iterator<Item = GlobalId>| -> u64 {
            globals
                .map(|g| u64::from(program.globals[g.index()].ty.dimension))
                .sum()
        };
        let width = values(&mut plan.begin_globals.iter().copied())
            + values(&mut plan.end_globals.iter().map(|(g, _)| *g))
            + values(&mut plan.infos.iter().map(|i| i.global))
            + plan.infos.len() as u64;
        // A tree of fan `fan` over `elements` leaves has fewer than
        // elements / (fan - 1) + 1 aggregators; each holds its values
        // as `Value`s, 16 bytes each.
        let aggregators = elements / (fan - 1) + 1;
        add(
            aggregators.saturating_mul(width).saturating_mul(16),
            &|| {
                format!(
                    "the reduction tree of par_loop `{}` ({aggregators} aggregators of {width} values)",
                    plan.name
                )
            },
        );
    }
    if total <= MAX_STATE_BYTES {
        return Ok(());
    }
    Err(SimulationError::Limit(format!(
        "the simulation would hold about {} of state, more than the {} a simulation may hold; the largest part is {}, about {}: simulate a smaller instance",
        in_binary_units(total),
        in_binary_units(MAX_STATE_BYTES),
        largest.1,
        in_binary_units(largest.0)
    )))
}

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

/// Like [`simulate`], calling `progress` with the statistics so far about
/// every [`PROGRESS_STEPS`] steps: after the phase of an epoch in which the
/// count of steps passes a multiple of it (for a progress display).
pub fn simulate_with_progress(
    analysis: &Analysis,
    graph: &GraphType,
    data: &InstanceData,
    options: Options,
    out: &mut dyn FnMut(&str),
    progress: &mut dyn FnMut(&Statistics),
) -> Result<(State, Statistics), SimulationError> {
    // The graph was built with every `fetch` lowered to its invocation
    // (op2_analysis::fetch): the simulator runs that program.
    let program = analysis.lowered().program();
    let start = Instant::now();
    let mut simulator = Simulator::new(program, graph, data, options, out, progress)?;
    let result = simulator.run();
    simulator.flush_main_line();
    result?;
    simulator.statistics.elapsed = start.elapsed();
    simulator.statistics.cost = simulator.cost();
    let mut state = simulator.state;
    state.dats = (0..simulator.program.dats.len())
        .map(|d| column_values(&simulator.dats, d))
        .collect();
    Ok((state, simulator.statistics))
}

/// The identity of a reduction, as the generated handlers start a partial
/// (compilation.md, "Reductions: identities and ties"): `-0.0` for a
/// floating INC (IEEE's additive identity: `x + -0.0` is `x` for every
/// `x`, `-0.0` included, so a sum of `-0.0` terms stays `-0.0` as it does
/// in place in `op2 run`), the infinities for a floating MIN or MAX (a
/// finite extreme would beat a global that is `+inf` or `-inf`), the
/// extremes of an integer type.
fn identity(ty: ScalarType, mode: AccessMode) -> Value {
    match (mode, ty) {
        (AccessMode::Inc, _) => inc_identity(ty),
        (AccessMode::Min, ScalarType::Double) => Value::Double(f64::INFINITY),
        (AccessMode::Max, ScalarType::Double) => Value::Double(f64::NEG_INFINITY),
        (AccessMode::Min, ScalarType::Float) => Value::Float(f32::INFINITY),
        (AccessMode::Max, ScalarType::Float) => Value::Float(f32::NEG_INFINITY),
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

/// The position of `global`'s pad among a set device type's `pads`.
fn pad_of(pads: &[GlobalId], global: GlobalId) -> Option<usize> {
    pads.iter().position(|g| *g == global)
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
        program: &Arc<Program>,
        graph: &'a GraphType,
        data: &InstanceData,
        options: Options,
        out: &'a mut dyn FnMut(&str),
        progress: &'a mut dyn FnMut(&Statistics),
    ) -> Result<Simulator<'a>, SimulationError> {
        let program = Arc::clone(program);
        let mut state = State::new(&program, data);
        let dats = rows(
            program
                .dats
                .iter()
                .zip(std::mem::take(&mut state.dats))
                .map(|(dat, values)| {
                    Column::from_values(dat.ty.scalar, dat.ty.dimension as usize, &values)
                }),
        );
        let plan_position = |id: InvocationId| {
            graph
                .invocations
                .iter()
                .position(|p| p.id == id)
                .unwrap_or(0)
        };

        // Static information per set device type.
        let mut types = Vec::new();
        let mut all_plans: Vec<PlanInfo> = Vec::new();
        let mut set_base = FxHashMap::default();
        let mut device_count = 1;
        for device in &graph.device_types {
            let DeviceKind::Set(set) = device.kind else {
                continue;
            };
            let mut plans = Vec::new();
            let mut inputs: Vec<Input> = vec![Input::Begin(0); device.inputs.len()];
            let mut outputs: Vec<Output> = vec![
                Output {
                    plan: 0,
                    role: Role::Execute
                };
                device.outputs.len()
            ];
            let first = all_plans.len();
            // The fetches' plans last (`TypeInfo::fetch_plans`).
            let is_fetch = |plan: &&op2_codegen::model::DevicePlan| {
                graph.invocations[plan_position(plan.invocation)]
                    .fetch
                    .is_some()
            };
            let ordered: Vec<&op2_codegen::model::DevicePlan> = device
                .plans
                .iter()
                .filter(|p| !is_fetch(p))
                .chain(device.plans.iter().filter(is_fetch))
                .collect();
            let fetches_from = first + ordered.iter().filter(|p| !is_fetch(p)).count();
            for (index, plan) in ordered.into_iter().enumerate() {
                let index = first + index;
                let id = plan.invocation;
                let mut buffers: Vec<usize> = Vec::new();
                for arg in plan.read_recvs.iter().chain(&plan.write_sends) {
                    if !buffers.contains(arg) {
                        buffers.push(*arg);
                    }
                }
                let info = PlanInfo {
                    plan: plan_position(id),
                    progress: 0,
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
                    involved: graph
                        .invocations
                        .iter()
                        .find(|p| p.id == id)
                        .and_then(|p| p.involved_sets.iter().position(|x| *x == set)),
                    arg_store: Vec::new(),
                    begin_pads: Vec::new(),
                    end_pads: Vec::new(),
                    info_pads: Vec::new(),
                    offsets: Vec::new(),
                    handler: Vec::new(),
                    indices: Vec::new(),
                    stage: Vec::new(),
                    store: Vec::new(),
                    read_send_pins: Vec::new(),
                    write_send_pins: Vec::new(),
                    execute_pin: PinBit::default(),
                    end_pin: PinBit::default(),
                    pins: Vec::new(),
                    word: None,
                    read_send_bits: Vec::new(),
                    write_send_bits: Vec::new(),
                    read_mask: 0,
                    write_mask: 0,
                    fetch_parts: graph.invocations[plan_position(id)].fetch.map(|f| f.parts),
                };
                let mut info = info;
                let sends = info.read_sends.len().max(info.write_sends.len());
                if sends > MAX_SENDS {
                    return Err(too_many_sends(
                        &program,
                        device,
                        &program.sets[set.index()].name,
                        &info,
                    ));
                }
                info.read_send_pins = info
                    .read_sends
                    .iter()
                    .map(|(_, pin)| PinBit::of(*pin))
                    .collect();
                info.write_send_pins = info
                    .write_sends
                    .iter()
                    .map(|(_, pin)| PinBit::of(*pin))
                    .collect();
                if info.fetch_parts.is_some() {
                    // A fetch has no execute step: its request and its
                    // items only.
                    info.execute_out = info.end_out;
                }
                info.execute_pin = PinBit::of(info.execute_out);
                info.end_pin = PinBit::of(info.end_out);
                info.pins = pin_words(
                    info.read_send_pins
                        .iter()
                        .chain(&info.write_send_pins)
                        .copied()
                        .chain([info.execute_pin, info.end_pin]),
                );
                info.read_send_bits = info.read_send_pins.iter().map(|p| p.bit).collect();
                info.write_send_bits = info.write_send_pins.iter().map(|p| p.bit).collect();
                info.word = match info.pins[..] {
                    [one] => Some(one),
                    _ => None,
                };
                info.read_mask = send_mask(info.read_sends.len());
                info.write_mask = send_mask(info.write_sends.len());
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
                let output = |role| Output { plan: index, role };
                for (bit, (_, pin)) in info.read_sends.iter().enumerate() {
                    outputs[*pin] = output(Role::ReadSend(bit));
                }
                outputs[info.execute_out] = output(Role::Execute);
                for (bit, (_, pin)) in info.write_sends.iter().enumerate() {
                    outputs[*pin] = output(Role::WriteSend(bit));
                }
                outputs[info.end_out] = output(Role::End);
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
            for info in &mut plans {
                let invocation = &program.invocations[info.invocation.index()];
                info.arg_store = invocation
                    .args
                    .iter()
                    .enumerate()
                    .map(|(k, arg)| match arg.as_ref().map(|a| a.kind) {
                        Some(ArgKind::Global(global) | ArgKind::Info { global, .. }) => {
                            pad_of(&pads, global).unwrap_or(0)
                        }
                        _ => info.buffers.iter().position(|b| *b == k).unwrap_or(0),
                    })
                    .collect();
                let plan = &graph.invocations[info.plan];
                info.begin_pads = plan
                    .begin_globals
                    .iter()
                    .map(|g| pad_of(&pads, *g))
                    .collect();
                info.end_pads = plan
                    .end_globals
                    .iter()
                    .map(|(g, _)| pad_of(&pads, *g).unwrap_or(0))
                    .collect();
                info.info_pads = plan
                    .infos
                    .iter()
                    .map(|i| {
                        (
                            pad_of(&pads, i.global).unwrap_or(0),
                            pad_of(&pads, i.of).unwrap_or(0),
                        )
                    })
                    .collect();
                let mut total = 0;
                for (_, arg) in invocation.resolved_args() {
                    info.offsets.push(total);
                    total += arg.ty.dimension as usize;
                }
                info.offsets.push(total);
                (info.stage, info.store, info.handler) =
                    staging(invocation, &info.arg_store, &info.offsets);
                info.indices = info
                    .stage
                    .iter()
                    .filter_map(|step| match *step {
                        Stage::Index { kind, .. } => Some(kind),
                        _ => None,
                    })
                    .collect();
            }
            set_base.insert(set, (device_count, types.len()));
            device_count += state.set_sizes[set.index()];
            all_plans.extend(plans);
            types.push(TypeInfo {
                set,
                plans: first..fetches_from,
                fetch_plans: fetches_from..all_plans.len(),
                inputs,
                outputs,
                pads,
            });
        }

        // Everything per element below is sized by the instance: checked
        // before any of it (the counts included) is allocated.
        check_memory(&program, graph, data, &types, &all_plans)?;
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

        // Per-element state, a column per field.
        let mut columns = Vec::with_capacity(types.len());
        let mut plan_columns = Vec::with_capacity(all_plans.len());
        let mut states = Vec::new();
        let mut owners: Vec<u32> = vec![u32::MAX; device_count];
        for (t, info) in types.iter().enumerate() {
            let elements = state.set_sizes[info.set.index()];
            for p in &mut all_plans[info.plans.start..info.fetch_plans.end] {
                // The count properties move here from `counts`.
                let totals = |all: &mut Vec<Vec<Vec<u32>>>| {
                    p.involved
                        .map(|s| std::mem::take(&mut all[p.plan][s]))
                        .unwrap_or_default()
                };
                let reads = totals(&mut counts.read_recv_total);
                let writes = totals(&mut counts.write_recv_total);
                p.progress = states.len();
                match p.fetch_parts {
                    // A fetch's element keeps its first item in `read_total`.
                    Some(parts) => states.extend((0..elements).map(|e| Progress {
                        read_total: u32::try_from(e).unwrap_or(u32::MAX).saturating_mul(parts),
                        ..Progress::default()
                    })),
                    None => states.extend((0..elements).map(|e| Progress {
                        read_total: reads.get(e).copied().unwrap_or(0),
                        write_total: writes.get(e).copied().unwrap_or(0),
                        ..Progress::default()
                    })),
                }
                plan_columns.push(PlanColumns {
                    buffers: rows(p.buffers.iter().map(|a| {
                        let ty = program.invocations[p.invocation.index()].args[*a]
                            .as_ref()
                            .map(|a| a.ty);
                        Column::zeros(
                            ty.map_or(ScalarType::Double, |t| t.scalar),
                            ty.map_or(1, |t| t.dimension as usize),
                            elements,
                        )
                    })),
                    info_elements: Column::filled(
                        ScalarType::Uint,
                        graph.invocations[p.plan].infos.len(),
                        elements,
                        to_slot(Value::Uint(NO_ELEMENT)),
                    ),
                });
            }
            let pads = rows(info.pads.iter().map(|g| {
                let ty = program.globals[g.index()].ty;
                Column::zeros(ty.scalar, ty.dimension as usize, elements)
            }));
            columns.push(TypeColumns { pads });
            let (base, _) = set_base[&info.set];
            owners[base..base + elements].fill(u32::try_from(t).unwrap_or(u32::MAX));
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
            // A fetch's aggregators: the items of their leaves and a
            // buffer of a window's items.
            let leaves = plan
                .fetch
                .map(|_| counts.trees[plan_index].aggregator_leaves())
                .unwrap_or_default();
            for (index, &end_total) in counts.tree_end_total[plan_index].iter().enumerate() {
                let fetch = plan.fetch.map(|f| {
                    let (from, to) = leaves.get(index).copied().unwrap_or_default();
                    let item =
                        |leaf: u64| u32::try_from(leaf * u64::from(f.parts)).unwrap_or(u32::MAX);
                    let window = match options.injection {
                        Some(Injection::FetchBufferSlots(slots)) => slots,
                        _ => op2_codegen::model::FetchPlan::window(graph.fan_limit),
                    };
                    let width = 1 + f.components as usize;
                    FetchBuffer {
                        lo: item(from),
                        hi: item(to),
                        window,
                        width,
                        slots: Vec::new(),
                    }
                });
                aggregators.push(Aggregator {
                    plan: plan_index,
                    index: u32::try_from(index).unwrap_or(u32::MAX),
                    end_total,
                    begin: vec![Value::Int(0); if fetch.is_some() { 2 } else { begin_width }],
                    partials: vec![Value::Int(0); end_width],
                    begin_pending: false,
                    end_count: 0,
                    fetch,
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
                let set = types[owners[index] as usize].set;
                graph.set_device_type(set).unwrap_or(&graph.device_types[0])
            }
        };
        // Edges in two passes over the topology (it streams them): count
        // each output pin's edges, then place each edge after the ones
        // before it, so that a pin's edges keep the topology's order.
        // A limit of the simulator, as a full payload pool: the input's
        // error, not a handler's.
        let too_large = || {
            SimulationError::Limit(
                "the graph has more than 4294967295 edges or output pins, more than the simulator can number: simulate a smaller instance"
                    .to_owned(),
            )
        };
        let mut pin_base = Vec::with_capacity(device_count + 1);
        let mut pins = 0u64;
        // The controller's ready mask is two bits (`CONTROLLER_BEGIN`),
        // whatever its number of pins: it does not widen every device's.
        let mut widest = 2;
        for d in 0..device_count {
            pin_base.push(u32::try_from(pins).map_err(|_| too_large())?);
            let outputs = device_type_of(d).outputs.len();
            if d != 0 {
                widest = widest.max(outputs);
            }
            pins += outputs as u64;
        }
        let words = mask_words(widest);
        pin_base.push(u32::try_from(pins).map_err(|_| too_large())?);
        #[allow(clippy::cast_possible_truncation)]
        // Pin `at`'s edge count at `pin_ends[at + 1]`, then its start
        // there, then its end: entry 0 stays 0.
        let mut pin_ends = vec![0u32; pins as usize + 1];
        let mut number = 0usize;
        let mut overflow = false;
        // An edge's output pin slot and destination, or `None` for the
        // dropped edge; `number` counts the edges enumerated.
        // Each set device type's input pins as receivers, the type's
        // from `receiver_base[t]` on.
        let mut receiver_base = Vec::with_capacity(types.len());
        let mut receivers = Vec::new();
        for (t, info) in types.iter().enumerate() {
            receiver_base.push(receivers.len());
            let base = set_base.get(&info.set).map_or(0, |(base, _)| *base);
            for input in &info.inputs {
                let p = match *input {
                    Input::Begin(p)
                    | Input::ReadRecv { plan: p, .. }
                    | Input::WriteRecv { plan: p, .. } => p,
                };
                let number = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                receivers.push(Receiver {
                    t: number(t),
                    p: number(p),
                    plan: all_plans.get(p).map_or(u32::MAX, |plan| number(plan.plan)),
                    base: number(base),
                    input: *input,
                });
            }
        }
        // The pin an edge to `destination` holds: a set device's
        // receiver, or the input pin itself.
        let receiver = |destination: usize, in_pin: usize| -> usize {
            if destination == 0 || destination >= first_aggregator {
                return in_pin;
            }
            owners
                .get(destination)
                .and_then(|t| receiver_base.get(*t as usize))
                .map_or(usize::MAX, |base| base.saturating_add(in_pin))
        };
        let edge_slot = |number: &mut usize, edge: &op2_codegen::topology::Edge| {
            let dropped = options.injection == Some(Injection::DropEdge(*number));
            *number += 1;
            if dropped {
                return None;
            }
            let source = device_index(edge.source.0);
            let destination = device_index(edge.destination.0);
            let out_pin = pin_index(device_type_of(source), edge.source.1, true);
            let in_pin = pin_index(device_type_of(destination), edge.destination.1, false);
            Some((
                pin_base[source] as usize + out_pin,
                (
                    u32::try_from(destination).unwrap_or(u32::MAX),
                    u32::try_from(receiver(destination, in_pin)).unwrap_or(u32::MAX),
                ),
            ))
        };
        for_each_edge(&program, graph, data, |edge| {
            if let Some((slot, _)) = edge_slot(&mut number, &edge) {
                let count = &mut pin_ends[slot + 1];
                match count.checked_add(1) {
                    Some(more) => *count = more,
                    None => overflow = true,
                }
            }
        });
        // Each pin's start, then filled up to its end.
        let mut total = 0u64;
        for end in &mut pin_ends[1..] {
            let count = u64::from(*end);
            *end = u32::try_from(total).unwrap_or(u32::MAX);
            total += count;
        }
        if overflow || total > u64::from(u32::MAX) {
            return Err(too_large());
        }
        #[allow(clippy::cast_possible_truncation)]
        let mut edges = vec![(0u32, 0u32); total as usize];
        let mut number = 0usize;
        for_each_edge(&program, graph, data, |edge| {
            if let Some((slot, destination)) = edge_slot(&mut number, &edge) {
                let at = &mut pin_ends[slot + 1];
                edges[*at as usize] = destination;
                *at += 1;
            }
        });
        // Pin `at`'s edges are `pin_ends[at]..pin_ends[at + 1]`.

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
            begin_pending: 0,
            end_count: 0,
            finished: false,
            unfinished_line: 0,
            held: program
                .invocations
                .iter()
                .filter_map(|i| i.kernel)
                .any(|k| op2_analysis::hir::first_print(&program.kernels[k.index()].body).is_some())
                .then(String::new),
            info_elements: Vec::new(),
            window: (0, 0),
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
            Engine::Compiled => match KernelCalls::new(
                &program,
                &state.set_sizes,
                &state.consts,
                &handlers(&program, &all_plans),
            ) {
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
        // The fetches: the global holds the set's size times the dimension
        // values (E609), so their items fit a `uint32`.
        let fetches = graph
            .invocations
            .iter()
            .map(|p| {
                p.fetch.map(|plan| FetchRun {
                    plan,
                    items: u32::try_from(plan.items(data.set_size(p.set))).unwrap_or(u32::MAX),
                    window: op2_codegen::model::FetchPlan::window(graph.fan_limit),
                })
            })
            .collect();
        let layouts = graph
            .invocations
            .iter()
            .map(|plan| payload_layout(&program, plan))
            .collect();
        let mut simulator = Simulator {
            program,
            graph,
            state,
            counts,
            types,
            owners,
            bases,
            columns,
            plans: all_plans,
            plan_columns,
            states,
            dats,
            pin_base,
            pin_ends,
            edges,
            receivers,
            payloads: Payloads::default(),
            outgoing: Vec::new(),
            layouts,
            values: Vec::new(),
            controller,
            first_aggregator,
            aggregators,
            clocks: vec![Clock::default(); device_count],
            costs: vec![InvocationCost::default(); graph.invocations.len()],
            invocation_start: 0,
            kernels,
            calls,
            staged: Vec::new(),
            wheel: Wheel::new(),
            due_sort: DeviceSort::new(device_count),
            epoch: 0,
            ready: Wheel::new(),
            ready_sort: DeviceSort::new(device_count),
            listed: vec![false; device_count],
            ready_masks: vec![0; device_count * words],
            words,
            mask_scratch: vec![0; words],
            lengths: Vec::new(),
            scratch: Vec::new(),
            info_starts: Vec::new(),
            bits: Bits::new(options.seed),
            statistics,
            out,
            budget: options.max_iterations,
            max_iterations: options.max_iterations,
            progress,
            started: Instant::now(),
            floating_sent: 0,
            perturb: match options.injection {
                Some(Injection::PerturbMessage(number)) => Some(number),
                _ => None,
            },
            fetches,
            requests_in_flight: 0,
        };
        simulator.lengths = simulator.state.lengths();
        if let Some(calls) = simulator.calls.as_mut() {
            for (t, info) in simulator.types.iter().enumerate() {
                let elements = simulator.state.set_sizes[info.set.index()];
                for p in info.plans.clone() {
                    let plan = &simulator.plans[p];
                    if !plan.iterates {
                        continue;
                    }
                    let groups = [
                        &mut simulator.dats,
                        &mut simulator.plan_columns[p].buffers,
                        &mut simulator.columns[t].pads,
                    ];
                    calls.bind(plan.invocation, groups, elements);
                }
            }
        }
        simulator.update_ready(0);
        Ok(simulator)
    }

    #[inline]
    fn device_location(&self, device: usize) -> Option<(usize, SetId, u32)> {
        if device == 0 {
            return None;
        }
        let t = *self.owners.get(device)? as usize;
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

    /// The output pins of `device` that are ready, into `mask` (of
    /// `self.words` words, cleared first) by pin index; the controller's
    /// begin pin as [`CONTROLLER_BEGIN`].
    fn ready_pins(&self, device: usize, mask: &mut [u64]) {
        mask.fill(0);
        let mut set = |pin: usize| {
            let pin = PinBit::of(pin);
            if let Some(word) = mask.get_mut(pin.word) {
                *word |= pin.bit;
            }
        };
        if let Some(a) = self.aggregator(device) {
            // Output 0 forwards the begin, output 1 sends the end
            // (`op2_codegen::build::tree_device`).
            if a.begin_pending {
                set(0);
            }
            if a.end_ready() {
                set(1);
            }
            return;
        }
        if device == 0 {
            let c = &self.controller;
            if c.finished {
                return;
            }
            if c.running {
                set(0);
            }
            if c.begin_pending > 0 {
                set(CONTROLLER_BEGIN);
            }
            return;
        }
        let Some((t, _, index)) = self.device_location(device) else {
            return;
        };
        let e = index as usize;
        for plan in &self.plans[self.types[t].plans.clone()] {
            plan.ready(&self.states[plan.progress + e], mask);
        }
        for plan in &self.plans[self.types[t].fetch_plans.clone()] {
            plan.ready_fetch(&self.states[plan.progress + e], mask);
        }
    }

    /// Whether set device `device` is inside some invocation.
    fn in_progress(&self, device: usize) -> bool {
        self.device_location(device).is_some_and(|(t, _, index)| {
            self.plans[self.types[t].plans.clone()]
                .iter()
                .any(|p| self.states[p.progress + index as usize].in_progress)
        })
    }

    fn update_ready(&mut self, device: usize) {
        if self.words == 1 && (device == 0 || device >= self.first_aggregator) {
            // `ready_pins`'s bits of the controller and an aggregator,
            // without clearing and collecting a mask.
            let mask = if device == 0 {
                let c = &self.controller;
                if c.finished {
                    0
                } else {
                    u64::from(c.running) | (u64::from(c.begin_pending > 0) << CONTROLLER_BEGIN)
                }
            } else {
                self.aggregator(device).map_or(0, |a| {
                    u64::from(a.begin_pending) | (u64::from(a.end_ready()) << 1)
                })
            };
            self.ready_masks[device] = mask;
            self.plan_ready_updated(device);
            return;
        }
        if self.words == 1 {
            let mut mask = [0];
            self.ready_pins(device, &mut mask);
            self.ready_masks[device] = mask[0];
            self.set_ready(device);
            return;
        }
        let mut mask = std::mem::take(&mut self.mask_scratch);
        self.ready_pins(device, &mut mask);
        let words = self.words;
        self.ready_masks[device * words..(device + 1) * words].copy_from_slice(&mask);
        self.mask_scratch = mask;
        self.set_ready(device);
    }

    /// After a handler of set device `device` (type `t`, element `e`) for
    /// its invocation `p`: only that invocation's pins can have changed.
    #[inline]
    fn update_plan_ready(&mut self, device: usize, p: usize, e: usize) {
        let plan = &self.plans[p];
        let progress = &self.states[plan.progress + e];
        plan.refresh(progress, &mut self.ready_masks, self.words, device);
        self.plan_ready_updated(device);
    }

    /// After [`PlanInfo::refresh`] of `device`'s pins: checks them (in
    /// debug builds) and records whether it is ready.
    #[inline(always)]
    fn plan_ready_updated(&mut self, device: usize) {
        #[cfg(debug_assertions)]
        {
            let words = self.words;
            let mut full = vec![0; words];
            self.ready_pins(device, &mut full);
            debug_assert_eq!(
                &self.ready_masks[device * words..(device + 1) * words],
                &full[..],
                "the ready pins of {device}"
            );
        }
        self.set_ready(device);
    }

    /// Whether `device` has a ready pin in `ready_masks`.
    #[inline(always)]
    fn is_ready(&self, device: usize) -> bool {
        let words = self.words;
        if words == 1 {
            self.ready_masks[device] != 0
        } else {
            self.ready_masks[device * words..(device + 1) * words]
                .iter()
                .any(|&w| w != 0)
        }
    }

    /// Lists `device`, whose ready pins are in `ready_masks`, if it is
    /// ready and not listed yet: it sends in this epoch's send phase or
    /// waits d more, d geometric (P(d ≥ j) = 2^-j), as if it deferred
    /// with probability ½ in each. A device leaves the list only in a
    /// send phase (`Simulator::send_phase`).
    #[inline(always)]
    fn set_ready(&mut self, device: usize) {
        if !self.listed[device] && self.is_ready(device) {
            self.listed[device] = true;
            self.ready.expect(1);
            // Fewer devices than `u32::MAX`: their indices are u32.
            let device = u32::try_from(device).unwrap_or(u32::MAX);
            self.ready.put(self.epoch, self.bits.geometric(), device);
        }
    }

    /// Runs epochs until `main` ends: in each, the messages due are
    /// received, device after device and each device's in the order they
    /// were sent, then the ready devices due send, device after device,
    /// each on one of its ready pins chosen uniformly (docs/compilation.md,
    /// "The delivery order").
    fn run(&mut self) -> Result<(), SimulationError> {
        crate::huge::collapse_heap();
        while !self.controller.finished {
            if self.ready.waiting() == 0 && self.wheel.waiting() == 0 {
                return Err(SimulationError::Deadlock(self.stuck_report()));
            }
            self.receive_phase()?;
            self.send_phase()?;
            self.epoch += 1;
        }
        // `epoch` moved past the last epoch run: it counts them.
        self.statistics.epochs = self.epoch;
        // The program ended: nothing may be left half done.
        let pending: Vec<String> = (1..self.first_aggregator)
            .filter(|&d| self.in_progress(d))
            .take(8)
            .map(|d| self.device_report(d))
            .collect();
        let aggregators_pending = self
            .aggregators
            .iter()
            .filter(|a| a.begin_pending || a.end_count != 0)
            .count();
        // A fetch's request that meets no item of its receiver may still be
        // on its way: it would change nothing.
        let in_flight = self.wheel.waiting() - self.requests_in_flight.min(self.wheel.waiting());
        if !pending.is_empty() || in_flight != 0 || aggregators_pending > 0 {
            return Err(SimulationError::Deadlock(format!(
                "`main` ended with {in_flight} message(s) in flight, {aggregators_pending} aggregator(s) and these devices still inside an invocation:\n{}",
                pending.join("\n")
            )));
        }
        Ok(())
    }

    /// Counts `steps` handler runs (sends or receives) of a phase, calling
    /// the progress callback when the count passes a multiple of
    /// [`PROGRESS_STEPS`].
    #[inline(always)]
    fn count_steps(&mut self, steps: u64) {
        let before = self.statistics.steps;
        self.statistics.steps += steps;
        if self.statistics.steps / PROGRESS_STEPS != before / PROGRESS_STEPS {
            self.statistics.elapsed = self.started.elapsed();
            (self.progress)(&self.statistics);
        }
    }

    /// Receives the messages due in this epoch in the order of their
    /// receivers' indices, so that the device state is walked in memory
    /// order, and each device's in the order they were sent (the sort is
    /// stable); a device that becomes ready is listed for the send phase.
    /// Devices share no state, so the order among different receivers
    /// within the phase is not observable.
    fn receive_phase(&mut self) -> Result<(), SimulationError> {
        let mut due = self.wheel.take(self.epoch);
        self.due_sort.sort(&mut due, |m| m.device);
        let mut result = Ok(());
        let mut steps = 0;
        for &message in &due {
            steps += 1;
            result = self.receive(message);
            if result.is_err() {
                break;
            }
        }
        self.count_steps(steps);
        due.clear();
        self.wheel.give_back(self.epoch, due);
        result
    }

    /// The ready devices due in this epoch send, in the order of their
    /// indices, each on one of its ready pins chosen uniformly; one still
    /// ready waits again, from the next epoch on, as
    /// [`Simulator::set_ready`] says. Sends only change their sender's
    /// pins, and their messages are due in a later epoch, so the order
    /// within the phase is not observable.
    fn send_phase(&mut self) -> Result<(), SimulationError> {
        let mut due = self.ready.take(self.epoch);
        self.ready_sort.sort(&mut due, |&d| d);
        let mut result = Ok(());
        let mut steps = 0;
        for (i, &device) in due.iter().enumerate() {
            self.prefetch_edges(&due, i);
            let device = device as usize;
            if !self.is_ready(device) {
                self.listed[device] = false;
                continue;
            }
            let words = self.words;
            // A random ready pin: the k-th set bit.
            let mut pin = if words == 1 {
                let mask = self.ready_masks[device];
                let count = mask.count_ones();
                if count == 1 {
                    (mask.trailing_zeros() % 64) as usize
                } else {
                    let k = self.bits.random().below(count as usize) as u32;
                    kth_bit_of_word(mask, k)
                }
            } else {
                let mask = &self.ready_masks[device * words..(device + 1) * words];
                let count: u32 = mask.iter().map(|w| w.count_ones()).sum();
                let k = self.bits.random().below(count as usize) as u32;
                kth_set_bit(mask, k)
            };
            if device == 0 && pin == CONTROLLER_BEGIN {
                pin = self.controller.begin_pending;
            }
            steps += 1;
            result = self.send(device, pin);
            if self.is_ready(device) {
                self.ready.expect(1);
                let delay = 1 + self.bits.geometric();
                self.ready
                    .put(self.epoch, delay, u32::try_from(device).unwrap_or(u32::MAX));
            } else {
                self.listed[device] = false;
            }
            if result.is_err() || self.controller.finished {
                break;
            }
        }
        self.count_steps(steps);
        due.clear();
        self.ready.give_back(self.epoch, due);
        result
    }

    /// Asks the processor early for the edges that the sender `AHEAD`
    /// places after `due[i]` will read, in three stages a few senders
    /// apart (its pin base, then its first pin's end, then the edges
    /// there), each reading only what the stage before fetched. At size a
    /// send's edges are the one place it touches that no other array's
    /// order leads the hardware to. A hint: it changes no result.
    #[inline(always)]
    fn prefetch_edges(&self, due: &[u32], i: usize) {
        const AHEAD: usize = 12;
        let sender = |k: usize| due.get(i + k).map(|&d| d as usize);
        if let Some(d) = sender(AHEAD) {
            prefetch(self.pin_base.as_ptr().wrapping_add(d));
        }
        if let Some(&base) = sender(AHEAD * 2 / 3).and_then(|d| self.pin_base.get(d)) {
            prefetch(self.pin_ends.as_ptr().wrapping_add(base as usize));
        }
        if let Some(&start) = sender(AHEAD / 3)
            .and_then(|d| self.pin_base.get(d))
            .and_then(|&base| self.pin_ends.get(base as usize))
        {
            let edges = self.edges.as_ptr().wrapping_add(start as usize);
            prefetch(edges);
            prefetch(edges.wrapping_add(8));
        }
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
            .clocks
            .iter()
            .map(|clock| clock.busy)
            .enumerate()
            .max_by_key(|(_, busy)| *busy)
            .map(|(device, busy)| (self.device_name(device), busy));
        Cost {
            fan_limit: self.graph.fan_limit,
            makespan: self.clocks.iter().map(|clock| clock.at).max().unwrap_or(0),
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
        let Some((t, _, index)) = self.device_location(device) else {
            let c = &self.controller;
            return format!(
                "  global: pc {}, running {}, begin_pending {}, end_count {}",
                c.pc, c.running, c.begin_pending, c.end_count
            );
        };
        let info = &self.types[t];
        let e = index as usize;
        let mut report = String::new();
        for plan in &self.plans[info.plans.clone()] {
            let s = &self.states[plan.progress + e];
            if !s.in_progress {
                continue;
            }
            let name = &self.graph.invocations[plan.plan].name;
            let _ = write!(
                report,
                "  {} in `{name}`: read_recv_count {}/{}, write_recv_count {}/{}, read_send_mask {:#x}, write_send_mask {:#x}",
                self.device_name(device),
                s.read_recv_count,
                s.read_total,
                s.write_recv_count,
                s.write_total,
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
        // At most 12 set devices and 4 aggregators are shown, each kind
        // with the count of those left out.
        let devices: Vec<usize> = (1..self.first_aggregator)
            .filter(|&d| self.in_progress(d))
            .collect();
        let aggregators: Vec<usize> = (self.first_aggregator
            ..self.first_aggregator + self.aggregators.len())
            .filter(|&d| {
                let a = &self.aggregators[d - self.first_aggregator];
                a.begin_pending || a.end_count != 0
            })
            .collect();
        let mut stuck = Vec::new();
        for (all, shown, kind) in [(&devices, 12, "devices"), (&aggregators, 4, "aggregators")] {
            stuck.extend(all.iter().take(shown).map(|&d| self.device_report(d)));
            if all.len() > shown {
                stuck.push(format!("  … and {} more {kind}", all.len() - shown));
            }
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
    #[inline]
    fn charge_receive(&mut self, device: usize, arrival: u64) {
        let clock = &mut self.clocks[device];
        clock.at = clock.at.max(arrival) + 1;
        clock.busy += 1;
    }

    /// The cost model: a handler that takes `steps` steps of the device.
    #[inline]
    fn charge(&mut self, device: usize, steps: u64) {
        let clock = &mut self.clocks[device];
        clock.at += steps;
        clock.busy += steps;
    }

    /// The range of the edges of `device`'s output pin `pin` in `edges`.
    #[inline]
    fn fan(&self, device: usize, pin: usize) -> (usize, usize) {
        let at = self.pin_base[device] as usize + pin;
        match self.pin_ends.get(at..at + 2) {
            Some(&[start, end]) => (start as usize, end as usize),
            _ => {
                debug_assert!(
                    false,
                    "output pin {pin} of device {device} has no edge index"
                );
                (0, 0)
            }
        }
    }

    /// The types of a payload's components, one per component.
    fn payload_types(&self, types: PayloadTypes, length: usize) -> Vec<ScalarType> {
        match types {
            PayloadTypes::Uniform(ty) => vec![ty; length],
            PayloadTypes::Begin(plan) => self.layouts[plan].begin.clone(),
            PayloadTypes::End(plan) => self.layouts[plan].end.clone(),
        }
    }

    /// Starts a send on `device`'s output pin `pin`: charges the sender a
    /// step per edge and returns the pin's edges and the step the send
    /// leaves at, or `None` when the pin has no edges.
    #[inline]
    fn fan_out(&mut self, device: usize, pin: usize) -> Option<Fan> {
        let (start, end) = self.fan(device, pin);
        // One step per edge: the sender emits a packet per destination, and
        // packet i can be handled one step after it left.
        let steps = ((end - start) as u64).max(1);
        let clock = &mut self.clocks[device];
        let sent_at = clock.at;
        clock.at += steps;
        clock.busy += steps;
        (start != end).then_some(Fan {
            start,
            end,
            sent_at,
        })
    }

    /// Sends `payload` on `device`'s output pin `pin`: one delivery per
    /// edge.
    fn deliver(
        &mut self,
        device: usize,
        pin: usize,
        plan: usize,
        payload: &[u64],
        types: PayloadTypes,
    ) -> Result<(), SimulationError> {
        let Some(fan) = self.fan_out(device, pin) else {
            return Ok(());
        };
        let id = stored(self.payloads.store(payload, fan.deliveries()))?;
        self.post(fan, plan, id, payload.len(), types)
    }

    /// Finishes a send whose payload (`length` slots) the pool holds as
    /// `id`, stored for `fan`'s deliveries: perturbs it when asked, counts
    /// it and puts one message per edge in flight.
    #[inline]
    fn post(
        &mut self,
        fan: Fan,
        plan: usize,
        id: u32,
        length: usize,
        types: PayloadTypes,
    ) -> Result<(), SimulationError> {
        let Fan {
            start,
            end,
            sent_at,
        } = fan;
        if let Some(target) = self.perturb {
            let types = self.payload_types(types, length);
            if types.iter().any(|ty| ty.is_floating()) {
                if self.floating_sent == target {
                    let payload = &mut self.payloads.get_mut(id)[..length];
                    for (slot, ty) in payload.iter_mut().zip(types) {
                        if let Value::Double(x) = from_slot(*slot, ty) {
                            *slot = to_slot(Value::Double(x * (1.0 + PERTURBATION)));
                        } else if let Value::Float(x) = from_slot(*slot, ty) {
                            #[allow(clippy::cast_possible_truncation)]
                            let factor = 1.0 + PERTURBATION as f32;
                            *slot = to_slot(Value::Float(x * factor));
                        }
                    }
                }
                self.floating_sent += 1;
            }
        }
        self.statistics.total.sent += 1;
        self.statistics.invocations[plan].1.sent += 1;
        let delivered = (end - start) as u64;
        self.statistics.total.delivered += delivered;
        self.statistics.invocations[plan].1.delivered += delivered;
        let values = delivered * length as u64;
        self.statistics.total.values += values;
        self.statistics.invocations[plan].1.values += values;
        let plan = u32::try_from(plan).unwrap_or(u32::MAX);
        // Each delivery due after its own random delay.
        self.wheel.expect(end - start);
        for (i, &(destination, input)) in self.edges[start..end].iter().enumerate() {
            let message = InFlight {
                arrival: sent_at + i as u64 + 1,
                device: destination,
                pin: input,
                plan,
                payload: id,
            };
            self.wheel
                .put(self.epoch, 1 + self.bits.geometric(), message);
        }
        Ok(())
    }

    /// Sends the values `fill` writes into the reused outgoing buffer.
    fn deliver_with(
        &mut self,
        device: usize,
        pin: usize,
        plan: usize,
        types: PayloadTypes,
        fill: impl FnOnce(&Self, &mut Vec<u64>),
    ) -> Result<(), SimulationError> {
        let mut payload = std::mem::take(&mut self.outgoing);
        payload.clear();
        fill(self, &mut payload);
        let result = self.deliver(device, pin, plan, &payload, types);
        self.outgoing = payload;
        result
    }

    fn send(&mut self, device: usize, pin: usize) -> Result<(), SimulationError> {
        if device == 0 {
            self.controller_send(pin)?;
            self.update_ready(0);
            return Ok(());
        }
        if device >= self.first_aggregator {
            if self.aggregators[device - self.first_aggregator]
                .fetch
                .is_some()
            {
                self.fetch_aggregator_send(device, pin)?;
                self.update_ready(device);
                return Ok(());
            }
            let a = &mut self.aggregators[device - self.first_aggregator];
            let plan = a.plan;
            let (values, types) = if pin == 0 {
                a.begin_pending = false;
                (&a.begin, PayloadTypes::Begin(plan))
            } else {
                a.end_count = 0;
                (&a.partials, PayloadTypes::End(plan))
            };
            let mut payload = std::mem::take(&mut self.outgoing);
            payload.clear();
            payload.extend(values.iter().map(|v| to_slot(*v)));
            let result = self.deliver(device, pin, plan, &payload, types);
            self.outgoing = payload;
            result?;
            self.update_ready(device);
            return Ok(());
        }
        let Some((t, _, index)) = self.device_location(device) else {
            return Ok(());
        };
        let e = index as usize;
        let Output { plan: p, role } = self.types[t].outputs[pin];
        let info = &self.plans[p];
        let (plan_index, progress) = (info.plan, info.progress + e);
        match role {
            Role::ReadSend(bit) => {
                // Send `dat_D` once; the edges fan it out.
                let dat = info.read_sends[bit].0.index();
                self.states[progress].read_send_mask &= !(1 << bit);
                // The row goes straight into the pool's record.
                if let Some(fan) = self.fan_out(device, pin) {
                    let row = self.dats.row(dat, e);
                    let id = stored(self.payloads.store(row, fan.deliveries()))?;
                    let ty = PayloadTypes::Uniform(self.dats.ty(dat));
                    self.post(fan, plan_index, id, row.len(), ty)?;
                }
                self.sent_ready(device, p, e, pin);
            }
            Role::Execute => {
                self.execute(device, t, p, e)?;
                self.update_plan_ready(device, p, e);
            }
            Role::WriteSend(bit) => {
                let buffer = info.arg_store[info.write_sends[bit].0];
                self.states[progress].write_send_mask &= !(1 << bit);
                if let Some(fan) = self.fan_out(device, pin) {
                    let column = &self.plan_columns[p].buffers;
                    let row = column.row(buffer, e);
                    let id = stored(self.payloads.store(row, fan.deliveries()))?;
                    let (length, ty) = (row.len(), PayloadTypes::Uniform(column.ty(buffer)));
                    self.post(fan, plan_index, id, length, ty)?;
                }
                self.sent_ready(device, p, e, pin);
            }
            Role::End if info.fetch_parts.is_some() => {
                self.fetch_item(device, p, e, pin)?;
                let plan = &self.plans[p];
                let progress = &self.states[plan.progress + e];
                plan.refresh_fetch(progress, &mut self.ready_masks, self.words, device);
                self.plan_ready_updated(device);
            }
            Role::End => {
                // End: the partial reductions, or identities where the kernel
                // did not run.
                let state = &mut self.states[progress];
                state.write_recv_count = 0;
                state.in_progress = false;
                let types = PayloadTypes::End(plan_index);
                self.deliver_with(device, pin, plan_index, types, |this, payload| {
                    let plan = &this.graph.invocations[plan_index];
                    let info = &this.plans[p];
                    let columns = &this.columns[t];
                    for ((global, mode), &pad) in plan.end_globals.iter().zip(&info.end_pads) {
                        let g = &this.program.globals[global.index()];
                        if info.iterates {
                            payload.extend_from_slice(columns.pads.row(pad, e));
                        } else {
                            payload.extend(std::iter::repeat_n(
                                to_slot(identity(g.ty.scalar, *mode)),
                                g.ty.dimension as usize,
                            ));
                        }
                    }
                    // Each `INFO` global and the element that set it (zeros
                    // and none where the kernel did not run).
                    let elements = this.plan_columns[p].info_elements.row(e);
                    for ((i, &(pad, _)), &element) in
                        plan.infos.iter().zip(&info.info_pads).zip(elements)
                    {
                        if info.iterates {
                            payload.extend_from_slice(columns.pads.row(pad, e));
                            payload.push(element);
                        } else {
                            let dimension = this.program.globals[i.global.index()].ty.dimension;
                            payload.extend(std::iter::repeat_n(0, dimension as usize));
                            payload.push(to_slot(Value::Uint(NO_ELEMENT)));
                        }
                    }
                })?;
                self.update_plan_ready(device, p, e);
            }
        }
        Ok(())
    }

    /// After a read or write send of set device `device` (element `e`) on
    /// output pin `pin` of invocation `p`: its pin goes, and the end pin
    /// may come ([`PlanInfo::sent`]).
    #[inline(always)]
    fn sent_ready(&mut self, device: usize, p: usize, e: usize, pin: usize) {
        let plan = &self.plans[p];
        if let Some((word, _)) = plan.word {
            let state = &self.states[plan.progress + e];
            let mask = &mut self.ready_masks[device * self.words + word];
            plan.sent(state, PinBit::of(pin).bit, mask);
            self.plan_ready_updated(device);
        } else {
            self.update_plan_ready(device, p, e);
        }
    }

    /// The execute handler of set device `device` (type `t`, element `e`)
    /// for plan `p`.
    fn execute(
        &mut self,
        device: usize,
        t: usize,
        p: usize,
        e: usize,
    ) -> Result<(), SimulationError> {
        let info = &self.plans[p];
        let (write_mask, progress) = (info.write_mask, info.progress + e);
        if info.iterates {
            let id = info.invocation;
            self.run_kernel(t, p, id, e)?;
            let arguments = self.program.invocations[id.index()].args.len() as u64;
            self.charge(device, 1 + arguments);
        } else {
            self.charge(device, 1);
        }
        let state = &mut self.states[progress];
        state.read_recv_count = 0;
        state.write_recv_count += 1;
        state.write_send_mask = write_mask;
        Ok(())
    }

    /// Runs the kernel on one iteration element: INC landing pads are
    /// set to INC's identity first, then the kernel works on the device's own data in
    /// place, as the generated C++ does. The arguments are staged in
    /// 8-byte slots, which the compiled kernel call reads and writes; the
    /// interpreter gets them as values.
    fn run_kernel(
        &mut self,
        t: usize,
        p: usize,
        id: InvocationId,
        element: usize,
    ) -> Result<(), SimulationError> {
        if self.kernels[id.index()].is_none() {
            return Ok(());
        }
        // The starting value of the MIN or MAX global each `INFO` follows.
        let info = &self.plans[p];
        let mut starts = std::mem::take(&mut self.info_starts);
        starts.clear();
        starts.extend(
            info.info_pads
                .iter()
                .map(|&(_, r)| self.columns[t].pads.row(r, element)[0]),
        );
        let result = match self.calls.as_mut().filter(|calls| calls.compiled(id)) {
            // Staging, kernel and store-back in one compiled call, on the
            // rows it was bound to; the indices, if any, into its extra
            // slots first.
            Some(calls) => {
                let indices = if info.indices.is_empty() {
                    Ok(())
                } else {
                    calls.extra_mut(id).map(|extra| {
                        for (slot, &kind) in extra.iter_mut().zip(&info.indices) {
                            let row = self.state.row_of(&self.program, kind, element);
                            *slot = to_slot(crate::reference::index_value(row));
                        }
                    })
                };
                let groups = [
                    &mut self.dats,
                    &mut self.plan_columns[p].buffers,
                    &mut self.columns[t].pads,
                ];
                indices.and_then(|()| calls.call(id, groups, element))
            }
            None => self.interpret_kernel(t, p, id, element),
        };
        if let Err(fault) = result {
            self.info_starts = starts;
            let program = Arc::clone(&self.program);
            let invocation = &program.invocations[id.index()];
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
        // `element_G`: this element, when it improved on the start of `R`.
        let info = &self.plans[p];
        let columns = &mut self.columns[t];
        let infos = &self.graph.invocations[info.plan].infos;
        for (i, ((plan, &(_, r)), &start)) in
            infos.iter().zip(&info.info_pads).zip(&starts).enumerate()
        {
            let (pads, ty) = (&columns.pads, columns.pads.ty(r));
            let value = from_slot(pads.row(r, element)[0], ty);
            let start = from_slot(start, ty);
            let set = improves(value, start, plan.mode);
            self.plan_columns[p].info_elements.row_mut(element)[i] = to_slot(Value::Uint(if set {
                u32::try_from(element).unwrap_or(NO_ELEMENT)
            } else {
                NO_ELEMENT
            }));
        }
        self.info_starts = starts;
        Ok(())
    }

    /// The interpreter's kernel call: the arguments staged in 8-byte slots
    /// by the step lists, given to the kernel as values, and stored back.
    fn interpret_kernel(
        &mut self,
        t: usize,
        p: usize,
        id: InvocationId,
        element: usize,
    ) -> Result<(), Fault> {
        let info = &self.plans[p];
        let offsets = &info.offsets;
        // Every slot of the call is written by a staging step: the buffer
        // is only grown, never cleared.
        let mut buffer = std::mem::take(&mut self.staged);
        let total = offsets.last().copied().unwrap_or(0);
        if buffer.len() < total {
            buffer.resize(total, 0);
        }
        let staged = &mut buffer[..total];
        let columns = &mut self.columns[t];
        for step in &info.stage {
            match *step {
                Stage::Fill { at, length, slot } => staged[at..at + length].fill(slot),
                Stage::Dat { dat, at, length } => {
                    copy_slots(&mut staged[at..at + length], self.dats.row(dat, element));
                }
                Stage::Buffer {
                    buffer,
                    at,
                    length,
                    start,
                } => {
                    let values = self.plan_columns[p].buffers.row_mut(buffer, element);
                    if let Some(slot) = start {
                        values.fill(slot);
                    }
                    copy_slots(&mut staged[at..at + length], values);
                }
                Stage::Pad {
                    pad,
                    at,
                    length,
                    start,
                } => {
                    let values = columns.pads.row_mut(pad, element);
                    if let Some(slot) = start {
                        values.fill(slot);
                        staged[at..at + length].fill(slot);
                    } else {
                        copy_slots(&mut staged[at..at + length], values);
                    }
                }
                Stage::Index { kind, at } => {
                    staged[at] = to_slot(crate::reference::index_value(self.state.row_of(
                        &self.program,
                        kind,
                        element,
                    )));
                }
            }
        }
        let program = Arc::clone(&self.program);
        let invocation = &program.invocations[id.index()];
        let Some(prepared) = self.kernels[id.index()].as_ref() else {
            self.staged = buffer;
            return Ok(());
        };
        let layout = &prepared.compiled.layout;
        let mut slots = std::mem::take(&mut self.scratch);
        slots.resize(layout.size, Value::Int(0));
        for (position, (_, arg)) in invocation.resolved_args().enumerate() {
            let (base, length) = layout.params[position];
            let target = &mut slots[base..base + length];
            let source = &staged[offsets[position]..offsets[position] + length];
            match arg.kind {
                ArgKind::Const(c) => target.copy_from_slice(&self.state.consts[c.index()]),
                ArgKind::Len(set) => target[0] = Value::Int(self.lengths[set.index()]),
                _ => {
                    for (value, slot) in target.iter_mut().zip(source) {
                        *value = from_slot(*slot, arg.ty.scalar);
                    }
                }
            }
        }
        let mut no_globals: [Vec<Value>; 0] = [];
        // What the kernel prints is this evaluation's, line by line, as the
        // execute handler logs it: its own line buffer, and a line left
        // unfinished ended with the evaluation (compilation.md, "Printing
        // from a kernel").
        let mut text = String::new();
        let mut line = 0;
        let mut into_text = |printed: &str| text.push_str(printed);
        let mut printer = Printer {
            out: &mut into_text,
            unfinished_line: &mut line,
            of: Printing::Kernel,
        };
        let mut frame = Frame {
            slots: &mut slots,
            consts: &self.state.consts,
            lengths: &self.lengths,
            globals: &mut no_globals,
            host: Some(&mut printer),
            budget: crate::interp::MAX_KERNEL_ITERATIONS,
        };
        let result = prepared.compiled.run(&mut frame);
        if !text.is_empty() {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            (self.out)(&text);
        }
        for (position, (_, arg)) in invocation.resolved_args().enumerate() {
            let (base, length) = layout.params[position];
            let target = &mut staged[offsets[position]..offsets[position] + length];
            if !matches!(arg.kind, ArgKind::Const(_) | ArgKind::Len(_)) {
                for (slot, value) in target.iter_mut().zip(&slots[base..base + length]) {
                    *slot = to_slot(*value);
                }
            }
        }
        self.scratch = slots;
        if let Err(fault) = result {
            self.staged = buffer;
            return Err(fault);
        }
        // The kernel wrote through its pointers: everything goes back.
        let info = &self.plans[p];
        let columns = &mut self.columns[t];
        for step in &info.store {
            match *step {
                Store::Dat {
                    dat,
                    at,
                    length,
                    add,
                } => {
                    let ty = self.dats.ty(dat);
                    let row = self.dats.row_mut(dat, element);
                    let values = &staged[at..at + length];
                    if add {
                        add_slots(ty, row, values);
                    } else {
                        copy_slots(row, values);
                    }
                }
                Store::Buffer { buffer, at, length } => {
                    copy_slots(
                        self.plan_columns[p].buffers.row_mut(buffer, element),
                        &staged[at..at + length],
                    );
                }
                Store::Pad {
                    pad,
                    at,
                    length,
                    how,
                } => {
                    let ty = columns.pads.ty(pad);
                    let partial = columns.pads.row_mut(pad, element);
                    let values = &staged[at..at + length];
                    match how {
                        PadStore::Copy => copy_slots(partial, values),
                        PadStore::Add => add_slots(ty, partial, values),
                        PadStore::Combine(mode) => combine_slots(ty, partial, values, mode),
                    }
                }
            }
        }
        self.staged = buffer;
        Ok(())
    }

    /// Passes on the line `main` left unfinished and held back, when the
    /// program ends (or stops on an error), as the controller logs it.
    fn flush_main_line(&mut self) {
        if let Some(held) = self.controller.held.as_mut().filter(|h| !h.is_empty()) {
            (self.out)(held);
            held.clear();
        }
    }

    fn assertion(&self, device: usize, message: &str) -> SimulationError {
        SimulationError::Assertion(format!(
            "{}: {message}\n{}",
            self.device_name(device),
            self.device_report(device)
        ))
    }

    /// Delivers `message`, reading its payload where the pool stores it,
    /// and releases the payload.
    fn receive(&mut self, message: InFlight) -> Result<(), SimulationError> {
        let device = message.device as usize;
        self.charge_receive(device, message.arrival);
        if device == 0 || device >= self.first_aggregator {
            let result = if device == 0 {
                self.controller_receive(message)
            } else {
                self.aggregator_receive(message)
            };
            self.payloads.release(message.payload);
            result?;
            self.update_ready(device);
            return Ok(());
        }
        let result = self.receive_set(device, message);
        self.payloads.release(message.payload);
        result
    }

    /// A set device's handler of `message`.
    #[inline(always)]
    fn receive_set(&mut self, device: usize, message: InFlight) -> Result<(), SimulationError> {
        let receiver = self.receivers.get(message.pin as usize);
        debug_assert!(receiver.is_some(), "a delivery to no receiver");
        let Some(&Receiver {
            t,
            p,
            plan,
            base,
            input,
        }) = receiver
        else {
            return Ok(());
        };
        let (t, p, plan_index) = (t as usize, p as usize, plan as usize);
        let e = device.wrapping_sub(base as usize);
        let payload = self.payloads.get(message.payload);
        let info = &self.plans[p];
        if message.plan as usize != plan_index {
            return Err(
                self.assertion(device, "a message arrived on the pin of another invocation")
            );
        }
        if let Some(parts) = info.fetch_parts {
            // A fetch's request: kept if its window meets the element's
            // items, and the first such of a fetch starts it again.
            let (first, last) = (payload[0] as u32, payload[1] as u32);
            let state = &mut self.states[info.progress + e];
            let own = state.read_total;
            if first < own.saturating_add(parts) && last > own {
                if first <= own {
                    state.read_recv_count = 0;
                }
                state.write_recv_count = last;
            }
            self.requests_in_flight -= 1;
            info.refresh_fetch(state, &mut self.ready_masks, self.words, device);
            self.plan_ready_updated(device);
            return Ok(());
        }
        // Step 1: the first message of the invocation.
        let read_mask = info.read_mask;
        let iterates = info.iterates;
        let state = &mut self.states[info.progress + e];
        let started = state.in_progress;
        if !started {
            state.in_progress = true;
            state.read_send_mask = read_mask;
        }
        let counted = match input {
            Input::Begin(_) | Input::ReadRecv { .. } => {
                state.read_recv_count += 1;
                Counted::Read
            }
            Input::WriteRecv { .. } => {
                state.write_recv_count += 1;
                Counted::Write
            }
        };
        let over =
            state.read_recv_count > state.read_total || state.write_recv_count > state.write_total;
        // Only this invocation's pins can have changed; in an invocation
        // under way, only the one pin the count decides.
        match info.word {
            Some((word, _)) if started => {
                let mask = &mut self.ready_masks[device * self.words + word];
                info.recount(state, counted, mask);
            }
            _ => info.refresh(state, &mut self.ready_masks, self.words, device),
        }
        match input {
            Input::Begin(_) => {
                if iterates {
                    let plan = &self.graph.invocations[plan_index];
                    let pads = &info.begin_pads;
                    let mut offset = 0;
                    for (global, pad) in plan.begin_globals.iter().zip(pads) {
                        let dimension = self.program.globals[global.index()].ty.dimension as usize;
                        if let Some(pad) = *pad {
                            copy_slots(
                                self.columns[t].pads.row_mut(pad, e),
                                &payload[offset..offset + dimension],
                            );
                        }
                        offset += dimension;
                    }
                }
            }
            Input::ReadRecv { buffer, .. } => {
                let row = self.plan_columns[p].buffers.row_mut(buffer, e);
                let width = row.len();
                copy_slots(row, &payload[..width]);
            }
            Input::WriteRecv { dat, add, .. } => {
                let ty = self.dats.ty(dat.index());
                let stored = self.dats.row_mut(dat.index(), e);
                let width = stored.len();
                if add {
                    add_slots(ty, stored, &payload[..width]);
                } else {
                    copy_slots(stored, &payload[..width]);
                }
            }
        }
        if over {
            return Err(self.assertion(
                device,
                "more messages arrived than the device's count properties allow",
            ));
        }
        self.plan_ready_updated(device);
        Ok(())
    }

    /// An aggregator's inputs: input 0 takes the begin from its parent,
    /// input 1 an end from a child (`op2_codegen::build::tree_device`).
    /// The payload is read where the pool holds it, which the caller
    /// releases.
    fn aggregator_receive(&mut self, message: InFlight) -> Result<(), SimulationError> {
        let device = message.device as usize;
        let a = &self.aggregators[device - self.first_aggregator];
        if message.plan as usize != a.plan {
            return Err(
                self.assertion(device, "a message arrived on the pin of another invocation")
            );
        }
        if a.fetch.is_some() {
            return self.fetch_aggregator_receive(message);
        }
        let plan = &self.graph.invocations[a.plan];
        let layout = &self.layouts[a.plan];
        if message.pin == 0 {
            let a = &mut self.aggregators[device - self.first_aggregator];
            let payload = self.payloads.get(message.payload);
            payload_values(&layout.begin, payload, &mut a.begin);
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
        let mut partials = std::mem::take(&mut self.values);
        let payload = self.payloads.get(message.payload);
        payload_values(&layout.end, payload, &mut partials);
        let a = &mut self.aggregators[device - self.first_aggregator];
        // Before the MIN or MAX partial it follows takes this child's.
        for slot in &layout.infos {
            info_combine(&mut a.partials, &partials, slot);
        }
        let mut offset = 0;
        for (global, mode) in &plan.end_globals {
            let dimension = self.program.globals[global.index()].ty.dimension as usize;
            let partial = &partials[offset..offset + dimension];
            let target = &mut a.partials[offset..offset + dimension];
            match mode {
                AccessMode::Inc => add_into(target, partial),
                mode => combine(target, partial, *mode),
            }
            offset += dimension;
        }
        self.values = partials;
        let a = &mut self.aggregators[device - self.first_aggregator];
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
        if let Some(fetch) = self.fetches[plan_index] {
            return self.fetch_request(pin, plan_index, fetch);
        }
        self.state
            .path
            .record(self.graph.invocations[plan_index].id);
        self.invocation_start = self.clocks[0].at;
        let cost = &mut self.costs[plan_index];
        cost.first_begin.get_or_insert(self.invocation_start);
        cost.last_begin = self.invocation_start;
        self.controller.begin_pending = 0;
        self.controller.end_count = 0;
        self.controller.info_elements.clear();
        self.controller
            .info_elements
            .resize(self.graph.invocations[plan_index].infos.len(), NO_ELEMENT);
        let types = PayloadTypes::Begin(plan_index);
        self.deliver_with(0, pin, plan_index, types, |this, payload| {
            for global in &this.graph.invocations[plan_index].begin_globals {
                payload.extend(
                    this.state.globals[global.index()]
                        .iter()
                        .map(|v| to_slot(*v)),
                );
            }
        })?;
        if self.counts.end_total[plan_index] == 0 {
            self.controller.running = true;
            self.invocation_done(plan_index);
        }
        Ok(())
    }

    /// An end message: the payload is read where the pool holds it, which
    /// the caller releases.
    fn controller_receive(&mut self, message: InFlight) -> Result<(), SimulationError> {
        let plan_index = message.pin as usize;
        if plan_index != message.plan as usize {
            return Err(
                self.assertion(0, "an end message arrived on the pin of another invocation")
            );
        }
        if let Some(fetch) = self.fetches[plan_index] {
            return self.fetch_store(message, plan_index, fetch);
        }
        let plan = &self.graph.invocations[plan_index];
        let layout = &self.layouts[plan_index];
        let mut partials = std::mem::take(&mut self.values);
        let payload = self.payloads.get(message.payload);
        payload_values(&layout.end, payload, &mut partials);
        // Before the MIN or MAX global it follows takes this partial.
        for (i, (info, slot)) in plan.infos.iter().zip(&layout.infos).enumerate() {
            let InfoSlot {
                r, at, dimension, ..
            } = *slot;
            let current = self.state.globals[info.of.index()][0];
            let incoming = partials[r];
            let element = partials[at + dimension];
            let held = Value::Uint(self.controller.info_elements[i]);
            if takes(incoming, current, element, held, info.mode) {
                self.controller.info_elements[i] = match element {
                    Value::Uint(e) => e,
                    _ => NO_ELEMENT,
                };
                self.state.globals[info.global.index()]
                    .copy_from_slice(&partials[at..at + dimension]);
            }
        }
        let mut offset = 0;
        for (global, mode) in &plan.end_globals {
            let dimension = self.program.globals[global.index()].ty.dimension as usize;
            let partial = &partials[offset..offset + dimension];
            let target = &mut self.state.globals[global.index()];
            match mode {
                AccessMode::Inc => add_into(target, partial),
                mode => combine(target, partial, *mode),
            }
            offset += dimension;
        }
        self.values = partials;
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
        let span = self.clocks[0].at - self.invocation_start;
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
            let (out, held) = (&mut *self.out, &mut self.controller.held);
            let mut main_out = |text: &str| match held {
                Some(held) => hold_unfinished_line(held, out, text),
                None => out(text),
            };
            let mut printer = Printer {
                out: &mut main_out,
                unfinished_line: &mut self.controller.unfinished_line,
                of: Printing::Controller,
            };
            let mut exit_status = None;
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
                    TerminatorCode::Exit(Some((status, range))) => {
                        let value = status.eval(&mut frame)?;
                        exit_status = Some(crate::interp::exit_status(value, *range)?);
                        Ok(None)
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
                TerminatorCode::ParLoop(..) | TerminatorCode::Exit(_) => (None, None),
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
                TerminatorCode::Exit(_) => {
                    self.state.exit_status = exit_status;
                    self.controller.running = false;
                    self.controller.finished = true;
                    return Ok(());
                }
            }
        }
    }
}

/// Asks the processor to bring the cache line of `at` in, if it can; a
/// hint that reads nothing and changes no result (an address past an
/// array's end is never read).
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch<T>(at: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of x86-64; a prefetch never faults, whatever
        // the address, and reads nothing the program sees.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Passes on `text`, what `main` prints, up to its last newline, and keeps
/// the rest in `held` (the generated controller's line buffer).
fn hold_unfinished_line(held: &mut String, out: &mut dyn FnMut(&str), text: &str) {
    match text.rfind('\n') {
        Some(at) => {
            held.push_str(&text[..=at]);
            out(held);
            held.clear();
            held.push_str(&text[at + 1..]);
        }
        None => held.push_str(text),
    }
}

/// Per invocation: the rows of its compiled execute handler, on the set
/// device type of the set it iterates over.
fn handlers(program: &Program, plans: &[PlanInfo]) -> Vec<Option<Vec<HandlerArg>>> {
    let mut handlers = vec![None; program.invocations.len()];
    for plan in plans {
        // A fetch runs no kernel.
        if plan.iterates && plan.fetch_parts.is_none() {
            handlers[plan.invocation.index()] = Some(plan.handler.clone());
        }
    }
    handlers
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
            Some(Terminator::Exit(_)) | None => [None, None],
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
                Terminator::Exit(status) => TerminatorCode::Exit(
                    status
                        .as_ref()
                        .map(|s| (CompiledExpr::new(main, s), s.range)),
                ),
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
#[derive(Clone, Copy)]
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

/// The types of the payloads of an invocation's begin and end messages,
/// and where its `INFO` partials lie in the end's.
struct PayloadLayout {
    begin: Vec<ScalarType>,
    end: Vec<ScalarType>,
    infos: Vec<InfoSlot>,
}

fn payload_layout(program: &Program, plan: &op2_codegen::model::InvocationPlan) -> PayloadLayout {
    // A fetch's request and item (compilation.md, "A `fetch` on POETS").
    if let Some(fetch) = plan.fetch {
        let mut end = vec![ScalarType::Uint];
        end.extend(std::iter::repeat_n(fetch.scalar, fetch.components as usize));
        return PayloadLayout {
            begin: vec![ScalarType::Uint; 2],
            end,
            infos: Vec::new(),
        };
    }
    let globals = |globals: &mut dyn Iterator<Item = GlobalId>| -> Vec<ScalarType> {
        globals
            .flat_map(|g| {
                let ty = program.globals[g.index()].ty;
                std::iter::repeat_n(ty.scalar, ty.dimension as usize)
            })
            .collect()
    };
    // The end globals, then each `INFO` global with its element.
    let mut end = globals(&mut plan.end_globals.iter().map(|(g, _)| *g));
    for info in &plan.infos {
        end.extend(globals(&mut std::iter::once(info.global)));
        end.push(ScalarType::Uint);
    }
    PayloadLayout {
        begin: globals(&mut plan.begin_globals.iter().copied()),
        end,
        infos: info_slots(program, plan),
    }
}

/// The values of a payload of components of `types`, into `values`.
fn payload_values(types: &[ScalarType], payload: &[u64], values: &mut Vec<Value>) {
    values.clear();
    values.extend(
        types
            .iter()
            .zip(payload)
            .map(|(ty, &slot)| from_slot(slot, *ty)),
    );
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
            || improves(incoming, current, mode)
            // Equal: neither better (`0.0` and `-0.0` are not, for MIN or
            // MAX).
            || (incoming == current
                && !improves(current, incoming, mode)
                && element < held))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A program with more par_loops than a 64-bit word has bits, over
    /// three sets, gives the controller more than 64 output pins (a begin
    /// per invocation) and each set's device type 48 (an execute and an
    /// end per invocation); the controller's ready mask stays two bits,
    /// so every device's stays one word, and the pending begin is still
    /// the one sent.
    #[test]
    fn many_par_loops_keep_the_ready_masks_one_word_wide() {
        let loops: String = (0..72)
            .map(|i| format!("    par_loop add over s{} (q{} RW);\n", i % 3, i % 3))
            .collect();
        let text = format!(
            "set s0;\nset s1;\nset s2;\ndat q0: double on s0;\ndat q1: double on s1;\ndat q2: double on s2;\n\
             kernel add(double *q) {{\n    q[0] = q[0] * 2.0 + 1.0;\n}}\nmain {{\n{loops}}}\n"
        );
        let analysis = op2_analysis::analyse_text(
            std::path::Path::new("loops.op2"),
            &text,
            &op2_analysis::Options { require_main: true },
        );
        assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
        let loaded = op2_instance::read(
            br#"{"sets": {"s0": 3, "s1": 1, "s2": 2}}"#,
            &analysis.program,
            &mut op2_instance::NoProgress,
        );
        let data = loaded.data.expect("the instance reads");
        let graph = op2_codegen::graph_type(&analysis, "test");
        let widest = graph.device_types.iter().map(|t| t.outputs.len()).max();
        assert!(
            widest > Some(64),
            "the controller has {widest:?} output pins"
        );
        let mut out = |_: &str| {};
        let mut progress = |_: &Statistics| {};
        let simulator = Simulator::new(
            analysis.lowered().program(),
            &graph,
            &data,
            Options::default(),
            &mut out,
            &mut progress,
        )
        .expect("the simulator starts");
        assert_eq!(simulator.words, 1);
        drop(simulator);
        let (state, _) = simulate(&analysis, &graph, &data, Options::default(), &mut |_| {})
            .expect("the simulation ends");
        // q = 2q + 1 twenty-four times from 0 on each set: 2^24 - 1.
        let expected = Value::Double(2f64.powi(24) - 1.0);
        for (dat, size) in [3, 1, 2].into_iter().enumerate() {
            assert_eq!(state.dats[dat], vec![expected; size]);
        }
    }

    /// A full payload pool is a limit of the simulator, which the CLI ends
    /// with status 1 and the fuzz campaign counts as an answer, not a
    /// broken handler invariant (`Assertion`), which the campaign reports
    /// as a finding. (The pool itself cannot be filled in a test: 2^32
    /// slots are 32 GiB.)
    #[test]
    fn a_full_payload_pool_is_a_limit_not_an_assertion() {
        match stored(Err(store::Full)) {
            Err(SimulationError::Limit(message)) => {
                assert!(message.contains("4294967295 slots"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(stored(Ok(7)), Ok(7)));
    }
}
