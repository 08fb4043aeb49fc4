//! Equality of analysed programs apart from where things are in the source,
//! for a [`crate::Generator`] to know that what it built before still holds.
//!
//! Source positions never reach the generated code, but they change with
//! every edit above a declaration; everything else is compared. Every
//! struct and struct-like variant is destructured in full, so that a field
//! added to the model or the HIR fails to compile here rather than being
//! silently ignored; an enum variant added falls to "different", which only
//! costs a rebuild.

use op2_analysis::hir::{Body, Expr, ExprKind, Link, Local, LocalInit, Place, Stmt, StmtKind};
use op2_analysis::model::{
    Arg, Const, Dat, Global, InitialValue, Invocation, Kernel, Map, Param, Program, Set,
};
use op2_analysis::value::Value;

/// Two programs are the same apart from source positions and the bodies of
/// kernels (and what is derived from them): everything the graph type
/// depends on except the kernel functions of its shared code.
pub(crate) fn program_but_kernel_bodies(a: &Program, b: &Program) -> bool {
    let Program {
        // The text, which reaches the graph only through the model.
        files: _,
        sets,
        maps,
        dats,
        consts,
        globals,
        kernels,
        invocations,
        main,
        main_location: _,
        names,
        initialiser_consts,
        referenced,
    } = a;
    all(sets, &b.sets, set)
        && all(maps, &b.maps, map)
        && all(dats, &b.dats, dat)
        && all(consts, &b.consts, constant)
        && all(globals, &b.globals, global)
        && all(kernels, &b.kernels, kernel_but_body)
        && all(invocations, &b.invocations, invocation)
        && match (main, &b.main) {
            (Some(x), Some(y)) => std::sync::Arc::ptr_eq(x, y) || body(x, y),
            (None, None) => true,
            _ => false,
        }
        && *names == b.names
        && *initialiser_consts == b.initialiser_consts
        && *referenced == b.referenced
}

fn all<T>(a: &[T], b: &[T], same: fn(&T, &T) -> bool) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

fn set(a: &Set, b: &Set) -> bool {
    let Set { name, location: _ } = a;
    *name == b.name
}

fn map(a: &Map, b: &Map) -> bool {
    let Map {
        name,
        location: _,
        from,
        to,
        arity,
    } = a;
    *name == b.name && *from == b.from && *to == b.to && *arity == b.arity
}

fn dat(a: &Dat, b: &Dat) -> bool {
    let Dat {
        name,
        location: _,
        ty,
        set,
        init,
    } = a;
    *name == b.name && *ty == b.ty && *set == b.set && initial_value(init, &b.init)
}

fn constant(a: &Const, b: &Const) -> bool {
    let Const {
        name,
        location: _,
        ty,
        value,
    } = a;
    *name == b.name
        && *ty == b.ty
        && match (value, &b.value) {
            (Some(x), Some(y)) => values(x, y),
            (None, None) => true,
            _ => false,
        }
}

fn global(a: &Global, b: &Global) -> bool {
    let Global {
        name,
        location: _,
        ty,
        init,
    } = a;
    *name == b.name && *ty == b.ty && initial_value(init, &b.init)
}

fn initial_value(a: &InitialValue, b: &InitialValue) -> bool {
    match (a, b) {
        (InitialValue::Zero, InitialValue::Zero) => true,
        (InitialValue::Components(x), InitialValue::Components(y)) => values(x, y),
        (InitialValue::FromConst(x), InitialValue::FromConst(y)) => x == y,
        _ => false,
    }
}

fn kernel_but_body(a: &Kernel, b: &Kernel) -> bool {
    let Kernel {
        name,
        location: _,
        params,
        // Printed through the kernel cache, which compares them itself;
        // but whether it prints decides the execute handlers that call it
        // (their print buffer and the arguments they pass), so that is
        // compared here.
        body,
        // Derived from the body, and not read by the code generator.
        summary: _,
        consts_used,
    } = a;
    *name == b.name
        && all(params, &b.params, param)
        && *consts_used == b.consts_used
        && op2_analysis::hir::first_print(body).is_some()
            == op2_analysis::hir::first_print(&b.body).is_some()
}

