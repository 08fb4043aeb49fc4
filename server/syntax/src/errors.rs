//! Syntax diagnostics (E001): what the parser could not read, and the C
//! constructs the language leaves out, each named in its message.
//!
//! Tree-sitter reports two kinds of trouble. A MISSING node is a single token
//! it invented to go on (a `;`, a `}`): the message names it, at the place
//! rustc would point, just after the token before it. An ERROR node wraps
//! text it could not place, and says nothing about why; the parse state
//! before it tells which tokens would have been accepted, and when the first
//! token of the ERROR was one of them, the trouble lies further in and a few
//! heuristics look for it (an item keyword on a new line, an unclosed
//! delimiter, the fixed head of a declaration or par_loop). When none
//! applies the message only says what could not be parsed: a message that
//! names the wrong token is worse than one that names none.

use tree_sitter::{Language, Node, Tree, TreeCursor};

use crate::ast::{AccessMode, BUILTINS, NodeText, ScalarType, language};
use crate::diagnostic::{Code, Diagnostic, FileId, Fix, Location, TextEdit};
use crate::text::TextRange;

/// Most alternatives listed in an "expected …" message; beyond that the list
/// says nothing useful and only the found token is named.
const MAX_EXPECTED: usize = 6;

/// C type words users write out of habit, which the language spells otherwise.
const C_TYPE_WORDS: &[&str] = &[
    "unsigned", "signed", "long", "short", "char", "void", "size_t",
];

/// Keywords that begin a top-level item: on a new line inside an ERROR they
/// mark where the previous item should have ended.
const ITEM_KEYWORDS: &[&str] = &[
    "import", "set", "map", "dat", "const", "global", "kernel", "main",
];

/// Tokens that may start an expression; when all of the first four are
/// expected, "an expression" says it shorter.
const EXPRESSION_STARTS: &[&str] = &[
    "identifier",
    "integer_literal",
    "float_literal",
    "(",
    "true",
    "false",
    "-",
    "+",
    "!",
    "~",
    "*",
    "&",
    "++",
    "--",
    "len",
];

/// The scalar type keywords of the grammar.
const SCALAR_TYPES: &[&str] = &["double", "float", "int", "uint", "ll", "ull", "bool"];

/// The state tree-sitter starts every parse in.
const START_STATE: u16 = 1;

const UNSUPPORTED_SIZEOF: &str = "`sizeof` is not supported; write the size as a number";

/// Which syntax diagnostics a walk reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// Everything: what the parser could not read and unsupported C.
    All,
    /// Only ERROR and MISSING nodes, looking only inside subtrees that hold
    /// one (cheap on a valid file: nothing is visited).
    Unparsed,
    /// Only the unsupported C constructs of a subtree (a kernel, cached by
    /// the analysis with the kernel).
    Unsupported,
}

pub(crate) fn syntax_errors(tree: &Tree, text: &str, file: FileId) -> Vec<Diagnostic> {
    errors_in(tree.root_node(), text, file, Part::All)
}

/// The syntax diagnostics of `root`'s subtree in `scope`.
pub(crate) fn errors_in(root: Node<'_>, text: &str, file: FileId, part: Part) -> Vec<Diagnostic> {
    let checker = Checker::new(text, file, root);
    let mut out = Vec::new();
    let mut cursor = root.walk();
    // The ancestors of the cursor's node, `root` first. Parents and
    // siblings are taken from here and never asked of tree-sitter: its
    // `parent`, `prev_sibling` and `next_sibling` descend from the root
    // again on every call, and for an empty (MISSING) node they recurse
    // once per level in C, which a deeply nested file turns into a stack
    // overflow.
    let mut path: Vec<Node<'_>> = Vec::new();
    let mut visit_children = true;
    loop {
        let node = cursor.node();
        if visit_children {
            let at = At {
                parents: &path,
                field: cursor.field_name(),
            };
            // Report, then decide whether to look inside.
            let descend = match part {
                Part::All => checker.check_node(node, &at, &mut out),
                Part::Unparsed => {
                    if node.is_missing() || node.is_error() {
                        checker.check_node(node, &at, &mut out);
                        false
                    } else if node.has_error() {
                        // Descend only where the whole walk does: an
                        // unsupported construct is reported once, not with
                        // the errors inside it. (Its own report belongs to
                        // the other part.)
                        checker.check_node(node, &at, &mut Vec::new())
                    } else {
                        false
                    }
                }
                Part::Unsupported => {
                    if node.is_missing() || node.is_error() {
                        false
                    } else {
                        checker.check_node(node, &at, &mut out)
                    }
                }
            };
            if descend && cursor.goto_first_child() {
                path.push(node);
                continue;
            }
        }
        if cursor.node() == root {
            break;
        }
        if cursor.goto_next_sibling() {
            visit_children = true;
            continue;
        }
        if !cursor.goto_parent() || cursor.node() == root {
            break;
        }
        path.pop();
        visit_children = false;
    }
    out
}

/// Where the walk stands: the ancestors of the node it is at, from the
/// walk's root down to its parent, and the field the node fills in its
/// parent.
struct At<'a, 't> {
    parents: &'a [Node<'t>],
    field: Option<&'t str>,
}

impl<'t> At<'_, 't> {
    fn parent(&self) -> Option<Node<'t>> {
        self.parents.last().copied()
    }
}

