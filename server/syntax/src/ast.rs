//! Typed views over the tree-sitter tree.
//!
//! Every type here is a `Copy` wrapper around a [`Node`] of one kind, with an
//! accessor per field of the grammar. Nothing is copied out of the tree: the
//! text of a name is read from the source on demand with [`NodeText::text`].
//! Accessors return `Option` because a tree with syntax errors may lack any
//! child; consumers skip what is missing (the syntax layer has reported it).

use std::sync::LazyLock;

use std::num::NonZeroU16 as FieldId;

use tree_sitter::{Language, Node, TreeCursor};

use crate::TextRange;

/// Reading the source text and range behind a node.
pub trait NodeText<'t> {
    /// The node itself.
    fn node(&self) -> Node<'t>;

    /// The node's text in `source` (the text the tree was parsed from).
    fn text<'s>(&self, source: &'s str) -> &'s str {
        source.get(self.node().byte_range()).unwrap_or("")
    }

    /// The node's byte range.
    fn text_range(&self) -> TextRange {
        self.node().byte_range().into()
    }
}

impl<'t> NodeText<'t> for Node<'t> {
    fn node(&self) -> Node<'t> {
        *self
    }
}

/// A typed view of a node of one kind.
pub trait AstNode<'t>: Copy + Sized {
    /// Views `node` as this type when its kind matches.
    fn cast(node: Node<'t>) -> Option<Self>;
}

macro_rules! field_ids {
    ($($field:ident = $name:literal,)*) => {
        /// Field ids of the grammar, resolved once.
        struct Fields {
            $($field: FieldId,)*
        }

        static FIELDS: LazyLock<Fields> = LazyLock::new(|| {
            let language = language();
            Fields {
                $($field: language
                    .field_id_for_name($name)
                    .expect(concat!("the grammar has a field `", $name, "`")),)*
            }
        });
    };
}

field_ids! {
    alias = "alias",
    alternative = "alternative",
    argument = "argument",
    arguments = "arguments",
    arity = "arity",
    body = "body",
    condition = "condition",
    consequence = "consequence",
    constant = "const",
    dat = "dat",
    data = "data",
    declarator = "declarator",
    dimension = "dimension",
    element = "element",
    expression = "expression",
    format = "format",
    from = "from",
    function = "function",
    global = "global",
    index = "index",
    info = "info",
    initializer = "initializer",
    kernel = "kernel",
    left = "left",
    map = "map",
    mode = "mode",
    name = "name",
    operator = "operator",
    parameter = "parameter",
    parameters = "parameters",
    path = "path",
    pointer = "pointer",
    right = "right",
    scalar = "scalar",
    set = "set",
    statement = "statement",
    status = "status",
    to = "to",
    ty = "type",
    update = "update",
    value = "value",
}

/// The op2 tree-sitter language.
pub fn language() -> Language {
    tree_sitter_op2::LANGUAGE.into()
}

fn field<'t>(node: Node<'t>, id: fn(&Fields) -> FieldId) -> Option<Node<'t>> {
    node.child_by_field_id(id(&FIELDS).get())
}

/// The children of a node that carry one field, in order.
pub struct FieldChildren<'t> {
    cursor: TreeCursor<'t>,
    field: FieldId,
    started: bool,
}

impl<'t> FieldChildren<'t> {
    fn new(node: Node<'t>, id: fn(&Fields) -> FieldId) -> FieldChildren<'t> {
        FieldChildren {
            cursor: node.walk(),
            field: id(&FIELDS),
            started: false,
        }
    }
}

impl std::fmt::Debug for FieldChildren<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldChildren")
            .field("node", &self.cursor.node())
            .finish_non_exhaustive()
    }
}

impl<'t> Iterator for FieldChildren<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        loop {
            let moved = if self.started {
                self.cursor.goto_next_sibling()
            } else {
                self.started = true;
                self.cursor.goto_first_child()
            };
            if !moved {
                return None;
            }
            if self.cursor.field_id() == Some(self.field) {
                return Some(self.cursor.node());
            }
        }
    }
}

macro_rules! ast_node {
    ($(#[$doc:meta])* $name:ident = $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct $name<'t>(Node<'t>);

        impl<'t> AstNode<'t> for $name<'t> {
            fn cast(node: Node<'t>) -> Option<Self> {
                (node.kind() == $kind).then_some($name(node))
            }
        }

        impl<'t> NodeText<'t> for $name<'t> {
            fn node(&self) -> Node<'t> {
                self.0
            }
        }
    };
}

