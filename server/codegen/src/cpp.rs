//! Printing lowered bodies as C++14 for the handlers: kernel functions and
//! the controller's blocks. Every operand is parenthesised, so C's
//! precedence never has to be re-derived; literals keep their C type and
//! exact value.

use std::fmt::Write;

use op2_analysis::format::{Count, MAX_LINE, Piece};
use op2_analysis::hir::{
    Body, Builtin, Expr, ExprKind, Link, LocalInit, Place, Stmt, StmtKind, Var,
};
use op2_analysis::value::Value;
use op2_syntax::ast::{BinaryOp, ScalarType, UnaryOp};

use crate::names;

/// How variables are spelled where a body is printed.
pub(crate) trait Spelling {
    /// The C++ expression for the variable as a whole (a pointer or array
    /// for parameters, consts and globals, a scalar or array for locals).
    fn base(&self, var: Var) -> String;
    /// True when the variable is stored as an array even if the program
    /// uses it as a scalar (consts, globals, parameters): a bare use reads
    /// component 0.
    fn stored_as_array(&self, var: Var) -> bool;
    /// The expression for `len(S)`.
    fn length(&self, set: op2_analysis::model::SetId) -> String;
}

/// C++ type of a scalar in expressions and locals.
pub(crate) fn scalar_type(ty: ScalarType) -> &'static str {
    match ty {
        ScalarType::Double => "double",
        ScalarType::Float => "float",
        ScalarType::Int => "int32_t",
        ScalarType::Uint => "uint32_t",
        ScalarType::Ll => "int64_t",
        ScalarType::Ull => "uint64_t",
        ScalarType::Bool => "bool",
    }
}

/// The declared type of stored data: `bool` is stored as `uint8_t`.
pub(crate) fn scalar_type_decl(ty: ScalarType) -> &'static str {
    if ty == ScalarType::Bool {
        crate::model::CType::U8.name()
    } else {
        scalar_type(ty)
    }
}

/// A floating value as a C++ literal that reads back to the same value
/// (an infinity, from a literal such as `1e999`, as `<cmath>`'s `HUGE_VAL`).
pub(crate) fn double_literal(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "HUGE_VAL" } else { "(-HUGE_VAL)" }.into();
    }
    if v.is_nan() {
        return "((double) NAN)".into();
    }
    // Rust's `{:?}` prints the shortest text that reads back exactly.
    let text = format!("{v:?}");
    if text.contains(['.', 'e', 'E']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// Whether evaluating `expr` changes something (an assignment, `++`).
fn has_side_effect(expr: &Expr) -> bool {
    let mut found = false;
    op2_analysis::hir::walk_expr(expr, &mut |e| {
        found |= matches!(e.kind, ExprKind::Assign { .. } | ExprKind::Update { .. });
    });
    found
}

/// The helper that divides (`/`) or takes the remainder (`%`) of a signed
/// integer result (`op2_div`, `op2_rem`), so that `INT_MIN / -1` gives
/// what `op2 run` gives, not x86's trap.
fn signed_division(op: BinaryOp, ty: ScalarType) -> Option<&'static str> {
    match (op, ty) {
        (BinaryOp::Div, ScalarType::Int | ScalarType::Ll) => Some("op2_div"),
        (BinaryOp::Rem, ScalarType::Int | ScalarType::Ll) => Some("op2_rem"),
        _ => None,
    }
}

/// A value as a C++ literal of the same type and value.
pub(crate) fn literal(value: Value) -> String {
    match value {
        Value::Double(v) => double_literal(v),
        Value::Float(v) if v.is_infinite() => {
            if v > 0.0 { "HUGE_VALF" } else { "(-HUGE_VALF)" }.into()
        }
        Value::Float(v) if v.is_nan() => "NAN".into(),
        Value::Float(v) => {
            let text = format!("{v:?}");
            if text.contains(['.', 'e', 'E']) {
                format!("{text}f")
            } else {
                format!("{text}.0f")
            }
        }
        // The most negative int has no literal: `-2147483648` is the
        // negation of a `long`.
        Value::Int(i32::MIN) => "(-2147483647 - 1)".into(),
        Value::Int(v) => v.to_string(),
        Value::Uint(v) => format!("{v}u"),
        Value::Ll(i64::MIN) => "(-9223372036854775807LL - 1)".into(),
        Value::Ll(v) => format!("{v}LL"),
        Value::Ull(v) => format!("{v}ULL"),
        Value::Bool(v) => if v { "true" } else { "false" }.into(),
    }
}

