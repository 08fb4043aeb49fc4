//! The part of each file that one diagnostic shows, bounded in size.
//!
//! codespan-reporting prints every line a label touches in full and counts
//! columns from the start of the line, so a diagnostic on a line of 14 KB
//! costs 14 KB of output and work, and thousands of them on that line cost
//! the square. Before rendering, each diagnostic gets an [`Excerpts`]: for
//! every file it points into, only the lines it shows (the lines its labels
//! start and end on, the context lines codespan shows of a label over
//! several lines, and placeholders for the lines codespan leaves out), and
//! of a line longer than [`WIDE_LINE`] characters only a window of
//! [`CONTEXT`] characters either side of each label's start and end, the
//! cuts shown as `...` (as rustc does). Line numbers and columns in the
//! output are those of the original file, found through its line index
//! (binary searches), so the cost of a diagnostic does not depend on the
//! length of the lines or the file.

use std::collections::BTreeMap;
use std::ops::Range;

use codespan_reporting::files::{self, Files};
use op2_syntax::{Diagnostic, Encoding, FileId, Location};

use crate::render::SourceMap;

/// Lines of at most this many characters are shown whole.
pub const WIDE_LINE: usize = 120;

/// Characters shown on either side of a label's start and end on a line
/// that is cut.
pub const CONTEXT: usize = 40;

/// What stands for the text cut from a long line.
const CUT: &str = "...";

/// Lines of a multi-line label codespan shows after its first line and
/// before its last (`Config::start_context_lines` and `end_context_lines`
/// of the default configuration).
const START_CONTEXT_LINES: u32 = 3;
const END_CONTEXT_LINES: u32 = 1;

/// A run of text copied from the original file.
#[derive(Clone, Copy, Debug)]
struct Segment {
    /// Where it starts in the excerpt.
    excerpt: usize,
    /// Where it starts in the original text.
    original: usize,
    len: usize,
}

/// The excerpt of one file.
#[derive(Debug)]
struct Excerpt {
    file: FileId,
    text: String,
    /// Where each line of the excerpt starts in `text`.
    line_starts: Vec<usize>,
    /// The 1-based number each line of the excerpt has in the file.
    line_numbers: Vec<usize>,
    /// Copied runs, in order (both in the excerpt and in the original).
    segments: Vec<Segment>,
}

impl Excerpt {
    /// The excerpt's offset for an original offset that one of its lines
    /// shows (the start or end of a label).
    fn to_excerpt(&self, original: usize) -> usize {
        let after = self
            .segments
            .partition_point(|segment| segment.original + segment.len < original);
        match self.segments.get(after) {
            Some(segment) if segment.original <= original => {
                segment.excerpt + (original - segment.original)
            }
            Some(segment) => segment.excerpt,
            None => self.text.len(),
        }
    }

    /// The original offset of an offset of the excerpt.
    fn to_original(&self, excerpt: usize) -> usize {
        let after = self
            .segments
            .partition_point(|segment| segment.excerpt <= excerpt);
        match after.checked_sub(1).map(|i| self.segments[i]) {
            Some(segment) => segment.original + (excerpt - segment.excerpt).min(segment.len),
            None => self.segments.first().map_or(0, |segment| segment.original),
        }
    }
}

/// The excerpts one diagnostic is rendered from; a [`Files`] for codespan.
#[derive(Debug)]
pub struct Excerpts<'a> {
    sources: &'a SourceMap,
    excerpts: Vec<Excerpt>,
}

