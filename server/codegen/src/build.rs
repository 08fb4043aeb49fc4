//! Building the graph type of compilation.md from the analysis' semantic
//! model: invocation plans, message types, the device types of the sets
//! and of the controller, their state, pins and handlers, and the kernel
//! functions.

use std::fmt::Write;

use op2_analysis::Analysis;
use op2_analysis::fetch::Lowered;
use op2_analysis::format::MAX_LINE;
use op2_analysis::hir::{Body, Stmt, StmtKind, Var};
use op2_analysis::model::{
    ArgKind, DatId, GlobalId, Invocation, InvocationId, Kernel, KernelId, Program, SetId,
};
use op2_syntax::ast::{AccessMode, ScalarType};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::controller;
use crate::cpp::{Printer, Spelling, line_flush, scalar_type_decl};
use crate::kernels::KernelCache;
use crate::model::{
    CType, Controller, DeviceKind, DevicePlan, DeviceType, FetchPlan, GraphType, InfoPlan,
    InvocationPlan, Member, MessageRole, MessageType, Pin, PinRole, Terminator,
};
use crate::names;

/// Helpers every kernel may use, in the graph's shared code.
const SHARED_HELPERS: &str = "#include <cmath>
#include <cstdint>
#include <type_traits>

// Built-ins of the .op2 language that C's math library lacks or spells
// differently; generic so that they keep their argument type as in C.
template <typename T> inline T op2_min(T a, T b) { return b < a ? b : a; }
template <typename T> inline T op2_max(T a, T b) { return a < b ? b : a; }
template <typename T> inline T op2_abs(T a) { return a < 0 ? -a : a; }
// Signed division and remainder as `op2 run` and RISC-V compute them:
// INT_MIN / -1 is INT_MIN and INT_MIN % -1 is 0, where C leaves both
// undefined and x86's division traps.
template <typename A, typename B> inline auto op2_div(A a, B b) -> decltype(a / b) {
    typedef decltype(a / b) T;
    return b == -1 ? (T)(0 - (typename std::make_unsigned<T>::type)(T)a) : (T)(a / b);
}
template <typename A, typename B> inline auto op2_rem(A a, B b) -> decltype(a % b) {
    typedef decltype(a % b) T;
    return b == -1 ? (T)0 : (T)(a % b);
}
template <typename T> inline bool op2_bool_post(T &x, int delta) {
    bool old = x;
    x = (bool)(x + delta);
    return old;
}
// `++b`, and `b OP= v` of a bool (which may be stored as uint8_t): the
// place is named once, so an index with a side effect is evaluated once.
template <typename T> inline bool op2_bool_pre(T &x, int delta) {
    x = (bool)(x + delta);
    return x;
}
template <typename T, typename V> inline bool op2_bool_add(T &x, V v) { x = (bool)(x + v); return x; }
template <typename T, typename V> inline bool op2_bool_sub(T &x, V v) { x = (bool)(x - v); return x; }
template <typename T, typename V> inline bool op2_bool_mul(T &x, V v) { x = (bool)(x * v); return x; }
template <typename T, typename V> inline bool op2_bool_div(T &x, V v) { x = (bool)(x / v); return x; }
template <typename T, typename V> inline bool op2_bool_rem(T &x, V v) { x = (bool)(x % v); return x; }
template <typename T, typename V> inline bool op2_bool_and(T &x, V v) { x = (bool)(x & v); return x; }
template <typename T, typename V> inline bool op2_bool_or(T &x, V v) { x = (bool)(x | v); return x; }
template <typename T, typename V> inline bool op2_bool_xor(T &x, V v) { x = (bool)(x ^ v); return x; }
template <typename T, typename V> inline bool op2_bool_shl(T &x, V v) { x = (bool)(x << v); return x; }
template <typename T, typename V> inline bool op2_bool_shr(T &x, V v) { x = (bool)(x >> v); return x; }
inline int32_t op2_isnan(double x) { return x != x; }
// What a MIN (MAX) reduction of floats takes: a smaller (larger) value, or
// -0.0 against +0.0 (+0.0 against -0.0), so that which zero it ends with
// does not depend on the order the values arrive in.
template <typename T> inline bool op2_below(T a, T b) {
    return a < b || (a == 0 && b == 0 && std::signbit(a) && !std::signbit(b));
}
template <typename T> inline bool op2_above(T a, T b) {
    return a > b || (a == 0 && b == 0 && !std::signbit(a) && std::signbit(b));
}
inline int32_t op2_isinf(double x) { return x == x && (x - x) != (x - x); }
";

/// Shared code of a graph that prints into a line buffer (compilation.md,
/// "Printing from a kernel", and §6): a kernel formats into a line buffer
/// on the stack of the handler that runs it, `main`'s `printf` into the
/// controller's state, and both log each line they complete through these
/// helpers, which take the buffer's text and length (a packed state member
/// cannot be bound to a reference) and give back its new length. A kernel
/// evaluation's handler logs the line it left unfinished, as the controller
/// does at the end of `main`. `op2 run` and `op2 simulate` stop before a
/// statement whose line would not fit (`op2_exec::printf::continue_line`),
/// so `snprintf` never truncates in a program that ran there.
// The buffer's sizes below are MAX_LINE's.
const _: () = assert!(MAX_LINE == 4096);
const PRINT_HELPERS: &str = "#include <cstdio>

// One line a kernel evaluation prints: at most 4096 bytes and a NUL.
struct op2_print_t {
    char line[4097];
    uint32_t length;
};

// After snprintf appended `written` bytes to the `length` bytes of `line`:
// logs each line they completed (without its newline), moves the
// unfinished rest to the front and returns its length.
template <typename L>
inline uint32_t op2_print_written(char *line, uint32_t length, int written, const L &log) {
    uint32_t end = length + (written > 0 ? (uint32_t)written : 0);
    if (end > 4096) end = 4096;
    uint32_t start = 0;
    for (uint32_t i = length; i < end; i++) {
        if (line[i] == '\\n') {
            line[i] = 0;
            log((const char *)line + start);
            start = i + 1;
        }
    }
    for (uint32_t i = start; i < end; i++) line[i - start] = line[i];
    line[end - start] = 0;
    return end - start;
}

// At the end of a kernel evaluation or of `main`: logs the line left
// unfinished, and returns the buffer's new length, 0.
template <typename L> inline uint32_t op2_print_flush(char *line, uint32_t length, const L &log) {
    if (length > 0) {
        line[length] = 0;
        log((const char *)line);
    }
    return 0;
}
";

/// Whether the shared code needs [`PRINT_HELPERS`]: a kernel of `program`
/// prints, or `main` has a `printf` (the controller's line buffer).
fn uses_print_helpers(program: &Program, kernels: &[(KernelId, Vec<bool>)]) -> bool {
    program.main.as_deref().is_some_and(has_printf)
        || kernels
            .iter()
            .any(|(id, _)| kernel_prints(&program.kernels[id.index()]))
}

/// Whether `kernel` has a `print` or `printf`: its function then takes the
/// line buffer and the log of the handler that runs it ([`PRINT_HELPERS`]).
pub(crate) fn kernel_prints(kernel: &Kernel) -> bool {
    op2_analysis::hir::first_print(&kernel.body).is_some()
}

/// Builds the graph type of an analysed program that has no errors.
///
/// This is the build of a [`Generator`](crate::Generator) that has kept nothing: the command
/// line, which builds once, and the language server, which keeps a
/// generator between versions, share this one implementation.
pub fn graph_type(analysis: &Analysis, graph_id: &str) -> GraphType {
    graph_type_with_fan_limit(analysis, graph_id, crate::model::DEFAULT_FAN_LIMIT)
}

/// [`graph_type`] with completion and broadcast trees of at most
/// `fan_limit` edges per pin (compilation.md §11); 0 builds the flat
/// controller of §6.
pub fn graph_type_with_fan_limit(analysis: &Analysis, graph_id: &str, fan_limit: u32) -> GraphType {
    build(
        analysis.lowered(),
        graph_id,
        fan_limit,
        &mut KernelCache::default(),
    )
}

