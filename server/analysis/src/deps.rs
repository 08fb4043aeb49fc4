//! Program dependency analysis, after PyOP2's lazy evaluation: each
//! invocation and each statement of `main` reads and writes dats and
//! globals; propagated through `main`'s control flow (loops included), this
//! says which par_loops compute something nobody reads (H605), which
//! invocations may last have written a dat before a point, and which read it
//! next.
//!
//! Which par_loops are dead is computed per datum over the statements of
//! `main` that mention it, not as a set of live data per node (N loops on N
//! dats made those sets hold N²/2 entries): a statement that does not
//! mention a datum passes its liveness through as its shape says (it may
//! break, continue, return), the same for every datum. The cost is the
//! mentions times their nesting depth (at most 200, lowering's limit).
//!
//! Modes as effects on the whole dat or global: READ uses; RW uses and
//! defines; a direct WRITE defines and overwrites everything; an indirect
//! WRITE defines part of the dat; INC, MIN and MAX define by combining with
//! the old value, which they pass on unobserved.

use op2_syntax::ast::{AccessMode, AssignOp};
use op2_syntax::{Location, TextRange};

use crate::hir::{Body, Expr, ExprKind, LocalInit, Place, Stmt, StmtKind, Var, walk_expr};
use crate::model::{ArgKind, Data, InvocationId, Program};

/// A node of `main`'s control-flow graph.
#[derive(Clone, Debug, Default)]
struct Node {
    uses: Vec<Data>,
    defs: Vec<Data>,
    kills: Vec<Data>,
    invocation: Option<InvocationId>,
    range: TextRange,
    successors: Vec<usize>,
}

/// Who reads data next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// A par_loop.
    Invocation(InvocationId),
    /// A statement of `main` (a `print`, a condition, an assignment).
    Main(Location),
}

/// The dependency graph of a program's `main`.
#[derive(Clone, Debug, Default)]
pub struct Dependencies {
    nodes: Vec<Node>,
    /// Node of each invocation.
    invocation_nodes: Vec<Option<usize>>,
    /// For each invocation: true when nothing it writes is read afterwards.
    dead: Vec<bool>,
    main_file: op2_syntax::FileId,
    /// Entries the liveness analysis visited (for tests of its cost).
    work: usize,
    /// The predecessors of node `i`: `predecessors[predecessor_starts[i]..predecessor_starts[i + 1]]`.
    predecessors: Vec<usize>,
    predecessor_starts: Vec<usize>,
}

const ENTRY: usize = 0;
const EXIT: usize = 1;

struct LoopTargets {
    breaks: Vec<usize>,
    continues: Vec<usize>,
}

struct GraphBuilder<'p> {
    program: &'p Program,
    nodes: Vec<Node>,
    frontier: Vec<usize>,
    loops: Vec<LoopTargets>,
    regions: Vec<Region>,
    /// The region of each node (`NONE` for ENTRY and EXIT).
    owner: Vec<usize>,
}

/// No region.
const NONE: usize = usize::MAX;

/// What a statement does to one datum's liveness: it is live before the
/// statement when the statement reads it first (`reads`), or when it is
/// live where the statement goes on and some path there does not overwrite
/// it (`normal`: after the statement; `brk`: after the loop it breaks;
/// `cont`: at its loop's next iteration).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Flow {
    reads: bool,
    normal: bool,
    brk: bool,
    cont: bool,
}

/// The flow of nothing.
const IDENTITY: Flow = Flow {
    reads: false,
    normal: true,
    brk: false,
    cont: false,
};

impl Flow {
    /// `self`, then `next`.
    fn then(self, next: Flow) -> Flow {
        Flow {
            reads: self.reads || (self.normal && next.reads),
            normal: self.normal && next.normal,
            brk: self.brk || (self.normal && next.brk),
            cont: self.cont || (self.normal && next.cont),
        }
    }

    /// `self` or `other` (the two branches of an `if`).
    fn either(self, other: Flow) -> Flow {
        Flow {
            reads: self.reads || other.reads,
            normal: self.normal || other.normal,
            brk: self.brk || other.brk,
            cont: self.cont || other.cont,
        }
    }

    fn live_before(self, after: After) -> bool {
        self.reads
            || (self.normal && after.normal)
            || (self.brk && after.brk)
            || (self.cont && after.cont)
    }
}

/// Whether a datum is live where a statement goes on.
#[derive(Clone, Copy, Debug, Default)]
struct After {
    normal: bool,
    brk: bool,
    cont: bool,
}

/// What one node does to one datum.
#[derive(Clone, Copy, Debug, Default)]
struct Effect {
    reads: bool,
    kills: bool,
    defines: bool,
}

impl Effect {
    fn flow(self) -> Flow {
        Flow {
            reads: self.reads,
            normal: !self.kills,
            brk: false,
            cont: false,
        }
    }
}

