//! What the code generator makes of the program, as editors show it
//! (compilation.md §8): per argument the pins, buffer, state member or
//! property it turns into (§2, §4), the whole device type of a set, and per
//! invocation the pins, state and messages it costs. Everything comes from
//! the graph model that `op2 build` writes, and every generated name from
//! `op2_codegen::names`. Plain text and data; no LSP.

use std::fmt::Write;

use op2_analysis::model::{ArgKind, DatId, InvocationId, Program, SetId};
use op2_codegen::limits::{MAX_MESSAGE_BYTES, MAX_OUTPUT_PINS};
use op2_codegen::model::{
    DeviceKind, DevicePlan, DeviceType, GraphType, InvocationPlan, Member, MessageRole, Pin,
    PinRole,
};
use op2_codegen::names;
use op2_syntax::ast::AccessMode;
use rustc_hash::{FxHashMap, FxHashSet};

/// What argument `arg` of `invocation` turns into in the graph, one
/// sentence per line (compilation.md §2 and §4): the pins that carry it,
/// on which device types, the landing pad or state member, or the graph
/// property. Empty when the invocation or argument is not in the graph.
pub fn argument_summary(
    program: &Program,
    graph: &GraphType,
    invocation: InvocationId,
    arg: usize,
) -> Vec<String> {
    let Some(plan) = graph.invocation(invocation) else {
        return Vec::new();
    };
    summary(
        program,
        plan,
        arg,
        |dat| dat_message_size(graph, dat),
        |dat| std::rc::Rc::new(indirect_readers(program, invocation, dat)),
    )
}

/// The arguments of `invocation` that read `dat` through a map, in order:
/// they share one read pin.
fn indirect_readers(program: &Program, invocation: InvocationId, dat: DatId) -> Vec<usize> {
    program.invocations[invocation.index()]
        .resolved_args()
        .filter(|(_, a)| {
            reads(a.mode)
                && matches!(a.kind, ArgKind::IndirectDat { dat: other, .. } if other == dat)
        })
        .map(|(i, _)| i)
        .collect()
}

/// The other arguments an argument's read pin serves that its summary
/// names; the rest are counted. A par_loop of tens of thousands of
/// arguments on one dat gave each hint the whole list, hundreds of
/// megabytes of inlay hints in all (review of 2026-11-29).
const SHOWN_SHARERS: usize = 8;

/// [`indirect_readers`], shared between the arguments that ask.
type Readers = std::rc::Rc<Vec<usize>>;

/// Lookups over the graph for many argument queries in one request (the
/// inlay hints of a range): each invocation's plan and each dat's message
/// size, found once instead of by a scan per argument.
#[derive(Debug)]
pub struct GraphIndex<'a> {
    program: &'a Program,
    plans: Vec<Option<&'a InvocationPlan>>,
    dat_sizes: Vec<Option<u64>>,
    /// [`indirect_readers`] of each invocation and dat asked for, found
    /// once per request rather than once per argument.
    readers: std::cell::RefCell<FxHashMap<(InvocationId, DatId), Readers>>,
}

impl<'a> GraphIndex<'a> {
    /// Indexes `graph`, the graph of `program`.
    pub fn new(program: &'a Program, graph: &'a GraphType) -> GraphIndex<'a> {
        let mut plans = vec![None; program.invocations.len()];
        for plan in &graph.invocations {
            if let Some(slot) = plans.get_mut(plan.id.index()) {
                *slot = Some(plan);
            }
        }
        let mut dat_sizes = vec![None; program.dats.len()];
        for message in &graph.message_types {
            if let MessageRole::Dat(dat) = message.role
                && let Some(slot) = dat_sizes.get_mut(dat.index())
            {
                *slot = Some(message.size());
            }
        }
        GraphIndex {
            program,
            plans,
            dat_sizes,
            readers: std::cell::RefCell::default(),
        }
    }

    /// [`argument_summary`].
    pub fn summary(&self, invocation: InvocationId, arg: usize) -> Vec<String> {
        match self.plans.get(invocation.index()).copied().flatten() {
            Some(plan) => summary(
                self.program,
                plan,
                arg,
                |dat| self.dat_sizes.get(dat.index()).copied().flatten(),
                |dat| {
                    std::rc::Rc::clone(
                        self.readers
                            .borrow_mut()
                            .entry((invocation, dat))
                            .or_insert_with(|| {
                                std::rc::Rc::new(indirect_readers(self.program, invocation, dat))
                            }),
                    )
                },
            ),
            None => Vec::new(),
        }
    }

    /// [`argument_label`].
    pub fn label(&self, invocation: InvocationId, arg: usize) -> Option<String> {
        let plan = self.plans.get(invocation.index()).copied().flatten()?;
        label(self.program, plan, arg)
    }
}

/// The payload size of the `dat_{D}` message type.
fn dat_message_size(graph: &GraphType, dat: DatId) -> Option<u64> {
    graph
        .message_types
        .iter()
        .find(|m| m.role == MessageRole::Dat(dat))
        .map(|m| m.size())
}

