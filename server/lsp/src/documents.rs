//! Open documents: the text as a rope (for position conversion) and as a
//! parsed file (for analysis), kept in step by incremental edits.
//!
//! The server keeps an [`OpenDocument`] per open file: each `didChange`
//! edits its rope at once (cheap, under the server's lock), and the parse
//! catches up later, off the lock, as a [`ParseJob`] whose result is a
//! [`Document`] (rope and tree of one version, consistent).
//!
//! Positions arrive in the negotiated encoding (UTF-8 or UTF-16) and are
//! converted here, at the edge, to byte offsets; nothing below this crate
//! sees an LSP position.

use std::ops::Range as Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use op2_syntax::{LineIndex, Parse, ParseLimit, TextRange};
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
    /// Shared, so that a copy of the document (a parse job's base, taken
    /// under the server's lock; a request's snapshot) copies no text.
    parse: Arc<Parse>,
}

impl Document {
    /// A document opened with `text`.
    pub fn new(text: &str, version: i32) -> Document {
        Document {
            version,
            rope: Rope::from_str(text),
            parse: Arc::new(Parse::new(text)),
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
        offset_in(&self.rope, position, encoding)
    }

    /// The LSP position of a byte offset.
    pub fn position(&self, offset: usize, encoding: PositionEncoding) -> Position {
        position_in(&self.rope, offset, encoding)
    }

    /// The LSP range of a byte range.
    pub fn range(&self, range: TextRange, encoding: PositionEncoding) -> Range {
        Range {
            start: self.position(range.start as usize, encoding),
            end: self.position(range.end as usize, encoding),
        }
    }

    /// A line index of the current text (for converting many ranges).
    pub fn line_index(&self) -> LineIndex {
        LineIndex::new(self.text())
    }
}

/// Byte offset of an LSP position in `rope` (see [`Document::offset`]).
fn offset_in(rope: &Rope, position: Position, encoding: PositionEncoding) -> usize {
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

/// The LSP position of a byte offset in `rope` (see [`Document::position`]).
fn position_in(rope: &Rope, offset: usize, encoding: PositionEncoding) -> Position {
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

/// Applies the changes of one `didChange` to `rope`, in order, each range
/// converted with the text as left by the change before. Returns the last
/// whole text sent (what came before it no longer counts) and the edits
/// after it, as byte ranges.
fn edit_rope(
    rope: &mut Rope,
    changes: Vec<TextDocumentContentChangeEvent>,
    encoding: PositionEncoding,
) -> (Option<String>, Vec<(Bytes<usize>, String)>) {
    let mut whole = None;
    let mut edits = Vec::new();
    for change in changes {
        match change.range {
            Some(range) => {
                let start = offset_in(rope, range.start, encoding);
                let end = offset_in(rope, range.end, encoding).max(start);
                let start_char = rope.byte_to_char(start);
                let end_char = rope.byte_to_char(end);
                rope.remove(start_char..end_char);
                rope.insert(start_char, &change.text);
                edits.push((start..end, change.text));
            }
            None => {
                edits.clear();
                *rope = Rope::from_str(&change.text);
                whole = Some(change.text);
            }
        }
    }
    (whole, edits)
}

/// An open document as the server holds it: the current text (a rope,
/// edited at once by each `didChange`) and the latest parse, which may be
/// of an older text. A parse runs as a [`ParseJob`] taken out with
/// [`OpenDocument::parse_job`] and put back with [`OpenDocument::install`],
/// so that no lock is held while it runs.
#[derive(Debug)]
pub struct OpenDocument {
    /// Tells this opening of the document from others (a job of a document
    /// closed and opened again is not put back into the new one).
    id: u64,
    /// The client's version of the current text.
    version: i32,
    rope: Rope,
    /// What stops a parse (the server's is [`ParseLimit::Time`]).
    limit: ParseLimit,
    /// How many changes (`didOpen` and each `didChange`) made the current
    /// text, shared with the running parse jobs (a job of an older text is
    /// superseded: see [`ParseJob::superseded`]), or [`CLOSED`] once the
    /// document is closed.
    latest: Arc<AtomicU64>,
    /// The latest parse put back, and how many changes its text has.
    parsed: Option<Document>,
    parsed_changes: u64,
    /// The change that replaced the whole text, when the parse has not
    /// caught up with it: the next parse starts afresh.
    whole_at: Option<u64>,
    /// The edits after `parsed` (and after `whole_at`), each with the number
    /// of its change, each range against the text left by the one before.
    pending: Vec<(u64, Bytes<usize>, String)>,
    /// The change at which the pending edits were last dropped, past
    /// [`MOST_PENDING`], while `parsed` was a base: the edits from
    /// `parsed`'s text to the current one are then not kept, and a job
    /// finds them as one edit, off the lock ([`Catchup::Folded`]).
    /// `pending` holds the edits of the changes after it, which lead from
    /// a parse put back of this change or a later one.
    folded_at: Option<u64>,
}

/// Byte-range edits, each against the text the one before left.
type Edits = Vec<(Bytes<usize>, String)>;

/// Past this many edits waiting for a parse, they are folded into one edit
/// (the bytes between the common prefix and the common suffix of the parsed
/// text and the current one, found in one pass by the job, off the lock of
/// the document store: [`Catchup::Folded`]): each replayed edit moves
/// the text's bytes (and counts its line breaks), so replaying every edit
/// since the last parse that finished, at every keystroke of a burst whose
/// parses are all cancelled, would cost the burst's length squared times
/// the text's. With this bound a job's replay costs at most this many moves
/// of the text, and the next parse is still an incremental one from the
/// parse put back, not a fresh parse of the whole text.
const MOST_PENDING: usize = 64;

impl Clone for OpenDocument {
    /// A copy with a signal of its own: its edits supersede none of the
    /// original's jobs.
    fn clone(&self) -> OpenDocument {
        OpenDocument {
            // Its own id too: a parse of the copy is never put back into
            // the original.
            id: next_id(),
            version: self.version,
            rope: self.rope.clone(),
            limit: self.limit,
            latest: Arc::new(AtomicU64::new(self.changes())),
            parsed: self.parsed.clone(),
            parsed_changes: self.parsed_changes,
            whole_at: self.whole_at,
            pending: self.pending.clone(),
            folded_at: self.folded_at,
        }
    }
}

/// The edits that turn `old` into `new`: none when they are equal (a
/// fold that leaves nothing to replay reparses nothing), otherwise one,
/// [`difference`].
fn folded(old: &str, new: &str) -> Edits {
    let (range, text) = difference(old, new);
    if range.is_empty() && text.is_empty() {
        Vec::new()
    } else {
        vec![(range, text)]
    }
}

/// One edit that turns `old` into `new`: what lies between their common
/// prefix and their common suffix, both on character boundaries.
fn difference(old: &str, new: &str) -> (Bytes<usize>, String) {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let (mut start, mut suffix) = crate::slices::common_ends(a, b);
    while !(old.is_char_boundary(start) && new.is_char_boundary(start)) {
        start -= 1;
    }
    while !(old.is_char_boundary(a.len() - suffix) && new.is_char_boundary(b.len() - suffix)) {
        suffix -= 1;
    }
    (
        start..a.len() - suffix,
        new[start..b.len() - suffix].to_owned(),
    )
}

/// A number no other opening or copy of a document has had.
fn next_id() -> u64 {
    static OPENED: AtomicU64 = AtomicU64::new(0);
    OPENED.fetch_add(1, Ordering::Relaxed)
}

/// What [`OpenDocument::latest`] holds once the document is closed.
const CLOSED: u64 = u64::MAX;

/// What [`OpenDocument::parse_job`] gives.
#[derive(Debug)]
pub enum Snapshot {
    /// The parse of the current text.
    Parsed(Document),
    /// The current text is not parsed yet: this job parses it.
    Job(Box<ParseJob>),
}

/// What leads from a [`ParseJob`]'s base to its text.
#[derive(Debug)]
enum Catchup {
    /// These edits, each against the text the one before left.
    Edits(Edits),
    /// The edits were folded (past [`MOST_PENDING`]): the job finds the one
    /// edit between the two texts itself ([`folded`]), linear in the text,
    /// so that no lock is held for it.
    Folded,
}

/// A parse to run without a lock: of the text of an [`OpenDocument`] at one
/// moment, incremental from its latest parse when it can be.
#[derive(Debug)]
pub struct ParseJob {
    /// The latest parse, with what leads from its text to this one;
    /// `None`: parse the text afresh.
    base: Option<(Document, Catchup)>,
    rope: Rope,
    /// The limit of a parse afresh (a base keeps its own).
    limit: ParseLimit,
    version: i32,
    /// The [`OpenDocument`]'s id, and how many changes made the text
    /// parsed.
    id: u64,
    to: u64,
    /// The document's latest change (see [`ParseJob::superseded`]).
    latest: Arc<AtomicU64>,
}

/// The result of a [`ParseJob`].
#[derive(Debug)]
pub struct Parsed {
    /// The document as parsed.
    pub document: Document,
    id: u64,
    to: u64,
}

impl OpenDocument {
    /// A document opened with `text` (not parsed yet: see
    /// [`OpenDocument::parse_job`]).
    pub fn new(text: &str, version: i32) -> OpenDocument {
        OpenDocument::with_limit(text, version, ParseLimit::Time)
    }

    /// A document opened with `text` whose parses stop at `limit` (tests
    /// choose [`ParseLimit::Checks`] to give up at a known place).
    pub fn with_limit(text: &str, version: i32, limit: ParseLimit) -> OpenDocument {
        OpenDocument {
            id: next_id(),
            version,
            rope: Rope::from_str(text),
            limit,
            latest: Arc::new(AtomicU64::new(1)),
            parsed: None,
            parsed_changes: 0,
            whole_at: Some(1),
            pending: Vec::new(),
            folded_at: None,
        }
    }

    /// The client's version of the current text.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// How many changes made the current text.
    fn changes(&self) -> u64 {
        self.latest.load(Ordering::SeqCst)
    }

    /// The version of the latest parse, if any.
    pub fn parsed_version(&self) -> Option<i32> {
        self.parsed.as_ref().map(|d| d.version)
    }

    /// The LSP position of a byte offset in the current text.
    pub fn position(&self, offset: usize, encoding: PositionEncoding) -> Position {
        position_in(&self.rope, offset, encoding)
    }

    /// The current text.
    pub fn text(&self) -> String {
        self.rope.to_string()
    }

    /// The length of the current text in bytes.
    pub fn len_bytes(&self) -> usize {
        self.rope.len_bytes()
    }

    /// The current text as a rope (shared, not copied).
    pub fn rope(&self) -> Rope {
        self.rope.clone()
    }

    /// Whether the current text starts with `prefix`.
    pub fn starts_with(&self, prefix: &str) -> bool {
        let mut bytes = self.rope.bytes();
        prefix.bytes().all(|b| bytes.next() == Some(b))
    }

    /// Applies the changes of one `didChange` to the text, in order (each
    /// range converted with the text as left by the change before), without
    /// parsing.
    pub fn apply_changes(
        &mut self,
        changes: Vec<TextDocumentContentChangeEvent>,
        version: i32,
        encoding: PositionEncoding,
    ) {
        let change = self.changes() + 1;
        self.latest.store(change, Ordering::SeqCst);
        let (whole, edits) = edit_rope(&mut self.rope, changes, encoding);
        if whole.is_some() {
            self.pending.clear();
            self.folded_at = None;
            self.whole_at = Some(change);
        }
        self.pending
            .extend(edits.into_iter().map(|(range, text)| (change, range, text)));
        if self.pending.len() > MOST_PENDING {
            self.compact(change);
        }
        self.version = version;
    }

    /// Folds the pending edits: drops them, and the next jobs find the one
    /// edit from the parse put back to their text ([`Catchup::Folded`]),
    /// when that parse is a base for the next (it did not give up, and no
    /// whole text came after it); otherwise the next parse starts afresh.
    /// Constant time: this runs under the lock of the document store.
    fn compact(&mut self, change: u64) {
        self.pending.clear();
        match (&self.parsed, self.whole_at) {
            (Some(document), None) if document.parse.stopped_at().is_none() => {
                self.folded_at = Some(change);
            }
            _ => {
                self.folded_at = None;
                self.whole_at = Some(change);
            }
        }
    }

    /// The parse of the current text when there is one, or the job that
    /// makes it.
    pub fn parse_job(&self) -> Snapshot {
        let changes = self.changes();
        match &self.parsed {
            Some(document) if self.parsed_changes == changes => Snapshot::Parsed(document.clone()),
            parsed => {
                let base = match (parsed, self.whole_at) {
                    // A parse that gave up is no base: its tree holds
                    // blanked text, and the edited text is parsed afresh
                    // (`Parse::edit_many`), so replaying the edits on it
                    // would be work for nothing.
                    (Some(document), None) if document.parse.stopped_at().is_none() => {
                        let catchup = match self.folded_at {
                            Some(_) => Catchup::Folded,
                            None => Catchup::Edits(
                                self.pending
                                    .iter()
                                    .map(|(_, range, text)| (range.clone(), text.clone()))
                                    .collect(),
                            ),
                        };
                        Some((document.clone(), catchup))
                    }
                    _ => None,
                };
                Snapshot::Job(Box::new(ParseJob {
                    base,
                    rope: self.rope.clone(),
                    limit: self.limit,
                    version: self.version,
                    id: self.id,
                    to: changes,
                    latest: Arc::clone(&self.latest),
                }))
            }
        }
    }

    /// Puts a finished parse back, unless the parse put back last is of
    /// the same text or a newer one (this one is then dropped), or its job
    /// was taken from an earlier opening of the document. A finished parse
    /// of a text that went by (a request's, which is not cancelled) is kept
    /// all the same: the next parse starts from it. Returns whether it is
    /// the parse of the current text.
    pub fn install(&mut self, parsed: Parsed) -> bool {
        if parsed.id != self.id || parsed.to <= self.parsed_changes {
            return false;
        }
        self.parsed = Some(parsed.document);
        self.parsed_changes = parsed.to;
        self.pending.retain(|(change, _, _)| *change > parsed.to);
        if self.whole_at.is_some_and(|at| at <= parsed.to) {
            self.whole_at = None;
        }
        // A parse of the change the edits were folded at, or of a later one:
        // the edits kept since lead from its text. One of an earlier
        // change: the edits from it were dropped, and jobs still fold.
        if self.folded_at.is_some_and(|at| at <= parsed.to) {
            self.folded_at = None;
        }
        self.parsed_changes == self.changes()
    }

    /// The document is closed: its running parse jobs are superseded.
    pub fn close(self) {
        self.latest.store(CLOSED, Ordering::SeqCst);
    }

    /// Parses the current text now, here, and puts the parse back (what the
    /// server's worker does off the lock; for benchmarks and tests).
    pub fn parsed(&mut self) -> Document {
        match self.parse_job() {
            Snapshot::Parsed(document) => document,
            Snapshot::Job(job) => {
                let parsed = job.run(&|| false).expect("a parse nobody cancels finishes");
                let document = parsed.document.clone();
                self.install(parsed);
                document
            }
        }
    }
}

impl ParseJob {
    /// The length in bytes of the text this job parses.
    pub fn text_len(&self) -> usize {
        self.rope.len_bytes()
    }

    /// Whether the text moved on since this job was taken (a `didChange`)
    /// or the document was closed: a worker's parse of a text that went
    /// by is then cancelled (see [`ParseJob::run`]).
    pub fn superseded(&self) -> impl Fn() -> bool + Send + 'static {
        let (latest, to) = (Arc::clone(&self.latest), self.to);
        move || latest.load(Ordering::SeqCst) != to
    }

    /// Parses (the parse's own deadline bounds the time: E002), unless
    /// `cancelled()` says so first: it is asked about every hundred parse
    /// actions, and a cancelled parse stops there and gives `None` (no tree
    /// to analyse, publish or start the next parse from).
    pub fn run(self, cancelled: &(dyn Fn() -> bool + Sync)) -> Option<Parsed> {
        let parse = match self.base {
            Some((document, catchup)) => {
                let edits = match catchup {
                    Catchup::Edits(edits) => edits,
                    Catchup::Folded => folded(document.text(), &self.rope.to_string()),
                };
                // Offsets come from the rope, on character boundaries, in
                // range, each against the text as the edit before left it:
                // the edits cannot fail.
                let edits = edits
                    .iter()
                    .map(|(range, text)| (range.clone(), text.as_str()));
                // The open document still holds the base: its text is
                // copied here, off the server's lock, and edited in place.
                Arc::unwrap_or_clone(document.parse)
                    .edit_many_cancellable(edits, cancelled)
                    .ok()?
                    .0
            }
            None => Parse::new_cancellable(self.rope.to_string(), self.limit, cancelled).ok()?,
        };
        debug_assert_eq!(parse.text().len(), self.rope.len_bytes());
        Some(Parsed {
            document: Document {
                version: self.version,
                rope: self.rope,
                parse: Arc::new(parse),
            },
            id: self.id,
            to: self.to,
        })
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
        let mut open = OpenDocument::new("set a;\n", 1);
        open.parsed();
        open.apply_changes(
            vec![
                change((0, 4), (0, 5), "cells"),
                change((1, 0), (1, 0), "set 😀;"),
            ],
            2,
            PositionEncoding::Utf16,
        );
        let Snapshot::Job(job) = open.parse_job() else {
            panic!("version 2 is not parsed yet")
        };
        assert!(job.base.is_some(), "an incremental parse of two edits");
        let document = open.parsed();
        assert_eq!(document.version, 2);
        assert_fresh(&document, "set cells;\nset 😀;");
    }

    fn whole(text: &str) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: None,
            range_length: None,
            text: text.into(),
        }
    }

