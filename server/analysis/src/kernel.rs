//! What a kernel body does with each parameter: reads, `=` writes, compound
//! assignments, `++`/`--`, components read before they are written, and
//! constant indices. Computed once per kernel text; the par_loops that bind
//! the kernel check it against their access modes.

use op2_syntax::TextRange;
use op2_syntax::ast::AssignOp;
use rustc_hash::FxHashMap;

use crate::consts::ConstValues;
use crate::hir::{Body, Expr, ExprKind, LocalInit, Place, Stmt, StmtKind, Var};
use crate::value::Value;

/// What the body does with one parameter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamUsage {
    /// Plain reads (`q[0]` as a value).
    pub reads: Vec<TextRange>,
    /// `=` assignments (the whole assignment expression).
    pub assigns: Vec<TextRange>,
    /// Compound assignments, with their operator.
    pub compound: Vec<(TextRange, AssignOp)>,
    /// `++` and `--`.
    pub updates: Vec<TextRange>,
    /// Reads (plain, compound or `++`) of a component that is not written
    /// before on some path through the body. Never over-approximated: each
    /// is certainly a read of an unwritten component on some path.
    pub unwritten_reads: Vec<TextRange>,
    /// Indices whose value is known at compile time, with their range.
    pub constant_indices: Vec<(i128, TextRange)>,
    /// The components (below 64) written on every path from the start of
    /// the body to its end or a `return`: what a `WRITE` must cover.
    pub written_at_exit: u64,
    /// Whether some path may write a component through an index that is
    /// not a constant: then [`ParamUsage::written_at_exit`] may miss
    /// components that are written, and nothing is claimed about them.
    pub dynamic_writes: bool,
}

impl ParamUsage {
    /// True when the body changes the parameter in any way.
    pub fn is_written(&self) -> bool {
        !self.assigns.is_empty() || !self.compound.is_empty() || !self.updates.is_empty()
    }

    /// True when the body observes the parameter's incoming value.
    pub fn is_read(&self) -> bool {
        !self.reads.is_empty() || !self.compound.is_empty() || !self.updates.is_empty()
    }

    /// The first component of `0 .. dim` that some path through the body
    /// leaves unwritten, when that is certain: `None` when every one is
    /// written on every path, and when a write through a computed index
    /// might be what sets it (or `dim` is past the 64 components tracked).
    pub fn unwritten_component(&self, dim: u32) -> Option<u32> {
        if self.writes_every_component(dim) {
            return None;
        }
        if self.dynamic_writes || dim > 64 {
            return None;
        }
        (0..dim).find(|c| self.written_at_exit & (1 << c) == 0)
    }

    /// Whether every component of `0 .. dim` is written, through a
    /// constant index, on every path through the body: certain, never
    /// guessed (a loop that writes `q[i]` for every `i` does not count).
    pub fn writes_every_component(&self, dim: u32) -> bool {
        dim <= 64 && (0..dim).all(|c| self.written_at_exit & (1 << c) != 0)
    }

    /// Uses an INC parameter may not have: reads, `=` and compound
    /// operators other than `+=`/`-=`.
    pub fn non_increment_uses(&self) -> Vec<TextRange> {
        let mut uses: Vec<TextRange> = self.reads.iter().chain(&self.assigns).copied().collect();
        uses.extend(
            self.compound
                .iter()
                .filter(|(_, op)| !matches!(op, AssignOp::Add | AssignOp::Sub))
                .map(|(range, _)| *range),
        );
        uses.sort();
        uses
    }

    /// Every place the parameter is written.
    pub fn writes(&self) -> Vec<TextRange> {
        let mut writes: Vec<TextRange> = self
            .assigns
            .iter()
            .chain(&self.updates)
            .chain(self.compound.iter().map(|(r, _)| r))
            .copied()
            .collect();
        writes.sort();
        writes
    }
}

/// What the body does with every parameter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelSummary {
    /// One entry per parameter.
    pub params: Vec<ParamUsage>,
}

/// Summarises a lowered kernel body with `params` parameters.
pub fn summarise(body: &Body, params: usize, consts: &ConstValues) -> KernelSummary {
    let mut usage = vec![ParamUsage::default(); params];
    // Syntactic uses.
    let discarded = discarded_values(body);
    for stmt in &body.statements {
        crate::hir::walk_stmt_exprs(stmt, &mut |expr| {
            collect_use(expr, &mut usage, consts, &discarded);
        });
    }
    // Reads before writes, path by path.
    let mut flow = Flow {
        params,
        record: true,
        unwritten: vec![Vec::new(); params],
        loops: Vec::new(),
        settled: FxHashMap::default(),
        returns: None,
    };
    let end = flow.block(&body.statements, Some(State::entry(params)));
    // What every way out of the body has written (none: the body never
    // ends, so nothing is left unwritten).
    let exit = State::join(end, flow.returns.take());
    for (k, (usage, mut reads)) in usage.iter_mut().zip(flow.unwritten).enumerate() {
        reads.sort();
        reads.dedup();
        usage.unwritten_reads = reads;
        (usage.written_at_exit, usage.dynamic_writes) = match &exit {
            Some(exit) => (exit.definitely[k], exit.maybe_dynamic[k]),
            None => (u64::MAX, false),
        };
    }
    KernelSummary { params: usage }
}