impl<'a> Excerpts<'a> {
    /// The excerpts of every file `diagnostic` points into.
    pub fn new(sources: &'a SourceMap, diagnostic: &Diagnostic) -> Excerpts<'a> {
        let mut by_file: Vec<(FileId, Vec<Range<usize>>)> = Vec::new();
        for location in labels(diagnostic) {
            let range = location.range.to_usize();
            match by_file.iter_mut().find(|(file, _)| *file == location.file) {
                Some((_, ranges)) => ranges.push(range),
                None => by_file.push((location.file, vec![range])),
            }
        }
        let excerpts = by_file
            .into_iter()
            .filter_map(|(file, ranges)| excerpt(sources, file, &ranges))
            .collect();
        Excerpts { sources, excerpts }
    }

    /// Where `location` is in its file's excerpt.
    pub fn range(&self, location: Location) -> Range<usize> {
        let range = location.range.to_usize();
        match self.get(location.file) {
            Ok(excerpt) => excerpt.to_excerpt(range.start)..excerpt.to_excerpt(range.end),
            Err(_) => range,
        }
    }

    fn get(&self, file: FileId) -> Result<&Excerpt, files::Error> {
        self.excerpts
            .iter()
            .find(|excerpt| excerpt.file == file)
            .ok_or(files::Error::FileMissing)
    }
}

/// Every location a diagnostic labels, the primary first.
fn labels(diagnostic: &Diagnostic) -> impl Iterator<Item = Location> + '_ {
    std::iter::once(diagnostic.location).chain(diagnostic.related.iter().map(|r| r.location))
}

/// The excerpt of `file` showing `ranges`.
fn excerpt(sources: &SourceMap, file: FileId, ranges: &[Range<usize>]) -> Option<Excerpt> {
    let source = sources.get(file)?;
    let text = source.text.as_str();
    let index = &source.index;
    let line_of = |offset: usize| index.line_col(clamp(offset), Encoding::Utf8).line;
    let last_line = index.line_count() - 1;

    // The lines to show, and on each the offsets a label starts or ends at.
    let mut lines: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for range in ranges {
        let start = char_floor(text, range.start);
        let end = char_floor(text, range.end.max(range.start));
        let (first, last) = (line_of(start), line_of(end));
        lines.entry(first).or_default().push(start);
        lines.entry(last).or_default().push(end);
        if last > first + 1 {
            let after_start = (first + 1)..=(first + START_CONTEXT_LINES).min(last - 1);
            let before_end = last.saturating_sub(END_CONTEXT_LINES).max(first + 1)..last;
            for line in after_start.chain(before_end) {
                lines.entry(line).or_default();
            }
        }
    }
    // A single line between two shown lines is shown by codespan too.
    let gaps: Vec<u32> = lines
        .keys()
        .zip(lines.keys().skip(1))
        .filter(|(a, b)| **b == **a + 2)
        .map(|(a, _)| a + 1)
        .collect();
    for line in gaps {
        lines.entry(line).or_default();
    }

    let mut out = Excerpt {
        file,
        text: String::new(),
        line_starts: Vec::new(),
        line_numbers: Vec::new(),
        segments: Vec::new(),
    };
    let mut previous: Option<u32> = None;
    for (&line, points) in &mut lines {
        if let Some(previous) = previous
            && line > previous + 2
        {
            // Lines codespan leaves out: two empty lines keep its `·` break.
            for number in [previous + 2, line] {
                out.line_starts.push(out.text.len());
                out.line_numbers.push(number as usize);
                out.text.push('\n');
            }
        }
        previous = Some(line);
        let start = index.line_start(line).unwrap_or(index.len()) as usize;
        let end = index.line_end(line).unwrap_or(index.len()) as usize;
        let next = if line < last_line {
            index.line_start(line + 1).unwrap_or(index.len()) as usize
        } else {
            end
        };
        out.line_starts.push(out.text.len());
        out.line_numbers.push(line as usize + 1);
        points.sort_unstable();
        let mut shown_to = start;
        for window in windows(text, start..end, points) {
            if window.start > shown_to {
                out.text.push_str(CUT);
            }
            shown_to = window.end;
            copy(&mut out, text, window);
        }
        if shown_to < end {
            out.text.push_str(CUT);
        }
        // The line break, so that offsets in it still have a place.
        copy(&mut out, text, end..next);
    }
    Some(out)
}

