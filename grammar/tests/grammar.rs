//! The grammar's own checks, run by `cargo test` without the tree-sitter
//! CLI (which has to be compiled from source here, minutes on two cores):
//!
//! - `grammar/src` is what the pinned tree-sitter generator (the
//!   `tree-sitter-generate` crate, the CLI's own generator, with `node`
//!   running `grammar.js` exactly as the CLI does) makes of `grammar.js`
//!   (`OP2_GENERATE=1` writes it there instead);
//! - every corpus test in `test/corpus` gives the expected tree, compared as
//!   `tree-sitter test` compares (whitespace-insensitive S-expressions, and
//!   field names only when the expected tree has some);
//! - every assertion in `test/highlight` and `test/tags` holds, read as
//!   `tree-sitter test` reads them (`<-` the column where the comment
//!   starts, `^` its own column, on the nearest line above that is neither
//!   an assertion nor too short);
//! - every example program and every `op2` block of docs/language.md parses
//!   with no ERROR or MISSING node.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use tree_sitter::{Language, Node, Parser, Point, Tree};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn language() -> Language {
    tree_sitter_op2::LANGUAGE.into()
}

fn parse(source: &str) -> Tree {
    let mut parser = Parser::new();
    parser.set_language(&language()).expect("the grammar loads");
    parser
        .parse(source, None)
        .expect("the parser returns a tree")
}

/// The files of a test directory, sorted.
fn files(dir: &str) -> Vec<PathBuf> {
    let dir = root().join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tests in {}", dir.display());
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------- generate

#[test]
fn the_committed_parser_is_what_the_generator_makes_of_grammar_js() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        // `grammar.js` is JavaScript: the generator runs it with node, as
        // the CLI does. The test script requires node, so CI never skips.
        assert!(
            std::env::var_os("CI").is_none(),
            "node is needed to run grammar.js"
        );
        eprintln!("SKIPPED: node is not on PATH; grammar/src is not compared with grammar.js");
        return;
    }
    let fresh = tempfile::tempdir().expect("a temporary directory");
    for name in ["grammar.js", "tree-sitter.json"] {
        std::fs::copy(root().join(name), fresh.path().join(name)).expect("copied");
    }
    let mut diagnostics = Vec::new();
    tree_sitter_generate::generate_parser_in_directory(
        fresh.path(),
        None::<PathBuf>,
        None::<PathBuf>,
        tree_sitter::LANGUAGE_VERSION,
        None,
        Some("node"),
        true,
        tree_sitter_generate::OptLevel::default(),
        &mut diagnostics,
    )
    .unwrap_or_else(|e| panic!("tree-sitter generate failed: {e}"));
    // `OP2_GENERATE=1` writes what was generated into grammar/src: the
    // way to regenerate the parser without the tree-sitter CLI.
    let write = std::env::var_os("OP2_GENERATE").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for name in [
        "parser.c",
        "grammar.json",
        "node-types.json",
        "tree_sitter/parser.h",
        "tree_sitter/alloc.h",
        "tree_sitter/array.h",
    ] {
        let made = std::fs::read(fresh.path().join("src").join(name)).expect("generated");
        let target = root().join("src").join(name);
        let committed = std::fs::read(&target).unwrap_or_default();
        if made != committed {
            if write {
                std::fs::write(&target, &made).expect("grammar/src is writable");
            } else {
                stale.push(name);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "grammar/src is stale ({stale:?} differ): regenerate it with \
         `OP2_GENERATE=1 cargo test -p tree-sitter-op2 --test grammar` (or `tree-sitter generate` \
         in grammar/) and commit the result"
    );
}

// ------------------------------------------------------------------ corpus

/// One corpus test: its name, input and expected tree.
struct Case {
    file: PathBuf,
    name: String,
    input: String,
    expected: String,
}

/// A line of at least three `c` and nothing else.
fn is_rule(line: &str, c: char) -> bool {
    let line = line.trim_end();
    line.len() >= 3 && line.chars().all(|x| x == c)
}

/// The tests of a corpus file: `===` name `===`, the input, `---`, the tree.
fn cases(file: &Path) -> Vec<Case> {
    let text = read(file);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut cases = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !is_rule(lines[i], '=') {
            assert!(
                lines[i].trim().is_empty() || !cases.is_empty(),
                "{}:{}: expected a `===` header",
                file.display(),
                i + 1
            );
            i += 1;
            continue;
        }
        let mut name = Vec::new();
        i += 1;
        while i < lines.len() && !is_rule(lines[i], '=') {
            name.push(lines[i].trim());
            i += 1;
        }
        i += 1;
        let start = i;
        while i < lines.len() && !is_rule(lines[i], '-') {
            i += 1;
        }
        assert!(
            i < lines.len(),
            "{}: `{}` has no `---`",
            file.display(),
            name.join(" ")
        );
        // The newline before the divider is not part of the input.
        let input = lines[start..i].join("\n");
        i += 1;
        let tree_start = i;
        while i < lines.len() && !is_rule(lines[i], '=') {
            i += 1;
        }
        cases.push(Case {
            file: file.to_owned(),
            name: name.join(" "),
            input: input.strip_suffix('\n').unwrap_or(&input).to_owned(),
            expected: lines[tree_start..i].join("\n"),
        });
    }
    cases
}

