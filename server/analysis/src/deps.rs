//! Program dependency analysis, after PyOP2's lazy evaluation: each
//! invocation and each statement of `main` reads and writes dats and
//! globals; propagated through `main`'s control flow (loops included), this
//! says which par_loops compute something nobody reads (H605), which
//! invocations may last have written a dat before a point, and which read it
//! next.
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
}

impl GraphBuilder<'_> {
    fn add(&mut self, node: Node) -> usize {
        let id = self.nodes.len();
        self.nodes.push(node);
        for previous in std::mem::take(&mut self.frontier) {
            self.nodes[previous].successors.push(id);
        }
        self.frontier.push(id);
        id
    }

    fn expr_node(&mut self, exprs: &[&Expr], range: TextRange) {
        let mut node = Node {
            range,
            ..Node::default()
        };
        for expr in exprs {
            expr_effects(expr, &mut node);
        }
        self.add(node);
    }

    fn block(&mut self, stmts: &[Stmt]) {
        for stmt in stmts {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Expr(expr) => self.expr_node(&[expr], stmt.range),
            StmtKind::Local { init, .. } => match init {
                Some(LocalInit::Expr(expr)) => self.expr_node(&[expr], stmt.range),
                Some(LocalInit::List(items)) => {
                    let items: Vec<&Expr> = items.iter().collect();
                    self.expr_node(&items, stmt.range);
                }
                None => {}
            },
            StmtKind::Print { args, .. } => {
                let args: Vec<&Expr> = args.iter().collect();
                self.expr_node(&args, stmt.range);
            }
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => self.block(stmts),
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                self.expr_node(&[condition], condition.range);
                let after_condition = self.frontier.clone();
                self.stmt(then_branch);
                let after_then = std::mem::replace(&mut self.frontier, after_condition);
                if let Some(else_branch) = else_branch {
                    self.stmt(else_branch);
                }
                self.frontier.extend(after_then);
            }
            StmtKind::While { condition, body } => {
                let head = self.add(Node {
                    range: condition.range,
                    ..Node::default()
                });
                expr_effects(condition, &mut self.nodes[head]);
                self.loop_body(head, body, None);
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
                let head = self.add(Node {
                    range: stmt.range,
                    ..Node::default()
                });
                if let Some(condition) = condition {
                    expr_effects(condition, &mut self.nodes[head]);
                }
                let exits_normally = condition.is_some();
                self.loop_body(head, body, step.as_ref());
                if !exits_normally {
                    // Only `break` leaves `for (;;)`: drop the head's exit.
                    self.frontier.retain(|n| *n != head);
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
                self.stmt(body);
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
            }
            StmtKind::Break => {
                let frontier = std::mem::take(&mut self.frontier);
                if let Some(targets) = self.loops.last_mut() {
                    targets.breaks.extend(frontier);
                }
            }
            StmtKind::Continue => {
                let frontier = std::mem::take(&mut self.frontier);
                if let Some(targets) = self.loops.last_mut() {
                    targets.continues.extend(frontier);
                }
            }
            StmtKind::Exit(status) => {
                self.expr_node(&[status], stmt.range);
                for previous in std::mem::take(&mut self.frontier) {
                    self.nodes[previous].successors.push(EXIT);
                }
            }
            // Reads the whole dat and overwrites the whole global.
            StmtKind::Fetch { dat, global, .. } => {
                self.add(Node {
                    range: stmt.range,
                    uses: vec![Data::Dat(*dat)],
                    defs: vec![Data::Global(*global)],
                    kills: vec![Data::Global(*global)],
                    ..Node::default()
                });
            }
            StmtKind::Return => {
                for previous in std::mem::take(&mut self.frontier) {
                    self.nodes[previous].successors.push(EXIT);
                }
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
                self.add(node);
            }
        }
    }

    fn loop_body(&mut self, head: usize, body: &Stmt, step: Option<&Expr>) {
        self.loops.push(LoopTargets {
            breaks: Vec::new(),
            continues: Vec::new(),
        });
        self.stmt(body);
        let targets = self.loops.pop().unwrap_or(LoopTargets {
            breaks: Vec::new(),
            continues: Vec::new(),
        });
        self.frontier.extend(targets.continues);
        if let Some(step) = step {
            self.expr_node(&[step], step.range);
        }
        for previous in std::mem::take(&mut self.frontier) {
            self.nodes[previous].successors.push(head);
        }
        self.frontier = vec![head];
        self.frontier.extend(targets.breaks);
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
        let nodes = build_graph(program, main);
        let mut invocation_nodes = vec![None; program.invocations.len()];
        for (index, node) in nodes.iter().enumerate() {
            if let Some(id) = node.invocation
                && let Some(slot) = invocation_nodes.get_mut(id.index())
            {
                *slot = Some(index);
            }
        }
        let main_file = program.main_location.map(|l| l.file).unwrap_or_default();
        let mut deps = Dependencies {
            nodes,
            invocation_nodes,
            dead: Vec::new(),
            main_file,
        };
        deps.dead = deps.compute_dead(program.invocations.len());
        deps
    }

    fn compute_dead(&self, invocations: usize) -> Vec<bool> {
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
    /// `invocation` runs.
    pub fn last_writers(&self, invocation: InvocationId, data: Data) -> Vec<InvocationId> {
        let Some(target) = self
            .invocation_nodes
            .get(invocation.index())
            .copied()
            .flatten()
        else {
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
        let Some(start) = self
            .invocation_nodes
            .get(invocation.index())
            .copied()
            .flatten()
        else {
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

fn build_graph(program: &Program, main: &Body) -> Vec<Node> {
    let mut builder = GraphBuilder {
        program,
        nodes: Vec::new(),
        frontier: Vec::new(),
        loops: Vec::new(),
    };
    builder.nodes.push(Node::default()); // ENTRY
    builder.nodes.push(Node::default()); // EXIT
    builder.frontier = vec![ENTRY];
    builder.block(&main.statements);
    for previous in std::mem::take(&mut builder.frontier) {
        builder.nodes[previous].successors.push(EXIT);
    }
    builder.nodes
}
