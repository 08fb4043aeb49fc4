//! The interpreter of lowered bodies: each kernel (and `main`) is compiled
//! once into closures over resolved slots, so that running it on a million
//! elements never walks the tree or looks a name up. C semantics come from
//! `op2_analysis::value`: the same arithmetic the constant evaluator uses.

use op2_analysis::consts::call_builtin;
use op2_analysis::hir::{Body, Expr, ExprKind, Link, LocalInit, Place, Stmt, StmtKind, Var};
use op2_analysis::model::{DatId, InvocationId};
use op2_analysis::value::{self, EvalError, Value};
use op2_syntax::TextRange;
use op2_syntax::ast::{BinaryOp, ScalarType};

/// Why running stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Integer division or remainder by zero.
    DivisionByZero(TextRange),
    /// An index outside its array.
    IndexOutOfRange {
        /// Where.
        range: TextRange,
        /// The index (an `ull` past `i64::MAX` as it is).
        index: i128,
        /// The array's length.
        length: usize,
    },
    /// `main` ran longer than allowed.
    IterationLimit(u64),
    /// A statement went past one of the limits of reliability.md (a `*`
    /// width of `print` above the limit); the message says which.
    Limit {
        /// The statement.
        range: TextRange,
        /// What went past which limit.
        message: String,
    },
    /// Something the host reports (an invocation failed).
    Host(String),
}

/// The loop iterations one kernel evaluation (one element of a par_loop)
/// may run, all its loops together, in every engine (the interpreter, the
/// compiled engine and the simulation): a loop that runs longer, such as
/// `for (int n = 0; ; n++)` that never breaks, stops `op2 run` and `op2
/// simulate` with [`kernel_loop_limit`] instead of running forever.
pub const MAX_KERNEL_ITERATIONS: u64 = 1 << 24;

/// The fault of a kernel loop that went past [`MAX_KERNEL_ITERATIONS`]:
/// `range` is the loop's statement.
pub fn kernel_loop_limit(range: TextRange) -> Fault {
    Fault::Limit {
        range,
        message: format!(
            "this loop went past the limit of {MAX_KERNEL_ITERATIONS} loop iterations of one kernel evaluation"
        ),
    }
}

/// What the interpreted code asks of the world around it.
pub trait Host {
    /// `print(…)` or `printf(…)` produced this text.
    fn print(&mut self, text: &str);
    /// The length of the part of a line that the output so far left
    /// without a newline (kept by the host, for [`crate::printf::continue_line`]).
    fn unfinished_line(&mut self) -> &mut usize;
    /// Whether this host runs `main` (the default), rather than taking a
    /// kernel's prints: a kernel's frame may have a host only for its
    /// `print`/`printf`, and its loops spend the kernel's budget.
    fn runs_main(&self) -> bool {
        true
    }
    /// `main` runs a par_loop; `globals` are `main`'s globals.
    fn par_loop(
        &mut self,
        invocation: InvocationId,
        globals: &mut [Vec<Value>],
    ) -> Result<(), Fault>;
    /// `main` fetches a dat: its values now, element-major (`element ×
    /// dimension + component`).
    fn dat_values(&mut self, dat: DatId) -> Result<Vec<Value>, Fault>;
}

/// The state a body runs in.
pub struct Frame<'a> {
    /// Parameters' components, then locals', flattened.
    pub slots: &'a mut [Value],
    /// Values of the consts (instance data applied).
    pub consts: &'a [Vec<Value>],
    /// Sizes of the sets.
    pub lengths: &'a [i32],
    /// The globals (`main` only).
    pub globals: &'a mut [Vec<Value>],
    /// The host: `main`'s, or in a kernel evaluation one that takes only
    /// the kernel's prints ([`Host::runs_main`] is false).
    pub host: Option<&'a mut dyn Host>,
    /// Loop iterations left: of `main`'s `--max-iterations`, or, in a
    /// kernel evaluation (a frame without a host that runs `main`), of
    /// [`MAX_KERNEL_ITERATIONS`].
    pub budget: u64,
}

