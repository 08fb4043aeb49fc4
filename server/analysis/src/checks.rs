//! Checks over resolved invocations: their names (language.md §6), their
//! arguments against the kernel's parameters, conflicts between arguments
//! (§7 rules 1–5), and kernel bodies against the modes that bind them.

use op2_syntax::ast::AccessMode;
use op2_syntax::{Code, Diagnostic, Fix, Location, TextEdit, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::invocation::InvocationSyntax;
use crate::model::{Arg, ArgKind, Data, InvocationId, Program};

/// Prefixes that the POETS Python loader reads as a type keyword followed by
/// a name, so that a struct member `double_it_begin` becomes `double` plus
/// `_it_begin` (poets-v4.md §2). Invocation names start member names.
const TYPE_KEYWORD_PREFIXES: &[&str] = &[
    "double", "float", "int", "uint", "char", "bool", "half", "unsigned", "signed", "struct",
    "const",
];

/// The type keyword `name` starts with, if any.
pub fn type_keyword_prefix(name: &str) -> Option<&'static str> {
    TYPE_KEYWORD_PREFIXES
        .iter()
        .copied()
        .find(|k| name.starts_with(k))
}

/// Gives every invocation its name (§6) and reports E311 and E312.
pub(crate) fn name_invocations(
    program: &mut Program,
    syntax: &[InvocationSyntax],
    diagnostics: &mut Vec<Diagnostic>,
) {
    // Names generated identifiers are built from, which an invocation may
    // not take.
    let mut reserved: FxHashMap<String, Location> = FxHashMap::default();
    for set in &program.sets {
        reserved.insert(set.name.clone(), set.location);
    }
    for dat in &program.dats {
        reserved.insert(dat.name.clone(), dat.location);
    }
    for global in &program.globals {
        reserved.insert(global.name.clone(), global.location);
    }
    let mut taken: FxHashMap<String, Location> = FxHashMap::default();
    // The first par_loop of a kernel without `as` is named after the kernel.
    let mut first_of_kernel: FxHashSet<usize> = FxHashSet::default();
    for invocation in program
        .invocations
        .iter_mut()
        .filter(|i| !i.named_explicitly)
    {
        let Some(kernel) = invocation.kernel else {
            continue;
        };
        if first_of_kernel.insert(kernel.index()) {
            invocation.name = program.kernels[kernel.index()].name.clone();
            taken.insert(invocation.name.clone(), invocation.name_location);
        }
    }
    // Then explicit names, in source order.
    for invocation in program.invocations.iter().filter(|i| i.named_explicitly) {
        let name = &invocation.name;
        let clash = taken
            .get(name)
            .map(|l| (*l, "invocation"))
            .or_else(|| reserved.get(name).map(|l| (*l, "declaration")));
        if let Some((other, what)) = clash {
            let suggestion = free_name(&format!("{name}_loop"), &taken, &reserved);
            diagnostics.push(
                Diagnostic::new(
                    Code::E311,
                    invocation.name_location,
                    format!("the invocation name `{name}` is already taken"),
                )
                .with_label("names of invocations must be unique")
                .with_related(other, format!("`{name}` is the name of this {what}"))
                .with_fix(Fix {
                    title: format!("rename the invocation to `{suggestion}`"),
                    edits: vec![TextEdit {
                        file: invocation.name_location.file,
                        range: invocation.name_location.range,
                        replacement: suggestion.clone(),
                    }],
                }),
            );
        } else {
            taken.insert(name.clone(), invocation.name_location);
        }
    }
    // Then later par_loops of a kernel: `KERNEL_1`, `KERNEL_2`, …, skipping
    // names already taken.
    let mut next_suffix: FxHashMap<String, u32> = FxHashMap::default();
    let mut seen_kernel: FxHashSet<usize> = FxHashSet::default();
    for invocation in program
        .invocations
        .iter_mut()
        .filter(|i| !i.named_explicitly)
    {
        let Some(kernel) = invocation.kernel else {
            continue;
        };
        if seen_kernel.insert(kernel.index()) {
            // The first: already named.
            continue;
        }
        let base = program.kernels[kernel.index()].name.clone();
        let counter = next_suffix.entry(base.clone()).or_insert(1);
        let name = loop {
            let candidate = format!("{base}_{counter}");
            *counter += 1;
            if !taken.contains_key(&candidate) && !reserved.contains_key(&candidate) {
                break candidate;
            }
        };
        taken.insert(name.clone(), invocation.name_location);
        invocation.name = name;
    }
    for (invocation, positions) in program.invocations.iter().zip(syntax) {
        let name = &invocation.name;
        if name.is_empty() {
            continue;
        }
        if let Some(keyword) = type_keyword_prefix(name) {
            let suggestion = free_name(&format!("run_{name}"), &taken, &reserved);
            let edit = match positions.alias {
                Some(alias) => TextEdit {
                    file: alias.file,
                    range: alias.range,
                    replacement: suggestion.clone(),
                },
                None => TextEdit {
                    file: positions.kernel.file,
                    range: TextRange::empty(positions.kernel.range.end),
                    replacement: format!(" as {suggestion}"),
                },
            };
            diagnostics.push(
                Diagnostic::new(
                    Code::E312,
                    invocation.name_location,
                    format!(
                        "the invocation name `{name}` starts with the type keyword `{keyword}`"
                    ),
                )
                .with_label(format!(
                    "POETS loaders would read `{name}_begin` as `{keyword}` followed by a name"
                ))
                .with_fix(Fix {
                    title: format!("name the invocation `{suggestion}`"),
                    edits: vec![edit],
                }),
            );
        }
    }
}

