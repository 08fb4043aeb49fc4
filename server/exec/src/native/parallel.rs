//! Running a compiled loop on several threads by its plan
//! ([`super::plan`]): the blocks of one colour at the same time on a rayon
//! pool, colours one after the other. Which thread runs which block changes
//! nothing: blocks of a colour share no row they write, and global
//! reductions go into partials that are combined in a fixed order.
//!
//! The partials: the blocks, in the order they run (colour by colour, in
//! block order within a colour), are cut into chunks of
//! [`chunk_blocks`] consecutive blocks; each chunk reduces into a partial
//! of its own, element by element in that order, and the chunks' partials
//! are added in chunk order, each as soon as its chunk and every chunk
//! before it have run. The blocks of a chunk that fall in one colour run
//! one after the other on one thread; the chunks of a colour run at the
//! same time, at most [`wave`] of them at once (eight per thread). So the
//! memory of the partials is bounded by the threads, not the blocks (and
//! by [`PARTIALS_BYTES`], or one partial), the work of starting and adding
//! them is linear in the elements, and the order of every sum depends on
//! the program and the maps only, never on the number of threads.

#![allow(unsafe_code)]

use std::collections::VecDeque;

use op2_analysis::value::Value;
use op2_syntax::ast::AccessMode;
use rayon::prelude::*;

use super::code::{Bound, Stop};
use super::flat::{from_slot, to_slot};
use super::plan::{BLOCK, Reduction};
use crate::reference::{add_into, combine, inc_identity};

/// The most bytes of partials a loop holds at once (a larger partial is
/// held alone, one at a time).
pub(crate) const PARTIALS_BYTES: usize = 64 << 20;

/// Elements `start..end` of block `block`.
fn range(block: usize, elements: usize) -> (usize, usize) {
    (block * BLOCK, ((block + 1) * BLOCK).min(elements))
}

/// The blocks of a chunk, given the starting values of the globals the
/// loop reduces: one for partials of up to [`BLOCK`] components, and as
/// many as make a chunk's elements at least as many as its partial's
/// components for larger ones, so that starting and adding the partials
/// never costs more than running the elements.
pub(crate) fn chunk_blocks(starts: &[Vec<u64>]) -> usize {
    let components: usize = starts.iter().map(Vec::len).sum();
    components.div_ceil(BLOCK).max(1)
}

/// How many chunks of one colour run at once on `threads` threads: eight
/// per thread, fewer where their partials (of `starts`' size) would pass
/// [`PARTIALS_BYTES`], at least one. The results do not depend on it.
pub(crate) fn wave(starts: &[Vec<u64>], threads: usize) -> usize {
    let bytes: usize = starts.iter().map(|s| s.len() * 8).sum();
    (PARTIALS_BYTES / bytes.max(1)).clamp(1, 8 * threads.max(1))
}

/// The starting partial of chunk `chunk`: MIN and MAX start from the
/// global's value when the loop began (what the kernel sees, as in the
/// sequential engine); INC starts from it in chunk 0 and from the INC
/// identity (`reference::inc_identity`, `-0.0` for `float` and `double`)
/// in the others, so that a loop of one chunk sums exactly as the
/// sequential engine does, and the sign of a zero total does not depend on
/// the chunks. A `float` or `double` INC argument adds into its chunk's
/// partial in place, element by element (`reference::in_place_args`).
fn partial(chunk: usize, reductions: &[Reduction], starts: &[Vec<u64>]) -> Vec<Vec<u64>> {
    reductions
        .iter()
        .zip(starts)
        .map(|(r, start)| {
            if r.mode == AccessMode::Inc && chunk > 0 {
                vec![to_slot(inc_identity(r.ty)); start.len()]
            } else {
                start.clone()
            }
        })
        .collect()
}

/// Adds chunk partial `part` into `totals` (the first one becomes them).
fn fold(totals: &mut Option<Vec<Vec<Value>>>, part: &[Vec<u64>], reductions: &[Reduction]) {
    let values = |slots: &[u64], r: &Reduction| -> Vec<Value> {
        slots.iter().map(|&s| from_slot(s, r.ty)).collect()
    };
    match totals {
        None => {
            *totals = Some(
                part.iter()
                    .zip(reductions)
                    .map(|(p, r)| values(p, r))
                    .collect(),
            );
        }
        Some(totals) => {
            for ((total, p), r) in totals.iter_mut().zip(part).zip(reductions) {
                let part = values(p, r);
                match r.mode {
                    AccessMode::Inc => add_into(total, &part),
                    mode => combine(total, &part, mode),
                }
            }
        }
    }
}

