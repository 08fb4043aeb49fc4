//! How long one parse may take and how much memory it may ask for, and
//! what is parsed when it passes either.
//!
//! tree-sitter's error recovery is superlinear on some erroneous text (a
//! deep chain of unbraced `if`s with a stray `[` inside, thousands of lines
//! of `s[2] =}`, declarations glued together thousands of times, a run of
//! unclosed `(n {` heads each followed by two comment lines: findings F11
//! and F12 in `wip/fuzz-findings.md`, campaign seed 1 case 130885). Its
//! progress callback comes once per hundred parse actions, and the number of
//! actions stays linear on those inputs: the work grows inside each action.
//! So no count bounds the time, and the limit is a deadline: the CPU time
//! the parsing thread has spent on the parse may not pass [`TIME_BASE`] plus
//! one second per [`BYTES_PER_SECOND`] bytes of the text *the parser has
//! reached*, generous enough that no real program comes near it
//! (docs/reliability.md, "Limits", has the measured margin). Measured
//! against the place reached, a parse whose cost grows faster than the text
//! gives up where its cost leaves the line, not only once the allowance of
//! the whole text is spent; measured in the thread's own CPU time, the
//! machine's load does not move that place. When the deadline passes, the
//! parse is cancelled and the text is parsed again with everything from the
//! start of a line before the place the parser had reached blanked to spaces
//! (line breaks kept, so every position stays right; see [`parse_prefix`]
//! for which line): what comes before still gets its diagnostics, and E002
//! says where checking stopped.
//!
//! The same callback bounds the parse's memory: the bytes tree-sitter has
//! asked for on the parsing thread since the parse started (gross, counted
//! by the allocator of [`crate::memory`]) may not pass [`MEMORY_BASE`] plus
//! the lesser of [`MEMORY_PER_BYTE`] per byte reached and
//! [`MEMORY_PER_CHECK`] per progress call. Real programs ask for 20 to 140
//! bytes per byte and 3.2 to 4.2 KiB per call; the recovery of campaign
//! seed 3 case 520799 asked for 56 KiB per call (1,200 bytes per byte)
//! before the end of the text, and then, at its end, where tree-sitter
//! walks every path of its merged stack with no progress call between, for
//! 2.8 GB at once. Stopped early by its memory, such a parse never gets
//! there, and gives up as it does at the deadline, with a message that says
//! why. The rate per call does not change with spaces between the tokens,
//! which dilute the rate per byte.
//!
//! What one stretch without progress calls asks for is bounded by the
//! allocator instead: a parse may never ask for more than [`memory_cap`]
//! (the allowance of its whole text), and the request that would pass it
//! abandons the parse on the spot, freeing all it held
//! ([`crate::memory::parse_guarded`]). The end of F13's text (a quadratic
//! walk over the parse stack that asked for 12 GB for 1 MB) stops there,
//! as a give-up for memory.
//!
//! The same callback asks the caller whether the parse is still wanted (the
//! language server's worker cancels the parse of a version that went by):
//! a cancelled parse stops at once and yields no tree, and nothing is
//! parsed again.

use std::cell::Cell;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Language, ParseState, Tree};

use crate::memory::{Guarded, parse_guarded};

/// The CPU time every parse may take, whatever the text's length.
pub const TIME_BASE: Duration = Duration::from_secs(1);

/// The CPU time a parse may take grows by one second for this many bytes
/// of text reached. Real programs parse at 4 MB/s or more of CPU time
/// (docs/reliability.md, "Limits"), sixteen times faster than this.
pub const BYTES_PER_SECOND: usize = 256 * 1024;

/// The memory tree-sitter may ask for in every parse, whatever the text's
/// length (counted gross, as [`crate::memory`] says).
pub const MEMORY_BASE: u64 = 32 << 20;

/// The memory a parse may ask for grows by this many bytes per byte of
/// text reached (or [`MEMORY_PER_CHECK`] per progress call, when that is
/// less). Real programs ask for 20 to 45, a flat chain `x+x+…` of
/// one-byte terms 140 (docs/reliability.md, "Limits"); the error recovery
/// that exhausted memory 1,200.
pub const MEMORY_PER_BYTE: u64 = 512;

/// The memory a parse may ask for grows by at most this many bytes per progress call
/// (a hundred parse actions; whitespace between tokens makes none). Real
/// programs and C++ ask for 3.2 to 4.2 KiB per call over a whole parse; the
/// error recovery that exhausted memory 40 to 50 KiB, with or without
/// spaces between its tokens.
pub const MEMORY_PER_CHECK: u64 = 16 << 10;

/// The memory a parse may ask for, on top of [`MEMORY_PER_CHECK`] per
/// progress call, for each comment of the run of comments it is in (at
/// most [`MEMORY_PER_BYTE`] per byte all told). tree-sitter holds a run of
/// comments after a file's last item on its parse stack until the end of
/// the file, at about 1.5 KiB each (six blocks; 250 bytes for a comment
/// elsewhere) and one parse action each: 150 KiB per progress call, which
/// cut valid files off at about 1 MB. Only the run being parsed counts, so
/// comments spread through an erroneous text (case 520799 with comments
/// between its units) raise the allowance by a few comments' worth at most.
pub const MEMORY_PER_HELD_COMMENT: u64 = 2 << 10;

/// Comment runs shorter than this are not counted (see
/// [`MEMORY_PER_HELD_COMMENT`]): what they hold is within the allowance per
/// call.
const COUNTED_RUN: usize = 16;

/// The runs of at least [`COUNTED_RUN`] comments of a text, comments that
/// follow one another with only whitespace between (`//` and `/* */`,
/// outside string and character literals): each run's start and end, and
/// the end of each comment in them, in order. Made only for a parse that
/// has passed its allowance otherwise (rare), so a byte at a time.
#[derive(Debug, Default)]
struct CommentRuns {
    runs: Vec<(u32, u32)>,
    ends: Vec<u32>,
}

/// An offset in a text the parser reads (tree-sitter's offsets are u32).
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

