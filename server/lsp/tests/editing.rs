//! The editing features, called the way the server calls them: completion
//! in every context, signature help, semantic tokens (full and delta),
//! folding and selection ranges, quick fixes and formatting. Fixtures mark
//! the cursor with `$0`.

use std::sync::Mutex;

use op2_lsp::config::Settings;
use op2_lsp::documents::{Document, OpenDocument, PositionEncoding};
use op2_lsp::handlers::{self, Context};
use op2_lsp::world::{Analysed, Overlay, analyse};
use op2_syntax::ParseLimit;
use tower_lsp_server::lsp_types::{
    CodeActionOrCommand, CompletionItem, CompletionResponse, FoldingRangeKind, InsertTextFormat,
    Position, Range, SemanticToken, SemanticTokensFullDeltaResult, TextEdit, Uri,
};

/// The declarations most fixtures share.
const PRELUDE: &str = "\
const gam: double = 1.4;
const weights: double[4] = {1.0, 2.0, 3.0, 4.0};
set nodes;
set edges;
set cells;
map pedge: edges -> nodes[2];
map pecell: edges -> cells[2];
map pcell: cells -> nodes[4];
dat p_x: double[2] on nodes;
dat p_q: double[4] on cells;
dat p_res: double[4] on cells;
global rms: double = 0.0;
kernel flux(const double *x1, const double *x2, const double *q, double res[4]) {
    res[0] += x1[0] - x2[0] + q[0];
}
";

fn analysed(text: &str) -> Analysed {
    analyse(
        Document::new(text, 1),
        None,
        &Mutex::default(),
        &Overlay::default(),
    )
}

/// Runs `f` with a context over `text` at `uri`.
fn with_context<T>(uri: &str, text: &str, f: impl FnOnce(&Context<'_>) -> T) -> T {
    with_analysed(&analysed(text), uri, f)
}

/// Runs `f` with a context over `analysed` at `uri`.
fn with_analysed<T>(analysed: &Analysed, uri: &str, f: impl FnOnce(&Context<'_>) -> T) -> T {
    let settings = Settings::default();
    let uri: Uri = uri.parse().expect("a valid URI");
    let context = Context {
        analysed,
        encoding: PositionEncoding::Utf16,
        settings: &settings,
        uri: &uri,
    };
    f(&context)
}

/// The text without its `$0` marker, and the marker's position.
fn cursor(fixture: &str) -> (String, Position) {
    let offset = fixture
        .find("$0")
        .expect("the fixture marks the cursor with $0");
    let text = fixture.replacen("$0", "", 1);
    let position = Document::new(&text, 0).position(offset, PositionEncoding::Utf16);
    (text, position)
}

fn completions(fixture: &str) -> Vec<CompletionItem> {
    let (text, position) = cursor(fixture);
    match with_context("file:///completion.op2", &text, |c| {
        handlers::completion::completion(c, position)
    }) {
        Some(CompletionResponse::Array(items)) => items,
        Some(CompletionResponse::List(list)) => list.items,
        None => Vec::new(),
    }
}

/// The completions at the cursor include every label of `present` and
/// none of `absent`.
#[track_caller]
fn check(fixture: &str, present: &[&str], absent: &[&str]) -> Vec<CompletionItem> {
    let items = completions(fixture);
    let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
    for label in present {
        assert!(
            labels.contains(label),
            "`{label}` missing at the cursor of:\n{fixture}\ngot {labels:?}"
        );
    }
    for label in absent {
        assert!(
            !labels.contains(label),
            "`{label}` offered at the cursor of:\n{fixture}\ngot {labels:?}"
        );
    }
    items
}

fn item<'a>(items: &'a [CompletionItem], label: &str) -> &'a CompletionItem {
    items
        .iter()
        .find(|i| i.label == label)
        .unwrap_or_else(|| panic!("no `{label}`"))
}

fn in_main(statement: &str) -> String {
    format!("{PRELUDE}main {{\n    {statement}\n}}\n")
}

// ----------------------------------------------------------------------
// Completion
// ----------------------------------------------------------------------

#[test]
fn sets_after_over() {
    check(
        &in_main("par_loop flux over $0"),
        &["nodes", "edges", "cells"],
        &["p_q", "pedge", "flux", "READ"],
    );
    // While the set's name is typed, and with the statement unfinished.
    check(
        &in_main("par_loop flux over ed$0"),
        &["edges", "cells"],
        &["p_q"],
    );
    check(
        &format!("{PRELUDE}main {{\n    par_loop flux as first over $0"),
        &["edges"],
        &["p_q"],
    );
}

#[test]
fn kernels_after_par_loop() {
    let items = check(
        &in_main("par_loop $0"),
        &["flux"],
        &["nodes", "p_q", "par_loop"],
    );
    assert_eq!(
        item(&items, "flux").detail.as_deref(),
        Some("flux(const double *x1, const double *x2, const double *q, double res[4])")
    );
    check(
        &in_main("par_loop flux $0"),
        &["over", "as"],
        &["flux", "edges"],
    );
}

