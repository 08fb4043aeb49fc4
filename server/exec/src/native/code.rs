//! The one place with `unsafe` code: owning the machine code Cranelift
//! produced and calling it.
//!
//! Safety rests on four facts, each checked here before a call:
//!
//! - the code of a loop reads and writes only through the pointers of its
//!   table, at offsets below the byte lengths recorded with the loop
//!   ([`Loop::need`]), given that the element range is within
//!   [`Loop::elements`] and every map target is below the bound recorded
//!   for it ([`Maps`] checks every entry once, when it is built); parameter,
//!   local and const arrays indexed by a computed index are bounds-checked
//!   by the compiled code itself, as the interpreter checks them;
//! - every pointer of the table comes from a live buffer borrowed mutably
//!   (dats, globals) or shared (maps, consts) for the duration of the call,
//!   with at least the needed length, and buffers of different slots never
//!   overlap; a simulator's execute handler ([`KernelCall`]) keeps the
//!   pointers to its columns from one binding for every call, and each
//!   call borrows mutably the very [`Rows`] it was bound to (their ids
//!   match), which never move or resize a column's buffer while they live;
//! - the function pointer comes from the module this value owns, with the
//!   signature `extern "C" fn(*const *mut u8, i64, i64, *mut i64) -> i32`
//!   it was declared with, and the module lives (and its memory stays
//!   mapped) as long as this value;
//! - calls that run at the same time on several threads ([`Bound::call`])
//!   never touch the same bytes where one of them writes: the caller runs
//!   at once only blocks that `super::plan` coloured apart, and each block
//!   reduces globals into a buffer of its own.

#![allow(unsafe_code)]

use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::FuncId;
use op2_syntax::ast::ScalarType;
use std::sync::atomic::{AtomicU64, Ordering};

use super::compile::{MATH, RowSource, Slot};
use super::flat::Buffer;

/// The code generator for this machine: `single_pass` for the register
/// allocator that takes time linear in the function (for large ones), else
/// the backtracking one, whose code is better and whose time grows faster
/// than the function where many values are live at once.
pub(crate) fn isa(single_pass: bool) -> Result<std::sync::Arc<dyn TargetIsa>, String> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(|e| e.to_string())?;
    // Position-dependent code: the JIT places it itself.
    flags.set("is_pic", "false").map_err(|e| e.to_string())?;
    if single_pass {
        flags
            .set("regalloc_algorithm", "single_pass")
            .map_err(|e| e.to_string())?;
    }
    // A frame larger than a page touches each page in turn, so that even a
    // frame past the end of a thread's stack meets its guard page (a clean
    // stack overflow) instead of memory beyond it. `compile::MAX_STACK`
    // keeps frames far below any thread's stack; this is the second line.
    flags
        .set("enable_probestack", "true")
        .map_err(|e| e.to_string())?;
    flags
        .set("probestack_strategy", "inline")
        .map_err(|e| e.to_string())?;
    let isa = cranelift_native::builder()
        .map_err(|e| format!("no code generator for this machine: {e}"))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())?;
    if isa.endianness() != cranelift_codegen::ir::Endianness::Little {
        return Err("the compiled engine needs a little-endian machine".into());
    }
    Ok(isa)
}

/// Why the compiled engine is not available on this machine.
pub(crate) fn new_module() -> Result<JITModule, String> {
    let mut builder = JITBuilder::with_isa(isa(false)?, cranelift_module::default_libcall_names());
    for (builtin, name, _) in MATH {
        if let Some(pointer) = math_function(builtin) {
            builder.symbol(name, pointer);
        }
    }
    Ok(JITModule::new(builder))
}