/// The expressions whose value is thrown away (by address): those that are
/// whole statements and the steps of `for` loops. Every other `++`, `--`
/// or compound assignment gives its value to the expression around it,
/// which reads the variable (`o[0] = q[0]++;`).
fn discarded_values(body: &Body) -> rustc_hash::FxHashSet<usize> {
    let mut discarded = rustc_hash::FxHashSet::default();
    for stmt in crate::hir::statements(body) {
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                discarded.insert(std::ptr::from_ref(expr) as usize);
            }
            StmtKind::For {
                step: Some(step), ..
            } => {
                discarded.insert(std::ptr::from_ref(step) as usize);
            }
            _ => {}
        }
    }
    discarded
}

fn param_of(place: &Place) -> Option<usize> {
    match place.var {
        Var::Param(k) => Some(k as usize),
        _ => None,
    }
}

fn collect_use(
    expr: &Expr,
    usage: &mut [ParamUsage],
    consts: &ConstValues,
    discarded: &rustc_hash::FxHashSet<usize>,
) {
    // The value of `q[0]++` or `(q[0] += x)` inside a larger expression
    // is the parameter's value: a read as well as a write.
    let value_used = !discarded.contains(&(std::ptr::from_ref(expr) as usize));
    let index_of = |place: &Place, usage: &mut [ParamUsage]| {
        if let (Some(k), Some(index)) = (param_of(place), &place.index)
            && let Some(value) = consts.eval(index).and_then(Value::as_i128)
            && let Some(u) = usage.get_mut(k)
        {
            u.constant_indices.push((value, index.range));
        }
    };
    match &expr.kind {
        ExprKind::Load(place) => {
            index_of(place, usage);
            if let Some(u) = param_of(place).and_then(|k| usage.get_mut(k)) {
                u.reads.push(expr.range);
            }
        }
        ExprKind::Assign { place, op, .. } => {
            index_of(place, usage);
            if let Some(u) = param_of(place).and_then(|k| usage.get_mut(k)) {
                match op {
                    AssignOp::Assign => u.assigns.push(expr.range),
                    other => {
                        u.compound.push((expr.range, *other));
                        if value_used {
                            u.reads.push(expr.range);
                        }
                    }
                }
            }
        }
        ExprKind::Update { place, .. } => {
            index_of(place, usage);
            if let Some(u) = param_of(place).and_then(|k| usage.get_mut(k)) {
                u.updates.push(expr.range);
                if value_used {
                    u.reads.push(expr.range);
                }
            }
        }
        _ => {}
    }
}

/// Which components of each parameter are written at a program point.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    /// Components 0..64 written on every path so far.
    definitely: Vec<u64>,
    /// Some component possibly written through a non-constant index.
    maybe_dynamic: Vec<bool>,
    /// Anything at all possibly written.
    maybe_any: Vec<bool>,
}

impl State {
    fn entry(params: usize) -> State {
        State {
            definitely: vec![0; params],
            maybe_dynamic: vec![false; params],
            maybe_any: vec![false; params],
        }
    }

    fn join(a: Option<State>, b: Option<State>) -> Option<State> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(mut a), Some(b)) => {
                for k in 0..a.definitely.len() {
                    a.definitely[k] &= b.definitely[k];
                    a.maybe_dynamic[k] |= b.maybe_dynamic[k];
                    a.maybe_any[k] |= b.maybe_any[k];
                }
                Some(a)
            }
        }
    }
}

/// One pass over a loop: from the state at its head, the state that goes
/// back to the head and the state that leaves the loop.
type LoopBody<'a> = dyn FnMut(&mut Flow, State) -> (Option<State>, Option<State>) + 'a;

struct LoopFrame {
    breaks: Option<State>,
    continues: Option<State>,
}

struct Flow {
    params: usize,
    record: bool,
    unwritten: Vec<Vec<TextRange>>,
    loops: Vec<LoopFrame>,
    /// The exit state of each loop statement (by address) from each entry
    /// state, when not recording. A loop's passes to its fixed point pass
    /// over every loop inside it again; without this, loops nested `d` deep
    /// cost `2^d` passes over the innermost body (22 nested `for`s took
    /// 6 s to check, 40 never ended: fuzz seed 1, case 151422).
    settled: FxHashMap<(usize, State), Option<State>>,
    /// The states at the `return`s met so far, joined.
    returns: Option<State>,
}

