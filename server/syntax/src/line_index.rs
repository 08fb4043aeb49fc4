//! Conversion between byte offsets and (line, column) positions.
//!
//! Lines end at `\n`, `\r\n` or `\r`, the three breaks LSP recognises. Columns
//! are counted in one of three units: UTF-8 bytes (what tree-sitter and Neovim
//! use), UTF-16 code units (VS Code, the LSP default) or Unicode scalar values
//! (what people count, used in the CLI's JSON output).

use crate::text::to_u32;

/// The unit a column is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Bytes of UTF-8.
    Utf8,
    /// UTF-16 code units: a character outside the BMP counts two.
    Utf16,
    /// Unicode scalar values: every character counts one.
    Utf32,
}

/// A zero-based line and a zero-based column in some [`Encoding`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineCol {
    /// Line, from 0.
    pub line: u32,
    /// Column, from 0, in the encoding the position was asked for.
    pub col: u32,
}

/// A character of more than one UTF-8 byte, by its byte columns in its line,
/// with how many more bytes than UTF-16 units and than characters the
/// line has before it (so a column is found by a binary search, not by
/// walking the line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct WideChar {
    start: u32,
    end: u32,
    excess16: u32,
    excess32: u32,
}

impl WideChar {
    /// Bytes more than units in `encoding` before this character.
    fn excess_before(self, encoding: Encoding) -> u32 {
        match encoding {
            Encoding::Utf8 => 0,
            Encoding::Utf16 => self.excess16,
            Encoding::Utf32 => self.excess32,
        }
    }

    /// Bytes more than units in `encoding` up to this character's end.
    fn excess_after(self, encoding: Encoding) -> u32 {
        self.excess_before(encoding) + (self.end - self.start) - self.len_in(encoding)
    }

    fn len_in(self, encoding: Encoding) -> u32 {
        match encoding {
            Encoding::Utf8 => self.end - self.start,
            // Four UTF-8 bytes means outside the BMP: a surrogate pair.
            Encoding::Utf16 => {
                if self.end - self.start == 4 {
                    2
                } else {
                    1
                }
            }
            Encoding::Utf32 => 1,
        }
    }
}

/// Line starts and the multi-byte characters of each line of one text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    /// Byte offset at which each line starts; the first is 0.
    line_starts: Vec<u32>,
    /// Byte offset at which each line's content ends (before its break).
    line_ends: Vec<u32>,
    /// For each line with non-ASCII text, its multi-byte characters in order.
    wide: Vec<(u32, Vec<WideChar>)>,
    len: u32,
}