macro_rules! ast_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident($ty:ident) = $kind:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name<'t> {
            $(#[allow(missing_docs)] $variant($ty<'t>),)*
        }

        impl<'t> AstNode<'t> for $name<'t> {
            fn cast(node: Node<'t>) -> Option<Self> {
                match node.kind() {
                    $($kind => Some($name::$variant($ty(node))),)*
                    _ => None,
                }
            }
        }

        impl<'t> NodeText<'t> for $name<'t> {
            fn node(&self) -> Node<'t> {
                match self {
                    $($name::$variant(inner) => inner.0,)*
                }
            }
        }
    };
}

/// Accessor for a single child of a field, typed.
macro_rules! child {
    ($(#[$doc:meta])* $method:ident -> $ty:ident, $field:ident) => {
        $(#[$doc])*
        pub fn $method(&self) -> Option<$ty<'t>> {
            field(self.0, |f| f.$field).and_then($ty::cast)
        }
    };
}

/// Accessor for all children of a field, typed.
macro_rules! children {
    ($(#[$doc:meta])* $method:ident -> $ty:ident, $field:ident) => {
        $(#[$doc])*
        pub fn $method(&self) -> impl Iterator<Item = $ty<'t>> + use<'t> {
            FieldChildren::new(self.0, |f| f.$field).filter_map($ty::cast)
        }
    };
}

// ----------------------------------------------------------------------
// Tokens
// ----------------------------------------------------------------------

ast_node!(
    /// A name.
    Ident = "identifier"
);
ast_node!(
    /// `42`, `0x2A`, `7u`.
    IntLit = "integer_literal"
);
ast_node!(
    /// `1.0`, `.5`, `1e-3`, `0.5f`.
    FloatLit = "float_literal"
);
ast_node!(
    /// `true` or `false`.
    BoolLit = "boolean_literal"
);
ast_node!(
    /// `"…"`, with C escapes.
    StringLit = "string_literal"
);
ast_node!(
    /// One of the scalar type keywords.
    PrimitiveType = "primitive_type"
);
ast_node!(
    /// `READ`, `WRITE`, `RW`, `INC`, `MIN` or `MAX`.
    AccessModeNode = "access_mode"
);

impl BoolLit<'_> {
    /// The literal's value.
    pub fn value(&self, source: &str) -> bool {
        self.text(source) == "true"
    }
}

/// The scalar types of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// IEEE 64-bit.
    Double,
    /// IEEE 32-bit.
    Float,
    /// 32-bit signed.
    Int,
    /// 32-bit unsigned.
    Uint,
    /// 64-bit signed.
    Ll,
    /// 64-bit unsigned.
    Ull,
    /// `true` or `false`.
    Bool,
}

impl ScalarType {
    /// The keyword that names the type.
    pub fn keyword(self) -> &'static str {
        match self {
            ScalarType::Double => "double",
            ScalarType::Float => "float",
            ScalarType::Int => "int",
            ScalarType::Uint => "uint",
            ScalarType::Ll => "ll",
            ScalarType::Ull => "ull",
            ScalarType::Bool => "bool",
        }
    }

    /// The type named by `keyword`.
    pub fn from_keyword(keyword: &str) -> Option<ScalarType> {
        Some(match keyword {
            "double" => ScalarType::Double,
            "float" => ScalarType::Float,
            "int" => ScalarType::Int,
            "uint" => ScalarType::Uint,
            "ll" => ScalarType::Ll,
            "ull" => ScalarType::Ull,
            "bool" => ScalarType::Bool,
            _ => return None,
        })
    }

    /// True for `double` and `float`.
    pub fn is_floating(self) -> bool {
        matches!(self, ScalarType::Double | ScalarType::Float)
    }
}

impl std::fmt::Display for ScalarType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.keyword())
    }
}

impl PrimitiveType<'_> {
    /// The type, or `None` when the node is malformed.
    pub fn scalar(&self, source: &str) -> Option<ScalarType> {
        ScalarType::from_keyword(self.text(source))
    }
}

/// How a par_loop argument is accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessMode {
    /// Only read.
    Read,
    /// Every component set; the incoming value is undefined.
    Write,
    /// Read and written.
    Rw,
    /// Only added to; contributions are summed.
    Inc,
    /// Reduced to the minimum.
    Min,
    /// Reduced to the maximum.
    Max,
}

