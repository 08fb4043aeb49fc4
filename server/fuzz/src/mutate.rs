//! Mutations of program text (and of instance JSON): byte-level (flip,
//! insert, delete, duplicate), token-level (replace a token with another of
//! the corpus, swap, delete, repeat a span) and splices of two programs.
//! Several are stacked per input.

use crate::rng::Rng;

/// Texts a mutation may insert: the language's punctuation and keywords,
/// and the pieces of the hostile inputs of issue #12.
const INTERESTING: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    "\"",
    "'",
    "/*",
    "*/",
    "//",
    "\\",
    "\n",
    "\r",
    "\r\n",
    "\t",
    "\0",
    "\u{feff}",
    "😀",
    "𝄞",
    "é",
    "\u{2028}",
    "=",
    "+=",
    "++",
    "->",
    "*",
    "&",
    "#",
    "%",
    "?",
    ":",
    "set ",
    "map ",
    "dat ",
    "const ",
    "global ",
    "kernel ",
    "main ",
    "par_loop ",
    "over ",
    "as ",
    "on ",
    "import ",
    "print(",
    "len(",
    "READ",
    "WRITE",
    "RW",
    "INC",
    "MIN",
    "MAX",
    "double",
    "float",
    "int",
    "uint",
    "ll",
    "ull",
    "bool",
    "true",
    "false",
    "if (",
    "else ",
    "for (",
    "while (",
    "do ",
    "break;",
    "continue;",
    "return;",
    "switch",
    "goto",
    "struct",
    "0",
    "1",
    "-1",
    "0x",
    "1e",
    "1.0f",
    "main {",
    "kernel k() {",
];

/// What only hostile mutations insert: huge numbers, formats and imports of
/// special files.
const HOSTILE: &[&str] = &[
    "99999999999999999999",
    "4000000000",
    "18446744073709551616",
    "2147483647",
    "-2147483648",
    "1e400",
    "nan",
    "%.70000f",
    "%999999999d",
    "%n",
    "%s",
    "import \"/dev/zero\";",
    "import \"missing.op2\";",
    "import \"main.op2\";",
    "x+x+x+x+x+x+x+x+",
    "((((((((",
    "))))))))",
];

/// The longest text a mutation makes: longer ones are cut to it.
const MAX_TEXT: usize = 4 << 20;

/// `piece` `times` over, but no longer than what `text` (of `len` bytes)
/// has room for under [`MAX_TEXT`]: a piece of a text already long (a run
/// of tokens one of which is a long repeat) times many would otherwise ask
/// for gigabytes before the text is cut to its limit (campaign of b7582fe,
/// seed 8, case 8507293: 15.6 GB).
fn repeated(piece: &[u8], times: usize, len: usize) -> Vec<u8> {
    let room = MAX_TEXT.saturating_sub(len);
    piece.repeat(times.min(room / piece.len().max(1)))
}

/// Applies between one and `max` mutations to `text`, with `corpus` to
/// draw tokens and splices from.
pub fn mutate(text: &[u8], corpus: &[&[u8]], rng: &mut Rng, max: usize) -> Vec<u8> {
    let mut out = text.to_vec();
    for _ in 0..rng.range(1, max.max(1)) {
        out = once(&out, corpus, rng);
        out.truncate(MAX_TEXT);
    }
    out
}