/// Builds the graph type of `program` from scratch but for the kernel
/// functions that `kernels` holds.
pub(crate) fn build(
    program: &Lowered,
    graph_id: &str,
    fan_limit: u32,
    kernels: &mut KernelCache,
) -> GraphType {
    // A `fetch` is built as the linear fetch (op2_analysis::fetch,
    // crate::fetch).
    let program: &Program = program;
    let invocations = invocation_plans(program);
    let message_types = message_types(program, &invocations);
    let controller = controller(program);
    let data = DataNames::new(program);
    let mut device_types = vec![controller_device(
        program,
        &invocations,
        &controller,
        fan_limit,
    )];
    // The invocations that involve each set and the dats on each set, in
    // their order, found in one pass each rather than by a search per set.
    let mut involving: Vec<Vec<&InvocationPlan>> = vec![Vec::new(); program.sets.len()];
    for plan in &invocations {
        for set in &plan.involved_sets {
            if let Some(list) = involving.get_mut(set.index()) {
                list.push(plan);
            }
        }
    }
    let mut dats_on: Vec<Vec<usize>> = vec![Vec::new(); program.sets.len()];
    for (index, dat) in program.dats.iter().enumerate() {
        if let Some(list) = dat.set.and_then(|set| dats_on.get_mut(set.index())) {
            list.push(index);
        }
    }
    for (index, ((set, involved), dats)) in program
        .sets
        .iter()
        .zip(&involving)
        .zip(&dats_on)
        .enumerate()
    {
        if !involved.is_empty() {
            let set_id = SetId(u32::try_from(index).unwrap_or(u32::MAX));
            device_types.push(set_device(
                program, &data, set_id, &set.name, involved, dats,
            ));
        }
    }
    if fan_limit > 0 {
        for plan in &invocations {
            device_types.push(match &plan.fetch {
                Some(fetch) => crate::fetch::tree_device(plan, fetch, fan_limit),
                None => tree_device(program, plan),
            });
        }
    }
    let mut properties = Vec::with_capacity(program.consts.len() + program.sets.len());
    for c in &program.consts {
        properties.push(Member::array(
            names::const_property(&c.name),
            CType::of(c.ty.scalar),
            c.ty.dimension,
        ));
    }
    for set in &program.sets {
        properties.push(Member::array(
            names::length_property(&set.name),
            CType::I32,
            1,
        ));
    }
    let shared_code = shared_code(program, &invocations, kernels);
    // The graph's struct names are built from its id as the types' are from
    // theirs: a graph named like a type (a file `global.op2`) would clash.
    let mut id = graph_id.to_owned();
    while device_types.iter().any(|d| d.id == id) || message_types.iter().any(|m| m.id == id) {
        id.push_str("_graph");
    }
    GraphType {
        id,
        properties,
        shared_code,
        message_types,
        device_types,
        invocations,
        controller,
        fan_limit,
    }
}

/// `main` as a state machine.
pub(crate) fn controller(program: &Program) -> Controller {
    program
        .main
        .as_deref()
        .map(controller::compile)
        .unwrap_or_default()
}

/// The graph's shared code: the helpers, then the function of every kernel
/// that an invocation runs, in kernel order.
pub(crate) fn shared_code(
    program: &Program,
    invocations: &[InvocationPlan],
    cache: &mut KernelCache,
) -> String {
    let mut runs: Vec<Vec<InvocationId>> = vec![Vec::new(); program.kernels.len()];
    // A fetch runs no kernel (crate::fetch).
    for plan in invocations.iter().filter(|p| p.fetch.is_none()) {
        runs[plan.kernel.index()].push(plan.id);
    }
    let kernels: Vec<(KernelId, Vec<bool>)> = runs
        .iter()
        .enumerate()
        .filter(|(_, runs)| !runs.is_empty())
        .map(|(index, runs)| {
            let kernel = &program.kernels[index];
            // A parameter only ever bound to READ arguments is passed const
            // data (graph properties), so it must take a const pointer.
            let constness = (0..kernel.params.len())
                .map(|k| {
                    kernel.params[k].is_const
                        || runs.iter().all(|id| {
                            program.invocations[id.index()]
                                .args
                                .get(k)
                                .and_then(Option::as_ref)
                                .is_none_or(|a| a.mode == AccessMode::Read)
                        })
                })
                .collect();
            (
                KernelId(u32::try_from(index).unwrap_or(u32::MAX)),
                constness,
            )
        })
        .collect();
    let mut out = String::with_capacity(SHARED_HELPERS.len() + 1536 * kernels.len());
    out.push_str(SHARED_HELPERS);
    if uses_print_helpers(program, &kernels) {
        out.push('\n');
        out.push_str(PRINT_HELPERS);
    }
    cache.print(program, &kernels, &mut out);
    out
}

/// The generated names of the program's dats, made once per build rather
/// than once per pin.
struct DataNames {
    /// `dat_{D}`, the state member, by dat.
    state: Vec<String>,
    /// `dat_{D}`, the message type, by dat.
    message: Vec<String>,
}

impl DataNames {
    fn new(program: &Program) -> DataNames {
        DataNames {
            state: program
                .dats
                .iter()
                .map(|d| names::dat_state(&d.name))
                .collect(),
            message: program
                .dats
                .iter()
                .map(|d| names::dat_message(&d.name))
                .collect(),
        }
    }
}

fn invocation_plans(program: &Program) -> Vec<InvocationPlan> {
    let mut plans = Vec::new();
    for (index, invocation) in program.invocations.iter().enumerate() {
        let (Some(kernel), Some(set)) = (invocation.kernel, invocation.set) else {
            continue;
        };
        if invocation.args.iter().any(Option::is_none) {
            continue;
        }
        // Each list keeps its first occurrences in argument order; the
        // sets beside them answer "seen?" at once, so the plan is linear in
        // the arguments (before E802 refuses a program with too many).
        let mut involved = vec![set];
        let mut involved_seen = FxHashSet::from_iter([set]);
        let mut begin_globals = Vec::new();
        let mut begin_seen = FxHashSet::default();
        let mut end_globals = Vec::new();
        let mut end_seen = FxHashSet::default();
        let mut infos = Vec::new();
        for (k, arg) in invocation.resolved_args() {
            match arg.kind {
                ArgKind::Info { global, of } => {
                    if begin_seen.insert(global) {
                        begin_globals.push(global);
                    }
                    if let Some(Some(reference)) = invocation.args.get(of as usize)
                        && let ArgKind::Global(of_global) = reference.kind
                    {
                        infos.push(InfoPlan {
                            global,
                            arg: k,
                            of: of_global,
                            of_arg: of as usize,
                            mode: reference.mode,
                        });
                    }
                }
                ArgKind::IndirectDat { dat, .. } => {
                    if let Some(target) = program.dats[dat.index()].set
                        && involved_seen.insert(target)
                    {
                        involved.push(target);
                    }
                }
                ArgKind::Global(global) => {
                    if matches!(
                        arg.mode,
                        AccessMode::Read | AccessMode::Min | AccessMode::Max
                    ) && begin_seen.insert(global)
                    {
                        begin_globals.push(global);
                    }
                    if arg.mode.is_reduction() && end_seen.insert(global) {
                        end_globals.push((global, arg.mode));
                    }
                }
                _ => {}
            }
        }
        involved[1..].sort();
        // A fetch carries requests and items, no globals.
        let fetch = invocation
            .is_fetch
            .then(|| fetch_plan(program, invocation))
            .flatten();
        if fetch.is_some() {
            begin_globals.clear();
            end_globals.clear();
            infos.clear();
        }
        plans.push(InvocationPlan {
            id: InvocationId(u32::try_from(index).unwrap_or(u32::MAX)),
            name: invocation.name.clone(),
            kernel,
            set,
            involved_sets: involved,
            begin_globals,
            end_globals,
            infos,
            fetch,
        });
    }
    plans
}

/// The fetch of a `fetch`'s invocation, from its arguments `(DAT READ, idx,
/// GLOBAL INC)`.
fn fetch_plan(program: &Program, invocation: &Invocation) -> Option<FetchPlan> {
    let dat = invocation.resolved_args().find_map(|(_, a)| match a.kind {
        ArgKind::DirectDat(dat) => Some(dat),
        _ => None,
    })?;
    let global = invocation.resolved_args().find_map(|(_, a)| match a.kind {
        ArgKind::Global(global) => Some(global),
        _ => None,
    })?;
    let ty = program.dats[dat.index()].ty;
    Some(FetchPlan::new(dat, global, ty.scalar, ty.dimension))
}