// The very functions `op2_analysis::consts::call_builtin` uses, with C's
// calling convention.
extern "C" fn op2_fmin(a: f64, b: f64) -> f64 {
    a.min(b)
}
extern "C" fn op2_fmax(a: f64, b: f64) -> f64 {
    a.max(b)
}
extern "C" fn op2_pow(a: f64, b: f64) -> f64 {
    a.powf(b)
}
extern "C" fn op2_atan2(a: f64, b: f64) -> f64 {
    a.atan2(b)
}
extern "C" fn op2_exp(a: f64) -> f64 {
    a.exp()
}
extern "C" fn op2_log(a: f64) -> f64 {
    a.ln()
}
extern "C" fn op2_log10(a: f64) -> f64 {
    a.log10()
}
extern "C" fn op2_sin(a: f64) -> f64 {
    a.sin()
}
extern "C" fn op2_cos(a: f64) -> f64 {
    a.cos()
}
extern "C" fn op2_tan(a: f64) -> f64 {
    a.tan()
}
extern "C" fn op2_asin(a: f64) -> f64 {
    a.asin()
}
extern "C" fn op2_acos(a: f64) -> f64 {
    a.acos()
}
extern "C" fn op2_atan(a: f64) -> f64 {
    a.atan()
}
extern "C" fn op2_floor(a: f64) -> f64 {
    a.floor()
}
extern "C" fn op2_ceil(a: f64) -> f64 {
    a.ceil()
}
extern "C" fn op2_round(a: f64) -> f64 {
    a.round()
}

fn math_function(builtin: op2_analysis::hir::Builtin) -> Option<*const u8> {
    use op2_analysis::hir::Builtin as B;
    type Unary = extern "C" fn(f64) -> f64;
    type Binary = extern "C" fn(f64, f64) -> f64;
    let unary = |f: Unary| Some(f as *const u8);
    let binary = |f: Binary| Some(f as *const u8);
    match builtin {
        B::Fmin => binary(op2_fmin),
        B::Fmax => binary(op2_fmax),
        B::Pow => binary(op2_pow),
        B::Atan2 => binary(op2_atan2),
        B::Exp => unary(op2_exp),
        B::Log => unary(op2_log),
        B::Log10 => unary(op2_log10),
        B::Sin => unary(op2_sin),
        B::Cos => unary(op2_cos),
        B::Tan => unary(op2_tan),
        B::Asin => unary(op2_asin),
        B::Acos => unary(op2_acos),
        B::Atan => unary(op2_atan),
        B::Floor => unary(op2_floor),
        B::Ceil => unary(op2_ceil),
        B::Round => unary(op2_round),
        // Compiled to exact instructions, never called.
        _ => None,
    }
}

/// Every map's targets, each checked once to be below its target set's
/// size.
#[derive(Debug)]
pub(crate) struct Maps {
    targets: Vec<Vec<u32>>,
    bounds: Vec<usize>,
}

impl Maps {
    /// Checks `targets` against the sizes of the maps' target sets.
    /// Gives `targets` back with the reason when one is out of bounds.
    pub(crate) fn new(
        targets: Vec<Vec<u32>>,
        bounds: Vec<usize>,
    ) -> Result<Maps, (String, Vec<Vec<u32>>)> {
        if targets.len() != bounds.len() {
            return Err(("maps and bounds differ in number".into(), targets));
        }
        for (index, (map, &bound)) in targets.iter().zip(&bounds).enumerate() {
            if let Some(bad) = map.iter().find(|&&t| t as usize >= bound) {
                let reason = format!("map {index} has target {bad}, outside its set of {bound}");
                return Err((reason, targets));
            }
        }
        Ok(Maps { targets, bounds })
    }

    /// Map `m`'s targets and the size of its target set.
    pub(crate) fn targets(&self, m: usize) -> (&[u32], usize) {
        (&self.targets[m], self.bounds[m])
    }

    /// Gives the targets back.
    pub(crate) fn into_inner(self) -> Vec<Vec<u32>> {
        self.targets
    }
}

