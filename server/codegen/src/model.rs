//! The graph model: one POETS graph type built from an analysed program by
//! the strategy of compilation.md. The XML writer prints it; the simulator
//! executes it. Besides the C++ text of every handler, it keeps the
//! structured plan the handlers were generated from (which pins exist, which
//! argument or dat each serves, the masks, the controller's state machine),
//! so that executing the graph never re-derives the strategy.

use op2_analysis::hir;
use op2_analysis::model::{DatId, GlobalId, InvocationId, KernelId, SetId};
use op2_syntax::ast::{AccessMode, ScalarType};

/// A declaration type both POETS loaders accept (poets-v4.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CType {
    /// `double`
    Double,
    /// `float`
    Float,
    /// `int32_t`
    I32,
    /// `uint32_t`
    U32,
    /// `int64_t`
    I64,
    /// `uint64_t`
    U64,
    /// `uint8_t`
    U8,
}

impl CType {
    /// The C type of a language scalar type (compilation.md §10).
    pub fn of(scalar: ScalarType) -> CType {
        match scalar {
            ScalarType::Double => CType::Double,
            ScalarType::Float => CType::Float,
            ScalarType::Int => CType::I32,
            ScalarType::Uint => CType::U32,
            ScalarType::Ll => CType::I64,
            ScalarType::Ull => CType::U64,
            ScalarType::Bool => CType::U8,
        }
    }

    /// The type's name in declarations.
    pub fn name(self) -> &'static str {
        match self {
            CType::Double => "double",
            CType::Float => "float",
            CType::I32 => "int32_t",
            CType::U32 => "uint32_t",
            CType::I64 => "int64_t",
            CType::U64 => "uint64_t",
            CType::U8 => "uint8_t",
        }
    }

    /// Size in bytes (structs are packed in the simulators).
    pub fn size(self) -> u32 {
        match self {
            CType::Double | CType::I64 | CType::U64 => 8,
            CType::Float | CType::I32 | CType::U32 => 4,
            CType::U8 => 1,
        }
    }
}

/// A member of a Properties, State or Message struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member's name.
    pub name: String,
    /// Its type.
    pub ty: CType,
    /// Array length; `None` for a scalar. Program data are always arrays,
    /// of length 1 for dimension 1 (compilation.md §10).
    pub length: Option<u32>,
}

impl Member {
    /// A scalar member.
    pub fn scalar(name: impl Into<String>, ty: CType) -> Member {
        Member {
            name: name.into(),
            ty,
            length: None,
        }
    }

    /// An array member.
    pub fn array(name: impl Into<String>, ty: CType, length: u32) -> Member {
        Member {
            name: name.into(),
            ty,
            length: Some(length),
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> u32 {
        self.ty.size() * self.length.unwrap_or(1)
    }

    /// Number of scalar values in the member.
    pub fn components(&self) -> u32 {
        self.length.unwrap_or(1)
    }
}

/// What a message type carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageRole {
    /// `{inv}_begin`: the READ, MIN and MAX globals.
    Begin(InvocationId),
    /// `{inv}_end`: the INC, MIN and MAX partials.
    End(InvocationId),
    /// `dat_{D}`: one element's value of a dat.
    Dat(DatId),
    /// No payload: local steps.
    Empty,
}

/// A message type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageType {
    /// Its id.
    pub id: String,
    /// Its members.
    pub members: Vec<Member>,
    /// What it carries.
    pub role: MessageRole,
}

impl MessageType {
    /// Payload size in bytes: a sum of up to one member per global of an
    /// invocation, each up to 8 × 65,536 bytes, so it may pass `u32`.
    pub fn size(&self) -> u64 {
        self.members.iter().map(|m| u64::from(m.size())).sum()
    }
}

