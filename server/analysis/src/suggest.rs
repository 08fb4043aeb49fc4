//! "A name with a similar name exists" suggestions for unknown names, with
//! bounded work per lookup.
//!
//! A suggestion is the candidate at the smallest edit distance (ties: the
//! first in byte order), when that distance is within a third of the longer
//! name's length (at least one edit). Finding it must not cost work in
//! proportion to the names a program declares, or N unknown names among N
//! declarations cost N² distances. So each lookup measures at most
//! [`MAX_COMPARED`] candidates of each source (the locals in scope, and the
//! indexed top-level names), each distance is computed in a band as wide as
//! the edits allowed, and names longer than [`MAX_NAME`] bytes get no
//! suggestion. The top-level names are indexed once per analysis
//! ([`Names`]), by length and then by name; only lengths within the allowed
//! distance can match. When those lengths hold at most [`MAX_COMPARED`]
//! names, all of them are measured, and the answer is the closest name, as
//! without any bound. When they hold more, the names nearest to the unknown
//! name in length, and then in alphabetical order of the names read forwards
//! and backwards, are measured ([`PER_LENGTH`] of each length, half of them
//! in each order, nearest length first): a typo in a name's second half
//! leaves its start in place, one in its first half its end, so a single typo
//! is still found in a crowded program, unless many names of that length
//! share the untouched half with it.
//!
//! What is measured depends only on the unknown name and on the set of
//! candidate names (never on the order of declaration or of a hash map),
//! which keeps a diagnostic a function of what the analysis cache compares.

/// Unknown names longer than this many bytes get no suggestion.
pub(crate) const MAX_NAME: usize = 32;
/// Candidates measured per lookup from each source (the locals, the index).
pub(crate) const MAX_COMPARED: usize = 64;
/// Indexed names measured per length when a lookup's lengths hold more than
/// [`MAX_COMPARED`] names.
pub(crate) const PER_LENGTH: usize = 16;