fn global_member(program: &Program, global: GlobalId) -> Member {
    let g = &program.globals[global.index()];
    Member::array(
        names::global_state(&g.name),
        CType::of(g.ty.scalar),
        g.ty.dimension,
    )
}

/// The members an `INFO` global adds to `{inv}_end`, to the controller and to
/// the iteration set's devices: its value and `element_G`.
fn info_members(program: &Program, info: &InfoPlan) -> [Member; 2] {
    let name = &program.globals[info.global.index()].name;
    [
        global_member(program, info.global),
        Member::scalar(names::info_element(name), CType::U32),
    ]
}

/// Of two partials of an `INFO` global, takes the incoming one (`message`)
/// when it has an element and the current one (`state`, whose `R` is
/// `current`) has none, or `R` is strictly better ([`better`]), or equal
/// (neither better) with a lower element.
fn info_combine(out: &mut String, program: &Program, info: &InfoPlan, current: &str, value: &str) {
    let g = global_member(program, info.global);
    let element = names::info_element(&program.globals[info.global.index()].name);
    let r = global_member(program, info.of).name;
    let ty = program.globals[info.of.index()].ty.scalar;
    let (incoming, current) = (format!("message->{r}[0]"), format!("{current}[0]"));
    let better_value = better(info.mode, ty, &incoming, &current);
    // Equal: neither better, so `0.0` and `-0.0` are not equal here.
    let equal = match ty {
        ScalarType::Double | ScalarType::Float => format!(
            "{incoming} == {current} && !{}",
            better(info.mode, ty, &current, &incoming)
        ),
        _ => format!("{incoming} == {current}"),
    };
    let none = names::NO_ELEMENT;
    let _ = writeln!(
        out,
        "if (message->{element} != {none}u && (deviceState->{element} == {none}u || {better_value} || ({equal} && message->{element} < deviceState->{element}))) {{\n    deviceState->{element} = message->{element};"
    );
    copy_loop(out, g.components(), |o, c| {
        let _ = write!(
            o,
            "    deviceState->{value}[{c}] = message->{}[{c}];",
            g.name
        );
    });
    out.push_str("}\n");
}

/// `element_G = NO_ELEMENT` for every `INFO` global of the invocation.
fn reset_info_elements(out: &mut String, program: &Program, plan: &InvocationPlan) {
    for info in &plan.infos {
        let _ = writeln!(
            out,
            "deviceState->{} = {}u;",
            names::info_element(&program.globals[info.global.index()].name),
            names::NO_ELEMENT
        );
    }
}

fn message_types(program: &Program, invocations: &[InvocationPlan]) -> Vec<MessageType> {
    let mut types = vec![MessageType {
        id: names::EMPTY_MESSAGE.into(),
        members: Vec::new(),
        role: MessageRole::Empty,
    }];
    // The dats read or written through a map, in dat order.
    let mut indirect = vec![false; program.dats.len()];
    for plan in invocations {
        for (_, arg) in program.invocations[plan.id.index()].resolved_args() {
            if let ArgKind::IndirectDat { dat, .. } = arg.kind
                && let Some(seen) = indirect.get_mut(dat.index())
            {
                *seen = true;
            }
        }
    }
    let dats = indirect
        .iter()
        .enumerate()
        .filter(|(_, seen)| **seen)
        .map(|(index, _)| DatId(u32::try_from(index).unwrap_or(u32::MAX)));
    for dat in dats {
        let d = &program.dats[dat.index()];
        types.push(MessageType {
            id: names::dat_message(&d.name),
            members: vec![Member::array(
                names::VALUE,
                CType::of(d.ty.scalar),
                d.ty.dimension,
            )],
            role: MessageRole::Dat(dat),
        });
    }
    for plan in invocations {
        if let Some(fetch) = &plan.fetch {
            types.extend(crate::fetch::message_types(plan, fetch));
            continue;
        }
        types.push(MessageType {
            id: names::begin(&plan.name),
            members: plan
                .begin_globals
                .iter()
                .map(|g| global_member(program, *g))
                .collect(),
            role: MessageRole::Begin(plan.id),
        });
        types.push(MessageType {
            id: names::end(&plan.name),
            members: plan
                .end_globals
                .iter()
                .map(|(g, _)| global_member(program, *g))
                .chain(
                    plan.infos
                        .iter()
                        .flat_map(|info| info_members(program, info)),
                )
                .collect(),
            role: MessageRole::End(plan.id),
        });
    }
    types
}

/// The plan of one invocation on the devices of one set.
fn device_plan(program: &Program, plan: &InvocationPlan, set: SetId) -> DevicePlan {
    let iterates = plan.set == set;
    let mut device = DevicePlan {
        invocation: plan.id,
        name: plan.name.clone(),
        iterates,
        read_sends: Vec::new(),
        read_recvs: Vec::new(),
        write_sends: Vec::new(),
        write_recvs: Vec::new(),
    };
    let mut read_seen = FxHashSet::default();
    let mut write_seen = FxHashSet::default();
    for (index, arg) in program.invocations[plan.id.index()].resolved_args() {
        let ArgKind::IndirectDat { dat, .. } = arg.kind else {
            continue;
        };
        let reads = matches!(arg.mode, AccessMode::Read | AccessMode::Rw);
        let writes = matches!(
            arg.mode,
            AccessMode::Rw | AccessMode::Write | AccessMode::Inc
        );
        let on_this_set = program.dats[dat.index()].set == Some(set);
        if reads && on_this_set && read_seen.insert(dat) {
            device.read_sends.push(dat);
        }
        if reads && iterates {
            device.read_recvs.push(index);
        }
        if writes && iterates {
            device.write_sends.push(index);
        }
        if writes && on_this_set && write_seen.insert(dat) {
            device.write_recvs.push((dat, arg.mode == AccessMode::Inc));
        }
    }
    device
}

fn mask(bits: usize) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// The identity of a reduction as a C++ expression (compilation.md,
/// "Reductions: identities and ties"):
/// for INC `-0.0` in a floating type (IEEE's additive identity, so that a
/// sum of `-0.0` terms stays `-0.0`) and zero in the others; for MIN and
/// MAX the infinities of a floating type (from `<cmath>`; a finite extreme
/// would beat a global that is infinite) and an integer type's extremes.
fn identity(ty: ScalarType, mode: AccessMode) -> String {
    let lowest = mode == AccessMode::Max;
    match (ty, lowest) {
        (ScalarType::Double, _) if mode == AccessMode::Inc => "-0.0".into(),
        (ScalarType::Float, _) if mode == AccessMode::Inc => "-0.0f".into(),
        (_, _) if mode == AccessMode::Inc => "0".into(),
        (ScalarType::Double | ScalarType::Float, false) => "INFINITY".into(),
        (ScalarType::Double | ScalarType::Float, true) => "-INFINITY".into(),
        (ScalarType::Int, false) => i32::MAX.to_string(),
        (ScalarType::Int, true) => "(-2147483647 - 1)".into(),
        (ScalarType::Uint, false) => format!("{}u", u32::MAX),
        (ScalarType::Uint | ScalarType::Ull | ScalarType::Bool, true) => "0".into(),
        (ScalarType::Ll, false) => format!("{}LL", i64::MAX),
        (ScalarType::Ll, true) => "(-9223372036854775807LL - 1)".into(),
        (ScalarType::Ull, false) => format!("{}ULL", u64::MAX),
        (ScalarType::Bool, false) => "1".into(),
    }
}

/// `for` over the components of an array, as one line: `statement` writes
/// the statement for component `c`, or `0` when there is only one.
fn copy_loop(out: &mut String, length: u32, statement: impl FnOnce(&mut String, &str)) {
    if length == 1 {
        statement(out, "0");
    } else {
        let _ = write!(out, "for (uint32_t c = 0; c < {length}; c++) ");
        statement(out, "c");
    }
    out.push('\n');
}

/// The state of a device type as it is built, with its members' names in a
/// set, so that finding whether a name is taken does not scan every member
/// (a program may give many invocations an `INFO` of the same global).
struct State {
    members: Vec<Member>,
    names: FxHashSet<String>,
}

impl State {
    fn new() -> State {
        State {
            members: Vec::new(),
            names: FxHashSet::default(),
        }
    }

    fn push(&mut self, member: Member) {
        self.names.insert(member.name.clone());
        self.members.push(member);
    }