impl CommentRuns {
    fn of(text: &str) -> CommentRuns {
        let bytes = text.as_bytes();
        let mut found = CommentRuns::default();
        // The run being read: its start and the ends of its comments.
        let mut start = 0;
        let mut run: Vec<u32> = Vec::new();
        let close = |found: &mut CommentRuns, start: u32, run: &mut Vec<u32>| {
            if run.len() >= COUNTED_RUN {
                found.runs.push((start, *run.last().unwrap_or(&start)));
                found.ends.extend_from_slice(run);
            }
            run.clear();
        };
        let mut i = 0;
        while i < bytes.len() {
            let comment_end = match (bytes[i], bytes.get(i + 1)) {
                (b'/', Some(b'/')) => Some(
                    memchr::memchr2(b'\n', b'\r', &bytes[i..]).map_or(bytes.len(), |at| i + at),
                ),
                (b'/', Some(b'*')) => Some(
                    memchr::memmem::find(&bytes[i + 2..], b"*/")
                        .map_or(bytes.len(), |at| i + at + 4),
                ),
                _ => None,
            };
            if let Some(end) = comment_end {
                if run.is_empty() {
                    start = offset(i);
                }
                run.push(offset(end));
                i = end;
                continue;
            }
            match bytes[i] {
                byte if byte.is_ascii_whitespace() => {}
                quote @ (b'"' | b'\'') => {
                    close(&mut found, start, &mut run);
                    i += 1;
                    while i < bytes.len() && !matches!(bytes[i], b'\n' | b'\r') && bytes[i] != quote
                    {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                }
                _ => close(&mut found, start, &mut run),
            }
            i += 1;
        }
        close(&mut found, start, &mut run);
        found
    }

    /// The comments of the run that byte `reached` is in or just after,
    /// that end before it.
    fn held(&self, reached: usize) -> u64 {
        let reached = offset(reached);
        let run = self.runs.partition_point(|&(start, _)| start <= reached);
        let Some(&(start, end)) = run.checked_sub(1).and_then(|r| self.runs.get(r)) else {
            return 0;
        };
        // Just after the run, the parser may still hold it while it reads
        // the next token; no further.
        if reached > end.saturating_add(256) {
            return 0;
        }
        let before = |at: u32| self.ends.partition_point(|&e| e <= at);
        (before(reached) - before(start)) as u64
    }
}

/// The most `[` a text may hold open at once, outside comments and string
/// literals, before it is parsed; past it the parse gives up at the line of
/// the `[` that passed it, as for memory. Tree-sitter's error recovery can
/// nest every later line of a run of `x[;` statements inside the one
/// before once some other token interrupts the run, so that its stack
/// grows with the text, and the walk over that stack when the text ends
/// (`ts_stack_pop_all`, which calls nothing of `op2`'s but the allocator,
/// so that neither the deadline nor the memory bound can stop it) is
/// quadratic in it: 176 KB of such lines asked for 1.36 GB, the 1 MB of the
/// campaign of 883bf24's case 79163 12 GB (docs/reliability.md, F13). No
/// program nests anything deeper than the language's 200 levels, so a
/// text with this many `[` open is broken past recovery there; a text with
/// fewer costs at most what 512 such lines cost, about 40 MB. The general
/// bound on that walk is [`memory_cap`]; this check stops its known shape
/// earlier, for a one-pass scan instead of hundreds of megabytes.
pub const MOST_OPEN_SUBSCRIPTS: usize = 512;

/// The offset of the `[` that holds more than [`MOST_OPEN_SUBSCRIPTS`] open
/// at once in `text`, if one does: one pass, skipping `//` and `/* */`
/// comments and string and character literals (to their closing quote or
/// the end of their line; a backslash escapes the byte after it). A `]`
/// closes one, when one is open. Every parse and reparse makes this pass
/// over the whole text, so the stretches between the bytes that may start a
/// comment or a literal are read 16 bytes at a time in builds for x86-64
/// (`brackets`; other targets read a byte at a time): a byte at a time it
/// took 0.25 ms for a 200 KB program, most of a keystroke's reparse
/// (docs/benchmarks.md, "The open-subscripts scan, 16 bytes at a time").
/// Public for that benchmark.
pub fn subscripts_past_limit(text: &str) -> Option<usize> {
    past_limit_with(text, brackets::until_stop)
}

/// [`subscripts_past_limit`] with `until_stop` counting the brackets of each
/// stretch up to the next `/`, `"` or `'`.
fn past_limit_with(
    text: &str,
    until_stop: fn(&[u8], usize, &mut usize) -> Result<usize, usize>,
) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut open = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        i = match until_stop(bytes, i, &mut open) {
            Ok(stop) => stop,
            Err(past) => return Some(past),
        };
        match bytes.get(i) {
            None => break,
            Some(b'/') if bytes.get(i + 1) == Some(&b'/') => {
                i = memchr::memchr2(b'\n', b'\r', &bytes[i..]).map_or(bytes.len(), |at| i + at);
                continue;
            }
            Some(b'/') if bytes.get(i + 1) == Some(&b'*') => {
                i = memchr::memmem::find(&bytes[i + 2..], b"*/")
                    .map_or(bytes.len(), |at| i + at + 4);
                continue;
            }
            Some(&quote @ (b'"' | b'\'')) => {
                i += 1;
                while i < bytes.len() && !matches!(bytes[i], b'\n' | b'\r') && bytes[i] != quote {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            // A `/` that starts no comment.
            Some(_) => {}
        }
        i += 1;
    }
    None
}

/// The brackets of a stretch of text: from an offset to the next byte that
/// may start a comment or a literal (`/`, `"`, `'`), `[` adds one to the
/// count of those open, `]` takes one off (none below zero). `Ok` is where
/// the stretch ends (that byte, or the text's end); `Err` the offset of the
/// `[` that took the count past [`MOST_OPEN_SUBSCRIPTS`].
mod brackets {
    use super::MOST_OPEN_SUBSCRIPTS;

