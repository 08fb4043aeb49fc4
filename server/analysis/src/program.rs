//! Building the semantic model: loading imports, declaring and resolving
//! top-level items, evaluating consts, lowering kernels and `main` (reusing
//! what the [`Cache`] holds for items that did not change), and resolving
//! every par_loop.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use op2_syntax::ast::{self, Item, NodeText, ScalarType};
use op2_syntax::{Code, Diagnostic, FileId, Fix, Location, Parse, TextEdit, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::cache::{
    Cache, ItemEntry, ItemKey, LoweredKernel, LoweredMain, Moving, Placed, Seen, Visible,
};
use crate::consts::{ConstValues, fits};
use crate::hir::{Body, ExprKind};
use crate::invocation::{InvocationSyntax, ParLoopSyntax, Written};
use crate::kernel::{KernelSummary, summarise};
use crate::lower::{Context, Env, Lowered, Lowerer, MAX_DIMENSION, WrittenSize, element_type};
use crate::model::{
    Const, ConstId, Dat, DatId, ElementType, File, Global, GlobalId, InitialValue, InvocationId,
    Kernel, KernelId, Map, MapId, Param, Program, Set, SetId, Symbol,
};
use crate::suggest::{Names, Search};
use crate::value::Value;
use crate::{Cancelled, Loader, Options};

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

/// Builds the model of the program whose root file is `root`, asking
/// `cancelled` between items and phases whether to stop.
pub(crate) fn build(
    root_path: &Path,
    root: &Parse,
    loader: &dyn Loader,
    options: &Options,
    cache: &mut Cache,
    cancelled: &dyn Fn() -> bool,
) -> Result<Built, Cancelled> {
    let check = || if cancelled() { Err(Cancelled) } else { Ok(()) };
    cache.begin();
    let mut builder = Builder {
        diagnostics: Vec::new(),
        files: Vec::new(),
        root_items: root.root().items().collect(),
    };
    builder.load_files(root_path, root, loader, cache);
    check()?;
    let files: Vec<(PathBuf, &Parse)> = builder
        .files
        .iter()
        .map(|(path, parse)| (path.clone(), parse.get()))
        .collect();
    let mut diagnostics = std::mem::take(&mut builder.diagnostics);
    let mut root_items = Some(std::mem::take(&mut builder.root_items));
    let file_items: Vec<Vec<Item<'_>>> = files
        .iter()
        .map(|(_, parse)| match root_items.take() {
            Some(items) => items,
            None => parse.root().items().collect(),
        })
        .collect();
    let keys = syntax_errors(&files, &file_items, cache, &mut diagnostics, &check)?;
    let mut program = Program::default();
    for (path, parse) in &files {
        program.files.push(File {
            path: path.clone(),
            text: Arc::from(parse.text()),
        });
    }
    let mut items = Items::default();
    // Most items declare a name.
    program.names.reserve(file_items.iter().map(Vec::len).sum());
    let mut declarer = Declarer {
        program: &mut program,
        diagnostics: &mut diagnostics,
        items: &mut items,
        placeholder: (Arc::default(), Arc::default()),
    };
    for (id, (_, parse)) in files.iter().enumerate() {
        declarer.declare(file_id(id), parse.text(), &file_items[id], &keys[id]);
    }
    check()?;
    // The names are lent to the resolver and the lowerings, then returned.
    let names = std::mem::take(&mut program.names);
    let mut resolver = Resolver {
        program: &mut program,
        diagnostics: &mut diagnostics,
        files: &files,
        names: &names,
        suggestions: FxHashMap::default(),
    };
    resolver.resolve_declarations(&items);
    let const_types: Vec<ElementType> = resolver.program.consts.iter().map(|c| c.ty).collect();
    let global_types: Vec<ElementType> = resolver.program.globals.iter().map(|g| g.ty).collect();
    let env = Env::new(&names, &const_types, &global_types);
    let const_values = resolver.evaluate_consts(&items, &env);
    resolver.initialise_data(&items, &const_values, &env);
    check()?;
    let visible = Visible {
        env: &env,
        consts: &const_values,
        listed: Visible::listed_hash(
            resolver
                .program
                .consts
                .iter()
                .map(|c| c.name.as_str())
                .chain(resolver.program.globals.iter().map(|g| g.name.as_str())),
        ),
    };
    resolver.lower_kernels(&items, &visible, cache, &check)?;
    let invocation_syntax = resolver.lower_main(&items, options, &visible, cache, &check)?;
    program.names = names;
    cache.end();
    Ok(Built {
        program,
        diagnostics,
        const_values,
        invocation_syntax,
    })
}

/// Reports what the parser could not read and the unsupported C of every
/// item but kernels (theirs is reported when the kernel is lowered), and
/// returns the cache key of every item.
fn syntax_errors(
    files: &[(PathBuf, &Parse)],
    file_items: &[Vec<Item<'_>>],
    cache: &mut Cache,
    diagnostics: &mut Vec<Diagnostic>,
    check: &dyn Fn() -> Result<(), Cancelled>,
) -> Result<Vec<Vec<Option<ItemKey>>>, Cancelled> {
    let mut keys = Vec::with_capacity(files.len());
    for (id, ((_, parse), items)) in files.iter().zip(file_items).enumerate() {
        let file = file_id(id);
        let source = parse.text();
        diagnostics.extend(parse.unparsed_errors(file));
        let mut file_keys = Vec::with_capacity(items.len());
        for item in items {
            let key = cache.reserve(file, item.node(), source);
            if !matches!(item, Item::Kernel(_)) {
                let mut scratch = ItemEntry::default();
                let entry = cache.entry(key, &mut scratch);
                diagnostics.extend_from_slice(entry.unsupported(item.node(), parse, file));
            }
            file_keys.push(key);
        }
        keys.push(file_keys);
        check()?;
    }
    Ok(keys)
}

fn file_id(index: usize) -> FileId {
    FileId(u32::try_from(index).unwrap_or(u32::MAX))
}

struct Builder<'a> {
    diagnostics: Vec<Diagnostic>,
    files: Vec<(PathBuf, FileParse<'a>)>,
    /// The items of the root file, walked once for imports and for the rest.
    root_items: Vec<Item<'a>>,
}

/// Normalises `a/./b/../c` lexically, so that one file imported along two
/// paths is one file.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            // `..` removes the last name, but not a `..` already there
            // (`../..` stays) and not the root (`/..` is `/`).
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
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
            let walked: Vec<Item<'_>>;
            let items = if file == 0 {
                &self.root_items
            } else {
                walked = parse.root().items().collect();
                &walked
            };
            items
                .iter()
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
    kernels: Vec<(FileId, ast::KernelDef<'t>, Option<ItemKey>)>,
    mains: Vec<(FileId, ast::MainDef<'t>, Option<ItemKey>)>,
}

struct Declarer<'p, 't> {
    program: &'p mut Program,
    diagnostics: &'p mut Vec<Diagnostic>,
    items: &'p mut Items<'t>,
    /// What a kernel holds until it is lowered.
    placeholder: (Arc<Body>, Arc<KernelSummary>),
}

const PLACEHOLDER_TYPE: ElementType = ElementType {
    scalar: ScalarType::Double,
    dimension: 1,
};

impl<'t> Declarer<'_, 't> {
    /// Declares `items`, the items of `file`, whose cache keys are `keys`.
    fn declare(
        &mut self,
        file: FileId,
        source: &str,
        items: &[Item<'t>],
        keys: &[Option<ItemKey>],
    ) {
        for (&item, key) in items.iter().zip(keys.iter().copied()) {
            let name_node = match item {
                Item::Set(d) => d.name(),
                Item::Map(d) => d.name(),
                Item::Dat(d) => d.name(),
                Item::Const(d) => d.name(),
                Item::Global(d) => d.name(),
                Item::Kernel(d) => d.name(),
                Item::Main(main) => {
                    self.items.mains.push((file, main, key));
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
                        body: Arc::clone(&self.placeholder.0),
                        summary: Arc::clone(&self.placeholder.1),
                        consts_used: Vec::new(),
                    });
                    self.items.kernels.push((file, decl, key));
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
pub(crate) enum Expect {
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

/// Resolves names against the declarations. The top-level names are lent
/// to it (`names`): `program.names` is empty until it is done.
pub(crate) struct Resolver<'p, 'f> {
    pub(crate) program: &'p mut Program,
    diagnostics: &'p mut Vec<Diagnostic>,
    files: &'f [(PathBuf, &'f Parse)],
    names: &'f FxHashMap<String, Symbol>,
    /// The names of each kind a suggestion picks from (keyed by what the
    /// diagnostic calls them), indexed at the first unknown name of that kind.
    suggestions: FxHashMap<&'static str, Names>,
}

impl<'f> Resolver<'_, 'f> {
    fn source(&self, file: FileId) -> &'f str {
        self.files[file.0 as usize].1.text()
    }

    pub(crate) fn report(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    /// The symbol named `name`.
    pub(crate) fn lookup(&self, name: &str) -> Option<Symbol> {
        self.names.get(name).copied()
    }

    /// A close existing name of the wanted kind, for "did you mean".
    fn suggest(
        &mut self,
        name: &str,
        what: &'static str,
        wanted: impl Fn(Symbol) -> bool,
    ) -> Option<String> {
        let names = self.names;
        let index = self.suggestions.entry(what).or_insert_with(|| {
            Names::new(
                names
                    .iter()
                    .filter(|(_, s)| wanted(**s))
                    .map(|(n, _)| n.as_str()),
            )
        });
        let mut search = Search::new(name);
        search.in_index(index);
        search.best().map(str::to_owned)
    }

    pub(crate) fn unknown(
        &mut self,
        name: &str,
        location: Location,
        what: &'static str,
        wanted: impl Fn(Symbol) -> bool,
    ) {
        let mut diagnostic =
            Diagnostic::new(Code::E101, location, format!("cannot find {what} `{name}`"));
        if let Some(similar) = self.suggest(name, what, wanted) {
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

    pub(crate) fn resolve(
        &mut self,
        file: FileId,
        ident: Option<&Written>,
        expect: Expect,
    ) -> Option<Symbol> {
        let ident = ident?;
        let name = &*ident.text;
        let location = Location {
            file,
            range: ident.range,
        };
        let wanted = move |s: Symbol| match expect {
            Expect::Set => matches!(s, Symbol::Set(_)),
            Expect::Map => matches!(s, Symbol::Map(_)),
            Expect::Kernel => matches!(s, Symbol::Kernel(_)),
        };
        match self.lookup(name) {
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

    pub(crate) fn resolve_set(&mut self, file: FileId, ident: Option<&Written>) -> Option<SetId> {
        match self.resolve(file, ident, Expect::Set)? {
            Symbol::Set(id) => Some(id),
            _ => None,
        }
    }

    fn resolve_declarations(&mut self, items: &Items<'_>) {
        for (index, (file, decl)) in items.maps.iter().enumerate() {
            let source = self.source(*file);
            let written = |ident: Option<ast::Ident<'_>>| ident.map(|i| Written::read(i, source));
            let from = self.resolve_set(*file, written(decl.from()).as_ref());
            let to = self.resolve_set(*file, written(decl.to()).as_ref());
            let name = self.program.maps[index].name.clone();
            let arity = match decl.arity() {
                Some(arity) => {
                    let size = WrittenSize::read(&arity, self.source(*file));
                    let location = Location {
                        file: *file,
                        range: arity.text_range(),
                    };
                    let text = arity.text(self.source(*file)).to_owned();
                    if let Some(diagnostic) = size.diagnostic(
                        location,
                        (
                            format!("map `{name}` has arity 0; every element must name at least one target"),
                            "arity 0",
                        ),
                        || format!("map `{name}` has arity {text}; an arity may be at most {MAX_DIMENSION}"),
                    ) {
                        self.report(diagnostic);
                    }
                    size.or_one()
                }
                None => 1,
            };
            let map = &mut self.program.maps[index];
            map.from = from;
            map.to = to;
            map.arity = arity;
        }
        for (index, (file, decl)) in items.dats.iter().enumerate() {
            let set = decl.set().map(|i| Written::read(i, self.source(*file)));
            let set = self.resolve_set(*file, set.as_ref());
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
        let lowered = lowerer.finish();
        let used = lowered.consts_used;
        self.diagnostics.extend(lowered.diagnostics);
        for id in &used {
            if !self.program.initialiser_consts.contains(id) {
                self.program.initialiser_consts.push(*id);
            }
        }
        (exprs, is_list, used)
    }

    fn evaluate_consts(&mut self, items: &Items<'_>, env: &Env<'_>) -> ConstValues {
        // Lower every const's value, then evaluate in dependency order.
        let mut pending: Vec<Option<PendingConst>> = Vec::new();
        for (file, decl) in &items.consts {
            match decl.value() {
                Some(value) => {
                    let range = value.text_range();
                    let (exprs, is_list, used) = self.lower_initializer(*file, value, env);
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
        // In dependency order (Kahn's algorithm: each const once, when the
        // last const it uses is done), evaluated against one table of the
        // values so far, so that a program of N consts costs O(N) steps
        // whatever order they are declared in.
        let count = self.program.consts.len();
        let mut current = ConstValues::new(vec![None; count]);
        let mut done: Vec<bool> = pending.iter().map(Option::is_none).collect();
        let mut waiting = vec![0usize; count];
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (id, entry) in pending.iter().enumerate() {
            if let Some((_, _, _, used, _)) = entry {
                for u in used.iter().filter(|u| !done[u.index()]) {
                    waiting[id] += 1;
                    users[u.index()].push(id);
                }
            }
        }
        let mut ready: std::collections::VecDeque<usize> = (0..count)
            .filter(|id| !done[*id] && waiting[*id] == 0)
            .collect();
        while let Some(id) = ready.pop_front() {
            done[id] = true;
            for user in std::mem::take(&mut users[id]) {
                waiting[user] -= 1;
                if waiting[user] == 0 {
                    ready.push_back(user);
                }
            }
            let Some((file, exprs, is_list, used, range)) = &pending[id] else {
                continue;
            };
            let location = Location {
                file: *file,
                range: *range,
            };
            let name = self.program.consts[id].name.clone();
            if let Some(missing) = used
                .iter()
                .find(|u| current.get(**u).is_none() && pending[u.index()].is_none())
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
            let value = self.evaluate_components(&name, ty, exprs, &current, location, *is_list);
            current.set(ConstId(u32::try_from(id).unwrap_or(u32::MAX)), value);
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
        for (id, constant) in self.program.consts.iter_mut().enumerate() {
            constant.value = current
                .get(ConstId(u32::try_from(id).unwrap_or(u32::MAX)))
                .map(<[Value]>::to_vec);
        }
        current
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

    fn initialise_data(&mut self, items: &Items<'_>, consts: &ConstValues, env: &Env<'_>) {
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
                if let Some(Symbol::Const(id)) = self.lookup(const_name) {
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
                    let (exprs, is_list, _) = self.lower_initializer(file, value, env);
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

    /// Lowers every kernel, reusing the cached lowering of each whose text
    /// and lookups are unchanged.
    fn lower_kernels(
        &mut self,
        items: &Items<'_>,
        visible: &Visible<'_>,
        cache: &mut Cache,
        check: &dyn Fn() -> Result<(), Cancelled>,
    ) -> Result<(), Cancelled> {
        for (index, (file, decl, key)) in items.kernels.iter().enumerate() {
            check()?;
            let source = self.source(*file);
            let start = decl.text_range().start;
            let mut scratch = ItemEntry::default();
            let entry = cache.entry(*key, &mut scratch);
            let reused = entry
                .kernel
                .as_ref()
                .is_some_and(|kernel| kernel.peek().seen.holds(visible));
            if !reused {
                let lowered = lower_kernel(*file, source, *decl, visible);
                entry.kernel = Some(Placed::new(start, lowered));
            }
            self.diagnostics.extend_from_slice(entry.unsupported(
                decl.node(),
                self.files[file.0 as usize].1,
                *file,
            ));
            if let Some(lowered) = entry.kernel.as_mut().map(|kernel| kernel.at(start)) {
                self.diagnostics.extend_from_slice(&lowered.diagnostics);
                let kernel = &mut self.program.kernels[index];
                kernel.params.clone_from(&lowered.params);
                kernel.body = Arc::clone(lowered.body.get());
                kernel.summary = Arc::clone(lowered.summary.get());
                kernel.consts_used.clone_from(&lowered.consts_used);
            }
            if reused {
                cache.kernel_hits += 1;
            } else {
                cache.kernel_misses += 1;
            }
        }
        Ok(())
    }

    /// Lowers `main` (reused like a kernel) and resolves its par_loops.
    fn lower_main(
        &mut self,
        items: &Items<'_>,
        options: &Options,
        visible: &Visible<'_>,
        cache: &mut Cache,
        check: &dyn Fn() -> Result<(), Cancelled>,
    ) -> Result<Vec<InvocationSyntax>, Cancelled> {
        let mut syntax = Vec::new();
        let Some(&(first_file, first, first_key)) = items.mains.first() else {
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
            return Ok(syntax);
        };
        let first_keyword = first
            .node()
            .child(0)
            .map_or(first.text_range(), |k| k.text_range());
        for (file, extra, _) in items.mains.iter().skip(1) {
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
        // The program's `main` is not cached when it has a syntax error: it
        // lives here until its par_loops are resolved.
        let mut first_scratch = ItemEntry::default();
        for (index, (file, main, key)) in items.mains.iter().enumerate() {
            check()?;
            let is_first = index == 0;
            let source = self.source(*file);
            let start = main.text_range().start;
            let mut scratch = ItemEntry::default();
            let entry = cache.entry(
                *key,
                if is_first {
                    &mut first_scratch
                } else {
                    &mut scratch
                },
            );
            let reused = entry.main.as_ref().is_some_and(|lowered| {
                lowered.peek().first == is_first && lowered.peek().seen.holds(visible)
            });
            if !reused {
                let lowered = lower_main(*file, source, *main, is_first, visible);
                entry.main = Some(Placed::new(start, lowered));
            }
            if let Some(lowered) = entry.main.as_mut().map(|lowered| lowered.at(start)) {
                self.diagnostics.extend_from_slice(&lowered.diagnostics);
                if is_first {
                    self.program.main = Some(Arc::clone(lowered.body.get()));
                    self.program.main_location = Some(Location {
                        file: *file,
                        range: first_keyword,
                    });
                }
            }
        }
        check()?;
        let entry = cache.entry(first_key, &mut first_scratch);
        let par_loops = entry
            .main
            .as_ref()
            .map_or(&[][..], |lowered| lowered.peek().par_loops.as_slice());
        for par_loop in par_loops {
            let (invocation, positions) = self.resolve_invocation(first_file, par_loop);
            self.program.invocations.push(invocation);
            syntax.push(positions);
        }
        Ok(syntax)
    }
}

/// Lowers a kernel and summarises it.
fn lower_kernel(
    file: FileId,
    source: &str,
    decl: ast::KernelDef<'_>,
    visible: &Visible<'_>,
) -> LoweredKernel {
    let mut diagnostics = Vec::new();
    let mut params: Vec<Param> = Vec::new();
    // The first parameter of each name, by name (a lookup per parameter,
    // not a scan: issue #12).
    let mut first_named: FxHashMap<String, usize> = FxHashMap::default();
    for param in decl.parameters() {
        let (Some(name), Some(ty)) = (param.name(), param.ty().and_then(|t| t.scalar(source)))
        else {
            continue;
        };
        let name_text = name.text(source).to_owned();
        let dimension = param.dimension().map(|d| {
            let size = WrittenSize::read(&d, source);
            let location = Location {
                file,
                range: d.text_range(),
            };
            diagnostics.extend(size.diagnostic(
                location,
                (
                    format!("parameter `{name_text}` has dimension 0"),
                    "a dimension must be at least 1",
                ),
                || {
                    format!(
                        "parameter `{name_text}` has dimension {}; a dimension may be at most {MAX_DIMENSION}",
                        d.text(source)
                    )
                },
            ));
            size.or_one()
        });
        if let Some(previous) = first_named.get(&name_text).map(|&k| &params[k]) {
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
        first_named.entry(name_text.clone()).or_insert(params.len());
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
    let mut lowerer = Lowerer::new(
        source,
        file,
        visible.env,
        Context::Kernel { params: &params },
    );
    if let Some(body) = decl.body() {
        lowerer.lower_block_into_body(body);
    }
    let Lowered {
        body,
        diagnostics: lowering_diagnostics,
        consts_used,
        lookups,
    } = lowerer.finish();
    let seen = Seen::record(&lookups, visible);
    diagnostics.extend(lowering_diagnostics);
    let summary = summarise(&body, params.len(), visible.consts);
    LoweredKernel {
        params,
        body: Moving::new(body),
        summary: Moving::new(summary),
        diagnostics,
        consts_used,
        seen,
    }
}

/// Lowers `main`. The program's `main` (`first`) also reads its par_loops,
/// which are resolved later; another is lowered for its diagnostics only.
fn lower_main(
    file: FileId,
    source: &str,
    main: ast::MainDef<'_>,
    first: bool,
    visible: &Visible<'_>,
) -> LoweredMain {
    let mut par_loops: Vec<ParLoopSyntax> = Vec::new();
    let mut register = |par_loop: ast::ParLoopStmt<'_>| -> Option<InvocationId> {
        if !first {
            return None;
        }
        par_loops.push(ParLoopSyntax::read(par_loop, source));
        Some(InvocationId(len_u32(&par_loops) - 1))
    };
    let mut lowerer =
        Lowerer::new(source, file, visible.env, Context::Main).with_par_loops(&mut register);
    if let Some(body) = main.body() {
        lowerer.lower_block_into_body(body);
    }
    let Lowered {
        body,
        diagnostics,
        lookups,
        ..
    } = lowerer.finish();
    let seen = Seen::record(&lookups, visible);
    LoweredMain {
        first,
        body: Moving::new(body),
        diagnostics,
        par_loops,
        seen,
    }
}

#[cfg(test)]
mod tests {
    use super::normalise;
    use std::path::Path;

    #[test]
    fn normalise_keeps_leading_parent_directories() {
        let cases = [
            ("../../imp/lib2.op2", "../../imp/lib2.op2"),
            ("a/../../b.op2", "../b.op2"),
            ("a/b/../c/./d.op2", "a/c/d.op2"),
            ("/../x.op2", "/x.op2"),
            ("/a/../../x.op2", "/x.op2"),
            ("./x.op2", "x.op2"),
        ];
        for (path, expected) in cases {
            assert_eq!(normalise(Path::new(path)), Path::new(expected), "{path}");
        }
    }
}
