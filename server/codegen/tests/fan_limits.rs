//! Fan-in and fan-out per pin (`op2_codegen::limits::pin_fans`) and the
//! hardware checks on them (W801 over the fan limit, E802 past what the
//! Orchestrator can address; E802 for more than 256 input pins): an
//! airfoil-like edge mesh whose flat controller exceeds the limit and whose
//! default trees stay under it, a mesh whose own valence exceeds it, and
//! the widest pins recounted from the edges independently.

use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

use op2_analysis::{Analysis, Options, analyse_text};
use op2_codegen::limits::{self, MAX_EDGES_PER_INPUT_PIN, PinFan};
use op2_codegen::model::{GraphType, PinRole};
use op2_codegen::topology::{self, DeviceRef};
use op2_instance::{InstanceData, NoProgress};
use op2_syntax::Code;

/// Edges between the neighbouring cells of a grid, gathering a residual
/// into the cells with INC and a global sum, as the airfoil's `res_calc`
/// and `update` do.
const GRID: &str = r#"set nodes;
set edges;
set cells;

map pedge: edges -> nodes[2];
map pecell: edges -> cells[2];

dat p_x: double[2] on nodes;
dat p_q: double on cells;
dat p_res: double on cells;

global g_rms: double;

kernel res_calc(const double *x1, const double *x2, const double *q1, const double *q2, double *res1, double *res2) {
    double f = (x2[0] - x1[0] + x2[1] - x1[1]) * (q1[0] - q2[0]);
    *res1 += f;
    *res2 -= f;
}

kernel update(const double *res, double *q, double *rms) {
    q[0] += res[0];
    *rms += res[0] * res[0];
}

main {
    par_loop res_calc over edges (
        p_x[pedge[0]]   READ,
        p_x[pedge[1]]   READ,
        p_q[pecell[0]]  READ,
        p_q[pecell[1]]  READ,
        p_res[pecell[0]] INC,
        p_res[pecell[1]] INC,
    );
    par_loop update over cells (p_res READ, p_q RW, g_rms INC);
    print("rms = %g", g_rms);
}
"#;

fn analyse(text: &str) -> Analysis {
    let analysis = analyse_text(Path::new("grid.op2"), text, &Options { require_main: true });
    assert!(!analysis.has_errors(), "{:#?}", analysis.diagnostics);
    analysis
}

/// An `nx` × `ny` grid of cells: an edge joins each cell to its right and
/// upper neighbour and names the two grid nodes they share.
fn grid_json(nx: u32, ny: u32) -> String {
    let node = |i: u32, j: u32| j * (nx + 1) + i;
    let cell = |i: u32, j: u32| j * nx + i;
    let mut pedge = Vec::new();
    let mut pecell = Vec::new();
    for j in 0..ny {
        for i in 0..nx {
            if i + 1 < nx {
                pedge.push(format!("[{}, {}]", node(i + 1, j), node(i + 1, j + 1)));
                pecell.push(format!("[{}, {}]", cell(i, j), cell(i + 1, j)));
            }
            if j + 1 < ny {
                pedge.push(format!("[{}, {}]", node(i, j + 1), node(i + 1, j + 1)));
                pecell.push(format!("[{}, {}]", cell(i, j), cell(i, j + 1)));
            }
        }
    }
    let nodes = (nx + 1) * (ny + 1);
    let cells = nx * ny;
    let x: Vec<String> = (0..nodes)
        .map(|n| format!("[{}, {}]", n % (nx + 1), n / (nx + 1)))
        .collect();
    let q: Vec<String> = (0..cells).map(|c| format!("{}", c % 7)).collect();
    let zero: Vec<&str> = (0..cells).map(|_| "0").collect();
    format!(
        r#"{{"sets": {{"nodes": {nodes}, "edges": {}, "cells": {cells}}},
"maps": {{"pedge": [{}], "pecell": [{}]}},
"dats": {{"p_x": [{}], "p_q": [{}], "p_res": [{}]}},
"globals": {{"g_rms": 0}}}}"#,
        pedge.len(),
        pedge.join(", "),
        pecell.join(", "),
        x.join(", "),
        q.join(", "),
        zero.join(", ")
    )
}

fn load(analysis: &Analysis, json: &str) -> InstanceData {
    let loaded = op2_instance::read(json.as_bytes(), &analysis.program, &mut NoProgress);
    assert!(loaded.problems.is_empty(), "{:#?}", loaded.problems);
    loaded.data.unwrap()
}