/// One step of the fixed head of a construct (see [`HEADS`]).
#[derive(Clone, Copy, Debug)]
enum Step {
    /// This keyword or punctuation.
    Token(&'static str),
    /// A name that is not a keyword.
    Name,
    /// An integer literal.
    Integer,
    /// A scalar type keyword.
    Type,
    /// These steps, or none of them when the first does not match.
    Optional(&'static [Step]),
    /// Either of these tokens.
    Either(&'static str, &'static str),
    /// This token or nothing, not mentioned in messages (`*` before a
    /// local's name: it parses, but is not worth suggesting).
    Skip(&'static str),
}

/// Where a head may appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    /// At the top level of the file.
    Item,
    /// Anywhere.
    Any,
}

const DIMENSION: Step = Step::Optional(&[Step::Token("["), Step::Integer, Step::Token("]")]);

/// The fixed beginnings of constructs, after their first token, as
/// `grammar.js` spells them. Tree-sitter's recovery often wraps a whole
/// broken declaration in one ERROR; matching its tokens against the head
/// finds the token that went wrong. Only the part before anything optional
/// or repeated that is not listed here is checked: a mismatch is then
/// certain.
const HEADS: &[(&str, Scope, &[Step])] = &[
    ("set", Scope::Item, &[Step::Name, Step::Token(";")]),
    (
        "map",
        Scope::Item,
        &[
            Step::Name,
            Step::Token(":"),
            Step::Name,
            Step::Token("->"),
            Step::Name,
            Step::Token("["),
            Step::Integer,
            Step::Token("]"),
            Step::Token(";"),
        ],
    ),
    (
        "dat",
        Scope::Item,
        &[
            Step::Name,
            Step::Token(":"),
            Step::Type,
            DIMENSION,
            Step::Token("on"),
            Step::Name,
            Step::Either("=", ";"),
        ],
    ),
    (
        "const",
        Scope::Item,
        &[
            Step::Name,
            Step::Token(":"),
            Step::Type,
            DIMENSION,
            Step::Either("=", ";"),
        ],
    ),
    (
        "global",
        Scope::Item,
        &[
            Step::Name,
            Step::Token(":"),
            Step::Type,
            DIMENSION,
            Step::Either("=", ";"),
        ],
    ),
    ("kernel", Scope::Item, &[Step::Name, Step::Token("(")]),
    ("main", Scope::Item, &[Step::Token("{")]),
    (
        "par_loop",
        Scope::Any,
        &[
            Step::Name,
            Step::Optional(&[Step::Token("as"), Step::Name]),
            Step::Token("over"),
            Step::Name,
            Step::Token("("),
        ],
    ),
];

/// A local declaration or parameter after its type: `double *p`, `double x`.
const TYPED_NAME: &[Step] = &[Step::Skip("*"), Step::Name];

struct Checker<'s> {
    text: &'s str,
    /// The children of the parents [`preceding_in`] has looked into, by
    /// the parent's id (a file of many items with many errors asks for the
    /// same long list again and again).
    children: std::cell::RefCell<Children<'s>>,
    /// The tokens of the file in order, read as far as the walk has come
    /// (for the tokens just before and after an error).
    stream: std::cell::RefCell<TokenStream<'s>>,
    /// A place and the end of its line, last found by [`Checker::line_end`].
    line: std::cell::Cell<Option<(usize, usize)>>,
    file: FileId,
    language: Language,
    /// Tree-sitter numbers terminal symbols first, then nonterminals starting
    /// with the first rule (`source_file`): a symbol below this one is a token.
    first_nonterminal: u16,
}

impl<'s> Checker<'s> {
    fn new(text: &'s str, file: FileId, root: Node<'s>) -> Checker<'s> {
        let language = language();
        let first_nonterminal = language.id_for_node_kind("source_file", true);
        Checker {
            text,
            children: std::cell::RefCell::default(),
            stream: std::cell::RefCell::new(TokenStream::new(root)),
            line: std::cell::Cell::new(None),
            file,
            language,
            first_nonterminal,
        }
    }

