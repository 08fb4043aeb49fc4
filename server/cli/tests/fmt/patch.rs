//! Applies a unified diff, as `patch` does, for the tests of `op2 fmt
//! --check`'s diff (the integration tests and the diff's unit tests).

/// A hunk header's range, `first,count` or `first` (a count of 1), as the
/// index of its first line: an empty range names the line before it.
fn range(text: &str) -> (usize, usize) {
    let (first, count) = match text.split_once(',') {
        Some((first, count)) => (first, count.parse::<usize>().expect("a count")),
        None => (text, 1),
    };
    let first: usize = first.parse().expect("a line number");
    (if count == 0 { first } else { first - 1 }, count)
}

/// Applies a unified diff to `old` as `patch` does, checking its header,
/// every hunk's line numbers and counts, and every context and removed line
/// against `old`.
pub fn apply(old: &str, diff: &str) -> String {
    let old: Vec<&str> = old.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut next = 0;
    // Lines of `out` so far.
    let mut new_lines = 0;
    let mut lines = diff.split_inclusive('\n').peekable();
    if diff.is_empty() {
        return old.concat();
    }
    assert!(
        lines.next().is_some_and(|l| l.starts_with("--- ")),
        "{diff}"
    );
    assert!(
        lines.next().is_some_and(|l| l.starts_with("+++ ")),
        "{diff}"
    );
    while let Some(header) = lines.next() {
        let ranges = header
            .strip_prefix("@@ -")
            .and_then(|h| h.strip_suffix(" @@\n"))
            .expect("a hunk header");
        let (old_range, new_range) = ranges.split_once(" +").expect("two ranges");
        let (start, old_count) = range(old_range);
        let (new_start, new_count) = range(new_range);
        assert!(start >= next, "hunks in order: {header}");
        out.extend(old[next..start].iter().copied());
        new_lines += start - next;
        assert_eq!(
            new_lines, new_start,
            "the new range starts where the text is: {header}"
        );
        next = start;
        let (mut old_seen, mut new_seen) = (0, 0);
        while let Some(l) = lines.next_if(|l| !l.starts_with("@@")) {
            let (mark, text) = l.split_at(1);
            let text = match lines.next_if(|l| l.starts_with('\\')) {
                Some(_) => text.strip_suffix('\n').expect("a line"),
                None => text,
            };
            match mark {
                " " | "-" => {
                    assert_eq!(old[next], text, "{l}");
                    if mark == " " {
                        out.push_str(text);
                        new_seen += 1;
                    }
                    next += 1;
                    old_seen += 1;
                }
                "+" => {
                    out.push_str(text);
                    new_seen += 1;
                }
                _ => panic!("a line of a hunk: {l:?}"),
            }
        }
        assert_eq!((old_seen, new_seen), (old_count, new_count), "{header}");
        new_lines += new_seen;
    }
    out.extend(old[next..].iter().copied());
    out
}