fn copy(out: &mut Excerpt, text: &str, range: Range<usize>) {
    if range.is_empty() {
        return;
    }
    out.segments.push(Segment {
        excerpt: out.text.len(),
        original: range.start,
        len: range.len(),
    });
    crate::render::push_visible(&mut out.text, &text[range]);
}

/// The parts of the line `line` to show: all of it when it is short, else
/// [`CONTEXT`] characters either side of each of `points` (sorted), merged
/// where they meet. A line without points shows its start.
fn windows(text: &str, line: Range<usize>, points: &[usize]) -> Vec<Range<usize>> {
    let content = &text[line.clone()];
    if content.len() <= WIDE_LINE || content.chars().take(WIDE_LINE + 1).count() <= WIDE_LINE {
        return vec![line];
    }
    let starts: &[usize] = if points.is_empty() {
        &[line.start]
    } else {
        points
    };
    let mut out: Vec<Range<usize>> = Vec::new();
    for &point in starts {
        let point = point.clamp(line.start, line.end);
        let before = &text[line.start..point];
        let mut from = before
            .char_indices()
            .rev()
            .nth(CONTEXT - 1)
            .map_or(line.start, |(i, _)| line.start + i);
        let after = &text[point..line.end];
        let mut to = after
            .char_indices()
            .nth(CONTEXT)
            .map_or(line.end, |(i, _)| point + i);
        // Cutting fewer characters than `...` hides is no cut.
        if from - line.start <= CUT.len() {
            from = line.start;
        }
        if line.end - to <= CUT.len() {
            to = line.end;
        }
        match out.last_mut() {
            Some(last) if from <= last.end + CUT.len() => last.end = last.end.max(to),
            _ => out.push(from..to),
        }
    }
    out
}

