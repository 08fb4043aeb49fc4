//! The canonical layout of `.op2` text, what `op2 fmt` and the editor's
//! "format document" produce.
//!
//! The layout: four spaces per level, one declaration or statement per line,
//! braces K&R, a space around binary and assignment operators and after each
//! comma, `map a: b -> c[2];`. A comma-separated list (par_loop arguments,
//! kernel parameters, initialiser lists, `print` arguments) stays on one line
//! when the line fits in [`MAX_WIDTH`] columns and holds no line comment;
//! otherwise it takes one item per line, with a trailing comma where the
//! grammar allows one, and the access modes of par_loop arguments aligned.
//!
//! Every comment stays where it was relative to the tokens around it: a
//! comment that began its own line still does (at the indentation of what
//! follows), one that followed code on the same line still does. Blank lines
//! between statements and items are kept, at most one in a row. The layout
//! depends on the tokens, the comments, and where the text had line breaks
//! next to comments and blank lines; the formatter writes all of these back as
//! it read them, so formatting twice changes nothing.
//!
//! Text with syntax errors is refused: a layout built on error recovery would
//! guess at the program. As a last guard the formatted text is parsed again
//! and must have the same tokens (trailing commas aside) and comments.

use std::fmt;

use tree_sitter::Node;

use crate::{Diagnostic, FileId, Parse};

/// The column limit a list must fit in to stay on one line.
pub const MAX_WIDTH: usize = 100;

/// Deepest nesting formatted, in levels of the syntax tree: the printer
/// recurses along the tree, and a thread's stack must hold it (the analysis
/// stops at 200 levels of statements and expressions, a little over 200 tree
/// levels). A binary expression that is the left operand of another is not a
/// level: `x + x + … + x` is a chain, laid out without recursion, however
/// long.
pub const MAX_DEPTH: usize = 500;

/// One level of indentation.
const INDENT: usize = 4;

/// Why a text was not formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// The text has syntax errors (E001); they are attached.
    Syntax(Vec<Diagnostic>),
    /// The code is nested deeper than the formatter goes (far deeper than
    /// the analysis accepts).
    TooDeep,
    /// The formatted text would not have meant the same program. This is a
    /// bug in the formatter; the text is left alone.
    Internal(String),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Syntax(errors) => match errors.first() {
                Some(first) if errors.len() == 1 => {
                    write!(f, "the text has a syntax error: {}", first.message)
                }
                Some(first) => write!(
                    f,
                    "the text has {} syntax errors, the first: {}",
                    errors.len(),
                    first.message
                ),
                None => f.write_str("the text has syntax errors"),
            },
            FormatError::TooDeep => {
                write!(f, "the code is nested more than {MAX_DEPTH} levels deep")
            }
            FormatError::Internal(message) => {
                write!(f, "the formatter would change the program: {message}")
            }
        }
    }
}

impl std::error::Error for FormatError {}

/// Formats a whole `.op2` file. Refuses text with syntax errors.
pub fn format(text: &str) -> Result<String, FormatError> {
    format_parse(&Parse::new(text)).map(|(formatted, _)| formatted)
}

/// [`format`] of the text of `parse`, which a caller that has parsed it
/// already need not parse again; with the formatted text comes its parse
/// (made to check it: see [`verify`]), as [`Parse::new`] would give it.
pub fn format_parse(parse: &Parse) -> Result<(String, Parse), FormatError> {
    let text = parse.text();
    let errors = parse.errors(FileId::MAIN);
    if !errors.is_empty() || parse.tree().root_node().has_error() {
        return Err(FormatError::Syntax(errors));
    }
    if nesting(parse.tree().root_node()) > MAX_DEPTH {
        return Err(FormatError::TooDeep);
    }
    let formatted = Printer::new(text, parse.tree().root_node()).run(parse.tree().root_node());
    let reparsed = verify(parse, &formatted)?;
    Ok((formatted, reparsed))
}

