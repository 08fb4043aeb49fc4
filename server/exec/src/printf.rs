//! `print`'s formatting, as C's `printf` does it: `%d %i %u %f %F %e %E %g
//! %G %x %X %%` with the flags `- + space # 0`, a width, a precision, and the
//! length modifiers C programs write (`l`, `ll`, `h`, `z`, ignored: the
//! value's own type decides).
//!
//! It formats with the parsed form the analysis keeps for each `print`
//! (`op2_analysis::format`), which `op2 check` has checked against the
//! arguments (E606); widths and precisions taken from `*` arguments are
//! checked here, against the same limit, before any padding is made.

use std::fmt::Write;

use op2_analysis::format::{Count, MAX_COUNT, MAX_LINE, Piece};
use op2_analysis::value::Value;

/// How one conversion prints, with `*` counts resolved.
#[derive(Clone, Copy, Debug, Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alternate: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
}

/// Counts `text`, what one `print` or `printf` writes, into the line the
/// output is on: `unfinished` is the length of the part of a line that
/// earlier statements left without a newline, and becomes the part `text`
/// leaves. An error when the two together are longer than [`MAX_LINE`], a
/// POETS line buffer (the controller's for `main`, the device's for a
/// kernel evaluation).
pub fn continue_line(unfinished: &mut usize, text: &str) -> Result<(), String> {
    let total = unfinished.saturating_add(text.len());
    if total > MAX_LINE {
        let after = match *unfinished {
            0 => String::new(),
            n => format!(" after the {n} bytes of an unfinished line"),
        };
        let plural = if text.len() == 1 { "" } else { "s" };
        return Err(format!(
            "this writes {} byte{plural}{after}, more than the {MAX_LINE} of a POETS line buffer",
            text.len()
        ));
    }
    *unfinished = match text.rfind('\n') {
        Some(at) => text.len() - at - 1,
        None => total,
    };
    Ok(())
}

/// Formats `args` with `pieces`, the parsed `format`, like `printf`.
/// Missing arguments print as nothing and surplus arguments are ignored (as
/// C does; `op2 check` refuses both). A width or precision above
/// [`MAX_COUNT`] is an error naming the conversion.
pub fn format(format: &str, pieces: &[Piece], args: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    let mut args = args.iter().copied();
    for piece in pieces {
        let parsed = match piece {
            Piece::Text(text) => {
                out.push_str(text);
                continue;
            }
            Piece::Conversion(spec) => spec,
        };
        let too_large = |what: &str, value: u64| {
            format!(
                "the {what} of `{}` is {value}; a {what} may be at most {MAX_COUNT}",
                format.get(parsed.span.clone()).unwrap_or_default()
            )
        };
        let mut spec = Spec {
            left: parsed.left,
            plus: parsed.plus,
            space: parsed.space,
            alternate: parsed.alternate,
            zero: parsed.zero,
            width: 0,
            precision: None,
        };
        match parsed.width {
            Some(Count::Fixed(n)) => spec.width = n,
            Some(Count::Star) => {
                let width = args.next().and_then(Value::as_i64).unwrap_or(0);
                spec.left |= width < 0;
                spec.width = usize::try_from(width.unsigned_abs()).unwrap_or(usize::MAX);
            }
            None => {}
        }
        if spec.width > MAX_COUNT {
            return Err(too_large("width", spec.width as u64));
        }
        spec.precision = match parsed.precision {
            Some(Count::Fixed(n)) => Some(n),
            // A negative `*` precision counts as none.
            Some(Count::Star) => args
                .next()
                .and_then(Value::as_i64)
                .filter(|p| *p >= 0)
                .map(|p| usize::try_from(p).unwrap_or(usize::MAX)),
            None => None,
        };
        if let Some(precision) = spec.precision.filter(|p| *p > MAX_COUNT) {
            return Err(too_large("precision", precision as u64));
        }
        let Some(value) = args.next() else { continue };
        let text = match parsed.conversion {
            'd' | 'i' => signed(value, spec),
            'u' => unsigned(value, spec, 10, false),
            'x' => unsigned(value, spec, 16, false),
            'X' => unsigned(value, spec, 16, true),
            'o' => unsigned(value, spec, 8, false),
            'f' | 'F' => floating(value.as_f64(), spec, 'f', parsed.conversion == 'F'),
            'e' | 'E' => floating(value.as_f64(), spec, 'e', parsed.conversion == 'E'),
            'g' | 'G' => floating(value.as_f64(), spec, 'g', parsed.conversion == 'G'),
            // Padded to the width as C pads it (with spaces, on the left
            // unless `-`).
            'c' => pad(
                "",
                "",
                &char::from_u32(u32::try_from(value.as_i64().unwrap_or(0)).unwrap_or(0))
                    .map(String::from)
                    .unwrap_or_default(),
                spec,
                false,
            ),
            other => format!("%{other}"),
        };
        out.push_str(&text);
    }
    Ok(out)
}

