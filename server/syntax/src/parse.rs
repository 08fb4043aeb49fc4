//! A parsed file: its text, its tree, and incremental edits of both.

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use tree_sitter::{InputEdit, Node, Point, Tree};

use crate::ast::{SourceFile, language};
use crate::diagnostic::{Diagnostic, FileId};
use crate::errors::{Part, errors_in, syntax_errors};
use crate::limit::{ParseLimit, Stopped, parse_prefix, parse_within};
use crate::{Code, Location, TextRange};

/// Parses `text` (reusing `old`) within `limit` unless `cancelled()`; `Err`
/// says where the parser had got to when it was stopped.
fn run_parser(
    text: &str,
    old: Option<&Tree>,
    limit: ParseLimit,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<Tree, Stopped> {
    // Too many `[` open: gives up before tree-sitter sees the text, as for
    // memory, at the line of the `[` past the limit (the retry then parses
    // the text blanked from there).
    if limit == ParseLimit::Time
        && let Some(at) = crate::limit::subscripts_past_limit(text)
    {
        return Err(Stopped {
            reached: at,
            first_error: Some(at),
            cancelled: false,
            memory: true,
        });
    }
    on_parse_stack(text.len(), || {
        parse_within(&language(), text, old, limit, cancelled)
    })
}

/// Where a parse gave up, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GaveUp {
    /// The start of the line from which the text is blanked.
    at: usize,
    /// The parse asked for more memory than its text allows, rather than
    /// taking longer.
    memory: bool,
}