    /// Pushes `member` unless a member of that name exists.
    fn push_new(&mut self, member: Member) {
        if self.names.insert(member.name.clone()) {
            self.members.push(member);
        }
    }
}

/// The names one invocation gives the state and shared code of one set's
/// device type, made once for all the handlers that use them.
struct InvocationNames {
    in_progress: String,
    read_send_mask: String,
    read_recv_count: String,
    write_send_mask: String,
    write_recv_count: String,
    read_mask_all: String,
    write_mask_all: String,
}

impl InvocationNames {
    fn new(inv: &str, set_name: &str) -> InvocationNames {
        InvocationNames {
            in_progress: names::in_progress(inv),
            read_send_mask: names::read_send_mask(inv),
            read_recv_count: names::read_recv_count(inv),
            write_send_mask: names::write_send_mask(inv),
            write_recv_count: names::write_recv_count(inv),
            read_mask_all: names::read_send_mask_all(inv, set_name),
            write_mask_all: names::write_send_mask_all(inv, set_name),
        }
    }
}

/// A handler that starts with `first`, with room for what follows.
fn handler_after(first: &str) -> String {
    let mut handler = String::with_capacity(first.len() + 128);
    handler.push_str(first);
    handler
}

/// The device type of set `set`, from the invocations that involve it (in
/// invocation order) and the dats on it (their indices, in dat order).
fn set_device(
    program: &Program,
    data: &DataNames,
    set: SetId,
    set_name: &str,
    involved: &[&InvocationPlan],
    dats: &[usize],
) -> DeviceType {
    let plans: Vec<DevicePlan> = involved
        .iter()
        .map(|p| device_plan(program, p, set))
        .collect();
    let mut properties = Vec::with_capacity(2 * plans.len());
    // The indices `idx` arguments pass: the element's own, and the targets
    // of the maps of `idx[M[K]]`.
    let mut own_index = false;
    for plan in involved.iter().filter(|p| p.set == set) {
        own_index |= !plan.infos.is_empty();
        for (k, arg) in program.invocations[plan.id.index()].resolved_args() {
            match arg.kind {
                ArgKind::Index(None) => own_index = true,
                ArgKind::Index(Some(_)) => properties.push(Member::scalar(
                    names::index_property(&plan.name, k),
                    CType::I32,
                )),
                _ => {}
            }
        }
    }
    if own_index {
        properties.insert(0, Member::scalar(names::INDEX_PROPERTY, CType::I32));
    }
    let mut state = State::new();
    for &index in dats {
        let dat = &program.dats[index];
        state.push(Member::array(
            data.state[index].clone(),
            CType::of(dat.ty.scalar),
            dat.ty.dimension,
        ));
    }
    // One landing pad per global per set, for the invocations iterating it,
    // in the order of the globals (sorted, not marked in a vector of every
    // global, which would cost the globals once per set).
    let mut pads = Vec::new();
    for plan in involved
        .iter()
        .filter(|p| p.set == set && p.fetch.is_none())
    {
        for (_, arg) in program.invocations[plan.id.index()].resolved_args() {
            if let ArgKind::Global(global) | ArgKind::Info { global, .. } = arg.kind {
                pads.push(global);
            }
        }
    }
    pads.sort_unstable();
    pads.dedup();
    for global in pads {
        state.push(global_member(program, global));
    }
    // The element that set each `INFO` global, from the execute step.
    for plan in involved.iter().filter(|p| p.set == set) {
        for info in &plan.infos {
            let [_, element] = info_members(program, info);
            state.push_new(element);
        }
    }
    let mut shared_code = String::new();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut ready = String::new();
    for (device, plan) in plans.iter().zip(involved) {
        if let Some(fetch) = &plan.fetch {
            let mut members = Vec::new();
            crate::fetch::set_pins(
                program,
                plan,
                fetch,
                &mut members,
                &mut inputs,
                &mut outputs,
                &mut ready,
            );
            for member in members {
                state.push(member);
            }
            continue;
        }
        let inv = device.name.as_str();
        let invocation = &program.invocations[device.invocation.index()];
        let n = InvocationNames::new(inv, set_name);
        let read_recv_total = names::read_recv_total(inv);
        let write_recv_total = names::write_recv_total(inv);
        properties.push(Member::scalar(read_recv_total.clone(), CType::U32));
        properties.push(Member::scalar(write_recv_total.clone(), CType::U32));
        // The landing pads of the indirect arguments, by argument (only
        // the iteration set's devices have them).
        let buffers: Vec<Option<String>> = invocation
            .args
            .iter()
            .enumerate()
            .map(|(index, arg)| {
                let indirect = matches!(
                    arg.as_ref().map(|a| a.kind),
                    Some(ArgKind::IndirectDat { .. })
                );
                (device.iterates && indirect).then(|| names::arg_buffer(inv, index))
            })
            .collect();
        let buffer = |arg: usize| buffer(&buffers, arg);
        for arg in device.read_recvs.iter().chain(&device.write_sends) {
            let ty = invocation.args[*arg]
                .as_ref()
                .map(|a| a.ty)
                .expect("plans have resolved arguments");
            state.push_new(Member::array(
                buffer(*arg).to_owned(),
                CType::of(ty.scalar),
                ty.dimension,
            ));
        }
        state.push(Member::scalar(n.in_progress.clone(), CType::U8));
        state.push(Member::scalar(n.read_send_mask.clone(), CType::U32));
        state.push(Member::scalar(n.read_recv_count.clone(), CType::U32));
        state.push(Member::scalar(n.write_send_mask.clone(), CType::U32));
        state.push(Member::scalar(n.write_recv_count.clone(), CType::U32));
        let _ = writeln!(
            shared_code,
            "const uint32_t {} = {}u;",
            n.read_mask_all,
            mask(device.read_sends.len())
        );
        let _ = writeln!(
            shared_code,
            "const uint32_t {} = {}u;",
            n.write_mask_all,
            mask(device.write_sends.len())
        );

        // Step 1 of the lifecycle, on whichever message comes first.
        let first = format!(
            "if (!deviceState->{p}) {{\n    deviceState->{p} = 1;\n    deviceState->{m} = {all};\n}}\n",
            p = n.in_progress,
            m = n.read_send_mask,
            all = n.read_mask_all,
        );
        let read_count = n.read_recv_count.as_str();
        let write_count = n.write_recv_count.as_str();

        // Inputs: begin, indirect reads, indirect writes.
        let mut begin = handler_after(&first);
        if device.iterates {
            for global in &plan.begin_globals {
                let member = global_member(program, *global);
                copy_loop(&mut begin, member.components(), |out, c| {
                    let _ = write!(
                        out,
                        "deviceState->{0}[{c}] = message->{0}[{c}];",
                        member.name
                    );
                });
            }
        }
        let _ = writeln!(begin, "deviceState->{read_count}++;");
        let begin_name = names::begin(inv);
        inputs.push(Pin {
            name: begin_name.clone(),
            message_type: begin_name,
            role: PinRole::Begin(device.invocation),
            handler: begin,
        });
        for arg in &device.read_recvs {
            let ArgKind::IndirectDat { dat, .. } = invocation.args[*arg]
                .as_ref()
                .map(|a| a.kind)
                .expect("resolved")
            else {
                continue;
            };
            let length = program.dats[dat.index()].ty.dimension;
            let mut handler = handler_after(&first);
            copy_loop(&mut handler, length, |out, c| {
                let _ = write!(
                    out,
                    "deviceState->{}[{c}] = message->{}[{c}];",
                    buffer(*arg),
                    names::VALUE
                );
            });
            let _ = writeln!(handler, "deviceState->{read_count}++;");
            inputs.push(Pin {
                name: names::read_recv(inv, *arg),
                message_type: data.message[dat.index()].clone(),
                role: PinRole::ArgReadRecv(device.invocation, *arg),
                handler,
            });
        }
        for (dat, add) in &device.write_recvs {
            let d = &program.dats[dat.index()];
            let op = if *add { "+=" } else { "=" };
            let mut handler = handler_after(&first);
            copy_loop(&mut handler, d.ty.dimension, |out, c| {
                let _ = write!(
                    out,
                    "deviceState->{}[{c}] {op} message->{}[{c}];",
                    data.state[dat.index()],
                    names::VALUE
                );
            });
            let _ = writeln!(handler, "deviceState->{write_count}++;");
            inputs.push(Pin {
                name: names::write_recv(inv, &d.name),
                message_type: data.message[dat.index()].clone(),
                role: PinRole::DatWriteRecv {
                    invocation: device.invocation,
                    dat: *dat,
                    add: *add,
                },
                handler,
            });
        }

        // Outputs: read sends, execute, write sends, end.
        let _ = writeln!(ready, "if (deviceState->{}) {{", n.in_progress);
        for (bit, dat) in device.read_sends.iter().enumerate() {
            let d = &program.dats[dat.index()];
            let pin = names::read_send(inv, &d.name);
            let mut handler = String::with_capacity(128);
            copy_loop(&mut handler, d.ty.dimension, |out, c| {
                let _ = write!(
                    out,
                    "message->{}[{c}] = deviceState->{}[{c}];",
                    names::VALUE,
                    data.state[dat.index()]
                );
            });
            let _ = writeln!(
                handler,
                "deviceState->{} &= ~(1u << {bit});",
                n.read_send_mask
            );
            let _ = writeln!(
                ready,
                "    if (deviceState->{} & (1u << {bit})) *readyToSend |= RTS_FLAG_{pin};",
                n.read_send_mask
            );
            outputs.push(Pin {
                name: pin,
                message_type: data.message[dat.index()].clone(),
                role: PinRole::DatReadSend(device.invocation, *dat),
                handler,
            });
        }
        let execute = names::execute(inv);
        let mut handler = String::with_capacity(512);
        if device.iterates {
            execute_kernel(&mut handler, program, data, plan, invocation, &buffers);
        }
        let _ = writeln!(handler, "deviceState->{read_count} = 0;");
        let _ = writeln!(handler, "deviceState->{write_count}++;");
        let _ = writeln!(
            handler,
            "deviceState->{} = {};",
            n.write_send_mask, n.write_mask_all
        );
        let _ = writeln!(
            ready,
            "    if (deviceState->{read_count} == deviceProperties->{read_recv_total}) *readyToSend |= RTS_FLAG_{execute};",
        );
        outputs.push(Pin {
            name: execute,
            message_type: names::EMPTY_MESSAGE.into(),
            role: PinRole::Execute(device.invocation),
            handler,
        });
        for (bit, arg) in device.write_sends.iter().enumerate() {
            let ArgKind::IndirectDat { dat, .. } = invocation.args[*arg]
                .as_ref()
                .map(|a| a.kind)
                .expect("resolved")
            else {
                continue;
            };
            let d = &program.dats[dat.index()];
            let pin = names::write_send(inv, *arg);
            let mut handler = String::with_capacity(128);
            copy_loop(&mut handler, d.ty.dimension, |out, c| {
                let _ = write!(
                    out,
                    "message->{}[{c}] = deviceState->{}[{c}];",
                    names::VALUE,
                    buffer(*arg)
                );
            });
            let _ = writeln!(
                handler,
                "deviceState->{} &= ~(1u << {bit});",
                n.write_send_mask
            );
            let _ = writeln!(
                ready,
                "    if (deviceState->{} & (1u << {bit})) *readyToSend |= RTS_FLAG_{pin};",
                n.write_send_mask
            );
            outputs.push(Pin {
                name: pin,
                message_type: data.message[dat.index()].clone(),
                role: PinRole::ArgWriteSend(device.invocation, *arg),
                handler,
            });
        }
        let end = names::end(inv);
        let mut handler = String::with_capacity(128);
        for (global, mode) in &plan.end_globals {
            let member = global_member(program, *global);
            let identity = (!device.iterates)
                .then(|| identity(program.globals[global.index()].ty.scalar, *mode));
            copy_loop(&mut handler, member.components(), |out, c| {
                let _ = match &identity {
                    Some(value) => write!(out, "message->{}[{c}] = {value};", member.name),
                    None => write!(
                        out,
                        "message->{0}[{c}] = deviceState->{0}[{c}];",
                        member.name
                    ),
                };
            });
        }
        for info in &plan.infos {
            for member in info_members(program, info) {
                copy_loop(&mut handler, member.components(), |out, c| {
                    let (name, index) = if member.length.is_some() {
                        (member.name.as_str(), format!("[{c}]"))
                    } else {
                        (member.name.as_str(), String::new())
                    };
                    let _ = if !device.iterates {
                        let value = if member.length.is_some() {
                            "0".to_owned()
                        } else {
                            format!("{}u", names::NO_ELEMENT)
                        };
                        write!(out, "message->{name}{index} = {value};")
                    } else {
                        write!(out, "message->{name}{index} = deviceState->{name}{index};")
                    };
                });
            }
        }
        let _ = writeln!(handler, "deviceState->{write_count} = 0;");
        let _ = writeln!(handler, "deviceState->{} = 0;", n.in_progress);
        let _ = writeln!(
            ready,
            "    if (deviceState->{} == 0 && deviceState->{} == 0 && deviceState->{write_count} == deviceProperties->{write_recv_total}) *readyToSend |= RTS_FLAG_{end};",
            n.read_send_mask, n.write_send_mask,
        );
        ready.push_str("}\n");
        outputs.push(Pin {
            name: end.clone(),
            message_type: end,
            role: PinRole::End(device.invocation),
            handler,
        });
    }
    DeviceType {
        id: names::set_device_type(set_name),
        kind: DeviceKind::Set(set),
        properties,
        state: state.members,
        shared_code,
        inputs,
        outputs,
        ready_to_send: ready,
        on_init: String::new(),
        plans,
    }
}

