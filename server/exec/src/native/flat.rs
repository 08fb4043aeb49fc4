//! Typed flat storage for the compiled engine: one contiguous buffer per dat
//! in its real element type (`element × dimension + component`), and the
//! globals and consts a loop reads or reduces, one 8-byte slot per
//! component holding the value in its low bytes.

use op2_analysis::value::Value;
use op2_syntax::ast::ScalarType;

/// One dat's values in their own type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Buffer {
    F64(Vec<f64>),
    F32(Vec<f32>),
    I32(Vec<i32>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    /// `bool` as one byte, 0 or 1.
    Bool(Vec<u8>),
}

impl Buffer {
    /// The buffer of `values`, all of type `ty` (the caller checked).
    pub(crate) fn from_values(ty: ScalarType, values: &[Value]) -> Buffer {
        macro_rules! collect {
            ($variant:ident, $value:ident, $default:expr) => {
                Buffer::$variant(
                    values
                        .iter()
                        .map(|v| match v.convert(ty) {
                            Value::$value(x) => x,
                            _ => $default,
                        })
                        .collect(),
                )
            };
        }
        match ty {
            ScalarType::Double => collect!(F64, Double, 0.0),
            ScalarType::Float => collect!(F32, Float, 0.0),
            ScalarType::Int => collect!(I32, Int, 0),
            ScalarType::Uint => collect!(U32, Uint, 0),
            ScalarType::Ll => collect!(I64, Ll, 0),
            ScalarType::Ull => collect!(U64, Ull, 0),
            ScalarType::Bool => Buffer::Bool(
                values
                    .iter()
                    .map(|v| u8::from(v.convert(ty).is_true()))
                    .collect(),
            ),
        }
    }

    /// The values, as the interpreter holds them.
    pub(crate) fn to_values(&self) -> Vec<Value> {
        match self {
            Buffer::F64(v) => v.iter().map(|&x| Value::Double(x)).collect(),
            Buffer::F32(v) => v.iter().map(|&x| Value::Float(x)).collect(),
            Buffer::I32(v) => v.iter().map(|&x| Value::Int(x)).collect(),
            Buffer::U32(v) => v.iter().map(|&x| Value::Uint(x)).collect(),
            Buffer::I64(v) => v.iter().map(|&x| Value::Ll(x)).collect(),
            Buffer::U64(v) => v.iter().map(|&x| Value::Ull(x)).collect(),
            Buffer::Bool(v) => v.iter().map(|&x| Value::Bool(x != 0)).collect(),
        }
    }

    /// Length in bytes.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Buffer::F64(v) => v.len() * 8,
            Buffer::F32(v) => v.len() * 4,
            Buffer::I32(v) => v.len() * 4,
            Buffer::U32(v) => v.len() * 4,
            Buffer::I64(v) => v.len() * 8,
            Buffer::U64(v) => v.len() * 8,
            Buffer::Bool(v) => v.len(),
        }
    }

    /// The first byte, for the compiled code.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Buffer::F64(v) => v.as_mut_ptr().cast(),
            Buffer::F32(v) => v.as_mut_ptr().cast(),
            Buffer::I32(v) => v.as_mut_ptr().cast(),
            Buffer::U32(v) => v.as_mut_ptr().cast(),
            Buffer::I64(v) => v.as_mut_ptr().cast(),
            Buffer::U64(v) => v.as_mut_ptr().cast(),
            Buffer::Bool(v) => v.as_mut_ptr(),
        }
    }
}

/// A value in an 8-byte slot (low bytes, little-endian as the targets the
/// compiled engine supports).
pub(crate) fn to_slot(value: Value) -> u64 {
    match value {
        Value::Double(x) => x.to_bits(),
        Value::Float(x) => u64::from(x.to_bits()),
        Value::Int(x) => u64::from(x.cast_unsigned()),
        Value::Uint(x) => u64::from(x),
        Value::Ll(x) => x.cast_unsigned(),
        Value::Ull(x) => x,
        Value::Bool(x) => u64::from(x),
    }
}

/// The value of type `ty` in an 8-byte slot.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn from_slot(slot: u64, ty: ScalarType) -> Value {
    match ty {
        ScalarType::Double => Value::Double(f64::from_bits(slot)),
        ScalarType::Float => Value::Float(f32::from_bits(slot as u32)),
        ScalarType::Int => Value::Int((slot as u32).cast_signed()),
        ScalarType::Uint => Value::Uint(slot as u32),
        ScalarType::Ll => Value::Ll(slot.cast_signed()),
        ScalarType::Ull => Value::Ull(slot),
        ScalarType::Bool => Value::Bool(slot as u8 != 0),
    }
}

/// Bytes per component of `ty` in a dat buffer.
pub(crate) fn size_of(ty: ScalarType) -> usize {
    match ty {
        ScalarType::Double | ScalarType::Ll | ScalarType::Ull => 8,
        ScalarType::Float | ScalarType::Int | ScalarType::Uint => 4,
        ScalarType::Bool => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_and_slots_round_trip_every_type() {
        let values = [
            Value::Double(-0.0),
            Value::Float(f32::NAN),
            Value::Int(-7),
            Value::Uint(u32::MAX),
            Value::Ll(i64::MIN),
            Value::Ull(u64::MAX),
            Value::Bool(true),
        ];
        for value in values {
            let ty = value.ty();
            let back = Buffer::from_values(ty, &[value]).to_values();
            assert_eq!(to_slot(back[0]), to_slot(value), "{value:?}");
            assert_eq!(to_slot(from_slot(to_slot(value), ty)), to_slot(value));
        }
    }
}
