//! `textDocument/semanticTokens/full` and `…/full/delta`: every token of
//! the document classified with the tree and the semantic model (sets as
//! types, maps as properties, consts read-only, built-ins from the default
//! library, …).
//!
//! A delta answer needs the previous answer: the last result of each
//! document is kept in a small cache keyed by URI, and the delta is the
//! common prefix and suffix of the two token arrays with one edit between.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use op2_analysis::Program;
use op2_analysis::model::Symbol;
use op2_syntax::ast::BUILTINS;
use op2_syntax::tree_sitter::Node;
use op2_syntax::{LineIndex, TextRange};
use tower_lsp_server::lsp_types::{
    SemanticToken, SemanticTokenModifier, SemanticTokenType, SemanticTokens, SemanticTokensDelta,
    SemanticTokensEdit, SemanticTokensFullDeltaResult, SemanticTokensLegend,
};

use super::Context;

/// Token types, in legend order.
const TYPES: [SemanticTokenType; 11] = [
    SemanticTokenType::TYPE,
    SemanticTokenType::PARAMETER,
    SemanticTokenType::VARIABLE,
    SemanticTokenType::PROPERTY,
    SemanticTokenType::FUNCTION,
    SemanticTokenType::KEYWORD,
    SemanticTokenType::NUMBER,
    SemanticTokenType::STRING,
    SemanticTokenType::COMMENT,
    SemanticTokenType::OPERATOR,
    SemanticTokenType::ENUM_MEMBER,
];

/// A token type: its index in [`TYPES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// Sets and scalar types.
    Type = 0,
    /// Kernel parameters.
    Parameter,
    /// Dats, globals, consts and locals.
    Variable,
    /// Maps.
    Property,
    /// Kernels, built-ins and invocation names.
    Function,
    /// Keywords.
    Keyword,
    /// Numeric literals.
    Number,
    /// String literals.
    String,
    /// Comments.
    Comment,
    /// Operators.
    Operator,
    /// Access modes.
    EnumMember,
}

/// Token modifiers, in legend order: bit `i` is `MODIFIERS[i]`.
const MODIFIERS: [SemanticTokenModifier; 3] = [
    SemanticTokenModifier::DECLARATION,
    SemanticTokenModifier::READONLY,
    SemanticTokenModifier::DEFAULT_LIBRARY,
];

/// The name is declared here.
pub const DECLARATION: u32 = 1;
/// The value never changes (consts, `const` parameters and locals).
pub const READONLY: u32 = 2;
/// Part of the language (built-in functions and scalar types).
pub const DEFAULT_LIBRARY: u32 = 4;

/// The legend the server announces.
pub fn legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: TYPES.to_vec(),
        token_modifiers: MODIFIERS.to_vec(),
    }
}

/// One classified token, by byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classified {
    /// Where.
    pub range: TextRange,
    /// What.
    pub kind: Kind,
    /// Bits of [`DECLARATION`], [`READONLY`], [`DEFAULT_LIBRARY`].
    pub modifiers: u32,
}

const KEYWORDS: &[&str] = &[
    "set", "map", "dat", "const", "global", "kernel", "main", "par_loop", "over", "as", "on",
    "import", "len", "print", "printf", "exit", "fetch", "if", "else", "for", "while", "do",
    "break", "continue", "return", "true", "false", "switch", "case", "default", "goto", "struct",
    "into",
];

const OPERATORS: &[&str] = &[
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "||", "&&", "|", "^", "&",
    "==", "!=", "<", "<=", ">", ">=", "<<", ">>", "+", "-", "*", "/", "%", "!", "~", "++", "--",
    "->",
];

/// Names of one kernel or `main`: parameters and locals, with constness.
#[derive(Default)]
struct Scope {
    parameters: HashMap<String, bool>,
    locals: HashMap<String, bool>,
}

