//! Syntax diagnostics (E001), as data: each test is a fixture whose expected
//! diagnostics are marked on the line below the text they point at.
//!
//! ```text
//! kernel k(double *q) { x = p->a; }
//!                            ^^ E001: member access with `->` is not supported; …
//! set cells
//!          | E001: expected `;`, found end of file
//! ```
//!
//! A run of `^` underlines a range; a single `|` marks an empty range (a
//! place between two characters, where a missing token goes). Columns are
//! counted in characters, as editors and `op2 check` count them, so a marker
//! under a line with emoji sits one column per character, not per byte. Marker
//! lines are taken out before parsing. A range that runs onto later lines is
//! underlined to the end of its first line and marked `^…`.
//!
//! When a fixture fails, the assertion shows the fixture as it would have to
//! be written for the diagnostics produced, as a diff against the one given.

use op2_syntax::{Code, Diagnostic, Encoding, FileId, LineIndex, Parse, TextRange, synth};
use proptest::prelude::*;

/// The program of a fixture: its text without the marker lines.
fn split_fixture(fixture: &str) -> String {
    fixture
        .split_inclusive('\n')
        .filter(|line| !is_marker(line))
        .collect()
}

fn is_marker(line: &str) -> bool {
    let rest = line.trim_start_matches(' ');
    let rest = rest
        .strip_prefix('|')
        .or_else(|| rest.trim_start_matches('^').strip_prefix('…'))
        .unwrap_or_else(|| rest.trim_start_matches('^'));
    rest.len() < line.trim_start_matches(' ').len() && rest.starts_with(" E")
}

/// The fixture as it reads with markers for `diagnostics` after each line.
fn annotate(program: &str, diagnostics: &[Diagnostic]) -> String {
    let index = LineIndex::new(program);
    let mut markers: Vec<(u32, u32, String)> = diagnostics
        .iter()
        .map(|diagnostic| {
            let range = diagnostic.location.range;
            let start = index.line_col(range.start, Encoding::Utf32);
            let end = index.line_col(range.end, Encoding::Utf32);
            let underline = if range.is_empty() {
                "|".to_owned()
            } else if end.line == start.line {
                "^".repeat((end.col - start.col) as usize)
            } else {
                let line_end = index.line_end(start.line).unwrap_or(index.len());
                let to_eol = index.line_col(line_end, Encoding::Utf32).col;
                format!(
                    "{}…",
                    "^".repeat(to_eol.saturating_sub(start.col).max(1) as usize)
                )
            };
            let marker = format!(
                "{:indent$}{underline} {}: {}",
                "",
                diagnostic.code,
                diagnostic.message,
                indent = start.col as usize
            );
            (start.line, start.col, marker)
        })
        .collect();
    markers.sort();
    let mut out = String::new();
    for (line_number, line) in program.split_inclusive('\n').enumerate() {
        out.push_str(line);
        let here = markers
            .iter()
            .filter(|(line, _, _)| *line as usize == line_number);
        for (_, _, marker) in here {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(marker);
            out.push('\n');
        }
    }
    out
}

/// Parses the program of `fixture` and checks that its syntax diagnostics are
/// exactly the ones marked.
#[track_caller]
fn check(fixture: &str) {
    let fixture = fixture.strip_prefix('\n').unwrap_or(fixture);
    let program = split_fixture(fixture);
    let diagnostics = Parse::new(program.as_str()).errors(FileId::MAIN);
    for diagnostic in &diagnostics {
        assert_eq!(diagnostic.code, Code::E001, "{diagnostic:?}");
    }
    let produced = annotate(&program, &diagnostics);
    assert!(
        produced == fixture,
        "the diagnostics differ from the markers\n\
         --- the fixture as the diagnostics would mark it:\n{produced}\n\
         --- the fixture:\n{fixture}"
    );
}

/// The diagnostics of `program`, which must be exactly one.
#[track_caller]
fn single(program: &str) -> Diagnostic {
    let mut diagnostics = Parse::new(program).errors(FileId::MAIN);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    diagnostics.remove(0)
}

// ----------------------------------------------------------------------
// The fixture helper itself
// ----------------------------------------------------------------------

#[test]
fn markers_are_recognised_and_removed() {
    assert!(is_marker("    ^^^ E001: x\n"));
    assert!(is_marker("| E001: x"));
    assert!(is_marker("  ^^… E001: x"));
    assert!(!is_marker("    || x > 0\n"));
    assert!(!is_marker("    x ^ y\n"));
    assert_eq!(
        split_fixture("set a\n     | E001: x\nset b;\n"),
        "set a\nset b;\n"
    );
}

