//! A count of the items the editor features examine (folding, selection,
//! completion, the device type text, the par_loops a rename looks at), per
//! thread: requests run on one thread each, so a test can hold a request's
//! work to a bound (linear in its input) without timing it.

use std::cell::Cell;

thread_local! {
    static STEPS: Cell<u64> = const { Cell::new(0) };
}

/// Counts `n` items examined on this thread.
pub(crate) fn count(n: usize) {
    STEPS.set(STEPS.get().saturating_add(n as u64));
}

/// The items examined on the calling thread so far.
pub fn on_this_thread() -> u64 {
    STEPS.get()
}
