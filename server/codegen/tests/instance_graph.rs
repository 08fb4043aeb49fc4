//! The written graph instance, parsed back as XML and checked against its
//! graph type: every edge joins existing devices from an output pin to an
//! input pin of the same message type, every count property equals the
//! edges that arrive, every initialiser is complete and well formed, and
//! the data of the JSON arrives in the devices.

#![allow(clippy::print_stderr)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use op2_analysis::{Analysis, Options, analyse_text};
use op2_codegen::instance::{GraphInstance, instance_id};
use op2_codegen::model::{DeviceKind, GraphType, PinRole};
use op2_codegen::names;
use op2_codegen::output::write_graph;
use op2_instance::{self as instance, NoProgress};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples")
}

fn analyse(path: &Path) -> Analysis {
    let text = std::fs::read_to_string(path).unwrap();
    let analysis = analyse_text(path, &text, &Options { require_main: true });
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    analysis
}

/// A member declaration from a Properties, State or Message text.
#[derive(Debug, Clone)]
struct Declared {
    name: String,
    ty: String,
    length: Option<usize>,
}

fn declarations(text: &str) -> Vec<Declared> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let line = line.strip_suffix(';').expect("declarations end with `;`");
            let (ty, rest) = line.split_once(' ').expect("type and name");
            match rest.split_once('[') {
                Some((name, length)) => Declared {
                    name: name.to_owned(),
                    ty: ty.to_owned(),
                    length: Some(length.trim_end_matches(']').parse().unwrap()),
                },
                None => Declared {
                    name: rest.to_owned(),
                    ty: ty.to_owned(),
                    length: None,
                },
            }
        })
        .collect()
}

/// An initialiser: `{…}` of items, or a number.
#[derive(Debug, Clone, PartialEq)]
enum Init {
    Number(String),
    List(Vec<Init>),
}

fn parse_init(text: &str) -> Init {
    fn item(bytes: &[u8], at: &mut usize) -> Init {
        if bytes[*at] == b'{' {
            *at += 1;
            let mut items = Vec::new();
            if bytes[*at] == b'}' {
                *at += 1;
                return Init::List(items);
            }
            loop {
                items.push(item(bytes, at));
                match bytes[*at] {
                    b',' => *at += 1,
                    b'}' => {
                        *at += 1;
                        return Init::List(items);
                    }
                    other => panic!("unexpected `{}` in initialiser", other as char),
                }
            }
        }
        let start = *at;
        while *at < bytes.len() && !matches!(bytes[*at], b',' | b'}') {
            *at += 1;
        }
        Init::Number(String::from_utf8(bytes[start..*at].to_vec()).unwrap())
    }
    let bytes = text.as_bytes();
    let mut at = 0;
    let init = item(bytes, &mut at);
    assert_eq!(at, bytes.len(), "trailing text in `{text}`");
    init
}

/// Checks that a number is written as poets-v4.md §5.3 allows for `ty`:
/// decimal, no suffix, no hex, finite, integers for integer types.
fn check_number(text: &str, ty: &str) {
    let floating = matches!(ty, "double" | "float");
    let valid = if floating {
        let value: f64 = text
            .parse()
            .unwrap_or_else(|_| panic!("`{text}` is not a number"));
        value.is_finite()
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'e'))
    } else {
        let unsigned = ty.starts_with('u');
        text.parse::<i128>().is_ok() && !(unsigned && text.starts_with('-'))
    };
    assert!(valid, "`{text}` is not a valid `{ty}` initialiser value");
}

/// Checks a complete initialiser against the members; returns the members'
/// values by name.
fn check_init(text: &str, members: &[Declared], what: &str) -> HashMap<String, Vec<String>> {
    let Init::List(items) = parse_init(text) else {
        panic!("{what}: initialiser `{text}` has no outer braces");
    };
    assert_eq!(
        items.len(),
        members.len(),
        "{what}: {} items for {} members in `{text}`",
        items.len(),
        members.len()
    );
    let mut values = HashMap::new();
    for (member, item) in members.iter().zip(items) {
        let numbers = match (member.length, item) {
            (None, Init::Number(n)) => vec![n],
            (Some(length), Init::List(items)) => {
                assert_eq!(
                    items.len(),
                    length,
                    "{what}: `{}` needs {length} values",
                    member.name
                );
                items
                    .into_iter()
                    .map(|i| match i {
                        Init::Number(n) => n,
                        Init::List(_) => panic!("{what}: nested list in `{}`", member.name),
                    })
                    .collect()
            }
            (length, item) => panic!("{what}: `{}` ({length:?}) given {item:?}", member.name),
        };
        for n in &numbers {
            check_number(n, &member.ty);
        }
        values.insert(member.name.clone(), numbers);
    }
    values
}