fn summary(
    program: &Program,
    plan: &InvocationPlan,
    arg: usize,
    dat_size: impl Fn(DatId) -> Option<u64>,
    readers: impl Fn(DatId) -> std::rc::Rc<Vec<usize>>,
) -> Vec<String> {
    let invocation = plan.id;
    let Some(Some(argument)) = program
        .invocations
        .get(invocation.index())
        .and_then(|i| i.args.get(arg))
    else {
        return Vec::new();
    };
    let inv = plan.name.as_str();
    let iteration = set_name(program, plan.set);
    let iteration_type = names::set_device_type(iteration);
    let mut lines = Vec::new();
    match argument.kind {
        ArgKind::IndirectDat { dat, map, index } => {
            let d = &program.dats[dat.index()];
            let target = d.set.map_or("?", |s| set_name(program, s));
            let target_type = names::set_device_type(target);
            let dat_state = names::dat_state(&d.name);
            let via = format!("{}[{index}]", program.maps[map.index()].name);
            let buffer = names::arg_buffer(inv, arg);
            if reads(argument.mode) {
                let read_send = names::read_send(inv, &d.name);
                lines.push(format!(
                    "reads `{dat_state}` of `{target}` via `{via}`: pin `{read_send}` on `{target_type}` → `{}` on `{iteration_type}`, into `{buffer}`",
                    names::read_recv(inv, arg),
                ));
                let readers = readers(dat);
                // The readers are in order: `arg` among them is found by a
                // search, not a scan (this runs for each argument).
                let count = readers.len() - usize::from(readers.binary_search(&arg).is_ok());
                let mut sharing: Vec<String> = readers
                    .iter()
                    .filter(|&&i| i != arg)
                    .take(SHOWN_SHARERS)
                    .map(|i| format!("arg{i}"))
                    .collect();
                if count > SHOWN_SHARERS {
                    sharing.push(format!("{} more", count - SHOWN_SHARERS));
                }
                if let Some(last) = sharing.pop() {
                    let list = if sharing.is_empty() {
                        last
                    } else {
                        format!("{} and {last}", sharing.join(", "))
                    };
                    lines.push(format!(
                        "`{read_send}` is sent once per element of `{target}` and also serves {list}"
                    ));
                }
            }
            let what = match argument.mode {
                AccessMode::Rw => Some(("writes", "", "copies")),
                AccessMode::Write => Some(("writes", " (not initialised)", "copies")),
                AccessMode::Inc => Some(("adds to", " (zeroed before the kernel)", "adds")),
                _ => None,
            };
            if let Some((verb, initial, effect)) = what {
                let write_send = names::write_send(inv, arg);
                let write_recv = names::write_recv(inv, &d.name);
                lines.push(format!(
                    "{verb} `{dat_state}` of `{target}` via `{via}`: `{buffer}`{initial} → `{write_send}` on `{iteration_type}` → `{write_recv}` on `{target_type}` ({effect})"
                ));
            }
            let message = names::dat_message(&d.name);
            if let Some(size) = dat_size(dat) {
                let over = if size > MAX_MESSAGE_BYTES {
                    format!(", over the hardware's {MAX_MESSAGE_BYTES}-byte payload")
                } else {
                    String::new()
                };
                lines.push(format!(
                    "messages of type `{message}`: {size} bytes each{over}"
                ));
            }
        }
        ArgKind::DirectDat(dat) => {
            let d = &program.dats[dat.index()];
            let mut line = format!(
                "in place: `{iteration_type}::{}`",
                names::dat_state(&d.name)
            );
            if argument.mode == AccessMode::Inc {
                line.push_str(" (not zeroed: the kernel adds to the element's value)");
            }
            lines.push(line);
        }
        ArgKind::Global(global) => {
            let pad = names::global_state(&program.globals[global.index()].name);
            let begin = names::begin(inv);
            let end = names::end(inv);
            lines.push(match argument.mode {
                AccessMode::Read => {
                    format!("carried by `{begin}` into `{pad}` (landing pad on `{iteration_type}`)")
                }
                AccessMode::Inc => format!(
                    "landing pad `{pad}` on `{iteration_type}`, zeroed before the kernel; partial sent in `{end}` and added up by `{}`",
                    names::GLOBAL_DEVICE
                ),
                AccessMode::Min | AccessMode::Max => format!(
                    "landing pad `{pad}` on `{iteration_type}`, written from `{begin}`; partial sent in `{end}` and combined by `{}` ({})",
                    names::GLOBAL_DEVICE,
                    if argument.mode == AccessMode::Min { "minimum" } else { "maximum" }
                ),
                _ => format!("landing pad `{pad}` on `{iteration_type}`"),
            });
        }
        ArgKind::Const(id) => lines.push(format!(
            "graph property `{}`",
            names::const_property(&program.consts[id.index()].name)
        )),
        ArgKind::Len(set) => lines.push(format!(
            "graph property `{}`",
            names::length_property(set_name(program, set))
        )),
        ArgKind::Index(None) => lines.push(format!(
            "device property `{}` of `{iteration_type}`: the element's own index",
            names::INDEX_PROPERTY
        )),
        ArgKind::Index(Some((map, index))) => lines.push(format!(
            "device property `{}` of `{iteration_type}`: the index `{}[{index}]` reaches, from the instance's map",
            names::index_property(inv, arg),
            program.maps[map.index()].name
        )),
        ArgKind::Info { global, of } => {
            let name = &program.globals[global.index()].name;
            let pad = names::global_state(name);
            let element = names::info_element(name);
            let reference = program.invocations[invocation.index()]
                .args
                .get(of as usize)
                .and_then(Option::as_ref)
                .map_or_else(String::new, |a| arg_text(program, a));
            lines.push(format!(
                "landing pad `{pad}` on `{iteration_type}`, written from `{}`; with `{element}`, the element where `{reference}` improved, sent in `{}`; `{}` keeps the partial of the best `{reference}`, the lowest element on a tie",
                names::begin(inv),
                names::end(inv),
                names::GLOBAL_DEVICE
            ));
        }
    }
    lines
}

