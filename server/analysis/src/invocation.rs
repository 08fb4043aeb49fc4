//! The par_loops of `main`: what each says, read once from the syntax tree
//! into plain data (kept with `main` in the analyser's cache, so a keystroke
//! elsewhere does not walk them again), and its resolution against the
//! declarations into a [`model::Invocation`](crate::model::Invocation),
//! which is done on every analysis because the declarations may change.

use std::borrow::Cow;

use op2_syntax::ast::{self, AccessMode, ArgData, NodeText, ScalarType};
use op2_syntax::{Code, Diagnostic, FileId, Fix, Location, TextEdit, TextRange};

use crate::model::{Arg, ArgKind, DatId, ElementType, Invocation, KernelId, SetId, Symbol};
use crate::program::{Expect, Resolver};
use crate::shift::Shift;

/// A name as written: its text and where it is.
#[derive(Clone, Debug)]
pub(crate) struct Written {
    pub text: Box<str>,
    pub range: TextRange,
}

impl Written {
    pub(crate) fn read(ident: ast::Ident<'_>, source: &str) -> Written {
        Written {
            text: ident.text(source).into(),
            range: ident.text_range(),
        }
    }
}

/// `par_loop KERNEL [as NAME] over SET (ARGS);` as written.
#[derive(Clone, Debug)]
pub(crate) struct ParLoopSyntax {
    /// The whole statement.
    pub range: TextRange,
    pub kernel: Option<Written>,
    pub alias: Option<Written>,
    pub set: Option<Written>,
    /// The parenthesised argument list.
    pub argument_list: Option<TextRange>,
    pub args: Vec<ArgSyntax>,
}

/// One argument of a par_loop as written.
#[derive(Clone, Debug)]
pub(crate) struct ArgSyntax {
    pub range: TextRange,
    pub data: Option<ArgDataSyntax>,
    /// The map of an indirect argument, with its index: the value, or
    /// `u64::MAX` when it cannot be read, and `None` when there is none.
    pub map: Option<(Written, Option<u64>)>,
    /// The mode's keyword (`None` when it is not one) and where it is.
    pub mode: Option<(Option<AccessMode>, TextRange)>,
    /// `INFO(G)` in place of a mode: `G` as written, and where the clause is.
    pub info: Option<(Option<Written>, TextRange)>,
}

/// What an argument names.
#[derive(Clone, Debug)]
pub(crate) enum ArgDataSyntax {
    /// A dat, global or const.
    Name(Written),
    /// `len(SET)`.
    Len(Option<Written>),
    /// `idx`.
    Index,
}

impl ParLoopSyntax {
    pub(crate) fn read(par_loop: ast::ParLoopStmt<'_>, source: &str) -> ParLoopSyntax {
        let written = |ident: Option<ast::Ident<'_>>| ident.map(|i| Written::read(i, source));
        ParLoopSyntax {
            range: par_loop.text_range(),
            kernel: written(par_loop.kernel()),
            alias: written(par_loop.alias()),
            set: written(par_loop.set()),
            argument_list: par_loop.argument_list().map(|a| a.text_range()),
            args: par_loop
                .arguments()
                .map(|argument| ArgSyntax {
                    range: argument.text_range(),
                    data: argument.data().map(|data| match data {
                        ArgData::Name(ident) => ArgDataSyntax::Name(Written::read(ident, source)),
                        ArgData::Len(len) => ArgDataSyntax::Len(written(len.set())),
                        ArgData::Index(_) => ArgDataSyntax::Index,
                    }),
                    map: argument.map().map(|map| {
                        let index = argument
                            .index()
                            .map(|i| i.value(source).map_or(u64::MAX, |v| v.value));
                        (Written::read(map, source), index)
                    }),
                    mode: argument
                        .mode()
                        .map(|mode| (mode.mode(source), mode.text_range())),
                    info: argument
                        .info()
                        .map(|info| (written(info.global()), info.text_range())),
                })
                .collect(),
        }
    }
}

impl Shift for Written {
    fn shift(&mut self, delta: i64) {
        self.range.shift(delta);
    }
}