#[derive(Debug, Default)]
struct TypeInfo {
    properties: Vec<Declared>,
    state: Vec<Declared>,
    inputs: HashMap<String, String>,
    outputs: HashMap<String, String>,
}

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    node.children().find(|c| c.has_tag_name(name))
}

fn text_of(node: Option<roxmltree::Node<'_, '_>>) -> String {
    node.map(|n| n.children().filter_map(|c| c.text()).collect())
        .unwrap_or_default()
}

/// What the structure check saw.
#[derive(Debug)]
struct Seen {
    devices: usize,
    edges: usize,
    /// Values of each device's state members.
    state: HashMap<String, HashMap<String, Vec<String>>>,
    /// Values of each device's properties.
    properties: HashMap<String, HashMap<String, Vec<String>>>,
    /// Values of the graph properties.
    graph_properties: HashMap<String, Vec<String>>,
}

/// Parses the written document and checks its instance against its type.
#[allow(clippy::too_many_lines)]
fn check_structure(xml: &str, graph: &GraphType) -> Seen {
    let document = roxmltree::Document::parse(xml).expect("the graph is well-formed XML");
    let root = document.root_element();
    let graph_type = child(root, "GraphType").expect("a graph type");
    let graph_properties = declarations(&text_of(child(graph_type, "Properties")));
    let mut message_types = HashSet::new();
    for m in child(graph_type, "MessageTypes")
        .unwrap()
        .children()
        .filter(|c| c.is_element())
    {
        message_types.insert(m.attribute("id").unwrap().to_owned());
    }
    let mut types: HashMap<String, TypeInfo> = HashMap::new();
    for d in child(graph_type, "DeviceTypes")
        .unwrap()
        .children()
        .filter(|c| c.is_element())
    {
        let mut info = TypeInfo {
            properties: declarations(&text_of(child(d, "Properties"))),
            state: declarations(&text_of(child(d, "State"))),
            ..TypeInfo::default()
        };
        for pin in d.children().filter(|c| c.is_element()) {
            let (Some(name), Some(message)) =
                (pin.attribute("name"), pin.attribute("messageTypeId"))
            else {
                continue;
            };
            assert!(
                message_types.contains(message),
                "pin `{name}` has unknown message `{message}`"
            );
            let pins = if pin.has_tag_name("InputPin") {
                &mut info.inputs
            } else {
                &mut info.outputs
            };
            pins.insert(name.to_owned(), message.to_owned());
        }
        types.insert(d.attribute("id").unwrap().to_owned(), info);
    }

    let instance = child(root, "GraphInstance").expect("a graph instance");
    assert_eq!(
        instance.attribute("graphTypeId"),
        graph_type.attribute("id")
    );
    assert_eq!(
        instance.attribute("id"),
        Some(instance_id(&graph.id).as_str())
    );
    for attribute in instance.attributes() {
        assert!(
            ["id", "graphTypeId", "P"].contains(&attribute.name()),
            "{attribute:?}"
        );
    }
    let graph_values = match instance.attribute("P") {
        Some(p) => check_init(p, &graph_properties, "graph properties"),
        None => {
            assert!(graph_properties.is_empty());
            HashMap::new()
        }
    };

    // Devices.
    let mut device_types: HashMap<String, String> = HashMap::new();
    let mut properties: HashMap<String, HashMap<String, Vec<String>>> = HashMap::new();
    let mut state = HashMap::new();
    let devices = child(instance, "DeviceInstances").expect("DeviceInstances");
    for dev in devices.children().filter(|c| c.is_element()) {
        assert!(dev.has_tag_name("DevI"));
        for attribute in dev.attributes() {
            assert!(
                ["id", "type", "P", "S"].contains(&attribute.name()),
                "{attribute:?}"
            );
        }
        let id = dev.attribute("id").unwrap().to_owned();
        assert!(
            id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "device id `{id}`"
        );
        let ty = dev.attribute("type").unwrap().to_owned();
        let info = types
            .get(&ty)
            .unwrap_or_else(|| panic!("`{id}` has unknown type `{ty}`"));
        let p = match dev.attribute("P") {
            Some(p) => check_init(p, &info.properties, &format!("P of `{id}`")),
            None => {
                assert!(info.properties.is_empty(), "`{id}` has no P");
                HashMap::new()
            }
        };
        let s = match dev.attribute("S") {
            Some(s) => check_init(s, &info.state, &format!("S of `{id}`")),
            None => {
                assert!(info.state.is_empty(), "`{id}` has no S");
                HashMap::new()
            }
        };
        assert!(
            device_types.insert(id.clone(), ty).is_none(),
            "device `{id}` twice"
        );
        properties.insert(id.clone(), p);
        state.insert(id, s);
    }

    // Edges: endpoints, pins, message types; what arrives where.
    let edges = child(instance, "EdgeInstances").expect("EdgeInstances");
    let mut arrivals: HashMap<(String, String), u32> = HashMap::new();
    let mut departures: HashMap<(String, String), u32> = HashMap::new();
    let mut count = 0;
    for edge in edges.children() {
        assert!(!edge.is_comment(), "no comments inside EdgeInstances");
        if !edge.is_element() {
            continue;
        }
        assert!(edge.has_tag_name("EdgeI"));
        assert_eq!(edge.attributes().count(), 1, "only `path`");
        let path = edge.attribute("path").unwrap();
        // The GS Python loader's pattern: ^([^:]+):([^-]+)-([^:]+):([^-]+)$
        let (dst, rest) = path.split_once(':').unwrap();
        let (dst_pin, rest) = rest.split_once('-').unwrap();
        let (src, src_pin) = rest.split_once(':').unwrap();
        assert!(
            !src_pin.contains('-') && !src.contains(':') && !dst_pin.contains(':'),
            "{path}"
        );
        let dst_type = &types[device_types
            .get(dst)
            .unwrap_or_else(|| panic!("no device `{dst}`: {path}"))];
        let src_type = &types[device_types
            .get(src)
            .unwrap_or_else(|| panic!("no device `{src}`: {path}"))];
        let dst_message = dst_type
            .inputs
            .get(dst_pin)
            .unwrap_or_else(|| panic!("`{dst_pin}` is no input of `{dst}`: {path}"));
        let src_message = src_type
            .outputs
            .get(src_pin)
            .unwrap_or_else(|| panic!("`{src_pin}` is no output of `{src}`: {path}"));
        assert_eq!(dst_message, src_message, "{path}");
        *arrivals
            .entry((dst.to_owned(), dst_pin.to_owned()))
            .or_default() += 1;
        *departures
            .entry((src.to_owned(), src_pin.to_owned()))
            .or_default() += 1;
        count += 1;
    }
    // With trees, no pin of any device has more than K begin or end edges.
    if graph.fan_limit > 0 {
        let k = graph.fan_limit;
        for ((device, pin), n) in arrivals.iter().chain(&departures) {
            if pin.ends_with("_begin") || pin.ends_with("_end") || pin.ends_with("_forward") {
                assert!(*n <= k, "`{device}:{pin}` has {n} edges, more than {k}");
            }
        }
    }

    // Counts against arrivals, through the model's pin roles.
    let inv_name = |id| graph.invocation(id).map(|p| p.name.clone()).unwrap();
    for device_type in &graph.device_types {
        for (device, ty) in &device_types {
            if *ty != device_type.id {
                continue;
            }
            let p = &properties[device];
            let mut read: HashMap<String, u32> = HashMap::new();
            let mut write: HashMap<String, u32> = HashMap::new();
            let mut end: HashMap<String, u32> = HashMap::new();
            let mut began: HashMap<String, u32> = HashMap::new();
            let mut reached: HashMap<String, u32> = HashMap::new();
            for pin in &device_type.inputs {
                let arrived = arrivals
                    .get(&(device.clone(), pin.name.clone()))
                    .copied()
                    .unwrap_or(0);
                match pin.role {
                    PinRole::Begin(id) => {
                        assert!(arrived <= 1, "`{device}` gets one `{}`", pin.name);
                        began.insert(inv_name(id), arrived);
                        *read.entry(inv_name(id)).or_insert(0) += arrived;
                    }
                    PinRole::ArgReadRecv(id, _) => {
                        assert!(arrived <= 1, "`{device}:{}`", pin.name);
                        *read.entry(inv_name(id)).or_insert(0) += arrived;
                        *reached.entry(inv_name(id)).or_default() += arrived;
                    }
                    PinRole::DatWriteRecv { invocation, .. } => {
                        *write.entry(inv_name(invocation)).or_insert(1) += arrived;
                        *reached.entry(inv_name(invocation)).or_default() += arrived;
                    }
                    PinRole::ControllerEnd(id) | PinRole::TreeEnd(id) => {
                        end.insert(inv_name(id), arrived);
                    }
                    PinRole::TreeBegin(_) => {
                        assert_eq!(arrived, 1, "`{device}` gets one `{}`", pin.name);
                    }
                    _ => {}
                }
            }
            for plan in &device_type.plans {
                let inv = &plan.name;
                // A device left out of an invocation's tree has nothing to
                // do in it: it is not on the iteration set, nothing reaches
                // it, and (the read pins' edges) it sends nothing.
                if began[inv] == 0 {
                    assert!(graph.fan_limit > 0, "`{device}` gets no `{inv}_begin`");
                    assert!(!plan.iterates, "`{device}` iterates in `{inv}`");
                    assert_eq!(reached.get(inv).copied().unwrap_or(0), 0, "`{device}`");
                    for pin in &device_type.outputs {
                        if ide_invocation_of(pin.role) == Some(plan.invocation) {
                            assert!(
                                !departures.contains_key(&(device.clone(), pin.name.clone())),
                                "`{device}:{}` sends but gets no begin",
                                pin.name
                            );
                        }
                    }
                }
                // A fetch counts no messages (compilation.md, "A `fetch`
                // on POETS"): it has no count properties.
                if graph
                    .invocation(plan.invocation)
                    .is_some_and(|p| p.fetch.is_some())
                {
                    assert!(!p.contains_key(&names::read_recv_total(inv)), "`{device}`");
                    continue;
                }
                write.entry(inv.clone()).or_insert(1);
                let expect = |name: String, value: u32| {
                    assert_eq!(p[&name], vec![value.to_string()], "`{device}`: `{name}`");
                };
                expect(names::read_recv_total(inv), read[inv]);
                expect(names::write_recv_total(inv), write[inv]);
            }
            if device_type.kind == DeviceKind::Controller {
                for plan in graph.invocations.iter().filter(|p| p.fetch.is_none()) {
                    let total = &p[&names::end_total(&plan.name)];
                    assert_eq!(total, &vec![end[&plan.name].to_string()], "`{}`", plan.name);
                }
            }
            if let DeviceKind::Aggregator(id) = device_type.kind {
                let inv = inv_name(id);
                assert!(end[&inv] >= 1, "`{device}` has children");
                // A fetch's aggregator holds the items of its leaves, a
                // range that is not empty; the others count their children.
                if graph.invocation(id).is_some_and(|p| p.fetch.is_some()) {
                    let bound = |name: &str| -> u64 { p[name][0].parse().unwrap() };
                    assert!(bound(names::ITEM_LO) < bound(names::ITEM_HI), "`{device}`");
                    continue;
                }
                let total = &p[&names::end_total(&inv)];
                assert_eq!(total, &vec![end[&inv].to_string()], "`{device}`");
            }
        }
    }
    Seen {
        devices: device_types.len(),
        edges: count,
        state,
        properties,
        graph_properties: graph_values,
    }
}

