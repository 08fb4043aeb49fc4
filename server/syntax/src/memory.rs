//! The memory tree-sitter's C library asks for, counted per thread, and
//! parses that are abandoned the moment they ask for more than a cap (see
//! [`crate::limit`]).
//!
//! tree-sitter allocates through four functions that a program may replace,
//! once, before it makes any parser or tree ([`tree_sitter::set_allocator`]).
//! The ones installed here (`csrc/guard.c`) are libc's `malloc`, `calloc`,
//! `realloc` and `free`, as tree-sitter's defaults are, with two additions:
//! - each request adds the bytes it asks for to a counter of the calling
//!   thread. The count is gross (a `realloc` counts its whole new size, a
//!   `free` takes nothing off), because a parse's tree is freed later, often
//!   on another thread, and because gross allocation bounds both what a
//!   parse holds and the work it spends allocating. A parse reads the
//!   counter of its own thread at its start and at each progress call;
//! - within [`parse_guarded`], a request that takes the thread past the
//!   parse's cap does not return: it jumps back to the C function that
//!   called tree-sitter, and every block the parse had allocated is freed.
//!   That bounds the work tree-sitter does between two progress calls,
//!   where no callback of ours can stop it (its final walk over the parse
//!   stack, F13 in `wip/fuzz-findings.md`). The record's own tables count
//!   against the cap. The progress callback runs with the guard paused:
//!   what it allocates is the caller's, and nothing it asks for jumps.
//!
//! Since the functions are libc's own, memory that tree-sitter allocated
//! before they were installed is freed correctly by them, which is the
//! condition tree-sitter sets for installing them late.

use std::ffi::{c_char, c_int, c_void};
use std::ops::ControlFlow;
use std::sync::Once;

use tree_sitter::ffi::{
    TSInput, TSInputEncodingUTF8, TSParseOptions, TSParseState, TSParser, TSPoint, TSTree,
};
use tree_sitter::{Language, ParseState, Parser, Tree};

#[allow(unsafe_code)]
unsafe extern "C" {
    fn op2_ts_malloc(size: usize) -> *mut c_void;
    fn op2_ts_calloc(count: usize, size: usize) -> *mut c_void;
    fn op2_ts_realloc(block: *mut c_void, size: usize) -> *mut c_void;
    fn op2_ts_free(block: *mut c_void);
    safe fn op2_ts_requested() -> u64;
    safe fn op2_ts_guard_open(cap: u64) -> c_int;
    safe fn op2_ts_guard_close();
    fn op2_ts_guard_abandon();
    safe fn op2_ts_guard_pause();
    safe fn op2_ts_guard_resume();
    fn op2_ts_parse_guarded(
        parser: *mut TSParser,
        old_tree: *const TSTree,
        input: TSInput,
        options: TSParseOptions,
        tree: *mut *mut TSTree,
    ) -> c_int;
}

/// The bytes tree-sitter's C library has asked for on the calling thread
/// since the thread started (once [`install`] has run); it only grows.
pub(crate) fn requested() -> u64 {
    op2_ts_requested()
}

/// Installs the counting allocator, once per process. Every parse calls it
/// before it makes a parser ([`crate::limit::ParseClock::start`] and
/// [`parse_guarded`]), and so does the check of a grammar
/// ([`crate::limit::check_language`]): whichever comes first in the process
/// installs it, and the rest wait for that to finish.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        #[allow(unsafe_code)]
        // SAFETY: the four functions are one family (libc's allocator, as
        // tree-sitter's defaults, with counting and, inside a guard, a
        // record of each block that does not change what is freed), so
        // memory from before the call is freed correctly after it; none
        // returns null for a request of more than zero bytes (they abort
        // instead, as the defaults do); libc's pointers have the alignment
        // tree-sitter expects. The `Once` makes this the only call, and
        // every path that makes a parser in this workspace calls `install`
        // first, so no other thread is in tree-sitter while the library's
        // four pointers are written.
        unsafe {
            tree_sitter::set_allocator(Some(tree_sitter::Allocator {
                malloc: op2_ts_malloc,
                calloc: op2_ts_calloc,
                realloc: op2_ts_realloc,
                free: op2_ts_free,
            }));
        }
    });
}

/// How a guarded parse ended.
#[derive(Debug)]
pub(crate) enum Guarded {
    /// tree-sitter returned: a tree, or none when the progress callback
    /// stopped it.
    Returned(Option<Tree>),
    /// The parse asked for more than its cap and was abandoned, its memory
    /// freed.
    Abandoned,
}

/// The progress callback of a guarded parse, behind a thin pointer.
type Progress<'a> = &'a mut dyn FnMut(&ParseState) -> ControlFlow<()>;