#[test]
fn data_at_an_argument_start() {
    let data = ["p_x", "p_q", "p_res", "rms", "gam", "weights", "len"];
    let never = ["pedge", "nodes", "flux", "READ", "sqrt"];
    check(&in_main("par_loop flux over edges ($0"), &data, &never);
    check(
        &in_main("par_loop flux over edges (p_x[pedge[0]] READ, $0"),
        &data,
        &never,
    );
    check(
        &in_main("par_loop flux over edges (p_x[pedge[0]] READ,\n        p_$0);"),
        &data,
        &never,
    );
    let items = completions(&in_main("par_loop flux over edges ($0"));
    assert_eq!(item(&items, "len").insert_text.as_deref(), Some("len($1)"));
    assert_eq!(
        item(&items, "p_q").detail.as_deref(),
        Some("dat double[4] on cells")
    );
    // Dats reachable from the iteration set sort first.
    assert!(item(&items, "p_x").sort_text < item(&items, "weights").sort_text);
}

#[test]
fn maps_after_a_dat_and_bracket() {
    // From the iteration set to the dat's set.
    check(
        &in_main("par_loop flux over edges (p_x[$0"),
        &["pedge"],
        &["pecell", "pcell", "nodes"],
    );
    check(
        &in_main("par_loop flux over edges (p_x[pedge[0]] READ, p_q[$0"),
        &["pecell"],
        &["pedge", "pcell"],
    );
    // No map fits: every map.
    check(
        &in_main("par_loop flux over nodes (p_q[$0"),
        &["pedge", "pecell", "pcell"],
        &["p_q"],
    );
}

#[test]
fn indices_after_a_map_and_bracket() {
    check(
        &in_main("par_loop flux over edges (p_x[pedge[$0"),
        &["0", "1"],
        &["2", "pedge"],
    );
    check(
        &in_main("par_loop flux over cells (p_x[pcell[$0]] READ)"),
        &["0", "1", "2", "3"],
        &["4"],
    );
}

#[test]
fn modes_after_an_argument_follow_the_table() {
    let writes = ["READ", "WRITE", "RW", "INC"];
    check(
        &in_main("par_loop flux over cells (p_q $0"),
        &writes,
        &["MIN", "MAX", "p_q"],
    );
    check(
        &in_main("par_loop flux over edges (p_x[pedge[0]] $0"),
        &writes,
        &["MIN", "MAX"],
    );
    check(
        &in_main("par_loop flux over edges (p_x[pedge[0]] RE$0"),
        &writes,
        &["MIN"],
    );
    check(
        &in_main("par_loop flux over edges (p_q READ, rms $0"),
        &["READ", "INC", "MIN", "MAX"],
        &["WRITE", "RW"],
    );
    check(
        &in_main("par_loop flux over edges (gam $0"),
        &["READ"],
        &["WRITE", "RW", "INC", "MIN", "MAX"],
    );
    check(
        &in_main("par_loop flux over edges (len(cells) $0"),
        &["READ"],
        &["WRITE", "INC"],
    );
    check(
        &in_main("par_loop flux over edges (len($0"),
        &["cells", "edges"],
        &["p_q"],
    );
    // After the mode, or after the list, nothing.
    assert!(completions(&in_main("par_loop flux over edges (p_q READ $0")).is_empty());
    assert!(completions(&in_main("par_loop flux over edges (p_q READ) $0")).is_empty());
}

#[test]
fn index_arguments_and_info_modes_are_offered() {
    check(
        &in_main("par_loop flux over edges ($0"),
        &["idx"],
        &["INFO"],
    );
    // `idx[` offers the maps from the iteration set, whatever they reach.
    check(
        &in_main("par_loop flux over edges (idx[$0"),
        &["pedge", "pecell"],
        &["pcell"],
    );
    check(
        &in_main("par_loop flux over edges (idx $0"),
        &["READ"],
        &["WRITE", "INFO"],
    );
    check(
        &in_main("par_loop flux over edges (idx[pedge[1]] $0"),
        &["READ"],
        &["WRITE", "INC"],
    );
    check(
        &in_main("par_loop flux over edges (p_q READ, rms $0"),
        &["INFO", "MAX"],
        &["WRITE"],
    );
    check(
        &in_main("par_loop flux over edges (p_q READ, rms INFO($0"),
        &["rms"],
        &["p_q", "gam"],
    );
    let items = completions(&in_main("par_loop flux over edges (p_q READ, rms $0"));
    assert_eq!(
        item(&items, "INFO").insert_text.as_deref(),
        Some("INFO($1)")
    );
}

#[test]
fn kernel_bodies_offer_parameters_locals_consts_and_built_ins() {
    let fixture = format!(
        "{PRELUDE}kernel k(const double *a, double b[2]) {{\n    double t = 0.0;\n    for (int i = 0; i < 2; i++) {{\n        int inner = i;\n    }}\n    {{ int hidden; }}\n    b[0] = $0\n}}\n"
    );
    let items = check(
        &fixture,
        &[
            "a", "b", "t", "gam", "weights", "sqrt", "atan2", "for", "double", "if",
        ],
        &[
            "i", "inner", "hidden", "p_q", "rms", "pedge", "cells", "flux", "par_loop", "print",
        ],
    );
    assert_eq!(
        item(&items, "sqrt").insert_text.as_deref(),
        Some("sqrt($1)")
    );
    assert_eq!(
        item(&items, "sqrt").insert_text_format,
        Some(InsertTextFormat::SNIPPET)
    );
    assert_eq!(
        item(&items, "atan2").insert_text.as_deref(),
        Some("atan2($1, $2)")
    );
    assert_eq!(item(&items, "b").detail.as_deref(), Some("double[2]"));
    // Inside the loop its variable is in scope.
    let in_loop = format!(
        "{PRELUDE}kernel k(double *a) {{\n    for (int i = 0; i < 2; i++)\n        a[i] = $0\n}}\n"
    );
    check(&in_loop, &["i", "a"], &[]);
    // After an operand an operator comes; after a type, a new name.
    assert!(completions(&format!("{PRELUDE}kernel k(double *a) {{ a[0] = gam $0 }}")).is_empty());
    assert!(completions(&format!("{PRELUDE}kernel k(double *a) {{ double $0 }}")).is_empty());
    // After `if (…)` a statement.
    check(
        &format!("{PRELUDE}kernel k(double *a) {{ if (a[0] > 0) $0 }}"),
        &["a", "return"],
        &[],
    );
}