/// The global an argument names, for the descriptions of `INFO`.
fn arg_text(program: &Program, argument: &op2_analysis::model::Arg) -> String {
    match argument.kind {
        ArgKind::Global(global) | ArgKind::Info { global, .. } => {
            program.globals[global.index()].name.clone()
        }
        _ => String::new(),
    }
}

/// A short label of what an argument generates, for an inlay hint:
/// `⇐ dat_p_x_read_send`, `→ arg6_write_send`, `global_rms pad`,
/// `prop global_gam`. Pin names drop the `{inv}_` prefix the invocation
/// name already says. `None` when the invocation is not in the graph.
pub fn argument_label(
    program: &Program,
    graph: &GraphType,
    invocation: InvocationId,
    arg: usize,
) -> Option<String> {
    label(program, graph.invocation(invocation)?, arg)
}

fn label(program: &Program, plan: &InvocationPlan, arg: usize) -> Option<String> {
    let invocation = plan.id;
    let argument = program
        .invocations
        .get(invocation.index())?
        .args
        .get(arg)?
        .as_ref()?;
    let inv = plan.name.as_str();
    let short = |name: String| -> String {
        name.strip_prefix(inv)
            .and_then(|rest| rest.strip_prefix('_'))
            .map_or_else(|| name.clone(), str::to_owned)
    };
    Some(match argument.kind {
        ArgKind::IndirectDat { dat, .. } => {
            let d = &program.dats[dat.index()];
            let mut parts = Vec::new();
            if reads(argument.mode) {
                parts.push(format!("⇐ {}", short(names::read_send(inv, &d.name))));
            }
            if writes(argument.mode) {
                parts.push(format!("→ {}", short(names::write_send(inv, arg))));
            }
            parts.join(" ")
        }
        ArgKind::DirectDat(dat) => {
            format!(
                "in place {}",
                names::dat_state(&program.dats[dat.index()].name)
            )
        }
        ArgKind::Global(global) => {
            format!(
                "{} pad",
                names::global_state(&program.globals[global.index()].name)
            )
        }
        ArgKind::Const(id) => format!(
            "prop {}",
            names::const_property(&program.consts[id.index()].name)
        ),
        ArgKind::Len(set) => format!("prop {}", names::length_property(set_name(program, set))),
        ArgKind::Index(None) => format!("prop {}", names::INDEX_PROPERTY),
        ArgKind::Index(Some(_)) => format!("prop {}", short(names::index_property(inv, arg))),
        ArgKind::Info { global, .. } => {
            let name = &program.globals[global.index()].name;
            format!(
                "{} pad, {}",
                names::global_state(name),
                names::info_element(name)
            )
        }
    })
}

/// The generated device type `set_S` as readable text: its totals against
/// the hardware's limits, the dats and landing pads, then per invocation
/// the properties, state members and pins it adds (outputs with their
/// ready bit). `None` when no invocation involves the set.
pub fn device_type_text(program: &Program, graph: &GraphType, set: SetId) -> Option<String> {
    device_type_head(program, graph, set, usize::MAX).map(|lines| lines.text)
}

/// The first `max_lines` lines of [`device_type_text`], and how many there
/// are in all.
pub fn device_type_head(
    program: &Program,
    graph: &GraphType,
    set: SetId,
    max_lines: usize,
) -> Option<Lines> {
    let device = graph.set_device_type(set)?;
    Some(render_device(program, graph, device, max_lines))
}

/// The controller device type `global` as readable text.
pub fn controller_text(program: &Program, graph: &GraphType) -> Option<String> {
    let device = graph
        .device_types
        .iter()
        .find(|d| d.kind == DeviceKind::Controller)?;
    Some(render_device(program, graph, device, usize::MAX).text)
}

/// The aggregator device types of the invocations' trees as readable text,
/// in invocation order (none with the flat controller).
pub fn tree_texts(program: &Program, graph: &GraphType) -> Vec<String> {
    graph
        .device_types
        .iter()
        .filter(|d| matches!(d.kind, DeviceKind::Aggregator(_)))
        .map(|d| render_device(program, graph, d, usize::MAX).text)
        .collect()
}

