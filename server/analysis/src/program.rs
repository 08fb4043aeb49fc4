//! Building the semantic model: loading imports, declaring and resolving
//! top-level items, evaluating consts, lowering kernels (with reuse of
//! unchanged ones) and `main`, and resolving every par_loop.

use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use op2_syntax::ast::{self, AccessMode, ArgData, Item, NodeText, ScalarType};
use op2_syntax::{Code, Diagnostic, FileId, Fix, Location, Parse, TextEdit, TextRange};
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

use crate::consts::{ConstValues, fits};
use crate::hir::{Body, ExprKind};
use crate::kernel::{KernelSummary, summarise};
use crate::lower::{Context, Env, Lowerer, element_type};
use crate::model::{
    Arg, ArgKind, Const, ConstId, Dat, DatId, ElementType, File, Global, GlobalId, InitialValue,
    Invocation, InvocationId, Kernel, KernelId, Map, MapId, Param, Program, Set, SetId, Symbol,
};
use crate::shift::Shift;
use crate::value::Value;
use crate::{Loader, Options};

/// A kernel lowered once, reused while its text and the declarations it can
/// see are unchanged.
#[derive(Clone, Debug)]
pub(crate) struct CachedKernel {
    /// Where the kernel started when this entry was made; ranges inside are
    /// absolute for that start.
    start: u32,
    file: FileId,
    params: Vec<Param>,
    body: Arc<Body>,
    summary: Arc<KernelSummary>,
    diagnostics: Vec<Diagnostic>,
    consts_used: Vec<ConstId>,
}

/// Reusable work between analyses of the same program.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    kernels: FxHashMap<u64, CachedKernel>,
    imports: FxHashMap<PathBuf, (Arc<str>, Arc<Parse>)>,
    pub(crate) kernel_hits: usize,
    pub(crate) kernel_misses: usize,
}

enum FileParse<'a> {
    Root(&'a Parse),
    Imported(Arc<Parse>),
}

impl FileParse<'_> {
    fn get(&self) -> &Parse {
        match self {
            FileParse::Root(parse) => parse,
            FileParse::Imported(parse) => parse,
        }
    }
}

/// The result of building.
pub(crate) struct Built {
    pub program: Program,
    pub diagnostics: Vec<Diagnostic>,
    pub const_values: ConstValues,
    pub invocation_syntax: Vec<InvocationSyntax>,
}

/// Syntax positions of an invocation, for the checks that need them.
#[derive(Clone, Debug)]
pub(crate) struct InvocationSyntax {
    /// The par_loop's kernel name.
    pub kernel: Location,
    /// The `as NAME` clause's name, when present.
    pub alias: Option<Location>,
    /// The argument list (for E301).
    pub arguments: Location,
}

pub(crate) fn build(
    root_path: &Path,
    root: &Parse,
    loader: &dyn Loader,
    options: &Options,
    cache: &mut Cache,
) -> Built {
    let mut builder = Builder {
        diagnostics: Vec::new(),
        files: Vec::new(),
        program: Program::default(),
    };
    builder.load_files(root_path, root, loader, cache);
    // What the parser could not read; unsupported C constructs are found per
    // item (kernels' with the kernel, reused while it is unchanged).
    for (id, (_, parse)) in builder.files.iter().enumerate() {
        let parse = parse.get();
        let file = FileId(u32::try_from(id).unwrap_or(u32::MAX));
        builder.diagnostics.extend(parse.unparsed_errors(file));
        for item in parse.root().items() {
            if !matches!(item, Item::Kernel(_)) {
                builder.diagnostics.extend(op2_syntax::unsupported_in(
                    item.node(),
                    parse.text(),
                    file,
                ));
            }
        }
    }
    let files: Vec<(PathBuf, &Parse)> = builder
        .files
        .iter()
        .map(|(path, parse)| (path.clone(), parse.get()))
        .collect();
    let mut items = Items::default();
    let mut diagnostics = std::mem::take(&mut builder.diagnostics);
    let mut program = std::mem::take(&mut builder.program);
    for (path, parse) in &files {
        program.files.push(File {
            path: path.clone(),
            text: Arc::from(parse.text()),
        });
    }
    let mut declarer = Declarer {
        program: &mut program,
        diagnostics: &mut diagnostics,
        items: &mut items,
    };
    for (id, (_, parse)) in files.iter().enumerate() {
        declarer.declare(file_id(id), parse);
    }
    let mut resolver = Resolver {
        program: &mut program,
        diagnostics: &mut diagnostics,
        files: &files,
    };
    resolver.resolve_declarations(&items);
    let const_values = resolver.evaluate_consts(&items);
    resolver.initialise_data(&items, &const_values);
    resolver.lower_kernels(&items, &const_values, cache);
    let invocation_syntax = resolver.lower_main(&items, options);
    Built {
        program,
        diagnostics,
        const_values,
        invocation_syntax,
    }
}

fn file_id(index: usize) -> FileId {
    FileId(u32::try_from(index).unwrap_or(u32::MAX))
}

struct Builder<'a> {
    diagnostics: Vec<Diagnostic>,
    files: Vec<(PathBuf, FileParse<'a>)>,
    program: Program,
}

/// Normalises `a/./b/../c` lexically, so that one file imported along two
/// paths is one file.
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
            other => out.push(other),
        }
    }
    out
}

impl<'a> Builder<'a> {
    fn load_files(
        &mut self,
        root_path: &Path,
        root: &'a Parse,
        loader: &dyn Loader,
        cache: &mut Cache,
    ) {
        self.files
            .push((normalise(root_path), FileParse::Root(root)));
        let mut used_imports = FxHashSet::default();
        // Depth-first over imports, with the chain of files being visited to
        // find cycles.
        let mut stack: Vec<usize> = Vec::new();
        self.visit(0, &mut stack, loader, cache, &mut used_imports);
        cache.imports.retain(|path, _| used_imports.contains(path));
    }