/// The deepest nesting under `root`: the depth of its deepest node, where
/// the left operand of a binary expression, when it is a binary expression
/// too, adds no level (see [`MAX_DEPTH`]).
fn nesting(root: Node<'_>) -> usize {
    let mut cursor = root.walk();
    // For each node from the root to the cursor: whether it is a binary
    // expression, and the level it adds.
    let mut path: Vec<(bool, usize)> = vec![(false, 0)];
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut descended = false;
    loop {
        if !descended && cursor.goto_first_child() {
            // Entered below.
        } else {
            let (_, level) = path.pop().unwrap_or_default();
            depth -= level;
            if !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    return deepest;
                }
                descended = true;
                continue;
            }
        }
        descended = false;
        let binary = cursor.node().kind() == "binary_expression";
        let chained = binary
            && cursor.field_name() == Some("left")
            && path.last().is_some_and(|&(parent, _)| parent);
        let level = usize::from(!chained);
        path.push((binary, level));
        depth += level;
        deepest = deepest.max(depth);
    }
}

/// The facts formatting must keep: every token but commas, in order, with
/// the node kinds around them, and every comment. Walked with one cursor and
/// borrowing the tokens from the text: nothing is allocated per node.
fn fingerprint(parse: &Parse) -> (Vec<(&str, &str)>, Vec<&str>) {
    let text = parse.text();
    let mut nodes = Vec::new();
    let mut comments = Vec::new();
    let mut cursor = parse.tree().root_node().walk();
    loop {
        let node = cursor.node();
        let mut descend = false;
        match node.kind() {
            "comment" => comments.push(comment_text(node, text)),
            "," => {}
            kind => {
                let leaf = node.child_count() == 0 || kind == "string_literal";
                nodes.push((kind, if leaf { node_text(node, text) } else { "" }));
                descend = !leaf;
            }
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                comments.sort_unstable();
                return (nodes, comments);
            }
        }
    }
}

/// Parses `formatted` and checks that it has the tokens and comments of
/// `original`; returns that parse.
fn verify(original: &Parse, formatted: &str) -> Result<Parse, FormatError> {
    let reparsed = Parse::new(formatted);
    if reparsed.tree().root_node().has_error() {
        return Err(FormatError::Internal(
            "the formatted text has syntax errors".into(),
        ));
    }
    let (before, before_comments) = fingerprint(original);
    let (after, after_comments) = fingerprint(&reparsed);
    if before != after {
        let at = before
            .iter()
            .zip(&after)
            .position(|(a, b)| a != b)
            .unwrap_or(before.len().min(after.len()));
        return Err(FormatError::Internal(format!(
            "the tokens differ at token {at}: {:?} became {:?}",
            before.get(at),
            after.get(at)
        )));
    }
    if before_comments != after_comments {
        return Err(FormatError::Internal("a comment changed".into()));
    }
    Ok(reparsed)
}

fn node_text<'s>(node: Node<'_>, text: &'s str) -> &'s str {
    text.get(node.byte_range()).unwrap_or("")
}

/// A comment as written, without trailing blanks (a line comment's trailing
/// blanks are not kept).
fn comment_text<'s>(node: Node<'_>, text: &'s str) -> &'s str {
    let raw = node_text(node, text);
    if raw.starts_with("//") {
        raw.trim_end()
    } else {
        raw
    }
}

/// Line breaks in `gap` (`\r\n`, `\n` and `\r` each count once).
fn line_breaks(gap: &str) -> usize {
    let bytes = gap.as_bytes();
    let mut count = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
            count += 1;
        }
    }
    count
}

/// The children of `node` that are not comments (the printer places
/// comments itself, by position).
fn kids<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children(&mut cursor)
        .filter(|c| c.kind() != "comment")
        .collect()
}

/// The children of `node` that are not comments, with their field names.
fn kids_with_fields<'t>(node: Node<'t>) -> Vec<(Node<'t>, Option<&'t str>)> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            let child = cursor.node();
            if child.kind() != "comment" {
                out.push((child, cursor.field_name()));
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

/// What separates two tokens of the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Sep {
    /// Nothing.
    None,
    /// This many spaces.
    Space(usize),
    /// A line break (and a blank line where the source had one).
    Newline,
}