/// What one invocation adds to one device type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceCounts {
    /// The device type's id (`set_S` or `global`).
    pub device_type: String,
    /// True when this is the invocation's iteration set.
    pub iterates: bool,
    /// Input pins the invocation adds.
    pub inputs: usize,
    /// Output pins the invocation adds.
    pub outputs: usize,
    /// State members the invocation adds (shared landing pads of globals
    /// and the dats themselves are not counted).
    pub state: usize,
    /// Device properties the invocation adds.
    pub properties: usize,
}

/// What an invocation costs in the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvocationCounts {
    /// The invocation.
    pub invocation: InvocationId,
    /// Its name.
    pub name: String,
    /// Per device type involved: the controller, then the involved sets in
    /// the plan's order (iteration set first).
    pub devices: Vec<DeviceCounts>,
    /// Indirect reads each iteration element receives.
    pub reads_per_element: usize,
    /// Indirect writes each iteration element sends.
    pub writes_per_element: usize,
}

impl InvocationCounts {
    /// Input and output pins added over all device types.
    pub fn pins(&self) -> usize {
        self.devices.iter().map(|d| d.inputs + d.outputs).sum()
    }

    /// State members added over all device types.
    pub fn state(&self) -> usize {
        self.devices.iter().map(|d| d.state).sum()
    }

    /// Messages per iteration element: its `{inv}_begin` and `{inv}_end`,
    /// one per indirect read it receives and one per indirect write it
    /// sends (the edges of compilation.md §7 per element).
    pub fn messages_per_element(&self) -> usize {
        2 + self.reads_per_element + self.writes_per_element
    }
}

/// The pins, state members and messages per iteration element that one
/// invocation adds to the graph, from its device plans. `None` when the
/// invocation is not in the graph.
pub fn invocation_counts(
    _program: &Program,
    graph: &GraphType,
    invocation: InvocationId,
) -> Option<InvocationCounts> {
    let devices = DeviceLookup::new(graph);
    counts_with(
        graph,
        &devices,
        graph.invocation(invocation)?,
        |device, id| {
            let device = &graph.device_types[device];
            (
                count_pins(&device.inputs, id),
                count_pins(&device.outputs, id),
            )
        },
    )
}

/// [`invocation_counts`] of every invocation, indexed like
/// `program.invocations`, with one pass over the pins.
pub fn all_invocation_counts(
    program: &Program,
    graph: &GraphType,
) -> Vec<Option<InvocationCounts>> {
    let mut pins: FxHashMap<(usize, InvocationId), (usize, usize)> = FxHashMap::default();
    for (index, device) in graph.device_types.iter().enumerate() {
        for pin in &device.inputs {
            if let Some(id) = pin_invocation(pin.role) {
                pins.entry((index, id)).or_default().0 += 1;
            }
        }
        for pin in &device.outputs {
            if let Some(id) = pin_invocation(pin.role) {
                pins.entry((index, id)).or_default().1 += 1;
            }
        }
    }
    let devices = DeviceLookup::new(graph);
    let mut all = vec![None; program.invocations.len()];
    for plan in &graph.invocations {
        if let Some(slot) = all.get_mut(plan.id.index()) {
            *slot = counts_with(graph, &devices, plan, |device, id| {
                pins.get(&(device, id)).copied().unwrap_or_default()
            });
        }
    }
    all
}

/// The device types of a graph by what they serve, and the controller's
/// properties by name, found in one pass so that the counts of every
/// invocation take time linear in the graph (a scan per invocation made the
/// code lenses quadratic in the number of par_loops).
struct DeviceLookup<'g> {
    controller: Option<usize>,
    sets: FxHashMap<SetId, usize>,
    trees: FxHashMap<InvocationId, usize>,
    /// (device type index, invocation) to the index of its plan.
    plans: FxHashMap<(usize, InvocationId), usize>,
    controller_properties: FxHashMap<&'g str, usize>,
}

impl<'g> DeviceLookup<'g> {
    fn new(graph: &'g GraphType) -> Self {
        let mut lookup = DeviceLookup {
            controller: None,
            sets: FxHashMap::default(),
            trees: FxHashMap::default(),
            plans: FxHashMap::default(),
            controller_properties: FxHashMap::default(),
        };
        for (index, device) in graph.device_types.iter().enumerate() {
            match device.kind {
                DeviceKind::Controller => {
                    if lookup.controller.is_none() {
                        lookup.controller = Some(index);
                        for property in &device.properties {
                            *lookup
                                .controller_properties
                                .entry(property.name.as_str())
                                .or_default() += 1;
                        }
                    }
                }
                DeviceKind::Set(set) => {
                    lookup.sets.entry(set).or_insert(index);
                }
                DeviceKind::Aggregator(id) => {
                    lookup.trees.entry(id).or_insert(index);
                }
            }
            for (plan_index, plan) in device.plans.iter().enumerate() {
                lookup
                    .plans
                    .entry((index, plan.invocation))
                    .or_insert(plan_index);
            }
        }
        lookup
    }
}