#[test]
fn kernel_statements_offer_print_and_printf_but_not_par_loop_or_exit() {
    let fixture =
        format!("{PRELUDE}kernel k(const double *a) {{\n    double t = a[0];\n    $0\n}}\n");
    let items = check(
        &fixture,
        &["print", "printf", "a", "t"],
        &["par_loop", "exit"],
    );
    assert_eq!(
        item(&items, "printf").insert_text.as_deref(),
        Some("printf(\"$1\", $2);")
    );
    // A kernel's print is classified as `main`'s: a keyword, a parameter.
    let text = "set cells;\ndat p_q: double on cells;\nkernel show(const double *q) {\n    printf(\"%g\\n\", q[0]);\n}\nmain {\n    par_loop show over cells (p_q READ);\n}\n";
    let data = with_context(
        "file:///kernel-print.op2",
        text,
        handlers::semantic_tokens::full,
    )
    .expect("tokens");
    let tokens = decode(text, &data.data);
    has_token(&tokens, "printf", "keyword", &[]);
    has_token(&tokens, "q", "parameter", &["readonly"]);
}

#[test]
fn main_offers_globals_consts_locals_and_snippets() {
    let fixture = format!("{PRELUDE}main {{\n    int iter = 0;\n    $0\n}}\n");
    let items = check(
        &fixture,
        &[
            "rms", "gam", "iter", "par_loop", "print", "printf", "exit", "fetch", "len", "sqrt",
            "while",
        ],
        &["p_q", "pedge", "nodes", "flux"],
    );
    assert_eq!(
        item(&items, "print").insert_text.as_deref(),
        Some("print(\"$1\", $2);")
    );
    assert_eq!(
        item(&items, "printf").insert_text.as_deref(),
        Some("printf(\"$1\", $2);")
    );
    assert_eq!(
        item(&items, "exit").insert_text.as_deref(),
        Some("exit(${1:1});")
    );
    assert_eq!(
        item(&items, "fetch").insert_text.as_deref(),
        Some("fetch ${1:dat} into ${2:global};")
    );
    assert!(
        item(&items, "par_loop")
            .insert_text
            .as_deref()
            .is_some_and(|s| s.starts_with("par_loop "))
    );
    // Inside an expression, no statements.
    check(
        &in_main("rms = $0"),
        &["rms", "gam", "len"],
        &["par_loop", "print", "printf", "exit", "fetch"],
    );
}

#[test]
fn fetch_offers_dats_then_globals() {
    let fixture = format!("{PRELUDE}global q: double[40];\nmain {{\n    fetch $0\n}}\n");
    check(
        &fixture,
        &["p_x", "p_q", "p_res"],
        &["rms", "q", "gam", "fetch", "len"],
    );
    let fixture = format!("{PRELUDE}global q: double[40];\nmain {{\n    fetch p_q into $0\n}}\n");
    check(&fixture, &["rms", "q"], &["p_q", "gam", "len"]);
    // Between the dat and `into`, nothing to offer.
    let fixture = format!("{PRELUDE}global q: double[40];\nmain {{\n    fetch p_q $0\n}}\n");
    assert!(completions(&fixture).is_empty());
    // A kernel has no `fetch`.
    check(
        &format!("{PRELUDE}kernel k(double *a) {{\n    $0\n}}\n"),
        &["a"],
        &["fetch"],
    );
    // The keyword and the names are classified.
    let text = "set nodes;\ndat p_u: double[2] on nodes;\nglobal u: double[8];\nmain {\n    fetch p_u into u;\n    print(\"%g\", u[0]);\n}\n";
    let data =
        with_context("file:///fetch.op2", text, handlers::semantic_tokens::full).expect("tokens");
    let tokens = decode(text, &data.data);
    has_token(&tokens, "fetch", "keyword", &[]);
    has_token(&tokens, "into", "keyword", &[]);
    has_token(&tokens, "p_u", "variable", &[]);
    has_token(&tokens, "u", "variable", &[]);
}

#[test]
fn top_level_offers_declaration_snippets() {
    let items = check(
        &format!("{PRELUDE}$0"),
        &[
            "set", "map", "dat", "const", "global", "kernel", "main", "import",
        ],
        &["p_q", "sqrt"],
    );
    assert_eq!(item(&items, "set").insert_text.as_deref(), Some("set $1;"));
    assert_eq!(
        item(&items, "map").insert_text.as_deref(),
        Some("map $1: $2 -> $3[$4];")
    );
    assert_eq!(
        item(&items, "dat").insert_text.as_deref(),
        Some("dat $1: double on $2;")
    );
    assert_eq!(
        item(&items, "kernel").insert_text.as_deref(),
        Some("kernel $1($2) {\n\t$0\n}")
    );
    assert_eq!(
        item(&items, "main").insert_text.as_deref(),
        Some("main {\n\t$0\n}")
    );
    // Inside declarations: types, sets.
    check(
        &format!("{PRELUDE}dat p_new: $0"),
        &["double", "int"],
        &["set"],
    );
    check(
        &format!("{PRELUDE}dat p_new: double on $0"),
        &["cells", "nodes"],
        &["p_q"],
    );
    check(
        &format!("{PRELUDE}map m: edges -> $0"),
        &["cells", "nodes"],
        &["p_q"],
    );
}

