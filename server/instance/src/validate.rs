//! Checking what was read against the program: missing entries (E701), row
//! counts (E703), map targets (E702), WRITE/RW races (E704), the globals
//! `fetch` fills (E609), values that no
//! initialiser can hold; and filling in the program's values where the data
//! gives none.

use op2_analysis::hir;
use op2_analysis::model::{ArgKind, InitialValue, Invocation, MapId, Program};
use op2_analysis::value::Value;
use op2_syntax::ast::AccessMode;
use op2_syntax::{Code, Related};

use super::json::{BAD_TARGET, Problems, Raw, RawMap, Section};
use super::{DatValues, Given, InstanceData, MAX_DAT_VALUES, Phase, Progress};

/// Steps between progress reports.
const TICK: u64 = 1 << 16;

/// The invocations the graph runs: those whose kernel, set and arguments
/// all resolved (as `build::invocation_plans` selects them).
pub(super) fn runnable(program: &Program) -> impl Iterator<Item = (usize, &Invocation)> {
    program.invocations.iter().enumerate().filter(|(_, i)| {
        i.kernel.is_some() && i.set.is_some() && i.args.iter().all(Option::is_some)
    })
}

/// Which sets need a size and which maps need targets.
struct Usage {
    sets: Vec<bool>,
    maps: Vec<bool>,
}

fn usage(program: &Program) -> Usage {
    let mut usage = Usage {
        sets: vec![false; program.sets.len()],
        maps: vec![false; program.maps.len()],
    };
    for (_, invocation) in runnable(program) {
        if let Some(set) = invocation.set {
            usage.sets[set.index()] = true;
        }
        for (_, arg) in invocation.resolved_args() {
            match arg.kind {
                ArgKind::IndirectDat { dat, map, .. } => {
                    usage.maps[map.index()] = true;
                    let m = &program.maps[map.index()];
                    for set in [m.from, m.to, program.dats[dat.index()].set]
                        .into_iter()
                        .flatten()
                    {
                        usage.sets[set.index()] = true;
                    }
                }
                // `idx[M[K]]` reads the map's targets.
                ArgKind::Index(Some((map, _))) => {
                    usage.maps[map.index()] = true;
                    let m = &program.maps[map.index()];
                    for set in [m.from, m.to].into_iter().flatten() {
                        usage.sets[set.index()] = true;
                    }
                }
                ArgKind::Len(set) => usage.sets[set.index()] = true,
                _ => {}
            }
        }
    }
    let mut mark = |expr: &hir::Expr| {
        if let hir::ExprKind::Len(set) = expr.kind {
            usage.sets[set.index()] = true;
        }
    };
    let bodies = program
        .main
        .iter()
        .map(|b| &**b)
        .chain(program.kernels.iter().map(|k| &*k.body));
    for body in bodies {
        for stmt in &body.statements {
            hir::walk_stmt_exprs(stmt, &mut mark);
        }
    }
    // `fetch` copies every element of a dat's set.
    for fetch in program.main.iter().flat_map(|main| hir::fetches(main)) {
        if let Some(set) = program.dats[fetch.dat.index()].set {
            usage.sets[set.index()] = true;
        }
    }
    usage
}

/// `values` as exactly `dimension` components: a single value is repeated,
/// anything else cut or padded with zeros.
fn components(values: &[Value], dimension: u32, ty: op2_syntax::ast::ScalarType) -> Vec<Value> {
    let dimension = dimension as usize;
    if values.len() == 1 && dimension > 1 {
        return vec![values[0].convert(ty); dimension];
    }
    (0..dimension)
        .map(|c| values.get(c).map_or(Value::zero(ty), |v| v.convert(ty)))
        .collect()
}

/// True when a value can be written in an initialiser.
fn finite(value: Value) -> bool {
    match value {
        Value::Double(v) => v.is_finite(),
        Value::Float(v) => v.is_finite(),
        _ => true,
    }
}