/// The controller, a set's elements, or aggregators.
type Kind = Option<Option<op2_analysis::model::SetId>>;

fn kind(device: DeviceRef) -> Kind {
    match device {
        DeviceRef::Global => None,
        DeviceRef::Element { set, .. } => Some(Some(set)),
        DeviceRef::Aggregator { .. } => Some(None),
    }
}

/// The widest device per (device type, pin, direction), recounted from the
/// edges with a map over every device, independently of `pin_fans`.
fn recount(
    analysis: &Analysis,
    graph: &GraphType,
    data: &InstanceData,
) -> HashMap<(Kind, PinRole, bool), u64> {
    let mut per_device: HashMap<(DeviceRef, PinRole, bool), u64> = HashMap::new();
    topology::for_each_edge(&analysis.program, graph, data, |edge| {
        *per_device
            .entry((edge.source.0, edge.source.1, true))
            .or_default() += 1;
        *per_device
            .entry((edge.destination.0, edge.destination.1, false))
            .or_default() += 1;
    });
    // Keyed by the kind of device (sets share begin and end roles), role
    // and direction.
    let mut widest: HashMap<(Kind, PinRole, bool), u64> = HashMap::new();
    for ((device, role, output), n) in per_device {
        let slot = widest.entry((kind(device), role, output)).or_default();
        *slot = (*slot).max(n);
    }
    widest
}

fn check_against_recount(
    analysis: &Analysis,
    graph: &GraphType,
    data: &InstanceData,
) -> Vec<PinFan> {
    let fans = limits::pin_fans(&analysis.program, graph, data);
    let expected = recount(analysis, graph, data);
    let got: HashMap<(Kind, PinRole, bool), u64> = fans
        .iter()
        .map(|f| ((kind(f.device), f.role, f.output), f.edges))
        .collect();
    assert_eq!(got.len(), fans.len(), "one entry per pin and direction");
    assert_eq!(got, expected);
    fans
}

fn widest(fans: &[PinFan], pin: &str) -> u64 {
    fans.iter()
        .find(|f| f.pin == pin)
        .unwrap_or_else(|| panic!("no pin `{pin}` in {fans:#?}"))
        .edges
}

#[test]
fn flat_controller_exceeds_the_fan_limit_and_default_trees_do_not() {
    let analysis = analyse(GRID);
    let data = load(&analysis, &grid_json(12, 9));
    let (cells, edges, nodes) = (108u64, 12 * 8 + 11 * 9, 13 * 10);

    let flat = op2_codegen::graph_type_with_fan_limit(&analysis, "grid", 0);
    let fans = check_against_recount(&analysis, &flat, &data);
    // The controller talks to every device of every involved set.
    assert_eq!(widest(&fans, "res_calc_begin"), edges + cells + nodes);
    assert_eq!(widest(&fans, "update_end"), cells);
    let problems = limits::check_fans(&analysis.program, &flat, &fans);
    let warned: Vec<&str> = problems
        .iter()
        .map(|p| {
            assert_eq!(p.code, Code::W801, "{p}");
            assert!(p.message.contains("more than the fan limit 16"), "{p}");
            assert!(p.message.contains("device `global`"), "{p}");
            p.message.as_str()
        })
        .collect();
    // Begin and end of both invocations, nothing else: the mesh's own pins
    // are narrow.
    assert_eq!(warned.len(), 4, "{warned:#?}");
    assert!(problems.iter().any(|p| p.path == "sets.edges"
        && p.message.contains(&format!(
            "has {} outgoing edges on pin `global.res_calc_begin`",
            edges + cells + nodes
        ))));

    for k in [op2_codegen::DEFAULT_FAN_LIMIT, 2] {
        let trees = op2_codegen::graph_type_with_fan_limit(&analysis, "grid", k);
        let fans = check_against_recount(&analysis, &trees, &data);
        let tree_pin = |role: PinRole| {
            matches!(
                role,
                PinRole::Begin(_)
                    | PinRole::End(_)
                    | PinRole::ControllerBegin(_)
                    | PinRole::ControllerEnd(_)
                    | PinRole::TreeBegin(_)
                    | PinRole::TreeBeginForward(_)
                    | PinRole::TreeEnd(_)
                    | PinRole::TreeEndForward(_)
            )
        };
        assert!(
            fans.iter()
                .filter(|f| tree_pin(f.role))
                .all(|f| f.edges <= u64::from(k)),
            "fan limit {k}: {fans:#?}"
        );
        // The cells gather the residual of their (at most four) edges.
        assert_eq!(widest(&fans, "res_calc_dat_p_res_write_recv"), 4);
        let problems = limits::check_instance(analysis.lowered(), &trees, &data);
        if k == op2_codegen::DEFAULT_FAN_LIMIT {
            assert!(problems.is_empty(), "{problems:#?}");
        } else {
            // Only the mesh is wider than two: its maps are named.
            assert!(!problems.is_empty());
            assert!(
                problems
                    .iter()
                    .all(|p| p.code == Code::W801 && p.path.starts_with("maps.")),
                "{problems:#?}"
            );
        }
    }
}