/// What a pin does in the strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PinRole {
    /// Set device input: start of an invocation.
    Begin(InvocationId),
    /// Set device output: send a dat read indirectly.
    DatReadSend(InvocationId, DatId),
    /// Set device input: receive indirect argument `arg`.
    ArgReadRecv(InvocationId, usize),
    /// Set device output without edges: run the kernel.
    Execute(InvocationId),
    /// Set device output: send indirect argument `arg` back.
    ArgWriteSend(InvocationId, usize),
    /// Set device input: apply writes to a dat, adding when `add`.
    DatWriteRecv {
        /// The invocation.
        invocation: InvocationId,
        /// The dat written.
        dat: DatId,
        /// INC: add; WRITE/RW: copy.
        add: bool,
    },
    /// Set device output: report completion with partial reductions.
    End(InvocationId),
    /// Controller output: start an invocation.
    ControllerBegin(InvocationId),
    /// Controller input: collect an end and its partials.
    ControllerEnd(InvocationId),
    /// Controller output without edges: run `main` until the next par_loop.
    Step,
    /// Aggregator input: `{inv}_begin` from its parent.
    TreeBegin(InvocationId),
    /// Aggregator output: `{inv}_begin` on to its children.
    TreeBeginForward(InvocationId),
    /// Aggregator input: `{inv}_end` from a child, combined into the
    /// partials.
    TreeEnd(InvocationId),
    /// Aggregator output: the combined `{inv}_end` to its parent.
    TreeEndForward(InvocationId),
}

impl PinRole {
    /// The invocation the pin serves; `None` for the controller's step.
    pub fn invocation(self) -> Option<InvocationId> {
        match self {
            PinRole::Begin(i)
            | PinRole::DatReadSend(i, _)
            | PinRole::ArgReadRecv(i, _)
            | PinRole::Execute(i)
            | PinRole::ArgWriteSend(i, _)
            | PinRole::DatWriteRecv { invocation: i, .. }
            | PinRole::End(i)
            | PinRole::ControllerBegin(i)
            | PinRole::ControllerEnd(i)
            | PinRole::TreeBegin(i)
            | PinRole::TreeBeginForward(i)
            | PinRole::TreeEnd(i)
            | PinRole::TreeEndForward(i) => Some(i),
            PinRole::Step => None,
        }
    }
}

/// An input or output pin with its handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// Its name.
    pub name: String,
    /// The id of its message type.
    pub message_type: String,
    /// What it does.
    pub role: PinRole,
    /// `OnReceive` (inputs) or `OnSend` (outputs), in C++.
    pub handler: String,
}

/// What one invocation does on the devices of one set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicePlan {
    /// The invocation.
    pub invocation: InvocationId,
    /// Its name.
    pub name: String,
    /// True when the set is the invocation's iteration set.
    pub iterates: bool,
    /// Dats on this set read indirectly, in mask bit order.
    pub read_sends: Vec<DatId>,
    /// Indirect reading arguments received (iteration set only).
    pub read_recvs: Vec<usize>,
    /// Indirect writing arguments sent (iteration set only), in mask bit
    /// order.
    pub write_sends: Vec<usize>,
    /// Dats on this set written indirectly, and whether writes add.
    pub write_recvs: Vec<(DatId, bool)>,
}

/// The kind of a device type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceKind {
    /// The controller `global`, which runs `main`.
    Controller,
    /// The elements of a set.
    Set(SetId),
    /// The aggregators of an invocation's completion and broadcast tree.
    Aggregator(InvocationId),
}

/// A device type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceType {
    /// Its id.
    pub id: String,
    /// What its devices are.
    pub kind: DeviceKind,
    /// Per-device constants.
    pub properties: Vec<Member>,
    /// Per-device mutable state.
    pub state: Vec<Member>,
    /// C++ shared by its handlers (the mask constants).
    pub shared_code: String,
    /// Input pins.
    pub inputs: Vec<Pin>,
    /// Output pins, in ready-bit order.
    pub outputs: Vec<Pin>,
    /// `ReadyToSend`, in C++.
    pub ready_to_send: String,
    /// `OnInit`, in C++.
    pub on_init: String,
    /// The invocations involving the set, in program order.
    pub plans: Vec<DevicePlan>,
}

