//! Lowering bodies (kernels, `main`, constant expressions) from the syntax
//! tree to [`hir`](crate::hir): names resolved in their context, C types
//! computed, implicit conversions made explicit, and the diagnostics that
//! belong to names and types in bodies (E101, E103, E203, E508, E601, E602).

use std::cell::OnceCell;

use op2_syntax::ast::{self, BinaryOp, ForInit, NodeText, ScalarType, Stmt as AstStmt, UnaryOp};
use op2_syntax::literal::{FloatValue, IntValue};
use op2_syntax::{Code, Diagnostic, FileId, Location, TextRange};
use rustc_hash::FxHashMap;

use crate::hir::{
    Body, Builtin, CHAIN_MIN, Expr, ExprKind, Link, Local, LocalId, LocalInit, Place, Stmt,
    StmtKind, Var,
};
use crate::model::{ConstId, ElementType, InvocationId, Param, SetId, Symbol};
use crate::suggest::{Names, Search};
use crate::value::{self, Value};

/// Deepest nesting of statements and expressions lowered. Deeper code is
/// reported rather than lowered, which bounds the recursion of every pass
/// over the lowered body (a fuzzer finds stack overflows otherwise).
const MAX_DEPTH: u32 = 200;

/// The largest map arity, and the largest dimension of a dat, const, global,
/// kernel parameter or local array. Sizes are checked against it before
/// anything is allocated: a dat initialiser is expanded to its dimension, and
/// the run allocates dimension × set size values.
pub const MAX_DIMENSION: u32 = 1 << 16;

/// The most values the locals of one kernel or of `main` may hold together
/// (a frame of the interpreter, the compiled engine and the simulation
/// holds them all).
pub const MAX_LOCAL_VALUES: u64 = 1 << 20;

/// A written arity or dimension, checked (E201).
pub(crate) enum WrittenSize {
    /// Within `1..=MAX_DIMENSION`.
    Valid(u32),
    /// `0`.
    Zero,
    /// Above [`MAX_DIMENSION`], or too large to read at all.
    TooLarge,
}

impl WrittenSize {
    pub(crate) fn read(literal: &ast::IntLit<'_>, source: &str) -> WrittenSize {
        match literal.value(source).map(|v| v.value) {
            Some(0) => WrittenSize::Zero,
            Some(v) if v <= u64::from(MAX_DIMENSION) => {
                WrittenSize::Valid(u32::try_from(v).unwrap_or(MAX_DIMENSION))
            }
            _ => WrittenSize::TooLarge,
        }
    }

    /// E201 for a size that is not valid: `zero` (message and label) for
    /// `0`, `large` (the message) for one above [`MAX_DIMENSION`].
    pub(crate) fn diagnostic(
        &self,
        location: Location,
        zero: (String, &str),
        large: impl FnOnce() -> String,
    ) -> Option<Diagnostic> {
        match self {
            WrittenSize::Valid(_) => None,
            WrittenSize::Zero => {
                Some(Diagnostic::new(Code::E201, location, zero.0).with_label(zero.1))
            }
            WrittenSize::TooLarge => Some(
                Diagnostic::new(Code::E201, location, large())
                    .with_label(format!("more than {MAX_DIMENSION}")),
            ),
        }
    }

    /// The size to go on with after a problem has been reported: 1.
    pub(crate) fn or_one(&self) -> u32 {
        match self {
            WrittenSize::Valid(v) => *v,
            WrittenSize::Zero | WrittenSize::TooLarge => 1,
        }
    }
}

/// What the lowering needs to know of the top-level items.
pub(crate) struct Env<'a> {
    pub names: &'a FxHashMap<String, Symbol>,
    pub const_types: &'a [ElementType],
    pub global_types: &'a [ElementType],
    /// The consts, indexed for suggestions at the first unknown name.
    consts_index: OnceCell<Names>,
    /// The consts and globals, indexed likewise.
    values_index: OnceCell<Names>,
}

impl<'a> Env<'a> {
    pub fn new(
        names: &'a FxHashMap<String, Symbol>,
        const_types: &'a [ElementType],
        global_types: &'a [ElementType],
    ) -> Env<'a> {
        Env {
            names,
            const_types,
            global_types,
            consts_index: OnceCell::new(),
            values_index: OnceCell::new(),
        }
    }

    /// The names a suggestion picks from: the consts, and in `main` the
    /// globals too.
    fn suggestions(&self, with_globals: bool) -> &Names {
        let (cell, fits): (_, fn(&Symbol) -> bool) = if with_globals {
            (&self.values_index, |s| {
                matches!(s, Symbol::Const(_) | Symbol::Global(_))
            })
        } else {
            (&self.consts_index, |s| matches!(s, Symbol::Const(_)))
        };
        cell.get_or_init(|| {
            Names::new(
                self.names
                    .iter()
                    .filter(|(_, s)| fits(s))
                    .map(|(n, _)| n.as_str()),
            )
        })
    }
}

/// Where a body sits, which decides what its names may refer to.
pub(crate) enum Context<'a> {
    /// A kernel: parameters, locals and consts.
    Kernel { params: &'a [Param] },
    /// `main`: locals, globals, consts and `len`.
    Main,
    /// A const's value: literals, consts and built-ins.
    Const,
}

/// The top-level names a lowering looked up, and whether it listed the
/// visible ones for a suggestion. A body's lowering depends on its text and on
/// what these lookups find alone, which is what lets the analyser's cache
/// reuse it while they find the same.
#[derive(Debug, Default)]
pub(crate) struct Lookups<'a> {
    /// Each name once, in order of first lookup.
    pub names: Vec<&'a str>,
    /// True when an unknown name made the lowering list the names of the
    /// consts and globals for a suggestion.
    pub listed: bool,
}

/// The result of lowering one body.
pub(crate) struct Lowered<'a> {
    pub body: Body,
    pub diagnostics: Vec<Diagnostic>,
    /// Consts read, in order of first use.
    pub consts_used: Vec<ConstId>,
    pub lookups: Lookups<'a>,
}

/// The locals a block declares, in order, and by name (the first and the
/// last of each name), so that a use finds its local in a lookup per
/// enclosing block rather than a scan of the block's locals, which a long
/// `main` made quadratic (issue #12).
#[derive(Default)]
struct Scope<'a> {
    declared: Vec<(&'a str, LocalId)>,
    by_name: FxHashMap<&'a str, (LocalId, LocalId)>,
}