/// Reports the first value of the program's own that is NaN or infinite;
/// `what` says whose value it is.
fn check_program_values(
    problems: &mut Problems<'_>,
    section: Section,
    id: u32,
    what: &str,
    values: &[Value],
) {
    if let Some((component, value)) = values.iter().enumerate().find(|(_, v)| !finite(**v)) {
        problems.report(Code::E701, section, id, &[], || {
            format!(
                "{what} is {value} (component {component}), which a POETS initialiser cannot hold; give a finite value here"
            )
        });
    }
}

/// Checks `raw` and completes it with the program's values.
pub(super) fn validate(
    raw: Raw,
    program: &Program,
    problems: &mut Problems<'_>,
    progress: &mut dyn Progress,
) -> InstanceData {
    let usage = usage(program);
    let Raw {
        sets,
        maps,
        dats,
        consts,
        globals,
        malformed,
    } = raw;

    // Sets.
    let mut sizes: Vec<Option<u32>> = Vec::with_capacity(program.sets.len());
    for (index, set) in program.sets.iter().enumerate() {
        let id = index as u32;
        sizes.push(match sets[index] {
            Some(size) => size,
            None => {
                if usage.sets[index] && !malformed.contains(&Section::Sets) {
                    problems.report(Code::E701, Section::Sets, id, &[], || {
                        format!("the size of set `{}` is missing", set.name)
                    });
                }
                None
            }
        });
    }
    let set_sizes: Vec<u32> = sizes.iter().map(|s| s.unwrap_or(0)).collect();
    progress.instance_size(set_sizes.iter().map(|&n| u64::from(n)).sum());

    // Consts.
    let mut const_values = Vec::with_capacity(program.consts.len());
    for (index, c) in program.consts.iter().enumerate() {
        let id = index as u32;
        let values = match (&consts[index], &c.value) {
            (Some(given), _) => components(given, c.ty.dimension, c.ty.scalar),
            (None, Some(value)) => {
                let values = components(value, c.ty.dimension, c.ty.scalar);
                check_program_values(
                    problems,
                    Section::Consts,
                    id,
                    &format!("the program's value of const `{}`", c.name),
                    &values,
                );
                values
            }
            (None, None) => {
                if !malformed.contains(&Section::Consts) {
                    problems.report(Code::E701, Section::Consts, id, &[], || {
                    format!(
                        "const `{}` has no value in the program, so the instance data must give one",
                        c.name
                    )
                    });
                }
                components(&[], c.ty.dimension, c.ty.scalar)
            }
        };
        const_values.push(values);
    }
    let initial = |init: &InitialValue, ty: op2_analysis::model::ElementType| match init {
        InitialValue::Zero => components(&[], ty.dimension, ty.scalar),
        InitialValue::Components(values) => components(values, ty.dimension, ty.scalar),
        InitialValue::FromConst(c) => components(&const_values[c.index()], ty.dimension, ty.scalar),
    };

    // Globals.
    let mut global_values = Vec::with_capacity(program.globals.len());
    for (index, g) in program.globals.iter().enumerate() {
        let values = match &globals[index] {
            Some(given) => components(given, g.ty.dimension, g.ty.scalar),
            None => {
                let values = initial(&g.init, g.ty);
                if !matches!(g.init, InitialValue::FromConst(_)) {
                    check_program_values(
                        problems,
                        Section::Globals,
                        index as u32,
                        &format!("the program's initial value of global `{}`", g.name),
                        &values,
                    );
                }
                values
            }
        };
        global_values.push(values);
    }

    // Dats.
    let mut dat_values = Vec::with_capacity(program.dats.len());
    for (index, (d, given)) in program.dats.iter().zip(dats).enumerate() {
        let id = index as u32;
        match given {
            Some(raw) => {
                if let Some((set, Some(size))) = d.set.map(|s| (s, sizes[s.index()]))
                    && !raw.malformed
                    && raw.rows != u64::from(size)
                {
                    problems.report(Code::E703, Section::Dats, id, &[], || {
                        format!(
                            "{} row{}, but set `{}` has {size} element{}",
                            raw.rows,
                            plural(raw.rows),
                            program.sets[set.index()].name,
                            plural(size.into())
                        )
                    });
                }
                dat_values.push(DatValues::Given(raw.column));
            }
            None => {
                let values = initial(&d.init, d.ty);
                if !matches!(d.init, InitialValue::FromConst(_)) {
                    check_program_values(
                        problems,
                        Section::Dats,
                        id,
                        &format!("the program's initial value of dat `{}`", d.name),
                        &values,
                    );
                }
                dat_values.push(DatValues::Uniform(values));
            }
        }
    }

    // The values every dat holds in a run, checked before a run allocates
    // them (a dat without data is expanded from the program's value).
    let mut dat_total = 0u64;
    for (index, d) in program.dats.iter().enumerate() {
        let Some(size) = d.set.and_then(|s| sizes[s.index()]) else {
            continue;
        };
        let values = u64::from(size) * u64::from(d.ty.dimension);
        dat_total += values;
        if dat_total > MAX_DAT_VALUES {
            problems.report(Code::E701, Section::Dats, index as u32, &[], || {
                format!(
                    "dat `{}` needs {values} values ({size} elements of dimension {}), which brings the dats to more than the {MAX_DAT_VALUES} values a run may hold",
                    d.name, d.ty.dimension
                )
            });
            break;
        }
    }

    // Maps.
    let total: u64 =
        maps.iter().flatten().map(|m| m.rows).sum::<u64>() + e704_work(program, &set_sizes);
    progress.start(Phase::Validating, Some(total));
    let mut ticks = 0u64;
    let mut map_ok = vec![false; program.maps.len()];
    let mut map_targets: Vec<Option<Vec<u32>>> = Vec::with_capacity(program.maps.len());
    for (index, (m, given)) in program.maps.iter().zip(maps).enumerate() {
        let id = index as u32;
        let Some(raw) = given else {
            if usage.maps[index] && !malformed.contains(&Section::Maps) {
                problems.report(Code::E701, Section::Maps, id, &[], || {
                    format!("the targets of map `{}` are missing", m.name)
                });
            }
            map_targets.push(None);
            continue;
        };
        let mut ok = !raw.malformed;
        if raw.malformed {
            // Reported: nothing to check.
        } else if let Some((from, Some(size))) = m.from.map(|s| (s, sizes[s.index()])) {
            if raw.rows != u64::from(size) {
                ok = false;
                problems.report(Code::E703, Section::Maps, id, &[], || {
                    format!(
                        "{} row{}, but set `{}` has {size} element{}",
                        raw.rows,
                        plural(raw.rows),
                        program.sets[from.index()].name,
                        plural(size.into())
                    )
                });
            }
        } else {
            ok = false;
        }
        match m.to.map(|s| (s, sizes[s.index()])) {
            Some((to, Some(size))) => {
                let set_name = &program.sets[to.index()].name;
                ok &= check_targets(&raw, m.arity, size, set_name, id, problems);
            }
            _ => ok = false,
        }
        ticks += raw.rows;
        if ticks >= TICK {
            progress.advance(ticks);
            ticks = 0;
        }
        map_ok[index] = ok;
        map_targets.push(Some(raw.targets));
    }

    let given = Given {
        sets: sets.iter().map(Option::is_some).collect(),
        consts: consts.iter().map(Option::is_some).collect(),
        globals: globals.iter().map(Option::is_some).collect(),
    };
    let mut data = InstanceData {
        set_sizes,
        maps: map_targets,
        dats: dat_values,
        consts: const_values,
        globals: global_values,
        given,
    };
    check_races(program, &data, &map_ok, problems, progress);
    check_fetches(program, &data, problems);
    progress.advance(ticks);
    progress.finish();
    if problems.has_errors() {
        // Nothing will be built: give the memory back early.
        data.maps.clear();
        data.dats.clear();
    }
    data
}