/// The component an index names, when it is a small constant.
fn constant_component(place: &Place) -> Option<u32> {
    let index = place.index.as_deref()?;
    let value = crate::hir::literal_index(index)?;
    u32::try_from(value).ok().filter(|v| *v < 64)
}

impl Flow {
    fn read(&mut self, place: &Place, state: &State, range: TextRange) {
        let Some(k) = param_of(place) else { return };
        if k >= self.params || !self.record {
            return;
        }
        let unwritten = match constant_component(place) {
            Some(component) => {
                state.definitely[k] & (1 << component) == 0 && !state.maybe_dynamic[k]
            }
            None => !state.maybe_any[k],
        };
        if unwritten {
            self.unwritten[k].push(range);
        }
    }

    fn write(place: &Place, state: &mut State) {
        let Some(k) = param_of(place) else { return };
        if k >= state.definitely.len() {
            return;
        }
        state.maybe_any[k] = true;
        match constant_component(place) {
            Some(component) => state.definitely[k] |= 1 << component,
            None => state.maybe_dynamic[k] = true,
        }
    }

    /// The right operand of `op`, after the left one: `&&` and `||` may not
    /// run it.
    fn right_operand(&mut self, op: op2_syntax::ast::BinaryOp, right: &Expr, state: &mut State) {
        if matches!(
            op,
            op2_syntax::ast::BinaryOp::And | op2_syntax::ast::BinaryOp::Or
        ) {
            let mut taken = state.clone();
            self.expr(right, &mut taken);
            *state = State::join(Some(state.clone()), Some(taken))
                .unwrap_or_else(|| State::entry(self.params));
        } else {
            self.expr(right, state);
        }
    }

    /// Evaluates an expression for its reads and writes, in C's order for
    /// the forms where it is defined.
    fn expr(&mut self, expr: &Expr, state: &mut State) {
        match &expr.kind {
            ExprKind::Literal(_) | ExprKind::Len(_) | ExprKind::Error => {}
            ExprKind::Load(place) => {
                if let Some(index) = &place.index {
                    self.expr(index, state);
                }
                self.read(place, state, expr.range);
            }
            ExprKind::Assign { place, op, value } => {
                if let Some(index) = &place.index {
                    self.expr(index, state);
                }
                self.expr(value, state);
                if *op != AssignOp::Assign {
                    self.read(place, state, expr.range);
                }
                Self::write(place, state);
            }
            ExprKind::Update { place, .. } => {
                if let Some(index) = &place.index {
                    self.expr(index, state);
                }
                self.read(place, state, expr.range);
                Self::write(place, state);
            }
            ExprKind::Unary(_, a) | ExprKind::Convert { value: a, .. } => self.expr(a, state),
            ExprKind::Binary(op, a, b) => {
                self.expr(a, state);
                self.right_operand(*op, b, state);
            }
            ExprKind::Chain(first, links) => {
                self.expr(first, state);
                for link in links {
                    self.right_operand(link.op, &link.right, state);
                }
            }
            ExprKind::Conditional(c, a, b) => {
                self.expr(c, state);
                let mut then_state = state.clone();
                self.expr(a, &mut then_state);
                self.expr(b, state);
                *state = State::join(Some(then_state), Some(state.clone()))
                    .unwrap_or_else(|| State::entry(self.params));
            }
            ExprKind::Call(_, args) => {
                for arg in args {
                    self.expr(arg, state);
                }
            }
        }
    }

    fn block(&mut self, stmts: &[Stmt], mut state: Option<State>) -> Option<State> {
        for stmt in stmts {
            state = self.stmt(stmt, state?);
        }
        state
    }

    /// Runs a loop to a fixed point without recording, then once more
    /// recording, so that reads are judged against the state that holds on
    /// every iteration.
    fn run_loop(&mut self, entry: State, iterate: &mut LoopBody<'_>) -> Option<State> {
        let record = self.record;
        self.record = false;
        let mut head = entry.clone();
        for _ in 0..8 {
            let (back, _) = iterate(self, head.clone());
            let next = State::join(Some(entry.clone()), back).unwrap_or_else(|| entry.clone());
            let next = State::join(Some(head.clone()), Some(next)).unwrap_or_else(|| entry.clone());
            if next == head {
                break;
            }
            head = next;
        }
        self.record = record;
        let (_, exit) = iterate(self, head);
        exit
    }

