//! The simulator's flat storage: values in 8-byte slots of their declared
//! type (`crate::native::flat`'s layout, the one compiled kernel calls
//! read), columns of them over a set's elements, and the payloads of
//! messages in flight in a pool that reuses its records, so that handling
//! a message allocates nothing.

use op2_analysis::value::{self, Value};
use op2_syntax::ast::{AccessMode, BinaryOp, ScalarType};

use crate::native::flat::{from_slot, to_slot};

/// One value per component of every element: `element × width +
/// component`.
#[derive(Clone, Debug)]
pub(super) struct Column {
    pub ty: ScalarType,
    pub width: usize,
    pub slots: Vec<u64>,
}

impl Column {
    /// `elements` rows of zeros (every type's zero is the all-zero slot).
    pub fn zeros(ty: ScalarType, width: usize, elements: usize) -> Column {
        Column::filled(ty, width, elements, 0)
    }

    /// `elements` rows of `slot`.
    pub fn filled(ty: ScalarType, width: usize, elements: usize, slot: u64) -> Column {
        Column {
            ty,
            width,
            slots: vec![slot; elements * width],
        }
    }

    /// The column of `values`, all of type `ty`.
    pub fn from_values(ty: ScalarType, width: usize, values: &[Value]) -> Column {
        Column {
            ty,
            width,
            slots: values.iter().map(|v| to_slot(v.convert(ty))).collect(),
        }
    }

    /// The values, as the interpreter holds them.
    pub fn to_values(&self) -> Vec<Value> {
        self.slots.iter().map(|&s| from_slot(s, self.ty)).collect()
    }

    #[inline]
    pub fn row(&self, element: usize) -> &[u64] {
        &self.slots[element * self.width..(element + 1) * self.width]
    }

    #[inline]
    pub fn row_mut(&mut self, element: usize) -> &mut [u64] {
        &mut self.slots[element * self.width..(element + 1) * self.width]
    }
}

/// `target += values` component by component in type `ty`, as
/// `reference::add_into` adds values.
pub(super) fn add_slots(ty: ScalarType, target: &mut [u64], values: &[u64]) {
    // The floating types directly: `value::binary` adds two doubles or
    // two floats as these do.
    match ty {
        ScalarType::Double => {
            for (t, v) in target.iter_mut().zip(values) {
                *t = (f64::from_bits(*t) + f64::from_bits(*v)).to_bits();
            }
            return;
        }
        ScalarType::Float => {
            #[allow(clippy::cast_possible_truncation)]
            for (t, v) in target.iter_mut().zip(values) {
                *t = u64::from((f32::from_bits(*t as u32) + f32::from_bits(*v as u32)).to_bits());
            }
            return;
        }
        _ => {}
    }
    for (t, v) in target.iter_mut().zip(values) {
        let old = from_slot(*t, ty);
        let sum =
            value::binary(BinaryOp::Add, old, from_slot(*v, ty)).map_or(old, |sum| sum.convert(ty));
        *t = to_slot(sum);
    }
}

/// Combines MIN or MAX partials into `target`, as `reference::combine`.
pub(super) fn combine_slots(ty: ScalarType, target: &mut [u64], values: &[u64], mode: AccessMode) {
    let op = if mode == AccessMode::Min {
        BinaryOp::Lt
    } else {
        BinaryOp::Gt
    };
    for (t, v) in target.iter_mut().zip(values) {
        let candidate = from_slot(*v, ty);
        if value::binary(op, candidate, from_slot(*t, ty)).is_ok_and(Value::is_true) {
            *t = to_slot(candidate.convert(ty));
        }
    }
}

/// Records per size class at most: the index of a record takes the low
/// 27 bits of a payload's id, its class the 5 above.
const RECORDS: usize = 1 << 27;

/// Payloads of messages in flight, each stored once per send and shared
/// by its deliveries: records of 2^c slots per class c, counted
/// references, freed records reused.
#[derive(Debug, Default)]
pub(super) struct Payloads {
    classes: Vec<Class>,
}

#[derive(Debug, Default)]
struct Class {
    slots: Vec<u64>,
    references: Vec<u32>,
    free: Vec<u32>,
}