/// E702 for every target of `raw` outside a set of `size` elements; true
/// when all are inside.
fn check_targets(
    raw: &RawMap,
    arity: u32,
    size: u32,
    set_name: &str,
    id: u32,
    problems: &mut Problems<'_>,
) -> bool {
    let arity = u64::from(arity.max(1));
    let mut ok = true;
    let message = |target: &str| {
        format!(
            "target {target} is outside set `{set_name}` of {size} element{}",
            plural(size.into())
        )
    };
    for (row, column, text) in &raw.bad {
        ok = false;
        problems.report(Code::E702, Section::Maps, id, &[*row, *column], || {
            message(text)
        });
    }
    for (position, &target) in raw.targets.iter().enumerate() {
        if target < size {
            continue;
        }
        ok = false;
        if target != BAD_TARGET {
            let position = position as u64;
            problems.report(
                Code::E702,
                Section::Maps,
                id,
                &[position / arity, position % arity],
                || message(&target.to_string()),
            );
        }
    }
    ok
}

/// An indirect argument: its position, map and map index.
type Through = (usize, MapId, u32);

/// The indirect WRITE/RW arguments of an invocation, grouped by dat.
fn exclusive_writes(invocation: &Invocation) -> Vec<Vec<Through>> {
    let mut groups: Vec<(op2_analysis::model::DatId, Vec<Through>)> = Vec::new();
    for (index, arg) in invocation.resolved_args() {
        let ArgKind::IndirectDat { dat, map, index: k } = arg.kind else {
            continue;
        };
        if !matches!(arg.mode, AccessMode::Write | AccessMode::Rw) {
            continue;
        }
        match groups.iter_mut().find(|(d, _)| *d == dat) {
            Some((_, args)) => args.push((index, map, k)),
            None => groups.push((dat, vec![(index, map, k)])),
        }
    }
    groups.into_iter().map(|(_, args)| args).collect()
}