impl AccessMode {
    /// Every mode, in the order of the language reference.
    pub const ALL: [AccessMode; 6] = [
        AccessMode::Read,
        AccessMode::Write,
        AccessMode::Rw,
        AccessMode::Inc,
        AccessMode::Min,
        AccessMode::Max,
    ];

    /// The keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            AccessMode::Read => "READ",
            AccessMode::Write => "WRITE",
            AccessMode::Rw => "RW",
            AccessMode::Inc => "INC",
            AccessMode::Min => "MIN",
            AccessMode::Max => "MAX",
        }
    }

    /// The mode named by `keyword`.
    pub fn from_keyword(keyword: &str) -> Option<AccessMode> {
        AccessMode::ALL
            .into_iter()
            .find(|mode| mode.keyword() == keyword)
    }

    /// True for modes that change the data (WRITE, RW, INC, MIN, MAX).
    pub fn writes(self) -> bool {
        self != AccessMode::Read
    }

    /// True for modes that see the incoming value (READ, RW, MIN, MAX).
    pub fn reads(self) -> bool {
        matches!(
            self,
            AccessMode::Read | AccessMode::Rw | AccessMode::Min | AccessMode::Max
        )
    }

    /// True for the reductions INC, MIN and MAX.
    pub fn is_reduction(self) -> bool {
        matches!(self, AccessMode::Inc | AccessMode::Min | AccessMode::Max)
    }
}

impl std::fmt::Display for AccessMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.keyword())
    }
}

impl AccessModeNode<'_> {
    /// The mode.
    pub fn mode(&self, source: &str) -> Option<AccessMode> {
        AccessMode::from_keyword(self.text(source))
    }
}

// ----------------------------------------------------------------------
// Top level
// ----------------------------------------------------------------------

ast_node!(
    /// A whole file.
    SourceFile = "source_file"
);

impl<'t> SourceFile<'t> {
    /// Views the root of a tree as a file. The root is a `source_file`
    /// unless recovery failed everywhere, when it is an `ERROR` node whose
    /// children may still hold items.
    pub(crate) fn from_root(root: Node<'t>) -> SourceFile<'t> {
        SourceFile(root)
    }

    /// The top-level items, in order.
    pub fn items(&self) -> impl Iterator<Item = Item<'t>> + use<'t> {
        let mut cursor = self.0.walk();
        let children: Vec<Node<'t>> = self.0.named_children(&mut cursor).collect();
        children.into_iter().filter_map(Item::cast)
    }
}

ast_enum!(
    /// A top-level item.
    Item {
        Import(ImportDecl) = "import_declaration",
        Set(SetDecl) = "set_declaration",
        Map(MapDecl) = "map_declaration",
        Dat(DatDecl) = "dat_declaration",
        Const(ConstDecl) = "const_declaration",
        Global(GlobalDecl) = "global_declaration",
        Kernel(KernelDef) = "kernel_definition",
        Main(MainDef) = "main_definition",
        ParLoop(ParLoopStmt) = "par_loop_statement",
    }
);

ast_node!(
    /// `import "PATH";`
    ImportDecl = "import_declaration"
);
impl<'t> ImportDecl<'t> {
    child!(
        /// The path, a string literal.
        path -> StringLit, path
    );
}

ast_node!(
    /// `set NAME;`
    SetDecl = "set_declaration"
);
impl<'t> SetDecl<'t> {
    child!(
        /// The set's name.
        name -> Ident, name
    );
}

ast_node!(
    /// `map NAME: FROM -> TO[ARITY];`
    MapDecl = "map_declaration"
);
impl<'t> MapDecl<'t> {
    child!(
        /// The map's name.
        name -> Ident, name
    );
    child!(
        /// The set the map starts at.
        from -> Ident, from
    );
    child!(
        /// The set the map ends at.
        to -> Ident, to
    );
    child!(
        /// Targets per element.
        arity -> IntLit, arity
    );
}

ast_node!(
    /// `double[4]`
    ElementTypeNode = "element_type"
);
impl<'t> ElementTypeNode<'t> {
    child!(
        /// The scalar type.
        scalar -> PrimitiveType, scalar
    );
    child!(
        /// The dimension, when stated.
        dimension -> IntLit, dimension
    );
}

ast_node!(
    /// `dat NAME: TYPE on SET [= INIT];`
    DatDecl = "dat_declaration"
);
impl<'t> DatDecl<'t> {
    child!(
        /// The dat's name.
        name -> Ident, name
    );
    child!(
        /// The element type.
        ty -> ElementTypeNode, ty
    );
    child!(
        /// The set the dat lives on.
        set -> Ident, set
    );
    child!(
        /// The initialiser.
        value -> Initializer, value
    );
}

ast_node!(
    /// `const NAME: TYPE [= EXPR];`
    ConstDecl = "const_declaration"
);
impl<'t> ConstDecl<'t> {
    child!(
        /// The const's name.
        name -> Ident, name
    );
    child!(
        /// The element type.
        ty -> ElementTypeNode, ty
    );
    child!(
        /// The value.
        value -> Initializer, value
    );
}

ast_node!(
    /// `global NAME: TYPE [= INIT];`
    GlobalDecl = "global_declaration"
);
impl<'t> GlobalDecl<'t> {
    child!(
        /// The global's name.
        name -> Ident, name
    );
    child!(
        /// The element type.
        ty -> ElementTypeNode, ty
    );
    child!(
        /// The initial value.
        value -> Initializer, value
    );
}

/// An initialiser: an expression or `{a, b, c}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Initializer<'t> {
    /// A single expression.
    Expr(Expr<'t>),
    /// A braced list.
    List(InitializerList<'t>),
}

impl<'t> AstNode<'t> for Initializer<'t> {
    fn cast(node: Node<'t>) -> Option<Self> {
        InitializerList::cast(node)
            .map(Initializer::List)
            .or_else(|| Expr::cast(node).map(Initializer::Expr))
    }
}

impl<'t> NodeText<'t> for Initializer<'t> {
    fn node(&self) -> Node<'t> {
        match self {
            Initializer::Expr(expr) => expr.node(),
            Initializer::List(list) => list.0,
        }
    }
}