fn clamp(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

/// `offset` in `text`, moved back to a character boundary.
fn char_floor(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

impl<'f> Files<'f> for Excerpts<'_> {
    type FileId = FileId;
    type Name = String;
    type Source = &'f str;

    fn name(&'f self, id: FileId) -> Result<String, files::Error> {
        self.sources.name(id).ok_or(files::Error::FileMissing)
    }

    fn source(&'f self, id: FileId) -> Result<&'f str, files::Error> {
        Ok(self.get(id)?.text.as_str())
    }

    fn line_index(&'f self, id: FileId, byte_index: usize) -> Result<usize, files::Error> {
        let excerpt = self.get(id)?;
        Ok(excerpt
            .line_starts
            .partition_point(|&start| start <= byte_index)
            .saturating_sub(1))
    }

    fn line_number(&'f self, id: FileId, line_index: usize) -> Result<usize, files::Error> {
        let excerpt = self.get(id)?;
        Ok(excerpt
            .line_numbers
            .get(line_index)
            .copied()
            .unwrap_or(line_index + 1))
    }

    fn column_number(
        &'f self,
        id: FileId,
        _line_index: usize,
        byte_index: usize,
    ) -> Result<usize, files::Error> {
        let excerpt = self.get(id)?;
        let source = self.sources.get(id).ok_or(files::Error::FileMissing)?;
        let original = clamp(excerpt.to_original(byte_index));
        Ok(source.index.line_col(original, Encoding::Utf32).col as usize + 1)
    }

    fn line_range(&'f self, id: FileId, line_index: usize) -> Result<Range<usize>, files::Error> {
        let excerpt = self.get(id)?;
        let count = excerpt.line_starts.len();
        match excerpt.line_starts.get(line_index) {
            Some(&start) => {
                let end = excerpt
                    .line_starts
                    .get(line_index + 1)
                    .copied()
                    .unwrap_or(excerpt.text.len());
                Ok(start..end)
            }
            None if line_index == count => Ok(excerpt.text.len()..excerpt.text.len()),
            None => Err(files::Error::LineTooLarge {
                given: line_index,
                max: count.saturating_sub(1),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use codespan_reporting::files::SimpleFile;
    use codespan_reporting::term::{self, Config, termcolor::NoColor};
    use op2_syntax::{Code, TextRange};

    use super::*;
    use crate::render::{to_report, write_human};
    use crate::source::SourceFile;

    fn sources(text: &str) -> SourceMap {
        let mut sources = SourceMap::default();
        sources.add(SourceFile::from_text(
            PathBuf::from("t.op2"),
            text.to_owned(),
        ));
        sources
    }

    fn at(start: usize, end: usize) -> Location {
        Location {
            file: FileId::MAIN,
            range: TextRange::new(clamp(start), clamp(end)),
        }
    }

    fn render(sources: &SourceMap, diagnostics: &[Diagnostic]) -> String {
        let mut out = NoColor::new(Vec::new());
        write_human(&mut out, sources, diagnostics).unwrap();
        String::from_utf8(out.into_inner()).unwrap()
    }

    /// The whole file, as codespan reads it without excerpts.
    struct Whole(SimpleFile<String, String>);

    impl<'f> Files<'f> for Whole {
        type FileId = FileId;
        type Name = String;
        type Source = &'f str;

        fn name(&'f self, _: FileId) -> Result<String, files::Error> {
            Ok(self.0.name().clone())
        }
        fn source(&'f self, _: FileId) -> Result<&'f str, files::Error> {
            Ok(self.0.source().as_str())
        }
        fn line_index(&'f self, _: FileId, byte_index: usize) -> Result<usize, files::Error> {
            self.0.line_index((), byte_index)
        }
        fn line_range(
            &'f self,
            _: FileId,
            line_index: usize,
        ) -> Result<Range<usize>, files::Error> {
            self.0.line_range((), line_index)
        }
    }

    fn render_whole(text: &str, diagnostics: &[Diagnostic]) -> String {
        let whole = Whole(SimpleFile::new("t.op2".to_owned(), text.to_owned()));
        let mut out = NoColor::new(Vec::new());
        for diagnostic in diagnostics {
            let report = to_report(diagnostic, |location| location.range.to_usize());
            term::emit_to_write_style(&mut out, &Config::default(), &whole, &report).unwrap();
        }
        String::from_utf8(out.into_inner()).unwrap()
    }

    #[test]
    fn a_long_line_is_cut_around_the_label_with_the_original_column() {
        let mut text = String::from("main {");
        for i in 0..500 {
            text.push_str(&format!(" y{i} = 1;"));
        }
        text.push_str(" }\n");
        let start = text.find("y250 ").unwrap();
        let diagnostic = Diagnostic::new(Code::E101, at(start, start + 4), "cannot find `y250`")
            .with_label("not declared");
        let out = render(&sources(&text), &[diagnostic]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], format!("  ┌─ t.op2:1:{}", start + 1), "{out}");
        let source = lines[3].strip_prefix("1 │ ").expect(&out);
        assert!(
            source.starts_with("...") && source.ends_with("..."),
            "{out}"
        );
        // `CONTEXT` characters before the label's start and after its end.
        assert_eq!(
            source.chars().count(),
            2 * CUT.len() + 2 * CONTEXT + 4,
            "{out}"
        );
        // The carets stand under `y250`, at its column in the excerpt.
        let carets = lines[4].strip_prefix("  │ ").expect(&out);
        let column = carets.find('^').unwrap();
        assert_eq!(&source[column..column + 4], "y250", "{out}");
        assert!(carets.ends_with("^^^^ not declared"), "{out}");
    }

    #[test]
    fn labels_far_apart_on_one_line_get_a_window_each() {
        let text = format!(
            "{}first{}second{}",
            "a ".repeat(200),
            " b".repeat(300),
            " c".repeat(100)
        );
        let first = text.find("first").unwrap();
        let second = text.find("second").unwrap();
        let diagnostic = Diagnostic::new(Code::E101, at(second, second + 6), "clash")
            .with_label("here")
            .with_related(at(first, first + 5), "first here");
        let out = render(&sources(&text), &[diagnostic]);
        let source = out.lines().nth(3).unwrap();
        assert_eq!(source.matches("...").count(), 3, "{out}");
        let first_at = source.find("first").expect(&out);
        let second_at = source.find("second").expect(&out);
        assert!(first_at < second_at && source.len() < 300, "{out}");
        assert!(out.contains(&format!("t.op2:1:{}", second + 1)), "{out}");
    }

    #[test]
    fn a_label_over_many_lines_shows_original_line_numbers() {
        let mut text = String::new();
        for i in 0..1000 {
            text.push_str(&format!(
                "line {i}{}\n",
                if i == 500 {
                    " x".repeat(200)
                } else {
                    String::new()
                }
            ));
        }
        let start = text.find("line 10\n").unwrap();
        let end = text.find("line 900\n").unwrap() + 8;
        let long = text.find("line 500").unwrap() + 100;
        let diagnostic = Diagnostic::new(Code::E101, at(start, end), "span")
            .with_label("whole")
            .with_related(at(long, long + 1), "inside a long line");
        let out = render(&sources(&text), &[diagnostic]);
        for number in ["11 │", "12 │", "14 │", "900 │", "501 │"] {
            assert!(out.contains(number), "{number} missing from\n{out}");
        }
        assert!(out.contains("·"), "{out}");
        assert!(out.lines().count() < 30, "{out}");
        assert!(out.contains("t.op2:11:1"), "{out}");
    }

    #[test]
    fn each_diagnostic_on_a_long_line_costs_a_bounded_output() {
        // 2,000 errors on one line of 20 KB: every diagnostic shows at most
        // a window of the line, so the output grows with the number of
        // diagnostics, not with their product with the line's length.
        let mut text = String::from("main {");
        let mut diagnostics = Vec::new();
        for i in 0..2000 {
            text.push(' ');
            let start = text.len();
            text.push_str(&format!("y{i} = 1;"));
            let end = start + format!("y{i}").len();
            diagnostics.push(
                Diagnostic::new(Code::E101, at(start, end), format!("cannot find `y{i}`"))
                    .with_label("not declared"),
            );
        }
        text.push_str(" }");
        let out = render(&sources(&text), &diagnostics);
        let bound = 2 * CONTEXT + 2 * CUT.len() + 200;
        let longest = out.lines().map(str::len).max().unwrap();
        assert!(longest <= bound, "a line of {longest} bytes");
        assert!(
            out.len() <= diagnostics.len() * 2 * bound,
            "{} bytes",
            out.len()
        );
    }

    /// A little deterministic generator (xorshift), for the comparison below.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    #[test]
    fn short_lines_render_exactly_as_codespan_renders_the_whole_file() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..400 {
            let mut text = String::new();
            for _ in 0..1 + rng.below(30) {
                for _ in 0..rng.below(WIDE_LINE / 2) {
                    text.push(['a', ' ', 'é', 'x', '(', '\t'][rng.below(6)]);
                }
                text.push('\n');
            }
            let boundaries: Vec<usize> = text
                .char_indices()
                .map(|(i, _)| i)
                .chain([text.len()])
                .collect();
            let pick = |rng: &mut Rng| {
                let a = boundaries[rng.below(boundaries.len())];
                let b = boundaries[rng.below(boundaries.len())];
                at(a.min(b), a.max(b))
            };
            let mut diagnostics = Vec::new();
            for _ in 0..1 + rng.below(3) {
                let mut diagnostic =
                    Diagnostic::new(Code::E101, pick(&mut rng), "message").with_label("label");
                for _ in 0..rng.below(3) {
                    diagnostic = diagnostic.with_related(pick(&mut rng), "related");
                }
                diagnostics.push(diagnostic);
            }
            assert_eq!(
                render(&sources(&text), &diagnostics),
                render_whole(&text, &diagnostics),
                "case {case}: {text:?} {diagnostics:?}"
            );
        }
    }
}
