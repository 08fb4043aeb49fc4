//! Names: what is under the cursor, where it is defined and used, how to
//! rename it, and the outline of a file.
//!
//! Resolution reads the syntax tree and asks the semantic model only for
//! top-level names, following the analyser's rules: in a kernel body or in
//! `main` a name is first a local declared before it in an enclosing block
//! (innermost block first, a declarator being visible from its own end, as
//! the analyser has it), then a parameter of the enclosing kernel, then a
//! top-level name (language.md §4, §5, §8). Declarations, par_loop heads and
//! par_loop arguments name top-level items directly.
//!
//! The node under the cursor is found with its ancestors ([`NodePath`], one
//! descent from the root with a cursor) and resolution only walks those, so
//! a query costs the depth of the tree, not its size. Tree-sitter's own
//! `Node::parent` is not used: it descends from the root on every call
//! (quadratic when climbing) and recurses once per level for an empty node.
//! Finding references (and checking a rename) resolves every identifier of
//! that name in one walk of the tree in text order, which carries the path
//! and what each scope on it has declared so far ([`NameWalk`]), so it costs
//! the size of the tree once however many uses there are.
//!
//! Everything here speaks in byte offsets and [`Location`]s; the handlers
//! convert to LSP.

use std::path::{Component, Path, PathBuf};

use op2_analysis::model::{Invocation, InvocationId, KernelId, Param, Program, Symbol};
use op2_syntax::tree_sitter::{Node, Tree};
use op2_syntax::{FileId, Location, NodePath, Parse, TextEdit, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};

/// What a name refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A set, map, dat, const, global or kernel.
    Symbol(Symbol),
    /// The `index`-th parameter of a kernel.
    Param {
        /// The kernel.
        kernel: KernelId,
        /// The parameter's position.
        index: usize,
    },
    /// A local variable of a kernel or of `main`.
    Local(LocalTarget),
    /// A par_loop, by the name given with `as`.
    Invocation(InvocationId),
}

/// A local variable, known by its declaration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalTarget {
    /// Its name.
    pub name: String,
    /// Where its name is declared.
    pub declaration: Location,
    /// Where the name can be used: from the declaration to the end of the
    /// block (or `for`) that declares it.
    pub scope: Location,
    /// The kernel or `main` it belongs to.
    pub owner: Owner,
}

/// The body a local belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A kernel, by name.
    Kernel(String),
    /// `main`.
    Main,
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Kernel(name) => write!(f, "kernel `{name}`"),
            Owner::Main => f.write_str("`main`"),
        }
    }
}

/// One place a name is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    /// Where.
    pub location: Location,
    /// True for the declaration itself.
    pub is_declaration: bool,
    /// True where the value changes: an assignment, `++`/`--`, a par_loop
    /// argument with a mode other than READ, or a declaration with an
    /// initial value.
    pub is_write: bool,
}

// ----------------------------------------------------------------------
// Finding and resolving the name under the cursor
// ----------------------------------------------------------------------

/// The identifier at `offset`, also when the cursor is just after it, with
/// its ancestors. A name the parser invented (MISSING) is none.
pub fn ident_at(tree: &Tree, offset: u32) -> Option<NodePath<'_>> {
    let root = tree.root_node();
    let offset = offset as usize;
    let at = |o: usize| {
        Some(NodePath::at(root, o, o)).filter(|path| {
            let n = path.node();
            n.kind() == "identifier"
                && !n.is_missing()
                && n.start_byte() <= offset
                && offset <= n.end_byte()
        })
    };
    at(offset).or_else(|| offset.checked_sub(1).and_then(at))
}

/// What the name at `offset` of the document (the program's root file)
/// refers to, and the range of the name.
pub fn target_at(program: &Program, parse: &Parse, offset: u32) -> Option<(Target, TextRange)> {
    let ident = ident_at(parse.tree(), offset)?;
    let target = resolve(program, FileId::MAIN, parse.text(), &ident)?;
    Some((target, range_of(ident.node())))
}

/// The invocation whose name is at `offset`: the `as` name, or the kernel
/// name of a par_loop without `as` (whose invocation is named after it).
pub fn invocation_at(
    program: &Program,
    parse: &Parse,
    offset: u32,
) -> Option<(InvocationId, TextRange)> {
    let ident = ident_at(parse.tree(), offset)?.node();
    let location = Location {
        file: FileId::MAIN,
        range: range_of(ident),
    };
    let index = program
        .invocations
        .iter()
        .position(|i| i.name_location == location)?;
    Some((InvocationId(to_u32(index)), location.range))
}

/// The invocation whose par_loop head names the kernel or gives the `as`
/// name at `offset`, with the range of that name.
pub fn invocation_head_at(
    program: &Program,
    parse: &Parse,
    offset: u32,
) -> Option<(InvocationId, TextRange)> {
    let path = ident_at(parse.tree(), offset)?;
    let ident = path.node();
    let head = path
        .ancestor(1)
        .filter(|p| p.kind() == "par_loop_statement")?;
    if !is_field(head, "kernel", ident) && !is_field(head, "alias", ident) {
        return None;
    }
    let location = Location {
        file: FileId::MAIN,
        range: range_of(head),
    };
    let index = program
        .invocations
        .iter()
        .position(|i| i.location == location)?;
    Some((InvocationId(to_u32(index)), range_of(ident)))
}

/// The par_loop argument at `offset`: the invocation and the argument's
/// position.
pub fn argument_at(program: &Program, offset: u32) -> Option<(InvocationId, usize)> {
    let (index, invocation) = program
        .invocations
        .iter()
        .enumerate()
        .find(|(_, i)| i.location.file == FileId::MAIN && i.location.range.touches(offset))?;
    let (arg, _) = invocation
        .resolved_args()
        .find(|(_, a)| a.location.file == FileId::MAIN && a.location.range.touches(offset))?;
    Some((InvocationId(to_u32(index)), arg))
}

/// The file an `import "PATH";` at `offset` names, when it is part of the
/// program.
pub fn import_at(program: &Program, parse: &Parse, offset: u32) -> Option<FileId> {
    let root = parse.tree().root_node();
    let path = NodePath::at(root, offset as usize, offset as usize);
    let node = path.up().find(|n| n.kind() == "import_declaration")?;
    let path = node.child_by_field_name("path")?;
    let relative = text_of(path, parse.text()).trim_matches('"');
    let base = program
        .files
        .first()?
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let wanted = normalise(&base.join(relative));
    let index = program
        .files
        .iter()
        .position(|f| normalise(&f.path) == wanted)?;
    Some(FileId(to_u32(index)))
}

/// `a/./b/../c` as `a/c`, as the analyser compares import paths.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// What `ident` (in `file`, whose text is `text`) refers to.
fn resolve(program: &Program, file: FileId, text: &str, ident: &NodePath<'_>) -> Option<Target> {
    resolve_as(program, file, text, ident, text_of(ident.node(), text))
}

/// What `path`'s node, a name, would refer to if it were spelled `name`.
fn resolve_as(
    program: &Program,
    file: FileId,
    text: &str,
    path: &NodePath<'_>,
    name: &str,
) -> Option<Target> {
    match resolve_directly(program, file, text, path, name)? {
        Resolved::Directly(target) => target,
        Resolved::InScope => resolve_in_scope(program, file, text, path, name),
    }
}

/// How a name is resolved, by the kind of its parent.
enum Resolved {
    /// By its place alone (a declaration, a par_loop head, …).
    Directly(Option<Target>),
    /// As a value: by the locals and parameters in scope, then the
    /// top-level names ([`resolve_in_scope`]).
    InScope,
}