/// Too many messages in flight to number.
#[derive(Debug)]
pub(super) struct Full;

impl Payloads {
    /// Stores `values` for `deliveries` deliveries (at least one) and
    /// returns its id.
    pub fn store(&mut self, values: &[u64], deliveries: u32) -> Result<u32, Full> {
        let class = values.len().max(1).next_power_of_two().trailing_zeros() as usize;
        if class >= 32 {
            return Err(Full);
        }
        if self.classes.len() <= class {
            self.classes.resize_with(class + 1, Class::default);
        }
        let width = 1usize << class;
        let records = &mut self.classes[class];
        let index = match records.free.pop() {
            Some(index) => index as usize,
            None => {
                let index = records.references.len();
                if index >= RECORDS {
                    return Err(Full);
                }
                records.references.push(0);
                records.slots.resize((index + 1) * width, 0);
                index
            }
        };
        records.references[index] = deliveries.max(1);
        records.slots[index * width..index * width + values.len()].copy_from_slice(values);
        #[allow(clippy::cast_possible_truncation)]
        Ok(((class as u32) << 27) | index as u32)
    }

    /// The slots of payload `id` (its class's width: the caller knows how
    /// many it sent).
    #[inline]
    pub fn get(&self, id: u32) -> &[u64] {
        let (class, index) = Self::locate(id);
        let width = 1usize << class;
        &self.classes[class].slots[index * width..(index + 1) * width]
    }

    /// The slots of payload `id`, to change before its first delivery.
    pub fn get_mut(&mut self, id: u32) -> &mut [u64] {
        let (class, index) = Self::locate(id);
        let width = 1usize << class;
        &mut self.classes[class].slots[index * width..(index + 1) * width]
    }

    /// One delivery of payload `id` is done with it.
    #[inline]
    pub fn release(&mut self, id: u32) {
        let (class, index) = Self::locate(id);
        let records = &mut self.classes[class];
        records.references[index] -= 1;
        if records.references[index] == 0 {
            #[allow(clippy::cast_possible_truncation)]
            records.free.push(index as u32);
        }
    }

    fn locate(id: u32) -> (usize, usize) {
        ((id >> 27) as usize, (id as usize) & (RECORDS - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_shared_until_the_last_delivery_and_then_reused() {
        let mut payloads = Payloads::default();
        let a = payloads.store(&[1, 2, 3], 2).expect("stored");
        let b = payloads.store(&[4], 1).expect("stored");
        assert_eq!(&payloads.get(a)[..3], &[1, 2, 3]);
        assert_eq!(payloads.get(b), &[4]);
        payloads.release(a);
        // Still referenced: a new payload of the same class takes a new
        // record.
        let c = payloads.store(&[7, 8, 9], 1).expect("stored");
        assert_ne!(a, c);
        assert_eq!(&payloads.get(a)[..3], &[1, 2, 3]);
        payloads.release(a);
        let d = payloads.store(&[5, 6, 7, 8], 1).expect("stored");
        assert_eq!(d, a, "the freed record is reused");
        assert_eq!(payloads.get(d), &[5, 6, 7, 8]);
    }

    #[test]
    fn slots_add_and_combine_as_values_do() {
        let mut target = [to_slot(Value::Float(1.5)), to_slot(Value::Float(-2.0))];
        add_slots(
            ScalarType::Float,
            &mut target,
            &[to_slot(Value::Float(0.25)), to_slot(Value::Float(2.0))],
        );
        let values: Vec<Value> = target
            .iter()
            .map(|&s| from_slot(s, ScalarType::Float))
            .collect();
        assert_eq!(values, [Value::Float(1.75), Value::Float(0.0)]);
        let mut target = [to_slot(Value::Int(3)), to_slot(Value::Int(3))];
        combine_slots(
            ScalarType::Int,
            &mut target,
            &[to_slot(Value::Int(-1)), to_slot(Value::Int(9))],
            AccessMode::Min,
        );
        assert_eq!(target, [to_slot(Value::Int(-1)), to_slot(Value::Int(3))]);
    }
}