/// Builds `program` with `json`, checks the structure, and compares the
/// dats, consts and set sizes of the JSON with what the devices hold.
/// The invocation of a set device's output pin.
fn ide_invocation_of(role: PinRole) -> Option<op2_analysis::model::InvocationId> {
    match role {
        PinRole::DatReadSend(id, _)
        | PinRole::Execute(id)
        | PinRole::ArgWriteSend(id, _)
        | PinRole::End(id) => Some(id),
        _ => None,
    }
}

/// [`build_and_check_with`] for the flat controller, the default trees and
/// the deepest trees (two children per device); what each saw.
fn build_and_check(program: &Path, json_path: &Path) -> Vec<Seen> {
    [0, op2_codegen::DEFAULT_FAN_LIMIT, 2]
        .into_iter()
        .map(|fan_limit| build_and_check_with(program, json_path, fan_limit))
        .collect()
}

/// [`build_and_check`] with one fan limit; what the structure check saw.
fn build_and_check_with(program: &Path, json_path: &Path, fan_limit: u32) -> Seen {
    let analysis = analyse(program);
    let graph_id = op2_codegen::graph_id(program);
    let graph = op2_codegen::graph_type_with_fan_limit(&analysis, &graph_id, fan_limit);
    let bytes = std::fs::read(json_path).unwrap();
    let loaded = instance::read(&bytes, &analysis.program, &mut NoProgress);
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    let data = loaded.data.unwrap();
    let directory = tempfile::tempdir().unwrap();
    let out = directory.path().join("graph.xml");
    let mut progress = NoProgress;
    let mut writer = GraphInstance::new(analysis.lowered(), &data, &mut progress);
    let summary = write_graph(&out, &graph, Some(&mut writer)).unwrap();
    let xml = std::fs::read_to_string(&out).unwrap();
    assert!(xml.is_ascii());
    let seen = check_structure(&xml, &graph);
    assert_eq!(summary.devices, seen.devices as u64);
    assert_eq!(summary.edges, seen.edges as u64);
    let expected_devices: u64 = 1
        + graph
            .device_types
            .iter()
            .filter_map(|d| match d.kind {
                DeviceKind::Set(s) => Some(u64::from(data.set_size(s))),
                DeviceKind::Controller | DeviceKind::Aggregator(_) => None,
            })
            .sum::<u64>()
        + op2_codegen::topology::Counts::new(analysis.lowered(), &graph, &data)
            .trees
            .iter()
            .map(|t| u64::from(t.aggregators()))
            .sum::<u64>();
    assert_eq!(summary.devices, expected_devices);

    // The JSON's values arrive where they belong.
    let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let program = &analysis.program;
    for (name, rows) in json["dats"].as_object().into_iter().flatten() {
        let dat = program.dats.iter().find(|d| &d.name == name).unwrap();
        let set = &program.sets[dat.set.unwrap().index()].name;
        if graph.set_device_type(dat.set.unwrap()).is_none() {
            continue;
        }
        for (element, row) in rows.as_array().unwrap().iter().enumerate() {
            let expected: Vec<f64> = match row {
                serde_json::Value::Array(values) => {
                    values.iter().map(|v| v.as_f64().unwrap()).collect()
                }
                value => vec![value.as_f64().unwrap()],
            };
            let device = names::set_device(set, element);
            let written: Vec<f64> = seen.state[&device][&names::dat_state(name)]
                .iter()
                .map(|t| t.parse().unwrap())
                .collect();
            assert_eq!(written, expected, "`{name}` of `{device}`");
        }
    }
    for (name, value) in json["consts"].as_object().into_iter().flatten() {
        let expected: Vec<f64> = match value {
            serde_json::Value::Array(values) => {
                values.iter().map(|v| v.as_f64().unwrap()).collect()
            }
            value => vec![value.as_f64().unwrap()],
        };
        let written: Vec<f64> = seen.graph_properties[&names::const_property(name)]
            .iter()
            .map(|t| t.parse().unwrap())
            .collect();
        assert_eq!(written, expected, "const `{name}`");
    }
    for (name, size) in json["sets"].as_object().into_iter().flatten() {
        assert_eq!(
            seen.graph_properties[&names::length_property(name)],
            vec![size.to_string()],
            "length of `{name}`"
        );
    }
    seen
}

