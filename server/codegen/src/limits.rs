//! The limits of the POETS format and hardware, as diagnostics: messages
//! over the 56-byte payload (W801), device types with more than 32 output
//! or 256 input pins (E802), and generated names that collide (E312); and,
//! on instance data, pins with more edges than the fan limit (W801) or than
//! the Orchestrator can address (E802).

use op2_analysis::fetch::Lowered;
use op2_analysis::model::{ArgKind, Invocation, InvocationId, MapId, Program, SetId};
use std::collections::hash_map::Entry;

use op2_instance::{InstanceData, InstanceError};
use op2_syntax::{Code, Diagnostic, Location};
use rustc_hash::FxHashMap;

use crate::model::{DeviceKind, DeviceType, GraphType, MessageRole, Pin, PinRole};
use crate::names;
use crate::topology::{self, DeviceRef, Edge, Tree};

/// The hardware's message payload in bytes (poets-v4.md §6).
pub const MAX_MESSAGE_BYTES: u64 = 56;

/// Output pins a device type may have (poets-v4.md §6).
pub const MAX_OUTPUT_PINS: usize = 32;

/// Input pins a device type may have: the Orchestrator's packets name the
/// pin in 8 bits (poets-v4.md §6).
pub const MAX_INPUT_PINS: usize = 256;

fn invocation_location(program: &Program, id: InvocationId) -> Location {
    program.invocations[id.index()].location
}

fn main_location(program: &Program) -> Location {
    program.main_location.unwrap_or_default()
}

/// Diagnostics about the limits of a graph type built from `program`.
pub fn check(program: &Lowered, graph: &GraphType) -> Vec<Diagnostic> {
    // The graph was built from the program with its `fetch`es lowered; a
    // fetch's messages, a request and an item of at most 52 bytes of
    // values, always fit (crate::fetch).
    let program: &Program = program;
    let mut diagnostics = Vec::new();
    for message in &graph.message_types {
        let size = message.size();
        if size <= MAX_MESSAGE_BYTES {
            continue;
        }
        let (location, what) = match message.role {
            MessageRole::Dat(dat) => (
                program.dats[dat.index()].location,
                format!(
                    "one element of dat `{}` does",
                    program.dats[dat.index()].name
                ),
            ),
            MessageRole::Begin(id) | MessageRole::End(id) => (
                invocation_location(program, id),
                format!(
                    "the globals of `{}` do",
                    program.invocations[id.index()].name
                ),
            ),
            MessageRole::Empty => continue,
        };
        diagnostics.push(
            Diagnostic::new(
                Code::W801,
                location,
                format!("message `{}` carries {size} bytes, more than the {MAX_MESSAGE_BYTES}-byte POETS payload", message.id),
            )
            .with_label(format!("{what} not fit one hardware message; simulators accept it, hardware does not")),
        );
    }
    for device in &graph.device_types {
        for (pins, most, direction) in [
            (&device.outputs, MAX_OUTPUT_PINS, "output"),
            (&device.inputs, MAX_INPUT_PINS, "input"),
        ] {
            if pins.len() > most {
                diagnostics.push(too_many_pins(program, device, pins, most, direction));
            }
        }
    }
    collisions(program, graph, &mut diagnostics);
    diagnostics
}

/// E802 for a device type with more than `most` pins in `direction`,
/// naming the invocations that contribute them.
fn too_many_pins(
    program: &Program,
    device: &DeviceType,
    pins: &[Pin],
    most: usize,
    direction: &str,
) -> Diagnostic {
    // Pins per invocation, in order of first pin; `slots` finds an
    // invocation's entry.
    let mut counts: Vec<(InvocationId, usize)> = Vec::new();
    let mut slots: FxHashMap<InvocationId, usize> = FxHashMap::default();
    for id in pins.iter().filter_map(|pin| pin.role.invocation()) {
        match slots.entry(id) {
            Entry::Occupied(slot) => counts[*slot.get()].1 += 1,
            Entry::Vacant(slot) => {
                slot.insert(counts.len());
                counts.push((id, 1));
            }
        }
    }
    let mut diagnostic = Diagnostic::new(
        Code::E802,
        device_location(program, device.kind),
        format!(
            "device type `{}` would need {} {direction} pins; POETS allows {most}",
            device.id,
            pins.len()
        ),
    )
    .with_label(format!(
        "{} invocations contribute {direction} pins here",
        counts.len()
    ));
    for (id, n) in counts {
        diagnostic = diagnostic.with_related(
            invocation_location(program, id),
            format!(
                "`{}` adds {n} {direction} pin{}",
                program.invocations[id.index()].name,
                if n == 1 { "" } else { "s" }
            ),
        );
    }
    diagnostic
}