/// Escapes a format string as a C string literal.
pub(crate) fn string_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            // `??=` and friends are trigraphs in C++14.
            '?' => out.push_str("\\?"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            // Handler text stays ASCII (poets-v4.md §1.1): octal escapes
            // for everything else, byte by byte of its UTF-8.
            c => {
                let mut buffer = [0u8; 4];
                for byte in c.encode_utf8(&mut buffer).bytes() {
                    let _ = write!(out, "\\{byte:03o}");
                }
            }
        }
    }
    out.push('"');
    // GS pastes handlers into a raw string ending at `)CDATA"`: a literal
    // that ends that way is split in two.
    if out.ends_with(")CDATA\"") {
        out.truncate(out.len() - 2);
        out.push_str("\" \"A\"");
    }
    out
}

pub(crate) struct Printer<'a> {
    pub spelling: &'a dyn Spelling,
    pub out: String,
    pub indent: usize,
}

impl Printer<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    pub fn place(&self, place: &Place) -> String {
        let base = self.spelling.base(place.var);
        match &place.index {
            Some(index) => format!("{base}[{}]", self.expr(index)),
            None if self.spelling.stored_as_array(place.var) => format!("{base}[0]"),
            None => base,
        }
    }

    pub fn expr(&self, expr: &Expr) -> String {
        match &expr.kind {
            ExprKind::Literal(value) => literal(*value),
            ExprKind::Load(place) => self.place(place),
            ExprKind::Len(set) => self.spelling.length(*set),
            ExprKind::Assign {
                place,
                op,
                value: operand,
            } => {
                let target = self.place(place);
                let value = self.expr(operand);
                // A bool may be stored as uint8_t: every assignment to it
                // converts to bool, as C's _Bool does (`b += 1` stores 1);
                // a compound one through a helper that names the place
                // once (`op2_bool_add`), so that its index is evaluated
                // once.
                match (expr.ty == ScalarType::Bool, op.binary()) {
                    (true, None) => format!("({target} = (bool)({value}))"),
                    (true, Some(binary)) => {
                        let name = match binary {
                            BinaryOp::Add => "add",
                            BinaryOp::Sub => "sub",
                            BinaryOp::Mul => "mul",
                            BinaryOp::Div => "div",
                            BinaryOp::Rem => "rem",
                            BinaryOp::BitAnd => "and",
                            BinaryOp::BitOr => "or",
                            BinaryOp::BitXor => "xor",
                            BinaryOp::Shl => "shl",
                            _ => "shr",
                        };
                        format!("op2_bool_{name}({target}, {value})")
                    }
                    // `x /= v` of a signed common type through `op2_div`
                    // (`INT_MIN / -1`), naming the place twice only where
                    // its index has no side effect (a state member
                    // cannot be bound to a reference).
                    (false, Some(binary))
                        if signed_division(binary, operand.ty).is_some()
                            && place.index.as_deref().is_none_or(|i| !has_side_effect(i)) =>
                    {
                        let helper = signed_division(binary, operand.ty).unwrap_or_default();
                        format!("({target} = {helper}({target}, {value}))")
                    }
                    (false, _) => format!("({target} {} {value})", op.token()),
                }
            }
            ExprKind::Update {
                place,
                increment,
                prefix,
            } => {
                let target = self.place(place);
                let op = if *increment { "++" } else { "--" };
                // C++17 has no `++`/`--` on bool, and a bool stored as
                // uint8_t would count past 1: convert, as C does.
                if expr.ty == ScalarType::Bool {
                    let delta = if *increment { 1 } else { -1 };
                    return if *prefix {
                        format!("op2_bool_pre({target}, {delta})")
                    } else {
                        format!("op2_bool_post({target}, {delta})")
                    };
                }
                if *prefix {
                    format!("({op}{target})")
                } else {
                    format!("({target}{op})")
                }
            }
            ExprKind::Unary(op, operand) => {
                let op = match op {
                    UnaryOp::Neg => "-",
                    UnaryOp::Plus => "+",
                    UnaryOp::Not => "!",
                    UnaryOp::BitNot => "~",
                    UnaryOp::Deref | UnaryOp::AddressOf => "",
                };
                format!("({op}{})", self.expr(operand))
            }
            ExprKind::Binary(op, left, right) => match signed_division(*op, expr.ty) {
                Some(helper) => format!("{helper}({}, {})", self.expr(left), self.expr(right)),
                None => format!("({} {} {})", self.expr(left), op.token(), self.expr(right)),
            },
            ExprKind::Chain(first, links) => self.chain(first, links),
            ExprKind::Conditional(c, a, b) => {
                format!("({} ? {} : {})", self.expr(c), self.expr(a), self.expr(b))
            }
            ExprKind::Convert { value, explicit } => {
                // Implicit conversions happen in C++ as in C; only casts
                // written in the source, and conversions to bool, are
                // printed.
                if *explicit || expr.ty == ScalarType::Bool {
                    format!("(({}) {})", scalar_type(expr.ty), self.expr(value))
                } else {
                    self.expr(value)
                }
            }
            ExprKind::Call(builtin, args) => {
                // Arguments are converted to the built-in's operand type
                // explicitly: `op2_min` and friends are templates of one
                // type, and C's implicit conversions do not reach them.
                // Theirs are converted to it unless they are a variable or
                // a cast already: a comparison is an `int` in C but a
                // `bool` in C++, and an `ll` literal a `long long` where
                // `int64_t` is `long`, either of which the template cannot
                // take beside an `int32_t` or an `int64_t`.
                let generic = matches!(builtin, Builtin::Abs | Builtin::Min | Builtin::Max);
                let args: Vec<String> = args
                    .iter()
                    .map(|a| match &a.kind {
                        ExprKind::Convert {
                            value,
                            explicit: false,
                        } => format!("(({}) {})", scalar_type(a.ty), self.expr(value)),
                        ExprKind::Load(_) | ExprKind::Convert { .. } => self.expr(a),
                        _ if generic => format!("(({}) {})", scalar_type(a.ty), self.expr(a)),
                        _ => self.expr(a),
                    })
                    .collect();
                let name = match builtin {
                    Builtin::Abs => "op2_abs",
                    Builtin::Min => "op2_min",
                    Builtin::Max => "op2_max",
                    Builtin::Isnan => "op2_isnan",
                    Builtin::Isinf => "op2_isinf",
                    other => other.name(),
                };
                format!("{name}({})", args.join(", "))
            }
            // Never printed: a program with errors is not compiled.
            ExprKind::Error => "0".into(),
        }
    }

    /// A chain, printed as the nested [`ExprKind::Binary`] it stands for
    /// would be, in one pass: the opening brackets of every step (the
    /// outermost first), the first operand, then each step's operator, right
    /// operand and closing bracket.
    fn chain(&self, first: &Expr, links: &[Link]) -> String {
        let mut out = String::new();
        let mut running = first.ty;
        // Whether each step converts the running value to bool, which is
        // printed (as a `Convert` to bool is).
        let to_bool: Vec<bool> = links
            .iter()
            .map(|link| {
                let converts = link.operand != running && link.operand == ScalarType::Bool;
                running = link.ty;
                converts
            })
            .collect();
        for (link, &converts) in links.iter().zip(&to_bool).rev() {
            match signed_division(link.op, link.ty) {
                Some(helper) => {
                    out.push_str(helper);
                    out.push('(');
                }
                None => out.push('('),
            }
            if converts {
                out.push_str("((bool) ");
            }
        }
        out.push_str(&self.expr(first));
        for (link, converts) in links.iter().zip(to_bool) {
            if converts {
                out.push(')');
            }
            if signed_division(link.op, link.ty).is_some() {
                out.push_str(", ");
            } else {
                out.push(' ');
                out.push_str(link.op.token());
                out.push(' ');
            }
            out.push_str(&self.expr(&link.right));
            out.push(')');
        }
        out
    }

    /// Prints a kernel body statement, declaring locals as C++ locals.
    pub fn kernel_stmt(&mut self, body: &Body, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                let text = format!("{};", self.expr(expr));
                self.line(&text);
            }
            StmtKind::Local { local, init } => {
                let declaration = self.local_declaration(body, *local, init.as_ref());
                self.line(&format!("{declaration};"));
            }
            StmtKind::Block(stmts) => {
                self.line("{");
                self.indent += 1;
                for s in stmts {
                    self.kernel_stmt(body, s);
                }
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::Sequence(stmts) => {
                for s in stmts {
                    self.kernel_stmt(body, s);
                }
            }
            StmtKind::If {
                condition,
                then_branch,
                else_branch,
            } => {
                let text = format!("if ({}) {{", self.expr(condition));
                self.line(&text);
                self.nested(body, then_branch);
                match else_branch {
                    Some(else_branch) => {
                        self.line("} else {");
                        self.nested(body, else_branch);
                        self.line("}");
                    }
                    None => self.line("}"),
                }
            }
            StmtKind::While {
                condition,
                body: loop_body,
            } => {
                let text = format!("while ({}) {{", self.expr(condition));
                self.line(&text);
                self.nested(body, loop_body);
                self.line("}");
            }
            StmtKind::DoWhile {
                body: loop_body,
                condition,
            } => {
                self.line("do {");
                self.nested(body, loop_body);
                let text = format!("}} while ({});", self.expr(condition));
                self.line(&text);
            }
            StmtKind::For {
                init,
                condition,
                step,
                body: loop_body,
            } => {
                // The initialiser's declarations are scoped to the loop: an
                // enclosing block keeps that scoping with any initialiser.
                self.line("{");
                self.indent += 1;
                if let Some(init) = init {
                    self.kernel_stmt(body, init);
                }
                let condition = condition
                    .as_ref()
                    .map_or_else(String::new, |c| self.expr(c));
                let step = step.as_ref().map_or_else(String::new, |s| self.expr(s));
                self.line(&format!("for (; {condition}; {step}) {{"));
                self.nested(body, loop_body);
                self.line("}");
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            StmtKind::Return => self.line("return;"),
            StmtKind::Print {
                ends_line,
                pieces,
                args,
                ..
            } => {
                // Into the evaluation's line buffer, whose completed lines
                // go to the handler's log (build.rs, PRINT_HELPERS).
                let (format, args) = self.typed_print(pieces, args);
                self.buffered_print(
                    ("op2_print.line", "op2_print.length"),
                    *ends_line,
                    format,
                    &args,
                    "op2_print.length = op2_print_written(op2_print.line, op2_print.length, op2_written, op2_log);",
                );
            }
            // Not in kernels (the analysis rejects them there).
            StmtKind::ParLoop(_) | StmtKind::Exit(_) | StmtKind::Fetch { .. } => {}
        }
    }

    fn nested(&mut self, body: &Body, stmt: &Stmt) {
        self.indent += 1;
        match &stmt.kind {
            StmtKind::Block(stmts) => {
                for s in stmts {
                    self.kernel_stmt(body, s);
                }
            }
            _ => self.kernel_stmt(body, stmt),
        }
        self.indent -= 1;
    }

    fn local_declaration(
        &self,
        body: &Body,
        local: op2_analysis::hir::LocalId,
        init: Option<&LocalInit>,
    ) -> String {
        let local = body.local(local);
        let ty = scalar_type(local.ty);
        let name = names::cpp_identifier(&local.name);
        let constness = if local.is_const { "const " } else { "" };
        match (local.dimension, init) {
            (Some(length), Some(LocalInit::List(items))) => {
                let items: Vec<String> = items.iter().map(|e| self.expr(e)).collect();
                format!(
                    "{constness}{ty} {name}[{length}] = {{{}}}",
                    items.join(", ")
                )
            }
            (Some(length), _) => format!("{ty} {name}[{length}] = {{}}"),
            (None, Some(LocalInit::Expr(e))) => {
                format!("{constness}{ty} {name} = {}", self.expr(e))
            }
            // A scalar with no initialiser: zero it, so that the handler never
            // reads an indeterminate value (C leaves it undefined, and any
            // value is then a valid outcome).
            (None, _) => format!("{ty} {name} = 0"),
        }
    }

    /// Rewrites a `print` so that every argument reaches `printf` as the
    /// type its conversion reads, exactly as the interpreter formats it:
    /// `%d` gets a `long long`, `%u`/`%x` an `unsigned` (or `unsigned long
    /// long` for 64-bit and floating values), `%f`/`%e`/`%g` a `double`.
    /// Without this a 64-bit value under `%d` would be undefined behaviour.
    /// The format comes as the analysis parsed it, once, for `op2 check`,
    /// `run` and `simulate` alike: code generation has no parser of its own.
    fn typed_print(&self, pieces: &[Piece], args: &[Expr]) -> (String, Vec<String>) {
        let mut text = String::new();
        let mut printed = Vec::new();
        let mut args = args.iter();
        for piece in pieces {
            let spec = match piece {
                Piece::Text(t) => {
                    text.push_str(&t.replace('%', "%%"));
                    continue;
                }
                Piece::Conversion(spec) => spec,
            };
            let mut stars = Vec::new();
            for count in [spec.width, spec.precision].into_iter().flatten() {
                if count == Count::Star {
                    stars.push(args.next().map(|a| format!("(int)({})", self.expr(a))));
                }
            }
            // A conversion without its argument prints nothing (as the
            // interpreter does); C leaves it undefined.
            let Some(arg) = args.next() else { break };
            if stars.iter().any(Option::is_none) {
                break;
            }
            printed.extend(stars.into_iter().flatten());
            let value = self.expr(arg);
            let wide = matches!(
                arg.ty,
                ScalarType::Ll | ScalarType::Ull | ScalarType::Double | ScalarType::Float
            );
            let prefix = spec.prefix();
            let c = spec.conversion;
            let (conversion, cast) = match c {
                'd' | 'i' => (format!("%{prefix}ll{c}"), "long long"),
                'u' | 'x' | 'X' | 'o' if wide => (format!("%{prefix}ll{c}"), "unsigned long long"),
                'u' | 'x' | 'X' | 'o' => (format!("%{prefix}{c}"), "unsigned"),
                'f' | 'F' | 'e' | 'E' | 'g' | 'G' => (format!("%{prefix}{c}"), "double"),
                'c' => (format!("%{prefix}c"), "int"),
                // Not a conversion the language has: printed as text.
                other => {
                    text.push_str(&format!("%%{other}"));
                    continue;
                }
            };
            text.push_str(&conversion);
            printed.push(format!("({cast})({value})"));
        }
        (text, printed)
    }

    /// A print into a line buffer of [`MAX_LINE`] bytes and a NUL, `line`
    /// with `length` bytes used: `snprintf` appends the text (with the
    /// newline `print` ends its line with), then `written` handles the
    /// `op2_written` bytes it wrote.
    fn buffered_print(
        &mut self,
        (line, length): (&str, &str),
        ends_line: bool,
        mut format: String,
        args: &[String],
        written: &str,
    ) {
        if ends_line && !format.ends_with('\n') {
            format.push('\n');
        }
        let mut call = format!(
            "int op2_written = snprintf({line} + {length}, {} - {length}, {}",
            MAX_LINE + 1,
            string_literal(&format),
        );
        for arg in args {
            let _ = write!(call, ", {arg}");
        }
        call.push_str(");");
        self.line("{");
        self.indent += 1;
        self.line(&call);
        for line in written.lines() {
            self.line(line);
        }
        self.indent -= 1;
        self.line("}");
    }

    /// Prints a statement of a controller block: locals live in the
    /// device's state. With `line_buffer` (the program has a `printf`),
    /// every `print` and `printf` formats into the controller's line buffer
    /// and logs each line it completes; else each `print` is a log call.
    pub fn controller_stmt(
        &mut self,
        body: &Body,
        stmt: &Stmt,
        locals: &[String],
        line_buffer: bool,
    ) {
        match &stmt.kind {
            StmtKind::Expr(expr) => {
                let text = format!("{};", self.expr(expr));
                self.line(&text);
            }
            StmtKind::Local { local, init } => {
                let member = format!("deviceState->{}", locals[local.0 as usize]);
                let declared = body.local(*local);
                match (declared.dimension, init) {
                    (Some(length), Some(LocalInit::List(items))) => {
                        for c in 0..length as usize {
                            let value = items
                                .get(c)
                                .map_or_else(|| "0".to_owned(), |e| self.expr(e));
                            self.line(&format!("{member}[{c}] = {value};"));
                        }
                    }
                    (Some(length), _) => {
                        for c in 0..length {
                            self.line(&format!("{member}[{c}] = 0;"));
                        }
                    }
                    (None, Some(LocalInit::Expr(e))) => {
                        let text = format!("{member} = {};", self.expr(e));
                        self.line(&text);
                    }
                    (None, _) => self.line(&format!("{member} = 0;")),
                }
            }
            StmtKind::Print {
                ends_line,
                pieces,
                args,
                ..
            } => {
                let (format, args) = self.typed_print(pieces, args);
                if !line_buffer {
                    let mut call = format!("handler_log(1, {}", string_literal(&format));
                    for arg in args {
                        let _ = write!(call, ", {arg}");
                    }
                    call.push_str(");");
                    self.line(&call);
                    return;
                }
                let line = format!("(char *)deviceState->{}", names::LINE);
                let length = format!("deviceState->{}", names::LINE_LENGTH);
                self.buffered_print((&line, &length), *ends_line, format, &args, &line_written());
            }
            // Control flow has been compiled into blocks.
            _ => {}
        }
    }
}

