//! Data-driven tests of the analyser's diagnostics.
//!
//! Every `.op2` file under `tests/fixtures/` is a program with its expected
//! diagnostics written as comment lines under the line they concern:
//!
//! ```text
//!     par_loop update over cells (p_q READ, p_res READ, p_q WRITE);
//! //                                                    ^^^^^^^^^ E401
//! //                              ~~~~~~~~ E401
//! ```
//!
//! - `^^^ CODE` expects a diagnostic `CODE` whose primary range is exactly
//!   the columns of the carets on the nearest line above that is not a
//!   marker (columns in bytes). `^^^ CODE: text` also expects `text` in its
//!   message. Markers stack: several may follow one source line.
//! - `| CODE` expects an empty range at the column of the `|`.
//! - `~~~ CODE` expects some diagnostic `CODE` of the fixture to have this
//!   range among its related locations.
//! - `//@ START..END CODE` expects a diagnostic at byte offsets of the file,
//!   for ranges carets cannot show (at column 0 or 1, multi-line).
//!
//! Marker lines are `//` comments, so the analyser sees the fixture exactly
//! as written and every offset is the offset in the file.
//!
//! Directives, in the comment lines that start the fixture:
//!
//! - `// options: require_main` analyses with `Options { require_main }`;
//! - `// allow: H605 W604` tolerates unmarked diagnostics with these codes
//!   (a fixture about something else need not spell out every hint);
//! - `// invocations: update update_1` expects these invocation names, in
//!   source order of `main`.
//!
//! A fixture of several files separates them with `//- /PATH` lines, the
//! first being the root; the others are served to the analyser by an
//! in-memory loader, so imports resolve between them. A single-file fixture
//! is analysed with `analyse_text`, which has no imports.
//!
//! The check: the multiset of (file, code, range) produced equals the one
//! expected. A failure prints the fixture with the markers of what the
//! analyser actually produced, ready to compare or paste.
//!
//! Fixtures live in one directory per diagnostic code (`e401/`) or topic
//! (`names/`); each directory is one test below. A coverage test makes sure
//! that every code the analyser must report has a directory holding a
//! fixture that triggers it and a close variant that does not.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use op2_analysis::{Analyser, Analysis, Options, analyse_text};
use op2_syntax::{Code, Diagnostic, Parse, TextRange};

use crate::support;

use support::MemoryLoader;

// ----------------------------------------------------------------------
// Fixture format
// ----------------------------------------------------------------------

/// One file of a fixture.
#[derive(Debug)]
struct FixtureFile {
    path: PathBuf,
    text: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum MarkerKind {
    /// `^^^`: a diagnostic's primary range.
    Primary,
    /// `~~~`: a related location of some diagnostic with the code.
    Related,
}

/// An expected diagnostic or related location.
#[derive(Clone, Debug)]
struct Marker {
    kind: MarkerKind,
    file: usize,
    code: Code,
    range: TextRange,
    message: Option<String>,
    /// Line of the marker in its file, 1-based, for failure messages.
    line: usize,
}

#[derive(Debug, Default)]
struct Fixture {
    files: Vec<FixtureFile>,
    markers: Vec<Marker>,
    require_main: bool,
    allow: Vec<Code>,
    invocations: Option<Vec<String>>,
}

/// Line start offsets of `text`, with the lines (without their `\n`).
fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        out.push((offset, line.trim_end_matches('\n').trim_end_matches('\r')));
        offset += line.len();
    }
    out
}

fn parse_code(word: &str, context: &str) -> Code {
    Code::parse(word).unwrap_or_else(|| panic!("{context}: `{word}` is not a diagnostic code"))
}

/// A marker line (`//   ^^^ CODE[: message]`, `//  | CODE`, `// ~~~ CODE`
/// or `//@ START..END CODE[: message]`), with `rest` the code and message.
enum ParsedMarker<'a> {
    /// Columns `first..end` of the line above (`end == first` for `|`).
    Columns {
        kind: MarkerKind,
        first: usize,
        end: usize,
        rest: &'a str,
    },
    Absolute {
        range: TextRange,
        rest: &'a str,
    },
}