    fn visit(
        &mut self,
        file: usize,
        stack: &mut Vec<usize>,
        loader: &dyn Loader,
        cache: &mut Cache,
        used: &mut FxHashSet<PathBuf>,
    ) {
        stack.push(file);
        let imports: Vec<(String, TextRange)> = {
            let parse = self.files[file].1.get();
            parse
                .root()
                .items()
                .filter_map(|item| match item {
                    Item::Import(import) => import
                        .path()
                        .map(|p| (p.value(parse.text()), p.text_range())),
                    _ => None,
                })
                .collect()
        };
        for (relative, range) in imports {
            let location = Location {
                file: file_id(file),
                range,
            };
            let base = self.files[file]
                .0
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let path = normalise(&base.join(&relative));
            if let Some(existing) = self.files.iter().position(|(p, _)| *p == path) {
                if let Some(at) = stack.iter().position(|f| *f == existing) {
                    let chain: Vec<String> = stack[at..]
                        .iter()
                        .chain(std::iter::once(&existing))
                        .map(|f| format!("`{}`", self.files[*f].0.display()))
                        .collect();
                    self.diagnostics.push(
                        Diagnostic::new(
                            Code::E104,
                            location,
                            format!("import cycle: {}", chain.join(" imports ")),
                        )
                        .with_label("this import closes the cycle"),
                    );
                }
                continue;
            }
            let text = match loader.load(&path) {
                Ok(text) => text,
                Err(reason) => {
                    self.diagnostics.push(
                        Diagnostic::new(
                            Code::E104,
                            location,
                            format!("cannot import `{relative}`: {reason}"),
                        )
                        .with_label(format!("looked for `{}`", path.display())),
                    );
                    continue;
                }
            };
            used.insert(path.clone());
            let parse = match cache.imports.get(&path) {
                Some((cached_text, parse)) if **cached_text == *text => Arc::clone(parse),
                _ => {
                    let parse = Arc::new(Parse::new(&*text));
                    cache
                        .imports
                        .insert(path.clone(), (text, Arc::clone(&parse)));
                    parse
                }
            };
            self.files.push((path, FileParse::Imported(parse)));
            let index = self.files.len() - 1;
            self.visit(index, stack, loader, cache, used);
        }
        stack.pop();
    }
}

/// The syntax of each declared item, by id.
#[derive(Default)]
struct Items<'t> {
    maps: Vec<(FileId, ast::MapDecl<'t>)>,
    dats: Vec<(FileId, ast::DatDecl<'t>)>,
    consts: Vec<(FileId, ast::ConstDecl<'t>)>,
    globals: Vec<(FileId, ast::GlobalDecl<'t>)>,
    kernels: Vec<(FileId, ast::KernelDef<'t>)>,
    mains: Vec<(FileId, ast::MainDef<'t>)>,
}

struct Declarer<'p, 't> {
    program: &'p mut Program,
    diagnostics: &'p mut Vec<Diagnostic>,
    items: &'p mut Items<'t>,
}

const PLACEHOLDER_TYPE: ElementType = ElementType {
    scalar: ScalarType::Double,
    dimension: 1,
};

impl<'t> Declarer<'_, 't> {
    fn declare(&mut self, file: FileId, parse: &'t Parse) {
        let source = parse.text();
        for item in parse.root().items() {
            let name_node = match item {
                Item::Set(d) => d.name(),
                Item::Map(d) => d.name(),
                Item::Dat(d) => d.name(),
                Item::Const(d) => d.name(),
                Item::Global(d) => d.name(),
                Item::Kernel(d) => d.name(),
                Item::Main(main) => {
                    self.items.mains.push((file, main));
                    continue;
                }
                Item::ParLoop(par_loop) => {
                    let keyword = par_loop
                        .node()
                        .child(0)
                        .map_or(par_loop.text_range(), |k| k.text_range());
                    self.diagnostics.push(
                        Diagnostic::new(
                            Code::E601,
                            Location {
                                file,
                                range: keyword,
                            },
                            "`par_loop` outside `main`",
                        )
                        .with_label("par_loops run only from `main`"),
                    );
                    continue;
                }
                Item::Import(_) => continue,
            };
            let Some(name_node) = name_node else { continue };
            let name = name_node.text(source).to_owned();
            let location = Location {
                file,
                range: name_node.text_range(),
            };
            if let Some(previous) = self.program.names.get(&name).copied() {
                let (_, previous_location) = self.program.symbol_name(previous);
                self.diagnostics.push(
                    Diagnostic::new(
                        Code::E102,
                        location,
                        format!("`{name}` is defined more than once"),
                    )
                    .with_label(format!("`{name}` redefined here"))
                    .with_related(previous_location, format!("first definition of `{name}`")),
                );
                continue;
            }
            if matches!(item, Item::Kernel(_))
                && crate::reserved::CPP_KEYWORDS.contains(&name.as_str())
            {
                self.diagnostics.push(
                    Diagnostic::new(
                        Code::E102,
                        location,
                        format!("kernel `{name}` has a name the generated C++ reserves"),
                    )
                    .with_label("a C++ keyword or a name of the POETS handler environment"),
                );
                continue;
            }
            if matches!(item, Item::Kernel(_)) && crate::hir::Builtin::from_name(&name).is_some() {
                self.diagnostics.push(
                    Diagnostic::new(
                        Code::E102,
                        location,
                        format!("kernel `{name}` has the name of a built-in function"),
                    )
                    .with_label("the generated C++ would clash with the math function"),
                );
                continue;
            }
            let symbol = match item {
                Item::Set(_) => {
                    self.program.sets.push(Set {
                        name: name.clone(),
                        location,
                    });
                    Symbol::Set(SetId(len_u32(&self.program.sets) - 1))
                }
                Item::Map(decl) => {
                    self.program.maps.push(Map {
                        name: name.clone(),
                        location,
                        from: None,
                        to: None,
                        arity: 1,
                    });
                    self.items.maps.push((file, decl));
                    Symbol::Map(MapId(len_u32(&self.program.maps) - 1))
                }
                Item::Dat(decl) => {
                    self.program.dats.push(Dat {
                        name: name.clone(),
                        location,
                        ty: PLACEHOLDER_TYPE,
                        set: None,
                        init: InitialValue::Zero,
                    });
                    self.items.dats.push((file, decl));
                    Symbol::Dat(DatId(len_u32(&self.program.dats) - 1))
                }
                Item::Const(decl) => {
                    self.program.consts.push(Const {
                        name: name.clone(),
                        location,
                        ty: PLACEHOLDER_TYPE,
                        value: None,
                    });
                    self.items.consts.push((file, decl));
                    Symbol::Const(ConstId(len_u32(&self.program.consts) - 1))
                }
                Item::Global(decl) => {
                    self.program.globals.push(Global {
                        name: name.clone(),
                        location,
                        ty: PLACEHOLDER_TYPE,
                        init: InitialValue::Zero,
                    });
                    self.items.globals.push((file, decl));
                    Symbol::Global(GlobalId(len_u32(&self.program.globals) - 1))
                }
                Item::Kernel(decl) => {
                    self.program.kernels.push(Kernel {
                        name: name.clone(),
                        location,
                        params: Vec::new(),
                        body: Arc::default(),
                        summary: Arc::default(),
                        consts_used: Vec::new(),
                    });
                    self.items.kernels.push((file, decl));
                    Symbol::Kernel(KernelId(len_u32(&self.program.kernels) - 1))
                }
                Item::Main(_) | Item::ParLoop(_) | Item::Import(_) => continue,
            };
            self.program.names.insert(name, symbol);
        }
    }
}

fn len_u32<T>(items: &[T]) -> u32 {
    u32::try_from(items.len()).unwrap_or(u32::MAX)
}

/// A const's value lowered but not yet evaluated: its file, the
/// expressions, whether they form a list, the consts they name, and where
/// the value is written.
type PendingConst = (FileId, Vec<crate::hir::Expr>, bool, Vec<ConstId>, TextRange);

/// What kind of name a reference expects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Set,
    Map,
    Kernel,
}

impl Expect {
    fn word(self) -> &'static str {
        match self {
            Expect::Set => "set",
            Expect::Map => "map",
            Expect::Kernel => "kernel",
        }
    }
}

struct Resolver<'p, 'f> {
    program: &'p mut Program,
    diagnostics: &'p mut Vec<Diagnostic>,
    files: &'f [(PathBuf, &'f Parse)],
}

