//! The graph of `fetch DAT into GLOBAL;` (compilation.md, "A `fetch` on
//! POETS"). The statement becomes, in the program the graph is built from,
//! an invocation of a generated kernel `op2_fetch_DAT` over the dat's set,
//! with the arguments `(DAT READ, idx, GLOBAL INC)`, whose body adds the
//! element's values into `GLOBAL[idx * DIM + j]`: what the fetch computes,
//! written as a par_loop. The invocation is marked
//! [a fetch](Invocation::is_fetch), and the graph builds it as the linear
//! fetch (the controller asks for the dat's values in windows of items and
//! stores each in its place), not by running the kernel. `main` gains no
//! statement, no local and no loop; the controller's state machine, the
//! trees and the simulator see an invocation.
//!
//! `op2 run` keeps its linear copy: only the graph is built from the
//! [`Lowered`] program, which [`crate::Analysis::lowered`] makes once per
//! analysis and every consumer of a graph takes.

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::Arc;

use crate::consts::ConstValues;
use crate::hir::{self, Body, Expr, ExprKind, Place, Stmt, StmtKind, Var};
use crate::model::{
    Arg, ArgKind, DatId, ElementType, GlobalId, Invocation, InvocationId, Kernel, KernelId, Param,
    Program,
};
use crate::value::Value;
use op2_syntax::ast::{AccessMode, AssignOp, BinaryOp, ScalarType};
use op2_syntax::{Location, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};

/// The generated kernel of a `fetch` of dat `D`: `op2_fetch_D`, and its
/// invocations `op2_fetch_D`, `op2_fetch_D_1`, … as the language names
/// par_loops; a name in use takes the next suffix.
pub fn kernel_name(dat: &str) -> String {
    format!("op2_fetch_{dat}")
}

/// A program with every `fetch` of `main` replaced by its invocation: what a
/// graph is built from. Only [`lower`] makes one, so a function that takes a
/// `&Lowered` cannot be given a program whose `fetch`es are still there.
#[derive(Clone, Debug)]
pub struct Lowered {
    program: Arc<Program>,
    own_invocations: usize,
}

impl Lowered {
    /// The lowered program, shared: the program itself when `main` fetches
    /// nothing.
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    /// How many invocations the program had before the lowering: the
    /// fetches' invocations' ids come after.
    pub fn own_invocations(&self) -> usize {
        self.own_invocations
    }
}

impl Deref for Lowered {
    type Target = Program;

    fn deref(&self) -> &Program {
        &self.program
    }
}

/// `program` lowered: shared, not copied, when `main` fetches nothing.
/// Deterministic, so two lowerings of one program agree on every id.
pub fn lower(program: &Arc<Program>) -> Lowered {
    let own_invocations = program.invocations.len();
    let program = match lowered(program) {
        Cow::Borrowed(_) => Arc::clone(program),
        Cow::Owned(lowered) => Arc::new(lowered),
    };
    Lowered {
        program,
        own_invocations,
    }
}

/// `program` with every `fetch` of `main` replaced by its invocation; the
/// program itself when `main` fetches nothing. The synthetic kernels and
/// invocations come after the program's own, so every id of `program`
/// keeps its meaning.
fn lowered(program: &Program) -> Cow<'_, Program> {
    let Some(main) = program.main.as_deref() else {
        return Cow::Borrowed(program);
    };
    let fetches: Vec<hir::Fetch> = hir::fetches(main).collect();
    if fetches.is_empty() {
        return Cow::Borrowed(program);
    }
    let file = program.main_location.map(|l| l.file).unwrap_or_default();
    let mut lowered = program.clone();
    let mut main = main.clone();
    let mut taken: FxHashSet<String> = program
        .names
        .keys()
        .cloned()
        .chain(program.invocations.iter().map(|i| i.name.clone()))
        .collect();
    let mut kernels: FxHashMap<DatId, (KernelId, u32)> = FxHashMap::default();
    let mut replacements: FxHashMap<TextRange, InvocationId> = FxHashMap::default();
    for fetch in fetches {
        let location = Location {
            file,
            range: fetch.range,
        };
        let (kernel, uses) = *kernels.entry(fetch.dat).or_insert_with(|| {
            let name = unique(
                &mut taken,
                &kernel_name(&program.dats[fetch.dat.index()].name),
                0,
            );
            let kernel = fetch_kernel(program, fetch.dat, fetch.global, name, location);
            lowered.kernels.push(kernel);
            (KernelId(index_u32(lowered.kernels.len() - 1)), 0)
        });
        kernels.insert(fetch.dat, (kernel, uses + 1));
        let base = lowered.kernels[kernel.index()].name.clone();
        // As the language names par_loops: the kernel's name, then
        // `K_1`, `K_2`, … skipping any name in use.
        let name = if uses == 0 {
            base
        } else {
            unique(&mut taken, &base, uses)
        };
        lowered
            .invocations
            .push(fetch_invocation(program, fetch, kernel, name, location));
        replacements.insert(
            fetch.range,
            InvocationId(index_u32(lowered.invocations.len() - 1)),
        );
    }
    replace_all(&mut main.statements, &replacements);
    lowered.main = Some(Arc::new(main));
    Cow::Owned(lowered)
}

