//! Moving byte ranges by a fixed amount, for results reused after the text
//! before them changed length.

use op2_syntax::{Diagnostic, TextRange};

use crate::hir::{Body, Expr, ExprKind, LocalInit, Place, Stmt, StmtKind};
use crate::kernel::KernelSummary;

/// Something whose ranges can move.
pub(crate) trait Shift {
    /// Adds `delta` to every byte offset.
    fn shift(&mut self, delta: i64);
}

impl Shift for TextRange {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    fn shift(&mut self, delta: i64) {
        let moved = |offset: u32| (i64::from(offset) + delta).clamp(0, i64::from(u32::MAX)) as u32;
        self.start = moved(self.start);
        self.end = moved(self.end);
    }
}

impl<T: Shift> Shift for Vec<T> {
    fn shift(&mut self, delta: i64) {
        for item in self {
            item.shift(delta);
        }
    }
}

impl Shift for Diagnostic {
    fn shift(&mut self, delta: i64) {
        // Related locations of kernel diagnostics point into the same kernel.
        self.location.range.shift(delta);
        for related in &mut self.related {
            related.location.range.shift(delta);
        }
        for fix in &mut self.fixes {
            for edit in &mut fix.edits {
                edit.range.shift(delta);
            }
        }
    }
}

impl Shift for KernelSummary {
    fn shift(&mut self, delta: i64) {
        for usage in &mut self.params {
            for range in usage
                .reads
                .iter_mut()
                .chain(&mut usage.assigns)
                .chain(&mut usage.updates)
                .chain(&mut usage.unwritten_reads)
                .chain(usage.compound.iter_mut().map(|(r, _)| r))
                .chain(usage.constant_indices.iter_mut().map(|(_, r)| r))
            {
                range.shift(delta);
            }
        }
    }
}

impl Shift for Body {
    fn shift(&mut self, delta: i64) {
        for local in &mut self.locals {
            local.range.shift(delta);
        }
        for stmt in &mut self.statements {
            stmt.shift(delta);
        }
    }
}

impl Shift for Stmt {
    fn shift(&mut self, delta: i64) {
        self.range.shift(delta);
        match &mut self.kind {
            StmtKind::Expr(expr) => expr.shift(delta),
            StmtKind::Local { init, .. } => match init {
                Some(LocalInit::Expr(expr)) => expr.shift(delta),
                Some(LocalInit::List(items)) => items.iter_mut().for_each(|e| e.shift(delta)),
                None => {}
            },
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => {
                stmts.iter_mut().for_each(|s| s.shift(delta))
            }
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                condition.shift(delta);
                then_branch.shift(delta);
                if let Some(e) = else_branch {
                    e.shift(delta);
                }
            }
            StmtKind::For {
                init,
                condition,
                step,
                body,
            } => {
                if let Some(i) = init {
                    i.shift(delta);
                }
                if let Some(c) = condition {
                    c.shift(delta);
                }
                if let Some(s) = step {
                    s.shift(delta);
                }
                body.shift(delta);
            }
            StmtKind::While { condition, body } | StmtKind::DoWhile { body, condition } => {
                condition.shift(delta);
                body.shift(delta);
            }
            StmtKind::Print { args, .. } => args.iter_mut().for_each(|a| a.shift(delta)),
            StmtKind::Exit(status) => status.shift(delta),
            StmtKind::Fetch { global_range, .. } => global_range.shift(delta),
            StmtKind::Break | StmtKind::Continue | StmtKind::Return | StmtKind::ParLoop(_) => {}
        }
    }
}

impl Shift for Place {
    fn shift(&mut self, delta: i64) {
        self.range.shift(delta);
        if let Some(index) = &mut self.index {
            index.shift(delta);
        }
    }
}

impl Shift for Expr {
    fn shift(&mut self, delta: i64) {
        self.range.shift(delta);
        match &mut self.kind {
            ExprKind::Literal(_) | ExprKind::Len(_) | ExprKind::Error => {}
            ExprKind::Load(place) | ExprKind::Update { place, .. } => place.shift(delta),
            ExprKind::Assign { place, value, .. } => {
                place.shift(delta);
                value.shift(delta);
            }
            ExprKind::Unary(_, a) | ExprKind::Convert { value: a, .. } => a.shift(delta),
            ExprKind::Binary(_, a, b) => {
                a.shift(delta);
                b.shift(delta);
            }
            ExprKind::Chain(first, links) => {
                first.shift(delta);
                for link in links {
                    link.range.shift(delta);
                    link.right.shift(delta);
                }
            }
            ExprKind::Conditional(c, a, b) => {
                c.shift(delta);
                a.shift(delta);
                b.shift(delta);
            }
            ExprKind::Call(_, args) => args.iter_mut().for_each(|a| a.shift(delta)),
        }
    }
}