/// What `path`'s node, a name, would refer to if it were spelled `name`,
/// where its place alone decides; `None` for a name without a parent.
fn resolve_directly(
    program: &Program,
    file: FileId,
    text: &str,
    path: &NodePath<'_>,
    name: &str,
) -> Option<Resolved> {
    let ident = path.node();
    let parent = path.ancestor(1)?;
    let at = Location {
        file,
        range: range_of(ident),
    };
    let target = match parent.kind() {
        "set_declaration" | "map_declaration" | "dat_declaration" | "const_declaration"
        | "global_declaration" | "kernel_definition"
            if is_field(parent, "name", ident) =>
        {
            let symbol = program.lookup(name)?;
            // A duplicate definition is not in the model.
            (program.symbol_name(symbol).1 == at).then_some(Target::Symbol(symbol))
        }
        // The sets of a map or dat declaration.
        "map_declaration" | "dat_declaration" if !is_field(parent, "value", ident) => {
            top_level(program, name)
        }
        "parameter" if is_field(parent, "name", ident) => {
            let kernel_definition = path.ancestor(3)?;
            let kernel = kernel_of(program, file, text, kernel_definition)?;
            let index = program.kernels[kernel.index()]
                .params
                .iter()
                .position(|p| p.name_location == at)?;
            Some(Target::Param { kernel, index })
        }
        "variable_declarator" if is_field(parent, "name", ident) => {
            local_target(file, text, &path.up_to(1)?, ident).map(Target::Local)
        }
        "par_loop_statement" => {
            if is_field(parent, "alias", ident) {
                let index = program
                    .invocations
                    .iter()
                    .position(|i| i.named_explicitly && i.name_location == at)?;
                Some(Target::Invocation(InvocationId(to_u32(index))))
            } else {
                top_level(program, name)
            }
        }
        "par_loop_argument" | "len_expression" | "fetch_statement" => top_level(program, name),
        // Built-in functions, `goto` labels and structs name nothing.
        "call_expression" if is_field(parent, "function", ident) => None,
        "goto_statement" | "struct_specifier" => None,
        _ => return Some(Resolved::InScope),
    };
    Some(Resolved::Directly(target))
}

/// A name used as a value: a local, a parameter, or a top-level name.
fn resolve_in_scope(
    program: &Program,
    file: FileId,
    text: &str,
    path: &NodePath<'_>,
    name: &str,
) -> Option<Target> {
    let start = path.node().start_byte();
    for (up, node) in path.ancestors().enumerate() {
        // The declaration found, below `node` or `node` itself.
        let found = match node.kind() {
            "compound_statement" => {
                let mut found = None;
                let mut cursor = node.walk();
                for statement in node.named_children(&mut cursor) {
                    if statement.end_byte() > start {
                        break;
                    }
                    if statement.kind() == "local_declaration" {
                        found = declarator_named(statement, text, name, start)
                            .map(|(declarator, name)| (statement, declarator, name))
                            .or(found);
                    }
                }
                found
            }
            "local_declaration" => declarator_named(node, text, name, start)
                .map(|(declarator, name)| (node, declarator, name)),
            "for_statement" => node
                .child_by_field_name("initializer")
                .filter(|init| init.kind() == "local_declaration")
                .and_then(|init| {
                    declarator_named(init, text, name, start)
                        .map(|(declarator, name)| (init, declarator, name))
                }),
            "kernel_definition" => {
                let kernel = kernel_of(program, file, text, node);
                let param = node.child_by_field_name("parameters").and_then(|list| {
                    let mut cursor = list.walk();
                    list.children_by_field_name("parameter", &mut cursor)
                        .filter_map(|p| p.child_by_field_name("name"))
                        .find(|n| text_of(*n, text) == name)
                });
                if let Some(param) = param {
                    let at = Location {
                        file,
                        range: range_of(param),
                    };
                    let kernel = kernel?;
                    let index = program.kernels[kernel.index()]
                        .params
                        .iter()
                        .position(|p| p.name_location == at)?;
                    return Some(Target::Param { kernel, index });
                }
                break;
            }
            "main_definition" | "source_file" => break,
            _ => None,
        };
        if let Some((declaration, declarator, name_node)) = found {
            // The declarator's path: `node`'s, then down to it.
            let mut to_declarator = path.up_to(up + 1)?;
            if declaration.id() != node.id() {
                to_declarator.push(declaration);
            }
            to_declarator.push(declarator);
            return local_target(file, text, &to_declarator, name_node).map(Target::Local);
        }
    }
    top_level(program, name)
}

/// The last declarator of `declaration` named `name` that ends before
/// `before`, with its name node.
fn declarator_named<'t>(
    declaration: Node<'t>,
    text: &str,
    name: &str,
    before: usize,
) -> Option<(Node<'t>, Node<'t>)> {
    let mut cursor = declaration.walk();
    let mut found = None;
    for declarator in declaration.children_by_field_name("declarator", &mut cursor) {
        if declarator.end_byte() > before {
            break;
        }
        if let Some(name_node) = declarator.child_by_field_name("name")
            && text_of(name_node, text) == name
        {
            found = Some((declarator, name_node));
        }
    }
    found
}

/// The local declared by the declarator `declarator` leads to, whose name
/// is `ident`.
fn local_target(
    file: FileId,
    text: &str,
    declarator: &NodePath<'_>,
    ident: Node<'_>,
) -> Option<LocalTarget> {
    let declaration = declarator
        .ancestor(1)
        .filter(|d| d.kind() == "local_declaration")?;
    let scope = scope_of(declaration, declarator.ancestor(2));
    // The scope is a block, a `for` or the declaration: the kernel or
    // `main` above it is the one above the declarator.
    let mut owner = Owner::Main;
    for node in declarator.ancestors() {
        match node.kind() {
            "kernel_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .map_or("", |n| text_of(n, text));
                owner = Owner::Kernel(name.to_owned());
                break;
            }
            "main_definition" => break,
            _ => {}
        }
    }
    Some(LocalTarget {
        name: text_of(ident, text).to_owned(),
        declaration: Location {
            file,
            range: range_of(ident),
        },
        scope: Location {
            file,
            range: TextRange::new(to_u32(ident.start_byte()), to_u32(scope.end_byte())),
        },
        owner,
    })
}

/// The node whose end ends the scope of the locals of `declaration`, whose
/// parent is `parent`: the block or `for` that holds it, or the declaration
/// itself where it is the whole branch of an `if` or body of a loop.
fn scope_of<'t>(declaration: Node<'t>, parent: Option<Node<'t>>) -> Node<'t> {
    match parent {
        Some(parent) if matches!(parent.kind(), "compound_statement" | "for_statement") => parent,
        _ => declaration,
    }
}

/// The kernel defined by `definition`, when the model has it (a duplicate
/// definition is not in the model).
fn kernel_of(
    program: &Program,
    file: FileId,
    text: &str,
    definition: Node<'_>,
) -> Option<KernelId> {
    if definition.kind() != "kernel_definition" {
        return None;
    }
    let name = definition.child_by_field_name("name")?;
    let Some(Symbol::Kernel(kernel)) = program.lookup(text_of(name, text)) else {
        return None;
    };
    (program.kernels[kernel.index()].location
        == Location {
            file,
            range: range_of(name),
        })
    .then_some(kernel)
}

fn top_level(program: &Program, name: &str) -> Option<Target> {
    program.lookup(name).map(Target::Symbol)
}

fn is_field(parent: Node<'_>, field: &str, child: Node<'_>) -> bool {
    parent
        .child_by_field_name(field)
        .is_some_and(|c| c.id() == child.id())
}

fn text_of<'s>(node: Node<'_>, text: &'s str) -> &'s str {
    text.get(node.byte_range()).unwrap_or("")
}

fn range_of(node: Node<'_>) -> TextRange {
    node.byte_range().into()
}

fn to_u32(value: usize) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

// ----------------------------------------------------------------------
// Definitions and references
// ----------------------------------------------------------------------

/// Where `target` is declared.
pub fn definition(program: &Program, target: &Target) -> Option<Location> {
    match target {
        Target::Symbol(symbol) => Some(program.symbol_name(*symbol).1),
        Target::Param { kernel, index } => program
            .kernels
            .get(kernel.index())?
            .params
            .get(*index)
            .map(|p| p.name_location),
        Target::Local(local) => Some(local.declaration),
        Target::Invocation(id) => program.invocations.get(id.index()).map(|i| i.name_location),
    }
}