impl Scope {
    fn of(function: Node<'_>, text: &str) -> Scope {
        let mut scope = Scope::default();
        // Each node with its parent: tree-sitter's `parent` descends from
        // the root on every call (and recurses per level for an empty node).
        let mut stack = vec![(function, None::<Node<'_>>)];
        while let Some((node, parent)) = stack.pop() {
            match node.kind() {
                "parameter" => {
                    if let Some(name) = node.child_by_field_name("name") {
                        scope.parameters.insert(
                            text[name.byte_range()].to_owned(),
                            node.child_by_field_name("const").is_some(),
                        );
                    }
                }
                "variable_declarator" => {
                    if let Some(name) = node.child_by_field_name("name") {
                        let constant = parent
                            .and_then(|d| d.child_by_field_name("const"))
                            .is_some();
                        scope
                            .locals
                            .insert(text[name.byte_range()].to_owned(), constant);
                    }
                }
                _ => {}
            }
            let mut cursor = node.walk();
            stack.extend(
                node.named_children(&mut cursor)
                    .map(|child| (child, Some(node))),
            );
        }
        scope
    }
}

/// A node to classify, with what its classification needs to know of its
/// ancestors.
struct Visit<'t> {
    node: Node<'t>,
    parent: Option<Node<'t>>,
    grandparent: Option<Node<'t>>,
    /// The field `node` fills in `parent`.
    field: Option<&'t str>,
    /// The index of its kernel's or main's scope.
    scope: Option<usize>,
}

/// Classifies every token of the tree, in order. The walk keeps its own
/// stack, and each node's parent: a deeply nested file must not overflow
/// the thread's, and tree-sitter's `parent` would descend from the root for
/// every name (recursing once per level for an empty one).
pub fn classify(root: Node<'_>, text: &str, program: &Program) -> Vec<Classified> {
    let mut out = Vec::new();
    let mut scopes: Vec<Scope> = Vec::new();
    let mut stack: Vec<Visit<'_>> = vec![Visit {
        node: root,
        parent: None,
        grandparent: None,
        field: None,
        scope: None,
    }];
    while let Some(visit) = stack.pop() {
        let Visit { node, scope, .. } = visit;
        let classified = match node.kind() {
            "comment" => Some((Kind::Comment, 0)),
            "string_literal" => Some((Kind::String, 0)),
            "integer_literal" | "float_literal" => Some((Kind::Number, 0)),
            "primitive_type" => Some((Kind::Type, DEFAULT_LIBRARY)),
            "access_mode" | "INFO" => Some((Kind::EnumMember, 0)),
            "index_argument" => Some((Kind::Keyword, 0)),
            "boolean_literal" | "const_qualifier" => Some((Kind::Keyword, 0)),
            "identifier" => identifier(&visit, text, program, scope.map(|i| &scopes[i])),
            kind if node.child_count() == 0 => {
                let ternary = matches!(kind, "?" | ":")
                    && visit
                        .parent
                        .is_some_and(|p| p.kind() == "conditional_expression");
                if KEYWORDS.contains(&kind) {
                    Some((Kind::Keyword, 0))
                } else if OPERATORS.contains(&kind) || ternary {
                    Some((Kind::Operator, 0))
                } else {
                    None
                }
            }
            kind => {
                let scope = if matches!(kind, "kernel_definition" | "main_definition") {
                    scopes.push(Scope::of(node, text));
                    Some(scopes.len() - 1)
                } else {
                    scope
                };
                let start = stack.len();
                let mut cursor = node.walk();
                if cursor.goto_first_child() {
                    loop {
                        stack.push(Visit {
                            node: cursor.node(),
                            parent: Some(node),
                            grandparent: visit.parent,
                            field: cursor.field_name(),
                            scope,
                        });
                        if !cursor.goto_next_sibling() {
                            break;
                        }
                    }
                }
                stack[start..].reverse();
                continue;
            }
        };
        if let Some((kind, modifiers)) = classified {
            out.push(Classified {
                range: node.byte_range().into(),
                kind,
                modifiers,
            });
        }
    }
    out
}

fn symbol_kind(symbol: Symbol) -> (Kind, u32) {
    match symbol {
        Symbol::Set(_) => (Kind::Type, 0),
        Symbol::Map(_) => (Kind::Property, 0),
        Symbol::Dat(_) | Symbol::Global(_) => (Kind::Variable, 0),
        Symbol::Const(_) => (Kind::Variable, READONLY),
        Symbol::Kernel(_) => (Kind::Function, 0),
    }
}

fn identifier(
    visit: &Visit<'_>,
    text: &str,
    program: &Program,
    scope: Option<&Scope>,
) -> Option<(Kind, u32)> {
    let name = &text[visit.node.byte_range()];
    let parent = visit.parent?;
    let field = visit.field;
    let readonly = |constant: bool| if constant { READONLY } else { 0 };
    Some(match (parent.kind(), field) {
        ("set_declaration", Some("name")) => (Kind::Type, DECLARATION),
        ("map_declaration", Some("name")) => (Kind::Property, DECLARATION),
        (
            "map_declaration" | "dat_declaration" | "par_loop_statement" | "len_expression",
            Some("from" | "to" | "set"),
        ) => (Kind::Type, 0),
        ("dat_declaration" | "global_declaration", Some("name")) => (Kind::Variable, DECLARATION),
        ("const_declaration", Some("name")) => (Kind::Variable, DECLARATION | READONLY),
        ("kernel_definition", Some("name")) => (Kind::Function, DECLARATION),
        ("parameter", Some("name")) => (
            Kind::Parameter,
            DECLARATION | readonly(parent.child_by_field_name("const").is_some()),
        ),
        ("variable_declarator", Some("name")) => {
            let constant = visit
                .grandparent
                .and_then(|d| d.child_by_field_name("const"))
                .is_some();
            (Kind::Variable, DECLARATION | readonly(constant))
        }
        ("par_loop_statement", Some("kernel")) => (Kind::Function, 0),
        ("par_loop_statement", Some("alias")) => (Kind::Function, DECLARATION),
        ("par_loop_argument", Some("map")) => (Kind::Property, 0),
        // Arguments name top-level data, whatever the locals of `main`.
        ("par_loop_argument", Some("data")) => symbol_kind(program.lookup(name)?),
        // So does `fetch`: a dat and a global.
        ("fetch_statement", Some("dat" | "global")) => symbol_kind(program.lookup(name)?),
        ("call_expression", Some("function")) if BUILTINS.contains(&name) => {
            (Kind::Function, DEFAULT_LIBRARY)
        }
        ("call_expression", Some("function")) => (Kind::Function, 0),
        ("goto_statement" | "struct_specifier", _) => return None,
        _ => {
            if let Some(scope) = scope {
                if let Some(&constant) = scope.locals.get(name) {
                    return Some((Kind::Variable, readonly(constant)));
                }
                if let Some(&constant) = scope.parameters.get(name) {
                    return Some((Kind::Parameter, readonly(constant)));
                }
            }
            symbol_kind(program.lookup(name)?)
        }
    })
}

