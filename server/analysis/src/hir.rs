//! The bodies of kernels, `main` and constant expressions, lowered from the
//! syntax tree: names resolved, types computed, C's implicit conversions made
//! explicit. The code generator prints it and the interpreter runs it; neither
//! looks at the syntax tree.

use op2_syntax::TextRange;
use op2_syntax::ast::{AssignOp, BinaryOp, ScalarType, UnaryOp};

use crate::model::{ConstId, DatId, GlobalId, InvocationId, SetId};
use crate::value::Value;

/// Index of a local variable in its [`Body`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);

/// A local variable of a kernel or of `main`.
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    /// Its name.
    pub name: String,
    /// Its scalar type.
    pub ty: ScalarType,
    /// Array length for `double t[4]`, `None` for a scalar.
    pub dimension: Option<u32>,
    /// Where it is declared (its name).
    pub range: TextRange,
    /// Declared `const`.
    pub is_const: bool,
}

/// What a name in a body refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Var {
    /// A local variable.
    Local(LocalId),
    /// The k-th kernel parameter.
    Param(u32),
    /// A const, read directly.
    Const(ConstId),
    /// A mutable global (only in `main`).
    Global(GlobalId),
}

/// A storage location: a variable, or one component of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// The variable.
    pub var: Var,
    /// The component, for `p[i]` and `*p` (index 0); `None` for a scalar
    /// variable used whole.
    pub index: Option<Box<Expr>>,
    /// Where the place is written in the source.
    pub range: TextRange,
}

/// The built-in functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Builtin {
    Sqrt,
    Fabs,
    Abs,
    Fmin,
    Fmax,
    Min,
    Max,
    Pow,
    Exp,
    Log,
    Log10,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Floor,
    Ceil,
    Round,
    Isnan,
    Isinf,
}

impl Builtin {
    /// The built-in called `name`.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Some(match name {
            "sqrt" => Builtin::Sqrt,
            "fabs" => Builtin::Fabs,
            "abs" => Builtin::Abs,
            "fmin" => Builtin::Fmin,
            "fmax" => Builtin::Fmax,
            "min" => Builtin::Min,
            "max" => Builtin::Max,
            "pow" => Builtin::Pow,
            "exp" => Builtin::Exp,
            "log" => Builtin::Log,
            "log10" => Builtin::Log10,
            "sin" => Builtin::Sin,
            "cos" => Builtin::Cos,
            "tan" => Builtin::Tan,
            "asin" => Builtin::Asin,
            "acos" => Builtin::Acos,
            "atan" => Builtin::Atan,
            "atan2" => Builtin::Atan2,
            "floor" => Builtin::Floor,
            "ceil" => Builtin::Ceil,
            "round" => Builtin::Round,
            "isnan" => Builtin::Isnan,
            "isinf" => Builtin::Isinf,
            _ => return None,
        })
    }

    /// The name as written.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Sqrt => "sqrt",
            Builtin::Fabs => "fabs",
            Builtin::Abs => "abs",
            Builtin::Fmin => "fmin",
            Builtin::Fmax => "fmax",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Pow => "pow",
            Builtin::Exp => "exp",
            Builtin::Log => "log",
            Builtin::Log10 => "log10",
            Builtin::Sin => "sin",
            Builtin::Cos => "cos",
            Builtin::Tan => "tan",
            Builtin::Asin => "asin",
            Builtin::Acos => "acos",
            Builtin::Atan => "atan",
            Builtin::Atan2 => "atan2",
            Builtin::Floor => "floor",
            Builtin::Ceil => "ceil",
            Builtin::Round => "round",
            Builtin::Isnan => "isnan",
            Builtin::Isinf => "isinf",
        }
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            Builtin::Fmin
            | Builtin::Fmax
            | Builtin::Min
            | Builtin::Max
            | Builtin::Pow
            | Builtin::Atan2 => 2,
            _ => 1,
        }
    }

    /// The type of the result and the type the arguments are converted to,
    /// given the arguments' types. The `f…` math functions are the C
    /// `double` functions (C has `sqrtf` for float: a float argument to
    /// `sqrt` is computed in double); `abs`, `min` and `max` keep the common
    /// type of their arguments; `isnan`/`isinf` yield `int`.
    pub fn signature(self, args: &[ScalarType]) -> (ScalarType, ScalarType) {
        match self {
            Builtin::Abs | Builtin::Min | Builtin::Max => {
                let common = args
                    .iter()
                    .copied()
                    .reduce(crate::value::common_type)
                    .unwrap_or(ScalarType::Int);
                (common, common)
            }
            Builtin::Isnan | Builtin::Isinf => (ScalarType::Int, ScalarType::Double),
            _ => (ScalarType::Double, ScalarType::Double),
        }
    }
}