fn parse_marker_line(line: &str) -> Option<ParsedMarker<'_>> {
    let trimmed = line.trim_start();
    let after_slashes = trimmed.strip_prefix("//")?;
    if let Some(absolute) = after_slashes.strip_prefix('@') {
        let absolute = absolute.trim_start();
        let (range, rest) = absolute.split_once(char::is_whitespace)?;
        let (start, end) = range.split_once("..")?;
        let range = TextRange::new(start.parse().ok()?, end.parse().ok()?);
        return Some(ParsedMarker::Absolute {
            range,
            rest: rest.trim(),
        });
    }
    let body = after_slashes.trim_start();
    let symbol = body.chars().next()?;
    let kind = match symbol {
        '^' | '|' => MarkerKind::Primary,
        '~' => MarkerKind::Related,
        _ => return None,
    };
    let run = if symbol == '|' {
        1
    } else {
        body.len() - body.trim_start_matches(symbol).len()
    };
    let rest = &body[run..];
    // A run of carets followed by a code, nothing else.
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim();
    let code_word = rest.split(|c: char| c == ':' || c.is_whitespace()).next()?;
    Code::parse(code_word)?;
    let first = line.len() - body.len();
    Some(ParsedMarker::Columns {
        kind,
        first,
        end: if symbol == '|' { first } else { first + run },
        rest,
    })
}

fn split_code_and_message(rest: &str, context: &str) -> (Code, Option<String>) {
    let (code, message) = match rest.split_once(':') {
        Some((code, message)) => (code.trim(), Some(message.trim().to_owned())),
        None => (rest.trim(), None),
    };
    (parse_code(code, context), message.filter(|m| !m.is_empty()))
}

fn is_directive(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_start().strip_prefix("//")?.trim_start();
    let (name, value) = body.split_once(':')?;
    matches!(name.trim(), "options" | "allow" | "invocations").then(|| (name.trim(), value.trim()))
}

impl Fixture {
    fn parse(name: &str, source: &str) -> Fixture {
        let mut fixture = Fixture::default();
        // Split into files.
        if source.starts_with("//- ") {
            let mut current: Option<FixtureFile> = None;
            for line in source.split_inclusive('\n') {
                if let Some(path) = line.strip_prefix("//- ") {
                    if let Some(file) = current.take() {
                        fixture.files.push(file);
                    }
                    current = Some(FixtureFile {
                        path: PathBuf::from(path.trim()),
                        text: String::new(),
                    });
                } else if let Some(file) = current.as_mut() {
                    file.text.push_str(line);
                }
            }
            fixture.files.extend(current);
        } else {
            fixture.files.push(FixtureFile {
                path: PathBuf::from(format!("/{name}")),
                text: source.to_owned(),
            });
        }
        // Directives: the leading comment lines of the root file.
        for (_, line) in lines(&fixture.files[0].text) {
            if !line.trim_start().starts_with("//") && !line.trim().is_empty() {
                break;
            }
            let Some((directive, value)) = is_directive(line) else {
                continue;
            };
            match directive {
                "options" => {
                    for option in value.split_whitespace() {
                        match option {
                            "require_main" => fixture.require_main = true,
                            other => panic!("{name}: unknown option `{other}`"),
                        }
                    }
                }
                "allow" => fixture.allow.extend(
                    value
                        .split(|c: char| c.is_whitespace() || c == ',')
                        .filter(|w| !w.is_empty())
                        .map(|w| parse_code(w, name)),
                ),
                "invocations" => {
                    fixture.invocations =
                        Some(value.split_whitespace().map(str::to_owned).collect());
                }
                _ => unreachable!(),
            }
        }
        // Markers.
        for (file_index, file) in fixture.files.iter().enumerate() {
            let file_lines = lines(&file.text);
            let mut target: Option<(usize, &str)> = None;
            for (line_number, &(offset, line)) in file_lines.iter().enumerate() {
                let context = format!("{name}:{}:{}", file.path.display(), line_number + 1);
                match parse_marker_line(line) {
                    None => target = Some((offset, line)),
                    Some(ParsedMarker::Absolute { range, rest }) => {
                        let (code, message) = split_code_and_message(rest, &context);
                        assert!(
                            range.end as usize <= file.text.len(),
                            "{context}: range {range:?} is outside the file"
                        );
                        fixture.markers.push(Marker {
                            kind: MarkerKind::Primary,
                            file: file_index,
                            code,
                            range,
                            message,
                            line: line_number + 1,
                        });
                    }
                    Some(ParsedMarker::Columns {
                        kind,
                        first,
                        end,
                        rest,
                    }) => {
                        let (code, message) = split_code_and_message(rest, &context);
                        let (target_offset, target_line) = target
                            .unwrap_or_else(|| panic!("{context}: marker with no line above"));
                        assert!(
                            end <= target_line.len(),
                            "{context}: marker reaches beyond the end of the line above"
                        );
                        let start = u32::try_from(target_offset + first).expect("small fixture");
                        let end = u32::try_from(target_offset + end).expect("small fixture");
                        fixture.markers.push(Marker {
                            kind,
                            file: file_index,
                            code,
                            range: TextRange::new(start, end),
                            message,
                            line: line_number + 1,
                        });
                    }
                }
            }
        }
        fixture
    }