ast_node!(
    /// `{a, b, c}`
    InitializerList = "initializer_list"
);
impl<'t> InitializerList<'t> {
    children!(
        /// The elements.
        elements -> Expr, element
    );
}

ast_node!(
    /// `kernel NAME(PARAMS) { … }`
    KernelDef = "kernel_definition"
);
impl<'t> KernelDef<'t> {
    child!(
        /// The kernel's name.
        name -> Ident, name
    );
    child!(
        /// The parenthesised parameter list.
        parameter_list -> ParameterList, parameters
    );
    child!(
        /// The body.
        body -> Block, body
    );

    /// The parameters, in order.
    pub fn parameters(&self) -> impl Iterator<Item = Param<'t>> + use<'t> {
        self.parameter_list()
            .into_iter()
            .flat_map(|list| list.parameters())
    }
}

ast_node!(
    /// `(const double *x, double y[4])`
    ParameterList = "parameter_list"
);
impl<'t> ParameterList<'t> {
    children!(
        /// The parameters.
        parameters -> Param, parameter
    );
}

ast_node!(
    /// `const double *x` or `double y[4]`.
    Param = "parameter"
);
impl<'t> Param<'t> {
    child!(
        /// The parameter's name.
        name -> Ident, name
    );
    child!(
        /// The scalar type.
        ty -> PrimitiveType, ty
    );
    child!(
        /// The stated dimension of `double y[4]`.
        dimension -> IntLit, dimension
    );

    /// The `const` qualifier, when present.
    pub fn const_qualifier(&self) -> Option<Node<'t>> {
        field(self.0, |f| f.constant)
    }
}

ast_node!(
    /// `main { … }`
    MainDef = "main_definition"
);
impl<'t> MainDef<'t> {
    child!(
        /// The body.
        body -> Block, body
    );
}

// ----------------------------------------------------------------------
// Statements
// ----------------------------------------------------------------------

ast_enum!(
    /// A statement of a kernel body or of `main`.
    Stmt {
        Block(Block) = "compound_statement",
        Local(LocalDecl) = "local_declaration",
        Expr(ExprStmt) = "expression_statement",
        If(IfStmt) = "if_statement",
        For(ForStmt) = "for_statement",
        While(WhileStmt) = "while_statement",
        Do(DoStmt) = "do_statement",
        Break(BreakStmt) = "break_statement",
        Continue(ContinueStmt) = "continue_statement",
        Return(ReturnStmt) = "return_statement",
        ParLoop(ParLoopStmt) = "par_loop_statement",
        Print(PrintStmt) = "print_statement",
        Exit(ExitStmt) = "exit_statement",
        Fetch(FetchStmt) = "fetch_statement",
        Switch(SwitchStmt) = "switch_statement",
        Case(CaseLabel) = "case_label",
        Goto(GotoStmt) = "goto_statement",
    }
);