fn free_name(
    base: &str,
    taken: &FxHashMap<String, Location>,
    reserved: &FxHashMap<String, Location>,
) -> String {
    // A name that starts with a type keyword is never a good suggestion
    // (E312), whatever suffix follows: start from one that does not, or the
    // search below could never succeed.
    let base = if type_keyword_prefix(base).is_some() {
        format!("run_{base}")
    } else {
        base.to_owned()
    };
    let free = |name: &str| !taken.contains_key(name) && !reserved.contains_key(name);
    if free(&base) {
        return base;
    }
    // Of these many distinct candidates at least one is neither taken nor
    // reserved, so the search ends.
    let candidates = taken.len() + reserved.len() + 1;
    (1..=candidates)
        .map(|n| format!("{base}_{n}"))
        .find(|n| free(n))
        .unwrap_or(base)
}

/// The fix that changes argument `k` of `args` to `mode`, unless the new
/// mode is not one the argument may have (E308: `RW` of `idx`, a const,
/// `len(…)` or a global) or would conflict with another argument of the
/// same par_loop (E401): a fix must leave fewer errors, not trade one for
/// another.
fn safe_mode_fix(uses: &Uses, args: &[Option<Arg>], k: usize, mode: AccessMode) -> Option<Fix> {
    let arg = args.get(k)?.as_ref()?;
    if !crate::invocation::allowed_modes(&arg.kind).contains(&mode) {
        return None;
    }
    let changed = Arg {
        mode,
        ..arg.clone()
    };
    if uses.would_conflict(arg, &changed) {
        None
    } else {
        mode_fix(arg, mode)
    }
}

/// The variant of an argument's kind and its mode, the first argument of
/// them and how many there are.
type Class<'a> = (std::mem::Discriminant<ArgKind>, AccessMode, &'a Arg, usize);

/// The arguments of one par_loop by their data, to ask whether one of them
/// changed to another mode would conflict with any other
/// ([`safe_mode_fix`]) without comparing it with each: a par_loop of tens
/// of thousands of arguments, each with a fix, would compare every pair.
struct Uses<'a> {
    /// Per data, the first argument of each variant of [`ArgKind`] and
    /// mode, and how many arguments there are of that variant and mode.
    classes: FxHashMap<Data, Vec<Class<'a>>>,
    /// How many arguments there are of each kind and mode.
    exact: FxHashMap<(ArgKind, AccessMode), usize>,
}