fn once(text: &[u8], corpus: &[&[u8]], rng: &mut Rng) -> Vec<u8> {
    let mut out = text.to_vec();
    let len = out.len();
    match rng.below(16) {
        // Byte flips.
        0 if len > 0 => {
            let at = rng.below(len);
            out[at] ^= 1 << rng.below(8);
        }
        // A random byte.
        1 => {
            let at = rng.below(len + 1);
            out.insert(at, rng.next_u64() as u8);
        }
        // Delete a range.
        2 if len > 0 => {
            let at = rng.below(len);
            let n = rng.size(len - at);
            out.drain(at..at + n);
        }
        // Duplicate a range, sometimes many times.
        3 if len > 0 => {
            let at = rng.below(len);
            let n = rng.size((len - at).min(256));
            let piece = out[at..at + n].to_vec();
            let times = if rng.one_in(8) && !crate::tame() {
                rng.size(10_000)
            } else {
                1
            };
            let to = rng.below(len + 1);
            out.splice(to..to, repeated(&piece, times, len));
        }
        // An interesting text.
        4..=6 => {
            let piece = if !crate::tame() && rng.one_in(3) {
                rng.pick(HOSTILE).as_bytes()
            } else {
                rng.pick(INTERESTING).as_bytes()
            };
            let at = rng.below(len + 1);
            let times = if rng.one_in(10) && !crate::tame() {
                rng.size(20_000)
            } else {
                1
            };
            out.splice(at..at, repeated(piece, times, len));
        }
        // Token-level: replace a token with one of the corpus.
        7..=9 => {
            let tokens = tokens(&out);
            let source = pick_text(corpus, rng);
            let other = tokens_of(source);
            if let (false, false) = (tokens.is_empty(), other.is_empty()) {
                let (a, b) = tokens[rng.below(tokens.len())];
                let (c, d) = other[rng.below(other.len())];
                out.splice(a..b, source[c..d].iter().copied());
            }
        }
        // Token-level: swap two tokens.
        10 => {
            let tokens = tokens(&out);
            if tokens.len() >= 2 {
                let mut i = tokens[rng.below(tokens.len())];
                let mut j = tokens[rng.below(tokens.len())];
                if i.0 > j.0 {
                    std::mem::swap(&mut i, &mut j);
                }
                if i.1 <= j.0 {
                    let mut next = out[..i.0].to_vec();
                    next.extend_from_slice(&out[j.0..j.1]);
                    next.extend_from_slice(&out[i.1..j.0]);
                    next.extend_from_slice(&out[i.0..i.1]);
                    next.extend_from_slice(&out[j.1..]);
                    out = next;
                }
            }
        }
        // Token-level: delete a run of tokens.
        11 => {
            let tokens = tokens(&out);
            if !tokens.is_empty() {
                let first = rng.below(tokens.len());
                let last = (first + rng.size(8)).min(tokens.len()) - 1;
                out.drain(tokens[first].0..tokens[last].1);
            }
        }
        // Token-level: repeat a run of tokens.
        12 => {
            let tokens = tokens(&out);
            if !tokens.is_empty() {
                let first = rng.below(tokens.len());
                let last = (first + rng.size(16)).min(tokens.len()) - 1;
                let piece = out[tokens[first].0..tokens[last].1].to_vec();
                let bound = if rng.one_in(10) && !crate::tame() {
                    50_000
                } else {
                    4
                };
                let times = rng.size(bound);
                let at = tokens[last].1;
                out.splice(at..at, repeated(&piece, times, len));
            }
        }
        // Splice: a prefix of this text and a suffix of another.
        13 => {
            let source = pick_text(corpus, rng);
            let a = boundary(&out, rng.below(len + 1));
            let b = boundary(source, rng.below(source.len() + 1));
            out.truncate(a);
            out.extend_from_slice(&source[b..]);
        }
        // Splice: a run of lines of another text inserted at a line start.
        14 => {
            let source = pick_text(corpus, rng);
            let lines: Vec<usize> = line_starts(source);
            let first = lines[rng.below(lines.len())];
            let last = lines[rng.below(lines.len())].max(first);
            let at = line_starts(&out)[rng.below(line_starts(&out).len())];
            out.splice(at..at, source[first..last].iter().copied());
        }
        // Change a number.
        _ => {
            let tokens = tokens(&out);
            let numbers: Vec<(usize, usize)> = tokens
                .into_iter()
                .filter(|&(a, _)| out[a].is_ascii_digit())
                .collect();
            if !numbers.is_empty() {
                let (a, b) = numbers[rng.below(numbers.len())];
                let choices = if crate::tame() { 3 } else { 6 };
                let replacement = match rng.below(choices) {
                    0 => "0".to_string(),
                    1 => "-1".to_string(),
                    2 => (rng.next_u64() % 100).to_string(),
                    3 => rng.next_u64().to_string(),
                    4 => "99999999999999999999999999".to_string(),
                    _ => format!("{}e{}", rng.below(10), rng.below(700)),
                };
                out.splice(a..b, replacement.into_bytes());
            }
        }
    }
    out
}

fn pick_text<'a>(corpus: &[&'a [u8]], rng: &mut Rng) -> &'a [u8] {
    if corpus.is_empty() {
        b"set s;"
    } else {
        corpus[rng.below(corpus.len())]
    }
}

/// A position at or after `at` that does not split a UTF-8 character.
fn boundary(text: &[u8], mut at: usize) -> usize {
    while at < text.len() && (text[at] & 0xC0) == 0x80 {
        at += 1;
    }
    at
}

fn line_starts(text: &[u8]) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        text.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .map(|(i, _)| i + 1),
    );
    starts
}

/// Byte ranges of the tokens of a C-like text: identifiers and numbers,
/// strings, and single punctuation characters (whitespace is skipped).
pub fn tokens(text: &[u8]) -> Vec<(usize, usize)> {
    tokens_of(text)
}

fn tokens_of(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            while i < text.len()
                && (text[i].is_ascii_alphanumeric() || text[i] == b'_' || text[i] == b'.')
            {
                i += 1;
            }
        } else if c == b'"' {
            i += 1;
            while i < text.len() && text[i] != b'"' && text[i] != b'\n' {
                i += 1 + usize::from(text[i] == b'\\');
            }
            i = (i + 1).min(text.len());
        } else {
            i += 1;
            while i < text.len() && (text[i] & 0xC0) == 0x80 {
                i += 1;
            }
        }
        out.push((start, i));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{MAX_TEXT, once};
    use crate::rng::Rng;

    /// No single mutation makes a text over [`MAX_TEXT`] from a short one,
    /// however long its tokens: repeating a run of long tokens thousands of
    /// times used to ask for the whole product before the cut (a 15.6 GB
    /// allocation that aborted a campaign's worker).
    #[test]
    fn one_mutation_of_a_short_text_stays_under_the_limit() {
        let long = "x".repeat(2048);
        let text = format!("{long} {long} {long} {long}");
        let corpus: [&[u8]; 1] = [text.as_bytes()];
        for seed in 0..20_000 {
            let out = once(text.as_bytes(), &corpus, &mut Rng::new(seed));
            assert!(
                out.len() <= MAX_TEXT,
                "seed {seed}: {} bytes from {}",
                out.len(),
                text.len()
            );
        }
    }
}
