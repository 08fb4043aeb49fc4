//! Translates one par_loop into Cranelift IR: a function that runs the
//! loop over elements `start..end` with the interpreter's exact semantics
//! (staging, the kernel inlined, store-back and global reductions, element
//! by element in order), over the typed flat buffers of `flat`.
//!
//! The function is `fn(table, start, end, out) -> i32`: `table` holds one
//! pointer per [`Slot`]; it returns 0, or `k + 1` when the loop stopped at
//! fault site `k`, with the element in `out[0]` and the offending index in
//! `out[1]`.
//!
//! Types are static here and dynamic in the interpreter: every expression
//! is checked to have, as a static type, the type its value has at run time
//! in the interpreter (the lowering makes conversions explicit, so they
//! agree for every program the analysis accepts); where they would not,
//! compilation declines and the interpreter runs the program.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    self, AbiParam, Block, FuncRef, InstBuilder, MemFlags, StackSlot, StackSlotData, StackSlotKind,
    Type, types,
};
use cranelift_frontend::{FunctionBuilder, Variable};
use op2_analysis::hir::{
    Body, Builtin, Expr, ExprKind, LocalInit, Place, Stmt, StmtKind, Var, literal_index,
};
use op2_analysis::model::{ArgKind, Invocation, Program};
use op2_analysis::value::{Value, common_type, promote};
use op2_syntax::TextRange;
use op2_syntax::ast::{AccessMode, BinaryOp, ScalarType, UnaryOp};

use super::flat::size_of;
use crate::reference::{IncPlace, inc_plan};

/// Why a loop is not compiled (the interpreter runs the program).
pub(crate) type Unsupported = String;

/// What one pointer of a loop's table points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Slot {
    /// A dat's buffer.
    Dat(usize),
    /// A map's targets.
    Map(usize),
    /// A global's 8-byte slots.
    Global(usize),
    /// A global's 8-byte slots as they were when the loop began: where
    /// the parameter of a MIN or MAX argument starts, for every element.
    GlobalStart(usize),
    /// A const's 8-byte slots (for indices not known when compiling).
    Const(usize),
}

/// A place where the loop can stop with a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SiteKind {
    /// Integer division or remainder by zero.
    Division,
    /// An index out of range for an array of `length`; `unsigned` when
    /// the index is an `ull`, whose bits past `i64::MAX` are a large
    /// unsigned value, not a negative one.
    Index {
        /// The array's length.
        length: usize,
        /// Whether the index's 64 bits are unsigned.
        unsigned: bool,
    },
    /// A loop that went past `MAX_KERNEL_ITERATIONS` in one kernel
    /// evaluation.
    LoopLimit,
    /// A shift by an `ull` amount over `i64::MAX` (the interpreter's
    /// "invalid operands").
    Operands,
}

/// A fault site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    pub kind: SiteKind,
    pub range: TextRange,
}

/// The names of the math functions the compiled code calls, with their
/// arity; `super::code` registers the Rust functions behind them.
pub(crate) const MATH: [(Builtin, &str, usize); 18] = [
    (Builtin::Fmin, "op2_fmin", 2),
    (Builtin::Fmax, "op2_fmax", 2),
    (Builtin::Pow, "op2_pow", 2),
    (Builtin::Exp, "op2_exp", 1),
    (Builtin::Log, "op2_log", 1),
    (Builtin::Log10, "op2_log10", 1),
    (Builtin::Sin, "op2_sin", 1),
    (Builtin::Cos, "op2_cos", 1),
    (Builtin::Tan, "op2_tan", 1),
    (Builtin::Asin, "op2_asin", 1),
    (Builtin::Acos, "op2_acos", 1),
    (Builtin::Atan, "op2_atan", 1),
    (Builtin::Atan2, "op2_atan2", 2),
    (Builtin::Floor, "op2_floor", 1),
    (Builtin::Ceil, "op2_ceil", 1),
    (Builtin::Round, "op2_round", 1),
    (Builtin::Sqrt, "op2_sqrt", 1),
    (Builtin::Fabs, "op2_fabs", 1),
];

/// What the compiler needs to know of the run: sizes and const values are
/// fixed for a run, so they are compiled in.
pub(crate) struct Context<'a> {
    pub program: &'a Program,
    pub set_sizes: &'a [usize],
    pub consts: &'a [Vec<Value>],
    /// Every INC argument of a loop starts at the INC identity and is
    /// added to its target after the kernel, none in place (the
    /// reference's run in another order, `Reference::in_another_order`).
    pub staged: bool,
}

/// Declares an imported math function (name, arity) in a function.
pub(crate) type DeclareMath<'a> = &'a mut dyn FnMut(&str, usize, &mut ir::Function) -> FuncRef;

/// The compiled shape of one loop.
#[derive(Debug)]
pub(crate) struct LoopShape {
    pub slots: Vec<Slot>,
    pub sites: Vec<Site>,
}

pub(crate) fn ir_type(ty: ScalarType) -> Type {
    match ty {
        ScalarType::Double => types::F64,
        ScalarType::Float => types::F32,
        ScalarType::Int | ScalarType::Uint => types::I32,
        ScalarType::Ll | ScalarType::Ull => types::I64,
        ScalarType::Bool => types::I8,
    }
}

fn signed(ty: ScalarType) -> bool {
    matches!(ty, ScalarType::Int | ScalarType::Ll)
}

/// The signature of every compiled loop.
pub(crate) fn loop_signature(call_conv: cranelift_codegen::isa::CallConv) -> ir::Signature {
    let mut signature = ir::Signature::new(call_conv);
    for _ in 0..4 {
        signature.params.push(AbiParam::new(types::I64));
    }
    signature.returns.push(AbiParam::new(types::I32));
    signature
}

/// Where a parameter's or local's components live.
#[derive(Clone)]
enum Storage {
    /// One variable per component (every access has a literal index, and
    /// there are at most [`UNROLLED`] components).
    Vars(Vec<Variable>),
    /// A stack array (some access computes its index, or the array is
    /// longer than [`UNROLLED`]).
    Stack(StackSlot),
}

/// Arrays longer than this live on the stack, and the work done for each
/// component of an argument or local (staging, storing back, zeroing) is a
/// counted loop in the code rather than one copy of the instructions per
/// component: the code and the time to compile it stay linear in the
/// dimension. (A `bool[65536]` argument as 65,536 variables made
/// Cranelift's SSA construction quadratic: minutes for one kernel.)
const UNROLLED: usize = 16;

/// The most stack the arrays of one compiled function may take (256 KiB):
/// a loop runs on the caller's thread or on a pool thread with a 4 MiB
/// stack (`native::mod`), so a larger frame could overrun it. A kernel
/// whose parameters and locals need more is not compiled; the interpreter,
/// which keeps them on the heap, runs the program.
pub(crate) const MAX_FRAME: usize = 256 << 10;

/// The most stack one compiled function's frame may take, its arrays
/// (at most [`MAX_FRAME`]) and the register allocator's spill slots
/// together (1 MiB): a kernel with many values live at once spills each to
/// a slot of its own (11 to 16 bytes per value, measured), which
/// [`MAX_FRAME`] does not count. A function whose compiled frame is larger
/// is not used; the interpreter, which keeps everything on the heap, runs
/// it.
pub(crate) const MAX_STACK: usize = 1 << 20;

/// Functions of more instructions than this (16,384) are compiled with
/// Cranelift's single-pass register allocator, whose time is linear in the
/// function; smaller ones with the backtracking allocator, whose code is
/// better and whose time grows with the square of the values live at once
/// (a kernel of 8,000 locals all live at its end: 1.9 s, 16,000: 7.8 s).
/// OP2's airfoil loops take about 630; the largest of the test suite 2,400.
pub(crate) const LARGE_FUNCTION: usize = 16_384;

/// The most basic blocks one compiled loop or handler may have. Cranelift's
/// compile of a function grows faster than its blocks (a kernel of 28,000
/// chained `?:`, 640 KB of text, asked for 4.7 GB), so a larger body is
/// not compiled and the interpreter, whose cost is linear, runs it. Every
/// kernel of OP2's applications takes a few hundred at most.
pub(crate) const MAX_BLOCKS: usize = 8192;

/// A component of an array while code is generated: its index as a value,
/// and as a number when it is known at compile time (an unrolled step).
#[derive(Clone, Copy)]
struct Component {
    at: ir::Value,
    fixed: Option<usize>,
}

#[derive(Clone)]
struct Array {
    storage: Storage,
    ty: ScalarType,
    length: usize,
}

/// A value with its C type.
#[derive(Clone, Copy)]
struct Typed {
    value: ir::Value,
    ty: ScalarType,
}

struct LoopTargets {
    exit: Block,
    next: Block,
}

const FLAGS: MemFlags = MemFlags::trusted();

struct Gen<'a, 'f> {
    b: FunctionBuilder<'f>,
    cx: &'a Context<'a>,
    declare_math: DeclareMath<'a>,
    params: Vec<Array>,
    locals: Vec<Array>,
    slots: Vec<Slot>,
    slot_index: HashMap<Slot, usize>,
    /// Base pointers loaded in the entry block, per table slot.
    bases: Vec<ir::Value>,
    sites: Vec<Site>,
    loops: Vec<LoopTargets>,
    /// Where `return` goes: the store-back of the current element.
    finish: Block,
    fault: Block,
    fault_code: Variable,
    fault_index: Variable,
    /// Loop iterations of the current kernel evaluation.
    steps: Variable,
    math: HashMap<&'static str, FuncRef>,
    lengths: Vec<i32>,
    /// The current block ends in `break`, `continue` or `return`.
    ended: bool,
}