ast_node!(
    /// `{ … }`
    Block = "compound_statement"
);
impl<'t> Block<'t> {
    children!(
        /// The statements, in order.
        statements -> Stmt, statement
    );
}

ast_node!(
    /// `double a, b = 1.0;`
    LocalDecl = "local_declaration"
);
impl<'t> LocalDecl<'t> {
    children!(
        /// The declarators.
        declarators -> VarDeclarator, declarator
    );

    /// The scalar type, when the type is one (not `struct`).
    pub fn ty(&self) -> Option<PrimitiveType<'t>> {
        field(self.0, |f| f.ty).and_then(PrimitiveType::cast)
    }

    /// The type node, whatever it is (a `struct_specifier` is reported).
    pub fn type_node(&self) -> Option<Node<'t>> {
        field(self.0, |f| f.ty)
    }

    /// The `const` qualifier, when present.
    pub fn const_qualifier(&self) -> Option<Node<'t>> {
        field(self.0, |f| f.constant)
    }
}

ast_node!(
    /// `t[4] = {0, 0, 0, 0}` in a local declaration.
    VarDeclarator = "variable_declarator"
);
impl<'t> VarDeclarator<'t> {
    child!(
        /// The variable's name.
        name -> Ident, name
    );
    child!(
        /// The array dimension.
        dimension -> IntLit, dimension
    );
    child!(
        /// The initial value.
        value -> Initializer, value
    );

    /// The `*` of a pointer declarator, which the language rejects.
    pub fn pointer(&self) -> Option<Node<'t>> {
        field(self.0, |f| f.pointer)
    }
}

ast_node!(
    /// `EXPR;` or `;`
    ExprStmt = "expression_statement"
);
impl<'t> ExprStmt<'t> {
    child!(
        /// The expression.
        expr -> Expr, expression
    );
}

ast_node!(
    /// `if (C) A else B`
    IfStmt = "if_statement"
);
impl<'t> IfStmt<'t> {
    /// The condition, inside its parentheses.
    pub fn condition(&self) -> Option<Expr<'t>> {
        field(self.0, |f| f.condition)
            .and_then(ParenExpr::cast)
            .and_then(|p| p.expr())
    }
    child!(
        /// The statement run when the condition holds.
        then_branch -> Stmt, consequence
    );
    child!(
        /// The `else` statement.
        else_branch -> Stmt, alternative
    );
}

/// The first clause of a `for`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ForInit<'t> {
    /// `int i = 0`
    Decl(LocalDecl<'t>),
    /// `i = 0`
    Expr(Expr<'t>),
}

ast_node!(
    /// `for (INIT; COND; STEP) BODY`
    ForStmt = "for_statement"
);
impl<'t> ForStmt<'t> {
    /// The initialiser clause.
    pub fn initializer(&self) -> Option<ForInit<'t>> {
        let node = field(self.0, |f| f.initializer)?;
        LocalDecl::cast(node)
            .map(ForInit::Decl)
            .or_else(|| Expr::cast(node).map(ForInit::Expr))
    }
    child!(
        /// The condition.
        condition -> Expr, condition
    );
    child!(
        /// The step.
        update -> Expr, update
    );
    child!(
        /// The body.
        body -> Stmt, body
    );
}

ast_node!(
    /// `while (C) BODY`
    WhileStmt = "while_statement"
);
impl<'t> WhileStmt<'t> {
    /// The condition, inside its parentheses.
    pub fn condition(&self) -> Option<Expr<'t>> {
        field(self.0, |f| f.condition)
            .and_then(ParenExpr::cast)
            .and_then(|p| p.expr())
    }
    child!(
        /// The body.
        body -> Stmt, body
    );
}

ast_node!(
    /// `do BODY while (C);`
    DoStmt = "do_statement"
);
impl<'t> DoStmt<'t> {
    /// The condition, inside its parentheses.
    pub fn condition(&self) -> Option<Expr<'t>> {
        field(self.0, |f| f.condition)
            .and_then(ParenExpr::cast)
            .and_then(|p| p.expr())
    }
    child!(
        /// The body.
        body -> Stmt, body
    );
}

ast_node!(
    /// `break;`
    BreakStmt = "break_statement"
);
ast_node!(
    /// `continue;`
    ContinueStmt = "continue_statement"
);
ast_node!(
    /// `return;`
    ReturnStmt = "return_statement"
);
impl<'t> ReturnStmt<'t> {
    child!(
        /// A returned value, which the language rejects.
        value -> Expr, value
    );
}