/// The counts of one invocation, given the (input, output) pins it has on
/// the device type at an index.
fn counts_with(
    graph: &GraphType,
    lookup: &DeviceLookup<'_>,
    plan: &InvocationPlan,
    pins: impl Fn(usize, InvocationId) -> (usize, usize),
) -> Option<InvocationCounts> {
    let invocation = plan.id;
    let mut devices = Vec::new();
    if let Some(index) = lookup.controller {
        let controller = &graph.device_types[index];
        let end_total = names::end_total(&plan.name);
        let (inputs, outputs) = pins(index, invocation);
        devices.push(DeviceCounts {
            device_type: controller.id.clone(),
            iterates: false,
            inputs,
            outputs,
            state: 0,
            properties: lookup
                .controller_properties
                .get(end_total.as_str())
                .copied()
                .unwrap_or(0),
        });
    }
    let mut reads_per_element = 0;
    let mut writes_per_element = 0;
    for set in &plan.involved_sets {
        let Some(&index) = lookup.sets.get(set) else {
            continue;
        };
        let device = &graph.device_types[index];
        let Some(&plan_index) = lookup.plans.get(&(index, invocation)) else {
            continue;
        };
        let device_plan = &device.plans[plan_index];
        if device_plan.iterates {
            reads_per_element = device_plan.read_recvs.len();
            writes_per_element = device_plan.write_sends.len();
        }
        let (inputs, outputs) = pins(index, invocation);
        devices.push(DeviceCounts {
            device_type: device.id.clone(),
            iterates: device_plan.iterates,
            inputs,
            outputs,
            state: plan_state_names(device_plan).len(),
            properties: plan_property_names(device_plan).len(),
        });
    }
    // The aggregators of its tree, when the graph has trees: every member
    // of their device type serves this invocation.
    if let Some(&index) = lookup.trees.get(&invocation) {
        let tree = &graph.device_types[index];
        let (inputs, outputs) = pins(index, invocation);
        devices.push(DeviceCounts {
            device_type: tree.id.clone(),
            iterates: false,
            inputs,
            outputs,
            state: tree.state.len(),
            properties: tree.properties.len(),
        });
    }
    Some(InvocationCounts {
        invocation,
        name: plan.name.clone(),
        devices,
        reads_per_element,
        writes_per_element,
    })
}

/// The invocation a pin serves, if any.
pub fn pin_invocation(role: PinRole) -> Option<InvocationId> {
    role.invocation()
}

fn count_pins(pins: &[Pin], invocation: InvocationId) -> usize {
    pins.iter()
        .filter(|p| pin_invocation(p.role) == Some(invocation))
        .count()
}

/// The state members one invocation adds to a set's device type
/// (compilation.md §4): the buffers of its indirect arguments (iteration
/// set only) and its five lifecycle counters.
fn plan_state_names(plan: &DevicePlan) -> Vec<String> {
    let inv = plan.name.as_str();
    let mut buffers: Vec<usize> = plan
        .read_recvs
        .iter()
        .chain(&plan.write_sends)
        .copied()
        .collect();
    buffers.sort_unstable();
    buffers.dedup();
    let mut members: Vec<String> = buffers
        .into_iter()
        .map(|arg| names::arg_buffer(inv, arg))
        .collect();
    members.extend([
        names::in_progress(inv),
        names::read_send_mask(inv),
        names::read_recv_count(inv),
        names::write_send_mask(inv),
        names::write_recv_count(inv),
    ]);
    members
}

/// The device properties one invocation adds to a set's device type.
fn plan_property_names(plan: &DevicePlan) -> Vec<String> {
    vec![
        names::read_recv_total(&plan.name),
        names::write_recv_total(&plan.name),
    ]
}

fn reads(mode: AccessMode) -> bool {
    matches!(mode, AccessMode::Read | AccessMode::Rw)
}

fn writes(mode: AccessMode) -> bool {
    matches!(mode, AccessMode::Rw | AccessMode::Write | AccessMode::Inc)
}

fn set_name(program: &Program, set: SetId) -> &str {
    program
        .sets
        .get(set.index())
        .map_or("?", |s| s.name.as_str())
}

fn member_text(member: &Member) -> String {
    match member.length {
        Some(length) => format!("{} {}[{length}]", member.ty.name(), member.name),
        None => format!("{} {}", member.ty.name(), member.name),
    }
}

fn bytes(members: &[&Member]) -> u64 {
    members.iter().map(|m| u64::from(m.size())).sum()
}

