//! Compile-time values: evaluating constant expressions with C semantics,
//! and the built-in math functions (shared with the interpreter).

use op2_syntax::ast::ScalarType;

use crate::hir::{Builtin, Expr, ExprKind, Var};
use crate::model::ConstId;
use crate::value::{self, EvalError, Value};

/// The compile-time values of the program's consts (`None` for a const whose
/// value comes from the instance data or could not be computed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConstValues {
    values: Vec<Option<Vec<Value>>>,
}

impl ConstValues {
    /// Values indexed by const.
    pub fn new(values: Vec<Option<Vec<Value>>>) -> ConstValues {
        ConstValues { values }
    }

    /// Sets the value of a const (while the consts are evaluated).
    pub(crate) fn set(&mut self, id: ConstId, value: Option<Vec<Value>>) {
        if let Some(slot) = self.values.get_mut(id.index()) {
            *slot = value;
        }
    }

    /// The value of a const, when known.
    pub fn get(&self, id: ConstId) -> Option<&[Value]> {
        self.values.get(id.index()).and_then(|v| v.as_deref())
    }

    /// Evaluates `expr` when everything in it is known at compile time.
    pub fn eval(&self, expr: &Expr) -> Option<Value> {
        self.try_eval(expr).ok().flatten()
    }

    /// Like [`ConstValues::eval`], but tells an error (division by zero)
    /// apart from "not constant" (`Ok(None)`).
    pub fn try_eval(&self, expr: &Expr) -> Result<Option<Value>, EvalError> {
        Ok(Some(match &expr.kind {
            ExprKind::Literal(v) => *v,
            ExprKind::Load(place) => {
                let Var::Const(id) = place.var else {
                    return Ok(None);
                };
                let Some(values) = self.get(id) else {
                    return Ok(None);
                };
                let index = match &place.index {
                    Some(index) => match self.try_eval(index)?.and_then(Value::as_i64) {
                        Some(i) => i,
                        None => return Ok(None),
                    },
                    None => 0,
                };
                match usize::try_from(index).ok().and_then(|i| values.get(i)) {
                    Some(v) => *v,
                    None => return Ok(None),
                }
            }
            ExprKind::Unary(op, a) => match self.try_eval(a)? {
                Some(a) => value::unary(*op, a)?,
                None => return Ok(None),
            },
            ExprKind::Binary(op, a, b) => match (self.try_eval(a)?, self.try_eval(b)?) {
                (Some(a), Some(b)) => value::binary(*op, a, b)?,
                _ => return Ok(None),
            },
            ExprKind::Chain(first, links) => {
                let Some(mut acc) = self.try_eval(first)? else {
                    return Ok(None);
                };
                for link in links {
                    let Some(right) = self.try_eval(&link.right)? else {
                        return Ok(None);
                    };
                    acc = value::binary(link.op, acc.convert(link.operand), right)?;
                }
                acc
            }
            ExprKind::Conditional(c, a, b) => match self.try_eval(c)? {
                Some(c) if c.is_true() => return self.try_eval(a),
                Some(_) => return self.try_eval(b),
                None => return Ok(None),
            },
            ExprKind::Convert { value, .. } => match self.try_eval(value)? {
                Some(v) => v.convert(expr.ty),
                None => return Ok(None),
            },
            ExprKind::Call(builtin, args) => {
                let mut values = Vec::with_capacity(args.len());
                for arg in args {
                    match self.try_eval(arg)? {
                        Some(v) => values.push(v),
                        None => return Ok(None),
                    }
                }
                call_builtin(*builtin, &values, expr.ty)
            }
            ExprKind::Len(_)
            | ExprKind::Assign { .. }
            | ExprKind::Update { .. }
            | ExprKind::Error => return Ok(None),
        }))
    }
}

