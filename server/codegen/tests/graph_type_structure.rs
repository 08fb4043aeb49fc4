//! Structural checks of the graph type XML against poets-v4.md (what the
//! loaders accept) and compilation.md (every generated name), for every
//! bundled example and every test program, plus the limits diagnostics
//! (W801, E802, E312) of `op2_codegen::diagnostics`.
//!
//! The expected names are derived here from the analysed program by the
//! rules of compilation.md §1–§4, independently of the generator's own plan,
//! and compared with what the XML document holds.

use crate::graph_type_support;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use op2_analysis::Analysis;
use op2_analysis::model::{ArgKind, Program, SetId};
use op2_codegen::GraphType;
use op2_syntax::Code;
use op2_syntax::ast::{AccessMode, ScalarType};

use graph_type_support::{
    analyse_file, build, examples_dir, graph_of_source, op2_stems, programs_dir, xml,
};

const NAMESPACE: &str = "https://poets-project.org/schemas/virtual-graph-schema-v4";

/// Declaration types both loaders accept (poets-v4.md §2).
const ACCEPTED_TYPES: &[&str] = &[
    "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
    "float", "double",
];

/// Prefixes the GS Python lexer splits off a member name (poets-v4.md §2).
const TYPE_KEYWORDS: &[&str] = &[
    "float", "double", "int", "uint", "char", "bool", "struct", "half", "unsigned", "signed",
    "const",
];

/// A declared member: type, name and array dimensions.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Declaration {
    ty: String,
    name: String,
    dims: Vec<u32>,
}

impl Declaration {
    fn new(ty: &str, name: &str, dims: &[u32]) -> Declaration {
        Declaration {
            ty: ty.to_owned(),
            name: name.to_owned(),
            dims: dims.to_vec(),
        }
    }
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses the text of a Properties, State or Message element by the
/// portable grammar of poets-v4.md §2 restricted to what a generator needs:
/// one `scalar_type ID dims ;` per line, nothing else but blank lines.
fn declarations(text: &str, what: &str, problems: &mut Vec<String>) -> Vec<Declaration> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Some(body) = line.strip_suffix(';') else {
            problems.push(format!("{what}: `{line}` does not end with `;`"));
            continue;
        };
        if body.contains([';', ',', '=', '{', '}', '/']) {
            problems.push(format!(
                "{what}: `{line}` is not a single declarator without initialiser"
            ));
            continue;
        }
        let mut words = body.splitn(2, ' ');
        let ty = words.next().unwrap_or_default();
        let rest = words.next().unwrap_or_default().trim();
        if !ACCEPTED_TYPES.contains(&ty) {
            problems.push(format!(
                "{what}: `{line}` uses type `{ty}`, which a loader rejects"
            ));
            continue;
        }
        let (name, mut dims_text) = match rest.find('[') {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, ""),
        };
        if !is_identifier(name) {
            problems.push(format!("{what}: `{line}` does not declare an identifier"));
            continue;
        }
        if let Some(keyword) = TYPE_KEYWORDS.iter().find(|k| name.starts_with(**k)) {
            problems.push(format!(
                "{what}: member `{name}` begins with the type keyword `{keyword}`"
            ));
        }
        let mut dims = Vec::new();
        while !dims_text.is_empty() {
            let Some(close) = dims_text.find(']') else {
                problems.push(format!("{what}: `{line}` has an unclosed dimension"));
                break;
            };
            let digits = &dims_text[1..close];
            let valid = dims_text.starts_with('[')
                && !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && !digits.starts_with('0');
            if !valid {
                problems.push(format!(
                    "{what}: `{line}` has a dimension that is not a decimal of at least 1"
                ));
                break;
            }
            dims.push(digits.parse().unwrap_or(0));
            dims_text = &dims_text[close + 1..];
        }
        out.push(Declaration {
            ty: ty.to_owned(),
            name: name.to_owned(),
            dims,
        });
    }
    out
}

fn c_type(scalar: ScalarType) -> &'static str {
    match scalar {
        ScalarType::Double => "double",
        ScalarType::Float => "float",
        ScalarType::Int => "int32_t",
        ScalarType::Uint => "uint32_t",
        ScalarType::Ll => "int64_t",
        ScalarType::Ull => "uint64_t",
        ScalarType::Bool => "uint8_t",
    }
}

/// What compilation.md §4 says one set's device type holds.
#[derive(Debug, Default)]
struct ExpectedDevice {
    /// Input pin name to message type id.
    inputs: BTreeMap<String, String>,
    /// Output pin name to message type id; `None` for the local steps,
    /// whose message type compilation.md leaves unnamed (it must be empty).
    outputs: BTreeMap<String, Option<String>>,
    /// State members whose declaration compilation.md fixes.
    typed_state: Vec<Declaration>,
    /// State members that only need to exist (counters and masks).
    counters: BTreeSet<String>,
    /// Device properties.
    properties: BTreeSet<String>,
    /// Constants its shared code must define.
    constants: BTreeSet<String>,
}

/// Everything compilation.md fixes about a program's graph type.
#[derive(Debug, Default)]
struct Expected {
    graph_properties: Vec<Declaration>,
    sets: BTreeMap<String, ExpectedDevice>,
    controller_inputs: BTreeMap<String, String>,
    controller_outputs: BTreeMap<String, String>,
    controller_properties: BTreeSet<String>,
    controller_globals: Vec<Declaration>,
    /// The controller's `element_G` of `INFO` globals.
    controller_state: Vec<Declaration>,
    /// Message type id to its members; the empty type of local steps is not
    /// in here.
    messages: BTreeMap<String, Vec<Declaration>>,
}

fn dims(dimension: u32) -> Vec<u32> {
    vec![dimension]
}