ast_node!(
    /// `par_loop KERNEL [as NAME] over SET (ARGS);`
    ParLoopStmt = "par_loop_statement"
);
impl<'t> ParLoopStmt<'t> {
    child!(
        /// The kernel applied.
        kernel -> Ident, kernel
    );
    child!(
        /// The name given with `as`.
        alias -> Ident, alias
    );
    child!(
        /// The iteration set.
        set -> Ident, set
    );
    child!(
        /// The parenthesised argument list.
        argument_list -> ParLoopArgs, arguments
    );

    /// The arguments, in order.
    pub fn arguments(&self) -> impl Iterator<Item = ParLoopArg<'t>> + use<'t> {
        self.argument_list()
            .into_iter()
            .flat_map(|list| list.arguments())
    }
}

ast_node!(
    /// `( ARG, ARG, … )` of a par_loop.
    ParLoopArgs = "par_loop_arguments"
);
impl<'t> ParLoopArgs<'t> {
    children!(
        /// The arguments.
        arguments -> ParLoopArg, argument
    );
}

/// What a par_loop argument names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgData<'t> {
    /// A dat, global or const.
    Name(Ident<'t>),
    /// `len(SET)`.
    Len(LenExpr<'t>),
    /// `idx`: the element's index (with a map, the index of the element
    /// the map reaches).
    Index(IndexArg<'t>),
}

ast_node!(
    /// `p_x[pcell[0]] READ`, `rms INC`, `gam`, `len(cells)`.
    ParLoopArg = "par_loop_argument"
);
impl<'t> ParLoopArg<'t> {
    /// The data the argument names.
    pub fn data(&self) -> Option<ArgData<'t>> {
        let node = field(self.0, |f| f.data)?;
        Ident::cast(node)
            .map(ArgData::Name)
            .or_else(|| LenExpr::cast(node).map(ArgData::Len))
            .or_else(|| IndexArg::cast(node).map(ArgData::Index))
    }
    child!(
        /// The map of an indirect argument.
        map -> Ident, map
    );
    child!(
        /// The map index of an indirect argument.
        index -> IntLit, index
    );
    child!(
        /// The access mode.
        mode -> AccessModeNode, mode
    );
    child!(
        /// `INFO(G)` in place of a mode.
        info -> InfoMode, info
    );
}

ast_node!(
    /// `idx` as a par_loop argument.
    IndexArg = "index_argument"
);

ast_node!(
    /// `INFO(G)`: the mode of a global that records where `G` reached its
    /// extreme.
    InfoMode = "info_mode"
);
impl<'t> InfoMode<'t> {
    child!(
        /// The MIN or MAX global of the same loop.
        global -> Ident, global
    );
}

ast_node!(
    /// `print("fmt", args…);` or `printf("fmt", args…);`
    PrintStmt = "print_statement"
);
impl<'t> PrintStmt<'t> {
    /// Whether the statement is `print`, which ends the line it writes
    /// (`printf` writes exactly what its format makes).
    pub fn ends_line(self) -> bool {
        self.0
            .child(0)
            .is_some_and(|keyword| keyword.kind() == "print")
    }

    /// The keyword, `print` or `printf`.
    pub fn keyword(self) -> &'static str {
        if self.ends_line() { "print" } else { "printf" }
    }

    child!(
        /// The format string.
        format -> StringLit, format
    );
    children!(
        /// The values printed.
        arguments -> Expr, argument
    );
}

ast_node!(
    /// `exit(STATUS);`
    ExitStmt = "exit_statement"
);
impl<'t> ExitStmt<'t> {
    child!(
        /// The exit status.
        status -> Expr, status
    );
}

ast_node!(
    /// `fetch DAT into GLOBAL;`
    FetchStmt = "fetch_statement"
);
impl<'t> FetchStmt<'t> {
    child!(
        /// The dat whose values are copied.
        dat -> Ident, dat
    );
    child!(
        /// The global array they are copied into.
        global -> Ident, global
    );
}

ast_node!(
    /// `switch (…) { … }`: not part of the language.
    SwitchStmt = "switch_statement"
);
ast_node!(
    /// `case X:` or `default:`: not part of the language.
    CaseLabel = "case_label"
);
ast_node!(
    /// `goto L;`: not part of the language.
    GotoStmt = "goto_statement"
);

// ----------------------------------------------------------------------
// Expressions
// ----------------------------------------------------------------------

