//! The simulator's flat storage: values in 8-byte slots of their declared
//! type (`crate::native::flat`'s layout, the one compiled kernel calls
//! read), columns of them over a set's elements, and the payloads of
//! messages in flight in a pool that reuses its records, so that handling
//! a message allocates nothing.

use op2_analysis::value::{self, Value};
use op2_syntax::ast::{AccessMode, BinaryOp, ScalarType};

use crate::native::Rows;
use crate::native::flat::{from_slot, to_slot};

/// One value per component of every element: `element × width +
/// component`. The columns compiled execute handlers reach (dats, landing
/// pads, pads) live in [`Rows`] ([`rows`]), which keeps their buffers in
/// place for the handlers bound to them.
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

    #[inline]
    pub fn row(&self, element: usize) -> &[u64] {
        &self.slots[element * self.width..(element + 1) * self.width]
    }

    #[inline]
    pub fn row_mut(&mut self, element: usize) -> &mut [u64] {
        &mut self.slots[element * self.width..(element + 1) * self.width]
    }
}

/// `columns` as [`Rows`], in order.
pub(super) fn rows(columns: impl IntoIterator<Item = Column>) -> Rows {
    Rows::new(columns.into_iter().map(|c| (c.ty, c.width, c.slots)))
}

/// Column `column` of `rows` as the interpreter holds values.
pub(super) fn column_values(rows: &Rows, column: usize) -> Vec<Value> {
    let ty = rows.ty(column);
    rows.slots(column)
        .iter()
        .map(|&s| from_slot(s, ty))
        .collect()
}

/// `target += values` component by component in type `ty`, as
/// `reference::add_into` adds values.
#[inline]
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

/// Combines MIN or MAX partials into `target`, as `reference::combine`:
/// where `reference::improves` says a value is better, which breaks a tie
/// between `0.0` and `-0.0` by sign as the generated handlers do
/// (`op2_below`, `op2_above`; compilation.md, "Reductions: identities and
/// ties").
pub(super) fn combine_slots(ty: ScalarType, target: &mut [u64], values: &[u64], mode: AccessMode) {
    for (t, v) in target.iter_mut().zip(values) {
        let candidate = from_slot(*v, ty);
        if crate::reference::improves(candidate, from_slot(*t, ty), mode) {
            *t = to_slot(candidate.convert(ty));
        }
    }
}

/// Payloads of messages in flight, each stored once per send and shared
/// by its deliveries: records in one slab of slots, a record of a payload
/// of class c (at most 2^c slots) being a header slot (the class in the
/// high 32 bits, the deliveries still to come in the low 32) and 2^c
/// slots; a payload's id is its record's position in the slab; freed
/// records are reused, per class.
#[derive(Debug, Default)]
pub(super) struct Payloads {
    slots: Vec<u64>,
    free: Vec<Vec<u32>>,
}

/// Too many messages in flight to number.
#[derive(Debug)]
pub(super) struct Full;

impl Payloads {
    /// Stores `values` for `deliveries` deliveries (at least one) and
    /// returns its id.
    #[inline]
    pub fn store(&mut self, values: &[u64], deliveries: u32) -> Result<u32, Full> {
        let class = values.len().max(1).next_power_of_two().trailing_zeros() as usize;
        if self.free.len() <= class {
            self.free.resize_with(class + 1, Vec::new);
        }
        let at = match self.free[class].pop() {
            Some(at) => at as usize,
            None => {
                let at = self.slots.len();
                // Ids are u32: the slab's end must be one too.
                if at + 1 + (1 << class) > u32::MAX as usize {
                    return Err(Full);
                }
                self.slots.resize(at + 1 + (1 << class), 0);
                at
            }
        };
        self.slots[at] = ((class as u64) << 32) | u64::from(deliveries.max(1));
        copy_slots(&mut self.slots[at + 1..at + 1 + values.len()], values);
        #[allow(clippy::cast_possible_truncation)]
        Ok(at as u32)
    }

    /// The slots of payload `id`, from its first (the caller knows how
    /// many it sent).
    #[inline]
    pub fn get(&self, id: u32) -> &[u64] {
        &self.slots[id as usize + 1..]
    }

    /// The slots of payload `id`, to change before its first delivery.
    pub fn get_mut(&mut self, id: u32) -> &mut [u64] {
        &mut self.slots[id as usize + 1..]
    }

    /// One delivery of payload `id` is done with it.
    #[inline]
    pub fn release(&mut self, id: u32) {
        let header = &mut self.slots[id as usize];
        *header -= 1;
        if *header & u64::from(u32::MAX) == 0 {
            let class = (*header >> 32) as usize;
            self.free[class].push(id);
        }
    }
}

/// `target = values` for the few slots of a row or a payload, without a
/// call of `memcpy` for one to four of them.
#[inline(always)]
pub(super) fn copy_slots(target: &mut [u64], values: &[u64]) {
    match (target, values) {
        ([t], [v]) => *t = *v,
        ([t0, t1], [v0, v1]) => {
            *t0 = *v0;
            *t1 = *v1;
        }
        ([t0, t1, t2], [v0, v1, v2]) => {
            *t0 = *v0;
            *t1 = *v1;
            *t2 = *v2;
        }
        ([t0, t1, t2, t3], [v0, v1, v2, v3]) => {
            *t0 = *v0;
            *t1 = *v1;
            *t2 = *v2;
            *t3 = *v3;
        }
        (target, values) => target.copy_from_slice(values),
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
        assert_eq!(payloads.get(b)[0], 4);
        payloads.release(a);
        // Still referenced: a new payload of the same class takes a new
        // record.
        let c = payloads.store(&[7, 8, 9], 1).expect("stored");
        assert_ne!(a, c);
        assert_eq!(&payloads.get(a)[..3], &[1, 2, 3]);
        payloads.release(a);
        let d = payloads.store(&[5, 6, 7, 8], 1).expect("stored");
        assert_eq!(d, a, "the freed record is reused");
        assert_eq!(&payloads.get(d)[..4], &[5, 6, 7, 8]);
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