    fn is_marker_line(line: &str) -> bool {
        parse_marker_line(line).is_some()
    }
}

// ----------------------------------------------------------------------
// Running a fixture
// ----------------------------------------------------------------------

fn analyse(fixture: &Fixture) -> Analysis {
    let options = Options {
        require_main: fixture.require_main,
    };
    let root = &fixture.files[0];
    if fixture.files.len() == 1 {
        return analyse_text(&root.path, &root.text, &options);
    }
    let loader = MemoryLoader(
        fixture.files[1..]
            .iter()
            .map(|f| (f.path.clone(), Arc::from(f.text.as_str())))
            .collect(),
    );
    Analyser::new().analyse(
        &root.path,
        &Parse::new(root.text.as_str()),
        &loader,
        &options,
    )
}

/// The fixture file a diagnostic's file id names.
fn fixture_file_of(fixture: &Fixture, analysis: &Analysis, file: op2_syntax::FileId) -> usize {
    let path = &analysis.program.file(file).path;
    fixture
        .files
        .iter()
        .position(|f| f.path == *path)
        .unwrap_or_else(|| panic!("diagnostic in a file the fixture does not have: {path:?}"))
}

/// Checks one fixture; `Err` holds a readable account of the differences.
fn check_fixture(name: &str, source: &str) -> Result<(), String> {
    let fixture = Fixture::parse(name, source);
    let analysis = analyse(&fixture);
    let actual: Vec<(usize, &Diagnostic)> = analysis
        .diagnostics
        .iter()
        .map(|d| (fixture_file_of(&fixture, &analysis, d.location.file), d))
        .collect();

    let mut problems: Vec<String> = Vec::new();
    let mut matched = vec![false; actual.len()];
    for marker in fixture
        .markers
        .iter()
        .filter(|m| m.kind == MarkerKind::Primary)
    {
        let found = actual.iter().enumerate().position(|(i, (file, d))| {
            !matched[i]
                && *file == marker.file
                && d.code == marker.code
                && d.location.range == marker.range
        });
        match found {
            Some(i) => {
                matched[i] = true;
                let message = &actual[i].1.message;
                if let Some(expected) = &marker.message
                    && !message.contains(expected.as_str())
                {
                    problems.push(format!(
                        "line {}: {} message {message:?} does not contain {expected:?}",
                        marker.line, marker.code
                    ));
                }
            }
            None => problems.push(format!(
                "line {}: missing {} at {}",
                marker.line,
                marker.code,
                describe_range(&fixture.files[marker.file].text, marker.range)
            )),
        }
    }
    for (i, (file, diagnostic)) in actual.iter().enumerate() {
        if !matched[i] && !fixture.allow.contains(&diagnostic.code) {
            problems.push(format!(
                "unexpected {} at {}{}: {}",
                diagnostic.code,
                if fixture.files.len() > 1 {
                    format!("{} ", fixture.files[*file].path.display())
                } else {
                    String::new()
                },
                describe_range(&fixture.files[*file].text, diagnostic.location.range),
                diagnostic.message
            ));
        }
    }
    for marker in fixture
        .markers
        .iter()
        .filter(|m| m.kind == MarkerKind::Related)
    {
        let found = actual.iter().any(|(_, d)| {
            d.code == marker.code
                && d.related.iter().any(|r| {
                    r.location.range == marker.range
                        && fixture_file_of(&fixture, &analysis, r.location.file) == marker.file
                })
        });
        if !found {
            let related: Vec<String> = actual
                .iter()
                .filter(|(_, d)| d.code == marker.code)
                .flat_map(|(_, d)| &d.related)
                .map(|r| {
                    let file = fixture_file_of(&fixture, &analysis, r.location.file);
                    format!(
                        "{} ({})",
                        describe_range(&fixture.files[file].text, r.location.range),
                        r.message
                    )
                })
                .collect();
            problems.push(format!(
                "line {}: no {} has the related location {}; its related locations: [{}]",
                marker.line,
                marker.code,
                describe_range(&fixture.files[marker.file].text, marker.range),
                related.join(", ")
            ));
        }
    }
    if let Some(expected) = &fixture.invocations {
        let names: Vec<&str> = analysis
            .program
            .invocations
            .iter()
            .map(|i| i.name.as_str())
            .collect();
        if names != *expected {
            problems.push(format!(
                "invocation names: expected {expected:?}, found {names:?}"
            ));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let mut report = String::new();
    let _ = writeln!(report, "fixture {name}:");
    for problem in &problems {
        let _ = writeln!(report, "  - {problem}");
    }
    let _ = writeln!(report, "  what the analyser produced, as markers:");
    report.push_str(&render(&fixture, &actual));
    Err(report)
}

/// `line:col..line:col "text"`, 1-based, for failure messages.
fn describe_range(text: &str, range: TextRange) -> String {
    let position = |offset: usize| {
        let before = &text[..offset.min(text.len())];
        let line = before.matches('\n').count() + 1;
        let column = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        format!("{line}:{column}")
    };
    let snippet = text
        .get(range.start as usize..range.end as usize)
        .unwrap_or("<outside the text>");
    let snippet: String = snippet.chars().take(60).collect();
    format!(
        "{}..{} {snippet:?}",
        position(range.start as usize),
        position(range.end as usize)
    )
}

/// The fixture's files without their marker lines, with markers for what
/// the analyser produced.
fn render(fixture: &Fixture, actual: &[(usize, &Diagnostic)]) -> String {
    let mut out = String::new();
    for (index, file) in fixture.files.iter().enumerate() {
        if fixture.files.len() > 1 {
            let _ = writeln!(out, "//- {}", file.path.display());
        }
        let file_lines = lines(&file.text);
        let mut placed = vec![false; actual.len()];
        for &(offset, line) in &file_lines {
            if Fixture::is_marker_line(line) {
                continue;
            }
            let _ = writeln!(out, "{line}");
            let line_end = offset + line.len();
            for (i, (file_index, diagnostic)) in actual.iter().enumerate() {
                let range = diagnostic.location.range;
                let (start, end) = (range.start as usize, range.end as usize);
                if *file_index != index || placed[i] || start < offset || start > line_end {
                    continue;
                }
                placed[i] = true;
                let column = start - offset;
                if column >= 2 && end == start {
                    let _ = writeln!(
                        out,
                        "//{}| {}: {}",
                        " ".repeat(column - 2),
                        diagnostic.code,
                        diagnostic.message
                    );
                } else if column >= 2 && end <= line_end {
                    let _ = writeln!(
                        out,
                        "//{}{} {}: {}",
                        " ".repeat(column - 2),
                        "^".repeat(end - start),
                        diagnostic.code,
                        diagnostic.message
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "//@ {start}..{end} {}: {}",
                        diagnostic.code, diagnostic.message
                    );
                }
            }
        }
        for (i, (file_index, diagnostic)) in actual.iter().enumerate() {
            if *file_index == index && !placed[i] {
                let range = diagnostic.location.range;
                let _ = writeln!(
                    out,
                    "//@ {}..{} {}: {}",
                    range.start, range.end, diagnostic.code, diagnostic.message
                );
            }
        }
    }
    out
}

// ----------------------------------------------------------------------
// The tests: one per directory
// ----------------------------------------------------------------------

fn fixtures_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The `.op2` files of a fixture directory, sorted.
fn fixture_files(dir: &str) -> Vec<(String, String)> {
    let path = fixtures_root().join(dir);
    let mut files: Vec<(String, String)> = std::fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "op2"))
        .map(|p| {
            let name = format!(
                "{dir}/{}",
                p.file_name().expect("file name").to_string_lossy()
            );
            let text = std::fs::read_to_string(&p).expect("fixture is UTF-8");
            (name, text)
        })
        .collect();
    files.sort();
    files
}