impl<'a> Uses<'a> {
    fn new(args: &'a [Option<Arg>]) -> Uses<'a> {
        let mut uses = Uses {
            classes: FxHashMap::default(),
            exact: FxHashMap::default(),
        };
        for arg in args.iter().flatten() {
            let Some(data) = arg.kind.data() else {
                continue;
            };
            let class = (std::mem::discriminant(&arg.kind), arg.mode);
            let classes = uses.classes.entry(data).or_default();
            match classes.iter_mut().find(|(d, m, _, _)| (*d, *m) == class) {
                Some((_, _, _, count)) => *count += 1,
                None => classes.push((class.0, class.1, arg, 1)),
            }
            *uses.exact.entry((arg.kind, arg.mode)).or_default() += 1;
        }
        uses
    }

    /// Whether `changed`, the argument `original` with another mode, would
    /// conflict with another argument of the par_loop (§7). Whether two
    /// arguments on the same data conflict depends on their variants and
    /// modes alone, but for two written through maps, which conflict only
    /// with the same map and index: those are counted by kind.
    fn would_conflict(&self, original: &Arg, changed: &Arg) -> bool {
        let Some(classes) = changed.kind.data().and_then(|data| self.classes.get(&data)) else {
            return false;
        };
        let own = (std::mem::discriminant(&original.kind), original.mode);
        let by_class = classes.iter().any(|&(d, m, first, count)| {
            let others = count - usize::from((d, m) == own);
            others > 0
                && !(writes_indirectly(changed) && writes_indirectly(first))
                && conflict(first, changed).is_some()
        });
        let by_kind = writes_indirectly(changed)
            && [AccessMode::Write, AccessMode::Rw].into_iter().any(|mode| {
                let count = self.exact.get(&(changed.kind, mode)).copied().unwrap_or(0);
                count > usize::from(original.mode == mode)
            });
        by_class || by_kind
    }
}

fn mode_fix(arg: &Arg, mode: AccessMode) -> Option<Fix> {
    let location = arg.mode_location?;
    Some(Fix {
        title: format!("change the mode to `{mode}`"),
        edits: vec![TextEdit {
            file: location.file,
            range: location.range,
            replacement: mode.keyword().into(),
        }],
    })
}

/// Checks each invocation's arguments against its kernel and each other.
pub(crate) fn check_invocations(
    program: &Program,
    syntax: &[InvocationSyntax],
    diagnostics: &mut Vec<Diagnostic>,
) {
    // Every binding of an argument to a kernel parameter: the kernel, the
    // parameter, whether the mode writes, and the argument, for H505.
    let mut bindings: Vec<(usize, usize, bool, Location)> = Vec::new();
    for (index, (invocation, positions)) in program.invocations.iter().zip(syntax).enumerate() {
        let id = InvocationId(u32::try_from(index).unwrap_or(u32::MAX));
        check_conflicts(program, id, diagnostics);
        let Some(kernel_id) = invocation.kernel else {
            continue;
        };
        let kernel = &program.kernels[kernel_id.index()];
        if invocation.args.len() != kernel.params.len() {
            let expected = kernel.params.len();
            diagnostics.push(
                Diagnostic::new(
                    Code::E301,
                    positions.arguments,
                    format!(
                        "kernel `{}` takes {expected} argument{} but {} {} given",
                        kernel.name,
                        if expected == 1 { "" } else { "s" },
                        invocation.args.len(),
                        if invocation.args.len() == 1 {
                            "was"
                        } else {
                            "were"
                        },
                    ),
                )
                .with_label(format!(
                    "expected {expected} argument{}",
                    if expected == 1 { "" } else { "s" }
                ))
                .with_related(
                    kernel.location,
                    format!("`{}` is defined here", kernel.name),
                ),
            );
            continue;
        }
        // Only built when a diagnostic offers a mode fix.
        let by_data = std::cell::OnceCell::new();
        let arg_uses = || by_data.get_or_init(|| Uses::new(&invocation.args));
        for (k, arg) in invocation.resolved_args() {
            let param = &kernel.params[k];
            let usage = &kernel.summary.params[k];
            let arg_name = ArgName(program, arg);
            if arg.ty.scalar != param.ty {
                diagnostics.push(
                    Diagnostic::new(
                        Code::E306,
                        arg.location,
                        format!(
                            "`{arg_name}` is `{}` but parameter `{}` of `{}` is `{}`",
                            arg.ty.scalar, param.name, kernel.name, param.ty
                        ),
                    )
                    .with_label(format!("expected `{}`", param.ty))
                    .with_related(param.location, "parameter declared here"),
                );
            }
            if let Some(stated) = param.dimension
                && stated != arg.ty.dimension
            {
                diagnostics.push(
                    Diagnostic::new(
                        Code::E307,
                        arg.location,
                        format!(
                            "`{arg_name}` has dimension {} but parameter `{}` states {stated}",
                            arg.ty.dimension, param.name
                        ),
                    )
                    .with_label(format!("expected dimension {stated}"))
                    .with_related(param.location, "parameter declared here"),
                );
            }
            let dimension = param.dimension.unwrap_or(arg.ty.dimension);
            for (value, range) in &usage.constant_indices {
                if *value < 0 || *value >= i128::from(dimension) {
                    diagnostics.push(
                        Diagnostic::new(
                            Code::E507,
                            Location {
                                file: param.location.file,
                                range: *range,
                            },
                            format!(
                                "index {value} is out of range for `{}` of dimension {dimension}",
                                param.name
                            ),
                        )
                        .with_label(format!("expected 0 to {}", dimension.saturating_sub(1)))
                        .with_related(
                            arg.location,
                            format!("`{}` is bound to `{arg_name}` here", param.name),
                        ),
                    );
                }
            }
            let body_diagnostic = |code: Code, range: TextRange, message: String| {
                Diagnostic::new(
                    code,
                    Location {
                        file: param.location.file,
                        range,
                    },
                    message,
                )
                .with_related(
                    arg.location,
                    format!("`{arg_name}` is `{}` here", mode_word(arg)),
                )
            };
            // An `INFO` global's copy is the kernel's to write or not: a
            // `const` parameter just leaves the global as it was.
            if arg.mode.writes() && param.is_const && !matches!(arg.kind, ArgKind::Info { .. }) {
                let mut diagnostic = Diagnostic::new(
                    Code::E504,
                    arg.location,
                    format!(
                        "`{arg_name}` is `{}` but parameter `{}` is `const`",
                        arg.mode, param.name
                    ),
                )
                .with_label("the kernel cannot write through a `const` parameter")
                .with_related(param.location, "declared `const` here");
                if let Some(const_range) = const_qualifier_range(program, param) {
                    diagnostic = diagnostic.with_fix(Fix {
                        title: format!("remove `const` from `{}`", param.name),
                        edits: vec![TextEdit {
                            file: param.location.file,
                            range: const_range,
                            replacement: String::new(),
                        }],
                    });
                }
                diagnostics.push(diagnostic);
            }
            let writes = arg.mode != AccessMode::Read;
            bindings.push((kernel_id.index(), k, writes, arg.location));
            match arg.mode {
                AccessMode::Read => {
                    for range in usage.writes() {
                        let mut diagnostic = body_diagnostic(
                            Code::E501,
                            range,
                            format!("`{}` is bound to the `READ` argument `{arg_name}` but the kernel writes it", param.name),
                        )
                        .with_label("written here");
                        if let Some(fix) =
                            safe_mode_fix(arg_uses(), &invocation.args, k, AccessMode::Rw)
                        {
                            diagnostic = diagnostic.with_fix(fix);
                        }
                        diagnostics.push(diagnostic);
                    }
                }
                AccessMode::Inc => {
                    // One error per argument, at the first use, with the
                    // others as related locations.
                    let uses = usage.non_increment_uses();
                    if let Some((first, others)) = uses.split_first() {
                        let mut diagnostic = body_diagnostic(
                            Code::E502,
                            *first,
                            format!(
                                "`{}` is bound to the `INC` argument `{arg_name}`; it may only be added to with `+=`, `-=`, `++` or `--`",
                                param.name
                            ),
                        )
                        .with_label("not an increment");
                        for range in others {
                            diagnostic = diagnostic.with_related(
                                Location {
                                    file: param.location.file,
                                    range: *range,
                                },
                                "not an increment either",
                            );
                        }
                        // A direct dat may become `RW` when the kernel needs
                        // its value; through a map, or on a global, `RW`
                        // would overwrite where INC sums: the kernel must
                        // add instead.
                        if matches!(arg.kind, ArgKind::DirectDat(_))
                            && let Some(fix) =
                                safe_mode_fix(arg_uses(), &invocation.args, k, AccessMode::Rw)
                        {
                            diagnostic = diagnostic.with_fix(fix);
                        }
                        diagnostics.push(diagnostic);
                    }
                }
                AccessMode::Write => {
                    for range in &usage.unwritten_reads {
                        let mut diagnostic = body_diagnostic(
                            Code::W503,
                            *range,
                            format!("`{}` is read before it is written, but `{arg_name}` is `WRITE`: its incoming value is undefined", param.name),
                        )
                        .with_label("read here before any write");
                        if let Some(fix) =
                            safe_mode_fix(arg_uses(), &invocation.args, k, AccessMode::Rw)
                        {
                            diagnostic = diagnostic.with_fix(fix);
                        }
                        diagnostics.push(diagnostic);
                    }
                    // `WRITE` says every component is set: one that some
                    // path leaves alone has no defined value (`op2 run`
                    // and the graph then disagree).
                    if let Some(component) = usage.unwritten_component(dimension) {
                        let mut diagnostic = Diagnostic::new(
                            Code::W503,
                            arg.location,
                            format!(
                                "`{arg_name}` is `WRITE` but `{}` does not write component {component} of `{}` on every path: its value there is undefined",
                                kernel.name, param.name
                            ),
                        )
                        .with_label("`WRITE` says every component is set")
                        .with_related(param.location, "parameter declared here");
                        if let Some(fix) =
                            safe_mode_fix(arg_uses(), &invocation.args, k, AccessMode::Rw)
                        {
                            diagnostic = diagnostic.with_fix(fix);
                        }
                        diagnostics.push(diagnostic);
                    }
                }
                // An `INFO` global is read and written as the kernel likes.
                AccessMode::Rw if matches!(arg.kind, ArgKind::Info { .. }) => {}
                AccessMode::Rw => {
                    let (weaker, saved) = if !usage.is_written() {
                        (Some(AccessMode::Read), "the write-back")
                    } else if !usage.is_read() && usage.writes_every_component(dimension) {
                        // Only when every component is set on every path:
                        // `WRITE` leaves the others undefined.
                        (Some(AccessMode::Write), "the read")
                    } else {
                        (None, "")
                    };
                    if let Some(weaker) = weaker {
                        let messages = u32::from(arg.kind.is_indirect());
                        let reason = if weaker == AccessMode::Read {
                            "never writes"
                        } else {
                            "never reads"
                        };
                        let mut diagnostic = Diagnostic::new(
                            Code::H506,
                            arg.location,
                            format!(
                                "`{arg_name}` is `RW` but the kernel {reason} `{}`; `{weaker}` would do and saves {messages} message{} per element",
                                param.name,
                                if messages == 1 { "" } else { "s" }
                            ),
                        )
                        .with_label(format!("`{weaker}` drops {saved}"))
                        .with_related(param.location, "parameter declared here");
                        if let Some(fix) = safe_mode_fix(arg_uses(), &invocation.args, k, weaker) {
                            diagnostic = diagnostic.with_fix(fix);
                        }
                        diagnostics.push(diagnostic);
                    }
                }
                AccessMode::Min | AccessMode::Max => {}
            }
        }
    }
    // H505: a parameter bound only to READ arguments that is not `const`.
    // In order of kernel and parameter, and of the source within each.
    bindings.sort_by_key(|(kernel, k, _, _)| (*kernel, *k));
    for group in bindings.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        let (kernel, k, _, _) = group[0];
        if group.iter().any(|(_, _, writes, _)| *writes) {
            continue;
        }
        let arguments = group.iter().map(|(_, _, _, location)| *location);
        let kernel = &program.kernels[kernel];
        let param = &kernel.params[k];
        if param.is_const || kernel.summary.params[k].is_written() {
            continue;
        }
        let mut diagnostic = Diagnostic::new(
            Code::H505,
            param.location,
            format!(
                "parameter `{}` is only bound to `READ` arguments; declare it `const`",
                param.name
            ),
        )
        .with_label("could be `const`")
        .with_fix(Fix {
            title: format!("make `{}` `const`", param.name),
            edits: vec![TextEdit {
                file: param.location.file,
                range: TextRange::empty(param.location.range.start),
                replacement: "const ".into(),
            }],
        });
        for location in arguments {
            diagnostic = diagnostic.with_related(location, "bound to this `READ` argument");
        }
        diagnostics.push(diagnostic);
    }
}