#[test]
fn completion_survives_syntax_errors_around_the_cursor() {
    // An unclosed kernel above, an unfinished statement, no closing brace.
    let fixture = format!(
        "{PRELUDE}kernel broken(double *a) {{\n    a[0] = \n\nmain {{\n    par_loop flux over edges (p_x[pedge[0]] READ, $0"
    );
    check(&fixture, &["p_q", "rms", "len"], &["pedge"]);
    let fixture = format!(
        "{PRELUDE}main {{\n    rms = ;\n    par_loop flux over $0\n    print(\"x\");\n}}\n"
    );
    check(&fixture, &["edges"], &["p_q"]);
    let fixture =
        format!("{PRELUDE}kernel k(double *a) {{\n    double t = a[0] +;\n    a[0] = t$0");
    check(&fixture, &["t", "a", "gam"], &["rms"]);
}

#[test]
fn nothing_in_comments_and_strings() {
    assert!(completions(&in_main("// par_loop flux over $0")).is_empty());
    assert!(completions(&in_main("/* par_loop $0 */")).is_empty());
    assert!(completions(&in_main("print(\"par_loop $0\");")).is_empty());
}

// ----------------------------------------------------------------------
// Signature help
// ----------------------------------------------------------------------

#[test]
fn signature_help_highlights_the_bound_parameter() {
    let help = |fixture: &str| {
        let (text, position) = cursor(fixture);
        with_context("file:///signature.op2", &text, |c| {
            handlers::signature_help::signature_help(c, position)
        })
    };
    let first = help(&in_main("par_loop flux over edges ($0")).expect("signature help");
    let signature = &first.signatures[0];
    assert_eq!(
        signature.label,
        "flux(const double *x1, const double *x2, const double *q, double res[4])"
    );
    assert_eq!(first.active_parameter, Some(0));
    let parameters = signature.parameters.as_ref().expect("parameters");
    assert_eq!(parameters.len(), 4);
    let third = help(&in_main(
        "par_loop flux over edges (p_x[pedge[0]] READ, p_x[pedge[1]] READ, p_q[pec$0",
    ))
    .expect("help");
    assert_eq!(third.active_parameter, Some(2));
    let fourth = help(&in_main("par_loop flux over edges (a, b, c,\n        $0);")).expect("help");
    assert_eq!(fourth.active_parameter, Some(3));
    let documentation = format!("{:?}", parameters[3].documentation);
    assert!(documentation.contains("dimension 4"), "{documentation}");
    assert!(format!("{:?}", parameters[0].documentation).contains("const"));
    // Too many arguments: no parameter; outside the list: no help.
    assert_eq!(
        help(&in_main("par_loop flux over edges (a, b, c, d, $0")).and_then(|h| h.active_parameter),
        None
    );
    assert!(help(&in_main("par_loop flux over edges (a, b, c, d);$0")).is_none());
    assert!(help(&in_main("rms = $0")).is_none());
}

// ----------------------------------------------------------------------
// Semantic tokens
// ----------------------------------------------------------------------

const TOKENS_PROGRAM: &str = "\
// a comment
const gam: double = 1.4;
set cells;
map self_map: cells -> cells[1];
dat p_q: double on cells;
global total: double;
kernel k(const double *q, double *t) {
    double s = sqrt(q[0]) * gam;
    *t += s;
}
main {
    par_loop k as step over cells (p_q[self_map[0]] READ, total INC);
}
";

/// Each token as (text, type, modifiers).
fn decode(text: &str, data: &[SemanticToken]) -> Vec<(String, String, Vec<String>)> {
    let legend = handlers::semantic_tokens::legend();
    let document = Document::new(text, 0);
    let (mut line, mut col) = (0, 0);
    let mut out = Vec::new();
    for token in data {
        line += token.delta_line;
        col = if token.delta_line == 0 {
            col + token.delta_start
        } else {
            token.delta_start
        };
        let start = document.offset(Position::new(line, col), PositionEncoding::Utf16);
        let end = document.offset(
            Position::new(line, col + token.length),
            PositionEncoding::Utf16,
        );
        let kind = legend.token_types[token.token_type as usize]
            .as_str()
            .to_owned();
        let modifiers = (0..legend.token_modifiers.len())
            .filter(|i| token.token_modifiers_bitset & (1 << i) != 0)
            .map(|i| legend.token_modifiers[i].as_str().to_owned())
            .collect();
        out.push((text[start..end].to_owned(), kind, modifiers));
    }
    out
}

#[track_caller]
fn has_token(tokens: &[(String, String, Vec<String>)], text: &str, kind: &str, modifiers: &[&str]) {
    let found = tokens.iter().any(|(t, k, m)| {
        t == text && k == kind && modifiers.iter().all(|x| m.iter().any(|y| y == x))
    });
    assert!(found, "no `{text}` as {kind} {modifiers:?} in {tokens:?}");
}

