//! Completion and signature help: what may be typed where.
//!
//! While typing, the statement around the cursor is almost never complete,
//! and how tree-sitter recovers from it varies with the rest of the text. So
//! the context comes from the text before the cursor, read by a small lexer:
//! which item the cursor is in (a kernel, `main`, the top level), which
//! statement, and how far that statement has got. The tree says whether the
//! cursor is in a comment or a string; the semantic model supplies the
//! declared names, their kinds, sets, maps and kernel signatures.

use op2_analysis::Program;
use op2_analysis::hir::Builtin;
use op2_analysis::model::{ElementType, Kernel, Param, Symbol};
use op2_syntax::Parse;
use op2_syntax::ast::{AccessMode, BUILTINS};

/// What a completion inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompletionKind {
    /// A keyword.
    Keyword,
    /// A template with placeholders.
    Snippet,
    /// A scalar type.
    Type,
    /// A set.
    Set,
    /// A map.
    Map,
    /// A dat.
    Dat,
    /// A const.
    Const,
    /// A mutable global.
    Global,
    /// A kernel.
    Kernel,
    /// A kernel parameter.
    Parameter,
    /// A local variable.
    Local,
    /// A built-in function.
    Builtin,
    /// An access mode.
    Mode,
    /// A map index.
    Index,
}

/// One completion, in plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionItem {
    /// What the list shows, and what is inserted without a snippet.
    pub label: String,
    /// What it is.
    pub kind: CompletionKind,
    /// A short description (a type, a signature).
    pub detail: Option<String>,
    /// The text to insert in LSP snippet syntax (`$1`, `$0`), when it is
    /// more than the label.
    pub snippet: Option<String>,
    /// Lower ranks sort first.
    pub rank: u8,
}

impl CompletionItem {
    fn new(label: impl Into<String>, kind: CompletionKind, rank: u8) -> CompletionItem {
        CompletionItem {
            label: label.into(),
            kind,
            detail: None,
            snippet: None,
            rank,
        }
    }

    fn detail(mut self, detail: impl Into<String>) -> CompletionItem {
        self.detail = Some(detail.into());
        self
    }

    fn snippet(mut self, snippet: impl Into<String>) -> CompletionItem {
        self.snippet = Some(snippet.into());
        self
    }
}

/// A kernel's signature while its par_loop arguments are typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureHelp {
    /// `kernel(const double *x, double *y)`.
    pub label: String,
    /// The parameters: where each is in `label` (byte offsets) and what it
    /// takes.
    pub parameters: Vec<SignatureParameter>,
    /// The parameter the argument at the cursor binds, when there is one.
    pub active_parameter: Option<u32>,
}

/// One parameter of a [`SignatureHelp`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignatureParameter {
    /// Byte range of the parameter in the signature's label.
    pub label: (u32, u32),
    /// Its type, dimension and constness, in words.
    pub documentation: String,
}

// ----------------------------------------------------------------------
// The lexer
// ----------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenKind {
    Word,
    Number,
    String,
    Punct,
}

#[derive(Clone, Copy, Debug)]
struct Token<'s> {
    kind: TokenKind,
    text: &'s str,
    end: usize,
}

impl Token<'_> {
    fn is(&self, text: &str) -> bool {
        self.text == text
    }

    /// A name: a word that is not a reserved word.
    fn is_name(&self) -> bool {
        self.kind == TokenKind::Word && !RESERVED.contains(&self.text)
    }

    fn is_type(&self) -> bool {
        TYPES.contains(&self.text)
    }
}

/// The reserved words of language.md §2.
const RESERVED: &[&str] = &[
    "set", "map", "dat", "const", "global", "kernel", "main", "par_loop", "over", "as", "on",
    "import", "len", "print", "printf", "exit", "fetch", "if", "else", "for", "while", "do",
    "break", "continue", "return", "true", "false", "READ", "WRITE", "RW", "INC", "MIN", "MAX",
    "double", "float", "int", "uint", "ll", "ull", "bool",
];

const TYPES: &[&str] = &["double", "float", "int", "uint", "ll", "ull", "bool"];

/// Words that begin a top-level item and never appear inside a body: a body
/// left open ends where one of them starts (as the grammar recovers).
const ITEM_WORDS: &[&str] = &["kernel", "main", "set", "map", "dat", "global", "import"];