/// An expression with its type.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What it computes.
    pub kind: ExprKind,
    /// Its C type.
    pub ty: ScalarType,
    /// Where it is written (for an implicit conversion, the converted
    /// expression's range).
    pub range: TextRange,
}

/// The forms of expression.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A literal or a folded constant.
    Literal(Value),
    /// Reads a place.
    Load(Place),
    /// `len(S)`: an `int`.
    Len(SetId),
    /// Assigns and yields the assigned value (converted to the place's type).
    Assign {
        /// The target.
        place: Place,
        /// `=` or a compound operator.
        op: AssignOp,
        /// The value, already converted to the operand type of `op` (for
        /// `=`, to the place's type).
        value: Box<Expr>,
    },
    /// `++`/`--`.
    Update {
        /// The target.
        place: Place,
        /// `++` when true.
        increment: bool,
        /// Prefix form (yields the new value) when true.
        prefix: bool,
    },
    /// A unary operator (never `*` or `&`).
    Unary(UnaryOp, Box<Expr>),
    /// A binary operator; operands already converted to the operation type.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// A long left-associated chain of binary operators, `first op₁ r₁ op₂
    /// r₂ …`, which means `((first op₁ r₁) op₂ r₂) …`. It is kept flat so
    /// that no pass over a body recurses once per operator: `x + x + … + x`
    /// with 100,000 terms is one chain. Lowering makes a chain of a left
    /// operand spine of more than [`CHAIN_MIN`] operators and nested
    /// [`ExprKind::Binary`] of a shorter one; both mean the same.
    Chain(Box<Expr>, Vec<Link>),
    /// `c ? a : b`; `a` and `b` converted to the result type.
    Conditional(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A conversion: written as a cast when `explicit`, else inserted by
    /// the usual arithmetic conversions.
    Convert {
        /// The converted value.
        value: Box<Expr>,
        /// True for a cast in the source.
        explicit: bool,
    },
    /// A built-in call; arguments converted to the built-in's operand type.
    Call(Builtin, Vec<Expr>),
    /// Something that could not be lowered (already reported).
    Error,
}

/// Left-associated operator chains longer than this are lowered to
/// [`ExprKind::Chain`].
pub const CHAIN_MIN: usize = 16;

/// One step of an [`ExprKind::Chain`]: the running value, converted to
/// `operand` when its type differs (as [`ExprKind::Binary`]'s left operand
/// is), combined by `op` with `right`.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The operator.
    pub op: BinaryOp,
    /// The type the running value is converted to before `op` (for `&&`
    /// and `||`, its own type: they convert nothing).
    pub operand: ScalarType,
    /// The right operand, converted as [`ExprKind::Binary`]'s is.
    pub right: Expr,
    /// The type of this step's result.
    pub ty: ScalarType,
    /// Where this step is written: from the chain's start to `right`'s end.
    pub range: TextRange,
}

/// An initialiser of a local.
#[derive(Clone, Debug, PartialEq)]
pub enum LocalInit {
    /// `= e`
    Expr(Expr),
    /// `= {a, b, …}`
    List(Vec<Expr>),
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    /// What it does.
    pub kind: StmtKind,
    /// Where it is written.
    pub range: TextRange,
}

