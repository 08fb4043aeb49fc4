//! The semantic model of a program: what its declarations, kernels and
//! par_loops mean, with every name resolved. This is what the code generator
//! compiles and the interpreter runs; it holds no syntax tree.

use std::path::PathBuf;
use std::sync::Arc;

use op2_syntax::ast::{AccessMode, ScalarType};
use op2_syntax::{FileId, Location};
use rustc_hash::FxHashMap;

use crate::hir::Body;
use crate::kernel::KernelSummary;
use crate::value::Value;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The index into the program's list.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id!(
    /// A set.
    SetId
);
id!(
    /// A map.
    MapId
);
id!(
    /// A dat.
    DatId
);
id!(
    /// A const.
    ConstId
);
id!(
    /// A mutable global.
    GlobalId
);
id!(
    /// A kernel.
    KernelId
);
id!(
    /// A par_loop statement (one invocation, however often it runs).
    InvocationId
);

/// A scalar type with a dimension: `double[4]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ElementType {
    /// The scalar type.
    pub scalar: ScalarType,
    /// Components per element, at least 1 in a valid program.
    pub dimension: u32,
}

impl std::fmt::Display for ElementType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.dimension == 1 {
            write!(f, "{}", self.scalar)
        } else {
            write!(f, "{}[{}]", self.scalar, self.dimension)
        }
    }
}

/// What a top-level name is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Symbol {
    /// A set.
    Set(SetId),
    /// A map.
    Map(MapId),
    /// A dat.
    Dat(DatId),
    /// A const.
    Const(ConstId),
    /// A mutable global.
    Global(GlobalId),
    /// A kernel.
    Kernel(KernelId),
}

impl Symbol {
    /// "set", "map", … for messages.
    pub fn kind_name(self) -> &'static str {
        match self {
            Symbol::Set(_) => "set",
            Symbol::Map(_) => "map",
            Symbol::Dat(_) => "dat",
            Symbol::Const(_) => "const",
            Symbol::Global(_) => "global",
            Symbol::Kernel(_) => "kernel",
        }
    }
}

/// A file of the program.
#[derive(Clone, Debug)]
pub struct File {
    /// The path, as the loader knows it.
    pub path: PathBuf,
    /// The text analysed.
    pub text: Arc<str>,
}

/// `set NAME;`
#[derive(Clone, Debug)]
pub struct Set {
    /// Its name.
    pub name: String,
    /// Where the name is declared.
    pub location: Location,
}

/// `map NAME: FROM -> TO[ARITY];`
#[derive(Clone, Debug)]
pub struct Map {
    /// Its name.
    pub name: String,
    /// Where the name is declared.
    pub location: Location,
    /// The set it starts at.
    pub from: Option<SetId>,
    /// The set it ends at.
    pub to: Option<SetId>,
    /// Targets per element.
    pub arity: u32,
}

/// The initial value of a dat or global.
#[derive(Clone, Debug, PartialEq)]
pub enum InitialValue {
    /// Zero everywhere.
    Zero,
    /// One value per component (already converted to the element type).
    Components(Vec<Value>),
    /// The value of a const that gets its value from the instance data.
    FromConst(ConstId),
}

/// `dat NAME: TYPE on SET [= INIT];`
#[derive(Clone, Debug)]
pub struct Dat {
    /// Its name.
    pub name: String,
    /// Where the name is declared.
    pub location: Location,
    /// Element type.
    pub ty: ElementType,
    /// The set it lives on.
    pub set: Option<SetId>,
    /// Its initial value where the instance data gives none.
    pub init: InitialValue,
}

/// `const NAME: TYPE [= EXPR];`
#[derive(Clone, Debug)]
pub struct Const {
    /// Its name.
    pub name: String,
    /// Where the name is declared.
    pub location: Location,
    /// Element type.
    pub ty: ElementType,
    /// Its value, one per component, or `None` when the instance data must
    /// give it.
    pub value: Option<Vec<Value>>,
}

/// `global NAME: TYPE [= INIT];`
#[derive(Clone, Debug)]
pub struct Global {
    /// Its name.
    pub name: String,
    /// Where the name is declared.
    pub location: Location,
    /// Element type.
    pub ty: ElementType,
    /// Its initial value.
    pub init: InitialValue,
}

/// A kernel parameter.
#[derive(Clone, Debug)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Where the parameter is declared (the whole parameter).
    pub location: Location,
    /// Where its name is.
    pub name_location: Location,
    /// Its scalar type.
    pub ty: ScalarType,
    /// The dimension stated with `double q[4]`.
    pub dimension: Option<u32>,
    /// Declared `const`.
    pub is_const: bool,
}

/// `kernel NAME(PARAMS) { … }`
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Its name.
    pub name: String,
    /// Where the name is declared.
    pub location: Location,
    /// The parameters.
    pub params: Vec<Param>,
    /// The body, lowered.
    pub body: Arc<Body>,
    /// What the body does with each parameter.
    pub summary: Arc<KernelSummary>,
    /// Consts the body reads directly, in order of first use: the generated
    /// function takes them as trailing parameters.
    pub consts_used: Vec<ConstId>,
}

