//! Byte ranges kept for "which of them overlap this range?": sorted by
//! start, with the greatest end of every aligned block of them (a segment
//! tree over the sorted order), so that a query costs O((k + 1) log n) for
//! k answers out of n, whatever the ranges' lengths and nesting.

/// Closed byte ranges `[start, end]`, each with the id it was given.
#[derive(Debug, Default)]
pub struct Intervals {
    /// `(start, end, id)`, sorted by start.
    sorted: Vec<(u32, u32, u32)>,
    /// Leaves from `leaves`: the greatest end of each node's block; a node
    /// whose block is all past the ranges holds `None`.
    max_end: Vec<Option<u32>>,
    /// The number of leaves (a power of two, at least 1).
    leaves: usize,
}

impl Intervals {
    /// Keeps `ranges` (`(start, end, id)`, in any order). O(n log n).
    pub fn new(mut ranges: Vec<(u32, u32, u32)>) -> Self {
        ranges.sort_unstable();
        let leaves = ranges.len().next_power_of_two();
        let mut max_end = vec![None; 2 * leaves];
        for (i, &(_, end, _)) in ranges.iter().enumerate() {
            max_end[leaves + i] = Some(end);
        }
        for node in (1..leaves).rev() {
            max_end[node] = max_end[2 * node].max(max_end[2 * node + 1]);
        }
        Self {
            sorted: ranges,
            max_end,
            leaves,
        }
    }

    /// Pushes onto `out` the ids of the ranges that overlap `[start, end]`
    /// (touching counts), in ascending order of id; returns the number of
    /// nodes of the tree it visited, which is O((k + 1) log n).
    pub fn overlapping(&self, start: u32, end: u32, out: &mut Vec<u32>) -> usize {
        // Only ranges that start at or before `end` can overlap; among
        // them, those that end at or after `start`.
        let candidates = self.sorted.partition_point(|&(s, _, _)| s <= end);
        let first = out.len();
        let mut visited = 0;
        // (node, first leaf of its block, block length); an explicit stack,
        // at most two entries a level deep.
        let mut stack = vec![(1usize, 0usize, self.leaves)];
        while let Some((node, low, length)) = stack.pop() {
            visited += 1;
            if low >= candidates || self.max_end[node].is_none_or(|e| e < start) {
                continue;
            }
            if length == 1 {
                out.push(self.sorted[low].2);
                continue;
            }
            let half = length / 2;
            stack.push((2 * node + 1, low + half, half));
            stack.push((2 * node, low, half));
        }
        out[first..].sort_unstable();
        visited
    }
}

#[cfg(test)]
mod tests {
    use super::Intervals;

    /// A small deterministic generator (the crate has no random source).
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: u32) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) % u64::from(n)) as u32
        }
    }

    #[test]
    fn the_answer_is_every_overlapping_range_and_costs_its_size_times_log() {
        let mut random = Lcg(12);
        for n in [0u32, 1, 2, 3, 7, 64, 1000, 5000] {
            // Mostly short ranges, some long ones spanning many others,
            // some empty, some alike.
            let ranges: Vec<(u32, u32, u32)> = (0..n)
                .map(|id| {
                    let start = random.below(10 * n + 1);
                    let length = match random.below(10) {
                        0 => random.below(10 * n + 1),
                        1 => 0,
                        _ => random.below(20),
                    };
                    (start, start + length, id)
                })
                .collect();
            let intervals = Intervals::new(ranges.clone());
            let log = f64::from(n.max(2)).log2().ceil() as usize + 1;
            for _ in 0..200 {
                let start = random.below(10 * n + 30);
                let end = start + random.below(30);
                let mut found = Vec::new();
                let visited = intervals.overlapping(start, end, &mut found);
                let expected: Vec<u32> = ranges
                    .iter()
                    .filter(|&&(s, e, _)| s <= end && start <= e)
                    .map(|&(_, _, id)| id)
                    .collect();
                assert_eq!(found, expected, "n {n}, [{start}, {end}]");
                let bound = 4 * (found.len() + 1) * log;
                assert!(
                    visited <= bound,
                    "n {n}: {visited} nodes for {} answers",
                    found.len()
                );
            }
        }
    }

    #[test]
    fn a_query_past_many_ranges_visits_few_nodes() {
        // 100,000 short ranges before the query and one long one over it:
        // one answer, found in a few dozen steps.
        let mut ranges: Vec<(u32, u32, u32)> = (0..100_000).map(|i| (2 * i, 2 * i, i)).collect();
        ranges.push((0, 1_000_000, 100_000));
        let intervals = Intervals::new(ranges);
        let mut found = Vec::new();
        let visited = intervals.overlapping(500_000, 500_001, &mut found);
        assert_eq!(found, [100_000]);
        assert!(visited <= 4 * 18, "{visited} nodes");
    }
}