impl<'f> Resolver<'_, 'f> {
    fn source(&self, file: FileId) -> &'f str {
        self.files[file.0 as usize].1.text()
    }

    fn report(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    /// A close existing name of the wanted kind, for "did you mean".
    fn suggest(&self, name: &str, wanted: impl Fn(Symbol) -> bool) -> Option<String> {
        let candidates = self
            .program
            .names
            .iter()
            .filter(|(_, s)| wanted(**s))
            .map(|(n, _)| n.as_str());
        crate::suggest::closest(name, candidates).map(str::to_owned)
    }

    fn unknown(
        &mut self,
        name: &str,
        location: Location,
        what: &str,
        wanted: impl Fn(Symbol) -> bool,
    ) {
        let mut diagnostic =
            Diagnostic::new(Code::E101, location, format!("cannot find {what} `{name}`"));
        if let Some(similar) = self.suggest(name, wanted) {
            diagnostic = diagnostic
                .with_label(format!("a {what} with a similar name exists: `{similar}`"))
                .with_fix(Fix {
                    title: format!("use `{similar}`"),
                    edits: vec![TextEdit {
                        file: location.file,
                        range: location.range,
                        replacement: similar,
                    }],
                });
        } else {
            diagnostic = diagnostic.with_label(format!("not a declared {what}"));
        }
        self.report(diagnostic);
    }

    fn resolve(
        &mut self,
        file: FileId,
        ident: Option<ast::Ident<'_>>,
        expect: Expect,
    ) -> Option<Symbol> {
        let ident = ident?;
        let name = ident.text(self.source(file));
        let location = Location {
            file,
            range: ident.text_range(),
        };
        let wanted = move |s: Symbol| match expect {
            Expect::Set => matches!(s, Symbol::Set(_)),
            Expect::Map => matches!(s, Symbol::Map(_)),
            Expect::Kernel => matches!(s, Symbol::Kernel(_)),
        };
        match self.program.lookup(name) {
            Some(symbol) if wanted(symbol) => Some(symbol),
            Some(symbol) => {
                let (_, declared) = self.program.symbol_name(symbol);
                self.report(
                    Diagnostic::new(
                        Code::E103,
                        location,
                        format!(
                            "expected a {}, found {} `{name}`",
                            expect.word(),
                            symbol.kind_name()
                        ),
                    )
                    .with_label(format!("not a {}", expect.word()))
                    .with_related(
                        declared,
                        format!("`{name}` is declared here as a {}", symbol.kind_name()),
                    ),
                );
                None
            }
            None => {
                self.unknown(name, location, expect.word(), wanted);
                None
            }
        }
    }

    fn resolve_set(&mut self, file: FileId, ident: Option<ast::Ident<'_>>) -> Option<SetId> {
        match self.resolve(file, ident, Expect::Set)? {
            Symbol::Set(id) => Some(id),
            _ => None,
        }
    }

    fn resolve_declarations(&mut self, items: &Items<'_>) {
        for (index, (file, decl)) in items.maps.iter().enumerate() {
            let from = self.resolve_set(*file, decl.from());
            let to = self.resolve_set(*file, decl.to());
            let name = self.program.maps[index].name.clone();
            let arity = match decl.arity() {
                Some(arity) => {
                    let value = arity
                        .value(self.source(*file))
                        .map_or(0, |v| u32::try_from(v.value).unwrap_or(u32::MAX));
                    if value == 0 {
                        self.report(
                            Diagnostic::new(
                                Code::E201,
                                Location { file: *file, range: arity.text_range() },
                                format!("map `{name}` has arity 0; every element must name at least one target"),
                            )
                            .with_label("arity 0"),
                        );
                    }
                    value.max(1)
                }
                None => 1,
            };
            let map = &mut self.program.maps[index];
            map.from = from;
            map.to = to;
            map.arity = arity;
        }
        for (index, (file, decl)) in items.dats.iter().enumerate() {
            let set = self.resolve_set(*file, decl.set());
            let name = self.program.dats[index].name.clone();
            let ty = element_type(
                decl.ty(),
                self.source(*file),
                *file,
                &name,
                self.diagnostics,
            );
            let dat = &mut self.program.dats[index];
            dat.set = set;
            dat.ty = ty.unwrap_or(PLACEHOLDER_TYPE);
        }
        for (index, (file, decl)) in items.consts.iter().enumerate() {
            let name = self.program.consts[index].name.clone();
            let ty = element_type(
                decl.ty(),
                self.source(*file),
                *file,
                &name,
                self.diagnostics,
            );
            self.program.consts[index].ty = ty.unwrap_or(PLACEHOLDER_TYPE);
        }
        for (index, (file, decl)) in items.globals.iter().enumerate() {
            let name = self.program.globals[index].name.clone();
            let ty = element_type(
                decl.ty(),
                self.source(*file),
                *file,
                &name,
                self.diagnostics,
            );
            self.program.globals[index].ty = ty.unwrap_or(PLACEHOLDER_TYPE);
        }
    }

    fn types(&self) -> (Vec<ElementType>, Vec<ElementType>) {
        (
            self.program.consts.iter().map(|c| c.ty).collect(),
            self.program.globals.iter().map(|g| g.ty).collect(),
        )
    }

    /// Lowers an initialiser's expressions in the const context.
    fn lower_initializer(
        &mut self,
        file: FileId,
        value: ast::Initializer<'_>,
        env: &Env<'_>,
    ) -> (Vec<crate::hir::Expr>, bool, Vec<ConstId>) {
        let source = self.source(file);
        let mut lowerer = Lowerer::new(source, file, env, Context::Const);
        let (exprs, is_list) = match value {
            ast::Initializer::Expr(expr) => (vec![lowerer.lower_expr(expr)], false),
            ast::Initializer::List(list) => (
                list.elements().map(|e| lowerer.lower_expr(e)).collect(),
                true,
            ),
        };
        let (_, diagnostics, used) = lowerer.finish();
        self.diagnostics.extend(diagnostics);
        for id in &used {
            if !self.program.initialiser_consts.contains(id) {
                self.program.initialiser_consts.push(*id);
            }
        }
        (exprs, is_list, used)
    }

    fn evaluate_consts(&mut self, items: &Items<'_>) -> ConstValues {
        let (const_types, global_types) = self.types();
        let names = self.program.names.clone();
        let env = Env {
            names: &names,
            const_types: &const_types,
            global_types: &global_types,
        };
        // Lower every const's value, then evaluate in dependency order.
        let mut pending: Vec<Option<PendingConst>> = Vec::new();
        for (file, decl) in &items.consts {
            match decl.value() {
                Some(value) => {
                    let range = value.text_range();
                    let (exprs, is_list, used) = self.lower_initializer(*file, value, &env);
                    pending.push(Some((*file, exprs, is_list, used, range)));
                }
                None => {
                    let name = decl
                        .name()
                        .map(|n| n.text(self.source(*file)).to_owned())
                        .unwrap_or_default();
                    let location = decl.name().map_or(
                        Location {
                            file: *file,
                            range: decl.text_range(),
                        },
                        |n| Location {
                            file: *file,
                            range: n.text_range(),
                        },
                    );
                    self.report(
                        Diagnostic::new(
                            Code::W204,
                            location,
                            format!("const `{name}` has no value here"),
                        )
                        .with_label("its value must come from the instance data"),
                    );
                    pending.push(None);
                }
            }
        }
        let count = self.program.consts.len();
        let mut values: Vec<Option<Vec<Value>>> = vec![None; count];
        let mut done: Vec<bool> = pending.iter().map(Option::is_none).collect();
        loop {
            let mut progress = false;
            for id in 0..count {
                if done[id] {
                    continue;
                }
                let Some((file, exprs, is_list, used, range)) = pending[id].clone() else {
                    continue;
                };
                if used.iter().any(|u| !done[u.index()]) {
                    continue;
                }
                done[id] = true;
                progress = true;
                let location = Location { file, range };
                let name = self.program.consts[id].name.clone();
                if let Some(missing) = used
                    .iter()
                    .find(|u| values[u.index()].is_none() && pending[u.index()].is_none())
                {
                    let other = self.program.consts[missing.index()].name.clone();
                    self.report(
                        Diagnostic::new(
                            Code::E203,
                            location,
                            format!("the value of `{name}` depends on `{other}`, which has no value before the instance data is read"),
                        )
                        .with_label("not known at compile time"),
                    );
                    continue;
                }
                let current = ConstValues::new(values.clone());
                let ty = self.program.consts[id].ty;
                if ty.dimension > 1 && !is_list {
                    self.report(
                        Diagnostic::new(
                            Code::E202,
                            location,
                            format!(
                                "`{name}` has {} components; give them as `{{a, b, …}}`",
                                ty.dimension
                            ),
                        )
                        .with_label(format!("expected {} values", ty.dimension)),
                    );
                    continue;
                }
                values[id] =
                    self.evaluate_components(&name, ty, &exprs, &current, location, is_list);
            }
            if !progress {
                break;
            }
        }
        for id in 0..count {
            if !done[id]
                && let Some((file, _, _, _, range)) = &pending[id]
            {
                let name = self.program.consts[id].name.clone();
                self.report(
                    Diagnostic::new(
                        Code::E203,
                        Location {
                            file: *file,
                            range: *range,
                        },
                        format!("the value of `{name}` depends on itself"),
                    )
                    .with_label("circular definition"),
                );
            }
        }
        for (id, value) in values.iter().enumerate() {
            self.program.consts[id].value.clone_from(value);
        }
        ConstValues::new(values)
    }

    /// Evaluates initialiser expressions to one value per component,
    /// reporting E202/E203 problems. A single expression fills every
    /// component.
    fn evaluate_components(
        &mut self,
        name: &str,
        ty: ElementType,
        exprs: &[crate::hir::Expr],
        consts: &ConstValues,
        location: Location,
        is_list: bool,
    ) -> Option<Vec<Value>> {
        if is_list && exprs.len() != ty.dimension as usize {
            self.report(
                Diagnostic::new(
                    Code::E202,
                    location,
                    format!(
                        "`{name}` has {} component{} but the initialiser gives {}",
                        ty.dimension,
                        if ty.dimension == 1 { "" } else { "s" },
                        exprs.len()
                    ),
                )
                .with_label(format!(
                    "expected {} value{}",
                    ty.dimension,
                    if ty.dimension == 1 { "" } else { "s" }
                )),
            );
            return None;
        }
        let mut components = Vec::with_capacity(ty.dimension as usize);
        for expr in exprs {
            if expr.kind == ExprKind::Error {
                return None;
            }
            let value = match consts.try_eval(expr) {
                Ok(Some(v)) => v,
                Ok(None) => {
                    self.report(
                        Diagnostic::new(
                            Code::E203,
                            Location {
                                file: location.file,
                                range: expr.range,
                            },
                            format!("the value of `{name}` is not a constant expression"),
                        )
                        .with_label("not known at compile time"),
                    );
                    return None;
                }
                Err(error) => {
                    self.report(
                        Diagnostic::new(
                            Code::E203,
                            Location {
                                file: location.file,
                                range: expr.range,
                            },
                            format!("the value of `{name}` cannot be computed: {error}"),
                        )
                        .with_label("evaluated here"),
                    );
                    return None;
                }
            };
            if !fits(value, ty.scalar) {
                self.report(
                    Diagnostic::new(
                        Code::E202,
                        Location {
                            file: location.file,
                            range: expr.range,
                        },
                        format!(
                            "the value {value} does not fit `{name}`'s type `{}`",
                            ty.scalar
                        ),
                    )
                    .with_label(format!("not a `{}` value", ty.scalar)),
                );
                return None;
            }
            components.push(value.convert(ty.scalar));
        }
        if !is_list {
            let single = components.first().copied()?;
            components = vec![single; ty.dimension as usize];
        }
        Some(components)
    }

    fn initialise_data(&mut self, items: &Items<'_>, consts: &ConstValues) {
        let (const_types, global_types) = self.types();
        let names = self.program.names.clone();
        let env = Env {
            names: &names,
            const_types: &const_types,
            global_types: &global_types,
        };
        let mut work: Vec<(bool, usize, FileId, ast::Initializer<'_>)> = Vec::new();
        for (index, (file, decl)) in items.dats.iter().enumerate() {
            if let Some(value) = decl.value() {
                work.push((true, index, *file, value));
            }
        }
        for (index, (file, decl)) in items.globals.iter().enumerate() {
            if let Some(value) = decl.value() {
                work.push((false, index, *file, value));
            }
        }
        for (is_dat, index, file, value) in work {
            let (name, ty) = if is_dat {
                (
                    self.program.dats[index].name.clone(),
                    self.program.dats[index].ty,
                )
            } else {
                (
                    self.program.globals[index].name.clone(),
                    self.program.globals[index].ty,
                )
            };
            let location = Location {
                file,
                range: value.text_range(),
            };
            // `= CONSTNAME`: the const's value, possibly from instance data.
            let mut init = None;
            if let ast::Initializer::Expr(ast::Expr::Ident(ident)) = value {
                let const_name = ident.text(self.source(file));
                if let Some(Symbol::Const(id)) = self.program.lookup(const_name) {
                    if !self.program.initialiser_consts.contains(&id) {
                        self.program.initialiser_consts.push(id);
                    }
                    let const_ty = self.program.consts[id.index()].ty;
                    if const_ty != ty {
                        self.report(
                            Diagnostic::new(
                                Code::E202,
                                location,
                                format!(
                                    "`{name}` is `{ty}` but const `{const_name}` is `{const_ty}`"
                                ),
                            )
                            .with_label(format!("expected a `{ty}` value"))
                            .with_related(
                                self.program.consts[id.index()].location,
                                format!("`{const_name}` is declared here"),
                            ),
                        );
                        continue;
                    }
                    // Kept as a link: instance data that gives the const
                    // gives this initial value too.
                    init = Some(InitialValue::FromConst(id));
                }
            }
            let init = match init {
                Some(init) => init,
                None => {
                    let (exprs, is_list, _) = self.lower_initializer(file, value, &env);
                    match self.evaluate_components(&name, ty, &exprs, consts, location, is_list) {
                        Some(values) => InitialValue::Components(values),
                        None => continue,
                    }
                }
            };
            if is_dat {
                self.program.dats[index].init = init;
            } else {
                self.program.globals[index].init = init;
            }
        }
    }

    /// What kernels can see of the declarations, hashed: a kernel's lowering
    /// is reused only while this and its own text are unchanged.
    fn environment_fingerprint(&self, consts: &ConstValues) -> u64 {
        let mut hasher = FxHasher::default();
        let mut names: Vec<(&String, &Symbol)> = self.program.names.iter().collect();
        names.sort();
        for (name, symbol) in names {
            name.hash(&mut hasher);
            symbol.kind_name().hash(&mut hasher);
            if let Symbol::Const(id) = symbol {
                let c = &self.program.consts[id.index()];
                c.ty.hash(&mut hasher);
                c.name.hash(&mut hasher);
                if let Some(values) = consts.get(*id) {
                    for v in values {
                        format!("{v:?}").hash(&mut hasher);
                    }
                }
            }
        }
        hasher.finish()
    }

    fn lower_kernels(&mut self, items: &Items<'_>, consts: &ConstValues, cache: &mut Cache) {
        let (const_types, global_types) = self.types();
        let names = self.program.names.clone();
        let env = Env {
            names: &names,
            const_types: &const_types,
            global_types: &global_types,
        };
        let fingerprint = self.environment_fingerprint(consts);
        let mut fresh: FxHashMap<u64, CachedKernel> = FxHashMap::default();
        for (index, (file, decl)) in items.kernels.iter().enumerate() {
            let source = self.source(*file);
            let text = decl.text(source);
            let start = decl.text_range().start;
            let mut hasher = FxHasher::default();
            text.hash(&mut hasher);
            fingerprint.hash(&mut hasher);
            file.hash(&mut hasher);
            let key = hasher.finish();
            let entry = match cache.kernels.remove(&key).or_else(|| fresh.remove(&key)) {
                Some(mut cached) => {
                    cache.kernel_hits += 1;
                    if cached.start != start || cached.file != *file {
                        let delta = i64::from(start) - i64::from(cached.start);
                        cached.shift(delta);
                        cached.start = start;
                        cached.file = *file;
                    }
                    cached
                }
                None => {
                    cache.kernel_misses += 1;
                    lower_kernel(*file, source, *decl, &env, consts, start)
                }
            };
            self.diagnostics.extend(entry.diagnostics.iter().cloned());
            let kernel = &mut self.program.kernels[index];
            kernel.params.clone_from(&entry.params);
            kernel.body = Arc::clone(&entry.body);
            kernel.summary = Arc::clone(&entry.summary);
            kernel.consts_used.clone_from(&entry.consts_used);
            fresh.insert(key, entry);
        }
        // Keep exactly the kernels of this analysis.
        cache.kernels = fresh;
    }

    fn lower_main(&mut self, items: &Items<'f>, options: &Options) -> Vec<InvocationSyntax> {
        let (const_types, global_types) = self.types();
        let names = self.program.names.clone();
        let env = Env {
            names: &names,
            const_types: &const_types,
            global_types: &global_types,
        };
        let mut syntax = Vec::new();
        let Some(&(first_file, first)) = items.mains.first() else {
            if options.require_main {
                self.report(
                    Diagnostic::new(
                        Code::E603,
                        Location {
                            file: FileId::MAIN,
                            range: TextRange::empty(0),
                        },
                        "no `main` in this program or its imports",
                    )
                    .with_label("a program built into a graph needs `main { … }`"),
                );
            }
            return syntax;
        };
        let first_keyword = first
            .node()
            .child(0)
            .map_or(first.text_range(), |k| k.text_range());
        for (file, extra) in items.mains.iter().skip(1) {
            let keyword = extra
                .node()
                .child(0)
                .map_or(extra.text_range(), |k| k.text_range());
            self.report(
                Diagnostic::new(
                    Code::E603,
                    Location {
                        file: *file,
                        range: keyword,
                    },
                    "more than one `main`",
                )
                .with_label("second `main`")
                .with_related(
                    Location {
                        file: first_file,
                        range: first_keyword,
                    },
                    "first `main` here",
                ),
            );
        }
        let mut par_loops: Vec<(FileId, ast::ParLoopStmt<'f>)> = Vec::new();
        for (index, (file, main)) in items.mains.iter().enumerate() {
            let source = self.source(*file);
            let mut register = |par_loop: ast::ParLoopStmt<'f>| -> Option<InvocationId> {
                if index > 0 {
                    return None;
                }
                par_loops.push((*file, par_loop));
                Some(InvocationId(len_u32(&par_loops) - 1))
            };
            let mut lowerer =
                Lowerer::new(source, *file, &env, Context::Main).with_par_loops(&mut register);
            if let Some(body) = main.body() {
                lowerer.lower_block_into_body(body);
            }
            let (body, diagnostics, _) = lowerer.finish();
            self.diagnostics.extend(diagnostics);
            if index == 0 {
                self.program.main = Some(Arc::new(body));
                self.program.main_location = Some(Location {
                    file: *file,
                    range: first_keyword,
                });
            }
        }
        for (file, par_loop) in par_loops {
            let (invocation, positions) = self.resolve_invocation(file, par_loop);
            self.program.invocations.push(invocation);
            syntax.push(positions);
        }
        syntax
    }

    fn resolve_invocation(
        &mut self,
        file: FileId,
        par_loop: ast::ParLoopStmt<'_>,
    ) -> (Invocation, InvocationSyntax) {
        let source = self.source(file);
        let at = |range: TextRange| Location { file, range };
        let kernel = match self.resolve(file, par_loop.kernel(), Expect::Kernel) {
            Some(Symbol::Kernel(id)) => Some(id),
            _ => None,
        };
        let set = self.resolve_set(file, par_loop.set());
        let kernel_location = at(par_loop
            .kernel()
            .map_or(par_loop.text_range(), |k| k.text_range()));
        let alias = par_loop
            .alias()
            .map(|a| (a.text(source).to_owned(), at(a.text_range())));
        let args = par_loop
            .arguments()
            .map(|argument| self.resolve_argument(file, argument, set))
            .collect();
        let arguments = at(par_loop
            .argument_list()
            .map_or(par_loop.text_range(), |a| a.text_range()));
        let invocation = Invocation {
            name: alias.as_ref().map(|(n, _)| n.clone()).unwrap_or_default(),
            named_explicitly: alias.is_some(),
            location: at(par_loop.text_range()),
            name_location: alias.as_ref().map_or(kernel_location, |(_, l)| *l),
            kernel,
            set,
            args,
        };
        let positions = InvocationSyntax {
            kernel: kernel_location,
            alias: alias.map(|(_, l)| l),
            arguments,
        };
        (invocation, positions)
    }

    /// Resolves one argument and checks what concerns it alone: names,
    /// sets, maps, indices and modes (E101, E103, E302–E305, E308–E310).
    fn resolve_argument(
        &mut self,
        file: FileId,
        argument: ast::ParLoopArg<'_>,
        iteration: Option<SetId>,
    ) -> Option<Arg> {
        let source = self.source(file);
        let at = |range: TextRange| Location { file, range };
        let location = at(argument.text_range());
        let mode_node = argument.mode();
        let mode_location = mode_node.map(|m| at(m.text_range()));
        let written_mode = mode_node.and_then(|m| m.mode(source));
        let map_part = argument.map().map(|m| (m, argument.index()));
        let (kind, ty, name) = match argument.data()? {
            ArgData::Len(len) => {
                let set = self.resolve_set(file, len.set())?;
                (
                    ArgKind::Len(set),
                    ElementType {
                        scalar: ScalarType::Int,
                        dimension: 1,
                    },
                    format!("len({})", self.program.sets[set.index()].name),
                )
            }
            ArgData::Name(ident) => {
                let name = ident.text(source).to_owned();
                // Named, so used, even if the argument turns out wrong.
                if let Some(symbol) = self.program.lookup(&name) {
                    self.program.referenced.insert(symbol);
                }
                if let Some(Symbol::Map(map)) =
                    map_part.and_then(|(m, _)| self.program.lookup(m.text(source)))
                {
                    self.program.referenced.insert(Symbol::Map(map));
                }
                match self.program.lookup(&name) {
                    Some(Symbol::Dat(dat)) => {
                        let ty = self.program.dats[dat.index()].ty;
                        let kind = match map_part {
                            None => ArgKind::DirectDat(dat),
                            Some((map, index)) => {
                                self.resolve_indirect(file, dat, map, index, iteration, location)?
                            }
                        };
                        if let (ArgKind::DirectDat(_), Some(iteration), Some(dat_set)) =
                            (kind, iteration, self.program.dats[dat.index()].set)
                            && iteration != dat_set
                        {
                            let set_name = self.program.sets[dat_set.index()].name.clone();
                            let iteration_name = self.program.sets[iteration.index()].name.clone();
                            self.report(
                                    Diagnostic::new(
                                        Code::E302,
                                        location,
                                        format!("dat `{name}` lives on `{set_name}` but the par_loop iterates over `{iteration_name}`"),
                                    )
                                    .with_label(format!("a direct argument must live on `{iteration_name}`; reach `{set_name}` through a map"))
                                    .with_related(self.program.dats[dat.index()].location, format!("`{name}` is declared on `{set_name}` here")),
                                );
                            return None;
                        }
                        (kind, ty, name)
                    }
                    Some(Symbol::Global(global)) => {
                        let ty = self.program.globals[global.index()].ty;
                        (ArgKind::Global(global), ty, name)
                    }
                    Some(Symbol::Const(id)) => {
                        let ty = self.program.consts[id.index()].ty;
                        (ArgKind::Const(id), ty, name)
                    }
                    Some(other) => {
                        let (_, declared) = self.program.symbol_name(other);
                        self.report(
                            Diagnostic::new(
                                Code::E103,
                                at(ident.text_range()),
                                format!(
                                    "expected a dat, global or const, found {} `{name}`",
                                    other.kind_name()
                                ),
                            )
                            .with_label("cannot be passed to a kernel")
                            .with_related(
                                declared,
                                format!("`{name}` is declared here as a {}", other.kind_name()),
                            ),
                        );
                        return None;
                    }
                    None => {
                        self.unknown(&name, at(ident.text_range()), "dat, global or const", |s| {
                            matches!(s, Symbol::Dat(_) | Symbol::Global(_) | Symbol::Const(_))
                        });
                        return None;
                    }
                }
            }
        };
        if !matches!(kind, ArgKind::IndirectDat { .. } | ArgKind::DirectDat(_))
            && let Some((map, _)) = map_part
        {
            let what = match kind {
                ArgKind::Global(_) => format!("the global `{name}`"),
                ArgKind::Const(_) => format!("the const `{name}`"),
                _ => format!("`{name}`"),
            };
            self.report(
                Diagnostic::new(
                    Code::E310,
                    location,
                    format!("a map cannot be applied to {what}"),
                )
                .with_label("only dats live on set elements")
                .with_related(at(map.text_range()), "map applied here"),
            );
            return None;
        }
        let mode = match (written_mode, kind) {
            (Some(mode), _) => mode,
            (None, ArgKind::Const(_) | ArgKind::Len(_)) => AccessMode::Read,
            (None, _) => {
                let what = if matches!(kind, ArgKind::Global(_)) {
                    "global"
                } else {
                    "dat"
                };
                self.report(
                    Diagnostic::new(
                        Code::E308,
                        location,
                        format!("the {what} argument `{name}` needs an access mode"),
                    )
                    .with_label("add `READ`, `WRITE`, `RW`, `INC`, `MIN` or `MAX`"),
                );
                return None;
            }
        };
        let allowed: &[AccessMode] = match kind {
            ArgKind::DirectDat(_) | ArgKind::IndirectDat { .. } => &[
                AccessMode::Read,
                AccessMode::Write,
                AccessMode::Rw,
                AccessMode::Inc,
            ],
            ArgKind::Global(_) => &[
                AccessMode::Read,
                AccessMode::Inc,
                AccessMode::Min,
                AccessMode::Max,
            ],
            ArgKind::Const(_) | ArgKind::Len(_) => &[AccessMode::Read],
        };
        if !allowed.contains(&mode) {
            let kind_word = match kind {
                ArgKind::DirectDat(_) => "a direct dat",
                ArgKind::IndirectDat { .. } => "an indirect dat",
                ArgKind::Global(_) => "a global",
                ArgKind::Const(_) => "a const",
                ArgKind::Len(_) => "`len(…)`",
            };
            let why = match (kind, mode) {
                (ArgKind::Global(_), AccessMode::Write | AccessMode::Rw) => {
                    "every element would write the one global at once, a race; reduce it with `INC`, `MIN` or `MAX`"
                }
                (
                    ArgKind::DirectDat(_) | ArgKind::IndirectDat { .. },
                    AccessMode::Min | AccessMode::Max,
                ) => "`MIN` and `MAX` reduce globals; a dat has one value per element",
                _ => "it is read-only",
            };
            let allowed_list: Vec<String> = allowed.iter().map(|m| format!("`{m}`")).collect();
            let mut diagnostic = Diagnostic::new(
                Code::E308,
                location,
                format!("`{mode}` is not allowed for {kind_word} (`{name}`)"),
            )
            .with_label(format!("{kind_word} takes {}", allowed_list.join(", ")))
            .with_related(location, why);
            if let (ArgKind::Const(_) | ArgKind::Len(_), Some(mode_location)) =
                (kind, mode_location)
            {
                diagnostic = diagnostic.with_fix(Fix {
                    title: "use `READ`".into(),
                    edits: vec![TextEdit {
                        file,
                        range: mode_location.range,
                        replacement: "READ".into(),
                    }],
                });
            }
            self.report(diagnostic);
            return None;
        }
        if mode.is_reduction() && ty.scalar == ScalarType::Bool {
            self.report(
                Diagnostic::new(
                    Code::E309,
                    location,
                    format!("cannot reduce the `bool` `{name}` with `{mode}`"),
                )
                .with_label("a reduction needs a numeric type"),
            );
            return None;
        }
        Some(Arg {
            kind,
            mode,
            location,
            mode_location,
            ty,
        })
    }

    fn resolve_indirect(
        &mut self,
        file: FileId,
        dat: DatId,
        map: ast::Ident<'_>,
        index: Option<ast::IntLit<'_>>,
        iteration: Option<SetId>,
        argument: Location,
    ) -> Option<ArgKind> {
        let source = self.source(file);
        let map_id = match self.resolve(file, Some(map), Expect::Map)? {
            Symbol::Map(id) => id,
            _ => return None,
        };
        let map_decl = self.program.maps[map_id.index()].clone();
        let map_name = map_decl.name.clone();
        if let (Some(iteration), Some(from)) = (iteration, map_decl.from)
            && iteration != from
        {
            let from_name = self.program.sets[from.index()].name.clone();
            let iteration_name = self.program.sets[iteration.index()].name.clone();
            self.report(
                    Diagnostic::new(
                        Code::E303,
                        argument,
                        format!("map `{map_name}` starts at `{from_name}` but the par_loop iterates over `{iteration_name}`"),
                    )
                    .with_label(format!("expected a map from `{iteration_name}`"))
                    .with_related(map_decl.location, format!("`{map_name}` is declared here")),
                );
            return None;
        }
        let dat_decl = self.program.dats[dat.index()].clone();
        if let (Some(to), Some(dat_set)) = (map_decl.to, dat_decl.set)
            && to != dat_set
        {
            let to_name = self.program.sets[to.index()].name.clone();
            let dat_set_name = self.program.sets[dat_set.index()].name.clone();
            self.report(
                    Diagnostic::new(
                        Code::E304,
                        argument,
                        format!("map `{map_name}` ends at `{to_name}` but dat `{}` lives on `{dat_set_name}`", dat_decl.name),
                    )
                    .with_label(format!("expected a map to `{dat_set_name}`"))
                    .with_related(map_decl.location, format!("`{map_name}` is declared here")),
                );
            return None;
        }
        let index_node = index?;
        let value = index_node.value(source).map_or(u64::MAX, |v| v.value);
        if value >= u64::from(map_decl.arity) {
            self.report(
                Diagnostic::new(
                    Code::E305,
                    argument,
                    format!(
                        "index {value} is out of range for map `{map_name}` of arity {}",
                        map_decl.arity
                    ),
                )
                .with_label(format!("expected 0 to {}", map_decl.arity - 1))
                .with_related(map_decl.location, format!("`{map_name}` is declared here")),
            );
            return None;
        }
        Some(ArgKind::IndirectDat {
            dat,
            map: map_id,
            index: u32::try_from(value).unwrap_or(u32::MAX),
        })
    }
}

/// Lowers a kernel and summarises it.
fn lower_kernel(
    file: FileId,
    source: &str,
    decl: ast::KernelDef<'_>,
    env: &Env<'_>,
    consts: &ConstValues,
    start: u32,
) -> CachedKernel {
    let mut diagnostics = op2_syntax::unsupported_in(decl.node(), source, file);
    let mut params: Vec<Param> = Vec::new();
    for param in decl.parameters() {
        let (Some(name), Some(ty)) = (param.name(), param.ty().and_then(|t| t.scalar(source)))
        else {
            continue;
        };
        let name_text = name.text(source).to_owned();
        let dimension = param.dimension().map(|d| {
            let value = d
                .value(source)
                .map_or(0, |v| u32::try_from(v.value).unwrap_or(u32::MAX));
            if value == 0 {
                diagnostics.push(
                    Diagnostic::new(
                        Code::E201,
                        Location {
                            file,
                            range: d.text_range(),
                        },
                        format!("parameter `{name_text}` has dimension 0"),
                    )
                    .with_label("a dimension must be at least 1"),
                );
            }
            value.max(1)
        });
        if let Some(previous) = params.iter().find(|p| p.name == name_text) {
            diagnostics.push(
                Diagnostic::new(
                    Code::E102,
                    Location {
                        file,
                        range: name.text_range(),
                    },
                    format!("parameter `{name_text}` is declared twice"),
                )
                .with_related(previous.name_location, "first declared here"),
            );
        }
        params.push(Param {
            name: name_text,
            location: Location {
                file,
                range: param.text_range(),
            },
            name_location: Location {
                file,
                range: name.text_range(),
            },
            ty,
            dimension,
            is_const: param.const_qualifier().is_some(),
        });
    }
    let mut lowerer = Lowerer::new(source, file, env, Context::Kernel { params: &params });
    if let Some(body) = decl.body() {
        lowerer.lower_block_into_body(body);
    }
    let (body, lowering_diagnostics, consts_used) = lowerer.finish();
    diagnostics.extend(lowering_diagnostics);
    let summary = summarise(&body, params.len(), consts);
    CachedKernel {
        start,
        file,
        params,
        body: Arc::new(body),
        summary: Arc::new(summary),
        diagnostics,
        consts_used,
    }
}

impl CachedKernel {
    fn shift(&mut self, delta: i64) {
        for param in &mut self.params {
            param.location.range.shift(delta);
            param.name_location.range.shift(delta);
        }
        let mut body = (*self.body).clone();
        body.shift(delta);
        self.body = Arc::new(body);
        let mut summary = (*self.summary).clone();
        summary.shift(delta);
        self.summary = Arc::new(summary);
        for diagnostic in &mut self.diagnostics {
            diagnostic.shift(delta);
        }
    }
}