/// An S-expression with its whitespace made canonical: one space between
/// items, none inside parentheses.
fn canonical(sexp: &str) -> String {
    let mut out = String::with_capacity(sexp.len());
    for word in sexp.split_whitespace() {
        if !out.is_empty() && !out.ends_with('(') && !word.starts_with(')') {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Without field names (`name: (x)` becomes `(x)`), for expected trees
/// written without them.
fn without_fields(sexp: &str) -> String {
    sexp.split(' ')
        .filter(|word| !word.ends_with(':') || word.starts_with('"'))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_corpus_test_gives_its_expected_tree() {
    let mut failures = String::new();
    let mut count = 0;
    for file in files("test/corpus") {
        for case in cases(&file) {
            count += 1;
            let expected = canonical(&case.expected);
            let mut actual = canonical(&parse(&case.input).root_node().to_sexp());
            if !expected.contains(": ") {
                actual = without_fields(&actual);
            }
            if actual != expected {
                let _ = writeln!(
                    failures,
                    "{} `{}`:\n  expected {expected}\n  actual   {actual}",
                    case.file.display(),
                    case.name
                );
            }
        }
    }
    assert!(count > 0, "no corpus tests");
    assert!(failures.is_empty(), "corpus tests failed:\n{failures}");
}

// ------------------------------------------------------------- assertions

/// An assertion comment: at `position` (row, byte column; the test files
/// are ASCII) over `length` columns, the capture `name` (or, `negative`,
/// not it).
#[derive(Debug)]
struct Assertion {
    position: Point,
    length: usize,
    negative: bool,
    name: String,
}

/// The assertions in the comments of `source`, each moved to the nearest
/// line above it that is neither an assertion nor shorter than its column.
fn assertions(source: &str) -> Vec<Assertion> {
    let tree = parse(source);
    let mut found = Vec::new();
    let mut comment_rows = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
        if node.kind() != "comment" || node.start_position().row == 0 {
            continue;
        }
        let text = &source[node.byte_range()];
        let Some(assertion) = assertion_in(text, node.start_position()) else {
            continue;
        };
        comment_rows.push(node.start_position().row);
        found.push(assertion);
    }
    let lines: Vec<&str> = source.split('\n').collect();
    for assertion in &mut found {
        let column = assertion.position.column;
        while comment_rows.contains(&assertion.position.row)
            || lines[assertion.position.row].len() <= column
        {
            assert!(
                assertion.position.row > 0,
                "no line for the assertion `{}`",
                assertion.name
            );
            assertion.position.row -= 1;
        }
    }
    found.sort_by_key(|a| (a.position.row, a.position.column));
    found
}

/// The assertion a comment at `start` makes, if any: `<-` (the comment's
/// column) or a run of `^` (their columns), an optional `!`, then a name.
fn assertion_in(text: &str, start: Point) -> Option<Assertion> {
    let (column, length, rest) = if let Some(at) = text.find("<-") {
        let caret = text.find('^');
        if caret.is_some_and(|c| c < at) {
            caret_assertion(text, start)?
        } else {
            (start.column, 1, &text[at + 2..])
        }
    } else {
        caret_assertion(text, start)?
    };
    let rest = rest.trim_start();
    let (negative, rest) = match rest.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect();
    (!name.is_empty()).then(|| Assertion {
        position: Point::new(start.row, column),
        length,
        negative,
        name,
    })
}

fn caret_assertion(text: &str, start: Point) -> Option<(usize, usize, &str)> {
    let at = text.find('^')?;
    let length = text[at..].chars().take_while(|&c| c == '^').count();
    Some((start.column + at, length, &text[at + length..]))
}

/// A named span: a highlight (the innermost at each place) or a tag.
struct Span {
    start: Point,
    end: Point,
    name: String,
}

/// Whether the spans satisfy the assertion: one that overlaps its columns
/// has the name (or, for a negative one, one that does not).
fn holds(assertion: &Assertion, spans: &[Span]) -> bool {
    let from = assertion.position;
    let to = Point::new(from.row, from.column + assertion.length - 1);
    spans
        .iter()
        .filter(|s| s.start <= to && s.end > from)
        .any(|s| (s.name == assertion.name) != assertion.negative)
}

fn check_assertions(dir: &str, spans_of: &dyn Fn(&str) -> Vec<Span>) {
    let mut failures = String::new();
    for file in files(dir) {
        let source = read(&file);
        let spans = spans_of(&source);
        let found = assertions(&source);
        assert!(!found.is_empty(), "{}: no assertions", file.display());
        for assertion in &found {
            if !holds(assertion, &spans) {
                let here: Vec<&str> = spans
                    .iter()
                    .filter(|s| s.start <= assertion.position && s.end > assertion.position)
                    .map(|s| s.name.as_str())
                    .collect();
                let _ = writeln!(
                    failures,
                    "{}:{}:{}: expected {}{}, found {here:?}",
                    file.display(),
                    assertion.position.row + 1,
                    assertion.position.column + 1,
                    if assertion.negative { "not " } else { "" },
                    assertion.name
                );
            }
        }
    }
    assert!(failures.is_empty(), "assertions failed:\n{failures}");
}

/// The point of a byte offset in `source`.
fn point_of(source: &str, byte: usize) -> Point {
    let before = &source[..byte];
    let row = before.matches('\n').count();
    let column = byte - before.rfind('\n').map_or(0, |i| i + 1);
    Point::new(row, column)
}

/// The innermost highlight of every stretch of `source`, with every capture
/// name of the query a highlight of its own (as `tree-sitter test` does).
fn highlights(source: &str) -> Vec<Span> {
    use tree_sitter_highlight::{HighlightConfiguration, HighlightEvent, Highlighter};
    let mut config = HighlightConfiguration::new(
        language(),
        "op2",
        tree_sitter_op2::HIGHLIGHTS_QUERY,
        "",
        tree_sitter_op2::LOCALS_QUERY,
    )
    .expect("the highlight queries compile");
    let names: Vec<String> = config.names().iter().map(|n| (*n).to_owned()).collect();
    config.configure(&names);
    let mut highlighter = Highlighter::new();
    let events = highlighter
        .highlight(&config, source.as_bytes(), None, None, |_| None)
        .expect("highlighting starts");
    let mut stack = Vec::new();
    let mut spans = Vec::new();
    for event in events {
        match event.expect("highlighting goes on") {
            HighlightEvent::HighlightStart(h) => stack.push(h.0),
            HighlightEvent::HighlightEnd => {
                stack.pop();
            }
            HighlightEvent::Source { start, end } => {
                if let Some(&h) = stack.last() {
                    spans.push(Span {
                        start: point_of(source, start),
                        end: point_of(source, end),
                        name: names[h].clone(),
                    });
                }
            }
        }
    }
    spans
}

/// Every tag of `source`: its name's span, named `definition.KIND` or
/// `reference.KIND` as the tags query's captures are.
fn tags(source: &str) -> Vec<Span> {
    use tree_sitter_tags::{TagsConfiguration, TagsContext};
    let config = TagsConfiguration::new(language(), tree_sitter_op2::TAGS_QUERY, "")
        .expect("the tags query compiles");
    let mut context = TagsContext::new();
    let (tags, _) = context
        .generate_tags(&config, source.as_bytes(), None)
        .expect("tagging starts");
    tags.map(|tag| {
        let tag = tag.expect("tagging goes on");
        let kind = config.syntax_type_name(tag.syntax_type_id);
        let role = if tag.is_definition {
            "definition"
        } else {
            "reference"
        };
        Span {
            start: point_of(source, tag.name_range.start),
            end: point_of(source, tag.name_range.end),
            name: format!("{role}.{kind}"),
        }
    })
    .collect()
}

#[test]
fn every_highlight_assertion_holds() {
    check_assertions("test/highlight", &highlights);
}

#[test]
fn every_tag_assertion_holds() {
    check_assertions("test/tags", &tags);
}

// ---------------------------------------------------------------- examples

/// The first ERROR or MISSING node, if any.
fn first_error(node: Node<'_>) -> Option<Point> {
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            return Some(node.start_position());
        }
        if node.has_error() {
            let mut cursor = node.walk();
            stack.extend(node.children(&mut cursor));
        }
    }
    None
}

#[test]
fn every_example_program_and_language_md_block_parses_cleanly() {
    let docs = root().join("../docs");
    let mut programs: Vec<(String, String)> = std::fs::read_dir(docs.join("examples"))
        .expect("docs/examples")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "op2"))
        .map(|p| (p.display().to_string(), read(&p)))
        .collect();
    assert!(!programs.is_empty(), "no example programs");
    let language_md = read(&docs.join("language.md"));
    let mut block: Option<(usize, String)> = None;
    for (number, line) in language_md.lines().enumerate() {
        match &mut block {
            None if line.trim_end() == "```op2" => block = Some((number + 1, String::new())),
            Some((start, text)) if line.starts_with("```") => {
                programs.push((
                    format!("docs/language.md block at line {start}"),
                    text.clone(),
                ));
                block = None;
            }
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    let mut failures = Vec::new();
    for (name, text) in &programs {
        if let Some(at) = first_error(parse(text).root_node()) {
            failures.push(format!("{name}:{}:{}", at.row + 1, at.column + 1));
        }
    }
    assert!(
        failures.is_empty(),
        "ERROR or MISSING nodes in {} of {} programs: {failures:?}",
        failures.len(),
        programs.len()
    );
}