/// One compiled loop and what its code may touch.
#[derive(Debug)]
pub(crate) struct Loop {
    function: FuncId,
    /// The table's slots.
    pub slots: Vec<Slot>,
    /// Bytes the code may reach through each slot.
    pub need: Vec<usize>,
    /// For each map slot: the bound its targets must respect.
    pub map_bounds: Vec<Option<usize>>,
    /// Elements of the iteration set.
    pub elements: usize,
}

/// The memory a call works on.
#[derive(Debug)]
pub(crate) struct Memory<'a> {
    pub dats: &'a mut [Buffer],
    pub maps: &'a Maps,
    pub globals: &'a mut [Vec<u64>],
    /// The globals' values when the loop began (`Slot::GlobalStart`),
    /// read only.
    pub starts: &'a [Vec<u64>],
    pub consts: &'a [Vec<u64>],
}

/// Where a loop stopped with a fault: the site code, the element and the
/// offending index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stop {
    pub site: usize,
    pub element: i64,
    pub index: i64,
}

impl Stop {
    /// What compiled code returned: 0, or a site code with `out`.
    fn from_code(code: i32, out: [i64; 2]) -> Result<(), Stop> {
        if code == 0 {
            Ok(())
        } else {
            Err(Stop {
                site: usize::try_from(code).unwrap_or(0),
                element: out[0],
                index: out[1],
            })
        }
    }
}

/// The finished machine code of a program's loops.
pub(crate) struct Code {
    module: Option<JITModule>,
}

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Code")
    }
}

impl Code {
    /// Finishes `module` (whose functions are all defined).
    pub(crate) fn new(mut module: JITModule) -> Result<Code, String> {
        module.finalize_definitions().map_err(|e| e.to_string())?;
        Ok(Code {
            module: Some(module),
        })
    }

    /// A loop whose function `function` is in this code.
    pub(crate) fn bind(
        function: FuncId,
        slots: Vec<Slot>,
        need: Vec<usize>,
        map_bounds: Vec<Option<usize>>,
        elements: usize,
    ) -> Loop {
        Loop {
            function,
            slots,
            need,
            map_bounds,
            elements,
        }
    }

    /// Runs `lp` over elements `start..end`.
    pub(crate) fn run(
        &self,
        lp: &Loop,
        memory: &mut Memory<'_>,
        start: usize,
        end: usize,
    ) -> Result<(), Stop> {
        let bound = self.bind_memory(lp, memory)?;
        // SAFETY: one call at a time on this table.
        unsafe { bound.call(start, end) }
    }

    /// Runs `lp` on elements `elements - 1` down to 0, one at a time (the
    /// reference's run in another order); stops at the first that faults.
    pub(crate) fn run_reverse(
        &self,
        lp: &Loop,
        memory: &mut Memory<'_>,
        from: usize,
        to: usize,
    ) -> Result<(), Stop> {
        let bound = self.bind_memory(lp, memory)?;
        for element in (from..to).rev() {
            // SAFETY: one call at a time on this table.
            unsafe { bound.call(element, element + 1) }?;
        }
        Ok(())
    }