/// A statement of `main`, over the nodes of the graph.
#[derive(Clone, Debug)]
enum Shape {
    /// Statements in order; `next[i]`: the first child at or after `i` that
    /// cannot go on normally, that may break, that may continue (the
    /// length when none).
    Seq {
        children: Vec<usize>,
        next: Vec<[usize; 3]>,
    },
    /// One node; `normal` is false for `exit`.
    Node {
        node: usize,
        normal: bool,
    },
    Return,
    Break,
    Continue,
    If {
        condition: usize,
        then: usize,
        otherwise: Option<usize>,
    },
    While {
        head: usize,
        body: usize,
    },
    For {
        head: usize,
        exits: bool,
        step: Option<usize>,
        body: usize,
    },
    DoWhile {
        body: usize,
        check: usize,
    },
}

#[derive(Clone, Debug)]
struct Region {
    shape: Shape,
    parent: usize,
    /// Position among the parent's children when the parent is a `Seq`.
    position: usize,
    /// The flow of a datum the region does not mention.
    flow: Flow,
}

/// The flow of a region that is not a `Seq`, from its children's flows and
/// its nodes' effects.
fn shape_flow(
    shape: &Shape,
    child: impl Fn(usize) -> Flow,
    node: impl Fn(usize) -> Effect,
) -> Flow {
    match *shape {
        Shape::Seq { ref children, .. } => children
            .iter()
            .rev()
            .fold(IDENTITY, |after, c| child(*c).then(after)),
        Shape::Node { node: n, normal } => {
            let effect = node(n);
            Flow {
                reads: effect.reads,
                normal: normal && !effect.kills,
                brk: false,
                cont: false,
            }
        }
        Shape::Return => Flow::default(),
        Shape::Break => Flow {
            brk: true,
            ..Flow::default()
        },
        Shape::Continue => Flow {
            cont: true,
            ..Flow::default()
        },
        Shape::If {
            condition,
            then,
            otherwise,
        } => node(condition)
            .flow()
            .then(child(then).either(otherwise.map_or(IDENTITY, &child))),
        // The least fixed point: what the body reads before the next test
        // of the condition, or what the condition reads.
        Shape::While { head, body } => {
            let head = node(head).flow();
            let body = child(body);
            Flow {
                reads: head.reads || (head.normal && body.reads),
                normal: head.normal,
                brk: false,
                cont: false,
            }
        }
        Shape::For {
            head,
            exits,
            step,
            body,
        } => {
            let head = node(head).flow();
            let step = step.map_or(IDENTITY, |s| node(s).flow());
            let body = child(body);
            Flow {
                reads: head.reads
                    || (head.normal && (body.reads || ((body.normal || body.cont) && step.reads))),
                normal: head.normal && (exits || body.brk),
                brk: false,
                cont: false,
            }
        }
        Shape::DoWhile { body, check } => {
            let check = node(check).flow();
            let body = child(body);
            let again = body.normal || body.cont;
            Flow {
                reads: body.reads || (again && check.reads),
                normal: body.brk || (again && check.normal),
                brk: false,
                cont: false,
            }
        }
    }
}

/// The flow of the children `from..to` of a `Seq` that mention nothing.
fn run_flow(next: &[[usize; 3]], from: usize, to: usize) -> Flow {
    let Some(&[blocker, breaker, continuer]) = next.get(from).filter(|_| from < to) else {
        return IDENTITY;
    };
    Flow {
        reads: false,
        normal: blocker >= to,
        brk: breaker < to && breaker <= blocker,
        cont: continuer < to && continuer <= blocker,
    }
}