/// The tokens of `text`, or `None` when `text` ends inside a comment or an
/// unterminated string literal (nothing to complete there).
fn lex(text: &str) -> Option<Vec<Token<'_>>> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        let kind = if c.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if text[i..].starts_with("//") {
            i += text[i..].find(['\n', '\r'])?;
            continue;
        } else if text[i..].starts_with("/*") {
            i += 2 + text[i + 2..].find("*/")? + 2;
            continue;
        } else if c == b'"' {
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return None,
                    Some(b'\\') => i += 2,
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    // An unterminated string ends with its line.
                    Some(b'\n' | b'\r') => break,
                    Some(_) => i += 1,
                }
            }
            if i > bytes.len() {
                return None;
            }
            TokenKind::String
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            TokenKind::Word
        } else if c.is_ascii_digit()
            || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            while i < bytes.len() {
                let b = bytes[i];
                let exponent_sign = (b == b'+' || b == b'-')
                    && matches!(bytes[i - 1], b'e' | b'E')
                    && !text[start..i].starts_with("0x");
                if b.is_ascii_alphanumeric() || b == b'.' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            TokenKind::Number
        } else if text[i..].starts_with("->") {
            i += 2;
            TokenKind::Punct
        } else {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
            TokenKind::Punct
        };
        tokens.push(Token {
            kind,
            text: &text[start..i],
            end: i,
        });
    }
    Some(tokens)
}

// ----------------------------------------------------------------------
// Where the cursor is
// ----------------------------------------------------------------------

/// The item the cursor is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Region {
    /// Between items, or in a declaration.
    TopLevel,
    /// In a kernel's parameter list; the index of the kernel's `kernel`.
    KernelHeader(usize),
    /// In a kernel body: the indexes of `kernel` and of the body's `{`.
    Kernel(usize, usize),
    /// In `main`: the index of the body's `{`.
    Main(usize),
}

/// Finds the item around the end of `tokens`.
fn region(tokens: &[Token<'_>]) -> Region {
    let mut depth = 0usize;
    let mut region = Region::TopLevel;
    // The `kernel` or `main` whose body has not begun yet.
    let mut head: Option<(usize, bool)> = None;
    for (i, token) in tokens.iter().enumerate() {
        if token.kind == TokenKind::Word && ITEM_WORDS.contains(&token.text) {
            depth = 0;
            region = Region::TopLevel;
            head = match token.text {
                "kernel" => Some((i, true)),
                "main" => Some((i, false)),
                _ => None,
            };
            continue;
        }
        match token.text {
            "{" => {
                if depth == 0 {
                    region = match head.take() {
                        Some((start, true)) => Region::Kernel(start, i),
                        Some((_, false)) => Region::Main(i),
                        None => Region::TopLevel,
                    };
                }
                depth += 1;
            }
            "}" => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    region = Region::TopLevel;
                }
            }
            ";" if depth == 0 => head = None,
            _ => {}
        }
    }
    match (region, head) {
        (Region::TopLevel, Some((start, true))) if tokens[start..].iter().any(|t| t.is("(")) => {
            Region::KernelHeader(start)
        }
        _ => region,
    }
}

/// The tokens of the statement the cursor is in: after the last `{`, `}`
/// or `;` (but not a `;` inside the parentheses of a `for`).
fn statement<'a, 's>(tokens: &'a [Token<'s>]) -> &'a [Token<'s>] {
    let mut depth = 0usize;
    let mut start = 0;
    for (i, token) in tokens.iter().enumerate().rev() {
        match token.text {
            ")" => depth += 1,
            "(" => depth = depth.saturating_sub(1),
            ";" if depth > 0 => {}
            ";" | "{" | "}" => {
                start = i + 1;
                break;
            }
            _ => {}
        }
    }
    &tokens[start..]
}

/// How far a par_loop statement has got.
#[derive(Clone, Debug)]
enum ParLoopStage<'s> {
    /// After `par_loop`.
    Kernel,
    /// After the kernel's name.
    AfterKernel,
    /// After `as`.
    Alias,
    /// After the `as` name.
    AfterAlias,
    /// After `over`.
    Set,
    /// After the set's name.
    AfterSet,
    /// In the argument list: the argument's position and its tokens so far.
    Argument(usize, Vec<Token<'s>>),
    /// After the argument list.
    Closed,
}

#[derive(Clone, Debug)]
struct ParLoop<'s> {
    kernel: Option<&'s str>,
    set: Option<&'s str>,
    stage: ParLoopStage<'s>,
}