/// What a par_loop argument passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// A dat on the iteration set.
    DirectDat(DatId),
    /// A dat reached through `map[index]`.
    IndirectDat {
        /// The dat.
        dat: DatId,
        /// The map from the iteration set.
        map: MapId,
        /// The map index.
        index: u32,
    },
    /// A mutable global.
    Global(GlobalId),
    /// A const.
    Const(ConstId),
    /// `len(S)`.
    Len(SetId),
    /// `idx`: the index of the iteration element, or with a map
    /// (`idx[M[K]]`) the index of the element `M[K]` reaches, as an `int`
    /// (OP2's `op_arg_idx`).
    Index(Option<(MapId, u32)>),
    /// `G INFO(R)`: the global `G` takes, at the end of the loop, what the
    /// kernel left in its copy at the element that set the extreme of the
    /// MIN or MAX global of argument `of` (OP2's `op_arg_info`).
    Info {
        /// The global written.
        global: GlobalId,
        /// The position, among the par_loop's arguments, of the MIN or
        /// MAX argument it follows.
        of: u32,
    },
}

impl ArgKind {
    /// The dat or global the argument accesses, for conflict and dependency
    /// analysis.
    pub fn data(self) -> Option<Data> {
        match self {
            ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. } => Some(Data::Dat(dat)),
            ArgKind::Global(global) | ArgKind::Info { global, .. } => Some(Data::Global(global)),
            ArgKind::Const(_) | ArgKind::Len(_) | ArgKind::Index(_) => None,
        }
    }

    /// True for an indirect dat.
    pub fn is_indirect(self) -> bool {
        matches!(self, ArgKind::IndirectDat { .. })
    }
}

/// Mutable data of the program: a dat or a global.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Data {
    /// A dat.
    Dat(DatId),
    /// A global.
    Global(GlobalId),
}

/// One argument of a par_loop.
#[derive(Clone, Debug)]
pub struct Arg {
    /// What it passes.
    pub kind: ArgKind,
    /// Its access mode (READ where the source leaves it out for a const or
    /// `len`).
    pub mode: AccessMode,
    /// Where the argument is written.
    pub location: Location,
    /// Where the mode is written, when it is.
    pub mode_location: Option<Location>,
    /// Element type passed to the kernel.
    pub ty: ElementType,
}

/// A par_loop statement: one invocation.
#[derive(Clone, Debug)]
pub struct Invocation {
    /// Its unique name (language.md §6).
    pub name: String,
    /// True when the name was given with `as`.
    pub named_explicitly: bool,
    /// The whole statement.
    pub location: Location,
    /// Where the name would go: the `as` name, or the kernel name.
    pub name_location: Location,
    /// The kernel applied, when it resolves.
    pub kernel: Option<KernelId>,
    /// The iteration set, when it resolves.
    pub set: Option<SetId>,
    /// The arguments that resolved, in order; `None` for one that did not.
    pub args: Vec<Option<Arg>>,
    /// True for the invocation a `fetch` becomes ([`crate::fetch`]): its
    /// arguments `(DAT READ, idx, GLOBAL INC)` say what it computes, and a
    /// graph builds it as the linear fetch of compilation.md ("A `fetch` on
    /// POETS"), never by running its kernel. False for every par_loop of
    /// the program.
    pub is_fetch: bool,
}

impl Invocation {
    /// The arguments that resolved, with their positions.
    pub fn resolved_args(&self) -> impl Iterator<Item = (usize, &Arg)> {
        self.args
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.as_ref().map(|a| (i, a)))
    }
}

/// The whole program: a root file and everything it imports.
#[derive(Clone, Debug, Default)]
pub struct Program {
    /// The files, indexed by [`FileId`]; the root is [`FileId::MAIN`].
    pub files: Vec<File>,
    /// Sets.
    pub sets: Vec<Set>,
    /// Maps.
    pub maps: Vec<Map>,
    /// Dats.
    pub dats: Vec<Dat>,
    /// Consts.
    pub consts: Vec<Const>,
    /// Mutable globals.
    pub globals: Vec<Global>,
    /// Kernels.
    pub kernels: Vec<Kernel>,
    /// Invocations, in source order of `main`.
    pub invocations: Vec<Invocation>,
    /// `main`, lowered, when there is exactly one.
    pub main: Option<Arc<Body>>,
    /// Where `main` is (its keyword).
    pub main_location: Option<Location>,
    /// Top-level names.
    pub names: FxHashMap<String, Symbol>,
    /// Consts named by the initialisers of consts, dats and globals.
    pub initialiser_consts: Vec<ConstId>,
    /// Symbols named by par_loop arguments, whether or not the argument
    /// turned out valid (so that a wrong argument does not also make its
    /// dat look unused).
    pub referenced: rustc_hash::FxHashSet<Symbol>,
}

impl Program {
    /// The symbol named `name`.
    pub fn lookup(&self, name: &str) -> Option<Symbol> {
        self.names.get(name).copied()
    }

    /// The name and declaration of a symbol.
    pub fn symbol_name(&self, symbol: Symbol) -> (&str, Location) {
        match symbol {
            Symbol::Set(id) => (&self.sets[id.index()].name, self.sets[id.index()].location),
            Symbol::Map(id) => (&self.maps[id.index()].name, self.maps[id.index()].location),
            Symbol::Dat(id) => (&self.dats[id.index()].name, self.dats[id.index()].location),
            Symbol::Const(id) => (
                &self.consts[id.index()].name,
                self.consts[id.index()].location,
            ),
            Symbol::Global(id) => (
                &self.globals[id.index()].name,
                self.globals[id.index()].location,
            ),
            Symbol::Kernel(id) => (
                &self.kernels[id.index()].name,
                self.kernels[id.index()].location,
            ),
        }
    }

    /// The name of a dat or global.
    pub fn data_name(&self, data: Data) -> &str {
        match data {
            Data::Dat(id) => &self.dats[id.index()].name,
            Data::Global(id) => &self.globals[id.index()].name,
        }
    }

    /// The file with `id`.
    pub fn file(&self, id: FileId) -> &File {
        &self.files[id.0 as usize]
    }
}