/// The landing pad of argument `arg`, from those of [`set_device`].
fn buffer(buffers: &[Option<String>], arg: usize) -> &str {
    buffers[arg].as_deref().unwrap_or_default()
}

/// Before the call of a kernel that prints: its line buffer on the
/// handler's stack; its log ([`crate::cpp::PRINT_LOG`]) follows.
const KERNEL_BUFFER: &str = "op2_print_t op2_print;
op2_print.length = 0;
";

/// The body of the execute handler on the iteration set's devices: start
/// the INC accumulators at INC's identity, copy the consts and lengths
/// passed as arguments, call the kernel function, and add the INC
/// temporaries into their targets.
///
/// Every INC argument sees its own copy, zero for an integer type (as
/// `op2 run` gives an integer one) and `-0.0` for a floating one (which
/// `op2 run` works on in place: starting at IEEE's additive identity, the
/// copy differs from that only in the rounding of the sums, language.md
/// §8, not in the sign of a zero): an
/// indirect one its landing pad, the first INC argument of a global the
/// global's state (its partial), and a direct dat or a repeated global a
/// local `op2_arg{i}` added to the dat or the partial after the kernel. The
/// kernel never adds to the dat in place, which would round an integer dat
/// differently (`*d += 1.5` on `int` truncates the sum, not the increment).
fn execute_kernel(
    handler: &mut String,
    program: &Program,
    data: &DataNames,
    plan: &InvocationPlan,
    invocation: &Invocation,
    buffers: &[Option<String>],
) {
    let buffer = |arg: usize| buffer(buffers, arg);
    let temporaries = inc_temporaries(program, data, invocation);
    for (index, arg) in invocation.resolved_args() {
        if arg.mode != AccessMode::Inc {
            continue;
        }
        if let Some((_, length)) = temporaries.get(&index) {
            let _ = writeln!(
                handler,
                "{} op2_arg{index}[{length}];",
                scalar_type_decl(arg.ty.scalar)
            );
            let start = identity(arg.ty.scalar, AccessMode::Inc);
            copy_loop(handler, *length, |out, c| {
                let _ = write!(out, "op2_arg{index}[{c}] = {start};");
            });
            continue;
        }
        let (name, length) = match arg.kind {
            ArgKind::Global(global) => {
                let member = global_member(program, global);
                let length = member.components();
                (member.name, length)
            }
            ArgKind::IndirectDat { .. } => (buffer(index).to_owned(), arg.ty.dimension),
            _ => continue,
        };
        let start = identity(arg.ty.scalar, AccessMode::Inc);
        copy_loop(handler, length, |out, c| {
            let _ = write!(out, "deviceState->{name}[{c}] = {start};");
        });
    }
    for (index, arg) in invocation.resolved_args() {
        let (source, ty, length) = match arg.kind {
            ArgKind::Const(id) => {
                let c = &program.consts[id.index()];
                (names::const_property(&c.name), c.ty.scalar, c.ty.dimension)
            }
            ArgKind::Len(set) => (
                names::length_property(&program.sets[set.index()].name),
                ScalarType::Int,
                1,
            ),
            ArgKind::Index(map) => {
                let property = match map {
                    None => names::INDEX_PROPERTY.to_owned(),
                    Some(_) => names::index_property(&plan.name, index),
                };
                let _ = writeln!(
                    handler,
                    "int32_t op2_arg{index}[1];\nop2_arg{index}[0] = deviceProperties->{property};"
                );
                continue;
            }
            _ => continue,
        };
        let _ = writeln!(
            handler,
            "{} op2_arg{index}[{length}];",
            scalar_type_decl(ty)
        );
        copy_loop(handler, length, |out, c| {
            let _ = write!(out, "op2_arg{index}[{c}] = graphProperties->{source}[{c}];");
        });
    }
    for info in &plan.infos {
        let r = global_member(program, info.of).name;
        let _ = writeln!(
            handler,
            "{} op2_start{} = deviceState->{r}[0];",
            scalar_type_decl(program.globals[info.of.index()].ty.scalar),
            info.arg
        );
    }
    let kernel = &program.kernels[plan.kernel.index()];
    let prints = kernel_prints(kernel);
    if prints {
        handler.push_str(KERNEL_BUFFER);
        handler.push_str(crate::cpp::PRINT_LOG);
        handler.push('\n');
    }
    handler.push_str(&names::cpp_identifier(&kernel.name));
    handler.push('(');
    let mut first = true;
    for (index, arg) in invocation.resolved_args() {
        if !std::mem::take(&mut first) {
            handler.push_str(", ");
        }
        let _ = match arg.kind {
            _ if temporaries.contains_key(&index) => write!(handler, "op2_arg{index}"),
            ArgKind::DirectDat(dat) => write!(handler, "deviceState->{}", data.state[dat.index()]),
            ArgKind::IndirectDat { .. } => write!(handler, "deviceState->{}", buffer(index)),
            ArgKind::Global(global) => write!(
                handler,
                "deviceState->{}",
                names::global_state(&program.globals[global.index()].name)
            ),
            // Graph properties are const in the handlers: the kernel gets a
            // copy, so that a parameter another invocation binds to
            // writable data need not be const.
            ArgKind::Const(_) | ArgKind::Len(_) | ArgKind::Index(_) => {
                write!(handler, "op2_arg{index}")
            }
            ArgKind::Info { global, .. } => write!(
                handler,
                "deviceState->{}",
                names::global_state(&program.globals[global.index()].name)
            ),
        };
    }
    for id in &kernel.consts_used {
        if !std::mem::take(&mut first) {
            handler.push_str(", ");
        }
        let _ = write!(
            handler,
            "graphProperties->{}",
            names::const_property(&program.consts[id.index()].name)
        );
    }
    if prints {
        if !first {
            handler.push_str(", ");
        }
        handler.push_str(
            "op2_print, op2_log);\nop2_print.length = op2_print_flush(op2_print.line, op2_print.length, op2_log);\n",
        );
    } else {
        handler.push_str(");\n");
    }
    for info in &plan.infos {
        let r = global_member(program, info.of).name;
        let element = names::info_element(&program.globals[info.global.index()].name);
        let better = better(
            info.mode,
            program.globals[info.of.index()].ty.scalar,
            &format!("deviceState->{r}[0]"),
            &format!("op2_start{}", info.arg),
        );
        let _ = writeln!(
            handler,
            "deviceState->{element} = {better} ? (uint32_t) deviceProperties->{} : {}u;",
            names::INDEX_PROPERTY,
            names::NO_ELEMENT
        );
    }
    let mut added: Vec<(&usize, &(String, u32))> = temporaries.iter().collect();
    added.sort_by_key(|(index, _)| **index);
    for (index, (target, length)) in added {
        copy_loop(handler, *length, |out, c| {
            let _ = write!(out, "deviceState->{target}[{c}] += op2_arg{index}[{c}];");
        });
    }
}

