//! The client's side of a document: its text, LSP positions computed
//! independently of the server's rope (lines end at `\n`, `\r\n` or `\r`;
//! columns in UTF-8 bytes or UTF-16 units), and random edits like those of a
//! person typing, with non-BMP characters and both kinds of line break.

use std::ops::Range;

use serde_json::{Value, json};

use super::Rng;

/// How columns are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-8 bytes.
    Utf8,
    /// UTF-16 code units.
    Utf16,
}

impl Encoding {
    /// The name LSP gives it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf16 => "utf-16",
        }
    }

    fn width(self, c: char) -> usize {
        match self {
            Encoding::Utf8 => c.len_utf8(),
            Encoding::Utf16 => c.len_utf16(),
        }
    }
}

/// Byte offsets at which lines start.
pub fn line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = vec![0];
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => starts.push(i + 1),
            b'\r' => {
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                starts.push(i + 1);
            }
            _ => {}
        }
        i += 1;
    }
    starts
}

/// Line and column of byte `offset` (a character boundary, not between the
/// `\r` and `\n` of one line break).
pub fn position(text: &str, offset: usize, encoding: Encoding) -> (u32, u32) {
    let starts = line_starts(text);
    let line = starts.partition_point(|&start| start <= offset) - 1;
    let column: usize = text[starts[line]..offset]
        .chars()
        .map(|c| encoding.width(c))
        .sum();
    (
        u32::try_from(line).expect("few lines"),
        u32::try_from(column).expect("short lines"),
    )
}

/// Whether `offset` is a place an LSP position can name: a character
/// boundary that does not split a `\r\n`.
pub fn is_position(text: &str, offset: usize) -> bool {
    text.is_char_boundary(offset)
        && !(offset > 0
            && text.as_bytes()[offset - 1] == b'\r'
            && text.as_bytes().get(offset) == Some(&b'\n'))
}

/// The nearest place at or after `offset` that an LSP position can name.
pub fn next_position(text: &str, mut offset: usize) -> usize {
    while offset < text.len() && !is_position(text, offset) {
        offset += 1;
    }
    offset.min(text.len())
}

/// The place before `offset` (one character, or a whole `\r\n`, back).
pub fn previous_position(text: &str, offset: usize) -> usize {
    let mut at = offset.saturating_sub(1);
    while at > 0 && !is_position(text, at) {
        at -= 1;
    }
    at
}

/// An LSP range as JSON.
pub fn range(text: &str, range: Range<usize>, encoding: Encoding) -> Value {
    let (start_line, start_character) = position(text, range.start, encoding);
    let (end_line, end_character) = position(text, range.end, encoding);
    json!({
        "start": {"line": start_line, "character": start_character},
        "end": {"line": end_line, "character": end_character},
    })
}

/// The client's copy of a document.
#[derive(Clone, Debug)]
pub struct Doc {
    /// The text.
    pub text: String,
    /// The negotiated encoding.
    pub encoding: Encoding,
    /// The version of the last change.
    pub version: i64,
}

impl Doc {
    /// A document holding `text` at version 1.
    pub fn new(text: &str, encoding: Encoding) -> Doc {
        Doc {
            text: text.to_owned(),
            encoding,
            version: 1,
        }
    }

    /// Replaces the bytes of `range` by `new_text` and returns the LSP
    /// change event, with positions in the text as it was before.
    pub fn change(&mut self, range: Range<usize>, new_text: &str) -> Value {
        assert!(
            is_position(&self.text, range.start) && is_position(&self.text, range.end),
            "edit at {range:?} splits a character or a line break"
        );
        let lsp_range = self::range(&self.text, range.clone(), self.encoding);
        self.text.replace_range(range, new_text);
        json!({"range": lsp_range, "text": new_text})
    }
}

