//! Values of the language's scalar types with C semantics on IEEE hardware:
//! the usual arithmetic conversions, integer promotion, wrapping unsigned and
//! (as every target compiler does in practice) wrapping signed arithmetic,
//! `float` computed in single precision, conversion at assignment.
//!
//! Shared by constant evaluation here and by the interpreter.

use std::fmt;

use op2_syntax::ast::{BinaryOp, ScalarType, UnaryOp};

/// A value of one scalar type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// `double`
    Double(f64),
    /// `float`
    Float(f32),
    /// `int`
    Int(i32),
    /// `uint`
    Uint(u32),
    /// `ll`
    Ll(i64),
    /// `ull`
    Ull(u64),
    /// `bool`
    Bool(bool),
}

/// Why an operation has no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalError {
    /// Integer division or remainder by zero.
    DivisionByZero,
    /// An operator applied to operands it does not take (`~` on a double).
    InvalidOperands,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::DivisionByZero => f.write_str("integer division by zero"),
            EvalError::InvalidOperands => {
                f.write_str("operator applied to operands of the wrong type")
            }
        }
    }
}

impl Value {
    /// The value's type.
    pub fn ty(self) -> ScalarType {
        match self {
            Value::Double(_) => ScalarType::Double,
            Value::Float(_) => ScalarType::Float,
            Value::Int(_) => ScalarType::Int,
            Value::Uint(_) => ScalarType::Uint,
            Value::Ll(_) => ScalarType::Ll,
            Value::Ull(_) => ScalarType::Ull,
            Value::Bool(_) => ScalarType::Bool,
        }
    }

    /// The zero of a type.
    pub fn zero(ty: ScalarType) -> Value {
        Value::Int(0).convert(ty)
    }

    /// True when the value is non-zero (C truthiness).
    pub fn is_true(self) -> bool {
        match self {
            Value::Double(v) => v != 0.0,
            Value::Float(v) => v != 0.0,
            Value::Int(v) => v != 0,
            Value::Uint(v) => v != 0,
            Value::Ll(v) => v != 0,
            Value::Ull(v) => v != 0,
            Value::Bool(v) => v,
        }
    }

    /// The value as a double (exact for every type but 64-bit integers).
    #[allow(clippy::cast_precision_loss)]
    pub fn as_f64(self) -> f64 {
        match self {
            Value::Double(v) => v,
            Value::Float(v) => f64::from(v),
            Value::Int(v) => f64::from(v),
            Value::Uint(v) => f64::from(v),
            Value::Ll(v) => v as f64,
            Value::Ull(v) => v as f64,
            Value::Bool(v) => f64::from(u8::from(v)),
        }
    }