/// After `snprintf` appended `op2_written` bytes to the controller's line
/// buffer: the shared code's `op2_print_written` (build.rs, PRINT_HELPERS),
/// which kernels' prints call too, logs each line they completed and moves
/// the unfinished rest to the front, here through the step handler's log.
pub(crate) fn line_written() -> String {
    format!(
        "{PRINT_LOG}\ndeviceState->{length} = op2_print_written((char *)deviceState->{line}, deviceState->{length}, op2_written, op2_log);",
        line = names::LINE,
        length = names::LINE_LENGTH,
    )
}

/// At the end of `main`: logs the line `printf` left unfinished, with the
/// shared code's `op2_print_flush`.
pub(crate) fn line_flush() -> String {
    format!(
        "{{\n    {PRINT_LOG}\n    deviceState->{length} = op2_print_flush((char *)deviceState->{line}, deviceState->{length}, op2_log);\n}}",
        line = names::LINE,
        length = names::LINE_LENGTH,
    )
}

/// The log a handler gives the print helpers (build.rs, PRINT_HELPERS): a
/// line at level 1, for `main`'s prints in the controller's handler and a
/// kernel's in its execute handler alike (a lambda, because `handler_log` is
/// a local object of each handler in GraphSchema and a macro on the
/// Orchestrator, so the shared code cannot call it).
pub(crate) const PRINT_LOG: &str =
    "auto op2_log = [&](const char *op2_text) { handler_log(1, \"%s\", op2_text); };";
