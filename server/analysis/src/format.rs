//! The format strings of `print`: C's `printf` conversion specifications,
//! parsed once when `main` is lowered (the parsed form is kept in the HIR
//! for the interpreter, which formats with it in `op2 run` and `op2
//! simulate`), checked against the arguments ([`check`], diagnostic E606),
//! and read by the code generator (which passes each argument as the type
//! its conversion reads).

use std::ops::Range;

use op2_syntax::ast::ScalarType;

/// The largest width or precision a conversion may have (written, or taken
/// from a `*` argument at run time): what one conversion prints is bounded
/// by it (a `double` under `%.1024f` prints at most 309 + 1 + 1024
/// characters).
pub const MAX_COUNT: usize = 1024;

/// The most bytes one `print` or `printf` may write after the part of a line
/// that earlier `printf`s left unfinished: the POETS controller formats into
/// a line buffer of this many bytes (and a terminating NUL), so `op2 run`
/// and `op2 simulate` stop with an error at a statement that would overflow
/// it (language.md §8).
pub const MAX_LINE: usize = 4096;

/// The conversions `print` knows, as `printf` spells them.
pub const CONVERSIONS: &str = "d i u x X o c f F e E g G";

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
    /// Where the specification is in the format, from `%` through the
    /// conversion (byte offsets).
    pub span: Range<usize>,
}

/// What a conversion prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `%d %i %u %x %X %o %c`: an integer (any integer type, or `bool`).
    Integer,
    /// `%f %F %e %E %g %G`: a `double` or `float`.
    Floating,
}

impl Class {
    /// Whether an argument of type `ty` may be printed as this class.
    pub fn accepts(self, ty: ScalarType) -> bool {
        let floating = matches!(ty, ScalarType::Double | ScalarType::Float);
        floating == (self == Class::Floating)
    }

    fn noun(self) -> &'static str {
        match self {
            Class::Integer => "an integer",
            Class::Floating => "a floating-point number",
        }
    }
}

