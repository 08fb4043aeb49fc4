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
    // Each global's arguments and each dat's, counted and grouped in one
    // pass: a loop of tens of thousands of arguments is planned in time
    // linear in them (review of 2026-11-29: 60,000 took 12 s more than
    // one thread's run).
    let mut global_uses: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    let mut dat_index: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    let mut by_dat: Vec<Vec<&_>> = Vec::new();
    for arg in &args {
        match arg.kind {
            ArgKind::Global(global) => *global_uses.entry(global).or_default() += 1,
            ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. } => {
                let at = *dat_index.entry(dat).or_insert_with(|| {
                    by_dat.push(Vec::new());
                    by_dat.len() - 1
                });
                by_dat[at].push(arg);
            }
            _ => {}
        }
    }
    for arg in &args {
        let ArgKind::Global(global) = arg.kind else {
            continue;
        };
        match arg.mode {
            AccessMode::Read => {}
            AccessMode::Inc | AccessMode::Min | AccessMode::Max => {
                let uses = global_uses.get(&global).copied().unwrap_or(0);
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
    // Each dat once, in the order of its first argument.
    for on_dat in &by_dat {
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

/// Greedy colouring of the blocks in block order, 64 colours to a window,
/// in one pass over the blocks: time linear in the rows the blocks touch,
/// whatever the maps' shape.
///
/// Each row remembers the highest window a block touching it took and the
/// colours of that window its blocks took. A block goes to the highest
/// window of its rows (a lower one is no longer known to be free there),
/// takes the smallest colour of that window none of those rows has, and
/// the next window when all 64 are taken. Two blocks sharing a row never
/// get one colour: the later one sees the row's window at or above the
/// earlier one's, and in that window its mask. While no block finds a
/// window full, every block stays in window 0 and this is first-fit (the
/// smallest colour no earlier block sharing a row has), OP2's colouring;
/// beyond 64 colours OP2 recolours the blocks left in passes of 64, each
/// pass rescanning them, which costs time quadratic in the blocks when
/// many share a row.
fn colour<'a>(elements: usize, conflicts: &[Conflict], targets: &Targets<'a>) -> Vec<Vec<usize>> {
    let blocks = elements.div_ceil(BLOCK);
    let mut colour_of = Vec::with_capacity(blocks);
    // Per conflict and row: the row's window and its colours there.
    let mut windows: Vec<Vec<u32>> = conflicts.iter().map(|c| vec![0; c.rows]).collect();
    let mut masks: Vec<Vec<u64>> = conflicts.iter().map(|c| vec![0; c.rows]).collect();
    // Every row a block touches, for one conflict: one look-up per element
    // and access (the tests count them).
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
    for block in 0..blocks {
        let mut window = 0u32;
        for (conflict, rows) in conflicts.iter().zip(&windows) {
            each_row(conflict, block, &mut |row| window = window.max(rows[row]));
        }
        let mut used = 0u64;
        for ((conflict, rows), mask) in conflicts.iter().zip(&windows).zip(&masks) {
            each_row(conflict, block, &mut |row| {
                if rows[row] == window {
                    used |= mask[row];
                }
            });
        }
        if used == u64::MAX {
            // Every colour of the window is taken here: the next, empty
            // at every row of the block.
            window += 1;
            used = 0;
        }
        let bit = used.trailing_ones();
        colour_of.push(window as usize * 64 + bit as usize);
        for ((conflict, rows), mask) in conflicts.iter().zip(&mut windows).zip(&mut masks) {
            each_row(conflict, block, &mut |row| {
                if rows[row] < window {
                    rows[row] = window;
                    mask[row] = 0;
                }
                mask[row] |= 1 << bit;
            });
        }
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

    /// First-fit by definition: each block, in order, takes the smallest
    /// colour that no earlier block sharing a row with it has.
    fn first_fit(map: &[u32], arity: usize, rows_count: usize, elements: usize) -> Vec<usize> {
        let blocks = elements.div_ceil(BLOCK);
        let touched: Vec<Vec<u32>> = (0..blocks).map(|b| rows(map, arity, b, elements)).collect();
        let mut colour_of: Vec<usize> = Vec::new();
        for b in 0..blocks {
            let mut taken = vec![false; blocks + 1];
            let mut mine = vec![false; rows_count];
            for &r in &touched[b] {
                mine[r as usize] = true;
            }
            for (earlier, &c) in colour_of.iter().enumerate() {
                if touched[earlier].iter().any(|&r| mine[r as usize]) {
                    taken[c] = true;
                }
            }
            colour_of.push(taken.iter().position(|&t| !t).unwrap_or(blocks));
        }
        colour_of
    }

    #[test]
    fn up_to_64_colours_the_colouring_is_first_fit() {
        for (elements, arity, rows_count, seed) in [
            (5000, 2, 2600, 1),
            (5000, 4, 300, 2),
            (257, 2, 10, 3),
            (20_000, 3, 10_000, 6),
            (64 * BLOCK, 1, 1, 7),
        ] {
            // Rows near the element's (a numbered mesh), or random.
            let map = if seed == 6 {
                random_map(elements, arity, 600, seed)
                    .iter()
                    .enumerate()
                    .map(|(k, r)| ((k / arity / 2 + *r as usize) % rows_count) as u32)
                    .collect()
            } else {
                random_map(elements, arity, rows_count, seed)
            };
            let conflicts = [Conflict {
                rows: rows_count,
                accesses: (0..arity).map(|i| Some((0, i))).collect(),
            }];
            let lookup = |_: usize| (map.as_slice(), arity, rows_count);
            let colours = colour(elements, &conflicts, &lookup);
            let expected = first_fit(&map, arity, rows_count, elements);
            assert!(
                expected.iter().all(|&c| c < 64),
                "{elements} elements: {expected:?}"
            );
            let mut got = vec![usize::MAX; expected.len()];
            for (c, blocks) in colours.iter().enumerate() {
                for &b in blocks {
                    got[b] = c;
                }
            }
            assert_eq!(got, expected, "{elements} elements, {rows_count} rows");
        }
    }

    /// The colouring looks up each element's rows a bounded number of times
    /// whatever the map: 1,024 blocks that all share one row (1,024
    /// colours) cost three look-ups per element and access, where
    /// recolouring the blocks left in passes of 64 colours cost 9.5 here
    /// (2,490,368 for 262,144 elements), growing with the blocks (each pass
    /// rescanned every block not yet coloured).
    #[test]
    fn colouring_work_is_linear_when_every_block_shares_a_row() {
        for (elements, arity, rows_count) in [(1024 * BLOCK, 1, 1), (300 * BLOCK, 3, 2)] {
            let map = random_map(elements, arity, rows_count, 9);
            let conflicts = [Conflict {
                rows: rows_count,
                accesses: (0..arity).map(|i| Some((0, i))).collect(),
            }];
            let lookups = std::cell::Cell::new(0usize);
            let lookup = |_: usize| {
                lookups.set(lookups.get() + 1);
                (map.as_slice(), arity, rows_count)
            };
            let colours = colour(elements, &conflicts, &lookup);
            assert_eq!(colours.len(), elements.div_ceil(BLOCK));
            assert!(
                lookups.get() <= 3 * elements * arity,
                "{} look-ups for {} elements of {arity} accesses",
                lookups.get(),
                elements
            );
        }
    }
}