/// The name `target` is written with.
pub fn target_name<'p>(program: &'p Program, target: &'p Target) -> &'p str {
    match target {
        Target::Symbol(symbol) => program.symbol_name(*symbol).0,
        Target::Param { kernel, index } => program.kernels[kernel.index()]
            .params
            .get(*index)
            .map_or("", |p| &p.name),
        Target::Local(local) => &local.name,
        Target::Invocation(id) => &program.invocations[id.index()].name,
    }
}

/// Every place `target` is named, in every file of the program (`parse` is
/// the root file's), declaration included, in file and text order.
pub fn references(program: &Program, parse: &Parse, target: &Target) -> Vec<Reference> {
    references_in(program, parse, target, None)
}

/// The references of `target` in the document (the root file) only.
pub fn references_in_document(program: &Program, parse: &Parse, target: &Target) -> Vec<Reference> {
    references_in(program, parse, target, Some(FileId::MAIN))
}

fn references_in(
    program: &Program,
    parse: &Parse,
    target: &Target,
    only: Option<FileId>,
) -> Vec<Reference> {
    let wanted = |file: FileId| only.is_none_or(|o| o == file);
    match target {
        Target::Invocation(id) => {
            let Some(invocation) = program.invocations.get(id.index()) else {
                return Vec::new();
            };
            if !wanted(invocation.name_location.file) {
                return Vec::new();
            }
            vec![Reference {
                location: invocation.name_location,
                is_declaration: true,
                is_write: false,
            }]
        }
        Target::Symbol(symbol) => {
            let name = program.symbol_name(*symbol).0;
            let mut out = Vec::new();
            for (index, file) in program.files.iter().enumerate() {
                let id = FileId(to_u32(index));
                if !wanted(id) || !file.text.contains(name) {
                    continue;
                }
                with_file(program, parse, id, |syntax| {
                    let range = TextRange::new(0, to_u32(syntax.text.len()));
                    collect(program, syntax, name, range, target, &mut out);
                });
            }
            out
        }
        Target::Param { kernel, index } => {
            let Some(kernel) = program.kernels.get(kernel.index()) else {
                return Vec::new();
            };
            let Some(param) = kernel.params.get(*index) else {
                return Vec::new();
            };
            let file = kernel.location.file;
            let mut out = Vec::new();
            if wanted(file) {
                with_file(program, parse, file, |syntax| {
                    // The whole kernel definition.
                    let definition = NodePath::at(
                        syntax.tree.root_node(),
                        kernel.location.range.start as usize,
                        kernel.location.range.end as usize,
                    )
                    .ancestor(1);
                    if let Some(definition) = definition {
                        let range = range_of(definition);
                        collect(program, syntax, &param.name, range, target, &mut out);
                    }
                });
            }
            out
        }
        Target::Local(local) => {
            let file = local.declaration.file;
            let mut out = Vec::new();
            if wanted(file) {
                with_file(program, parse, file, |syntax| {
                    collect(
                        program,
                        syntax,
                        &local.name,
                        local.scope.range,
                        target,
                        &mut out,
                    );
                });
            }
            out
        }
    }
}

/// One file of the program: its id, text and tree.
#[derive(Clone, Copy)]
struct FileSyntax<'a> {
    file: FileId,
    text: &'a str,
    tree: &'a Tree,
}

/// Calls `f` with the syntax of `file`: the document's own tree for the
/// root, a fresh parse for an import.
fn with_file(program: &Program, parse: &Parse, file: FileId, f: impl FnOnce(FileSyntax<'_>)) {
    if file == FileId::MAIN {
        f(FileSyntax {
            file,
            text: parse.text(),
            tree: parse.tree(),
        });
    } else if let Some(source) = program.files.get(file.0 as usize) {
        let imported = Parse::new(source.text.as_ref());
        f(FileSyntax {
            file,
            text: imported.text(),
            tree: imported.tree(),
        });
    }
}

// ----------------------------------------------------------------------
// Every use of a name, in one walk
// ----------------------------------------------------------------------

/// At most this many names are resolved by one [`NameWalk`]: the name
/// looked for, and the new name of a rename.
const WALKED_NAMES: usize = 2;

/// What a name resolves to from inside a node, by the scopes from the node
/// up (the loop of [`resolve_in_scope`]).
#[derive(Clone, Debug)]
enum Decision {
    /// No local or parameter: a top-level name, if any.
    TopLevel,
    /// A local or a parameter (`None`: a parameter the model does not have).
    Target(Option<Target>),
}

/// One node of the walk's path, with what its scopes decide.
struct Level<'a> {
    /// The field the node fills in its parent.
    field: Option<&'a str>,
    /// The level of the nearest kernel or `main` definition, this one
    /// included: the owner of a local declared below.
    owner: Option<usize>,
    /// For each name, the level whose decision holds here (this one or an
    /// ancestor's).
    decided_at: [usize; WALKED_NAMES],
    /// For each name, this level's own decision, when it has one.
    decision: [Option<Decision>; WALKED_NAMES],
    /// For each name, the local a use inside this node sees, declared by
    /// a child that has ended (a block's or a `for`'s declaration, a
    /// declaration's declarator).
    declared: [Option<LocalTarget>; WALKED_NAMES],
}

/// A walk of one file's tree in text order that resolves every identifier
/// spelled as one of `names` (at most [`WALKED_NAMES`]) inside a range, each
/// as [`resolve_as`] would, without climbing the tree or scanning a block
/// for each use: the walk carries the path and, for every node on it, what
/// its scopes have declared so far. So finding every use costs the size of
/// the tree once, where resolving each use apart cost its depth and the
/// statements before it (quadratic in a long `main` or a long `x + x + …`
/// chain: 40 s for 10,000 uses, issue #12).
struct NameWalk<'a> {
    program: &'a Program,
    file: FileId,
    text: &'a str,
    names: &'a [&'a str],
    path: NodePath<'a>,
    levels: Vec<Level<'a>>,
}

impl<'a> NameWalk<'a> {
    /// Calls `visit(walk, k)` for each identifier spelled `names[k]` inside
    /// `range`, in text order, with the walk at that identifier: its
    /// [`NameWalk::path`] leads to it and [`NameWalk::resolve`] resolves it.
    fn run(
        program: &'a Program,
        syntax: FileSyntax<'a>,
        names: &'a [&'a str],
        range: TextRange,
        mut visit: impl FnMut(&NameWalk<'a>, usize),
    ) {
        assert!(names.len() <= WALKED_NAMES, "too many names for one walk");
        let FileSyntax { file, text, tree } = syntax;
        let root = tree.root_node();
        let mut walk = NameWalk {
            program,
            file,
            text,
            names,
            path: NodePath::root(root),
            levels: Vec::new(),
        };
        walk.enter(root, None);
        let (start, end) = (range.start as usize, range.end as usize);
        let mut cursor = root.walk();
        loop {
            let node = cursor.node();
            if node.start_byte() >= end {
                // Every node from here on starts past the range.
                return;
            }
            if node.kind() == "identifier"
                && !node.is_missing()
                && start <= node.start_byte()
                && node.end_byte() <= end
            {
                let spelled = text_of(node, text);
                if let Some(k) = names.iter().position(|n| *n == spelled) {
                    visit(&walk, k);
                }
            }
            // A node that ends before the range holds no use to report, and
            // only a declaration's declarators can matter to one after it.
            let looked_into = node.end_byte() > start || node.kind() == "local_declaration";
            if looked_into && cursor.goto_first_child() {
                walk.enter(cursor.node(), cursor.field_name());
                continue;
            }
            loop {
                if cursor.node() == root {
                    return;
                }
                walk.leave();
                if cursor.goto_next_sibling() {
                    walk.enter(cursor.node(), cursor.field_name());
                    break;
                }
                cursor.goto_parent();
            }
        }
    }