    fn error(&self, range: TextRange, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Code::E001, self.location(range), message)
    }

    fn location(&self, range: TextRange) -> Location {
        Location {
            file: self.file,
            range,
        }
    }

    /// Reports `node` if it is wrong; returns whether its children need a look.
    fn check_node(&self, node: Node<'s>, at: &At<'_, 's>, out: &mut Vec<Diagnostic>) -> bool {
        if node.is_missing() {
            out.push(self.missing(node, at));
            return false;
        }
        if node.is_error() {
            out.push(self.error_node(node, at));
            return false;
        }
        let mut report = |range: TextRange, message: &str| out.push(self.error(range, message));
        match node.kind() {
            "switch_statement" => {
                report(
                    keyword_range(node),
                    "`switch` is not supported; use `if` and `else if`",
                );
                // Its `case` labels are part of the same mistake.
                return false;
            }
            "case_label" => report(
                node.text_range(),
                "`case` labels are not supported outside `switch`, which is not supported either",
            ),
            "goto_statement" => report(
                keyword_range(node),
                "`goto` is not supported; use loops with `break` and `continue`",
            ),
            "struct_specifier" => {
                report(
                    keyword_range(node),
                    "`struct` is not supported; declare each member as a local variable",
                );
                return false;
            }
            "pointer_marker" => report(
                node.text_range(),
                "pointer declarations are not supported in kernel bodies; index a parameter instead (`p[i]`)",
            ),
            "unary_expression" => {
                if let Some(operator) = node
                    .child_by_field_name("operator")
                    .filter(|op| op.kind() == "&")
                {
                    report(
                        operator.text_range(),
                        "taking an address with `&` is not supported; kernels work on their parameters directly",
                    );
                }
            }
            "call_expression" => {
                if let Some(function) = node.child_by_field_name("function") {
                    let name = function.text(self.text);
                    if name == "sizeof" {
                        // `sizeof(double)` holds an ERROR too: one report for the construct.
                        report(function.text_range(), UNSUPPORTED_SIZEOF);
                        return false;
                    }
                    if !BUILTINS.contains(&name) {
                        report(
                            function.text_range(),
                            &format!(
                                "call to `{name}` is not supported; kernels may call only the built-in math functions"
                            ),
                        );
                    }
                }
            }
            "return_statement" => {
                if let Some(value) = node.child_by_field_name("value") {
                    report(
                        value.text_range(),
                        "`return` takes no value here; kernels and `main` return nothing",
                    );
                }
            }
            _ => {}
        }
        true
    }

    // ------------------------------------------------------------------
    // MISSING nodes
    // ------------------------------------------------------------------

    /// A MISSING node sits where the parser invented it; report it just after
    /// the token before it, where rustc would point.
    fn missing(&self, node: Node<'s>, place: &At<'_, 's>) -> Diagnostic {
        let at = self
            .previous_token(node)
            .map_or(node.start_byte(), |token| token.end_byte());
        let at = TextRange::from(at..at);
        let kind = node.kind();
        // The parser invents the cheapest token that would do: a name for an
        // expression, `double` for a type. Say what was wanted instead.
        let category = place.parent().map(|parent| parent.kind()).filter(|parent| {
            matches!(
                *parent,
                "primitive_type" | "access_mode" | "boolean_literal"
            )
        });
        let wanted = match category {
            Some(parent) => describe_kind(parent, true),
            None if kind == "identifier" && is_expression_slot(place) => "an expression".to_owned(),
            None => describe_kind(kind, node.is_named()),
        };
        let found = self.describe_found(self.next_token(node));
        let mut diagnostic = self.error(at, format!("expected {wanted}, found {found}"));
        if kind == ";" {
            diagnostic = diagnostic.with_fix(self.insert(at, ";"));
        }
        if let Some(opener) = opener_of(node, place.parent()) {
            diagnostic =
                diagnostic.with_related(self.location(opener.text_range()), "unclosed delimiter");
        }
        diagnostic
    }

    fn insert(&self, at: TextRange, token: &str) -> Fix {
        Fix {
            title: format!("insert `{token}`"),
            edits: vec![TextEdit {
                file: self.file,
                range: at,
                replacement: token.to_owned(),
            }],
        }
    }

    // ------------------------------------------------------------------
    // ERROR nodes
    // ------------------------------------------------------------------

    fn error_node(&self, node: Node<'s>, at: &At<'_, 's>) -> Diagnostic {
        let (tokens, stray_quote) = tokens(node);
        let before = self.previous_token(node);
        let Some(&first) = tokens.first() else {
            // An empty ERROR: nothing was skipped, something was expected.
            let found = self.next_token(node);
            return self.error(
                TextRange::from(node.byte_range()),
                format!("unexpected {}", self.describe_found(found)),
            );
        };

        if let Some(diagnostic) = self.unsupported_c(first, before) {
            return diagnostic;
        }
        if let Some(diagnostic) = self.unterminated(first, stray_quote) {
            return diagnostic;
        }

        // The tokens the parser would have taken where the ERROR begins. If
        // the first token of the ERROR is not among them, it is the culprit.
        let expected = self.expected_before(node, at.parents, before);
        match &expected {
            Some(expected) if !expected.contains(&self.symbol(first)) => {
                return self.expected_found(before, Some(first), expected);
            }
            _ => {}
        }

        // The first token was acceptable (or the state is unknown): look
        // further in.
        if let Some(diagnostic) = self.print_with_string(node, at.parent()) {
            return diagnostic;
        }
        if let Some(diagnostic) = self.parameter_shape(node, at.parent(), &tokens) {
            return diagnostic;
        }
        if let Some(diagnostic) = self.match_head(node, at.parent(), &tokens) {
            return diagnostic;
        }
        if let Some(diagnostic) = self.scan(node, &tokens) {
            return diagnostic;
        }

        if tokens.len() == 1 || (expected.is_none() && !can_start_something(self.token_kind(first)))
        {
            return self.error(
                first.text_range(),
                format!("unexpected {}", self.describe_found(Some(first))),
            );
        }
        let snippet = shorten(node.text(self.text));
        self.error(node.text_range(), format!("could not parse `{snippet}`"))
    }

    /// The tokens acceptable where `node` begins. The state before it comes
    /// after a whole node, which the parser may have closed too early (it
    /// reduced `p_q` to an argument before seeing `[`); what could have
    /// continued the token before counts too, when its state is known.
    fn expected_before(
        &self,
        node: Node<'s>,
        parents: &[Node<'s>],
        before: Option<Node<'s>>,
    ) -> Option<Vec<u16>> {
        let mut expected = self.lookahead(self.state_before(node, parents)?)?;
        let extension = before
            .filter(|token| !token.is_error() && !token.is_missing())
            .map(|token| token.next_parse_state())
            .filter(|&state| self.is_valid_state(state))
            .and_then(|state| self.lookahead(state));
        for symbol in extension.into_iter().flatten() {
            if !expected.contains(&symbol) {
                expected.push(symbol);
            }
        }
        Some(expected)
    }

    /// C that the grammar has no node for, recognised by its tokens.
    fn unsupported_c(&self, first: Node<'s>, before: Option<Node<'s>>) -> Option<Diagnostic> {
        let token = first.text(self.text);
        // `unsigned x = 1;` parses as the expression `unsigned` followed by
        // an ERROR `x`: the type word is the token before.
        for candidate in [Some(first), before].into_iter().flatten() {
            let word = candidate.text(self.text);
            if candidate.kind() == "identifier" && C_TYPE_WORDS.contains(&word) {
                return Some(self.error(
                    candidate.text_range(),
                    format!(
                        "`{word}` is a C type the language does not have; use `double`, `float`, `int`, `uint`, `ll`, `ull` or `bool`"
                    ),
                ));
            }
            if word == "sizeof" {
                return Some(self.error(candidate.text_range(), UNSUPPORTED_SIZEOF));
            }
        }
        let member_access = |range: TextRange, operator: &str| {
            self.error(
                range,
                format!(
                    "member access with `{operator}` is not supported; structs are not part of the language"
                ),
            )
        };
        match token {
            "typedef" => Some(self.error(first.text_range(), "`typedef` is not supported")),
            "->" | "." => Some(member_access(first.text_range(), token)),
            // Where `->` is not a token, `p->a` lexes as `p - > a`.
            ">" => before
                .filter(|minus| minus.kind() == "-" && minus.end_byte() == first.start_byte())
                .map(|minus| {
                    member_access(TextRange::from(minus.start_byte()..first.end_byte()), "->")
                }),
            _ => None,
        }
    }

    /// An unterminated block comment or string: lexical, so say so.
    fn unterminated(&self, first: Node<'s>, stray_quote: Option<Node<'s>>) -> Option<Diagnostic> {
        if self
            .slice(first.start_byte()..self.text.len())
            .starts_with("/*")
        {
            return Some(self.error(
                TextRange::from(first.start_byte()..first.start_byte() + 2),
                "unterminated block comment; it needs a closing `*/`",
            ));
        }
        // A quote that does not belong to a whole string literal.
        let quote = stray_quote?;
        let line_end = self.line_end(quote.start_byte());
        Some(self.error(
            TextRange::from(quote.start_byte()..line_end),
            "unterminated string; a string ends with `\"` on the line it starts",
        ))
    }

    /// `print("%s", "x")`: only the format may be a string.
    fn print_with_string(&self, node: Node<'s>, parent: Option<Node<'s>>) -> Option<Diagnostic> {
        let parent = parent?;
        if parent.kind() != "print_statement" {
            return None;
        }
        let mut cursor = node.walk();
        let has_string = node
            .children(&mut cursor)
            .any(|child| child.kind() == "string_literal");
        if !has_string {
            return None;
        }
        let format = parent.child_by_field_name("format")?;
        let keyword = parent.child(0).map_or("print", |k| k.kind());
        Some(self.error(
            format.text_range(),
            format!("only the first argument of `{keyword}`, its format, may be a string"),
        ))
    }

    /// `double q` in a parameter list: a parameter needs a `*` or a dimension.
    fn parameter_shape(
        &self,
        node: Node<'s>,
        parent: Option<Node<'s>>,
        tokens: &[Node<'s>],
    ) -> Option<Diagnostic> {
        if parent?.kind() != "parameter_list" {
            return None;
        }
        let kinds: Vec<&str> = tokens.iter().map(|&token| self.token_kind(token)).collect();
        let shape = match kinds.as_slice() {
            ["const", ty, "identifier"] | [ty, "identifier"] => ScalarType::from_keyword(ty),
            _ => None,
        };
        let after = self.next_token(node).map(|after| self.token_kind(after));
        (shape.is_some() && matches!(after, Some("," | ")"))).then(|| {
            self.error(
                node.text_range(),
                "a parameter needs a `*` before its name or a dimension after it (`double *q` or `double q[4]`)",
            )
        })
    }

    /// Matches the tokens of an ERROR against the fixed head of the construct
    /// its first token begins (see [`HEADS`]).
    fn match_head(
        &self,
        node: Node<'s>,
        parent: Option<Node<'s>>,
        tokens: &[Node<'s>],
    ) -> Option<Diagnostic> {
        let at_top = parent.is_none_or(|parent| parent.kind() == "source_file");
        let first = self.token_kind(tokens[0]);
        let steps = if ScalarType::from_keyword(first).is_some() {
            if at_top {
                return None;
            }
            TYPED_NAME
        } else {
            HEADS.iter().find_map(|&(keyword, scope, steps)| {
                let applies = match scope {
                    Scope::Item => at_top,
                    Scope::Any => true,
                };
                (keyword == first && applies).then_some(steps)
            })?
        };
        // The token after the ERROR counts too: the head may end there.
        let mut input: Vec<Option<Node<'s>>> = tokens[1..].iter().copied().map(Some).collect();
        input.push(self.next_token(node));
        let mut position = 0;
        let mut also: Vec<String> = Vec::new();
        self.match_steps(steps, &input, &mut position, &mut also)
            .err()
            .map(|(at, wanted)| {
                let previous = if at == 0 {
                    tokens[0]
                } else {
                    input[at - 1].unwrap_or(tokens[0])
                };
                self.report_expected(Some(previous), input[at], &wanted)
            })
    }

    /// Advances `position` over `steps`; on a mismatch returns where, and the
    /// description of what would have matched there.
    fn match_steps(
        &self,
        steps: &[Step],
        input: &[Option<Node<'s>>],
        position: &mut usize,
        also: &mut Vec<String>,
    ) -> Result<(), (usize, Vec<String>)> {
        for &step in steps {
            let Some(&token) = input.get(*position) else {
                // Out of tokens without a mismatch: nothing to say.
                return Ok(());
            };
            if let Step::Skip(word) = step {
                if token.is_some_and(|token| self.token_kind(token) == word) {
                    *position += 1;
                }
                continue;
            }
            if let Step::Optional(inner) = step {
                let starts = token.is_some_and(|token| self.step_matches(inner[0], token));
                if starts {
                    also.clear();
                    self.match_steps(inner, input, position, also)?;
                } else {
                    also.push(describe_step(inner[0]));
                }
                continue;
            }
            match token {
                Some(token) if self.step_matches(step, token) => {
                    also.clear();
                    *position += 1;
                }
                _ => {
                    let mut wanted = std::mem::take(also);
                    match step {
                        Step::Either(a, b) => {
                            wanted.push(format!("`{a}`"));
                            wanted.push(format!("`{b}`"));
                        }
                        _ => wanted.push(describe_step(step)),
                    }
                    return Err((*position, wanted));
                }
            }
        }
        Ok(())
    }

    fn step_matches(&self, step: Step, token: Node<'s>) -> bool {
        let kind = self.token_kind(token);
        match step {
            Step::Token(word) => kind == word,
            Step::Name => kind == "identifier",
            Step::Integer => kind == "integer_literal",
            Step::Type => ScalarType::from_keyword(kind).is_some(),
            Step::Optional(inner) => self.step_matches(inner[0], token),
            Step::Either(a, b) => kind == a || kind == b,
            Step::Skip(word) => kind == word,
        }
    }

    /// Walks the tokens of an ERROR, tracking brackets, for the two mistakes
    /// that show in its shape: a statement or declaration that runs on into
    /// the next line (a missing `;`), and a bracket never closed.
    fn scan(&self, node: Node<'s>, tokens: &[Node<'s>]) -> Option<Diagnostic> {
        let head = self.token_kind(tokens[0]);
        // A kernel or main head ends in `)` or `main`, not `;`.
        let head_without_semicolon = matches!(head, "kernel" | "main");
        let mut open: Vec<Node<'s>> = Vec::new();
        let mut previous: Option<Node<'s>> = None;
        for &token in tokens {
            let kind = self.token_kind(token);
            let Some(previous) = previous.replace(token) else {
                if matches!(kind, "(" | "[" | "{") {
                    open.push(token);
                }
                continue;
            };
            if self.starts_line(previous, token) {
                let inside = open.last().map(|opener| opener.kind());
                match inside {
                    Some("(" | "[") if ITEM_KEYWORDS.contains(&kind) => {
                        return Some(self.unclosed(open[open.len() - 1], previous, Some(token)));
                    }
                    None if head_without_semicolon => {}
                    Some("(" | "[") => {}
                    _ if self.can_end_statement(previous) && can_start_statement(kind) => {
                        return Some(self.report_expected(
                            Some(previous),
                            Some(token),
                            &["`;`".to_owned()],
                        ));
                    }
                    _ => {}
                }
            }
            let in_parentheses = open.last().is_some_and(|opener| opener.kind() == "(");
            match kind {
                // A block cannot start inside parentheses; only a list
                // initialiser (`= {`) can.
                "{" if in_parentheses && !matches!(self.token_kind(previous), "=" | ",") => {
                    return Some(self.unclosed(open[open.len() - 1], previous, Some(token)));
                }
                "(" | "[" | "{" => open.push(token),
                ")" | "]" | "}" => match open.last() {
                    Some(opener) if closer(opener.kind()) == Some(kind) => {
                        open.pop();
                    }
                    Some(&opener) => return Some(self.unclosed(opener, previous, Some(token))),
                    None => {}
                },
                _ => {}
            }
        }

        let last = tokens[tokens.len() - 1];
        let after = self.next_token(node);
        if let Some(&opener) = open.last() {
            // The text after the ERROR shows the bracket will not be closed:
            // the file ends, the next item begins, the statement ends, or
            // another bracket closes.
            let runs_out = after.is_none_or(|after| {
                let kind = self.token_kind(after);
                (self.starts_line(last, after) && ITEM_KEYWORDS.contains(&kind))
                    || kind == ";"
                    || (matches!(kind, ")" | "]" | "}") && closer(opener.kind()) != Some(kind))
            });
            if runs_out {
                return Some(self.unclosed(opener, last, after));
            }
            return None;
        }
        // `q[1] +;`: an operator without its right operand.
        if let Some(after) = after {
            let after_kind = self.token_kind(after);
            if is_binary_operator(self.token_kind(last))
                && matches!(after_kind, ";" | ")" | "]" | "}" | ",")
            {
                return Some(self.report_expected(
                    Some(last),
                    Some(after),
                    &["an expression".to_owned()],
                ));
            }
        }
        // `x = 1 }` and `int i` + new line: the statement wanted its `;`.
        let ends_statement = after.is_some_and(|after| {
            let kind = self.token_kind(after);
            kind == "}" || (self.starts_line(last, after) && can_start_statement(kind))
        });
        if ends_statement && !head_without_semicolon && self.can_end_statement(last) {
            return Some(self.report_expected(Some(last), after, &["`;`".to_owned()]));
        }
        None
    }

    fn unclosed(
        &self,
        opener: Node<'s>,
        previous: Node<'s>,
        found: Option<Node<'s>>,
    ) -> Diagnostic {
        let closing = closer(opener.kind()).unwrap_or(")");
        self.report_expected(Some(previous), found, &[format!("`{closing}`")])
            .with_related(self.location(opener.text_range()), "unclosed delimiter")
    }

    /// "expected …, found …" from the parser's own expectations.
    fn expected_found(
        &self,
        before: Option<Node<'s>>,
        found: Option<Node<'s>>,
        expected: &[u16],
    ) -> Diagnostic {
        let semicolon = self.language.id_for_node_kind(";", false);
        let on_new_line = matches!((before, found), (Some(b), Some(f)) if self.starts_line(b, f));
        // A line that ends where `;` would do, followed by more: rustc says
        // "expected `;`" however many other tokens could have continued it.
        if on_new_line && expected.contains(&semicolon) {
            return self.report_expected(before, found, &["`;`".to_owned()]);
        }
        match self.describe_expected(expected) {
            Some(wanted) => self.report_expected(before, found, &wanted),
            None => {
                let range = found.map_or_else(
                    || TextRange::from(self.text.len()..self.text.len()),
                    |found| found.text_range(),
                );
                self.error(range, format!("unexpected {}", self.describe_found(found)))
            }
        }
    }

    /// "expected A, found B", placed like rustc: at the found token, or just
    /// after the previous token when the found one is on a later line (or
    /// is the end of the file), with the found token as a related location.
    fn report_expected(
        &self,
        before: Option<Node<'s>>,
        found: Option<Node<'s>>,
        wanted: &[String],
    ) -> Diagnostic {
        let message = format!(
            "expected {}, found {}",
            join_alternatives(wanted),
            self.describe_found(found)
        );
        let after_before =
            before.map(|before| TextRange::from(before.end_byte()..before.end_byte()));
        let detached = match (before, found) {
            (Some(before), Some(found)) => self.starts_line(before, found),
            (Some(_), None) => true,
            _ => false,
        };
        // A missing `;` is always shown where it goes.
        let semicolon = wanted == ["`;`"];
        match (detached || semicolon, after_before, found) {
            (true, Some(at), found) => {
                let mut diagnostic = self.error(at, message);
                if semicolon {
                    diagnostic = diagnostic.with_fix(self.insert(at, ";"));
                }
                if let Some(found) = found.filter(|_| detached) {
                    diagnostic = diagnostic
                        .with_related(self.location(found.text_range()), "unexpected token");
                }
                diagnostic
            }
            (_, _, Some(found)) => self.error(found.text_range(), message),
            (_, _, None) => self.error(TextRange::from(self.text.len()..self.text.len()), message),
        }
    }

    // ------------------------------------------------------------------
    // Tokens and parse states
    // ------------------------------------------------------------------

    /// The text in `range`, or nothing if the tree and text disagree (they
    /// never should; a diagnostic is not worth a panic).
    fn slice(&self, range: std::ops::Range<usize>) -> &'s str {
        self.text.get(range).unwrap_or("")
    }

    /// The kind of a token, with keywords that error recovery lexed as
    /// names given back their own kind.
    fn token_kind(&self, token: Node<'s>) -> &'s str {
        let text = self.slice(token.byte_range());
        if token.kind() == "identifier" && self.is_keyword(text) {
            return text;
        }
        match token.kind() {
            "identifier" => "identifier",
            "integer_literal" => "integer_literal",
            "float_literal" => "float_literal",
            // Anonymous tokens are their text.
            _ if !token.is_named() && !token.is_error() => text,
            // A character no token begins with, or a piece of a string.
            _ => "",
        }
    }

    fn is_keyword(&self, word: &str) -> bool {
        !word.is_empty()
            && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && self.language.id_for_node_kind(word, false) != 0
    }

    /// The grammar symbol of a token, as the lookahead sets list it.
    fn symbol(&self, token: Node<'s>) -> u16 {
        let text = self.slice(token.byte_range());
        if token.kind() == "identifier" && self.is_keyword(text) {
            return self.language.id_for_node_kind(text, false);
        }
        token.grammar_id()
    }

    /// The parse state in which the first token of `node` was read, when the
    /// tree says it reliably.
    ///
    /// Each node records a parse state, but not always a usable one: a token
    /// records the state it was lexed in, before the reductions it
    /// triggered, and nodes rebuilt during error recovery record none. So
    /// walk back to the nearest node whose state after it is known (or the
    /// start of the file), then shift the nodes between forward from there.
    fn state_before(&self, node: Node<'s>, parents: &[Node<'s>]) -> Option<u16> {
        let mut pending: Vec<u16> = Vec::new();
        let mut current = node;
        let mut parents = parents;
        let mut state = loop {
            let found = preceding_in(parents, current, &mut self.children.borrow_mut());
            let Some((previous, depth)) = found else {
                break START_STATE;
            };
            // `previous` is a child of `parents[depth - 1]`.
            parents = &parents[..depth];
            let parent = parents[depth - 1];
            if previous.is_error() || previous.is_missing() || previous.has_error() {
                return None;
            }
            let state = previous.next_parse_state();
            if self.is_valid_state(state) {
                break state;
            }
            // The file is a list of items: after any whole item, the parser
            // accepts what it accepts at the start.
            if parent.kind() == "source_file" {
                break START_STATE;
            }
            pending.push(previous.grammar_id());
            current = previous;
        };
        for &symbol in pending.iter().rev() {
            state = self.language.next_state(state, symbol);
            if !self.is_valid_state(state) {
                return None;
            }
        }
        Some(state)
    }

    /// The token just before `node` in the text, comments skipped.
    fn previous_token(&self, node: Node<'s>) -> Option<Node<'s>> {
        self.stream.borrow_mut().before(node.start_byte())
    }

    /// The token just after `node` in the text, comments skipped.
    fn next_token(&self, node: Node<'s>) -> Option<Node<'s>> {
        self.stream.borrow_mut().after(node.end_byte())
    }

    fn is_valid_state(&self, state: u16) -> bool {
        // State 0 is tree-sitter's error state: it accepts anything.
        state != 0 && usize::from(state) < self.language.parse_state_count()
    }

    /// The visible terminal symbols valid in `state`.
    fn lookahead(&self, state: u16) -> Option<Vec<u16>> {
        let lookahead = self.language.lookahead_iterator(state)?;
        Some(
            lookahead
                .filter(|&symbol| {
                    symbol != 0
                        && symbol < self.first_nonterminal
                        && self.language.node_kind_is_visible(symbol)
                })
                .collect(),
        )
    }

    /// The alternatives of an expected set, shortened ("a type" for all the
    /// type keywords), or `None` when there are too many to be useful.
    fn describe_expected(&self, expected: &[u16]) -> Option<Vec<String>> {
        let mut kinds: Vec<(&str, bool)> = Vec::new();
        for &symbol in expected {
            let Some(kind) = self.language.node_kind_for_id(symbol) else {
                continue;
            };
            if matches!(kind, "comment" | "ERROR" | "") {
                continue;
            }
            let named = self.language.node_kind_is_named(symbol);
            if !kinds.contains(&(kind, named)) {
                kinds.push((kind, named));
            }
        }
        let has = |kinds: &[(&str, bool)], kind: &str| kinds.iter().any(|(k, _)| *k == kind);
        let mut out: Vec<String> = Vec::new();
        let mut group =
            |kinds: &mut Vec<(&str, bool)>, all: &[&str], members: &[&str], name: &str| {
                if all.iter().all(|kind| has(kinds, kind)) {
                    kinds.retain(|(kind, _)| !members.contains(kind));
                    out.push(name.to_owned());
                }
            };
        let modes: Vec<&str> = AccessMode::ALL.iter().map(|mode| mode.keyword()).collect();
        group(
            &mut kinds,
            &["identifier", "integer_literal", "float_literal", "("],
            EXPRESSION_STARTS,
            "an expression",
        );
        group(&mut kinds, SCALAR_TYPES, SCALAR_TYPES, "a type");
        group(&mut kinds, &modes, &modes, "an access mode");
        for (kind, named) in kinds {
            let described = describe_kind(kind, named);
            if !out.contains(&described) {
                out.push(described);
            }
        }
        (!out.is_empty() && out.len() <= MAX_EXPECTED).then_some(out)
    }

    fn describe_found(&self, found: Option<Node<'s>>) -> String {
        let Some(found) = found else {
            return "end of file".to_owned();
        };
        let text = found.text(self.text);
        if found.kind() != "identifier" || self.is_keyword(text) {
            let kind = self.token_kind(found);
            if self.is_keyword(kind) {
                return format!("keyword `{kind}`");
            }
        }
        format!("`{}`", shorten(text))
    }

    /// Where the line holding `at` ends. Errors come in the order of the
    /// text, so the end last found serves every later place on the same
    /// line: a line of thousands of stray quotes is read once, not once
    /// per quote.
    fn line_end(&self, at: usize) -> usize {
        if let Some((from, end)) = self.line.get()
            && from <= at
            && at <= end
        {
            return end;
        }
        let end = self
            .slice(at..self.text.len())
            .find(['\n', '\r'])
            .map_or(self.text.len(), |i| at + i);
        #[cfg(test)]
        tests::SCANNED.with(|scanned| scanned.set(scanned.get() + (end - at)));
        self.line.set(Some((at, end)));
        end
    }

    /// True when `token` begins a later line than `previous` ends on.
    fn starts_line(&self, previous: Node<'s>, token: Node<'s>) -> bool {
        previous.end_byte() <= token.start_byte()
            && self
                .slice(previous.end_byte()..token.start_byte())
                .contains(['\n', '\r'])
    }

    /// Tokens after which a `;` could end a statement or declaration.
    fn can_end_statement(&self, token: Node<'s>) -> bool {
        matches!(
            self.token_kind(token),
            "identifier"
                | "integer_literal"
                | "float_literal"
                | "true"
                | "false"
                | ")"
                | "]"
                | "++"
                | "--"
        )
    }
}

fn describe_step(step: Step) -> String {
    match step {
        Step::Token(word) => format!("`{word}`"),
        Step::Name => "a name".to_owned(),
        Step::Integer => "an integer".to_owned(),
        Step::Type => "a type".to_owned(),
        Step::Optional(inner) => describe_step(inner[0]),
        Step::Either(a, b) => format!("`{a}` or `{b}`"),
        Step::Skip(word) => format!("`{word}`"),
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
            "access_mode" => "an access mode".into(),
            "boolean_literal" => "`true` or `false`".into(),
            "compound_statement" => "a block `{ … }`".into(),
            _ if kind.ends_with("_expression") => "an expression".into(),
            _ if kind.ends_with("_statement") => "a statement".into(),
            _ => kind.replace('_', " "),
        }
    } else if kind == "\"" {
        "a string".into()
    } else {
        format!("`{kind}`")
    }
}

fn join_alternatives(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("one of {} or {last}", init.join(", ")),
    }
}

fn shorten(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim_end();
    if line.chars().count() > 24 {
        let short: String = line.chars().take(24).collect();
        format!("{short}…")
    } else {
        line.to_owned()
    }
}

fn keyword_range(node: Node<'_>) -> TextRange {
    node.child(0)
        .map_or_else(|| node.text_range(), |keyword| keyword.text_range())
}

fn closer(opener: &str) -> Option<&'static str> {
    match opener {
        "(" => Some(")"),
        "[" => Some("]"),
        "{" => Some("}"),
        _ => None,
    }
}