impl GraphBuilder<'_> {
    fn region(&mut self, shape: Shape) -> usize {
        let id = self.regions.len();
        let flow = shape_flow(&shape, |c| self.regions[c].flow, |_| Effect::default());
        let (children, nodes): (Vec<usize>, Vec<usize>) = match &shape {
            Shape::Seq { children, .. } => (children.clone(), Vec::new()),
            Shape::Node { node, .. } => (Vec::new(), vec![*node]),
            Shape::Return | Shape::Break | Shape::Continue => (Vec::new(), Vec::new()),
            Shape::If {
                condition,
                then,
                otherwise,
            } => (
                std::iter::once(*then).chain(*otherwise).collect(),
                vec![*condition],
            ),
            Shape::While { head, body } => (vec![*body], vec![*head]),
            Shape::For {
                head, step, body, ..
            } => (vec![*body], std::iter::once(*head).chain(*step).collect()),
            Shape::DoWhile { body, check } => (vec![*body], vec![*check]),
        };
        for (position, child) in children.into_iter().enumerate() {
            self.regions[child].parent = id;
            self.regions[child].position = position;
        }
        if self.owner.len() < self.nodes.len() {
            self.owner.resize(self.nodes.len(), NONE);
        }
        for node in nodes {
            self.owner[node] = id;
        }
        self.regions.push(Region {
            shape,
            parent: NONE,
            position: 0,
            flow,
        });
        id
    }

    fn seq(&mut self, children: Vec<usize>) -> usize {
        let mut next = vec![[0; 3]; children.len()];
        let mut first = [children.len(); 3];
        for (index, child) in children.iter().enumerate().rev() {
            let flow = self.regions[*child].flow;
            if !flow.normal {
                first[0] = index;
            }
            if flow.brk {
                first[1] = index;
            }
            if flow.cont {
                first[2] = index;
            }
            next[index] = first;
        }
        self.region(Shape::Seq { children, next })
    }

    fn node_region(&mut self, node: usize, normal: bool) -> usize {
        self.region(Shape::Node { node, normal })
    }

    fn add(&mut self, node: Node) -> usize {
        let id = self.nodes.len();
        self.nodes.push(node);
        for previous in std::mem::take(&mut self.frontier) {
            self.nodes[previous].successors.push(id);
        }
        self.frontier.push(id);
        id
    }

    fn expr_node(&mut self, exprs: &[&Expr], range: TextRange) -> usize {
        let mut node = Node {
            range,
            ..Node::default()
        };
        for expr in exprs {
            expr_effects(expr, &mut node);
        }
        self.add(node)
    }

    fn block(&mut self, stmts: &[Stmt]) -> usize {
        let mut children = Vec::with_capacity(stmts.len());
        for stmt in stmts {
            children.push(self.stmt(stmt));
        }
        self.seq(children)
    }

    /// Adds the statement's nodes; returns its region.
    fn stmt(&mut self, stmt: &Stmt) -> usize {
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                let node = self.expr_node(&[expr], stmt.range);
                self.node_region(node, true)
            }
            StmtKind::Local { init, .. } => match init {
                Some(LocalInit::Expr(expr)) => {
                    let node = self.expr_node(&[expr], stmt.range);
                    self.node_region(node, true)
                }
                Some(LocalInit::List(items)) => {
                    let items: Vec<&Expr> = items.iter().collect();
                    let node = self.expr_node(&items, stmt.range);
                    self.node_region(node, true)
                }
                None => self.seq(Vec::new()),
            },
            StmtKind::Print { args, .. } => {
                let args: Vec<&Expr> = args.iter().collect();
                let node = self.expr_node(&args, stmt.range);
                self.node_region(node, true)
            }
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => self.block(stmts),
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                let condition = self.expr_node(&[condition], condition.range);
                let after_condition = self.frontier.clone();
                let then = self.stmt(then_branch);
                let after_then = std::mem::replace(&mut self.frontier, after_condition);
                let otherwise = else_branch.as_ref().map(|e| self.stmt(e));
                self.frontier.extend(after_then);
                self.region(Shape::If {
                    condition,
                    then,
                    otherwise,
                })
            }
            StmtKind::While { condition, body } => {
                let head = self.add(Node {
                    range: condition.range,
                    ..Node::default()
                });
                expr_effects(condition, &mut self.nodes[head]);
                let (body, _) = self.loop_body(head, body, None, true);
                self.region(Shape::While { head, body })
            }
            StmtKind::For {
                init,
                condition,
                step,
                body,
            } => {
                let init = init.as_ref().map(|init| self.stmt(init));
                let head = self.add(Node {
                    range: stmt.range,
                    ..Node::default()
                });
                if let Some(condition) = condition {
                    expr_effects(condition, &mut self.nodes[head]);
                }
                let exits_normally = condition.is_some();
                // Only `break` leaves `for (;;)`: the head has no exit (but
                // a `break` right after the head leaves from the head).
                let (body, step) = self.loop_body(head, body, step.as_ref(), exits_normally);
                let for_loop = self.region(Shape::For {
                    head,
                    exits: exits_normally,
                    step,
                    body,
                });
                match init {
                    Some(init) => self.seq(vec![init, for_loop]),
                    None => for_loop,
                }
            }
            StmtKind::DoWhile { body, condition } => {
                // Body first, then the condition, which loops back.
                let entry_frontier = std::mem::take(&mut self.frontier);
                let body_start = self.nodes.len();
                self.frontier = entry_frontier;
                self.loops.push(LoopTargets {
                    breaks: Vec::new(),
                    continues: Vec::new(),
                });
                let marker = self.add(Node {
                    range: stmt.range,
                    ..Node::default()
                });
                debug_assert_eq!(marker, body_start);
                let body = self.stmt(body);
                let targets = self.loops.pop().unwrap_or(LoopTargets {
                    breaks: Vec::new(),
                    continues: Vec::new(),
                });
                self.frontier.extend(targets.continues);
                let check = self.add(Node {
                    range: condition.range,
                    ..Node::default()
                });
                expr_effects(condition, &mut self.nodes[check]);
                self.nodes[check].successors.push(marker);
                self.frontier = vec![check];
                self.frontier.extend(targets.breaks);
                self.region(Shape::DoWhile { body, check })
            }
            StmtKind::Break => {
                let frontier = std::mem::take(&mut self.frontier);
                if let Some(targets) = self.loops.last_mut() {
                    targets.breaks.extend(frontier);
                }
                self.region(Shape::Break)
            }
            StmtKind::Continue => {
                let frontier = std::mem::take(&mut self.frontier);
                if let Some(targets) = self.loops.last_mut() {
                    targets.continues.extend(frontier);
                }
                self.region(Shape::Continue)
            }
            StmtKind::Exit(status) => {
                let node = self.expr_node(&[status], stmt.range);
                for previous in std::mem::take(&mut self.frontier) {
                    self.nodes[previous].successors.push(EXIT);
                }
                self.node_region(node, false)
            }
            // Reads the whole dat and overwrites the whole global.
            StmtKind::Fetch { dat, global, .. } => {
                let node = self.add(Node {
                    range: stmt.range,
                    uses: vec![Data::Dat(*dat)],
                    defs: vec![Data::Global(*global)],
                    kills: vec![Data::Global(*global)],
                    ..Node::default()
                });
                self.node_region(node, true)
            }
            StmtKind::Return => {
                for previous in std::mem::take(&mut self.frontier) {
                    self.nodes[previous].successors.push(EXIT);
                }
                self.region(Shape::Return)
            }
            StmtKind::ParLoop(id) => {
                let mut node = Node {
                    range: stmt.range,
                    invocation: Some(*id),
                    ..Node::default()
                };
                if let Some(invocation) = self.program.invocations.get(id.index()) {
                    for (_, arg) in invocation.resolved_args() {
                        let Some(data) = arg.kind.data() else {
                            continue;
                        };
                        match arg.mode {
                            AccessMode::Read => node.uses.push(data),
                            AccessMode::Rw => {
                                node.uses.push(data);
                                node.defs.push(data);
                                if matches!(arg.kind, ArgKind::DirectDat(_)) {
                                    node.kills.push(data);
                                }
                            }
                            AccessMode::Write => {
                                node.defs.push(data);
                                if matches!(arg.kind, ArgKind::DirectDat(_)) {
                                    node.kills.push(data);
                                }
                            }
                            AccessMode::Inc | AccessMode::Min | AccessMode::Max => {
                                node.defs.push(data)
                            }
                        }
                    }
                }
                let node = self.add(node);
                self.node_region(node, true)
            }
        }
    }

    /// Returns the body's region and the step's node; `exits`: the head
    /// leaves the loop when its condition is false.
    fn loop_body(
        &mut self,
        head: usize,
        body: &Stmt,
        step: Option<&Expr>,
        exits: bool,
    ) -> (usize, Option<usize>) {
        self.loops.push(LoopTargets {
            breaks: Vec::new(),
            continues: Vec::new(),
        });
        let body = self.stmt(body);
        let targets = self.loops.pop().unwrap_or(LoopTargets {
            breaks: Vec::new(),
            continues: Vec::new(),
        });
        self.frontier.extend(targets.continues);
        let step = step.map(|step| self.expr_node(&[step], step.range));
        for previous in std::mem::take(&mut self.frontier) {
            self.nodes[previous].successors.push(head);
        }
        self.frontier = if exits { vec![head] } else { Vec::new() };
        self.frontier.extend(targets.breaks);
        (body, step)
    }
}

