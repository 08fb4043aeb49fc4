//! `float` values read from decimal text and written back as text, exactly.
//!
//! JSON numbers are read as `double`s (correctly rounded), and a `float`
//! dat's value is that `double` rounded to `float`: two roundings, where C's
//! `strtof` makes one. They give the same `float` except where the `double`
//! lands exactly halfway between two `float`s: the digits that would have
//! decided the second rounding are gone. [`is_float_midpoint`] finds that
//! case, which the reader refuses rather than guess, and [`float_text`]
//! writes a `float` so that it never reads back as one.

/// The magnitude halfway between `f32::MAX` and the next power of two,
/// where rounding to `float` overflows or not.
const OVERFLOW_MIDPOINT: f64 = 340_282_356_779_733_661_637_539_395_458_142_568_448.0;

/// Whether `v` is exactly halfway between two adjacent `float`s (or at the
/// edge where rounding overflows): the `double`s whose rounding to `float`
/// depends on digits they no longer hold.
pub fn is_float_midpoint(v: f64) -> bool {
    if !v.is_finite() {
        return false;
    }
    if v.abs() == OVERFLOW_MIDPOINT {
        return true;
    }
    #[allow(clippy::cast_possible_truncation)]
    let single = v as f32;
    if !single.is_finite() || f64::from(single) == v {
        return false;
    }
    let other = if f64::from(single) < v {
        single.next_up()
    } else {
        single.next_down()
    };
    // Two adjacent floats, widened, add and halve exactly in a double.
    (f64::from(single) + f64::from(other)) / 2.0 == v
}

/// The text to write for `x`, given its shortest text `shortest` (which
/// reads back to `x` when rounded once to `float`): that text, unless read
/// as a `double` it is exactly halfway between two `float`s (as one
/// `float`'s, `7.038531e-26`, is), then the shortest text of `x` widened
/// to `double`, which reads back to `x` under either rounding.
pub fn float_text(x: f32, shortest: String) -> String {
    match shortest.parse::<f64>() {
        Ok(read) if is_float_midpoint(read) => format!("{:?}", f64::from(x)),
        _ => shortest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_midpoints_of_floats_are_found() {
        // 1 + 2^-24 is halfway between 1 and the next float.
        assert!(is_float_midpoint(1.0 + f64::powi(2.0, -24)));
        assert!(!is_float_midpoint(1.0 + f64::powi(2.0, -23)));
        assert!(!is_float_midpoint(1.0));
        assert!(!is_float_midpoint(0.1));
        assert!(is_float_midpoint(-(1.0 + f64::powi(2.0, -24))));
        assert!(is_float_midpoint(OVERFLOW_MIDPOINT));
        assert!(!is_float_midpoint(f64::from(f32::MAX)));
        assert!(!is_float_midpoint(f64::INFINITY) && !is_float_midpoint(f64::NAN));
        // Between the two smallest subnormals.
        assert!(is_float_midpoint(f64::from(f32::from_bits(1)) * 1.5));
    }

    /// The one positive finite `float` whose shortest text is a midpoint as
    /// a `double` (found by trying all of them): written as its widened
    /// `double` instead, it reads back to itself however it is rounded.
    #[test]
    fn every_float_text_reads_back_through_a_double() {
        let x = f32::from_bits(0x15ae_43fd);
        let shortest = format!("{x:?}");
        assert_eq!(shortest, "7.038531e-26");
        #[allow(clippy::cast_possible_truncation)]
        let twice = shortest.parse::<f64>().unwrap() as f32;
        assert_ne!(twice, x, "read through a double, the shortest text misses");
        let text = float_text(x, shortest);
        #[allow(clippy::cast_possible_truncation)]
        let read = text.parse::<f64>().unwrap() as f32;
        assert_eq!(read, x, "{text}");
        assert_eq!(text.parse::<f32>().unwrap(), x);
        // Any other float keeps its shortest text.
        assert_eq!(float_text(0.1, "0.1".to_owned()), "0.1");
    }
}