impl LineIndex {
    /// Indexes `text`.
    pub fn new(text: &str) -> LineIndex {
        let bytes = text.as_bytes();
        let mut line_starts = vec![0];
        let mut line_ends = Vec::new();
        let mut wide: Vec<(u32, Vec<WideChar>)> = Vec::new();
        let mut line = 0u32;
        let mut line_start = 0usize;
        let mut i = 0usize;
        while i < bytes.len() {
            let byte = bytes[i];
            if byte == b'\n' || byte == b'\r' {
                line_ends.push(to_u32(i));
                let next = if byte == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                    i + 2
                } else {
                    i + 1
                };
                line_starts.push(to_u32(next));
                line += 1;
                line_start = next;
                i = next;
            } else if byte < 0x80 {
                i += 1;
            } else {
                let width = utf8_width(byte);
                let start = to_u32(i - line_start);
                let (excess16, excess32) = match wide.last() {
                    Some((last, chars)) if *last == line => chars.last().map_or((0, 0), |c| {
                        (
                            c.excess_after(Encoding::Utf16),
                            c.excess_after(Encoding::Utf32),
                        )
                    }),
                    _ => (0, 0),
                };
                let character = WideChar {
                    start,
                    end: start + width,
                    excess16,
                    excess32,
                };
                match wide.last_mut() {
                    Some((last, chars)) if *last == line => chars.push(character),
                    _ => wide.push((line, vec![character])),
                }
                i += width as usize;
            }
        }
        line_ends.push(to_u32(bytes.len()));
        LineIndex {
            line_starts,
            line_ends,
            wide,
            len: to_u32(bytes.len()),
        }
    }

    /// Number of lines (a text with no break has one).
    pub fn line_count(&self) -> u32 {
        to_u32(self.line_starts.len())
    }

    /// Length of the indexed text in bytes.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True when the indexed text is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Byte offset at which `line` starts, or `None` past the last line.
    pub fn line_start(&self, line: u32) -> Option<u32> {
        self.line_starts.get(line as usize).copied()
    }

    /// Byte offset at which `line`'s content ends, before its line break.
    pub fn line_end(&self, line: u32) -> Option<u32> {
        self.line_ends.get(line as usize).copied()
    }

    /// The position of a byte offset, with the column in `encoding`. An
    /// offset past the end is clamped to the end; an offset inside a
    /// character counts as that character's start.
    pub fn line_col(&self, offset: u32, encoding: Encoding) -> LineCol {
        let offset = offset.min(self.len);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        };
        let line = to_u32(line);
        let byte_col = offset - self.line_starts[line as usize];
        LineCol {
            line,
            col: self.byte_col_to(line, byte_col, encoding),
        }
    }

    /// The byte offset of a position whose column is counted in `encoding`.
    /// Following LSP, a column past the end of its line means the line's end,
    /// and a line past the last means the end of the text. A column inside a
    /// character (between the halves of a surrogate pair) rounds down.
    pub fn offset(&self, position: LineCol, encoding: Encoding) -> u32 {
        let Some(start) = self.line_start(position.line) else {
            return self.len;
        };
        let end = self.line_ends[position.line as usize];
        let byte_col = self.col_to_byte(position.line, position.col, encoding);
        start.saturating_add(byte_col).min(end)
    }

    fn wide_chars(&self, line: u32) -> &[WideChar] {
        match self.wide.binary_search_by_key(&line, |(l, _)| *l) {
            Ok(i) => &self.wide[i].1,
            Err(_) => &[],
        }
    }

    fn byte_col_to(&self, line: u32, byte_col: u32, encoding: Encoding) -> u32 {
        if encoding == Encoding::Utf8 {
            return byte_col;
        }
        let chars = self.wide_chars(line);
        // The characters that end at or before the column, then the one
        // the column may be inside.
        let before = chars.partition_point(|c| c.end <= byte_col);
        let excess = before
            .checked_sub(1)
            .map_or(0, |i| chars[i].excess_after(encoding));
        let mut col = byte_col - excess;
        if let Some(character) = chars.get(before)
            && character.start < byte_col
        {
            // Inside a character: count from its start.
            col -= byte_col - character.start;
        }
        col
    }

    fn col_to_byte(&self, line: u32, col: u32, encoding: Encoding) -> u32 {
        if encoding == Encoding::Utf8 {
            return col;
        }
        let chars = self.wide_chars(line);
        // The characters that end at or before the column, in units.
        let before = chars
            .partition_point(|c| c.start - c.excess_before(encoding) + c.len_in(encoding) <= col);
        let excess = before
            .checked_sub(1)
            .map_or(0, |i| chars[i].excess_after(encoding));
        match chars.get(before) {
            // Inside the next character: round down to its start.
            Some(character) if col >= character.start - character.excess_before(encoding) => {
                character.start
            }
            _ => col.saturating_add(excess),
        }
    }
}