    /// The path from the root to the identifier visited.
    fn path(&self) -> &NodePath<'a> {
        &self.path
    }

    /// What the identifier visited would refer to if it were spelled
    /// `names[k]`: [`resolve_as`]'s answer.
    fn resolve(&self, k: usize) -> Option<Target> {
        let ident = self.path.node();
        let parent = self.path.ancestor(1)?;
        if parent.kind() == "variable_declarator" && is_field(parent, "name", ident) {
            // The declarator is the level below the identifier's.
            return self
                .local_declared(ident, self.levels.len() - 2)
                .map(Target::Local);
        }
        match resolve_directly(
            self.program,
            self.file,
            self.text,
            &self.path,
            self.names[k],
        ) {
            Some(Resolved::Directly(target)) => target,
            Some(Resolved::InScope) => {
                let level = &self.levels[self.levels.len() - 1];
                match &self.levels[level.decided_at[k]].decision[k] {
                    Some(Decision::Target(target)) => target.clone(),
                    Some(Decision::TopLevel) | None => top_level(self.program, self.names[k]),
                }
            }
            None => None,
        }
    }

    /// Adds `node`, a child of the path's node (or the root), to the path.
    fn enter(&mut self, node: Node<'a>, field: Option<&'a str>) {
        let index = self.levels.len();
        if index > 0 {
            self.path.push(node);
        }
        let parent = index.checked_sub(1).map(|i| &self.levels[i]);
        let owner = match node.kind() {
            "kernel_definition" | "main_definition" => Some(index),
            _ => parent.and_then(|p| p.owner),
        };
        let mut decided_at = parent.map_or([index; WALKED_NAMES], |p| p.decided_at);
        let mut decision: [Option<Decision>; WALKED_NAMES] = Default::default();
        for (k, name) in self.names.iter().enumerate() {
            let own = match node.kind() {
                "source_file" | "main_definition" => Some(Decision::TopLevel),
                "kernel_definition" => Some(self.parameter_decision(node, name)),
                _ if index == 0 => Some(Decision::TopLevel),
                _ => None,
            };
            if own.is_some() {
                decision[k] = own;
                decided_at[k] = index;
            }
        }
        self.levels.push(Level {
            field,
            owner,
            decided_at,
            decision,
            declared: Default::default(),
        });
    }

    /// Takes the path's node off it; what it declared for the uses after
    /// it passes to its parent.
    fn leave(&mut self) {
        let Some(level) = self.levels.pop() else {
            return;
        };
        let Some(node) = self.path.pop() else {
            return;
        };
        let parent = self.path.node();
        let passed: [Option<LocalTarget>; WALKED_NAMES] = match (node.kind(), parent.kind()) {
            ("variable_declarator", "local_declaration") if level.field == Some("declarator") => {
                let Some(name) = node.child_by_field_name("name") else {
                    return;
                };
                let spelled = text_of(name, self.text);
                let mut passed: [Option<LocalTarget>; WALKED_NAMES] = Default::default();
                for (k, wanted) in self.names.iter().enumerate() {
                    if *wanted == spelled {
                        // The declarator was at the level just taken off.
                        passed[k] = self.local_declared(name, self.levels.len());
                    }
                }
                passed
            }
            ("local_declaration", "compound_statement") => level.declared,
            ("local_declaration", "for_statement") if level.field == Some("initializer") => {
                level.declared
            }
            _ => return,
        };
        let index = self.levels.len() - 1;
        let parent_level = &mut self.levels[index];
        for (k, local) in passed.into_iter().enumerate() {
            if let Some(local) = local {
                parent_level.declared[k] = Some(local.clone());
                parent_level.decision[k] = Some(Decision::Target(Some(Target::Local(local))));
                parent_level.decided_at[k] = index;
            }
        }
    }

    /// A kernel definition's decision for `name`: its parameter of that
    /// name, or the top-level names.
    fn parameter_decision(&self, kernel: Node<'a>, name: &str) -> Decision {
        let param = kernel.child_by_field_name("parameters").and_then(|list| {
            let mut cursor = list.walk();
            list.children_by_field_name("parameter", &mut cursor)
                .filter_map(|p| p.child_by_field_name("name"))
                .find(|n| text_of(*n, self.text) == name)
        });
        let Some(param) = param else {
            return Decision::TopLevel;
        };
        let at = Location {
            file: self.file,
            range: range_of(param),
        };
        Decision::Target(
            kernel_of(self.program, self.file, self.text, kernel).and_then(|kernel| {
                let index = self.program.kernels[kernel.index()]
                    .params
                    .iter()
                    .position(|p| p.name_location == at)?;
                Some(Target::Param { kernel, index })
            }),
        )
    }

    /// The local that `name`, the name of the declarator at level
    /// `declarator` of the path, declares ([`local_target`]'s answer).
    fn local_declared(&self, name: Node<'a>, declarator: usize) -> Option<LocalTarget> {
        let declaration = self
            .path_node(declarator.checked_sub(1)?)
            .filter(|d| d.kind() == "local_declaration")?;
        let scope = scope_of(
            declaration,
            declarator.checked_sub(2).and_then(|i| self.path_node(i)),
        );
        let owner = match self.levels[declarator - 1].owner {
            Some(level) => match self.path_node(level) {
                Some(kernel) if kernel.kind() == "kernel_definition" => Owner::Kernel(
                    kernel
                        .child_by_field_name("name")
                        .map_or("", |n| text_of(n, self.text))
                        .to_owned(),
                ),
                _ => Owner::Main,
            },
            None => Owner::Main,
        };
        Some(LocalTarget {
            name: text_of(name, self.text).to_owned(),
            declaration: Location {
                file: self.file,
                range: range_of(name),
            },
            scope: Location {
                file: self.file,
                range: TextRange::new(to_u32(name.start_byte()), to_u32(scope.end_byte())),
            },
            owner,
        })
    }

    /// The node at `level` of the path (0: the root).
    fn path_node(&self, level: usize) -> Option<Node<'a>> {
        let depth = self.path.len().checked_sub(1 + level)?;
        self.path.ancestor(depth)
    }
}

/// Adds the identifiers spelled `name` in `range` that refer to `target`.
fn collect(
    program: &Program,
    syntax: FileSyntax<'_>,
    name: &str,
    range: TextRange,
    target: &Target,
    out: &mut Vec<Reference>,
) {
    let (file, text) = (syntax.file, syntax.text);
    NameWalk::run(program, syntax, &[name], range, |walk, _| {
        if walk.resolve(0).as_ref() == Some(target) {
            let ident = walk.path();
            let (is_declaration, is_write) = access(ident, text);
            out.push(Reference {
                location: Location {
                    file,
                    range: range_of(ident.node()),
                },
                is_declaration,
                is_write,
            });
        }
    });
}

/// Whether the name `path` leads to declares its name, and whether it
/// changes the value.
fn access(path: &NodePath<'_>, text: &str) -> (bool, bool) {
    let ident = path.node();
    let Some(parent) = path.ancestor(1) else {
        return (false, false);
    };
    match parent.kind() {
        "set_declaration"
        | "map_declaration"
        | "dat_declaration"
        | "const_declaration"
        | "global_declaration"
        | "kernel_definition"
        | "parameter"
        | "variable_declarator"
            if is_field(parent, "name", ident) =>
        {
            (true, parent.child_by_field_name("value").is_some())
        }
        "par_loop_statement" if is_field(parent, "alias", ident) => (true, false),
        // `fetch DAT into GLOBAL;` writes the global.
        "fetch_statement" => (false, is_field(parent, "global", ident)),
        "par_loop_argument" if is_field(parent, "data", ident) => {
            let mode = parent.child_by_field_name("mode").map(|m| text_of(m, text));
            (
                false,
                mode.and_then(op2_syntax::ast::AccessMode::from_keyword)
                    .is_some_and(|m| m.writes()),
            )
        }
        _ => (false, is_assigned(path)),
    }
}

/// True when the name `path` leads to is (a component of) the target of an
/// assignment or of `++`/`--`.
fn is_assigned(path: &NodePath<'_>) -> bool {
    let mut node = path.node();
    for parent in path.ancestors() {
        match parent.kind() {
            "subscript_expression" if is_field(parent, "argument", node) => {}
            "parenthesized_expression" => {}
            "unary_expression"
                if parent
                    .child_by_field_name("operator")
                    .is_some_and(|o| o.kind() == "*") => {}
            "assignment_expression" => return is_field(parent, "left", node),
            "update_expression" => return true,
            _ => return false,
        }
        node = parent;
    }
    false
}