/// Where a device type comes from: its set, `main` for the controller, the
/// par_loop for an aggregator.
fn device_location(program: &Program, kind: DeviceKind) -> Location {
    match kind {
        DeviceKind::Set(set) => program.sets[set.index()].location,
        DeviceKind::Controller => main_location(program),
        DeviceKind::Aggregator(id) => program.invocations[id.index()].name_location,
    }
}

/// Where a generated name comes from, for the message that reports a clash.
fn origin_of_message(program: &Program, role: MessageRole) -> Location {
    match role {
        MessageRole::Dat(dat) => program.dats[dat.index()].location,
        MessageRole::Begin(id) | MessageRole::End(id) => {
            program.invocations[id.index()].name_location
        }
        MessageRole::Empty => main_location(program),
    }
}

fn collisions(program: &Program, graph: &GraphType, diagnostics: &mut Vec<Diagnostic>) {
    // Type ids: a message type id may not equal a device type id, and no
    // two message or device types share an id (poets-v4.md §3.1).
    let mut ids: FxHashMap<&str, Location> = FxHashMap::with_capacity_and_hasher(
        graph.device_types.len() + graph.message_types.len(),
        Default::default(),
    );
    for device in &graph.device_types {
        let location = device_location(program, device.kind);
        report_clash(&mut ids, &device.id, location, "type id", diagnostics);
    }
    for message in &graph.message_types {
        report_clash(
            &mut ids,
            &message.id,
            origin_of_message(program, message.role),
            "type id",
            diagnostics,
        );
    }
    // Device instance ids: `S_i` of a set and `tree_{inv}_i` of an
    // aggregator meet when a set is named `tree_{inv}`.
    let mut prefixes: FxHashMap<&str, Location> = FxHashMap::default();
    let tree_prefixes: Vec<(String, Location)> = graph
        .device_types
        .iter()
        .filter_map(|d| match d.kind {
            DeviceKind::Aggregator(id) => Some((
                names::tree_device_type(&program.invocations[id.index()].name),
                program.invocations[id.index()].name_location,
            )),
            _ => None,
        })
        .collect();
    for device in &graph.device_types {
        if let DeviceKind::Set(set) = device.kind {
            let set = &program.sets[set.index()];
            report_clash(
                &mut prefixes,
                &set.name,
                set.location,
                "device id prefix",
                diagnostics,
            );
        }
    }
    for (prefix, location) in &tree_prefixes {
        report_clash(
            &mut prefixes,
            prefix,
            *location,
            "device id prefix",
            diagnostics,
        );
    }
    // Names are unique per device type: one map each for pins and members
    // per device type, sized to it. (Maps emptied between device types
    // kept the room of the largest, and emptying one clears all its room:
    // a set's type with the pins of 40,000 par_loops, then an aggregator's
    // type per par_loop, made `op2 check` quadratic, review of 2026-11-29.)
    for device in &graph.device_types {
        let device_location = device_location(program, device.kind);
        let mut pins: FxHashMap<&str, Location> = FxHashMap::with_capacity_and_hasher(
            device.inputs.len() + device.outputs.len(),
            Default::default(),
        );
        for pin in device.inputs.iter().chain(&device.outputs) {
            let location = pin.role.invocation().map_or(device_location, |id| {
                program.invocations[id.index()].name_location
            });
            report_clash(&mut pins, &pin.name, location, "pin name", diagnostics);
        }
        let mut members: FxHashMap<&str, Location> = FxHashMap::with_capacity_and_hasher(
            device.state.len() + device.properties.len(),
            Default::default(),
        );
        for member in device.state.iter().chain(&device.properties) {
            report_clash(
                &mut members,
                &member.name,
                device_location,
                "member name",
                diagnostics,
            );
        }
    }
}

fn report_clash<'a>(
    seen: &mut FxHashMap<&'a str, Location>,
    name: &'a str,
    location: Location,
    what: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    match seen.entry(name) {
        Entry::Occupied(first) => diagnostics.push(
            Diagnostic::new(
                Code::E312,
                location,
                format!("the generated {what} `{name}` is produced twice"),
            )
            .with_label("rename this declaration or give the invocation another name with `as`")
            .with_related(
                *first.get(),
                format!("`{name}` is also generated from here"),
            ),
        ),
        Entry::Vacant(slot) => {
            slot.insert(location);
        }
    }
}

/// Edges one input pin of a device may have on POETS: the Orchestrator's
/// packets address an edge of a pin with 24 bits (poets-v4.md §6), so a pin
/// must have fewer than this many.
pub const MAX_EDGES_PER_INPUT_PIN: u64 = 1 << 24;