/// The INC arguments that get a local temporary in the execute handler, by
/// argument index: the state member the temporary is added to after the
/// kernel, and its length. Direct dats always; globals from their second
/// INC argument on (the first uses the global's state, zeroed).
fn inc_temporaries(
    program: &Program,
    data: &DataNames,
    invocation: &Invocation,
) -> FxHashMap<usize, (String, u32)> {
    let mut temporaries = FxHashMap::default();
    let mut globals_seen: FxHashSet<GlobalId> = FxHashSet::default();
    for (index, arg) in invocation.resolved_args() {
        if arg.mode != AccessMode::Inc {
            continue;
        }
        match arg.kind {
            ArgKind::DirectDat(dat) => {
                temporaries.insert(index, (data.state[dat.index()].clone(), arg.ty.dimension));
            }
            ArgKind::Global(global) if !globals_seen.insert(global) => {
                let member = global_member(program, global);
                let length = member.components();
                temporaries.insert(index, (member.name, length));
            }
            _ => {}
        }
    }
    temporaries
}

/// How the controller spells the names of `main`.
struct ControllerSpelling<'a> {
    program: &'a Program,
    locals: &'a [String],
}

impl Spelling for ControllerSpelling<'_> {
    fn base(&self, var: Var) -> String {
        match var {
            Var::Local(id) => format!("deviceState->{}", self.locals[id.0 as usize]),
            Var::Global(id) => format!(
                "deviceState->{}",
                names::global_state(&self.program.globals[id.index()].name)
            ),
            Var::Const(id) => format!(
                "graphProperties->{}",
                names::const_property(&self.program.consts[id.index()].name)
            ),
            // `main` has no parameters.
            Var::Param(_) => "0".into(),
        }
    }

    fn stored_as_array(&self, var: Var) -> bool {
        matches!(var, Var::Global(_) | Var::Const(_))
    }

    fn length(&self, set: SetId) -> String {
        format!(
            "graphProperties->{}[0]",
            names::length_property(&self.program.sets[set.index()].name)
        )
    }
}

