//! Which dats and globals may end a run with values that depend on the order
//! in which floating-point contributions are summed.
//!
//! language.md §8 leaves the order of an INC's contributions unspecified
//! (a MIN or MAX gives the same result in every order), so `op2 run` and
//! `op2 simulate` may end with floating values a few units in the last place
//! apart; `op2 simulate --check` compares those within a tolerance
//! (`op2_exec::compare`). Such a difference grows past any tolerance when
//! it crosses a discontinuity: a conversion to an integer (8812.999999999998
//! and 8813.0 truncate to 8812 and 8813), a comparison, a branch, `floor`,
//! `ceil`, `round` or `atan2`. A value computed through one of those from
//! an order-dependent value may differ by any amount, and so may every
//! value that the branch decides.
//!
//! This module finds those values: each dat and global gets a
//! [`Sensitivity`]. The analysis is a propagation over a graph whose nodes
//! are the dats, the globals, and each kernel's parameters and locals (and
//! `main`'s), with one edge from every variable an assignment reads to the
//! variable it writes. It is flow-insensitive (a variable is as sensitive
//! as the most sensitive value ever assigned to it) and context-insensitive
//! (a kernel's parameter is as sensitive as the most sensitive argument any
//! par_loop passes it), so it may call a value order-dependent that is not,
//! never the reverse. A condition that is order-dependent makes every
//! variable assigned under it [`Sensitivity::Arbitrary`] (a loop's
//! condition: everything its condition, body and step assign), a `break`
//! or `continue` under one its whole loop, and a `return` or `exit` under
//! one every loop it is in and everything assigned after it. `main` is
//! walked the same way for its assignments; which par_loops it runs is not
//! marked here: the engines record the par_loops they ran, and a
//! comparison of two runs whose paths differ looks at
//! [`OrderDependence::main_branches`] to tell an order-dependent branch
//! from a wrong one.
//!
//! The cost is linear in the program: each variable's sensitivity rises at
//! most twice, and each edge is looked at once per rise of its source. The
//! walk over the bodies reads the left operand of a `&&` or `||` a second
//! time for the condition of its right one, so operators of that kind
//! nested in one another's left operands cost the nesting depth (at most
//! the language's nesting limit) as a factor, as does a `return` or `exit`,
//! which feeds every loop it is in.

use op2_syntax::ast::{AccessMode, AssignOp, BinaryOp, UnaryOp};

use crate::hir::{Body, Builtin, Expr, ExprKind, LocalInit, Place, Stmt, StmtKind, Var};
use crate::model::{ArgKind, Data, Program};

/// How a final value may depend on the order of floating-point sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sensitivity {
    /// The same whatever the order: no order-dependent value reaches it.
    Exact,
    /// May differ by the rounding of the sums it comes from: a floating
    /// value computed continuously from order-dependent values.
    Rounding,
    /// May differ by any amount: computed through a conversion to an
    /// integer, a comparison, a branch, `floor`, `ceil`, `round` or `atan2`
    /// of an order-dependent value.
    Arbitrary,
}

impl Sensitivity {
    /// What a value of this sensitivity becomes through a discontinuity.
    fn jumped(self) -> Sensitivity {
        match self {
            Sensitivity::Exact => Sensitivity::Exact,
            _ => Sensitivity::Arbitrary,
        }
    }
}

/// The sensitivity of every dat and global at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderDependence {
    /// Indexed by `DatId`.
    pub dats: Vec<Sensitivity>,
    /// Indexed by `GlobalId`.
    pub globals: Vec<Sensitivity>,
    /// Whether a condition of `main` (of an `if`, a loop, `?:`, `&&` or
    /// `||`) may go either way by the order of sums: then the two engines
    /// may run different par_loops, or stop at different places.
    pub main_branches: bool,
    /// Whether any value anywhere, a kernel's local included, may differ
    /// by any amount: then an integer division, an index or a loop's
    /// iteration limit may fault in one engine and not in the other.
    pub jumps: bool,
}

impl OrderDependence {
    /// The sensitivity of a dat or global.
    pub fn of(&self, data: Data) -> Sensitivity {
        match data {
            Data::Dat(id) => self.dats[id.index()],
            Data::Global(id) => self.globals[id.index()],
        }
    }
}