#[test]
fn a_mesh_wider_than_the_fan_limit_is_warned_on_its_map() {
    // Twenty edges share node 0: its read send fans out to all of them.
    let analysis = analyse(GRID);
    let spokes = 20;
    let pedge: Vec<String> = (1..=spokes).map(|n| format!("[0, {n}]")).collect();
    let pecell: Vec<String> = (0..spokes)
        .map(|e| format!("[{e}, {}]", (e + 1) % spokes))
        .collect();
    let zeros = |n: u32| vec!["0"; n as usize].join(", ");
    let x: Vec<&str> = (0..=spokes).map(|_| "[1, 2]").collect();
    let json = format!(
        r#"{{"sets": {{"nodes": {}, "edges": {spokes}, "cells": {spokes}}},
"maps": {{"pedge": [{}], "pecell": [{}]}},
"dats": {{"p_x": [{}], "p_q": [{}], "p_res": [{}]}}, "globals": {{"g_rms": 0}}}}"#,
        spokes + 1,
        pedge.join(", "),
        pecell.join(", "),
        x.join(", "),
        zeros(spokes),
        zeros(spokes)
    );
    let data = load(&analysis, &json);
    let graph = op2_codegen::graph_type(&analysis, "grid");
    let fans = check_against_recount(&analysis, &graph, &data);
    let hub = fans
        .iter()
        .find(|f| f.pin == "res_calc_dat_p_x_read_send")
        .unwrap();
    assert_eq!(hub.edges, u64::from(spokes));
    assert_eq!(
        hub.device,
        DeviceRef::Element {
            set: hub_set(&analysis),
            index: 0
        }
    );
    let problems = limits::check_instance(analysis.lowered(), &graph, &data);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    let problem = &problems[0];
    assert_eq!(problem.code, Code::W801);
    assert_eq!(problem.path, "maps.pedge");
    assert!(
        problem.message.starts_with(
            "device `nodes_0` has 20 outgoing edges on pin `set_nodes.res_calc_dat_p_x_read_send`, more than the fan limit 16"
        ),
        "{problem}"
    );
    // The warning points at the par_loop's name.
    let start = problem.location.range.start as usize;
    assert!(GRID[start..].starts_with("res_calc over edges"));
}

fn hub_set(analysis: &Analysis) -> op2_analysis::model::SetId {
    let index = analysis
        .program
        .sets
        .iter()
        .position(|s| s.name == "nodes")
        .unwrap();
    op2_analysis::model::SetId(u32::try_from(index).unwrap())
}

#[test]
fn an_input_pin_past_what_the_orchestrator_addresses_is_an_error() {
    let analysis = analyse(GRID);
    let graph = op2_codegen::graph_type(&analysis, "grid");
    let pin = graph
        .device_types
        .iter()
        .flat_map(|d| d.inputs.iter().map(move |p| (d, p)))
        .find(|(_, p)| matches!(p.role, PinRole::DatWriteRecv { .. }))
        .unwrap();
    let fan = |edges: u64, output: bool| PinFan {
        device_type: pin.0.id.clone(),
        pin: pin.1.name.clone(),
        role: pin.1.role,
        output,
        device: DeviceRef::Element {
            set: hub_set(&analysis),
            index: 3,
        },
        edges,
    };
    let check = |fans: &[PinFan]| limits::check_fans(&analysis.program, &graph, fans);
    let problems = check(&[fan(MAX_EDGES_PER_INPUT_PIN, false)]);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].code, Code::E802);
    assert!(
        problems[0]
            .message
            .contains("more than the 16777215 POETS can address"),
        "{}",
        problems[0]
    );
    // One fewer is only over the fan limit; an output pin has no such limit.
    assert_eq!(
        check(&[fan(MAX_EDGES_PER_INPUT_PIN - 1, false)])[0].code,
        Code::W801
    );
    assert_eq!(
        check(&[fan(MAX_EDGES_PER_INPUT_PIN, true)])[0].code,
        Code::W801
    );
    assert!(check(&[fan(16, false)]).is_empty());
}