#[test]
fn dot_product_instance_is_consistent() {
    let dir = examples();
    build_and_check(
        &dir.join("dot_product.op2"),
        &dir.join("dot_product.instance.json"),
    );
}

#[test]
fn scatter_and_jacobi_instances_are_consistent() {
    let dir = examples();
    for name in ["scatter", "jacobi"] {
        build_and_check(
            &dir.join(format!("{name}.op2")),
            &dir.join(format!("{name}.instance.json")),
        );
    }
}

#[test]
fn airfoil_instance_is_consistent() {
    let mesh = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/airfoil_I10_J15.json"
    ));
    if !mesh.exists() {
        eprintln!(
            "SKIPPED airfoil_instance_is_consistent: the shared mesh {} is absent",
            mesh.display()
        );
        return;
    }
    build_and_check(&examples().join("airfoil.op2"), mesh);
}

#[test]
fn instance_errors_write_nothing() {
    let dir = examples();
    let analysis = analyse(&dir.join("dot_product.op2"));
    let loaded = instance::read(
        br#"{"sets": {"a_entries": 1, "b_entries": 1, "pairs": 1}, "maps": {"pick_a": [[1]], "pick_b": [[0]]}}"#,
        &analysis.program,
        &mut NoProgress,
    );
    assert!(loaded.has_errors());
    assert!(loaded.data.is_none());
}