/// The tokens in LSP's relative encoding; a token that spans lines (a block
/// comment) is split at line ends.
fn encode(tokens: &[Classified], text: &str, context: &Context<'_>) -> Vec<SemanticToken> {
    let index = LineIndex::new(text);
    let encoding = context.encoding.line_index_encoding();
    let mut out = Vec::with_capacity(tokens.len());
    let (mut last_line, mut last_col) = (0, 0);
    for token in tokens {
        let mut start = token.range.start;
        let end = token.range.end;
        while start < end {
            let at = index.line_col(start, encoding);
            let line_end = index.line_end(at.line).map_or(end, |e| e.min(end));
            // Skip the line break itself, and empty pieces.
            if line_end > start {
                let end_at = index.line_col(line_end, encoding);
                let delta_line = at.line - last_line;
                let delta_start = if delta_line == 0 {
                    at.col - last_col
                } else {
                    at.col
                };
                out.push(SemanticToken {
                    delta_line,
                    delta_start,
                    length: end_at.col - at.col,
                    token_type: token.kind as u32,
                    token_modifiers_bitset: token.modifiers,
                });
                (last_line, last_col) = (at.line, at.col);
            }
            match index.line_start(at.line + 1) {
                Some(next) if next > start && next < end => start = next,
                _ => break,
            }
        }
    }
    out
}

/// A result: its id and tokens.
type Remembered = (String, Vec<SemanticToken>);

/// The last result per document, by URI.
static PREVIOUS: LazyLock<Mutex<HashMap<String, Remembered>>> = LazyLock::new(Mutex::default);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Most documents remembered; beyond it the cache starts afresh (a client
/// then gets whole results until it asks again).
const REMEMBERED: usize = 64;

fn tokens_of(context: &Context<'_>) -> Vec<SemanticToken> {
    let analysed = context.analysed;
    let parse = analysed.document.parse();
    let classified = classify(
        parse.tree().root_node(),
        parse.text(),
        &analysed.analysis.program,
    );
    encode(&classified, parse.text(), context)
}

fn remember(context: &Context<'_>, data: &[SemanticToken]) -> String {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed).to_string();
    let mut previous = PREVIOUS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if previous.len() >= REMEMBERED && !previous.contains_key(context.uri.as_str()) {
        previous.clear();
    }
    previous.insert(context.uri.as_str().to_owned(), (id.clone(), data.to_vec()));
    id
}

/// Drops what is remembered of a document that was closed.
pub fn forget(uri: &str) {
    PREVIOUS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(uri);
}

/// Every token of the document.
pub fn full(context: &Context<'_>) -> Option<SemanticTokens> {
    let data = tokens_of(context);
    let id = remember(context, &data);
    Some(SemanticTokens {
        result_id: Some(id),
        data,
    })
}

/// The tokens as edits of the result `previous`, or whole when that result
/// is not the one remembered.
pub fn delta(context: &Context<'_>, previous: &str) -> Option<SemanticTokensFullDeltaResult> {
    let data = tokens_of(context);
    let old = {
        let cache = PREVIOUS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .get(context.uri.as_str())
            .filter(|(id, _)| id == previous)
            .map(|(_, tokens)| tokens.clone())
    };
    let id = remember(context, &data);
    let Some(old) = old else {
        return Some(SemanticTokensFullDeltaResult::Tokens(SemanticTokens {
            result_id: Some(id),
            data,
        }));
    };
    Some(SemanticTokensFullDeltaResult::TokensDelta(
        SemanticTokensDelta {
            result_id: Some(id),
            edits: diff(&old, &data),
        },
    ))
}

/// One edit turning `old` into `new`: what lies between their common prefix
/// and common suffix. Positions count integers (five per token).
pub fn diff(old: &[SemanticToken], new: &[SemanticToken]) -> Vec<SemanticTokensEdit> {
    let (prefix, suffix) = crate::slices::common_ends(old, new);
    if prefix == old.len() && prefix == new.len() {
        return Vec::new();
    }
    let to_u32 = |n: usize| u32::try_from(n * 5).unwrap_or(u32::MAX);
    let inserted = &new[prefix..new.len() - suffix];
    vec![SemanticTokensEdit {
        start: to_u32(prefix),
        delete_count: to_u32(old.len() - suffix - prefix),
        data: (!inserted.is_empty()).then(|| inserted.to_vec()),
    }]
}