    /// The value as a signed 64-bit integer, when it is an integer.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(i64::from(v)),
            Value::Uint(v) => Some(i64::from(v)),
            Value::Ll(v) => Some(v),
            Value::Ull(v) => i64::try_from(v).ok(),
            Value::Bool(v) => Some(i64::from(v)),
            Value::Double(_) | Value::Float(_) => None,
        }
    }

    /// The value as an integer, exactly, when it is an integer (an `ull`
    /// past `i64::MAX` too: an index that large is out of range, not 0).
    pub fn as_i128(self) -> Option<i128> {
        match self {
            Value::Ull(v) => Some(i128::from(v)),
            other => other.as_i64().map(i128::from),
        }
    }

    /// Converts as C does at assignment or a cast: floating to integer
    /// truncates (saturating where C would be undefined), integer to
    /// narrower integer wraps, anything to `bool` compares with zero.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        clippy::cast_precision_loss
    )]
    pub fn convert(self, ty: ScalarType) -> Value {
        if self.ty() == ty {
            return self;
        }
        if ty == ScalarType::Bool {
            return Value::Bool(self.is_true());
        }
        match self {
            Value::Double(v) => from_f64(v, ty),
            Value::Float(v) => match ty {
                ScalarType::Double => Value::Double(f64::from(v)),
                _ => from_f64(f64::from(v), ty),
            },
            Value::Int(v) => from_i128(i128::from(v), ty),
            Value::Uint(v) => from_i128(i128::from(v), ty),
            Value::Ll(v) => from_i128(i128::from(v), ty),
            Value::Ull(v) => from_i128(i128::from(v), ty),
            Value::Bool(v) => from_i128(i128::from(v), ty),
        }
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn from_f64(v: f64, ty: ScalarType) -> Value {
    // Rust's float-to-int `as` saturates and maps NaN to zero, which is the
    // defined behaviour closest to C's undefined one.
    match ty {
        ScalarType::Double => Value::Double(v),
        ScalarType::Float => Value::Float(v as f32),
        ScalarType::Int => Value::Int(v as i32),
        ScalarType::Uint => Value::Uint(if v < 0.0 { (v as i64) as u32 } else { v as u32 }),
        ScalarType::Ll => Value::Ll(v as i64),
        ScalarType::Ull => Value::Ull(if v < 0.0 { (v as i64) as u64 } else { v as u64 }),
        ScalarType::Bool => Value::Bool(v != 0.0),
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn from_i128(v: i128, ty: ScalarType) -> Value {
    match ty {
        ScalarType::Double => Value::Double(v as f64),
        ScalarType::Float => Value::Float(v as f32),
        ScalarType::Int => Value::Int(v as i32),
        ScalarType::Uint => Value::Uint(v as u32),
        ScalarType::Ll => Value::Ll(v as i64),
        ScalarType::Ull => Value::Ull(v as u64),
        ScalarType::Bool => Value::Bool(v != 0),
    }
}

/// Rank for the usual arithmetic conversions.
fn rank(ty: ScalarType) -> u8 {
    match ty {
        ScalarType::Bool | ScalarType::Int => 1,
        ScalarType::Uint => 2,
        ScalarType::Ll => 3,
        ScalarType::Ull => 4,
        ScalarType::Float => 5,
        ScalarType::Double => 6,
    }
}

/// Integer promotion: `bool` becomes `int`.
pub fn promote(ty: ScalarType) -> ScalarType {
    if ty == ScalarType::Bool {
        ScalarType::Int
    } else {
        ty
    }
}

/// The common type of a binary arithmetic operation (C11 6.3.1.8, for the
/// types of this language).
pub fn common_type(a: ScalarType, b: ScalarType) -> ScalarType {
    let (a, b) = (promote(a), promote(b));
    if a.is_floating() || b.is_floating() {
        return if rank(a) >= rank(b) { a } else { b };
    }
    // `ll` with `uint`: `ll` can hold every `uint`, so `ll` wins. `ull` beats
    // everything integral; otherwise the higher rank wins.
    if rank(a) >= rank(b) { a } else { b }
}

/// The type a binary operator yields for operands of types `a` and `b`.
pub fn binary_result_type(op: BinaryOp, a: ScalarType, b: ScalarType) -> ScalarType {
    match op {
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            ScalarType::Int
        }
        BinaryOp::And | BinaryOp::Or => ScalarType::Int,
        BinaryOp::Shl | BinaryOp::Shr => promote(a),
        _ => common_type(a, b),
    }
}

/// The type of an operand after conversion for `op` (what both sides are
/// converted to before the operation).
pub fn binary_operand_type(op: BinaryOp, a: ScalarType, b: ScalarType) -> ScalarType {
    match op {
        BinaryOp::Shl | BinaryOp::Shr => promote(a),
        _ => common_type(a, b),
    }
}

/// Applies a binary operator with C semantics. `&&` and `||` are evaluated
/// here on both values; short-circuiting is the caller's business.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn binary(op: BinaryOp, a: Value, b: Value) -> Result<Value, EvalError> {
    use BinaryOp as B;
    // The common case of mesh kernels, without the general conversions.
    if let (Value::Double(x), Value::Double(y)) = (a, b) {
        match op {
            B::Add => return Ok(Value::Double(x + y)),
            B::Sub => return Ok(Value::Double(x - y)),
            B::Mul => return Ok(Value::Double(x * y)),
            B::Div => return Ok(Value::Double(x / y)),
            B::Lt => return Ok(Value::Int(i32::from(x < y))),
            B::Gt => return Ok(Value::Int(i32::from(x > y))),
            _ => {}
        }
    }
    match op {
        B::And => return Ok(Value::Int(i32::from(a.is_true() && b.is_true()))),
        B::Or => return Ok(Value::Int(i32::from(a.is_true() || b.is_true()))),
        B::Shl | B::Shr => {
            let left = a.convert(promote(a.ty()));
            let amount = b.as_i64().ok_or(EvalError::InvalidOperands)?;
            // Shifting by the width or more is undefined in C; x86 masks the
            // count, and so do we.
            let amount = (amount & 63) as u32;
            return Ok(match (left, op) {
                (Value::Int(v), B::Shl) => Value::Int(v.wrapping_shl(amount)),
                (Value::Int(v), _) => Value::Int(v.wrapping_shr(amount)),
                (Value::Uint(v), B::Shl) => Value::Uint(v.wrapping_shl(amount)),
                (Value::Uint(v), _) => Value::Uint(v.wrapping_shr(amount)),
                (Value::Ll(v), B::Shl) => Value::Ll(v.wrapping_shl(amount)),
                (Value::Ll(v), _) => Value::Ll(v.wrapping_shr(amount)),
                (Value::Ull(v), B::Shl) => Value::Ull(v.wrapping_shl(amount)),
                (Value::Ull(v), _) => Value::Ull(v.wrapping_shr(amount)),
                _ => return Err(EvalError::InvalidOperands),
            });
        }
        _ => {}
    }
    let ty = common_type(a.ty(), b.ty());
    let (a, b) = (a.convert(ty), b.convert(ty));
    macro_rules! compare {
        ($x:expr, $y:expr) => {
            Ok(Value::Int(i32::from(match op {
                B::Eq => $x == $y,
                B::Ne => $x != $y,
                B::Lt => $x < $y,
                B::Le => $x <= $y,
                B::Gt => $x > $y,
                B::Ge => $x >= $y,
                _ => unreachable!("only comparisons reach here"),
            })))
        };
    }
    macro_rules! integer {
        ($variant:ident, $x:expr, $y:expr) => {{
            let (x, y) = ($x, $y);
            match op {
                B::Add => Ok(Value::$variant(x.wrapping_add(y))),
                B::Sub => Ok(Value::$variant(x.wrapping_sub(y))),
                B::Mul => Ok(Value::$variant(x.wrapping_mul(y))),
                B::Div if y == 0 => Err(EvalError::DivisionByZero),
                B::Div => Ok(Value::$variant(x.wrapping_div(y))),
                B::Rem if y == 0 => Err(EvalError::DivisionByZero),
                B::Rem => Ok(Value::$variant(x.wrapping_rem(y))),
                B::BitAnd => Ok(Value::$variant(x & y)),
                B::BitOr => Ok(Value::$variant(x | y)),
                B::BitXor => Ok(Value::$variant(x ^ y)),
                B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => compare!(x, y),
                _ => Err(EvalError::InvalidOperands),
            }
        }};
    }
    macro_rules! floating {
        ($variant:ident, $x:expr, $y:expr) => {{
            let (x, y) = ($x, $y);
            match op {
                B::Add => Ok(Value::$variant(x + y)),
                B::Sub => Ok(Value::$variant(x - y)),
                B::Mul => Ok(Value::$variant(x * y)),
                B::Div => Ok(Value::$variant(x / y)),
                B::Eq | B::Ne | B::Lt | B::Le | B::Gt | B::Ge => compare!(x, y),
                _ => Err(EvalError::InvalidOperands),
            }
        }};
    }
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => floating!(Double, x, y),
        (Value::Float(x), Value::Float(y)) => floating!(Float, x, y),
        (Value::Int(x), Value::Int(y)) => integer!(Int, x, y),
        (Value::Uint(x), Value::Uint(y)) => integer!(Uint, x, y),
        (Value::Ll(x), Value::Ll(y)) => integer!(Ll, x, y),
        (Value::Ull(x), Value::Ull(y)) => integer!(Ull, x, y),
        _ => Err(EvalError::InvalidOperands),
    }
}