#[test]
fn semantic_tokens_classify_names_by_what_they_are() {
    let data = with_context(
        "file:///tokens.op2",
        TOKENS_PROGRAM,
        handlers::semantic_tokens::full,
    )
    .expect("tokens");
    let tokens = decode(TOKENS_PROGRAM, &data.data);
    has_token(&tokens, "// a comment", "comment", &[]);
    has_token(&tokens, "gam", "variable", &["declaration", "readonly"]);
    has_token(&tokens, "gam", "variable", &["readonly"]);
    has_token(&tokens, "cells", "type", &["declaration"]);
    has_token(&tokens, "cells", "type", &[]);
    has_token(&tokens, "self_map", "property", &["declaration"]);
    has_token(&tokens, "self_map", "property", &[]);
    has_token(&tokens, "p_q", "variable", &["declaration"]);
    has_token(&tokens, "total", "variable", &[]);
    has_token(&tokens, "k", "function", &["declaration"]);
    has_token(&tokens, "step", "function", &["declaration"]);
    has_token(&tokens, "q", "parameter", &["declaration", "readonly"]);
    has_token(&tokens, "t", "parameter", &[]);
    has_token(&tokens, "s", "variable", &["declaration"]);
    has_token(&tokens, "sqrt", "function", &["defaultLibrary"]);
    has_token(&tokens, "double", "type", &["defaultLibrary"]);
    has_token(&tokens, "READ", "enumMember", &[]);
    has_token(&tokens, "INC", "enumMember", &[]);
    has_token(&tokens, "1.4", "number", &[]);
    has_token(&tokens, "kernel", "keyword", &[]);
    has_token(&tokens, "par_loop", "keyword", &[]);
    has_token(&tokens, "+=", "operator", &[]);
    // `*` in `double *q` is an operator; punctuation is not a token.
    assert!(
        !tokens
            .iter()
            .any(|(t, _, _)| t == ";" || t == "(" || t == "{")
    );
}

#[test]
fn multi_line_comments_are_split_per_line_with_non_ascii_text() {
    let text = "/* é 😀\n   second */ set cells;\n";
    let data = with_context(
        "file:///tokens-multi.op2",
        text,
        handlers::semantic_tokens::full,
    )
    .expect("tokens");
    let tokens = decode(text, &data.data);
    assert_eq!(
        tokens[0],
        ("/* é 😀".to_owned(), "comment".to_owned(), vec![])
    );
    assert_eq!(
        tokens[1],
        ("   second */".to_owned(), "comment".to_owned(), vec![])
    );
    assert_eq!(tokens[2].0, "set");
}

#[test]
fn semantic_token_deltas_apply_to_the_previous_result() {
    let uri = "file:///tokens-delta.op2";
    let first = with_context(uri, TOKENS_PROGRAM, handlers::semantic_tokens::full).expect("tokens");
    let id = first.result_id.clone().expect("a result id");
    let changed = TOKENS_PROGRAM.replace(
        "double s = sqrt(q[0]) * gam;",
        "double s = q[0] * gam * 2.0;",
    );
    let delta =
        with_context(uri, &changed, |c| handlers::semantic_tokens::delta(c, &id)).expect("delta");
    let SemanticTokensFullDeltaResult::TokensDelta(delta) = delta else {
        panic!("expected edits, got {delta:?}")
    };
    assert_eq!(delta.edits.len(), 1);
    assert!(delta.edits[0].start > 0, "the unchanged start is kept");
    // Applying the edits to the old array gives the new tokens.
    let mut flat: Vec<u32> = first
        .data
        .iter()
        .flat_map(|t| {
            [
                t.delta_line,
                t.delta_start,
                t.length,
                t.token_type,
                t.token_modifiers_bitset,
            ]
        })
        .collect();
    for edit in delta.edits.iter().rev() {
        let inserted: Vec<u32> = edit
            .data
            .iter()
            .flatten()
            .flat_map(|t| {
                [
                    t.delta_line,
                    t.delta_start,
                    t.length,
                    t.token_type,
                    t.token_modifiers_bitset,
                ]
            })
            .collect();
        flat.splice(
            edit.start as usize..(edit.start + edit.delete_count) as usize,
            inserted,
        );
    }
    let fresh = with_context(
        "file:///tokens-delta-fresh.op2",
        &changed,
        handlers::semantic_tokens::full,
    )
    .expect("tokens");
    let expected: Vec<u32> = fresh
        .data
        .iter()
        .flat_map(|t| {
            [
                t.delta_line,
                t.delta_start,
                t.length,
                t.token_type,
                t.token_modifiers_bitset,
            ]
        })
        .collect();
    assert_eq!(flat, expected);
    // An unknown previous id gets whole tokens.
    let whole = with_context(uri, &changed, |c| {
        handlers::semantic_tokens::delta(c, "no-such-id")
    })
    .expect("tokens");
    assert!(matches!(whole, SemanticTokensFullDeltaResult::Tokens(_)));
}

// ----------------------------------------------------------------------
// Folding and selection ranges
// ----------------------------------------------------------------------

#[test]
fn folding_ranges_cover_bodies_lists_and_comments() {
    let text = "\
// one
// two
// three
set cells;
/* a block
   comment */
kernel k(
    double *a,
    double *b,
) {
    for (int i = 0; i < 2; i++) {
        a[i] = b[i];
    }
}
main {
    par_loop k over cells (
        p_a RW,
        p_b READ,
    );
}
";
    let ranges = with_context(
        "file:///folding.op2",
        text,
        handlers::folding::folding_ranges,
    )
    .expect("ranges");
    let found: Vec<(u32, u32, Option<FoldingRangeKind>)> = ranges
        .iter()
        .map(|r| (r.start_line, r.end_line, r.kind.clone()))
        .collect();
    for expected in [
        (0, 2, Some(FoldingRangeKind::Comment)),
        (4, 5, Some(FoldingRangeKind::Comment)),
        (6, 8, Some(FoldingRangeKind::Region)), // parameters, `)` stays visible
        (9, 12, Some(FoldingRangeKind::Region)), // the kernel body
        (10, 11, Some(FoldingRangeKind::Region)), // the loop body
        (14, 18, Some(FoldingRangeKind::Region)), // main
        (15, 17, Some(FoldingRangeKind::Region)), // the arguments
    ] {
        assert!(
            found.contains(&expected),
            "no fold {expected:?} in {found:?}"
        );
    }
    assert!(found.iter().all(|(start, end, _)| start < end));
}

