//! Comparing two final states, for `op2 simulate --check`: integers must be
//! equal; floating values may differ by the order of summation.
//!
//! A floating value passes when
//!
//! ```text
//! |a - b| <= absolute × scale × precision + relative × max(|a|, |b|)
//! ```
//!
//! as in numpy's `isclose`, except that the absolute term is scaled to the
//! magnitude of the data: `scale` is the largest magnitude of the dat in the
//! reference's final state (for a global, and for a dat that is zero
//! everywhere, the largest magnitude of any value of any dat in that state,
//! integers included, or of any global in a program whose dats are all zero).
//! Summing in another order changes a result by a few units in the last
//! place of the *terms*, not of the sum, so a value that cancels to about
//! zero (a net flux, a converged residual) can differ by far more than its
//! own size; the size of the terms is close to the size of the data they
//! come from, and an integer dat summed into a floating global is such data.
//!
//! A unit in the last place is the type's: the tolerances are stated for
//! `double`, and `precision` is 1 for a `double` and [`FLOAT_PRECISION`]
//! (2^29, `f32::EPSILON / f64::EPSILON`) for a `float`, whose terms round
//! 2^29 times more coarsely. The relative term is not widened: a `float`
//! that does not cancel is still compared to `relative` of itself.
//!
//! A value that the order of sums can move by any amount (a conversion to
//! an integer, a comparison or a branch of an order-dependent value), or
//! that comes from a WRITE argument read before it is written (W503, a
//! value the language leaves unspecified), is not held to any tolerance
//! ([`op2_analysis::order`]): a difference there is listed apart, in
//! [`Comparison::order_dependent`], and is not a failure. Two runs whose
//! paths through `main` differ are compared no further when a condition of
//! `main` may go either way by the order of sums ([`Comparison::diverged`]).

use std::collections::HashMap;

use op2_analysis::Analysis;
use op2_analysis::model::Program;
use op2_analysis::order::{Sensitivity, order_dependence};
use op2_analysis::value::Value;
use op2_syntax::ast::ScalarType;

use crate::reference::{Engine, Reference, RuntimeError};
use crate::state::State;

/// How much more coarsely a `float` rounds than a `double`: the absolute
/// part of the tolerance is multiplied by this for `float` values.
pub const FLOAT_PRECISION: f64 = (f32::EPSILON as f64) / f64::EPSILON;

/// How close floating values must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative to the values compared: `relative × max(|a|, |b|)`.
    pub relative: f64,
    /// Relative to the magnitude of the dat: `absolute × scale`.
    pub absolute: f64,
}

impl Tolerance {
    /// The defaults of `op2 simulate --check`: every bundled example with
    /// any seed tried, and the airfoil on the shared meshes for 1000
    /// iterations, pass far inside them (docs/compilation.md has the
    /// numbers), and one message whose value is wrong by a relative 1e-6
    /// is caught (`tests/tolerance.rs`).
    pub const DEFAULT: Tolerance = Tolerance {
        relative: 1e-9,
        absolute: 1e-12,
    };
}

impl Default for Tolerance {
    fn default() -> Tolerance {
        Tolerance::DEFAULT
    }
}

/// One value that differs.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// `dats.p_q[3][1]` or `globals.rms`.
    pub path: String,
    /// The reference's value.
    pub expected: Value,
    /// The other's value.
    pub actual: Value,
    /// `|a - b| / max(|a|, |b|)`: infinite for integers, NaN against a
    /// number, and values of different sign or infinity.
    pub relative: f64,
    /// `|a - b| / (scale × precision)`: the difference relative to the
    /// magnitude of the data, in units of the type's precision (1 for a
    /// `double`, [`FLOAT_PRECISION`] for a `float`), which is the `atol`
    /// that this value needs (infinite where `relative` is, or where the
    /// scale is zero).
    pub absolute: f64,
}

impl Difference {
    /// Whether some floating tolerance would accept this difference.
    pub fn tolerable(&self) -> bool {
        self.relative.is_finite() || self.absolute.is_finite()
    }
}

/// The smallest tolerances that would have accepted every difference: the
/// relative one with the absolute part kept, and the absolute one with the
/// relative part kept. `None` where no tolerance would (an integer, a NaN).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Passing {
    /// `--rtol` that passes, keeping `--atol`.
    pub relative: Option<f64>,
    /// `--atol` that passes, keeping `--rtol`.
    pub absolute: Option<f64>,
}