/// Works out which dats and globals of `program` depend on the order of
/// floating-point sums, and how.
pub fn order_dependence(program: &Program) -> OrderDependence {
    let mut graph = Graph::default();
    for dat in &program.dats {
        graph.node(!dat.ty.scalar.is_floating());
    }
    for global in &program.globals {
        graph.node(!global.ty.scalar.is_floating());
    }
    let dats = 0usize;
    let globals = program.dats.len();
    let data_node = |data: Data| match data {
        Data::Dat(id) => dats + id.index(),
        Data::Global(id) => globals + id.index(),
    };
    // Each kernel's parameters, then its body.
    let mut params_of = Vec::with_capacity(program.kernels.len());
    for kernel in &program.kernels {
        let first = graph.levels.len();
        for param in &kernel.params {
            graph.node(!param.ty.is_floating());
        }
        params_of.push(first);
        let params = Some((first, kernel.params.len()));
        let mut walker = Walker::new(&mut graph, &kernel.body, params, None);
        walker.body(&kernel.body);
    }
    // The par_loops connect their arguments' data to the parameters.
    for invocation in &program.invocations {
        if invocation.is_fetch {
            continue;
        }
        let Some(kernel) = invocation.kernel else {
            continue;
        };
        let first = params_of[kernel.index()];
        let params = program.kernels[kernel.index()].params.len();
        for (position, arg) in invocation.resolved_args() {
            if position >= params {
                continue;
            }
            let param = first + position;
            let Some(data) = arg.kind.data() else {
                continue;
            };
            let node = data_node(data);
            graph.edge(node, param, false);
            // A WRITE argument read before the kernel writes it, or with
            // a component left unwritten on some path (W503), holds a
            // value the language leaves unspecified: in the graph an
            // indirect one is a landing pad, which keeps what the last
            // execution of the loop left there.
            let usage = program.kernels[kernel.index()].summary.params.get(position);
            let dimension = program.kernels[kernel.index()].params[position]
                .dimension
                .unwrap_or(arg.ty.dimension);
            if arg.mode == AccessMode::Write
                && usage.is_some_and(|u| {
                    !u.unwritten_reads.is_empty() || u.unwritten_component(dimension).is_some()
                })
            {
                graph.seed(param, Sensitivity::Arbitrary);
            }
            let writes = !matches!(arg.mode, AccessMode::Read);
            if writes {
                graph.edge(param, node, false);
            }
            // Only a sum depends on the order of its terms: a MIN or MAX
            // combines each element's result, which starts from the
            // global's value when the loop began, by a rule that breaks
            // ties between 0.0 and -0.0 by sign, the same in both engines
            // (language.md §8), so its result is the same in every order.
            if arg.mode == AccessMode::Inc && arg.ty.scalar.is_floating() {
                graph.seed(node, Sensitivity::Rounding);
            }
            if let ArgKind::Info { of, .. } = arg.kind {
                // Which element sets the extreme is decided by comparisons.
                let of = of as usize;
                if of < params {
                    graph.edge(first + of, node, true);
                }
            }
        }
    }
    let mut main_conditions = Vec::new();
    if let Some(main) = &program.main {
        let globals = Some((globals, program.globals.len()));
        let mut walker = Walker::new(&mut graph, main, None, globals);
        walker.body(main);
        main_conditions = walker.branches;
    }
    let levels = graph.propagate();
    OrderDependence {
        main_branches: main_conditions
            .iter()
            .any(|&node| levels[node] == Sensitivity::Arbitrary),
        jumps: levels.contains(&Sensitivity::Arbitrary),
        dats: levels[dats..dats + program.dats.len()].to_vec(),
        globals: levels[globals..globals + program.globals.len()].to_vec(),
    }
}

/// Variables and what flows between them.
#[derive(Default)]
struct Graph {
    /// The sensitivity each node starts with.
    levels: Vec<Sensitivity>,
    /// Whether a node holds an integer (or is a branch's condition): it
    /// never holds a value that only rounds differently.
    integral: Vec<bool>,
    /// `(from, to, through a discontinuity)`.
    edges: Vec<(u32, u32, bool)>,
}

impl Graph {
    fn node(&mut self, integral: bool) -> usize {
        self.levels.push(Sensitivity::Exact);
        self.integral.push(integral);
        self.levels.len() - 1
    }

    fn edge(&mut self, from: usize, to: usize, jump: bool) {
        self.edges.push((from as u32, to as u32, jump));
    }

    fn seed(&mut self, node: usize, level: Sensitivity) {
        self.levels[node] = self.levels[node].max(level);
    }