#[test]
fn selection_ranges_grow_through_ancestors() {
    let (text, position) = cursor("kernel k(double *a) {\n    a[0] = a[0] + 1$0.0;\n}\n");
    let ranges = with_context("file:///selection.op2", &text, |c| {
        handlers::folding::selection_ranges(c, &[position])
    })
    .expect("ranges");
    assert_eq!(ranges.len(), 1);
    let mut chain = Vec::new();
    let mut current = Some(&ranges[0]);
    while let Some(range) = current {
        chain.push(range.range);
        current = range.parent.as_deref();
    }
    let document = Document::new(&text, 0);
    let slice = |r: Range| {
        text[document.offset(r.start, PositionEncoding::Utf16)
            ..document.offset(r.end, PositionEncoding::Utf16)]
            .to_owned()
    };
    let texts: Vec<String> = chain.iter().map(|r| slice(*r)).collect();
    assert_eq!(texts[0], "1.0");
    assert!(texts.contains(&"a[0] + 1.0".to_owned()), "{texts:?}");
    assert!(texts.contains(&"a[0] = a[0] + 1.0".to_owned()), "{texts:?}");
    assert_eq!(texts.last().map(String::as_str), Some(text.as_str()));
    // Each range holds the one before.
    for pair in texts.windows(2) {
        assert!(
            pair[1].contains(pair[0].as_str()) && pair[1].len() > pair[0].len(),
            "{pair:?}"
        );
    }
}

/// A chain of 20,000 terms after a syntax error nests 20,000 deep: the
/// answer keeps the innermost and the outermost ranges, at most
/// `MAX_SELECTION_LEVELS`, and serialises on a small stack (the whole chain
/// overflowed the server's stack in `serde_json`; fuzz campaign seed 1,
/// case 608063).
#[test]
fn selection_ranges_of_a_deep_chain_are_bounded() {
    let terms = "+x".repeat(20_000);
    let (text, position) = cursor(&format!("main {{ int y = (1)$0x{terms}; }}\n"));
    let ranges = with_context("file:///deep.op2", &text, |c| {
        handlers::folding::selection_ranges(c, &[position])
    })
    .expect("ranges");
    let mut chain = Vec::new();
    let mut current = Some(&ranges[0]);
    while let Some(range) = current {
        chain.push(range.range);
        current = range.parent.as_deref();
    }
    assert_eq!(chain.len(), handlers::folding::MAX_SELECTION_LEVELS);
    assert_eq!(
        chain[0].start, position,
        "the innermost is the node at the cursor"
    );
    let last = chain[chain.len() - 1];
    assert_eq!(
        (last.start.line, last.start.character),
        (0, 0),
        "the outermost is the file"
    );
    let serialised = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || serde_json::to_string(&ranges).map(|json| json.len()))
        .expect("a thread")
        .join()
        .expect("serialising does not overflow a small stack");
    assert!(serialised.is_ok_and(|len| len > 0));
}

// ----------------------------------------------------------------------
// Code actions
// ----------------------------------------------------------------------

/// Applies LSP edits to `text`.
fn apply(text: &str, edits: &[TextEdit]) -> String {
    let document = Document::new(text, 0);
    let mut edits: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            (
                document.offset(e.range.start, PositionEncoding::Utf16),
                document.offset(e.range.end, PositionEncoding::Utf16),
                e.new_text.as_str(),
            )
        })
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_owned();
    for (start, end, replacement) in edits {
        out.replace_range(start..end, replacement);
    }
    out
}

#[test]
#[allow(clippy::mutable_key_type)] // `WorkspaceEdit` keys changes by `Uri`.
fn quick_fixes_apply_the_diagnostic_fix() {
    let fixture = "set cells;\ndat p_r: double on cells;\nglobal total: double;\n\
        kernel k(double *r, double *t) { r[0] = $01.0; *t += r[0]; }\n\
        main {\n    par_loop k over cells (p_r READ, total INC);\n    print(\"%g\", total);\n}\n";
    let (text, position) = cursor(fixture);
    assert!(
        analysed(&text)
            .diagnostics
            .iter()
            .any(|d| d.code == op2_syntax::Code::E501)
    );
    let uri = "file:///actions.op2";
    let actions = with_context(uri, &text, |c| {
        handlers::code_actions::code_actions(
            c,
            Range {
                start: position,
                end: position,
            },
        )
    })
    .expect("actions");
    let actions: Vec<_> = actions
        .into_iter()
        .filter_map(|a| match a {
            CodeActionOrCommand::CodeAction(action) => Some(action),
            CodeActionOrCommand::Command(_) => None,
        })
        .collect();
    let fix = actions
        .iter()
        .find(|a| a.title.contains("`RW`"))
        .unwrap_or_else(|| panic!("no fix to RW in {actions:#?}"));
    assert_eq!(
        fix.kind,
        Some(tower_lsp_server::lsp_types::CodeActionKind::QUICKFIX)
    );
    assert_eq!(fix.is_preferred, Some(true));
    let attached = fix
        .diagnostics
        .as_ref()
        .expect("the diagnostic is attached");
    assert!(
        attached
            .iter()
            .any(|d| format!("{:?}", d.code).contains("E501")),
        "{attached:?}"
    );
    let changes = fix
        .edit
        .as_ref()
        .and_then(|e| e.changes.as_ref())
        .expect("changes");
    let edits = changes
        .get(&uri.parse::<Uri>().expect("uri"))
        .expect("edits for this document");
    let fixed = apply(&text, edits);
    assert!(fixed.contains("(p_r RW, total INC)"), "{fixed}");
    assert!(
        !analysed(&fixed)
            .diagnostics
            .iter()
            .any(|d| d.code == op2_syntax::Code::E501),
        "{fixed}"
    );
    // Far from any diagnostic with a fix: nothing.
    let none = with_context(uri, &text, |c| {
        handlers::code_actions::code_actions(
            c,
            Range {
                start: Position::new(0, 0),
                end: Position::new(0, 1),
            },
        )
    });
    assert_eq!(none.map(|a| a.len()), Some(0));
}