/// Runs `bound`'s loop over `elements` elements, colour by colour, on
/// `pool`, reducing the globals of `reductions` (starting from `starts`,
/// their values when the loop began) into chunk partials. Returns the
/// reduced globals' values at the end, in the order of `reductions`.
///
/// Or the fault of the lowest block that faults, at its first faulting
/// element: after a fault in block `f`, the colours left run their blocks
/// below `f` only (a fault there lowers `f`), so every block below the
/// reported one has run to its end in every colour. For a loop whose
/// faults depend only on the data it reads (not on the rows it increments
/// in place), that is the element the sequential engine reports.
pub(crate) fn run(
    pool: &rayon::ThreadPool,
    bound: &Bound<'_>,
    elements: usize,
    colours: &[Vec<usize>],
    reductions: &[Reduction],
    starts: &[Vec<u64>],
) -> Result<Vec<Vec<u64>>, Stop> {
    let run_all = || {
        if reductions.is_empty() {
            let mut fault: Option<(usize, Stop)> = None;
            for colour in colours {
                if let Err(lower) = run_blocks(bound, elements, below(colour, fault.as_ref())) {
                    fault = Some(lower);
                }
            }
            return fault.map_or(Ok(Vec::new()), |(_, stop)| Err(stop));
        }
        reduce(bound, elements, colours, reductions, starts)
    };
    // A loop whose colours hold one block each (a small set, or blocks
    // that all share rows) runs on this thread: waking the pool would only
    // cost time.
    if colours.iter().any(|blocks| blocks.len() > 1) {
        pool.install(run_all)
    } else {
        run_all()
    }
}

/// The blocks of `colour` below the block of `fault`, all without one.
fn below<'c>(colour: &'c [usize], fault: Option<&(usize, Stop)>) -> &'c [usize] {
    match fault {
        Some(&(block, _)) => &colour[..colour.partition_point(|&b| b < block)],
        None => colour,
    }
}

/// Runs `blocks` (of one colour, in increasing order) at the same time on
/// the current pool. Returns the lowest block that faulted, with its fault.
fn run_blocks(bound: &Bound<'_>, elements: usize, blocks: &[usize]) -> Result<(), (usize, Stop)> {
    if let [block] = *blocks {
        let (start, end) = range(block, elements);
        // SAFETY: the only block running.
        return unsafe { bound.call(start, end) }.map_err(|stop| (block, stop));
    }
    let results: Vec<Result<(), Stop>> = blocks
        .par_iter()
        .map(|&block| {
            let (start, end) = range(block, elements);
            // SAFETY: the blocks running at the same time are of one
            // colour: their element ranges are disjoint and no dat row one
            // writes is touched by another (the plan); the loop reduces no
            // global.
            unsafe { bound.call(start, end) }
        })
        .collect();
    match blocks
        .iter()
        .zip(results)
        .find_map(|(&block, result)| result.err().map(|stop| (block, stop)))
    {
        Some(fault) => Err(fault),
        None => Ok(()),
    }
}