fn index_u32(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

/// `base` when `from` is 0 and it is free, else the first free `base_N`
/// for `N` from `max(from, 1)`; the name returned is taken.
fn unique(taken: &mut FxHashSet<String>, base: &str, from: u32) -> String {
    let mut n = from;
    let mut name = if n == 0 {
        base.to_owned()
    } else {
        format!("{base}_{n}")
    };
    while taken.contains(&name) {
        n += 1;
        name = format!("{base}_{n}");
    }
    taken.insert(name.clone());
    name
}

/// Replaces the `fetch` statements of `stmts`, nested ones included. The
/// recursion is bounded by the nesting depth the lowering of `main`
/// accepts (this crate's limit of 200 levels).
fn replace_all(stmts: &mut [Stmt], replacements: &FxHashMap<TextRange, InvocationId>) {
    for stmt in stmts {
        replace(stmt, replacements);
    }
}

fn replace(stmt: &mut Stmt, replacements: &FxHashMap<TextRange, InvocationId>) {
    match &mut stmt.kind {
        StmtKind::Fetch { .. } => {
            if let Some(invocation) = replacements.get(&stmt.range) {
                stmt.kind = StmtKind::ParLoop(*invocation);
            }
        }
        StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => replace_all(stmts, replacements),
        StmtKind::If {
            then_branch,
            else_branch,
            ..
        } => {
            replace(then_branch, replacements);
            if let Some(else_branch) = else_branch {
                replace(else_branch, replacements);
            }
        }
        StmtKind::For { init, body, .. } => {
            if let Some(init) = init {
                replace(init, replacements);
            }
            replace(body, replacements);
        }
        StmtKind::While { body, .. } | StmtKind::DoWhile { body, .. } => {
            replace(body, replacements);
        }
        _ => {}
    }
}

fn int(value: u32, range: TextRange) -> Expr {
    Expr {
        kind: ExprKind::Literal(Value::Int(i32::try_from(value).unwrap_or(i32::MAX))),
        ty: ScalarType::Int,
        range,
    }
}

fn load(var: Var, index: Option<Expr>, ty: ScalarType, range: TextRange) -> Expr {
    Expr {
        kind: ExprKind::Load(Place {
            var,
            index: index.map(Box::new),
            range,
        }),
        ty,
        range,
    }
}

fn binary(op: BinaryOp, left: Expr, right: Expr, ty: ScalarType, range: TextRange) -> Expr {
    Expr {
        kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
        ty,
        range,
    }
}

/// `kernel op2_fetch_D(const T *d, const int *i, T *g)` whose body is
/// `g[DIM * i[0] + j] += d[j];` for each component `j`.
fn fetch_kernel(
    program: &Program,
    dat: DatId,
    global: GlobalId,
    name: String,
    location: Location,
) -> Kernel {
    let range = location.range;
    let ty = program.dats[dat.index()].ty;
    let param = |name: &str, ty: ScalarType, is_const: bool| Param {
        name: name.to_owned(),
        location,
        name_location: location,
        ty,
        dimension: None,
        is_const,
    };
    let params = vec![
        param("d", ty.scalar, true),
        param("i", ScalarType::Int, true),
        param("g", program.globals[global.index()].ty.scalar, false),
    ];
    let statements = (0..ty.dimension)
        .map(|j| {
            let element = load(Var::Param(1), Some(int(0, range)), ScalarType::Int, range);
            let start = binary(
                BinaryOp::Mul,
                int(ty.dimension, range),
                element,
                ScalarType::Int,
                range,
            );
            let at = binary(BinaryOp::Add, start, int(j, range), ScalarType::Int, range);
            Stmt {
                range,
                kind: StmtKind::Expr(Expr {
                    kind: ExprKind::Assign {
                        place: Place {
                            var: Var::Param(2),
                            index: Some(Box::new(at)),
                            range,
                        },
                        op: AssignOp::Add,
                        value: Box::new(load(Var::Param(0), Some(int(j, range)), ty.scalar, range)),
                    },
                    ty: ty.scalar,
                    range,
                }),
            }
        })
        .collect();
    let body = Body {
        locals: Vec::new(),
        statements,
    };
    let summary = crate::kernel::summarise(&body, params.len(), &ConstValues::default());
    Kernel {
        name,
        location,
        params,
        body: Arc::new(body),
        summary: Arc::new(summary),
        consts_used: Vec::new(),
    }
}

/// `par_loop op2_fetch_D over S (D READ, idx, G INC)`, marked a fetch.
fn fetch_invocation(
    program: &Program,
    fetch: hir::Fetch,
    kernel: KernelId,
    name: String,
    location: Location,
) -> Invocation {
    let dat = &program.dats[fetch.dat.index()];
    let arg = |kind, mode, ty| {
        Some(Arg {
            kind,
            mode,
            location,
            mode_location: None,
            ty,
        })
    };
    Invocation {
        name,
        named_explicitly: false,
        location,
        name_location: location,
        kernel: Some(kernel),
        set: dat.set,
        args: vec![
            arg(ArgKind::DirectDat(fetch.dat), AccessMode::Read, dat.ty),
            arg(
                ArgKind::Index(None),
                AccessMode::Read,
                ElementType {
                    scalar: ScalarType::Int,
                    dimension: 1,
                },
            ),
            arg(
                ArgKind::Global(fetch.global),
                AccessMode::Inc,
                program.globals[fetch.global.index()].ty,
            ),
        ],
        is_fetch: true,
    }
}
