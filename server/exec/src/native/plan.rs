//! Execution plans for running a compiled loop on several threads, after
//! OP2's: the iteration set is cut into blocks of [`BLOCK`] contiguous
//! elements, and blocks are coloured so that no two blocks of one colour
//! touch the same row of a dat that the loop increments through a map.
//! Blocks of one colour run at the same time; colours run one after the
//! other; inside a block, elements run in order. The plan depends on the
//! program and the maps only, never on the number of threads, so every
//! thread count above one gives the same results bit for bit.
//!
//! Only loops whose outcome cannot depend on the order of their elements
//! (beyond the rounding of sums) get a coloured plan:
//!
//! - every dat the loop writes is either reached only directly (an element
//!   touches its own row only) or only by INC (through maps or directly);
//! - every global is READ, or reduced (INC, MIN, MAX) by one argument only.
//!
//! Any other loop (a dat written through a map, or written and also read
//! through a map; a global written) runs on one thread in element order, as
//! the sequential engine runs it.

use op2_analysis::model::{ArgKind, Invocation};
use op2_syntax::ast::{AccessMode, ScalarType};

/// Elements per block.
pub(crate) const BLOCK: usize = 256;

/// A global the loop reduces, combined per block in block order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reduction {
    /// The global's index.
    pub global: usize,
    /// INC, MIN or MAX.
    pub mode: AccessMode,
    pub ty: ScalarType,
}

/// How one loop runs on several threads.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    /// On one thread, element by element, for this reason.
    Sequential(&'static str),
    /// Blocks of [`BLOCK`] elements, colour by colour.
    Coloured {
        /// The blocks of each colour, in increasing order.
        colours: Vec<Vec<usize>>,
        /// The globals reduced per block.
        reductions: Vec<Reduction>,
    },
}

/// Map `m`'s targets, arity and target set size, by `m`.
pub(crate) type Targets<'a> = dyn Fn(usize) -> (&'a [u32], usize, usize) + 'a;

/// One dat's accesses through which blocks may conflict: each access is
/// `None` (the element's own row) or `Some((map, index))`.
struct Conflict {
    rows: usize,
    accesses: Vec<Option<(usize, usize)>>,
}

/// The plan of `invocation` over `elements` elements; `targets(m)` gives
/// map `m`'s targets, its arity and the size of its target set (every
/// target below it).
pub(crate) fn plan<'a>(invocation: &Invocation, elements: usize, targets: &Targets<'a>) -> Plan {
    let args: Vec<_> = invocation.resolved_args().map(|(_, a)| a).collect();
    let mut reductions = Vec::new();
    if args.iter().any(|a| matches!(a.kind, ArgKind::Info { .. })) {
        // The element that sets it is the first, in element order, to reach
        // the extreme: sequential order says which that is.
        return Plan::Sequential("an `INFO` global is recorded");
    }
    for arg in &args {
        let ArgKind::Global(global) = arg.kind else {
            continue;
        };
        match arg.mode {
            AccessMode::Read => {}
            AccessMode::Inc | AccessMode::Min | AccessMode::Max => {
                let uses = args
                    .iter()
                    .filter(|a| a.kind == ArgKind::Global(global))
                    .count();
                if uses > 1 {
                    return Plan::Sequential("a reduced global is passed more than once");
                }
                reductions.push(Reduction {
                    global: global.index(),
                    mode: arg.mode,
                    ty: arg.ty.scalar,
                });
            }
            AccessMode::Write | AccessMode::Rw => {
                return Plan::Sequential("a global is written");
            }
        }
    }
    let mut conflicts = Vec::new();
    let mut seen = Vec::new();
    for arg in &args {
        let (ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. }) = arg.kind else {
            continue;
        };
        if seen.contains(&dat) {
            continue;
        }
        seen.push(dat);
        let on_dat: Vec<_> = args
            .iter()
            .filter(|a| {
                matches!(a.kind, ArgKind::DirectDat(d) | ArgKind::IndirectDat { dat: d, .. } if d == dat)
            })
            .collect();
        if on_dat.iter().all(|a| a.mode == AccessMode::Read)
            || on_dat
                .iter()
                .all(|a| matches!(a.kind, ArgKind::DirectDat(_)))
        {
            continue;
        }
        if !on_dat.iter().all(|a| a.mode == AccessMode::Inc) {
            return Plan::Sequential("a dat is written through a map other than by INC");
        }
        let mut rows = elements;
        let accesses = on_dat
            .iter()
            .map(|a| match a.kind {
                ArgKind::IndirectDat { map, index, .. } => {
                    rows = rows.max(targets(map.index()).2);
                    Some((map.index(), index as usize))
                }
                _ => None,
            })
            .collect();
        conflicts.push(Conflict { rows, accesses });
    }
    let blocks = elements.div_ceil(BLOCK);
    let colours = if conflicts.is_empty() {
        if blocks == 0 {
            Vec::new()
        } else {
            vec![(0..blocks).collect()]
        }
    } else {
        colour(elements, &conflicts, targets)
    };
    Plan::Coloured {
        colours,
        reductions,
    }
}

