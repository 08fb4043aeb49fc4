//! The unified diff that `op2 fmt --check` prints, computed with a bounded
//! amount of work counted in steps, not time, so that its output is the
//! same on every machine and every run, and its cost is linear in the text
//! plus a fixed number of steps.
//!
//! The lines common to both texts at the start and at the end are kept
//! first. In between, the lines that occur exactly once in each text and in
//! the same order in both (the longest such sequence, found by patience
//! sorting in O(n log n)) are kept too, as anchors. Each gap between two
//! anchors gets its shortest edit script from Myers' greedy algorithm, whose
//! cost grows with the product of the gap's length and its number of
//! differing lines; its steps (one per diagonal reached and one per line
//! compared along a diagonal) are counted against [`WORK_LIMIT`], shared by
//! every gap of the file. A gap whose search would pass what is left of the
//! limit is shown as replaced: its old lines removed and its new lines
//! added. The diff stays correct (applying it gives the new text); only its
//! length can exceed the shortest one, and then the same way everywhere.

use std::collections::HashMap;
use std::fmt::Write;

/// Steps of Myers' search allowed for one file: about a second in a debug
/// build, and enough for a shortest script of about 2,900 differing lines in
/// one gap. The search's memory is four bytes per step.
pub const WORK_LIMIT: usize = 1 << 22;

/// Lines of unchanged text shown around each change.
const CONTEXT: usize = 3;

/// One line of the edit script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edit {
    /// The next old line is the next new line.
    Keep,
    /// The next old line is removed.
    Delete,
    /// The next new line is added.
    Insert,
}

/// The steps spent so far and the limit.
struct Work {
    used: usize,
    limit: usize,
}

impl Work {
    /// Spends `steps` if the limit allows them all; false if it does not.
    fn spend(&mut self, steps: usize) -> bool {
        match self.used.checked_add(steps) {
            Some(used) if used <= self.limit => {
                self.used = used;
                true
            }
            _ => {
                self.used = self.limit;
                false
            }
        }
    }
}

/// The text's lines, each with its `\n` (the last may lack it).
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A unified diff from `old` to `new` with `name` in its header and at most
/// `limit` steps of search (see the module's text); empty when they are
/// equal.
pub fn unified(name: &str, old: &str, new: &str, limit: usize) -> String {
    let old_lines = lines(old);
    let new_lines = lines(new);
    let edits = edit_script(&old_lines, &new_lines, limit);
    render(name, &old_lines, &new_lines, &edits)
}

