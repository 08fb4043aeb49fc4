//! Syntax diagnostics (E001): what the parser could not read, and the C
//! constructs the language leaves out, each named in its message.

use tree_sitter::{Node, Tree};

use crate::ast::{BUILTINS, NodeText, language};
use crate::diagnostic::{Code, Diagnostic, FileId, Location};
use crate::text::TextRange;

/// Most candidates listed in an "expected …" message before it is left out
/// as unhelpful.
const MAX_EXPECTED: usize = 6;

/// C type words users write out of habit, which the language spells otherwise.
const C_TYPE_WORDS: &[&str] = &[
    "unsigned", "signed", "long", "short", "char", "void", "size_t",
];

pub(crate) fn syntax_errors(tree: &Tree, text: &str, file: FileId) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    let mut visit_children = true;
    loop {
        let node = cursor.node();
        if visit_children {
            // Report, then decide whether to look inside.
            let descend = check_node(node, text, file, &mut out);
            if descend && cursor.goto_first_child() {
                continue;
            }
        }
        if cursor.goto_next_sibling() {
            visit_children = true;
            continue;
        }
        if !cursor.goto_parent() {
            break;
        }
        visit_children = false;
    }
    out
}

fn location(file: FileId, range: TextRange) -> Location {
    Location { file, range }
}

/// Reports `node` if it is wrong; returns whether its children need a look.
fn check_node(node: Node<'_>, text: &str, file: FileId, out: &mut Vec<Diagnostic>) -> bool {
    let mut report = |range: TextRange, message: String| {
        out.push(Diagnostic::new(Code::E001, location(file, range), message));
    };
    if node.is_missing() {
        let at = missing_position(node);
        report(
            TextRange::empty(at),
            format!("expected {}", describe_kind(node.kind(), node.is_named())),
        );
        return false;
    }
    if node.is_error() {
        let (range, message) = describe_error(node, text);
        report(range, message);
        return false;
    }
    match node.kind() {
        "switch_statement" => {
            report(keyword_range(node), "`switch` is not supported; use `if` and `else if`".into());
            // Its `case` labels are part of the same mistake.
            return false;
        }
        "case_label" => {
            report(node.text_range(), "`case` labels are not supported outside `switch`, which is not supported either".into())
        }
        "goto_statement" => report(keyword_range(node), "`goto` is not supported; use loops with `break` and `continue`".into()),
        "struct_specifier" => {
            report(keyword_range(node), "`struct` is not supported; declare each member as a local variable".into());
            return false;
        }
        "pointer_marker" => report(
            node.text_range(),
            "pointer declarations are not supported in kernel bodies; index a parameter instead (`p[i]`)".into(),
        ),
        "unary_expression" => {
            if node.child_by_field_name("operator").is_some_and(|op| op.kind() == "&") {
                report(
                    node.child_by_field_name("operator").map_or(node.text_range(), |op| op.text_range()),
                    "taking an address with `&` is not supported; kernels work on their parameters directly".into(),
                );
            }
        }
        "call_expression" => {
            if let Some(function) = node.child_by_field_name("function") {
                let name = function.text(text);
                if !BUILTINS.contains(&name) {
                    report(
                        function.text_range(),
                        format!("call to `{name}` is not supported; kernels may call only the built-in math functions"),
                    );
                }
            }
        }
        "return_statement" => {
            if let Some(value) = node.child_by_field_name("value") {
                report(value.text_range(), "`return` takes no value here; kernels and `main` return nothing".into());
            }
        }
        _ => {}
    }
    true
}

fn keyword_range(node: Node<'_>) -> TextRange {
    node.child(0)
        .map_or_else(|| node.text_range(), |keyword| keyword.text_range())
}

/// A MISSING node sits where the parser invented it; report it just after
/// the token before it, where rustc would point.
fn missing_position(node: Node<'_>) -> u32 {
    let mut current = node;
    loop {
        if let Some(previous) = current.prev_sibling() {
            return previous.text_range().end;
        }
        match current.parent() {
            Some(parent) => current = parent,
            None => return node.text_range().start,
        }
    }
}

fn describe_kind(kind: &str, named: bool) -> String {
    if named {
        match kind {
            "identifier" => "a name".into(),
            "integer_literal" => "an integer".into(),
            "float_literal" => "a number".into(),
            "string_literal" => "a string".into(),
            "primitive_type" => "a type".into(),
            "access_mode" => "an access mode (`READ`, `WRITE`, `RW`, `INC`, `MIN` or `MAX`)".into(),
            "compound_statement" => "a block `{ … }`".into(),
            "parenthesized_expression" => "`(`".into(),
            _ if kind.ends_with("_expression") || kind == "_expression" => "an expression".into(),
            _ if kind.ends_with("_statement") || kind == "_statement" => "a statement".into(),
            _ => kind.replace('_', " "),
        }
    } else {
        format!("`{kind}`")
    }
}

/// The first leaf of an ERROR node: the token the parser could not place.
fn first_leaf(node: Node<'_>) -> Node<'_> {
    let mut current = node;
    while let Some(child) = current.child(0) {
        current = child;
    }
    current
}

fn describe_error(node: Node<'_>, text: &str) -> (TextRange, String) {
    let leaf = first_leaf(node);
    let token = leaf.text(text);
    let range = if leaf.text_range().is_empty() {
        node.text_range()
    } else {
        leaf.text_range()
    };

    if C_TYPE_WORDS.contains(&token) {
        return (
            range,
            format!(
                "C type `{token}` is not supported; use `double`, `float`, `int`, `uint`, `ll`, `ull` or `bool`"
            ),
        );
    }
    match token {
        "sizeof" => return (range, "`sizeof` is not supported".into()),
        "typedef" => return (range, "`typedef` is not supported".into()),
        "->" | "." => {
            return (
                range,
                format!(
                    "member access with `{token}` is not supported; structs are not part of the language"
                ),
            );
        }
        _ => {}
    }

    let found = if token.is_empty() {
        "end of file".to_owned()
    } else {
        format!("`{}`", shorten(token))
    };
    match expected_tokens(node) {
        Some(expected) if !expected.is_empty() => (
            range,
            format!("expected {}, found {found}", join_alternatives(&expected)),
        ),
        _ => (range, format!("unexpected {found}")),
    }
}

fn shorten(token: &str) -> String {
    let line = token.lines().next().unwrap_or("");
    if line.chars().count() > 24 {
        let short: String = line.chars().take(24).collect();
        format!("{short}…")
    } else {
        line.to_owned()
    }
}

/// The tokens the parser would have accepted where the error starts, when
/// there are few enough to be useful.
fn expected_tokens(error: Node<'_>) -> Option<Vec<String>> {
    let previous = error.prev_sibling()?;
    let state = previous.next_parse_state();
    let language = language();
    let lookahead = language.lookahead_iterator(state)?;
    let mut names: Vec<String> = Vec::new();
    for symbol in lookahead {
        let Some(name) = language.node_kind_for_id(symbol) else {
            continue;
        };
        if name.starts_with('_') || matches!(name, "ERROR" | "comment" | "end" | "") {
            continue;
        }
        let named = language.node_kind_is_named(symbol);
        let described = describe_kind(name, named);
        if !names.contains(&described) {
            names.push(described);
        }
        if names.len() > MAX_EXPECTED {
            return None;
        }
    }
    Some(names)
}

fn join_alternatives(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("one of {} or {last}", init.join(", ")),
    }
}
