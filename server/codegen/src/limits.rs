//! The limits of the POETS format and hardware, as diagnostics: messages
//! over the 56-byte payload (W801), device types with more than 32 output
//! pins (E802), and generated names that collide (E312).

use op2_analysis::model::{InvocationId, Program};
use std::collections::hash_map::Entry;

use op2_syntax::{Code, Diagnostic, Location};
use rustc_hash::FxHashMap;

use crate::model::{DeviceKind, GraphType, MessageRole, PinRole};
use crate::names;

/// The hardware's message payload in bytes (poets-v4.md §6).
pub const MAX_MESSAGE_BYTES: u32 = 56;

/// Output pins a device type may have (poets-v4.md §6).
pub const MAX_OUTPUT_PINS: usize = 32;

fn invocation_location(program: &Program, id: InvocationId) -> Location {
    program.invocations[id.index()].location
}

fn main_location(program: &Program) -> Location {
    program.main_location.unwrap_or_default()
}

/// Diagnostics about the limits of a graph type built from `program`.
pub fn check(program: &Program, graph: &GraphType) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for message in &graph.message_types {
        let size = message.size();
        if size <= MAX_MESSAGE_BYTES {
            continue;
        }
        let (location, what) = match message.role {
            MessageRole::Dat(dat) => (
                program.dats[dat.index()].location,
                format!("one element of dat `{}`", program.dats[dat.index()].name),
            ),
            MessageRole::Begin(id) | MessageRole::End(id) => (
                invocation_location(program, id),
                format!("the globals of `{}`", program.invocations[id.index()].name),
            ),
            MessageRole::Empty => continue,
        };
        diagnostics.push(
            Diagnostic::new(
                Code::W801,
                location,
                format!("message `{}` carries {size} bytes, more than the {MAX_MESSAGE_BYTES}-byte POETS payload", message.id),
            )
            .with_label(format!("{what} does not fit one hardware message; simulators accept it, hardware does not")),
        );
    }
    for device in &graph.device_types {
        let pins = device.outputs.len();
        if pins <= MAX_OUTPUT_PINS {
            continue;
        }
        // Output pins per invocation, in order of first pin; `slots` finds
        // an invocation's entry.
        let mut counts: Vec<(InvocationId, usize)> = Vec::new();
        let mut slots: FxHashMap<InvocationId, usize> = FxHashMap::default();
        for pin in &device.outputs {
            let id = match pin.role {
                PinRole::DatReadSend(id, _)
                | PinRole::Execute(id)
                | PinRole::ArgWriteSend(id, _)
                | PinRole::End(id)
                | PinRole::ControllerBegin(id)
                | PinRole::TreeBeginForward(id)
                | PinRole::TreeEndForward(id) => id,
                _ => continue,
            };
            match slots.entry(id) {
                Entry::Occupied(slot) => counts[*slot.get()].1 += 1,
                Entry::Vacant(slot) => {
                    slot.insert(counts.len());
                    counts.push((id, 1));
                }
            }
        }
        let location = device_location(program, device.kind);
        let mut diagnostic = Diagnostic::new(
            Code::E802,
            location,
            format!(
                "device type `{}` would need {pins} output pins; POETS allows {MAX_OUTPUT_PINS}",
                device.id
            ),
        )
        .with_label(format!(
            "{} invocations contribute output pins here",
            counts.len()
        ));
        for (id, n) in counts {
            diagnostic = diagnostic.with_related(
                invocation_location(program, id),
                format!(
                    "`{}` adds {n} output pin{}",
                    program.invocations[id.index()].name,
                    if n == 1 { "" } else { "s" }
                ),
            );
        }
        diagnostics.push(diagnostic);
    }
    collisions(program, graph, &mut diagnostics);
    diagnostics
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
    // Names are unique per device type: one map each for pins and members,
    // emptied between device types (keeping their room).
    let mut pins: FxHashMap<&str, Location> = FxHashMap::default();
    let mut members: FxHashMap<&str, Location> = FxHashMap::default();
    for device in &graph.device_types {
        let device_location = device_location(program, device.kind);
        pins.clear();
        pins.reserve(device.inputs.len() + device.outputs.len());
        for pin in device.inputs.iter().chain(&device.outputs) {
            let location = match pin.role {
                PinRole::Begin(id)
                | PinRole::DatReadSend(id, _)
                | PinRole::ArgReadRecv(id, _)
                | PinRole::Execute(id)
                | PinRole::ArgWriteSend(id, _)
                | PinRole::DatWriteRecv { invocation: id, .. }
                | PinRole::End(id)
                | PinRole::ControllerBegin(id)
                | PinRole::ControllerEnd(id)
                | PinRole::TreeBegin(id)
                | PinRole::TreeBeginForward(id)
                | PinRole::TreeEnd(id)
                | PinRole::TreeEndForward(id) => program.invocations[id.index()].name_location,
                PinRole::Step => device_location,
            };
            report_clash(&mut pins, &pin.name, location, "pin name", diagnostics);
        }
        members.clear();
        members.reserve(device.state.len() + device.properties.len());
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