/// Which parameters and locals are indexed by a computed expression.
fn computed_indices(body: &Body, params: usize) -> (Vec<bool>, Vec<bool>) {
    let mut p = vec![false; params];
    let mut l = vec![false; body.locals.len()];
    let mut mark = |place: &Place| {
        let computed = place
            .index
            .as_deref()
            .is_some_and(|i| literal_index(i).is_none());
        if computed {
            match place.var {
                Var::Param(k) => {
                    if let Some(x) = p.get_mut(k as usize) {
                        *x = true;
                    }
                }
                Var::Local(id) => {
                    if let Some(x) = l.get_mut(id.0 as usize) {
                        *x = true;
                    }
                }
                Var::Const(_) | Var::Global(_) => {}
            }
        }
    };
    for stmt in &body.statements {
        op2_analysis::hir::walk_stmt_exprs(stmt, &mut |e| match &e.kind {
            ExprKind::Load(place) | ExprKind::Update { place, .. } => mark(place),
            ExprKind::Assign { place, .. } => mark(place),
            _ => {}
        });
    }
    (p, l)
}

/// A function under construction: the generator over the kernel's
/// parameters and locals, the resolved arguments, the function's four
/// parameters (`table`, `start`, `end`, `out`) and its element variable.
struct Started<'a, 'f> {
    g: Gen<'a, 'f>,
    args: Vec<op2_analysis::model::Arg>,
    params: [ir::Value; 4],
    element: Variable,
}

/// Checks `invocation`'s arguments against what they pass and starts a
/// function of [`loop_signature`] with the kernel's parameters and locals
/// laid out: what a whole loop and a single kernel call share.
fn start_function<'a, 'f>(
    cx: &'a Context<'a>,
    declare_math: DeclareMath<'a>,
    invocation: &Invocation,
    function: &'f mut ir::Function,
    builder_context: &'f mut cranelift_frontend::FunctionBuilderContext,
) -> Result<(Started<'a, 'f>, &'a Body), Unsupported> {
    let program = cx.program;
    let kernel_id = invocation.kernel.ok_or("the kernel does not resolve")?;
    invocation.set.ok_or("the set does not resolve")?;
    if invocation.args.iter().any(Option::is_none) {
        return Err("an argument does not resolve".into());
    }
    let kernel = &program.kernels[kernel_id.index()];
    let body: &Body = &kernel.body;
    let args: Vec<_> = invocation.resolved_args().map(|(_, a)| a.clone()).collect();
    for arg in &args {
        let declared = match arg.kind {
            ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. } => {
                Some(program.dats[dat.index()].ty)
            }
            ArgKind::Global(global) | ArgKind::Info { global, .. } => {
                Some(program.globals[global.index()].ty)
            }
            ArgKind::Const(id) => {
                let values = &cx.consts[id.index()];
                if values.iter().any(|v| v.ty() != arg.ty.scalar)
                    || values.len() != arg.ty.dimension as usize
                {
                    return Err("a const's values do not have the argument's type".into());
                }
                None
            }
            ArgKind::Len(_) | ArgKind::Index(_) => {
                if arg.ty.scalar != ScalarType::Int || arg.ty.dimension != 1 {
                    return Err("`len` or `idx` passed as something other than an int".into());
                }
                None
            }
        };
        if let Some(declared) = declared
            && declared != arg.ty
        {
            return Err(format!(
                "an argument of type {} passes data of type {declared}",
                arg.ty
            ));
        }
    }
    // As `State::lengths`: sizes as C `int`s.
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    let lengths: Vec<i32> = cx.set_sizes.iter().map(|&n| n as i32).collect();
    let (computed_params, computed_locals) = computed_indices(body, args.len());
    // Arrays that live on the stack (`new_array`), with the `INFO` starts
    // of `compile_loop`, must fit a frame that every thread running
    // compiled code has room for.
    let on_stack = |ty: ScalarType, length: usize, computed: bool| {
        if computed || length > UNROLLED {
            length.saturating_mul(size_of(ty))
        } else {
            0
        }
    };
    let frame = args
        .iter()
        .enumerate()
        .map(|(k, arg)| {
            let length = arg.ty.dimension as usize;
            let info = if matches!(arg.kind, ArgKind::Info { .. }) {
                on_stack(arg.ty.scalar, length, false)
            } else {
                0
            };
            on_stack(arg.ty.scalar, length, computed_params[k]).saturating_add(info)
        })
        .chain(body.locals.iter().enumerate().map(|(k, local)| {
            on_stack(
                local.ty,
                local.dimension.unwrap_or(1) as usize,
                computed_locals[k],
            )
        }))
        .fold(0usize, usize::saturating_add);
    if frame > MAX_FRAME {
        return Err(format!(
            "the kernel's arrays need {frame} bytes of stack, more than the compiled engine's {MAX_FRAME}"
        ));
    }

    let mut b = FunctionBuilder::new(function, builder_context);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let function_params = [
        b.block_params(entry)[0],
        b.block_params(entry)[1],
        b.block_params(entry)[2],
        b.block_params(entry)[3],
    ];

    let array = new_array;
    let params: Vec<Array> = args
        .iter()
        .enumerate()
        .map(|(k, arg)| {
            array(
                &mut b,
                arg.ty.scalar,
                arg.ty.dimension as usize,
                computed_params[k],
            )
        })
        .collect();
    let locals: Vec<Array> = body
        .locals
        .iter()
        .enumerate()
        .map(|(k, local)| {
            array(
                &mut b,
                local.ty,
                local.dimension.unwrap_or(1) as usize,
                computed_locals[k],
            )
        })
        .collect();
    let fault_code = b.declare_var(types::I32);
    let fault_index = b.declare_var(types::I64);
    let element = b.declare_var(types::I64);
    let steps = b.declare_var(types::I64);
    let finish = b.create_block();
    let fault = b.create_block();
    let g = Gen {
        b,
        cx,
        declare_math,
        params,
        locals,
        slots: Vec::new(),
        slot_index: HashMap::new(),
        bases: Vec::new(),
        sites: Vec::new(),
        loops: Vec::new(),
        finish,
        fault,
        fault_code,
        fault_index,
        steps,
        math: HashMap::new(),
        lengths,
        ended: false,
    };
    Ok((
        Started {
            g,
            args,
            params: function_params,
            element,
        },
        body,
    ))
}

/// A parameter's or local's storage: variables, or a stack array when it
/// is `computed` (indexed by a computed index) or long.
fn new_array(b: &mut FunctionBuilder<'_>, ty: ScalarType, length: usize, computed: bool) -> Array {
    let storage = if computed || length > UNROLLED {
        let bytes = u32::try_from(length * size_of(ty))
            .unwrap_or(u32::MAX)
            .max(1);
        Storage::Stack(b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            bytes,
            3,
        )))
    } else {
        Storage::Vars((0..length).map(|_| b.declare_var(ir_type(ty))).collect())
    };
    Array {
        storage,
        ty,
        length,
    }
}

/// The consts passed whole as long arguments: their slots hold the values
/// that the staging loop copies.
fn long_consts(args: &[op2_analysis::model::Arg], needed: &mut Vec<Slot>) {
    for arg in args {
        if let ArgKind::Const(id) = arg.kind
            && arg.ty.dimension as usize > UNROLLED
        {
            needed.push(Slot::Const(id.index()));
        }
    }
}

/// Loads the base pointer of each of `needed`'s slots from `table` once, in
/// the entry block, deduplicated.
fn load_bases(g: &mut Gen<'_, '_>, table: ir::Value, needed: Vec<Slot>) -> Result<(), Unsupported> {
    for slot in needed {
        if g.slot_index.contains_key(&slot) {
            continue;
        }
        let offset = i32::try_from(g.slots.len() * 8).map_err(|_| "too many arguments")?;
        let base = g.b.ins().load(types::I64, FLAGS, table, offset);
        g.slot_index.insert(slot, g.slots.len());
        g.slots.push(slot);
        g.bases.push(base);
    }
    Ok(())
}

/// The consts `body` indexes by a computed index: their slots hold the
/// values the code reads at run time.
fn computed_consts(body: &Body, needed: &mut Vec<Slot>) {
    for stmt in &body.statements {
        op2_analysis::hir::walk_stmt_exprs(stmt, &mut |e| {
            if let ExprKind::Load(place) = &e.kind
                && let Var::Const(id) = place.var
                && place
                    .index
                    .as_deref()
                    .is_some_and(|i| literal_index(i).is_none())
            {
                needed.push(Slot::Const(id.index()));
            }
        });
    }
}

/// The staged value of component `c` of an argument that passes a constant
/// of the run (a const or `len`), or `None` for one that passes data.
fn stage_constant(
    g: &mut Gen<'_, '_>,
    arg: &op2_analysis::model::Arg,
    c: Component,
) -> Result<Option<ir::Value>, Unsupported> {
    Ok(match arg.kind {
        ArgKind::Const(id) => match c.fixed {
            Some(c) => {
                let v = g.cx.consts[id.index()][c];
                Some(g.constant(v))
            }
            None => {
                // A long const, copied from its slot (see `long_consts`).
                let slot = Slot::Const(id.index());
                let base = *g
                    .slot_index
                    .get(&slot)
                    .map(|&k| &g.bases[k])
                    .ok_or("a long const without its slot")?;
                let (address, offset) = g.slot_address(base, 0, c)?;
                Some(
                    g.b.ins()
                        .load(ir_type(arg.ty.scalar), FLAGS, address, offset),
                )
            }
        },
        ArgKind::Len(set) => {
            let v = g.lengths[set.index()];
            Some(g_iconst32(&mut g.b, v))
        }
        _ => None,
    })
}