fn controller_device(
    program: &Program,
    invocations: &[InvocationPlan],
    controller: &Controller,
    fan_limit: u32,
) -> DeviceType {
    let mut state = State::new();
    for g in 0..program.globals.len() {
        state.push(global_member(
            program,
            GlobalId(u32::try_from(g).unwrap_or(u32::MAX)),
        ));
    }
    if let Some(main) = program.main.as_deref() {
        for (local, name) in main.locals.iter().zip(&controller.locals) {
            let ty = CType::of(local.ty);
            state.push(match local.dimension {
                Some(length) => Member::array(name.clone(), ty, length),
                None => Member::scalar(name.clone(), ty),
            });
        }
    }
    // The element that set each `INFO` global, while its invocation runs.
    for info in invocations.iter().flat_map(|plan| &plan.infos) {
        let [_, element] = info_members(program, info);
        state.push_new(element);
    }
    let mut state = state.members;
    // The line `printf` left unfinished (compilation.md §6).
    let line_buffer = program.main.as_deref().is_some_and(has_printf);
    if line_buffer {
        state.push(Member::array(names::LINE, CType::U8, MAX_LINE as u32 + 1));
        state.push(Member::scalar(names::LINE_LENGTH, CType::U32));
    }
    state.push(Member::scalar(names::PROGRAM_COUNTER, CType::U32));
    state.push(Member::scalar(names::RUNNING, CType::U8));
    state.push(Member::scalar(names::BEGIN_PENDING, CType::U32));
    state.push(Member::scalar(names::END_COUNT, CType::U32));
    // The window a fetch asked for (crate::fetch).
    if invocations.iter().any(|p| p.fetch.is_some()) {
        state.push(Member::scalar(names::FETCH_FIRST, CType::U32));
        state.push(Member::scalar(names::FETCH_LAST, CType::U32));
    }
    let properties = invocations
        .iter()
        .filter(|p| p.fetch.is_none())
        .map(|p| Member::scalar(names::end_total(&p.name), CType::U32))
        .collect();

    // The step handler: run blocks until a par_loop or the end.
    let spelling = ControllerSpelling {
        program,
        locals: &controller.locals,
    };
    let no_main = Body::default();
    let main_body = program.main.as_deref().unwrap_or(&no_main);
    let mut printer = Printer {
        spelling: &spelling,
        out: String::new(),
        indent: 2,
    };
    // The position of each invocation's plan, by invocation.
    let mut positions = vec![0; program.invocations.len()];
    for (position, plan) in invocations.iter().enumerate() {
        positions[plan.id.index()] = position;
    }
    let index_of = |id: InvocationId| positions.get(id.index()).copied().unwrap_or(0);
    for (number, block) in controller.blocks.iter().enumerate() {
        let _ = writeln!(printer.out, "    case {number}: {{");
        for stmt in &block.statements {
            printer.controller_stmt(main_body, stmt, &controller.locals, line_buffer);
        }
        let text = match &block.terminator {
            Terminator::Goto(next) => {
                format!("deviceState->{} = {next};\nbreak;", names::PROGRAM_COUNTER)
            }
            Terminator::Branch {
                condition,
                then_block,
                else_block,
            } => format!(
                "deviceState->{} = {} ? {then_block} : {else_block};\nbreak;",
                names::PROGRAM_COUNTER,
                printer.expr(condition)
            ),
            Terminator::ParLoop { invocation, next } => format!(
                "deviceState->{pc} = {next};\ndeviceState->{running} = 0;\ndeviceState->{pending} = {};\nreturn;",
                index_of(*invocation) + 1,
                pc = names::PROGRAM_COUNTER,
                running = names::RUNNING,
                pending = names::BEGIN_PENDING,
            ),
            Terminator::Exit(status) => {
                let mut text = if line_buffer {
                    format!("{}\n", line_flush())
                } else {
                    String::new()
                };
                match status {
                    // graph_sim ends at once with the status `handler_exit`
                    // passes; epoch_sim ends after the epoch with 0 or 1,
                    // as the marker that follows also says (poets-v4.md
                    // §4.7).
                    Some(status) => {
                        let _ = write!(
                            text,
                            "deviceState->{} = 0;\n{}return;",
                            names::RUNNING,
                            exit_with(&printer, status)
                        );
                    }
                    None => {
                        let _ = write!(
                            text,
                            "deviceState->{} = 0;\nhandler_log(0, \"{}\");\nhandler_exit(0);\nreturn;",
                            names::RUNNING,
                            names::EXIT_MARKER
                        );
                    }
                }
                text
            }
        };
        for line in text.lines() {
            let _ = writeln!(printer.out, "        {line}");
        }
        printer.out.push_str("    }\n");
    }
    let step_handler = format!(
        "while (1) {{\n    switch (deviceState->{}) {{\n{}    default:\n        return;\n    }}\n}}\n",
        names::PROGRAM_COUNTER,
        printer.out
    );

    let mut outputs = vec![Pin {
        name: names::STEP_PIN.into(),
        message_type: names::EMPTY_MESSAGE.into(),
        role: PinRole::Step,
        handler: step_handler,
    }];
    let mut inputs = Vec::new();
    let mut ready = format!(
        "if (deviceState->{}) *readyToSend |= RTS_FLAG_{};\n",
        names::RUNNING,
        names::STEP_PIN
    );
    for (index, plan) in invocations.iter().enumerate() {
        let inv = plan.name.as_str();
        let begin_name = names::begin(inv);
        let _ = writeln!(
            ready,
            "if (deviceState->{} == {}) *readyToSend |= RTS_FLAG_{begin_name};",
            names::BEGIN_PENDING,
            index + 1,
        );
        if let Some(fetch) = &plan.fetch {
            let (begin, end) =
                crate::fetch::controller_handlers(program, plan, fetch, index, fan_limit);
            outputs.push(Pin {
                name: begin_name.clone(),
                message_type: begin_name,
                role: PinRole::ControllerBegin(plan.id),
                handler: begin,
            });
            inputs.push(Pin {
                name: names::end(inv),
                message_type: names::end(inv),
                role: PinRole::ControllerEnd(plan.id),
                handler: end,
            });
            continue;
        }
        let mut begin = String::new();
        for global in &plan.begin_globals {
            let member = global_member(program, *global);
            copy_loop(&mut begin, member.components(), |out, c| {
                let _ = write!(
                    out,
                    "message->{0}[{c}] = deviceState->{0}[{c}];",
                    member.name
                );
            });
        }
        reset_info_elements(&mut begin, program, plan);
        let _ = writeln!(begin, "deviceState->{} = 0;", names::BEGIN_PENDING);
        let _ = writeln!(begin, "deviceState->{} = 0;", names::END_COUNT);
        // An invocation over no devices at all completes at once.
        let _ = writeln!(
            begin,
            "if (deviceProperties->{} == 0) deviceState->{} = 1;",
            names::end_total(inv),
            names::RUNNING
        );
        outputs.push(Pin {
            name: begin_name.clone(),
            message_type: begin_name,
            role: PinRole::ControllerBegin(plan.id),
            handler: begin,
        });
        let mut end = String::new();
        // Before the MIN or MAX global it follows takes this partial.
        for info in &plan.infos {
            let r = format!("deviceState->{}", global_member(program, info.of).name);
            let g = global_member(program, info.global).name;
            info_combine(&mut end, program, info, &r, &g);
        }
        for (global, mode) in &plan.end_globals {
            let member = global_member(program, *global);
            let ty = program.globals[global.index()].ty.scalar;
            let target = format!("deviceState->{}", member.name);
            let source = format!("message->{}", member.name);
            copy_loop(&mut end, member.components(), |out, c| {
                combine(out, *mode, ty, &target, &source, c);
            });
        }
        let _ = writeln!(end, "deviceState->{}++;", names::END_COUNT);
        let _ = writeln!(
            end,
            "if (deviceState->{count} == deviceProperties->{total}) {{\n    deviceState->{count} = 0;\n    deviceState->{running} = 1;\n}}",
            count = names::END_COUNT,
            total = names::end_total(inv),
            running = names::RUNNING
        );
        inputs.push(Pin {
            name: names::end(inv),
            message_type: names::end(inv),
            role: PinRole::ControllerEnd(plan.id),
            handler: end,
        });
    }
    DeviceType {
        id: names::GLOBAL_DEVICE.into(),
        kind: DeviceKind::Controller,
        properties,
        state,
        shared_code: String::new(),
        inputs,
        outputs,
        ready_to_send: ready,
        on_init: format!(
            "deviceState->{} = 0;\ndeviceState->{} = 1;\n",
            names::PROGRAM_COUNTER,
            names::RUNNING
        ),
        plans: Vec::new(),
    }
}

/// The C++ of `exit(STATUS)` after the line is flushed: the status is
/// evaluated once, and one outside 0..=255 stops the program as `op2 run`
/// does (`op2_exec::interp::exit_status`), with the fault logged, status 1
/// and the failure marker.
fn exit_with(printer: &Printer<'_>, status: &op2_analysis::hir::Expr) -> String {
    let mut text = format!(
        "{{\n    {} op2_status = {};\n",
        crate::cpp::scalar_type(status.ty),
        printer.expr(status)
    );
    // No comparison the type makes always false (g++'s -Wtype-limits);
    // a `bool` is always in range.
    let outside = match status.ty {
        ScalarType::Bool => None,
        ScalarType::Uint | ScalarType::Ull => {
            Some(("op2_status > 255", "%llu", "unsigned long long"))
        }
        _ => Some(("op2_status < 0 || op2_status > 255", "%lld", "long long")),
    };
    if let Some((condition, format, cast)) = outside {
        let _ = write!(
            text,
            "    if ({condition}) {{\n        handler_log(0, \"op2: exit status {format} is outside 0..=255, the statuses a process can end with\", ({cast})op2_status);\n        handler_exit(1);\n        handler_log(0, \"{}\");\n        return;\n    }}\n",
            names::EXIT_FAIL_MARKER
        );
    }
    let _ = write!(
        text,
        "    handler_exit((int)op2_status);\n    handler_log(0, op2_status == 0 ? \"{}\" : \"{}\");\n}}\n",
        names::EXIT_MARKER,
        names::EXIT_FAIL_MARKER
    );
    text
}