fn param(a: &Param, b: &Param) -> bool {
    let Param {
        name,
        location: _,
        name_location: _,
        ty,
        dimension,
        is_const,
    } = a;
    *name == b.name && *ty == b.ty && *dimension == b.dimension && *is_const == b.is_const
}

fn invocation(a: &Invocation, b: &Invocation) -> bool {
    let Invocation {
        name,
        named_explicitly,
        location: _,
        name_location: _,
        kernel,
        set,
        args,
        is_fetch,
    } = a;
    *name == b.name
        && *named_explicitly == b.named_explicitly
        && *is_fetch == b.is_fetch
        && *kernel == b.kernel
        && *set == b.set
        && args.len() == b.args.len()
        && args.iter().zip(&b.args).all(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => arg(x, y),
            (None, None) => true,
            _ => false,
        })
}

fn arg(a: &Arg, b: &Arg) -> bool {
    let Arg {
        kind,
        mode,
        location: _,
        mode_location: _,
        ty,
    } = a;
    *kind == b.kind && *mode == b.mode && *ty == b.ty
}

fn values(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value(*x, *y))
}

/// Two lowered bodies are the same apart from source ranges: printed, they
/// give the same text.
pub(crate) fn body(a: &Body, b: &Body) -> bool {
    let Body { locals, statements } = a;
    locals.len() == b.locals.len()
        && all(locals, &b.locals, local)
        && stmts(statements, &b.statements)
}

fn local(a: &Local, b: &Local) -> bool {
    let Local {
        name,
        ty,
        dimension,
        range: _,
        is_const,
    } = a;
    *name == b.name && *ty == b.ty && *dimension == b.dimension && *is_const == b.is_const
}

fn stmts(a: &[Stmt], b: &[Stmt]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| stmt(x, y))
}

fn boxed_stmt(a: Option<&Stmt>, b: Option<&Stmt>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => stmt(a, b),
        (None, None) => true,
        _ => false,
    }
}

fn stmt(a: &Stmt, b: &Stmt) -> bool {
    let Stmt { kind, range: _ } = a;
    match (kind, &b.kind) {
        (StmtKind::Expr(x), StmtKind::Expr(y)) => expr(x, y),
        (
            StmtKind::Local { local, init },
            StmtKind::Local {
                local: other_local,
                init: other_init,
            },
        ) => {
            local == other_local
                && match (init, other_init) {
                    (Some(LocalInit::Expr(x)), Some(LocalInit::Expr(y))) => expr(x, y),
                    (Some(LocalInit::List(x)), Some(LocalInit::List(y))) => exprs(x, y),
                    (None, None) => true,
                    _ => false,
                }
        }
        (StmtKind::Block(x), StmtKind::Block(y))
        | (StmtKind::Sequence(x), StmtKind::Sequence(y)) => stmts(x, y),
        (
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            },
            StmtKind::If {
                condition: other_condition,
                then_branch: other_then,
                else_branch: other_else,
            },
        ) => {
            expr(condition, other_condition)
                && stmt(then_branch, other_then)
                && boxed_stmt(else_branch.as_deref(), other_else.as_deref())
        }
        (
            StmtKind::For {
                init,
                condition,
                step,
                body,
            },
            StmtKind::For {
                init: other_init,
                condition: other_condition,
                step: other_step,
                body: other_body,
            },
        ) => {
            boxed_stmt(init.as_deref(), other_init.as_deref())
                && optional_expr(condition.as_ref(), other_condition.as_ref())
                && optional_expr(step.as_ref(), other_step.as_ref())
                && stmt(body, other_body)
        }
        (
            StmtKind::While { condition, body },
            StmtKind::While {
                condition: other_condition,
                body: other_body,
            },
        )
        | (
            StmtKind::DoWhile { body, condition },
            StmtKind::DoWhile {
                body: other_body,
                condition: other_condition,
            },
        ) => expr(condition, other_condition) && stmt(body, other_body),
        (StmtKind::Break, StmtKind::Break)
        | (StmtKind::Continue, StmtKind::Continue)
        | (StmtKind::Return, StmtKind::Return) => true,
        (StmtKind::ParLoop(x), StmtKind::ParLoop(y)) => x == y,
        (
            StmtKind::Print {
                ends_line,
                format,
                args,
                ..
            },
            StmtKind::Print {
                ends_line: other_ends_line,
                format: other_format,
                args: other_args,
                ..
            },
        ) => ends_line == other_ends_line && format == other_format && exprs(args, other_args),
        (StmtKind::Exit(status), StmtKind::Exit(other_status)) => expr(status, other_status),
        _ => false,
    }
}