/// The edit script from `old` to `new`, one edit per line.
fn edit_script<'a>(old: &[&'a str], new: &[&'a str], limit: usize) -> Vec<Edit> {
    // Lines become numbers: equal lines, equal numbers.
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut intern = |line: &'a str| -> u32 {
        let next = ids.len() as u32;
        *ids.entry(line).or_insert(next)
    };
    let a: Vec<u32> = old.iter().map(|&line| intern(line)).collect();
    let b: Vec<u32> = new.iter().map(|&line| intern(line)).collect();
    let distinct = ids.len();

    let mut edits = Vec::with_capacity(a.len() + b.len());
    let prefix = common_prefix(&a, &b);
    let suffix = common_suffix(&a[prefix..], &b[prefix..]);
    edits.resize(prefix, Edit::Keep);
    let (a_mid, b_mid) = (prefix..a.len() - suffix, prefix..b.len() - suffix);

    let mut work = Work { used: 0, limit };
    let mut seen = vec![usize::MAX; distinct];
    let (mut i, mut j) = (a_mid.start, b_mid.start);
    let anchors = anchors(&a, &b, a_mid.clone(), b_mid.clone(), distinct);
    let ends = anchors.into_iter().chain([(a_mid.end, b_mid.end)]);
    for (gap, (ai, bj)) in ends.enumerate() {
        diff_gap(&a[i..ai], &b[j..bj], &mut work, &mut seen, gap, &mut edits);
        if ai < a_mid.end {
            edits.push(Edit::Keep);
        }
        (i, j) = (ai + 1, bj + 1);
    }
    edits.resize(edits.len() + suffix, Edit::Keep);
    edits
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &[u32], b: &[u32]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The pairs (old index, new index) of the lines that occur once in each
/// text, within the given ranges, forming the longest sequence increasing in
/// both (patience sorting).
fn anchors(
    a: &[u32],
    b: &[u32],
    a_range: std::ops::Range<usize>,
    b_range: std::ops::Range<usize>,
    distinct: usize,
) -> Vec<(usize, usize)> {
    // Occurrences in each text (0, 1 or 2 meaning more) and the new index.
    let mut count = vec![[0u8; 2]; distinct];
    let mut position = vec![0usize; distinct];
    for &id in &a[a_range.clone()] {
        let c = &mut count[id as usize][0];
        *c = (*c + 1).min(2);
    }
    for (j, &id) in b.iter().enumerate().take(b_range.end).skip(b_range.start) {
        let c = &mut count[id as usize][1];
        *c = (*c + 1).min(2);
        position[id as usize] = j;
    }
    let unique: Vec<(usize, usize)> = a_range
        .filter(|&i| count[a[i] as usize] == [1, 1])
        .map(|i| (i, position[a[i] as usize]))
        .collect();
    // tails[l]: the index in `unique` of the smallest new index that ends an
    // increasing sequence of length l + 1; before[u]: its predecessor.
    let mut tails: Vec<usize> = Vec::new();
    let mut before = vec![usize::MAX; unique.len()];
    for (u, &(_, j)) in unique.iter().enumerate() {
        let l = tails.partition_point(|&t| unique[t].1 < j);
        if l > 0 {
            before[u] = tails[l - 1];
        }
        if l == tails.len() {
            tails.push(u);
        } else {
            tails[l] = u;
        }
    }
    let mut chain = Vec::with_capacity(tails.len());
    let mut u = tails.last().copied().unwrap_or(usize::MAX);
    while u != usize::MAX {
        chain.push(unique[u]);
        u = before[u];
    }
    chain.reverse();
    chain
}

/// Appends the edits from `a` to `b`, two stretches between anchors. `seen`
/// and `gap` find whether they share a line at all (`seen[id] == gap` for
/// the ids of `a`), in which case Myers' search runs within `work`.
fn diff_gap(
    a: &[u32],
    b: &[u32],
    work: &mut Work,
    seen: &mut [usize],
    gap: usize,
    edits: &mut Vec<Edit>,
) {
    let prefix = common_prefix(a, b);
    let suffix = common_suffix(&a[prefix..], &b[prefix..]);
    let (a, b) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    edits.resize(edits.len() + prefix, Edit::Keep);
    for &id in a {
        seen[id as usize] = gap;
    }
    let shared = b.iter().any(|&id| seen[id as usize] == gap);
    match shared.then(|| myers(a, b, work)).flatten() {
        Some(script) => edits.extend(script),
        None => {
            edits.resize(edits.len() + a.len(), Edit::Delete);
            edits.resize(edits.len() + b.len(), Edit::Insert);
        }
    }
    edits.resize(edits.len() + suffix, Edit::Keep);
}

/// Marks a diagonal that the search has not reached.
const UNREACHED: u32 = u32::MAX;

/// How the furthest point of diagonal `k = x - y` after `d` edits is
/// reached from the furthest points after `d - 1` (`previous[i]` for the
/// diagonal `2i - (d - 1)`): `Some((true, x))` by adding a line (from
/// diagonal k + 1), `Some((false, x))` by removing one (from k - 1), with
/// `x` where that edit ends; `None` if neither stays within the grid.
fn step(previous: &[u32], index: usize, k: i64, n: i64, m: i64) -> Option<(bool, i64)> {
    let down = previous
        .get(index)
        .filter(|&&x| x != UNREACHED && i64::from(x) - k <= m)
        .map(|&x| i64::from(x));
    let right = index
        .checked_sub(1)
        .and_then(|i| previous.get(i))
        .filter(|&&x| x != UNREACHED && i64::from(x) < n)
        .map(|&x| i64::from(x) + 1);
    match (down, right) {
        (Some(x), Some(r)) if r <= x => Some((true, x)),
        (_, Some(r)) => Some((false, r)),
        (Some(x), None) => Some((true, x)),
        (None, None) => None,
    }
}