/// Builds the IR of `invocation` into `function`.
pub(crate) fn compile_loop<'a>(
    cx: &'a Context<'a>,
    declare_math: DeclareMath<'a>,
    invocation: &Invocation,
    function: &mut ir::Function,
    builder_context: &mut cranelift_frontend::FunctionBuilderContext,
) -> Result<LoopShape, Unsupported> {
    let program = cx.program;
    let (started, body) = start_function(cx, declare_math, invocation, function, builder_context)?;
    let Started {
        mut g,
        args,
        params: [table, start, end, out],
        element,
    } = started;

    // Base pointers, loaded once: every slot the loop needs is known from
    // its arguments and the consts its body indexes by a computed index.
    let mut needed = Vec::new();
    for arg in &args {
        match arg.kind {
            ArgKind::DirectDat(dat) => needed.push(Slot::Dat(dat.index())),
            ArgKind::IndirectDat { dat, map, .. } => {
                needed.push(Slot::Dat(dat.index()));
                needed.push(Slot::Map(map.index()));
            }
            ArgKind::Global(global) | ArgKind::Info { global, .. } => {
                needed.push(Slot::Global(global.index()));
                if let AccessMode::Min | AccessMode::Max = arg.mode {
                    needed.push(Slot::GlobalStart(global.index()));
                }
            }
            ArgKind::Index(Some((map, _))) => needed.push(Slot::Map(map.index())),
            ArgKind::Const(_) | ArgKind::Len(_) | ArgKind::Index(None) => {}
        }
    }
    computed_consts(body, &mut needed);
    long_consts(&args, &mut needed);
    load_bases(&mut g, table, needed)?;
    // Every element's copy of an `INFO` global starts from its value when
    // the loop began (a loop with one runs in a single call over all its
    // elements: `plan` makes it sequential).
    let mut info_starts: HashMap<usize, Array> = HashMap::new();
    for (k, arg) in args.iter().enumerate() {
        if let ArgKind::Info { global, .. } = arg.kind {
            let base = g.base(Slot::Global(global.index()));
            let ty = arg.ty.scalar;
            let length = arg.ty.dimension as usize;
            let start = new_array(&mut g.b, ty, length, false);
            g.each_component(0..length, |g, c| {
                let (address, offset) = g.slot_address(base, 0, c)?;
                let value = g.b.ins().load(ir_type(ty), FLAGS, address, offset);
                g.store_into(&start, c, value)
            })?;
            info_starts.insert(k, start);
        }
    }
    g.b.def_var(element, start);
    g.clear_fault();
    let header = g.b.create_block();
    let body_block = g.b.create_block();
    let done = g.b.create_block();
    g.b.ins().jump(header, &[]);

    // header: while element < end
    g.switch(header);
    let e = g.b.use_var(element);
    let more = g.b.ins().icmp(IntCC::SignedLessThan, e, end);
    g.b.ins().brif(more, body_block, &[], done, &[]);

    g.switch(body_block);
    let e = g.b.use_var(element);
    // Rows reached through maps, loaded once per element.
    let mut rows: HashMap<(usize, u32), ir::Value> = HashMap::new();
    let mut row_of = |g: &mut Gen<'_, '_>, kind: ArgKind| -> ir::Value {
        match kind {
            ArgKind::IndirectDat { map, index, .. } | ArgKind::Index(Some((map, index))) => {
                *rows.entry((map.index(), index)).or_insert_with(|| {
                    let arity = i64::from(program.maps[map.index()].arity);
                    let base = g.base(Slot::Map(map.index()));
                    let at = g.b.ins().imul_imm(e, arity);
                    let at = g.b.ins().iadd_imm(at, i64::from(index));
                    let at = g.b.ins().ishl_imm(at, 2);
                    let address = g.b.ins().iadd(base, at);
                    let target = g.b.ins().load(types::I32, FLAGS, address, 0);
                    g.b.ins().uextend(types::I64, target)
                })
            }
            _ => e,
        }
    };
    // Which floating INC arguments work on their target in place, as
    // `reference::inc_plan` decides for the loop and
    // `reference::in_place_args` per element: `Fresh` where no earlier
    // argument of the same dat is to be compared, `Staged` where the plan
    // says so, and `Shared(flag)` where the element's rows decide at run
    // time (`flag` set when one of the at most `MAX_IN_PLACE_INC - 1`
    // earlier arguments of the dat the plan names has this one's row: it
    // starts at the INC identity and adds, branch-free by `select`).
    let plan = inc_plan(&args, cx.staged);
    let mut place: Vec<InPlace> = Vec::with_capacity(args.len());
    let mut inc_rows: Vec<Option<ir::Value>> = vec![None; args.len()];
    for (k, arg) in args.iter().enumerate() {
        let here = match (&plan[k], arg.kind) {
            (IncPlace::Staged, _) => InPlace::Staged,
            (IncPlace::InPlace { unless }, ArgKind::DirectDat(_) | ArgKind::IndirectDat { .. }) => {
                let row = row_of(&mut g, arg.kind);
                inc_rows[k] = Some(row);
                let mut flag: Option<ir::Value> = None;
                for &j in unless {
                    let Some(earlier_row) = inc_rows[j] else {
                        continue;
                    };
                    let same = g.b.ins().icmp(IntCC::Equal, earlier_row, row);
                    flag = Some(match flag {
                        Some(f) => g.b.ins().bor(f, same),
                        None => same,
                    });
                }
                match flag {
                    Some(flag) => InPlace::Shared(flag),
                    None => InPlace::Fresh,
                }
            }
            (IncPlace::InPlace { .. }, _) => InPlace::Fresh,
        };
        place.push(here);
    }
    // Stage the arguments.
    for (k, arg) in args.iter().enumerate() {
        let ty = arg.ty.scalar;
        let length = arg.ty.dimension as usize;
        let param = g.array(Var::Param(k as u32))?.clone();
        let here = place[k];
        // From the INC identity for an INC argument that does not work in
        // place; from zero for an indirect WRITE (`reference`'s staging).
        let staged = arg.mode == AccessMode::Inc && here == InPlace::Staged;
        let written =
            arg.mode == AccessMode::Write && matches!(arg.kind, ArgKind::IndirectDat { .. });
        // The row, worked out before any loop over the components.
        let row = match arg.kind {
            ArgKind::DirectDat(_) | ArgKind::IndirectDat { .. } if !staged && !written => {
                row_of(&mut g, arg.kind)
            }
            ArgKind::Index(_) => row_of(&mut g, arg.kind),
            _ => e,
        };
        let info_start = info_starts.get(&k);
        g.each_component(0..length, |g, c| {
            let value = match arg.kind {
                ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. } => {
                    if staged {
                        g.inc_identity(ty)
                    } else if written {
                        g.zero(ty)
                    } else {
                        let address = g.dat_address(dat.index(), row, length, c, ty);
                        let value = g.b.ins().load(ir_type(ty), FLAGS, address, 0);
                        match here {
                            InPlace::Shared(flag) => {
                                let identity = g.inc_identity(ty);
                                g.b.ins().select(flag, identity, value)
                            }
                            _ => value,
                        }
                    }
                }
                ArgKind::Info { .. } => {
                    let start =
                        info_start.ok_or("an `INFO` argument without its starting value")?;
                    g.load_from(start, c)?
                }
                ArgKind::Global(global) => {
                    if staged {
                        g.inc_identity(ty)
                    } else {
                        // MIN and MAX from the value when the loop began
                        // (`reference`'s staging), whatever the elements
                        // before have combined into the global since.
                        let slot = match arg.mode {
                            AccessMode::Min | AccessMode::Max => Slot::GlobalStart(global.index()),
                            _ => Slot::Global(global.index()),
                        };
                        let base = g.base(slot);
                        let (address, offset) = g.slot_address(base, 0, c)?;
                        g.b.ins().load(ir_type(ty), FLAGS, address, offset)
                    }
                }
                ArgKind::Index(_) => {
                    // Element indices are below 2^24: the low 32 bits are
                    // the `int`.
                    g.b.ins().ireduce(types::I32, row)
                }
                ArgKind::Const(_) | ArgKind::Len(_) => {
                    stage_constant(g, arg, c)?.ok_or("an argument that passes no constant")?
                }
            };
            g.store_into(&param, c, value)
        })?;
    }
    g.kernel(body)?;
    // Store the results back.
    let e = g.b.use_var(element);
    // Which `INFO` globals this element sets: those whose MIN or MAX global
    // it improves, judged before anything is combined.
    let mut improved: HashMap<usize, ir::Value> = HashMap::new();
    for (k, arg) in args.iter().enumerate() {
        if let ArgKind::Info { of, .. } = arg.kind {
            let reference = &args[of as usize];
            let ArgKind::Global(global) = reference.kind else {
                return Err("`INFO` follows something other than a global".into());
            };
            let ty = reference.ty.scalar;
            let value = g.load_param(of as usize, 0)?;
            let base = g.base(Slot::Global(global.index()));
            let old = g.b.ins().load(ir_type(ty), FLAGS, base, 0);
            let better = g.better(reference.mode, value, old, ty)?;
            improved.insert(k, better);
        }
    }
    for (k, arg) in args.iter().enumerate() {
        let ty = arg.ty.scalar;
        let length = arg.ty.dimension as usize;
        match (arg.kind, arg.mode) {
            (
                ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. },
                mode @ (AccessMode::Write | AccessMode::Rw | AccessMode::Inc),
            ) => {
                // The row is loaded from the map again rather than kept
                // from staging: kept live across the kernel, the rows of
                // `res_calc` cost spills, 3% more instructions in its loop
                // (callgrind, 7,200-cell airfoil, 2026-11-28).
                let row = match arg.kind {
                    ArgKind::IndirectDat { map, index, .. } => {
                        let arity = i64::from(program.maps[map.index()].arity);
                        let base = g.base(Slot::Map(map.index()));
                        let at = g.b.ins().imul_imm(e, arity);
                        let at = g.b.ins().iadd_imm(at, i64::from(index));
                        let at = g.b.ins().ishl_imm(at, 2);
                        let address = g.b.ins().iadd(base, at);
                        let target = g.b.ins().load(types::I32, FLAGS, address, 0);
                        g.b.ins().uextend(types::I64, target)
                    }
                    _ => e,
                };
                let param = g.array(Var::Param(k as u32))?.clone();
                let here = place[k];
                g.each_component(0..length, |g, c| {
                    let value = g.load_from(&param, c)?;
                    let address = g.dat_address(dat.index(), row, length, c, ty);
                    let stored = match (mode, here) {
                        (AccessMode::Inc, InPlace::Fresh) => value,
                        (AccessMode::Inc, InPlace::Shared(flag)) => {
                            let old = g.b.ins().load(ir_type(ty), FLAGS, address, 0);
                            let sum = g.add(old, value, ty);
                            g.b.ins().select(flag, sum, value)
                        }
                        (AccessMode::Inc, _) => {
                            let old = g.b.ins().load(ir_type(ty), FLAGS, address, 0);
                            g.add(old, value, ty)
                        }
                        _ => value,
                    };
                    g.b.ins().store(FLAGS, stored, address, 0);
                    Ok(())
                })?;
            }
            (
                ArgKind::Global(global),
                mode @ (AccessMode::Inc | AccessMode::Min | AccessMode::Max),
            ) => {
                let base = g.base(Slot::Global(global.index()));
                let param = g.array(Var::Param(k as u32))?.clone();
                g.each_component(0..length, |g, c| {
                    let value = g.load_from(&param, c)?;
                    let (address, offset) = g.slot_address(base, 0, c)?;
                    let old = g.b.ins().load(ir_type(ty), FLAGS, address, offset);
                    let new = match mode {
                        AccessMode::Inc if place[k] == InPlace::Fresh => value,
                        AccessMode::Inc => g.add(old, value, ty),
                        _ => {
                            let better = g.better(mode, value, old, ty)?;
                            g.b.ins().select(better, value, old)
                        }
                    };
                    g.b.ins().store(FLAGS, new, address, offset);
                    Ok(())
                })?;
            }
            (ArgKind::Info { global, .. }, _) => {
                let base = g.base(Slot::Global(global.index()));
                let better = improved[&k];
                let param = g.array(Var::Param(k as u32))?.clone();
                g.each_component(0..length, |g, c| {
                    let value = g.load_from(&param, c)?;
                    let (address, offset) = g.slot_address(base, 0, c)?;
                    let old = g.b.ins().load(ir_type(ty), FLAGS, address, offset);
                    let new = g.b.ins().select(better, value, old);
                    g.b.ins().store(FLAGS, new, address, offset);
                    Ok(())
                })?;
            }
            _ => {}
        }
    }
    let e = g.b.use_var(element);
    let next = g.b.ins().iadd_imm(e, 1);
    g.b.def_var(element, next);
    g.b.ins().jump(header, &[]);

    g.switch(done);
    Ok(g.end_function(element, out))
}