#[test]
fn empty_sets_give_an_instance_without_set_devices() {
    let dir = examples();
    let analysis = analyse(&dir.join("dot_product.op2"));
    let graph = op2_codegen::graph_type(&analysis, "dot_product");
    let loaded = instance::read(
        br#"{"sets": {"a_entries": 0, "b_entries": 0, "pairs": 0}, "maps": {"pick_a": [], "pick_b": []}}"#,
        &analysis.program,
        &mut NoProgress,
    );
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    let data = loaded.data.unwrap();
    let mut out = Vec::new();
    op2_codegen::xml::write_graph_type(&mut out, &graph).unwrap();
    let mut progress = NoProgress;
    let (devices, edges) = op2_codegen::output::InstanceWriter::write(
        &mut GraphInstance::new(analysis.lowered(), &data, &mut progress),
        &mut out,
        &graph,
    )
    .unwrap();
    op2_codegen::xml::write_end(&mut out).unwrap();
    assert_eq!((devices, edges), (1, 0));
    let seen = check_structure(&String::from_utf8(out).unwrap(), &graph);
    assert_eq!((seen.devices, seen.edges), (1, 0));
}

/// Records what a build reports.
#[derive(Debug, Default)]
struct Recording {
    elements: Option<u64>,
    phases: Vec<(instance::Phase, Option<u64>, u64)>,
    open: bool,
}

impl instance::Progress for Recording {
    fn instance_size(&mut self, elements: u64) {
        self.elements = Some(elements);
    }

    fn start(&mut self, phase: instance::Phase, total: Option<u64>) {
        assert!(
            !self.open,
            "{phase:?} started before the last phase finished"
        );
        self.phases.push((phase, total, 0));
        self.open = true;
    }

    fn advance(&mut self, amount: u64) {
        assert!(self.open, "advance outside a phase");
        self.phases.last_mut().unwrap().2 += amount;
    }

    fn finish(&mut self) {
        self.open = false;
    }
}