/// Tokens that may begin an item, statement or expression: an ERROR that
/// starts with one is not wrong at its first token.
fn can_start_something(kind: &str) -> bool {
    kind.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        || matches!(
            kind,
            "(" | "{" | "\"" | "*" | "-" | "+" | "!" | "~" | "&" | "++" | "--" | ";"
        )
}

/// Operators that need an expression on their right.
fn is_binary_operator(kind: &str) -> bool {
    matches!(
        kind,
        "=" | "+="
            | "-="
            | "*="
            | "/="
            | "%="
            | "&="
            | "|="
            | "^="
            | "<<="
            | ">>="
            | "?"
            | ":"
            | "||"
            | "&&"
            | "|"
            | "^"
            | "&"
            | "=="
            | "!="
            | "<"
            | "<="
            | ">"
            | ">="
            | "<<"
            | ">>"
            | "+"
            | "-"
            | "*"
            | "/"
            | "%"
    )
}

/// Tokens that begin a statement or item and not the continuation of an
/// expression: on a new line after a finished expression they say that a
/// `;` is missing.
fn can_start_statement(kind: &str) -> bool {
    kind.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        || matches!(kind, "{" | "}" | "++" | "--")
}

/// For a MISSING closing bracket, the bracket it would close.
fn opener_of<'t>(missing: Node<'t>, parent: Option<Node<'t>>) -> Option<Node<'t>> {
    let opening = match missing.kind() {
        ")" => "(",
        "]" => "[",
        "}" => "{",
        _ => return None,
    };
    let parent = parent?;
    let mut cursor = parent.walk();
    parent
        .children(&mut cursor)
        .filter(|child| child.kind() == opening && child.end_byte() <= missing.start_byte())
        .last()
}