/// The globals an expression of `main` reads and writes.
fn expr_effects(expr: &Expr, node: &mut Node) {
    let global = |place: &Place| match place.var {
        Var::Global(id) => Some(Data::Global(id)),
        _ => None,
    };
    walk_expr(expr, &mut |e| match &e.kind {
        ExprKind::Load(place) => {
            if let Some(data) = global(place) {
                node.uses.push(data);
            }
        }
        ExprKind::Assign { place, op, .. } => {
            if let Some(data) = global(place) {
                node.defs.push(data);
                if *op != AssignOp::Assign {
                    node.uses.push(data);
                } else if place.index.is_none() {
                    node.kills.push(data);
                }
            }
        }
        ExprKind::Update { place, .. } => {
            if let Some(data) = global(place) {
                node.uses.push(data);
                node.defs.push(data);
            }
        }
        _ => {}
    });
}

impl Dependencies {
    /// Builds the graph of `program`'s `main` and computes liveness.
    pub fn new(program: &Program) -> Dependencies {
        let Some(main) = program.main.as_deref() else {
            return Dependencies {
                dead: vec![false; program.invocations.len()],
                ..Dependencies::default()
            };
        };
        let graph = build_graph(program, main);
        let (dead, work) = dead_invocations(&graph, program.invocations.len());
        let nodes = graph.nodes;
        let mut invocation_nodes = vec![None; program.invocations.len()];
        for (index, node) in nodes.iter().enumerate() {
            if let Some(id) = node.invocation
                && let Some(slot) = invocation_nodes.get_mut(id.index())
            {
                *slot = Some(index);
            }
        }
        let main_file = program.main_location.map(|l| l.file).unwrap_or_default();
        let mut predecessor_starts = vec![0; nodes.len() + 1];
        for node in &nodes {
            for &successor in &node.successors {
                predecessor_starts[successor + 1] += 1;
            }
        }
        for index in 1..predecessor_starts.len() {
            predecessor_starts[index] += predecessor_starts[index - 1];
        }
        let mut filled = predecessor_starts.clone();
        let mut predecessors = vec![0; predecessor_starts[nodes.len()]];
        for (index, node) in nodes.iter().enumerate() {
            for &successor in &node.successors {
                predecessors[filled[successor]] = index;
                filled[successor] += 1;
            }
        }
        Dependencies {
            nodes,
            invocation_nodes,
            dead,
            main_file,
            work,
            predecessors,
            predecessor_starts,
        }
    }