/// Pieces a person might type: identifiers, keywords, punctuation, accented
/// and non-BMP characters, and both line breaks. No `/` or `"`, so that a
/// stray comment or string does not hide the rest of the text from the
/// diagnostics the tests compare.
const PIECES: &[&str] = &[
    "a",
    "b",
    "x",
    "q",
    "n",
    "_",
    "1",
    "0",
    " ",
    " ",
    " ",
    ";",
    "=",
    "+",
    "*",
    "-",
    "[",
    "]",
    "(",
    ")",
    "{",
    "}",
    ",",
    ".",
    "é",
    "ü",
    "😀",
    "𝄞",
    "\n",
    "\n",
    "\r\n",
    "set ",
    "dat ",
    "double ",
    "par_loop ",
    "kernel ",
    "over ",
    " READ",
    " INC",
    "p_q",
    "cells",
    "😀𝄞é",
];

/// A random piece of text to type.
pub fn piece(rng: &mut Rng) -> &'static str {
    PIECES[rng.below(PIECES.len())]
}

/// Someone typing: mostly characters at a cursor, with backspaces,
/// deletions of a few characters, jumps and replacements of a selection.
#[derive(Clone, Debug)]
pub struct Typist {
    cursor: usize,
}

impl Typist {
    /// A typist whose cursor is at byte `cursor`.
    pub fn new(cursor: usize) -> Typist {
        Typist { cursor }
    }

    /// One edit to `doc`, applied to it; returns the change event.
    pub fn edit(&mut self, doc: &mut Doc, rng: &mut Rng) -> Value {
        let text = &doc.text;
        self.cursor = next_position(text, self.cursor.min(text.len()));
        let roll = rng.below(100);
        if roll < 8 {
            // Jump somewhere else.
            self.cursor = next_position(text, rng.below(text.len() + 1));
        }
        let (range, new_text) = match roll {
            0..=59 => (self.cursor..self.cursor, piece(rng)),
            60..=79 if self.cursor > 0 => (previous_position(text, self.cursor)..self.cursor, ""),
            80..=91 => {
                let mut end = self.cursor;
                for _ in 0..=rng.below(8) {
                    end = next_position(text, (end + 1).min(text.len()));
                }
                (self.cursor..end, "")
            }
            _ => {
                let mut end = self.cursor;
                for _ in 0..rng.below(6) {
                    end = next_position(text, (end + 1).min(text.len()));
                }
                (self.cursor..end, piece(rng))
            }
        };
        self.cursor = range.start + new_text.len();
        doc.change(range, new_text)
    }
}

/// Every piece [`piece`] chooses from.
pub fn pieces() -> &'static [&'static str] {
    PIECES
}

/// The place `count` characters (a `\r\n` counting as one) after `offset`,
/// or the end of the text.
pub fn advance(text: &str, mut offset: usize, count: usize) -> usize {
    for _ in 0..count {
        if offset >= text.len() {
            break;
        }
        offset = next_position(text, offset + 1);
    }
    offset
}

/// The byte offset of an LSP position in `text` (the position must name a
/// place in the text).
pub fn offset(text: &str, line: u32, character: u32, encoding: Encoding) -> usize {
    let starts = line_starts(text);
    let start = *starts
        .get(line as usize)
        .unwrap_or_else(|| panic!("line {line} is past the end"));
    let mut units = 0;
    for (i, c) in text[start..].char_indices() {
        if units >= character as usize || c == '\n' || c == '\r' {
            return start + i;
        }
        units += encoding.width(c);
    }
    text.len()
}

/// Applies LSP text edits (non-overlapping, ranges in the original text).
pub fn apply_edits(text: &str, edits: &[Value], encoding: Encoding) -> String {
    let at = |p: &Value| {
        let line = p["line"]
            .as_u64()
            .and_then(|l| u32::try_from(l).ok())
            .expect("a line");
        let character = p["character"]
            .as_u64()
            .and_then(|c| u32::try_from(c).ok())
            .expect("a character");
        offset(text, line, character, encoding)
    };
    let mut edits: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            (
                at(&e["range"]["start"]),
                at(&e["range"]["end"]),
                e["newText"].as_str().expect("newText"),
            )
        })
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_owned();
    for (start, end, new_text) in edits {
        out.replace_range(start..end, new_text);
    }
    out
}