// ----------------------------------------------------------------------
// Rename
// ----------------------------------------------------------------------

/// The reserved words of language.md §2.
pub const RESERVED_WORDS: &[&str] = &[
    "set", "map", "dat", "const", "global", "kernel", "main", "par_loop", "over", "as", "on",
    "import", "len", "print", "printf", "exit", "fetch", "if", "else", "for", "while", "do",
    "break", "continue", "return", "true", "false", "READ", "WRITE", "RW", "INC", "MIN", "MAX",
    "double", "float", "int", "uint", "ll", "ull", "bool",
];

/// What a rename at a position changes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Renamed {
    /// A name with references.
    Target(Target),
    /// An invocation, by its `as` name or the kernel name of a par_loop
    /// without one.
    Invocation(InvocationId),
}

fn renamed_at(
    program: &Program,
    parse: &Parse,
    offset: u32,
) -> Result<(Renamed, TextRange, String), String> {
    if let Some((id, range)) = invocation_at(program, parse, offset) {
        let invocation = &program.invocations[id.index()];
        let placeholder = if invocation.name.is_empty() {
            parse.text().get(range.to_usize()).unwrap_or("").to_owned()
        } else {
            invocation.name.clone()
        };
        return Ok((Renamed::Invocation(id), range, placeholder));
    }
    let Some(ident) = ident_at(parse.tree(), offset) else {
        return Err("there is no name to rename here".into());
    };
    let name = text_of(ident.node(), parse.text());
    match resolve(program, FileId::MAIN, parse.text(), &ident) {
        Some(target) => Ok((
            Renamed::Target(target),
            range_of(ident.node()),
            name.to_owned(),
        )),
        None if op2_syntax::ast::BUILTINS.contains(&name) => Err(format!(
            "`{name}` is a built-in function and cannot be renamed"
        )),
        None => Err(format!(
            "`{name}` is not declared, or declared more than once, so it cannot be renamed"
        )),
    }
}

/// The range to rename at `offset` and the name it holds now, or why
/// nothing there can be renamed.
pub fn prepare_rename(
    program: &Program,
    parse: &Parse,
    offset: u32,
) -> Result<(TextRange, String), String> {
    renamed_at(program, parse, offset).map(|(_, range, placeholder)| (range, placeholder))
}

/// The edits that rename what is at `offset` to `new_name`, in every file of
/// the program, or why the rename is refused: the new name is not a name,
/// is reserved, is already taken, or would change what some use of a name
/// refers to (a local shadowing it, or it shadowing a name in use).
///
/// Renaming the kernel name of a par_loop without `as` renames the
/// invocation, by adding `as NEW`; renaming a kernel at its definition
/// renames the kernel and so the invocations named after it (`k`, `k_1`,
/// …), as §6 says. Other invocations keep their names: where removing one
/// par_loop from the implicit numbering would rename another, that one is
/// given its current name with `as`.
pub fn rename(
    program: &Program,
    parse: &Parse,
    offset: u32,
    new_name: &str,
) -> Result<Vec<TextEdit>, String> {
    // The new name comes from the client, as long as it likes: it is
    // checked first, in time linear in at most `MAX_NEW_NAME` bytes, before
    // any work that grows with its length times the uses renamed.
    check_name(new_name)?;
    let (renamed, _, old_name) = renamed_at(program, parse, offset)?;
    if new_name == old_name {
        return Ok(Vec::new());
    }
    let edits = match renamed {
        Renamed::Invocation(id) | Renamed::Target(Target::Invocation(id)) => {
            rename_invocation(program, id, new_name)
        }
        Renamed::Target(target @ Target::Symbol(_)) => {
            rename_symbol(program, parse, &target, new_name)
        }
        Renamed::Target(target) => rename_local(program, parse, &target, new_name),
    }?;
    // Whatever made them, the answer stays within its limit.
    let texts = edits.iter().map(|e| e.replacement.len());
    check_answer_size(edits.len(), texts.sum())?;
    Ok(edits)
}

/// The longest new name, in bytes, that a rename takes. Real names are a
/// few dozen bytes; the limit keeps the work of checking a name, and the
/// text of a refusal that quotes it, small whatever the client sends.
pub const MAX_NEW_NAME: usize = 1024;

/// The most text the edits of one rename may hold, in bytes, each edit
/// counted as its new text plus [`EDIT_OVERHEAD`] for its range. The
/// answer then stays far below the 64 MiB the transport allows one message
/// (`transport::MESSAGE_LIMIT`): uses × new name length is output size.
pub const RENAME_ANSWER_LIMIT: usize = 32 << 20;

/// What one edit of a rename adds to the answer besides its new text: its
/// range and field names in JSON, with lines and columns of up to eight
/// digits.
pub const EDIT_OVERHEAD: usize = 128;

/// Refuses an answer of `edits` edits holding `text` bytes of new text in
/// all when it would be longer than [`RENAME_ANSWER_LIMIT`].
fn check_answer_size(edits: usize, text: usize) -> Result<(), String> {
    let size = edits.saturating_mul(EDIT_OVERHEAD).saturating_add(text);
    if size > RENAME_ANSWER_LIMIT {
        return Err(format!(
            "this rename would make {edits} edits holding {text} bytes of text, more than the {RENAME_ANSWER_LIMIT} bytes an answer may hold (a shorter name, or fewer uses)"
        ));
    }
    Ok(())
}

/// Refuses renaming the `references` to `new_name` before their edits are
/// made, when the answer would be too long or a file would grow past the
/// size a source may have (`op2` could not read it again).
fn check_rename_size(
    program: &Program,
    parse: &Parse,
    references: &[Reference],
    new_name: &str,
) -> Result<(), String> {
    let count = references.len();
    check_answer_size(count, count.saturating_mul(new_name.len()))?;
    let mut per_file: FxHashMap<FileId, (usize, usize)> = FxHashMap::default();
    for reference in references {
        let (uses, old_bytes) = per_file.entry(reference.location.file).or_default();
        *uses += 1;
        *old_bytes += reference.location.range.len() as usize;
    }
    let limit = op2_codegen::files::SOURCE_LIMIT;
    for (file, (uses, old_bytes)) in per_file {
        let length = if file == FileId::MAIN {
            parse.text().len()
        } else {
            program
                .files
                .get(file.0 as usize)
                .map_or(0, |source| source.text.len())
        };
        let after = (length - old_bytes.min(length)).saturating_add(uses * new_name.len());
        if after as u64 > limit {
            return Err(format!(
                "this rename would make {} {after} bytes long, over the limit of {limit} bytes of a source file",
                describe_file(program, file)
            ));
        }
    }
    Ok(())
}

/// Checks that `name` can name something: first its length, so that the
/// rest of the check, and a message quoting it, are bounded.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.len() > MAX_NEW_NAME {
        return Err(format!(
            "the new name is {} bytes long; a name may be at most {MAX_NEW_NAME} bytes",
            name.len()
        ));
    }
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!(
            "`{name}` is not a valid name: a name is letters, digits and `_`, and does not start with a digit"
        ));
    }
    if RESERVED_WORDS.contains(&name) {
        return Err(format!("`{name}` is a reserved word"));
    }
    if op2_syntax::ast::BUILTINS.contains(&name) {
        return Err(format!("`{name}` is the name of a built-in function"));
    }
    // Whatever else the grammar will not take as a name.
    if Parse::new(format!("set {name};"))
        .tree()
        .root_node()
        .has_error()
    {
        return Err(format!("`{name}` cannot be used as a name"));
    }
    Ok(())
}