    /// The tree of `document` is the tree of a fresh parse of its text.
    fn assert_fresh(document: &Document, text: &str) {
        assert_eq!(document.text(), text);
        assert_eq!(
            document.parse().tree().root_node().to_sexp(),
            Parse::new(text).tree().root_node().to_sexp()
        );
    }

    #[test]
    fn an_open_document_is_parsed_off_its_edits_and_catches_up() {
        let encoding = PositionEncoding::Utf16;
        let mut open = OpenDocument::new("set a;\n", 1);
        assert_eq!(open.parsed_version(), None, "opening does not parse");
        assert_fresh(&open.parsed(), "set a;\n");

        // A job taken out, then more edits before it is put back: the job's
        // parse (of version 2) is kept as the base, and is not current.
        open.apply_changes(vec![change((0, 4), (0, 5), "cells")], 2, encoding);
        let Snapshot::Job(job) = open.parse_job() else {
            panic!("version 2 is not parsed yet")
        };
        open.apply_changes(vec![change((1, 0), (1, 0), "set b;")], 3, encoding);
        assert_eq!(open.text(), "set cells;\nset b;");
        let parsed = job.run(&|| false).expect("never cancelled");
        assert_eq!(parsed.document.version, 2);
        assert_fresh(&parsed.document, "set cells;\n");
        assert!(!open.install(parsed), "version 3 came meanwhile");
        assert_eq!(open.parsed_version(), Some(2));
        // The next parse starts from it with the edit of version 3 alone.
        let document = open.parsed();
        assert_eq!(document.version, 3);
        assert_fresh(&document, "set cells;\nset b;");
        assert!(
            matches!(open.parse_job(), Snapshot::Parsed(_)),
            "nothing left to parse"
        );

        // Two jobs for the same text: the first put back wins, the other is
        // dropped.
        open.apply_changes(vec![change((1, 4), (1, 5), "c")], 4, encoding);
        let (Snapshot::Job(first), Snapshot::Job(second)) = (open.parse_job(), open.parse_job())
        else {
            panic!("version 4 is not parsed yet")
        };
        assert!(open.install(first.run(&|| false).expect("never cancelled")));
        assert!(!open.install(second.run(&|| false).expect("never cancelled")));
        assert_fresh(&open.parsed(), "set cells;\nset c;");

        // A request's job (of version 5) and then the worker's (of version
        // 6), both from the parse of version 4; the request's is put back
        // first: the worker's, of a newer text, is put back after it, and
        // nothing is left to parse.
        open.apply_changes(vec![change((1, 4), (1, 5), "d")], 5, encoding);
        let Snapshot::Job(request) = open.parse_job() else {
            panic!("version 5 is not parsed yet")
        };
        open.apply_changes(vec![change((1, 4), (1, 5), "e")], 6, encoding);
        let Snapshot::Job(worker) = open.parse_job() else {
            panic!("version 6 is not parsed yet")
        };
        assert!(!open.install(request.run(&|| false).expect("never cancelled")));
        assert_eq!(open.parsed_version(), Some(5));
        assert!(
            open.install(worker.run(&|| false).expect("never cancelled")),
            "the newer parse is current"
        );
        let Snapshot::Parsed(document) = open.parse_job() else {
            panic!("version 6 is parsed")
        };
        assert_fresh(&document, "set cells;\nset e;");

        // A whole text replacing everything while a job runs: the job's
        // parse is the base, but the next parse starts afresh from the
        // whole text (then its edit).
        open.apply_changes(vec![change((0, 0), (0, 0), "// x\n")], 7, encoding);
        let Snapshot::Job(job) = open.parse_job() else {
            panic!("version 7 is not parsed yet")
        };
        open.apply_changes(
            vec![whole("set d;\n"), change((0, 4), (0, 5), "e")],
            8,
            encoding,
        );
        assert!(!open.install(job.run(&|| false).expect("never cancelled")));
        let document = open.parsed();
        assert_eq!(document.version, 8);
        assert_fresh(&document, "set e;\n");
        assert!(open.starts_with("set e"));
        // A job of a document closed and opened again is not put back.
        open.apply_changes(vec![change((0, 0), (0, 0), "// y\n")], 9, encoding);
        let Snapshot::Job(job) = open.parse_job() else {
            panic!("version 9 is not parsed yet")
        };
        let mut reopened = OpenDocument::new("set f;\n", 1);
        assert!(!reopened.install(job.run(&|| false).expect("never cancelled")));
        assert_fresh(&reopened.parsed(), "set f;\n");
        assert!(!open.starts_with("set e;\n and more"));
        // Nor is a job of a copy, edited apart from the original.
        let mut copy = open.clone();
        copy.apply_changes(vec![whole("set g;\n")], 10, encoding);
        let Snapshot::Job(job) = copy.parse_job() else {
            panic!("the copy's version 10 is not parsed yet")
        };
        assert!(!open.install(job.run(&|| false).expect("never cancelled")));
        assert_fresh(&open.parsed(), "// y\nset e;\n");
    }