/// The tolerances that would have passed `differences` (found with
/// `tolerance`), rounded up to one significant digit.
pub fn passing(differences: &[Difference], tolerance: Tolerance) -> Passing {
    let mut relative = Some(tolerance.relative);
    let mut absolute = Some(tolerance.absolute);
    for difference in differences {
        // |a-b| = relative·m = absolute·scale, so the needed relative with
        // the absolute part kept is relative − absolute_tol·(relative/absolute).
        let needed_relative = if difference.relative.is_finite() {
            let kept = if difference.absolute > 0.0 && difference.absolute.is_finite() {
                tolerance.absolute * difference.relative / difference.absolute
            } else {
                0.0
            };
            Some(difference.relative - kept)
        } else {
            None
        };
        let needed_absolute = if difference.absolute.is_finite() {
            let kept = if difference.relative > 0.0 && difference.relative.is_finite() {
                tolerance.relative * difference.absolute / difference.relative
            } else {
                0.0
            };
            Some(difference.absolute - kept)
        } else {
            None
        };
        relative = relative.zip(needed_relative).map(|(a, b)| a.max(b));
        absolute = absolute.zip(needed_absolute).map(|(a, b)| a.max(b));
    }
    Passing {
        relative: relative.map(round_up),
        absolute: absolute.map(round_up),
    }
}

/// Rounds up to one significant digit: 3.2e-11 becomes 4e-11.
fn round_up(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    let mut exponent = x.log10().floor() as i32;
    let mut digit = (x / 10f64.powi(exponent)).ceil();
    if digit > 10.0 {
        // `log10` landed just below a power of ten.
        exponent += 1;
        digit = (x / 10f64.powi(exponent)).ceil();
    }
    // Through the decimal text, so that the result prints as `7e-1`.
    let mut rounded: f64 = format!("{digit}e{exponent}").parse().unwrap_or(x);
    if rounded < x {
        rounded = format!("{}e{exponent}", digit + 1.0).parse().unwrap_or(x);
    }
    rounded
}

/// `Some((relative, absolute))` when `a` and `b` differ beyond `tolerance`.
fn differs(a: Value, b: Value, scale: f64, tolerance: Tolerance) -> Option<(f64, f64)> {
    if !(a.ty().is_floating() || b.ty().is_floating()) {
        return (a != b).then_some((f64::INFINITY, f64::INFINITY));
    }
    let (x, y) = (a.as_f64(), b.as_f64());
    if x == y || (x.is_nan() && y.is_nan()) {
        return None;
    }
    let difference = (x - y).abs();
    if !difference.is_finite() {
        return Some((f64::INFINITY, f64::INFINITY));
    }
    let magnitude = x.abs().max(y.abs());
    let scale = if a.ty() == ScalarType::Float || b.ty() == ScalarType::Float {
        scale * FLOAT_PRECISION
    } else {
        scale
    };
    if difference <= tolerance.absolute * scale + tolerance.relative * magnitude {
        return None;
    }
    let relative = difference / magnitude;
    let absolute = if scale > 0.0 {
        difference / scale
    } else {
        f64::INFINITY
    };
    Some((relative, absolute))
}

/// The largest finite magnitude among `values`, integers included: an
/// integer dat summed into a floating global gives terms of its size.
fn magnitude<'a>(values: impl IntoIterator<Item = &'a Value>) -> f64 {
    values
        .into_iter()
        .map(|v| v.as_f64().abs())
        .filter(|m| m.is_finite())
        .fold(0.0, f64::max)
}

/// Two runs that took different paths through `main`: they ran other
/// par_loops, or as many in another order, or ended with another `exit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The par_loops the reference started.
    pub expected_loops: u64,
    /// The par_loops the other run started.
    pub actual_loops: u64,
    /// The reference's `exit` status.
    pub expected_exit: Option<u8>,
    /// The other run's `exit` status.
    pub actual_exit: Option<u8>,
    /// Whether a condition of `main` may go either way by the order of
    /// floating-point sums ([`op2_analysis::order::OrderDependence::main_branches`]):
    /// then the paths may differ and the states are not compared.
    pub order_dependent: bool,
}

/// A value that differs beyond the tolerance where the reference, run
/// again in another order the language allows
/// ([`crate::Reference::in_another_order`]), differs beyond it too, and by
/// no more than [`ANOTHER_ORDER_FACTOR`] times as much: the order of
/// floating-point sums moves it on this instance by about that much.
#[derive(Clone, Debug, PartialEq)]
pub struct Explained {
    /// The difference of the run compared.
    pub difference: Difference,
    /// The value in the run in another order.
    pub other: Value,
}

