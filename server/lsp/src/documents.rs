//! Open documents: the text as a rope (for position conversion) and as a
//! parsed file (for analysis), kept in step by incremental edits.
//!
//! Positions arrive in the negotiated encoding (UTF-8 or UTF-16) and are
//! converted here, at the edge, to byte offsets; nothing below this crate
//! sees an LSP position.

use op2_syntax::{LineIndex, Parse, TextRange};
use ropey::Rope;
use tower_lsp_server::lsp_types::{Position, Range, TextDocumentContentChangeEvent};

/// How the client counts columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PositionEncoding {
    /// UTF-8 bytes (offered by Neovim).
    Utf8,
    /// UTF-16 code units (the LSP default; VS Code).
    Utf16,
}

impl PositionEncoding {
    /// The syntax layer's name for the same unit.
    pub fn line_index_encoding(self) -> op2_syntax::Encoding {
        match self {
            PositionEncoding::Utf8 => op2_syntax::Encoding::Utf8,
            PositionEncoding::Utf16 => op2_syntax::Encoding::Utf16,
        }
    }
}

/// One open document.
#[derive(Clone, Debug)]
pub struct Document {
    /// The version the client gave with the last change.
    pub version: i32,
    rope: Rope,
    parse: Parse,
}

impl Document {
    /// A document opened with `text`.
    pub fn new(text: &str, version: i32) -> Document {
        Document {
            version,
            rope: Rope::from_str(text),
            parse: Parse::new(text),
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        self.parse.text()
    }

    /// The parse of the current text.
    pub fn parse(&self) -> &Parse {
        &self.parse
    }

    /// Byte offset of an LSP position. A column past the end of its line
    /// means the line's end; a line past the last means the end of the text
    /// (as LSP says); a column inside a character rounds down.
    pub fn offset(&self, position: Position, encoding: PositionEncoding) -> usize {
        let rope = &self.rope;
        let line = position.line as usize;
        if line >= rope.len_lines() {
            return rope.len_bytes();
        }
        let line_start_char = rope.line_to_char(line);
        let line_slice = rope.line(line);
        // The line's content, without its line break.
        let mut content_chars = line_slice.len_chars();
        while content_chars > 0 {
            let c = line_slice.char(content_chars - 1);
            if c == '\n' || c == '\r' {
                content_chars -= 1;
            } else {
                break;
            }
        }
        let line_end_char = line_start_char + content_chars;
        let char_index = match encoding {
            PositionEncoding::Utf16 => {
                let start_units = rope.char_to_utf16_cu(line_start_char);
                let end_units = rope.char_to_utf16_cu(line_end_char);
                let units = (start_units + position.character as usize).min(end_units);
                // `utf16_cu_to_char` rounds down inside a surrogate pair.
                rope.utf16_cu_to_char(units)
            }
            PositionEncoding::Utf8 => {
                let start_byte = rope.char_to_byte(line_start_char);
                let end_byte = rope.char_to_byte(line_end_char);
                let byte = (start_byte + position.character as usize).min(end_byte);
                rope.byte_to_char(byte)
            }
        };
        rope.char_to_byte(char_index.min(line_end_char))
    }

    /// The LSP position of a byte offset.
    pub fn position(&self, offset: usize, encoding: PositionEncoding) -> Position {
        let rope = &self.rope;
        let offset = offset.min(rope.len_bytes());
        let char_index = rope.byte_to_char(offset);
        let line = rope.char_to_line(char_index);
        let line_start_char = rope.line_to_char(line);
        let character = match encoding {
            PositionEncoding::Utf16 => {
                rope.char_to_utf16_cu(char_index) - rope.char_to_utf16_cu(line_start_char)
            }
            PositionEncoding::Utf8 => offset - rope.char_to_byte(line_start_char),
        };
        Position {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            character: u32::try_from(character).unwrap_or(u32::MAX),
        }
    }

    /// The LSP range of a byte range.
    pub fn range(&self, range: TextRange, encoding: PositionEncoding) -> Range {
        Range {
            start: self.position(range.start as usize, encoding),
            end: self.position(range.end as usize, encoding),
        }
    }

    /// Applies the changes of one `didChange`, in order, and reparses once.
    /// Each range is converted with the text as left by the change before.
    pub fn apply_changes(
        &mut self,
        changes: Vec<TextDocumentContentChangeEvent>,
        version: i32,
        encoding: PositionEncoding,
    ) {
        let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for change in changes {
            match change.range {
                Some(range) => {
                    let start = self.offset(range.start, encoding);
                    let end = self.offset(range.end, encoding).max(start);
                    let start_char = self.rope.byte_to_char(start);
                    let end_char = self.rope.byte_to_char(end);
                    self.rope.remove(start_char..end_char);
                    self.rope.insert(start_char, &change.text);
                    edits.push((start..end, change.text));
                }
                None => {
                    // The whole text: what came before it no longer counts.
                    edits.clear();
                    self.rope = Rope::from_str(&change.text);
                    self.parse = Parse::new(change.text);
                }
            }
        }
        // Offsets come from the rope, on character boundaries, in range,
        // each against the text as the edit before left it: the edits
        // cannot fail.
        let _ = self.parse.edit_many(
            edits
                .iter()
                .map(|(range, text)| (range.clone(), text.as_str())),
        );
        self.version = version;
    }

    /// A line index of the current text (for converting many ranges).
    pub fn line_index(&self) -> LineIndex {
        LineIndex::new(self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(start: (u32, u32), end: (u32, u32), text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: Some(Range {
                start: Position::new(start.0, start.1),
                end: Position::new(end.0, end.1),
            }),
            range_length: None,
            text: text.into(),
        }
    }

    #[test]
    fn utf16_and_utf8_positions() {
        let document = Document::new("a😀b\r\nx", 1);
        // 😀 is 2 UTF-16 units and 4 bytes.
        assert_eq!(
            document.offset(Position::new(0, 3), PositionEncoding::Utf16),
            5
        );
        assert_eq!(
            document.offset(Position::new(0, 5), PositionEncoding::Utf8),
            5
        );
        // Inside the surrogate pair: round down.
        assert_eq!(
            document.offset(Position::new(0, 2), PositionEncoding::Utf16),
            1
        );
        // Past the end of the line: the line's end, before `\r\n`.
        assert_eq!(
            document.offset(Position::new(0, 99), PositionEncoding::Utf16),
            6
        );
        assert_eq!(
            document.offset(Position::new(1, 0), PositionEncoding::Utf16),
            8
        );
        assert_eq!(
            document.position(5, PositionEncoding::Utf16),
            Position::new(0, 3)
        );
        assert_eq!(
            document.position(9, PositionEncoding::Utf8),
            Position::new(1, 1)
        );
    }

    #[test]
    fn changes_apply_in_order_to_text_and_tree() {
        let mut document = Document::new("set a;\n", 1);
        document.apply_changes(
            vec![
                change((0, 4), (0, 5), "cells"),
                change((1, 0), (1, 0), "set 😀;"),
            ],
            2,
            PositionEncoding::Utf16,
        );
        assert_eq!(document.text(), "set cells;\nset 😀;");
        assert_eq!(document.version, 2);
        let fresh = Parse::new(document.text());
        assert_eq!(
            document.parse().tree().root_node().to_sexp(),
            fresh.tree().root_node().to_sexp()
        );
    }
}