/// The forms of statement.
#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// An expression evaluated for its effect.
    Expr(Expr),
    /// A local variable declaration.
    Local {
        /// The variable.
        local: LocalId,
        /// Its initial value.
        init: Option<LocalInit>,
    },
    /// `{ … }`: a new scope.
    Block(Vec<Stmt>),
    /// Statements in the enclosing scope: the declarators of one
    /// declaration (`double a, b = 0.0;`).
    Sequence(Vec<Stmt>),
    /// `if`
    If {
        /// The condition.
        condition: Expr,
        /// Run when true.
        then_branch: Box<Stmt>,
        /// Run when false.
        else_branch: Option<Box<Stmt>>,
    },
    /// `for`; a declaration in the initialiser is scoped to the loop.
    For {
        /// The initialiser.
        init: Option<Box<Stmt>>,
        /// The condition (none: forever).
        condition: Option<Expr>,
        /// The step.
        step: Option<Expr>,
        /// The body.
        body: Box<Stmt>,
    },
    /// `while`
    While {
        /// The condition.
        condition: Expr,
        /// The body.
        body: Box<Stmt>,
    },
    /// `do … while`
    DoWhile {
        /// The body.
        body: Box<Stmt>,
        /// The condition.
        condition: Expr,
    },
    /// `break;`
    Break,
    /// `continue;`
    Continue,
    /// `return;`
    Return,
    /// A par_loop in `main`.
    ParLoop(InvocationId),
    /// `print(format, args…)` or `printf(format, args…)` in `main`.
    Print {
        /// `print`, which ends the line it writes; `printf` writes
        /// exactly what the format makes.
        ends_line: bool,
        /// The format with escapes resolved.
        format: String,
        /// The format parsed, once: what `run` and `simulate` print with.
        pieces: Vec<crate::format::Piece>,
        /// The values.
        args: Vec<Expr>,
    },
    /// `exit(status);` in `main`: the status, an `int`.
    Exit(Expr),
    /// `fetch DAT into GLOBAL;` in `main`: every value of the dat, element
    /// by element, copied into the global array (language.md §8).
    Fetch {
        /// The dat read.
        dat: DatId,
        /// The global written.
        global: GlobalId,
        /// Where the global is named (E609 points there).
        global_range: TextRange,
    },
}

/// A lowered kernel body or `main`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Body {
    /// Locals, indexed by [`LocalId`].
    pub locals: Vec<Local>,
    /// The statements.
    pub statements: Vec<Stmt>,
}

impl Body {
    /// The local with `id`.
    pub fn local(&self, id: LocalId) -> &Local {
        &self.locals[id.0 as usize]
    }
}

/// The first `print`/`printf` statement of `body` (in a kernel: the print
/// that only `op2 run` runs), searched without recursion, as nesting depth
/// comes from the input.
pub fn first_print(body: &Body) -> Option<&Stmt> {
    statements(body).find(|s| matches!(s.kind, StmtKind::Print { .. }))
}

/// One `fetch DAT into GLOBAL;` of `main`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fetch {
    /// The dat read.
    pub dat: DatId,
    /// The global written.
    pub global: GlobalId,
    /// The whole statement.
    pub range: TextRange,
    /// Where the global is named.
    pub global_range: TextRange,
}

/// Every `fetch` statement of `body`, in source order.
pub fn fetches(body: &Body) -> impl Iterator<Item = Fetch> + '_ {
    statements(body).filter_map(|s| match s.kind {
        StmtKind::Fetch {
            dat,
            global,
            global_range,
        } => Some(Fetch {
            dat,
            global,
            range: s.range,
            global_range,
        }),
        _ => None,
    })
}

/// Every statement of `body`, nested ones included, in source order,
/// walked without recursion, as nesting depth comes from the input.
pub fn statements(body: &Body) -> impl Iterator<Item = &Stmt> {
    let mut stack: Vec<&Stmt> = body.statements.iter().rev().collect();
    std::iter::from_fn(move || {
        let stmt = stack.pop()?;
        match &stmt.kind {
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => {
                stack.extend(stmts.iter().rev());
            }
            StmtKind::If {
                then_branch,
                else_branch,
                ..
            } => {
                stack.extend(else_branch.as_deref());
                stack.push(then_branch);
            }
            StmtKind::For { init, body, .. } => {
                stack.push(body);
                stack.extend(init.as_deref());
            }
            StmtKind::While { body, .. } | StmtKind::DoWhile { body, .. } => stack.push(body),
            _ => {}
        }
        Some(stmt)
    })
}