/// The widest instance of one pin: of all devices of a device type, the
/// one with the most edges on the pin, and how many.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinFan {
    /// The pin's device type, by id.
    pub device_type: String,
    /// The pin's name.
    pub pin: String,
    /// The pin's role (it names the invocation).
    pub role: PinRole,
    /// True for an output pin (fan-out), false for an input (fan-in).
    pub output: bool,
    /// The device with the most edges on the pin.
    pub device: DeviceRef,
    /// Its edges on the pin.
    pub edges: u64,
}

/// Which devices a degree table counts: the controller, a set's elements
/// or an invocation's aggregators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Population {
    Controller,
    Set(SetId),
    Aggregators,
}

fn population(device: DeviceRef) -> (Population, usize) {
    match device {
        DeviceRef::Global => (Population::Controller, 0),
        DeviceRef::Element { set, index } => (Population::Set(set), index as usize),
        DeviceRef::Aggregator { index, .. } => (Population::Aggregators, index as usize),
    }
}

/// The largest fan-in of every input pin and fan-out of every output pin of
/// the graph instance of `graph` on `data`: per (device type, pin), the
/// device with the most edges there. Counted from the edges the XML writer
/// and the simulator use ([`topology::for_each_edge_of`]), one invocation
/// at a time, in time linear in the edges and memory linear in the devices
/// of one invocation. Pins without edges (`{inv}_execute`, the
/// controller's step) are left out.
pub fn pin_fans(program: &Program, graph: &GraphType, data: &InstanceData) -> Vec<PinFan> {
    let mut fans = Vec::new();
    for plan in &graph.invocations {
        let tree = Tree::new(program, graph, data, plan);
        let aggregators = tree.aggregators() as usize;
        // A few dozen tables per invocation, found by a linear search that
        // starts at the last one used (edges come in runs of one pin): a
        // hash per edge end would cost more than the search.
        let mut keys: Vec<(Population, PinRole, bool)> = Vec::new();
        let mut tables: Vec<Vec<u32>> = Vec::new();
        let mut last = [0usize; 2];
        let mut count = |device: DeviceRef, role: PinRole, output: bool| {
            let (who, index) = population(device);
            let key = (who, role, output);
            let hint = &mut last[usize::from(output)];
            if keys.get(*hint) != Some(&key) {
                *hint = keys.iter().position(|k| *k == key).unwrap_or_else(|| {
                    let size = match who {
                        Population::Controller => 1,
                        Population::Set(set) => data.set_size(set) as usize,
                        Population::Aggregators => aggregators,
                    };
                    keys.push(key);
                    tables.push(vec![0; size]);
                    keys.len() - 1
                });
            }
            if let Some(slot) = tables[*hint].get_mut(index) {
                *slot = slot.saturating_add(1);
            }
        };
        topology::for_each_edge_of(program, plan, &tree, data, &mut |edge: Edge| {
            count(edge.source.0, edge.source.1, true);
            count(edge.destination.0, edge.destination.1, false);
        });
        let mut widest: Vec<PinFan> = Vec::with_capacity(tables.len());
        for ((who, role, output), table) in keys.into_iter().zip(tables) {
            let Some((index, &edges)) = table
                .iter()
                .enumerate()
                .max_by_key(|(i, e)| (**e, std::cmp::Reverse(*i)))
            else {
                continue;
            };
            let index32 = u32::try_from(index).unwrap_or(u32::MAX);
            let (kind, device) = match who {
                Population::Controller => (DeviceKind::Controller, DeviceRef::Global),
                Population::Set(set) => (
                    DeviceKind::Set(set),
                    DeviceRef::Element {
                        set,
                        index: index32,
                    },
                ),
                Population::Aggregators => (
                    DeviceKind::Aggregator(plan.id),
                    DeviceRef::Aggregator {
                        invocation: plan.id,
                        index: index32,
                    },
                ),
            };
            let Some(device_type) = graph.device_types.iter().find(|d| d.kind == kind) else {
                continue;
            };
            let pins = if output {
                &device_type.outputs
            } else {
                &device_type.inputs
            };
            let Some(pin) = pins.iter().find(|p| p.role == role) else {
                continue;
            };
            widest.push(PinFan {
                device_type: device_type.id.clone(),
                pin: pin.name.clone(),
                role,
                output,
                device,
                edges: u64::from(edges),
            });
        }
        // The order of the device types and pins, not of the edges.
        widest.sort_by(|a, b| {
            (&a.device_type, a.output, &a.pin).cmp(&(&b.device_type, b.output, &b.pin))
        });
        fans.extend(widest);
    }
    fans
}