const SPACE: Sep = Sep::Space(1);

/// The part of the printer a trial layout may have to undo.
#[derive(Clone, Debug)]
struct State {
    /// The next comment to place.
    next_comment: usize,
    /// What the layout asks for before the next token.
    pending: Sep,
    /// Indentation level.
    level: usize,
    /// The end, in the source, of the last token or comment written.
    last_end: usize,
    /// The last thing written was an opening bracket.
    after_opener: bool,
    /// The last thing written is a block comment that begins its line and
    /// had code after it on the same line: that code stays beside it.
    glue: bool,
}

struct Printer<'a> {
    text: &'a str,
    comments: Vec<Node<'a>>,
    out: String,
    state: State,
}

impl<'a> Printer<'a> {
    fn new(text: &'a str, root: Node<'a>) -> Printer<'a> {
        let mut comments = Vec::new();
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            if node.kind() == "comment" {
                comments.push(node);
                continue;
            }
            let mut cursor = node.walk();
            let children: Vec<Node<'a>> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev());
        }
        comments.sort_by_key(Node::start_byte);
        Printer {
            text,
            comments,
            out: String::with_capacity(text.len() + text.len() / 8),
            state: State {
                next_comment: 0,
                pending: Sep::None,
                level: 0,
                last_end: 0,
                after_opener: false,
                glue: false,
            },
        }
    }

    fn run(mut self, root: Node<'a>) -> String {
        for item in kids(root) {
            self.sep(Sep::Newline);
            self.node(item);
        }
        self.flush_comments(self.text.len(), true);
        self.trim_line_end();
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.out
    }

    // ------------------------------------------------------------------
    // Output primitives
    // ------------------------------------------------------------------

    fn sep(&mut self, sep: Sep) {
        self.state.pending = self.state.pending.max(sep);
    }

    fn indent(&mut self) {
        self.state.level += 1;
    }

    fn dedent(&mut self) {
        self.state.level = self.state.level.saturating_sub(1);
    }

    fn trim_line_end(&mut self) {
        let trimmed = self.out.trim_end_matches([' ', '\t']).len();
        self.out.truncate(trimmed);
    }

    /// Writes a separator before `next`. `gap` is the source text between
    /// the previous token or comment and `next` (for blank lines);
    /// `continuation` says that a line break here interrupts a line the
    /// layout wanted whole, which indents one more level.
    fn write_sep(&mut self, sep: Sep, gap: &str, continuation: bool, next: &str) {
        if self.out.is_empty() {
            return;
        }
        match sep {
            Sep::None => {
                // Never glue two tokens into one (`- -x`, `a b`).
                let last = self.out.chars().next_back().unwrap_or(' ');
                let first = next.chars().next().unwrap_or(' ');
                let word = |c: char| c.is_alphanumeric() || c == '_' || c == '.';
                let operator = |c: char| "+-&|<>=/*%!^~".contains(c);
                if (word(last) && word(first)) || (operator(last) && operator(first)) {
                    self.out.push(' ');
                }
            }
            Sep::Space(n) => {
                for _ in 0..n {
                    self.out.push(' ');
                }
            }
            Sep::Newline => {
                self.trim_line_end();
                let closer = next.starts_with(['}', ')', ']']);
                if line_breaks(gap) >= 2 && !self.state.after_opener && !closer {
                    self.out.push('\n');
                }
                self.out.push('\n');
                let level = self.state.level + usize::from(continuation);
                for _ in 0..level * INDENT {
                    self.out.push(' ');
                }
            }
        }
    }

    /// Places the comments that begin before `until`. `line_start` says
    /// that what follows them begins a line in the layout.
    fn flush_comments(&mut self, until: usize, line_start: bool) {
        let mut forced = std::mem::replace(&mut self.state.pending, Sep::None);
        while let Some(&comment) = self.comments.get(self.state.next_comment) {
            if comment.start_byte() >= until {
                break;
            }
            self.state.next_comment += 1;
            let gap = self
                .text
                .get(self.state.last_end..comment.start_byte())
                .unwrap_or("");
            let own_line = line_breaks(gap) > 0 || self.out.is_empty();
            let sep = forced.max(if own_line { Sep::Newline } else { SPACE });
            let body = comment_text(comment, self.text);
            self.write_sep(sep, gap, !line_start, body);
            let leads_line =
                self.out.trim_end_matches(' ').ends_with('\n') || self.out.trim_start().is_empty();
            self.out.push_str(body);
            self.state.last_end = comment.end_byte();
            self.state.after_opener = false;
            let after = &self.text[comment.end_byte()..];
            let rest = after.trim_start_matches([' ', '\t']);
            let line_ends =
                body.starts_with("//") || rest.is_empty() || rest.starts_with(['\n', '\r']);
            forced = if line_ends { Sep::Newline } else { Sep::None };
            self.state.glue = leads_line && !line_ends;
        }
        self.state.pending = forced;
    }

    /// Writes a token of the source (a leaf, or a string literal whole).
    fn token(&mut self, node: Node<'a>) {
        let structural = std::mem::replace(&mut self.state.pending, Sep::None);
        let line_start = structural == Sep::Newline;
        self.flush_comments(node.start_byte(), line_start);
        let forced = std::mem::replace(&mut self.state.pending, Sep::None);
        let mut sep = structural.max(forced);
        if std::mem::take(&mut self.state.glue) && sep == Sep::Newline && forced == Sep::None {
            sep = SPACE;
        }
        let gap = self
            .text
            .get(self.state.last_end..node.start_byte())
            .unwrap_or("");
        let body = node_text(node, self.text);
        self.write_sep(sep, gap, !line_start, body);
        self.out.push_str(body);
        self.state.last_end = node.end_byte();
        self.state.after_opener = body.ends_with(['{', '(', '[']);
    }

    /// Writes a token that is not in the source (a trailing comma).
    fn synthetic(&mut self, body: &str) {
        let sep = std::mem::replace(&mut self.state.pending, Sep::None);
        self.write_sep(sep, "", true, body);
        self.out.push_str(body);
        self.state.after_opener = false;
        self.state.glue = false;
    }

    /// The width of the line being written, in characters.
    fn column(&self) -> usize {
        let start = self.out.rfind('\n').map_or(0, |i| i + 1);
        self.out[start..].chars().count()
    }

    /// Lays out with `layout` and keeps the result when it wrote no line
    /// break and the line, with `reserve` more columns, fits; otherwise
    /// undoes it and returns false.
    fn try_flat(&mut self, reserve: usize, layout: impl FnOnce(&mut Self)) -> bool {
        let saved = self.state.clone();
        let mark = self.out.len();
        layout(self);
        let fits = !self.out[mark..].contains('\n') && self.column() + reserve <= MAX_WIDTH;
        if !fits {
            self.out.truncate(mark);
            self.state = saved;
        }
        fits
    }

    fn has_comment_in(&self, start: usize, end: usize) -> bool {
        let first = self.comments.partition_point(|c| c.start_byte() < start);
        self.comments
            .get(first)
            .is_some_and(|c| c.start_byte() < end)
    }

    // ------------------------------------------------------------------
    // Layout of nodes
    // ------------------------------------------------------------------

    fn node(&mut self, node: Node<'a>) {
        match node.kind() {
            "compound_statement" => self.block(node),
            "parameter_list" => self.list(node, 2, true, false),
            "par_loop_arguments" => self.list(node, 1, true, true),
            "initializer_list" => self.list(node, 1, true, false),
            "print_statement" => self.print(node),
            "if_statement" | "for_statement" | "while_statement" | "do_statement" => {
                self.with_bodies(node);
            }
            "string_literal" => self.token(node),
            _ if node.child_count() == 0 => self.token(node),
            _ => self.inline(node),
        }
    }

    /// Children on one line, separated as [`inline_sep`] says.
    fn inline(&mut self, node: Node<'a>) {
        if node.kind() == "binary_expression" {
            self.binary_chain(node);
            return;
        }
        let parent = node.kind();
        let mut previous: Option<Node<'a>> = None;
        for child in kids(node) {
            if let Some(previous) = previous {
                self.sep(inline_sep(parent, previous, child));
            }
            self.node(child);
            previous = Some(child);
        }
    }

    /// A binary expression and the binary expressions down its left operand
    /// spine, laid out as [`Printer::inline`] would, without recursing along
    /// the spine.
    fn binary_chain(&mut self, outermost: Node<'a>) {
        let mut spine = vec![kids(outermost)];
        while let Some(&left) = spine.last().and_then(|k| k.first()) {
            if left.kind() != "binary_expression" {
                break;
            }
            spine.push(kids(left));
        }
        let mut first = true;
        for children in spine.iter().rev() {
            // The first child of every node but the innermost is the node
            // below, already written.
            let skip = usize::from(!first);
            first = false;
            for (i, &child) in children.iter().enumerate().skip(skip) {
                if i > 0 {
                    self.sep(inline_sep("binary_expression", children[i - 1], child));
                }
                self.node(child);
            }
        }
    }

    /// `{`, one statement per line one level in, `}`.
    fn block(&mut self, node: Node<'a>) {
        let children = kids(node);
        let (Some(&open), Some(&close)) = (children.first(), children.last()) else {
            return;
        };
        if children.len() < 2 || open.kind() != "{" || close.kind() != "}" {
            self.inline(node);
            return;
        }
        self.token(open);
        self.indent();
        let statements = &children[1..children.len() - 1];
        for &statement in statements {
            self.sep(Sep::Newline);
            self.node(statement);
        }
        let inner_comments = self.has_comment_in(open.end_byte(), close.start_byte());
        self.flush_comments(close.start_byte(), true);
        self.dedent();
        if !statements.is_empty() || inner_comments {
            self.sep(Sep::Newline);
        }
        self.token(close);
    }

    /// `if`, `for`, `while` and `do`: the head on one line, a block body
    /// after a space, any other body on the next line one level in.
    fn with_bodies(&mut self, node: Node<'a>) {
        let parent = node.kind();
        let mut previous: Option<Node<'a>> = None;
        let mut after_body: Option<bool> = None;
        for (child, field) in kids_with_fields(node) {
            let is_body = matches!(field, Some("consequence" | "alternative" | "body"));
            if is_body {
                let else_if =
                    child.kind() == "if_statement" && previous.is_some_and(|p| p.kind() == "else");
                if child.kind() == "compound_statement" || else_if {
                    self.sep(SPACE);
                    self.node(child);
                } else {
                    self.indent();
                    self.sep(Sep::Newline);
                    self.node(child);
                    self.dedent();
                }
                after_body = Some(child.kind() == "compound_statement");
            } else {
                match (after_body.take(), previous) {
                    // `} else`, `} while (…);` after a block; on a line of
                    // their own after any other statement.
                    (Some(true), _) => self.sep(SPACE),
                    (Some(false), _) => self.sep(Sep::Newline),
                    (None, Some(previous)) => self.sep(inline_sep(parent, previous, child)),
                    (None, None) => {}
                }
                self.node(child);
            }
            previous = Some(child);
        }
    }

    /// A bracketed comma-separated list: on one line when it fits (with
    /// `reserve` columns for what follows it), else one item per line.
    fn list(&mut self, node: Node<'a>, reserve: usize, trailing_comma: bool, align_modes: bool) {
        let children = kids(node);
        let (Some(&open), Some(&close)) = (children.first(), children.last()) else {
            return;
        };
        let mut items: Vec<(Node<'a>, Option<Node<'a>>)> = Vec::new();
        for &child in &children[1..children.len().saturating_sub(1)] {
            if child.kind() == "," {
                if let Some(last) = items.last_mut() {
                    last.1 = Some(child);
                }
            } else {
                items.push((child, None));
            }
        }
        if children.len() < 2 || items.is_empty() {
            self.inline(node);
            return;
        }
        let flat = self.try_flat(reserve, |p| {
            p.token(open);
            let count = items.len();
            for (i, &(item, comma)) in items.iter().enumerate() {
                if i > 0 {
                    p.sep(SPACE);
                }
                p.node(item);
                if let Some(comma) = comma.filter(|_| i + 1 < count) {
                    p.token(comma);
                }
            }
            p.token(close);
        });
        if flat {
            return;
        }
        // Modes line up in a column, for the arguments that have one and
        // no comment inside.
        let data_width = |p: &Self, argument: Node<'a>| -> Option<usize> {
            let mode = argument
                .child_by_field_name("mode")
                .or_else(|| argument.child_by_field_name("info"))?;
            if p.has_comment_in(argument.start_byte(), argument.end_byte()) {
                return None;
            }
            let data = p.text.get(argument.start_byte()..mode.start_byte())?;
            Some(data.chars().filter(|c| !c.is_whitespace()).count())
        };
        let column = if align_modes {
            items
                .iter()
                .filter_map(|&(item, _)| data_width(self, item))
                .max()
        } else {
            None
        };
        self.token(open);
        self.indent();
        let count = items.len();
        for (i, &(item, comma)) in items.iter().enumerate() {
            self.sep(Sep::Newline);
            match (column, data_width(self, item)) {
                (Some(column), Some(width)) if item.kind() == "par_loop_argument" => {
                    self.par_loop_argument(item, 1 + column - width);
                }
                _ => self.node(item),
            }
            match comma {
                Some(comma) => self.token(comma),
                None if trailing_comma || i + 1 < count => self.synthetic(","),
                None => {}
            }
        }
        self.flush_comments(close.start_byte(), true);
        self.dedent();
        self.sep(Sep::Newline);
        self.token(close);
    }

    /// A par_loop argument with `spaces` before its mode.
    fn par_loop_argument(&mut self, node: Node<'a>, spaces: usize) {
        let mut previous: Option<Node<'a>> = None;
        for (child, field) in kids_with_fields(node) {
            if let Some(previous) = previous {
                let sep = if matches!(field, Some("mode" | "info")) {
                    Sep::Space(spaces)
                } else {
                    inline_sep(node.kind(), previous, child)
                };
                self.sep(sep);
            }
            self.node(child);
            previous = Some(child);
        }
    }

    /// `print(FORMAT, ARGS…);` on one line when it fits, else the format
    /// and each value on a line of its own.
    fn print(&mut self, node: Node<'a>) {
        let children = kids(node);
        let open = children.iter().position(|c| c.kind() == "(");
        let close = children.iter().rposition(|c| c.kind() == ")");
        let (Some(open), Some(close)) = (open, close) else {
            self.inline(node);
            return;
        };
        if close < open + 2 {
            self.inline(node);
            return;
        }
        for (i, &child) in children[..=open].iter().enumerate() {
            if i > 0 {
                self.sep(inline_sep(node.kind(), children[i - 1], child));
            }
            self.node(child);
        }
        let inner = &children[open + 1..close];
        let tail = &children[close..];
        let flat = self.try_flat(0, |p| {
            for (i, &child) in inner.iter().enumerate() {
                if i > 0 && child.kind() != "," {
                    p.sep(SPACE);
                }
                p.node(child);
            }
            for &child in tail {
                p.node(child);
            }
        });
        if flat {
            return;
        }
        self.indent();
        for &child in inner {
            if child.kind() != "," {
                self.sep(Sep::Newline);
            }
            self.node(child);
        }
        self.flush_comments(children[close].start_byte(), true);
        self.dedent();
        self.sep(Sep::Newline);
        for &child in tail {
            self.node(child);
        }
    }
}