/// Applies a unary operator with C semantics (`*p` is not a value operator
/// and never reaches here).
pub fn unary(op: UnaryOp, a: Value) -> Result<Value, EvalError> {
    let a = a.convert(promote(a.ty()));
    Ok(match (op, a) {
        (UnaryOp::Plus, v) => v,
        (UnaryOp::Not, v) => Value::Int(i32::from(!v.is_true())),
        (UnaryOp::Neg, Value::Double(v)) => Value::Double(-v),
        (UnaryOp::Neg, Value::Float(v)) => Value::Float(-v),
        (UnaryOp::Neg, Value::Int(v)) => Value::Int(v.wrapping_neg()),
        (UnaryOp::Neg, Value::Uint(v)) => Value::Uint(v.wrapping_neg()),
        (UnaryOp::Neg, Value::Ll(v)) => Value::Ll(v.wrapping_neg()),
        (UnaryOp::Neg, Value::Ull(v)) => Value::Ull(v.wrapping_neg()),
        (UnaryOp::BitNot, Value::Int(v)) => Value::Int(!v),
        (UnaryOp::BitNot, Value::Uint(v)) => Value::Uint(!v),
        (UnaryOp::BitNot, Value::Ll(v)) => Value::Ll(!v),
        (UnaryOp::BitNot, Value::Ull(v)) => Value::Ull(!v),
        _ => return Err(EvalError::InvalidOperands),
    })
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Double(v) => write!(f, "{v:?}"),
            Value::Float(v) => write!(f, "{v:?}f"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Uint(v) => write!(f, "{v}u"),
            Value::Ll(v) => write!(f, "{v}"),
            Value::Ull(v) => write!(f, "{v}u"),
            Value::Bool(v) => write!(f, "{v}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_arithmetic_stays_in_single_precision() {
        let third = binary(BinaryOp::Div, Value::Float(1.0), Value::Float(3.0)).unwrap();
        assert_eq!(third, Value::Float(1.0f32 / 3.0f32));
        // float * double is computed in double.
        let mixed = binary(BinaryOp::Mul, Value::Float(1.4), Value::Double(1.0)).unwrap();
        assert_eq!(mixed, Value::Double(1.399_999_976_158_142));
    }

    #[test]
    fn integer_division_truncates_and_wraps() {
        assert_eq!(
            binary(BinaryOp::Div, Value::Int(-7), Value::Int(2)),
            Ok(Value::Int(-3))
        );
        assert_eq!(
            binary(BinaryOp::Rem, Value::Int(-7), Value::Int(2)),
            Ok(Value::Int(-1))
        );
        assert_eq!(
            binary(BinaryOp::Add, Value::Int(i32::MAX), Value::Int(1)),
            Ok(Value::Int(i32::MIN))
        );
        assert_eq!(
            binary(BinaryOp::Sub, Value::Uint(0), Value::Uint(1)),
            Ok(Value::Uint(u32::MAX))
        );
        assert_eq!(
            binary(BinaryOp::Div, Value::Int(1), Value::Int(0)),
            Err(EvalError::DivisionByZero)
        );
    }

    #[test]
    fn usual_arithmetic_conversions() {
        // -1 < 1u is false in C: -1 converts to UINT_MAX.
        assert_eq!(
            binary(BinaryOp::Lt, Value::Int(-1), Value::Uint(1)),
            Ok(Value::Int(0))
        );
        assert_eq!(
            common_type(ScalarType::Ll, ScalarType::Uint),
            ScalarType::Ll
        );
        assert_eq!(
            common_type(ScalarType::Bool, ScalarType::Bool),
            ScalarType::Int
        );
        assert_eq!(
            common_type(ScalarType::Float, ScalarType::Ull),
            ScalarType::Float
        );
    }

    #[test]
    fn conversions_at_assignment() {
        assert_eq!(Value::Double(2.9).convert(ScalarType::Int), Value::Int(2));
        assert_eq!(Value::Double(-2.9).convert(ScalarType::Int), Value::Int(-2));
        assert_eq!(
            Value::Int(-1).convert(ScalarType::Uint),
            Value::Uint(u32::MAX)
        );
        assert_eq!(
            Value::Double(0.5).convert(ScalarType::Bool),
            Value::Bool(true)
        );
        assert_eq!(
            Value::Double(0.1).convert(ScalarType::Float),
            Value::Float(0.1f32)
        );
    }
}
