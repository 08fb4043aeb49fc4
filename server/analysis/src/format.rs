//! The format strings of `print`: C's `printf` conversion specifications,
//! parsed once for the interpreter (which formats) and the code generator
//! (which passes each argument as the type its conversion reads).

/// A width or precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Written in the format.
    Fixed(usize),
    /// `*`: taken from the next argument.
    Star,
}

/// A conversion specification: `%-08.3f` and friends.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Spec {
    /// `-`
    pub left: bool,
    /// `+`
    pub plus: bool,
    /// space
    pub space: bool,
    /// `#`
    pub alternate: bool,
    /// `0`
    pub zero: bool,
    /// The minimum width.
    pub width: Option<Count>,
    /// The precision.
    pub precision: Option<Count>,
    /// The conversion character (`d`, `g`, …); length modifiers are
    /// dropped: the argument's own type decides.
    pub conversion: char,
}

impl Spec {
    /// The flags, width and precision as written (without `%`, length
    /// modifier or conversion).
    pub fn prefix(&self) -> String {
        let mut out = String::new();
        for (on, flag) in [
            (self.left, '-'),
            (self.plus, '+'),
            (self.space, ' '),
            (self.alternate, '#'),
            (self.zero, '0'),
        ] {
            if on {
                out.push(flag);
            }
        }
        let count = |count: Count| match count {
            Count::Fixed(n) => n.to_string(),
            Count::Star => "*".into(),
        };
        if let Some(width) = self.width {
            out.push_str(&count(width));
        }
        if let Some(precision) = self.precision {
            out.push('.');
            out.push_str(&count(precision));
        }
        out
    }
}

/// A piece of a format string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Text printed as is (`%%` becomes `%`).
    Text(String),
    /// A conversion that consumes arguments.
    Conversion(Spec),
}

/// Splits a format into text and conversions. A `%` at the very end is
/// text.
pub fn parse(format: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            text.push('%');
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&flag) = chars.peek() {
            match flag {
                '-' => spec.left = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '#' => spec.alternate = true,
                '0' => spec.zero = true,
                _ => break,
            }
            chars.next();
        }
        spec.width = count(&mut chars);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.precision = Some(count(&mut chars).unwrap_or(Count::Fixed(0)));
        }
        while matches!(chars.peek(), Some('l' | 'h' | 'z' | 'j' | 't' | 'L' | 'q')) {
            chars.next();
        }
        match chars.next() {
            Some(conversion) => {
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                spec.conversion = conversion;
                pieces.push(Piece::Conversion(spec));
            }
            None => text.push('%'),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

fn count(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<Count> {
    if chars.peek() == Some(&'*') {
        chars.next();
        return Some(Count::Star);
    }
    let mut value: Option<usize> = None;
    while let Some(digit) = chars.peek().and_then(|c| c.to_digit(10)) {
        value = Some(
            value
                .unwrap_or(0)
                .saturating_mul(10)
                .saturating_add(digit as usize),
        );
        chars.next();
    }
    value.map(Count::Fixed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_and_text() {
        let pieces = parse("a %-8.3lf b %% %*d%");
        assert_eq!(pieces.len(), 5);
        assert_eq!(pieces[0], Piece::Text("a ".into()));
        let Piece::Conversion(spec) = &pieces[1] else {
            panic!("a conversion")
        };
        assert_eq!(
            (spec.left, spec.width, spec.precision, spec.conversion),
            (true, Some(Count::Fixed(8)), Some(Count::Fixed(3)), 'f')
        );
        assert_eq!(spec.prefix(), "-8.3");
        assert_eq!(pieces[2], Piece::Text(" b % ".into()));
        let Piece::Conversion(star) = &pieces[3] else {
            panic!("a conversion")
        };
        assert_eq!(star.width, Some(Count::Star));
        assert_eq!(pieces[4], Piece::Text("%".into()));
    }
}
