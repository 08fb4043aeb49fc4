//! Navigation over names: definition, references, highlights, rename,
//! symbols and hover, as data-driven fixtures.
//!
//! A fixture is a program with `$0` at the cursor and, under a line, carets
//! marking ranges of that line: `^^^` alone, or followed by a label
//! (`^^^ decl`, `^^^ write`, `^^^ read`, `^^^ def`). Caret lines are removed
//! before analysis. These tests call the LSP-free queries of
//! `op2_lsp::ide::navigation` and the handlers with a `Context` built from
//! `op2_lsp::world::analyse`; the transport has its own tests.

// `WorkspaceEdit` keys its changes by `Uri`, whose interior cache does not
// take part in hashing.
#![allow(clippy::mutable_key_type)]

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use op2_lsp::config::Settings;
use op2_lsp::documents::{Document, PositionEncoding};
use op2_lsp::handlers::{self, Context};
use op2_lsp::ide::navigation::{self, Target};
use op2_lsp::world::{Analysed, Overlay, analyse};
use op2_syntax::{FileId, TextRange};
use tower_lsp_server::lsp_types::{
    DocumentHighlightKind, DocumentSymbolResponse, GotoDefinitionResponse, HoverContents, Position,
    PrepareRenameResponse, Uri,
};

// ----------------------------------------------------------------------
// Fixtures
// ----------------------------------------------------------------------

/// A marked range and its label.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Mark {
    range: TextRange,
    label: String,
}

/// A fixture's text without markers, the cursor and the marked ranges.
struct Fixture {
    text: String,
    cursor: u32,
    marks: Vec<Mark>,
}

fn is_caret_line(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with('^') && !line.contains("$0")
}

fn parse_fixture(source: &str) -> Fixture {
    let source = source.strip_prefix('\n').unwrap_or(source);
    let mut text = String::new();
    let mut cursor = None;
    let mut marks = Vec::new();
    // Start of the last text line in `text`.
    let mut last_line_start = 0usize;
    for line in source.split_inclusive('\n') {
        if is_caret_line(line) {
            let content = line.trim_end_matches('\n');
            let mut column = 0;
            let bytes = content.as_bytes();
            while column < bytes.len() {
                if bytes[column] != b'^' {
                    column += 1;
                    continue;
                }
                let start = column;
                while column < bytes.len() && bytes[column] == b'^' {
                    column += 1;
                }
                let rest = &content[column..];
                let label = rest
                    .split_whitespace()
                    .next()
                    .filter(|w| !w.starts_with('^'))
                    .unwrap_or("")
                    .to_owned();
                // Carets line up with the text as it is without `$0`.
                let range = TextRange::new(
                    u32::try_from(last_line_start + start).unwrap(),
                    u32::try_from(last_line_start + column).unwrap(),
                );
                marks.push(Mark {
                    range,
                    label: label.clone(),
                });
                column += label.len();
            }
            continue;
        }
        last_line_start = text.len();
        if let Some(at) = line.find("$0") {
            cursor = Some(u32::try_from(text.len() + at).unwrap());
            text.push_str(&line.replacen("$0", "", 1));
        } else {
            text.push_str(line);
        }
    }
    marks.sort();
    Fixture {
        text,
        cursor: cursor.unwrap_or(0),
        marks,
    }
}

fn analysed_at(text: &str, path: Option<PathBuf>) -> Analysed {
    analyse(
        Document::new(text, 1),
        path,
        &Mutex::default(),
        &Overlay::default(),
    )
}

fn analysed(text: &str) -> Analysed {
    analysed_at(
        text,
        Some(PathBuf::from("/tmp/op2-navigation-tests/main.op2")),
    )
}

const URI: &str = "file:///tmp/op2-navigation-tests/main.op2";