    /// `lp`'s code with its table of pointers into `memory`, each checked
    /// to reach at least what the code may reach.
    pub(crate) fn bind_memory<'m>(
        &'m self,
        lp: &Loop,
        memory: &'m mut Memory<'_>,
    ) -> Result<Bound<'m>, Stop> {
        let Some(module) = &self.module else {
            return Err(Stop {
                site: 0,
                element: 0,
                index: 0,
            });
        };
        assert_eq!(lp.slots.len(), lp.need.len());
        // Check every slot's length and take its pointer. A slot appears
        // once per loop (the compiler deduplicates), so mutable pointers
        // never alias.
        let mut table: Vec<*mut u8> = Vec::with_capacity(lp.slots.len());
        for (k, slot) in lp.slots.iter().enumerate() {
            let need = lp.need[k];
            let pointer = match *slot {
                Slot::Dat(d) => {
                    let buffer = &mut memory.dats[d];
                    assert!(buffer.bytes() >= need, "dat {d} too short");
                    buffer.as_mut_ptr()
                }
                Slot::Map(m) => {
                    let targets = &memory.maps.targets[m];
                    assert!(targets.len() * 4 >= need, "map {m} too short");
                    let bound = lp.map_bounds[k].unwrap_or(0);
                    assert!(memory.maps.bounds[m] <= bound, "map {m} bound");
                    targets.as_ptr().cast_mut().cast()
                }
                Slot::Global(g) => {
                    let values = &mut memory.globals[g];
                    assert!(values.len() * 8 >= need, "global {g} too short");
                    values.as_mut_ptr().cast()
                }
                Slot::GlobalStart(g) => {
                    let values = &memory.starts[g];
                    assert!(values.len() * 8 >= need, "global {g}'s start too short");
                    values.as_ptr().cast_mut().cast()
                }
                Slot::Const(c) => {
                    let values = &memory.consts[c];
                    assert!(values.len() * 8 >= need, "const {c} too short");
                    values.as_ptr().cast_mut().cast()
                }
            };
            table.push(pointer);
        }
        let entry = module.get_finalized_function(lp.function);
        // SAFETY: `entry` is a function of the live module with this
        // signature (see the module's documentation); `Bound` borrows
        // `self`, so the module outlives it.
        let entry = unsafe { std::mem::transmute::<*const u8, Entry>(entry) };
        Ok(Bound {
            entry,
            table,
            slots: lp.slots.clone(),
            need: lp.need.clone(),
            elements: lp.elements,
            _memory: std::marker::PhantomData,
        })
    }
}

type Entry = extern "C" fn(*const *mut u8, i64, i64, *mut i64) -> i32;