impl Shift for ParLoopSyntax {
    fn shift(&mut self, delta: i64) {
        self.range.shift(delta);
        for written in [&mut self.kernel, &mut self.alias, &mut self.set]
            .into_iter()
            .flatten()
        {
            written.shift(delta);
        }
        if let Some(range) = &mut self.argument_list {
            range.shift(delta);
        }
        for arg in &mut self.args {
            arg.range.shift(delta);
            match &mut arg.data {
                Some(ArgDataSyntax::Name(written) | ArgDataSyntax::Len(Some(written))) => {
                    written.shift(delta);
                }
                Some(ArgDataSyntax::Len(None) | ArgDataSyntax::Index) | None => {}
            }
            if let Some((map, _)) = &mut arg.map {
                map.shift(delta);
            }
            if let Some((_, range)) = &mut arg.mode {
                range.shift(delta);
            }
            if let Some((global, range)) = &mut arg.info {
                range.shift(delta);
                if let Some(global) = global {
                    global.shift(delta);
                }
            }
        }
    }
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

impl Resolver<'_, '_> {
    pub(crate) fn resolve_invocation(
        &mut self,
        file: FileId,
        par_loop: &ParLoopSyntax,
    ) -> (Invocation, InvocationSyntax) {
        let at = |range: TextRange| Location { file, range };
        let kernel = match self.resolve(file, par_loop.kernel.as_ref(), Expect::Kernel) {
            Some(Symbol::Kernel(id)) => Some(id),
            _ => None::<KernelId>,
        };
        let set = self.resolve_set(file, par_loop.set.as_ref());
        let kernel_location = at(par_loop.kernel.as_ref().map_or(par_loop.range, |k| k.range));
        let alias = par_loop
            .alias
            .as_ref()
            .map(|a| (String::from(&*a.text), at(a.range)));
        let mut args: Vec<Option<Arg>> = par_loop
            .args
            .iter()
            .map(|argument| self.resolve_argument(file, argument, set))
            .collect();
        self.resolve_infos(file, par_loop, &mut args);
        let arguments = at(par_loop.argument_list.unwrap_or(par_loop.range));
        let name_location = alias.as_ref().map_or(kernel_location, |(_, l)| *l);
        let positions = InvocationSyntax {
            kernel: kernel_location,
            alias: alias.as_ref().map(|(_, l)| *l),
            arguments,
        };
        let invocation = Invocation {
            named_explicitly: alias.is_some(),
            name: alias.map(|(n, _)| n).unwrap_or_default(),
            location: at(par_loop.range),
            name_location,
            kernel,
            set,
            args,
            is_fetch: false,
        };
        (invocation, positions)
    }