/// The instance name of a device: `global`, `S_i` or `tree_{inv}_i`.
fn device_name(program: &Program, device: DeviceRef) -> String {
    match device {
        DeviceRef::Global => names::GLOBAL_DEVICE.to_owned(),
        DeviceRef::Element { set, index } => format!("{}_{index}", program.sets[set.index()].name),
        DeviceRef::Aggregator { invocation, index } => format!(
            "{}_{index}",
            names::tree_device_type(&program.invocations[invocation.index()].name)
        ),
    }
}

/// The fan limit the warnings compare with: the build's, or the default
/// for the flat controller (which has no limit of its own).
pub fn fan_warning_limit(graph: &GraphType) -> u32 {
    if graph.fan_limit == 0 {
        crate::model::DEFAULT_FAN_LIMIT
    } else {
        graph.fan_limit.max(2)
    }
}

/// The limits on fan-in and fan-out, as problems of the instance data
/// (they depend on the mesh): an input pin with 2^24 edges or more is error
/// E802 (the Orchestrator cannot address them), and any pin with more
/// edges than the fan limit (the build's, or 16 for `--fan-limit 0`) is
/// warning W801 (simulators accept it, but one hardware thread handles
/// the pin's messages one after the other). Begin and end pins name the
/// iteration set (`sets.S`), indirect pins the map whose targets gather
/// them (`maps.M`).
pub fn check_fans(program: &Program, graph: &GraphType, fans: &[PinFan]) -> Vec<InstanceError> {
    let limit = fan_warning_limit(graph);
    let mut problems = Vec::new();
    for fan in fans {
        let error = !fan.output && fan.edges >= MAX_EDGES_PER_INPUT_PIN;
        if !error && fan.edges <= u64::from(limit) {
            continue;
        }
        let Some(id) = fan.role.invocation() else {
            continue;
        };
        let invocation = &program.invocations[id.index()];
        let (path, why) = match fan_source(invocation, fan.role) {
            Some(map) => (
                format!("maps.{}", program.maps[map.index()].name),
                format!(
                    "the map `{}` gathers them: the mesh, not the trees, sets this fan",
                    program.maps[map.index()].name
                ),
            ),
            None => (
                invocation
                    .set
                    .map(|s| format!("sets.{}", program.sets[s.index()].name))
                    .unwrap_or_default(),
                if graph.fan_limit == 0 {
                    "the flat controller (`--fan-limit 0`) talks to every device; the default trees keep 16".to_owned()
                } else {
                    format!("the trees of `--fan-limit {}`", graph.fan_limit)
                },
            ),
        };
        let direction = if fan.output { "outgoing" } else { "incoming" };
        let message = if error {
            format!(
                "device `{}` has {} {direction} edges on pin `{}.{}`, more than the {} POETS can address",
                device_name(program, fan.device),
                fan.edges,
                fan.device_type,
                fan.pin,
                MAX_EDGES_PER_INPUT_PIN - 1
            )
        } else {
            format!(
                "device `{}` has {} {direction} edges on pin `{}.{}`, more than the fan limit {limit}; {why}",
                device_name(program, fan.device),
                fan.edges,
                fan.device_type,
                fan.pin,
            )
        };
        problems.push(InstanceError {
            code: if error { Code::E802 } else { Code::W801 },
            path,
            message,
            location: invocation.name_location,
            related: Vec::new(),
        });
    }
    problems
}

/// The map whose targets gather the edges of an indirect pin; `None` for
/// begin and end pins.
fn fan_source(invocation: &Invocation, role: PinRole) -> Option<MapId> {
    let wanted = match role {
        PinRole::DatReadSend(_, dat) | PinRole::DatWriteRecv { dat, .. } => Some(dat),
        PinRole::ArgReadRecv(_, arg) | PinRole::ArgWriteSend(_, arg) => {
            match invocation.resolved_args().find(|(k, _)| *k == arg)?.1.kind {
                ArgKind::IndirectDat { map, .. } => return Some(map),
                _ => None,
            }
        }
        _ => None,
    }?;
    invocation
        .resolved_args()
        .find_map(|(_, resolved)| match resolved.kind {
            ArgKind::IndirectDat { dat, map, .. } if dat == wanted => Some(map),
            _ => None,
        })
}

/// [`pin_fans`] and [`check_fans`] in one.
pub fn check_instance(
    program: &Lowered,
    graph: &GraphType,
    data: &InstanceData,
) -> Vec<InstanceError> {
    check_fans(program, graph, &pin_fans(program, graph, data))
}
