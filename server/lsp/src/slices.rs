//! Helpers over slices that more than one part of the server uses.

/// The lengths of the longest common prefix of `old` and `new`, and of the
/// longest common suffix of what follows it in each: the two never overlap,
/// so `prefix + suffix` is at most the shorter length.
pub(crate) fn common_ends<T: PartialEq>(old: &[T], new: &[T]) -> (usize, usize) {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let rest = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(rest)
        .take_while(|(a, b)| a == b)
        .count();
    (prefix, suffix)
}

#[cfg(test)]
mod tests {
    use super::common_ends;

    #[test]
    fn the_common_ends_never_overlap() {
        // (old, new, prefix, suffix): a repeated element may belong to the
        // prefix or the suffix but not to both.
        let cases: [(&str, &str, usize, usize); 7] = [
            ("", "", 0, 0),
            ("abc", "abc", 3, 0),
            ("aa", "aaa", 2, 0),
            ("aaa", "aa", 2, 0),
            ("abXc", "abc", 2, 1),
            ("xbc", "ybc", 0, 2),
            ("abcabc", "abc", 3, 0),
        ];
        for (old, new, prefix, suffix) in cases {
            assert_eq!(
                common_ends(old.as_bytes(), new.as_bytes()),
                (prefix, suffix),
                "{old:?} -> {new:?}"
            );
        }
    }
}