fn plural(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Which invocation owns each generated state member (first map) and
/// property (second) of a device type.
type Owners = (
    FxHashMap<String, InvocationId>,
    FxHashMap<String, InvocationId>,
);

fn member_owners(device: &DeviceType, graph: &GraphType) -> Owners {
    let mut state = FxHashMap::default();
    let mut properties = FxHashMap::default();
    match device.kind {
        DeviceKind::Set(_) => {
            for plan in &device.plans {
                for name in plan_state_names(plan) {
                    state.insert(name, plan.invocation);
                }
                for name in plan_property_names(plan) {
                    properties.insert(name, plan.invocation);
                }
            }
        }
        DeviceKind::Controller => {
            for plan in &graph.invocations {
                properties.insert(names::end_total(&plan.name), plan.id);
            }
        }
        DeviceKind::Aggregator(id) => {
            for member in &device.state {
                state.insert(member.name.clone(), id);
            }
            for member in &device.properties {
                properties.insert(member.name.clone(), id);
            }
        }
    }
    (state, properties)
}

/// Text written line by line up to a number of lines; the lines past it
/// are counted, not formatted (a hover shows the head of a device type that
/// may run to thousands of lines).
#[derive(Debug)]
pub struct Lines {
    /// The lines written, each ending in a line break.
    pub text: String,
    /// All lines, written or not.
    pub count: usize,
    max: usize,
}

impl Lines {
    fn new(max: usize) -> Lines {
        Lines {
            text: String::new(),
            count: 0,
            max,
        }
    }

    fn full(&self) -> bool {
        self.count >= self.max
    }

    fn line(&mut self, line: std::fmt::Arguments<'_>) {
        if !self.full() {
            let _ = self.text.write_fmt(line);
            self.text.push('\n');
        }
        self.count += 1;
    }

    /// Counts `lines` lines without writing them.
    fn skip(&mut self, lines: usize) {
        self.count += lines;
    }

    /// The lines left out.
    pub fn omitted(&self) -> usize {
        self.count.saturating_sub(self.max)
    }
}

/// A device type's members and pins, grouped by the invocation that owns
/// them (`None`: shared by all).
#[derive(Default)]
struct Group<'a> {
    properties: Vec<&'a Member>,
    state: Vec<&'a Member>,
    /// (is output, index among the inputs or outputs, pin).
    pins: Vec<(bool, usize, &'a Pin)>,
}

fn render_device(
    program: &Program,
    graph: &GraphType,
    device: &DeviceType,
    max_lines: usize,
) -> Lines {
    let (state_owners, property_owners) = member_owners(device, graph);
    let mut groups: FxHashMap<Option<InvocationId>, Group<'_>> = FxHashMap::default();
    for member in &device.properties {
        let owner = property_owners.get(member.name.as_str()).copied();
        groups.entry(owner).or_default().properties.push(member);
    }
    for member in &device.state {
        let owner = state_owners.get(member.name.as_str()).copied();
        groups.entry(owner).or_default().state.push(member);
    }
    for (index, pin) in device.inputs.iter().enumerate() {
        groups
            .entry(pin_invocation(pin.role))
            .or_default()
            .pins
            .push((false, index, pin));
    }
    for (index, pin) in device.outputs.iter().enumerate() {
        groups
            .entry(pin_invocation(pin.role))
            .or_default()
            .pins
            .push((true, index, pin));
    }

    let sizes = message_sizes(graph);
    let plans: FxHashMap<InvocationId, &InvocationPlan> =
        graph.invocations.iter().map(|p| (p.id, p)).collect();
    let mut out = Lines::new(max_lines);
    let all_state: Vec<&Member> = device.state.iter().collect();
    let all_properties: Vec<&Member> = device.properties.iter().collect();
    out.line(format_args!("device type {}", device.id));
    match device.kind {
        DeviceKind::Set(set) => {
            out.line(format_args!(
                "  one device per element of `{}`; {}",
                set_name(program, set),
                plural(device.plans.len(), "invocation", "invocations")
            ));
        }
        DeviceKind::Controller => {
            out.line(format_args!(
                "  the controller: runs `main` and starts every invocation"
            ));
        }
        DeviceKind::Aggregator(_) => {
            out.line(format_args!(
                "  an aggregator: passes the begin on to at most {} children and combines their ends",
                graph.fan_limit
            ));
        }
    }
    out.line(format_args!(
        "  {}, {} (limit {MAX_OUTPUT_PINS})",
        plural(device.inputs.len(), "input pin", "input pins"),
        plural(device.outputs.len(), "output pin", "output pins")
    ));
    out.line(format_args!(
        "  {} ({} bytes), {} ({} bytes)",
        plural(device.state.len(), "state member", "state members"),
        bytes(&all_state),
        plural(device.properties.len(), "property", "properties"),
        bytes(&all_properties)
    ));

    // Members no single invocation owns: dats, landing pads, `main`'s
    // variables and the controller's own counters and step pin.
    if let Some(shared) = groups.get(&None) {
        let owners = SharedOwners::new(program, graph);
        out.line(format_args!(""));
        out.line(format_args!("shared"));
        write_members(&mut out, "property", &shared.properties, |m| {
            owners.describe(m)
        });
        write_members(&mut out, "state", &shared.state, |m| owners.describe(m));
        write_pins(&mut out, &sizes, &shared.pins);
    }

    let invocations: Vec<InvocationId> = match device.kind {
        DeviceKind::Set(_) => device.plans.iter().map(|p| p.invocation).collect(),
        DeviceKind::Controller => graph.invocations.iter().map(|p| p.id).collect(),
        DeviceKind::Aggregator(id) => vec![id],
    };
    for id in invocations {
        let Some(plan) = plans.get(&id).copied() else {
            continue;
        };
        let role = match device.kind {
            DeviceKind::Set(set) if plan.set == set => "iterates here".to_owned(),
            DeviceKind::Set(_) => format!(
                "over `{}`; this set holds dats it reaches",
                set_name(program, plan.set)
            ),
            DeviceKind::Controller | DeviceKind::Aggregator(_) => {
                format!("over `{}`", set_name(program, plan.set))
            }
        };
        out.line(format_args!(""));
        out.line(format_args!("invocation {} ({role})", plan.name));
        if let Some(group) = groups.get(&Some(id)) {
            write_members(&mut out, "property", &group.properties, |_| None);
            write_members(&mut out, "state", &group.state, |_| None);
            write_pins(&mut out, &sizes, &group.pins);
        }
    }
    out
}

/// What each shared member of a device type holds, found by name: built
/// once per device type (looking each member up among every dat and global
/// made the description quadratic in the dats of a program).
struct SharedOwners<'a> {
    /// The state name of each dat and global, with its description; a dat
    /// wins over a global of the same state name.
    owners: FxHashMap<String, String>,
    locals: FxHashSet<&'a str>,
}