#[test]
fn more_than_256_input_pins_is_an_error() {
    // One indirect READ argument per input pin of the iteration set.
    let args = 260;
    let mut text = String::from(
        "set a;\nset b;\nmap m: a -> b[1];\ndat d: double on b;\ndat s: double on a;\nkernel k(",
    );
    for i in 0..args {
        write!(text, "const double *x{i}, ").unwrap();
    }
    text.push_str("double *out) {\n    *out = x0[0];\n}\nmain {\n    par_loop k over a (");
    for _ in 0..args {
        text.push_str("d[m[0]] READ, ");
    }
    text.push_str("s WRITE);\n}\n");
    let analysis = analyse_text(
        Path::new("wide.op2"),
        &text,
        &Options { require_main: true },
    );
    assert!(
        !analysis
            .diagnostics
            .iter()
            .any(|d| d.severity == op2_syntax::Severity::Error),
        "{:#?}",
        analysis.diagnostics
    );
    let diagnostics = op2_codegen::diagnostics(&analysis, "wide");
    let e802: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.code == Code::E802)
        .collect();
    assert_eq!(e802.len(), 1, "{diagnostics:#?}");
    assert!(
        e802[0].message.contains(&format!(
            "would need {} input pins; POETS allows 256",
            args + 1
        )),
        "{}",
        e802[0].message
    );
    assert_eq!(e802[0].related.len(), 1);
    assert!(e802[0].related[0].message.contains("`k` adds"));
}

/// `op2 build` (and the editor's build on save) returns the fan warnings
/// with the instance data's and still writes the graph; with the default
/// trees it has none.
#[test]
fn the_build_reports_fan_warnings_and_writes_the_graph() {
    let analysis = analyse(GRID);
    let directory = tempfile::tempdir().unwrap();
    let mesh = directory.path().join("grid.json");
    std::fs::write(&mesh, grid_json(6, 5)).unwrap();
    for (fan_limit, warnings) in [(0, 4), (op2_codegen::DEFAULT_FAN_LIMIT, 0)] {
        let out = directory.path().join(format!("grid{fan_limit}.graph.xml"));
        let (summary, problems) = op2_codegen::output::build_with_fan_limit(
            &analysis,
            "grid",
            fan_limit,
            Some(&mesh),
            &out,
            &mut NoProgress,
        )
        .unwrap_or_else(|e| panic!("fan limit {fan_limit}: {e}"));
        assert!(out.is_file());
        assert!(summary.edges > 0);
        assert_eq!(problems.len(), warnings, "{problems:#?}");
        assert!(problems.iter().all(|p| p.code == Code::W801));
    }
}

/// The hardware-limit check of a graph with one device type of many pins
/// and many small ones (a set's type with the pins of N par_loops of one
/// kernel, and an aggregator's type per par_loop) takes time linear in the
/// graph: the maps of names were emptied between device types keeping the
/// room of the largest, and emptying one clears all its room, so 40,000
/// par_loops spent 0.75 s and 80,000 about 2.1 s there in `op2 check` (a release
/// build), quadratic (review of 2026-11-29).
#[test]
fn the_limit_check_of_many_par_loops_takes_linear_time() {
    let loops = 100_000;
    let text = op2_syntax::synth::par_loops_of_one_kernel(loops, false);
    let analysis = analyse_text(
        Path::new("many.op2"),
        &text,
        &Options { require_main: true },
    );
    let graph = op2_codegen::graph_type(&analysis, "many");
    assert!(
        graph.device_types.len() > loops,
        "an aggregator per par_loop"
    );
    let started = std::time::Instant::now();
    let diagnostics = limits::check(analysis.lowered(), &graph);
    let took = started.elapsed();
    // The old code took 3.8 s here (test profile, optimised), the new
    // 0.8 s.
    assert!(
        took < std::time::Duration::from_millis(2500),
        "the limit check of {loops} par_loops took {took:?}"
    );
    assert!(
        diagnostics.iter().any(|d| d.code == Code::E802),
        "the set's type has too many pins: {:?}",
        diagnostics.iter().map(|d| d.code).collect::<Vec<_>>()
    );
}
