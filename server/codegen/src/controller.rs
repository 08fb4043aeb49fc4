//! `main` compiled to a state machine (compilation.md §6): blocks of
//! straight-line statements, each ending in a jump, a branch, a par_loop (the
//! controller sends `{inv}_begin` and waits for every `{inv}_end`) or the
//! end of the program.

use op2_analysis::hir::{Body, Stmt, StmtKind};
use rustc_hash::FxHashMap;

use crate::model::{Block, Controller, Terminator};
use crate::names;

struct Builder {
    blocks: Vec<(Vec<Stmt>, Option<Terminator>)>,
    current: usize,
    /// (continue target, break target) of each enclosing loop.
    loops: Vec<(usize, usize)>,
}

impl Builder {
    fn new_block(&mut self) -> usize {
        self.blocks.push((Vec::new(), None));
        self.blocks.len() - 1
    }

    /// Ends the current block (unless something already ended it).
    fn terminate(&mut self, terminator: Terminator) {
        let block = &mut self.blocks[self.current];
        if block.1.is_none() {
            block.1 = Some(terminator);
        }
    }

    /// Ends the current block and continues in a fresh one (after a jump
    /// that leaves; the fresh block is unreachable unless jumped to).
    fn terminate_and_continue(&mut self, terminator: Terminator) {
        self.terminate(terminator);
        self.current = self.new_block();
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for stmt in stmts {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Expr(_) | StmtKind::Local { .. } | StmtKind::Print { .. } => {
                self.blocks[self.current].0.push(stmt.clone());
            }
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => self.stmts(stmts),
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                let then_block = self.new_block();
                let else_block = else_branch.as_ref().map(|_| self.new_block());
                let join = self.new_block();
                self.terminate(Terminator::Branch {
                    condition: condition.clone(),
                    then_block,
                    else_block: else_block.unwrap_or(join),
                });
                self.current = then_block;
                self.stmt(then_branch);
                self.terminate(Terminator::Goto(join));
                if let (Some(else_block), Some(else_branch)) = (else_block, else_branch) {
                    self.current = else_block;
                    self.stmt(else_branch);
                    self.terminate(Terminator::Goto(join));
                }
                self.current = join;
            }
            StmtKind::While { condition, body } => {
                let head = self.new_block();
                let body_block = self.new_block();
                let exit = self.new_block();
                self.terminate(Terminator::Goto(head));
                self.blocks[head].1 = Some(Terminator::Branch {
                    condition: condition.clone(),
                    then_block: body_block,
                    else_block: exit,
                });
                self.loops.push((head, exit));
                self.current = body_block;
                self.stmt(body);
                self.terminate(Terminator::Goto(head));
                self.loops.pop();
                self.current = exit;
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
                let head = self.new_block();
                let body_block = self.new_block();
                let step_block = self.new_block();
                let exit = self.new_block();
                self.terminate(Terminator::Goto(head));
                self.blocks[head].1 = Some(match condition {
                    Some(condition) => Terminator::Branch {
                        condition: condition.clone(),
                        then_block: body_block,
                        else_block: exit,
                    },
                    None => Terminator::Goto(body_block),
                });
                self.loops.push((step_block, exit));
                self.current = body_block;
                self.stmt(body);
                self.terminate(Terminator::Goto(step_block));
                self.loops.pop();
                if let Some(step) = step {
                    self.blocks[step_block].0.push(Stmt {
                        range: step.range,
                        kind: StmtKind::Expr(step.clone()),
                    });
                }
                self.blocks[step_block].1 = Some(Terminator::Goto(head));
                self.current = exit;
            }
            StmtKind::DoWhile { body, condition } => {
                let body_block = self.new_block();
                let check = self.new_block();
                let exit = self.new_block();
                self.terminate(Terminator::Goto(body_block));
                self.loops.push((check, exit));
                self.current = body_block;
                self.stmt(body);
                self.terminate(Terminator::Goto(check));
                self.loops.pop();
                self.blocks[check].1 = Some(Terminator::Branch {
                    condition: condition.clone(),
                    then_block: body_block,
                    else_block: exit,
                });
                self.current = exit;
            }
            StmtKind::Break => {
                if let Some(&(_, exit)) = self.loops.last() {
                    self.terminate_and_continue(Terminator::Goto(exit));
                }
            }
            StmtKind::Continue => {
                if let Some(&(next, _)) = self.loops.last() {
                    self.terminate_and_continue(Terminator::Goto(next));
                }
            }
            StmtKind::Return => self.terminate_and_continue(Terminator::Exit(None)),
            StmtKind::Exit(status) => {
                self.terminate_and_continue(Terminator::Exit(Some(status.clone())));
            }
            // The graph is built from the program with its `fetch`es
            // lowered to their invocations (op2_analysis::fetch): none is left.
            StmtKind::Fetch { .. } => {}
            StmtKind::ParLoop(invocation) => {
                let next = self.new_block();
                self.terminate(Terminator::ParLoop {
                    invocation: *invocation,
                    next,
                });
                self.current = next;
            }
        }
    }
}

/// Compiles `main` into blocks; block 0 is the entry.
pub fn compile(main: &Body) -> Controller {
    let mut builder = Builder {
        blocks: vec![(Vec::new(), None)],
        current: 0,
        loops: Vec::new(),
    };
    builder.stmts(&main.statements);
    builder.terminate(Terminator::Exit(None));
    let blocks = builder
        .blocks
        .into_iter()
        .map(|(statements, terminator)| Block {
            statements,
            terminator: terminator.unwrap_or(Terminator::Exit(None)),
        })
        .collect();
    // How many locals have each name, counted once (not per local: a long
    // `main` made that quadratic, issue #12).
    let mut named: FxHashMap<&str, usize> = FxHashMap::default();
    for local in &main.locals {
        *named.entry(local.name.as_str()).or_default() += 1;
    }
    let locals = main
        .locals
        .iter()
        .enumerate()
        .map(|(index, local)| {
            let shared = named.get(local.name.as_str()).is_some_and(|&n| n > 1);
            names::main_local(
                &local.name,
                u32::try_from(index).unwrap_or(u32::MAX),
                shared,
            )
        })
        .collect();
    Controller { blocks, locals }
}