/// Issue #12: a code action request converted every diagnostic of the
/// document to its published form and only then kept those over the
/// requested range, so each request (editors send one on every move of the
/// cursor) cost the whole document's diagnostics: 4 s for a range of a few
/// characters among 50,000 diagnostics, in the debug build. Now the
/// diagnostics over the range are found in an index kept with the
/// analysis, and only they are converted. Counted, not timed: the requests
/// below convert exactly the diagnostics they answer with, where the old
/// code converted all 20,000 on each; and their answers are the old ones.
#[test]
#[allow(clippy::mutable_key_type)] // `WorkspaceEdit` keys changes by `Uri`.
fn quick_fixes_convert_only_the_diagnostics_over_the_range() {
    const STATEMENTS: usize = 20_000;
    // Each statement misspells a name: one diagnostic (E101) with a fix
    // per line.
    let text = format!(
        "main {{\n    double total = 0.0;\n{}}}\n",
        "    total = totl + 1.0;\n".repeat(STATEMENTS)
    );
    let uri = "file:///many-fixes.op2";
    let analysed = analysed(&text);
    let mine: Vec<&op2_syntax::Diagnostic> = analysed
        .diagnostics
        .iter()
        .filter(|d| d.location.file == op2_syntax::FileId::MAIN)
        .collect();
    let fixable = mine.iter().filter(|d| !d.fixes.is_empty()).count();
    assert!(fixable >= STATEMENTS, "{fixable} diagnostics with fixes");
    with_analysed(&analysed, uri, |c| {
        // What the old code answered: the published form of each
        // diagnostic, and its fixes when it overlaps the range.
        // (Every one: what is published stops at `PUBLISHED_LIMIT`.)
        let converter = handlers::diagnostics::Converter::new(c.analysed, c.uri, c.encoding);
        let published: Vec<_> = mine.iter().map(|d| converter.convert(d)).collect();
        let mut answered = 0;
        for line in (2..STATEMENTS as u32 + 2).step_by(97) {
            let range = Range {
                start: Position::new(line, 4),
                end: Position::new(line + 1, 0),
            };
            let (start, end) = (c.offset(range.start), c.offset(range.end));
            let expected: Vec<_> = mine
                .iter()
                .zip(&published)
                .filter(|(d, _)| d.location.range.start <= end && start <= d.location.range.end)
                .flat_map(|(d, p)| d.fixes.iter().map(move |f| (f.title.clone(), p.clone())))
                .collect();
            let converted_before = handlers::diagnostics::converted_on_this_thread();
            let actions = handlers::code_actions::code_actions(c, range).expect("actions");
            let converted = handlers::diagnostics::converted_on_this_thread() - converted_before;
            let found: Vec<_> = actions
                .into_iter()
                .map(|a| match a {
                    CodeActionOrCommand::CodeAction(action) => {
                        let attached = action.diagnostics.expect("a diagnostic");
                        assert_eq!(attached.len(), 1);
                        (action.title, attached[0].clone())
                    }
                    CodeActionOrCommand::Command(command) => panic!("{command:?}"),
                })
                .collect();
            assert!(!expected.is_empty(), "line {line}: no fix to offer");
            assert_eq!(found, expected, "line {line}");
            // One conversion per diagnostic answered, none for the others.
            assert!(
                converted as usize <= expected.len(),
                "line {line}: {converted} diagnostics converted for {} actions",
                expected.len()
            );
            answered += 1;
        }
        assert!(answered > 200, "{answered} requests");
    });
}

// ----------------------------------------------------------------------
// Formatting
// ----------------------------------------------------------------------

#[test]
fn formatting_replaces_the_whole_document_once() {
    let messy =
        "set   cells ;\n\n\n\ndat p:double on cells;// trailing\nkernel k(double*a){a[0]=1;}\n";
    let edits = with_context(
        "file:///format.op2",
        messy,
        handlers::formatting::formatting,
    )
    .expect("edits");
    assert_eq!(edits.len(), 1);
    let formatted = apply(messy, &edits);
    assert_eq!(
        formatted,
        "set cells;\n\ndat p: double on cells; // trailing\nkernel k(double *a) {\n    a[0] = 1;\n}\n"
    );
    // Formatted already: no edit. Syntax errors: nothing.
    assert_eq!(
        with_context(
            "file:///format.op2",
            &formatted,
            handlers::formatting::formatting
        ),
        Some(Vec::new())
    );
    assert_eq!(
        with_context(
            "file:///format.op2",
            "set cells",
            handlers::formatting::formatting
        ),
        None
    );
}