fn e704_work(program: &Program, sizes: &[u32]) -> u64 {
    runnable(program)
        .map(|(_, invocation)| {
            let groups = exclusive_writes(invocation).len() as u64;
            let size = invocation.set.map_or(0, |s| u64::from(sizes[s.index()]));
            groups * size
        })
        .sum()
}

/// E609: a `fetch` whose global does not hold exactly the set's size times
/// the dat's dimension (the analysis checked the type and that the length
/// is a multiple of the dimension), at the `fetch`, before anything runs.
fn check_fetches(program: &Program, data: &InstanceData, problems: &mut Problems<'_>) {
    let (Some(main), Some(at)) = (program.main.as_deref(), program.main_location) else {
        return;
    };
    for fetch in hir::fetches(main) {
        let dat = &program.dats[fetch.dat.index()];
        let global = &program.globals[fetch.global.index()];
        // A missing size is E701 already.
        let Some(set) = dat.set.filter(|s| data.given.sets[s.index()]) else {
            continue;
        };
        let size = u64::from(data.set_size(set));
        let needed = size * u64::from(dat.ty.dimension);
        let holds = u64::from(global.ty.dimension);
        if needed == holds {
            continue;
        }
        let location = op2_syntax::Location {
            file: at.file,
            range: fetch.range,
        };
        let related = vec![Related {
            location: global.location,
            message: format!("`{}` is declared here as `{}`", global.name, global.ty),
        }];
        problems.report_related(Code::E609, Section::Sets, set.0, &[], location, related, || {
            format!(
                "`fetch {} into {}` copies {needed} value{} (set `{}` has {size} element{}, of {} each), but global `{}` holds {holds}",
                dat.name,
                global.name,
                plural(needed),
                program.sets[set.index()].name,
                plural(size),
                dat.ty.dimension,
                global.name
            )
        });
    }
}