fn exprs(a: &[Expr], b: &[Expr]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| expr(x, y))
}

fn optional_expr(a: Option<&Expr>, b: Option<&Expr>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => expr(a, b),
        (None, None) => true,
        _ => false,
    }
}

fn same_place(a: &Place, b: &Place) -> bool {
    let Place {
        var,
        index,
        range: _,
    } = a;
    *var == b.var && optional_expr(index.as_deref(), b.index.as_deref())
}

fn expr(a: &Expr, b: &Expr) -> bool {
    let Expr { kind, ty, range: _ } = a;
    if *ty != b.ty {
        return false;
    }
    match (kind, &b.kind) {
        (ExprKind::Literal(x), ExprKind::Literal(y)) => value(*x, *y),
        (ExprKind::Load(x), ExprKind::Load(y)) => same_place(x, y),
        (ExprKind::Len(x), ExprKind::Len(y)) => x == y,
        (
            ExprKind::Assign { place, op, value },
            ExprKind::Assign {
                place: other_place,
                op: other_op,
                value: other_value,
            },
        ) => op == other_op && same_place(place, other_place) && expr(value, other_value),
        (
            ExprKind::Update {
                place,
                increment,
                prefix,
            },
            ExprKind::Update {
                place: other_place,
                increment: other_increment,
                prefix: other_prefix,
            },
        ) => {
            increment == other_increment && prefix == other_prefix && same_place(place, other_place)
        }
        (ExprKind::Unary(op, x), ExprKind::Unary(other_op, y)) => op == other_op && expr(x, y),
        (ExprKind::Binary(op, l, r), ExprKind::Binary(other_op, other_l, other_r)) => {
            op == other_op && expr(l, other_l) && expr(r, other_r)
        }
        (ExprKind::Chain(first, links), ExprKind::Chain(other_first, other_links)) => {
            expr(first, other_first)
                && links.len() == other_links.len()
                && links.iter().zip(other_links).all(|(a, b)| {
                    let Link {
                        op,
                        operand,
                        right,
                        ty,
                        range: _,
                    } = a;
                    *op == b.op && *operand == b.operand && *ty == b.ty && expr(right, &b.right)
                })
        }
        (ExprKind::Conditional(c, x, y), ExprKind::Conditional(other_c, other_x, other_y)) => {
            expr(c, other_c) && expr(x, other_x) && expr(y, other_y)
        }
        (
            ExprKind::Convert { value, explicit },
            ExprKind::Convert {
                value: other_value,
                explicit: other_explicit,
            },
        ) => explicit == other_explicit && expr(value, other_value),
        (ExprKind::Call(builtin, args), ExprKind::Call(other_builtin, other_args)) => {
            builtin == other_builtin && exprs(args, other_args)
        }
        (ExprKind::Error, ExprKind::Error) => true,
        _ => false,
    }
}

/// The same type and the same bits: `0.0` and `-0.0` print differently.
fn value(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => x.to_bits() == y.to_bits(),
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Uint(x), Value::Uint(y)) => x == y,
        (Value::Ll(x), Value::Ll(y)) => x == y,
        (Value::Ull(x), Value::Ull(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_the_same_when_they_print_the_same() {
        assert!(value(Value::Double(0.5), Value::Double(0.5)));
        assert!(!value(Value::Double(0.0), Value::Double(-0.0)));
        assert!(!value(Value::Float(0.0), Value::Float(-0.0)));
        assert!(!value(Value::Double(1.0), Value::Float(1.0)));
        assert!(value(Value::Double(f64::NAN), Value::Double(f64::NAN)));
    }
}
