//! Running a compiled loop on several threads by its plan
//! ([`super::plan`]): the blocks of one colour at the same time on a rayon
//! pool, colours one after the other, each block's global reductions into
//! a partial of its own, combined afterwards in block order. Which thread
//! runs which block changes nothing: blocks of a colour share no row they
//! write, and partials are combined in a fixed order.

#![allow(unsafe_code)]

use op2_analysis::value::Value;
use op2_syntax::ast::AccessMode;
use rayon::prelude::*;

use super::code::{Bound, Stop};
use super::flat::{from_slot, to_slot};
use super::plan::{BLOCK, Reduction};
use crate::reference::{add_into, combine};

/// Elements `start..end` of block `block`.
fn range(block: usize, elements: usize) -> (usize, usize) {
    (block * BLOCK, ((block + 1) * BLOCK).min(elements))
}

/// The starting partials of every block: MIN and MAX start from the
/// global's value (what the kernel sees, as in the sequential engine); INC
/// starts from it in block 0 and from zero in the others, so that a loop of
/// one block sums exactly as the sequential engine does. A `float` or
/// `double` INC argument adds into its block's partial in place, element
/// by element (`reference::in_place_args`), so each block sums in element
/// order and the partials are added in block order: the same bits for
/// every thread count above one.
pub(crate) fn partials(
    blocks: usize,
    reductions: &[Reduction],
    globals: &[Vec<u64>],
) -> Vec<Vec<Vec<u64>>> {
    (0..blocks)
        .map(|block| {
            reductions
                .iter()
                .map(|r| {
                    let current = &globals[r.global];
                    if r.mode == AccessMode::Inc && block > 0 {
                        vec![to_slot(Value::zero(r.ty)); current.len()]
                    } else {
                        current.clone()
                    }
                })
                .collect()
        })
        .collect()
}

/// Combines the blocks' partials, in block order, into `globals`.
pub(crate) fn finish(
    partials: &[Vec<Vec<u64>>],
    reductions: &[Reduction],
    globals: &mut [Vec<u64>],
) {
    for (r, reduction) in reductions.iter().enumerate() {
        let values = |slots: &[u64]| -> Vec<Value> {
            slots.iter().map(|&s| from_slot(s, reduction.ty)).collect()
        };
        let Some(first) = partials.first() else {
            continue;
        };
        let mut total = values(&first[r]);
        for block in &partials[1..] {
            let part = values(&block[r]);
            match reduction.mode {
                AccessMode::Inc => add_into(&mut total, &part),
                mode => combine(&mut total, &part, mode),
            }
        }
        globals[reduction.global] = total.iter().map(|&v| to_slot(v)).collect();
    }
}

/// Runs `bound`'s loop over `elements` elements, colour by colour, on
/// `pool`. With reductions, block `b` reduces into `partials[b]`. Returns
/// the first fault (in block order) of the first colour where a block
/// faulted; the colours after it do not run.
pub(crate) fn run(
    pool: &rayon::ThreadPool,
    bound: &Bound<'_>,
    elements: usize,
    colours: &[Vec<usize>],
    reductions: &[Reduction],
    partials: &mut [Vec<Vec<u64>>],
) -> Result<(), Stop> {
    let globals: Vec<usize> = reductions.iter().map(|r| r.global).collect();
    let per_block: Vec<Bound<'_>> = if reductions.is_empty() {
        Vec::new()
    } else {
        partials
            .iter_mut()
            .map(|p| bound.with_globals(&globals, p))
            .collect()
    };
    let bound_of = |block: usize| per_block.get(block).unwrap_or(bound);
    let run_colour = |blocks: &[usize]| -> Result<(), Stop> {
        if let [block] = *blocks {
            let (start, end) = range(block, elements);
            // SAFETY: the only block running.
            return unsafe { bound_of(block).call(start, end) };
        }
        let results: Vec<Result<(), Stop>> = blocks
            .par_iter()
            .map(|&block| {
                let (start, end) = range(block, elements);
                // SAFETY: the blocks running at the same time are of one
                // colour: their element ranges are disjoint, no dat row one
                // writes is touched by another (the plan), and each reduces
                // into its own partials.
                unsafe { bound_of(block).call(start, end) }
            })
            .collect();
        results
            .into_iter()
            .find_map(Result::err)
            .map_or(Ok(()), Err)
    };
    let run_all = || colours.iter().try_for_each(|blocks| run_colour(blocks));
    // A loop whose colours hold one block each (a small set, or blocks
    // that all share rows) runs on this thread: waking the pool would only
    // cost time.
    if colours.iter().any(|blocks| blocks.len() > 1) {
        pool.install(run_all)
    } else {
        run_all()
    }
}