/// True when a MISSING node, `at` the walk's place, stands for an
/// expression (the parser invents the cheapest one, a name).
fn is_expression_slot(at: &At<'_, '_>) -> bool {
    const EXPRESSION_FIELDS: &[&str] = &[
        "left",
        "right",
        "argument",
        "condition",
        "consequence",
        "alternative",
        "value",
        "index",
        "expression",
        "update",
        "initializer",
        "element",
    ];
    let Some(parent) = at.parent() else {
        return false;
    };
    at.field.is_some_and(|field| {
        EXPRESSION_FIELDS.contains(&field) && parent.kind() != "par_loop_argument"
    })
}

/// A leaf with text that is not a comment: what the user typed.
fn is_token(node: Node<'_>) -> bool {
    node.child_count() == 0
        && !node.is_missing()
        && !is_comment(node)
        && node.start_byte() < node.end_byte()
}

/// Every token inside `node`, in order, and the first `"` among them that
/// is not part of a whole string literal.
fn tokens(node: Node<'_>) -> (Vec<Node<'_>>, Option<Node<'_>>) {
    let mut out = Vec::new();
    let mut stray_quote = None;
    let mut cursor = node.walk();
    // The kind of each ancestor of the cursor's node below `node`.
    let mut parents: Vec<&str> = vec![node.kind()];
    let mut visit_children = true;
    loop {
        let current = cursor.node();
        if visit_children {
            if is_token(current) {
                out.push(current);
                if stray_quote.is_none()
                    && current.kind() == "\""
                    && parents.last() != Some(&"string_literal")
                {
                    stray_quote = Some(current);
                }
            } else if !is_comment(current) && cursor.goto_first_child() {
                parents.push(current.kind());
                continue;
            }
        }
        if cursor.node().id() == node.id() {
            break;
        }
        if cursor.goto_next_sibling() {
            visit_children = true;
            continue;
        }
        if !cursor.goto_parent() || cursor.node().id() == node.id() {
            break;
        }
        parents.pop();
        visit_children = false;
    }
    (out, stray_quote)
}