impl std::fmt::Debug for Frame<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frame")
            .field("slots", &self.slots.len())
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

type Ex = Box<dyn Fn(&mut Frame<'_>) -> Result<Value, Fault> + Send + Sync>;
type St = Box<dyn Fn(&mut Frame<'_>) -> Result<Flow, Fault> + Send + Sync>;

/// How a statement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next statement.
    Normal,
    /// `break`
    Break,
    /// `continue`
    Continue,
    /// `return`
    Return,
    /// `exit(status)`
    Exit(u8),
}

/// Where a variable's components live.
#[derive(Clone, Copy, Debug)]
enum Storage {
    /// In the frame's slots, from `base`, `length` components.
    Slot { base: usize, length: usize },
    /// A const's values.
    Const(usize),
    /// A global's values.
    Global(usize),
}

struct CompiledPlace {
    storage: Storage,
    index: Option<Ex>,
    /// A literal index, known when compiling (the common `q[0]`).
    fixed: Option<i128>,
    range: TextRange,
}

impl CompiledPlace {
    #[inline]
    fn locate(&self, frame: &mut Frame<'_>) -> Result<usize, Fault> {
        let index = match (self.fixed, &self.index) {
            (Some(fixed), _) => fixed,
            (None, Some(index)) => index(frame)?.as_i128().unwrap_or(0),
            (None, None) => 0,
        };
        let length = match self.storage {
            Storage::Slot { length, .. } => length,
            Storage::Const(id) => frame.consts[id].len(),
            Storage::Global(id) => frame.globals[id].len(),
        };
        match usize::try_from(index) {
            Ok(i) if i < length => Ok(i),
            _ => Err(Fault::IndexOutOfRange {
                range: self.range,
                index,
                length,
            }),
        }
    }

    #[inline]
    fn get(&self, frame: &mut Frame<'_>) -> Result<Value, Fault> {
        let i = self.locate(frame)?;
        Ok(self.get_at(frame, i))
    }

    /// The component `i` (located already: a compound assignment or `++`
    /// evaluates its place's index once, as C does).
    #[inline]
    fn get_at(&self, frame: &Frame<'_>, i: usize) -> Value {
        match self.storage {
            Storage::Slot { base, .. } => frame.slots[base + i],
            Storage::Const(id) => frame.consts[id][i],
            Storage::Global(id) => frame.globals[id][i],
        }
    }

    #[inline]
    fn set_at(&self, frame: &mut Frame<'_>, i: usize, value: Value) {
        match self.storage {
            Storage::Slot { base, .. } => frame.slots[base + i] = value,
            // Consts are never written (the analysis rejects it).
            Storage::Const(_) => {}
            Storage::Global(id) => frame.globals[id][i] = value,
        }
    }
}

/// Slot layout of a body: parameters first, then locals.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Per parameter: first slot and component count.
    pub params: Vec<(usize, usize)>,
    /// Per local: first slot and component count.
    pub locals: Vec<(usize, usize)>,
    /// Total slots.
    pub size: usize,
    /// Types of the locals, for zeroing.
    local_types: Vec<ScalarType>,
}

impl Layout {
    /// Lays out parameters of the given lengths and the body's locals.
    pub fn new(param_lengths: &[usize], body: &Body) -> Layout {
        let mut size = 0;
        let params = param_lengths
            .iter()
            .map(|&length| {
                let slot = (size, length);
                size += length;
                slot
            })
            .collect();
        let locals = body
            .locals
            .iter()
            .map(|local| {
                let length = local.dimension.unwrap_or(1) as usize;
                let slot = (size, length);
                size += length;
                slot
            })
            .collect();
        Layout {
            params,
            locals,
            size,
            local_types: body.locals.iter().map(|l| l.ty).collect(),
        }
    }
}