    /// Entries the liveness analysis visited: linear in the program (for
    /// tests of its cost, which count work instead of timing it).
    pub fn liveness_work(&self) -> usize {
        self.work
    }

    /// The former liveness, kept as the reference of the tests: backward
    /// liveness over the graph to a fixed point with a set of live data per
    /// node (quadratic: N loops on N dats hold N²/2 entries).
    #[cfg(test)]
    fn dead_by_fixed_point(&self, invocations: usize) -> Vec<bool> {
        // Backward liveness to a fixed point; sets are small vectors.
        let n = self.nodes.len();
        let mut live_in: Vec<Vec<Data>> = vec![Vec::new(); n];
        let mut out: Vec<Data> = Vec::new();
        let mut changed = true;
        while changed {
            changed = false;
            for index in (0..n).rev() {
                let node = &self.nodes[index];
                out.clear();
                out.extend(
                    node.successors
                        .iter()
                        .flat_map(|s| live_in[*s].iter().copied()),
                );
                out.retain(|d| !node.kills.contains(d));
                out.extend(node.uses.iter().copied());
                out.sort();
                out.dedup();
                if out != live_in[index] {
                    live_in[index].clone_from(&out);
                    changed = true;
                }
            }
        }
        let mut dead = vec![false; invocations];
        for (index, node) in self.nodes.iter().enumerate() {
            let Some(id) = node.invocation else { continue };
            let live_out: Vec<Data> = node
                .successors
                .iter()
                .flat_map(|s| live_in[*s].iter().copied())
                .collect();
            if let Some(slot) = dead.get_mut(id.index()) {
                *slot = !node.defs.iter().any(|d| live_out.contains(d));
            }
            let _ = index;
        }
        dead
    }

    /// True when nothing the invocation writes is read afterwards on any
    /// path (or it writes nothing).
    pub fn is_dead(&self, invocation: InvocationId) -> bool {
        self.dead.get(invocation.index()).copied().unwrap_or(false)
    }

    /// The invocations that may have written `data` last before
    /// `invocation` runs: a walk back from it over the nodes, through those
    /// that do not overwrite `data` (hover asks this on every move of the
    /// cursor; linear in the nodes, not nodes times invocations).
    pub fn last_writers(&self, invocation: InvocationId, data: Data) -> Vec<InvocationId> {
        let Some(target) = self.node_of(invocation) else {
            return Vec::new();
        };
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<usize> = self.predecessors(target).to_vec();
        let mut writers = Vec::new();
        while let Some(index) = stack.pop() {
            if std::mem::replace(&mut seen[index], true) {
                continue;
            }
            let node = &self.nodes[index];
            let defines = node.defs.contains(&data);
            if let (true, Some(id)) = (defines, node.invocation) {
                writers.push(id);
            }
            if node.kills.contains(&data) || (defines && node.invocation.is_none()) {
                continue;
            }
            stack.extend_from_slice(self.predecessors(index));
        }
        writers.sort_unstable();
        writers.dedup();
        writers
    }

    fn node_of(&self, invocation: InvocationId) -> Option<usize> {
        self.invocation_nodes
            .get(invocation.index())
            .copied()
            .flatten()
    }

    fn predecessors(&self, node: usize) -> &[usize] {
        let from = self.predecessor_starts.get(node).copied().unwrap_or(0);
        let to = self
            .predecessor_starts
            .get(node + 1)
            .copied()
            .unwrap_or(from);
        self.predecessors.get(from..to).unwrap_or(&[])
    }

    /// The former `last_writers`, kept as the reference of the tests:
    /// reaching definitions as bitsets over the invocations per node.
    #[cfg(test)]
    fn last_writers_by_fixed_point(
        &self,
        invocation: InvocationId,
        data: Data,
    ) -> Vec<InvocationId> {
        let Some(target) = self.node_of(invocation) else {
            return Vec::new();
        };
        // Forward reaching definitions for one datum, as bitsets over the
        // invocations (hover asks this on every move of the cursor).
        let n = self.nodes.len();
        let words = self.invocation_nodes.len().div_ceil(64).max(1);
        let mut reach_in = vec![0u64; n * words];
        let mut reach_out = vec![0u64; n * words];
        let mut out = vec![0u64; words];
        let mut changed = true;
        while changed {
            changed = false;
            for index in 0..n {
                let node = &self.nodes[index];
                let kills = node.kills.contains(&data);
                let defines = node.defs.contains(&data);
                if kills || (defines && node.invocation.is_none()) {
                    out.fill(0);
                } else {
                    out.copy_from_slice(&reach_in[index * words..(index + 1) * words]);
                }
                if let (true, Some(id)) = (defines, node.invocation) {
                    out[id.index() / 64] |= 1 << (id.index() % 64);
                }
                if out[..] != reach_out[index * words..(index + 1) * words] {
                    reach_out[index * words..(index + 1) * words].copy_from_slice(&out);
                    for &successor in &node.successors {
                        for (word, bits) in out.iter().enumerate() {
                            reach_in[successor * words + word] |= bits;
                        }
                    }
                    changed = true;
                }
            }
        }
        (0..self.invocation_nodes.len())
            .filter(|i| reach_in[target * words + i / 64] & (1 << (i % 64)) != 0)
            .map(|i| InvocationId(u32::try_from(i).unwrap_or(u32::MAX)))
            .collect()
    }