/// One component of a reduction: `target[c]` combined with `source[c]` of
/// type `ty` by `mode` (`+=` for INC, the smaller for MIN, the larger for
/// MAX, [`better`]).
fn combine(
    out: &mut String,
    mode: AccessMode,
    ty: ScalarType,
    target: &str,
    source: &str,
    c: &str,
) {
    let _ = match mode {
        AccessMode::Min | AccessMode::Max => {
            let better = better(
                mode,
                ty,
                &format!("{source}[{c}]"),
                &format!("{target}[{c}]"),
            );
            write!(out, "if ({better}) {target}[{c}] = {source}[{c}];")
        }
        _ => write!(out, "{target}[{c}] += {source}[{c}];"),
    };
}

/// The C++ condition that `value` (of type `ty`) is strictly better than
/// `current` for a MIN or MAX reduction: smaller or larger, and for a
/// floating type also `-0.0` against `0.0` for MIN and `0.0` against
/// `-0.0` for MAX (`op2_below`, `op2_above`), so that the zero a reduction
/// ends with does not depend on the order of its values. A NaN is never
/// better, and nothing is better than a NaN.
fn better(mode: AccessMode, ty: ScalarType, value: &str, current: &str) -> String {
    let floating = matches!(ty, ScalarType::Double | ScalarType::Float);
    match (mode == AccessMode::Min, floating) {
        (true, true) => format!("op2_below({value}, {current})"),
        (false, true) => format!("op2_above({value}, {current})"),
        (true, false) => format!("{value} < {current}"),
        (false, false) => format!("{value} > {current}"),
    }
}

/// The aggregator device type of one invocation's tree (compilation.md
/// §11): it passes `{inv}_begin` from its parent on to its children, and
/// combines its children's `{inv}_end` partials into one `{inv}_end` for its
/// parent once all `{inv}_end_total` of them arrived.
fn tree_device(program: &Program, plan: &InvocationPlan) -> DeviceType {
    let inv = plan.name.as_str();
    let end_total = names::end_total(inv);
    let mut state: Vec<Member> = plan
        .begin_globals
        .iter()
        .map(|g| global_member(program, *g))
        .collect();
    let partials: Vec<(Member, Member, AccessMode, ScalarType)> = plan
        .end_globals
        .iter()
        .map(|(g, mode)| {
            let message = global_member(program, *g);
            let global = &program.globals[g.index()];
            let partial = Member::array(
                names::partial_state(&global.name),
                message.ty,
                global.ty.dimension,
            );
            (partial, message, *mode, global.ty.scalar)
        })
        .collect();
    state.extend(partials.iter().map(|(partial, ..)| partial.clone()));
    // Each `INFO` global's partial: `partial_G` and `element_G`.
    for info in &plan.infos {
        let [value, element] = info_members(program, info);
        let name = &program.globals[info.global.index()].name;
        state.push(Member {
            name: names::partial_state(name),
            ..value
        });
        state.push(element);
    }
    state.push(Member::scalar(names::BEGIN_PENDING, CType::U8));
    state.push(Member::scalar(names::END_COUNT, CType::U32));

    let mut begin = String::new();
    for global in &plan.begin_globals {
        let member = global_member(program, *global);
        copy_loop(&mut begin, member.components(), |out, c| {
            let _ = write!(
                out,
                "deviceState->{0}[{c}] = message->{0}[{c}];",
                member.name
            );
        });
    }
    for (partial, _, mode, ty) in &partials {
        let value = identity(*ty, *mode);
        copy_loop(&mut begin, partial.components(), |out, c| {
            let _ = write!(out, "deviceState->{}[{c}] = {value};", partial.name);
        });
    }
    reset_info_elements(&mut begin, program, plan);
    let _ = writeln!(begin, "deviceState->{} = 1;", names::BEGIN_PENDING);

    let mut forward = String::new();
    for global in &plan.begin_globals {
        let member = global_member(program, *global);
        copy_loop(&mut forward, member.components(), |out, c| {
            let _ = write!(
                out,
                "message->{0}[{c}] = deviceState->{0}[{c}];",
                member.name
            );
        });
    }
    let _ = writeln!(forward, "deviceState->{} = 0;", names::BEGIN_PENDING);

    let mut end = String::new();
    let mut end_forward = String::new();
    // Before the MIN or MAX partial it follows takes this child's.
    for info in &plan.infos {
        let name = &program.globals[info.global.index()].name;
        let r = format!(
            "deviceState->{}",
            names::partial_state(&program.globals[info.of.index()].name)
        );
        info_combine(&mut end, program, info, &r, &names::partial_state(name));
        let [value, element] = info_members(program, info);
        copy_loop(&mut end_forward, value.components(), |out, c| {
            let _ = write!(
                out,
                "message->{}[{c}] = deviceState->{}[{c}];",
                value.name,
                names::partial_state(name)
            );
        });
        let _ = writeln!(
            end_forward,
            "message->{0} = deviceState->{0};",
            element.name
        );
    }
    for (partial, message, mode, ty) in &partials {
        let target = format!("deviceState->{}", partial.name);
        let source = format!("message->{}", message.name);
        copy_loop(&mut end, partial.components(), |out, c| {
            combine(out, *mode, *ty, &target, &source, c);
        });
        copy_loop(&mut end_forward, partial.components(), |out, c| {
            let _ = write!(out, "{source}[{c}] = {target}[{c}];");
        });
    }
    let _ = writeln!(end, "deviceState->{}++;", names::END_COUNT);
    let _ = writeln!(end_forward, "deviceState->{} = 0;", names::END_COUNT);

    let ready = format!(
        "if (deviceState->{pending}) *readyToSend |= RTS_FLAG_{};\nif (deviceState->{count} != 0 && deviceState->{count} == deviceProperties->{end_total}) *readyToSend |= RTS_FLAG_{};\n",
        names::begin_forward(inv),
        names::end_forward(inv),
        pending = names::BEGIN_PENDING,
        count = names::END_COUNT,
    );
    aggregator_type(
        plan,
        vec![Member::scalar(end_total, CType::U32)],
        state,
        [begin, end, forward, end_forward],
        ready,
    )
}

/// The device type `tree_{inv}` of the aggregators of `plan`'s tree: inputs
/// `{inv}_begin` and `{inv}_end`, outputs `{inv}_begin_forward` and
/// `{inv}_end_forward`, with `handlers` in that order.
pub(crate) fn aggregator_type(
    plan: &InvocationPlan,
    properties: Vec<Member>,
    state: Vec<Member>,
    handlers: [String; 4],
    ready_to_send: String,
) -> DeviceType {
    let inv = plan.name.as_str();
    let [begin, end, forward, end_forward] = handlers;
    let begin_name = names::begin(inv);
    let end_name = names::end(inv);
    let pin = |name: String, message_type: &str, role, handler| Pin {
        name,
        message_type: message_type.to_owned(),
        role,
        handler,
    };
    DeviceType {
        id: names::tree_device_type(inv),
        kind: DeviceKind::Aggregator(plan.id),
        properties,
        state,
        shared_code: String::new(),
        inputs: vec![
            pin(
                begin_name.clone(),
                &begin_name,
                PinRole::TreeBegin(plan.id),
                begin,
            ),
            pin(end_name.clone(), &end_name, PinRole::TreeEnd(plan.id), end),
        ],
        outputs: vec![
            pin(
                names::begin_forward(inv),
                &begin_name,
                PinRole::TreeBeginForward(plan.id),
                forward,
            ),
            pin(
                names::end_forward(inv),
                &end_name,
                PinRole::TreeEndForward(plan.id),
                end_forward,
            ),
        ],
        ready_to_send,
        on_init: String::new(),
        plans: Vec::new(),
    }
}

/// Whether `main` has a `printf`, whose output the controller then buffers
/// until a newline.
fn has_printf(main: &Body) -> bool {
    let mut stack: Vec<&Stmt> = main.statements.iter().collect();
    while let Some(stmt) = stack.pop() {
        match &stmt.kind {
            StmtKind::Print { ends_line, .. } if !ends_line => return true,
            StmtKind::Block(stmts) | StmtKind::Sequence(stmts) => stack.extend(stmts),
            StmtKind::If {
                then_branch,
                else_branch,
                ..
            } => {
                stack.push(then_branch);
                stack.extend(else_branch.as_deref());
            }
            StmtKind::For { init, body, .. } => {
                stack.extend(init.as_deref());
                stack.push(body);
            }
            StmtKind::While { body, .. } | StmtKind::DoWhile { body, .. } => stack.push(body),
            _ => {}
        }
    }
    false
}