    #[test]
    fn a_parse_job_of_a_text_that_went_by_is_cancelled_and_not_put_back() {
        let encoding = PositionEncoding::Utf16;
        let mut open = OpenDocument::new("set a;\n", 1);
        open.parsed();
        let broken = op2_syntax::synth::broken_statement_lines(400);
        open.apply_changes(vec![change((1, 0), (1, 0), &broken)], 2, encoding);
        let Snapshot::Job(job) = open.parse_job() else {
            panic!("version 2 is not parsed yet")
        };
        let superseded = job.superseded();
        assert!(!superseded(), "version 2 is current");
        // Version 3 arrives while version 2 is parsed (at its second
        // progress call): the parse stops there and yields nothing.
        let asked = std::sync::atomic::AtomicI32::new(0);
        let text = "set b;\n";
        let open = std::sync::Mutex::new(open);
        let parsed = job.run(&|| {
            let count = asked.fetch_add(1, Ordering::Relaxed) + 1;
            if count == 2 {
                open.lock()
                    .expect("the test's lock")
                    .apply_changes(vec![whole(text)], 3, encoding);
            }
            superseded()
        });
        assert!(parsed.is_none(), "a superseded parse yields nothing");
        assert_eq!(
            asked.load(Ordering::Relaxed),
            2,
            "not asked again after version 3 came"
        );
        // Nothing of version 2 was put back.
        let mut open = open.into_inner().expect("the test's lock");
        assert_eq!(open.parsed_version(), Some(1));
        assert_fresh(&open.parsed(), text);

        // Closing the document supersedes its jobs too.
        open.apply_changes(vec![change((0, 0), (0, 0), &broken)], 4, encoding);
        let Snapshot::Job(job) = open.parse_job() else {
            panic!("version 4 is not parsed yet")
        };
        let superseded = job.superseded();
        open.close();
        assert!(superseded());
        assert!(job.run(&superseded).is_none());
    }