/// How a floating INC argument of a compiled loop starts and ends (see
/// `reference::in_place_plan` and `reference::in_place_args`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InPlace {
    /// From the target's value, stored back.
    Fresh,
    /// Not in place: an INC argument starts at the INC identity (`-0.0`
    /// for a floating one) and is added to its target (an integer INC
    /// always, a floating one where the plan says so); any other argument
    /// is staged as usual.
    Staged,
    /// As `Staged` where the flag is set (an earlier argument's row is the
    /// element's row of this one), else as `Fresh`.
    Shared(ir::Value),
}

/// How a simulator's execute handler reaches one argument: where its row
/// of 8-byte slots is for the element (`super::code::KernelCall::bind`),
/// how the parameter starts from it, and what goes back into it after the
/// kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HandlerArg {
    pub row: RowSource,
    pub start: RowStart,
    pub back: RowBack,
}

/// Where a handler argument's row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowSource {
    /// Nowhere: a const or `len`, compiled in.
    None,
    /// Row `element` of column `column` of the call's column group
    /// `group`, `width` slots per element.
    Column { group: u8, column: u32, width: u32 },
    /// Slot `k` of the call's extra slots (an index the caller worked out).
    Extra(u32),
}

/// How a handler argument's parameter starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowStart {
    /// From the row.
    Load,
    /// At zero, the row left alone (a direct dat's INC temporary).
    Zero,
    /// At zero, the row zeroed too (an INC landing pad or global pad).
    ZeroRow,
}

/// What a handler does with an argument's row after the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowBack {
    Keep,
    Copy,
    Add,
    /// MIN or MAX: the parameter where it is better.
    Combine(AccessMode),
}

/// Builds the IR of one execute handler of `invocation` into `function`,
/// for the simulator: in argument order, each argument's parameter starts
/// from its row as `handler` says (the table, the function's first
/// parameter, holds per argument the first row of its column, or its
/// extra slot, bound once for every call: the code finds the element's
/// row itself, at `element × width` slots on; zeroed rows are zeroed
/// then), the kernel runs, and each row takes back what `handler` says, in
/// argument order. `start` is the table of the const slots the body
/// indexes by a computed index (the returned shape's `slots`, all
/// [`Slot::Const`]), `end` the element (for a fault's report). Consts and
/// `len` are compiled in as `compile_loop` does.
pub(crate) fn compile_handler<'a>(
    cx: &'a Context<'a>,
    declare_math: DeclareMath<'a>,
    invocation: &Invocation,
    handler: &[HandlerArg],
    function: &mut ir::Function,
    builder_context: &mut cranelift_frontend::FunctionBuilderContext,
) -> Result<LoopShape, Unsupported> {
    let (started, body) = start_function(cx, declare_math, invocation, function, builder_context)?;
    let Started {
        mut g,
        args,
        params: [rows, consts, at, out],
        element,
    } = started;
    if handler.len() != args.len() {
        return Err("internal error: a handler without one row per argument".into());
    }
    let mut needed = Vec::new();
    computed_consts(body, &mut needed);
    long_consts(&args, &mut needed);
    load_bases(&mut g, consts, needed)?;
    g.b.def_var(element, at);
    g.clear_fault();
    let mut row_of = Vec::with_capacity(args.len());
    for (k, (arg, access)) in args.iter().zip(handler).enumerate() {
        let passes_data = !matches!(arg.kind, ArgKind::Const(_) | ArgKind::Len(_));
        row_of.push(match access.row {
            RowSource::Column { width, .. } if width != arg.ty.dimension => {
                return Err("internal error: a row narrower than its argument".into());
            }
            RowSource::None if passes_data => {
                return Err("internal error: an argument that passes data without a row".into());
            }
            RowSource::None => None,
            // The column's first row, bound once for every call: the
            // element's row is `width` slots on per element.
            RowSource::Column { width, .. } => {
                let base = g.b.ins().load(types::I64, FLAGS, rows, offset8(k)?);
                let stride = i64::from(width) * 8;
                let offset = g.b.ins().imul_imm(at, stride);
                Some(g.b.ins().iadd(base, offset))
            }
            // The extra slot itself.
            RowSource::Extra(_) => Some(g.b.ins().load(types::I64, FLAGS, rows, offset8(k)?)),
        });
    }
    for (k, arg) in args.iter().enumerate() {
        let param = g.array(Var::Param(k as u32))?.clone();
        let ty = arg.ty.scalar;
        let (row, start) = (row_of[k], handler[k].start);
        g.each_component(0..arg.ty.dimension as usize, |g, c| {
            let value = match (stage_constant(g, arg, c)?, row) {
                (Some(value), _) => value,
                (None, None) => return Err("an argument without its row".into()),
                (None, Some(row)) => {
                    let (address, offset) = g.slot_address(row, 0, c)?;
                    match start {
                        RowStart::Load => g.b.ins().load(ir_type(ty), FLAGS, address, offset),
                        RowStart::Zero => g.inc_identity(ty),
                        RowStart::ZeroRow => {
                            let slot =
                                crate::native::flat::to_slot(crate::reference::inc_identity(ty));
                            let bits = g.b.ins().iconst(types::I64, slot.cast_signed());
                            g.b.ins().store(FLAGS, bits, address, offset);
                            g.inc_identity(ty)
                        }
                    }
                }
            };
            g.store_into(&param, c, value)
        })?;
    }
    g.kernel(body)?;
    for (k, arg) in args.iter().enumerate() {
        let (Some(row), back) = (row_of[k], handler[k].back) else {
            continue;
        };
        if back == RowBack::Keep {
            continue;
        }
        let param = g.array(Var::Param(k as u32))?.clone();
        let ty = arg.ty.scalar;
        g.each_component(0..arg.ty.dimension as usize, |g, c| {
            let value = g.load_from(&param, c)?;
            let (address, offset) = g.slot_address(row, 0, c)?;
            let new = match back {
                RowBack::Keep | RowBack::Copy => value,
                RowBack::Add => {
                    let old = g.b.ins().load(ir_type(ty), FLAGS, address, offset);
                    g.add(old, value, ty)
                }
                RowBack::Combine(mode) => {
                    let old = g.b.ins().load(ir_type(ty), FLAGS, address, offset);
                    let better = g.better(mode, value, old, ty)?;
                    g.b.ins().select(better, value, old)
                }
            };
            g.b.ins().store(FLAGS, new, address, offset);
            Ok(())
        })?;
    }
    Ok(g.end_function(element, out))
}

fn g_iconst32(b: &mut FunctionBuilder<'_>, v: i32) -> ir::Value {
    b.ins().iconst(types::I32, i64::from(v))
}

fn offset8(c: usize) -> Result<i32, Unsupported> {
    i32::try_from(c * 8).map_err(|_| "a global or const too long to compile".into())
}

impl Gen<'_, '_> {
    /// Whether `value` is strictly better than `old` for a MIN or MAX
    /// reduction (the interpreter's `combine` and `improves`, with their
    /// tie between the zeros of a `float` or `double`), as a truth value.
    fn better(
        &mut self,
        mode: AccessMode,
        value: ir::Value,
        old: ir::Value,
        ty: ScalarType,
    ) -> Result<ir::Value, Unsupported> {
        let op = if mode == AccessMode::Min {
            BinaryOp::Lt
        } else {
            BinaryOp::Gt
        };
        let v = Typed { value, ty };
        let t = Typed { value: old, ty };
        let better = self.binary(op, v, t, TextRange::default())?;
        let better = self.truth(better);
        let bits = match ty {
            ScalarType::Double => types::I64,
            ScalarType::Float => types::I32,
            _ => return Ok(better),
        };
        // Equal, so both zeros where the signs differ: MIN takes `-0.0`
        // over `+0.0`, MAX `+0.0` over `-0.0`.
        let equal = self.b.ins().fcmp(FloatCC::Equal, value, old);
        let value_bits = self.b.ins().bitcast(bits, MemFlags::new(), value);
        let old_bits = self.b.ins().bitcast(bits, MemFlags::new(), old);
        let value_negative = self.b.ins().icmp_imm(IntCC::SignedLessThan, value_bits, 0);
        let old_negative = self.b.ins().icmp_imm(IntCC::SignedLessThan, old_bits, 0);
        let signs = if mode == AccessMode::Min {
            self.b.ins().band_not(value_negative, old_negative)
        } else {
            self.b.ins().band_not(old_negative, value_negative)
        };
        let tie = self.b.ins().band(equal, signs);
        Ok(self.b.ins().bor(better, tie))
    }