fn check_dir(dir: &str) {
    let files = fixture_files(dir);
    assert!(!files.is_empty(), "no fixtures in {dir}");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|(name, text)| check_fixture(name, text).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures in {dir} failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

macro_rules! fixture_dirs {
    ($($dir:ident),* $(,)?) => {
        $(
            #[test]
            fn $dir() {
                check_dir(stringify!($dir));
            }
        )*
        /// Every fixture directory, each a test.
        const DIRS: &[&str] = &[$(stringify!($dir)),*];
    };
}

fixture_dirs! {
    e001, e101, e102, e103, e104,
    e201, e202, e203, w204,
    e301, e302, e303, e304, e305, e306, e307, e308, e309, e310, e311, e312, e313,
    e401, w402,
    e501, e502, w503, e504, h505, h506, e507, e508,
    e601, e602, e603, w604, h605, e606, e607, e609,
    names, clean,
}

/// The codes of language.md §10 that a program alone can produce; the
/// others belong to instance data and code generation.
const ANALYSER_CODES: &[Code] = &[
    Code::E001,
    Code::E101,
    Code::E102,
    Code::E103,
    Code::E104,
    Code::E201,
    Code::E202,
    Code::E203,
    Code::W204,
    Code::E301,
    Code::E302,
    Code::E303,
    Code::E304,
    Code::E305,
    Code::E306,
    Code::E307,
    Code::E308,
    Code::E309,
    Code::E310,
    Code::E311,
    Code::E312,
    Code::E313,
    Code::E401,
    Code::W402,
    Code::E501,
    Code::E502,
    Code::W503,
    Code::E504,
    Code::H505,
    Code::H506,
    Code::E507,
    Code::E508,
    Code::E601,
    Code::E602,
    Code::E603,
    Code::W604,
    Code::H605,
    Code::E606,
    Code::E607,
    Code::E609,
];

#[test]
fn every_directory_is_a_test() {
    let mut on_disk: Vec<String> = std::fs::read_dir(fixtures_root())
        .expect("tests/fixtures exists")
        .map(|e| e.expect("directory entry"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = DIRS.iter().map(|d| (*d).to_owned()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "fixture directories and `fixture_dirs!` differ"
    );
}

/// Each code has a directory with a fixture that triggers it and a close
/// variant that does not (the fixed program), which may not `allow` it.
#[test]
fn every_code_has_a_triggering_and_a_clean_fixture() {
    let mut problems = Vec::new();
    for code in ANALYSER_CODES {
        let dir = code.as_str().to_lowercase();
        if !DIRS.contains(&dir.as_str()) {
            problems.push(format!("{code}: no directory tests/fixtures/{dir}"));
            continue;
        }
        let mut triggering = 0;
        let mut clean = 0;
        for (name, text) in fixture_files(&dir) {
            let fixture = Fixture::parse(&name, &text);
            if fixture.allow.contains(code) {
                problems.push(format!(
                    "{name}: allows {code}, the code its directory tests"
                ));
            }
            if fixture
                .markers
                .iter()
                .any(|m| m.kind == MarkerKind::Primary && m.code == *code)
            {
                triggering += 1;
            } else {
                clean += 1;
            }
        }
        if triggering == 0 {
            problems.push(format!("{code}: no fixture in {dir}/ triggers it"));
        }
        if clean == 0 {
            problems.push(format!(
                "{code}: no fixture in {dir}/ shows a program without it"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The harness itself: markers land where they say.
#[test]
fn markers_are_parsed_at_their_columns() {
    let fixture = Fixture::parse(
        "self-test.op2",
        "// allow: W604\nset cells;\n//  ^^^^^ W604: never used\n//  ~~~~~ W604\n//        | E001\n//@ 0..0 E603\n",
    );
    assert_eq!(fixture.allow, vec![Code::W604]);
    let ranges: Vec<(MarkerKind, Code, TextRange, Option<String>)> = fixture
        .markers
        .iter()
        .map(|m| (m.kind.clone(), m.code, m.range, m.message.clone()))
        .collect();
    assert_eq!(
        ranges,
        vec![
            (
                MarkerKind::Primary,
                Code::W604,
                TextRange::new(19, 24),
                Some("never used".to_owned())
            ),
            (
                MarkerKind::Related,
                Code::W604,
                TextRange::new(19, 24),
                None
            ),
            (
                MarkerKind::Primary,
                Code::E001,
                TextRange::new(25, 25),
                None
            ),
            (MarkerKind::Primary, Code::E603, TextRange::new(0, 0), None),
        ]
    );
    assert_eq!(&"// allow: W604\nset cells;\n"[19..24], "cells");
}

/// Fixture markers check a diagnostic's message, not its labels: an `INFO`
/// argument, `RW` inside the analysis, is named `INFO` in the labels of E401
/// too (fixture `e504/info_const_ok.op2`).
#[test]
fn an_info_argument_is_named_as_written_in_the_labels() {
    let text = std::fs::read_to_string(fixtures_root().join("e504/info_const_ok.op2"))
        .expect("the fixture");
    let analysis = analyse_text(std::path::Path::new("info.op2"), &text, &Options::default());
    let conflict = analysis
        .diagnostics
        .iter()
        .find(|d| d.code == Code::E401)
        .expect("an E401");
    let labels: Vec<&str> = std::iter::once(conflict.label.as_str())
        .chain(conflict.related.iter().map(|r| r.message.as_str()))
        .collect();
    assert_eq!(
        labels,
        ["`g_where` is `READ` here", "and `INFO` here"],
        "{conflict:#?}"
    );
}