/// [`run`] with reductions, on the current pool.
fn reduce(
    bound: &Bound<'_>,
    elements: usize,
    colours: &[Vec<usize>],
    reductions: &[Reduction],
    starts: &[Vec<u64>],
) -> Result<Vec<Vec<u64>>, Stop> {
    let globals: Vec<usize> = reductions.iter().map(|r| r.global).collect();
    let slots = bound.global_slots(&globals);
    let chunk_len = chunk_blocks(starts);
    let wave_len = wave(starts, rayon::current_num_threads());
    let blocks: usize = colours.iter().map(Vec::len).sum();
    // Blocks run so far, in the running order.
    let mut position = 0;
    // The partials of chunks `first_open..`, not yet added.
    let mut open: VecDeque<Vec<Vec<u64>>> = VecDeque::new();
    let mut first_open = 0;
    let mut totals = None;
    for (c, colour) in colours.iter().enumerate() {
        // The colour's blocks by chunk: consecutive chunks, one task each.
        let mut tasks: Vec<(usize, &[usize])> = Vec::new();
        let mut i = 0;
        while i < colour.len() {
            let chunk = (position + i) / chunk_len;
            let j = ((chunk + 1) * chunk_len - position).min(colour.len());
            tasks.push((chunk, &colour[i..j]));
            i = j;
        }
        for wave in tasks.chunks(wave_len) {
            let (first, _) = wave[0];
            let (last, _) = wave[wave.len() - 1];
            while first_open + open.len() <= last {
                open.push_back(partial(first_open + open.len(), reductions, starts));
            }
            let bounds: Vec<Bound<'_>> = open
                .iter_mut()
                .skip(first - first_open)
                .take(wave.len())
                .map(|p| bound.with_globals(&slots, p))
                .collect();
            let run_task = |(&(_, task), bound): (&(usize, &[usize]), &Bound<'_>)| {
                task.iter().try_for_each(|&block| {
                    let (start, end) = range(block, elements);
                    // SAFETY: the blocks running at the same time are of
                    // one colour: their element ranges are disjoint and no
                    // dat row one writes is touched by another (the plan);
                    // each task reduces into its own chunk's partial, and
                    // runs its blocks one after the other.
                    unsafe { bound.call(start, end) }.map_err(|stop| (block, stop))
                })
            };
            let results: Vec<Result<(), (usize, Stop)>> = if wave.len() == 1 {
                vec![run_task((&wave[0], &bounds[0]))]
            } else {
                wave.par_iter().zip(&bounds).map(run_task).collect()
            };
            drop(bounds);
            if let Some(fault) = results.into_iter().find_map(Result::err) {
                return Err(lowest_fault(
                    bound,
                    elements,
                    &colours[c + 1..],
                    fault,
                    reductions,
                    starts,
                ));
            }
            position += wave.iter().map(|(_, task)| task.len()).sum::<usize>();
            // Add the chunks that have run to the end, in chunk order.
            while !open.is_empty()
                && ((first_open + 1) * chunk_len <= position || position == blocks)
            {
                if let Some(part) = open.pop_front() {
                    fold(&mut totals, &part, reductions);
                }
                first_open += 1;
            }
        }
    }
    let totals = totals.unwrap_or_else(|| {
        starts
            .iter()
            .zip(reductions)
            .map(|(s, r)| s.iter().map(|&v| from_slot(v, r.ty)).collect())
            .collect()
    });
    Ok(totals
        .iter()
        .map(|t| t.iter().map(|&v| to_slot(v)).collect())
        .collect())
}

/// After `fault` in a loop with reductions: runs the blocks below the
/// faulting one of the colours left (`colours`), one at a time on
/// this thread, into a partial whose sums are dropped (the loop stopped),
/// and returns the fault of the lowest block that faulted (see [`run`]).
fn lowest_fault(
    bound: &Bound<'_>,
    elements: usize,
    colours: &[Vec<usize>],
    fault: (usize, Stop),
    reductions: &[Reduction],
    starts: &[Vec<u64>],
) -> Stop {
    let globals: Vec<usize> = reductions.iter().map(|r| r.global).collect();
    let mut scratch = partial(1, reductions, starts);
    let bound = bound.with_globals(&bound.global_slots(&globals), &mut scratch);
    let mut fault = fault;
    for colour in colours {
        for &block in below(colour, Some(&fault)) {
            let (start, end) = range(block, elements);
            // SAFETY: the only block running.
            if let Err(stop) = unsafe { bound.call(start, end) } {
                fault = (block, stop);
                break;
            }
        }
    }
    fault.1
}

/// A closure and its result carried to a thread of the pool and back while
/// the calling thread waits (see [`on_pool`]).
struct Carried<T>(T);

// SAFETY: a `Carried` value is only made by `on_pool`, which moves it to a
// thread of the pool and gets its result back while the calling thread is
// blocked in `install`: nothing it holds is touched from two threads at
// once, and `install`'s latch orders every access on the pool's thread
// between the caller's accesses before and after. It carries `main`'s
// interpreter with the reference's borrowed output callback (which holds
// the caller's locked stdout: only written through, never unlocked, on the
// pool's thread).
unsafe impl<T> Send for Carried<T> {}

impl<F: FnOnce() -> R, R> Carried<F> {
    /// Calls the closure (a method, so that a closure calling it captures
    /// the whole `Carried`, not its field).
    fn call(self) -> Carried<R> {
        Carried((self.0)())
    }
}

/// Runs `op` on a thread of `pool` while this thread waits, and returns its
/// result: so that `main`, which starts every loop, runs on the pool, where
/// a loop's [`run`] starts its blocks directly instead of handing each loop
/// to the pool and waiting for it to come back (`ThreadPool::install` from a
/// thread of the same pool runs in place).
///
/// # Safety
///
/// `op` and its result cross to another thread and back although they need
/// not be `Send`: the caller guarantees that nothing they hold relies on
/// the thread it runs on (no thread-local state read or changed, no guard
/// released, nothing shared with another thread without a lock) while the
/// calling thread waits here.
pub(crate) unsafe fn on_pool<R>(pool: &rayon::ThreadPool, op: impl FnOnce() -> R) -> R {
    let job = Carried(op);
    pool.install(move || job.call()).0
}