impl Code {
    /// The execute handler `function` (`super::compile::compile_handler`)
    /// with its arguments' rows `args`, which reads the consts of `slots`
    /// (all [`Slot::Const`]) from `consts`.
    ///
    /// The call holds pointers into the module and into `consts`: the
    /// caller keeps both alive, and `consts`' buffers unchanged, for as
    /// long as the call lives. It runs once bound to its rows
    /// ([`KernelCall::bind`]).
    pub(crate) fn kernel_call(
        &self,
        function: FuncId,
        args: Vec<RowSource>,
        slots: &[Slot],
        consts: &[Vec<u64>],
    ) -> KernelCall {
        let module = self
            .module
            .as_ref()
            .expect("the module lives until the code is dropped");
        let table = slots
            .iter()
            .map(|slot| match *slot {
                Slot::Const(c) => consts[c].as_ptr().cast_mut().cast(),
                _ => unreachable!("a kernel call reads only const slots"),
            })
            .collect();
        let entry = module.get_finalized_function(function);
        // SAFETY: as in `bind_memory`: a function of the live module with
        // this signature.
        let entry = unsafe { std::mem::transmute::<*const u8, Entry>(entry) };
        let extras = args
            .iter()
            .filter_map(|source| match *source {
                RowSource::Extra(slot) => Some(slot as usize + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        KernelCall {
            entry,
            rows: vec![std::ptr::null_mut(); args.len()],
            args,
            bound: [0; 3],
            elements: 0,
            extra: vec![0; extras],
            table,
        }
    }
}

/// Columns of 8-byte slots (`element × width + component`) whose buffers
/// never move or change length while the value lives: compiled execute
/// handlers bound to them ([`KernelCall::bind`]) keep pointers into them.
/// Nothing here resizes, replaces or gives out a column's `Vec`, only its
/// slots; the value is not `Clone`, and its `id` is unique among every
/// `Rows` made, so a call finds out whether it is handed the very value it
/// was bound to.
#[derive(Debug)]
pub(crate) struct Rows {
    id: u64,
    columns: Vec<RowColumn>,
}

#[derive(Debug)]
struct RowColumn {
    ty: ScalarType,
    width: usize,
    slots: Vec<u64>,
}

impl Rows {
    /// The columns `(type, width, slots)`, in order.
    pub(crate) fn new(columns: impl IntoIterator<Item = (ScalarType, usize, Vec<u64>)>) -> Rows {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Rows {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            columns: columns
                .into_iter()
                .map(|(ty, width, slots)| RowColumn { ty, width, slots })
                .collect(),
        }
    }

    /// Column `column`'s type.
    pub(crate) fn ty(&self, column: usize) -> ScalarType {
        self.columns[column].ty
    }

    /// Every slot of column `column`.
    pub(crate) fn slots(&self, column: usize) -> &[u64] {
        &self.columns[column].slots
    }

    /// Row `element` of column `column`.
    #[inline]
    pub(crate) fn row(&self, column: usize, element: usize) -> &[u64] {
        let c = &self.columns[column];
        &c.slots[element * c.width..(element + 1) * c.width]
    }

    /// Row `element` of column `column`, to change.
    #[inline]
    pub(crate) fn row_mut(&mut self, column: usize, element: usize) -> &mut [u64] {
        let c = &mut self.columns[column];
        &mut c.slots[element * c.width..(element + 1) * c.width]
    }
}

/// One execute handler's code, with where its arguments' rows are and the
/// const table it reads.
pub(crate) struct KernelCall {
    entry: Entry,
    /// Per argument: where its row is.
    args: Vec<RowSource>,
    /// Per argument, bound once for every call ([`KernelCall::bind`]): the
    /// first row of its column, or its slot of `extra` (null for an
    /// argument without a row).
    rows: Vec<*mut u8>,
    /// The ids of the column groups bound (0, which no [`Rows`] has, until
    /// bound).
    bound: [u64; 3],
    /// The elements every bound column has a row for.
    elements: usize,
    /// The extra slots (the indices the caller works out per call).
    extra: Vec<u64>,
    table: Vec<*mut u8>,
}

impl KernelCall {
    /// Binds the handler to the columns of `groups` its arguments'
    /// [`RowSource`]s name, each checked to hold rows for `elements`
    /// elements; until then, and when a column is missing or too short,
    /// every call fails.
    pub(crate) fn bind(&mut self, mut groups: [&mut Rows; 3], elements: usize) {
        self.bound = [0; 3];
        let extra = self.extra.as_mut_ptr();
        for (k, source) in self.args.iter().enumerate() {
            self.rows[k] = match *source {
                RowSource::None => std::ptr::null_mut(),
                RowSource::Column {
                    group,
                    column,
                    width,
                } => {
                    let Some(c) = groups
                        .get_mut(group as usize)
                        .and_then(|g| g.columns.get_mut(column as usize))
                    else {
                        return;
                    };
                    if c.width != width as usize
                        || elements
                            .checked_mul(c.width)
                            .is_none_or(|need| need > c.slots.len())
                    {
                        return;
                    }
                    // `as_mut_ptr` creates no reference to the buffer, so
                    // the pointer stays valid next to the `Rows`' own
                    // accesses and another argument's pointer to the same
                    // row (as the interpreter's staging lets two share
                    // one); the compiled code writes through it.
                    c.slots.as_mut_ptr().cast()
                }
                // `extra` holds every slot (`Code::kernel_call`).
                RowSource::Extra(slot) => extra.wrapping_add(slot as usize).cast(),
            };
        }
        self.bound = groups.map(|g| g.id);
        self.elements = elements;
    }

    /// The extra slots the next call reads (the caller's indices).
    pub(crate) fn extra_mut(&mut self) -> &mut [u64] {
        &mut self.extra
    }

    /// Runs the handler on `element`: argument `k`'s row is row `element`
    /// of the column bound to it in `groups`, or its slot of the extra
    /// slots. Fails without running when `groups` are not the columns the
    /// call is bound to, or the element has no row.
    pub(crate) fn call(&mut self, groups: [&mut Rows; 3], element: usize) -> Result<(), Stop> {
        if element >= self.elements || groups.map(|g| g.id) != self.bound {
            return Err(Stop {
                site: 0,
                element: i64::try_from(element).unwrap_or(i64::MAX),
                index: 0,
            });
        }
        let mut out = [0i64; 2];
        // SAFETY: the pointers point into the columns of `groups` (the ids
        // match, and a `Rows` never moves, resizes or drops a column's
        // buffer while it lives), borrowed mutably for the call, each with
        // a row for `element` (checked when binding; `element` is below
        // `elements`); the code reads and writes only that row of each
        // (`compile_handler` checked that every argument is as wide as its
        // row) and the extra slots, which `self` owns. It reads the consts
        // through the const table, whose buffers the owner keeps alive and
        // unchanged (see `Code::kernel_call`); the const indices the code
        // computes are bounds-checked by the code itself. One call at a
        // time: `self` is borrowed mutably.
        let code = (self.entry)(
            self.rows.as_ptr(),
            self.table.as_ptr() as i64,
            i64::try_from(element).unwrap_or(i64::MAX),
            out.as_mut_ptr(),
        );
        Stop::from_code(code, out)
    }
}

/// A loop's code bound to the memory it works on: its table of checked
/// pointers. It borrows the memory (and the code) for as long as it lives.
pub(crate) struct Bound<'m> {
    entry: Entry,
    table: Vec<*mut u8>,
    slots: Vec<Slot>,
    need: Vec<usize>,
    elements: usize,
    _memory: std::marker::PhantomData<&'m mut ()>,
}

// SAFETY: a `Bound` shared between threads only gives access to `call`,
// whose contract covers calls running at the same time.
unsafe impl Sync for Bound<'_> {}
// SAFETY: the pointers stay valid wherever the value goes (it borrows the
// memory they point into).
unsafe impl Send for Bound<'_> {}

impl<'m> Bound<'m> {
    /// The slots of the table of globals `globals`, in their order: found
    /// once per loop run, not once per block's partial (8,000 reduced
    /// globals looked up in 8,000 slots for each chunk took 4.3 s where one
    /// thread took 0.9, review of 2026-11-29).
    pub(crate) fn global_slots(&self, globals: &[usize]) -> Vec<usize> {
        let slot_of: std::collections::HashMap<usize, usize> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(k, s)| match *s {
                Slot::Global(global) => Some((global, k)),
                _ => None,
            })
            .collect();
        globals
            .iter()
            .map(|global| {
                *slot_of
                    .get(global)
                    .expect("a reduced global has a slot in its loop's table")
            })
            .collect()
    }

    /// The same loop with slot `slots[i]` (of [`Bound::global_slots`])
    /// pointing at `partials[i]` instead (a block's partial reductions).
    pub(crate) fn with_globals<'p>(
        &self,
        slots: &[usize],
        partials: &'p mut [Vec<u64>],
    ) -> Bound<'p>
    where
        'm: 'p,
    {
        assert_eq!(slots.len(), partials.len(), "one partial per global");
        let mut table = self.table.clone();
        for (&k, values) in slots.iter().zip(partials.iter_mut()) {
            assert!(
                values.len() * 8 >= self.need[k],
                "partial of slot {k} too short"
            );
            table[k] = values.as_mut_ptr().cast();
        }
        Bound {
            entry: self.entry,
            table,
            slots: self.slots.clone(),
            need: self.need.clone(),
            elements: self.elements,
            _memory: std::marker::PhantomData,
        }
    }