#[test]
fn progress_reports_every_phase() {
    use instance::Phase;
    let dir = examples();
    let analysis = analyse(&dir.join("scatter.op2"));
    let graph = op2_codegen::graph_type(&analysis, "scatter");
    let json = std::fs::read(dir.join("scatter.instance.json")).unwrap();
    let mut recording = Recording::default();
    let data = instance::read(&json, &analysis.program, &mut recording)
        .data
        .unwrap();
    let mut out = Vec::new();
    let (devices, edges) = op2_codegen::output::InstanceWriter::write(
        &mut GraphInstance::new(analysis.lowered(), &data, &mut recording),
        &mut out,
        &graph,
    )
    .unwrap();
    assert_eq!(recording.elements, Some(54));
    let phases: Vec<Phase> = recording.phases.iter().map(|p| p.0).collect();
    assert_eq!(
        phases,
        [
            Phase::Reading,
            Phase::Validating,
            Phase::Counting,
            Phase::WritingDevices,
            Phase::WritingEdges
        ]
    );
    // Rows of `ends`, `p_conductance` and `p_potential`.
    assert_eq!(recording.phases[0].2, 34 + 34 + 20);
    for (phase, total, done) in &recording.phases[1..] {
        assert_eq!(Some(*done), *total, "{phase:?}");
    }
    assert_eq!(recording.phases[3].2, devices);
    assert_eq!(recording.phases[4].2, edges);
    assert!(!recording.open);
}

#[test]
fn terminal_progress_is_quiet_for_small_instances() {
    // Standard error is not a terminal under the test harness, and a small
    // instance shows no bars either way; neither may disturb a build.
    let mut progress = instance::TerminalProgress::new(instance::TerminalProgress::THRESHOLD);
    let dir = examples();
    let analysis = analyse(&dir.join("scatter.op2"));
    let json = std::fs::read(dir.join("scatter.instance.json")).unwrap();
    assert!(
        instance::read(&json, &analysis.program, &mut progress)
            .data
            .is_some()
    );
    let mut stderr = instance::TerminalProgress::stderr();
    assert!(
        instance::read(&json, &analysis.program, stderr.as_mut())
            .data
            .is_some()
    );
}

/// Accepts `limit` bytes, then fails.
struct Failing {
    limit: usize,
    taken: usize,
}

impl std::io::Write for Failing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.taken + buf.len() > self.limit {
            return Err(std::io::Error::other("disk full"));
        }
        self.taken += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_output_stops_the_writer() {
    use op2_codegen::output::{BuildError, InstanceWriter};
    let dir = examples();
    let analysis = analyse(&dir.join("scatter.op2"));
    let graph = op2_codegen::graph_type(&analysis, "scatter");
    // A chain of 100,000 nodes: tens of megabytes of edges.
    let nodes = 100_000;
    let ends: Vec<String> = (0..nodes - 1).map(|i| format!("[{i},{}]", i + 1)).collect();
    let json = format!(
        r#"{{"sets": {{"nodes": {nodes}, "edges": {}}}, "maps": {{"ends": [{}]}}}}"#,
        nodes - 1,
        ends.join(",")
    );
    let data = instance::read(json.as_bytes(), &analysis.program, &mut NoProgress)
        .data
        .unwrap();
    for limit in [0, 3 << 20] {
        let mut progress = NoProgress;
        let mut writer = GraphInstance::new(analysis.lowered(), &data, &mut progress);
        let mut out = Failing { limit, taken: 0 };
        let error = writer.write(&mut out, &graph).unwrap_err();
        let BuildError::Instance(message) = error else {
            panic!("{error:?}");
        };
        assert_eq!(message, "cannot write the graph instance: disk full");
    }
}