/// Parses `text` in `language` (reusing `old`, edited to match it) with a
/// parser made for this parse, calling `progress` at each of tree-sitter's
/// progress calls (`Break` stops the parse), and abandoning it when it asks
/// for more than `cap` bytes (from the allocator's first request on, the
/// parser's own included). Not reentrant: `progress` must not parse.
///
/// An abandoned parse frees all it had allocated, except that the parts of
/// `old` it had taken for reuse keep the count tree-sitter added to them,
/// so `old` is never freed whole: a parse abandoned with an old tree leaks
/// that tree (the callers' retries parse afresh). A grammar's external
/// scanner that allocates with libc directly (the C++ grammar's, 68 bytes)
/// leaves that block too.
pub(crate) fn parse_guarded(
    language: &Language,
    text: &[u8],
    old: Option<&Tree>,
    cap: u64,
    progress: Progress<'_>,
) -> Guarded {
    install();
    // A second handle on `old` to hand to C (the same nodes), made outside
    // the guard: freed normally whatever happens.
    let old = OldTree(old.map_or(std::ptr::null_mut(), |tree| tree.clone().into_raw()));
    let guard = Guard::open(cap);
    let mut parser = Parser::new();
    // The guard closes (keeping its blocks, which `parser` frees) if this
    // panics.
    parser
        .set_language(language)
        .expect("the bundled grammars match the tree-sitter library they are built with");
    let parser = parser.into_raw();
    let mut progress = progress;
    let mut input = text;
    let options = TSParseOptions {
        payload: (&raw mut progress).cast::<c_void>(),
        progress_callback: Some(call_progress),
    };
    let c_input = TSInput {
        payload: (&raw mut input).cast::<c_void>(),
        read: Some(read_text),
        encoding: TSInputEncodingUTF8,
        decode: None,
    };
    let mut tree: *mut TSTree = std::ptr::null_mut();
    #[allow(unsafe_code)]
    // SAFETY: `parser` is a live parser made above and used by nothing
    // else; `old.0` is null or the handle `old` owns, alive for the call;
    // the payloads point at locals that outlive the call, of the types the
    // two callbacks read; the guard is open on this thread.
    let outcome = unsafe { op2_ts_parse_guarded(parser, old.0, c_input, options, &raw mut tree) };
    if outcome == 1 {
        // The parser and every block the parse allocated are freed with
        // the guard; `parser` is not used again.
        guard.abandon();
        return Guarded::Abandoned;
    }
    #[allow(unsafe_code)]
    // SAFETY: the parse returned, so tree-sitter's state is whole: the
    // parser made above is freed once, here.
    drop(unsafe { Parser::from_raw(parser) });
    drop(guard);
    #[allow(unsafe_code)]
    // SAFETY: a non-null result is a new tree that nothing else owns.
    let tree = (!tree.is_null()).then(|| unsafe { Tree::from_raw(tree) });
    Guarded::Returned(tree)
}

/// A handle on the old tree of a parse, for C: freed when dropped.
struct OldTree(*mut TSTree);

impl Drop for OldTree {
    fn drop(&mut self) {
        if !self.0.is_null() {
            #[allow(unsafe_code)]
            // SAFETY: the handle `Tree::into_raw` gave, freed once, here.
            drop(unsafe { Tree::from_raw(self.0) });
        }
    }
}

/// The guard of one parse on this thread ([`parse_guarded`]): dropped, it
/// closes and keeps its blocks (they are the tree's, or freed already);
/// [`Guard::abandon`] frees them instead.
struct Guard;

impl Guard {
    fn open(cap: u64) -> Guard {
        if op2_ts_guard_open(cap) != 0 {
            // Nothing parses inside a guarded parse (the progress callback
            // runs with the guard paused, and parses nothing); reaching
            // here is a bug.
            unreachable!("a guarded parse inside another on the same thread");
        }
        Guard
    }

    /// Frees every block allocated under the guard and not freed since.
    fn abandon(self) {
        std::mem::forget(self);
        #[allow(unsafe_code)]
        // SAFETY: called only after a jump, when nothing but the abandoned
        // parser refers to those blocks, and it is never used again.
        unsafe {
            op2_ts_guard_abandon();
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        op2_ts_guard_close();
    }
}

/// tree-sitter's read callback: the text from `byte_index` on.
#[allow(unsafe_code)]
unsafe extern "C" fn read_text(
    payload: *mut c_void,
    byte_index: u32,
    _position: TSPoint,
    bytes_read: *mut u32,
) -> *const c_char {
    // SAFETY: `payload` is the `&[u8]` of `parse_guarded`, alive for the
    // whole parse; `bytes_read` is tree-sitter's out-parameter.
    let text: &[u8] = unsafe { *payload.cast::<&[u8]>() };
    let from = usize::try_from(byte_index).map_or(text.len(), |at| at.min(text.len()));
    let rest = &text[from..];
    // SAFETY: as above.
    unsafe { *bytes_read = u32::try_from(rest.len()).unwrap_or(u32::MAX) };
    rest.as_ptr().cast::<c_char>()
}

/// tree-sitter's progress callback: `true` stops the parse. It runs the
/// caller's code with the guard paused, so that nothing it allocates is
/// recorded (an abandon would free it under the caller) and no request of
/// it jumps (over its Rust frames).
#[allow(unsafe_code)]
unsafe extern "C" fn call_progress(state: *mut TSParseState) -> bool {
    op2_ts_guard_pause();
    // SAFETY: the state's payload is the `Progress` of `parse_guarded`,
    // alive and not otherwise borrowed for the whole parse; `state` is
    // tree-sitter's, valid for this call.
    let stop = unsafe {
        let progress = &mut *(*state).payload.cast::<Progress<'_>>();
        progress(&ParseState::from_raw(state)).is_break()
    };
    op2_ts_guard_resume();
    stop
}