/// An invocation as the graph sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvocationPlan {
    /// Its id in the program.
    pub id: InvocationId,
    /// Its name.
    pub name: String,
    /// The kernel.
    pub kernel: KernelId,
    /// The iteration set.
    pub set: SetId,
    /// Sets whose every element takes part (iteration set first).
    pub involved_sets: Vec<SetId>,
    /// Globals sent in `{inv}_begin`: READ, MIN and MAX ones.
    pub begin_globals: Vec<GlobalId>,
    /// Globals returned in `{inv}_end` and how they combine.
    pub end_globals: Vec<(GlobalId, AccessMode)>,
    /// The `INFO` globals, returned in `{inv}_end` after the end globals
    /// with the element that set them.
    pub infos: Vec<InfoPlan>,
    /// The fetch it is, for the invocation a `fetch` becomes
    /// ([`Invocation::is_fetch`](op2_analysis::model::Invocation::is_fetch));
    /// `None` for every par_loop. A fetch has no begin or end globals: its
    /// `{inv}_begin` carries a window's request, its `{inv}_end` one item.
    pub fetch: Option<FetchPlan>,
}

/// The values of a dat an item carries at most, in bytes: with the item's
/// number, 56 bytes, one hardware message (compilation.md, "A `fetch` on
/// POETS").
pub const ITEM_BYTES: u32 = 52;

/// How a `fetch DAT into GLOBAL;` travels (compilation.md, "A `fetch` on
/// POETS"): the dat's values are numbered as items of at most
/// [`ITEM_BYTES`], `parts` per element, item `k` being part `k mod parts`
/// of element `k div parts`, components `(k mod parts) × components …` of
/// it. The controller asks for them in windows of items
/// ([`FetchPlan::window`]) and stores each in its place in the global.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchPlan {
    /// The dat fetched.
    pub dat: DatId,
    /// The global it fills.
    pub global: GlobalId,
    /// The dat's type.
    pub scalar: ScalarType,
    /// Its dimension, `DIM`.
    pub dimension: u32,
    /// Components in an item: `min(DIM, ⌊52 / size of T⌋)`; the last part
    /// of an element may use fewer.
    pub components: u32,
    /// Items per element: `⌈DIM / components⌉`.
    pub parts: u32,
}

impl FetchPlan {
    /// The fetch of a dat of `dimension` components of `scalar` into `global`.
    pub fn new(dat: DatId, global: GlobalId, scalar: ScalarType, dimension: u32) -> FetchPlan {
        let dimension = dimension.max(1);
        let components = (ITEM_BYTES / CType::of(scalar).size()).min(dimension);
        FetchPlan {
            dat,
            global,
            scalar,
            dimension,
            components,
            parts: dimension.div_ceil(components),
        }
    }

    /// The items of a set of `elements` elements.
    pub fn items(&self, elements: u32) -> u64 {
        u64::from(elements) * u64::from(self.parts)
    }

    /// Items the controller asks for at once with fan limit `fan_limit`:
    /// K, the slots of an aggregator's buffer, so that no buffer can
    /// overflow; with the flat controller (0), all of them, `u32::MAX`.
    /// At most [`MAX_FAN_LIMIT`], which the command line enforces on K: a
    /// larger K from elsewhere asks for that many at once (fewer items in
    /// flight than the aggregators could hold is always safe).
    pub fn window(fan_limit: u32) -> u32 {
        if fan_limit == 0 {
            u32::MAX
        } else {
            fan_limit.clamp(2, MAX_FAN_LIMIT)
        }
    }
}

