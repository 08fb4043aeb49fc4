//! The memory tree-sitter's C library asks for, counted per thread, so that
//! a parse can be stopped when it has asked for more than its text's size
//! allows (see [`crate::limit`]).
//!
//! tree-sitter allocates through four functions that a program may replace,
//! once, before it makes any parser or tree ([`tree_sitter::set_allocator`]).
//! The ones installed here are libc's `malloc`, `calloc`, `realloc` and
//! `free`, as tree-sitter's defaults are, with one addition: each request
//! adds the bytes it asks for to a counter of the calling thread. The count
//! is gross (a `realloc` counts its whole new size, a `free` takes nothing
//! off), because a parse's tree is freed later, often on another thread,
//! and because gross allocation bounds both what a parse holds and the work
//! it spends allocating. A parse reads the counter of its own thread at its
//! start and at each progress call.
//!
//! Since the functions are libc's own, memory that tree-sitter allocated
//! before they were installed (a parser made first) is freed correctly by
//! them, which is the condition tree-sitter sets for installing them late.

use std::cell::Cell;
use std::ffi::c_void;
use std::io::Write;
use std::sync::Once;

thread_local! {
    /// The bytes tree-sitter has asked for on this thread. A constant
    /// initializer and no destructor: reading it never allocates.
    static REQUESTED: Cell<u64> = const { Cell::new(0) };
}

/// The bytes tree-sitter's C library has asked for on the calling thread
/// since the thread started (once [`install`] has run); it only grows.
pub(crate) fn requested() -> u64 {
    REQUESTED.try_with(Cell::get).unwrap_or(0)
}

fn count(bytes: usize) {
    let _ = REQUESTED.try_with(|requested| {
        requested.set(requested.get().saturating_add(bytes as u64));
    });
}

/// Installs the counting allocator, once per process. Every parse calls it
/// before it makes a parser ([`crate::limit::ParseClock::start`] and the
/// syntax crate's own parser): whichever parse comes first in the process
/// installs it, and the rest wait for that to finish.
pub(crate) fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        #[allow(unsafe_code)]
        // SAFETY: the four functions are one family (libc's allocator, as
        // tree-sitter's defaults), so memory from before the call is freed
        // correctly after it; none returns null for a request of more than
        // zero bytes (they abort instead, as the defaults do); libc's
        // pointers have the alignment tree-sitter expects. The `Once` makes
        // this the only call, and every path that makes a parser in this
        // workspace calls `install` first, so no other thread is in
        // tree-sitter while the library's four pointers are written.
        unsafe {
            tree_sitter::set_allocator(Some(tree_sitter::Allocator {
                malloc: counted_malloc,
                calloc: counted_calloc,
                realloc: counted_realloc,
                free: counted_free,
            }));
        }
    });
}

/// Ends the process when libc cannot give tree-sitter the `bytes` it asked
/// for, which it does not expect (tree-sitter's own allocator does the same).
fn out_of_memory(bytes: usize) -> ! {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "tree-sitter failed to allocate {bytes} bytes");
    std::process::abort()
}

#[allow(unsafe_code)]
extern "C" fn counted_malloc(size: usize) -> *mut c_void {
    count(size);
    // SAFETY: `malloc` accepts any size; a null result is handled below.
    let pointer = unsafe { libc::malloc(size) };
    if pointer.is_null() && size > 0 {
        out_of_memory(size);
    }
    pointer
}

#[allow(unsafe_code)]
extern "C" fn counted_calloc(count_of: usize, size: usize) -> *mut c_void {
    count(count_of.saturating_mul(size));
    // SAFETY: `calloc` accepts any count and size (it checks their product
    // for overflow); a null result is handled below.
    let pointer = unsafe { libc::calloc(count_of, size) };
    if pointer.is_null() && count_of > 0 && size > 0 {
        out_of_memory(count_of.saturating_mul(size));
    }
    pointer
}

/// # Safety
///
/// `pointer` is null or comes from this family and is not freed yet.
#[allow(unsafe_code)]
unsafe extern "C" fn counted_realloc(pointer: *mut c_void, size: usize) -> *mut c_void {
    count(size);
    // SAFETY: tree-sitter passes null or a pointer from this family
    // (`malloc`, `calloc` or `realloc`, installed here or its libc
    // defaults) that it has not freed.
    let moved = unsafe { libc::realloc(pointer, size) };
    if moved.is_null() && size > 0 {
        out_of_memory(size);
    }
    moved
}

/// # Safety
///
/// `pointer` is null or comes from this family and is not freed yet.
#[allow(unsafe_code)]
unsafe extern "C" fn counted_free(pointer: *mut c_void) {
    // SAFETY: tree-sitter passes null or a pointer from this family that it
    // has not freed yet.
    unsafe { libc::free(pointer) }
}