/// The range of `const ` in a parameter, for the fix that removes it.
fn const_qualifier_range(program: &Program, param: &crate::model::Param) -> Option<TextRange> {
    let text = &program.file(param.location.file).text;
    let source = text.get(param.location.range.to_usize())?;
    let rest = source.strip_prefix("const")?;
    let spaces = rest.len() - rest.trim_start().len();
    let start = param.location.range.start;
    Some(TextRange::new(
        start,
        start + 5 + u32::try_from(spaces).unwrap_or(0),
    ))
}

/// The argument as the user wrote it, for messages: `p_x`, `len(cells)`.
pub(crate) fn arg_name(program: &Program, arg: &Arg) -> String {
    ArgName(program, arg).to_string()
}

/// Displays as [`arg_name`] without allocating until a message needs it.
struct ArgName<'p>(&'p Program, &'p Arg);

impl std::fmt::Display for ArgName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ArgName(program, arg) = self;
        match arg.kind {
            ArgKind::DirectDat(dat) | ArgKind::IndirectDat { dat, .. } => {
                f.write_str(&program.dats[dat.index()].name)
            }
            ArgKind::Global(global) => f.write_str(&program.globals[global.index()].name),
            ArgKind::Const(id) => f.write_str(&program.consts[id.index()].name),
            ArgKind::Len(set) => write!(f, "len({})", program.sets[set.index()].name),
            ArgKind::Index(None) => f.write_str("idx"),
            ArgKind::Index(Some((map, index))) => {
                write!(f, "idx[{}[{index}]]", program.maps[map.index()].name)
            }
            ArgKind::Info { global, .. } => f.write_str(&program.globals[global.index()].name),
        }
    }
}