    /// No fault yet.
    fn clear_fault(&mut self) {
        let zero32 = g_iconst32(&mut self.b, 0);
        self.b.def_var(self.fault_code, zero32);
        let zero64 = self.b.ins().iconst(types::I64, 0);
        self.b.def_var(self.fault_index, zero64);
    }

    /// The kernel's statements, its loops counted from 0, ending in the
    /// `finish` block (where `return` goes too), which is current after.
    fn kernel(&mut self, body: &Body) -> Result<(), Unsupported> {
        let zero = self.b.ins().iconst(types::I64, 0);
        self.b.def_var(self.steps, zero);
        for stmt in &body.statements {
            self.stmt(stmt)?;
        }
        if !self.ended {
            self.b.ins().jump(self.finish, &[]);
        }
        self.switch(self.finish);
        Ok(())
    }

    /// Returns 0 from the current block, and fills the fault exit: the
    /// element in `out[0]`, the offending index in `out[1]`, the site code
    /// returned. Finishes the function.
    fn end_function(mut self, element: Variable, out: ir::Value) -> LoopShape {
        let ok = g_iconst32(&mut self.b, 0);
        self.b.ins().return_(&[ok]);
        self.switch(self.fault);
        let e = self.b.use_var(element);
        self.b.ins().store(FLAGS, e, out, 0);
        let index = self.b.use_var(self.fault_index);
        self.b.ins().store(FLAGS, index, out, 8);
        let code = self.b.use_var(self.fault_code);
        self.b.ins().return_(&[code]);
        self.b.seal_all_blocks();
        let Gen {
            b, slots, sites, ..
        } = self;
        b.finalize();
        LoopShape { slots, sites }
    }

    fn base(&self, slot: Slot) -> ir::Value {
        self.bases[self.slot_index[&slot]]
    }

    fn dat_address(
        &mut self,
        dat: usize,
        row: ir::Value,
        dimension: usize,
        component: Component,
        ty: ScalarType,
    ) -> ir::Value {
        let base = self.base(Slot::Dat(dat));
        let size = size_of(ty) as i64;
        let at = self.b.ins().imul_imm(row, dimension as i64 * size);
        let at = match component.fixed {
            Some(c) => self.b.ins().iadd_imm(at, c as i64 * size),
            None => {
                let offset = self.b.ins().imul_imm(component.at, size);
                self.b.ins().iadd(at, offset)
            }
        };
        self.b.ins().iadd(base, at)
    }

    /// The address and offset of 8-byte slot `first + c` from `base`.
    fn slot_address(
        &mut self,
        base: ir::Value,
        first: usize,
        c: Component,
    ) -> Result<(ir::Value, i32), Unsupported> {
        Ok(match c.fixed {
            Some(c) => (base, offset8(first + c)?),
            None => {
                let offset = self.b.ins().ishl_imm(c.at, 3);
                (self.b.ins().iadd(base, offset), offset8(first)?)
            }
        })
    }

    /// Runs `step` for each component in `range`: unrolled, with the
    /// component known, when the range is at most [`UNROLLED`] long; else
    /// as a counted loop in the code, the component a value.
    fn each_component(
        &mut self,
        range: std::ops::Range<usize>,
        mut step: impl FnMut(&mut Self, Component) -> Result<(), Unsupported>,
    ) -> Result<(), Unsupported> {
        if range.len() <= UNROLLED {
            for c in range {
                let at = self.b.ins().iconst(types::I64, c as i64);
                step(self, Component { at, fixed: Some(c) })?;
            }
            return Ok(());
        }
        let counter = self.b.declare_var(types::I64);
        let first = self.b.ins().iconst(types::I64, range.start as i64);
        self.b.def_var(counter, first);
        let header = self.b.create_block();
        let block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(header, &[]);
        self.switch(header);
        let at = self.b.use_var(counter);
        let more = self
            .b
            .ins()
            .icmp_imm(IntCC::UnsignedLessThan, at, range.end as i64);
        self.b.ins().brif(more, block, &[], exit, &[]);
        self.switch(block);
        step(self, Component { at, fixed: None })?;
        let next = self.b.ins().iadd_imm(at, 1);
        self.b.def_var(counter, next);
        self.b.ins().jump(header, &[]);
        self.switch(exit);
        Ok(())
    }

    fn zero(&mut self, ty: ScalarType) -> ir::Value {
        self.constant(Value::zero(ty))
    }

    /// Where a staged INC argument starts (`reference::inc_identity`).
    pub(crate) fn inc_identity(&mut self, ty: ScalarType) -> ir::Value {
        self.constant(crate::reference::inc_identity(ty))
    }

    fn constant(&mut self, v: Value) -> ir::Value {
        let ins = self.b.ins();
        match v {
            Value::Double(x) => ins.f64const(x),
            Value::Float(x) => ins.f32const(x),
            Value::Int(x) => ins.iconst(types::I32, i64::from(x)),
            Value::Uint(x) => ins.iconst(types::I32, i64::from(x)),
            Value::Ll(x) => ins.iconst(types::I64, x),
            Value::Ull(x) => ins.iconst(types::I64, x.cast_signed()),
            Value::Bool(x) => ins.iconst(types::I8, i64::from(x)),
        }
    }

    fn array(&self, var: Var) -> Result<&Array, Unsupported> {
        match var {
            Var::Param(k) => self.params.get(k as usize),
            Var::Local(id) => self.locals.get(id.0 as usize),
            Var::Const(_) | Var::Global(_) => None,
        }
        .ok_or_else(|| "a variable the kernel cannot reach".into())
    }

    fn load_param(&mut self, k: usize, c: usize) -> Result<ir::Value, Unsupported> {
        let at = self.b.ins().iconst(types::I64, c as i64);
        self.load_array(Var::Param(k as u32), at, Some(c))
    }

    /// Loads component `at` (known to be `fixed` when compiling) of a
    /// parameter or local.
    fn load_array(
        &mut self,
        var: Var,
        at: ir::Value,
        fixed: Option<usize>,
    ) -> Result<ir::Value, Unsupported> {
        let array = self.array(var)?.clone();
        self.load_from(&array, Component { at, fixed })
    }

    /// Loads component `c` of `array`.
    fn load_from(&mut self, array: &Array, c: Component) -> Result<ir::Value, Unsupported> {
        let (at, fixed) = (c.at, c.fixed);
        Ok(match (&array.storage, fixed) {
            (Storage::Vars(vars), Some(c)) => self.b.use_var(vars[c]),
            (Storage::Stack(slot), _) => {
                let size = size_of(array.ty) as i64;
                let offset = self.b.ins().imul_imm(at, size);
                let base = self.b.ins().stack_addr(types::I64, *slot, 0);
                let address = self.b.ins().iadd(base, offset);
                self.b.ins().load(ir_type(array.ty), FLAGS, address, 0)
            }
            (Storage::Vars(_), None) => return Err("a computed index into variables".into()),
        })
    }

    fn store_at(
        &mut self,
        var: Var,
        at: ir::Value,
        fixed: Option<usize>,
        value: ir::Value,
    ) -> Result<(), Unsupported> {
        let array = self.array(var)?.clone();
        self.store_into(&array, Component { at, fixed }, value)
    }

    /// Stores `value` into component `c` of `array`.
    fn store_into(
        &mut self,
        array: &Array,
        c: Component,
        value: ir::Value,
    ) -> Result<(), Unsupported> {
        let (at, fixed) = (c.at, c.fixed);
        match (&array.storage, fixed) {
            (Storage::Vars(vars), Some(c)) => self.b.def_var(vars[c], value),
            (Storage::Stack(slot), _) => {
                let size = size_of(array.ty) as i64;
                let offset = self.b.ins().imul_imm(at, size);
                let base = self.b.ins().stack_addr(types::I64, *slot, 0);
                let address = self.b.ins().iadd(base, offset);
                self.b.ins().store(FLAGS, value, address, 0);
            }
            (Storage::Vars(_), None) => return Err("a computed index into variables".into()),
        }
        Ok(())
    }

    /// Counts one iteration of the loop at `range`, and stops the loop past
    /// the limit, as the interpreter's budget does.
    fn count_iteration(&mut self, range: TextRange) {
        let steps = self.b.use_var(self.steps);
        let steps = self.b.ins().iadd_imm(steps, 1);
        self.b.def_var(self.steps, steps);
        let limit = i64::try_from(crate::interp::MAX_KERNEL_ITERATIONS).unwrap_or(i64::MAX);
        let over = self
            .b
            .ins()
            .icmp_imm(IntCC::SignedGreaterThan, steps, limit);
        self.fault_if(over, SiteKind::LoopLimit, range, steps);
    }

    /// Jumps to the fault exit when `condition` holds.
    fn fault_if(
        &mut self,
        condition: ir::Value,
        kind: SiteKind,
        range: TextRange,
        index: ir::Value,
    ) {
        let code = i32::try_from(self.sites.len() + 1).unwrap_or(i32::MAX);
        self.sites.push(Site { kind, range });
        let bad = self.b.create_block();
        let good = self.b.create_block();
        self.b.ins().brif(condition, bad, &[], good, &[]);
        self.switch(bad);
        self.b.set_cold_block(bad);
        let code = g_iconst32(&mut self.b, code);
        self.b.def_var(self.fault_code, code);
        self.b.def_var(self.fault_index, index);
        self.b.ins().jump(self.fault, &[]);
        self.switch(good);
    }