/// The par_loop statement `tokens` (one statement's) are in, if any.
fn par_loop<'s>(statement: &[Token<'s>]) -> Option<ParLoop<'s>> {
    let start = statement.iter().rposition(|t| t.is("par_loop"))?;
    let rest = &statement[start + 1..];
    let mut result = ParLoop {
        kernel: None,
        set: None,
        stage: ParLoopStage::Kernel,
    };
    let mut i = 0;
    let Some(kernel) = rest.first() else {
        return Some(result);
    };
    result.kernel = kernel.is_name().then_some(kernel.text);
    i += 1;
    result.stage = ParLoopStage::AfterKernel;
    if rest.get(i).is_some_and(|t| t.is("as")) {
        result.stage = ParLoopStage::Alias;
        i += 1;
        if rest.get(i).is_some() {
            result.stage = ParLoopStage::AfterAlias;
            i += 1;
        }
    }
    if !rest.get(i).is_some_and(|t| t.is("over")) {
        return Some(result);
    }
    i += 1;
    result.stage = ParLoopStage::Set;
    let Some(set) = rest.get(i) else {
        return Some(result);
    };
    result.set = set.is_name().then_some(set.text);
    i += 1;
    result.stage = ParLoopStage::AfterSet;
    if !rest.get(i).is_some_and(|t| t.is("(")) {
        return Some(result);
    }
    let mut index = 0;
    let mut current = Vec::new();
    let mut depth = 0usize;
    for token in &rest[i + 1..] {
        match token.text {
            "(" | "[" => depth += 1,
            ")" if depth == 0 => {
                result.stage = ParLoopStage::Closed;
                return Some(result);
            }
            ")" | "]" => depth = depth.saturating_sub(1),
            "," if depth == 0 => {
                index += 1;
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(*token);
    }
    result.stage = ParLoopStage::Argument(index, current);
    Some(result)
}

// ----------------------------------------------------------------------
// Names in scope in a body
// ----------------------------------------------------------------------

/// A parameter or local found in the text.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Variable {
    name: String,
    ty: String,
}

/// The parameters of the kernel whose `kernel` is at `start`.
fn parameters(tokens: &[Token<'_>], start: usize) -> Vec<Variable> {
    let Some(open) = tokens[start..]
        .iter()
        .position(|t| t.is("("))
        .map(|p| start + p)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut current: Vec<Token<'_>> = Vec::new();
    for token in &tokens[open + 1..] {
        if token.is(",") || token.is(")") {
            let ty = current.iter().find(|t| t.is_type()).map_or("", |t| t.text);
            if let Some(name) = current.iter().find(|t| t.is_name()) {
                let constant = current.first().is_some_and(|t| t.is("const"));
                let dimension = current
                    .iter()
                    .skip_while(|t| !t.is("["))
                    .nth(1)
                    .map(|t| format!("[{}]", t.text));
                let ty = format!(
                    "{}{ty}{}",
                    if constant { "const " } else { "" },
                    dimension.unwrap_or_default()
                );
                out.push(Variable {
                    name: name.text.to_owned(),
                    ty,
                });
            }
            current.clear();
            if token.is(")") {
                break;
            }
        } else {
            current.push(*token);
        }
    }
    out
}

/// Where a scope of locals ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScopeEnd {
    /// At the `}` that brings the brace depth below this.
    Brace(usize),
    /// A `for` header: at its `)` (at this paren depth) it becomes the
    /// scope of the loop's body.
    ForHeader(usize),
    /// A `for` whose body has not begun (at this brace depth).
    ForBody(usize),
    /// A `for` whose body is one statement: at the next `;` at this brace
    /// depth.
    ForStatement(usize),
}