/// The tokens of a tree in order, read on demand by a cursor (no
/// recursion, and no call that climbs the tree), for the token before and
/// after each error. The checker asks in the order of the text, so the
/// whole file is read at most once; a question about an earlier place
/// starts again from the root.
struct TokenStream<'t> {
    root: Node<'t>,
    cursor: TreeCursor<'t>,
    /// Whether the cursor's node is yet to be looked at (else it and its
    /// subtree are behind).
    fresh: bool,
    /// The last token read, which ends at or before every place asked since.
    last: Option<Node<'t>>,
    /// The token read after `last` but not yet passed.
    next: Option<Node<'t>>,
    done: bool,
}

impl<'t> TokenStream<'t> {
    fn new(root: Node<'t>) -> TokenStream<'t> {
        TokenStream {
            root,
            cursor: root.walk(),
            fresh: true,
            last: None,
            next: None,
            done: false,
        }
    }

    /// The next token in the text after those read, without passing it.
    fn peek(&mut self) -> Option<Node<'t>> {
        if self.next.is_none() && !self.done {
            self.next = self.read();
            self.done = self.next.is_none();
        }
        self.next
    }

    fn read(&mut self) -> Option<Node<'t>> {
        loop {
            let node = self.cursor.node();
            if self.fresh {
                if is_token(node) {
                    self.fresh = false;
                    return Some(node);
                }
                if !is_comment(node) && self.cursor.goto_first_child() {
                    continue;
                }
            }
            if node == self.root {
                return None;
            }
            if self.cursor.goto_next_sibling() {
                self.fresh = true;
                continue;
            }
            if !self.cursor.goto_parent() {
                return None;
            }
            self.fresh = false;
        }
    }

    /// Reads on to `byte`: the tokens that start before it are passed.
    fn advance_to(&mut self, byte: usize) {
        if self.last.is_some_and(|last| last.end_byte() > byte) {
            *self = TokenStream::new(self.root);
        }
        while let Some(next) = self.peek() {
            if next.start_byte() >= byte {
                break;
            }
            self.last = self.next.take();
        }
    }

    /// The last token that ends at or before `byte`.
    fn before(&mut self, byte: usize) -> Option<Node<'t>> {
        self.advance_to(byte);
        // Tokens do not overlap: every token passed ends at or before `byte`.
        self.last
    }

    /// The first token that starts at or after `byte`.
    fn after(&mut self, byte: usize) -> Option<Node<'t>> {
        self.advance_to(byte);
        self.peek()
    }
}