    /// What a job does before its parse.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Replay {
        /// It has no base and parses the text afresh.
        Fresh,
        /// It replays this many edits on its base.
        Edits(usize),
        /// It finds the one edit from its base's text itself.
        Folded,
    }

    fn replay(job: &ParseJob) -> Replay {
        match &job.base {
            None => Replay::Fresh,
            Some((_, Catchup::Edits(edits))) => Replay::Edits(edits.len()),
            Some((_, Catchup::Folded)) => Replay::Folded,
        }
    }

    /// Types `keystrokes` characters into `open`, one `didChange` each,
    /// taking the worker's parse job after each: the next keystroke comes
    /// before any parse finishes. With `run`, each job runs and is
    /// cancelled at its first progress call; without, it is dropped (a
    /// job's edits are replayed before its parse asks anything). Returns,
    /// for each job, what it does before its parse, and how many parses
    /// they started.
    fn type_with_every_parse_cancelled(
        open: &mut OpenDocument,
        keystrokes: usize,
        run: bool,
    ) -> (Vec<Replay>, usize) {
        let (mut replays, parses) = (Vec::new(), std::sync::atomic::AtomicUsize::new(0));
        for keystroke in 0..keystrokes {
            let version = i32::try_from(keystroke).expect("few keystrokes") + 2;
            open.apply_changes(
                vec![change((1, 0), (1, 0), "x")],
                version,
                PositionEncoding::Utf16,
            );
            let Snapshot::Job(job) = open.parse_job() else {
                panic!("version {version} is not parsed yet")
            };
            replays.push(replay(&job));
            if run {
                let parsed = job.run(&|| {
                    parses.fetch_add(1, Ordering::Relaxed);
                    true
                });
                assert!(parsed.is_none(), "the next keystroke cancels it");
            }
        }
        (replays, parses.into_inner())
    }

    #[test]
    fn typing_faster_than_the_parses_replays_a_bounded_number_of_edits_per_keystroke() {
        // After a give-up (every parse of this text gives up at its 21st
        // progress call), each keystroke's job parses the text afresh: it
        // replays nothing, and starts one parse.
        let broken = op2_syntax::synth::broken_statement_lines(400);
        let limit = ParseLimit::Checks(20);
        let mut open = OpenDocument::with_limit(&format!("set a;\n{broken}"), 1, limit);
        assert!(open.parsed().parse().stopped_at().is_some(), "it gives up");
        let keystrokes = 3 * MOST_PENDING;
        let (replays, parses) = type_with_every_parse_cancelled(&mut open, keystrokes, true);
        assert_eq!(
            replays,
            vec![Replay::Fresh; keystrokes],
            "no base, nothing replayed, on a parse that gave up"
        );
        assert_eq!(parses, keystrokes, "one parse started per keystroke");
        let mut typed = "x".repeat(keystrokes);
        typed.insert_str(0, "set a;\n");
        let text = format!("{typed}{broken}");
        let document = open.parsed();
        assert_eq!(document.text(), text);
        let fresh = Parse::with_limit(text.as_str(), limit);
        assert_eq!(document.parse().stopped_at(), fresh.stopped_at());
        assert_eq!(
            document.parse().tree().root_node().to_sexp(),
            fresh.tree().root_node().to_sexp()
        );

        // A parse that did not give up stays the base: the n-th
        // keystroke's job replays n edits up to `MOST_PENDING`; past it the
        // edits since are dropped (under the lock, in constant time), and
        // every job finds the one edit from the base itself (off the lock).
        let text = op2_syntax::synth::program(400);
        let mut open = OpenDocument::new(&text, 1);
        assert!(open.parsed().parse().stopped_at().is_none());
        let (replays, _) = type_with_every_parse_cancelled(&mut open, keystrokes, false);
        let expected: Vec<Replay> = (1..=keystrokes)
            .map(|n| {
                if n <= MOST_PENDING {
                    Replay::Edits(n)
                } else {
                    Replay::Folded
                }
            })
            .collect();
        assert_eq!(replays, expected);
        // The incremental parse from the folded edit is the fresh parse.
        let document = open.parsed();
        let mut typed = text.clone();
        typed.insert_str(typed.find('\n').unwrap() + 1, &"x".repeat(keystrokes));
        assert_eq!(document.text(), typed);
        let fresh = Parse::new(typed.as_str());
        assert_eq!(
            document.parse().tree().root_node().to_sexp(),
            fresh.tree().root_node().to_sexp()
        );
        assert_eq!(
            document.parse().errors(op2_syntax::FileId::MAIN),
            fresh.errors(op2_syntax::FileId::MAIN)
        );
        // Once a parse of the current text is put back, the edits after it
        // are replayed again.
        let (replays, _) = type_with_every_parse_cancelled(&mut open, 2, false);
        assert_eq!(replays, vec![Replay::Edits(1), Replay::Edits(2)]);
    }

    #[test]
    fn a_parse_of_an_earlier_text_put_back_after_the_edits_were_folded_is_a_base() {
        let text = op2_syntax::synth::program(100);
        let mut open = OpenDocument::new(&text, 1);
        open.parsed();
        let type_x = |open: &mut OpenDocument, version: i32| {
            open.apply_changes(
                vec![change((1, 0), (1, 0), "x")],
                version,
                PositionEncoding::Utf16,
            );
        };
        type_x(&mut open, 2);
        let Snapshot::Job(early) = open.parse_job() else {
            panic!("not parsed yet")
        };
        for version in 3..(MOST_PENDING as i32 + 10) {
            type_x(&mut open, version);
        }
        let parsed = early.run(&|| false).expect("not cancelled");
        assert!(!open.install(parsed), "the text moved on");
        let Snapshot::Job(job) = open.parse_job() else {
            panic!("not parsed yet")
        };
        assert_eq!(
            replay(&job),
            Replay::Folded,
            "the edits since the parse put back were dropped: the job folds them"
        );
        let document = open.parsed();
        let mut typed = text.clone();
        typed.insert_str(typed.find('\n').unwrap() + 1, &"x".repeat(MOST_PENDING + 8));
        assert_eq!(document.text(), typed);
        assert_eq!(
            document.parse().tree().root_node().to_sexp(),
            Parse::new(typed.as_str()).tree().root_node().to_sexp()
        );
    }

    #[test]
    fn the_difference_of_two_texts_is_one_edit_on_character_boundaries() {
        for (old, new, range, text) in [
            ("abc", "abc", 3..3, ""),
            ("abc", "abXc", 2..2, "X"),
            ("abc", "ac", 1..2, ""),
            ("", "é", 0..0, "é"),
            // C3 A9 and C3 A3: the common first byte is half a character.
            ("é", "ã", 0..2, "ã"),
            ("aéa", "aa", 1..3, ""),
            ("xx", "x", 1..2, ""),
            ("😀😀", "😀", 4..8, ""),
            // C3 A9 and C2 A9: the common last byte is half a character.
            ("é", "©", 0..2, "©"),
            ("a\r\nb", "a\r\r\nb", 2..2, "\r"),
        ] {
            let edit = difference(old, new);
            assert_eq!(edit, (range.clone(), text.to_owned()), "{old:?} to {new:?}");
            let expected = if old == new {
                Vec::new()
            } else {
                vec![(range, text.to_owned())]
            };
            assert_eq!(folded(old, new), expected, "{old:?} to {new:?}");
            let mut edited = old.to_owned();
            edited.replace_range(edit.0, &edit.1);
            assert_eq!(edited, new, "{old:?} to {new:?}");
        }
    }

    #[test]
    fn edits_folded_back_to_the_parsed_text_leave_nothing_to_replay() {
        let text = op2_syntax::synth::program(20);
        let mut open = OpenDocument::new(&text, 1);
        open.parsed();
        let encoding = PositionEncoding::Utf16;
        // Half of the edits type, the other half erase what was typed.
        let half = i32::try_from(MOST_PENDING / 2).expect("a small bound");
        for version in 0..half {
            let column = u32::try_from(version).expect("small");
            open.apply_changes(
                vec![change((1, column), (1, column), "x")],
                version + 2,
                encoding,
            );
        }
        for version in half..2 * half {
            let column = u32::try_from(2 * half - version - 1).expect("small");
            open.apply_changes(
                vec![change((1, column), (1, column + 1), "")],
                version + 2,
                encoding,
            );
        }
        assert_eq!(open.pending.len(), MOST_PENDING, "not folded yet");
        // One more change, typing and erasing: folded, to no edit at all.
        open.apply_changes(
            vec![change((0, 0), (0, 0), "y"), change((0, 0), (0, 1), "")],
            2 * half + 2,
            encoding,
        );
        assert_eq!(open.text(), text);
        let Snapshot::Job(job) = open.parse_job() else {
            panic!("the version is not parsed yet")
        };
        assert_eq!(replay(&job), Replay::Folded, "the parse is the base");
        assert_eq!(folded(&text, &open.text()), Vec::new(), "nothing to replay");
        assert!(open.install(job.run(&|| false).expect("not cancelled")));
        let document = open.parsed();
        assert_eq!(document.version, 2 * half + 2);
        assert_fresh(&document, &text);
    }

    /// One step of [`folds_replays_and_installs_keep_the_text_and_tree`].
    #[derive(Clone, Debug)]
    enum Step {
        /// Replace the characters from the `start`-th to `start + len`-th
        /// of the comment with `insert`.
        Edit {
            start: usize,
            len: usize,
            insert: &'static str,
        },
        /// A whole text: the comment becomes `insert`.
        Whole { insert: &'static str },
        /// Take the worker's parse job.
        Take,
        /// Run one of the jobs taken (by index, modulo how many) and put
        /// it back.
        Run { job: usize },
    }

    const PIECES: [&str; 8] = ["x", "é", "😀", "©", "\r\n", "\n", "\r", "ab"];

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        let piece = proptest::sample::select(PIECES.to_vec());
        prop_oneof![
            60 => (0usize..40, 0usize..4, piece.clone())
                .prop_map(|(start, len, insert)| Step::Edit { start, len, insert }),
            1 => piece.prop_map(|insert| Step::Whole { insert }),
            2 => Just(Step::Take),
            2 => (0usize..8).prop_map(|job| Step::Run { job }),
        ]
    }

    proptest::proptest! {
        /// Random edits (multi-byte characters, CRLF, deletions, now and
        /// then a whole text) inside a block comment (so every text parses
        /// cleanly, and the incremental parse must equal the fresh one),
        /// with parse jobs taken at random and put back out of order: after
        /// every step, at most `MOST_PENDING` edits wait, and they turn the
        /// text of the parse put back into the current text (unless they
        /// were folded: then they are the edits since the fold, and the job
        /// finds the edit from the parse's text); every parse put back is
        /// the fresh parse of its text, and so is the last.
        #[test]
        fn folds_replays_and_installs_keep_the_text_and_tree(
            steps in proptest::collection::vec(step(), 1..400)
        ) {
            const HEAD: &str = "set a;\r\n/* ";
            const TAIL: &str = " */\r\nset b;\r\n";
            let encoding = PositionEncoding::Utf16;
            let mut open = OpenDocument::new(&format!("{HEAD}é😀\r\nx{TAIL}"), 1);
            open.parsed();
            let mut jobs = Vec::new();
            for (at, step) in steps.into_iter().enumerate() {
                let version = i32::try_from(at).expect("few steps") + 2;
                match step {
                    Step::Edit { start, len, insert } => {
                        let text = open.text();
                        let comment = &text[HEAD.len()..text.len() - TAIL.len()];
                        let mut bounds: Vec<usize> =
                            comment.char_indices().map(|(i, _)| HEAD.len() + i).collect();
                        bounds.push(HEAD.len() + comment.len());
                        let from = bounds[start % bounds.len()];
                        let to = bounds[(start % bounds.len() + len).min(bounds.len() - 1)];
                        let range = Range {
                            start: open.position(from, encoding),
                            end: open.position(to, encoding),
                        };
                        let edit = TextDocumentContentChangeEvent {
                            range: Some(range),
                            range_length: None,
                            text: insert.into(),
                        };
                        open.apply_changes(vec![edit], version, encoding);
                    }
                    Step::Whole { insert } => {
                        open.apply_changes(vec![whole(&format!("{HEAD}{insert}{TAIL}"))], version, encoding);
                    }
                    Step::Take => {
                        if let Snapshot::Job(job) = open.parse_job() {
                            jobs.push(job);
                        }
                    }
                    Step::Run { job } if !jobs.is_empty() => {
                        let job = jobs.remove(job % jobs.len());
                        let parsed = job.run(&|| false).expect("not cancelled");
                        assert_fresh(&parsed.document, parsed.document.text());
                        open.install(parsed);
                    }
                    Step::Run { .. } => {}
                }
                proptest::prop_assert!(open.pending.len() <= MOST_PENDING);
                if let Some(at) = open.folded_at {
                    // The edits kept are those since the fold.
                    proptest::prop_assert!(open.pending.iter().all(|(change, _, _)| *change > at));
                    proptest::prop_assert!(open.whole_at.is_none());
                } else if let (Some(parsed), None) = (&open.parsed, open.whole_at) {
                    let mut replayed = parsed.text().to_owned();
                    for (_, range, text) in &open.pending {
                        replayed.replace_range(range.clone(), text);
                    }
                    proptest::prop_assert_eq!(replayed, open.text());
                }
            }
            let text = open.text();
            assert_fresh(&open.parsed(), &text);
        }
    }
}