ast_enum!(
    /// An expression.
    Expr {
        Ident(Ident) = "identifier",
        Int(IntLit) = "integer_literal",
        Float(FloatLit) = "float_literal",
        Bool(BoolLit) = "boolean_literal",
        Paren(ParenExpr) = "parenthesized_expression",
        Assign(AssignExpr) = "assignment_expression",
        Update(UpdateExpr) = "update_expression",
        Conditional(ConditionalExpr) = "conditional_expression",
        Binary(BinaryExpr) = "binary_expression",
        Unary(UnaryExpr) = "unary_expression",
        Cast(CastExpr) = "cast_expression",
        Subscript(SubscriptExpr) = "subscript_expression",
        Call(CallExpr) = "call_expression",
        Len(LenExpr) = "len_expression",
    }
);

ast_node!(
    /// `(E)`
    ParenExpr = "parenthesized_expression"
);
impl<'t> ParenExpr<'t> {
    child!(
        /// The inner expression.
        expr -> Expr, expression
    );
}

/// Assignment operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum AssignOp {
    Assign,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl AssignOp {
    fn from_token(token: &str) -> Option<AssignOp> {
        Some(match token {
            "=" => AssignOp::Assign,
            "+=" => AssignOp::Add,
            "-=" => AssignOp::Sub,
            "*=" => AssignOp::Mul,
            "/=" => AssignOp::Div,
            "%=" => AssignOp::Rem,
            "&=" => AssignOp::BitAnd,
            "|=" => AssignOp::BitOr,
            "^=" => AssignOp::BitXor,
            "<<=" => AssignOp::Shl,
            ">>=" => AssignOp::Shr,
            _ => return None,
        })
    }

    /// The binary operator a compound assignment applies, `None` for `=`.
    pub fn binary(self) -> Option<BinaryOp> {
        Some(match self {
            AssignOp::Assign => return None,
            AssignOp::Add => BinaryOp::Add,
            AssignOp::Sub => BinaryOp::Sub,
            AssignOp::Mul => BinaryOp::Mul,
            AssignOp::Div => BinaryOp::Div,
            AssignOp::Rem => BinaryOp::Rem,
            AssignOp::BitAnd => BinaryOp::BitAnd,
            AssignOp::BitOr => BinaryOp::BitOr,
            AssignOp::BitXor => BinaryOp::BitXor,
            AssignOp::Shl => BinaryOp::Shl,
            AssignOp::Shr => BinaryOp::Shr,
        })
    }

    /// The operator as written.
    pub fn token(self) -> &'static str {
        match self {
            AssignOp::Assign => "=",
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
            AssignOp::Mul => "*=",
            AssignOp::Div => "/=",
            AssignOp::Rem => "%=",
            AssignOp::BitAnd => "&=",
            AssignOp::BitOr => "|=",
            AssignOp::BitXor => "^=",
            AssignOp::Shl => "<<=",
            AssignOp::Shr => ">>=",
        }
    }
}

ast_node!(
    /// `L = R`, `L += R`, …
    AssignExpr = "assignment_expression"
);
impl<'t> AssignExpr<'t> {
    child!(
        /// The target.
        left -> Expr, left
    );
    child!(
        /// The value.
        right -> Expr, right
    );

    /// The operator.
    pub fn op(&self) -> Option<AssignOp> {
        field(self.0, |f| f.operator).and_then(|node| AssignOp::from_token(node.kind()))
    }

    /// The operator's token node.
    pub fn op_node(&self) -> Option<Node<'t>> {
        field(self.0, |f| f.operator)
    }
}

ast_node!(
    /// `++x`, `x--`
    UpdateExpr = "update_expression"
);
impl<'t> UpdateExpr<'t> {
    child!(
        /// The variable updated.
        argument -> Expr, argument
    );

    /// True for `++`, false for `--`.
    pub fn is_increment(&self) -> bool {
        field(self.0, |f| f.operator).is_some_and(|node| node.kind() == "++")
    }

    /// True when the operator comes first.
    pub fn is_prefix(&self) -> bool {
        match (field(self.0, |f| f.operator), field(self.0, |f| f.argument)) {
            (Some(op), Some(arg)) => op.start_byte() < arg.start_byte(),
            _ => false,
        }
    }
}