impl<'a> Scope<'a> {
    fn declare(&mut self, name: &'a str, id: LocalId) {
        self.declared.push((name, id));
        self.by_name
            .entry(name)
            .and_modify(|(_, last)| *last = id)
            .or_insert((id, id));
    }

    /// The first local of the block called `name`.
    fn first(&self, name: &str) -> Option<LocalId> {
        self.by_name.get(name).map(|&(first, _)| first)
    }

    /// The latest local of the block called `name`.
    fn last(&self, name: &str) -> Option<LocalId> {
        self.by_name.get(name).map(|&(_, last)| last)
    }
}

/// Lowers one body. Diagnostics go to `diagnostics`; par_loops in `main` are
/// handed to `on_par_loop`, which returns their invocation.
pub(crate) struct Lowerer<'a, 't> {
    source: &'a str,
    file: FileId,
    env: &'a Env<'a>,
    context: Context<'a>,
    body: Body,
    scopes: Vec<Scope<'a>>,
    /// Each parameter of a kernel by name, the first of a name (a lookup
    /// per use, not a scan of the parameters: issue #12).
    param_index: FxHashMap<&'a str, usize>,
    loop_depth: u32,
    depth: u32,
    too_deep_reported: bool,
    /// Values held by the locals declared so far (see [`MAX_LOCAL_VALUES`]).
    local_values: u64,
    pub diagnostics: Vec<Diagnostic>,
    /// Consts read, in order of first use.
    pub consts_used: Vec<ConstId>,
    lookups: Lookups<'a>,
    on_par_loop: Option<&'a mut dyn FnMut(ast::ParLoopStmt<'t>) -> Option<InvocationId>>,
}

impl<'a, 't> Lowerer<'a, 't> {
    pub fn new(
        source: &'a str,
        file: FileId,
        env: &'a Env<'a>,
        context: Context<'a>,
    ) -> Lowerer<'a, 't> {
        let param_index = match &context {
            Context::Kernel { params } => {
                let mut index = FxHashMap::default();
                for (k, param) in params.iter().enumerate() {
                    index.entry(param.name.as_str()).or_insert(k);
                }
                index
            }
            _ => FxHashMap::default(),
        };
        Lowerer {
            source,
            file,
            env,
            context,
            body: Body::default(),
            scopes: vec![Scope::default()],
            param_index,
            loop_depth: 0,
            depth: 0,
            too_deep_reported: false,
            local_values: 0,
            diagnostics: Vec::new(),
            consts_used: Vec::new(),
            lookups: Lookups::default(),
            on_par_loop: None,
        }
    }