/// A difference is explained by the order of sums when it is at most this
/// many times what the reference's run in another order moved the same
/// value: one other order shows how sensitive a value is to the order, not
/// how far every order moves it (a random order and the reverse one give
/// rounding errors of the same size, rarely more than a few times apart).
pub const ANOTHER_ORDER_FACTOR: f64 = 16.0;

/// What a comparison found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// The values that differ beyond the tolerance, worst first: each is a
    /// failure.
    pub differences: Vec<Difference>,
    /// The values that differed beyond the tolerance and that the
    /// reference's run in another order moves as much ([`explain`]), worst
    /// first: not failures.
    pub explained: Vec<Explained>,
    /// The values that differ where the order of floating-point sums may
    /// move them by any amount (their dat or global is
    /// [`Sensitivity::Arbitrary`]), in order of place: not failures.
    pub order_dependent: Vec<Difference>,
    /// The runs took different paths through `main`. When the order of
    /// sums explains it, nothing else is compared (the lists are empty);
    /// otherwise it is a failure, and the values are compared as well.
    pub diverged: Option<Divergence>,
}

impl Comparison {
    /// True when nothing counts against the comparison.
    pub fn agrees(&self) -> bool {
        self.differences.is_empty() && self.diverged.is_none_or(|d| d.order_dependent)
    }
}

/// Every value of `actual` that differs from `expected`: those that fail,
/// worst first, and apart, those the order of sums may move by any amount.
pub fn compare(
    program: &Program,
    expected: &State,
    actual: &State,
    tolerance: Tolerance,
) -> Comparison {
    let order = order_dependence(program);
    let diverged = (expected.path != actual.path || expected.exit_status != actual.exit_status)
        .then_some(Divergence {
            expected_loops: expected.path.loops,
            actual_loops: actual.path.loops,
            expected_exit: expected.exit_status,
            actual_exit: actual.exit_status,
            order_dependent: order.main_branches,
        });
    if diverged.is_some_and(|d| d.order_dependent) {
        return Comparison {
            diverged,
            ..Comparison::default()
        };
    }
    let largest = |values: &[Vec<Value>]| {
        values
            .iter()
            .map(|values| magnitude(values.iter()))
            .fold(0.0, f64::max)
    };
    let mut state_scale = largest(&expected.dats);
    if state_scale == 0.0 {
        state_scale = largest(&expected.globals);
    }
    let mut differences = Vec::new();
    let mut order_dependent = Vec::new();
    let mut push = |path: &dyn Fn() -> String, a: Value, b: Value, scale: f64, free: bool| {
        if let Some((relative, absolute)) = differs(a, b, scale, tolerance) {
            let list = if free {
                &mut order_dependent
            } else {
                &mut differences
            };
            list.push(Difference {
                path: path(),
                expected: a,
                actual: b,
                relative,
                absolute,
            });
        }
    };
    for (index, dat) in program.dats.iter().enumerate() {
        let dimension = dat.ty.dimension.max(1) as usize;
        let free = order.dats[index] == Sensitivity::Arbitrary;
        let values = &expected.dats[index];
        let own = magnitude(values);
        let scale = if own > 0.0 { own } else { state_scale };
        for (offset, (a, b)) in values.iter().zip(&actual.dats[index]).enumerate() {
            let path = || {
                if dimension == 1 {
                    format!("dats.{}[{}]", dat.name, offset)
                } else {
                    format!(
                        "dats.{}[{}][{}]",
                        dat.name,
                        offset / dimension,
                        offset % dimension
                    )
                }
            };
            push(&path, *a, *b, scale, free);
        }
    }
    for (index, global) in program.globals.iter().enumerate() {
        let length = expected.globals[index].len();
        let free = order.globals[index] == Sensitivity::Arbitrary;
        for (offset, (a, b)) in expected.globals[index]
            .iter()
            .zip(&actual.globals[index])
            .enumerate()
        {
            let path = || {
                if length == 1 {
                    format!("globals.{}", global.name)
                } else {
                    format!("globals.{}[{offset}]", global.name)
                }
            };
            push(&path, *a, *b, state_scale, free);
        }
    }
    differences.sort_by(|x, y| {
        y.relative
            .total_cmp(&x.relative)
            .then(y.absolute.total_cmp(&x.absolute))
    });
    Comparison {
        differences,
        explained: Vec::new(),
        order_dependent,
        diverged,
    }
}