/// The edges written are those of `topology::for_each_edge`, which the
/// simulator runs, in the same order.
#[test]
fn written_edges_are_the_topology_the_simulator_runs() {
    use op2_codegen::topology::{DeviceRef, for_each_edge};
    let dir = examples();
    let mut cases = vec![
        (
            dir.join("dot_product.op2"),
            dir.join("dot_product.instance.json"),
        ),
        (dir.join("scatter.op2"), dir.join("scatter.instance.json")),
        (dir.join("jacobi.op2"), dir.join("jacobi.instance.json")),
    ];
    let mesh = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/airfoil_I10_J15.json"
    ));
    if mesh.exists() {
        cases.push((dir.join("airfoil.op2"), mesh.to_path_buf()));
    } else {
        eprintln!("SKIPPED the airfoil case: {} is absent", mesh.display());
    }
    // Flat, the default, and the deepest trees.
    let cases = cases.into_iter().flat_map(|(p, j)| {
        [0, op2_codegen::DEFAULT_FAN_LIMIT, 2].map(|k| (p.clone(), j.clone(), k))
    });
    for (program_path, json_path, fan_limit) in cases {
        let analysis = analyse(&program_path);
        let program = &analysis.program;
        let graph = op2_codegen::graph_type_with_fan_limit(&analysis, "g", fan_limit);
        let json = std::fs::read(&json_path).unwrap();
        let data = instance::read(&json, program, &mut NoProgress)
            .data
            .unwrap();
        let mut out = Vec::new();
        let mut progress = NoProgress;
        op2_codegen::output::InstanceWriter::write(
            &mut GraphInstance::new(analysis.lowered(), &data, &mut progress),
            &mut out,
            &graph,
        )
        .unwrap();
        let xml = String::from_utf8(out).unwrap();
        let written: Vec<&str> = xml
            .lines()
            .filter_map(|l| l.trim().strip_prefix("<EdgeI path=\""))
            .map(|l| l.trim_end_matches("\"/>"))
            .collect();

        let endpoint = |device: DeviceRef, role: PinRole, input: bool| -> String {
            let (id, device_type) = match device {
                DeviceRef::Global => (
                    names::GLOBAL_DEVICE.to_owned(),
                    graph
                        .device_types
                        .iter()
                        .find(|d| d.kind == DeviceKind::Controller)
                        .unwrap(),
                ),
                DeviceRef::Element { set, index } => (
                    names::set_device(&program.sets[set.index()].name, index as usize),
                    graph.set_device_type(set).unwrap(),
                ),
                DeviceRef::Aggregator { invocation, index } => (
                    names::tree_device(
                        &program.invocations[invocation.index()].name,
                        index as usize,
                    ),
                    graph.tree_device_type(invocation).unwrap(),
                ),
            };
            let pins = if input {
                &device_type.inputs
            } else {
                &device_type.outputs
            };
            let pin = pins.iter().find(|p| p.role == role).unwrap();
            format!("{id}:{}", pin.name)
        };
        let mut expected = Vec::new();
        for_each_edge(program, &graph, &data, |edge| {
            expected.push(format!(
                "{}-{}",
                endpoint(edge.destination.0, edge.destination.1, true),
                endpoint(edge.source.0, edge.source.1, false)
            ));
        });
        assert_eq!(written, expected, "{}", program_path.display());
    }
}

#[test]
fn the_writer_refuses_values_no_initialiser_can_hold() {
    use op2_codegen::output::{BuildError, InstanceWriter};
    use op2_instance::{Column, DatValues};

    let text = "
set cells;
dat p_flux: double on cells;
global g_total: double = 0.0;
kernel sum(const double *flux, double *total) { *total += flux[0]; }
main { par_loop sum over cells (p_flux READ, g_total INC); }
";
    let analysis = analyse_text(Path::new("test.op2"), text, &Options { require_main: true });
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    let graph = op2_codegen::graph_type(&analysis, "test");
    let json = br#"{"sets": {"cells": 3}, "dats": {"p_flux": [1.0, 2.0, 3.0]}}"#;
    let mut data = instance::read(json, &analysis.program, &mut NoProgress)
        .data
        .unwrap();
    data.dats[0] = DatValues::Given(Column::Double(vec![1.0, f64::NAN, 3.0]));
    let mut progress = NoProgress;
    let mut writer = GraphInstance::new(analysis.lowered(), &data, &mut progress);
    let error = writer.write(&mut Vec::new(), &graph).unwrap_err();
    let BuildError::Instance(message) = error else {
        panic!("{error:?}");
    };
    assert!(message.starts_with("dats.p_flux[1][0]: "), "{message}");
    assert!(message.contains("NaN"), "{message}");
}

/// A fetch's aggregators hold the items of their leaves, `item_lo` and
/// `item_hi` (compilation.md, "A `fetch` on POETS"): 40 nodes of a
/// `double[10]` (two items each) under 3 aggregators of at most 16 leaves.
/// The instance is consistent with its graph type for every fan limit.
#[test]
fn a_fetchs_aggregators_hold_the_items_of_their_leaves() {
    let directory = tempfile::tempdir().unwrap();
    let program = directory.path().join("fetch.op2");
    let json = directory.path().join("fetch.json");
    std::fs::write(
        &program,
        "set nodes;\n\ndat p_v: double[10] on nodes;\n\nglobal v: double[400];\n\nmain {\n    fetch p_v into v;\n    print(\"%g\", v[399]);\n}\n",
    )
    .unwrap();
    let rows: Vec<String> = (0..40)
        .map(|i| format!("[{}]", vec![i.to_string(); 10].join(",")))
        .collect();
    std::fs::write(
        &json,
        format!(
            r#"{{"sets": {{"nodes": 40}}, "dats": {{"p_v": [{}]}}}}"#,
            rows.join(",")
        ),
    )
    .unwrap();
    build_and_check(&program, &json);
    let analysis = analyse(&program);
    let graph = op2_codegen::graph_type(&analysis, "fetch");
    let loaded = instance::read(
        &std::fs::read(&json).unwrap(),
        &analysis.program,
        &mut NoProgress,
    );
    let data = loaded.data.unwrap();
    let out = directory.path().join("graph.xml");
    let mut progress = NoProgress;
    let mut writer = GraphInstance::new(analysis.lowered(), &data, &mut progress);
    write_graph(&out, &graph, Some(&mut writer)).unwrap();
    let xml = std::fs::read_to_string(&out).unwrap();
    let aggregators: Vec<&str> = xml
        .lines()
        .filter(|l| l.contains("type=\"tree_op2_fetch_p_v\""))
        .map(|l| {
            let l = l.trim();
            let end = l.find("}\"").map_or(l.len(), |at| at + 2);
            &l[..end]
        })
        .collect();
    assert_eq!(
        aggregators,
        [
            "<DevI id=\"tree_op2_fetch_p_v_0\" type=\"tree_op2_fetch_p_v\" P=\"{0,32}\"",
            "<DevI id=\"tree_op2_fetch_p_v_1\" type=\"tree_op2_fetch_p_v\" P=\"{32,64}\"",
            "<DevI id=\"tree_op2_fetch_p_v_2\" type=\"tree_op2_fetch_p_v\" P=\"{64,80}\"",
        ]
    );
}