/// What separates two neighbouring children of a `parent` on one line.
fn inline_sep(parent: &str, previous: Node<'_>, next: Node<'_>) -> Sep {
    let (before, after) = (previous.kind(), next.kind());
    if matches!(after, ";" | "," | ")" | "]" | "[") || matches!(before, "(" | "[") {
        return Sep::None;
    }
    match parent {
        "map_declaration" | "dat_declaration" | "const_declaration" | "global_declaration"
            if after == ":" =>
        {
            Sep::None
        }
        "parameter" if before == "*" => Sep::None,
        "variable_declarator" if before == "pointer_marker" => Sep::None,
        "call_expression" if after == "argument_list" => Sep::None,
        "kernel_definition" if after == "parameter_list" => Sep::None,
        "len_expression" | "print_statement" | "exit_statement" | "info_mode" if after == "(" => {
            Sep::None
        }
        "unary_expression" | "update_expression" => Sep::None,
        _ => SPACE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(input: &str, expected: &str) {
        let formatted = format(input).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(formatted, expected, "formatting:\n{input}");
        assert_eq!(
            format(&formatted).as_deref(),
            Ok(expected),
            "not idempotent"
        );
    }

    #[test]
    fn declarations() {
        check(
            "set   a ;set b;\nmap m:a->b [2] ;\ndat d : double[4]on a={1,2 ,3,4,};\nconst c:int=1+2*3;",
            "set a;\nset b;\nmap m: a -> b[2];\ndat d: double[4] on a = {1, 2, 3, 4};\nconst c: int = 1 + 2 * 3;\n",
        );
    }

    #[test]
    fn kernel_bodies() {
        check(
            "kernel k(const double*x,double y[2]){double t=-x[0],u;if(t>0)y[0]=t;else{y[1]=*x;}\nfor(int i=0;i<2;i++)y[i]+=(double)i;}",
            "kernel k(const double *x, double y[2]) {\n    double t = -x[0], u;\n    if (t > 0)\n        y[0] = t;\n    else {\n        y[1] = *x;\n    }\n    for (int i = 0; i < 2; i++)\n        y[i] += (double) i;\n}\n",
        );
    }

    #[test]
    fn unary_operators_never_glue() {
        check(
            "kernel k(double *x) { x[0] = - -x[0]; x[0] = -(-x[0]); }",
            "kernel k(double *x) {\n    x[0] = - -x[0];\n    x[0] = -(-x[0]);\n}\n",
        );
    }

    #[test]
    fn comments_stay() {
        check(
            "// head\n\n\nset a; // trailing\n/* own */ set b;\nkernel k() { // after brace\n  // inside\n}\n// end",
            "// head\n\nset a; // trailing\n/* own */ set b;\nkernel k() { // after brace\n    // inside\n}\n// end\n",
        );
    }

    #[test]
    fn par_loops_break_with_aligned_modes() {
        let head = "main {\n    par_loop kernel_with_a_long_name over cells (";
        let args = "p_x[pcell[0]] READ, p_x[pcell[1]] READ, p_q READ, p_adt WRITE, g_rms INC, gam";
        check(
            &format!("{head}{args});\n}}\n"),
            "main {\n    par_loop kernel_with_a_long_name over cells (\n        p_x[pcell[0]] READ,\n        p_x[pcell[1]] READ,\n        p_q           READ,\n        p_adt         WRITE,\n        g_rms         INC,\n        gam,\n    );\n}\n",
        );
        check(
            "main { par_loop k over c (\n  a READ,\n  b WRITE,\n); }",
            "main {\n    par_loop k over c (a READ, b WRITE);\n}\n",
        );
    }

    #[test]
    fn index_arguments_and_info_modes_align_with_the_modes() {
        let head = "main {\n    par_loop update_with_a_long_name over cells (";
        let args = "p_q RW, maxerr MAX, idx, idx [ pcell [1] ] READ, errloc INFO ( maxerr )";
        check(
            &format!("{head}{args});\n}}\n"),
            "main {\n    par_loop update_with_a_long_name over cells (\n        p_q           RW,\n        maxerr        MAX,\n        idx,\n        idx[pcell[1]] READ,\n        errloc        INFO(maxerr),\n    );\n}\n",
        );
    }

    #[test]
    fn refuses_syntax_errors() {
        assert!(matches!(format("set a"), Err(FormatError::Syntax(e)) if !e.is_empty()));
    }
}