/// An expression compiled to closures, over a body's slot layout.
pub struct CompiledExpr {
    expr: Ex,
}

impl std::fmt::Debug for CompiledExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompiledExpr")
    }
}

impl CompiledExpr {
    /// Compiles `expr`, which uses the locals of `body` (and no parameters).
    pub fn new(body: &Body, expr: &Expr) -> CompiledExpr {
        let layout = Layout::new(&[], body);
        let compiler = Compiler { layout: &layout };
        CompiledExpr {
            expr: compiler.expr(expr),
        }
    }

    /// Evaluates the expression.
    pub fn eval(&self, frame: &mut Frame<'_>) -> Result<Value, Fault> {
        (self.expr)(frame)
    }
}

/// A body compiled to closures.
pub struct Compiled {
    statements: Vec<St>,
    /// The slot layout the body expects.
    pub layout: Layout,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// Compiles `body`, whose parameters have the given lengths.
    pub fn new(body: &Body, param_lengths: &[usize]) -> Compiled {
        let layout = Layout::new(param_lengths, body);
        let compiler = Compiler { layout: &layout };
        let statements = body.statements.iter().map(|s| compiler.stmt(s)).collect();
        Compiled { statements, layout }
    }

    /// Runs the body.
    pub fn run(&self, frame: &mut Frame<'_>) -> Result<(), Fault> {
        self.run_main(frame).map(|_| ())
    }

    /// Runs `main`: the status of the `exit` that ended it, if one did.
    pub fn run_main(&self, frame: &mut Frame<'_>) -> Result<Option<u8>, Fault> {
        for statement in &self.statements {
            match statement(frame)? {
                Flow::Return => break,
                Flow::Exit(status) => return Ok(Some(status)),
                Flow::Normal | Flow::Break | Flow::Continue => {}
            }
        }
        Ok(None)
    }
}

struct Compiler<'a> {
    layout: &'a Layout,
}

fn fault(error: EvalError, range: TextRange) -> Fault {
    match error {
        EvalError::DivisionByZero => Fault::DivisionByZero(range),
        // The analysis rejects ill-typed operations before anything runs.
        EvalError::InvalidOperands => Fault::Host(format!("invalid operands at {range:?}")),
    }
}