    /// Resolves a place to its component: `(index value, literal index)`,
    /// with the bounds check. Evaluates a computed index expression.
    fn locate(
        &mut self,
        place: &Place,
    ) -> Result<(ir::Value, Option<usize>, ScalarType), Unsupported> {
        let (length, ty) = match place.var {
            Var::Param(_) | Var::Local(_) => {
                let a = self.array(place.var)?;
                (a.length, a.ty)
            }
            Var::Const(id) => {
                let values = self.cx.consts.get(id.index()).ok_or("an unknown const")?;
                let ty = values.first().map_or(ScalarType::Int, |v| v.ty());
                if values.iter().any(|v| v.ty() != ty) {
                    return Err("a const whose values differ in type".into());
                }
                (values.len(), ty)
            }
            Var::Global(_) => return Err("a global inside a kernel".into()),
        };
        let fixed = place.index.as_deref().and_then(literal_index);
        match (fixed, place.index.as_deref()) {
            (Some(_), _) | (None, None) => {
                let i = fixed.unwrap_or(0);
                match usize::try_from(i) {
                    Ok(c) if c < length => {
                        let at = self.b.ins().iconst(types::I64, c as i64);
                        Ok((at, Some(c), ty))
                    }
                    _ => {
                        // Always out of range: fault when reached, and go on
                        // compiling (unreachable) code with component 0.
                        if length == 0 {
                            return Err("an empty array".into());
                        }
                        // The literal's 64 bits (an `ull` past `i64::MAX`
                        // as its unsigned bits).
                        #[allow(clippy::cast_possible_truncation)]
                        let at = self.b.ins().iconst(types::I64, i as i64);
                        let yes = self.b.ins().iconst(types::I8, 1);
                        let unsigned = i > i128::from(i64::MAX);
                        self.fault_if(yes, SiteKind::Index { length, unsigned }, place.range, at);
                        let first = self.b.ins().iconst(types::I64, 0);
                        Ok((first, Some(0), ty))
                    }
                }
            }
            (None, Some(index)) => {
                let v = self.expr(index)?;
                let at = self.as_i64(v);
                let limit = self.b.ins().iconst(types::I64, length as i64);
                // Unsigned, so that a negative index is out of range too.
                let out = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedGreaterThanOrEqual, at, limit);
                let unsigned = v.ty == ScalarType::Ull;
                self.fault_if(out, SiteKind::Index { length, unsigned }, place.range, at);
                Ok((at, None, ty))
            }
        }
    }

    /// An integer value as 64 bits: `int` sign-extended, `uint` and `bool`
    /// zero-extended, `ll` and `ull` as they are (an `ull` past `i64::MAX`
    /// is a large index, out of range, as the interpreter's `as_i128`).
    fn as_i64(&mut self, v: Typed) -> ir::Value {
        match v.ty {
            ScalarType::Int => self.b.ins().sextend(types::I64, v.value),
            ScalarType::Uint | ScalarType::Bool => self.b.ins().uextend(types::I64, v.value),
            ScalarType::Ll | ScalarType::Ull => v.value,
            ScalarType::Double | ScalarType::Float => self.b.ins().iconst(types::I64, 0),
        }
    }

    fn get(&mut self, place: &Place) -> Result<Typed, Unsupported> {
        let (at, fixed, ty) = self.locate(place)?;
        self.get_at(place, at, fixed, ty)
    }

    /// The component of `place` located already at `at` (`fixed` when
    /// known): a compound assignment or `++` evaluates its index once.
    fn get_at(
        &mut self,
        place: &Place,
        at: ir::Value,
        fixed: Option<usize>,
        ty: ScalarType,
    ) -> Result<Typed, Unsupported> {
        let value = match place.var {
            Var::Const(id) => match fixed {
                Some(c) => {
                    let v = self.cx.consts[id.index()][c];
                    self.constant(v)
                }
                None => {
                    let base = self.base(Slot::Const(id.index()));
                    let offset = self.b.ins().ishl_imm(at, 3);
                    let address = self.b.ins().iadd(base, offset);
                    self.b.ins().load(ir_type(ty), FLAGS, address, 0)
                }
            },
            _ => self.load_array(place.var, at, fixed)?,
        };
        Ok(Typed { value, ty })
    }

    fn set(
        &mut self,
        place: &Place,
        at: ir::Value,
        fixed: Option<usize>,
        value: ir::Value,
    ) -> Result<(), Unsupported> {
        match place.var {
            Var::Param(_) | Var::Local(_) => self.store_at(place.var, at, fixed, value),
            // Consts are never written (the analysis rejects it).
            _ => Err("a store to a const or global in a kernel".into()),
        }
    }

    fn check(ty: ScalarType, expected: ScalarType) -> Result<(), Unsupported> {
        if ty == expected {
            Ok(())
        } else {
            Err(format!(
                "a value of type {ty} where the lowering says {expected}"
            ))
        }
    }

    /// Declines a body whose code has grown past [`MAX_BLOCKS`], before the
    /// builder's memory for it grows further (checked at every expression
    /// and statement, so at most one of them past the limit is built).
    fn within_blocks(&self) -> Result<(), Unsupported> {
        let blocks = self.b.func.dfg.num_blocks();
        if blocks > MAX_BLOCKS {
            return Err(format!(
                "its code needs more than {MAX_BLOCKS} basic blocks, the compiled engine's limit"
            ));
        }
        Ok(())
    }

    fn expr(&mut self, expr: &Expr) -> Result<Typed, Unsupported> {
        self.within_blocks()?;
        let v = self.expr_inner(expr)?;
        Self::check(v.ty, expr.ty)?;
        Ok(v)
    }

    fn expr_inner(&mut self, expr: &Expr) -> Result<Typed, Unsupported> {
        let range = expr.range;
        let ty = expr.ty;
        Ok(match &expr.kind {
            ExprKind::Literal(v) => {
                let value = self.constant(*v);
                Typed { value, ty: v.ty() }
            }
            ExprKind::Load(place) => self.get(place)?,
            ExprKind::Len(set) => {
                let v = self.lengths[set.index()];
                Typed {
                    value: g_iconst32(&mut self.b, v),
                    ty: ScalarType::Int,
                }
            }
            ExprKind::Assign { place, op, value } => {
                let v = self.expr(value)?;
                let (at, fixed, place_ty) = self.locate(place)?;
                let stored = match op.binary() {
                    None => self.convert(v, ty),
                    Some(op) => {
                        // The old value at the component located once, as
                        // C (and the interpreter) evaluate the index once.
                        let old = self.get_at(place, at, fixed, place_ty)?;
                        let operand = if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
                            old
                        } else {
                            self.convert(old, v.ty)
                        };
                        let result = self.binary(op, operand, v, range)?;
                        self.convert(result, ty)
                    }
                };
                self.set(place, at, fixed, stored.value)?;
                stored
            }
            ExprKind::Update {
                place,
                increment,
                prefix,
            } => {
                let (at, fixed, place_ty) = self.locate(place)?;
                let old = self.get_at(place, at, fixed, place_ty)?;
                let op = if *increment {
                    BinaryOp::Add
                } else {
                    BinaryOp::Sub
                };
                let one = Typed {
                    value: g_iconst32(&mut self.b, 1),
                    ty: ScalarType::Int,
                };
                let new = self.binary(op, old, one, range)?;
                let new = self.convert(new, ty);
                self.set(place, at, fixed, new.value)?;
                if *prefix { new } else { old }
            }
            ExprKind::Unary(op, operand) => {
                let a = self.expr(operand)?;
                self.unary(*op, a)?
            }
            ExprKind::Binary(op @ (BinaryOp::And | BinaryOp::Or), left, right) => {
                let l = self.expr(left)?;
                self.logical(*op, l, right)?
            }
            ExprKind::Binary(op, left, right) => {
                let l = self.expr(left)?;
                let r = self.expr(right)?;
                self.binary(*op, l, r, range)?
            }
            ExprKind::Chain(first, links) => {
                // One pass over the links, never a recursion per operator:
                // the running value is converted to the link's operand type
                // and combined with its right operand, as the nested
                // `Binary` the chain stands for would be.
                let mut acc = self.expr(first)?;
                for link in links {
                    acc = match link.op {
                        op @ (BinaryOp::And | BinaryOp::Or) => {
                            self.logical(op, acc, &link.right)?
                        }
                        op => {
                            let l = self.convert(acc, link.operand);
                            let r = self.expr(&link.right)?;
                            self.binary(op, l, r, link.range)?
                        }
                    };
                    Self::check(acc.ty, link.ty)?;
                }
                acc
            }
            ExprKind::Conditional(c, a, b) => {
                let c = self.expr(c)?;
                let c = self.truth(c);
                let result = self.b.declare_var(ir_type(ty));
                let then_block = self.b.create_block();
                let else_block = self.b.create_block();
                let join = self.b.create_block();
                self.b.ins().brif(c, then_block, &[], else_block, &[]);
                for (block, branch) in [(then_block, a), (else_block, b)] {
                    self.switch(block);
                    let v = self.expr(branch)?;
                    Self::check(v.ty, ty)?;
                    self.b.def_var(result, v.value);
                    self.b.ins().jump(join, &[]);
                }
                self.switch(join);
                Typed {
                    value: self.b.use_var(result),
                    ty,
                }
            }
            ExprKind::Convert { value, .. } => {
                let v = self.expr(value)?;
                self.convert(v, ty)
            }
            ExprKind::Call(builtin, args) => {
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    values.push(self.expr(arg)?);
                }
                self.call(*builtin, &values, ty)?
            }
            ExprKind::Error => return Err("an expression that did not lower".into()),
        })
    }

    /// `l && right` or `l || right`: `right` is evaluated only when `l`
    /// does not decide the result, which is an `int` 0 or 1.
    fn logical(&mut self, op: BinaryOp, l: Typed, right: &Expr) -> Result<Typed, Unsupported> {
        let l = self.truth(l);
        let result = self.b.declare_var(types::I32);
        let l32 = self.b.ins().uextend(types::I32, l);
        self.b.def_var(result, l32);
        let rhs = self.b.create_block();
        let join = self.b.create_block();
        if op == BinaryOp::And {
            self.b.ins().brif(l, rhs, &[], join, &[]);
        } else {
            self.b.ins().brif(l, join, &[], rhs, &[]);
        }
        self.switch(rhs);
        let r = self.expr(right)?;
        let r = self.truth(r);
        let r32 = self.b.ins().uextend(types::I32, r);
        self.b.def_var(result, r32);
        self.b.ins().jump(join, &[]);
        self.switch(join);
        Ok(Typed {
            value: self.b.use_var(result),
            ty: ScalarType::Int,
        })
    }

    /// C truthiness as an `i8` 0 or 1.
    fn truth(&mut self, v: Typed) -> ir::Value {
        match v.ty {
            ScalarType::Double => {
                let zero = self.b.ins().f64const(0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, v.value, zero)
            }
            ScalarType::Float => {
                let zero = self.b.ins().f32const(0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, v.value, zero)
            }
            _ => self.b.ins().icmp_imm(IntCC::NotEqual, v.value, 0),
        }
    }

    /// `Value::convert`.
    fn convert(&mut self, v: Typed, to: ScalarType) -> Typed {
        use ScalarType as S;
        let from = v.ty;
        if from == to {
            return v;
        }
        let x = v.value;
        let value = if to == S::Bool {
            self.truth(v)
        } else {
            match from {
                S::Double | S::Float => {
                    let d = if from == S::Float && to != S::Double {
                        self.b.ins().fpromote(types::F64, x)
                    } else {
                        x
                    };
                    match to {
                        S::Double => self.b.ins().fpromote(types::F64, x),
                        S::Float => self.b.ins().fdemote(types::F32, d),
                        S::Int => self.b.ins().fcvt_to_sint_sat(types::I32, d),
                        S::Ll => self.b.ins().fcvt_to_sint_sat(types::I64, d),
                        S::Uint | S::Ull => {
                            // Negative values wrap through `i64`, others
                            // saturate (Rust's `as`, what the interpreter does).
                            let wide = self.b.ins().fcvt_to_sint_sat(types::I64, d);
                            let (through, direct) = if to == S::Uint {
                                (
                                    self.b.ins().ireduce(types::I32, wide),
                                    self.b.ins().fcvt_to_uint_sat(types::I32, d),
                                )
                            } else {
                                (wide, self.b.ins().fcvt_to_uint_sat(types::I64, d))
                            };
                            let zero = self.b.ins().f64const(0.0);
                            let negative = self.b.ins().fcmp(FloatCC::LessThan, d, zero);
                            self.b.ins().select(negative, through, direct)
                        }
                        S::Bool => unreachable!("handled above"),
                    }
                }
                S::Int | S::Uint | S::Ll | S::Ull | S::Bool => {
                    let from_signed = signed(from);
                    match to {
                        S::Double | S::Float => {
                            let t = ir_type(to);
                            if from_signed {
                                self.b.ins().fcvt_from_sint(t, x)
                            } else {
                                self.b.ins().fcvt_from_uint(t, x)
                            }
                        }
                        _ => {
                            let (fw, tw) = (ir_type(from).bits(), ir_type(to).bits());
                            if fw == tw {
                                x
                            } else if fw > tw {
                                self.b.ins().ireduce(ir_type(to), x)
                            } else if from_signed {
                                self.b.ins().sextend(ir_type(to), x)
                            } else {
                                self.b.ins().uextend(ir_type(to), x)
                            }
                        }
                    }
                }
            }
        };
        Typed { value, ty: to }
    }

    /// `value::unary`.
    fn unary(&mut self, op: UnaryOp, a: Typed) -> Result<Typed, Unsupported> {
        let a = self.convert(a, promote(a.ty));
        Ok(match (op, a.ty) {
            (UnaryOp::Plus, _) => a,
            (UnaryOp::Not, _) => {
                let t = self.truth(a);
                let f = self.b.ins().bxor_imm(t, 1);
                Typed {
                    value: self.b.ins().uextend(types::I32, f),
                    ty: ScalarType::Int,
                }
            }
            (UnaryOp::Neg, ScalarType::Double | ScalarType::Float) => {
                // The sign bit flipped, as `fneg` and C's `-` on IEEE
                // hardware flip it, but written on the bits: Cranelift
                // rewrites `(-x) * (-y)` (and `fma`'s) into `x * y`, which
                // gives a NaN the other sign than the interpreter's, and a
                // `-nan` printed as `nan` (campaign 4e7b6e6, seed 29, case
                // 923700).
                let (bits, float, sign) = if a.ty == ScalarType::Double {
                    (types::I64, types::F64, i64::MIN)
                } else {
                    (types::I32, types::F32, i64::from(i32::MIN))
                };
                let raw = self.b.ins().bitcast(bits, MemFlags::new(), a.value);
                let flipped = self.b.ins().bxor_imm(raw, sign);
                Typed {
                    value: self.b.ins().bitcast(float, MemFlags::new(), flipped),
                    ty: a.ty,
                }
            }
            (UnaryOp::Neg, _) => Typed {
                value: self.b.ins().ineg(a.value),
                ty: a.ty,
            },
            (
                UnaryOp::BitNot,
                ScalarType::Int | ScalarType::Uint | ScalarType::Ll | ScalarType::Ull,
            ) => Typed {
                value: self.b.ins().bnot(a.value),
                ty: a.ty,
            },
            _ => return Err(format!("unary `{op:?}` on {}", a.ty)),
        })
    }

    /// A comparison of two values of one type, as `i8`.
    fn compare(&mut self, op: BinaryOp, a: Typed, b: Typed) -> ir::Value {
        if a.ty.is_floating() {
            let cc = match op {
                BinaryOp::Eq => FloatCC::Equal,
                BinaryOp::Ne => FloatCC::NotEqual,
                BinaryOp::Lt => FloatCC::LessThan,
                BinaryOp::Le => FloatCC::LessThanOrEqual,
                BinaryOp::Gt => FloatCC::GreaterThan,
                _ => FloatCC::GreaterThanOrEqual,
            };
            self.b.ins().fcmp(cc, a.value, b.value)
        } else {
            let s = signed(a.ty);
            let cc = match op {
                BinaryOp::Eq => IntCC::Equal,
                BinaryOp::Ne => IntCC::NotEqual,
                BinaryOp::Lt if s => IntCC::SignedLessThan,
                BinaryOp::Lt => IntCC::UnsignedLessThan,
                BinaryOp::Le if s => IntCC::SignedLessThanOrEqual,
                BinaryOp::Le => IntCC::UnsignedLessThanOrEqual,
                BinaryOp::Gt if s => IntCC::SignedGreaterThan,
                BinaryOp::Gt => IntCC::UnsignedGreaterThan,
                _ if s => IntCC::SignedGreaterThanOrEqual,
                _ => IntCC::UnsignedGreaterThanOrEqual,
            };
            self.b.ins().icmp(cc, a.value, b.value)
        }
    }

    /// `target + value` in the target's type (`add_into`; both have it).
    fn add(&mut self, old: ir::Value, value: ir::Value, ty: ScalarType) -> ir::Value {
        let a = Typed { value: old, ty };
        let b = Typed { value, ty };
        match self.binary(BinaryOp::Add, a, b, TextRange::default()) {
            Ok(sum) => self.convert(sum, ty).value,
            Err(_) => old,
        }
    }

    /// `value::binary` for every operator but `&&` and `||`.
    fn binary(
        &mut self,
        op: BinaryOp,
        a: Typed,
        b: Typed,
        range: TextRange,
    ) -> Result<Typed, Unsupported> {
        use BinaryOp as B;
        if matches!(op, B::And | B::Or) {
            let (x, y) = (self.truth(a), self.truth(b));
            let r = if op == B::And {
                self.b.ins().band(x, y)
            } else {
                self.b.ins().bor(x, y)
            };
            return Ok(Typed {
                value: self.b.ins().uextend(types::I32, r),
                ty: ScalarType::Int,
            });
        }
        if matches!(op, B::Shl | B::Shr) {
            let left = self.convert(a, promote(a.ty));
            if left.ty.is_floating() || b.ty.is_floating() {
                return Err("a shift of a floating value".into());
            }
            let amount = match b.ty {
                ScalarType::Ull => {
                    let zero = self.b.ins().iconst(types::I64, 0);
                    let big = self.b.ins().icmp(IntCC::SignedLessThan, b.value, zero);
                    self.fault_if(big, SiteKind::Operands, range, b.value);
                    b.value
                }
                _ => self.as_i64(b),
            };
            let amount = self.b.ins().band_imm(amount, 63);
            // Cranelift masks the amount by the width, as `wrapping_shl`.
            let amount = if ir_type(left.ty) == types::I32 {
                self.b.ins().ireduce(types::I32, amount)
            } else {
                amount
            };
            let value = match (op, signed(left.ty)) {
                (B::Shl, _) => self.b.ins().ishl(left.value, amount),
                (_, true) => self.b.ins().sshr(left.value, amount),
                (_, false) => self.b.ins().ushr(left.value, amount),
            };
            return Ok(Typed { value, ty: left.ty });
        }
        let ty = common_type(a.ty, b.ty);
        let (a, b) = (self.convert(a, ty), self.convert(b, ty));
        let (x, y) = (a.value, b.value);
        if matches!(op, B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge) {
            let c = self.compare(op, a, b);
            return Ok(Typed {
                value: self.b.ins().uextend(types::I32, c),
                ty: ScalarType::Int,
            });
        }
        let value = if ty.is_floating() {
            match op {
                B::Add => self.b.ins().fadd(x, y),
                B::Sub => self.b.ins().fsub(x, y),
                B::Mul => self.b.ins().fmul(x, y),
                B::Div => self.b.ins().fdiv(x, y),
                _ => return Err(format!("`{op:?}` on {ty}")),
            }
        } else {
            match op {
                B::Add => self.b.ins().iadd(x, y),
                B::Sub => self.b.ins().isub(x, y),
                B::Mul => self.b.ins().imul(x, y),
                B::Div | B::Rem => self.divide(op, x, y, ty, range),
                B::BitAnd => self.b.ins().band(x, y),
                B::BitOr => self.b.ins().bor(x, y),
                B::BitXor => self.b.ins().bxor(x, y),
                _ => return Err(format!("`{op:?}` on {ty}")),
            }
        };
        Ok(Typed { value, ty })
    }

    /// Integer division or remainder: a fault on zero, wrapping on
    /// `MIN / -1` (where the hardware would trap).
    fn divide(
        &mut self,
        op: BinaryOp,
        x: ir::Value,
        y: ir::Value,
        ty: ScalarType,
        range: TextRange,
    ) -> ir::Value {
        let zero = self.b.ins().icmp_imm(IntCC::Equal, y, 0);
        let index = self.b.ins().iconst(types::I64, 0);
        self.fault_if(zero, SiteKind::Division, range, index);
        if !signed(ty) {
            return if op == BinaryOp::Div {
                self.b.ins().udiv(x, y)
            } else {
                self.b.ins().urem(x, y)
            };
        }
        let t = ir_type(ty);
        let result = self.b.declare_var(t);
        let minus_one = self.b.ins().icmp_imm(IntCC::Equal, y, -1);
        let special = self.b.create_block();
        let general = self.b.create_block();
        let join = self.b.create_block();
        self.b.ins().brif(minus_one, special, &[], general, &[]);
        self.switch(special);
        let v = if op == BinaryOp::Div {
            self.b.ins().ineg(x)
        } else {
            self.b.ins().iconst(t, 0)
        };
        self.b.def_var(result, v);
        self.b.ins().jump(join, &[]);
        self.switch(general);
        let v = if op == BinaryOp::Div {
            self.b.ins().sdiv(x, y)
        } else {
            self.b.ins().srem(x, y)
        };
        self.b.def_var(result, v);
        self.b.ins().jump(join, &[]);
        self.switch(join);
        self.b.use_var(result)
    }

    /// `consts::call_builtin`.
    fn call(
        &mut self,
        builtin: Builtin,
        args: &[Typed],
        result: ScalarType,
    ) -> Result<Typed, Unsupported> {
        match builtin {
            Builtin::Abs | Builtin::Min | Builtin::Max => {
                let a = *args.first().ok_or("a call without arguments")?;
                let (choose_first, first, second) = match builtin {
                    Builtin::Abs => {
                        let zero = Typed {
                            value: self.zero(a.ty),
                            ty: a.ty,
                        };
                        let less = self.binary(BinaryOp::Lt, a, zero, TextRange::default())?;
                        let negated = self.unary(UnaryOp::Neg, a)?;
                        (less, negated, a)
                    }
                    _ => {
                        // `b < a ? b : a` and `a < b ? b : a` (`std::min`,
                        // `std::max`), as the interpreter
                        // (`op2_analysis::consts`).
                        let b = args.get(1).copied().unwrap_or(a);
                        let (x, y) = if builtin == Builtin::Min {
                            (b, a)
                        } else {
                            (a, b)
                        };
                        let second = self.binary(BinaryOp::Lt, x, y, TextRange::default())?;
                        (second, b, a)
                    }
                };
                let first = self.convert(first, result);
                let second = self.convert(second, result);
                let c = self.truth(choose_first);
                Ok(Typed {
                    value: self.b.ins().select(c, first.value, second.value),
                    ty: result,
                })
            }
            Builtin::Isnan | Builtin::Isinf => {
                let a = *args.first().ok_or("a call without arguments")?;
                let x = self.convert(a, ScalarType::Double).value;
                let yes = if builtin == Builtin::Isnan {
                    self.b.ins().fcmp(FloatCC::Unordered, x, x)
                } else {
                    let abs = self.b.ins().fabs(x);
                    let inf = self.b.ins().f64const(f64::INFINITY);
                    self.b.ins().fcmp(FloatCC::Equal, abs, inf)
                };
                Ok(Typed {
                    value: self.b.ins().uextend(types::I32, yes),
                    ty: ScalarType::Int,
                })
            }
            _ => {
                let &(_, name, arity) = MATH
                    .iter()
                    .find(|(b, _, _)| *b == builtin)
                    .ok_or("an unknown built-in")?;
                let mut operands = Vec::with_capacity(arity);
                for i in 0..arity {
                    // A missing argument is 0.0, as in the interpreter.
                    let v = match args.get(i) {
                        Some(&a) => self.convert(a, ScalarType::Double).value,
                        None => self.b.ins().f64const(0.0),
                    };
                    operands.push(v);
                }
                let value = match builtin {
                    // Exact IEEE operations: the same bits as `f64::sqrt`
                    // and `f64::abs`.
                    Builtin::Sqrt => self.b.ins().sqrt(operands[0]),
                    Builtin::Fabs => self.b.ins().fabs(operands[0]),
                    _ => {
                        let callee = match self.math.get(name) {
                            Some(&f) => f,
                            None => {
                                let f = (self.declare_math)(name, arity, self.b.func);
                                self.math.insert(name, f);
                                f
                            }
                        };
                        let call = self.b.ins().call(callee, &operands);
                        self.b.inst_results(call)[0]
                    }
                };
                let double = Typed {
                    value,
                    ty: ScalarType::Double,
                };
                Ok(self.convert(double, result))
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt) -> Result<(), Unsupported> {
        self.within_blocks()?;
        if self.ended {
            // Code after `break`, `continue` or `return` never runs; give
            // it a block of its own so that it still compiles.
            let dead = self.b.create_block();
            self.switch(dead);
        }
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                self.expr(expr)?;
            }
            StmtKind::Local { local, init } => {
                let array = self
                    .locals
                    .get(local.0 as usize)
                    .ok_or("an unknown local")?
                    .clone();
                let items: Vec<&Expr> = match init {
                    Some(LocalInit::Expr(e)) => vec![e],
                    Some(LocalInit::List(items)) => items.iter().collect(),
                    None => Vec::new(),
                };
                // The initialisers as written (as many as the source has),
                // then zeros, in a loop when there are many.
                let given = items.len().min(array.length);
                for (c, item) in items.iter().take(given).enumerate() {
                    let v = self.expr(item)?;
                    let value = self.convert(v, array.ty).value;
                    let at = self.b.ins().iconst(types::I64, c as i64);
                    self.store_into(&array, Component { at, fixed: Some(c) }, value)?;
                }
                self.each_component(given..array.length, |g, c| {
                    let zero = g.zero(array.ty);
                    g.store_into(&array, c, zero)
                })?;
            }
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => {
                for s in stmts {
                    self.stmt(s)?;
                }
            }
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                let c = self.expr(condition)?;
                let c = self.truth(c);
                let then_block = self.b.create_block();
                let else_block = self.b.create_block();
                let join = self.b.create_block();
                self.b.ins().brif(c, then_block, &[], else_block, &[]);
                self.switch(then_block);
                self.stmt(then_branch)?;
                self.jump_unless_ended(join);
                self.switch(else_block);
                if let Some(e) = else_branch {
                    self.stmt(e)?;
                }
                self.jump_unless_ended(join);
                self.switch(join);
            }
            StmtKind::While { condition, body } => {
                let header = self.b.create_block();
                let inner = self.b.create_block();
                let exit = self.b.create_block();
                self.b.ins().jump(header, &[]);
                self.switch(header);
                let c = self.expr(condition)?;
                let c = self.truth(c);
                self.b.ins().brif(c, inner, &[], exit, &[]);
                self.switch(inner);
                self.count_iteration(stmt.range);
                self.loops.push(LoopTargets { exit, next: header });
                self.stmt(body)?;
                self.loops.pop();
                self.jump_unless_ended(header);
                self.switch(exit);
            }
            StmtKind::DoWhile { body, condition } => {
                let inner = self.b.create_block();
                let check = self.b.create_block();
                let exit = self.b.create_block();
                self.b.ins().jump(inner, &[]);
                self.switch(inner);
                self.count_iteration(stmt.range);
                self.loops.push(LoopTargets { exit, next: check });
                self.stmt(body)?;
                self.loops.pop();
                self.jump_unless_ended(check);
                self.switch(check);
                let c = self.expr(condition)?;
                let c = self.truth(c);
                self.b.ins().brif(c, inner, &[], exit, &[]);
                self.switch(exit);
            }
            StmtKind::For {
                init,
                condition,
                step,
                body,
            } => {
                if let Some(init) = init {
                    self.stmt(init)?;
                }
                let header = self.b.create_block();
                let inner = self.b.create_block();
                let stepper = self.b.create_block();
                let exit = self.b.create_block();
                self.jump_unless_ended(header);
                self.switch(header);
                match condition {
                    Some(condition) => {
                        let c = self.expr(condition)?;
                        let c = self.truth(c);
                        self.b.ins().brif(c, inner, &[], exit, &[]);
                    }
                    None => {
                        self.b.ins().jump(inner, &[]);
                    }
                }
                self.switch(inner);
                self.count_iteration(stmt.range);
                self.loops.push(LoopTargets {
                    exit,
                    next: stepper,
                });
                self.stmt(body)?;
                self.loops.pop();
                self.jump_unless_ended(stepper);
                self.switch(stepper);
                if let Some(step) = step {
                    self.expr(step)?;
                }
                self.b.ins().jump(header, &[]);
                self.switch(exit);
            }
            StmtKind::Break => {
                let exit = self.loops.last().ok_or("`break` outside a loop")?.exit;
                self.b.ins().jump(exit, &[]);
                self.ended = true;
            }
            StmtKind::Continue => {
                let next = self.loops.last().ok_or("`continue` outside a loop")?.next;
                self.b.ins().jump(next, &[]);
                self.ended = true;
            }
            StmtKind::Return => {
                let finish = self.finish;
                self.b.ins().jump(finish, &[]);
                self.ended = true;
            }
            StmtKind::Print { .. } => {
                // The simplest honest choice: a kernel that prints runs
                // interpreted, element by element in order, on one thread.
                return Err("its kernel prints (a kernel's `print` and `printf` run only in the interpreter)".into());
            }
            StmtKind::ParLoop(_) | StmtKind::Exit(_) | StmtKind::Fetch { .. } => {
                return Err("a par_loop, exit or fetch inside a kernel".into());
            }
        }
        Ok(())
    }

    fn jump_unless_ended(&mut self, target: Block) {
        if !self.ended {
            self.b.ins().jump(target, &[]);
        }
    }

    fn switch(&mut self, block: Block) {
        self.b.switch_to_block(block);
        self.ended = false;
    }
}