    /// Runs the loop over elements `start..end`.
    ///
    /// # Safety
    ///
    /// Calls running at the same time (on this value, or on values sharing
    /// a buffer, as [`Bound::with_global`] makes) must not touch the same
    /// bytes where one of them writes: their element ranges are disjoint,
    /// and no dat row written by one is read or written by another (the
    /// colouring of `super::plan` ensures it).
    pub(crate) unsafe fn call(&self, start: usize, end: usize) -> Result<(), Stop> {
        assert!(start <= end && end <= self.elements, "element range");
        let mut out = [0i64; 2];
        // SAFETY: the table's pointers are valid for the lengths the code
        // reaches (checked when binding), the map targets were checked
        // against the bounds the dats' lengths were computed from, the
        // element range is within the set, and the caller keeps calls at
        // the same time apart.
        let code = (self.entry)(
            self.table.as_ptr(),
            i64::try_from(start).unwrap_or(i64::MAX),
            i64::try_from(end).unwrap_or(i64::MAX),
            out.as_mut_ptr(),
        );
        Stop::from_code(code, out)
    }
}

impl Drop for Code {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: no function pointer of the module outlives this
            // value: they are taken inside `run` and not kept.
            unsafe { module.free_memory() };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    /// Stands in for compiled code: counts its calls and checks that its
    /// table holds the first row of column 1 of group 0 and the extra slot.
    extern "C" fn entry(rows: *const *mut u8, _consts: i64, element: i64, _out: *mut i64) -> i32 {
        CALLS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the test's table has two entries.
        let (first, extra) = unsafe { (*rows, *rows.add(1)) };
        // SAFETY: both point at slots the test keeps alive.
        let (first, extra) = unsafe { (*first.cast::<u64>(), *extra.cast::<u64>()) };
        i32::from(!(first == 10 && extra == 77 && element == 2))
    }