/// Moves each difference of `comparison` (of some run against `expected`,
/// the reference's final state) that `other`, the final state of the
/// reference run in another order ([`crate::Reference::in_another_order`]),
/// explains into [`Comparison::explained`]: `other` differs from `expected`
/// there beyond the tolerance too, and the compared run's difference is at
/// most [`ANOTHER_ORDER_FACTOR`] times `other`'s, or `other`'s is not a
/// finite number (a NaN or an infinity where the reference has a number,
/// or the other way round). So a value that cancels, divides by a
/// difference near zero or meets a singularity (`1.0 / (s - 0.6)`,
/// `pow(-3.0, s)`), where a few units in the last place of the terms become
/// far more than the tolerance, is not a failure when a second order of
/// the same sums moves it as far; a value that the other order leaves
/// within the tolerance is still held to it. Nothing is moved when the
/// two reference runs took different paths through `main`.
pub fn explain(
    program: &Program,
    expected: &State,
    other: &State,
    comparison: &mut Comparison,
    tolerance: Tolerance,
) {
    if comparison.differences.is_empty()
        || other.path != expected.path
        || other.exit_status != expected.exit_status
    {
        return;
    }
    let moved = compare(program, expected, other, tolerance);
    let others: HashMap<&str, Value> = moved
        .differences
        .iter()
        .chain(&moved.order_dependent)
        .map(|d| (d.path.as_str(), d.actual))
        .collect();
    let (explained, differences): (Vec<_>, Vec<_>) = std::mem::take(&mut comparison.differences)
        .into_iter()
        .map(|difference| {
            let other = others.get(difference.path.as_str()).copied();
            (difference, other)
        })
        .partition(|(difference, other)| other.is_some_and(|other| explains(difference, other)));
    comparison.differences = differences.into_iter().map(|(d, _)| d).collect();
    comparison.explained = explained
        .into_iter()
        .filter_map(|(difference, other)| {
            Some(Explained {
                difference,
                other: other?,
            })
        })
        .collect();
}

/// What [`explain_by_another_order`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum AnotherOrder {
    /// Nothing differed: the reference was not run again.
    NotRun,
    /// The reference ran again in another order; what it explains is in
    /// [`Comparison::explained`].
    Ran,
    /// The reference run in another order failed (a fault at another
    /// element first, or one that the order of sums moves): nothing is
    /// explained.
    Failed(RuntimeError),
}

/// When `comparison` (of some run against `expected`, the reference's
/// final state from `initial`) has differences, runs the reference again
/// from `initial` in another order ([`Reference::in_another_order`], with
/// the compiled engine where it can run the program, its printed text
/// dropped) and [`explain`]s by it what it can. The CLI's `simulate --check` and the fuzzing campaigns' property
/// both call it.
pub fn explain_by_another_order(
    analysis: &Analysis,
    initial: State,
    max_iterations: u64,
    expected: &State,
    comparison: &mut Comparison,
    tolerance: Tolerance,
) -> AnotherOrder {
    if comparison.differences.is_empty() {
        return AnotherOrder::NotRun;
    }
    let mut sink = |_: &str| {};
    match Reference::new(analysis, initial, &mut sink)
        .in_another_order()
        .with_engine(Engine::Compiled)
        .run(max_iterations)
    {
        Ok(other) => {
            explain(&analysis.program, expected, &other, comparison, tolerance);
            AnotherOrder::Ran
        }
        Err(error) => AnotherOrder::Failed(error),
    }
}