    /// The state after `stmt` from `state`. A loop statement's effect
    /// while not recording depends on its entry state alone (its `break`s
    /// and `continue`s are its own), so it is computed once per entry state.
    fn stmt(&mut self, stmt: &Stmt, state: State) -> Option<State> {
        let is_loop = matches!(
            stmt.kind,
            StmtKind::For { .. } | StmtKind::While { .. } | StmtKind::DoWhile { .. }
        );
        if self.record || !is_loop {
            return self.stmt_once(stmt, state);
        }
        let key = (std::ptr::from_ref(stmt) as usize, state);
        if let Some(exit) = self.settled.get(&key) {
            return exit.clone();
        }
        let exit = self.stmt_once(stmt, key.1.clone());
        self.settled.insert(key, exit.clone());
        exit
    }

    fn stmt_once(&mut self, stmt: &Stmt, mut state: State) -> Option<State> {
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                self.expr(expr, &mut state);
                Some(state)
            }
            StmtKind::Local { init, .. } => {
                match init {
                    Some(LocalInit::Expr(expr)) => self.expr(expr, &mut state),
                    Some(LocalInit::List(items)) => {
                        items.iter().for_each(|e| self.expr(e, &mut state))
                    }
                    None => {}
                }
                Some(state)
            }
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => self.block(stmts, Some(state)),
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                self.expr(condition, &mut state);
                let then_state = self.stmt(then_branch, state.clone());
                let else_state = match else_branch {
                    Some(e) => self.stmt(e, state),
                    None => Some(state),
                };
                State::join(then_state, else_state)
            }
            StmtKind::While { condition, body } => self.run_loop(state, &mut |flow, head| {
                let mut after_condition = head;
                flow.expr(condition, &mut after_condition);
                flow.loops.push(LoopFrame {
                    breaks: None,
                    continues: None,
                });
                let end = flow.stmt(body, after_condition.clone());
                let frame = flow.loops.pop().unwrap_or(LoopFrame {
                    breaks: None,
                    continues: None,
                });
                let back = State::join(end, frame.continues);
                (back, State::join(Some(after_condition), frame.breaks))
            }),
            StmtKind::DoWhile { body, condition } => self.run_loop(state, &mut |flow, head| {
                flow.loops.push(LoopFrame {
                    breaks: None,
                    continues: None,
                });
                let end = flow.stmt(body, head);
                let frame = flow.loops.pop().unwrap_or(LoopFrame {
                    breaks: None,
                    continues: None,
                });
                let before_condition = State::join(end, frame.continues);
                let after_condition = before_condition.map(|mut s| {
                    flow.expr(condition, &mut s);
                    s
                });
                (
                    after_condition.clone(),
                    State::join(after_condition, frame.breaks),
                )
            }),
            StmtKind::For {
                init,
                condition,
                step,
                body,
            } => {
                let state = match init {
                    Some(init) => self.stmt(init, state)?,
                    None => state,
                };
                self.run_loop(state, &mut |flow, head| {
                    let mut after_condition = head;
                    if let Some(c) = condition {
                        flow.expr(c, &mut after_condition);
                    }
                    flow.loops.push(LoopFrame {
                        breaks: None,
                        continues: None,
                    });
                    let end = flow.stmt(body, after_condition.clone());
                    let frame = flow.loops.pop().unwrap_or(LoopFrame {
                        breaks: None,
                        continues: None,
                    });
                    let back = State::join(end, frame.continues).map(|mut s| {
                        if let Some(step) = step {
                            flow.expr(step, &mut s);
                        }
                        s
                    });
                    // With no condition the loop leaves only by `break`.
                    let exit = if condition.is_some() {
                        Some(after_condition)
                    } else {
                        None
                    };
                    (back, State::join(exit, frame.breaks))
                })
            }
            StmtKind::Break => {
                if let Some(frame) = self.loops.last_mut() {
                    frame.breaks = State::join(frame.breaks.take(), Some(state));
                }
                None
            }
            StmtKind::Continue => {
                if let Some(frame) = self.loops.last_mut() {
                    frame.continues = State::join(frame.continues.take(), Some(state));
                }
                None
            }
            StmtKind::Return => {
                // Joined in every pass: a pass before a loop's fixed point
                // has written no less than the last, so it changes nothing.
                self.returns = State::join(self.returns.take(), Some(state));
                None
            }
            StmtKind::Exit(_) => None,
            // A kernel's `printf` evaluates its arguments, which may read
            // and write parameters like any expression.
            StmtKind::Print { args, .. } => {
                for arg in args {
                    self.expr(arg, &mut state);
                }
                Some(state)
            }
            StmtKind::ParLoop(_) | StmtKind::Fetch { .. } => Some(state),
        }
    }
}