    /// Every node's final sensitivity: a worklist over the edges, grouped
    /// by source.
    fn propagate(mut self) -> Vec<Sensitivity> {
        let n = self.levels.len();
        for node in 0..n {
            if self.integral[node] {
                self.levels[node] = self.levels[node].jumped();
            }
        }
        let mut start = vec![0u32; n + 1];
        for &(from, _, _) in &self.edges {
            start[from as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut next = start.clone();
        let mut targets = vec![(0u32, false); self.edges.len()];
        for &(from, to, jump) in &self.edges {
            let slot = &mut next[from as usize];
            targets[*slot as usize] = (to, jump);
            *slot += 1;
        }
        let mut work: Vec<usize> = (0..n)
            .filter(|&node| self.levels[node] != Sensitivity::Exact)
            .collect();
        while let Some(node) = work.pop() {
            let level = self.levels[node];
            let edges = start[node] as usize..start[node + 1] as usize;
            for &(to, jump) in &targets[edges] {
                let to = to as usize;
                let mut arriving = if jump { level.jumped() } else { level };
                if self.integral[to] {
                    arriving = arriving.jumped();
                }
                if arriving > self.levels[to] {
                    self.levels[to] = arriving;
                    work.push(to);
                }
            }
        }
        self.levels
    }
}

/// Adds one body's edges to the graph.
struct Walker<'g> {
    graph: &'g mut Graph,
    /// The node of local 0.
    locals: usize,
    /// The node of parameter 0 (kernels) and how many there are.
    params: Option<(usize, usize)>,
    /// How many locals the body has.
    local_count: usize,
    /// How many globals the program has.
    global_count: usize,
    /// The node of global 0 (`main`).
    globals: Option<usize>,
    /// The node of the innermost condition in force, if any.
    condition: Option<usize>,
    /// The node of each enclosing loop's condition.
    loops: Vec<usize>,
    /// The node that a `return` or `exit` under a condition feeds: every
    /// assignment walked after it reads it (those before it ran whether or
    /// not it returned).
    after: Option<usize>,
    /// Every condition's node, for [`OrderDependence::main_branches`].
    branches: Vec<usize>,
}

impl<'g> Walker<'g> {
    fn new(
        graph: &'g mut Graph,
        body: &Body,
        params: Option<(usize, usize)>,
        globals: Option<(usize, usize)>,
    ) -> Walker<'g> {
        let locals = graph.levels.len();
        for local in &body.locals {
            graph.node(!local.ty.is_floating());
        }
        Walker {
            graph,
            locals,
            params,
            local_count: body.locals.len(),
            global_count: globals.map_or(0, |(_, count)| count),
            globals: globals.map(|(first, _)| first),
            condition: None,
            loops: Vec::new(),
            after: None,
            branches: Vec::new(),
        }
    }

    /// The node of a variable; `None` for a const (always exact) and for
    /// an id out of range, which a lowered body never has.
    fn var(&self, var: Var) -> Option<usize> {
        match var {
            Var::Local(id) => {
                let index = id.0 as usize;
                (index < self.local_count).then_some(self.locals + index)
            }
            Var::Param(k) => {
                let (first, count) = self.params?;
                ((k as usize) < count).then_some(first + k as usize)
            }
            Var::Global(id) => {
                let first = self.globals?;
                (id.index() < self.global_count).then_some(first + id.index())
            }
            Var::Const(_) => None,
        }
    }

    fn body(&mut self, body: &Body) {
        for stmt in &body.statements {
            self.stmt(stmt);
        }
    }

    /// A new condition node under the one in force, fed by `sources`
    /// (each through the discontinuity a branch is).
    fn branch(&mut self, sources: &[(usize, bool)]) -> usize {
        let node = self.graph.node(true);
        self.branches.push(node);
        if let Some(outer) = self.condition {
            self.graph.edge(outer, node, false);
        }
        for &(source, _) in sources {
            self.graph.edge(source, node, true);
        }
        node
    }