    /// Who may read `data` next after `invocation` has run.
    pub fn next_readers(&self, invocation: InvocationId, data: Data) -> Vec<Reader> {
        let Some(start) = self.node_of(invocation) else {
            return Vec::new();
        };
        let mut seen = vec![false; self.nodes.len()];
        let mut stack: Vec<usize> = self.nodes[start].successors.clone();
        let mut readers = Vec::new();
        while let Some(index) = stack.pop() {
            if std::mem::replace(&mut seen[index], true) {
                continue;
            }
            let node = &self.nodes[index];
            if node.uses.contains(&data) {
                readers.push(match node.invocation {
                    Some(id) => Reader::Invocation(id),
                    None => Reader::Main(Location {
                        file: self.main_file,
                        range: node.range,
                    }),
                });
                continue;
            }
            if node.kills.contains(&data) {
                continue;
            }
            stack.extend(node.successors.iter().copied());
        }
        readers.sort_by_key(|r| match r {
            Reader::Invocation(id) => (0, id.0, 0),
            Reader::Main(location) => (1, 0, location.range.start),
        });
        readers.dedup();
        readers
    }
}

/// `main`'s graph, and its statements as regions over the graph's nodes.
struct Graph {
    nodes: Vec<Node>,
    regions: Vec<Region>,
    owner: Vec<usize>,
    root: usize,
}

fn build_graph(program: &Program, main: &Body) -> Graph {
    let mut builder = GraphBuilder {
        program,
        nodes: Vec::new(),
        frontier: Vec::new(),
        loops: Vec::new(),
        regions: Vec::new(),
        owner: Vec::new(),
    };
    builder.nodes.push(Node::default()); // ENTRY
    builder.nodes.push(Node::default()); // EXIT
    builder.frontier = vec![ENTRY];
    let root = builder.block(&main.statements);
    for previous in std::mem::take(&mut builder.frontier) {
        builder.nodes[previous].successors.push(EXIT);
    }
    let mut owner = builder.owner;
    owner.resize(builder.nodes.len(), NONE);
    Graph {
        nodes: builder.nodes,
        regions: builder.regions,
        owner,
        root,
    }
}

