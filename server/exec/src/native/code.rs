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
//!   overlap;
//! - the function pointer comes from the module this value owns, with the
//!   signature `extern "C" fn(*const *mut u8, i64, i64, *mut i64) -> i32`
//!   it was declared with, and the module lives (and its memory stays
//!   mapped) as long as this value;
//! - calls that run at the same time on several threads ([`Bound::call`])
//!   never touch the same bytes where one of them writes: the caller runs
//!   at once only blocks that `super::plan` coloured apart, and each block
//!   reduces globals into a buffer of its own.

#![allow(unsafe_code)]

use cranelift_codegen::settings::{self, Configurable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::FuncId;

use super::compile::{MATH, RowSource, Slot};
use super::flat::Buffer;

/// Why the compiled engine is not available on this machine.
pub(crate) fn new_module() -> Result<JITModule, String> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(|e| e.to_string())?;
    // Position-dependent code: the JIT places it itself.
    flags.set("is_pic", "false").map_err(|e| e.to_string())?;
    // A frame larger than a page touches each page in turn, so that even a
    // frame past the end of a thread's stack meets its guard page (a clean
    // stack overflow) instead of memory beyond it. `compile::MAX_FRAME`
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
    let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
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
    /// long as the call lives.
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
        let mut columns = Vec::new();
        let mut extras = Vec::new();
        for (k, source) in args.iter().enumerate() {
            match *source {
                RowSource::None => {}
                RowSource::Column {
                    group,
                    column,
                    width,
                } => columns.push((k, group as usize, column as usize, width as usize)),
                RowSource::Extra(slot) => extras.push((k, slot as usize)),
            }
        }
        KernelCall {
            entry,
            columns,
            extras,
            rows: vec![std::ptr::null_mut(); args.len()],
            table,
        }
    }
}

/// One execute handler's code, with where its arguments' rows are and the
/// const table it reads.
pub(crate) struct KernelCall {
    entry: Entry,
    /// Per argument whose row is in a column: the argument, the column's
    /// group and index, and the row's width.
    columns: Vec<(usize, usize, usize, usize)>,
    /// Per argument whose row is an extra slot: the argument and the slot.
    extras: Vec<(usize, usize)>,
    /// The rows of the call under way, one per argument (null for an
    /// argument without one).
    rows: Vec<*mut u8>,
    table: Vec<*mut u8>,
}

impl KernelCall {
    /// Runs the handler on `element`: argument `k`'s row is row `element`
    /// of the column its [`RowSource`] names in `groups`, or one of
    /// `extra`'s slots. Fails without running when a row is out of range.
    pub(crate) fn call<C: AsMut<Vec<u64>>>(
        &mut self,
        mut groups: [&mut [C]; 3],
        extra: &mut [u64],
        element: usize,
    ) -> Result<(), Stop> {
        let out_of_range = || Stop {
            site: 0,
            element: i64::try_from(element).unwrap_or(i64::MAX),
            index: 0,
        };
        // Every row is checked to be within its buffer: the code reads and
        // writes `width` slots of each (`compile_handler` checked that
        // every argument is that wide). Pointers come from `as_mut_ptr`,
        // which creates no reference to the buffer, so two arguments may
        // share a row, as the interpreter's staging lets them.
        for &(k, group, column, width) in &self.columns {
            let slots = groups
                .get_mut(group)
                .and_then(|g| g.get_mut(column))
                .ok_or_else(out_of_range)?
                .as_mut();
            let start = element.checked_mul(width).ok_or_else(out_of_range)?;
            if start.checked_add(width).is_none_or(|end| end > slots.len()) {
                return Err(out_of_range());
            }
            let row = self.rows.get_mut(k).ok_or_else(out_of_range)?;
            *row = slots.as_mut_ptr().wrapping_add(start).cast();
        }
        let (extra_len, extra) = (extra.len(), extra.as_mut_ptr());
        for &(k, slot) in &self.extras {
            if slot >= extra_len {
                return Err(out_of_range());
            }
            let row = self.rows.get_mut(k).ok_or_else(out_of_range)?;
            *row = extra.wrapping_add(slot).cast();
        }
        let mut out = [0i64; 2];
        // SAFETY: the code reads and writes the rows of the table, each
        // checked above to lie within a buffer borrowed mutably for the
        // call, and reads the consts through the const table, whose
        // buffers the owner keeps alive and unchanged (see
        // `Code::kernel_call`); the const indices the code computes are
        // bounds-checked by the code itself. One call at a time: `self` is
        // borrowed mutably.
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
    /// The same loop with each global `globals[i]`'s slot pointing at
    /// `partials[i]` instead (a block's partial reductions).
    pub(crate) fn with_globals<'p>(
        &self,
        globals: &[usize],
        partials: &'p mut [Vec<u64>],
    ) -> Bound<'p>
    where
        'm: 'p,
    {
        assert_eq!(globals.len(), partials.len(), "one partial per global");
        let mut table = self.table.clone();
        for (&global, values) in globals.iter().zip(partials.iter_mut()) {
            let k = self
                .slots
                .iter()
                .position(|s| *s == Slot::Global(global))
                .expect("a reduced global has a slot in its loop's table");
            assert!(
                values.len() * 8 >= self.need[k],
                "partial {global} too short"
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