/// The locals declared in a body (from its `{` at `open`) and still in
/// scope at the end of `tokens`.
fn locals(tokens: &[Token<'_>], open: usize) -> Vec<Variable> {
    let mut scopes: Vec<(ScopeEnd, Vec<Variable>)> = vec![(ScopeEnd::Brace(1), Vec::new())];
    let mut braces = 1usize;
    let mut parens = 0usize;
    for i in open + 1..tokens.len() {
        let token = tokens[i];
        let previous = tokens[i - 1];
        match token.text {
            "{" => {
                braces += 1;
                match scopes.last_mut() {
                    Some((end, _)) if matches!(end, ScopeEnd::ForBody(_)) => {
                        *end = ScopeEnd::Brace(braces)
                    }
                    _ => scopes.push((ScopeEnd::Brace(braces), Vec::new())),
                }
            }
            "}" => {
                while scopes.len() > 1
                    && matches!(scopes.last(), Some((ScopeEnd::Brace(b) | ScopeEnd::ForStatement(b) | ScopeEnd::ForBody(b), _)) if *b >= braces)
                {
                    scopes.pop();
                }
                braces = braces.saturating_sub(1);
            }
            "(" => {
                parens += 1;
                if previous.is("for") {
                    scopes.push((ScopeEnd::ForHeader(parens), Vec::new()));
                }
            }
            ")" => {
                if let Some((end, _)) = scopes.last_mut()
                    && *end == ScopeEnd::ForHeader(parens)
                {
                    *end = ScopeEnd::ForBody(braces);
                }
                parens = parens.saturating_sub(1);
            }
            ";" if parens == 0 => {
                while scopes.len() > 1
                    && matches!(scopes.last(), Some((ScopeEnd::ForStatement(b), _)) if *b == braces)
                {
                    scopes.pop();
                }
            }
            _ => {
                if let Some((end, _)) = scopes.last_mut()
                    && let ScopeEnd::ForBody(b) = *end
                {
                    *end = ScopeEnd::ForStatement(b);
                }
            }
        }
        let starts_declaration = matches!(previous.text, ";" | "{" | "}" | "const")
            || (previous.is("(") && i >= 2 && tokens[i - 2].is("for"));
        if token.is_type() && starts_declaration {
            let constant = previous.is("const");
            let mut names = Vec::new();
            let mut j = i + 1;
            loop {
                while tokens.get(j).is_some_and(|t| t.is("*")) {
                    j += 1;
                }
                let Some(name) = tokens.get(j).filter(|t| t.is_name()) else {
                    break;
                };
                let dimension = tokens
                    .get(j + 1)
                    .filter(|t| t.is("["))
                    .and(tokens.get(j + 2))
                    .map(|t| format!("[{}]", t.text));
                names.push(Variable {
                    name: name.text.to_owned(),
                    ty: format!(
                        "{}{}{}",
                        if constant { "const " } else { "" },
                        token.text,
                        dimension.unwrap_or_default()
                    ),
                });
                // On to the next declarator, past any initialiser.
                let mut depth = 0usize;
                j += 1;
                while let Some(t) = tokens.get(j) {
                    match t.text {
                        "(" | "[" | "{" => depth += 1,
                        ")" | "]" | "}" if depth > 0 => depth -= 1,
                        "," if depth == 0 => break,
                        ";" | ")" | "}" => break,
                        _ => {}
                    }
                    j += 1;
                }
                if !tokens.get(j).is_some_and(|t| t.is(",")) {
                    break;
                }
                j += 1;
            }
            if let Some((_, scope)) = scopes.last_mut() {
                scope.extend(names);
            }
        }
    }
    // Innermost first; a name already taken by an inner or later
    // declaration is shadowed (a set of the names: a scan of `out` for each
    // made completion quadratic in the variables in scope).
    let mut out: Vec<Variable> = Vec::new();
    let mut taken: rustc_hash::FxHashSet<String> = rustc_hash::FxHashSet::default();
    for (_, scope) in scopes.into_iter().rev() {
        for variable in scope.into_iter().rev() {
            crate::work::count(1);
            if taken.insert(variable.name.clone()) {
                out.push(variable);
            }
        }
    }
    out
}

// ----------------------------------------------------------------------
// Completion
// ----------------------------------------------------------------------

/// Whether the cursor at `offset` is inside a comment or a string literal,
/// as the tree says.
fn in_comment_or_string(parse: &Parse, offset: usize) -> bool {
    let root = parse.tree().root_node();
    // The node at `offset` and its ancestors, found in one descent.
    op2_syntax::NodePath::at(root, offset, offset)
        .up()
        .any(|n| {
            let inside = n.start_byte() < offset && offset < n.end_byte();
            let line_comment_end = n.kind() == "comment"
                && n.end_byte() == offset
                && parse.text()[n.byte_range()].starts_with("//");
            (matches!(n.kind(), "comment" | "string_literal") && inside) || line_comment_end
        })
}

/// The completions at byte `offset` of the parsed file, for the program
/// `program` (the analysis of the same text).
pub fn completions(parse: &Parse, program: &Program, offset: usize) -> Vec<CompletionItem> {
    let text = parse.text();
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) || in_comment_or_string(parse, offset) {
        return Vec::new();
    }
    let Some(mut tokens) = lex(&text[..offset]) else {
        return Vec::new();
    };
    // The word being typed is what the client filters with; the context is
    // what comes before it.
    if tokens
        .last()
        .is_some_and(|t| t.end == offset && matches!(t.kind, TokenKind::Word | TokenKind::Number))
    {
        tokens.pop();
    }
    let statement = statement(&tokens);
    if let Some(par_loop) = par_loop(statement) {
        return par_loop_completions(program, &par_loop);
    }
    let last = statement.last();
    if last.is_some_and(|t| t.is("("))
        && statement.len() >= 2
        && statement[statement.len() - 2].is("len")
    {
        return sets(program, 0);
    }
    match region(&tokens) {
        Region::TopLevel => top_level(program, statement),
        Region::KernelHeader(_) => {
            let naming = last.is_some_and(|t| t.is_type() || t.is("*"));
            if naming {
                Vec::new()
            } else {
                keywords(&["const"], 0)
                    .into_iter()
                    .chain(types(0))
                    .collect()
            }
        }
        Region::Kernel(start, open) => {
            if !expects_name(statement) {
                return Vec::new();
            }
            let mut items = variables(&parameters(&tokens, start), CompletionKind::Parameter, 0);
            items.extend(variables(&locals(&tokens, open), CompletionKind::Local, 0));
            items.extend(consts(program, 1));
            items.extend(builtins(2));
            if at_statement_start(statement) {
                // A kernel prints too (language.md §5, "Printing from a kernel").
                items.extend(print_snippets());
            }
            items.extend(body_keywords(3));
            items
        }
        Region::Main(open) => {
            // `fetch DAT into GLOBAL;` names a dat, then a global.
            match statement {
                [fetch] if fetch.is("fetch") => return dats(program, 0),
                [fetch, dat, into] if fetch.is("fetch") && dat.is_name() && into.is("into") => {
                    return globals(program, 0);
                }
                [fetch, ..] if fetch.is("fetch") => return Vec::new(),
                _ => {}
            }
            if !expects_name(statement) {
                return Vec::new();
            }
            let mut items = variables(&locals(&tokens, open), CompletionKind::Local, 0);
            items.extend(globals(program, 0));
            items.extend(consts(program, 1));
            items.push(len_item(1));
            items.extend(builtins(2));
            if at_statement_start(statement) {
                items.push(
                    CompletionItem::new("par_loop", CompletionKind::Snippet, 0)
                        .detail("par_loop KERNEL over SET (ARGS);")
                        .snippet("par_loop ${1:kernel} over ${2:set} ($0);"),
                );
                items.extend(print_snippets());
                items.push(
                    CompletionItem::new("exit", CompletionKind::Snippet, 0)
                        .detail("exit(STATUS);")
                        .snippet("exit(${1:1});"),
                );
                items.push(
                    CompletionItem::new("fetch", CompletionKind::Snippet, 0)
                        .detail("fetch DAT into GLOBAL;")
                        .snippet("fetch ${1:dat} into ${2:global};"),
                );
            }
            items.extend(body_keywords(3));
            items
        }
    }
}