    fn call() -> KernelCall {
        KernelCall {
            entry,
            args: vec![
                RowSource::Column {
                    group: 0,
                    column: 1,
                    width: 2,
                },
                RowSource::Extra(0),
            ],
            rows: vec![std::ptr::null_mut(); 2],
            bound: [0; 3],
            elements: 0,
            extra: vec![0],
            table: Vec::new(),
        }
    }

    fn rows() -> Rows {
        Rows::new([
            (ScalarType::Int, 1, vec![0; 3]),
            (ScalarType::Double, 2, vec![10, 11, 12, 13, 14, 15]),
        ])
    }

    #[test]
    fn a_kernel_call_runs_only_on_the_rows_it_is_bound_to() {
        let (mut dats, mut pads, mut buffers) = (rows(), Rows::new([]), Rows::new([]));
        let mut other = rows();
        let mut call = call();
        // Not bound yet.
        let before = CALLS.load(Ordering::SeqCst);
        assert!(call.call([&mut dats, &mut buffers, &mut pads], 0).is_err());
        call.bind([&mut dats, &mut buffers, &mut pads], 3);
        call.extra_mut()[0] = 77;
        // Rows of the same shape that are not the ones bound, and an
        // element past the bound ones, are refused without running.
        assert!(call.call([&mut other, &mut buffers, &mut pads], 2).is_err());
        assert!(call.call([&mut dats, &mut buffers, &mut pads], 3).is_err());
        assert_eq!(CALLS.load(Ordering::SeqCst), before);
        // The code gets the column's first row (its element's row is its
        // own to find) and the extra slot.
        assert!(call.call([&mut dats, &mut buffers, &mut pads], 2).is_ok());
        assert_eq!(CALLS.load(Ordering::SeqCst), before + 1);
        // A column too short for the elements, or of another width, leaves
        // the call unbound.
        call.bind([&mut dats, &mut buffers, &mut pads], 4);
        assert!(call.call([&mut dats, &mut buffers, &mut pads], 2).is_err());
        let mut narrow = Rows::new([
            (ScalarType::Int, 1, vec![0; 3]),
            (ScalarType::Double, 1, vec![10, 11, 12]),
        ]);
        call.bind([&mut narrow, &mut buffers, &mut pads], 3);
        assert!(
            call.call([&mut narrow, &mut buffers, &mut pads], 2)
                .is_err()
        );
        assert_eq!(CALLS.load(Ordering::SeqCst), before + 1);
    }
}