/// For each invocation: true when nothing it writes is read afterwards;
/// and the entries visited. Per datum: the regions that mention it (and
/// their ancestors), their flows bottom-up (children before parents: a
/// region's id is larger than its children's), then what is live after
/// each of them top-down; a `Seq` visits only the children that mention
/// the datum and steps over the runs between them in one step each.
fn dead_invocations(graph: &Graph, invocations: usize) -> (Vec<bool>, usize) {
    let Graph {
        nodes,
        regions,
        owner,
        root,
    } = graph;
    let mut dead = vec![false; invocations];
    for node in nodes {
        if let Some(slot) = node.invocation.and_then(|id| dead.get_mut(id.index())) {
            *slot = true;
        }
    }
    // (datum, node, effect): 0 reads, 1 defines, 2 kills.
    let mut mentions: Vec<(Data, usize, u8)> = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        mentions.extend(node.uses.iter().map(|d| (*d, index, 0)));
        mentions.extend(node.defs.iter().map(|d| (*d, index, 1)));
        mentions.extend(node.kills.iter().map(|d| (*d, index, 2)));
    }
    mentions.sort_unstable();
    let mut work = mentions.len();
    let mut region_stamp = vec![0usize; regions.len()];
    let mut flows = vec![Flow::default(); regions.len()];
    let mut afters = vec![After::default(); regions.len()];
    let mut node_stamp = vec![0usize; nodes.len()];
    let mut effects = vec![Effect::default(); nodes.len()];
    let mut marked: Vec<usize> = Vec::new();
    // (Seq, position, child) for the marked children of a `Seq`.
    let mut seq_marks: Vec<(usize, usize, usize)> = Vec::new();
    let mut stamp = 0;
    let mut start = 0;
    while start < mentions.len() {
        let datum = mentions[start].0;
        let end = start + mentions[start..].partition_point(|m| m.0 == datum);
        stamp += 1;
        marked.clear();
        seq_marks.clear();
        for &(_, node, effect) in &mentions[start..end] {
            if node_stamp[node] != stamp {
                node_stamp[node] = stamp;
                effects[node] = Effect::default();
            }
            match effect {
                0 => effects[node].reads = true,
                1 => effects[node].defines = true,
                _ => effects[node].kills = true,
            }
            let mut region = owner.get(node).copied().unwrap_or(NONE);
            while region != NONE && region_stamp[region] != stamp {
                region_stamp[region] = stamp;
                marked.push(region);
                let parent = regions[region].parent;
                if parent != NONE && matches!(regions[parent].shape, Shape::Seq { .. }) {
                    seq_marks.push((parent, regions[region].position, region));
                }
                region = parent;
            }
        }
        start = end;
        work += marked.len();
        marked.sort_unstable();
        seq_marks.sort_unstable();
        let effect = |node: usize| {
            if node_stamp[node] == stamp {
                effects[node]
            } else {
                Effect::default()
            }
        };
        let marks_of = |seq: usize| {
            let from = seq_marks.partition_point(|m| m.0 < seq);
            let to = seq_marks.partition_point(|m| m.0 <= seq);
            &seq_marks[from..to]
        };
        // Bottom-up: the flow of each marked region.
        for &region in &marked {
            let child = |c: usize| {
                if region_stamp[c] == stamp {
                    flows[c]
                } else {
                    regions[c].flow
                }
            };
            flows[region] = match &regions[region].shape {
                Shape::Seq { children, next } => {
                    let mut flow = IDENTITY;
                    let mut to = children.len();
                    for &(_, position, c) in marks_of(region).iter().rev() {
                        flow = child(c).then(run_flow(next, position + 1, to).then(flow));
                        to = position;
                    }
                    run_flow(next, 0, to).then(flow)
                }
                shape => shape_flow(shape, child, effect),
            };
        }
        // Top-down: what is live after each marked region.
        if region_stamp.get(*root) == Some(&stamp) {
            afters[*root] = After::default();
        }
        for &region in marked.iter().rev() {
            work += 1;
            let after = afters[region];
            let flow = |c: usize| {
                if region_stamp[c] == stamp {
                    flows[c]
                } else {
                    regions[c].flow
                }
            };
            let live = flows[region].live_before(after);
            let mut set = |c: usize, a: After| {
                if region_stamp[c] == stamp {
                    afters[c] = a;
                }
            };
            match regions[region].shape {
                Shape::Seq {
                    ref next,
                    ref children,
                } => {
                    let mut live = after.normal;
                    let mut to = children.len();
                    for &(_, position, c) in marks_of(region).iter().rev() {
                        work += 1;
                        let child_after = After {
                            normal: run_flow(next, position + 1, to).live_before(After {
                                normal: live,
                                ..after
                            }),
                            ..after
                        };
                        set(c, child_after);
                        live = flow(c).live_before(child_after);
                        to = position;
                    }
                }
                Shape::Node { node, normal } => {
                    let live_out = normal && after.normal;
                    if live_out
                        && effect(node).defines
                        && let Some(slot) = nodes[node]
                            .invocation
                            .and_then(|id| dead.get_mut(id.index()))
                    {
                        *slot = false;
                    }
                }
                Shape::Return | Shape::Break | Shape::Continue => {}
                Shape::If {
                    then, otherwise, ..
                } => {
                    set(then, after);
                    if let Some(otherwise) = otherwise {
                        set(otherwise, after);
                    }
                }
                Shape::While { body, .. } => set(
                    body,
                    After {
                        normal: live,
                        brk: after.normal,
                        cont: live,
                    },
                ),
                Shape::For { step, body, .. } => {
                    let next = step
                        .map_or(IDENTITY, |s| effect(s).flow())
                        .live_before(After {
                            normal: live,
                            ..After::default()
                        });
                    set(
                        body,
                        After {
                            normal: next,
                            brk: after.normal,
                            cont: next,
                        },
                    );
                }
                Shape::DoWhile { body, check } => {
                    let again = effect(check).flow().live_before(After {
                        normal: after.normal || live,
                        ..After::default()
                    });
                    set(
                        body,
                        After {
                            normal: again,
                            brk: after.normal,
                            cont: again,
                        },
                    );
                }
            }
        }
    }
    (dead, work)
}

#[cfg(test)]
mod tests {
    //! The liveness per datum against the former fixed point over the
    //! graph, on the repository's programs and on generated ones.

    use std::fmt::Write;
    use std::path::{Path, PathBuf};

    use crate::model::{DatId, Data, GlobalId, InvocationId};
    use crate::{Options, analyse_text};

    fn assert_same(name: &str, text: &str) {
        let analysis = analyse_text(Path::new(name), text, &Options::default());
        let deps = &analysis.dependencies;
        let invocations = analysis.program.invocations.len();
        assert_eq!(
            deps.dead,
            deps.dead_by_fixed_point(invocations),
            "{name}:\n{text}"
        );
        let data = (0..analysis.program.dats.len())
            .map(|d| Data::Dat(DatId(u32::try_from(d).expect("few"))))
            .chain(
                (0..analysis.program.globals.len())
                    .map(|g| Data::Global(GlobalId(u32::try_from(g).expect("few")))),
            );
        for datum in data {
            for id in 0..invocations {
                let id = InvocationId(u32::try_from(id).expect("few"));
                assert_eq!(
                    deps.last_writers(id, datum),
                    deps.last_writers_by_fixed_point(id, datum),
                    "{name}: {id:?} {datum:?}:\n{text}"
                );
            }
        }
    }