impl Compiler<'_> {
    fn place(&self, place: &Place) -> CompiledPlace {
        let storage = match place.var {
            Var::Param(k) => {
                let (base, length) = self.layout.params[k as usize];
                Storage::Slot { base, length }
            }
            Var::Local(id) => {
                let (base, length) = self.layout.locals[id.0 as usize];
                Storage::Slot { base, length }
            }
            Var::Const(id) => Storage::Const(id.index()),
            Var::Global(id) => Storage::Global(id.index()),
        };
        let fixed = place
            .index
            .as_deref()
            .and_then(op2_analysis::hir::literal_index);
        CompiledPlace {
            storage,
            index: place
                .index
                .as_ref()
                .filter(|_| fixed.is_none())
                .map(|i| self.expr(i)),
            fixed,
            range: place.range,
        }
    }

    fn expr(&self, expr: &Expr) -> Ex {
        let range = expr.range;
        let ty = expr.ty;
        match &expr.kind {
            ExprKind::Literal(v) => {
                let v = *v;
                Box::new(move |_| Ok(v))
            }
            ExprKind::Load(place) => {
                let place = self.place(place);
                Box::new(move |frame| place.get(frame))
            }
            ExprKind::Len(set) => {
                let set = set.index();
                Box::new(move |frame| Ok(Value::Int(frame.lengths[set])))
            }
            ExprKind::Assign { place, op, value } => {
                let place = self.place(place);
                let value = self.expr(value);
                let op = op.binary();
                Box::new(move |frame| {
                    let v = value(frame)?;
                    let i = place.locate(frame)?;
                    let stored = match op {
                        None => v.convert(ty),
                        Some(op) => {
                            let old = place.get_at(frame, i);
                            let operand = if matches!(op, BinaryOp::Shl | BinaryOp::Shr) {
                                old
                            } else {
                                old.convert(v.ty())
                            };
                            value::binary(op, operand, v)
                                .map_err(|e| fault(e, range))?
                                .convert(ty)
                        }
                    };
                    place.set_at(frame, i, stored);
                    Ok(stored)
                })
            }
            ExprKind::Update {
                place,
                increment,
                prefix,
            } => {
                let place = self.place(place);
                let op = if *increment {
                    BinaryOp::Add
                } else {
                    BinaryOp::Sub
                };
                let prefix = *prefix;
                Box::new(move |frame| {
                    let i = place.locate(frame)?;
                    let old = place.get_at(frame, i);
                    let new = value::binary(op, old, Value::Int(1))
                        .map_err(|e| fault(e, range))?
                        .convert(ty);
                    place.set_at(frame, i, new);
                    Ok(if prefix { new } else { old })
                })
            }
            ExprKind::Unary(op, operand) => {
                let operand = self.expr(operand);
                let op = *op;
                Box::new(move |frame| {
                    value::unary(op, operand(frame)?).map_err(|e| fault(e, range))
                })
            }
            ExprKind::Binary(op, left, right) => {
                let left = self.expr(left);
                let right = self.expr(right);
                match op {
                    BinaryOp::And => Box::new(move |frame| {
                        let l = left(frame)?.is_true();
                        Ok(Value::Int(i32::from(l && right(frame)?.is_true())))
                    }),
                    BinaryOp::Or => Box::new(move |frame| {
                        let l = left(frame)?.is_true();
                        Ok(Value::Int(i32::from(l || right(frame)?.is_true())))
                    }),
                    _ => {
                        let op = *op;
                        Box::new(move |frame| {
                            let l = left(frame)?;
                            let r = right(frame)?;
                            value::binary(op, l, r).map_err(|e| fault(e, range))
                        })
                    }
                }
            }
            ExprKind::Chain(first, links) => {
                let first = self.expr(first);
                let links: Vec<(BinaryOp, ScalarType, Ex, TextRange)> = links
                    .iter()
                    .map(
                        |Link {
                             op,
                             operand,
                             right,
                             range,
                             ..
                         }| { (*op, *operand, self.expr(right), *range) },
                    )
                    .collect();
                Box::new(move |frame| {
                    let mut acc = first(frame)?;
                    for (op, operand, right, range) in &links {
                        acc = match op {
                            BinaryOp::And => {
                                Value::Int(i32::from(acc.is_true() && right(frame)?.is_true()))
                            }
                            BinaryOp::Or => {
                                Value::Int(i32::from(acc.is_true() || right(frame)?.is_true()))
                            }
                            _ => value::binary(*op, acc.convert(*operand), right(frame)?)
                                .map_err(|e| fault(e, *range))?,
                        };
                    }
                    Ok(acc)
                })
            }
            ExprKind::Conditional(c, a, b) => {
                let (c, a, b) = (self.expr(c), self.expr(a), self.expr(b));
                Box::new(move |frame| {
                    if c(frame)?.is_true() {
                        a(frame)
                    } else {
                        b(frame)
                    }
                })
            }
            ExprKind::Convert { value, .. } => {
                let value = self.expr(value);
                Box::new(move |frame| Ok(value(frame)?.convert(ty)))
            }
            ExprKind::Call(builtin, args) => {
                let args: Vec<Ex> = args.iter().map(|a| self.expr(a)).collect();
                let builtin = *builtin;
                Box::new(move |frame| {
                    let mut values = [Value::Int(0); 2];
                    for (slot, arg) in values.iter_mut().zip(&args) {
                        *slot = arg(frame)?;
                    }
                    Ok(call_builtin(builtin, &values[..args.len()], ty))
                })
            }
            // Not reached: programs with errors are not run.
            ExprKind::Error => Box::new(|_| Ok(Value::Int(0))),
        }
    }

    fn block(&self, stmts: &[Stmt]) -> St {
        let stmts: Vec<St> = stmts.iter().map(|s| self.stmt(s)).collect();
        Box::new(move |frame| {
            for stmt in &stmts {
                let flow = stmt(frame)?;
                if flow != Flow::Normal {
                    return Ok(flow);
                }
            }
            Ok(Flow::Normal)
        })
    }

    fn stmt(&self, stmt: &Stmt) -> St {
        let range = stmt.range;
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                let expr = self.expr(expr);
                Box::new(move |frame| expr(frame).map(|_| Flow::Normal))
            }
            StmtKind::Local { local, init } => {
                let (base, length) = self.layout.locals[local.0 as usize];
                let ty = self.layout.local_types[local.0 as usize];
                let items: Vec<Ex> = match init {
                    Some(LocalInit::Expr(e)) => vec![self.expr(e)],
                    Some(LocalInit::List(items)) => items.iter().map(|e| self.expr(e)).collect(),
                    None => Vec::new(),
                };
                Box::new(move |frame| {
                    // Components without an initialiser are zero (C leaves
                    // scalars indeterminate; zero is one of its outcomes).
                    for c in 0..length {
                        let value = match items.get(c) {
                            Some(item) => item(frame)?.convert(ty),
                            None => Value::zero(ty),
                        };
                        frame.slots[base + c] = value;
                    }
                    Ok(Flow::Normal)
                })
            }
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => self.block(stmts),
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                let condition = self.expr(condition);
                let then_branch = self.stmt(then_branch);
                let else_branch = else_branch.as_ref().map(|e| self.stmt(e));
                Box::new(move |frame| {
                    if condition(frame)?.is_true() {
                        then_branch(frame)
                    } else if let Some(e) = &else_branch {
                        e(frame)
                    } else {
                        Ok(Flow::Normal)
                    }
                })
            }
            StmtKind::While { condition, body } => {
                let condition = self.expr(condition);
                let body = self.stmt(body);
                Box::new(move |frame| {
                    while condition(frame)?.is_true() {
                        spend(frame, range)?;
                        match body(frame)? {
                            Flow::Break => break,
                            flow @ (Flow::Return | Flow::Exit(_)) => return Ok(flow),
                            Flow::Normal | Flow::Continue => {}
                        }
                    }
                    Ok(Flow::Normal)
                })
            }
            StmtKind::DoWhile { body, condition } => {
                let condition = self.expr(condition);
                let body = self.stmt(body);
                Box::new(move |frame| {
                    loop {
                        spend(frame, range)?;
                        match body(frame)? {
                            Flow::Break => break,
                            flow @ (Flow::Return | Flow::Exit(_)) => return Ok(flow),
                            Flow::Normal | Flow::Continue => {}
                        }
                        if !condition(frame)?.is_true() {
                            break;
                        }
                    }
                    Ok(Flow::Normal)
                })
            }
            StmtKind::For {
                init,
                condition,
                step,
                body,
            } => {
                let init = init.as_ref().map(|i| self.stmt(i));
                let condition = condition.as_ref().map(|c| self.expr(c));
                let step = step.as_ref().map(|s| self.expr(s));
                let body = self.stmt(body);
                Box::new(move |frame| {
                    if let Some(init) = &init {
                        init(frame)?;
                    }
                    loop {
                        if let Some(condition) = &condition
                            && !condition(frame)?.is_true()
                        {
                            break;
                        }
                        spend(frame, range)?;
                        match body(frame)? {
                            Flow::Break => break,
                            flow @ (Flow::Return | Flow::Exit(_)) => return Ok(flow),
                            Flow::Normal | Flow::Continue => {}
                        }
                        if let Some(step) = &step {
                            step(frame)?;
                        }
                    }
                    Ok(Flow::Normal)
                })
            }
            StmtKind::Break => Box::new(|_| Ok(Flow::Break)),
            StmtKind::Continue => Box::new(|_| Ok(Flow::Continue)),
            StmtKind::Return => Box::new(|_| Ok(Flow::Return)),
            StmtKind::ParLoop(invocation) => {
                let invocation = *invocation;
                Box::new(move |frame| {
                    if let Some(host) = frame.host.as_deref_mut() {
                        host.par_loop(invocation, frame.globals)?;
                    }
                    Ok(Flow::Normal)
                })
            }
            StmtKind::Print {
                ends_line,
                format,
                pieces,
                args,
            } => {
                let ends_line = *ends_line;
                let format = format.clone();
                let pieces = pieces.clone();
                let args: Vec<Ex> = args.iter().map(|a| self.expr(a)).collect();
                Box::new(move |frame| {
                    let mut values = Vec::with_capacity(args.len());
                    for arg in &args {
                        values.push(arg(frame)?);
                    }
                    // `print` writes one line, as the POETS log call it
                    // becomes does: a newline ends it unless the format
                    // already did. `printf` writes exactly what C's does.
                    let mut text = crate::printf::format(&format, &pieces, &values)
                        .map_err(|message| Fault::Limit { range, message })?;
                    if ends_line && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    if let Some(host) = frame.host.as_deref_mut() {
                        crate::printf::continue_line(host.unfinished_line(), &text)
                            .map_err(|message| Fault::Limit { range, message })?;
                        host.print(&text);
                    }
                    Ok(Flow::Normal)
                })
            }
            StmtKind::Exit(status) => {
                let at = status.range;
                let status = self.expr(status);
                Box::new(move |frame| Ok(Flow::Exit(exit_status(status(frame)?, at)?)))
            }
            StmtKind::Fetch { dat, global, .. } => {
                let (dat, global) = (*dat, global.index());
                Box::new(move |frame| {
                    if let Some(host) = frame.host.as_deref_mut() {
                        let values = host.dat_values(dat)?;
                        fetch_into(&values, &mut frame.globals[global], range)?;
                    }
                    Ok(Flow::Normal)
                })
            }
        }
    }
}