impl<'a> SharedOwners<'a> {
    fn new(program: &Program, graph: &'a GraphType) -> SharedOwners<'a> {
        let mut owners = FxHashMap::default();
        for global in &program.globals {
            owners.insert(
                names::global_state(&global.name),
                format!("global `{}`", global.name),
            );
        }
        for dat in &program.dats {
            owners.insert(names::dat_state(&dat.name), format!("dat `{}`", dat.name));
        }
        let locals = graph.controller.locals.iter().map(String::as_str).collect();
        SharedOwners { owners, locals }
    }

    fn describe(&self, member: &Member) -> Option<String> {
        crate::work::count(1);
        if let Some(owner) = self.owners.get(&member.name) {
            return Some(owner.clone());
        }
        if self.locals.contains(member.name.as_str()) {
            return Some("a variable of `main`".to_owned());
        }
        let note = match member.name.as_str() {
            names::PROGRAM_COUNTER => "the block of `main` to run next",
            names::RUNNING => "1 while `main` may run",
            names::BEGIN_PENDING => "1 + the invocation whose begin is to be sent",
            names::END_COUNT => "ends received for the current invocation",
            _ => return None,
        };
        Some(note.to_owned())
    }
}

fn write_members(
    out: &mut Lines,
    kind: &str,
    members: &[&Member],
    describe: impl Fn(&Member) -> Option<String>,
) {
    for (index, member) in members.iter().enumerate() {
        if out.full() {
            out.skip(members.len() - index);
            return;
        }
        let text = member_text(member);
        match describe(member) {
            Some(note) => {
                out.line(format_args!("  {kind:<8} {text:<40}  // {note}"));
            }
            None => {
                out.line(format_args!("  {kind:<8} {text}"));
            }
        }
    }
}

/// Payload sizes of the graph's message types by id, looked up once per
/// rendering instead of by a scan per pin.
type MessageSizes<'a> = FxHashMap<&'a str, u64>;

fn message_sizes(graph: &GraphType) -> MessageSizes<'_> {
    graph
        .message_types
        .iter()
        .map(|m| (m.id.as_str(), m.size()))
        .collect()
}

fn write_pins(out: &mut Lines, sizes: &MessageSizes<'_>, pins: &[(bool, usize, &Pin)]) {
    if out.full() {
        out.skip(pins.len());
        return;
    }
    for (output, index, pin) in pins {
        let direction = if *output {
            format!("out[{index}]")
        } else {
            "in".to_owned()
        };
        let size = sizes.get(pin.message_type.as_str()).copied().unwrap_or(0);
        let note = pin_note(pin.role);
        let over = if size > MAX_MESSAGE_BYTES {
            format!(", over the {MAX_MESSAGE_BYTES}-byte payload")
        } else {
            String::new()
        };
        out.line(format_args!(
            "  {direction:<8} {:<40}  {} ({size} bytes{over}){note}",
            pin.name, pin.message_type
        ));
    }
}

fn pin_note(role: PinRole) -> &'static str {
    match role {
        PinRole::Execute(_) | PinRole::Step => ", local step, no edges",
        PinRole::DatWriteRecv { add: true, .. } => ", adds",
        PinRole::DatWriteRecv { add: false, .. } => ", copies",
        _ => "",
    }
}

/// The begin and end trees of an invocation (compilation.md, "Trees"):
/// the pins a begin passes from the controller down to the devices, and an
/// end up from them, and how deep the trees grow with the devices that
/// take part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeSummary {
    /// Children per device at most; 0 for the flat controller.
    pub fan_limit: u32,
    /// The pins a begin passes, as `device_type.pin`, stage by stage
    /// from the controller's to the devices' (the last stage has one pin
    /// per involved set).
    pub begin: Vec<Vec<String>>,
    /// The pins an end passes, stage by stage from the devices' (one per
    /// involved set) to the controller's.
    pub end: Vec<Vec<String>>,
    /// Depth (levels of aggregators) and the most devices it holds, for
    /// depths 0 to 3; empty for the flat controller.
    pub depths: Vec<(u32, u64)>,
}