fn rename_symbol(
    program: &Program,
    parse: &Parse,
    target: &Target,
    new_name: &str,
) -> Result<Vec<TextEdit>, String> {
    let Target::Symbol(symbol) = *target else {
        return Ok(Vec::new());
    };
    let old_name = program.symbol_name(symbol).0;
    if let Some(other) = program.lookup(new_name) {
        return Err(format!(
            "`{new_name}` is already the name of a {} ({}); top-level names share one namespace",
            other.kind_name(),
            describe_location(program, program.symbol_name(other).1)
        ));
    }
    if matches!(symbol, Symbol::Set(_) | Symbol::Dat(_) | Symbol::Global(_))
        && let Some(invocation) = program.invocations.iter().find(|i| i.name == new_name)
    {
        return Err(format!(
            "`{new_name}` is the name of the par_loop at {}; generated names need the names of invocations and of sets, dats and globals to differ",
            describe_location(program, invocation.name_location)
        ));
    }
    let mut edits = Vec::new();
    if let Symbol::Kernel(kernel) = symbol {
        if op2_analysis::reserved::CPP_KEYWORDS.contains(&new_name) {
            return Err(format!(
                "`{new_name}` is a name the generated C++ reserves, so a kernel cannot take it"
            ));
        }
        edits.extend(rename_kernel_invocations(
            program, kernel, old_name, new_name,
        )?);
    }
    let references = references(program, parse, target);
    let mut files: Vec<FileId> = references.iter().map(|r| r.location.file).collect();
    files.dedup();
    for file in files {
        let mut problem = None;
        let uses: FxHashSet<TextRange> = references
            .iter()
            .filter(|r| r.location.file == file && !r.is_declaration)
            .map(|r| r.location.range)
            .collect();
        with_file(program, parse, file, |syntax| {
            let whole = TextRange::new(0, to_u32(syntax.text.len()));
            let names = [old_name, new_name];
            NameWalk::run(program, syntax, &names, whole, |walk, _| {
                let range = range_of(walk.path().node());
                if problem.is_some() || !uses.contains(&range) {
                    return;
                }
                // A local or parameter called `new_name` in scope would take
                // this use over.
                if let Some(shadow @ (Target::Local(_) | Target::Param { .. })) = walk.resolve(1) {
                    problem = Some(format!(
                        "the use of `{old_name}` at {} would then name the {}",
                        describe_location(program, Location { file, range }),
                        describe_target(program, &shadow)
                    ));
                }
            });
        });
        if let Some(problem) = problem {
            return Err(problem);
        }
    }
    check_rename_size(program, parse, &references, new_name)?;
    edits.extend(references.iter().map(|r| TextEdit {
        file: r.location.file,
        range: r.location.range,
        replacement: new_name.to_owned(),
    }));
    Ok(edits)
}

fn rename_local(
    program: &Program,
    parse: &Parse,
    target: &Target,
    new_name: &str,
) -> Result<Vec<TextEdit>, String> {
    let old_name = target_name(program, target).to_owned();
    let Some(declaration) = definition(program, target) else {
        return Ok(Vec::new());
    };
    let references = references(program, parse, target);
    let mut problem: Option<String> = None;
    with_file(program, parse, declaration.file, |syntax| {
        problem = local_rename_problem(program, syntax, target, &references, &old_name, new_name);
    });
    if let Some(problem) = problem {
        return Err(problem);
    }
    check_rename_size(program, parse, &references, new_name)?;
    Ok(references
        .iter()
        .map(|r| TextEdit {
            file: r.location.file,
            range: r.location.range,
            replacement: new_name.to_owned(),
        })
        .collect())
}

/// Why renaming a local or a parameter to `new_name` would change the
/// program's meaning, if it would.
fn local_rename_problem(
    program: &Program,
    syntax: FileSyntax<'_>,
    target: &Target,
    references: &[Reference],
    old_name: &str,
    new_name: &str,
) -> Option<String> {
    let FileSyntax { file, text, tree } = syntax;
    let declaration = definition(program, target)?;
    let root = tree.root_node();
    let node_at = |range: TextRange| NodePath::at(root, range.start as usize, range.end as usize);
    let path = node_at(declaration.range);
    let ident = path.node();
    // The declarations that share the target's scope.
    let (scope_node, mut same_scope) = match target {
        Target::Local(_) => {
            let declaration_node = path.ancestor(2)?;
            let scope = scope_of(declaration_node, path.ancestor(3));
            let scope_parent = path.up().skip_while(|n| n.id() != scope.id()).nth(1);
            let mut names = declared_in(scope);
            // A kernel's outermost block shares the parameters' scope.
            if let Some(kernel) = scope_parent
                .filter(|p| p.kind() == "kernel_definition" && scope.kind() == "compound_statement")
            {
                names.extend(parameters_of(kernel));
            }
            (scope, names)
        }
        _ => {
            let kernel = path.ancestor(3)?;
            let mut names = parameters_of(kernel);
            if let Some(body) = kernel.child_by_field_name("body") {
                names.extend(declared_in(body));
            }
            (kernel, names)
        }
    };
    same_scope.retain(|n| text_of(*n, text) == new_name && n.id() != ident.id());
    if let Some(other) = same_scope.first() {
        return Some(format!(
            "`{new_name}` is already declared in the same scope, at {}",
            describe_location(
                program,
                Location {
                    file,
                    range: range_of(*other)
                }
            )
        ));
    }
    let scope = match target {
        Target::Local(local) => local.scope.range,
        _ => range_of(scope_node),
    };
    let inner = |candidate: &Target| match candidate {
        Target::Local(local) => scope.contains_range(local.declaration.range),
        _ => false,
    };
    // One walk over the scope finds both kinds of problem; the first use of
    // the target that would be taken over is reported before the first use
    // of something else that would be hidden.
    let uses: FxHashSet<TextRange> = references
        .iter()
        .filter(|r| r.location.file == file && !r.is_declaration)
        .map(|r| r.location.range)
        .collect();
    let (mut taken_over, mut hidden) = (None, None);
    let names = [old_name, new_name];
    NameWalk::run(program, syntax, &names, scope, |walk, _| {
        let node = walk.path().node();
        let range = range_of(node);
        let spelled = text_of(node, text);
        // A use of the target must not fall to a declaration of `new_name`
        // nested inside the target's scope.
        if taken_over.is_none()
            && spelled == old_name
            && uses.contains(&range)
            && let Some(shadow) = walk.resolve(1).filter(|s| inner(s))
        {
            taken_over = Some(format!(
                "the use of `{old_name}` at {} would then name the {}",
                describe_location(program, Location { file, range }),
                describe_target(program, &shadow)
            ));
        }
        // A use of something else called `new_name` in the target's scope
        // must not fall to the target.
        if hidden.is_none()
            && spelled == new_name
            && let Some(other) = walk.resolve(1)
            && &other != target
            && !inner(&other)
        {
            hidden = Some(format!(
                "`{new_name}` at {} names the {}, which the renamed {} would hide",
                describe_location(program, Location { file, range }),
                describe_target(program, &other),
                describe_target(program, target)
            ));
        }
    });
    taken_over.or(hidden)
}

/// The names declared directly in a block, a `for` or a declaration.
fn declared_in(scope: Node<'_>) -> Vec<Node<'_>> {
    let declarations: Vec<Node<'_>> = match scope.kind() {
        "compound_statement" => {
            let mut cursor = scope.walk();
            scope
                .named_children(&mut cursor)
                .filter(|s| s.kind() == "local_declaration")
                .collect()
        }
        "for_statement" => scope
            .child_by_field_name("initializer")
            .filter(|i| i.kind() == "local_declaration")
            .into_iter()
            .collect(),
        "local_declaration" => vec![scope],
        _ => Vec::new(),
    };
    let mut names = Vec::new();
    for declaration in declarations {
        let mut cursor = declaration.walk();
        names.extend(
            declaration
                .children_by_field_name("declarator", &mut cursor)
                .filter_map(|d| d.child_by_field_name("name")),
        );
    }
    names
}