/// `fetch`: the dat's `values` become the global's, which must hold exactly
/// as many (its type is the dat's, E609); a global of another length stops
/// the run at the statement (`range`), as the set's size comes with the
/// instance data.
pub fn fetch_into(values: &[Value], global: &mut [Value], range: TextRange) -> Result<(), Fault> {
    if values.len() != global.len() {
        return Err(Fault::Limit {
            range,
            message: format!(
                "`fetch` copies {} value{} (the dat's set's size times its dimension) into a global of {} (E609); declare the global with exactly that many",
                values.len(),
                if values.len() == 1 { "" } else { "s" },
                global.len()
            ),
        });
    }
    global.copy_from_slice(values);
    Ok(())
}

/// The status `exit(value)` ends the program with (`range` is the status's
/// expression): an error when it is outside 0..=255, which `op2 check`
/// refuses for a literal (E607).
pub fn exit_status(value: Value, range: TextRange) -> Result<u8, Fault> {
    let status = value.as_i64();
    status
        .and_then(|v| u8::try_from(v).ok())
        .ok_or_else(|| Fault::Limit {
            range,
            message: format!(
                "exit status {} is outside 0..=255, the statuses a process can end with",
                status.map_or_else(|| format!("{value:?}"), |v| v.to_string())
            ),
        })
}

/// Counts one iteration of the loop at `range` against the budget.
#[inline]
fn spend(frame: &mut Frame<'_>, range: TextRange) -> Result<(), Fault> {
    if frame.budget == 0 {
        return Err(if frame.host.as_deref().is_some_and(|h| h.runs_main()) {
            Fault::IterationLimit(0)
        } else {
            kernel_loop_limit(range)
        });
    }
    frame.budget -= 1;
    Ok(())
}