fn with_context<T>(analysed: &Analysed, uri: &str, f: impl FnOnce(&Context<'_>) -> T) -> T {
    let settings = Settings::default();
    let uri: Uri = uri.parse().unwrap();
    let context = Context {
        analysed,
        encoding: PositionEncoding::Utf8,
        settings: &settings,
        uri: &uri,
    };
    f(&context)
}

fn position(analysed: &Analysed, offset: u32) -> Position {
    analysed
        .document
        .position(offset as usize, PositionEncoding::Utf8)
}

fn slice(text: &str, range: TextRange) -> &str {
    &text[range.to_usize()]
}

// ----------------------------------------------------------------------
// Definition
// ----------------------------------------------------------------------

/// The definition of the name at `$0` is the range marked `^^^`.
#[track_caller]
fn check_definition(source: &str) {
    let fixture = parse_fixture(source);
    let analysed = analysed(&fixture.text);
    let program = &analysed.analysis.program;
    let (target, _) = navigation::target_at(program, analysed.document.parse(), fixture.cursor)
        .unwrap_or_else(|| panic!("no target at the cursor in\n{}", fixture.text));
    let definition = navigation::definition(program, &target).expect("a definition");
    assert_eq!(definition.file, FileId::MAIN);
    let expected: Vec<TextRange> = fixture.marks.iter().map(|m| m.range).collect();
    assert_eq!(
        vec![definition.range],
        expected,
        "definition of `{}` is `{}`",
        navigation::target_name(program, &target),
        slice(&fixture.text, definition.range)
    );
}

/// Nothing to go to at `$0`.
#[track_caller]
fn check_no_target(source: &str) {
    let fixture = parse_fixture(source);
    let analysed = analysed(&fixture.text);
    let target = navigation::target_at(
        &analysed.analysis.program,
        analysed.document.parse(),
        fixture.cursor,
    );
    assert_eq!(target, None);
}

const DECLARATIONS: &str = "
set nodes;
set edges;
map pedge: edges -> nodes[2];
const gam: double = 1.4;
const gm1: double = gam - 1.0;
dat p_x: double on nodes = gam;
dat p_e: double on edges;
global g_sum: double = 0.0;
";

#[test]
fn definitions_of_top_level_names_in_declarations() {
    check_definition(
        "
set nodes;
    ^^^^^
set edges;
map pedge: edges -> no$0des[2];
",
    );
    check_definition(
        "
set nodes;
set edges;
    ^^^^^
map pedge: $0edges -> nodes[2];
",
    );
    check_definition(
        "
set nodes;
    ^^^^^
dat p_x: double on nodes$0;
",
    );
    check_definition(
        "
const gam: double = 1.4;
      ^^^
const gm1: double = g$0am - 1.0;
",
    );
    check_definition(
        "
set nodes;
const gam: double = 1.4;
      ^^^
dat p_x: double on nodes = $0gam;
",
    );
    // On a declaration's own name.
    check_definition(
        "
set no$0des;
    ^^^^^
",
    );
}

#[test]
fn definitions_in_par_loops() {
    const KERNEL: &str = "kernel k(const double *a, const double *b, double *s, const double *c, const int *n) { *s += a[0] + b[0] + c[0] + n[0]; }";
    let program = |par_loop: &str| format!("{DECLARATIONS}{KERNEL}\nmain {{\n    {par_loop}\n}}\n");
    let kernel = format!("{KERNEL}\n       ^");
    let cases = [
        (
            "par_loop $0k over edges (p_e READ, p_x[pedge[0]] READ, g_sum INC, gam, len(nodes));",
            kernel.as_str(),
        ),
        (
            "par_loop k over e$0dges (p_e READ, p_x[pedge[0]] READ, g_sum INC, gam, len(nodes));",
            "set edges;\n    ^^^^^",
        ),
        (
            "par_loop k over edges (p_$0e READ, p_x[pedge[0]] READ, g_sum INC, gam, len(nodes));",
            "dat p_e: double on edges;\n    ^^^",
        ),
        (
            "par_loop k over edges (p_e READ, p_x$0[pedge[0]] READ, g_sum INC, gam, len(nodes));",
            "dat p_x: double on nodes = gam;\n    ^^^",
        ),
        (
            "par_loop k over edges (p_e READ, p_x[pe$0dge[0]] READ, g_sum INC, gam, len(nodes));",
            "map pedge: edges -> nodes[2];\n    ^^^^^",
        ),
        (
            "par_loop k over edges (p_e READ, p_x[pedge[0]] READ, g_$0sum INC, gam, len(nodes));",
            "global g_sum: double = 0.0;\n       ^^^^^",
        ),
        (
            "par_loop k over edges (p_e READ, p_x[pedge[0]] READ, g_sum INC, gam$0, len(nodes));",
            "const gam: double = 1.4;\n      ^^^",
        ),
        (
            "par_loop k over edges (p_e READ, p_x[pedge[0]] READ, g_sum INC, gam, len(no$0des));",
            "set nodes;\n    ^^^^^",
        ),
    ];
    for (par_loop, declaration) in cases {
        let first_line = declaration.lines().next().unwrap();
        let source = program(par_loop).replacen(first_line, declaration, 1);
        check_definition(&source);
    }
}

#[test]
fn definition_of_an_as_name_is_itself() {
    check_definition(
        "
set cells;
dat p_q: double on cells;
kernel k(double *q) { q[0] = 1.0; }
main {
    par_loop k as ini$0t over cells (p_q WRITE);
                  ^^^^
}
",
    );
}

#[test]
fn definitions_in_kernel_bodies() {
    // A parameter.
    check_definition(
        "
kernel k(const double *x, double *y) {
                       ^
    y[0] = $0x[0];
}
",
    );
    // A local.
    check_definition(
        "
kernel k(double *y) {
    double t = 1.0;
           ^
    y[0] = t$0;
}
",
    );
    // A const read by the body.
    check_definition(
        "
const gam: double = 1.4;
      ^^^
kernel k(double *y) { y[0] = g$0am; }
",
    );
    // The innermost of two locals with one name.
    check_definition(
        "
kernel k(double *y) {
    double t = 1.0;
    {
        double t = 2.0;
               ^
        y[0] = t$0;
    }
}
",
    );
    // After the inner block, the outer one again.
    check_definition(
        "
kernel k(double *y) {
    double t = 1.0;
           ^
    {
        double t = 2.0;
    }
    y[0] = t$0;
}
",
    );
    // A local declared later in an inner block is not in scope earlier:
    // `gam` here is the const.
    check_definition(
        "
const gam: double = 1.4;
      ^^^
kernel k(double *y) {
    {
        y[0] = gam$0;
        double gam = 2.0;
    }
}
",
    );
    // A local shadowing a parameter in an inner block.
    check_definition(
        "
kernel k(double *y) {
    {
        double y = 2.0;
               ^
        y$0 += 1.0;
    }
}
",
    );
    // The loop variable of a `for`.
    check_definition(
        "
kernel k(double *y) {
    for (int n = 0; n < 4; n++) {
             ^
        y[n$0] = 0.0;
    }
}
",
    );
    // An earlier declarator of the same declaration.
    check_definition(
        "
kernel k(double *y) {
    double a = 1.0, b = a$0 * 2.0;
           ^
    y[0] = b;
}
",
    );
    // The branch of an `if` is a scope of its own.
    check_definition(
        "
const t: double = 1.0;
      ^
kernel k(double *y) {
    if (y[0] > 0.0) {
        double t = 2.0;
    }
    y[0] = t$0;
}
",
    );
}

#[test]
fn definitions_in_main() {
    check_definition(
        "
global g: double;
       ^
main {
    g$0 = 1.0;
}
",
    );
    check_definition(
        "
set cells;
    ^^^^^
main {
    print(\"%d\", len(ce$0lls));
}
",
    );
    check_definition(
        "
main {
    for (int iter = 0; iter < 10; iter++) {
             ^^^^
        print(\"%d\", iter$0);
    }
}
",
    );
}

#[test]
fn cursor_just_after_a_name() {
    check_definition(
        "
set nodes;
    ^^^^^
dat p_x: double on nodes$0;
",
    );
}

#[test]
fn nothing_to_find_on_builtins_keywords_and_unknown_names() {
    check_no_target("kernel k(double *y) { y[0] = sq$0rt(2.0); }");
    check_no_target("se$0t nodes;");
    check_no_target("kernel k(double *y) { y[0] = unkn$0own; }");
    check_no_target("// a comment about no$0des\nset nodes;");
}

#[test]
fn definition_handler_answers_a_location() {
    let fixture = parse_fixture(
        "
set nodes;
dat p_x: double on no$0des;
",
    );
    let analysed = analysed(&fixture.text);
    let response = with_context(&analysed, URI, |c| {
        handlers::definition::definition(c, position(&analysed, fixture.cursor))
    });
    let Some(GotoDefinitionResponse::Scalar(location)) = response else {
        panic!("expected one location")
    };
    assert_eq!(location.uri.as_str(), URI);
    assert_eq!(
        (location.range.start.line, location.range.start.character),
        (0, 4)
    );
    assert_eq!(
        (location.range.end.line, location.range.end.character),
        (0, 9)
    );
}

// ----------------------------------------------------------------------
// References and highlights
// ----------------------------------------------------------------------

/// The references of the name at `$0` are the marked ranges, labelled
/// `decl` (declaration), `write` or `read`.
#[track_caller]
fn check_references(source: &str) {
    let fixture = parse_fixture(source);
    let analysed = analysed(&fixture.text);
    let program = &analysed.analysis.program;
    let parse = analysed.document.parse();
    let (target, _) =
        navigation::target_at(program, parse, fixture.cursor).expect("a target at the cursor");
    let mut found: Vec<Mark> = navigation::references(program, parse, &target)
        .into_iter()
        .map(|r| {
            assert_eq!(r.location.file, FileId::MAIN);
            let label = if r.is_declaration {
                "decl"
            } else if r.is_write {
                "write"
            } else {
                "read"
            };
            Mark {
                range: r.location.range,
                label: label.into(),
            }
        })
        .collect();
    found.sort();
    let show = |marks: &[Mark]| {
        marks
            .iter()
            .map(|m| {
                format!(
                    "{}@{:?} {}",
                    slice(&fixture.text, m.range),
                    m.range,
                    m.label
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(show(&found), show(&fixture.marks));
}

#[test]
fn references_of_a_const_everywhere() {
    check_references(
        "
const gam: double = 1.4;
      ^^^ decl
const gm1: double = gam - 1.0;
                    ^^^ read
set cells;
dat p_q: double on cells = gam;
                           ^^^ read
kernel k(double *q) {
    q[0] = g$0am * q[0];
           ^^^ read
    {
        double gam = 2.0;
        q[0] += gam;
    }
}
main {
    par_loop k over cells (p_q RW);
    print(\"%g\", gam);
                ^^^ read
}
",
    );
}

#[test]
fn references_of_a_dat_with_modes() {
    check_references(
        "
set cells;
dat p_q: double on cells;
    ^^^ decl
dat p_r: double on cells;
kernel k(const double *a, double *b) { b[0] = a[0]; }
main {
    par_loop k over cells (p$0_q READ, p_r WRITE);
                           ^^^ read
    par_loop k over cells (p_r READ, p_q WRITE);
                                     ^^^ write
    par_loop k over cells (p_r READ, p_q RW);
                                     ^^^ write
}
",
    );
}

#[test]
fn references_of_a_param_and_its_writes() {
    check_references(
        "
kernel k(double *p, double *q) {
                 ^ decl
    *p$0 = q[0];
     ^ write
    p[0] += 1.0;
    ^ write
    (p)[0]++;
     ^ write
    q[0] = p[0] + q[0];
           ^ read
}
kernel other(double *p) { p[0] = 0.0; }
",
    );
}

#[test]
fn references_of_a_shadowed_local() {
    // The outer `t`: the inner block's `t` is another variable.
    check_references(
        "
kernel k(double *y) {
    double t = 1.0;
           ^ decl
    {
        y[0] = t;
               ^ read
        double t = 2.0;
        y[0] += t;
    }
    t$0 = 3.0;
    ^ write
    y[0] = t;
           ^ read
}
",
    );
    // The inner `t`.
    check_references(
        "
kernel k(double *y) {
    double t = 1.0;
    {
        double t = 2.0;
               ^ decl
        y[0] += t$0;
                ^ read
    }
    y[0] = t;
}
",
    );
}

#[test]
fn references_of_kernels_and_locals_in_main() {
    check_references(
        "
set cells;
dat p_q: double on cells;
kernel ini$0t(double *q) { q[0] = 0.0; }
       ^^^^ decl
main {
    par_loop init over cells (p_q WRITE);
             ^^^^ read
    int n = 2;
    par_loop init as again over cells (p_q WRITE);
             ^^^^ read
}
",
    );
    check_references(
        "
main {
    int n = 0;
        ^ decl
    while (n$0 < 10) {
           ^ read
        n++;
        ^ write
    }
}
",
    );
}

#[test]
fn highlights_have_kinds() {
    let fixture = parse_fixture(
        "
global g: double;
main {
    g$0 = 1.0;
    print(\"%g\", g);
}
",
    );
    let analysed = analysed(&fixture.text);
    let highlights = with_context(&analysed, URI, |c| {
        handlers::references::highlights(c, position(&analysed, fixture.cursor))
            .expect("highlights")
    });
    let kinds: Vec<(u32, Option<DocumentHighlightKind>)> = highlights
        .iter()
        .map(|h| (h.range.start.line, h.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (0, Some(DocumentHighlightKind::TEXT)),
            (2, Some(DocumentHighlightKind::WRITE)),
            (3, Some(DocumentHighlightKind::READ)),
        ]
    );
}

#[test]
fn references_handler_with_and_without_declaration() {
    let fixture = parse_fixture(
        "
set cells;
dat p_q: double on ce$0lls;
map m: cells -> cells[1];
",
    );
    let analysed = analysed(&fixture.text);
    let lines = |include| {
        with_context(&analysed, URI, |c| {
            handlers::references::references(c, position(&analysed, fixture.cursor), include)
                .expect("references")
                .iter()
                .map(|l| (l.range.start.line, l.range.start.character))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(lines(true), vec![(0, 4), (1, 19), (2, 7), (2, 16)]);
    assert_eq!(lines(false), vec![(1, 19), (2, 7), (2, 16)]);
}

// ----------------------------------------------------------------------
// Imports
// ----------------------------------------------------------------------

/// A fresh directory of its own for a test, removed with everything in it
/// when the guard is dropped: at the end of the test, or as a failing test
/// unwinds.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("op2-navigation-{name}-"))
        .tempdir()
        .unwrap()
}

fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

const LIBRARY: &str = "set cells;
dat p_q: double on cells;
kernel scale(double *q) { q[0] *= 2.0; }
";

const IMPORTER: &str = "import \"lib.op2\";
kernel zero(double *q) { q[0] = 0.0; }
main {
    par_loop zero over cells (p_q WRITE);
    par_loop scale over cells (p_q RW);
}
";

#[test]
fn names_in_imported_files() {
    let guard = temp_dir("imports");
    let dir = guard.path();
    std::fs::write(dir.join("lib.op2"), LIBRARY).unwrap();
    let main_path = dir.join("main.op2");
    std::fs::write(&main_path, IMPORTER).unwrap();
    let analysed = analysed_at(IMPORTER, Some(main_path.clone()));
    assert!(
        !analysed.analysis.has_errors(),
        "{:?}",
        analysed.diagnostics
    );
    let uri = file_uri(&main_path);
    let lib_uri = file_uri(&dir.join("lib.op2"));
    let offset = u32::try_from(IMPORTER.find("p_q WRITE").unwrap()).unwrap();

    // Definition in the other file.
    let definition = with_context(&analysed, &uri, |c| {
        handlers::definition::definition(c, position(&analysed, offset))
    });
    let Some(GotoDefinitionResponse::Scalar(location)) = definition else {
        panic!("expected a location")
    };
    assert_eq!(location.uri.as_str(), lib_uri);
    assert_eq!(
        (location.range.start.line, location.range.start.character),
        (1, 4)
    );

    // References in both files.
    let references = with_context(&analysed, &uri, |c| {
        handlers::references::references(c, position(&analysed, offset), true).expect("references")
    });
    let mut found: Vec<(String, u32, u32)> = references
        .iter()
        .map(|l| {
            (
                l.uri.as_str().to_owned(),
                l.range.start.line,
                l.range.start.character,
            )
        })
        .collect();
    found.sort();
    let mut expected = vec![
        (lib_uri.clone(), 1, 4),
        (uri.clone(), 3, 30),
        (uri.clone(), 4, 31),
    ];
    expected.sort();
    assert_eq!(found, expected);

    // Definition of the import itself: the imported file.
    let definition = with_context(&analysed, &uri, |c| {
        handlers::definition::definition(c, Position::new(0, 10))
    });
    let Some(GotoDefinitionResponse::Scalar(location)) = definition else {
        panic!("expected a location")
    };
    assert_eq!(location.uri.as_str(), lib_uri);

    // Rename across files.
    let edit = with_context(&analysed, &uri, |c| {
        handlers::rename::try_rename(c, position(&analysed, offset), "p_state").expect("rename")
    });
    let changes = edit.changes.expect("changes");
    let mut files: Vec<(&str, usize)> =
        changes.iter().map(|(u, e)| (u.as_str(), e.len())).collect();
    files.sort();
    let mut expected = vec![(lib_uri.as_str(), 1), (uri.as_str(), 2)];
    expected.sort();
    assert_eq!(files, expected);

    // A kernel of the other file, from the par_loop.
    let offset = u32::try_from(IMPORTER.find("scale").unwrap()).unwrap();
    let program = &analysed.analysis.program;
    let (target, _) = navigation::target_at(program, analysed.document.parse(), offset).unwrap();
    let definition = navigation::definition(program, &target).unwrap();
    assert_eq!(definition.file, FileId(1));
    assert_eq!(slice(LIBRARY, definition.range), "scale");
}

// ----------------------------------------------------------------------
// Rename
// ----------------------------------------------------------------------

/// Applies edits of the root file to `text`.
fn apply(text: &str, edits: &[op2_syntax::TextEdit]) -> String {
    let mut edits: Vec<&op2_syntax::TextEdit> = edits.iter().collect();
    assert!(edits.iter().all(|e| e.file == FileId::MAIN));
    edits.sort_by_key(|e| std::cmp::Reverse((e.range.start, e.range.end)));
    let mut out = text.to_owned();
    for edit in edits {
        out.replace_range(edit.range.to_usize(), &edit.replacement);
    }
    out
}

/// Renaming at `$0` to `new_name` turns the fixture into `expected`.
#[track_caller]
fn check_rename(source: &str, new_name: &str, expected: &str) {
    let fixture = parse_fixture(source);
    let analysed = analysed(&fixture.text);
    let edits = navigation::rename(
        &analysed.analysis.program,
        analysed.document.parse(),
        fixture.cursor,
        new_name,
    )
    .unwrap_or_else(|e| panic!("rename refused: {e}"));
    let renamed = apply(&fixture.text, &edits);
    let expected = expected.strip_prefix('\n').unwrap_or(expected);
    assert_eq!(renamed, expected);
    // The renamed program means what it meant: no new diagnostics.
    let before: Vec<_> = analysed.diagnostics.iter().map(|d| d.code).collect();
    let after: Vec<_> = analysed_at(&renamed, None)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(after, before, "diagnostics changed");
}

/// Renaming at `$0` to `new_name` is refused with a message containing
/// `message`.
#[track_caller]
fn check_rename_refused(source: &str, new_name: &str, message: &str) {
    let fixture = parse_fixture(source);
    let analysed = analysed(&fixture.text);
    let result = navigation::rename(
        &analysed.analysis.program,
        analysed.document.parse(),
        fixture.cursor,
        new_name,
    );
    match result {
        Ok(edits) => panic!("rename to `{new_name}` was not refused: {edits:?}"),
        Err(error) => assert!(
            error.contains(message),
            "`{error}` does not contain `{message}`"
        ),
    }
}

const JACOBI: &str = "
set nodes;
set edges;
map ends: edges -> nodes[2];
dat p_w: double on edges;
dat p_u: double on nodes;
dat p_r: double on nodes;
global g_du: double;
const tol: double = 1.0e-6;

kernel residual(const double *w, const double *u0, const double *u1, double *r0, double *r1) {
    double flux = w[0] * (u0[0] - u1[0]);
    *r0 -= flux;
    *r1 += flux;
}

kernel update(double *r, double *u, double *du) {
    u[0] += r[0];
    *du = fmax(*du, fabs(r[0]));
    r[0] = 0.0;
}

main {
    g_du = 1.0;
    while (g_du > tol) {
        g_du = 0.0;
        par_loop residual over edges (p_w READ, p_u[ends[0]] READ, p_u[ends[1]] READ, p_r[ends[0]] INC, p_r[ends[1]] INC);
        par_loop update over nodes (p_r RW, p_u RW, g_du MAX);
    }
    print(\"%g\", g_du);
}
";

#[test]
fn rename_a_dat() {
    let source = JACOBI.replacen("dat p_u:", "dat p_$0u:", 1);
    check_rename(
        &source,
        "p_temperature",
        &JACOBI.replace("p_u", "p_temperature"),
    );
}

#[test]
fn rename_a_local() {
    check_rename(
        "
kernel k(double *y) {
    double t = 1.0;
    {
        double t = 2.0;
        y[0] += t;
    }
    y[0] = t$0 * t;
}
",
        "outer",
        "
kernel k(double *y) {
    double outer = 1.0;
    {
        double t = 2.0;
        y[0] += t;
    }
    y[0] = outer * outer;
}
",
    );
}

#[test]
fn rename_a_parameter() {
    check_rename(
        "
kernel k(double *y$0, const double *x) { y[0] = x[0]; }
",
        "out",
        "
kernel k(double *out, const double *x) { out[0] = x[0]; }
",
    );
}

#[test]
fn rename_an_invocation_without_as_inserts_as() {
    check_rename(
        "
set cells;
dat p_q: double on cells;
kernel init(double *q) { q[0] = 0.0; }
main {
    par_loop in$0it over cells (p_q WRITE);
    print(\"%g\", 1.0);
}
",
        "first_init",
        "
set cells;
dat p_q: double on cells;
kernel init(double *q) { q[0] = 0.0; }
main {
    par_loop init as first_init over cells (p_q WRITE);
    print(\"%g\", 1.0);
}
",
    );
}

#[test]
fn rename_an_invocation_keeps_the_other_names() {
    // The second par_loop of `init` was `init_1`; without `as init_1` it
    // would become `init`.
    check_rename(
        "
set cells;
dat p_q: double on cells;
kernel init(double *q) { q[0] = 0.0; }
main {
    par_loop in$0it over cells (p_q WRITE);
    par_loop init over cells (p_q WRITE);
    par_loop init over cells (p_q WRITE);
}
",
        "setup",
        "
set cells;
dat p_q: double on cells;
kernel init(double *q) { q[0] = 0.0; }
main {
    par_loop init as setup over cells (p_q WRITE);
    par_loop init as init_1 over cells (p_q WRITE);
    par_loop init as init_2 over cells (p_q WRITE);
}
",
    );
}

#[test]
fn rename_an_as_name() {
    check_rename(
        "
set cells;
dat p_q: double on cells;
kernel init(double *q) { q[0] = 0.0; }
main {
    par_loop init as fir$0st over cells (p_q WRITE);
}
",
        "setup",
        "
set cells;
dat p_q: double on cells;
kernel init(double *q) { q[0] = 0.0; }
main {
    par_loop init as setup over cells (p_q WRITE);
}
",
    );
}

#[test]
fn rename_a_kernel_renames_its_par_loops() {
    check_rename(
        "
set cells;
dat p_q: double on cells;
kernel in$0it(double *q) { q[0] = 0.0; }
main {
    par_loop init over cells (p_q WRITE);
    par_loop init as again over cells (p_q WRITE);
}
",
        "reset",
        "
set cells;
dat p_q: double on cells;
kernel reset(double *q) { q[0] = 0.0; }
main {
    par_loop reset over cells (p_q WRITE);
    par_loop reset as again over cells (p_q WRITE);
}
",
    );
}

#[test]
fn rename_refusals() {
    let program = "
set cells;
const gam: double = 1.4;
dat p_q: double on cells;
kernel k(double *q) {
    double t = 1.0;
    q[0] = t * gam;
}
main {
    par_loop k over cells (p_q RW);
}
";
    let at =
        |needle: &str| program.replacen(needle, &format!("{}$0{}", &needle[..1], &needle[1..]), 1);
    check_rename_refused(&at("p_q: double"), "on", "reserved word");
    check_rename_refused(&at("p_q: double"), "double", "reserved word");
    check_rename_refused(&at("p_q: double"), "2x", "not a valid name");
    check_rename_refused(&at("p_q: double"), "a-b", "not a valid name");
    check_rename_refused(&at("p_q: double"), "sqrt", "built-in function");
    check_rename_refused(&at("p_q: double"), "cells", "already the name of a set");
    check_rename_refused(&at("p_q: double"), "k", "already the name of a kernel");
    // A dat may not take an invocation's name.
    check_rename_refused(
        "set cells;\ndat p_$0q: double on cells;\nkernel k(double *q) { q[0] = 1.0; }\nmain { par_loop k as first over cells (p_q WRITE); }\n",
        "first",
        "is the name of the par_loop at main.op2:4",
    );
    // `t` in the kernel would take over the use of `gam`.
    check_rename_refused(
        &at("gam: double"),
        "t",
        "would then name the local `t` of kernel `k`",
    );
    // Renaming the local `t` to `gam` would hide the const in `t * gam`.
    check_rename_refused(&at("t = 1.0"), "gam", "names the const `gam`");
    // Renaming the local `t` to `q` would clash with the parameter.
    check_rename_refused(&at("t = 1.0"), "q", "already declared in the same scope");
    // Renaming the parameter `q` to `t`: `t` would take over its uses.
    check_rename_refused(&at("q) {"), "t", "already declared in the same scope");
    // An invocation may not be named like a dat, or with a type keyword.
    check_rename_refused(
        &at("k over"),
        "p_q",
        "may not take the name of a set, dat or global",
    );
    check_rename_refused(&at("k over"), "double_it", "type keyword `double`");
    // A kernel whose par_loop would get a name with a type keyword.
    check_rename_refused(&at("k(double"), "int_kernel", "type keyword `int`");
}

/// The edits of renaming at `$0` of `source` to `new_name`, or the refusal.
fn renamed(source: &str, new_name: &str) -> Result<Vec<op2_syntax::TextEdit>, String> {
    let fixture = parse_fixture(source);
    let analysed = analysed(&fixture.text);
    navigation::rename(
        &analysed.analysis.program,
        analysed.document.parse(),
        fixture.cursor,
        new_name,
    )
}

/// The refusal of renaming at `$0` of `source` to `new_name`.
#[track_caller]
fn refusal(source: &str, new_name: &str) -> String {
    match renamed(source, new_name) {
        Ok(edits) => panic!(
            "a rename to a name of {} bytes was not refused: {} edits",
            new_name.len(),
            edits.len()
        ),
        Err(error) => error,
    }
}

#[test]
fn a_long_new_name_is_refused_first_in_a_short_message() {
    // The client chooses the new name's length: ten megabytes are refused
    // before anything else is looked at, and the refusal does not quote it.
    let long = "a".repeat(10 << 20);
    let too_long = |name: &str| {
        format!(
            "the new name is {} bytes long; a name may be at most {} bytes",
            name.len(),
            navigation::MAX_NEW_NAME
        )
    };
    let jacobi = JACOBI.replacen("dat p_u:", "dat p_$0u:", 1);
    assert_eq!(refusal(&jacobi, &long), too_long(&long));
    // Checked before the place: there is no name at `set`.
    assert_eq!(
        refusal(&JACOBI.replacen("set", "$0set", 1), &long),
        too_long(&long)
    );
    // Invalid as well as long: still the length, not the name.
    let invalid = format!("{long}-");
    assert_eq!(refusal(&jacobi, &invalid), too_long(&invalid));
    // At the limit a name is a name; one byte more is not.
    let at_limit = "a".repeat(navigation::MAX_NEW_NAME);
    check_rename(&jacobi, &at_limit, &JACOBI.replace("p_u", &at_limit));
    let over = format!("{at_limit}a");
    assert_eq!(refusal(&jacobi, &over), too_long(&over));
}

/// A kernel whose local `t` is used `uses` times, the cursor on its
/// declaration.
fn many_uses(uses: usize) -> String {
    let sum = vec!["t"; uses].join(" + ");
    format!("kernel k(double *y) {{\n    double t$0 = 1.0;\n    y[0] = {sum};\n}}\n")
}

#[test]
fn a_rename_whose_answer_would_be_too_long_is_refused() {
    // Uses × new name length is the answer's size: 30,000 uses of a name of
    // 1,024 bytes would be 31 MB of new text, 34 MB with the ranges.
    let source = many_uses(30_000);
    let name = "b".repeat(navigation::MAX_NEW_NAME);
    let error = refusal(&source, &name);
    assert!(
        error.starts_with(
            "this rename would make 30001 edits holding 30721024 bytes of text, \
             more than the 33554432 bytes an answer may hold"
        ),
        "{error}"
    );
    // A shorter name is renamed everywhere.
    let edits = renamed(&source, "temperature").expect("renamed");
    assert_eq!(edits.len(), 30_001);
}

#[test]
fn a_rename_that_would_make_a_file_too_long_to_read_is_refused() {
    // 17,000 uses of a name of 1,024 bytes: an answer of 20 MB, within its
    // limit, but a file of 17.5 MB, which `op2` would not read.
    let source = many_uses(17_000);
    let name = "b".repeat(navigation::MAX_NEW_NAME);
    let error = refusal(&source, &name);
    // 68,054 bytes, of which 17,001 the uses of `t`, each then 1,024.
    assert_eq!(
        error,
        "this rename would make `main.op2` 17460077 bytes long, over the limit of 16777216 bytes of a source file"
    );
}

#[test]
fn rename_refused_when_an_inner_local_captures_a_use() {
    // Renaming the outer `a` to `b`: the use inside the block would name the
    // inner `b`.
    check_rename_refused(
        "
kernel k(double *y) {
    double a$0 = 1.0;
    {
        double b = 2.0;
        y[0] = a + b;
    }
}
",
        "b",
        "would then name the local `b`",
    );
    // After the block, `b` is free again.
    check_rename(
        "
kernel k(double *y) {
    double a$0 = 1.0;
    {
        double b = 2.0;
        y[0] = b;
    }
    y[0] = a;
}
",
        "b",
        "
kernel k(double *y) {
    double b = 1.0;
    {
        double b = 2.0;
        y[0] = b;
    }
    y[0] = b;
}
",
    );
}

#[test]
fn prepare_rename() {
    let check = |source: &str| {
        let fixture = parse_fixture(source);
        let analysed = analysed(&fixture.text);
        navigation::prepare_rename(
            &analysed.analysis.program,
            analysed.document.parse(),
            fixture.cursor,
        )
        .map(|(range, placeholder)| (slice(&fixture.text, range).to_owned(), placeholder))
    };
    assert_eq!(check("set ce$0lls;"), Ok(("cells".into(), "cells".into())));
    // The kernel name of a par_loop without `as` stands for the invocation.
    let loops = "
set cells;
dat p_q: double on cells;
kernel init(double *q) { q[0] = 0.0; }
main {
    par_loop init over cells (p_q WRITE);
    par_loop in$0it over cells (p_q WRITE);
}
";
    assert_eq!(check(loops), Ok(("init".into(), "init_1".into())));
    let refused = |source: &str, message: &str| {
        let error = check(source).expect_err("refused");
        assert!(
            error.contains(message),
            "`{error}` does not contain `{message}`"
        );
    };
    refused(
        "kernel k(double *y) { y[0] = sq$0rt(2.0); }",
        "built-in function",
    );
    refused("kernel k(double *y) { y[0] = unkn$0own; }", "not declared");
    refused("se$0t cells;", "no name to rename");
    refused("set cells;\nset ce$0lls;", "declared more than once");

    // Through the handler.
    let fixture = parse_fixture(loops);
    let analysed = analysed(&fixture.text);
    let response = with_context(&analysed, URI, |c| {
        handlers::rename::prepare(c, position(&analysed, fixture.cursor))
    });
    let Some(PrepareRenameResponse::RangeWithPlaceholder { range, placeholder }) = response else {
        panic!("expected a range with a placeholder")
    };
    assert_eq!(placeholder, "init_1");
    assert_eq!(
        (range.start.line, range.start.character, range.end.character),
        (5, 13, 17)
    );
}

#[test]
fn rename_handler_groups_edits_by_uri() {
    let fixture = parse_fixture(&JACOBI.replacen("global g_du:", "global g_$0du:", 1));
    let analysed = analysed(&fixture.text);
    let edit = with_context(&analysed, URI, |c| {
        handlers::rename::rename(c, position(&analysed, fixture.cursor), "g_change")
            .expect("an edit")
    });
    let changes = edit.changes.expect("changes");
    assert_eq!(changes.len(), 1);
    let edits = &changes[&URI.parse::<Uri>().unwrap()];
    assert_eq!(edits.len(), 6);
    assert!(edits.iter().all(|e| e.new_text == "g_change"));
    let refused = with_context(&analysed, URI, |c| {
        handlers::rename::try_rename(c, position(&analysed, fixture.cursor), "while")
            .expect_err("refused")
    });
    assert!(refused.contains("reserved word"), "{refused}");
}

// ----------------------------------------------------------------------
// Symbols
// ----------------------------------------------------------------------

#[test]
fn document_symbols_are_hierarchical() {
    let analysed = analysed(JACOBI);
    let symbols =
        navigation::document_symbols(&analysed.analysis.program, analysed.document.parse());
    let outline: Vec<String> = symbols
        .iter()
        .map(|s| {
            let children: Vec<&str> = s.children.iter().map(|c| c.name.as_str()).collect();
            if children.is_empty() {
                format!("{:?} {}: {}", s.kind, s.name, s.detail)
            } else {
                format!(
                    "{:?} {}: {} [{}]",
                    s.kind,
                    s.name,
                    s.detail,
                    children.join(", ")
                )
            }
        })
        .collect();
    assert_eq!(
        outline,
        vec![
            "Set nodes: set",
            "Set edges: set",
            "Map ends: edges -> nodes[2]",
            "Dat p_w: double on edges",
            "Dat p_u: double on nodes",
            "Dat p_r: double on nodes",
            "Global g_du: double",
            "Const tol: double",
            "Kernel residual: (const double *w, const double *u0, const double *u1, double *r0, double *r1) [w, u0, u1, r0, r1]",
            "Kernel update: (double *r, double *u, double *du) [r, u, du]",
            "Main main:  [residual, update]",
        ]
    );
    // Every symbol's full range holds its name.
    for symbol in &symbols {
        assert!(
            symbol.full_range.contains_range(symbol.location.range),
            "{symbol:?}"
        );
        for child in &symbol.children {
            assert!(
                symbol.full_range.contains_range(child.full_range),
                "{child:?}"
            );
        }
    }
    let response = with_context(&analysed, URI, handlers::symbols::document_symbols);
    let Some(DocumentSymbolResponse::Nested(symbols)) = response else {
        panic!("expected nested symbols")
    };
    assert_eq!(symbols.len(), 11);
    assert_eq!(symbols[10].children.as_ref().map(Vec::len), Some(2));
}

#[test]
fn workspace_symbols_match_a_subsequence() {
    let analysed = analysed(JACOBI);
    let names = |query: &str| -> Vec<String> {
        navigation::workspace_symbols(&analysed.analysis.program, query)
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    assert_eq!(names("PU"), vec!["p_u"]);
    assert_eq!(names("rsd"), vec!["residual", "residual"]);
    assert_eq!(names("upd"), vec!["update", "update"]);
    assert!(names("").len() > 15);
    assert!(names("zzz").is_empty());
    let symbols = with_context(&analysed, URI, |c| {
        handlers::symbols::workspace_symbols(c, "g_du")
    });
    assert_eq!(symbols.len(), 1);
    assert_eq!(symbols[0].name, "g_du");
}

// ----------------------------------------------------------------------
// Hover
// ----------------------------------------------------------------------

fn hover_at(text: &str, needle: &str, shift: usize) -> String {
    let analysed = analysed(text);
    let offset = u32::try_from(
        text.find(needle)
            .unwrap_or_else(|| panic!("`{needle}` not found"))
            + shift,
    )
    .unwrap();
    let hover = with_context(&analysed, URI, |c| {
        handlers::hover::hover(c, position(&analysed, offset))
    })
    .unwrap_or_else(|| panic!("no hover at `{needle}`"));
    let HoverContents::Markup(markup) = hover.contents else {
        panic!("expected markdown")
    };
    markup.value
}

#[track_caller]
fn assert_contains(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            text.contains(part),
            "hover does not contain `{part}`:\n{text}"
        );
    }
}

#[test]
fn hover_on_a_dat_in_a_while_loop_shows_the_flow() {
    let hover = hover_at(JACOBI, "p_u RW", 1);
    assert_contains(
        &hover,
        &[
            "dat p_u: double on nodes",
            "element type `double`, dimension 1",
            "**In `update`**, argument 2 (`RW`)",
            "last written by `update`",
            "next read by `residual`",
        ],
    );
    let hover = hover_at(JACOBI, "p_r[ends[0]] INC", 1);
    assert_contains(
        &hover,
        &["last written by `update`", "next read by `update`"],
    );
    let hover = hover_at(JACOBI, "g_du MAX", 1);
    assert_contains(
        &hover,
        &[
            "global g_du: double",
            "not written by any par_loop before",
            "next read by main (line 25)",
        ],
    );
    // Outside a par_loop: who uses it.
    let hover = hover_at(JACOBI, "p_u: double", 1);
    assert_contains(&hover, &["Used by `residual` (READ), `update` (RW)"]);
    assert!(!hover.contains("last written"));
    // The graph was built, so the argument's generated pins are there too.
    let analysed = analysed(JACOBI);
    assert!(analysed.graph.is_some(), "{:?}", analysed.diagnostics);
}

#[test]
fn hover_on_a_kernel_and_its_par_loop() {
    let hover = hover_at(JACOBI, "update(double", 1);
    assert_contains(
        &hover,
        &[
            "kernel update(double *r, double *u, double *du)",
            "`r`: read and written",
            "`u`: only incremented",
            "`du`: read and written",
            "Run by `update`",
        ],
    );
    let hover = hover_at(JACOBI, "residual(const", 1);
    assert_contains(
        &hover,
        &[
            "`w`: read",
            "`r0`: only incremented",
            "`r1`: only incremented",
        ],
    );
    let hover = hover_at(JACOBI, "residual over", 1);
    assert_contains(
        &hover,
        &[
            "**par_loop `residual`** over `edges`",
            "named after its kernel",
            "const double *w, // ← p_w READ",
            "double *r1 // ← p_r[ends[1]] INC",
            "Begin and end trees (at most 16 edges per pin):",
            "- begin: `global.residual_begin` → `tree_residual.residual_begin` → \
             `tree_residual.residual_begin_forward` → `set_edges.residual_begin`, \
             `set_nodes.residual_begin`",
            "- end: `set_edges.residual_end`, `set_nodes.residual_end` → \
             `tree_residual.residual_end` → `tree_residual.residual_end_forward` → \
             `global.residual_end`",
            "- depth (levels of aggregators) by the devices taking part: 0 up to 16, \
             1 up to 256, 2 up to 4,096, 3 up to 65,536",
        ],
    );
}

#[test]
fn hover_on_the_kernel_name_of_a_par_loop_with_as() {
    let text = "set s;\ndat d: double on s;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k as first over s (d WRITE); print(\"\"); }\n";
    let on_kernel = hover_at(text, "k as", 0);
    assert_contains(
        &on_kernel,
        &[
            "**par_loop `first`** over `s`, named with `as`",
            "double *x // ← d WRITE",
        ],
    );
    assert_eq!(hover_at(text, "first", 2), on_kernel);
}

#[test]
fn hover_on_sets_maps_consts_params_and_locals() {
    let hover = hover_at(JACOBI, "nodes;", 1);
    assert_contains(
        &hover,
        &[
            "set nodes",
            "size comes from the instance data",
            "dats on it: `p_u`, `p_r`",
            "par_loops over it: `update`",
        ],
    );
    let hover = hover_at(JACOBI, "ends:", 1);
    assert_contains(
        &hover,
        &["map ends: edges -> nodes[2]", "Used by `residual`"],
    );
    let hover = hover_at(JACOBI, "tol)", 1);
    assert_contains(
        &hover,
        &["const tol: double = 1e-6", "Value at compile time: `1e-6`"],
    );
    let hover = hover_at(JACOBI, "u0[0] -", 1);
    assert_contains(
        &hover,
        &[
            "const double *u0",
            "Parameter 2 of kernel `residual`",
            "- `p_u[ends[0]] READ` in `residual`",
        ],
    );
    let hover = hover_at(JACOBI, "flux;", 1);
    assert_contains(
        &hover,
        &["double flux", "Local variable of kernel `residual`"],
    );
}

#[test]
fn hover_on_a_parameter_a_kernel_prints() {
    let text = "set cells;\ndat p_q: double on cells;\nkernel show(const double *q) {\n    double twice = 2.0 * q[0];\n    printf(\"%g %g\\n\", q[0], twice);\n}\nmain {\n    par_loop show over cells (p_q READ);\n}\n";
    let hover = hover_at(text, "q[0], twice", 0);
    assert_contains(&hover, &["const double *q", "Parameter 1 of kernel `show`"]);
    let hover = hover_at(text, "twice);", 0);
    assert_contains(&hover, &["double twice", "Local variable of kernel `show`"]);
}

#[test]
fn hover_on_a_diagnostic_explains_its_code() {
    let text = "set cells;\nset unused;\nmain { }\n";
    let hover = hover_at(text, "unused", 2);
    assert_contains(
        &hover,
        &[
            "set unused",
            "**W604**: unused declaration",
            "A set, map, dat, const, global or kernel is declared but nothing uses it",
            "`op2 explain W604`",
        ],
    );
    // A diagnostic away from any name: its own range.
    let analysed = analysed("kernel k(double *y) { y[0] = 1.0 }\n");
    assert!(
        analysed
            .diagnostics
            .iter()
            .any(|d| d.code == op2_syntax::Code::E001)
    );
    let offset = analysed.diagnostics[0].location.range.start;
    let (text, _) = handlers::hover::hover_text(&analysed, offset).expect("a hover");
    assert_contains(&text, &["**E001**", "`op2 explain E001`"]);
}

#[test]
fn no_hover_on_nothing() {
    let analysed = analysed(JACOBI);
    assert_eq!(handlers::hover::hover_text(&analysed, 0), None);
}

// ----------------------------------------------------------------------
// Targets, for other queries
// ----------------------------------------------------------------------

#[test]
fn targets_of_each_kind() {
    let analysed = analysed(JACOBI);
    let program = &analysed.analysis.program;
    let parse = analysed.document.parse();
    let target = |needle: &str| {
        let offset = u32::try_from(JACOBI.find(needle).unwrap()).unwrap();
        navigation::target_at(program, parse, offset)
            .map(|(t, _)| navigation::describe_target(program, &t))
    };
    assert_eq!(target("p_w READ").as_deref(), Some("dat `p_w`"));
    assert_eq!(target("ends[0]]").as_deref(), Some("map `ends`"));
    assert_eq!(
        target("flux =").as_deref(),
        Some("local `flux` of kernel `residual`")
    );
    assert_eq!(
        target("w[0] *").as_deref(),
        Some("parameter `w` of kernel `residual`")
    );
    assert_eq!(target("g_du = 1.0").as_deref(), Some("global `g_du`"));
    let aliased = "set s;\ndat d: double on s;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k as first over s (d WRITE); }\n";
    let analysed = analysed_at(aliased, None);
    let offset = u32::try_from(aliased.find("first").unwrap()).unwrap();
    let (target, _) = navigation::target_at(
        &analysed.analysis.program,
        analysed.document.parse(),
        offset,
    )
    .unwrap();
    assert!(matches!(target, Target::Invocation(_)));
}

#[test]
fn positions_in_utf16_around_emoji() {
    // 😀 is two UTF-16 units and four bytes.
    let text = "set cells; // 😀\ndat p_q: double on /* 😀 */ cells;\n";
    let analysed = analysed(text);
    let settings = Settings::default();
    let uri: Uri = URI.parse().unwrap();
    let context = Context {
        analysed: &analysed,
        encoding: PositionEncoding::Utf16,
        settings: &settings,
        uri: &uri,
    };
    // `cells` on line 1 starts after `dat p_q: double on /* 😀 */ `: 28
    // UTF-16 units.
    let response = handlers::definition::definition(&context, Position::new(1, 29));
    let Some(GotoDefinitionResponse::Scalar(location)) = response else {
        panic!("expected a location")
    };
    assert_eq!(
        (location.range.start.line, location.range.start.character),
        (0, 4)
    );
    let references =
        handlers::references::references(&context, Position::new(0, 6), false).unwrap();
    assert_eq!(references.len(), 1);
    assert_eq!(
        (
            references[0].range.start.character,
            references[0].range.end.character
        ),
        (28, 33)
    );
}

#[test]
fn a_large_program() {
    let text = op2_syntax::synth::program(5000);
    let analysed = analysed(&text);
    let program = &analysed.analysis.program;
    let parse = analysed.document.parse();
    // The const `gm1` is read by every flux kernel and declared once.
    let offset = u32::try_from(text.rfind("gm1 *").unwrap()).unwrap();
    let (target, _) = navigation::target_at(program, parse, offset).unwrap();
    let references = navigation::references(program, parse, &target);
    let kernels = program
        .kernels
        .iter()
        .filter(|k| k.name.starts_with("flux_"))
        .count();
    assert_eq!(references.len(), kernels + 1);
    assert_eq!(references.iter().filter(|r| r.is_declaration).count(), 1);
    // Every kernel and `main` is in the outline.
    let symbols = navigation::document_symbols(program, parse);
    assert_eq!(
        symbols
            .iter()
            .filter(|s| s.kind == navigation::SymbolKind::Kernel)
            .count(),
        program.kernels.len()
    );
    let main = symbols
        .iter()
        .find(|s| s.kind == navigation::SymbolKind::Main)
        .unwrap();
    assert_eq!(main.children.len(), program.invocations.len());
}

#[test]
fn every_offset_of_valid_and_broken_programs() {
    // No query panics anywhere, on a valid program or on one cut short or
    // with a garbled line (as while typing).
    let broken_end = &JACOBI[..JACOBI.len() / 2];
    let garbled = JACOBI.replace("double flux = w[0]", "double flux = w[0 +* ;");
    let duplicate = format!("{JACOBI}\nkernel update(double *r) {{ r[0] = 1.0; }}\nset nodes;\n");
    for text in [JACOBI, broken_end, garbled.as_str(), duplicate.as_str()] {
        let analysed = analysed(text);
        let program = &analysed.analysis.program;
        let parse = analysed.document.parse();
        for offset in 0..=u32::try_from(text.len()).unwrap() {
            let _ = handlers::hover::hover_text(&analysed, offset);
            if let Some((target, range)) = navigation::target_at(program, parse, offset) {
                assert!(range.touches(offset));
                let definition = navigation::definition(program, &target).expect("a definition");
                let references = navigation::references(program, parse, &target);
                assert!(
                    references.iter().any(|r| r.location == definition)
                        || matches!(target, Target::Invocation(_)),
                    "the references of `{}` include its definition",
                    navigation::target_name(program, &target)
                );
            }
            if navigation::prepare_rename(program, parse, offset).is_ok() {
                let _ = navigation::rename(program, parse, offset, "renamed_x");
            }
        }
    }
}

// ----------------------------------------------------------------------
// Deep nesting
// ----------------------------------------------------------------------

/// Every request that looks at the tree, at a MISSING name and at a real
/// one deep inside nested blocks, on a thread with the 2 MiB stack of the
/// server's threads. Tree-sitter's `parent` and siblings recurse in C once
/// per level for an empty node, and descend from the root on each call;
/// the server finds ancestors in one descent of its own (F10).
#[test]
fn requests_deep_inside_nested_blocks_need_no_stack() {
    let depth = 60_000;
    let text = format!(
        "set s;\ndat d: double on s;\nkernel k(double *q) {{\n{}double w = 1; w = q[0]; q[0] = ;\n{}}}\nmain {{ par_loop k over s (d RW); }}\n",
        "{ ".repeat(depth),
        " }".repeat(depth)
    );
    // `q[0] = ;` has a MISSING name where the expression should be.
    let missing = u32::try_from(text.find("= ;").unwrap() + 2).unwrap();
    let name = u32::try_from(text.find("w = q").unwrap()).unwrap();
    let done = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let analysed = analysed(&text);
            let program = &analysed.analysis.program;
            let parse = analysed.document.parse();
            assert!(navigation::target_at(program, parse, missing).is_none());
            let (target, _) = navigation::target_at(program, parse, name).expect("`w` is a local");
            assert!(matches!(target, Target::Local(_)), "{target:?}");
            assert_eq!(navigation::references(program, parse, &target).len(), 2);
            with_context(&analysed, URI, |context| {
                for offset in [missing, name] {
                    let at = position(&analysed, offset);
                    let _ = handlers::hover::hover(context, at);
                    let _ = handlers::definition::definition(context, at);
                    let _ = handlers::references::highlights(context, at);
                    let _ = handlers::rename::prepare(context, at);
                    let _ = handlers::rename::rename(context, at, "w2");
                    let _ = handlers::completion::completion(context, at);
                    let _ = handlers::signature_help::signature_help(context, at);
                    let ranges = handlers::folding::selection_ranges(context, &[at]);
                    assert!(ranges.is_some_and(|r| r.len() == 1));
                }
                let tokens = handlers::semantic_tokens::full(context).expect("tokens");
                assert!(tokens.data.len() > 10);
                let _ = handlers::folding::folding_ranges(context);
                let _ = handlers::symbols::document_symbols(context);
            });
        })
        .expect("a thread")
        .join();
    assert!(done.is_ok(), "a request panicked or overflowed");
}

// ----------------------------------------------------------------------
// `fetch DAT into GLOBAL;`
// ----------------------------------------------------------------------

#[test]
fn definitions_and_references_through_a_fetch() {
    check_definition(
        "
set nodes;
dat p_u: double[2] on nodes;
    ^^^
global u: double[8];
main {
    fetch p$0_u into u;
}
",
    );
    check_definition(
        "
set nodes;
dat p_u: double[2] on nodes;
global u: double[8];
       ^
main {
    // A local of `main` does not hide the global a fetch writes.
    double x = 0.0;
    fetch p_u into u$0;
    print(\"%g\", u[0] + x);
}
",
    );
    // The fetch reads the dat and writes the global.
    check_references(
        "
set nodes;
dat p_u: double on nodes;
    ^^^ decl
global u: double[4];
main {
    fetch p_$0u into u;
          ^^^ read
    print(\"%g\", u[0]);
}
",
    );
    check_references(
        "
set nodes;
dat p_u: double on nodes;
global u: double[4];
       ^ decl
main {
    fetch p_u into u$0;
                   ^ write
    print(\"%g\", u[0]);
                ^ read
}
",
    );
}

#[test]
fn hover_on_the_names_of_a_fetch() {
    let text = "set nodes;\ndat p_u: double[2] on nodes;\nglobal u: double[8];\nmain {\n    fetch p_u into u;\n    print(\"%g\", u[0]);\n}\n";
    let hover = hover_at(text, "p_u into", 0);
    assert_contains(&hover, &["dat p_u: double[2] on nodes"]);
    let hover = hover_at(text, "u;", 0);
    assert_contains(&hover, &["global u: double[8]"]);
}

// ----------------------------------------------------------------------
// Cost of finding every use (issue #12)
// ----------------------------------------------------------------------

/// Every identifier of the programs in `docs/examples` and the code
/// generator's test programs: what the cursor query resolves it to (one
/// descent and a climb of its own path) must list it among that target's
/// references, which one walk of the whole tree finds, and each of those
/// references must resolve back to the target.
#[test]
fn references_found_in_one_walk_agree_with_each_name_resolved_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<PathBuf> = Vec::new();
    for folder in ["docs/examples", "server/codegen/tests/programs"] {
        for entry in std::fs::read_dir(root.join(folder)).unwrap().flatten() {
            if entry.path().extension().is_some_and(|e| e == "op2") {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    assert!(files.len() > 10, "{files:?}");
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let analysed = analysed_at(&text, Some(file.clone()));
        let program = &analysed.analysis.program;
        let parse = analysed.document.parse();
        let mut cursor = parse.tree().root_node().walk();
        let mut offsets = Vec::new();
        loop {
            let node = cursor.node();
            if node.kind() == "identifier" {
                offsets.push(node.start_byte() as u32);
            }
            if cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    break;
                }
            }
            if cursor.node() == parse.tree().root_node() {
                break;
            }
        }
        for offset in offsets {
            let Some((target, range)) = navigation::target_at(program, parse, offset) else {
                continue;
            };
            let references = navigation::references_in_document(program, parse, &target);
            assert!(
                references.iter().any(|r| r.location.range == range),
                "{}: `{}` at {range:?} resolves to {target:?}, whose references miss it",
                file.display(),
                slice(&text, range)
            );
            for reference in &references {
                let back = navigation::target_at(program, parse, reference.location.range.start);
                assert_eq!(
                    back.map(|(t, _)| t).as_ref(),
                    Some(&target),
                    "{}: reference at {:?}",
                    file.display(),
                    reference.location.range
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 1000, "only {checked} names checked");
}

/// Issue #12: references, highlights and rename resolved each use of the
/// name apart, by a descent from the root to it (past the statements
/// before it) and a scan of the statements of every block around it, so
/// their cost was the number of uses times the length of a long `main`, or
/// times the depth of a long `x + x + …` chain: on 10,000 uses, 49 s for
/// the references, 40 s for the highlights (asked on every move of the
/// cursor) and 91 s for a rename in a long `main`, 6 s for the highlights
/// in a chain, in the debug build. One walk now finds and resolves every
/// use. Generated with 24,000 uses in a `main` of 12,000 statements (the
/// old code: 75 s for the references) and 30,000 in one chain, against a
/// limit of 15 s for each request, which the walk meets in well under one.
#[test]
fn every_use_of_a_name_is_found_in_linear_time() {
    let long_main = format!(
        "main {{\n    double x = 0.0;\n{}}}\n",
        "    x = x + 1.0;\n".repeat(12_000)
    );
    let long_chain = format!(
        "main {{\n    double x = 0.0;\n    double y = x{};\n    y = x;\n}}\n",
        " + x".repeat(30_000)
    );
    let limit = std::time::Duration::from_secs(15);
    for (what, text, uses) in [("main", long_main, 24_001), ("chain", long_chain, 30_003)] {
        let analysed = analysed(&text);
        let program = &analysed.analysis.program;
        let parse = analysed.document.parse();
        let declared = text.find("x = 0.0").unwrap() as u32;
        let (target, _) = navigation::target_at(program, parse, declared).expect("`x`");
        let timed = |name: &str, f: &mut dyn FnMut() -> usize| {
            let started = std::time::Instant::now();
            let found = f();
            let took = started.elapsed();
            assert!(took < limit, "{what}: {name} took {took:?}");
            assert_eq!(found, uses, "{what}: {name}");
        };
        timed("references", &mut || {
            navigation::references(program, parse, &target).len()
        });
        timed("highlights", &mut || {
            navigation::references_in_document(program, parse, &target).len()
        });
        timed("rename", &mut || {
            navigation::rename(program, parse, declared, "z")
                .unwrap()
                .len()
        });
        // A rename that a local of the new name in an inner block would take
        // a use from is refused, by the same walk.
        let end = text.rfind('}').unwrap();
        let shadowed = format!(
            "{}    {{\n        double z = 2.0;\n        x = z;\n    }}\n}}\n",
            &text[..end]
        );
        let shadowed_analysed = analysed_at(
            &shadowed,
            Some(PathBuf::from("/tmp/op2-navigation-tests/main.op2")),
        );
        let program = &shadowed_analysed.analysis.program;
        let parse = shadowed_analysed.document.parse();
        let declared = shadowed.find("x = 0.0").unwrap() as u32;
        let started = std::time::Instant::now();
        let refused = navigation::rename(program, parse, declared, "z");
        assert!(
            started.elapsed() < limit,
            "{what}: refused rename took {:?}",
            started.elapsed()
        );
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("would then name")),
            "{what}: {refused:?}"
        );
    }
}

#[test]
fn renaming_a_kernel_of_many_par_loops_is_linear_in_them() {
    // Each of the kernel's par_loops was compared with every other one for
    // a clash: 8,000 took 0.24 s, 80,000 would take 25 s.
    for count in [1_000usize, 4_000] {
        let loops = "    par_loop k over s (d RW);\n".repeat(count);
        let source = format!(
            "set s;\ndat d: double on s;\nkernel k$0(double *x) {{ x[0] = 1.0; }}\nmain {{\n{loops}}}\n"
        );
        let fixture = parse_fixture(&source);
        let analysed = analysed(&fixture.text);
        let before = op2_lsp::work::on_this_thread();
        let edits = navigation::rename(
            &analysed.analysis.program,
            analysed.document.parse(),
            fixture.cursor,
            "q",
        )
        .expect("renamed");
        let work = op2_lsp::work::on_this_thread() - before;
        // The kernel's name at its definition and in each par_loop.
        assert_eq!(edits.len(), count + 1);
        assert!(
            work <= 8 * count as u64,
            "{work} invocations looked at for {count} par_loops"
        );
    }
}