/// Greedy first-fit colouring of the blocks, 64 colours a pass (OP2's
/// algorithm): each block takes the smallest colour that no block already
/// coloured and sharing a row with it has.
fn colour<'a>(elements: usize, conflicts: &[Conflict], targets: &Targets<'a>) -> Vec<Vec<usize>> {
    let blocks = elements.div_ceil(BLOCK);
    let mut colour_of = vec![usize::MAX; blocks];
    let mut masks: Vec<Vec<u64>> = conflicts.iter().map(|c| vec![0; c.rows]).collect();
    let mut first = 0;
    let mut left = blocks;
    // Every row a block touches, for one conflict.
    let each_row = |conflict: &Conflict, block: usize, f: &mut dyn FnMut(usize)| {
        for element in block * BLOCK..((block + 1) * BLOCK).min(elements) {
            for access in &conflict.accesses {
                match *access {
                    None => f(element),
                    Some((map, index)) => {
                        let (targets, arity, _) = targets(map);
                        f(targets[element * arity + index] as usize);
                    }
                }
            }
        }
    };
    while left > 0 {
        for mask in &mut masks {
            mask.fill(0);
        }
        for (block, colour) in colour_of.iter_mut().enumerate() {
            if *colour != usize::MAX {
                continue;
            }
            let mut used = 0u64;
            for (conflict, mask) in conflicts.iter().zip(&masks) {
                each_row(conflict, block, &mut |row| used |= mask[row]);
            }
            if used == u64::MAX {
                // Every colour of this pass is taken: the next pass.
                continue;
            }
            let bit = used.trailing_ones() as usize;
            *colour = first + bit;
            left -= 1;
            for (conflict, mask) in conflicts.iter().zip(&mut masks) {
                each_row(conflict, block, &mut |row| mask[row] |= 1 << bit);
            }
        }
        first += 64;
    }
    let count = colour_of.iter().max().map_or(0, |&c| c + 1);
    let mut colours = vec![Vec::new(); count];
    for (block, &c) in colour_of.iter().enumerate() {
        colours[c].push(block);
    }
    colours.retain(|c| !c.is_empty());
    colours
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row touched by one block, for a conflict given as a map.
    fn rows(targets: &[u32], arity: usize, block: usize, elements: usize) -> Vec<u32> {
        let range = block * BLOCK..((block + 1) * BLOCK).min(elements);
        targets[range.start * arity..range.end * arity].to_vec()
    }

    /// A pseudo-random map (a fixed linear congruential sequence).
    fn random_map(elements: usize, arity: usize, rows: usize, seed: u64) -> Vec<u32> {
        let mut x = seed;
        (0..elements * arity)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((x >> 33) % rows as u64) as u32
            })
            .collect()
    }

    #[test]
    fn no_two_blocks_of_a_colour_share_a_row_and_every_block_runs_once() {
        for (elements, arity, rows_count, seed) in [
            (5000, 2, 2600, 1),
            (5000, 4, 300, 2),
            (257, 2, 10, 3),
            (100_000, 2, 50_000, 4),
            // Every block touches row 0: one block per colour, more than
            // 64 colours (several passes).
            (70 * BLOCK, 1, 1, 5),
        ] {
            let map = random_map(elements, arity, rows_count, seed);
            let conflicts = [Conflict {
                rows: rows_count,
                accesses: (0..arity).map(|i| Some((0, i))).collect(),
            }];
            let lookup = |_: usize| (map.as_slice(), arity, rows_count);
            let colours = colour(elements, &conflicts, &lookup);
            let mut ran: Vec<usize> = colours.iter().flatten().copied().collect();
            ran.sort_unstable();
            assert_eq!(ran, (0..elements.div_ceil(BLOCK)).collect::<Vec<_>>());
            for blocks in &colours {
                let mut owner = vec![usize::MAX; rows_count];
                for &block in blocks {
                    for row in rows(&map, arity, block, elements) {
                        let o = &mut owner[row as usize];
                        assert!(*o == usize::MAX || *o == block, "row {row} shared");
                        *o = block;
                    }
                }
            }
            if rows_count == 1 {
                assert_eq!(colours.len(), elements.div_ceil(BLOCK));
            }
        }
    }
}