#[test]
fn formatting_answers_from_the_parse_the_document_has() {
    // A valid but untidy text whose parse, made with a small allowance,
    // gave up: the document reports E002, and formatting does not parse it
    // again with a larger one; it leaves the text alone.
    let messy = "set   cells ;\n".repeat(2000);
    let mut open = OpenDocument::with_limit(&messy, 1, ParseLimit::Checks(3));
    let document = open.parsed();
    assert!(document.parse().stopped_at().is_some(), "the parse gave up");
    let gave_up = analyse(document, None, &Mutex::default(), &Overlay::default());
    let answer = with_analysed(
        &gave_up,
        "file:///format.op2",
        handlers::formatting::formatting,
    );
    assert!(answer.is_none(), "formatted a document whose parse gave up");
    // The same text parsed whole is formatted.
    let edits = with_context(
        "file:///format.op2",
        &messy,
        handlers::formatting::formatting,
    )
    .expect("edits");
    assert_eq!(apply(&messy, &edits), "set cells;\n".repeat(2000));
}

// ----------------------------------------------------------------------
// Work linear in the document (issue #12; an audit measured each of these
// quadratic: docs/reliability.md, "Costs that were superlinear")
// ----------------------------------------------------------------------

/// The items a call examines on this thread (`op2_lsp::work`).
fn work_of<T>(f: impl FnOnce() -> T) -> (u64, T) {
    let before = op2_lsp::work::on_this_thread();
    let out = f();
    (op2_lsp::work::on_this_thread() - before, out)
}

/// Asserts that the work at twice the size is at most 2.2 times the work
/// at the size: linear, with room for fixed costs.
fn assert_linear(what: &str, small: u64, large: u64) {
    assert!(small > 0, "{what}: no work counted");
    assert!(
        large * 10 <= small * 22,
        "{what}: {small} items at n and {large} at 2n"
    );
}

#[test]
fn folding_ranges_are_linear_in_the_document() {
    // Kernels of three lines (every body folds), and the same on one line
    // (nothing folds, and every node shares the line).
    let lines = |n: usize| {
        (0..n)
            .map(|i| format!("kernel k{i}(double *a) {{\n    a[0] = 1.0;\n}}\n"))
            .collect::<String>()
    };
    let one_line = |n: usize| {
        (0..n)
            .map(|i| format!("kernel k{i}(double *a) {{ a[0] = 1.0; }} "))
            .collect::<String>()
    };
    for (what, make) in [
        ("kernels on lines", &lines as &dyn Fn(usize) -> String),
        ("kernels on one line", &one_line),
    ] {
        let [small, large] = [2_000, 4_000].map(|n| {
            let analysed = analysed(&make(n));
            let (work, ranges) = work_of(|| {
                with_analysed(
                    &analysed,
                    "file:///fold.op2",
                    handlers::folding::folding_ranges,
                )
            });
            let ranges = ranges.expect("ranges");
            if what == "kernels on lines" {
                assert_eq!(ranges.len(), n, "a fold per kernel body");
            } else {
                assert!(ranges.is_empty(), "{ranges:?}");
            }
            work
        });
        assert_linear(what, small, large);
    }
}

/// At most `MAX_SELECTION_POSITIONS` positions of a request get their
/// chains (each costs up to 128 ranges of answer, a repeat too, and a
/// distinct one a descent of the tree); the rest get an empty range at the
/// position, and a position asked twice gets the same answer.
#[test]
fn selection_ranges_are_bounded_per_request() {
    let statements: String = (0..3_000).map(|i| format!("int v{i} = {i};\n")).collect();
    let text = format!("main {{\n{statements}}}\n");
    let mut positions: Vec<Position> = (1..=3_000).map(|line| Position::new(line, 5)).collect();
    // A repeat within the limit, and the same position many times past it.
    positions.insert(1, Position::new(1, 5));
    positions.extend(std::iter::repeat_n(Position::new(1, 5), 5_000));
    let ranges = with_context("file:///selection.op2", &text, |c| {
        handlers::folding::selection_ranges(c, &positions)
    })
    .expect("ranges");
    assert_eq!(ranges.len(), positions.len(), "an answer per position");
    let limit = handlers::folding::MAX_SELECTION_POSITIONS;
    let chained = ranges.iter().filter(|r| r.parent.is_some()).count();
    assert_eq!(chained, limit, "the limit's positions, a repeat among them");
    assert_eq!(ranges[0], ranges[1], "a repeat is the same");
    for (range, position) in ranges.iter().zip(&positions).skip(limit) {
        assert_eq!(range.parent, None);
        assert_eq!((range.range.start, range.range.end), (*position, *position));
    }
}

#[test]
fn completion_is_linear_in_the_variables_in_scope() {
    let [small, large] = [5_000, 10_000].map(|n| {
        let locals: String = (0..n).map(|i| format!("double x_{i} = 0.0;\n")).collect();
        let (text, position) = cursor(&format!("main {{\n{locals}x$0\n}}\n"));
        let analysed = analysed(&text);
        let (work, items) = work_of(|| {
            with_analysed(&analysed, "file:///complete.op2", |c| {
                handlers::completion::completion(c, position)
            })
        });
        assert!(items.is_some(), "completion answers");
        work
    });
    assert_linear("completion of n locals", small, large);
}