impl TreeSummary {
    /// Stages joined by arrows, the pins of a stage by commas, each pin
    /// in backticks: `` `global.inv_begin` → `set_a.inv_begin`, `set_b.inv_begin` ``.
    pub fn path_text(stages: &[Vec<String>]) -> String {
        stages
            .iter()
            .map(|stage| {
                stage
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .collect::<Vec<_>>()
            .join(" → ")
    }

    /// The depth by devices, `0 up to 16, 1 up to 256, …`.
    pub fn depth_text(&self) -> String {
        self.depths
            .iter()
            .map(|(depth, most)| format!("{depth} up to {}", thousands(*most)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `65536` as `65,536`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The [`TreeSummary`] of `invocation` in `graph`; `None` when the
/// invocation is not in the graph. The depths come from
/// `op2_codegen::topology`, which builds the trees of `op2 build` and
/// `op2 simulate`. For every invocation at once, see [`TreeIndex`].
pub fn tree_summary(graph: &GraphType, invocation: InvocationId) -> Option<TreeSummary> {
    TreeIndex::new(graph).summary(invocation)
}

/// The graph's device types and pins by what they do, found in one pass,
/// so that the [`TreeSummary`] of each invocation costs a few lookups: a
/// search of the graph's lists for each (its plan, its aggregator, the pins
/// of the controller and of its sets, every one of which has pins for every
/// invocation) made the code lenses of a `main` of N par_loops cost N²
/// (4,000 / 16,000 par_loops: 0.74 / 9.7 s; issue #12).
#[derive(Debug)]
pub struct TreeIndex<'g> {
    graph: &'g GraphType,
    plans: FxHashMap<InvocationId, &'g InvocationPlan>,
    controller: Option<&'g DeviceType>,
    trees: FxHashMap<InvocationId, &'g DeviceType>,
    sets: FxHashMap<SetId, &'g DeviceType>,
    /// `device.pin` of the first pin of each role, by device type, role
    /// and direction (output or input).
    pins: FxHashMap<(&'g str, PinRole, bool), String>,
}

impl<'g> TreeIndex<'g> {
    /// Indexes `graph`.
    pub fn new(graph: &'g GraphType) -> TreeIndex<'g> {
        let mut index = TreeIndex {
            graph,
            plans: graph.invocations.iter().map(|p| (p.id, p)).collect(),
            controller: None,
            trees: FxHashMap::default(),
            sets: FxHashMap::default(),
            pins: FxHashMap::default(),
        };
        for device in &graph.device_types {
            match device.kind {
                DeviceKind::Controller => {
                    index.controller = index.controller.or(Some(device));
                }
                DeviceKind::Aggregator(id) => {
                    index.trees.entry(id).or_insert(device);
                }
                DeviceKind::Set(set) => {
                    index.sets.entry(set).or_insert(device);
                }
            }
            for (pins, output) in [(&device.outputs, true), (&device.inputs, false)] {
                for pin in pins {
                    index
                        .pins
                        .entry((device.id.as_str(), pin.role, output))
                        .or_insert_with(|| format!("{}.{}", device.id, pin.name));
                }
            }
        }
        index
    }

    fn pin(&self, device: &DeviceType, role: PinRole, output: bool) -> Option<String> {
        self.pins.get(&(device.id.as_str(), role, output)).cloned()
    }

    /// The [`TreeSummary`] of `invocation`, as [`tree_summary`] gives it.
    pub fn summary(&self, invocation: InvocationId) -> Option<TreeSummary> {
        let graph = self.graph;
        let plan = self.plans.get(&invocation)?;
        let controller = self.controller?;
        let tree = self.trees.get(&invocation).copied();
        let sets: Vec<&DeviceType> = plan
            .involved_sets
            .iter()
            .filter_map(|s| self.sets.get(s).copied())
            .collect();
        let pin = |device: &DeviceType, role: PinRole, output: bool| self.pin(device, role, output);
        let set_pins = |role: fn(InvocationId) -> PinRole, output: bool| -> Vec<String> {
            sets.iter()
                .filter_map(|d| pin(d, role(invocation), output))
                .collect()
        };
        let mut begin: Vec<Vec<String>> = vec![
            pin(controller, PinRole::ControllerBegin(invocation), true)
                .into_iter()
                .collect(),
        ];
        let mut end = vec![set_pins(PinRole::End, true)];
        if let Some(tree) = tree {
            begin.push(
                pin(tree, PinRole::TreeBegin(invocation), false)
                    .into_iter()
                    .collect(),
            );
            begin.push(
                pin(tree, PinRole::TreeBeginForward(invocation), true)
                    .into_iter()
                    .collect(),
            );
            end.push(
                pin(tree, PinRole::TreeEnd(invocation), false)
                    .into_iter()
                    .collect(),
            );
            end.push(
                pin(tree, PinRole::TreeEndForward(invocation), true)
                    .into_iter()
                    .collect(),
            );
        }
        begin.push(set_pins(PinRole::Begin, false));
        end.push(
            pin(controller, PinRole::ControllerEnd(invocation), false)
                .into_iter()
                .collect(),
        );
        let depths = if graph.fan_limit == 0 {
            Vec::new()
        } else {
            (0..4)
                .map(|depth| {
                    (
                        depth,
                        op2_codegen::topology::most_leaves(graph.fan_limit, depth),
                    )
                })
                .collect()
        };
        Some(TreeSummary {
            fan_limit: graph.fan_limit,
            begin,
            end,
            depths,
        })
    }
}