/// Rules 1–5 of §7 for one invocation, and W402: each argument against
/// the first earlier one it clashes with ([`first_clashes`]).
fn check_conflicts(program: &Program, id: InvocationId, diagnostics: &mut Vec<Diagnostic>) {
    let args = &program.invocations[id.index()].args;
    for (later, earlier) in first_clashes(args) {
        let (Some(later), Some(earlier)) = (&args[later], &args[earlier]) else {
            continue;
        };
        // Consts, `len` and `idx` have no data to conflict on, but passing
        // one twice is still the same argument twice.
        let Some(data) = later.kind.data() else {
            let name = arg_name(program, later);
            diagnostics.push(
                Diagnostic::new(
                    Code::W402,
                    later.location,
                    format!("`{name}` is passed twice"),
                )
                .with_label("same argument again")
                .with_related(earlier.location, "first given here"),
            );
            continue;
        };
        let name = program.data_name(data);
        if let Some(rule) = conflict(earlier, later) {
            diagnostics.push(
                Diagnostic::new(
                    Code::E401,
                    later.location,
                    format!("conflicting accesses to `{name}` in one par_loop: {rule}"),
                )
                .with_label(format!("`{name}` is `{}` here", mode_word(later)))
                .with_related(
                    earlier.location,
                    format!("and `{}` here", mode_word(earlier)),
                ),
            );
        } else {
            diagnostics.push(
                Diagnostic::new(
                    Code::W402,
                    later.location,
                    format!(
                        "`{name}` is passed twice {}",
                        match later.kind {
                            ArgKind::IndirectDat { .. } => "with the same map, index and mode",
                            ArgKind::DirectDat(_) => "directly with the same mode",
                            _ => "with the same mode",
                        }
                    ),
                )
                .with_label("same argument again")
                .with_related(earlier.location, "first given here"),
            );
        }
    }
}