/// Applies width, zero padding and sign to a formatted number whose digits
/// (without sign) are `digits`.
fn pad(sign: &str, prefix: &str, digits: &str, spec: Spec, zero_allowed: bool) -> String {
    let length = sign.len() + prefix.len() + digits.len();
    if length >= spec.width {
        return format!("{sign}{prefix}{digits}");
    }
    let fill = spec.width - length;
    if spec.left {
        format!("{sign}{prefix}{digits}{}", " ".repeat(fill))
    } else if spec.zero && zero_allowed {
        format!("{sign}{prefix}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{sign}{prefix}{digits}", " ".repeat(fill))
    }
}

fn sign_of(negative: bool, spec: Spec) -> &'static str {
    if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    }
}

/// Integer digits with a precision: at least that many digits, and none
/// for zero with precision 0.
fn integer_digits(magnitude: String, spec: Spec) -> String {
    match spec.precision {
        Some(0) if magnitude == "0" => String::new(),
        Some(p) if magnitude.len() < p => format!("{}{magnitude}", "0".repeat(p - magnitude.len())),
        _ => magnitude,
    }
}

#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
fn signed(value: Value, spec: Spec) -> String {
    // As the generated C++ passes it, a `long long`: an `ull` past the
    // largest `ll` prints negative (`%d` of 2^64 - 1 is -1).
    let v: i128 = match value {
        Value::Ull(v) => i128::from(v as i64),
        Value::Double(_) | Value::Float(_) => value.as_f64() as i128,
        other => i128::from(other.as_i64().unwrap_or(0)),
    };
    let digits = integer_digits(v.unsigned_abs().to_string(), spec);
    pad(
        sign_of(v < 0, spec),
        "",
        &digits,
        spec,
        spec.precision.is_none(),
    )
}

#[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
fn unsigned(value: Value, spec: Spec, radix: u32, upper: bool) -> String {
    // A negative int printed with %u or %x shows its two's complement in
    // the width of its type, as C's varargs pass it.
    let v: u64 = match value {
        Value::Int(v) => u64::from(v as u32),
        Value::Uint(v) => u64::from(v),
        Value::Ll(v) => v as u64,
        Value::Ull(v) => v,
        Value::Bool(v) => u64::from(v),
        Value::Double(_) | Value::Float(_) => value.as_f64() as u64,
    };
    let mut digits = match radix {
        16 if upper => format!("{v:X}"),
        16 => format!("{v:x}"),
        8 => format!("{v:o}"),
        _ => v.to_string(),
    };
    digits = integer_digits(digits, spec);
    // `#` gives hex a `0x` (not for 0) and octal a first digit 0 (also
    // where the precision left no digit: `%#.0o` of 0 is `0`).
    let prefix = match (radix, spec.alternate) {
        (16, true) if v != 0 && upper => "0X",
        (16, true) if v != 0 => "0x",
        (8, true) if !digits.starts_with('0') => "0",
        _ => "",
    };
    pad("", prefix, &digits, spec, spec.precision.is_none())
}