/// A shortest edit script from `a` to `b` (Myers' greedy algorithm), or
/// `None` when finding it would take more steps than `work` has left.
fn myers(a: &[u32], b: &[u32], work: &mut Work) -> Option<Vec<Edit>> {
    let (n, m) = (a.len() as i64, b.len() as i64);
    // trace[d][i]: the furthest x on diagonal 2i - d after d edits.
    let mut trace: Vec<Vec<u32>> = Vec::new();
    for d in 0..=(n + m) {
        if !work.spend(d as usize + 1) {
            return None;
        }
        let mut row = Vec::with_capacity(d as usize + 1);
        let mut compared = 0usize;
        let mut end = false;
        for i in 0..=d {
            let k = 2 * i - d;
            let reached = if d == 0 {
                Some(0)
            } else {
                step(&trace[d as usize - 1], i as usize, k, n, m).map(|(_, x)| x)
            };
            let Some(mut x) = reached else {
                row.push(UNREACHED);
                continue;
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
                compared += 1;
            }
            row.push(x as u32);
            end |= x == n && y == m;
        }
        if !work.spend(compared) {
            return None;
        }
        trace.push(row);
        if end {
            return Some(backtrack(&trace, n, m));
        }
    }
    None
}

/// The edits of the path the search found to (n, m), in order.
fn backtrack(trace: &[Vec<u32>], n: i64, m: i64) -> Vec<Edit> {
    let mut reversed = Vec::with_capacity((n + m) as usize);
    let (mut x, mut y) = (n, m);
    for d in (1..trace.len() as i64).rev() {
        let k = x - y;
        let index = ((k + d) / 2) as usize;
        let (down, start) = step(&trace[d as usize - 1], index, k, n, m)
            .expect("the search reached this point from the previous row");
        while x > start {
            reversed.push(Edit::Keep);
            x -= 1;
            y -= 1;
        }
        if down {
            reversed.push(Edit::Insert);
            y -= 1;
        } else {
            reversed.push(Edit::Delete);
            x -= 1;
        }
    }
    reversed.resize(reversed.len() + x as usize, Edit::Keep);
    reversed.reverse();
    reversed
}

/// Writes the unified diff of `edits`: hunks of the changes with
/// [`CONTEXT`] lines around them, each run of changes as its removed lines
/// then its added lines.
fn render(name: &str, old: &[&str], new: &[&str], edits: &[Edit]) -> String {
    let mut out = String::new();
    // Each hunk: its range of `edits` and the old and new line where it starts.
    let mut hunks: Vec<(usize, usize, usize, usize)> = Vec::new();
    let (mut i, mut j) = (0usize, 0usize);
    let mut last_change: Option<usize> = None;
    for (e, &edit) in edits.iter().enumerate() {
        if edit != Edit::Keep {
            match (last_change, hunks.last_mut()) {
                (Some(last), Some(hunk)) if e - last <= 2 * CONTEXT + 1 => hunk.1 = e + 1,
                _ => {
                    // The lines before are all kept: back up over them.
                    let back = CONTEXT.min(e - last_change.map_or(0, |l| l + 1));
                    hunks.push((e - back, e + 1, i - back, j - back));
                }
            }
            last_change = Some(e);
        }
        match edit {
            Edit::Keep => (i, j) = (i + 1, j + 1),
            Edit::Delete => i += 1,
            Edit::Insert => j += 1,
        }
    }
    if hunks.is_empty() {
        return out;
    }
    let _ = writeln!(out, "--- {name}\n+++ {name}");
    for (start, end, i, j) in hunks {
        let end = (end + CONTEXT).min(edits.len());
        let edits = &edits[start..end];
        let old_len = edits.iter().filter(|&&e| e != Edit::Insert).count();
        let new_len = edits.iter().filter(|&&e| e != Edit::Delete).count();
        let _ = writeln!(out, "@@ -{} +{} @@", range(i, old_len), range(j, new_len));
        let (mut i, mut j) = (i, j);
        let mut e = 0;
        while e < edits.len() {
            if edits[e] == Edit::Keep {
                line(&mut out, ' ', old[i]);
                (i, j, e) = (i + 1, j + 1, e + 1);
                continue;
            }
            let run = edits[e..].iter().take_while(|&&e| e != Edit::Keep);
            let removed = run.clone().filter(|&&e| e == Edit::Delete).count();
            let added = run.clone().count() - removed;
            for text in &old[i..i + removed] {
                line(&mut out, '-', text);
            }
            for text in &new[j..j + added] {
                line(&mut out, '+', text);
            }
            (i, j, e) = (i + removed, j + added, e + removed + added);
        }
    }
    out
}