// ----------------------------------------------------------------------
// What the parser could not read
// ----------------------------------------------------------------------

#[test]
fn missing_semicolon_points_just_after_the_previous_token() {
    check(
        r#"
set cells
         | E001: expected `;`, found keyword `set`
set nodes;
"#,
    );
    check(
        r#"
kernel k(double *q) {
    q[0] = 1.0
              | E001: expected `;`, found `q`
    q[1] = 2.0;
}
"#,
    );
    check(
        r#"
kernel k(double *q) {
    double x = 1.0 // a comment does not move the place
                  | E001: expected `;`, found `q`
    q[0] = x;
}
"#,
    );
    check(
        r#"
main { x = 1 }
            | E001: expected `;`, found `}`
"#,
    );
    check(
        r#"
main { par_loop k over cells (p_q READ) }
                                       | E001: expected `;`, found `}`
"#,
    );
    check(
        r#"
map pedge: edges -> nodes[2]
                            | E001: expected `;`, found keyword `kernel`
kernel k(double *q) { }
"#,
    );
    check(
        r#"
main {
    par_loop k over cells (p_q READ,
                           p_x READ)
                                    | E001: expected `;`, found keyword `print`
    print("done");
}
"#,
    );
    check("set cells\n         | E001: expected `;`, found end of file\n");
}

#[test]
fn missing_semicolon_offers_a_fix_and_names_the_token_found() {
    let program = "set cells\nset nodes;\n";
    let diagnostic = single(program);
    assert_eq!(diagnostic.location.range, TextRange::empty(9));
    assert_eq!(diagnostic.fixes.len(), 1);
    assert_eq!(diagnostic.fixes[0].title, "insert `;`");
    assert_eq!(diagnostic.fixes[0].edits[0].range, TextRange::empty(9));
    assert_eq!(diagnostic.fixes[0].edits[0].replacement, ";");
    // The token found is on the next line: it is a related location.
    assert_eq!(diagnostic.related.len(), 1);
    assert_eq!(diagnostic.related[0].message, "unexpected token");
    assert_eq!(
        &program[diagnostic.related[0].location.range.to_usize()],
        "set"
    );
}

#[test]
fn stray_tokens() {
    check(
        r#"
set cells; @ set nodes;
           ^ E001: unexpected `@`
"#,
    );
    check(
        r#"
main { x = 1 2; }
             ^ E001: unexpected `2`
"#,
    );
    check(
        r#"
main { } }
         ^ E001: unexpected `}`
set cells;
"#,
    );
    check(
        r#"
const c: double[2] = {{1, 2}};
                     ^ E001: unexpected `{`
                            ^ E001: unexpected `}`
"#,
    );
}