/// Children of nodes, by the node's id.
type Children<'t> = std::collections::HashMap<usize, Vec<Node<'t>>>;

/// The node that ends just before `node` starts, comments skipped (its
/// previous sibling, or its parent's, and so on up), with the number of
/// `parents` down to its own parent. `parents` are the ancestors of `node`,
/// from the root of the walk down, and each previous sibling comes from a
/// walk of its parent's children, so the cost is the length of the path
/// (and, the children of a parent being kept in `children`, a search in
/// them). Nothing is asked of tree-sitter's `parent` or `prev_sibling`.
fn preceding_in<'t>(
    parents: &[Node<'t>],
    node: Node<'t>,
    children: &mut Children<'t>,
) -> Option<(Node<'t>, usize)> {
    let mut current = node;
    for (depth, &parent) in parents.iter().enumerate().rev() {
        let siblings = children.entry(parent.id()).or_insert_with(|| {
            let mut cursor = parent.walk();
            parent.children(&mut cursor).collect()
        });
        // Children are in order: find `current` by its start, then by id
        // among those starting there (empty nodes).
        let start = current.start_byte();
        let mut index = siblings.partition_point(|c| c.start_byte() < start);
        while siblings.get(index).is_some_and(|c| c.id() != current.id()) {
            index += 1;
        }
        let before = siblings[..index.min(siblings.len())]
            .iter()
            .rev()
            .find(|c| !is_comment(**c));
        if let Some(&before) = before {
            return Some((before, depth + 1));
        }
        current = parent;
    }
    None
}