fn expected(program: &Program) -> Expected {
    let mut e = Expected::default();
    for c in &program.consts {
        e.graph_properties.push(Declaration::new(
            c_type(c.ty.scalar),
            &format!("global_{}", c.name),
            &dims(c.ty.dimension),
        ));
    }
    for set in &program.sets {
        e.graph_properties.push(Declaration::new(
            "int32_t",
            &format!("length_{}", set.name),
            &[1],
        ));
    }
    for g in &program.globals {
        e.controller_globals.push(Declaration::new(
            c_type(g.ty.scalar),
            &format!("global_{}", g.name),
            &dims(g.ty.dimension),
        ));
    }
    let set_name = |id: SetId| program.sets[id.index()].name.clone();
    let global_decl = |id: op2_analysis::model::GlobalId| {
        let g = &program.globals[id.index()];
        Declaration::new(
            c_type(g.ty.scalar),
            &format!("global_{}", g.name),
            &dims(g.ty.dimension),
        )
    };
    // Globals with a landing pad on each set: those used by invocations
    // iterating it.
    let mut pads: BTreeMap<String, Vec<Declaration>> = BTreeMap::new();
    for invocation in &program.invocations {
        let (Some(_), Some(iter)) = (invocation.kernel, invocation.set) else {
            continue;
        };
        let inv = invocation.name.as_str();
        let iter_name = set_name(iter);
        e.controller_outputs
            .insert(format!("{inv}_begin"), format!("{inv}_begin"));
        e.controller_inputs
            .insert(format!("{inv}_end"), format!("{inv}_end"));
        // compilation.md, "A `fetch` on POETS": a request `{first; last}`
        // in, items `{item; value[C]}` out, C the components of at most 52
        // bytes; the dat's set devices keep `{inv}_sent` and `{inv}_last`,
        // the controller `fetch_first` and `fetch_last`.
        if invocation.is_fetch {
            let dat = invocation
                .resolved_args()
                .find_map(|(_, a)| match a.kind {
                    ArgKind::DirectDat(dat) => Some(dat),
                    _ => None,
                })
                .expect("a fetch reads its dat");
            let d = &program.dats[dat.index()];
            let size = match c_type(d.ty.scalar) {
                "double" | "int64_t" | "uint64_t" => 8,
                "uint8_t" => 1,
                _ => 4,
            };
            let components = (52 / size).min(d.ty.dimension);
            let word = |name: &str| Declaration::new("uint32_t", name, &[]);
            e.messages
                .insert(format!("{inv}_begin"), vec![word("first"), word("last")]);
            e.messages.insert(
                format!("{inv}_end"),
                vec![
                    word("item"),
                    Declaration::new(c_type(d.ty.scalar), "value", &dims(components)),
                ],
            );
            for name in ["fetch_first", "fetch_last"] {
                if !e.controller_state.contains(&word(name)) {
                    e.controller_state.push(word(name));
                }
            }
            let device = e.sets.entry(iter_name.clone()).or_default();
            device.properties.insert("index".to_owned());
            device
                .inputs
                .insert(format!("{inv}_begin"), format!("{inv}_begin"));
            device
                .outputs
                .insert(format!("{inv}_end"), Some(format!("{inv}_end")));
            device.typed_state.push(word(&format!("{inv}_sent")));
            device.typed_state.push(word(&format!("{inv}_last")));
            continue;
        }
        let mut begin = Vec::new();
        let mut end = Vec::new();
        // Per involved set: dats read and written indirectly.
        let mut reads: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut writes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut involved: BTreeSet<String> = BTreeSet::from([iter_name.clone()]);
        let mut buffers = Vec::new();
        let mut read_recvs = Vec::new();
        let mut write_sends = Vec::new();
        let mut infos = Vec::new();
        for (i, arg) in invocation.resolved_args() {
            match arg.kind {
                ArgKind::IndirectDat { dat, .. } => {
                    let d = &program.dats[dat.index()];
                    let target = set_name(d.set.expect("a dat on a set"));
                    let message = format!("dat_{}", d.name);
                    e.messages.insert(
                        message.clone(),
                        vec![Declaration::new(
                            c_type(d.ty.scalar),
                            "value",
                            &dims(d.ty.dimension),
                        )],
                    );
                    let is_read = matches!(arg.mode, AccessMode::Read | AccessMode::Rw);
                    let is_write = matches!(
                        arg.mode,
                        AccessMode::Rw | AccessMode::Write | AccessMode::Inc
                    );
                    involved.insert(target.clone());
                    buffers.push(Declaration::new(
                        c_type(d.ty.scalar),
                        &format!("{inv}_arg{i}_buffer"),
                        &dims(d.ty.dimension),
                    ));
                    if is_read {
                        reads
                            .entry(target.clone())
                            .or_default()
                            .insert(d.name.clone());
                        read_recvs.push((format!("{inv}_arg{i}_read_recv"), message.clone()));
                    }
                    if is_write {
                        writes.entry(target).or_default().insert(d.name.clone());
                        write_sends.push((format!("{inv}_arg{i}_write_send"), message));
                    }
                }
                // language.md §6, compilation.md "Element indices and
                // `INFO` globals": device properties, and for `INFO` a
                // landing pad, a begin global and, after the reductions,
                // the value and `element_G` in the end.
                ArgKind::Index(map) => {
                    let device = e.sets.entry(iter_name.clone()).or_default();
                    device.properties.insert(match map {
                        None => "index".to_owned(),
                        Some(_) => format!("{inv}_arg{i}_index"),
                    });
                }
                ArgKind::Info { global, .. } => {
                    let decl = global_decl(global);
                    let pad = pads.entry(iter_name.clone()).or_default();
                    if !pad.contains(&decl) {
                        pad.push(decl.clone());
                    }
                    let element = Declaration::new(
                        "uint32_t",
                        &format!("element_{}", program.globals[global.index()].name),
                        &[],
                    );
                    if !pad.contains(&element) {
                        pad.push(element.clone());
                    }
                    if !begin.contains(&decl) {
                        begin.push(decl.clone());
                    }
                    infos.push(decl);
                    infos.push(element.clone());
                    e.controller_state.push(element);
                    let device = e.sets.entry(iter_name.clone()).or_default();
                    device.properties.insert("index".to_owned());
                }
                ArgKind::Global(global) => {
                    let decl = global_decl(global);
                    let pad = pads.entry(iter_name.clone()).or_default();
                    if !pad.contains(&decl) {
                        pad.push(decl.clone());
                    }
                    if matches!(
                        arg.mode,
                        AccessMode::Read | AccessMode::Min | AccessMode::Max
                    ) && !begin.contains(&decl)
                    {
                        begin.push(decl.clone());
                    }
                    if matches!(
                        arg.mode,
                        AccessMode::Inc | AccessMode::Min | AccessMode::Max
                    ) && !end.contains(&decl)
                    {
                        end.push(decl);
                    }
                }
                _ => {}
            }
        }
        e.messages.insert(format!("{inv}_begin"), begin);
        end.extend(infos);
        e.messages.insert(format!("{inv}_end"), end);
        e.controller_properties.insert(format!("{inv}_end_total"));
        for set in involved {
            let device = e.sets.entry(set.clone()).or_default();
            device
                .inputs
                .insert(format!("{inv}_begin"), format!("{inv}_begin"));
            device
                .outputs
                .insert(format!("{inv}_end"), Some(format!("{inv}_end")));
            device.outputs.insert(format!("{inv}_execute"), None);
            for dat in reads.get(&set).into_iter().flatten() {
                device.outputs.insert(
                    format!("{inv}_dat_{dat}_read_send"),
                    Some(format!("dat_{dat}")),
                );
            }
            for dat in writes.get(&set).into_iter().flatten() {
                device
                    .inputs
                    .insert(format!("{inv}_dat_{dat}_write_recv"), format!("dat_{dat}"));
            }
            if set == iter_name {
                for (pin, message) in &read_recvs {
                    device.inputs.insert(pin.clone(), message.clone());
                }
                for (pin, message) in &write_sends {
                    device.outputs.insert(pin.clone(), Some(message.clone()));
                }
                for buffer in &buffers {
                    if !device.typed_state.contains(buffer) {
                        device.typed_state.push(buffer.clone());
                    }
                }
            }
            for counter in [
                "in_progress",
                "read_send_mask",
                "read_recv_count",
                "write_send_mask",
                "write_recv_count",
            ] {
                device.counters.insert(format!("{inv}_{counter}"));
            }
            device.properties.insert(format!("{inv}_read_recv_total"));
            device.properties.insert(format!("{inv}_write_recv_total"));
            device
                .constants
                .insert(format!("{inv}_{set}_read_send_mask_all"));
            device
                .constants
                .insert(format!("{inv}_{set}_write_send_mask_all"));
        }
    }
    for (set, device) in &mut e.sets {
        for dat in program
            .dats
            .iter()
            .filter(|d| d.set.is_some_and(|s| program.sets[s.index()].name == *set))
        {
            device.typed_state.push(Declaration::new(
                c_type(dat.ty.scalar),
                &format!("dat_{}", dat.name),
                &dims(dat.ty.dimension),
            ));
        }
        device
            .typed_state
            .extend(pads.get(set).cloned().unwrap_or_default());
    }
    e
}