fn utf8_width(first_byte: u8) -> u32 {
    match first_byte {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        let index = LineIndex::new(text);
        for (offset, _) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            let offset = to_u32(offset);
            for encoding in [Encoding::Utf8, Encoding::Utf16, Encoding::Utf32] {
                let position = index.line_col(offset, encoding);
                let back = index.offset(position, encoding);
                // `\r\n` is one break: the offset between its halves maps to
                // the end of the line.
                let between_cr_lf = offset > 0
                    && text.as_bytes()[offset as usize - 1] == b'\r'
                    && text.as_bytes().get(offset as usize) == Some(&b'\n');
                if !between_cr_lf {
                    assert_eq!(
                        back, offset,
                        "{text:?} at {offset} in {encoding:?}: {position:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn breaks_of_every_kind() {
        let index = LineIndex::new("a\nb\r\nc\rd");
        assert_eq!(index.line_count(), 4);
        assert_eq!(
            index.line_col(2, Encoding::Utf8),
            LineCol { line: 1, col: 0 }
        );
        assert_eq!(
            index.line_col(5, Encoding::Utf8),
            LineCol { line: 2, col: 0 }
        );
        assert_eq!(
            index.line_col(7, Encoding::Utf8),
            LineCol { line: 3, col: 0 }
        );
        assert_eq!(index.line_end(1), Some(3));
    }

    #[test]
    fn columns_in_each_encoding() {
        // 'é' is 2 bytes, 1 UTF-16 unit; '😀' is 4 bytes, 2 units, 1 scalar.
        let text = "xé😀y";
        let index = LineIndex::new(text);
        let y = to_u32(text.find('y').unwrap());
        assert_eq!(index.line_col(y, Encoding::Utf8).col, 7);
        assert_eq!(index.line_col(y, Encoding::Utf16).col, 4);
        assert_eq!(index.line_col(y, Encoding::Utf32).col, 3);
        assert_eq!(
            index.offset(LineCol { line: 0, col: 4 }, Encoding::Utf16),
            y
        );
        assert_eq!(
            index.offset(LineCol { line: 0, col: 3 }, Encoding::Utf32),
            y
        );
        // Between the halves of the surrogate pair: round down.
        assert_eq!(
            index.offset(LineCol { line: 0, col: 3 }, Encoding::Utf16),
            3
        );
    }

    #[test]
    fn past_the_end_clamps() {
        let index = LineIndex::new("ab\ncd");
        assert_eq!(
            index.offset(LineCol { line: 0, col: 99 }, Encoding::Utf16),
            2
        );
        assert_eq!(
            index.offset(LineCol { line: 9, col: 0 }, Encoding::Utf16),
            5
        );
        assert_eq!(
            index.line_col(99, Encoding::Utf8),
            LineCol { line: 1, col: 2 }
        );
    }

    #[test]
    fn round_trips() {
        round_trip("");
        round_trip("plain\nascii\r\nlines\r");
        round_trip("é😀\n\u{10FFFF}a\r\n日本語\rz𝄞");
        round_trip("\r\n\r\n\n\r");
    }

    #[test]
    fn columns_match_a_walk_of_the_line() {
        let text = "aé😀b\u{10FFFF}日x本\r\nz😀😀é\nplain";
        let index = LineIndex::new(text);
        let units = |c: char, encoding| match encoding {
            Encoding::Utf8 => to_u32(c.len_utf8()),
            Encoding::Utf16 => to_u32(c.len_utf16()),
            Encoding::Utf32 => 1,
        };
        for line in 0..index.line_count() {
            let start = index.line_start(line).unwrap() as usize;
            let end = index.line_end(line).unwrap() as usize;
            for encoding in [Encoding::Utf16, Encoding::Utf32] {
                // Offset to column: the units of the characters before it.
                for offset in start..=end {
                    let mut col = 0;
                    for (i, c) in text[start..end].char_indices() {
                        if start + i + c.len_utf8() <= offset {
                            col += units(c, encoding);
                        }
                    }
                    let found = index.line_col(to_u32(offset), encoding);
                    assert_eq!(found, LineCol { line, col }, "{offset} {encoding:?}");
                }
                // Column to offset: the start of the character holding it.
                for col in 0..40 {
                    let mut counted = 0;
                    let mut byte = end;
                    for (i, c) in text[start..end].char_indices() {
                        if counted + units(c, encoding) > col {
                            byte = start + i;
                            break;
                        }
                        counted += units(c, encoding);
                    }
                    let found = index.offset(LineCol { line, col }, encoding);
                    assert_eq!(found as usize, byte, "line {line} col {col} {encoding:?}");
                }
            }
        }
    }
}