#[test]
fn unterminated_blocks_and_brackets() {
    check(
        r#"
kernel k(double *q) {
    q[0] = 1.0;
               | E001: expected `}`, found keyword `set`

set cells;
"#,
    );
    check(
        r#"
main {
    x = 1;
          | E001: expected `}`, found end of file
"#,
    );
    check(
        r#"
kernel k(double *q { q[0] = 1.0; }
                  | E001: expected `)`, found `{`
"#,
    );
    check(
        r#"
kernel k(double *q
                  | E001: expected `)`, found keyword `set`
set cells;
"#,
    );
    check(
        r#"
kernel k(double *q) { for (int i = 0; i < 4; i++ { q[i] = 0; } }
                                                 ^ E001: expected `)`, found `{`
"#,
    );
    check(
        r#"
kernel k(double *q) { q[0] = (q[1] + 2; }
                                      | E001: expected `)`, found `;`
"#,
    );
    check("kernel k(double *q\n                  | E001: expected `)`, found end of file\n");
}

#[test]
fn unclosed_delimiters_point_back_at_the_opener() {
    let program = "main {\n    x = 1;\n";
    let diagnostic = single(program);
    assert_eq!(diagnostic.related.len(), 1);
    assert_eq!(diagnostic.related[0].message, "unclosed delimiter");
    assert_eq!(diagnostic.related[0].location.range, TextRange::new(5, 6));

    let program = "kernel k(double *q\nset cells;\n";
    let diagnostic = single(program);
    let related: Vec<(&str, &str)> = diagnostic
        .related
        .iter()
        .map(|r| (r.message.as_str(), &program[r.location.range.to_usize()]))
        .collect();
    assert_eq!(
        related,
        [("unexpected token", "set"), ("unclosed delimiter", "(")]
    );
}

#[test]
fn what_was_expected() {
    check(
        r#"
main { par_loop k cells (p_q READ); }
                  ^^^^^ E001: expected one of `as` or `over`, found `cells`
"#,
    );
    check(
        r#"
dat p_q: double[4 on cells;
                  ^^ E001: expected `]`, found keyword `on`
"#,
    );
    check(
        r#"
kernel k(double *q) { q[0] = ; }
                            | E001: expected an expression, found `;`
"#,
    );
    check(
        r#"
dat p_q: double on cells
                        | E001: expected `;`, found keyword `set`
set cells;
"#,
    );
}

#[test]
fn what_was_expected_while_typing() {
    check(
        r#"
main {
    par_loop k over cells (p_q
                              | E001: expected `)`, found `}`
}
"#,
    );
    check(
        r#"
main { par_loop k over cells (p_q RE); }
                                  ^^ E001: expected one of an access mode, `,`, `)`, `[` or `INFO`, found `RE`
"#,
    );
    check(
        r#"
kernel k(double *q) { q[0] = q[1] +; }
                                   ^ E001: expected an expression, found `;`
"#,
    );
    check(
        r#"
kernel k(const *q) { }
              | E001: expected a type, found `*`
"#,
    );
    check(
        r#"
kernel k(double q) { }
         ^^^^^^^^ E001: a parameter needs a `*` before its name or a dimension after it (`double *q` or `double q[4]`)
"#,
    );
    check(
        r#"
dat p_q: double[4] on
                     | E001: expected a name, found end of file
"#,
    );
}

#[test]
fn reserved_words_are_not_names() {
    check(
        r#"
set on;
    ^^ E001: expected a name, found keyword `on`
"#,
    );
    check(
        r#"
kernel k(double *q) { double on = 1.0; }
                             ^^ E001: expected a name, found keyword `on`
"#,
    );
}

#[test]
fn unterminated_comments_and_strings() {
    check(
        r#"
set cells; /* open
           ^^ E001: unterminated block comment; it needs a closing `*/`
set nodes;
"#,
    );
    check(
        r#"
import "open;
       ^^^^^^ E001: unterminated string; a string ends with `"` on the line it starts
set cells;
"#,
    );
}

#[test]
fn print_takes_one_string() {
    check(
        r#"
main { print("%s", "x"); }
                   ^^^ E001: only the first argument of `print`, its format, may be a string
"#,
    );
}

// ----------------------------------------------------------------------
// C that the language leaves out, named
// ----------------------------------------------------------------------

#[test]
fn switch_is_reported_once_with_its_case_labels() {
    check(
        r#"
kernel k(int *c) {
    switch (c[0]) {
    ^^^^^^ E001: `switch` is not supported; use `if` and `else if`
    case 1: c[0] = 2; break;
    default: c[0] = 0;
    }
}
"#,
    );
}

#[test]
fn case_outside_switch() {
    check(
        r#"
kernel k(int *c) { case 1: c[0] = 0; }
                   ^^^^^^^ E001: `case` labels are not supported outside `switch`, which is not supported either
"#,
    );
}

#[test]
fn goto() {
    check(
        r#"
kernel k(int *c) { goto done; }
                   ^^^^ E001: `goto` is not supported; use loops with `break` and `continue`
"#,
    );
}

#[test]
fn struct_types() {
    check(
        r#"
kernel k(double *q) {
    struct point p;
    ^^^^^^ E001: `struct` is not supported; declare each member as a local variable
    struct { double x; double y; } v;
    ^^^^^^ E001: `struct` is not supported; declare each member as a local variable
}
"#,
    );
}

#[test]
fn pointer_declarators() {
    check(
        r#"
kernel k(double *q) { double a, *p = q; }
                                ^ E001: pointer declarations are not supported in kernel bodies; index a parameter instead (`p[i]`)
"#,
    );
}

#[test]
fn address_of() {
    check(
        r#"
kernel k(double *q) { x = &q[0]; y = a & b; }
                          ^ E001: taking an address with `&` is not supported; kernels work on their parameters directly
"#,
    );
}

#[test]
fn user_function_calls() {
    check(
        r#"
kernel k(double *q) { q[0] = helper(q[1]) + sqrt(q[2]); }
                             ^^^^^^ E001: call to `helper` is not supported; kernels may call only the built-in math functions
"#,
    );
}

#[test]
fn return_with_a_value() {
    check(
        r#"
kernel k(double *q) { return q[0] * 2.0; }
                             ^^^^^^^^^^ E001: `return` takes no value here; kernels and `main` return nothing
main { return; }
"#,
    );
}

#[test]
fn c_type_words() {
    check(
        r#"
kernel k(unsigned int *q, double r[2]) { }
         ^^^^^^^^ E001: `unsigned` is a C type the language does not have; use `double`, `float`, `int`, `uint`, `ll`, `ull` or `bool`
"#,
    );
    check(
        r#"
kernel k(double *q) {
    unsigned x = 1;
    ^^^^^^^^ E001: `unsigned` is a C type the language does not have; use `double`, `float`, `int`, `uint`, `ll`, `ull` or `bool`
}
"#,
    );
    check(
        r#"
kernel k(double *q) { long n = 1; }
                      ^^^^ E001: `long` is a C type the language does not have; use `double`, `float`, `int`, `uint`, `ll`, `ull` or `bool`
"#,
    );
    check(
        r#"
kernel k(double *q) { unsigned int x = 1; }
                      ^^^^^^^^ E001: `unsigned` is a C type the language does not have; use `double`, `float`, `int`, `uint`, `ll`, `ull` or `bool`
"#,
    );
}

#[test]
fn sizeof() {
    check(
        r#"
kernel k(double *q) { q[0] = sizeof(q); }
                             ^^^^^^ E001: `sizeof` is not supported; write the size as a number
"#,
    );
    check(
        r#"
kernel k(double *q) { q[0] = sizeof q; }
                             ^^^^^^ E001: `sizeof` is not supported; write the size as a number
"#,
    );
    check(
        r#"
kernel k(double *q) { q[0] = sizeof(double); }
                             ^^^^^^ E001: `sizeof` is not supported; write the size as a number
"#,
    );
}

#[test]
fn member_access() {
    check(
        r#"
kernel k(double *q) { x = p->a; }
                           ^^ E001: member access with `->` is not supported; structs are not part of the language
"#,
    );
    check(
        r#"
kernel k(double *q) { p->a = 1; }
                       ^^ E001: member access with `->` is not supported; structs are not part of the language
"#,
    );
    check(
        r#"
kernel k(double *q) { y = s.b; }
                           ^ E001: member access with `.` is not supported; structs are not part of the language
"#,
    );
}

#[test]
fn typedef() {
    check(
        r#"
typedef double real;
^^^^^^^ E001: `typedef` is not supported
"#,
    );
}

// ----------------------------------------------------------------------
// Positions
// ----------------------------------------------------------------------

#[test]
fn non_bmp_text_before_an_error_keeps_byte_ranges_right() {
    // Markers count characters: `😀` is one column, though four bytes.
    check(
        r#"
// é 😀
kernel k(double *q) { q[0] = 😀 1; }
                             ^ E001: unexpected `😀`
const s: double = 1; /* 日本 😀 */ set cells
                                         | E001: expected `;`, found end of file
"#,
    );
    let program = "// é 😀\nkernel k(double *q) { q[0] = 😀 1; }\n";
    let diagnostic = single(program);
    assert_eq!(&program[diagnostic.location.range.to_usize()], "😀");
    let index = LineIndex::new(program);
    let start = index.line_col(diagnostic.location.range.start, Encoding::Utf32);
    let start_utf16 = index.line_col(diagnostic.location.range.start, Encoding::Utf16);
    assert_eq!((start.line, start.col), (1, 29));
    assert_eq!(start_utf16.col, 29);
    // After the emoji: one character, two UTF-16 units, four bytes.
    let after = index.line_col(diagnostic.location.range.end, Encoding::Utf32);
    let after_utf16 = index.line_col(diagnostic.location.range.end, Encoding::Utf16);
    assert_eq!((after.col, after_utf16.col), (30, 31));

    // A name cannot start with `é`; the error is at it and no further.
    check(
        r#"
/* 😀😀😀 */ set é_cells;
              ^ E001: expected a name, found `é`
"#,
    );
}

// ----------------------------------------------------------------------
// Deep nesting
// ----------------------------------------------------------------------

/// Blocks nested `depth` deep in `main` around `inner`, every one closed.
fn nested_blocks(depth: usize, inner: &str) -> String {
    format!(
        "main {{\n{}{inner}{}}}\n",
        "{ ".repeat(depth),
        " }".repeat(depth)
    )
}

/// Runs both syntax error walks on `text` on a thread with the 2 MiB stack
/// of the language server's analysis threads.
fn errors_on_small_stack(text: String) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let parse = Parse::new(text.as_str());
            (
                parse.errors(FileId::MAIN),
                parse.unparsed_errors(FileId::MAIN),
            )
        })
        .expect("a thread")
        .join()
        .expect("the syntax errors of a deeply nested file, without a stack overflow")
}

/// A MISSING token (or an ERROR) deep inside nested blocks: tree-sitter's
/// own `parent` and `prev_sibling` recurse in C once per level for an
/// empty node, which overflowed a 2 MiB stack at a depth of some thousands
/// (F10, fuzz campaign seed 22). The checker takes parents and siblings
/// from its own walk.
#[test]
fn errors_deep_inside_nested_blocks_do_not_overflow_the_stack() {
    let depth = 100_000;
    for (inner, expected) in [
        ("int x = 1", "expected `;`, found `}`"),
        ("x = ;", "expected an expression, found `;`"),
        ("x = 1 + ;", "expected an expression, found `;`"),
        ("x = 1", ""),
    ] {
        let (all, unparsed) = errors_on_small_stack(nested_blocks(depth, inner));
        assert!(!all.is_empty(), "{inner}: no error reported");
        assert_eq!(all, unparsed, "{inner}");
        assert!(
            all.iter().any(|d| d.message.contains(expected)),
            "{inner}: {all:?}"
        );
    }
    // Blocks never closed.
    let unclosed = format!("main {{\n{}x = 1;\n", "{ ".repeat(depth));
    let (all, _) = errors_on_small_stack(unclosed);
    assert!(
        all.iter().any(|d| d.message.contains("expected `}`")),
        "{all:?}"
    );
}

// ----------------------------------------------------------------------
// Valid programs
// ----------------------------------------------------------------------

#[test]
fn a_valid_program_has_no_syntax_errors() {
    check(
        r#"
// Every construct of the language, once.
import "mesh.op2";
const gam: double = 1.4f;
const weights: double[3] = {0.5, 0.25, 0.25,};
set cells;
set edges;
map pecell: edges -> cells[2];
dat p_q: double[4] on cells = {1, 0, 0, 2.5};
dat p_flag: int on cells;
global rms: double = 0.0;
global g_min: float;
kernel flux(const double *a, const double *b, double r[4], int *flag) {
    double t[4] = {0, 0, 0, 0}, u;
    const int n2 = 2;
    for (int n = 0; n < 4; n++) { t[n] = a[n] - b[n]; }
    if (t[0] > 0.5) r[0] += t[0] * gam; else r[1] -= (double) t[1];
    u = t[2] ? sqrt(fabs(t[2])) : 0;
    while (u > 1.0e3) { u /= 2; if (u < 0) break; else continue; }
    do { u = -u; } while (!(u >= 0) && flag[0] != 0x1Fu);
    *flag = (flag[0] << 1 | 1) ^ 3 & ~0;
    r[2] += u; r[3] = t[n2 % 4];
    return;
}
kernel norm(const double *r, double *s) { *s += r[0] * r[0]; }
main {
    for (int iter = 0; iter < 10; iter++) {
        par_loop flux as flux_edges over edges (p_q[pecell[0]] READ, p_q[pecell[1]] READ,
                                               p_q[pecell[0]] INC, p_flag[pecell[0]] RW,);
        par_loop norm over cells (p_q READ, rms INC);
        print("rms = %g, cells = %d\n", rms, len(cells));
    }
}
"#,
    );
}

#[test]
fn the_examples_and_the_benchmark_program_have_no_syntax_errors() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
    let mut count = 0;
    for entry in std::fs::read_dir(&examples).expect("docs/examples exists") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|ext| ext == "op2") {
            let text = std::fs::read_to_string(&path).expect("examples are UTF-8");
            let diagnostics = Parse::new(text).errors(FileId::MAIN);
            assert!(
                diagnostics.is_empty(),
                "{}: {diagnostics:#?}",
                path.display()
            );
            count += 1;
        }
    }
    assert!(count > 0, "no examples in {}", examples.display());
    assert!(
        Parse::new(synth::program(2_000))
            .errors(FileId::MAIN)
            .is_empty()
    );
}

// ----------------------------------------------------------------------
// Every message, whatever the text
// ----------------------------------------------------------------------

const SEED: &str = r#"const gam: double = 1.4f;
set cells; set edges;
map pecell: edges -> cells[2];
dat p_q: double[4] on cells = {1, 0, 0, 2.5};
global rms: double = 0.0;
kernel flux(const double *a, double r[4]) {
    double t[4] = {0, 0, 0, 0}, u;
    for (int n = 0; n < 4; n++) { t[n] = a[n] * gam; }
    if (t[0] > 0.5) r[0] += t[0]; else r[1] -= (double) t[1];
    u = t[2] ? sqrt(fabs(t[2])) : 0;
}
main {
    par_loop flux over edges (p_q[pecell[0]] READ, p_q[pecell[1]] INC);
    print("rms = %g\n", rms);
}
"#;

const FRAGMENTS: &[&str] = &[
    "",
    " ",
    "\n",
    "x",
    "1",
    ";",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "*",
    "=",
    "->",
    ".",
    "&",
    "/*",
    "\"",
    "é",
    "😀",
    "set",
    "kernel",
    "main",
    "par_loop",
    "over",
    "READ",
    "double",
    "unsigned",
    "sizeof",
    "switch",
    "struct",
    "return 1;",
    "if (",
    "on",
];

/// The alternatives of an "expected …, found …" message, and what was found.
fn expected_and_found(message: &str) -> Option<(Vec<String>, String)> {
    let rest = message.strip_prefix("expected ")?;
    let (alternatives, found) = rest.rsplit_once(", found ")?;
    let alternatives = alternatives.strip_prefix("one of ").unwrap_or(alternatives);
    let (init, last) = alternatives
        .rsplit_once(" or ")
        .unwrap_or(("", alternatives));
    let mut list: Vec<String> = init
        .split(", ")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    list.push(last.to_owned());
    Some((list, found.to_owned()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Whatever the text: ranges lie in it on character boundaries, messages
    /// are rustc style, an expected list is short and never names the very
    /// token found.
    #[test]
    fn messages_are_well_formed(
        edits in prop::collection::vec((0.0..=1.0f64, 0usize..8, prop::sample::select(FRAGMENTS)), 1..6)
    ) {
        let mut text = SEED.to_owned();
        for (at, delete, insert) in edits {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
            let mut start = (at * text.len() as f64) as usize;
            while !text.is_char_boundary(start) {
                start -= 1;
            }
            let end = text[start..].char_indices().nth(delete).map_or(text.len(), |(i, _)| start + i);
            text.replace_range(start..end, insert);
        }
        for diagnostic in Parse::new(text.as_str()).errors(FileId::MAIN) {
            let range = diagnostic.location.range;
            prop_assert!(range.end as usize <= text.len(), "{diagnostic:?} in {text:?}");
            prop_assert!(text.is_char_boundary(range.start as usize) && text.is_char_boundary(range.end as usize));
            for related in &diagnostic.related {
                let range = related.location.range;
                prop_assert!(range.end as usize <= text.len());
                prop_assert!(text.is_char_boundary(range.start as usize) && text.is_char_boundary(range.end as usize));
            }
            let message = &diagnostic.message;
            prop_assert!(!message.is_empty());
            prop_assert!(!message.starts_with(|c: char| c.is_uppercase()), "{message}");
            prop_assert!(!message.ends_with('.'), "{message}");
            if let Some((alternatives, found)) = expected_and_found(message) {
                prop_assert!(alternatives.len() <= 6, "{message}");
                prop_assert!(!alternatives.contains(&found), "{message} in {text:?}");
                let found_word = found.trim_start_matches("keyword ");
                prop_assert!(!alternatives.iter().any(|a| a == found_word), "{message} in {text:?}");
            }
        }
    }
}

/// A parse keeps its errors once asked (`op2 fmt` and the fuzzer ask
/// twice), and an edit forgets them: asked again after each edit, they are
/// those of the edited text.
#[test]
fn errors_asked_again_after_an_edit_are_those_of_the_edited_text() {
    let mut parse = Parse::new("set cells;\n");
    assert!(parse.errors(FileId::MAIN).is_empty());
    parse.edit(4..9, "").expect("a valid edit");
    let broken = parse.errors(FileId::MAIN);
    assert_eq!(broken, Parse::new("set ;\n").errors(FileId::MAIN));
    assert!(!broken.is_empty(), "`set ;` is an error");
    assert_eq!(parse.errors(FileId::MAIN), broken, "asked twice");
    parse.edit(4..4, "faces").expect("a valid edit");
    assert!(parse.errors(FileId::MAIN).is_empty());
    // Another file's errors name that file.
    parse.edit(4..9, "").expect("a valid edit");
    let other = FileId(3);
    assert!(parse.errors(other).iter().all(|e| e.location.file == other));
}