/// Whether `later` clashes with `earlier`, an argument before it on the
/// same data (or of the same kind, for those without data): the same
/// argument again (W402) or a conflict of §7 (E401).
fn clashes(earlier: &Arg, later: &Arg) -> bool {
    if later.kind.data().is_none() {
        return earlier.kind == later.kind;
    }
    conflict(earlier, later).is_some() || (earlier.kind == later.kind && earlier.mode == later.mode)
}

/// True for an argument written through a map: the one case where whether
/// two arguments conflict depends on more than their variants and modes
/// (on whether they have the same map and index, [`conflict`]).
fn writes_indirectly(arg: &Arg) -> bool {
    arg.kind.is_indirect() && matches!(arg.mode, AccessMode::Write | AccessMode::Rw)
}

/// The earlier arguments on one data (or of one kind, without data) that a
/// later argument can clash with first.
#[derive(Default)]
struct Earlier {
    /// The first argument of each variant of [`ArgKind`] and mode: whether
    /// an argument conflicts with an earlier one depends only on these, but
    /// for two arguments both written through maps.
    classes: Vec<(std::mem::Discriminant<ArgKind>, AccessMode, usize)>,
    /// The first argument of each kind and mode.
    exact: FxHashMap<(ArgKind, AccessMode), usize>,
}