    fn op2_files(dir: &Path, found: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                op2_files(&path, found);
            } else if path.extension().is_some_and(|e| e == "op2") {
                found.push(path);
            }
        }
    }

    #[test]
    fn the_repositorys_programs_have_the_same_dead_loops_and_last_writers() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        op2_files(&root.join("../../docs/examples"), &mut files);
        op2_files(&root.join("tests/fixtures"), &mut files);
        assert!(files.len() > 20, "{files:?}");
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a readable program");
            assert_same(&file.display().to_string(), &text);
        }
    }

    /// A small deterministic generator of `main`s: par_loops in every mode
    /// (direct, indirect, on globals) inside ifs, loops of every kind,
    /// breaks, continues, returns and exits.
    struct Generator(u64);

    impl Generator {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }

        fn dat(&mut self) -> &'static str {
            ["a", "b", "c"][self.below(3) as usize]
        }

        fn global(&mut self) -> &'static str {
            ["g", "h"][self.below(2) as usize]
        }

        fn stmt(&mut self, out: &mut String, depth: u32) {
            let choices = if depth >= 4 { 9 } else { 15 };
            match self.below(choices) {
                0..=2 => {
                    let mode = ["READ", "RW", "WRITE", "INC", "MIN", "MAX"][self.below(6) as usize];
                    let _ = writeln!(out, "par_loop k1 over nodes ({} {mode});", self.dat());
                }
                3 => {
                    let mode = ["READ", "RW", "WRITE", "INC"][self.below(4) as usize];
                    let _ = writeln!(
                        out,
                        "par_loop k2 over edges (w READ, {}[ends[{}]] {mode});",
                        self.dat(),
                        self.below(2)
                    );
                }
                4 => {
                    let mode = ["READ", "INC", "RW", "WRITE"][self.below(4) as usize];
                    let _ = writeln!(
                        out,
                        "par_loop k3 over nodes ({} READ, {} {mode});",
                        self.dat(),
                        self.global()
                    );
                }
                5 => {
                    let op = ["=", "+="][self.below(2) as usize];
                    let _ = writeln!(out, "{} {op} {} + 1.0;", self.global(), self.global());
                }
                6 => {
                    let _ = writeln!(out, "print(\"%g\", {});", self.global());
                }
                7 => out.push_str(["break;\n", "continue;\n"][self.below(2) as usize]),
                8 => {
                    out.push_str(["return;\n", "exit(1);\n", "g = 2.0;\n"][self.below(3) as usize])
                }
                9 | 10 => {
                    let _ = writeln!(out, "if ({} > 1.0) {{", self.global());
                    self.block(out, depth + 1);
                    if self.below(2) == 0 {
                        out.push_str("} else {\n");
                        self.block(out, depth + 1);
                    }
                    out.push_str("}\n");
                }
                11 => {
                    let _ = writeln!(out, "while ({} < 2.0) {{", self.global());
                    self.block(out, depth + 1);
                    out.push_str("}\n");
                }
                12 => {
                    let _ = writeln!(out, "for (n = 0; n < 3; n = n + 1) {{");
                    self.block(out, depth + 1);
                    out.push_str("}\n");
                }
                13 => {
                    out.push_str("for (;;) {\n");
                    self.block(out, depth + 1);
                    out.push_str("}\n");
                }
                _ => {
                    out.push_str("do {\n");
                    self.block(out, depth + 1);
                    let _ = writeln!(out, "}} while ({} > 0.0);", self.global());
                }
            }
        }

        fn block(&mut self, out: &mut String, depth: u32) {
            for _ in 0..=self.below(4) {
                self.stmt(out, depth);
            }
        }

        fn program(&mut self) -> String {
            let mut text = String::from(
                "set nodes;\nset edges;\nmap ends: edges -> nodes[2];\n\
                 dat a: double on nodes;\ndat b: double on nodes;\ndat c: double on nodes;\n\
                 dat w: double on edges;\nglobal g: double;\nglobal h: double;\nglobal n: int;\n\
                 kernel k1(double *x) { x[0] += 1.0; }\n\
                 kernel k2(const double *w, double *x) { x[0] += w[0]; }\n\
                 kernel k3(const double *x, double *s) { *s += x[0]; }\n\
                 main {\n",
            );
            self.block(&mut text, 0);
            text.push_str("}\n");
            text
        }
    }

    #[test]
    fn generated_programs_have_the_same_dead_loops_and_last_writers() {
        let mut generator = Generator(12);
        let mut some_dead = 0;
        let mut some_live = 0;
        for case in 0..3_000 {
            let text = generator.program();
            assert_same(&format!("generated {case}"), &text);
            let analysis = analyse_text(Path::new("g.op2"), &text, &Options::default());
            for id in 0..analysis.program.invocations.len() {
                let id = InvocationId(u32::try_from(id).expect("few"));
                if analysis.dependencies.is_dead(id) {
                    some_dead += 1;
                } else {
                    some_live += 1;
                }
            }
        }
        // The programs exercise both answers.
        assert!(
            some_dead > 1_000 && some_live > 1_000,
            "{some_dead} dead, {some_live} live"
        );
    }
}