impl Spec {
    /// What the conversion prints, or `None` for a conversion `print` does
    /// not know (`%s`, `%p`, `%n`, …).
    pub fn class(&self) -> Option<Class> {
        match self.conversion {
            'd' | 'i' | 'u' | 'x' | 'X' | 'o' | 'c' => Some(Class::Integer),
            'f' | 'F' | 'e' | 'E' | 'g' | 'G' => Some(Class::Floating),
            _ => None,
        }
    }

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
    let mut chars = format.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        if chars.peek().map(|&(_, c)| c) == Some('%') {
            chars.next();
            text.push('%');
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&(_, flag)) = chars.peek() {
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
        if chars.peek().map(|&(_, c)| c) == Some('.') {
            chars.next();
            spec.precision = Some(count(&mut chars).unwrap_or(Count::Fixed(0)));
        }
        while matches!(
            chars.peek().map(|&(_, c)| c),
            Some('l' | 'h' | 'z' | 'j' | 't' | 'L' | 'q')
        ) {
            chars.next();
        }
        match chars.next() {
            Some((end, conversion)) => {
                if !text.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                }
                spec.conversion = conversion;
                spec.span = at..end + conversion.len_utf8();
                pieces.push(Piece::Conversion(spec));
            }
            None => text.push_str(&format[at..]),
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    pieces
}

fn count(chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>) -> Option<Count> {
    if chars.peek().map(|&(_, c)| c) == Some('*') {
        chars.next();
        return Some(Count::Star);
    }
    let mut value: Option<usize> = None;
    while let Some(digit) = chars.peek().and_then(|&(_, c)| c.to_digit(10)) {
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

/// `a `double``, `an `int``.
fn a(ty: ScalarType) -> String {
    let article = if ty.keyword().starts_with(['i', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} `{ty}`")
}

/// Where a problem of a format is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum At {
    /// At a conversion of the format (its span).
    Conversion(Range<usize>),
    /// At the argument with this index, read by the conversion whose span
    /// is given.
    Argument(usize, Option<Range<usize>>),
}

/// A format that does not fit its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where.
    pub at: At,
    /// What, in the words of a diagnostic.
    pub message: String,
}

/// Checks `format`, parsed into `pieces`, against the types of the arguments `print` gives
/// it: every conversion is one `print` knows, its width and precision are
/// at most [`MAX_COUNT`], it and each of its `*` counts have an argument, a
/// `*` count is an integer, the argument is of the class the conversion
/// prints, and no argument is left over. C leaves each of these undefined
/// or ignores it silently.
pub fn check(format: &str, pieces: &[Piece], args: &[ScalarType]) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut next = 0usize;
    for piece in pieces {
        let Piece::Conversion(spec) = piece else {
            continue;
        };
        let written = || format.get(spec.span.clone()).unwrap_or_default();
        let conversion = At::Conversion(spec.span.clone());
        let Some(class) = spec.class() else {
            problems.push(Problem {
                at: conversion,
                message: format!(
                    "`{}` is not a conversion `print` knows (it knows {CONVERSIONS})",
                    written()
                ),
            });
            // Whatever it was meant to read stays unchecked.
            return problems;
        };
        for (count, what) in [(spec.width, "width"), (spec.precision, "precision")] {
            match count {
                Some(Count::Fixed(n)) if n > MAX_COUNT => problems.push(Problem {
                    at: conversion.clone(),
                    message: format!(
                        "the {what} of `{}` is too large: a {what} may be at most {MAX_COUNT}",
                        written()
                    ),
                }),
                Some(Count::Star) => {
                    match args.get(next) {
                        None => problems.push(Problem {
                            at: conversion.clone(),
                            message: format!("the `*` {what} of `{}` has no argument", written()),
                        }),
                        Some(&ty) if !Class::Integer.accepts(ty) => problems.push(Problem {
                            at: At::Argument(next, Some(spec.span.clone())),
                            message: format!(
                                "the `*` {what} of `{}` must be an integer, but this argument is {}",
                                written(),
                                a(ty)
                            ),
                        }),
                        Some(_) => {}
                    }
                    next += 1;
                }
                _ => {}
            }
        }
        match args.get(next) {
            None => problems.push(Problem {
                at: conversion,
                message: format!("`{}` has no argument to print", written()),
            }),
            Some(&ty) if !class.accepts(ty) => problems.push(Problem {
                at: At::Argument(next, Some(spec.span.clone())),
                message: format!(
                    "`{}` prints {}, but this argument is {}",
                    written(),
                    class.noun(),
                    a(ty)
                ),
            }),
            Some(_) => {}
        }
        next += 1;
    }
    if next < args.len() {
        let conversions = pieces
            .iter()
            .filter(|piece| matches!(piece, Piece::Conversion(_)))
            .count();
        problems.push(Problem {
            at: At::Argument(next, None),
            message: format!(
                "this argument is never printed: the format reads {next} argument{} ({conversions} conversion{})",
                if next == 1 { "" } else { "s" },
                if conversions == 1 { "" } else { "s" }
            ),
        });
    }
    problems
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

    fn problems(format: &str, args: &[ScalarType]) -> Vec<String> {
        check(format, &parse(format), args)
            .into_iter()
            .map(|problem| problem.message)
            .collect()
    }

    #[test]
    fn spans_cover_the_specification() {
        let format = "é %-8.3lf|%*d|%%|%";
        let spans: Vec<&str> = parse(format)
            .iter()
            .filter_map(|piece| match piece {
                Piece::Conversion(spec) => Some(&format[spec.span.clone()]),
                Piece::Text(_) => None,
            })
            .collect();
        assert_eq!(spans, ["%-8.3lf", "%*d"]);
    }

    #[test]
    fn formats_that_fit_their_arguments_pass() {
        use ScalarType::{Bool, Double, Float, Int, Ll, Ull};
        assert!(problems("%d %5.2f %g %x %c %%", &[Int, Double, Float, Ull, Int]).is_empty());
        assert!(problems("%*.*f %d", &[Int, Ll, Double, Bool]).is_empty());
        assert!(problems("%.1024e %1024d", &[Double, Int]).is_empty());
        assert!(problems("no conversions", &[]).is_empty());
    }

    #[test]
    fn each_misfit_is_reported_where_it_is() {
        use ScalarType::{Double, Int};
        assert_eq!(
            check("%d", &parse("%d"), &[Double]),
            [Problem {
                at: At::Argument(0, Some(0..2)),
                message: "`%d` prints an integer, but this argument is a `double`".into()
            }]
        );
        assert_eq!(
            problems("%f", &[Int]),
            ["`%f` prints a floating-point number, but this argument is an `int`"]
        );
        assert_eq!(
            problems("%.70000f", &[Double]),
            ["the precision of `%.70000f` is too large: a precision may be at most 1024"]
        );
        assert_eq!(
            problems("%999999999999999999999999d", &[Int]),
            ["the width of `%999999999999999999999999d` is too large: a width may be at most 1024"]
        );
        assert_eq!(problems("%d %d", &[Int]), ["`%d` has no argument to print"]);
        assert_eq!(
            problems("%*d", &[Double, Int]),
            ["the `*` width of `%*d` must be an integer, but this argument is a `double`"]
        );
        assert_eq!(
            problems("%.*f", &[]),
            [
                "the `*` precision of `%.*f` has no argument",
                "`%.*f` has no argument to print"
            ]
        );
        assert_eq!(
            check("%d", &parse("%d"), &[Int, Int, Int])[0].at,
            At::Argument(1, None)
        );
        assert_eq!(
            problems("%d", &[Int, Int]),
            ["this argument is never printed: the format reads 1 argument (1 conversion)"]
        );
        assert_eq!(
            problems("%s and %d", &[Double, Double]),
            ["`%s` is not a conversion `print` knows (it knows d i u x X o c f F e E g G)"]
        );
    }
}