/// For each argument of `args` that clashes with an earlier one ([`clashes`]),
/// its index and the first such earlier one's, in the order of the
/// arguments: the diagnostic of the par_loop's rules names that pair.
///
/// A later argument is compared with at most one earlier argument of each
/// variant and mode, and looked up by its own kind among the others, never
/// with every earlier one: a par_loop of tens of thousands of arguments on
/// one dat through different map indices took 7.3 s comparing each pair
/// (review of 2026-11-29); now linear in the arguments.
fn first_clashes(args: &[Option<Arg>]) -> Vec<(usize, usize)> {
    let mut earlier_of: FxHashMap<Result<Data, ArgKind>, Earlier> = FxHashMap::default();
    let mut found = Vec::new();
    for (index, later) in args.iter().enumerate() {
        let Some(later) = later else {
            continue;
        };
        let key = later.kind.data().ok_or(later.kind);
        let earlier = earlier_of.entry(key).or_default();
        let arg = |i: usize| args[i].as_ref();
        let mut first: Option<usize> = None;
        let mut consider = |i: usize| {
            if arg(i).is_some_and(|e| clashes(e, later)) && first.is_none_or(|f| i < f) {
                first = Some(i);
            }
        };
        for &(_, _, i) in &earlier.classes {
            // Two arguments written through maps conflict only on the same
            // map and index: those are found by their kind below.
            if !(writes_indirectly(later) && arg(i).is_some_and(writes_indirectly)) {
                consider(i);
            }
        }
        for mode in [later.mode, AccessMode::Write, AccessMode::Rw] {
            if let Some(&i) = earlier.exact.get(&(later.kind, mode)) {
                consider(i);
            }
        }
        if let Some(first) = first {
            found.push((index, first));
        }
        let class = (std::mem::discriminant(&later.kind), later.mode);
        if !earlier.classes.iter().any(|&(d, m, _)| (d, m) == class) {
            earlier.classes.push((class.0, class.1, index));
        }
        earlier
            .exact
            .entry((later.kind, later.mode))
            .or_insert(index);
    }
    found
}

/// The mode of `arg` as the user wrote it: an `INFO` global is `RW` inside
/// the analysis, but the program says `INFO`.
fn mode_word(arg: &Arg) -> String {
    match arg.kind {
        ArgKind::Info { .. } => "INFO".to_owned(),
        _ => arg.mode.to_string(),
    }
}

/// Which rule of §7 two arguments on the same data break, if any.
fn conflict(a: &Arg, b: &Arg) -> Option<&'static str> {
    let direct_write = |x: &Arg| {
        matches!(x.kind, ArgKind::DirectDat(_))
            && matches!(x.mode, AccessMode::Write | AccessMode::Rw)
    };
    let indirect_write =
        |x: &Arg| x.kind.is_indirect() && matches!(x.mode, AccessMode::Write | AccessMode::Rw);
    let global = matches!(a.kind, ArgKind::Global(_));
    if matches!(a.kind, ArgKind::Info { .. }) || matches!(b.kind, ArgKind::Info { .. }) {
        return Some("a global recorded with `INFO` may appear in no other argument");
    }
    if direct_write(a) || direct_write(b) {
        return Some("a dat written directly may appear in no other argument");
    }
    if indirect_write(a) || indirect_write(b) {
        if indirect_write(a) && indirect_write(b) && a.kind == b.kind {
            // The same map and index reach the same element from every
            // element of the set: E704 would refuse every instance.
            return Some("two arguments write the same element through the same map and index");
        }
        return (!(indirect_write(a) && indirect_write(b))).then_some(
            "a dat written through a map may appear only in other indirect `WRITE`/`RW` arguments",
        );
    }
    if a.mode == AccessMode::Inc || b.mode == AccessMode::Inc {
        return (a.mode != b.mode)
            .then_some("an incremented dat or global may appear only in other `INC` arguments");
    }
    if global && (a.mode.is_reduction() || b.mode.is_reduction()) && a.mode != b.mode {
        return Some(
            "a global reduced with `INC`, `MIN` or `MAX` may appear in no argument with another mode",
        );
    }
    None
}