/// An `INFO` global of an invocation (`G INFO(R)`): sent in `{inv}_begin`
/// (it is among the begin globals), and returned in `{inv}_end` as
/// `global_G` and `element_G`, the element that set it or
/// [`NO_ELEMENT`](crate::names::NO_ELEMENT). Of two partials the one with
/// an element wins; of two with elements, the one whose `R` is strictly
/// better, and on a tie the lower element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfoPlan {
    /// The global `G` that records.
    pub global: GlobalId,
    /// Its argument's position.
    pub arg: usize,
    /// The MIN or MAX global `R` it follows.
    pub of: GlobalId,
    /// The position of `R`'s argument.
    pub of_arg: usize,
    /// `R`'s mode: MIN or MAX.
    pub mode: AccessMode,
}

/// How a block of `main` ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    /// Continue with another block.
    Goto(usize),
    /// Continue by the condition's truth.
    Branch {
        /// The condition.
        condition: hir::Expr,
        /// Block when true.
        then_block: usize,
        /// Block when false.
        else_block: usize,
    },
    /// Run an invocation to completion, then continue.
    ParLoop {
        /// The invocation.
        invocation: InvocationId,
        /// Block after it.
        next: usize,
    },
    /// The end of `main`: its end or `return` (status 0), or `exit` with
    /// its status.
    Exit(Option<hir::Expr>),
}

/// Straight-line statements of `main` and how they end.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Expressions, local declarations and prints, in order.
    pub statements: Vec<hir::Stmt>,
    /// Where control goes next.
    pub terminator: Terminator,
}

/// `main` as a state machine over blocks; block 0 is the entry.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Controller {
    /// The blocks.
    pub blocks: Vec<Block>,
    /// State member of each local of `main`, by local id.
    pub locals: Vec<String>,
}

/// The fan limit of `op2 build` and `op2 simulate` unless told otherwise:
/// no device has more than 16 edges on a begin or end pin (compilation.md
/// §11 says why 16).
pub const DEFAULT_FAN_LIMIT: u32 = 16;

/// The largest fan limit `op2 build` and `op2 simulate` take, 2^16: a
/// fetch's aggregators keep a buffer of K items (up to 56 bytes each), and
/// the writer makes its initialiser, so K sizes memory (`--fan-limit
/// 4294967295` asked for hundreds of gigabytes).
pub const MAX_FAN_LIMIT: u32 = 1 << 16;

/// A POETS graph type for one program.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphType {
    /// Its id.
    pub id: String,
    /// Graph properties: consts and set sizes.
    pub properties: Vec<Member>,
    /// C++ shared by all device types: helpers and kernel functions.
    pub shared_code: String,
    /// Message types.
    pub message_types: Vec<MessageType>,
    /// Device types: the controller first, then one per involved set.
    pub device_types: Vec<DeviceType>,
    /// Invocations that run (those whose kernel and set resolved).
    pub invocations: Vec<InvocationPlan>,
    /// `main`'s state machine.
    pub controller: Controller,
    /// The most edges any device may have on a pin for the begin and end
    /// messages (compilation.md §11); 0 for the flat controller of §6-§7.
    pub fan_limit: u32,
}

impl GraphType {
    /// The device type of a set, if the set takes part in an invocation.
    pub fn set_device_type(&self, set: SetId) -> Option<&DeviceType> {
        self.device_types
            .iter()
            .find(|d| d.kind == DeviceKind::Set(set))
    }

    /// The plan of an invocation.
    pub fn invocation(&self, id: InvocationId) -> Option<&InvocationPlan> {
        self.invocations.iter().find(|i| i.id == id)
    }

    /// The aggregator device type of an invocation's tree, if the graph
    /// has trees.
    pub fn tree_device_type(&self, id: InvocationId) -> Option<&DeviceType> {
        self.device_types
            .iter()
            .find(|d| d.kind == DeviceKind::Aggregator(id))
    }

    /// The message type with `id`.
    pub fn message_type(&self, id: &str) -> Option<&MessageType> {
        self.message_types.iter().find(|m| m.id == id)
    }
}