/// Calls `f` on every expression of `stmt`, outermost first.
pub fn walk_stmt_exprs<'a>(stmt: &'a Stmt, f: &mut dyn FnMut(&'a Expr)) {
    match &stmt.kind {
        StmtKind::Expr(expr) => walk_expr(expr, f),
        StmtKind::Local { init, .. } => match init {
            Some(LocalInit::Expr(expr)) => walk_expr(expr, f),
            Some(LocalInit::List(items)) => items.iter().for_each(|e| walk_expr(e, f)),
            None => {}
        },
        StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => {
            stmts.iter().for_each(|s| walk_stmt_exprs(s, f))
        }
        StmtKind::If {
            condition,
            then_branch,
            else_branch,
        } => {
            walk_expr(condition, f);
            walk_stmt_exprs(then_branch, f);
            if let Some(e) = else_branch {
                walk_stmt_exprs(e, f);
            }
        }
        StmtKind::For {
            init,
            condition,
            step,
            body,
        } => {
            if let Some(i) = init {
                walk_stmt_exprs(i, f);
            }
            if let Some(c) = condition {
                walk_expr(c, f);
            }
            if let Some(s) = step {
                walk_expr(s, f);
            }
            walk_stmt_exprs(body, f);
        }
        StmtKind::While { condition, body } | StmtKind::DoWhile { body, condition } => {
            walk_expr(condition, f);
            walk_stmt_exprs(body, f);
        }
        StmtKind::Print { args, .. } => args.iter().for_each(|e| walk_expr(e, f)),
        StmtKind::Exit(status) => walk_expr(status, f),
        StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Return
        | StmtKind::ParLoop(_)
        | StmtKind::Fetch { .. } => {}
    }
}

/// Calls `f` on `expr` and every expression inside it, outermost first.
pub fn walk_expr<'a>(expr: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    f(expr);
    let place_index = |place: &'a Place, f: &mut dyn FnMut(&'a Expr)| {
        if let Some(index) = &place.index {
            walk_expr(index, f);
        }
    };
    match &expr.kind {
        ExprKind::Literal(_) | ExprKind::Len(_) | ExprKind::Error => {}
        ExprKind::Load(place) | ExprKind::Update { place, .. } => place_index(place, f),
        ExprKind::Assign { place, value, .. } => {
            place_index(place, f);
            walk_expr(value, f);
        }
        ExprKind::Unary(_, a) | ExprKind::Convert { value: a, .. } => walk_expr(a, f),
        ExprKind::Binary(_, a, b) => {
            walk_expr(a, f);
            walk_expr(b, f);
        }
        ExprKind::Chain(first, links) => {
            walk_expr(first, f);
            links.iter().for_each(|link| walk_expr(&link.right, f));
        }
        ExprKind::Conditional(c, a, b) => {
            walk_expr(c, f);
            walk_expr(a, f);
            walk_expr(b, f);
        }
        ExprKind::Call(_, args) => args.iter().for_each(|a| walk_expr(a, f)),
    }
}

/// The value of an index that is a literal, converted as written (`q[0]`,
/// and `q[(bool)5]`, which is `q[1]`), as every engine computes it; `None`
/// for anything computed.
pub fn literal_index(expr: &Expr) -> Option<i128> {
    // The conversions from the outermost in, applied from the innermost.
    let mut conversions = Vec::new();
    let mut expr = expr;
    loop {
        match &expr.kind {
            ExprKind::Literal(value) => {
                let value = conversions
                    .iter()
                    .rev()
                    .fold(*value, |v: Value, ty: &ScalarType| v.convert(*ty));
                return value.as_i128();
            }
            ExprKind::Convert { value, .. } => {
                conversions.push(expr.ty);
                expr = value;
            }
            _ => return None,
        }
    }
}

/// The value of an integer literal, possibly negated or converted (`-1`,
/// `(int)3`); `None` for anything computed.
pub fn literal_int(expr: &Expr) -> Option<i64> {
    let mut expr = expr;
    let mut negated = false;
    loop {
        match &expr.kind {
            ExprKind::Literal(value) => {
                let value = value.as_i64()?;
                return if negated {
                    value.checked_neg()
                } else {
                    Some(value)
                };
            }
            ExprKind::Convert { value, .. } => expr = value,
            ExprKind::Unary(UnaryOp::Neg, value) => {
                negated = !negated;
                expr = value;
            }
            _ => return None,
        }
    }
}