    /// Sets the handler for par_loops found in `main`.
    pub fn with_par_loops(
        mut self,
        handler: &'a mut dyn FnMut(ast::ParLoopStmt<'t>) -> Option<InvocationId>,
    ) -> Self {
        self.on_par_loop = Some(handler);
        self
    }

    /// The lowered body, with what the lowering found and looked up.
    pub fn finish(self) -> Lowered<'a> {
        Lowered {
            body: self.body,
            diagnostics: self.diagnostics,
            consts_used: self.consts_used,
            lookups: self.lookups,
        }
    }

    /// Looks up a top-level name, remembering that the body depends on it.
    fn lookup(&mut self, name: &'a str) -> Option<Symbol> {
        if !self.lookups.names.contains(&name) {
            self.lookups.names.push(name);
        }
        self.env.names.get(name).copied()
    }

    fn text(&self, node: &impl NodeText<'t>) -> &'a str {
        node.text(self.source)
    }

    fn location(&self, range: TextRange) -> Location {
        Location {
            file: self.file,
            range,
        }
    }

    fn report(&mut self, code: Code, range: TextRange, message: String) {
        let diagnostic = Diagnostic::new(code, self.location(range), message);
        self.diagnostics.push(diagnostic);
    }

    fn error_expr(range: TextRange) -> Expr {
        Expr {
            kind: ExprKind::Error,
            ty: ScalarType::Int,
            range,
        }
    }

    // ------------------------------------------------------------------
    // Statements
    // ------------------------------------------------------------------

    /// Lowers the statements of a block into the body's top level.
    pub fn lower_block_into_body(&mut self, block: ast::Block<'t>) {
        let statements = block
            .statements()
            .filter_map(|s| self.lower_stmt(s))
            .collect();
        self.body.statements = statements;
    }

    fn lower_block(&mut self, block: ast::Block<'t>) -> Stmt {
        self.scopes.push(Scope::default());
        let statements = block
            .statements()
            .filter_map(|s| self.lower_stmt(s))
            .collect();
        self.scopes.pop();
        Stmt {
            kind: StmtKind::Block(statements),
            range: block.text_range(),
        }
    }

    /// A statement in its own scope (the branch of an `if`, a loop body).
    fn lower_scoped(&mut self, stmt: Option<AstStmt<'t>>, range: TextRange) -> Box<Stmt> {
        self.scopes.push(Scope::default());
        let lowered = stmt.and_then(|s| self.lower_stmt(s));
        self.scopes.pop();
        Box::new(lowered.unwrap_or(Stmt {
            kind: StmtKind::Block(Vec::new()),
            range,
        }))
    }

    fn lower_stmt(&mut self, stmt: AstStmt<'t>) -> Option<Stmt> {
        if !self.enter(stmt.text_range()) {
            return None;
        }
        let lowered = self.lower_stmt_inner(stmt);
        self.depth -= 1;
        lowered
    }

    /// Counts one level of nesting; false (and reported once) past the limit.
    fn enter(&mut self, range: TextRange) -> bool {
        if self.depth >= MAX_DEPTH {
            if !self.too_deep_reported {
                self.too_deep_reported = true;
                self.report(
                    Code::E001,
                    range,
                    format!("code nested more than {MAX_DEPTH} levels deep is not supported"),
                );
            }
            return false;
        }
        self.depth += 1;
        true
    }

    fn lower_stmt_inner(&mut self, stmt: AstStmt<'t>) -> Option<Stmt> {
        let range = stmt.text_range();
        let kind = match stmt {
            AstStmt::Block(block) => return Some(self.lower_block(block)),
            AstStmt::Local(decl) => return Some(self.lower_local_decl(decl)),
            AstStmt::Expr(expr_stmt) => match expr_stmt.expr() {
                Some(expr) => StmtKind::Expr(self.lower_expr(expr)),
                None => StmtKind::Block(Vec::new()),
            },
            AstStmt::If(if_stmt) => {
                let condition = self.lower_condition(if_stmt.condition(), range);
                let then_branch = self.lower_scoped(if_stmt.then_branch(), range);
                let else_branch = if_stmt
                    .else_branch()
                    .map(|s| self.lower_scoped(Some(s), range));
                StmtKind::If {
                    condition,
                    then_branch,
                    else_branch,
                }
            }
            AstStmt::For(for_stmt) => {
                self.scopes.push(Scope::default());
                let init = match for_stmt.initializer() {
                    Some(ForInit::Decl(decl)) => Some(Box::new(self.lower_local_decl(decl))),
                    Some(ForInit::Expr(expr)) => {
                        let lowered = self.lower_expr(expr);
                        Some(Box::new(Stmt {
                            range: lowered.range,
                            kind: StmtKind::Expr(lowered),
                        }))
                    }
                    None => None,
                };
                let condition = for_stmt.condition().map(|c| self.lower_expr(c));
                let step = for_stmt.update().map(|s| self.lower_expr(s));
                self.loop_depth += 1;
                let body = self.lower_scoped(for_stmt.body(), range);
                self.loop_depth -= 1;
                self.scopes.pop();
                StmtKind::For {
                    init,
                    condition,
                    step,
                    body,
                }
            }
            AstStmt::While(while_stmt) => {
                let condition = self.lower_condition(while_stmt.condition(), range);
                self.loop_depth += 1;
                let body = self.lower_scoped(while_stmt.body(), range);
                self.loop_depth -= 1;
                StmtKind::While { condition, body }
            }
            AstStmt::Do(do_stmt) => {
                self.loop_depth += 1;
                let body = self.lower_scoped(do_stmt.body(), range);
                self.loop_depth -= 1;
                let condition = self.lower_condition(do_stmt.condition(), range);
                StmtKind::DoWhile { body, condition }
            }
            AstStmt::Break(_) | AstStmt::Continue(_) => {
                let is_break = matches!(stmt, AstStmt::Break(_));
                if self.loop_depth == 0 {
                    let word = if is_break { "break" } else { "continue" };
                    self.report(Code::E001, range, format!("`{word}` outside of a loop"));
                    return None;
                }
                if is_break {
                    StmtKind::Break
                } else {
                    StmtKind::Continue
                }
            }
            AstStmt::Return(_) => StmtKind::Return,
            AstStmt::ParLoop(par_loop) => {
                let handler = match (&self.context, self.on_par_loop.as_mut()) {
                    (Context::Main, Some(handler)) => handler,
                    _ => {
                        let keyword = par_loop.node().child(0).map_or(range, |k| k.text_range());
                        self.report(Code::E601, keyword, "`par_loop` outside `main`".into());
                        return None;
                    }
                };
                StmtKind::ParLoop(handler(par_loop)?)
            }
            AstStmt::Print(print) => {
                // `main` and kernels print (a kernel prints once per
                // element, `op2 run` only; docs/language.md §8).
                if !matches!(self.context, Context::Main | Context::Kernel { .. }) {
                    let keyword = print.node().child(0).map_or(range, |k| k.text_range());
                    self.report(
                        Code::E601,
                        keyword,
                        format!("`{}` outside `main` or a kernel", print.keyword()),
                    );
                    return None;
                }
                let literal = print.format();
                let format = literal.map(|f| f.value(self.source)).unwrap_or_default();
                let args: Vec<Expr> = print.arguments().map(|a| self.lower_expr(a)).collect();
                let pieces = crate::format::parse(&format);
                let literal_range = literal.map_or(range, |f| f.node().text_range());
                self.check_format(&format, &pieces, &args, literal_range);
                StmtKind::Print {
                    ends_line: print.ends_line(),
                    format,
                    pieces,
                    args,
                }
            }
            AstStmt::Exit(exit) => {
                if !self.in_main(
                    exit.node(),
                    range,
                    "`exit` outside `main`; a kernel cannot end the program",
                ) {
                    return None;
                }
                let status = self.lower_condition(exit.status(), range);
                self.check_exit_status(&status);
                StmtKind::Exit(status)
            }
            AstStmt::Fetch(fetch) => {
                if !self.in_main(
                    fetch.node(),
                    range,
                    "`fetch` outside `main`; a kernel sees only its own element",
                ) {
                    return None;
                }
                let dat = fetch.dat().and_then(|d| self.resolve_fetched(d, true));
                let global = fetch.global().and_then(|g| self.resolve_fetched(g, false));
                let (Some(Symbol::Dat(dat)), Some(Symbol::Global(global)), Some(name)) =
                    (dat, global, fetch.global())
                else {
                    return None;
                };
                StmtKind::Fetch {
                    dat,
                    global,
                    global_range: name.node().text_range(),
                }
            }
            // Reported by the syntax layer.
            AstStmt::Switch(_) | AstStmt::Case(_) | AstStmt::Goto(_) => return None,
        };
        Some(Stmt { kind, range })
    }

    /// Whether this is `main`; else E601 with `message` at the statement's
    /// keyword (`range` when it has none).
    fn in_main(
        &mut self,
        statement: op2_syntax::tree_sitter::Node<'_>,
        range: TextRange,
        message: &str,
    ) -> bool {
        if matches!(self.context, Context::Main) {
            return true;
        }
        let keyword = statement.child(0).map_or(range, |k| k.text_range());
        self.report(Code::E601, keyword, message.into());
        false
    }

    /// The dat (`dat`) or global a `fetch` names, or E101/E103.
    fn resolve_fetched(&mut self, ident: ast::Ident<'t>, dat: bool) -> Option<Symbol> {
        let name = self.text(&ident);
        let range = ident.node().text_range();
        let Some(symbol) = self.lookup(name) else {
            self.unknown_name(name, range);
            return None;
        };
        let fits = if dat {
            matches!(symbol, Symbol::Dat(_))
        } else {
            matches!(symbol, Symbol::Global(_))
        };
        if !fits {
            let (expected, role) = if dat {
                ("dat", "`fetch` reads")
            } else {
                ("global", "`fetch` writes")
            };
            self.report(
                Code::E103,
                range,
                format!(
                    "expected a {expected}, found {} `{name}`; {role} a {expected}",
                    symbol.kind_name()
                ),
            );
            return None;
        }
        Some(symbol)
    }

    /// E607 for an exit status that is not an integer, or a literal one
    /// outside 0..=255 (a computed one is checked when it runs).
    fn check_exit_status(&mut self, status: &Expr) {
        if status.kind == ExprKind::Error {
            return;
        }
        if status.ty.is_floating() {
            self.report(
                Code::E607,
                status.range,
                format!("an exit status must be an integer, not `{}`", status.ty),
            );
            return;
        }
        if let Some(value) = crate::hir::literal_int(status)
            && !(0..=255).contains(&value)
        {
            self.report(
                Code::E607,
                status.range,
                format!(
                    "exit status {value} is outside 0..=255, the statuses a process can end with"
                ),
            );
        }
    }

    /// E606 for each way a `print` format does not fit its arguments, at
    /// the conversion (when the literal has no escapes, so that offsets in
    /// the format are offsets in the source; else at the literal) or at the
    /// argument.
    fn check_format(
        &mut self,
        format: &str,
        pieces: &[crate::format::Piece],
        args: &[Expr],
        literal: TextRange,
    ) {
        use crate::format::At;
        if args.iter().any(|a| matches!(a.kind, ExprKind::Error)) {
            return;
        }
        let types: Vec<ScalarType> = args.iter().map(|a| a.ty).collect();
        let raw = self
            .source
            .get(literal.to_usize())
            .and_then(|text| text.strip_prefix('"'))
            .and_then(|text| text.strip_suffix('"'));
        let verbatim = raw == Some(format);
        let in_source = |span: std::ops::Range<usize>| {
            if verbatim {
                let offset = |at: usize| {
                    (literal.start + 1).saturating_add(u32::try_from(at).unwrap_or(u32::MAX))
                };
                TextRange::new(offset(span.start), offset(span.end))
            } else {
                literal
            }
        };
        for problem in crate::format::check(format, pieces, &types) {
            let (range, related) = match problem.at {
                At::Conversion(span) => (in_source(span), None),
                At::Argument(index, span) => (
                    args.get(index).map_or(literal, |a| a.range),
                    span.map(in_source),
                ),
            };
            let mut diagnostic = Diagnostic::new(Code::E606, self.location(range), problem.message);
            if let Some(related) = related {
                diagnostic = diagnostic.with_related(self.location(related), "the conversion");
            }
            self.diagnostics.push(diagnostic);
        }
    }

    fn lower_condition(&mut self, condition: Option<ast::Expr<'t>>, range: TextRange) -> Expr {
        match condition {
            Some(c) => self.lower_expr(c),
            None => Self::error_expr(range),
        }
    }

    fn lower_local_decl(&mut self, decl: ast::LocalDecl<'t>) -> Stmt {
        let range = decl.text_range();
        let Some(ty) = decl.ty().and_then(|t| t.scalar(self.source)) else {
            // A `struct` type, reported by the syntax layer.
            return Stmt {
                kind: StmtKind::Block(Vec::new()),
                range,
            };
        };
        let is_const = decl.const_qualifier().is_some();
        let mut statements = Vec::new();
        for declarator in decl.declarators() {
            let Some(name_node) = declarator.name() else {
                continue;
            };
            if declarator.pointer().is_some() {
                // Reported by the syntax layer.
                continue;
            }
            let name = self.text(&name_node);
            let dimension = declarator.dimension().map(|d| {
                let size = WrittenSize::read(&d, self.source);
                match size {
                    WrittenSize::Valid(_) => {}
                    WrittenSize::Zero => self.report(
                        Code::E201,
                        d.text_range(),
                        format!("array `{name}` needs a length of at least 1"),
                    ),
                    WrittenSize::TooLarge => self.report(
                        Code::E201,
                        d.text_range(),
                        format!(
                            "array `{name}` has length {}; a length may be at most {MAX_DIMENSION}",
                            self.text(&d)
                        ),
                    ),
                }
                size.or_one()
            });
            let values = u64::from(dimension.unwrap_or(1));
            let dimension = if self.local_values + values > MAX_LOCAL_VALUES {
                let range = declarator
                    .dimension()
                    .map_or(name_node.text_range(), |d| d.text_range());
                self.report(
                    Code::E201,
                    range,
                    format!(
                        "the locals of this body would hold more than {MAX_LOCAL_VALUES} values with `{name}`"
                    ),
                );
                dimension.map(|_| 1)
            } else {
                self.local_values += values;
                dimension
            };
            let init = declarator
                .value()
                .map(|value| self.lower_local_init(value, ty, dimension, name));
            // In C a kernel's outermost block shares the parameters' scope.
            if let (1, Context::Kernel { params }) = (self.scopes.len(), &self.context)
                && let Some(param) = self.param_index.get(name).map(|&k| &params[k])
            {
                let diagnostic = Diagnostic::new(
                    Code::E102,
                    self.location(name_node.text_range()),
                    format!("`{name}` is already a parameter of this kernel"),
                )
                .with_label("redeclared here")
                .with_related(param.name_location, "the parameter");
                self.diagnostics.push(diagnostic);
            }
            if let Some(previous) = self.scopes.last().and_then(|scope| scope.first(name)) {
                let previous_range = self.body.local(previous).range;
                let diagnostic = Diagnostic::new(
                    Code::E102,
                    self.location(name_node.text_range()),
                    format!("`{name}` is declared twice in the same block"),
                )
                .with_label("redeclared here")
                .with_related(self.location(previous_range), "first declared here");
                self.diagnostics.push(diagnostic);
            }
            let id = LocalId(u32::try_from(self.body.locals.len()).unwrap_or(u32::MAX));
            self.body.locals.push(Local {
                name: name.to_owned(),
                ty,
                dimension,
                range: name_node.text_range(),
                is_const,
            });
            if let Some(scope) = self.scopes.last_mut() {
                scope.declare(name, id);
            }
            statements.push(Stmt {
                kind: StmtKind::Local { local: id, init },
                range: declarator.text_range(),
            });
        }
        if statements.len() == 1 {
            statements.pop().map_or(
                Stmt {
                    kind: StmtKind::Block(Vec::new()),
                    range,
                },
                |mut s| {
                    s.range = range;
                    s
                },
            )
        } else {
            // Several declarators share the enclosing scope.
            Stmt {
                kind: StmtKind::Sequence(statements),
                range,
            }
        }
    }

    fn lower_local_init(
        &mut self,
        value: ast::Initializer<'t>,
        ty: ScalarType,
        dimension: Option<u32>,
        name: &str,
    ) -> LocalInit {
        match value {
            ast::Initializer::Expr(expr) => {
                if dimension.is_some() {
                    self.report(
                        Code::E202,
                        expr.text_range(),
                        format!("array `{name}` needs a braced initialiser `{{…}}`"),
                    );
                }
                let lowered = self.lower_expr(expr);
                LocalInit::Expr(convert(lowered, ty, false))
            }
            ast::Initializer::List(list) => {
                let items: Vec<Expr> = list
                    .elements()
                    .map(|e| convert(self.lower_expr(e), ty, false))
                    .collect();
                match dimension {
                    None => self.report(
                        Code::E202,
                        list.text_range(),
                        format!("`{name}` is a scalar; initialise it with a single value"),
                    ),
                    Some(dim) if items.len() > dim as usize => self.report(
                        Code::E202,
                        list.text_range(),
                        format!(
                            "`{name}` has {dim} components but the initialiser gives {}",
                            items.len()
                        ),
                    ),
                    Some(_) => {}
                }
                LocalInit::List(items)
            }
        }
    }

    // ------------------------------------------------------------------
    // Names
    // ------------------------------------------------------------------

    fn lookup_local(&self, name: &str) -> Option<LocalId> {
        self.scopes.iter().rev().find_map(|scope| scope.last(name))
    }

    /// Resolves a name used as a variable. `None` when it is not one (and
    /// the problem has been reported).
    fn resolve_var(&mut self, ident: ast::Ident<'t>) -> Option<(Var, ScalarType, Option<u32>)> {
        let name = self.text(&ident);
        let range = ident.text_range();
        if let Some(local) = self.lookup_local(name) {
            let local = self.body.local(local).clone();
            if matches!(self.context, Context::Const) {
                self.report(Code::E203, range, format!("`{name}` is not a constant"));
                return None;
            }
            return Some((
                Var::Local(self.lookup_local(name)?),
                local.ty,
                local.dimension,
            ));
        }
        if let Context::Kernel { params } = self.context
            && let Some((k, param)) = self.param_index.get(name).map(|&k| (k, &params[k]))
        {
            // A pointer parameter has an unknown dimension here; the
            // binding decides it.
            return Some((
                Var::Param(u32::try_from(k).unwrap_or(u32::MAX)),
                param.ty,
                Some(param.dimension.unwrap_or(0)),
            ));
        }
        let Some(symbol) = self.lookup(name) else {
            self.unknown_name(name, range);
            return None;
        };
        match (symbol, &self.context) {
            (Symbol::Const(id), _) => {
                if !self.consts_used.contains(&id) {
                    self.consts_used.push(id);
                }
                let ty = self.env.const_types[id.index()];
                Some((
                    Var::Const(id),
                    ty.scalar,
                    (ty.dimension > 1).then_some(ty.dimension),
                ))
            }
            (Symbol::Global(id), Context::Main) => {
                let ty = self.env.global_types[id.index()];
                Some((
                    Var::Global(id),
                    ty.scalar,
                    (ty.dimension > 1).then_some(ty.dimension),
                ))
            }
            (_, Context::Kernel { .. }) => {
                self.report(
                    Code::E508,
                    range,
                    format!(
                        "kernel names the {} `{name}`; a kernel sees only its parameters, its locals and consts",
                        symbol.kind_name()
                    ),
                );
                None
            }
            (Symbol::Dat(_) | Symbol::Map(_), Context::Main) => {
                self.report(
                    Code::E601,
                    range,
                    format!(
                        "`main` names the {} `{name}`; dats change only through par_loops",
                        symbol.kind_name()
                    ),
                );
                None
            }
            (_, Context::Main) => {
                self.report(
                    Code::E103,
                    range,
                    format!("expected a value, found {} `{name}`", symbol.kind_name()),
                );
                None
            }
            (_, Context::Const) => {
                self.report(
                    Code::E203,
                    range,
                    format!("`{name}` is a {}, not a constant; a const's value may use only literals and other consts", symbol.kind_name()),
                );
                None
            }
        }
    }

    /// E101 with a suggestion among the names visible here.
    fn unknown_name(&mut self, name: &str, range: TextRange) {
        self.lookups.listed = true;
        // The nearest locals first, then the parameters; each source is
        // measured a bounded number of names (see `suggest`).
        let mut search = Search::new(name);
        let locals = self
            .scopes
            .iter()
            .rev()
            .flat_map(|s| s.declared.iter().rev());
        let params = match self.context {
            Context::Kernel { params } => params,
            _ => &[],
        };
        search.among(
            locals
                .map(|(n, _)| *n)
                .chain(params.iter().map(|p| p.name.as_str())),
        );
        search.in_index(self.env.suggestions(matches!(self.context, Context::Main)));
        let mut diagnostic = Diagnostic::new(
            Code::E101,
            self.location(range),
            format!("cannot find `{name}` in this scope"),
        );
        match search.best() {
            Some(similar) => {
                diagnostic = diagnostic
                    .with_label(format!("a name with a similar name exists: `{similar}`"))
                    .with_fix(op2_syntax::Fix {
                        title: format!("use `{similar}`"),
                        edits: vec![op2_syntax::TextEdit {
                            file: self.file,
                            range,
                            replacement: similar.to_owned(),
                        }],
                    });
            }
            None => diagnostic = diagnostic.with_label("not declared"),
        }
        self.diagnostics.push(diagnostic);
    }

    fn resolve_set(&mut self, len: ast::LenExpr<'t>) -> Option<SetId> {
        let ident = len.set()?;
        let name = self.text(&ident);
        match (self.lookup(name), &self.context) {
            (_, Context::Kernel { .. }) => {
                self.report(
                    Code::E508,
                    len.text_range(),
                    "kernel uses `len`; pass `len(…)` as a par_loop argument instead".into(),
                );
                None
            }
            (_, Context::Const) => {
                self.report(
                    Code::E203,
                    len.text_range(),
                    "`len` is not a constant: set sizes come from the instance data".into(),
                );
                None
            }
            (Some(Symbol::Set(id)), _) => Some(id),
            (Some(other), _) => {
                self.report(
                    Code::E103,
                    ident.text_range(),
                    format!("expected a set, found {} `{name}`", other.kind_name()),
                );
                None
            }
            (None, _) => {
                self.report(
                    Code::E101,
                    ident.text_range(),
                    format!("cannot find set `{name}`"),
                );
                None
            }
        }
    }

    fn lower_place(&mut self, expr: ast::Expr<'t>) -> Option<(Place, ScalarType)> {
        let range = expr.text_range();
        match expr.unparenthesized() {
            ast::Expr::Ident(ident) => {
                let (var, ty, dimension) = self.resolve_var(ident)?;
                if let (Var::Param(_), _) | (_, Some(_)) = (var, dimension) {
                    let name = self.text(&ident);
                    let what = if matches!(var, Var::Param(_)) {
                        "a pointer parameter"
                    } else {
                        "an array"
                    };
                    self.report(
                        Code::E103,
                        range,
                        format!("`{name}` is {what}; use `{name}[i]` for a component"),
                    );
                    return None;
                }
                Some((
                    Place {
                        var,
                        index: None,
                        range,
                    },
                    ty,
                ))
            }
            ast::Expr::Subscript(subscript) => {
                let base = subscript.argument()?.unparenthesized();
                let index = subscript.index().map(|i| self.lower_index(i));
                let ast::Expr::Ident(ident) = base else {
                    self.report(
                        Code::E103,
                        base.text_range(),
                        "only a parameter or an array can be indexed".into(),
                    );
                    return None;
                };
                let (var, ty, dimension) = self.resolve_var(ident)?;
                let Some(length) = dimension else {
                    let name = self.text(&ident);
                    self.report(
                        Code::E103,
                        range,
                        format!("`{name}` is a scalar and cannot be indexed"),
                    );
                    return None;
                };
                // A local array, a const or a global has its length here (a
                // parameter's comes with the argument bound to it: checked
                // per par_loop, `checks`). A constant index past it fails
                // every run.
                if !matches!(var, Var::Param(_))
                    && let Some(at) = index.as_ref()
                    && let Some(value) = crate::hir::literal_index(at)
                    && (value < 0 || value >= i128::from(length))
                {
                    let name = self.text(&ident);
                    let diagnostic = Diagnostic::new(
                        Code::E507,
                        self.location(at.range),
                        format!("index {value} is out of range for `{name}` of length {length}"),
                    )
                    .with_label(format!("expected 0 to {}", length.saturating_sub(1)));
                    self.diagnostics.push(diagnostic);
                }
                Some((
                    Place {
                        var,
                        index: Some(Box::new(index.unwrap_or_else(|| Self::error_expr(range)))),
                        range,
                    },
                    ty,
                ))
            }
            ast::Expr::Unary(unary) if unary.op() == Some(UnaryOp::Deref) => {
                let target = unary.argument()?.unparenthesized();
                let ast::Expr::Ident(ident) = target else {
                    self.report(
                        Code::E103,
                        target.text_range(),
                        "only a parameter or an array can be dereferenced".into(),
                    );
                    return None;
                };
                let (var, ty, dimension) = self.resolve_var(ident)?;
                if dimension.is_none() {
                    let name = self.text(&ident);
                    self.report(
                        Code::E103,
                        range,
                        format!("`{name}` is a scalar and cannot be dereferenced"),
                    );
                    return None;
                }
                let zero = Expr {
                    kind: ExprKind::Literal(Value::Int(0)),
                    ty: ScalarType::Int,
                    range,
                };
                Some((
                    Place {
                        var,
                        index: Some(Box::new(zero)),
                        range,
                    },
                    ty,
                ))
            }
            other => {
                self.report(
                    Code::E103,
                    other.text_range(),
                    "expected a variable, a parameter component or an array element".into(),
                );
                None
            }
        }
    }

    fn lower_index(&mut self, index: ast::Expr<'t>) -> Expr {
        let lowered = self.lower_expr(index);
        if lowered.ty.is_floating() && lowered.kind != ExprKind::Error {
            self.report(
                Code::E103,
                lowered.range,
                format!("an index must be an integer, not `{}`", lowered.ty),
            );
        }
        lowered
    }

    /// Checks that a place may be written here.
    fn check_writable(&mut self, place: &Place) {
        match place.var {
            Var::Const(id) => {
                let name = self
                    .env
                    .names
                    .iter()
                    .find(|(_, s)| **s == Symbol::Const(id))
                    .map_or("", |(n, _)| n.as_str());
                self.report(
                    Code::E602,
                    place.range,
                    format!("cannot assign to const `{name}`"),
                );
            }
            Var::Local(id) if self.body.local(id).is_const => {
                let name = self.body.local(id).name.clone();
                self.report(
                    Code::E602,
                    place.range,
                    format!("cannot assign to `{name}`, declared `const`"),
                );
            }
            _ => {}
        }
    }

    // ------------------------------------------------------------------
    // Expressions
    // ------------------------------------------------------------------

    /// Lowers an expression.
    pub fn lower_expr(&mut self, expr: ast::Expr<'t>) -> Expr {
        if !self.enter(expr.text_range()) {
            return Self::error_expr(expr.text_range());
        }
        let lowered = self.lower_expr_inner(expr);
        self.depth -= 1;
        lowered
    }

    fn lower_expr_inner(&mut self, expr: ast::Expr<'t>) -> Expr {
        let range = expr.text_range();
        match expr {
            ast::Expr::Paren(paren) => match paren.expr() {
                Some(inner) => {
                    let mut lowered = self.lower_expr(inner);
                    lowered.range = range;
                    lowered
                }
                None => Self::error_expr(range),
            },
            ast::Expr::Int(literal) => match literal.value(self.source) {
                Some(value) => literal_expr(int_literal_value(value), range),
                None => {
                    let text = literal.text(self.source);
                    let message = if op2_syntax::literal::is_bad_octal(text) {
                        format!(
                            "invalid digit in octal literal `{text}`: a literal that starts with 0 is octal, as in C"
                        )
                    } else {
                        "integer literal too large for 64 bits".into()
                    };
                    self.report(Code::E001, range, message);
                    Self::error_expr(range)
                }
            },
            ast::Expr::Float(literal) => match literal.value(self.source) {
                Some(FloatValue::Double(v)) => literal_expr(Value::Double(v), range),
                Some(FloatValue::Float(v)) => literal_expr(Value::Float(v), range),
                None => Self::error_expr(range),
            },
            ast::Expr::Bool(literal) => {
                literal_expr(Value::Bool(literal.value(self.source)), range)
            }
            ast::Expr::Ident(_) | ast::Expr::Subscript(_) => match self.lower_place(expr) {
                Some((place, ty)) => Expr {
                    kind: ExprKind::Load(place),
                    ty,
                    range,
                },
                None => Self::error_expr(range),
            },
            ast::Expr::Unary(unary) => match unary.op() {
                Some(UnaryOp::Deref) => match self.lower_place(expr) {
                    Some((place, ty)) => Expr {
                        kind: ExprKind::Load(place),
                        ty,
                        range,
                    },
                    None => Self::error_expr(range),
                },
                Some(UnaryOp::AddressOf) | None => Self::error_expr(range),
                Some(op) => {
                    let Some(argument) = unary.argument() else {
                        return Self::error_expr(range);
                    };
                    let argument = self.lower_expr(argument);
                    if argument.kind == ExprKind::Error {
                        return Self::error_expr(range);
                    }
                    let ty = match op {
                        UnaryOp::Not => ScalarType::Int,
                        UnaryOp::BitNot if argument.ty.is_floating() => {
                            self.report(
                                Code::E103,
                                range,
                                format!("`~` needs an integer operand, not `{}`", argument.ty),
                            );
                            return Self::error_expr(range);
                        }
                        _ => value::promote(argument.ty),
                    };
                    let operand = if op == UnaryOp::Not {
                        argument
                    } else {
                        convert(argument, ty, false)
                    };
                    Expr {
                        kind: ExprKind::Unary(op, Box::new(operand)),
                        ty,
                        range,
                    }
                }
            },
            ast::Expr::Binary(binary) => self.lower_binary(binary),
            ast::Expr::Assign(assign) => {
                let (Some(op), Some(left), Some(right)) =
                    (assign.op(), assign.left(), assign.right())
                else {
                    return Self::error_expr(range);
                };
                let value = self.lower_expr(right);
                let Some((place, place_ty)) = self.lower_place(left) else {
                    return Self::error_expr(range);
                };
                self.check_writable(&place);
                if value.kind == ExprKind::Error {
                    return Self::error_expr(range);
                }
                let value = match op.binary() {
                    None => convert(value, place_ty, false),
                    Some(binary_op) => {
                        if matches!(
                            binary_op,
                            BinaryOp::Rem
                                | BinaryOp::BitAnd
                                | BinaryOp::BitOr
                                | BinaryOp::BitXor
                                | BinaryOp::Shl
                                | BinaryOp::Shr
                        ) && (place_ty.is_floating() || value.ty.is_floating())
                        {
                            self.report(
                                Code::E103,
                                range,
                                format!("`{}` needs integer operands", op.token()),
                            );
                            return Self::error_expr(range);
                        }
                        let operand = value::binary_operand_type(binary_op, place_ty, value.ty);
                        let operand = if matches!(binary_op, BinaryOp::Shl | BinaryOp::Shr) {
                            value::promote(value.ty)
                        } else {
                            operand
                        };
                        convert(value, operand, false)
                    }
                };
                Expr {
                    kind: ExprKind::Assign {
                        place,
                        op,
                        value: Box::new(value),
                    },
                    ty: place_ty,
                    range,
                }
            }
            ast::Expr::Update(update) => {
                let Some(argument) = update.argument() else {
                    return Self::error_expr(range);
                };
                let Some((place, ty)) = self.lower_place(argument) else {
                    return Self::error_expr(range);
                };
                self.check_writable(&place);
                Expr {
                    kind: ExprKind::Update {
                        place,
                        increment: update.is_increment(),
                        prefix: update.is_prefix(),
                    },
                    ty,
                    range,
                }
            }
            ast::Expr::Conditional(conditional) => {
                let (Some(c), Some(a), Some(b)) = (
                    conditional.condition(),
                    conditional.then_value(),
                    conditional.else_value(),
                ) else {
                    return Self::error_expr(range);
                };
                let c = self.lower_expr(c);
                let a = self.lower_expr(a);
                let b = self.lower_expr(b);
                if [&c, &a, &b].iter().any(|e| e.kind == ExprKind::Error) {
                    return Self::error_expr(range);
                }
                let ty = value::common_type(a.ty, b.ty);
                let (a, b) = (convert(a, ty, false), convert(b, ty, false));
                Expr {
                    kind: ExprKind::Conditional(Box::new(c), Box::new(a), Box::new(b)),
                    ty,
                    range,
                }
            }
            ast::Expr::Cast(cast) => {
                let (Some(ty), Some(value)) =
                    (cast.ty().and_then(|t| t.scalar(self.source)), cast.value())
                else {
                    return Self::error_expr(range);
                };
                let value = self.lower_expr(value);
                if value.kind == ExprKind::Error {
                    return Self::error_expr(range);
                }
                Expr {
                    kind: ExprKind::Convert {
                        value: Box::new(value),
                        explicit: true,
                    },
                    ty,
                    range,
                }
            }
            ast::Expr::Call(call) => self.lower_call(call, range),
            ast::Expr::Len(len) => match self.resolve_set(len) {
                Some(set) => Expr {
                    kind: ExprKind::Len(set),
                    ty: ScalarType::Int,
                    range,
                },
                None => Self::error_expr(range),
            },
        }
    }

    /// A binary expression with the binary expressions down its left operand
    /// spine, walked without recursion: `x + x + … + x` is a spine as long as
    /// the sum, which is not nesting. Operands are lowered left to right. A
    /// spine of more than [`CHAIN_MIN`] operators becomes an
    /// [`ExprKind::Chain`].
    fn lower_binary(&mut self, outermost: ast::BinaryExpr<'t>) -> Expr {
        // The complete operators of the spine, outermost first; an
        // incomplete one (a syntax error) is an error with nothing inside
        // it lowered.
        let mut spine = Vec::new();
        let mut current = outermost;
        let bottom = loop {
            let (Some(op), Some(left), Some(right)) =
                (current.op(), current.left(), current.right())
            else {
                break None;
            };
            spine.push((op, right, current.text_range()));
            match left {
                ast::Expr::Binary(inner) => current = inner,
                other => break Some(other),
            }
        };
        let first = match bottom {
            Some(bottom) => self.lower_expr(bottom),
            None => Self::error_expr(current.text_range()),
        };
        let mut acc = Partial::Expr(first);
        let as_chain = spine.len() > CHAIN_MIN;
        for (op, right, range) in spine.into_iter().rev() {
            let right = self.lower_expr(right);
            acc = match acc {
                _ if right.kind == ExprKind::Error => Partial::Expr(Self::error_expr(range)),
                Partial::Expr(left) if left.kind == ExprKind::Error => {
                    Partial::Expr(Self::error_expr(range))
                }
                Partial::Expr(left) if !as_chain => {
                    Partial::Expr(self.binary(op, left, right, range))
                }
                Partial::Expr(first) => {
                    let ty = first.ty;
                    self.link(Partial::Chain(first, Vec::new(), ty), op, right, range)
                }
                chain @ Partial::Chain(..) => self.link(chain, op, right, range),
            };
        }
        match acc {
            Partial::Expr(expr) => expr,
            Partial::Chain(first, links, ty) => Expr {
                kind: ExprKind::Chain(Box::new(first), links),
                ty,
                range: outermost.text_range(),
            },
        }
    }

    /// One more step of a chain: the operator's types and conversions are
    /// those [`Lowerer::binary`] gives, with the running value in place of
    /// the left operand.
    fn link(&mut self, chain: Partial, op: BinaryOp, right: Expr, range: TextRange) -> Partial {
        let Partial::Chain(first, mut links, ty) = chain else {
            return chain;
        };
        let running = literal_expr(Value::Int(0), range);
        let running = Expr { ty, ..running };
        let step = self.binary(op, running, right, range);
        let ExprKind::Binary(op, left, right) = step.kind else {
            return Partial::Expr(step);
        };
        links.push(Link {
            op,
            operand: left.ty,
            right: *right,
            ty: step.ty,
            range,
        });
        Partial::Chain(first, links, step.ty)
    }

    fn binary(&mut self, op: BinaryOp, left: Expr, right: Expr, range: TextRange) -> Expr {
        let integral_only = matches!(
            op,
            BinaryOp::Rem
                | BinaryOp::BitAnd
                | BinaryOp::BitOr
                | BinaryOp::BitXor
                | BinaryOp::Shl
                | BinaryOp::Shr
        );
        if integral_only && (left.ty.is_floating() || right.ty.is_floating()) {
            self.report(
                Code::E103,
                range,
                format!("`{}` needs integer operands", op.token()),
            );
            return Self::error_expr(range);
        }
        let ty = value::binary_result_type(op, left.ty, right.ty);
        let (left, right) = match op {
            BinaryOp::And | BinaryOp::Or => (left, right),
            BinaryOp::Shl | BinaryOp::Shr => {
                let left_ty = value::promote(left.ty);
                let right_ty = value::promote(right.ty);
                (
                    convert(left, left_ty, false),
                    convert(right, right_ty, false),
                )
            }
            _ => {
                let operand = value::binary_operand_type(op, left.ty, right.ty);
                (
                    convert(left, operand, false),
                    convert(right, operand, false),
                )
            }
        };
        Expr {
            kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
            ty,
            range,
        }
    }

    fn lower_call(&mut self, call: ast::CallExpr<'t>, range: TextRange) -> Expr {
        let Some(function) = call.function() else {
            return Self::error_expr(range);
        };
        let name = self.text(&function);
        // A call to anything else was reported by the syntax layer.
        let Some(builtin) = Builtin::from_name(name) else {
            return Self::error_expr(range);
        };
        let args: Vec<Expr> = call.arguments().map(|a| self.lower_expr(a)).collect();
        if args.len() != builtin.arity() {
            let expected = builtin.arity();
            let plural = if expected == 1 { "" } else { "s" };
            self.report(
                Code::E103,
                range,
                format!(
                    "`{name}` takes {expected} argument{plural} but {} {} given",
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            );
            return Self::error_expr(range);
        }
        if args.iter().any(|a| a.kind == ExprKind::Error) {
            return Self::error_expr(range);
        }
        let types: Vec<ScalarType> = args.iter().map(|a| a.ty).collect();
        let (result, operand) = builtin.signature(&types);
        let args = args
            .into_iter()
            .map(|a| convert(a, operand, false))
            .collect();
        Expr {
            kind: ExprKind::Call(builtin, args),
            ty: result,
            range,
        }
    }
}

/// A binary operator spine being lowered: an expression so far, or a chain's
/// first operand, its links and its type.
enum Partial {
    Expr(Expr),
    Chain(Expr, Vec<Link>, ScalarType),
}

fn literal_expr(value: Value, range: TextRange) -> Expr {
    Expr {
        kind: ExprKind::Literal(value),
        ty: value.ty(),
        range,
    }
}

/// The type C gives an integer literal: the first of a list of types that
/// holds the value (C11 6.4.4.1).
#[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
pub(crate) fn int_literal_value(literal: IntValue) -> Value {
    let v = literal.value;
    let fits_int = v <= i32::MAX as u64;
    let fits_uint = v <= u64::from(u32::MAX);
    let fits_ll = v <= i64::MAX as u64;
    if literal.unsigned {
        return if fits_uint {
            Value::Uint(v as u32)
        } else {
            Value::Ull(v)
        };
    }
    if fits_int {
        Value::Int(v as i32)
    } else if literal.hex && fits_uint {
        Value::Uint(v as u32)
    } else if fits_ll {
        Value::Ll(v as i64)
    } else {
        Value::Ull(v)
    }
}

/// Wraps `expr` in a conversion to `ty` when its type differs.
pub(crate) fn convert(expr: Expr, ty: ScalarType, explicit: bool) -> Expr {
    if expr.ty == ty || expr.kind == ExprKind::Error {
        return expr;
    }
    let range = expr.range;
    Expr {
        kind: ExprKind::Convert {
            value: Box::new(expr),
            explicit,
        },
        ty,
        range,
    }
}

/// The element type of a declaration, with E201 for a dimension below 1 or
/// above [`MAX_DIMENSION`].
pub(crate) fn element_type(
    node: Option<ast::ElementTypeNode<'_>>,
    source: &str,
    file: FileId,
    name: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ElementType> {
    let node = node?;
    let scalar = node.scalar()?.scalar(source)?;
    let dimension = match node.dimension() {
        None => 1,
        Some(d) => {
            let size = WrittenSize::read(&d, source);
            let location = Location {
                file,
                range: d.text_range(),
            };
            diagnostics.extend(size.diagnostic(
                location,
                (
                    format!("`{name}` has dimension 0; a dimension must be at least 1"),
                    "dimension 0",
                ),
                || {
                    format!(
                        "`{name}` has dimension {}; a dimension may be at most {MAX_DIMENSION}",
                        d.text(source)
                    )
                },
            ));
            size.or_one()
        }
    };
    Some(ElementType { scalar, dimension })
}