fn parameters_of(kernel: Node<'_>) -> Vec<Node<'_>> {
    let Some(list) = kernel.child_by_field_name("parameters") else {
        return Vec::new();
    };
    let mut cursor = list.walk();
    list.children_by_field_name("parameter", &mut cursor)
        .filter_map(|p| p.child_by_field_name("name"))
        .collect()
}

fn rename_invocation(
    program: &Program,
    id: InvocationId,
    new_name: &str,
) -> Result<Vec<TextEdit>, String> {
    if let Some(keyword) = op2_analysis::type_keyword_prefix(new_name) {
        return Err(format!(
            "`{new_name}` starts with the type keyword `{keyword}`, which POETS loaders misread in generated names (E312)"
        ));
    }
    if let Some(symbol @ (Symbol::Set(_) | Symbol::Dat(_) | Symbol::Global(_))) =
        program.lookup(new_name)
    {
        return Err(format!(
            "`{new_name}` is the name of a {} ({}); an invocation may not take the name of a set, dat or global",
            symbol.kind_name(),
            describe_location(program, program.symbol_name(symbol).1)
        ));
    }
    if let Some(other) = program.invocations.iter().find(|i| i.name == new_name) {
        return Err(format!(
            "`{new_name}` is already the name of the par_loop at {}",
            describe_location(program, other.name_location)
        ));
    }
    let mut explicit = explicit_names(program);
    explicit[id.index()] = Some(new_name.to_owned());
    let mut edits = vec![name_edit(&program.invocations[id.index()], new_name)];
    edits.extend(pin_other_names(program, &mut explicit, None, |j| {
        j == id.index()
    }));
    Ok(edits)
}

/// The edits that keep the names of the invocations of other kernels when
/// `kernel` is renamed, after checking that the names its own invocations
/// then get are valid.
fn rename_kernel_invocations(
    program: &Program,
    kernel: KernelId,
    old_name: &str,
    new_name: &str,
) -> Result<Vec<TextEdit>, String> {
    let mut explicit = explicit_names(program);
    let names = invocation_names(program, &explicit, Some((kernel, new_name)));
    let own = |j: usize| {
        let invocation = &program.invocations[j];
        invocation.kernel == Some(kernel) && !invocation.named_explicitly
    };
    // How many invocations each name would have, so that a clash is found
    // in one look-up (comparing each with all the others was quadratic:
    // 8,000 par_loops of one kernel took 0.24 s, 80,000 would take 25 s).
    let mut uses: FxHashMap<&str, usize> = FxHashMap::default();
    for name in &names {
        *uses.entry(name.as_str()).or_default() += 1;
    }
    for (j, name) in names.iter().enumerate().filter(|(j, _)| own(*j)) {
        crate::work::count(1);
        if let Some(keyword) = op2_analysis::type_keyword_prefix(name) {
            return Err(format!(
                "the par_loops of `{old_name}` without `as` are named after it, and `{name}` would start with the type keyword `{keyword}`, which POETS loaders misread (E312)"
            ));
        }
        let clash = uses.get(name.as_str()).is_some_and(|&n| n > 1)
            || program
                .lookup(name)
                .is_some_and(|s| matches!(s, Symbol::Set(_) | Symbol::Dat(_) | Symbol::Global(_)));
        if clash {
            return Err(format!(
                "the par_loop at {} would be named `{name}`, which is already taken",
                describe_location(program, program.invocations[j].name_location)
            ));
        }
    }
    Ok(pin_other_names(
        program,
        &mut explicit,
        Some((kernel, new_name)),
        own,
    ))
}

fn explicit_names(program: &Program) -> Vec<Option<String>> {
    program
        .invocations
        .iter()
        .map(|i| i.named_explicitly.then(|| i.name.clone()))
        .collect()
}

/// Gives `as CURRENT_NAME` to every invocation not `exempt` whose implicit
/// name would change, until no name changes.
fn pin_other_names(
    program: &Program,
    explicit: &mut [Option<String>],
    kernel_rename: Option<(KernelId, &str)>,
    exempt: impl Fn(usize) -> bool,
) -> Vec<TextEdit> {
    let mut edits = Vec::new();
    for _ in 0..=program.invocations.len() {
        let names = invocation_names(program, explicit, kernel_rename);
        crate::work::count(program.invocations.len());
        let changed: Vec<usize> = program
            .invocations
            .iter()
            .enumerate()
            .filter(|(j, i)| {
                !exempt(*j) && explicit[*j].is_none() && !i.name.is_empty() && names[*j] != i.name
            })
            .map(|(j, _)| j)
            .collect();
        if changed.is_empty() {
            break;
        }
        for j in changed {
            let invocation = &program.invocations[j];
            explicit[j] = Some(invocation.name.clone());
            edits.push(name_edit(invocation, &invocation.name));
        }
    }
    edits
}

/// The edit that names an invocation `name`: replaces its `as` name, or adds
/// one after the kernel name.
fn name_edit(invocation: &Invocation, name: &str) -> TextEdit {
    let location = invocation.name_location;
    if invocation.named_explicitly {
        TextEdit {
            file: location.file,
            range: location.range,
            replacement: name.to_owned(),
        }
    } else {
        TextEdit {
            file: location.file,
            range: TextRange::empty(location.range.end),
            replacement: format!(" as {name}"),
        }
    }
}

/// The names of the invocations (language.md §6, as the analyser gives
/// them) with `explicit` names and, optionally, one kernel renamed.
fn invocation_names(
    program: &Program,
    explicit: &[Option<String>],
    kernel_rename: Option<(KernelId, &str)>,
) -> Vec<String> {
    let kernel_name = |k: KernelId| match kernel_rename {
        Some((renamed, name)) if renamed == k => name.to_owned(),
        _ => program.kernels[k.index()].name.clone(),
    };
    let mut reserved: FxHashSet<&str> = FxHashSet::default();
    reserved.extend(program.sets.iter().map(|s| s.name.as_str()));
    reserved.extend(program.dats.iter().map(|d| d.name.as_str()));
    reserved.extend(program.globals.iter().map(|g| g.name.as_str()));
    let n = program.invocations.len();
    crate::work::count(n);
    let mut names = vec![String::new(); n];
    let mut taken: FxHashSet<String> = FxHashSet::default();
    let mut first: FxHashSet<KernelId> = FxHashSet::default();
    for (j, invocation) in program.invocations.iter().enumerate() {
        if explicit[j].is_none()
            && let Some(kernel) = invocation.kernel
            && first.insert(kernel)
        {
            names[j] = kernel_name(kernel);
            taken.insert(names[j].clone());
        }
    }
    for (j, name) in explicit.iter().enumerate() {
        if let Some(name) = name {
            names[j] = name.clone();
            taken.insert(name.clone());
        }
    }
    let mut next_suffix: FxHashMap<KernelId, u32> = FxHashMap::default();
    let mut seen: FxHashSet<KernelId> = FxHashSet::default();
    for (j, invocation) in program.invocations.iter().enumerate() {
        let Some(kernel) = invocation.kernel.filter(|_| explicit[j].is_none()) else {
            continue;
        };
        if seen.insert(kernel) {
            continue;
        }
        let base = kernel_name(kernel);
        let counter = next_suffix.entry(kernel).or_insert(1);
        let name = loop {
            let candidate = format!("{base}_{counter}");
            *counter += 1;
            if !taken.contains(&candidate) && !reserved.contains(candidate.as_str()) {
                break candidate;
            }
        };
        taken.insert(name.clone());
        names[j] = name;
    }
    names
}

/// "file.op2:12" (the root file by its name only).
fn describe_location(program: &Program, location: Location) -> String {
    let Some(file) = program.files.get(location.file.0 as usize) else {
        return String::from("an unknown place");
    };
    let line = line_of(&file.text, location.range.start);
    let name = file.path.file_name().map_or_else(
        || file.path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    format!("{name}:{line}")
}

/// "`file.op2`" (by its name only), for messages.
fn describe_file(program: &Program, file: FileId) -> String {
    match program.files.get(file.0 as usize) {
        Some(source) => format!(
            "`{}`",
            source.path.file_name().map_or_else(
                || source.path.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        ),
        None => String::from("a file"),
    }
}

/// The 1-based line of `offset` in `text`.
pub fn line_of(text: &str, offset: u32) -> usize {
    let end = (offset as usize).min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// "local `x` of kernel `k`", "dat `p_q`", … for messages.
pub fn describe_target(program: &Program, target: &Target) -> String {
    match target {
        Target::Symbol(symbol) => {
            let (name, _) = program.symbol_name(*symbol);
            format!("{} `{name}`", symbol.kind_name())
        }
        Target::Param { kernel, .. } => {
            format!(
                "parameter `{}` of kernel `{}`",
                target_name(program, target),
                program.kernels[kernel.index()].name
            )
        }
        Target::Local(local) => format!("local `{}` of {}", local.name, local.owner),
        Target::Invocation(id) => format!("invocation `{}`", program.invocations[id.index()].name),
    }
}

// ----------------------------------------------------------------------
// Signatures, shared by symbols and hover
// ----------------------------------------------------------------------

/// A parameter as declared: `const double *q` or `double q[4]`.
pub fn param_signature(param: &Param) -> String {
    let qualifier = if param.is_const { "const " } else { "" };
    match param.dimension {
        Some(dimension) => format!("{qualifier}{} {}[{dimension}]", param.ty, param.name),
        None => format!("{qualifier}{} *{}", param.ty, param.name),
    }
}

/// `kernel k(const double *q, double r[4])`.
pub fn kernel_signature(program: &Program, kernel: KernelId) -> String {
    let kernel = &program.kernels[kernel.index()];
    let params: Vec<String> = kernel.params.iter().map(param_signature).collect();
    format!("kernel {}({})", kernel.name, params.join(", "))
}

// ----------------------------------------------------------------------
// Symbols
// ----------------------------------------------------------------------

/// What a symbol of the outline is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    /// `set`
    Set,
    /// `map`
    Map,
    /// `dat`
    Dat,
    /// `const`
    Const,
    /// `global`
    Global,
    /// `kernel`
    Kernel,
    /// A kernel parameter.
    Param,
    /// `main`
    Main,
    /// A par_loop, named by its invocation name.
    Invocation,
}

/// One entry of the outline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutlineSymbol {
    /// The name shown.
    pub name: String,
    /// A short description: a type, a signature, `from -> to[arity]`.
    pub detail: String,
    /// What it is.
    pub kind: SymbolKind,
    /// Where its name is (for `main`, the keyword).
    pub location: Location,
    /// The whole declaration, in the same file.
    pub full_range: TextRange,
    /// What it contains: a kernel's parameters, `main`'s par_loops.
    pub children: Vec<OutlineSymbol>,
    /// What contains it, for workspace symbols: the kernel of a parameter,
    /// `main` for a par_loop.
    pub container: Option<String>,
}

/// The outline of the document: its declarations in text order, kernels
/// with their parameters, `main` with its par_loops named by invocation.
pub fn document_symbols(program: &Program, parse: &Parse) -> Vec<OutlineSymbol> {
    // The whole item around each top-level name, from one pass over the
    // root's children.
    let root = parse.tree().root_node();
    let mut items: FxHashMap<u32, TextRange> = FxHashMap::default();
    let mut main_range = None;
    let mut cursor = root.walk();
    for item in root.named_children(&mut cursor) {
        if item.kind() == "main_definition" {
            main_range = main_range.or(Some(range_of(item)));
        } else if let Some(name) = item.child_by_field_name("name") {
            items.insert(to_u32(name.start_byte()), range_of(item));
        }
    }
    let mut symbols: Vec<OutlineSymbol> = all_symbols(program)
        .into_iter()
        .filter(|s| s.location.file == FileId::MAIN)
        .map(|mut s| {
            s.full_range = items
                .get(&s.location.range.start)
                .copied()
                .unwrap_or(s.location.range);
            s
        })
        .collect();
    if let Some(location) = program.main_location.filter(|l| l.file == FileId::MAIN) {
        let full_range = main_range
            .filter(|r| r.contains_range(location.range))
            .unwrap_or(location.range);
        let children = program
            .invocations
            .iter()
            .filter(|i| {
                i.location.file == FileId::MAIN && full_range.contains_range(i.location.range)
            })
            .map(|i| invocation_symbol(program, i))
            .collect();
        symbols.push(OutlineSymbol {
            name: "main".into(),
            detail: String::new(),
            kind: SymbolKind::Main,
            location,
            full_range,
            children,
            container: None,
        });
    }
    symbols.sort_by_key(|s| s.full_range.start);
    symbols
}

fn invocation_symbol(program: &Program, invocation: &Invocation) -> OutlineSymbol {
    let kernel = invocation
        .kernel
        .map_or("?", |k| program.kernels[k.index()].name.as_str());
    let set = invocation
        .set
        .map_or("?", |s| program.sets[s.index()].name.as_str());
    let name = if invocation.name.is_empty() {
        kernel.to_owned()
    } else {
        invocation.name.clone()
    };
    OutlineSymbol {
        name,
        detail: format!("par_loop {kernel} over {set}"),
        kind: SymbolKind::Invocation,
        location: invocation.name_location,
        full_range: invocation.location.range,
        children: Vec::new(),
        container: Some("main".into()),
    }
}

/// Every top-level symbol of the program's files, kernels with their
/// parameters as children; `full_range` is the name's range (a parameter's
/// is the whole parameter).
fn all_symbols(program: &Program) -> Vec<OutlineSymbol> {
    let leaf = |name: &str, detail: String, kind, location: Location| OutlineSymbol {
        name: name.to_owned(),
        detail,
        kind,
        location,
        full_range: location.range,
        children: Vec::new(),
        container: None,
    };
    let set_name = |s: Option<op2_analysis::model::SetId>| {
        s.map_or("?", |s| program.sets[s.index()].name.as_str())
    };
    let mut out = Vec::new();
    for set in &program.sets {
        out.push(leaf(&set.name, "set".into(), SymbolKind::Set, set.location));
    }
    for map in &program.maps {
        let detail = format!(
            "{} -> {}[{}]",
            set_name(map.from),
            set_name(map.to),
            map.arity
        );
        out.push(leaf(&map.name, detail, SymbolKind::Map, map.location));
    }
    for dat in &program.dats {
        out.push(leaf(
            &dat.name,
            format!("{} on {}", dat.ty, set_name(dat.set)),
            SymbolKind::Dat,
            dat.location,
        ));
    }
    for constant in &program.consts {
        out.push(leaf(
            &constant.name,
            constant.ty.to_string(),
            SymbolKind::Const,
            constant.location,
        ));
    }
    for global in &program.globals {
        out.push(leaf(
            &global.name,
            global.ty.to_string(),
            SymbolKind::Global,
            global.location,
        ));
    }
    for kernel in &program.kernels {
        let params: Vec<String> = kernel.params.iter().map(param_signature).collect();
        let mut symbol = leaf(
            &kernel.name,
            format!("({})", params.join(", ")),
            SymbolKind::Kernel,
            kernel.location,
        );
        symbol.children = kernel
            .params
            .iter()
            .map(|p| {
                let mut child = leaf(
                    &p.name,
                    param_signature(p),
                    SymbolKind::Param,
                    p.name_location,
                );
                child.full_range = p.location.range;
                child.container = Some(kernel.name.clone());
                child
            })
            .collect();
        out.push(symbol);
    }
    out
}

/// The symbols of every file of the program (imports included) whose name
/// matches `query` (case-insensitive subsequence): top-level names, kernel
/// parameters and invocations, flat.
pub fn workspace_symbols(program: &Program, query: &str) -> Vec<OutlineSymbol> {
    let mut out = Vec::new();
    for mut symbol in all_symbols(program) {
        for child in std::mem::take(&mut symbol.children) {
            if matches_query(&child.name, query) {
                out.push(child);
            }
        }
        if matches_query(&symbol.name, query) {
            out.push(symbol);
        }
    }
    for invocation in &program.invocations {
        let symbol = invocation_symbol(program, invocation);
        if matches_query(&symbol.name, query) {
            out.push(symbol);
        }
    }
    out.sort_by_key(|s| (s.location.file, s.location.range.start));
    out
}

/// True when the characters of `query` appear in `name` in order, ignoring
/// case.
pub fn matches_query(name: &str, query: &str) -> bool {
    let mut name = name.chars().flat_map(char::to_lowercase);
    query
        .chars()
        .flat_map(char::to_lowercase)
        .all(|q| name.any(|c| c == q))
}