/// All text under `node` (CDATA sections, split or not, and plain text).
fn text_of(node: roxmltree::Node<'_, '_>) -> String {
    node.descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect()
}

fn child<'a, 'input>(
    node: roxmltree::Node<'a, 'input>,
    name: &str,
) -> Option<roxmltree::Node<'a, 'input>> {
    node.children()
        .find(|c| c.is_element() && c.tag_name().name() == name)
}

fn children<'a, 'input>(
    node: roxmltree::Node<'a, 'input>,
    name: &'a str,
) -> impl Iterator<Item = roxmltree::Node<'a, 'input>> + 'a {
    node.children()
        .filter(move |c| c.is_element() && c.tag_name().name() == name)
}

/// The declarations in the child `name` of `node`, reporting a missing
/// element.
fn member_element(
    node: roxmltree::Node<'_, '_>,
    name: &str,
    what: &str,
    problems: &mut Vec<String>,
) -> Vec<Declaration> {
    match child(node, name) {
        Some(element) => declarations(&text_of(element), &format!("{what}/{name}"), problems),
        None => {
            problems.push(format!("{what} has no {name} element"));
            Vec::new()
        }
    }
}

fn compare_sets<T: Ord + std::fmt::Debug + Clone>(
    what: &str,
    expected: impl IntoIterator<Item = T>,
    actual: impl IntoIterator<Item = T>,
    problems: &mut Vec<String>,
) {
    let expected: BTreeSet<T> = expected.into_iter().collect();
    let actual: BTreeSet<T> = actual.into_iter().collect();
    let missing: Vec<&T> = expected.difference(&actual).collect();
    let extra: Vec<&T> = actual.difference(&expected).collect();
    if !missing.is_empty() || !extra.is_empty() {
        problems.push(format!("{what}: missing {missing:?}, unexpected {extra:?}"));
    }
}

fn expect_declaration(
    what: &str,
    declared: &[Declaration],
    wanted: &Declaration,
    problems: &mut Vec<String>,
) {
    match declared.iter().find(|d| d.name == wanted.name) {
        None => problems.push(format!("{what}: no member `{}`", wanted.name)),
        Some(d) if d != wanted => problems.push(format!(
            "{what}: `{}` is declared {} {:?}, compilation.md gives {} {:?}",
            wanted.name, d.ty, d.dims, wanted.ty, wanted.dims
        )),
        Some(_) => {}
    }
}

