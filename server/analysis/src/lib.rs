//! Semantic analysis of `.op2` programs: name resolution across imports, the
//! semantic model ([`model::Program`]), lowered bodies ([`hir`]), access-mode
//! validation against kernel bodies, conflict rules, dependency analysis,
//! and every diagnostic of language.md §10 but those of code generation.
//!
//! Pure: no IO. Files other than the root are reached through a [`Loader`]
//! the caller provides (the CLI reads the disk, the language server its open
//! documents first). Analysis never fails; it returns the model it could
//! build and the diagnostics it found. An [`Analyser`] keeps what it can
//! reuse between runs, per top-level item: the unsupported C an item holds,
//! and kernels and `main` lowered, reused while their text and what they look
//! up among the declarations are unchanged (the rules are in `cache.rs`).
//! [`Analyser::analyse_cancellable`] stops between items when asked to.

mod cache;
mod checks;
pub mod consts;
pub mod deps;
pub mod explain;
pub mod fetch;
pub mod format;
pub mod hir;
mod invocation;
pub mod kernel;
mod lower;
pub mod model;
pub mod order;
mod program;
pub mod reserved;
mod shift;
mod suggest;
pub mod value;

use std::path::Path;
use std::sync::{Arc, OnceLock};

use op2_syntax::{Code, Diagnostic, FileId, Parse, Tag};
use rustc_hash::FxHashSet;

pub use checks::type_keyword_prefix;
pub use consts::ConstValues;
pub use deps::{Dependencies, Reader};
pub use lower::{MAX_DIMENSION, MAX_LOCAL_VALUES};
pub use model::Program;

/// Reads the files a program imports.
pub trait Loader {
    /// The text of the file at `path` (already resolved against the
    /// importing file), or why it cannot be had.
    fn load(&self, path: &Path) -> Result<Arc<str>, String>;
}

/// A loader for programs that import nothing: every import is missing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoImports;

impl Loader for NoImports {
    fn load(&self, _path: &Path) -> Result<Arc<str>, String> {
        Err("imports are not available here".into())
    }
}

/// What the caller needs of the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The program is to be built into a graph, so it needs `main` (E603).
    pub require_main: bool,
}

/// Everything known about one program.
#[derive(Clone, Debug)]
pub struct Analysis {
    /// The semantic model.
    pub program: Arc<Program>,
    /// Compile-time values of the consts.
    pub const_values: ConstValues,
    /// Dependencies between invocations through `main`.
    pub dependencies: Arc<Dependencies>,
    /// Every diagnostic, sorted by file and position.
    pub diagnostics: Vec<Diagnostic>,
    /// [`Analysis::lowered`], made at its first use.
    lowered: OnceLock<fetch::Lowered>,
}

impl Analysis {
    /// The program a graph is built from: [`Analysis::program`] with its
    /// `fetch`es lowered ([`fetch`]). Lowered once per analysis, at the
    /// first call; the same [`Arc`] as `program` when `main` fetches
    /// nothing.
    pub fn lowered(&self) -> &fetch::Lowered {
        self.lowered.get_or_init(|| fetch::lower(&self.program))
    }

    /// True when any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == op2_syntax::Severity::Error)
    }
}

/// Why [`Analyser::analyse_cancellable`] returned without an analysis: its
/// callback asked it to stop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("analysis cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Analyses programs, reusing work between runs on similar text.
#[derive(Debug, Default)]
pub struct Analyser {
    cache: cache::Cache,
}

impl Analyser {
    /// A fresh analyser with nothing cached.
    pub fn new() -> Analyser {
        Analyser::default()
    }

    /// Analyses the program whose root file is `root` (at `path`).
    pub fn analyse(
        &mut self,
        path: &Path,
        root: &Parse,
        loader: &dyn Loader,
        options: &Options,
    ) -> Analysis {
        match self.analyse_cancellable(path, root, loader, options, &|| false) {
            Ok(analysis) => analysis,
            Err(Cancelled) => unreachable!("an analysis never asked to stop was cancelled"),
        }
    }