#[cfg(test)]
thread_local! {
    /// Candidates measured on this thread, for tests of the bound.
    pub(crate) static COMPARED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The edits allowed between names of `a` and `b` bytes.
fn allowed(a: usize, b: usize) -> usize {
    (a.max(b) / 3).max(1)
}

/// The lengths a candidate may have to be within the allowed distance of a
/// name of `len` bytes.
fn lengths(len: usize) -> std::ops::RangeInclusive<usize> {
    let low = len.saturating_sub(allowed(len, 0));
    let mut high = len;
    while high + 1 - len <= allowed(len, high + 1) {
        high += 1;
    }
    low..=high
}

/// Levenshtein distance (in bytes) between `a` and `b` when it is at most
/// `limit`: only the cells within `limit` of the diagonal are computed, and
/// the computation stops once a row exceeds it.
fn distance_within(a: &[u8], b: &[u8], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let over = limit + 1;
    let mut previous: Vec<usize> = (0..=b.len()).map(|j| j.min(over)).collect();
    let mut current = vec![over; b.len() + 1];
    for i in 1..=a.len() {
        current.fill(over);
        current[0] = i.min(over);
        let mut row_least = current[0];
        for j in i.saturating_sub(limit).max(1)..=(i + limit).min(b.len()) {
            let substitution = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let cell = substitution
                .min(previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(over);
            current[j] = cell;
            row_least = row_least.min(cell);
        }
        if row_least > limit {
            return None;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    Some(previous[b.len()]).filter(|d| *d <= limit)
}

/// Top-level names indexed for suggestions: those that can be within the
/// allowed distance of a name of at most [`MAX_NAME`] bytes, by length and
/// then by name, and by length and then by the name read backwards (so that
/// names sharing their end are neighbours too).
#[derive(Debug)]
pub(crate) struct Names {
    sorted: Vec<Box<str>>,
    backwards: Vec<(Box<[u8]>, usize)>,
}

impl Names {
    pub(crate) fn new<'c>(names: impl IntoIterator<Item = &'c str>) -> Names {
        let longest = *lengths(MAX_NAME).end();
        let mut sorted: Vec<&str> = names.into_iter().filter(|n| n.len() <= longest).collect();
        sorted.sort_unstable_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        sorted.dedup();
        let mut backwards: Vec<(Box<[u8]>, usize)> = sorted
            .iter()
            .enumerate()
            .map(|(i, n)| (n.bytes().rev().collect(), i))
            .collect();
        backwards.sort_unstable_by(|a, b| (a.0.len(), &a.0).cmp(&(b.0.len(), &b.0)));
        Names {
            sorted: sorted.into_iter().map(Box::from).collect(),
            backwards,
        }
    }

    /// The positions of the names of `len` bytes.
    fn of_length(&self, len: usize) -> std::ops::Range<usize> {
        let start = self.sorted.partition_point(|n| n.len() < len);
        let end = self.sorted.partition_point(|n| n.len() <= len);
        start..end
    }
}

/// The items of `items` nearest to position `at`, alternately after and
/// before it.
fn around<T>(items: &[T], at: usize) -> impl Iterator<Item = &T> {
    let mut after = items[at..].iter();
    let mut before = items[..at].iter().rev();
    let mut turn = false;
    std::iter::from_fn(move || {
        turn = !turn;
        if turn {
            after.next().or_else(|| before.next())
        } else {
            before.next().or_else(|| after.next())
        }
    })
}

/// One lookup's search for the closest name.
pub(crate) struct Search<'n, 'c> {
    name: &'n str,
    best: Option<(usize, &'c str)>,
}

impl<'n, 'c> Search<'n, 'c> {
    pub(crate) fn new(name: &'n str) -> Search<'n, 'c> {
        Search { name, best: None }
    }

    /// Measures the first [`MAX_COMPARED`] of `candidates`.
    pub(crate) fn among(&mut self, candidates: impl IntoIterator<Item = &'c str>) {
        if self.name.len() > MAX_NAME {
            return;
        }
        for candidate in candidates.into_iter().take(MAX_COMPARED) {
            self.measure(candidate);
        }
    }

    /// Measures the names of `index` that can be close enough: all of them
    /// when there are at most [`MAX_COMPARED`], otherwise [`PER_LENGTH`] of
    /// each length, nearest length first, those nearest to the name in
    /// alphabetical order read forwards and backwards.
    pub(crate) fn in_index(&mut self, index: &'c Names) {
        if self.name.len() > MAX_NAME {
            return;
        }
        let len = self.name.len();
        let window = lengths(len);
        let start = index.sorted.partition_point(|n| n.len() < *window.start());
        let end = index.sorted.partition_point(|n| n.len() <= *window.end());
        if end - start <= MAX_COMPARED {
            for candidate in &index.sorted[start..end] {
                self.measure(candidate);
            }
            return;
        }
        // Lengths by distance from the name's: len, len - 1, len + 1, …
        let nearest = (0..=window.end() - len).flat_map(|d| {
            [len.checked_sub(d), (d > 0).then_some(len + d)]
                .into_iter()
                .flatten()
                .filter(|l| window.contains(l))
        });
        let mut left = MAX_COMPARED;
        let reversed: Vec<u8> = self.name.bytes().rev().collect();
        for length in nearest {
            let range = index.of_length(length);
            let (names, backwards) = (&index.sorted[range.clone()], &index.backwards[range]);
            let most = PER_LENGTH.min(left) / 2;
            let at = names.partition_point(|n| **n < *self.name);
            let by_start = around(names, at).take(most).map(|n| &**n);
            let at = backwards.partition_point(|(r, _)| **r < *reversed);
            let by_end = around(backwards, at)
                .take(most)
                .map(|(_, i)| &*index.sorted[*i]);
            for candidate in by_start.chain(by_end) {
                self.measure(candidate);
                left -= 1;
            }
            if left < 2 {
                break;
            }
        }
    }

    fn measure(&mut self, candidate: &'c str) {
        #[cfg(test)]
        COMPARED.with(|c| c.set(c.get() + 1));
        if candidate == self.name {
            return;
        }
        let mut limit = allowed(self.name.len(), candidate.len());
        if let Some((distance, _)) = self.best {
            limit = limit.min(distance);
        }
        let distance = distance_within(self.name.as_bytes(), candidate.as_bytes(), limit);
        if let Some(distance) = distance
            && self.best.is_none_or(|best| (distance, candidate) < best)
        {
            self.best = Some((distance, candidate));
        }
    }

    /// The closest name measured, if close enough.
    pub(crate) fn best(&self) -> Option<&'c str> {
        self.best.map(|(_, name)| name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distance without a band or a limit.
    fn edit_distance(a: &str, b: &str) -> usize {
        let b = b.as_bytes();
        let mut previous: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.bytes().enumerate() {
            let mut current = vec![i + 1];
            for (j, cb) in b.iter().enumerate() {
                let substitution = previous[j] + usize::from(ca != *cb);
                current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
            }
            previous = current;
        }
        previous[b.len()]
    }

    /// The answer of measuring every candidate, as before the bound.
    fn closest_of_all<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
        candidates
            .iter()
            .filter(|c| **c != name)
            .map(|c| (edit_distance(name, c), *c))
            .filter(|(d, c)| *d <= allowed(name.len(), c.len()))
            .min()
            .map(|(_, c)| c)
    }

    fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
        let index = Names::new(candidates.iter().copied());
        let mut search = Search::new(name);
        search.in_index(&index);
        let best = search.best()?;
        candidates.iter().copied().find(|c| *c == best)
    }

    #[test]
    fn typos_are_found_and_strangers_are_not() {
        assert_eq!(closest("totl", &["total", "rms"]), Some("total"));
        assert_eq!(closest("x", &["total", "rms"]), None);
        assert_eq!(closest("rsm", &["total", "rms", "rm"]), Some("rm"));
    }

    #[test]
    fn the_banded_distance_is_the_distance() {
        let words = [
            "",
            "a",
            "ab",
            "ba",
            "abc",
            "total",
            "totl",
            "tota1",
            "xtotal",
            "res_calc",
            "rescalc",
            "adt_calc",
            "update",
            "updaet",
            "pdate",
            "aaaaaaaa",
            "aaaabaaa",
            "bbbbbbbbbbbb",
        ];
        for a in words {
            for b in words {
                let exact = edit_distance(a, b);
                for limit in 0..8 {
                    assert_eq!(
                        distance_within(a.as_bytes(), b.as_bytes(), limit),
                        (exact <= limit).then_some(exact),
                        "{a:?} {b:?} within {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn ordinary_programs_get_the_suggestion_of_measuring_every_name() {
        // Names of an ordinary program and typos of them: every lookup's
        // lengths hold at most MAX_COMPARED names, so all are measured.
        let names = [
            "cells",
            "edges",
            "bedges",
            "nodes",
            "pedge",
            "pcell",
            "pbedge",
            "pbecell",
            "p_x",
            "p_q",
            "p_qold",
            "p_adt",
            "p_res",
            "p_bound",
            "gam",
            "gm1",
            "cfl",
            "eps",
            "mach",
            "alpha",
            "qinf",
            "rms",
            "save_soln",
            "adt_calc",
            "res_calc",
            "bres_calc",
            "update",
        ];
        let typos = [
            "cels",
            "edgse",
            "nodess",
            "p_qol",
            "p_rez",
            "gamm",
            "saev_soln",
            "adt_clac",
            "rescalc",
            "bres_cal",
            "updat",
            "upddate",
            "alhpa",
            "macht",
            "xyz",
            "q",
            "p_",
            "pcel",
            "p_bnd",
            "cfll",
        ];
        for typo in typos {
            assert_eq!(
                closest(typo, &names),
                closest_of_all(typo, &names),
                "{typo}"
            );
        }
        assert_eq!(closest("adt_clac", &names), Some("adt_calc"));
        assert_eq!(closest("updat", &names), Some("update"));
    }

    #[test]
    fn a_crowded_index_measures_a_bounded_number_of_names_and_finds_near_typos() {
        let names: Vec<String> = (0..20_000).map(|i| format!("velocity_{i}")).collect();
        let index = Names::new(names.iter().map(String::as_str));
        for typo in [
            "velocty_4711",
            "velocity_47111",
            "velocity_471",
            "velociti_9",
        ] {
            let before = COMPARED.with(std::cell::Cell::get);
            let mut search = Search::new(typo);
            search.in_index(&index);
            let measured = COMPARED.with(std::cell::Cell::get) - before;
            assert!(measured <= MAX_COMPARED as u64, "{typo}: {measured}");
            let best = search.best().expect(typo);
            let all: Vec<&str> = names.iter().map(String::as_str).collect();
            let exact = closest_of_all(typo, &all).unwrap();
            assert_eq!(
                edit_distance(typo, best),
                edit_distance(typo, exact),
                "{typo}: {best} against {exact}"
            );
        }
        // Too long to be looked for.
        let long = "v".repeat(MAX_NAME + 1);
        let before = COMPARED.with(std::cell::Cell::get);
        let mut search = Search::new(&long);
        search.in_index(&index);
        search.among(names.iter().map(String::as_str));
        assert_eq!(COMPARED.with(std::cell::Cell::get), before);
    }

    /// `n` globals and sets, and `n` unknown names of each kind, each one
    /// typo away from a declared name (at its end in `main`, at its start at
    /// the top level).
    fn crowded_program(n: usize) -> String {
        let mut text = String::new();
        for i in 0..n {
            text.push_str(&format!("set s_{i};\nglobal g_{i}: double;\n"));
        }
        for i in 0..n {
            text.push_str(&format!("dat d_{i}: double on t_{i};\n"));
        }
        text.push_str("main {\n");
        for i in 0..n {
            text.push_str(&format!("    g_{i}x = 1.0;\n"));
        }
        text.push_str("}\n");
        text
    }

    #[test]
    fn a_check_measures_a_bounded_number_of_names_per_unknown_name() {
        for n in [100, 2_000] {
            let text = crowded_program(n);
            let before = COMPARED.with(std::cell::Cell::get);
            let analysis = crate::analyse_text(
                std::path::Path::new("/op2/main.op2"),
                &text,
                &crate::Options::default(),
            );
            let measured = COMPARED.with(std::cell::Cell::get) - before;
            let unknown: Vec<_> = analysis
                .diagnostics
                .iter()
                .filter(|d| d.code == op2_syntax::Code::E101)
                .collect();
            assert_eq!(unknown.len(), 2 * n, "{n}");
            // Each lookup measures at most MAX_COMPARED indexed names (and
            // `main` has no locals to measure).
            assert!(
                measured <= (2 * n * MAX_COMPARED) as u64,
                "{n} names: {measured} measured"
            );
            // Every typo is still found, in either half of the name.
            for diagnostic in unknown {
                let name = diagnostic
                    .message
                    .split('`')
                    .nth(1)
                    .expect("the message names the name");
                let expected = match name.strip_suffix('x') {
                    Some(global) => global.to_owned(),
                    None => name.replacen('t', "s", 1),
                };
                assert_eq!(
                    diagnostic
                        .fixes
                        .first()
                        .map(|f| f.edits[0].replacement.as_str()),
                    Some(expected.as_str()),
                    "{n}: {}",
                    diagnostic.message
                );
            }
        }
    }
}