/// E609: a `fetch` whose global has another element type than the dat, or a
/// length that is not a whole number of the dat's elements (the set's size
/// is checked with the instance data, `op2_instance`'s `check_fetches`).
pub(crate) fn check_fetches(program: &Program, diagnostics: &mut Vec<Diagnostic>) {
    let Some(main) = program.main.as_deref() else {
        return;
    };
    let Some(file) = program.main_location.map(|l| l.file) else {
        return;
    };
    for fetch in crate::hir::fetches(main) {
        let dat = &program.dats[fetch.dat.index()];
        let global = &program.globals[fetch.global.index()];
        let location = Location {
            file,
            range: fetch.global_range,
        };
        let problem = if global.ty.scalar != dat.ty.scalar {
            Some(format!(
                "`fetch` copies the `{}` values of dat `{}` into global `{}`, a `{}`: the types differ",
                dat.ty.scalar, dat.name, global.name, global.ty
            ))
        } else if dat.ty.dimension > 0 && !global.ty.dimension.is_multiple_of(dat.ty.dimension) {
            Some(format!(
                "global `{}` holds {} values, not a whole number of the {} values each element of dat `{}` has",
                global.name, global.ty.dimension, dat.ty.dimension, dat.name
            ))
        } else {
            None
        };
        if let Some(message) = problem {
            diagnostics.push(Diagnostic::new(Code::E609, location, message).with_related(
                global.location,
                format!("`{}` is declared here as `{}`", global.name, global.ty),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ConstId, DatId, ElementType, GlobalId, MapId, SetId};
    use op2_syntax::ast::ScalarType;
    use proptest::prelude::*;

    /// The first clash of each argument found by comparing it with every
    /// earlier argument in order, as the check did before `first_clashes`.
    fn pairwise(args: &[Option<Arg>]) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        for (j, later) in args.iter().enumerate() {
            let Some(later) = later else { continue };
            let key = later.kind.data().ok_or(later.kind);
            // The old loop's decisions, written out again rather than
            // through `clashes`, so that a change of either shows.
            let first = (0..j).find(|&i| {
                args[i].as_ref().is_some_and(|earlier| {
                    if earlier.kind.data().ok_or(earlier.kind) != key {
                        return false;
                    }
                    if later.kind.data().is_none() {
                        return earlier.kind == later.kind;
                    }
                    let conflicting = conflict(earlier, later);
                    let repeated = conflicting.is_none()
                        && earlier.kind == later.kind
                        && earlier.mode == later.mode;
                    repeated || conflicting.is_some()
                })
            });
            if let Some(i) = first {
                found.push((j, i));
            }
        }
        found
    }

    /// Arguments drawn from a few dats, maps, indices, globals and consts,
    /// in every mode (valid or not: the check sees what the user wrote),
    /// some missing (arguments that did not resolve).
    fn argument() -> impl Strategy<Value = Option<Arg>> {
        let kind = prop_oneof![
            (0..2u32).prop_map(|d| ArgKind::DirectDat(DatId(d))),
            (0..2u32, 0..2u32, 0..3u32).prop_map(|(d, m, index)| ArgKind::IndirectDat {
                dat: DatId(d),
                map: MapId(m),
                index,
            }),
            (0..2u32).prop_map(|g| ArgKind::Global(GlobalId(g))),
            (0..2u32, 0..3u32).prop_map(|(g, of)| ArgKind::Info {
                global: GlobalId(g),
                of,
            }),
            (0..2u32).prop_map(|c| ArgKind::Const(ConstId(c))),
            (0..2u32).prop_map(|s| ArgKind::Len(SetId(s))),
            Just(ArgKind::Index(None)),
        ];
        let mode = prop_oneof![
            Just(AccessMode::Read),
            Just(AccessMode::Write),
            Just(AccessMode::Rw),
            Just(AccessMode::Inc),
            Just(AccessMode::Min),
            Just(AccessMode::Max),
        ];
        proptest::option::weighted(
            0.9,
            (kind, mode).prop_map(|(kind, mode)| Arg {
                kind,
                mode,
                location: Location::default(),
                mode_location: None,
                ty: ElementType {
                    scalar: ScalarType::Double,
                    dimension: 1,
                },
            }),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// A mode fix is refused exactly when the changed argument would
        /// conflict with some other argument on its data, as when it was
        /// compared with each.
        #[test]
        fn mode_fixes_are_refused_as_when_every_argument_was_compared(
            args in proptest::collection::vec(argument(), 1..24),
            k in 0..24usize,
            mode in 0..6usize,
        ) {
            let k = k % args.len();
            let Some(original) = &args[k] else { return Ok(()) };
            let changed = Arg { mode: AccessMode::ALL[mode], ..original.clone() };
            let data = changed.kind.data();
            let expected = args.iter().enumerate().any(|(j, other)| {
                j != k
                    && other.as_ref().is_some_and(|other| {
                        data.is_some() && other.kind.data() == data && conflict(other, &changed).is_some()
                    })
            });
            prop_assert_eq!(Uses::new(&args).would_conflict(original, &changed), expected);
        }

        /// Each argument is reported against the same earlier argument as
        /// when every pair was compared.
        #[test]
        fn first_clashes_agree_with_every_pair_compared(
            args in proptest::collection::vec(argument(), 0..24)
        ) {
            prop_assert_eq!(first_clashes(&args), pairwise(&args));
        }
    }
}