/// Calls a built-in on arguments already converted to its operand type;
/// `result` is the call's type.
pub fn call_builtin(builtin: Builtin, args: &[Value], result: ScalarType) -> Value {
    let f = |i: usize| args.get(i).map_or(0.0, |v| v.as_f64());
    let double = |v: f64| Value::Double(v).convert(result);
    match builtin {
        Builtin::Sqrt => double(f(0).sqrt()),
        Builtin::Fabs => double(f(0).abs()),
        Builtin::Fmin => double(f(0).min(f(1))),
        Builtin::Fmax => double(f(0).max(f(1))),
        Builtin::Pow => double(f(0).powf(f(1))),
        Builtin::Exp => double(f(0).exp()),
        Builtin::Log => double(f(0).ln()),
        Builtin::Log10 => double(f(0).log10()),
        Builtin::Sin => double(f(0).sin()),
        Builtin::Cos => double(f(0).cos()),
        Builtin::Tan => double(f(0).tan()),
        Builtin::Asin => double(f(0).asin()),
        Builtin::Acos => double(f(0).acos()),
        Builtin::Atan => double(f(0).atan()),
        Builtin::Atan2 => double(f(0).atan2(f(1))),
        Builtin::Floor => double(f(0).floor()),
        Builtin::Ceil => double(f(0).ceil()),
        Builtin::Round => double(f(0).round()),
        Builtin::Isnan => Value::Int(i32::from(f(0).is_nan())),
        Builtin::Isinf => Value::Int(i32::from(f(0).is_infinite())),
        Builtin::Abs | Builtin::Min | Builtin::Max => {
            let a = args.first().copied().unwrap_or(Value::Int(0));
            match builtin {
                Builtin::Abs => {
                    if value::binary(op2_syntax::ast::BinaryOp::Lt, a, Value::zero(a.ty()))
                        .is_ok_and(Value::is_true)
                    {
                        value::unary(op2_syntax::ast::UnaryOp::Neg, a).unwrap_or(a)
                    } else {
                        a
                    }
                }
                _ => {
                    let b = args.get(1).copied().unwrap_or(a);
                    // C's fmin-style NaN handling is not promised for
                    // min/max: they are C++'s `std::min` and `std::max`,
                    // `b < a ? b : a` and `a < b ? b : a` (so of two equal
                    // zeros, or of a NaN and a number, each gives the
                    // first, as an imported `std::min` does).
                    let (x, y) = if builtin == Builtin::Min {
                        (b, a)
                    } else {
                        (a, b)
                    };
                    if value::binary(op2_syntax::ast::BinaryOp::Lt, x, y).is_ok_and(Value::is_true)
                    {
                        b
                    } else {
                        a
                    }
                }
            }
            .convert(result)
        }
    }
}

/// True when `value` can be stored in `ty` without changing it: the check
/// behind E202 for initialisers.
pub fn fits(value: Value, ty: ScalarType) -> bool {
    if ty.is_floating() {
        return true;
    }
    if ty == ScalarType::Bool {
        return matches!(value, Value::Bool(_)) || matches!(value.as_i64(), Some(0 | 1));
    }
    let as_integer = match value {
        Value::Double(_) | Value::Float(_) => {
            let v = value.as_f64();
            if v.fract() != 0.0 || !v.is_finite() {
                return false;
            }
            #[allow(clippy::cast_possible_truncation)]
            let i = v as i128;
            i
        }
        Value::Ull(v) => i128::from(v),
        other => i128::from(other.as_i64().unwrap_or(0)),
    };
    let (min, max): (i128, i128) = match ty {
        ScalarType::Int => (i128::from(i32::MIN), i128::from(i32::MAX)),
        ScalarType::Uint => (0, i128::from(u32::MAX)),
        ScalarType::Ll => (i128::from(i64::MIN), i128::from(i64::MAX)),
        ScalarType::Ull => (0, i128::from(u64::MAX)),
        _ => return true,
    };
    (min..=max).contains(&as_integer)
}