    /// Resolves one argument and checks what concerns it alone: names,
    /// sets, maps, indices and modes (E101, E103, E302–E305, E308–E310).
    fn resolve_argument(
        &mut self,
        file: FileId,
        argument: &ArgSyntax,
        iteration: Option<SetId>,
    ) -> Option<Arg> {
        let at = |range: TextRange| Location { file, range };
        let location = at(argument.range);
        let mode_location = argument.mode.map(|(_, range)| at(range));
        let written_mode = argument.mode.and_then(|(mode, _)| mode);
        let map_part = argument.map.as_ref();
        let (kind, ty, name): (ArgKind, ElementType, Cow<'_, str>) = match argument.data.as_ref()? {
            ArgDataSyntax::Index => {
                // `idx` in an argument list is always the index; a dat, global
                // or const of that name cannot be meant and passed there.
                if let Some(symbol @ (Symbol::Dat(_) | Symbol::Global(_) | Symbol::Const(_))) =
                    self.lookup("idx")
                {
                    self.program.referenced.insert(symbol);
                    if let Some((map, _)) = map_part
                        && let Some(Symbol::Map(map)) = self.lookup(&map.text)
                    {
                        self.program.referenced.insert(Symbol::Map(map));
                    }
                    let (_, declared) = self.program.symbol_name(symbol);
                    let kind = symbol.kind_name();
                    self.report(
                        Diagnostic::new(
                            Code::E103,
                            location,
                            format!("`idx` here is the element's index, not the {kind} `idx`"),
                        )
                        .with_label("in a par_loop's arguments `idx` always passes an index")
                        .with_related(
                            declared,
                            format!("the {kind} `idx` is declared here: rename it to pass it"),
                        ),
                    );
                    return None;
                }
                let through = match map_part {
                    None => None,
                    Some((map, index)) => {
                        if let Some(Symbol::Map(map)) = self.lookup(&map.text) {
                            self.program.referenced.insert(Symbol::Map(map));
                        }
                        match self.resolve_indirect(file, None, map, *index, iteration, location)? {
                            ArgKind::IndirectDat { map, index, .. } => Some((map, index)),
                            _ => return None,
                        }
                    }
                };
                let name = match map_part {
                    None => Cow::Borrowed("idx"),
                    Some((map, index)) => {
                        Cow::Owned(format!("idx[{}[{}]]", map.text, index.unwrap_or_default()))
                    }
                };
                (
                    ArgKind::Index(through),
                    ElementType {
                        scalar: ScalarType::Int,
                        dimension: 1,
                    },
                    name,
                )
            }
            ArgDataSyntax::Len(set) => {
                let set = self.resolve_set(file, set.as_ref())?;
                (
                    ArgKind::Len(set),
                    ElementType {
                        scalar: ScalarType::Int,
                        dimension: 1,
                    },
                    Cow::Owned(format!("len({})", self.program.sets[set.index()].name)),
                )
            }
            ArgDataSyntax::Name(ident) => {
                let name = &*ident.text;
                let symbol = self.lookup(name);
                // Named, so used, even if the argument turns out wrong.
                if let Some(symbol) = symbol {
                    self.program.referenced.insert(symbol);
                }
                if let Some(Symbol::Map(map)) = map_part.and_then(|(m, _)| self.lookup(&m.text)) {
                    self.program.referenced.insert(Symbol::Map(map));
                }
                match symbol {
                    Some(Symbol::Dat(dat)) => {
                        let ty = self.program.dats[dat.index()].ty;
                        let kind = match map_part {
                            None => ArgKind::DirectDat(dat),
                            Some((map, index)) => self.resolve_indirect(
                                file,
                                Some(dat),
                                map,
                                *index,
                                iteration,
                                location,
                            )?,
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
                        (kind, ty, Cow::Borrowed(name))
                    }
                    Some(Symbol::Global(global)) => {
                        let ty = self.program.globals[global.index()].ty;
                        let kind = if argument.info.is_some() {
                            // The position of the argument it follows is
                            // found once every argument is resolved.
                            ArgKind::Info {
                                global,
                                of: u32::MAX,
                            }
                        } else {
                            ArgKind::Global(global)
                        };
                        (kind, ty, Cow::Borrowed(name))
                    }
                    Some(Symbol::Const(id)) => {
                        let ty = self.program.consts[id.index()].ty;
                        (ArgKind::Const(id), ty, Cow::Borrowed(name))
                    }
                    Some(other) => {
                        let (_, declared) = self.program.symbol_name(other);
                        self.report(
                            Diagnostic::new(
                                Code::E103,
                                at(ident.range),
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
                        self.unknown(name, at(ident.range), "dat, global or const", |s| {
                            matches!(s, Symbol::Dat(_) | Symbol::Global(_) | Symbol::Const(_))
                        });
                        return None;
                    }
                }
            }
        };
        if let (Some((_, info)), false) = (&argument.info, matches!(kind, ArgKind::Info { .. })) {
            self.report(
                Diagnostic::new(
                    Code::E308,
                    location,
                    format!("`INFO` is not allowed for `{name}`"),
                )
                .with_label("only a global can record where another global reached its extreme")
                .with_related(at(*info), "`INFO` given here"),
            );
            return None;
        }
        if !matches!(
            kind,
            ArgKind::IndirectDat { .. } | ArgKind::DirectDat(_) | ArgKind::Index(_)
        ) && let Some((map, _)) = map_part
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
                .with_related(at(map.range), "map applied here"),
            );
            return None;
        }
        let mode = match (written_mode, kind) {
            // The kernel may read and write its copy of the global.
            (_, ArgKind::Info { .. }) => AccessMode::Rw,
            (Some(mode), _) => mode,
            (None, ArgKind::Const(_) | ArgKind::Len(_) | ArgKind::Index(_)) => AccessMode::Read,
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
        let allowed = allowed_modes(&kind);
        if !allowed.contains(&mode) {
            let kind_word = match kind {
                ArgKind::DirectDat(_) => "a direct dat",
                ArgKind::IndirectDat { .. } => "an indirect dat",
                ArgKind::Global(_) => "a global",
                ArgKind::Const(_) => "a const",
                ArgKind::Len(_) => "`len(…)`",
                ArgKind::Index(_) => "`idx`",
                ArgKind::Info { .. } => "an `INFO` global",
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
            if let (ArgKind::Const(_) | ArgKind::Len(_) | ArgKind::Index(_), Some(mode_location)) =
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

    /// The map part of an indirect dat (`dat` given) or of `idx[M[K]]`
    /// (`dat` is `None`; the result's dat is then meaningless).
    fn resolve_indirect(
        &mut self,
        file: FileId,
        dat: Option<DatId>,
        map: &Written,
        index: Option<u64>,
        iteration: Option<SetId>,
        argument: Location,
    ) -> Option<ArgKind> {
        let map_id = match self.resolve(file, Some(map), Expect::Map)? {
            Symbol::Map(id) => id,
            _ => return None,
        };
        let map_decl = &self.program.maps[map_id.index()];
        let (from, to, arity, map_location) = (
            map_decl.from,
            map_decl.to,
            map_decl.arity,
            map_decl.location,
        );
        let map_name = &*map.text;
        // E303–E305 point at the argument and relate the map's declaration.
        let problem = |code: Code, message: String, label: String| {
            Diagnostic::new(code, argument, message)
                .with_label(label)
                .with_related(map_location, format!("`{map_name}` is declared here"))
        };
        if let (Some(iteration), Some(from)) = (iteration, from)
            && iteration != from
        {
            let from_name = &self.program.sets[from.index()].name;
            let iteration_name = &self.program.sets[iteration.index()].name;
            let diagnostic = problem(
                Code::E303,
                format!(
                    "map `{map_name}` starts at `{from_name}` but the par_loop iterates over `{iteration_name}`"
                ),
                format!("expected a map from `{iteration_name}`"),
            );
            self.report(diagnostic);
            return None;
        }
        if let Some(dat) = dat
            && let dat_decl = &self.program.dats[dat.index()]
            && let (Some(to), Some(dat_set)) = (to, dat_decl.set)
            && to != dat_set
        {
            let to_name = &self.program.sets[to.index()].name;
            let dat_set_name = &self.program.sets[dat_set.index()].name;
            let diagnostic = problem(
                Code::E304,
                format!(
                    "map `{map_name}` ends at `{to_name}` but dat `{}` lives on `{dat_set_name}`",
                    dat_decl.name
                ),
                format!("expected a map to `{dat_set_name}`"),
            );
            self.report(diagnostic);
            return None;
        }
        let value = index?;
        if value >= u64::from(arity) {
            let diagnostic = problem(
                Code::E305,
                format!("index {value} is out of range for map `{map_name}` of arity {arity}"),
                format!("expected 0 to {}", arity - 1),
            );
            self.report(diagnostic);
            return None;
        }
        Some(ArgKind::IndirectDat {
            dat: dat.unwrap_or(DatId(0)),
            map: map_id,
            index: u32::try_from(value).unwrap_or(u32::MAX),
        })
    }

    /// Binds every `G INFO(R)` to the one argument that reduces `R` with
    /// `MIN` or `MAX` (E313 when there is not exactly one, when `R` has a
    /// dimension other than 1, or when the name is not a global).
    fn resolve_infos(&mut self, file: FileId, par_loop: &ParLoopSyntax, args: &mut [Option<Arg>]) {
        let at = |range: TextRange| Location { file, range };
        for (k, argument) in par_loop.args.iter().enumerate() {
            let Some((Some(written), clause)) = &argument.info else {
                continue;
            };
            let Some(Arg {
                kind: ArgKind::Info { global, .. },
                location,
                ..
            }) = args[k].clone()
            else {
                continue;
            };
            let name = &*written.text;
            let symbol = self.lookup(name);
            if let Some(symbol) = symbol {
                self.program.referenced.insert(symbol);
            }
            let info_name = self.program.globals[global.index()].name.clone();
            let problem = match symbol {
                Some(Symbol::Global(reference)) => {
                    let reducers: Vec<usize> = args
                        .iter()
                        .enumerate()
                        .filter(|(_, a)| {
                            a.as_ref().is_some_and(|a| {
                                a.kind == ArgKind::Global(reference)
                                    && matches!(a.mode, AccessMode::Min | AccessMode::Max)
                            })
                        })
                        .map(|(j, _)| j)
                        .collect();
                    let dimension = self.program.globals[reference.index()].ty.dimension;
                    match reducers.as_slice() {
                        [one] if dimension == 1 => {
                            if let Some(Arg {
                                kind: ArgKind::Info { of, .. },
                                ..
                            }) = &mut args[k]
                            {
                                *of = u32::try_from(*one).unwrap_or(u32::MAX);
                            }
                            continue;
                        }
                        [_] => format!(
                            "`{name}` has dimension {dimension}; `INFO` follows a global of dimension 1"
                        ),
                        [] => {
                            format!("`{name}` is not reduced with `MIN` or `MAX` in this par_loop")
                        }
                        _ => format!(
                            "`{name}` is reduced by {} arguments of this par_loop; `INFO` needs exactly one",
                            reducers.len()
                        ),
                    }
                }
                Some(other) => format!("`{name}` is a {}, not a global", other.kind_name()),
                None => format!("cannot find global `{name}`"),
            };
            self.report(
                Diagnostic::new(
                    Code::E313,
                    at(written.range),
                    format!("`{info_name} INFO({name})`: {problem}"),
                )
                .with_label(
                    "expected a global of dimension 1 passed once with `MIN` or `MAX` in this par_loop",
                )
                .with_related(location, "the `INFO` argument")
                .with_related(at(*clause), "`INFO` given here"),
            );
            args[k] = None;
        }
    }
}

/// The access modes an argument of `kind` may have (language.md §7; any
/// other is E308).
pub(crate) fn allowed_modes(kind: &ArgKind) -> &'static [AccessMode] {
    match kind {
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
        ArgKind::Const(_) | ArgKind::Len(_) | ArgKind::Index(_) => &[AccessMode::Read],
        ArgKind::Info { .. } => &[AccessMode::Rw],
    }
}
