//! Comparing two final states, for `op2 simulate --check`: integers must be
//! equal; floating values may differ by the order of summation, within a
//! relative tolerance (and an absolute one for values near zero).

use op2_analysis::model::Program;
use op2_analysis::value::Value;

use crate::state::State;

/// How close floating values must be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative: `|a - b| <= relative × max(|a|, |b|)`.
    pub relative: f64,
    /// Absolute: `|a - b| <= absolute` also passes.
    pub absolute: f64,
}

impl Default for Tolerance {
    fn default() -> Tolerance {
        Tolerance {
            relative: 1e-9,
            absolute: 0.0,
        }
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
    /// Relative difference (infinite for integers and NaN mismatches).
    pub relative: f64,
}

fn differs(a: Value, b: Value, tolerance: Tolerance) -> Option<f64> {
    if a.ty().is_floating() || b.ty().is_floating() {
        let (x, y) = (a.as_f64(), b.as_f64());
        if x == y || (x.is_nan() && y.is_nan()) {
            return None;
        }
        let difference = (x - y).abs();
        let scale = x.abs().max(y.abs());
        let relative = if scale > 0.0 {
            difference / scale
        } else {
            f64::INFINITY
        };
        if difference <= tolerance.absolute || relative <= tolerance.relative {
            return None;
        }
        Some(if relative.is_nan() {
            f64::INFINITY
        } else {
            relative
        })
    } else if a == b {
        None
    } else {
        Some(f64::INFINITY)
    }
}

/// Every value of `actual` that differs from `expected`, worst first.
pub fn compare(
    program: &Program,
    expected: &State,
    actual: &State,
    tolerance: Tolerance,
) -> Vec<Difference> {
    let mut differences = Vec::new();
    for (index, dat) in program.dats.iter().enumerate() {
        let dimension = dat.ty.dimension as usize;
        for (offset, (a, b)) in expected.dats[index]
            .iter()
            .zip(&actual.dats[index])
            .enumerate()
        {
            if let Some(relative) = differs(*a, *b, tolerance) {
                let path = if dimension == 1 {
                    format!("dats.{}[{}]", dat.name, offset)
                } else {
                    format!(
                        "dats.{}[{}][{}]",
                        dat.name,
                        offset / dimension,
                        offset % dimension
                    )
                };
                differences.push(Difference {
                    path,
                    expected: *a,
                    actual: *b,
                    relative,
                });
            }
        }
    }
    for (index, global) in program.globals.iter().enumerate() {
        let length = expected.globals[index].len();
        for (offset, (a, b)) in expected.globals[index]
            .iter()
            .zip(&actual.globals[index])
            .enumerate()
        {
            if let Some(relative) = differs(*a, *b, tolerance) {
                let path = if length == 1 {
                    format!("globals.{}", global.name)
                } else {
                    format!("globals.{}[{offset}]", global.name)
                };
                differences.push(Difference {
                    path,
                    expected: *a,
                    actual: *b,
                    relative,
                });
            }
        }
    }
    differences.sort_by(|x, y| y.relative.total_cmp(&x.relative));
    differences
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_is_relative_and_integers_exact() {
        let t = Tolerance::default();
        assert!(differs(Value::Double(1.0), Value::Double(1.0 + 1e-12), t).is_none());
        assert!(differs(Value::Double(1.0), Value::Double(1.0 + 1e-6), t).is_some());
        assert!(differs(Value::Int(3), Value::Int(4), t).is_some());
        assert!(differs(Value::Double(f64::NAN), Value::Double(f64::NAN), t).is_none());
        assert!(differs(Value::Double(0.0), Value::Double(1e-300), t).is_some());
        assert!(
            differs(
                Value::Double(0.0),
                Value::Double(1e-300),
                Tolerance {
                    relative: 1e-9,
                    absolute: 1e-12
                }
            )
            .is_none()
        );
    }
}