/// `%e` digits of a finite non-negative value: mantissa with `precision`
/// decimals and a signed two-digit-or-more exponent.
fn exponential(v: f64, precision: usize, alternate: bool) -> String {
    let text = format!("{v:.precision$e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let mut mantissa = mantissa.to_owned();
    if alternate && precision == 0 {
        mantissa.push('.');
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    let mut out = mantissa;
    let _ = write!(out, "e{sign}{:02}", exponent.unsigned_abs());
    out
}

fn strip_trailing_zeros(text: &str) -> String {
    match text.split_once('e') {
        Some((mantissa, exponent)) => format!("{}e{exponent}", strip_trailing_zeros(mantissa)),
        None if text.contains('.') => text.trim_end_matches('0').trim_end_matches('.').to_owned(),
        None => text.to_owned(),
    }
}

fn floating(v: f64, spec: Spec, style: char, upper: bool) -> String {
    let negative = v.is_sign_negative() && !v.is_nan();
    let sign = sign_of(negative, spec);
    let magnitude = v.abs();
    if !v.is_finite() {
        let text = if v.is_nan() { "nan" } else { "inf" };
        let text = if upper {
            text.to_uppercase()
        } else {
            text.to_owned()
        };
        return pad(sign, "", &text, spec, false);
    }
    let precision = spec.precision.unwrap_or(6);
    let digits = match style {
        'f' => {
            let mut text = format!("{magnitude:.precision$}");
            if spec.alternate && precision == 0 {
                text.push('.');
            }
            text
        }
        'e' => exponential(magnitude, precision, spec.alternate),
        _ => {
            // %g: precision P (0 means 1); the exponent X that %e would
            // show decides between %f and %e.
            let p = if precision == 0 { 1 } else { precision };
            let as_e = exponential(magnitude, p - 1, false);
            let x: i64 = as_e
                .split_once('e')
                .and_then(|(_, e)| e.parse().ok())
                .unwrap_or(0);
            let p = i64::try_from(p).unwrap_or(i64::MAX);
            let text = if p > x && x >= -4 {
                let decimals = usize::try_from(p - 1 - x).unwrap_or(0);
                format!("{magnitude:.decimals$}")
            } else {
                exponential(magnitude, usize::try_from(p - 1).unwrap_or(0), false)
            };
            if !spec.alternate {
                strip_trailing_zeros(&text)
            } else if text.contains('.') {
                text
            } else {
                // `#` keeps the decimal point, as C does: `-501339.`.
                match text.find('e') {
                    Some(at) => format!("{}.{}", &text[..at], &text[at..]),
                    None => format!("{text}."),
                }
            }
        }
    };
    let digits = if upper { digits.to_uppercase() } else { digits };
    pad(sign, "", &digits, spec, true)
}

#[cfg(test)]
mod tests {
    use op2_analysis::format::parse;

    use super::*;

    fn f(format_string: &str, args: &[Value]) -> String {
        format(format_string, &parse(format_string), args).unwrap()
    }

    #[test]
    fn widths_and_precisions_above_the_limit_are_errors() {
        let star = |text: &str, args: &[Value]| format(text, &parse(text), args);
        assert_eq!(
            star("%.70000f", &[Value::Double(1.0)]),
            Err("the precision of `%.70000f` is 70000; a precision may be at most 1024".into())
        );
        assert_eq!(
            star("%*d", &[Value::Int(999_999_999), Value::Int(1)]),
            Err("the width of `%*d` is 999999999; a width may be at most 1024".into())
        );
        assert_eq!(
            star("%*d", &[Value::Int(-2000), Value::Int(1)]),
            Err("the width of `%*d` is 2000; a width may be at most 1024".into())
        );
        assert_eq!(
            star("%.*f|", &[Value::Ll(-5), Value::Double(0.5)]),
            Ok("0.500000|".into())
        );
        let widest = star(
            "%*.*f",
            &[Value::Int(-1024), Value::Int(1024), Value::Double(-1e308)],
        )
        .unwrap();
        assert_eq!(widest.len(), 1 + 309 + 1 + 1024);
    }

    #[test]
    fn integers_like_c() {
        assert_eq!(
            f("%d|%5d|%-5d|%05d|%+d|% d", &[Value::Int(42); 6]),
            "42|   42|42   |00042|+42| 42"
        );
        assert_eq!(
            f("%d %i", &[Value::Int(-7), Value::Ll(-9_000_000_000)]),
            "-7 -9000000000"
        );
        assert_eq!(
            f(
                "%u %x %X %#x %o",
                &[
                    Value::Int(-1),
                    Value::Int(255),
                    Value::Int(255),
                    Value::Int(255),
                    Value::Int(8)
                ]
            ),
            "4294967295 ff FF 0xff 10"
        );
        assert_eq!(f("%.3d|%.0d|%%", &[Value::Int(7), Value::Int(0)]), "007||%");
        assert_eq!(
            f("%ld %lld %lu", &[Value::Ll(1), Value::Ll(2), Value::Ull(3)]),
            "1 2 3"
        );
    }

    #[test]
    fn floats_like_c() {
        // Reference values from glibc's printf.
        assert_eq!(f("%f", &[Value::Double(1.5)]), "1.500000");
        assert_eq!(f("%.2f", &[Value::Double(2.675)]), "2.67");
        assert_eq!(f("%e", &[Value::Double(12345.678)]), "1.234568e+04");
        assert_eq!(f("%10.5e", &[Value::Double(0.000123)]), "1.23000e-04");
        assert_eq!(f("%E", &[Value::Double(1e-300)]), "1.000000E-300");
        assert_eq!(f("%g", &[Value::Double(100000.0)]), "100000");
        assert_eq!(f("%g", &[Value::Double(1000000.0)]), "1e+06");
        assert_eq!(f("%g", &[Value::Double(0.0001)]), "0.0001");
        assert_eq!(f("%g", &[Value::Double(0.00001)]), "1e-05");
        assert_eq!(f("%g", &[Value::Double(1.5)]), "1.5");
        assert_eq!(f("%g", &[Value::Double(0.0)]), "0");
        assert_eq!(f("%.3g", &[Value::Double(2.71238)]), "2.71");
        assert_eq!(f("%#g", &[Value::Double(1.5)]), "1.50000");
        // `#` keeps the point where no decimal is left, and gives octal a
        // first 0 where the precision left no digit (each as glibc prints).
        assert_eq!(
            f(
                "[%#g][%#g][%#.1g][%#g][%#g][%#.0e][%#.0f]",
                &[
                    Value::Double(-501_338.57),
                    Value::Double(1e6),
                    Value::Double(3.0),
                    Value::Double(0.0),
                    Value::Double(1e-5),
                    Value::Double(3.0),
                    Value::Double(3.0)
                ]
            ),
            "[-501339.][1.00000e+06][3.][0.00000][1.00000e-05][3.e+00][3.]"
        );
        let zeros = [Value::Int(0); 5];
        assert_eq!(f("[%#.0o][%#o][%#.0x][%#x][%.0o]", &zeros), "[0][0][][0][]");
        // `%d` of an `ull` reads a `long long`, as the C++ passes it.
        assert_eq!(
            f("%d %i", &[Value::Ull(u64::MAX), Value::Ull(1 << 63)]),
            "-1 -9223372036854775808"
        );
        // `%c` is padded to its width.
        assert_eq!(
            f(
                "[%5c][%-3c][%c]",
                &[Value::Int(65), Value::Int(65), Value::Int(66)]
            ),
            "[    A][A  ][B]"
        );
        assert_eq!(f("%g", &[Value::Float(0.1)]), "0.1");
        assert_eq!(
            f(" %d  %10.5e", &[Value::Int(100), Value::Double(5.0203e-5)]),
            " 100  5.02030e-05"
        );
        assert_eq!(
            f(
                "%f %f %g",
                &[
                    Value::Double(f64::INFINITY),
                    Value::Double(-f64::INFINITY),
                    Value::Double(f64::NAN)
                ]
            ),
            "inf -inf nan"
        );
        assert_eq!(
            f(
                "%+.1f|%08.3f|%-8.2f|",
                &[
                    Value::Double(2.0),
                    Value::Double(-3.14259),
                    Value::Double(1.0)
                ]
            ),
            "+2.0|-003.143|1.00    |"
        );
        assert_eq!(f("%g", &[Value::Double(-0.0)]), "-0");
    }
}