    /// A byte at a time: the reference, and the path where 16 bytes at a
    /// time are not available.
    pub(super) fn one_at_a_time(
        bytes: &[u8],
        from: usize,
        open: &mut usize,
    ) -> Result<usize, usize> {
        for (at, &byte) in bytes.iter().enumerate().skip(from) {
            match byte {
                b'/' | b'"' | b'\'' => return Ok(at),
                b'[' => {
                    *open += 1;
                    if *open > MOST_OPEN_SUBSCRIPTS {
                        return Err(at);
                    }
                }
                b']' => *open = open.saturating_sub(1),
                _ => {}
            }
        }
        Ok(bytes.len())
    }

    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    pub(super) fn until_stop(bytes: &[u8], from: usize, open: &mut usize) -> Result<usize, usize> {
        #[allow(unsafe_code)]
        // SAFETY: the function asks for SSE2, which this build enables for
        // every x86-64 processor (the `cfg` above); it reads `bytes` through
        // slices only.
        unsafe {
            sixteen_at_a_time(bytes, from, open)
        }
    }

    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    pub(super) fn until_stop(bytes: &[u8], from: usize, open: &mut usize) -> Result<usize, usize> {
        one_at_a_time(bytes, from, open)
    }

    /// The bytes of `chunk` equal to `byte`, a bit each (bit `k` for byte `k`).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[target_feature(enable = "sse2")]
    fn equal(chunk: std::arch::x86_64::__m128i, byte: u8) -> u32 {
        use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8};
        let mask = _mm_movemask_epi8(_mm_cmpeq_epi8(chunk, _mm_set1_epi8(byte.cast_signed())));
        mask.cast_unsigned()
    }

    /// [`one_at_a_time`]'s answer, 16 bytes at a time: the brackets of a
    /// chunk are a bit each, counted with one instruction where the chunk
    /// holds only `[` or only `]` (or `[` that stay within the limit), and
    /// walked in order otherwise (a `]` at zero closes nothing).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    #[target_feature(enable = "sse2")]
    fn sixteen_at_a_time(bytes: &[u8], from: usize, open: &mut usize) -> Result<usize, usize> {
        use std::arch::x86_64::_mm_set_epi64x;
        let mut at = from;
        while let Some(chunk) = bytes.get(at..at + 16) {
            let (low, high) = chunk.split_at(8);
            let word = |half: &[u8]| i64::from_le_bytes(half.try_into().expect("8 bytes"));
            let chunk = _mm_set_epi64x(word(high), word(low));
            let stops = equal(chunk, b'/') | equal(chunk, b'"') | equal(chunk, b'\'');
            let before = if stops == 0 {
                u32::MAX
            } else {
                (1 << stops.trailing_zeros()) - 1
            };
            let opens = equal(chunk, b'[') & before;
            let closes = equal(chunk, b']') & before;
            let added = opens.count_ones() as usize;
            if closes == 0 && *open + added <= MOST_OPEN_SUBSCRIPTS {
                *open += added;
            } else if opens == 0 {
                *open = open.saturating_sub(closes.count_ones() as usize);
            } else {
                let mut bits = opens | closes;
                while bits != 0 {
                    let bit = bits.trailing_zeros();
                    if opens >> bit & 1 == 1 {
                        *open += 1;
                        if *open > MOST_OPEN_SUBSCRIPTS {
                            return Err(at + bit as usize);
                        }
                    } else {
                        *open = open.saturating_sub(1);
                    }
                    bits &= bits - 1;
                }
            }
            if stops != 0 {
                return Ok(at + stops.trailing_zeros() as usize);
            }
            at += 16;
        }
        one_at_a_time(bytes, at, open)
    }
}

/// Attempts after a give-up, each from a line start nearer the first error
/// than the one before (half as far past it, halved again while that snaps
/// to a line already tried); then one from the line of the first error
/// unless that was tried, and in the end the text blanked whole. Each
/// attempt is a distinct cut. So a fresh parse takes at most
/// [`MOST_ATTEMPTS`]` - 1` times its allowance and a blank parse, and an
/// incremental one [`MOST_ATTEMPTS`] (its damaged items are parsed in a
/// second pass, with an allowance of its own, before it can give up);
/// usually the first retry succeeds, in a quarter of the allowance or less.
const RETRIES: usize = 3;

/// The most parses within [`ParseLimit::time_allowed`] that one parse of a
/// text may make, an incremental one included (see [`RETRIES`]); a blank
/// parse of the text may follow them.
pub const MOST_ATTEMPTS: u32 = RETRIES as u32 + 3;

/// Where a parse that was stopped had got to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// The byte offset the parser had reached.
    pub reached: usize,
    /// The offset it had reached when it first had an error (within a
    /// hundred parse actions of the first error), if it had one.
    pub first_error: Option<usize>,
    /// The caller cancelled the parse: it yields no tree.
    pub cancelled: bool,
    /// It was stopped for the memory it asked for, not its time.
    pub memory: bool,
}

/// Which of its limits a parse passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exceeded {
    /// Its CPU time ([`ParseLimit::time_allowed`]).
    Time,
    /// The memory it asked for ([`ParseLimit::memory_allowed`]).
    Memory,
}

/// What stops a parse.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParseLimit {
    /// A deadline of [`TIME_BASE`] plus one second per [`BYTES_PER_SECOND`]
    /// bytes of text reached, in the CPU time of the parsing thread: what
    /// every command and the language server use; and the memory bound,
    /// [`ParseLimit::memory_allowed`].
    #[default]
    Time,
    /// At most this many of tree-sitter's progress calls (one per hundred
    /// parse actions), in place of the deadline and the memory bound.
    /// Deterministic, but it does not bound the time or the memory on the
    /// inputs they are for: it lets tests give up at a chosen place, or
    /// (with `u64::MAX`) parse what the bounds would stop.
    Checks(u64),
}

impl ParseLimit {
    /// The CPU time a parse that has reached byte `len` may have taken
    /// under [`ParseLimit::Time`]: the most one attempt at a text of `len`
    /// bytes takes.
    pub fn time_allowed(len: usize) -> Duration {
        TIME_BASE + Duration::from_secs_f64(len as f64 / BYTES_PER_SECOND as f64)
    }