/// The `print` and `printf` statements, which `main` and kernels have.
fn print_snippets() -> [CompletionItem; 2] {
    [
        CompletionItem::new("print", CompletionKind::Snippet, 0)
            .detail("print(FORMAT, VALUES…);")
            .snippet("print(\"$1\", $2);"),
        CompletionItem::new("printf", CompletionKind::Snippet, 0)
            .detail("printf(FORMAT, VALUES…); (no newline added)")
            .snippet("printf(\"$1\", $2);"),
    ]
}

/// True when a name may come at the end of `statement` in a body: not
/// after an operand (an operator comes next) nor after a type (a new name
/// comes next).
fn expects_name(statement: &[Token<'_>]) -> bool {
    match statement.last() {
        None => true,
        Some(t) => match t.kind {
            TokenKind::Word => {
                !t.is_name()
                    && !t.is_type()
                    && !matches!(t.text, "true" | "false" | "break" | "continue" | "return")
            }
            TokenKind::Number | TokenKind::String => false,
            TokenKind::Punct if t.is(")") => after_condition(statement),
            TokenKind::Punct => !matches!(t.text, "]" | "++" | "--"),
        },
    }
}

/// True when `statement` ends with the `)` of `if (…)`, `for (…)` or
/// `while (…)`: a statement comes next.
fn after_condition(statement: &[Token<'_>]) -> bool {
    let mut depth = 0usize;
    for (i, token) in statement.iter().enumerate().rev() {
        match token.text {
            ")" => depth += 1,
            "(" => {
                depth -= 1;
                if depth == 0 {
                    return i > 0 && matches!(statement[i - 1].text, "if" | "for" | "while");
                }
            }
            _ => {}
        }
    }
    false
}

fn at_statement_start(statement: &[Token<'_>]) -> bool {
    match statement.last() {
        None => true,
        Some(t) if t.is(")") => after_condition(statement),
        Some(t) => matches!(t.text, "else" | "do"),
    }
}

fn par_loop_completions(program: &Program, par_loop: &ParLoop<'_>) -> Vec<CompletionItem> {
    match &par_loop.stage {
        ParLoopStage::Kernel => program
            .kernels
            .iter()
            .map(|k| {
                CompletionItem::new(&k.name, CompletionKind::Kernel, 0)
                    .detail(kernel_signature(k).0)
            })
            .collect(),
        ParLoopStage::AfterKernel => keywords(&["as", "over"], 0),
        ParLoopStage::AfterAlias => keywords(&["over"], 0),
        ParLoopStage::Set => sets(program, 0),
        ParLoopStage::Alias | ParLoopStage::AfterSet | ParLoopStage::Closed => Vec::new(),
        ParLoopStage::Argument(_, argument) => {
            argument_completions(program, par_loop.set, argument)
        }
    }
}

fn argument_completions(
    program: &Program,
    iteration_set: Option<&str>,
    argument: &[Token<'_>],
) -> Vec<CompletionItem> {
    let texts: Vec<&str> = argument.iter().map(|t| t.text).collect();
    let iteration_set = iteration_set.and_then(|s| match program.lookup(s) {
        Some(Symbol::Set(id)) => Some(id),
        _ => None,
    });
    match texts.as_slice() {
        [] => {
            let mut items: Vec<CompletionItem> = program
                .dats
                .iter()
                .map(|d| {
                    // Dats on the iteration set, or reachable from it, first.
                    let direct = d.set.is_some() && d.set == iteration_set;
                    let reachable = program
                        .maps
                        .iter()
                        .any(|m| m.from == iteration_set && m.to == d.set && m.from.is_some());
                    let rank = if direct || reachable { 0 } else { 1 };
                    CompletionItem::new(&d.name, CompletionKind::Dat, rank)
                        .detail(dat_detail(program, d.ty, d.set))
                })
                .collect();
            items.extend(globals(program, 0));
            items.extend(consts(program, 1));
            items.push(len_item(2));
            items.push(
                CompletionItem::new("idx", CompletionKind::Keyword, 2).detail(
                    "idx or idx[MAP[K]]: the element's index, or the index MAP[K] reaches, an int",
                ),
            );
            items
        }
        ["idx", "["] => program
            .maps
            .iter()
            .filter(|m| m.from.is_some() && m.from == iteration_set)
            .map(|m| map_item(program, m, 0))
            .collect(),
        ["idx"] | ["idx", "[", _, "[", _, "]", "]"] => modes(&[AccessMode::Read]),
        [_, "INFO", "("] => program
            .globals
            .iter()
            .filter(|g| g.ty.dimension == 1)
            .map(|g| {
                CompletionItem::new(&g.name, CompletionKind::Global, 0).detail(format!(
                    "global {}: `INFO` follows a global this par_loop reduces with MIN or MAX",
                    g.ty
                ))
            })
            .collect(),
        [dat, "["] => {
            let dat_set = match program.lookup(dat) {
                Some(Symbol::Dat(id)) => program.dats[id.index()].set,
                _ => None,
            };
            let fitting: Vec<CompletionItem> = program
                .maps
                .iter()
                .filter(|m| {
                    m.from.is_some() && m.from == iteration_set && m.to.is_some() && m.to == dat_set
                })
                .map(|m| map_item(program, m, 0))
                .collect();
            if fitting.is_empty() {
                program
                    .maps
                    .iter()
                    .map(|m| map_item(program, m, 0))
                    .collect()
            } else {
                fitting
            }
        }
        [_, "[", map, "["] => match program.lookup(map) {
            Some(Symbol::Map(id)) => {
                let map = &program.maps[id.index()];
                (0..map.arity)
                    .map(|i| {
                        CompletionItem::new(i.to_string(), CompletionKind::Index, 0)
                            .detail(format!("target {} of {}", i + 1, map.arity))
                    })
                    .collect()
            }
            _ => Vec::new(),
        },
        ["len", "("] => sets(program, 0),
        ["len", "(", _, ")"] => modes(&[AccessMode::Read]),
        [_, "[", _, "[", _, "]", "]"] => modes(&[
            AccessMode::Read,
            AccessMode::Write,
            AccessMode::Rw,
            AccessMode::Inc,
        ]),
        [name] if argument[0].is_name() => match program.lookup(name) {
            Some(Symbol::Dat(_)) => modes(&[
                AccessMode::Read,
                AccessMode::Write,
                AccessMode::Rw,
                AccessMode::Inc,
            ]),
            Some(Symbol::Global(_)) => {
                let mut items = modes(&[
                    AccessMode::Read,
                    AccessMode::Inc,
                    AccessMode::Min,
                    AccessMode::Max,
                ]);
                items.push(
                    CompletionItem::new("INFO", CompletionKind::Mode, 1)
                        .detail("INFO(G): what the kernel stores here at the element where the MIN or MAX global G reaches its extreme")
                        .snippet("INFO($1)"),
                );
                items
            }
            Some(Symbol::Const(_)) => modes(&[AccessMode::Read]),
            _ => modes(&AccessMode::ALL),
        },
        _ => Vec::new(),
    }
}

fn top_level(program: &Program, statement: &[Token<'_>]) -> Vec<CompletionItem> {
    let texts: Vec<&str> = statement.iter().map(|t| t.text).collect();
    match texts.as_slice() {
        [] => declaration_snippets(),
        ["dat" | "const" | "global", _, ":"] => types(0),
        ["map", _, ":"] | ["map", _, ":", _, "->"] => sets(program, 0),
        ["dat", _, ":", .., "on"] => sets(program, 0),
        ["dat" | "const" | "global", .., "="] | ["dat" | "const" | "global", .., "=", "{"] => {
            let mut items = consts(program, 0);
            items.extend(builtins(1));
            items
        }
        ["dat" | "const" | "global", .., "{" | ","] if texts.contains(&"=") => {
            let mut items = consts(program, 0);
            items.extend(builtins(1));
            items
        }
        ["dat", _, ":", ty] | ["dat", _, ":", ty, "[", _, "]"] if TYPES.contains(ty) => {
            keywords(&["on"], 0)
        }
        _ => Vec::new(),
    }
}

fn declaration_snippets() -> Vec<CompletionItem> {
    let snippet = |label: &str, detail: &str, body: &str| {
        CompletionItem::new(label, CompletionKind::Snippet, 0)
            .detail(detail)
            .snippet(body)
    };
    vec![
        snippet("set", "set NAME;", "set $1;"),
        snippet(
            "map",
            "map NAME: FROM -> TO[ARITY];",
            "map $1: $2 -> $3[$4];",
        ),
        snippet("dat", "dat NAME: TYPE on SET;", "dat $1: double on $2;"),
        snippet(
            "const",
            "const NAME: TYPE = VALUE;",
            "const $1: double = $2;",
        ),
        snippet(
            "global",
            "global NAME: TYPE = VALUE;",
            "global $1: double = $2;",
        ),
        snippet(
            "kernel",
            "kernel NAME(PARAMS) { … }",
            "kernel $1($2) {\n\t$0\n}",
        ),
        snippet("main", "main { … }", "main {\n\t$0\n}"),
        snippet("import", "import \"PATH\";", "import \"$1\";"),
    ]
}

fn keywords(words: &[&str], rank: u8) -> Vec<CompletionItem> {
    words
        .iter()
        .map(|w| CompletionItem::new(*w, CompletionKind::Keyword, rank))
        .collect()
}

fn types(rank: u8) -> Vec<CompletionItem> {
    TYPES
        .iter()
        .map(|t| CompletionItem::new(*t, CompletionKind::Type, rank))
        .collect()
}

/// The C keywords and types of a body.
fn body_keywords(rank: u8) -> Vec<CompletionItem> {
    let mut items = keywords(
        &[
            "if", "else", "for", "while", "do", "break", "continue", "return", "true", "false",
            "const",
        ],
        rank,
    );
    items.extend(types(rank));
    items
}

fn variables(variables: &[Variable], kind: CompletionKind, rank: u8) -> Vec<CompletionItem> {
    variables
        .iter()
        .map(|v| CompletionItem::new(&v.name, kind, rank).detail(v.ty.clone()))
        .collect()
}

fn sets(program: &Program, rank: u8) -> Vec<CompletionItem> {
    program
        .sets
        .iter()
        .map(|s| CompletionItem::new(&s.name, CompletionKind::Set, rank).detail("set"))
        .collect()
}

fn consts(program: &Program, rank: u8) -> Vec<CompletionItem> {
    program
        .consts
        .iter()
        .map(|c| {
            CompletionItem::new(&c.name, CompletionKind::Const, rank)
                .detail(format!("const {}", c.ty))
        })
        .collect()
}

fn dats(program: &Program, rank: u8) -> Vec<CompletionItem> {
    program
        .dats
        .iter()
        .map(|d| {
            CompletionItem::new(&d.name, CompletionKind::Dat, rank).detail(format!("dat {}", d.ty))
        })
        .collect()
}

fn globals(program: &Program, rank: u8) -> Vec<CompletionItem> {
    program
        .globals
        .iter()
        .map(|g| {
            CompletionItem::new(&g.name, CompletionKind::Global, rank)
                .detail(format!("global {}", g.ty))
        })
        .collect()
}

fn builtins(rank: u8) -> Vec<CompletionItem> {
    BUILTINS
        .iter()
        .map(|name| {
            let arity = Builtin::from_name(name).map_or(1, Builtin::arity);
            let placeholders: Vec<String> = (1..=arity).map(|i| format!("${i}")).collect();
            CompletionItem::new(*name, CompletionKind::Builtin, rank)
                .detail("built-in")
                .snippet(format!("{name}({})", placeholders.join(", ")))
        })
        .collect()
}

fn len_item(rank: u8) -> CompletionItem {
    CompletionItem::new("len", CompletionKind::Keyword, rank)
        .detail("len(SET): the number of elements, an int")
        .snippet("len($1)")
}

fn modes(allowed: &[AccessMode]) -> Vec<CompletionItem> {
    allowed
        .iter()
        .map(|mode| {
            let meaning = match mode {
                AccessMode::Read => "the kernel only reads",
                AccessMode::Write => "the kernel sets every component",
                AccessMode::Rw => "read and written",
                AccessMode::Inc => "the kernel only adds to it; contributions are summed",
                AccessMode::Min => "reduced to the minimum",
                AccessMode::Max => "reduced to the maximum",
            };
            CompletionItem::new(mode.keyword(), CompletionKind::Mode, 0).detail(meaning)
        })
        .collect()
}

fn set_name(program: &Program, set: Option<op2_analysis::model::SetId>) -> &str {
    set.and_then(|s| program.sets.get(s.index()))
        .map_or("?", |s| s.name.as_str())
}

fn dat_detail(
    program: &Program,
    ty: ElementType,
    set: Option<op2_analysis::model::SetId>,
) -> String {
    format!("dat {ty} on {}", set_name(program, set))
}

fn map_item(program: &Program, map: &op2_analysis::model::Map, rank: u8) -> CompletionItem {
    CompletionItem::new(&map.name, CompletionKind::Map, rank).detail(format!(
        "map {} -> {}[{}]",
        set_name(program, map.from),
        set_name(program, map.to),
        map.arity
    ))
}

// ----------------------------------------------------------------------
// Signature help
// ----------------------------------------------------------------------

/// A parameter as written: `const double *x` or `double x[4]`.
fn parameter_text(param: &Param) -> String {
    let constant = if param.is_const { "const " } else { "" };
    match param.dimension {
        Some(dimension) => format!("{constant}{} {}[{dimension}]", param.ty, param.name),
        None => format!("{constant}{} *{}", param.ty, param.name),
    }
}

/// `name(params…)` and the byte range of each parameter in it.
fn kernel_signature(kernel: &Kernel) -> (String, Vec<(u32, u32)>) {
    let mut label = format!("{}(", kernel.name);
    let mut ranges = Vec::new();
    for (i, param) in kernel.params.iter().enumerate() {
        if i > 0 {
            label.push_str(", ");
        }
        let start = u32::try_from(label.len()).unwrap_or(u32::MAX);
        label.push_str(&parameter_text(param));
        ranges.push((start, u32::try_from(label.len()).unwrap_or(u32::MAX)));
    }
    label.push(')');
    (label, ranges)
}

/// The signature of the kernel whose par_loop arguments are being typed at
/// `offset`, with the parameter the current argument binds.
pub fn signature_help(parse: &Parse, program: &Program, offset: usize) -> Option<SignatureHelp> {
    let text = parse.text();
    let offset = offset.min(text.len());
    if !text.is_char_boundary(offset) || in_comment_or_string(parse, offset) {
        return None;
    }
    let tokens = lex(&text[..offset])?;
    let par_loop = par_loop(statement(&tokens))?;
    let ParLoopStage::Argument(index, _) = par_loop.stage else {
        return None;
    };
    let Some(Symbol::Kernel(id)) = program.lookup(par_loop.kernel?) else {
        return None;
    };
    let kernel = &program.kernels[id.index()];
    let (label, ranges) = kernel_signature(kernel);
    let parameters = kernel
        .params
        .iter()
        .zip(ranges)
        .map(|(param, label)| {
            let dimension = match param.dimension {
                Some(d) => format!("dimension {d} (checked against the argument)"),
                None => "dimension taken from the bound argument".to_owned(),
            };
            let constness = if param.is_const {
                "; `const`: only READ arguments"
            } else {
                ""
            };
            SignatureParameter {
                label,
                documentation: format!("`{}`: {dimension}{constness}", param.ty),
            }
        })
        .collect::<Vec<_>>();
    let active_parameter =
        (index < parameters.len()).then(|| u32::try_from(index).unwrap_or(u32::MAX));
    Some(SignatureHelp {
        label,
        parameters,
        active_parameter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<&str> {
        lex(text)
            .unwrap_or_default()
            .iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn lexing() {
        assert_eq!(
            texts("map a: b -> c[2]; // x\n/* y */ 1.5e-3f \"s\\\"\""),
            [
                "map",
                "a",
                ":",
                "b",
                "->",
                "c",
                "[",
                "2",
                "]",
                ";",
                "1.5e-3f",
                "\"s\\\"\""
            ]
        );
        assert!(lex("a // open").is_none());
        assert!(lex("a /* open").is_none());
        assert!(lex("print(\"open").is_none());
    }

    #[test]
    fn locals_in_scope() {
        let text = "{ double a, b[2] = {1, 2}; for (int i = 0; i < 2; i++) { int j; } for (int k = 0;;) x; { int hidden; } int c; ";
        let tokens = lex(text).unwrap_or_default();
        let names: Vec<String> = locals(&tokens, 0).into_iter().map(|v| v.name).collect();
        assert_eq!(names, ["c", "b", "a"]);
        let inside = lex("{ double a; for (int i = 0; i < 2; i++) { int j; ").unwrap_or_default();
        let names: Vec<String> = locals(&inside, 0).into_iter().map(|v| v.name).collect();
        assert_eq!(names, ["j", "i", "a"]);
    }
}