    /// Statements nest no deeper than the language's nesting limit, so
    /// this recursion is bounded as `hir::walk_stmt_exprs`'s is.
    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                self.expr(expr, false, &mut Vec::new());
            }
            StmtKind::Local { local, init } => {
                let target = self.var(Var::Local(*local));
                let mut sources = Vec::new();
                match init {
                    Some(LocalInit::Expr(expr)) => self.expr(expr, false, &mut sources),
                    Some(LocalInit::List(items)) => {
                        for item in items {
                            self.expr(item, false, &mut sources);
                        }
                    }
                    None => {}
                }
                if let Some(target) = target {
                    self.assign(target, &sources);
                }
            }
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => {
                for stmt in stmts {
                    self.stmt(stmt);
                }
            }
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                let mut sources = Vec::new();
                self.expr(condition, true, &mut sources);
                let outer = self.condition;
                self.condition = Some(self.branch(&sources));
                self.stmt(then_branch);
                if let Some(else_branch) = else_branch {
                    self.stmt(else_branch);
                }
                self.condition = outer;
            }
            StmtKind::For {
                init,
                condition,
                step,
                body,
            } => {
                if let Some(init) = init {
                    self.stmt(init);
                }
                self.looped(condition.as_ref(), |walker| {
                    walker.stmt(body);
                    if let Some(step) = step {
                        walker.expr(step, false, &mut Vec::new());
                    }
                });
            }
            StmtKind::While { condition, body } | StmtKind::DoWhile { body, condition } => {
                self.looped(Some(condition), |walker| walker.stmt(body));
            }
            StmtKind::Break | StmtKind::Continue => {
                if let (Some(condition), Some(&loop_node)) = (self.condition, self.loops.last()) {
                    self.graph.edge(condition, loop_node, false);
                }
            }
            StmtKind::Return => self.returned(),
            StmtKind::Fetch { dat, global, .. } => {
                // The dats come first in the graph.
                if let Some(global) = self.var(Var::Global(*global))
                    && dat.index() < self.graph.levels.len()
                {
                    self.graph.edge(dat.index(), global, false);
                }
            }
            StmtKind::Print { args, .. } => {
                for arg in args {
                    self.expr(arg, false, &mut Vec::new());
                }
            }
            StmtKind::Exit(status) => {
                self.expr(status, false, &mut Vec::new());
                self.returned();
            }
            // Which par_loops `main` runs is compared as it happens (both
            // engines record the path they took: `OrderDependence`'s
            // `main_branches` says whether an order-dependent condition
            // could make them differ), not marked here.
            StmtKind::ParLoop(_) => {}
        }
    }

    /// A `return` or `exit`: under a condition, what is assigned after it,
    /// and every enclosing loop (cut short), depend on that condition.
    fn returned(&mut self) {
        let Some(condition) = self.condition else {
            return;
        };
        let after = match self.after {
            Some(after) => after,
            None => {
                let after = self.graph.node(true);
                self.after = Some(after);
                after
            }
        };
        self.graph.edge(condition, after, false);
        // The enclosing loops number at most the nesting limit.
        for index in 0..self.loops.len() {
            let node = self.loops[index];
            self.graph.edge(condition, node, false);
        }
    }

    /// A loop: its condition (whose assignments happen once per iteration,
    /// so under the loop), body and step under the loop's node, which the
    /// condition feeds through a jump, and a `break` or `continue` under a
    /// condition of its own also feeds.
    fn looped(&mut self, condition: Option<&Expr>, body: impl FnOnce(&mut Self)) {
        let mut sources = Vec::new();
        if let Some(condition) = condition {
            self.expr_sources_only(condition, &mut sources);
        }
        let node = self.branch(&sources);
        let outer = self.condition.replace(node);
        self.loops.push(node);
        if let Some(condition) = condition {
            self.expr(condition, true, &mut Vec::new());
        }
        body(self);
        self.loops.pop();
        self.condition = outer;
    }

    /// Makes `target` read `sources`, the condition in force and a
    /// `return` walked before it.
    fn assign(&mut self, target: usize, sources: &[(usize, bool)]) {
        for &(source, jump) in sources {
            self.graph.edge(source, target, jump);
        }
        if let Some(condition) = self.condition {
            self.graph.edge(condition, target, false);
        }
        if let Some(after) = self.after {
            self.graph.edge(after, target, false);
        }
    }

    fn place(&mut self, place: &Place, sources: &mut Vec<(usize, bool)>) -> Option<usize> {
        if let Some(index) = &place.index {
            // An index is an integer: what it reads arrives through a jump.
            self.expr(index, true, sources);
        }
        self.var(place.var)
    }

    /// Adds to `sources` each variable `expr` reads, with whether it
    /// arrives through a discontinuity (`jump`, or one inside `expr`), and
    /// adds the edges of the assignments inside it. Expressions nest no
    /// deeper than the language's nesting limit (a long chain of operators
    /// is one [`ExprKind::Chain`], walked in a loop).
    fn expr(&mut self, expr: &Expr, jump: bool, sources: &mut Vec<(usize, bool)>) {
        let jump = jump || !expr.ty.is_floating();
        match &expr.kind {
            ExprKind::Literal(_) | ExprKind::Len(_) | ExprKind::Error => {}
            ExprKind::Load(place) => {
                let mut read = Vec::new();
                if let Some(node) = self.place(place, &mut read) {
                    read.push((node, false));
                }
                sources.extend(read.into_iter().map(|(n, j)| (n, j || jump)));
            }
            ExprKind::Assign { place, op, value } => {
                let mut read = Vec::new();
                let target = self.place(place, &mut read);
                self.expr(value, false, &mut read);
                if let Some(target) = target {
                    if !matches!(op, AssignOp::Assign) {
                        read.push((target, false));
                    }
                    // The index of the place decides which component.
                    self.assign(target, &read);
                    sources.push((target, jump));
                } else {
                    sources.extend(read.into_iter().map(|(n, j)| (n, j || jump)));
                }
            }
            ExprKind::Update { place, .. } => {
                let mut read = Vec::new();
                if let Some(target) = self.place(place, &mut read) {
                    read.push((target, false));
                    self.assign(target, &read);
                    sources.push((target, jump));
                }
            }
            ExprKind::Unary(op, value) => {
                let jump = jump || matches!(op, UnaryOp::Not);
                self.expr(value, jump, sources);
            }
            ExprKind::Binary(op, a, b) => {
                let jump = jump || discontinuous(*op);
                self.expr(a, jump, sources);
                self.short_circuit(*op, a, b, jump, sources);
            }
            ExprKind::Chain(first, links) => {
                // Operand 0 (`first`) passes through every link, link i's
                // right operand through links i onwards: an operand arrives
                // through a jump when a comparison, a logical operator or
                // an integer result comes at or after it.
                let last_jump = links
                    .iter()
                    .rposition(|link| discontinuous(link.op) || !link.ty.is_floating());
                self.expr(first, jump || last_jump.is_some(), sources);
                // The right operands of `&&` and `||` run as the operands
                // before them decide.
                let outer = self.condition;
                if links
                    .iter()
                    .any(|link| matches!(link.op, BinaryOp::And | BinaryOp::Or))
                {
                    let mut decided = Vec::new();
                    self.expr_sources_only(expr, &mut decided);
                    self.condition = Some(self.branch(&decided));
                }
                for (i, link) in links.iter().enumerate() {
                    let jumps = last_jump.is_some_and(|last| i <= last);
                    self.expr(&link.right, jump || jumps, sources);
                }
                self.condition = outer;
            }
            ExprKind::Conditional(condition, a, b) => {
                let mut decided = Vec::new();
                self.expr(condition, true, &mut decided);
                sources.extend(decided.iter().copied());
                let outer = self.condition;
                if !decided.is_empty() {
                    self.condition = Some(self.branch(&decided));
                }
                self.expr(a, jump, sources);
                self.expr(b, jump, sources);
                self.condition = outer;
            }
            ExprKind::Convert { value, .. } => self.expr(value, jump, sources),
            ExprKind::Call(builtin, args) => {
                let jump = jump
                    || matches!(
                        builtin,
                        Builtin::Floor | Builtin::Ceil | Builtin::Round | Builtin::Atan2
                    );
                for arg in args {
                    self.expr(arg, jump, sources);
                }
            }
        }
    }

    /// The right operand of `&&` and `||` runs only as the left one
    /// decides: assignments inside it are under that condition.
    fn short_circuit(
        &mut self,
        op: BinaryOp,
        a: &Expr,
        b: &Expr,
        jump: bool,
        sources: &mut Vec<(usize, bool)>,
    ) {
        if !matches!(op, BinaryOp::And | BinaryOp::Or) {
            self.expr(b, jump, sources);
            return;
        }
        let mut decided = Vec::new();
        self.expr_sources_only(a, &mut decided);
        let outer = self.condition;
        if !decided.is_empty() {
            self.condition = Some(self.branch(&decided));
        }
        self.expr(b, jump, sources);
        self.condition = outer;
    }

    /// The variables `expr` reads, without adding its assignments' edges a
    /// second time (they are added when `expr` is walked), each through a
    /// jump: they decide a condition.
    fn expr_sources_only(&self, expr: &Expr, sources: &mut Vec<(usize, bool)>) {
        crate::hir::walk_expr(expr, &mut |e| match &e.kind {
            ExprKind::Load(place)
            | ExprKind::Assign { place, .. }
            | ExprKind::Update { place, .. } => {
                if let Some(node) = self.var(place.var) {
                    sources.push((node, true));
                }
            }
            _ => {}
        });
    }
}

/// Operators whose result jumps as their operands move: comparisons and
/// logic (an `int` result, so caught by the type as well).
fn discontinuous(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge
            | BinaryOp::And
            | BinaryOp::Or
    )
}