    /// The bytes tree-sitter may ask for (gross, see [`crate::memory`])
    /// in a parse that has reached byte `len` in `checks` progress calls,
    /// under either limit: [`MEMORY_BASE`] plus the lesser of
    /// [`MEMORY_PER_BYTE`] per byte and [`MEMORY_PER_CHECK`] per call.
    pub fn memory_allowed(len: usize, checks: u64) -> u64 {
        Self::memory_allowed_holding(len, checks, 0)
    }

    /// [`ParseLimit::memory_allowed`] for a parse inside a run of comments,
    /// `held` of which it has passed: [`MEMORY_PER_HELD_COMMENT`] more for
    /// each, within the same allowance per byte.
    pub fn memory_allowed_holding(len: usize, checks: u64, held: u64) -> u64 {
        let by_text = MEMORY_PER_BYTE.saturating_mul(len as u64);
        let by_work = MEMORY_PER_CHECK
            .saturating_mul(checks)
            .saturating_add(MEMORY_PER_HELD_COMMENT.saturating_mul(held));
        MEMORY_BASE.saturating_add(by_text.min(by_work))
    }

    /// The most CPU time a parse of `len` bytes takes under
    /// [`ParseLimit::Time`], its retries after a give-up included:
    /// [`MOST_ATTEMPTS`] allowances and a blank parse (one more allowance
    /// stands for it: a few actions per line). Wall time is longer when the
    /// thread waits for a core.
    pub fn worst_case(len: usize) -> Duration {
        Self::time_allowed(len) * (MOST_ATTEMPTS + 1)
    }
}

/// What a parse's deadline measures: the CPU time the parsing thread has
/// used since the parse started (a parse runs on one thread, from start to
/// end, in tree-sitter's C), so that a busy machine slows the parse without
/// moving the place it gives up at; the time since it started where the
/// thread's CPU time cannot be read (not on Unix). Public for the other
/// parsers of the project (the import's C++ parse) to share the deadline's
/// measure.
#[derive(Debug)]
pub struct ParseClock {
    since: Instant,
    cpu_at_start: Option<Duration>,
    requested_at_start: u64,
    /// Calls of [`ParseClock::over_memory`]: the parse's progress calls.
    checks: Cell<u64>,
}

impl ParseClock {
    /// Starts measuring on the calling thread (and installs the allocator
    /// that counts tree-sitter's memory, if no parse has yet).
    pub fn start() -> ParseClock {
        crate::memory::install();
        ParseClock {
            since: Instant::now(),
            cpu_at_start: thread_cpu_time(),
            requested_at_start: crate::memory::requested(),
            checks: Cell::new(0),
        }
    }

    /// The bytes tree-sitter has asked for on this thread since
    /// [`ParseClock::start`] (gross: see [`crate::memory`]).
    pub fn requested(&self) -> u64 {
        crate::memory::requested().saturating_sub(self.requested_at_start)
    }

    /// Whether the parse, at a progress call that finds it at byte
    /// `reached`, has asked for more memory than
    /// [`ParseLimit::memory_allowed`]; to be called once at each progress
    /// call (it counts them).
    pub fn over_memory(&self, reached: usize) -> bool {
        let checks = self.checks.get() + 1;
        self.checks.set(checks);
        self.requested() > ParseLimit::memory_allowed(reached, checks)
    }

    /// Which limit of a parse that has reached byte `reached` it has
    /// passed, if any: first the memory ([`ParseClock::over_memory`]),
    /// then the time. To be called once at each progress call.
    pub fn exceeded(&self, reached: usize) -> Option<Exceeded> {
        if self.over_memory(reached) {
            Some(Exceeded::Memory)
        } else if self.spent() > ParseLimit::time_allowed(reached) {
            Some(Exceeded::Time)
        } else {
            None
        }
    }

    /// Whether the parse is within its memory allowance once the `held`
    /// comments of the run it is in are counted
    /// ([`ParseLimit::memory_allowed_holding`]); after
    /// [`ParseClock::exceeded`] at the same progress call.
    pub fn within_memory_holding(&self, reached: usize, held: u64) -> bool {
        self.requested() <= ParseLimit::memory_allowed_holding(reached, self.checks.get(), held)
    }

    /// Whether the parse has passed [`ParseLimit::time_allowed`].
    pub fn over_time(&self, reached: usize) -> bool {
        self.spent() > ParseLimit::time_allowed(reached)
    }

    /// The time spent since [`ParseClock::start`], on the same thread.
    pub fn spent(&self) -> Duration {
        match (self.cpu_at_start, thread_cpu_time()) {
            (Some(start), Some(now)) => now.saturating_sub(start),
            _ => self.since.elapsed(),
        }
    }
}

/// The CPU time the calling thread has used.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` through a valid,
    // exclusive pointer and reads nothing else.
    #[allow(unsafe_code)]
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (status == 0).then(|| {
        Duration::new(
            u64::try_from(now.tv_sec).unwrap_or(0),
            u32::try_from(now.tv_nsec).unwrap_or(0),
        )
    })
}

#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

/// The most memory (gross, see [`crate::memory`]) one parse of a text of
/// `len` bytes may ask for under [`ParseLimit::Time`] at any moment, its
/// parser's included: [`ParseLimit::memory_allowed`] for the whole text.
/// Past it, the allocator abandons the parse on the spot
/// ([`crate::memory::parse_guarded`]), even where tree-sitter calls no
/// callback of ours (its final walk over the parse stack, F13).
pub fn memory_cap(len: usize) -> u64 {
    MEMORY_BASE.saturating_add(MEMORY_PER_BYTE.saturating_mul(len as u64))
}

/// Whether `language` loads into this tree-sitter library (a grammar of an
/// ABI version the library reads), checked with a parser made for the check
/// alone. The counting allocator is installed first, as before every parser
/// of the process: a check that made its parser before the first parse
/// could run on one thread while another installs the allocator.
pub fn check_language(language: &Language) -> Result<(), tree_sitter::LanguageError> {
    crate::memory::install();
    tree_sitter::Parser::new().set_language(language)
}