/// Every problem with the document `text` of `graph`, built from `program`.
fn problems(program: &Program, graph: &GraphType, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(at) = text.find(|c: char| !c.is_ascii()) {
        problems.push(format!("the document is not ASCII at byte {at}"));
    }
    if let Some(at) = text.find(")CDATA\"") {
        problems.push(format!(
            "the document contains `)CDATA\"`, which ends GS's raw strings, at byte {at}: {:?}",
            &text[at.saturating_sub(60)..(at + 10).min(text.len())]
        ));
    }
    let document = match roxmltree::Document::parse(text) {
        Ok(document) => document,
        Err(e) => {
            problems.push(format!("the document is not well-formed XML: {e}"));
            return problems;
        }
    };
    let root = document.root_element();
    if root.tag_name().name() != "Graphs" || root.tag_name().namespace() != Some(NAMESPACE) {
        problems.push(format!(
            "the root is {:?}, not Graphs in the v4 namespace",
            root.tag_name()
        ));
    }
    if root.attribute("appname").is_none() {
        problems.push("Graphs has no appname".into());
    }
    for node in document.descendants().filter(roxmltree::Node::is_element) {
        for attribute in node.attributes() {
            if attribute.value().contains(['\n', '\r']) {
                problems.push(format!("attribute {} holds a newline", attribute.name()));
            }
        }
        if node.tag_name().namespace() != Some(NAMESPACE) {
            problems.push(format!(
                "element {} is outside the v4 namespace",
                node.tag_name().name()
            ));
        }
    }
    let graph_types: Vec<_> = children(root, "GraphType").collect();
    let [graph_type] = graph_types[..] else {
        problems.push(format!("{} GraphType elements, not 1", graph_types.len()));
        return problems;
    };
    let graph_id = graph_type.attribute("id").unwrap_or_default();
    if !is_identifier(graph_id) {
        problems.push(format!("graph id `{graph_id}` is not a C identifier"));
    }
    let e = expected(program);

    let graph_properties = member_element(graph_type, "Properties", "GraphType", &mut problems);
    for wanted in &e.graph_properties {
        expect_declaration("graph Properties", &graph_properties, wanted, &mut problems);
    }

    // Message types.
    let mut message_members: BTreeMap<String, Vec<Declaration>> = BTreeMap::new();
    match child(graph_type, "MessageTypes") {
        None => problems.push("GraphType has no MessageTypes".into()),
        Some(types) => {
            for message in children(types, "MessageType") {
                let id = message.attribute("id").unwrap_or_default().to_owned();
                if !is_identifier(&id) {
                    problems.push(format!("message type id `{id}` is not a C identifier"));
                }
                let members = member_element(
                    message,
                    "Message",
                    &format!("MessageType {id}"),
                    &mut problems,
                );
                if message_members.insert(id.clone(), members).is_some() {
                    problems.push(format!("message type `{id}` is declared twice"));
                }
            }
        }
    }
    let empty_types: BTreeSet<&String> = message_members
        .iter()
        .filter(|(id, members)| members.is_empty() && !e.messages.contains_key(*id))
        .map(|(id, _)| id)
        .collect();
    compare_sets(
        "message types (besides the empty type of local steps)",
        e.messages.keys().cloned(),
        message_members
            .keys()
            .filter(|id| !empty_types.contains(id))
            .cloned(),
        &mut problems,
    );
    if empty_types.len() != 1 {
        problems.push(format!(
            "expected one empty message type for local steps, found {empty_types:?}"
        ));
    }
    for (id, wanted) in &e.messages {
        if let Some(actual) = message_members.get(id)
            && actual != wanted
        {
            problems.push(format!(
                "message `{id}` holds {actual:?}, compilation.md gives {wanted:?}"
            ));
        }
    }

    // Device types.
    let Some(device_types) = child(graph_type, "DeviceTypes") else {
        problems.push("GraphType has no DeviceTypes".into());
        return problems;
    };
    let mut device_ids = BTreeSet::new();
    let mut set_devices = BTreeSet::new();
    for device in children(device_types, "DeviceType") {
        let id = device.attribute("id").unwrap_or_default().to_owned();
        let what = format!("DeviceType {id}");
        if !is_identifier(&id) {
            problems.push(format!("device type id `{id}` is not a C identifier"));
        }
        if !device_ids.insert(id.clone()) {
            problems.push(format!("device type `{id}` is declared twice"));
        }
        if message_members.contains_key(&id) {
            problems.push(format!(
                "`{id}` is both a message type and a device type id"
            ));
        }
        let properties = member_element(device, "Properties", &what, &mut problems);
        let state = member_element(device, "State", &what, &mut problems);
        if child(device, "ReadyToSend").is_none() {
            problems.push(format!("{what} has no ReadyToSend"));
        }
        let shared = child(device, "SharedCode").map(text_of).unwrap_or_default();
        let mut inputs = BTreeMap::new();
        let mut outputs = BTreeMap::new();
        let mut pin_names = BTreeSet::new();
        for (kind, handler) in [("InputPin", "OnReceive"), ("OutputPin", "OnSend")] {
            for pin in children(device, kind) {
                let name = pin.attribute("name").unwrap_or_default().to_owned();
                let message = pin
                    .attribute("messageTypeId")
                    .unwrap_or_default()
                    .to_owned();
                if !is_identifier(&name) {
                    problems.push(format!("{what}: pin name `{name}` is not a C identifier"));
                }
                if !pin_names.insert(name.clone()) {
                    problems.push(format!("{what}: pin `{name}` is declared twice"));
                }
                if !message_members.contains_key(&message) {
                    problems.push(format!(
                        "{what}: pin `{name}` uses message type `{message}`, which is not declared"
                    ));
                }
                if child(pin, handler).is_none() {
                    problems.push(format!("{what}: pin `{name}` has no {handler}"));
                }
                if kind == "InputPin" {
                    inputs.insert(name, message);
                } else {
                    outputs.insert(name, message);
                }
            }
        }
        if outputs.len() > 32 {
            problems.push(format!(
                "{what} has {} output pins, more than 32",
                outputs.len()
            ));
        }

        if id == "global" {
            compare_sets(
                "global input pins",
                e.controller_inputs.clone(),
                inputs.clone(),
                &mut problems,
            );
            let steps: Vec<(&String, &String)> = outputs
                .iter()
                .filter(|(name, _)| !e.controller_outputs.contains_key(*name))
                .collect();
            match steps[..] {
                [(_, message)] if empty_types.contains(message) => {}
                _ => problems.push(format!(
                    "global should have one step pin with an empty message besides the begin pins, has {steps:?}"
                )),
            }
            for (name, message) in &e.controller_outputs {
                if outputs.get(name) != Some(message) {
                    problems.push(format!(
                        "global: output pin `{name}` with message `{message}` missing"
                    ));
                }
            }
            compare_sets(
                "global properties",
                e.controller_properties.clone(),
                properties.iter().map(|d| d.name.clone()),
                &mut problems,
            );
            for wanted in e.controller_globals.iter().chain(&e.controller_state) {
                expect_declaration("global State", &state, wanted, &mut problems);
            }
            continue;
        }
        // The aggregators of an invocation's tree (compilation.md, trees):
        // the begin and end in, and both forwarded.
        if let Some(plan) = graph
            .invocations
            .iter()
            .find(|p| id == op2_codegen::names::tree_device_type(&p.name))
        {
            let pins: Vec<(String, String)> = device
                .children()
                .filter(|n| n.is_element() && n.tag_name().name().ends_with("Pin"))
                .map(|n| {
                    (
                        n.tag_name().name().to_owned(),
                        n.attribute("name").unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let inv = &plan.name;
            let wanted = [
                ("InputPin", op2_codegen::names::begin(inv)),
                ("InputPin", op2_codegen::names::end(inv)),
                ("OutputPin", op2_codegen::names::begin_forward(inv)),
                ("OutputPin", op2_codegen::names::end_forward(inv)),
            ]
            .map(|(k, n)| (k.to_owned(), n));
            if pins != wanted {
                problems.push(format!("{what} has pins {pins:?}, not {wanted:?}"));
            }
            continue;
        }
        let Some(set) = id.strip_prefix("set_") else {
            problems.push(format!(
                "device type `{id}` is neither `global` nor `set_<set>`"
            ));
            continue;
        };
        set_devices.insert(set.to_owned());
        let Some(wanted) = e.sets.get(set) else {
            continue;
        };
        compare_sets(
            &format!("{what} input pins"),
            wanted.inputs.clone(),
            inputs,
            &mut problems,
        );
        compare_sets(
            &format!("{what} output pins"),
            wanted.outputs.keys().cloned(),
            outputs.keys().cloned(),
            &mut problems,
        );
        for (name, message) in &wanted.outputs {
            let actual = outputs.get(name);
            let fits = match message {
                Some(message) => actual == Some(message),
                None => actual.is_some_and(|m| empty_types.contains(m)),
            };
            if actual.is_some() && !fits {
                problems.push(format!(
                    "{what}: output pin `{name}` uses message `{}`, expected {}",
                    actual.map_or("", String::as_str),
                    message.as_deref().unwrap_or("the empty type")
                ));
            }
        }
        compare_sets(
            &format!("{what} properties"),
            wanted.properties.clone(),
            properties.iter().map(|d| d.name.clone()),
            &mut problems,
        );
        compare_sets(
            &format!("{what} state"),
            wanted
                .typed_state
                .iter()
                .map(|d| d.name.clone())
                .chain(wanted.counters.iter().cloned()),
            state.iter().map(|d| d.name.clone()),
            &mut problems,
        );
        for decl in &wanted.typed_state {
            expect_declaration(&format!("{what} State"), &state, decl, &mut problems);
        }
        for decl in state
            .iter()
            .chain(&properties)
            .filter(|d| wanted.counters.contains(&d.name) || wanted.properties.contains(&d.name))
        {
            if decl.ty.contains("float") || decl.ty == "double" || !decl.dims.is_empty() {
                problems.push(format!(
                    "{what}: counter `{}` should be an integer scalar, is {} {:?}",
                    decl.name, decl.ty, decl.dims
                ));
            }
        }
        for constant in &wanted.constants {
            if !shared.contains(&format!(" {constant} ")) {
                problems.push(format!("{what}: SharedCode does not define `{constant}`"));
            }
        }
    }
    compare_sets(
        "sets with a device type",
        e.sets.keys().cloned(),
        set_devices,
        &mut problems,
    );
    if !device_ids.contains("global") {
        problems.push("there is no `global` device type".into());
    }

    // Every handler and shared code reads back exactly from its CDATA, so a
    // `]]>` in the text was split and not cut.
    let mut texts: Vec<(String, String)> =
        vec![(format!("{graph_id}/SharedCode"), graph.shared_code.clone())];
    for device in &graph.device_types {
        for pin in device.inputs.iter().chain(&device.outputs) {
            texts.push((format!("{}/{}", device.id, pin.name), pin.handler.clone()));
        }
        texts.push((
            format!("{}/ReadyToSend", device.id),
            device.ready_to_send.clone(),
        ));
    }
    let mut written: Vec<String> = Vec::new();
    for node in graph_type.descendants().filter(|n| {
        n.is_element()
            && matches!(
                n.tag_name().name(),
                "SharedCode" | "OnReceive" | "OnSend" | "ReadyToSend"
            )
    }) {
        written.push(text_of(node));
    }
    for (what, code) in texts {
        let wanted = format!("\n{code}");
        if !written.contains(&wanted) {
            problems.push(format!("{what}: the code does not read back from the XML"));
        }
    }
    problems
}

fn check_program(path: &Path) {
    let (_, analysis) = analyse_file(path);
    let graph = build(&analysis, &op2_codegen::graph_id(path));
    let text = xml(&graph);
    let found = problems(&analysis.program, &graph, &text);
    assert!(
        found.is_empty(),
        "{}:\n{}",
        path.display(),
        found.join("\n")
    );
}

fn check_source(id: &str, source: &str) -> (Analysis, GraphType, String) {
    let (analysis, graph, text) = graph_of_source(id, source);
    let found = problems(&analysis.program, &graph, &text);
    assert!(found.is_empty(), "{id}:\n{}", found.join("\n"));
    (analysis, graph, text)
}

#[test]
fn example_airfoil() {
    check_program(&examples_dir().join("airfoil.op2"));
}

#[test]
fn example_dot_product() {
    check_program(&examples_dir().join("dot_product.op2"));
}

#[test]
fn example_jacobi() {
    check_program(&examples_dir().join("jacobi.op2"));
}

#[test]
fn example_scatter() {
    check_program(&examples_dir().join("scatter.op2"));
}

#[test]
fn every_example_is_checked() {
    assert_eq!(
        op2_stems(&examples_dir()),
        ["airfoil", "dot_product", "jacobi", "scatter"]
    );
}

/// The programs of the C++ tests cover every kind of argument and mode.
#[test]
fn test_programs() {
    let mut failures = Vec::new();
    for stem in op2_stems(&programs_dir()) {
        let path = programs_dir().join(format!("{stem}.op2"));
        let (_, analysis) = analyse_file(&path);
        let graph = build(&analysis, &stem);
        // A `fetch` is built from its invocation in the lowered program
        // (`fetch::` checks the linear fetch itself): the names are derived
        // from the program with it.
        let found = problems(analysis.lowered(), &graph, &xml(&graph));
        if !found.is_empty() {
            failures.push(format!("{stem}:\n{}", found.join("\n")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Non-ASCII text and `]]>` in a print format: the document stays ASCII and
/// the CDATA section is split so that the handler reads back whole.
#[test]
fn print_text_that_xml_and_ascii_cannot_hold_as_is() {
    let (_, _, text) = check_source(
        "text",
        r#"
global g_dt: double = 0.5;

main {
    print("Δt = %g µs ]]> done", g_dt);
}
"#,
    );
    assert!(text.contains("]]]]><![CDATA[>"), "the CDATA is split");
}

/// GS pastes handlers into C++ raw strings `R"CDATA(...)CDATA"`: a print
/// format that ends in `)CDATA` puts the delimiter into the step handler.
#[test]
fn print_text_that_ends_a_raw_string() {
    check_source(
        "raw",
        r#"
global g_x: int = 1;

main {
    print("x = %d (see CDATA)CDATA", g_x);
}
"#,
    );
}

fn diagnostics_of(id: &str, source: &str) -> (Analysis, Vec<op2_syntax::Diagnostic>) {
    let (analysis, _, _) = graph_of_source(id, source);
    let diagnostics = op2_codegen::diagnostics(&analysis, id);
    (analysis, diagnostics)
}

fn text_at(analysis: &Analysis, location: op2_syntax::Location) -> &str {
    let text = &analysis.program.file(location.file).text;
    &text[location.range.start as usize..location.range.end as usize]
}

/// A `double[8]` element is 64 bytes, over the 56-byte payload: W801 names
/// the message and its size, at the dat.
#[test]
fn w801_for_a_message_over_56_bytes() {
    let (analysis, diagnostics) = diagnostics_of(
        "big",
        r"
set nodes;
set edges;

map ends: edges -> nodes[2];

dat p_big:   double[8] on nodes;
dat p_small: double[7] on nodes;
dat p_sum:   double    on edges;

kernel add(const double *a, const double *b, double *s) {
    s[0] = a[0] + b[6];
}

main {
    par_loop add over edges (p_big[ends[0]] READ, p_small[ends[1]] READ, p_sum WRITE);
}
",
    );
    let w801: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.code == Code::W801)
        .collect();
    assert_eq!(w801.len(), 1, "{diagnostics:#?}");
    let d = w801[0];
    assert!(d.message.contains("`dat_p_big`"), "{}", d.message);
    assert!(d.message.contains("64"), "{}", d.message);
    assert!(d.message.contains("56"), "{}", d.message);
    assert_eq!(text_at(&analysis, d.location), "p_big");
    assert_eq!(
        d.label,
        "one element of dat `p_big` does not fit one hardware message; simulators accept it, hardware does not"
    );
    assert!(
        diagnostics.iter().all(|d| d.code == Code::W801),
        "{diagnostics:#?}"
    );
}

/// A message's size is counted past `u32`: 8,192 READ globals of
/// `double[65536]` make a begin message of 2^32 bytes, which a `u32` sum
/// wrapped to 0 (no W801), and one more global to 524,288 bytes.
#[test]
fn w801_counts_a_message_past_four_gibibytes() {
    for (count, bytes) in [(8192, "4294967296"), (8193, "4295491584")] {
        let mut source = String::from("set cells;\ndat d: double on cells;\n");
        let mut parameters = String::from("double *x");
        let mut arguments = String::from("d WRITE");
        for g in 0..count {
            let _ = writeln!(source, "global g{g}: double[65536];");
            let _ = write!(parameters, ", const double *a{g}");
            let _ = write!(arguments, ", g{g} READ");
        }
        let _ = write!(
            source,
            "kernel k({parameters}) {{ x[0] = a0[0]; }}\nmain {{ par_loop k over cells ({arguments}); print(\"%g\", g1[0]); }}\n"
        );
        let (_, diagnostics) = diagnostics_of("big", &source);
        let w801: Vec<&str> = diagnostics
            .iter()
            .filter(|d| d.code == Code::W801)
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(
            w801,
            [format!(
                "message `k_begin` carries {bytes} bytes, more than the 56-byte POETS payload"
            )],
            "{count} globals"
        );
    }
}

/// Begin and end messages count too: eight double globals reduced with MIN
/// are 64 bytes each way.
#[test]
fn w801_for_globals_over_56_bytes() {
    let (_, diagnostics) = diagnostics_of(
        "globals",
        r#"
set cells;

dat p_v: double on cells;

global g_lo: double[8];

kernel low(const double *v, double lo[8]) {
    lo[0] = fmin(lo[0], v[0]);
}

main {
    par_loop low over cells (p_v READ, g_lo MIN);
    print("%g", g_lo[0]);
}
"#,
    );
    let named: BTreeSet<&str> = diagnostics
        .iter()
        .filter(|d| d.code == Code::W801)
        .map(|d| d.message.as_str())
        .collect();
    assert!(
        named
            .iter()
            .any(|m| m.contains("`low_begin`") && m.contains("64")),
        "{diagnostics:#?}"
    );
    assert!(
        named
            .iter()
            .any(|m| m.contains("`low_end`") && m.contains("64")),
        "{diagnostics:#?}"
    );
    // The label's verb agrees with its plural subject.
    for d in diagnostics.iter().filter(|d| d.code == Code::W801) {
        assert_eq!(
            d.label,
            "the globals of `low` do not fit one hardware message; simulators accept it, hardware does not"
        );
    }
}

/// `count` par_loops over one set, each with one direct argument.
fn loops_over_one_set(count: usize) -> String {
    let mut source = String::from(
        "set cells;\n\ndat p_v: double on cells;\n\nkernel bump(double *v) {\n    v[0] += 1.0;\n}\n\nmain {\n",
    );
    for _ in 0..count {
        source.push_str("    par_loop bump over cells (p_v RW);\n");
    }
    source.push_str("}\n");
    source
}

/// Each invocation gives the iteration set two output pins (execute, end):
/// 17 invocations need 34, so E802 names all 17 as related locations.
#[test]
fn e802_for_more_than_32_output_pins() {
    let source = loops_over_one_set(17);
    let (analysis, diagnostics) = diagnostics_of("many", &source);
    let e802: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.code == Code::E802)
        .collect();
    assert_eq!(e802.len(), 1, "{diagnostics:#?}");
    let d = e802[0];
    assert!(d.message.contains("`set_cells`"), "{}", d.message);
    assert!(d.message.contains("34"), "{}", d.message);
    assert_eq!(text_at(&analysis, d.location), "cells");
    assert_eq!(d.related.len(), 17, "{:#?}", d.related);
    let names: Vec<&str> = analysis
        .program
        .invocations
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    for (related, name) in d.related.iter().zip(&names) {
        assert!(
            related.message.contains(&format!("`{name}`")),
            "{related:?} should name {name}"
        );
        assert!(
            text_at(&analysis, related.location).starts_with("par_loop bump"),
            "{related:?} should point at the par_loop of {name}"
        );
    }
}

/// 16 invocations need exactly 32 output pins: allowed.
#[test]
fn no_e802_at_32_output_pins() {
    let source = loops_over_one_set(16);
    let (analysis, diagnostics) = diagnostics_of("enough", &source);
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    let graph = build(&analysis, "enough");
    let cells = graph
        .device_types
        .iter()
        .find(|d| d.id == "set_cells")
        .expect("set_cells");
    assert_eq!(cells.outputs.len(), 32);
}

/// The controller has an output pin per invocation plus its step pin: 32
/// invocations over 16 sets give it 33, and E802 names the controller.
#[test]
fn e802_for_the_controller() {
    let mut source = String::new();
    for s in 0..16 {
        source.push_str(&format!("set s{s};\ndat p_{s}: double on s{s};\n"));
    }
    source.push_str("kernel bump(double *v) {\n    v[0] += 1.0;\n}\n\nmain {\n");
    for s in 0..16 {
        for _ in 0..2 {
            source.push_str(&format!("    par_loop bump over s{s} (p_{s} RW);\n"));
        }
    }
    source.push_str("}\n");
    let (_, diagnostics) = diagnostics_of("controller", &source);
    let e802: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.code == Code::E802)
        .collect();
    assert_eq!(e802.len(), 1, "{diagnostics:#?}");
    assert!(e802[0].message.contains("`global`"), "{}", e802[0].message);
    assert!(e802[0].message.contains("33"), "{}", e802[0].message);
    assert_eq!(e802[0].related.len(), 32);
}

/// A set named `x_begin` and an invocation named `set_x` give the message
/// type `set_x_begin` and the device type `set_x_begin`: E312.
#[test]
fn e312_for_a_message_type_id_equal_to_a_device_type_id() {
    let (_, diagnostics) = diagnostics_of(
        "clash",
        r"
set x_begin;

dat p_v: double on x_begin;

kernel bump(double *v) {
    v[0] += 1.0;
}

main {
    par_loop bump as set_x over x_begin (p_v RW);
}
",
    );
    assert!(
        diagnostics
            .iter()
            .any(|d| d.code == Code::E312 && d.message.contains("`set_x_begin`")),
        "{diagnostics:#?}"
    );
}

/// The checks above find what they look for: each mutation of a good
/// document is reported.
#[test]
fn the_checks_catch_mistakes() {
    let (analysis, graph, text) = check_source(
        "mutated",
        r"
set nodes;
set edges;

map ends: edges -> nodes[2];

dat p_u: double on nodes;
dat p_r: double on nodes;

kernel flux(const double *u0, const double *u1, double *r0, double *r1) {
    *r0 -= u0[0] - u1[0];
    *r1 += u0[0] - u1[0];
}

main {
    par_loop flux over edges (p_u[ends[0]] READ, p_u[ends[1]] READ, p_r[ends[0]] INC,
                              p_r[ends[1]] INC);
}
",
    );
    let mutations: &[(&str, &str)] = &[
        ("\"flux_dat_p_u_read_send\"", "\"flux_dat_p_u_send\""),
        ("\"flux_arg3_write_send\"", "\"flux_arg_3_write_send\""),
        ("\"flux_dat_p_r_write_recv\"", "\"flux_p_r_write_recv\""),
        ("double value[1];", "double value[1], other[1];"),
        ("double value[1];", "double value[1] = {0};"),
        ("double value[1];", "double value[2];"),
        (
            "uint32_t flux_read_recv_count;",
            "int flux_read_recv_count;",
        ),
        ("uint32_t flux_read_recv_count;", "uint32_t floaty;"),
        ("uint8_t flux_in_progress;", "uint8_t flux_in_progress[0];"),
        ("double dat_p_u[1];", "float dat_p_u[1];"),
        (
            "<DeviceType id=\"set_nodes\">",
            "<DeviceType id=\"flux_begin\">",
        ),
        ("messageTypeId=\"dat_p_r\"", "messageTypeId=\"dat_p_q\""),
        ("<ReadyToSend>", "<ReadyToSendX>"),
        ("</ReadyToSend>", "</ReadyToSendX>"),
        (
            "flux_nodes_read_send_mask_all = ",
            "flux_nodes_read_mask_all = ",
        ),
        ("deviceState->flux_read_recv_count++;", "/* \u{e9} */"),
        (
            "<Properties><![CDATA[",
            "<Properties><![CDATA[\nuint32_t x)CDATA\";",
        ),
    ];
    for (from, to) in mutations {
        assert!(text.contains(from), "{from} is in the document");
        let mutated = text.replacen(from, to, 1);
        let found = problems(&analysis.program, &graph, &mutated);
        assert!(!found.is_empty(), "replacing {from} by {to} goes unnoticed");
    }
}

/// The controller keeps a line buffer only when `main` has a `printf`, and
/// `exit(STATUS)` hands the status to `handler_exit` after flushing it.
#[test]
fn printf_gives_the_controller_a_line_buffer_and_exit_its_status() {
    let controller_of = |graph: &GraphType| {
        graph
            .device_types
            .iter()
            .find(|d| d.kind == op2_codegen::model::DeviceKind::Controller)
            .cloned()
            .expect("a controller")
    };
    let with = "global g: int;\n\nmain {\n    printf(\"%d\", g);\n    exit(g + 1);\n}\n";
    let (_, graph, _) = check_source("with_printf", with);
    let controller = controller_of(&graph);
    let line = controller.state.iter().find(|m| m.name == "line");
    assert_eq!(line.and_then(|m| m.length), Some(4097));
    assert!(controller.state.iter().any(|m| m.name == "line_length"));
    let step = &controller.outputs[0].handler;
    // The controller's line is split and flushed by the helpers a printing
    // kernel uses, in the shared code.
    assert!(
        step.contains("int op2_written = snprintf((char *)deviceState->line + deviceState->line_length, 4097 - deviceState->line_length, \"%lld\", (long long)(deviceState->global_g[0]));\n            auto op2_log = [&](const char *op2_text) { handler_log(1, \"%s\", op2_text); };\n            deviceState->line_length = op2_print_written((char *)deviceState->line, deviceState->line_length, op2_written, op2_log);"),
        "{step}"
    );
    assert_eq!(
        graph
            .shared_code
            .matches("inline uint32_t op2_print_written(")
            .count(),
        1,
        "{}",
        graph.shared_code
    );
    let flush = step.find(
        "deviceState->line_length = op2_print_flush((char *)deviceState->line, deviceState->line_length, op2_log);",
    );
    let exit = step.find("int32_t op2_status = (deviceState->global_g[0] + 1);");
    assert!(flush.is_some() && exit.is_some() && flush < exit, "{step}");
    let without = "global g: int;\n\nmain {\n    print(\"%d\", g);\n}\n";
    let (_, graph, _) = check_source("without_printf", without);
    let controller = controller_of(&graph);
    assert!(!controller.state.iter().any(|m| m.name.starts_with("line")));
    assert!(!graph.shared_code.contains("op2_print"));
    assert!(
        controller.outputs[0]
            .handler
            .contains("handler_log(1, \"%lld\"")
    );
}

/// A kernel that prints gets the line buffer and the log of the execute
/// handler that runs it, which logs what the evaluation left unfinished
/// (compilation.md, "Printing from a kernel"); no device's state grows, and
/// a graph whose kernels do not print has none of it.
#[test]
fn a_printing_kernel_logs_through_its_execute_handler() {
    let text = "set edges;\n\ndat p_w: int on edges;\ndat p_x: double on edges;\n\nkernel show(const int *w) {\n    printf(\"edge %d\", w[0]);\n    print(\" of %d\", 3);\n}\n\nkernel twice(double *x) {\n    x[0] = 2.0 * x[0];\n}\n\nmain {\n    par_loop show over edges (p_w READ);\n    par_loop twice over edges (p_x RW);\n}\n";
    let (_, graph, _) = check_source("prints", text);
    let shared = &graph.shared_code;
    assert_eq!(
        shared.matches("struct op2_print_t {").count(),
        1,
        "{shared}"
    );
    assert!(
        shared.contains(
            "template <typename op2_log_t>\ninline void show(const int32_t *w, op2_print_t &op2_print, op2_log_t &op2_log) {"
        ),
        "{shared}"
    );
    assert!(
        shared.contains(
            "int op2_written = snprintf(op2_print.line + op2_print.length, 4097 - op2_print.length, \"edge %lld\", (long long)(w[0]));\n        op2_print.length = op2_print_written(op2_print.line, op2_print.length, op2_written, op2_log);"
        ),
        "{shared}"
    );
    // `print` ends its line.
    assert!(
        shared.contains("\" of %lld\\n\", (long long)(3));"),
        "{shared}"
    );
    assert!(
        shared.contains("\ninline void twice(double *x) {"),
        "{shared}"
    );
    let edges = graph
        .device_types
        .iter()
        .find(|d| d.id == "set_edges")
        .expect("the edges' device type");
    let handler = |pin: &str| {
        &edges
            .outputs
            .iter()
            .find(|p| p.name == pin)
            .unwrap_or_else(|| panic!("pin {pin}"))
            .handler
    };
    let show = handler("show_execute");
    let call = show.find(
        "show(deviceState->dat_p_w, op2_print, op2_log);\nop2_print.length = op2_print_flush(op2_print.line, op2_print.length, op2_log);",
    );
    let log = show.find(
        "op2_print_t op2_print;\nop2_print.length = 0;\nauto op2_log = [&](const char *op2_text) { handler_log(1, \"%s\", op2_text); };",
    );
    assert!(log.is_some() && call.is_some() && log < call, "{show}");
    assert!(!handler("twice_execute").contains("op2_print"));
    assert!(
        graph
            .device_types
            .iter()
            .all(|d| d.state.iter().all(|m| !m.name.contains("print"))),
        "no state member for printing"
    );
    let quiet = text
        .replace("    printf(\"edge %d\", w[0]);\n", "")
        .replace("    print(\" of %d\", 3);\n", "    int k = w[0];\n");
    let (_, graph, _) = check_source("quiet", &quiet);
    assert!(!graph.shared_code.contains("op2_print"));
}