/// The node that ends just before `node` starts, comments skipped: its
/// previous sibling, or its parent's, and so on up.
#[cfg(test)]
fn preceding(node: Node<'_>) -> Option<Node<'_>> {
    let mut current = node;
    loop {
        let mut sibling = current.prev_sibling();
        while let Some(previous) = sibling {
            if !is_comment(previous) {
                return Some(previous);
            }
            sibling = previous.prev_sibling();
        }
        // The first child starts where its parent does.
        current = current.parent()?;
    }
}

/// Comments are the only extras of the grammar. (Tree-sitter also marks the
/// tokens skipped during error recovery as extras, so `is_extra` would hide
/// exactly the tokens an ERROR is made of.)
fn is_comment(node: Node<'_>) -> bool {
    node.kind() == "comment"
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Bytes read looking for line ends, in this thread.
        pub(super) static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Thousands of stray quotes on one long line (fuzz seed 13 case 2018:
    /// `import "/dev/zero";` pasted into a `for` head, 1.3 s for a 105 KB
    /// line and four times that for twice the line): each unterminated
    /// string reaches the end of the line, which is looked for once, not
    /// once per quote. Counted in bytes read, not timed.
    #[test]
    fn stray_quotes_on_one_line_read_it_once() {
        for repeat in [200, 2000] {
            let line = format!(
                "    for (int it = 0; it < 2; it{}++) par_loop k over s (g READ);",
                "import \"/dev/zero\";".repeat(repeat)
            );
            let text = format!("main {{\n    g = 1.0;\n{line}\n}}\n");
            SCANNED.with(|scanned| scanned.set(0));
            let errors = crate::Parse::new(text.as_str()).errors(FileId::MAIN);
            let unterminated = errors
                .iter()
                .filter(|d| d.message.starts_with("unterminated string"))
                .count();
            assert!(unterminated >= repeat / 2, "{unterminated} of {repeat}");
            let scanned = SCANNED.with(std::cell::Cell::get);
            assert!(
                scanned <= line.len(),
                "{scanned} bytes read for a line of {}",
                line.len()
            );
        }
    }

    /// The tables above spell tokens of the grammar; a renamed keyword
    /// would silently disable the messages that use it.
    #[test]
    fn tables_name_tokens_of_the_grammar() {
        let language = language();
        let token = |word: &str| {
            assert_ne!(
                language.id_for_node_kind(word, false),
                0,
                "`{word}` is not a token of the grammar"
            );
        };
        for word in ITEM_KEYWORDS.iter().chain(SCALAR_TYPES) {
            token(word);
        }
        for word in SCALAR_TYPES {
            assert!(ScalarType::from_keyword(word).is_some(), "{word}");
        }
        for kind in EXPRESSION_STARTS {
            let named = language.id_for_node_kind(kind, true);
            let anonymous = language.id_for_node_kind(kind, false);
            assert!(
                named != 0 || anonymous != 0,
                "`{kind}` is not a token of the grammar"
            );
        }
        fn check_steps(language: &Language, steps: &[Step]) {
            for step in steps {
                match *step {
                    Step::Token(word) | Step::Skip(word) => {
                        assert_ne!(language.id_for_node_kind(word, false), 0, "{word}");
                    }
                    Step::Either(a, b) => {
                        assert_ne!(language.id_for_node_kind(a, false), 0, "{a}");
                        assert_ne!(language.id_for_node_kind(b, false), 0, "{b}");
                    }
                    Step::Optional(inner) => check_steps(language, inner),
                    Step::Name | Step::Integer | Step::Type => {}
                }
            }
        }
        for (keyword, _, head) in HEADS {
            token(keyword);
            check_steps(&language, head);
        }
        check_steps(&language, TYPED_NAME);
        // Tokens are numbered below the first rule.
        assert!(
            language.id_for_node_kind(";", false) < language.id_for_node_kind("source_file", true)
        );
        assert!(
            language.id_for_node_kind("identifier", true)
                < language.id_for_node_kind("source_file", true)
        );
    }

    #[test]
    fn preceding_in_finds_what_walking_up_finds() {
        let texts = [
            "main { int y = (1)x+x+x+x; }",
            "set s; /* c */ dat d: double on s;\nkernel k(double *q) { q[0] = ; }\nmain { par_loop k over s (d RW) }",
            "main { for (int i = 0; i < 3; i++) { x = = 1; } // end\n }",
        ];
        for text in texts {
            let parse = crate::Parse::new(text);
            for (node, parents) in nodes_with_parents(parse.tree().root_node()) {
                let found = preceding_in(&parents, node, &mut Children::default());
                assert_eq!(
                    found.map(|(n, _)| n.id()),
                    preceding(node).map(|n| n.id()),
                    "{text:?} at {node:?}"
                );
                if let Some((before, depth)) = found {
                    assert_eq!(
                        before.parent().map(|p| p.id()),
                        Some(parents[depth - 1].id())
                    );
                }
            }
        }
    }

    /// Every node of a small tree with its ancestors, root first.
    fn nodes_with_parents(root: Node<'_>) -> Vec<(Node<'_>, Vec<Node<'_>>)> {
        let mut out = vec![(root, Vec::new())];
        let mut index = 0;
        while index < out.len() {
            let (node, parents) = out[index].clone();
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                let mut path = parents.clone();
                path.push(node);
                out.push((child, path));
            }
            index += 1;
        }
        out
    }

    /// The token before `node` found by climbing with tree-sitter's own
    /// navigation (fine on a small tree), to check the stream against.
    fn climbing<'t>(node: Node<'t>, forward: bool) -> Option<Node<'t>> {
        let edge = |node: Node<'t>| -> Option<Node<'t>> {
            let mut cursor = node.walk();
            let mut tokens = Vec::new();
            let mut stack = vec![node];
            while let Some(node) = stack.pop() {
                if is_token(node) {
                    tokens.push(node);
                } else if !is_comment(node) {
                    let start = stack.len();
                    stack.extend(node.children(&mut cursor));
                    stack[start..].reverse();
                }
            }
            if forward {
                tokens.first()
            } else {
                tokens.last()
            }
            .copied()
        };
        let mut current = node;
        loop {
            let step = |n: Node<'t>| {
                if forward {
                    n.next_sibling()
                } else {
                    n.prev_sibling()
                }
            };
            let mut sibling = step(current);
            while let Some(other) = sibling {
                if let Some(token) = edge(other) {
                    return Some(token);
                }
                sibling = step(other);
            }
            current = current.parent()?;
        }
    }

    #[test]
    fn the_token_stream_finds_what_climbing_finds() {
        let texts = [
            "main { int y = (1)x+x+x+x; }",
            "set s; /* c */ dat d: double on s;\nkernel k(double *q) { q[0] = ; }\nmain { par_loop k over s (d RW) }",
            "main { for (int i = 0; i < 3; i++) { x = = 1 } // end\n }",
            "main { { { if (x) { y = 1 } } /* c */",
            "kernel k(double *q) { q[0] = \"a; }",
        ];
        for text in texts {
            let parse = crate::Parse::new(text);
            let root = parse.tree().root_node();
            let mut stream = TokenStream::new(root);
            // In the order of the walk, and then backwards (which starts
            // the stream again).
            let mut nodes = nodes_with_parents(root);
            nodes.sort_by_key(|(node, _)| (node.start_byte(), node.end_byte()));
            let backwards: Vec<_> = nodes.iter().rev().cloned().collect();
            for (node, _) in nodes.into_iter().chain(backwards) {
                assert_eq!(
                    stream.before(node.start_byte()).map(|t| t.id()),
                    climbing(node, false).map(|t| t.id()),
                    "{text:?} before {node:?}"
                );
                assert_eq!(
                    stream.after(node.end_byte()).map(|t| t.id()),
                    climbing(node, true).map(|t| t.id()),
                    "{text:?} after {node:?}"
                );
            }
        }
    }
}