    /// Like [`Analyser::analyse`], but asks `cancelled` between top-level
    /// items and between phases whether to go on, and returns
    /// [`Cancelled`] as soon as it says yes (the language server's way to
    /// drop the analysis of a version that a newer one replaced). A cancelled
    /// analysis leaves the analyser as good as a completed one: the next
    /// analysis gives exactly what a fresh analyser gives.
    pub fn analyse_cancellable(
        &mut self,
        path: &Path,
        root: &Parse,
        loader: &dyn Loader,
        options: &Options,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Analysis, Cancelled> {
        let check = || if cancelled() { Err(Cancelled) } else { Ok(()) };
        let built = program::build(path, root, loader, options, &mut self.cache, cancelled)?;
        let mut program = built.program;
        let mut diagnostics = built.diagnostics;
        checks::name_invocations(&mut program, &built.invocation_syntax, &mut diagnostics);
        checks::check_invocations(&program, &built.invocation_syntax, &mut diagnostics);
        checks::check_fetches(&program, &mut diagnostics);
        check()?;
        let dependencies = Dependencies::new(&program);
        report_dead_loops(&program, &dependencies, &mut diagnostics);
        check()?;
        report_unused(&program, &mut diagnostics);
        let diagnostics = tidy(diagnostics);
        Ok(Analysis {
            program: Arc::new(program),
            const_values: built.const_values,
            dependencies: Arc::new(dependencies),
            diagnostics,
            lowered: OnceLock::new(),
        })
    }

    /// How many kernels were reused and how many lowered, over this
    /// analyser's life (for tests and benchmarks of the cache).
    pub fn kernel_cache_stats(&self) -> (usize, usize) {
        (self.cache.kernel_hits, self.cache.kernel_misses)
    }

    /// How many cache keys placing top-level items has looked at, over
    /// this analyser's life: one per item when the work is linear (for
    /// tests of the cost, which count work instead of timing it).
    pub fn item_key_probes(&self) -> usize {
        self.cache.probes
    }
}

/// Analyses one text with no imports: a convenience for tests and tools.
pub fn analyse_text(path: &Path, text: &str, options: &Options) -> Analysis {
    let parse = Parse::new(text);
    Analyser::new().analyse(path, &parse, &NoImports, options)
}

fn report_dead_loops(
    program: &Program,
    dependencies: &Dependencies,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for (index, invocation) in program.invocations.iter().enumerate() {
        let id = model::InvocationId(u32::try_from(index).unwrap_or(u32::MAX));
        // With an argument that did not resolve, what the loop writes is
        // not known: say nothing rather than something wrong.
        let incomplete = invocation.kernel.is_none() || invocation.args.iter().any(Option::is_none);
        if incomplete || !dependencies.is_dead(id) {
            continue;
        }
        // Printing is an effect (`op2 run` prints each element's text).
        let kernel = invocation.kernel.map(|k| &program.kernels[k.index()]);
        if kernel.is_some_and(|k| hir::first_print(&k.body).is_some()) {
            continue;
        }
        let writes = invocation
            .resolved_args()
            .any(|(_, a)| a.mode.writes() && a.kind.data().is_some());
        let message = if writes {
            format!(
                "the results of `{}` are never read afterwards",
                invocation.name
            )
        } else {
            format!(
                "`{}` writes nothing, so running it has no effect",
                invocation.name
            )
        };
        diagnostics.push(
            Diagnostic::new(Code::H605, invocation.location, message)
                .with_label("dead par_loop: remove it or use what it computes")
                .with_tag(Tag::Unnecessary),
        );
    }
}

/// W604 for declarations of the root file that nothing uses. A file without
/// `main` is a library of declarations for others, so it is left alone.
fn report_unused(program: &Program, diagnostics: &mut Vec<Diagnostic>) {
    if program.main.is_none() {
        return;
    }
    let mut used: FxHashSet<Symbol> = FxHashSet::default();
    use model::Symbol;
    for map in &program.maps {
        used.extend(map.from.map(Symbol::Set));
        used.extend(map.to.map(Symbol::Set));
    }
    for dat in &program.dats {
        used.extend(dat.set.map(Symbol::Set));
        if let model::InitialValue::FromConst(id) = dat.init {
            used.insert(Symbol::Const(id));
        }
    }
    for global in &program.globals {
        if let model::InitialValue::FromConst(id) = global.init {
            used.insert(Symbol::Const(id));
        }
    }
    // Every const a kernel body names is in its `consts_used` (a kernel sees
    // no globals or sets), so the bodies need no walk.
    for kernel in &program.kernels {
        used.extend(kernel.consts_used.iter().copied().map(Symbol::Const));
    }
    for invocation in &program.invocations {
        used.extend(invocation.kernel.map(Symbol::Kernel));
        used.extend(invocation.set.map(Symbol::Set));
        for (_, arg) in invocation.resolved_args() {
            match arg.kind {
                model::ArgKind::DirectDat(dat) => {
                    used.insert(Symbol::Dat(dat));
                }
                model::ArgKind::IndirectDat { dat, map, .. } => {
                    used.insert(Symbol::Dat(dat));
                    used.insert(Symbol::Map(map));
                }
                model::ArgKind::Global(id) | model::ArgKind::Info { global: id, .. } => {
                    used.insert(Symbol::Global(id));
                }
                model::ArgKind::Index(map) => {
                    used.extend(map.map(|(map, _)| Symbol::Map(map)));
                }
                model::ArgKind::Const(id) => {
                    used.insert(Symbol::Const(id));
                }
                model::ArgKind::Len(set) => {
                    used.insert(Symbol::Set(set));
                }
            }
        }
    }
    // Names read in `main` are found in its body: globals, consts and sets in
    // `len`.
    let mut mark = |expr: &hir::Expr| match &expr.kind {
        hir::ExprKind::Load(place)
        | hir::ExprKind::Assign { place, .. }
        | hir::ExprKind::Update { place, .. } => match place.var {
            hir::Var::Const(id) => {
                used.insert(Symbol::Const(id));
            }
            hir::Var::Global(id) => {
                used.insert(Symbol::Global(id));
            }
            _ => {}
        },
        hir::ExprKind::Len(set) => {
            used.insert(Symbol::Set(*set));
        }
        _ => {}
    };
    if let Some(main) = program.main.as_deref() {
        for stmt in &main.statements {
            hir::walk_stmt_exprs(stmt, &mut mark);
        }
        for fetch in hir::fetches(main) {
            used.insert(Symbol::Dat(fetch.dat));
            used.insert(Symbol::Global(fetch.global));
        }
    }
    // A const named by an initialiser (another const's value, a dat's or a
    // global's) counts as used.
    used.extend(
        program
            .initialiser_consts
            .iter()
            .copied()
            .map(Symbol::Const),
    );
    used.extend(program.referenced.iter().copied());
    let mut unused: Vec<(Symbol, op2_syntax::Location, String)> = program
        .names
        .iter()
        .filter(|(_, symbol)| !used.contains(symbol))
        .map(|(name, symbol)| (*symbol, program.symbol_name(*symbol).1, name.clone()))
        .filter(|(_, location, _)| location.file == FileId::MAIN)
        .collect();
    unused.sort_by_key(|(_, location, _)| location.range.start);
    for (symbol, location, name) in unused {
        diagnostics.push(
            Diagnostic::new(
                Code::W604,
                location,
                format!("{} `{name}` is never used", symbol.kind_name()),
            )
            .with_label("unused")
            .with_tag(Tag::Unnecessary),
        );
    }
}

/// Sorts diagnostics by position and merges duplicates (the same problem in
/// a kernel body found through several par_loops) into one with all the
/// related locations.
fn tidy(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diagnostics.sort_by(|a, b| {
        (
            a.location.file,
            a.location.range.start,
            a.location.range.end,
            a.code,
        )
            .cmp(&(
                b.location.file,
                b.location.range.start,
                b.location.range.end,
                b.code,
            ))
    });
    let mut out: Vec<Diagnostic> = Vec::with_capacity(diagnostics.len());
    for diagnostic in diagnostics {
        if let Some(last) = out.last_mut()
            && last.code == diagnostic.code
            && last.location == diagnostic.location
            && last.message == diagnostic.message
        {
            for related in diagnostic.related {
                if !last.related.contains(&related) {
                    last.related.push(related);
                }
            }
            // The same fix found through another par_loop (changing that
            // loop's mode too) becomes one fix with every edit.
            for fix in diagnostic.fixes {
                match last.fixes.iter_mut().find(|f| f.title == fix.title) {
                    Some(same) => {
                        for edit in fix.edits {
                            if !same.edits.contains(&edit) {
                                same.edits.push(edit);
                            }
                        }
                    }
                    None => last.fixes.push(fix),
                }
            }
            continue;
        }
        out.push(diagnostic);
    }
    out
}