/// Whether `other`, which differs from `difference.expected` beyond the
/// tolerance, moves the value as far as `difference` within
/// [`ANOTHER_ORDER_FACTOR`] (see [`explain`]).
fn explains(difference: &Difference, other: Value) -> bool {
    let expected = difference.expected.as_f64();
    let moved = (other.as_f64() - expected).abs();
    let found = (difference.actual.as_f64() - expected).abs();
    !moved.is_finite() || found <= ANOTHER_ORDER_FACTOR * moved
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: f64, b: f64, scale: f64, t: Tolerance) -> bool {
        differs(Value::Double(a), Value::Double(b), scale, t).is_some()
    }

    #[test]
    fn relative_part_scales_with_the_values() {
        let t = Tolerance::DEFAULT;
        assert!(!d(1.0, 1.0 + 1e-12, 1.0, t));
        assert!(d(1.0, 1.0 + 1e-6, 1.0, t));
        assert!(!d(1e6, 1e6 * (1.0 + 1e-12), 1e6, t));
    }

    #[test]
    fn absolute_part_scales_with_the_data() {
        let t = Tolerance::DEFAULT;
        // A sum that cancels to about zero in data of size 50.
        assert!(!d(3.5e-15, -5.5e-15, 50.0, t));
        // The same difference in data of size 1e-10 is real.
        assert!(d(3.5e-15, -5.5e-15, 1e-10, t));
        // Zero scale: only the relative part.
        assert!(d(0.0, 1e-300, 0.0, t));
    }

    #[test]
    fn integers_are_exact_and_nans_agree_with_nans() {
        let t = Tolerance::DEFAULT;
        assert_eq!(
            differs(Value::Int(3), Value::Int(4), 1.0, t),
            Some((f64::INFINITY, f64::INFINITY))
        );
        assert!(differs(Value::Double(f64::NAN), Value::Double(f64::NAN), 1.0, t).is_none());
        assert!(differs(Value::Double(f64::NAN), Value::Double(1.0), 1.0, t).is_some());
        assert!(d(f64::INFINITY, 1.0, 1.0, t));
    }

    #[test]
    fn a_float_is_compared_in_floats_precision() {
        let t = Tolerance::DEFAULT;
        // The fuzz campaign's case (seed 7, 2796680): `int` values of about
        // ±2^28 added into a `float` global in two orders give 0 and -32,
        // one unit in the last place of a `float` term.
        let scale = f64::from(1u32 << 28);
        let float = |x: f32| Value::Float(x);
        assert!(differs(float(0.0), float(-32.0), scale, t).is_none());
        // As doubles the same difference is far beyond the terms' rounding.
        assert!(d(0.0, -32.0, scale, t));
        // A `float` wrong by 1e-3 of the data is still caught, and its
        // `absolute` is the `atol` it would need.
        let (_, absolute) = differs(float(0.0), float(-3.0e5), scale, t).unwrap();
        assert!((absolute - 3.0e5 / (scale * FLOAT_PRECISION)).abs() < 1e-18);
        assert!(
            differs(
                float(0.0),
                float(-3.0e5),
                scale,
                Tolerance {
                    absolute: absolute * 1.01,
                    ..t
                }
            )
            .is_none()
        );
        // The relative part is not widened: 1e-7 of a value far from zero.
        assert!(differs(float(1e6), float(1e6 + 0.125), 1.0, t).is_some());
    }

    #[test]
    fn passing_tolerances_accept_exactly_what_was_found() {
        let t = Tolerance {
            relative: 1e-12,
            absolute: 1e-14,
        };
        let (a, b, scale) = (1.0, 1.0 + 3.3e-10, 10.0);
        let (relative, absolute) = differs(Value::Double(a), Value::Double(b), scale, t).unwrap();
        let difference = Difference {
            path: "x".into(),
            expected: Value::Double(a),
            actual: Value::Double(b),
            relative,
            absolute,
        };
        let passing = passing(std::slice::from_ref(&difference), t);
        let rtol = passing.relative.unwrap();
        let atol = passing.absolute.unwrap();
        assert!(
            !d(
                a,
                b,
                scale,
                Tolerance {
                    relative: rtol,
                    ..t
                }
            ),
            "{rtol}"
        );
        assert!(
            !d(
                a,
                b,
                scale,
                Tolerance {
                    absolute: atol,
                    ..t
                }
            ),
            "{atol}"
        );
        // One significant digit, rounded up.
        assert_eq!(format!("{rtol:e}"), "4e-10");
        let integer = Difference {
            path: "n".into(),
            expected: Value::Int(1),
            actual: Value::Int(2),
            relative: f64::INFINITY,
            absolute: f64::INFINITY,
        };
        assert!(!integer.tolerable());
        assert_eq!(
            super::passing(&[difference, integer], t),
            Passing {
                relative: None,
                absolute: None
            }
        );
    }

    #[test]
    fn rounding_up_keeps_one_digit() {
        assert_eq!(round_up(3.2e-11), 4e-11);
        assert_eq!(round_up(1e-9), 1e-9);
        assert_eq!(round_up(0.0), 0.0);
        assert!(round_up(9.1e-7) >= 9.1e-7);
        assert_eq!(format!("{:e}", round_up(0.67)), "7e-1");
        assert_eq!(format!("{:e}", round_up(0.7)), "7e-1");
    }
}