/// Parses `text` in `language` (reusing `old`, edited to match it) within
/// `limit`, unless `cancelled()` says so first (asked at each of
/// tree-sitter's progress calls). `Err` says where the parser had got to
/// when it was stopped, and whether it was cancelled. Under
/// [`ParseLimit::Time`] the parse is also abandoned the moment it asks for
/// more than [`memory_cap`] of the text, wherever it is. `cancelled` runs
/// inside the parse, with the guard paused (it may allocate through
/// tree-sitter, but must not parse with this function).
pub fn parse_within(
    language: &Language,
    text: &str,
    old: Option<&Tree>,
    limit: ParseLimit,
    cancelled: &dyn Fn() -> bool,
) -> Result<Tree, Stopped> {
    let clock = ParseClock::start();
    let mut reached = 0;
    let mut first_error = None;
    let mut checks = 0u64;
    let mut was_cancelled = false;
    let mut memory = false;
    let mut comments: Option<CommentRuns> = None;
    let mut progress = |state: &ParseState| {
        reached = reached.max(state.current_byte_offset());
        if state.has_error() && first_error.is_none() {
            first_error = Some(reached);
        }
        checks += 1;
        if cancelled() {
            was_cancelled = true;
            return ControlFlow::Break(());
        }
        let over = match limit {
            ParseLimit::Time => match clock.exceeded(reached) {
                // Over only for the comments it holds: the time decides.
                Some(Exceeded::Memory)
                    if clock.within_memory_holding(
                        reached,
                        comments
                            .get_or_insert_with(|| CommentRuns::of(text))
                            .held(reached),
                    ) =>
                {
                    clock.over_time(reached).then_some(Exceeded::Time)
                }
                over => over,
            },
            ParseLimit::Checks(most) => (checks > most).then_some(Exceeded::Time),
        };
        memory = over == Some(Exceeded::Memory);
        if over.is_some() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let cap = match limit {
        ParseLimit::Time => memory_cap(text.len()),
        ParseLimit::Checks(_) => u64::MAX,
    };
    let outcome = parse_guarded(language, text.as_bytes(), old, cap, &mut progress);
    let abandoned = match outcome {
        Guarded::Returned(Some(tree)) => return Ok(tree),
        Guarded::Returned(None) => false,
        Guarded::Abandoned => true,
    };
    Err(Stopped {
        reached: reached.min(text.len()),
        first_error: first_error.map(|at| at.min(text.len())),
        cancelled: was_cancelled,
        memory: memory || abandoned,
    })
}

/// A tree for `text` after a parse was `stopped`: the text blanked from a
/// line start is parsed. Where the parser had got to took the whole
/// allowance, and the work grows faster than the text after the first error,
/// so the first cut is half way from the first error to the place reached,
/// and each retry halves that distance again; then the line of the first
/// error (before it the text parses in linear time). Returns the tree and
/// the offset blanked from; `None` when `cancelled()` says so meanwhile.
pub(crate) fn parse_prefix(
    language: &Language,
    text: &str,
    stopped: Stopped,
    limit: ParseLimit,
    cancelled: &dyn Fn() -> bool,
) -> Option<(Tree, usize)> {
    for cut in cuts(text, stopped) {
        match parse_within(language, &blank_from(text, cut), None, limit, cancelled) {
            Ok(tree) => return Some((tree, cut)),
            Err(stopped) if stopped.cancelled => return None,
            Err(_) => {}
        }
    }
    // Nothing but spaces and line breaks: a few actions per line, linear.
    let blank = blank_from(text, 0);
    let tree = parse_within(
        language,
        &blank,
        None,
        ParseLimit::Checks(u64::MAX),
        &|| false,
    )
    .expect("a parse with no limit and no cancel always yields a tree");
    Some((tree, 0))
}

/// Where the attempts of [`parse_prefix`] blank `text` from, in order: at
/// most [`RETRIES`] line starts each half as far past the first error as
/// the one before (or less, when that snaps to a line start already
/// tried), then the line of the first error; each one once.
fn cuts(text: &str, stopped: Stopped) -> Vec<usize> {
    let reached = stopped.reached.min(text.len());
    let error = stopped.first_error.unwrap_or(0).min(reached);
    let first_line = line_start(text, error);
    let mut cuts = Vec::with_capacity(RETRIES + 1);
    let mut past_error = reached - error;
    while past_error > 0 && cuts.len() < RETRIES {
        past_error /= 2;
        let cut = line_start(text, error + past_error);
        // The cuts only move back: once one is the line of the first error,
        // so are the rest, and a repeat is the last one.
        if cut == first_line {
            break;
        }
        if cuts.last() != Some(&cut) {
            cuts.push(cut);
        }
    }
    cuts.push(first_line);
    cuts
}

/// `text` with every byte from `cut` on other than a line break (`\n`,
/// `\r`) replaced by a space: the same length, the same lines.
pub(crate) fn blank_from(text: &str, cut: usize) -> String {
    let mut blanked = String::with_capacity(text.len());
    blanked.push_str(&text[..cut]);
    blanked.extend(text.as_bytes()[cut..].iter().map(|&byte| {
        if byte == b'\n' || byte == b'\r' {
            char::from(byte)
        } else {
            ' '
        }
    }));
    blanked
}

/// The start of the line holding byte `offset`: just after the line break
/// before it, where a line break is `\n`, `\r\n` or a lone `\r`, as
/// [`crate::LineIndex`] and the editors count lines. An offset at the `\n`
/// of a `\r\n` is in the line that break ends.
fn line_start(text: &str, offset: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end = offset.min(bytes.len());
    if end > 0 && bytes.get(end) == Some(&b'\n') && bytes[end - 1] == b'\r' {
        end -= 1;
    }
    memchr::memrchr2(b'\n', b'\r', &bytes[..end]).map_or(0, |at| at + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Parse;
    use proptest::prelude::*;

    /// The `[` past the limit is found, `]` closes one, and brackets in
    /// comments and literals are not counted.
    #[test]
    fn open_subscripts_are_counted_outside_comments_and_literals() {
        let open = "x[".repeat(MOST_OPEN_SUBSCRIPTS);
        assert_eq!(subscripts_past_limit(&open), None);
        let past = format!("{open}y[");
        assert_eq!(subscripts_past_limit(&past), Some(open.len() + 1));
        assert_eq!(subscripts_past_limit(&format!("{open}]y[")), None);
        for hidden in ["// [\n", "/* [[ */", "\"[\"", "'['", "\"a\\\"[\""] {
            let text = format!("{open}{hidden}");
            assert_eq!(subscripts_past_limit(&text), None, "{hidden:?}");
        }
        // A literal ends at its line's end, an unclosed comment at the text's.
        assert_eq!(
            subscripts_past_limit(&format!("{open}\"\n[")),
            Some(open.len() + 2)
        );
        assert_eq!(subscripts_past_limit(&format!("{open}/* [")), None);
        // Balanced brackets, however many, are not open at once.
        assert_eq!(subscripts_past_limit(&"a[0]".repeat(10_000)), None);
    }

    /// The scan as it was first written, a byte at a time: the oracle for
    /// the one that reads 16 bytes at a time.
    fn scanned_one_byte_at_a_time(text: &str) -> Option<usize> {
        let bytes = text.as_bytes();
        let mut open = 0usize;
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'/' if bytes.get(i + 1) == Some(&b'/') => {
                    i = memchr::memchr2(b'\n', b'\r', &bytes[i..]).map_or(bytes.len(), |at| i + at);
                    continue;
                }
                b'/' if bytes.get(i + 1) == Some(&b'*') => {
                    i = memchr::memmem::find(&bytes[i + 2..], b"*/")
                        .map_or(bytes.len(), |at| i + at + 4);
                    continue;
                }
                quote @ (b'"' | b'\'') => {
                    i += 1;
                    while i < bytes.len() && !matches!(bytes[i], b'\n' | b'\r') && bytes[i] != quote
                    {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'[' => {
                    open += 1;
                    if open > MOST_OPEN_SUBSCRIPTS {
                        return Some(i);
                    }
                }
                b']' => open = open.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// Texts made of the pieces the scan tells apart, after enough `[` to
    /// bring the count near the limit (or not), and sometimes after `]` that
    /// find none open (they must close nothing), so that chunks of 16 bytes
    /// start and end everywhere among them.
    fn scanned_text() -> impl Strategy<Value = String> {
        let piece = proptest::sample::select(vec![
            "[",
            "]",
            "[[[[[[[[",
            "]]]]]]]]",
            "x[i]",
            "/",
            "//",
            "/*",
            "*/",
            "\"",
            "'",
            "\\",
            "\n",
            "\r",
            "x",
            "abcdefghijklmnop",
            " ",
            "é",
            "y[0] = 1.0 / z[j];\n",
        ]);
        (
            proptest::sample::select(vec![0, 0, 1, 3, 8, 15, 17]),
            proptest::sample::select(vec![0, 1, 200, 490, 505, 511, 512, 513]),
            proptest::collection::vec(piece, 0..300),
        )
            .prop_map(|(closes, opens, pieces)| {
                "]".repeat(closes) + &"[".repeat(opens) + &pieces.concat()
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

        /// The scan 16 bytes at a time (in builds for x86-64) finds
        /// the same `[`, or none, as the first one, a byte at a time, and so
        /// does the byte-at-a-time path of other processors.
        #[test]
        fn the_scan_in_chunks_finds_what_a_byte_at_a_time_finds(text in scanned_text()) {
            let expected = scanned_one_byte_at_a_time(&text);
            prop_assert_eq!(subscripts_past_limit(&text), expected);
            prop_assert_eq!(past_limit_with(&text, brackets::one_at_a_time), expected);
        }
    }

    /// The same on the texts the benchmark and the campaigns' worst inputs
    /// use, and on every offset of a long one.
    #[test]
    fn the_scan_in_chunks_agrees_on_programs_and_at_every_offset() {
        let program = crate::synth::program(500);
        let open = crate::synth::open_subscripts_around(600, ")");
        for text in [program.as_str(), open.as_str()] {
            assert_eq!(
                subscripts_past_limit(text),
                scanned_one_byte_at_a_time(text)
            );
        }
        assert!(subscripts_past_limit(&open).is_some());
        // `]` with none open close nothing, also in one chunk with `[`.
        let zero = "]".repeat(8) + &"[".repeat(MOST_OPEN_SUBSCRIPTS + 1);
        assert_eq!(subscripts_past_limit(&zero), Some(8 + MOST_OPEN_SUBSCRIPTS));
        let near = "[".repeat(MOST_OPEN_SUBSCRIPTS - 20) + &"a[b/c]'[\\'\"x\"]".repeat(8);
        for cut in 0..near.len() {
            let text = format!("{}[[[[[[[[[[[[[[[[[[[[[[[[{}", &near[..cut], &near[cut..]);
            assert_eq!(
                subscripts_past_limit(&text),
                scanned_one_byte_at_a_time(&text),
                "{cut}"
            );
        }
    }

    #[test]
    fn blanking_keeps_length_and_line_breaks() {
        let text = "ab\ncé\r\nf";
        let blanked = blank_from(text, 3);
        assert_eq!(blanked.len(), text.len());
        assert_eq!(blanked, "ab\n   \r\n ");
        assert_eq!(blank_from(text, text.len()), text);
    }

    #[test]
    fn line_start_finds_the_line_of_an_offset() {
        let text = "one\ntwo\nthree";
        assert_eq!(line_start(text, 0), 0);
        assert_eq!(line_start(text, 3), 0);
        assert_eq!(line_start(text, 4), 4);
        assert_eq!(line_start(text, 6), 4);
        assert_eq!(line_start(text, 100), 8);
        // `\r\n` and a lone `\r` end lines too.
        let text = "a\r\nb\rc";
        assert_eq!(line_start(text, 1), 0);
        assert_eq!(line_start(text, 2), 0, "inside the `\\r\\n` of line 0");
        assert_eq!(line_start(text, 3), 3);
        assert_eq!(line_start(text, 4), 3);
        assert_eq!(line_start(text, 5), 5);
        assert_eq!(line_start(text, 6), 5);
    }

    fn stopped(first_error: usize, reached: usize) -> Stopped {
        Stopped {
            reached,
            first_error: Some(first_error),
            cancelled: false,
            memory: false,
        }
    }

    #[test]
    fn each_retry_blanks_from_a_line_not_tried_before() {
        // A long line holds the first error and the place reached: every
        // halving snaps to its start, which is tried once.
        let long = format!("x;\n{}\ny;\n", "a".repeat(1000));
        assert_eq!(cuts(&long, stopped(10, 900)), vec![3]);
        // Short lines after it: the halvings that land in the long line are
        // its start, tried once, last.
        let text = format!("{long}{}", "z;\n".repeat(400));
        let reached = text.len() - 1;
        let tried = cuts(&text, stopped(10, reached));
        let line = |offset: usize| text[..offset].matches('\n').count();
        assert_eq!(tried.last(), Some(&3), "the line of the first error last");
        assert!(tried.len() <= RETRIES + 1, "{tried:?}");
        assert!(tried.windows(2).all(|w| w[0] > w[1]), "{tried:?}");
        assert!(
            tried
                .iter()
                .all(|&cut| cut == 0 || &text[cut - 1..cut] == "\n")
        );
        // Each halving that lands past the long line is a distinct line.
        let past = (reached - 10) / 2;
        assert_eq!(line(tried[0]), line(10 + past));
        // No error seen: from half way to the place reached, down to the
        // first line.
        let none = Stopped {
            first_error: None,
            ..stopped(0, reached)
        };
        assert_eq!(cuts(&text, none).last(), Some(&0));
        assert_eq!(cuts("", stopped(0, 0)), vec![0]);
    }

    #[test]
    fn only_long_runs_of_comments_are_held() {
        let line = "// a comment\n";
        let text = format!(
            "set a;\n{}set b; /* x */ \"// not a comment\"\n{}/* c */  /* d */\nset c;\n",
            line.repeat(3),
            line.repeat(COUNTED_RUN),
        );
        let runs = CommentRuns::of(&text);
        // The three lines after `set a;` are too few; the literal is no
        // comment; the long run takes the two block comments after it.
        assert_eq!(runs.runs.len(), 1, "{runs:?}");
        let (start, end) = (runs.runs[0].0 as usize, runs.runs[0].1 as usize);
        assert_eq!(&text[start..start + 2], "//");
        assert_eq!(&text[end - 7..end], "/* d */");
        assert_eq!(runs.ends.len(), COUNTED_RUN + 2);
        assert_eq!(runs.held(start), 0);
        assert_eq!(runs.held(start + line.len() * 5), 5);
        assert_eq!(runs.held(end), COUNTED_RUN as u64 + 2);
        assert_eq!(runs.held(0), 0);
        assert_eq!(
            runs.held(end + 100),
            COUNTED_RUN as u64 + 2,
            "reading the next token"
        );
        assert_eq!(runs.held(end + 300), 0, "past the run");
        // The allowance it buys.
        assert_eq!(
            ParseLimit::memory_allowed_holding(1 << 20, 10, 100),
            MEMORY_BASE + 10 * MEMORY_PER_CHECK + 100 * MEMORY_PER_HELD_COMMENT
        );
        assert_eq!(
            ParseLimit::memory_allowed_holding(1000, 10, 1 << 30),
            MEMORY_BASE + 1000 * MEMORY_PER_BYTE
        );
    }

    #[test]
    fn error_recovery_that_asks_for_too_much_memory_stops_before_the_end_of_the_text() {
        // Unbounded, the end of this text asks for 3.1 GB at once, where no
        // progress call comes (`crate::synth`): the parse must stop before.
        // With 60 spaces after each unit it asks for 127 bytes per byte,
        // under `MEMORY_PER_BYTE`, and as much per progress call as without.
        for spaces in [0, 60] {
            let text = crate::synth::unclosed_subscripts_in_a_call(8_000, spaces);
            let stopped = crate::on_parse_stack(text.len(), || {
                parse_within(
                    &crate::ast::language(),
                    &text,
                    None,
                    ParseLimit::Time,
                    &|| false,
                )
            })
            .expect_err("the parse stops");
            assert!(stopped.memory, "{spaces} spaces: {stopped:?}");
            assert!(!stopped.cancelled);
            // 56 KiB per call from the start: past the allowance near call
            // 840, a little under half way through the units.
            assert!(
                stopped.reached < text.len() * 3 / 4,
                "{spaces} spaces: stopped at {} of {}",
                stopped.reached,
                text.len()
            );
        }
    }

    /// The resident memory of this process, in bytes (Linux).
    #[cfg(target_os = "linux")]
    fn resident() -> u64 {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
        let pages: u64 = statm
            .split_whitespace()
            .nth(1)
            .and_then(|field| field.parse().ok())
            .expect("statm's second field is the resident pages");
        // SAFETY: `sysconf` reads a constant of the system.
        #[allow(unsafe_code)]
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        pages * u64::try_from(page).unwrap_or(4096)
    }

    /// Runs the test `name` of this binary again, in a process of its own
    /// where no other test has allocated or parsed: `true` in that process,
    /// where the test goes on; `false` in this one, once the other passed.
    fn alone(name: &str) -> bool {
        const ALONE: &str = "OP2_SYNTAX_TEST_ALONE";
        if std::env::var_os(ALONE).is_some() {
            return true;
        }
        let output = std::process::Command::new(std::env::current_exe().expect("this test"))
            .args(["--exact", name, "--test-threads", "1", "--nocapture"])
            .env(ALONE, "1")
            .output()
            .expect("this test binary runs again");
        assert!(
            output.status.success(),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("1 passed"),
            "the test ran alone"
        );
        false
    }

    /// A grammar checked before any parse of the process (as `op2 import`
    /// checks the C++ grammar) is checked with the counting allocator
    /// installed, so that no parser is made before it is.
    #[test]
    fn checking_a_grammar_first_installs_the_allocator() {
        if !alone("limit::tests::checking_a_grammar_first_installs_the_allocator") {
            return;
        }
        assert_eq!(crate::memory::requested(), 0, "nothing parsed before");
        check_language(&crate::ast::language()).expect("the bundled grammar loads");
        assert!(
            crate::memory::requested() > 0,
            "the check's parser was allocated through the counting allocator"
        );
    }

    /// F13 with the open-subscripts check out of the way (it is
    /// `run_parser`'s, not `parse_within`'s): the walk at the text's end,
    /// which no progress call interrupts, is abandoned by the allocator at
    /// the cap, and everything the abandoned parse held is freed, so that
    /// parses of such texts one after another do not add up. The process's
    /// resident memory is measured in a process of its own (this test binary
    /// again, running this test alone), where no other test allocates.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_walk_with_no_progress_call_is_abandoned_at_the_cap_and_its_memory_freed() {
        if !alone(
            "limit::tests::a_walk_with_no_progress_call_is_abandoned_at_the_cap_and_its_memory_freed",
        ) {
            return;
        }
        // Unbounded: 1.36 GB and 4.9 s in a release build (F13).
        let text = crate::synth::open_subscripts_around(8_000, ")");
        let cap = memory_cap(text.len());
        let abandon = || {
            crate::on_parse_stack(text.len(), || {
                let before = crate::memory::requested();
                let stopped = parse_within(
                    &crate::ast::language(),
                    &text,
                    None,
                    ParseLimit::Time,
                    &|| false,
                )
                .expect_err("the parse is abandoned");
                let asked = crate::memory::requested() - before;
                (stopped, asked)
            })
        };
        let (stopped, asked) = abandon();
        assert!(stopped.memory, "{stopped:?}");
        assert!(!stopped.cancelled);
        // It had reached the end (its last progress call came within the
        // last two lines): the progress calls had found nothing wrong, and
        // the walk there asked for the rest.
        assert!(
            stopped.reached + 64 > text.len(),
            "{stopped:?} of {}",
            text.len()
        );
        // Near the cap, and at most the cap and the one request that
        // passed it (which the jump kept from being made): the set's
        // rebuild that would have passed it is counted before it is made.
        assert!(asked > cap / 4 * 3, "asked for {asked} of {cap}");
        assert!(asked < cap + (64 << 20), "asked for {asked} of {cap}");
        let after_one = resident();
        for _ in 0..6 {
            let (stopped, _) = abandon();
            assert!(stopped.memory);
        }
        let grown = resident().saturating_sub(after_one);
        assert!(
            grown < cap,
            "six more abandoned parses grew the process by {grown} bytes (cap {cap})"
        );
    }

    /// What the progress callback allocates through tree-sitter (here,
    /// trees it parses) is the caller's, not the guarded parse's: an
    /// abandon leaves it whole.
    #[test]
    fn what_the_progress_callback_allocates_survives_an_abandon() {
        let text = crate::synth::open_subscripts_around(8_000, ")");
        let small = crate::synth::program(20);
        let mut trees = Vec::new();
        let mut calls = 0;
        let mut progress = |_: &ParseState| {
            calls += 1;
            if calls % 50 == 1 {
                let mut parser = tree_sitter::Parser::new();
                parser
                    .set_language(&crate::ast::language())
                    .expect("the bundled grammar");
                trees.push(parser.parse(&small, None).expect("no callback: a tree"));
            }
            ControlFlow::Continue(())
        };
        let outcome = crate::on_parse_stack(text.len(), || {
            parse_guarded(
                &crate::ast::language(),
                text.as_bytes(),
                None,
                memory_cap(text.len()),
                &mut progress,
            )
        });
        assert!(matches!(outcome, Guarded::Abandoned), "{outcome:?}");
        assert!(trees.len() > 10, "{} trees", trees.len());
        // Memory freed under the trees would be reused by what follows.
        let expected = Parse::new(small.as_str()).tree().root_node().to_sexp();
        let fill: Vec<String> = (0..10_000).map(|n| format!("{n:064}")).collect();
        for tree in &trees {
            assert_eq!(tree.root_node().to_sexp(), expected);
        }
        drop(fill);
    }

    /// Texts that parse keep their trees whole after the guard closes, and
    /// the trees free normally on another thread.
    #[test]
    fn a_guarded_parse_that_returns_keeps_its_tree() {
        let text = crate::synth::program(200);
        let tree = parse_within(
            &crate::ast::language(),
            &text,
            None,
            ParseLimit::Time,
            &|| false,
        )
        .expect("a program parses");
        assert!(!tree.root_node().has_error());
        let again = parse_within(
            &crate::ast::language(),
            &text,
            Some(&tree),
            ParseLimit::Time,
            &|| false,
        )
        .expect("and again, reusing its tree");
        assert_eq!(tree.root_node().to_sexp(), again.root_node().to_sexp());
        std::thread::spawn(move || drop((tree, again)))
            .join()
            .expect("the trees free on another thread");
    }

    #[test]
    fn the_time_allowed_grows_with_the_text() {
        assert_eq!(ParseLimit::time_allowed(0), TIME_BASE);
        assert_eq!(
            ParseLimit::time_allowed(16 * 1024 * 1024),
            TIME_BASE + Duration::from_secs(64)
        );
        assert_eq!(
            ParseLimit::worst_case(1024 * 1024),
            (TIME_BASE + Duration::from_secs(4)) * 7
        );
        assert_eq!(ParseLimit::memory_allowed(0, 0), MEMORY_BASE);
        // By the text reached, or by the work done when that is less.
        assert_eq!(
            ParseLimit::memory_allowed(1024 * 1024, u64::MAX),
            (32 << 20) + (512 << 20)
        );
        assert_eq!(
            ParseLimit::memory_allowed(1024 * 1024, 1000),
            (32 << 20) + 1000 * (16 << 10)
        );
    }
}