/// E704: two deliveries of one invocation's WRITE/RW arguments to the same
/// element of a dat (compilation.md §7).
fn check_races(
    program: &Program,
    data: &InstanceData,
    map_ok: &[bool],
    problems: &mut Problems<'_>,
    progress: &mut dyn Progress,
) {
    let mut owner: Vec<u32> = Vec::new();
    let mut owner_arg: Vec<u32> = Vec::new();
    for (_, invocation) in runnable(program) {
        let Some(set) = invocation.set else { continue };
        let elements = data.set_size(set);
        for args in exclusive_writes(invocation) {
            let (first, _, _) = args[0];
            let Some(Some(target_set)) = invocation.args[first].as_ref().map(|a| match a.kind {
                ArgKind::IndirectDat { dat, .. } => program.dats[dat.index()].set,
                _ => None,
            }) else {
                continue;
            };
            if args.iter().any(|(_, map, _)| !map_ok[map.index()]) {
                continue;
            }
            let targets = data.set_size(target_set) as usize;
            owner.clear();
            owner.resize(targets, u32::MAX);
            owner_arg.clear();
            owner_arg.resize(targets, 0);
            for e in 0..elements {
                for (arg, map, k) in &args {
                    let arity = program.maps[map.index()].arity as usize;
                    let Some(row) = data.map(*map) else { continue };
                    let position = e as usize * arity + *k as usize;
                    let t = row[position] as usize;
                    if owner[t] == u32::MAX {
                        owner[t] = e;
                        owner_arg[t] = *arg as u32;
                        continue;
                    }
                    let (e0, arg0) = (owner[t], owner_arg[t] as usize);
                    report_race(program, invocation, (e0, arg0), (e, *arg), t, problems);
                }
                if e % (TICK as u32) == TICK as u32 - 1 {
                    progress.advance(TICK);
                }
            }
            progress.advance(u64::from(elements) % TICK);
        }
    }
}

fn map_entry(
    problems: &Problems<'_>,
    program: &Program,
    invocation: &Invocation,
    arg: usize,
    element: u32,
) -> (MapId, String) {
    match invocation.args[arg].as_ref().map(|a| a.kind) {
        Some(ArgKind::IndirectDat { map, index, .. }) => (
            map,
            problems.path(
                Section::Maps,
                &program.maps[map.index()].name,
                &[u64::from(element), u64::from(index)],
            ),
        ),
        _ => (MapId(0), String::new()),
    }
}

fn report_race(
    program: &Program,
    invocation: &Invocation,
    (e0, arg0): (u32, usize),
    (e1, arg1): (u32, usize),
    target: usize,
    problems: &mut Problems<'_>,
) {
    let (_, first) = map_entry(problems, program, invocation, arg0, e0);
    let (map, second) = map_entry(problems, program, invocation, arg1, e1);
    let Some(a1) = invocation.args[arg1].as_ref() else {
        return;
    };
    let ArgKind::IndirectDat { dat, .. } = a1.kind else {
        return;
    };
    let dat_name = &program.dats[dat.index()].name;
    let set_name = invocation
        .set
        .map_or("", |s| program.sets[s.index()].name.as_str());
    let mut related = Vec::new();
    if let Some(a0) = invocation.args[arg0].as_ref() {
        related.push(Related {
            location: a0.location,
            message: format!("element {e0} writes through this argument (`{first}`)"),
        });
    }
    related.push(Related {
        location: a1.location,
        message: format!("element {e1} writes through this argument (`{second}`)"),
    });
    let path_indices = match a1.kind {
        ArgKind::IndirectDat { index, .. } => [u64::from(e1), u64::from(index)],
        _ => [u64::from(e1), 0],
    };
    problems.report_related(
        Code::E704,
        Section::Maps,
        map.0,
        &path_indices,
        invocation.location,
        related,
        || {
            let from = if e0 == e1 {
                format!("twice from element {e0}")
            } else {
                format!("from elements {e0} and {e1}")
            };
            format!(
                "par_loop `{}` writes element {target} of dat `{dat_name}` {from} of set `{set_name}` (`{first}` and `{second}`)",
                invocation.name
            )
        },
    );
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}