ast_node!(
    /// `C ? A : B`
    ConditionalExpr = "conditional_expression"
);
impl<'t> ConditionalExpr<'t> {
    child!(
        /// The condition.
        condition -> Expr, condition
    );
    child!(
        /// The value when true.
        then_value -> Expr, consequence
    );
    child!(
        /// The value when false.
        else_value -> Expr, alternative
    );
}

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinaryOp {
    Or,
    And,
    BitOr,
    BitXor,
    BitAnd,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinaryOp {
    fn from_token(token: &str) -> Option<BinaryOp> {
        Some(match token {
            "||" => BinaryOp::Or,
            "&&" => BinaryOp::And,
            "|" => BinaryOp::BitOr,
            "^" => BinaryOp::BitXor,
            "&" => BinaryOp::BitAnd,
            "==" => BinaryOp::Eq,
            "!=" => BinaryOp::Ne,
            "<" => BinaryOp::Lt,
            "<=" => BinaryOp::Le,
            ">" => BinaryOp::Gt,
            ">=" => BinaryOp::Ge,
            "<<" => BinaryOp::Shl,
            ">>" => BinaryOp::Shr,
            "+" => BinaryOp::Add,
            "-" => BinaryOp::Sub,
            "*" => BinaryOp::Mul,
            "/" => BinaryOp::Div,
            "%" => BinaryOp::Rem,
            _ => return None,
        })
    }

    /// The operator as written.
    pub fn token(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::BitAnd => "&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }
}

ast_node!(
    /// `L op R`
    BinaryExpr = "binary_expression"
);
impl<'t> BinaryExpr<'t> {
    child!(
        /// The left operand.
        left -> Expr, left
    );
    child!(
        /// The right operand.
        right -> Expr, right
    );

    /// The operator.
    pub fn op(&self) -> Option<BinaryOp> {
        field(self.0, |f| f.operator).and_then(|node| BinaryOp::from_token(node.kind()))
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `+x`
    Plus,
    /// `!x`
    Not,
    /// `~x`
    BitNot,
    /// `*p`, which reads `p[0]`.
    Deref,
    /// `&x`, not part of the language.
    AddressOf,
}

ast_node!(
    /// `-x`, `!x`, `*p`, …
    UnaryExpr = "unary_expression"
);
impl<'t> UnaryExpr<'t> {
    child!(
        /// The operand.
        argument -> Expr, argument
    );

    /// The operator.
    pub fn op(&self) -> Option<UnaryOp> {
        Some(match field(self.0, |f| f.operator)?.kind() {
            "-" => UnaryOp::Neg,
            "+" => UnaryOp::Plus,
            "!" => UnaryOp::Not,
            "~" => UnaryOp::BitNot,
            "*" => UnaryOp::Deref,
            "&" => UnaryOp::AddressOf,
            _ => return None,
        })
    }
}

ast_node!(
    /// `(double) e`
    CastExpr = "cast_expression"
);
impl<'t> CastExpr<'t> {
    child!(
        /// The target type.
        ty -> PrimitiveType, ty
    );
    child!(
        /// The converted value.
        value -> Expr, value
    );
}

ast_node!(
    /// `a[i]`
    SubscriptExpr = "subscript_expression"
);
impl<'t> SubscriptExpr<'t> {
    child!(
        /// The indexed expression.
        argument -> Expr, argument
    );
    child!(
        /// The index.
        index -> Expr, index
    );
}

ast_node!(
    /// `sqrt(x)`
    CallExpr = "call_expression"
);
impl<'t> CallExpr<'t> {
    child!(
        /// The function called.
        function -> Ident, function
    );

    /// The argument list node.
    pub fn argument_list(&self) -> Option<Node<'t>> {
        field(self.0, |f| f.arguments)
    }

    /// The arguments, in order.
    pub fn arguments(&self) -> impl Iterator<Item = Expr<'t>> + use<'t> {
        self.argument_list()
            .into_iter()
            .flat_map(|list| FieldChildren::new(list, |f| f.argument).filter_map(Expr::cast))
    }
}

ast_node!(
    /// `len(SET)`
    LenExpr = "len_expression"
);
impl<'t> LenExpr<'t> {
    child!(
        /// The set.
        set -> Ident, set
    );
}

impl<'t> Expr<'t> {
    /// The expression with any parentheses around it removed.
    pub fn unparenthesized(self) -> Expr<'t> {
        let mut expr = self;
        while let Expr::Paren(paren) = expr {
            match paren.expr() {
                Some(inner) => expr = inner,
                None => break,
            }
        }
        expr
    }
}

/// Names of the built-in functions a kernel or `main` may call.
pub const BUILTINS: &[&str] = &[
    "sqrt", "fabs", "abs", "fmin", "fmax", "min", "max", "pow", "exp", "log", "log10", "sin",
    "cos", "tan", "asin", "acos", "atan", "atan2", "floor", "ceil", "round", "isnan", "isinf",
];