/// A hunk header's range: the first line (1-based) and the count, the count
/// left out when it is 1, and an empty range named by the line before it.
fn range(start: usize, len: usize) -> String {
    match len {
        1 => format!("{}", start + 1),
        0 => format!("{start},0"),
        _ => format!("{},{len}", start + 1),
    }
}

fn line(out: &mut String, mark: char, text: &str) {
    out.push(mark);
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

/// The test suite's `patch` (shared with the integration tests).
#[cfg(test)]
#[path = "../../tests/fmt/patch.rs"]
mod patch;

#[cfg(test)]
mod tests {
    use super::*;
    use patch::apply;

    /// The length of the shortest script, by dynamic programming.
    fn shortest(a: &[&str], b: &[&str]) -> usize {
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, x) in a.iter().enumerate() {
            let mut diagonal = row[0];
            row[0] = i + 1;
            for (j, y) in b.iter().enumerate() {
                let above = row[j + 1];
                row[j + 1] = if x == y {
                    diagonal
                } else {
                    1 + above.min(row[j])
                };
                diagonal = above;
            }
        }
        row[b.len()]
    }

    fn changed(diff: &str) -> usize {
        diff.lines()
            .skip(2)
            .filter(|l| l.starts_with('+') || l.starts_with('-'))
            .count()
    }

    #[test]
    fn a_small_change_is_shown_with_three_lines_around_it() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified("f", old, new, WORK_LIMIT),
            "--- f\n+++ f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
        assert_eq!(unified("f", old, old, WORK_LIMIT), "");
    }

    #[test]
    fn changes_far_apart_are_separate_hunks_and_close_ones_one() {
        let old: String = (0..30).map(|i| format!("{i}\n")).collect();
        let new = old.replace("\n3\n", "\nthree\n").replace("\n20\n", "\n\n");
        let diff = unified("f", &old, &new, WORK_LIMIT);
        assert_eq!(diff.matches("@@ -").count(), 2, "{diff}");
        assert!(diff.contains("@@ -1,7 +1,7 @@\n"), "{diff}");
        assert!(diff.contains("@@ -18,7 +18,7 @@\n"), "{diff}");
        let new = old.replace("\n3\n", "\nthree\n").replace("\n10\n", "\n\n");
        let diff = unified("f", &old, &new, WORK_LIMIT);
        assert_eq!(diff.matches("@@ -").count(), 1, "{diff}");
        assert_eq!(apply(&old, &diff), new);
    }

    #[test]
    fn a_missing_newline_at_the_end_is_marked() {
        let diff = unified("f", "a\nb", "a\nb\n", WORK_LIMIT);
        assert_eq!(
            diff,
            "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
        );
        assert_eq!(apply("a\nb", &diff), "a\nb\n");
        let diff = unified("f", "", "a\n", WORK_LIMIT);
        assert_eq!(diff, "--- f\n+++ f\n@@ -0,0 +1 @@\n+a\n");
        assert_eq!(apply("", &diff), "a\n");
    }

    /// Pseudo-random texts of a few distinct lines, so that lines repeat
    /// and the anchors are few.
    fn texts(seed: u64) -> (String, String) {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
        let mut next = |bound: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % bound
        };
        let mut text = |len: u64| -> String {
            (0..next(len))
                .map(|_| format!("{}\n", next(6)))
                .collect::<String>()
        };
        (text(40), text(40))
    }

    fn unlimited() -> Work {
        Work {
            used: 0,
            limit: usize::MAX,
        }
    }

    #[test]
    fn the_diff_applies_whatever_the_limit() {
        for seed in 0..300 {
            let (old, new) = texts(seed);
            for limit in [WORK_LIMIT, 0, 10, 100] {
                let diff = unified("f", &old, &new, limit);
                assert_eq!(apply(&old, &diff), new, "seed {seed}, {limit}: {diff}");
            }
        }
    }

    #[test]
    fn the_search_finds_a_shortest_script() {
        for seed in 0..300 {
            let (old, new) = texts(seed);
            let (a, b) = (lines(&old), lines(&new));
            let ids = |lines: &[&str]| -> Vec<u32> {
                lines.iter().map(|l| l.trim().parse().unwrap()).collect()
            };
            let (a_ids, b_ids) = (ids(&a), ids(&b));
            let Some(script) = myers(&a_ids, &b_ids, &mut unlimited()) else {
                panic!("seed {seed}: no script without a limit");
            };
            let (mut i, mut j) = (0, 0);
            for edit in &script {
                match edit {
                    Edit::Keep => {
                        assert_eq!(a_ids[i], b_ids[j], "seed {seed}");
                        (i, j) = (i + 1, j + 1);
                    }
                    Edit::Delete => i += 1,
                    Edit::Insert => j += 1,
                }
            }
            assert_eq!((i, j), (a.len(), b.len()), "seed {seed}");
            let edits = script.iter().filter(|&&e| e != Edit::Keep).count();
            assert_eq!(edits, shortest(&a, &b), "seed {seed}: {script:?}");
        }
    }

    /// The limit is a count of steps: the same texts give the shortest
    /// diff with exactly the steps the search needs, and the replaced lines
    /// with one step fewer, whatever the machine's speed.
    #[test]
    fn the_limit_is_a_count_of_steps_tested_at_its_edge() {
        // 40 differing lines in a gap with no anchor (the lines repeat).
        let old: String = (0..60).map(|i| format!("{}\n", i % 3)).collect();
        let new: String = (0..60).map(|i| format!("{}\n", i % 4)).collect();
        let (a, b) = (lines(&old), lines(&new));
        let a_ids: Vec<u32> = a.iter().map(|l| l.trim().parse().unwrap()).collect();
        let b_ids: Vec<u32> = b.iter().map(|l| l.trim().parse().unwrap()).collect();
        // The steps the search takes on the gap left by the common prefix
        // and suffix (which cost none).
        let prefix = common_prefix(&a_ids, &b_ids);
        let suffix = common_suffix(&a_ids[prefix..], &b_ids[prefix..]);
        let gap = |ids: &[u32]| ids[prefix..ids.len() - suffix].to_vec();
        let mut work = unlimited();
        myers(&gap(&a_ids), &gap(&b_ids), &mut work).expect("no limit");
        let needed = work.used;
        assert!(needed > 100, "{needed}");

        let shortest_diff = unified("f", &old, &new, needed);
        let replaced = unified("f", &old, &new, needed - 1);
        assert_eq!(changed(&shortest_diff), shortest(&a, &b));
        assert_eq!(
            changed(&replaced),
            a.len() - prefix - suffix + b.len() - prefix - suffix
        );
        assert!(changed(&replaced) > changed(&shortest_diff));
        assert_eq!(apply(&old, &shortest_diff), new);
        assert_eq!(apply(&old, &replaced), new);
        // The same limit, the same diff, every time.
        for _ in 0..3 {
            assert_eq!(unified("f", &old, &new, needed), shortest_diff);
            assert_eq!(unified("f", &old, &new, needed - 1), replaced);
        }
    }

    #[test]
    fn lines_unique_in_both_anchor_the_diff_of_a_long_change() {
        // One line split into 50,000, with 50,000 unchanged lines after it:
        // the unchanged lines are anchors, so the diff is the shortest one
        // with no search at all.
        let mut old = String::from("head\n");
        let mut new = String::from("head\n");
        old.push_str(&(0..50_000).map(|i| format!("p{i}, ")).collect::<String>());
        old.push('\n');
        for i in 0..50_000 {
            let _ = writeln!(new, "p{i},");
        }
        for i in 0..50_000 {
            let _ = writeln!(old, "body {i}");
            let _ = writeln!(new, "body {i}");
        }
        let diff = unified("f", &old, &new, 0);
        assert_eq!(changed(&diff), 1 + 50_000);
        assert_eq!(apply(&old, &diff), new);
    }
}
