//! Values of integer, floating and string literals, as C reads them.

use crate::ast::{FloatLit, IntLit, NodeText, StringLit};

/// An integer literal's value and suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntValue {
    /// The value written.
    pub value: u64,
    /// True with a `u`/`U` suffix.
    pub unsigned: bool,
    /// True for `0x…` and for octal `0…` (C gives both the same types).
    pub hex: bool,
}

/// A floating literal's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FloatValue {
    /// Unsuffixed: a `double`.
    Double(f64),
    /// `f`/`F` suffix: a `float`, rounded once from the decimal text.
    Float(f32),
}

impl IntLit<'_> {
    /// The literal's value, or `None` when it does not fit in 64 bits.
    pub fn value(&self, source: &str) -> Option<IntValue> {
        parse_int(self.text(source))
    }
}

impl FloatLit<'_> {
    /// The literal's value, or `None` when the text is malformed.
    pub fn value(&self, source: &str) -> Option<FloatValue> {
        parse_float(self.text(source))
    }
}

impl StringLit<'_> {
    /// The string's contents with C escapes resolved.
    pub fn value(&self, source: &str) -> String {
        let text = self.text(source);
        let inner = text.strip_prefix('"').unwrap_or(text);
        let inner = inner.strip_suffix('"').unwrap_or(inner);
        unescape(inner)
    }
}

/// Parses `42`, `0x2A`, `7u`, and `017`, octal as in C (15); `None` for
/// one that does not fit in 64 bits or an octal one with a digit 8 or 9
/// ([`is_bad_octal`]).
pub fn parse_int(text: &str) -> Option<IntValue> {
    let (body, unsigned) = match text.strip_suffix(['u', 'U']) {
        Some(body) => (body, true),
        None => (text, false),
    };
    let (value, hex) = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(digits) => (u64::from_str_radix(digits, 16).ok()?, true),
        None if is_octal(body) => (u64::from_str_radix(&body[1..], 8).ok()?, true),
        None => (body.parse::<u64>().ok()?, false),
    };
    Some(IntValue {
        value,
        unsigned,
        hex,
    })
}

/// Whether the digits `body` (without suffix) are an octal literal: a 0
/// followed by more digits.
fn is_octal(body: &str) -> bool {
    body.len() > 1 && body.starts_with('0') && body.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `text` is an integer literal C reads as octal (it starts with
/// 0) but which holds a digit 8 or 9 (`08`), which C rejects.
pub fn is_bad_octal(text: &str) -> bool {
    let body = text.strip_suffix(['u', 'U']).unwrap_or(text);
    is_octal(body) && body.bytes().any(|b| b == b'8' || b == b'9')
}

/// Parses `1.0`, `.5`, `2.`, `1e-3`, `0.5f`. A suffixed literal is rounded to
/// `float` directly from its decimal text, as a C compiler does.
pub fn parse_float(text: &str) -> Option<FloatValue> {
    match text.strip_suffix(['f', 'F']) {
        Some(body) => body.parse::<f32>().ok().map(FloatValue::Float),
        None => text.parse::<f64>().ok().map(FloatValue::Double),
    }
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some('x') => {
                let mut value = 0u32;
                // Any number of digits may follow; a value past the last
                // character is no character (U+FFFD), not an overflow.
                while let Some(digit) = chars.peek().and_then(|c| c.to_digit(16)) {
                    value = value.saturating_mul(16).saturating_add(digit);
                    chars.next();
                }
                out.push(char::from_u32(value).unwrap_or('\u{FFFD}'));
            }
            Some(d @ '0'..='7') => {
                let mut value = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value).unwrap_or('\u{FFFD}'));
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(
            parse_int("42"),
            Some(IntValue {
                value: 42,
                unsigned: false,
                hex: false
            })
        );
        assert_eq!(
            parse_int("0x2A"),
            Some(IntValue {
                value: 42,
                unsigned: false,
                hex: true
            })
        );
        assert_eq!(
            parse_int("7U"),
            Some(IntValue {
                value: 7,
                unsigned: true,
                hex: false
            })
        );
        assert_eq!(parse_int("99999999999999999999"), None);
        // A leading 0 is octal, as in C, and typed as hex is.
        assert_eq!(
            parse_int("017"),
            Some(IntValue {
                value: 15,
                unsigned: false,
                hex: true
            })
        );
        assert_eq!(parse_int("0").map(|v| (v.value, v.hex)), Some((0, false)));
        assert_eq!(parse_int("010u").map(|v| v.value), Some(8));
        assert_eq!(parse_int("08"), None);
        assert!(is_bad_octal("08") && is_bad_octal("0179u"));
        assert!(!is_bad_octal("8") && !is_bad_octal("017") && !is_bad_octal("0"));
    }

    #[test]
    fn floats_keep_their_c_meaning() {
        assert_eq!(parse_float("1.4"), Some(FloatValue::Double(1.4)));
        // `1.4f` stored in a double is 1.39999997615814209.
        let Some(FloatValue::Float(value)) = parse_float("1.4f") else {
            panic!("not a float")
        };
        assert_eq!(f64::from(value), 1.399_999_976_158_142);
        assert_eq!(parse_float(".5"), Some(FloatValue::Double(0.5)));
        assert_eq!(parse_float("2."), Some(FloatValue::Double(2.0)));
        assert_eq!(parse_float("1.5E+4"), Some(FloatValue::Double(15000.0)));
    }

    #[test]
    fn escapes() {
        assert_eq!(unescape(r#"a\tb\n\x41\101\\\""#), "a\tb\nAA\\\"");
        // A hexadecimal escape of any length (a panic in debug builds once).
        assert_eq!(unescape(r"\x1111111111111z"), "\u{FFFD}z");
    }
}