/// The initialisers of consts, globals, dats and `idx[M[K]]` properties,
/// which the writer finds by name, for many of each declared in an order
/// unlike their names' (each name's number a permutation of its place):
/// every value is where the program's text or the JSON puts it, computed
/// here from the names alone.
#[test]
fn many_consts_globals_and_dats_arrive_by_name() {
    const N: usize = 150;
    let number = |place: usize| (place * 37) % N;
    let on_a = |p: usize| p.is_multiple_of(2);
    let given = |p: usize| p.is_multiple_of(5);
    let (size_a, size_b) = (3usize, 4usize);
    let mut text =
        String::from("set a;\nset b;\nmap m: a -> b[2];\ndat x: int on a;\ndat y: int on b;\n");
    let mut json_dats = vec![format!(r#""y": [{}]"#, ["5", "6", "7", "8"].join(","))];
    for place in 0..N {
        let p = number(place);
        text.push_str(&format!("const c{p}: int = {};\n", 1000 + 3 * p));
        text.push_str(&format!("global g{p}: int = {};\n", 2000 + p));
        let (set, size) = if on_a(p) {
            ("a", size_a)
        } else {
            ("b", size_b)
        };
        if given(p) {
            text.push_str(&format!("dat d{p}: int on {set};\n"));
            let rows: Vec<String> = (0..size).map(|e| (4000 + 10 * p + e).to_string()).collect();
            json_dats.push(format!(r#""d{p}": [{}]"#, rows.join(",")));
        } else {
            text.push_str(&format!("dat d{p}: int on {set} = {};\n", 3000 + p));
        }
    }
    text.push_str(
        "kernel k(int *x, const int *far, const int *near, const int *y) { x[0] = *far + *near + y[0]; }\n\
         main { par_loop k over a (x WRITE, idx[m[1]], idx[m[0]], y[m[0]] READ); print(\"%d\", g0); }\n",
    );
    let targets = [[0, 1], [2, 3], [3, 0]];
    let json = format!(
        r#"{{"sets": {{"a": {size_a}, "b": {size_b}}}, "maps": {{"m": [[0, 1], [2, 3], [3, 0]]}}, "dats": {{{}}}}}"#,
        json_dats.join(", ")
    );
    let directory = tempfile::tempdir().unwrap();
    let program = directory.path().join("many.op2");
    let json_path = directory.path().join("many.json");
    std::fs::write(&program, &text).unwrap();
    std::fs::write(&json_path, &json).unwrap();
    for seen in build_and_check(&program, &json_path) {
        for p in 0..N {
            assert_eq!(
                seen.graph_properties[&format!("global_c{p}")],
                [(1000 + 3 * p).to_string()],
                "const `c{p}`"
            );
            assert_eq!(
                seen.state["global"][&format!("global_g{p}")],
                [(2000 + p).to_string()],
                "global `g{p}`"
            );
            let (set, size) = if on_a(p) {
                ("a", size_a)
            } else {
                ("b", size_b)
            };
            for e in 0..size {
                let value = if given(p) {
                    4000 + 10 * p + e
                } else {
                    3000 + p
                };
                assert_eq!(
                    seen.state[&format!("{set}_{e}")][&format!("dat_d{p}")],
                    [value.to_string()],
                    "dat `d{p}` of `{set}_{e}`"
                );
            }
        }
        for (e, [near, far]) in targets.iter().enumerate() {
            let properties = &seen.properties[&format!("a_{e}")];
            assert_eq!(properties["k_arg1_index"], [far.to_string()], "a_{e}");
            assert_eq!(properties["k_arg2_index"], [near.to_string()], "a_{e}");
        }
    }
}