/// After a parse was `stopped` by its limit: the tree of `text` blanked
/// from a line before the place reached, and that line.
fn give_up(
    text: &str,
    stopped: Stopped,
    limit: ParseLimit,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<(Tree, GaveUp), Cancelled> {
    if stopped.cancelled {
        return Err(Cancelled);
    }
    let (tree, at) = on_parse_stack(text.len(), || {
        parse_prefix(&language(), text, stopped, limit, cancelled)
    })
    .ok_or(Cancelled)?;
    let memory = stopped.memory;
    Ok((tree, GaveUp { at, memory }))
}

/// Texts up to this long are parsed on the caller's thread.
const INLINE_PARSE: usize = 32 << 10;

/// The stack of a thread that parses a longer text: this much, and
/// [`PARSE_STACK_PER_BYTE`] more for each byte of the text.
const PARSE_STACK_BASE: usize = 16 << 20;

/// Tree-sitter's C library recurses when it frees the parse stack's
/// versions (`stack_node_release`, once per merged node), which error
/// recovery can link into chains that grow with the text: 44,000 `= err[`
/// in a kernel (267 KB, fuzz campaign seed 2, case 22135) went 18,600
/// frames deep and overflowed a 2 MiB thread; 1.2 MB of the same needed
/// between 8 and 16 MiB, about 7 to 13 bytes of stack per byte of text in
/// a release build. The recursion is in the library, so the parse is given
/// a stack that grows with the text instead, with a margin of five for
/// debug builds' larger frames. Only address space is reserved: pages are
/// used as the recursion reaches them.
const PARSE_STACK_PER_BYTE: usize = 64;

/// Texts up to this long (and over [`INLINE_PARSE`]) are parsed on the
/// threads of [`parse_pool`], whose stacks are sized for it (80 MiB each).
const POOL_TEXT: usize = 1 << 20;

/// The threads of [`parse_pool`]: so many parses of long texts run at once
/// there; another one meanwhile gets a thread of its own, so that no parse
/// waits for another (a slow one takes seconds: see [`crate::limit`]).
const POOL_THREADS: usize = 4;

/// The stack a parse of `len` bytes is given.
fn parse_stack(len: usize) -> usize {
    PARSE_STACK_BASE.saturating_add(len.saturating_mul(PARSE_STACK_PER_BYTE))
}

/// The threads kept for parsing long texts, made at the first such parse:
/// a thread made for each parse cost about 60 µs of a 260 µs keystroke in
/// the language server, and more on a busy machine (docs/benchmarks.md).
/// `None` where they cannot be made.
fn parse_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(POOL_THREADS)
            .stack_size(parse_stack(POOL_TEXT))
            .thread_name(|index| format!("op2 parse {index}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Parses running on [`parse_pool`]'s threads, or about to.
static POOL_BUSY: AtomicUsize = AtomicUsize::new(0);

/// A place taken on [`parse_pool`], given back when dropped (a panic
/// included).
struct PoolPlace;

impl PoolPlace {
    /// A place, if one of the pool's threads is free for the parse.
    fn take() -> Option<PoolPlace> {
        if POOL_BUSY.fetch_add(1, Ordering::AcqRel) < POOL_THREADS {
            Some(PoolPlace)
        } else {
            POOL_BUSY.fetch_sub(1, Ordering::AcqRel);
            None
        }
    }
}

impl Drop for PoolPlace {
    fn drop(&mut self) {
        POOL_BUSY.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `parse` (of a text of `len` bytes) where the stack is deep enough
/// for it: on the caller's thread for a short text; for a text up to
/// [`POOL_TEXT`], on a free thread of [`parse_pool`]; else, or when none
/// is free, on a thread of its own with [`PARSE_STACK_BASE`] and
/// [`PARSE_STACK_PER_BYTE`]. A panic in the parse goes on in the caller;
/// where no thread can be made, the parse runs on the caller's thread.
pub fn on_parse_stack<T: Send>(len: usize, parse: impl FnOnce() -> T + Send) -> T {
    if len <= INLINE_PARSE {
        return parse();
    }
    if len <= POOL_TEXT
        && let Some(pool) = parse_pool()
        && let Some(_place) = PoolPlace::take()
    {
        return pool.install(parse);
    }
    let mut job = Some(parse);
    let joined = std::thread::scope(|scope| {
        let job = &mut job;
        std::thread::Builder::new()
            .name("op2 parse".into())
            .stack_size(parse_stack(len))
            .spawn_scoped(scope, move || job.take().map(|parse| parse()))
            .ok()
            .map(std::thread::ScopedJoinHandle::join)
    });
    match joined {
        Some(Ok(Some(value))) => value,
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        // The thread could not be made: parse here.
        Some(Ok(None)) | None => match job.take() {
            Some(parse) => parse(),
            None => unreachable!("a thread that took the parse returns its result"),
        },
    }
}

/// A fresh parse of `text` within `limit`, and where checking stopped when
/// it gave up (see [`crate::limit`]).
fn parse_fresh(
    text: &str,
    limit: ParseLimit,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<(Tree, Option<GaveUp>), Cancelled> {
    match run_parser(text, None, limit, cancelled) {
        Ok(tree) => Ok((tree, None)),
        Err(stopped) => {
            let (tree, gave_up) = give_up(text, stopped, limit, cancelled)?;
            Ok((tree, Some(gave_up)))
        }
    }
}

/// The cancellation signal of a parse nobody cancels.
fn never() -> bool {
    false
}

/// The result of a parse with [`never`] as its signal.
fn uncancelled<T>(result: Result<T, Cancelled>) -> T {
    result.unwrap_or_else(|Cancelled| unreachable!("only the caller's signal cancels a parse"))
}

/// A parse stopped by its caller's cancellation signal (see
/// [`Parse::new_cancellable`]): it yields no tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the parse was cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// The text of one `.op2` file and its syntax tree, kept in step.
#[derive(Clone)]
pub struct Parse {
    text: String,
    /// The tree of `text`, or of `text` blanked from `stopped` on.
    tree: Tree,
    /// Where the parser gave up: the text from here on is not in the tree.
    stopped: Option<GaveUp>,
    limit: ParseLimit,
    /// [`Parse::errors`] of [`FileId::MAIN`], once asked (a command asks
    /// twice: to report them, and `fmt` to refuse the text); an edit
    /// forgets them.
    main_errors: OnceLock<Vec<Diagnostic>>,
}

impl fmt::Debug for Parse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parse")
            .field("len", &self.text.len())
            .finish_non_exhaustive()
    }
}

/// Why an edit could not be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditError {
    /// The range reaches past the end of the text, or is reversed.
    OutOfBounds {
        /// The range asked for.
        range: Range<usize>,
        /// The text's length.
        len: usize,
    },
    /// An end of the range falls inside a multi-byte character.
    NotCharBoundary {
        /// The offending offset.
        offset: usize,
    },
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::OutOfBounds { range, len } => {
                write!(
                    f,
                    "edit range {}..{} lies outside the text of {len} bytes",
                    range.start, range.end
                )
            }
            EditError::NotCharBoundary { offset } => {
                write!(
                    f,
                    "edit offset {offset} falls inside a multi-byte character"
                )
            }
        }
    }
}

impl std::error::Error for EditError {}

impl Parse {
    /// Parses `text` from scratch.
    pub fn new(text: impl Into<String>) -> Parse {
        Parse::with_limit(text, ParseLimit::Time)
    }

    /// Parses `text` from scratch within `limit`, which later edits keep.
    pub fn with_limit(text: impl Into<String>, limit: ParseLimit) -> Parse {
        uncancelled(Parse::new_cancellable(text, limit, &never))
    }

    /// Parses `text` from scratch within `limit`, unless `cancelled()`
    /// says so first: it is asked at each of tree-sitter's progress calls
    /// (one per hundred parse actions), and a cancelled parse stops there
    /// and yields nothing.
    pub fn new_cancellable(
        text: impl Into<String>,
        limit: ParseLimit,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Parse, Cancelled> {
        let text = text.into();
        let (tree, stopped) = parse_fresh(&text, limit, cancelled)?;
        Ok(Parse {
            text,
            tree,
            stopped,
            limit,
            main_errors: OnceLock::new(),
        })
    }

    /// Where the parser gave up (see [`crate::limit`]): the byte offset of
    /// the start of the line from which the text is not in the tree, and
    /// not checked. `None` for a complete parse.
    pub fn stopped_at(&self) -> Option<usize> {
        self.stopped.map(|stopped| stopped.at)
    }

    /// The source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tree-sitter tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The typed root of the tree.
    pub fn root(&self) -> SourceFile<'_> {
        SourceFile::from_root(self.tree.root_node())
    }

    /// Syntax diagnostics (E001) for this file, which is `file`.
    pub fn errors(&self, file: FileId) -> Vec<Diagnostic> {
        let errors = || self.with_stop(syntax_errors(&self.tree, &self.text, file), file);
        if file == FileId::MAIN {
            self.main_errors.get_or_init(errors).clone()
        } else {
            errors()
        }
    }

    /// The part of [`Parse::errors`] that concerns text the parser could not
    /// read (ERROR and MISSING nodes). It looks only inside subtrees that
    /// hold such a node, so it costs nothing on a valid file.
    pub fn unparsed_errors(&self, file: FileId) -> Vec<Diagnostic> {
        let errors = errors_in(self.tree.root_node(), &self.text, file, Part::Unparsed);
        self.with_stop(errors, file)
    }

    /// The other part of [`Parse::errors`]: unsupported C constructs in
    /// `item`, one top-level item of this parse (a child of its root).
    /// [`Parse::unparsed_errors`] and this over every item give exactly
    /// [`Parse::errors`].
    ///
    /// An item inside an ERROR (the whole file is one when the parser could
    /// not end it as a file) has none: the walk over the file reports that
    /// ERROR once and does not look inside it. The root is that ERROR or not;
    /// asking tree-sitter for the item's parent instead would walk the root's
    /// children up to the item, which over every item of a file of thousands
    /// of broken lines took time quadratic in its size (issue #12).
    ///
    /// So this depends on more than the item's text: see
    /// [`Parse::is_one_error`].
    pub fn unsupported_in(&self, item: Node<'_>, file: FileId) -> Vec<Diagnostic> {
        if self.is_one_error() && item.id() != self.tree.root_node().id() {
            return Vec::new();
        }
        errors_in(item, &self.text, file, Part::Unsupported)
    }

    /// Whether the whole file is one ERROR (the parser could not end it as
    /// a file): then its top-level items report no unsupported C
    /// ([`Parse::unsupported_in`]), and what the items report depends on
    /// the rest of the file, not on their own text alone.
    pub fn is_one_error(&self) -> bool {
        self.tree.root_node().is_error()
    }

    /// `errors` and, when the parser gave up, E002 at the place instead of
    /// what the blanked text made of the end of the file (the constructs
    /// left open there are reported missing at its end).
    fn with_stop(&self, mut errors: Vec<Diagnostic>, file: FileId) -> Vec<Diagnostic> {
        if let Some(stopped) = self.stopped {
            errors.retain(|error| (error.location.range.start as usize) < stopped.at);
            errors.push(stop_diagnostic(&self.text, stopped, file));
        }
        errors
    }

    /// Replaces the bytes in `range` by `new_text` and reparses incrementally,
    /// reusing the old tree. Returns the tree-sitter edit that was applied.
    pub fn edit(&mut self, range: Range<usize>, new_text: &str) -> Result<InputEdit, EditError> {
        uncancelled(self.edit_unless(range, new_text, &never))
    }

    /// [`Parse::edit`], stopped when `cancelled()` says so (then the tree
    /// no longer matches the text: see [`Parse::edit_many_cancellable`]).
    fn edit_unless(
        &mut self,
        range: Range<usize>,
        new_text: &str,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Result<InputEdit, EditError>, Cancelled> {
        if self.stopped.is_some() {
            let input = self.edit_text_only(range, new_text);
            if input.is_ok() {
                self.parse_afresh(cancelled)?;
            }
            return Ok(input);
        }
        let fresh = self.items_to_parse_afresh(range.clone(), new_text.len());
        let input = match self.edit_text_only(range, new_text) {
            Ok(input) => input,
            Err(error) => return Ok(Err(error)),
        };
        let outcome = match fresh {
            Some(ranges) => self.reparse_with_fresh_items(&ranges, cancelled),
            None => self.reparse(cancelled),
        };
        self.settle(outcome, cancelled)?;
        Ok(Ok(input))
    }

    /// Applies several edits in order (each range in the text as left by the
    /// previous one) and reparses once at the end.
    pub fn edit_many<'a>(
        &mut self,
        edits: impl IntoIterator<Item = (Range<usize>, &'a str)>,
    ) -> Result<(), EditError> {
        uncancelled(self.edit_many_unless(edits, &never))
    }

    /// [`Parse::edit_many`], unless `cancelled()` says so first (asked as
    /// [`Parse::new_cancellable`] does): a cancelled parse is consumed, as
    /// its tree no longer matches its text. `Ok` holds the parse and what
    /// `edit_many` returns.
    pub fn edit_many_cancellable<'a>(
        mut self,
        edits: impl IntoIterator<Item = (Range<usize>, &'a str)>,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<(Parse, Result<(), EditError>), Cancelled> {
        let edited = self.edit_many_unless(edits, cancelled)?;
        Ok((self, edited))
    }

    /// [`Parse::edit_many`], stopped when `cancelled()` says so.
    fn edit_many_unless<'a>(
        &mut self,
        edits: impl IntoIterator<Item = (Range<usize>, &'a str)>,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Result<(), EditError>, Cancelled> {
        let mut edits = edits.into_iter().peekable();
        let Some(first) = edits.next() else {
            return Ok(Ok(()));
        };
        if edits.peek().is_none() {
            // One edit (a keystroke): the path that knows which item it is in.
            return Ok(self.edit_unless(first.0, first.1, cancelled)?.map(|_| ()));
        }
        let mut changed = false;
        let mut result = Ok(());
        for (range, new_text) in std::iter::once(first).chain(edits) {
            match self.edit_text_only(range, new_text) {
                Ok(_) => changed = true,
                Err(error) => {
                    result = Err(error);
                    break;
                }
            }
        }
        if changed {
            if self.stopped.is_some() {
                self.parse_afresh(cancelled)?;
            } else {
                let outcome = self.reparse(cancelled);
                self.settle(outcome, cancelled)?;
            }
        }
        Ok(result)
    }

    /// Parses the whole text again with nothing reused: after a give-up the
    /// tree holds blanked text, which an incremental parse must not reuse.
    fn parse_afresh(&mut self, cancelled: &(dyn Fn() -> bool + Sync)) -> Result<(), Cancelled> {
        (self.tree, self.stopped) = parse_fresh(&self.text, self.limit, cancelled)?;
        Ok(())
    }

    /// After an incremental parse: when it gave up, the text blanked from
    /// before where it had got to is parsed afresh.
    fn settle(
        &mut self,
        outcome: Result<(), Stopped>,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<(), Cancelled> {
        if let Err(stopped) = outcome {
            let (tree, gave_up) = give_up(&self.text, stopped, self.limit, cancelled)?;
            self.tree = tree;
            self.stopped = Some(gave_up);
        }
        Ok(())
    }

    /// Reparses after edits, reusing the old tree.
    ///
    /// Tree-sitter's error recovery depends on which subtrees it can reuse:
    /// an incremental parse of erroneous text may recover differently from
    /// a fresh parse of the same text, and diagnostics must depend on the
    /// text alone. Valid text has exactly one tree (the grammar has no
    /// conflicts), so only a tree with errors needs more work: the
    /// top-level items that hold an error are parsed again with nothing
    /// inside them reused ([`Parse::reparse_damaged`]). That costs a parse
    /// of the damaged items, not of the file.
    ///
    /// The parts that held an error *before* the edits are parsed with
    /// nothing inside them reused as well (as [`Parse::edit`] does for one
    /// edit: [`Parse::items_to_parse_afresh`]). Their tokens were read during
    /// error recovery, which lexes a keyword where a name is expected as a
    /// name: reused where the edits made that name fit, such a token gives a
    /// part without an error that a fresh parse rejects (`double` read as a
    /// name inside an ERROR, then `struct` typed before it: a struct named
    /// `double`), and a part without an error is not parsed again.
    fn reparse(&mut self, cancelled: &(dyn Fn() -> bool + Sync)) -> Result<(), Stopped> {
        if self.tree.root_node().has_error() {
            // The edited tree's positions are those of the edited text.
            self.mark_unreusable(self.damaged_items());
        }
        self.tree = run_parser(&self.text, Some(&self.tree), self.limit, cancelled)?;
        if self.tree.root_node().has_error() {
            self.reparse_damaged(cancelled)?;
        }
        Ok(())
    }

    /// The byte ranges, in the text after replacing `range` by `new_len`
    /// bytes, of the top-level items to parse with nothing inside reused:
    /// the items the edit touches, and those holding an error already.
    ///
    /// This lets one parse do what [`Parse::reparse`] does in two when the
    /// keystroke leaves an error in the item it edits (the usual case while
    /// typing a statement). It costs more for a keystroke that leaves the
    /// item valid (the item is lexed again), so it is used only when the
    /// items touched are small; `None` when they are not, or when the edit
    /// spans more than a few items.
    fn items_to_parse_afresh(
        &self,
        range: Range<usize>,
        new_len: usize,
    ) -> Option<Vec<Range<usize>>> {
        /// Items up to this size are parsed afresh on every keystroke
        /// (about 120 lines; the synthetic benchmark's kernels are 700 bytes).
        const SMALL_ITEM: usize = 4096;
        let root = self.tree.root_node();
        let mut touched = Vec::new();
        // The item that ends after the edit starts, and any before it that
        // ends where the edit starts (typing just after a `}`).
        // A large kernel or `main` gives the statements the edit touches
        // instead (see `damaged_statements`).
        // Siblings by a cursor: tree-sitter's `next_sibling` descends from
        // the root again (and recurses per level for an empty node).
        let mut cursor = root.walk();
        let mut item = cursor
            .goto_first_child_for_byte(range.start.saturating_sub(1))
            .map(|_| cursor.node());
        while let Some(node) = item {
            if node.start_byte() > range.end {
                break;
            }
            if touched.len() > 3 {
                return None;
            }
            if node.end_byte() - node.start_byte() > SMALL_ITEM {
                touched.extend(statements_touched(node, &range, SMALL_ITEM)?);
            } else {
                touched.push(node.byte_range());
            }
            item = cursor.goto_next_sibling().then(|| cursor.node());
        }
        let touching = touched.len();
        if root.has_error() {
            touched.extend(
                self.damaged_items()
                    .into_iter()
                    .map(|(start, end, ..)| start..end),
            );
        }
        // Into the coordinates of the edited text.
        let shift = |offset: usize| {
            if offset <= range.start {
                offset
            } else if offset >= range.end {
                offset - range.end + range.start + new_len
            } else {
                range.start + new_len
            }
        };
        // What the edit touches grows with the text it inserts; the damaged
        // parts elsewhere only move.
        let mut ranges: Vec<Range<usize>> = touched
            .into_iter()
            .enumerate()
            .map(|(index, r)| {
                let end = if index < touching {
                    shift(r.end).max(range.start + new_len)
                } else {
                    shift(r.end)
                };
                shift(r.start)..end
            })
            .collect();
        ranges.sort_by_key(|r| r.start);
        Some(ranges)
    }

    /// Reparses with the items in `fresh` (ranges in the current text)
    /// parsed with nothing inside them reused. When every item left with an
    /// error lies inside those ranges, that is the fresh parse (the damaged
    /// items had no reuse inside, as [`Parse::reparse_damaged`] ensures);
    /// otherwise the damaged items are parsed once more.
    fn reparse_with_fresh_items(
        &mut self,
        fresh: &[Range<usize>],
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<(), Stopped> {
        for range in fresh {
            let start = point_at(&self.text, range.start);
            let end = advance(start, &self.text[range.clone()]);
            self.tree.edit(&InputEdit {
                start_byte: range.start,
                old_end_byte: range.end,
                new_end_byte: range.end,
                start_position: start,
                old_end_position: end,
                new_end_position: end,
            });
        }
        self.tree = run_parser(&self.text, Some(&self.tree), self.limit, cancelled)?;
        if !self.tree.root_node().has_error() {
            return Ok(());
        }
        let covered = self.damaged_items().iter().all(|(start, end, ..)| {
            fresh
                .iter()
                .any(|range| range.start <= *start && *end <= range.end)
        });
        if !covered {
            self.reparse_damaged(cancelled)?;
        }
        Ok(())
    }

    /// Parses the top-level items that hold an error (ERROR or MISSING)
    /// again, reusing only the clean items around them.
    ///
    /// Why this gives the fresh parse: the items reused are error-free, and
    /// an error-free item is the same subtree however it is reached; what
    /// made incremental recovery differ were reused pieces *inside* the
    /// damaged items, which a fresh parse would have seen token by token.
    /// This is tree-sitter's behaviour, not a documented guarantee, so the
    /// property tests in `tests/incremental.rs` compare the result with a
    /// fresh parse after every one of thousands of random edits (random
    /// edits break several items at once, most of them more than typing
    /// does); without this step they find a difference in about one edit in
    /// five hundred.
    fn reparse_damaged(&mut self, cancelled: &(dyn Fn() -> bool + Sync)) -> Result<(), Stopped> {
        self.mark_unreusable(self.damaged_items());
        self.tree = run_parser(&self.text, Some(&self.tree), self.limit, cancelled)?;
        Ok(())
    }

    /// Marks every node in the `ranges` (byte and point ranges in the
    /// current text) as changed, so that the next parse reuses none of them.
    fn mark_unreusable(&mut self, ranges: Vec<(usize, usize, Point, Point)>) {
        for (start_byte, end_byte, start_position, end_position) in ranges {
            // An edit that replaces the range by itself marks every node in
            // it as changed.
            self.tree.edit(&InputEdit {
                start_byte,
                old_end_byte: end_byte,
                new_end_byte: end_byte,
                start_position,
                old_end_position: end_position,
                new_end_position: end_position,
            });
        }
    }

    /// The byte and point ranges of the runs of top-level items holding an
    /// error, or of the whole tree when the error is in the root itself.
    fn damaged_items(&self) -> Vec<(usize, usize, Point, Point)> {
        let root = self.tree.root_node();
        let mut damaged: Vec<(usize, usize, Point, Point)> = Vec::new();
        let mut cursor = root.walk();
        let mut previous: Option<Node<'_>> = None;
        for item in root.children(&mut cursor) {
            if !item.has_error() {
                previous = Some(item);
                continue;
            }
            match damaged_statements(item) {
                // The error is inside the body's statements, which stays a
                // block: only the runs of damaged statements.
                Some(runs) => damaged.extend(runs),
                // From the last token of the item before, whose parse state
                // an error at the item's start reads its expected tokens
                // from: a token reused from another parse may carry none
                // (state 0), and the message would then depend on the
                // edits, not on the text. Only that token is parsed again;
                // the rest of the item before stays reusable.
                None => {
                    let first = previous.map_or(item, last_leaf);
                    damaged.push((
                        first.start_byte(),
                        item.end_byte(),
                        first.start_position(),
                        item.end_position(),
                    ));
                }
            }
            previous = Some(item);
        }
        if damaged.is_empty() {
            // The error sits in the root itself (a MISSING token at the end,
            // say): nothing to reuse safely.
            damaged.push((
                root.start_byte(),
                root.end_byte(),
                root.start_position(),
                root.end_position(),
            ));
        }
        damaged
    }

    /// Edits text and tree positions without reparsing.
    fn edit_text_only(
        &mut self,
        range: Range<usize>,
        new_text: &str,
    ) -> Result<InputEdit, EditError> {
        if range.start > range.end || range.end > self.text.len() {
            return Err(EditError::OutOfBounds {
                range,
                len: self.text.len(),
            });
        }
        for offset in [range.start, range.end] {
            if !self.text.is_char_boundary(offset) {
                return Err(EditError::NotCharBoundary { offset });
            }
        }
        let start_position = point_at(&self.text, range.start);
        let old_end_position = advance(start_position, &self.text[range.clone()]);
        // Every change of the text and tree starts here.
        self.main_errors = OnceLock::new();
        self.text.replace_range(range.clone(), new_text);
        let new_end_byte = range.start + new_text.len();
        let new_end_position = advance(start_position, new_text);
        let input = InputEdit {
            start_byte: range.start,
            old_end_byte: range.end,
            new_end_byte,
            start_position,
            old_end_position,
            new_end_position,
        };
        self.tree.edit(&input);
        Ok(input)
    }
}

/// The body of a kernel or `main` with both its braces, and the braces.
fn block_of(item: Node<'_>) -> Option<(Node<'_>, Node<'_>, Node<'_>)> {
    if !matches!(item.kind(), "main_definition" | "kernel_definition") {
        return None;
    }
    let body = item.child_by_field_name("body")?;
    let count = body.child_count();
    if count < 2 {
        return None;
    }
    let (open, close) = (body.child(0)?, body.child(count - 1)?);
    let intact =
        open.kind() == "{" && close.kind() == "}" && !open.is_missing() && !close.is_missing();
    intact.then_some((body, open, close))
}

/// The statements of the body of `item` (a kernel or `main`) that the edit
/// of `range` touches, and the edited range itself (text typed between
/// statements belongs to none). `None` when the edit reaches the head or
/// the braces, touches a statement larger than `small` or more than a few,
/// or the item is of another kind.
fn statements_touched(
    item: Node<'_>,
    range: &Range<usize>,
    small: usize,
) -> Option<Vec<Range<usize>>> {
    let (body, open, close) = block_of(item)?;
    if range.start <= open.end_byte() || range.end >= close.start_byte() {
        return None;
    }
    let mut touched = vec![range.clone()];
    let mut cursor = body.walk();
    let mut statement = cursor
        .goto_first_child_for_byte(range.start.saturating_sub(1))
        .map(|_| cursor.node());
    while let Some(node) = statement {
        if node.start_byte() > range.end || node.id() == close.id() {
            break;
        }
        if node.end_byte() - node.start_byte() > small || touched.len() > 4 {
            return None;
        }
        touched.push(node.byte_range());
        statement = cursor.goto_next_sibling().then(|| cursor.node());
    }
    Some(touched)
}

/// The runs of consecutive statements holding an error in the body of a
/// kernel or `main`, when everything else of the item is intact (its head,
/// the body's braces): a half-typed statement in a long `main` then costs a
/// parse of that statement, not of `main`. `None` when the error reaches
/// further, or the item is of another kind.
///
/// Like the item rule, this rests on tree-sitter's behaviour, checked by the
/// property tests (tens of thousands of random edits inside `main` bodies
/// found no difference from a fresh parse).
fn damaged_statements(item: Node<'_>) -> Option<Vec<(usize, usize, Point, Point)>> {
    let (body, _, _) = block_of(item)?;
    let mut cursor = item.walk();
    if item
        .children(&mut cursor)
        .any(|child| child.id() != body.id() && child.has_error())
    {
        return None;
    }
    let count = body.child_count();
    let mut runs: Vec<(usize, usize, Point, Point)> = Vec::new();
    let mut previous_damaged = false;
    // One walk over the children: `body.child(index)` would count its way
    // from the first child each time, quadratic in a long `main` (issue #12).
    let mut cursor = body.walk();
    let mut children = body.children(&mut cursor);
    // The child before the statement: the block's `{`, then each statement.
    let mut previous = children.next();
    for (_, statement) in (1..count - 1).zip(children) {
        let damaged = statement.has_error();
        if damaged {
            match runs.last_mut() {
                Some(run) if previous_damaged => {
                    run.1 = statement.end_byte();
                    run.3 = statement.end_position();
                }
                // A run starts at the last token of the child before it:
                // that token's parse state is what an error at the run's
                // start reads its expected tokens from, and a reused token
                // may not carry one (see `Parse::damaged_items`).
                _ => {
                    let first = previous.map_or(statement, last_leaf);
                    runs.push((
                        first.start_byte(),
                        statement.end_byte(),
                        first.start_position(),
                        statement.end_position(),
                    ));
                }
            }
        }
        previous_damaged = damaged;
        previous = Some(statement);
    }
    (!runs.is_empty()).then_some(runs)
}

/// The last leaf of `node`, found without recursion. Each node's children
/// are counted once, and callers ask for distinct nodes, so their walks add
/// up to the tree's size at most. A block does not cost one step per
/// statement: its statements sit under hidden repetition nodes, which
/// tree-sitter's `ts_node_child` skips whole by their stored count of visible
/// children, so the `}` of a `main` of 50,000 statements is three children
/// away (a `TreeCursor`'s `goto_last_child` walks the same children; measured
/// in docs/benchmarks.md, *Syntax*).
fn last_leaf(mut node: Node<'_>) -> Node<'_> {
    while let Some(last) = node
        .child_count()
        .checked_sub(1)
        .and_then(|i| node.child(i))
    {
        node = last;
    }
    node
}

/// The tree-sitter point of a byte offset: rows end at `\n` (tree-sitter's
/// own convention), columns count bytes.
pub fn point_at(text: &str, offset: usize) -> Point {
    advance(Point { row: 0, column: 0 }, &text[..offset])
}

/// The point after `text`, which starts at `point`. Counting the line
/// breaks of half a 5,000-line file byte by byte would take a good part of
/// a keystroke's budget; `memchr` counts them with vector instructions.
fn advance(mut point: Point, text: &str) -> Point {
    let bytes = text.as_bytes();
    match memchr::memrchr(b'\n', bytes) {
        Some(last) => {
            point.row += memchr::memchr_iter(b'\n', bytes).count();
            point.column = text.len() - last - 1;
        }
        None => point.column += text.len(),
    }
    point
}

/// E002 at `cut`, the start of the line from which the parser gave up: the
/// range is that line (without its break: `\n`, `\r\n` or `\r`), or empty
/// at the end of the text.
fn stop_diagnostic(text: &str, stopped: GaveUp, file: FileId) -> Diagnostic {
    let cut = stopped.at;
    let end =
        memchr::memchr2(b'\n', b'\r', &text.as_bytes()[cut..]).map_or(text.len(), |at| cut + at);
    let to_u32 = |offset: usize| u32::try_from(offset).unwrap_or(u32::MAX);
    Diagnostic::new(
        Code::E002,
        Location {
            file,
            range: TextRange::new(to_u32(cut), to_u32(end)),
        },
        if stopped.memory {
            "the parser gave up here: recovering from the syntax errors of this file needed more \
             memory than a file of its size is allowed, and nothing from this line on is checked"
        } else {
            "the parser gave up here: recovering from the syntax errors of this file took longer \
             than a file of its size is allowed, and nothing from this line on is checked"
        },
    )
    .with_label("parsing stopped here")
}
