//! `fetch DAT into GLOBAL;` on POETS (compilation.md, "A `fetch` on POETS"):
//! the statement becomes the invocation `op2_fetch_DAT` over the dat's set,
//! built as the linear fetch: the controller asks for windows of items,
//! each element sends its items of a window (at most 52 bytes of values
//! each, so no message passes a packet), and the controller stores them in
//! the global.

use crate::graph_type_support;

use op2_analysis::hir::{self, StmtKind};
use op2_analysis::model::ArgKind;
use op2_codegen::model::{DeviceKind, PinRole};
use op2_syntax::ast::AccessMode;

use graph_type_support::graph_of_source;

fn program(length: u32, extra: &str, fetches: &str) -> String {
    format!(
        "set nodes;\n\ndat p_u: double[2] on nodes;\n\nglobal u: double[{length}];\n{extra}\nmain {{\n{fetches}    print(\"%g\", u[1]);\n}}\n"
    )
}

#[test]
fn the_graph_of_a_fetch_is_a_linear_fetch_in_windows() {
    let text = program(6, "", "    fetch p_u into u;\n");
    let (analysis, graph, xml) = graph_of_source("fetch", &text);
    let lowered = analysis.lowered();
    // The program as written keeps its `fetch` (what `op2 run` runs); the
    // one the graph is built from has none left, and an invocation
    // instead, with no statement or local more.
    assert_eq!(
        hir::fetches(analysis.program.main.as_deref().unwrap()).count(),
        1
    );
    let main = lowered.main.as_deref().expect("main");
    assert_eq!(hir::fetches(main).count(), 0);
    let written = analysis.program.main.as_deref().unwrap();
    assert_eq!(main.locals.len(), written.locals.len());
    assert_eq!(
        hir::statements(main).count(),
        hir::statements(written).count()
    );
    assert_eq!(lowered.invocations.len(), 1);
    assert_eq!(lowered.own_invocations(), 0);
    assert!(
        hir::statements(main).any(|s| matches!(s.kind, StmtKind::ParLoop(id) if id.index() == 0))
    );
    let invocation = &lowered.invocations[0];
    assert_eq!(invocation.name, "op2_fetch_p_u");
    assert!(invocation.is_fetch);
    assert_eq!(invocation.set, analysis.program.dats[0].set);
    let args: Vec<(ArgKind, AccessMode)> = invocation
        .resolved_args()
        .map(|(_, a)| (a.kind, a.mode))
        .collect();
    assert!(
        matches!(
            args[..],
            [
                (ArgKind::DirectDat(d), AccessMode::Read),
                (ArgKind::Index(None), AccessMode::Read),
                (ArgKind::Global(g), AccessMode::Inc),
            ] if d.index() == 0 && g.index() == 0
        ),
        "{args:?}"
    );
    // The graph's plan: a fetch of `double[2]`, one item per element, no
    // globals in its messages.
    let plan = graph.invocations.first().expect("one invocation");
    assert_eq!(plan.name, "op2_fetch_p_u");
    assert!(plan.begin_globals.is_empty());
    assert!(plan.end_globals.is_empty());
    let fetch = plan.fetch.expect("a fetch");
    assert_eq!((fetch.components, fetch.parts), (2, 1));
    // The request and the item.
    assert!(
        xml.contains("<MessageType id=\"op2_fetch_p_u_begin\">\n        <Message><![CDATA[\nuint32_t first;\nuint32_t last;\n]]>"),
        "{xml}"
    );
    assert!(
        xml.contains("<MessageType id=\"op2_fetch_p_u_end\">\n        <Message><![CDATA[\nuint32_t item;\ndouble value[2];\n]]>"),
        "{xml}"
    );
    // No kernel runs: its function is not generated.
    assert!(!xml.contains("op2_v_op2_fetch_p_u"), "{xml}");
    // The set devices: a counter and the window's end, no copy of the
    // global; they send their items of the window.
    let nodes = graph
        .device_types
        .iter()
        .find(|d| matches!(d.kind, DeviceKind::Set(_)))
        .expect("the nodes");
    let state: Vec<&str> = nodes.state.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        state,
        ["dat_p_u", "op2_fetch_p_u_sent", "op2_fetch_p_u_last"]
    );
    assert!(
        nodes
            .ready_to_send
            .contains("if (deviceState->op2_fetch_p_u_sent < 1u && (uint32_t)deviceProperties->index + deviceState->op2_fetch_p_u_sent < deviceState->op2_fetch_p_u_last) *readyToSend |= RTS_FLAG_op2_fetch_p_u_end;"),
        "{}",
        nodes.ready_to_send
    );
    // The controller asks for windows of 16 items (the fan limit) and
    // stores each item in its place.
    let controller = graph
        .device_types
        .iter()
        .find(|d| d.kind == DeviceKind::Controller)
        .expect("a controller");
    let begin = controller
        .outputs
        .iter()
        .find(|p| p.role == PinRole::ControllerBegin(plan.id))
        .expect("a begin pin");
    assert!(
        begin.handler.contains(
            "uint32_t op2_last = op2_items - op2_first > 16u ? op2_first + 16u : op2_items;\n"
        ),
        "{}",
        begin.handler
    );
    let end = controller
        .inputs
        .iter()
        .find(|p| p.role == PinRole::ControllerEnd(plan.id))
        .expect("an end pin");
    assert!(
        end.handler.contains(
            "for (uint32_t c = 0; c < 2; c++) deviceState->global_u[op2_item * 2u + c] = message->value[c];\n"
        ),
        "{}",
        end.handler
    );
    // The aggregators: the items of their leaves and a buffer of 16.
    let tree = graph.tree_device_type(plan.id).expect("a tree");
    let properties: Vec<&str> = tree.properties.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(properties, ["item_lo", "item_hi"]);
    let buffer = tree
        .state
        .iter()
        .find(|m| m.name == "buffer_value")
        .expect("a buffer");
    assert_eq!(buffer.length, Some(32));
    // Without trees, one window of all the items.
    let flat = op2_codegen::graph_type_with_fan_limit(&analysis, "fetch", 0);
    let controller = &flat.device_types[0];
    let begin = controller
        .outputs
        .iter()
        .find(|p| p.role == PinRole::ControllerBegin(plan.id))
        .expect("a begin pin");
    assert!(
        begin.handler.contains("uint32_t op2_last = op2_items;\n"),
        "{}",
        begin.handler
    );
    let diagnostics = op2_codegen::diagnostics(&analysis, "fetch");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
}

#[test]
fn a_fetch_of_a_large_dat_is_not_w801() {
    // `double[10]` (6 and 4 values per item) and `float[20]` (13 and 7)
    // into globals of 1000 and 2000 values: every message of the graph
    // fits a packet. The reduction of before sent the whole global in
    // each end message (W801 at the fetch).
    let text = "set nodes;\n\ndat p_v: double[10] on nodes;\ndat p_w: float[20] on nodes;\n\nglobal v: double[1000];\nglobal w: float[2000];\n\nmain {\n    fetch p_v into v;\n    fetch p_w into w;\n    print(\"%g %g\", v[999], w[1999]);\n}\n";
    let (analysis, graph, xml) = graph_of_source("fetch", text);
    let diagnostics = op2_codegen::diagnostics(&analysis, "fetch");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let sizes: Vec<(&str, u64)> = graph
        .message_types
        .iter()
        .map(|m| (m.id.as_str(), m.size()))
        .collect();
    assert_eq!(
        sizes,
        [
            ("empty", 0),
            ("op2_fetch_p_v_begin", 8),
            ("op2_fetch_p_v_end", 52),
            ("op2_fetch_p_w_begin", 8),
            ("op2_fetch_p_w_end", 56),
        ]
    );
    let fetches: Vec<(u32, u32)> = graph
        .invocations
        .iter()
        .map(|p| p.fetch.map(|f| (f.components, f.parts)).expect("fetches"))
        .collect();
    assert_eq!(fetches, [(6, 2), (13, 2)]);
    // The second part of an element stops at its last component.
    assert!(
        xml.contains("uint32_t op2_at = op2_item / 2u * 10u + op2_item % 2u * 6u;\nuint32_t op2_end = op2_item / 2u * 10u + 10u;\nfor (uint32_t c = 0; c < 6 && op2_at + c < op2_end; c++) deviceState->global_v[op2_at + c] = message->value[c];"),
        "{xml}"
    );
}

#[test]
fn the_generated_names_skip_names_in_use_as_par_loop_names_do() {
    // A kernel of the program already has the name; two fetches of one dat
    // share the generated kernel and have an invocation each.
    let extra = "\nglobal w: double[6];\n\nkernel op2_fetch_p_u(double *x) {\n    x[0] = 1.0;\n}\n";
    let fetches = "    par_loop op2_fetch_p_u over nodes (p_u RW);\n    fetch p_u into u;\n    if (u[0] > 0.0)\n        fetch p_u into w;\n";
    let text = program(6, extra, fetches);
    let (analysis, graph, xml) = graph_of_source("fetch", &text);
    let lowered = analysis.lowered();
    let kernels: Vec<&str> = lowered.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(kernels, ["op2_fetch_p_u", "op2_fetch_p_u_1"]);
    let names: Vec<&str> = graph.invocations.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(
        names,
        ["op2_fetch_p_u", "op2_fetch_p_u_1", "op2_fetch_p_u_1_1"]
    );
    assert!(xml.contains("<MessageType id=\"op2_fetch_p_u_1_1_end\">"));
    // Both fetches are marked; the program's par_loop is not.
    let zeroes: Vec<bool> = lowered.invocations.iter().map(|i| i.is_fetch).collect();
    assert_eq!(zeroes, [false, true, true]);
    assert_eq!(lowered.own_invocations(), 1);
    // The analysis lowers once; lowering again changes nothing, as no
    // `fetch` is left, and shares the program.
    assert!(std::sync::Arc::ptr_eq(
        analysis.lowered().program(),
        lowered.program()
    ));
    let again = op2_analysis::fetch::lower(lowered.program());
    assert!(std::sync::Arc::ptr_eq(again.program(), lowered.program()));
    // Lowering is deterministic: a second analysis' ids and names agree.
    let (other, _, _) = graph_of_source("fetch", &text);
    let names = |l: &op2_analysis::fetch::Lowered| -> Vec<String> {
        l.invocations.iter().map(|i| i.name.clone()).collect()
    };
    assert_eq!(names(other.lowered()), names(lowered));
}

#[test]
fn the_generator_builds_a_fetch_as_graph_type_does() {
    let first = program(6, "", "    fetch p_u into u;\n");
    let second = first.replace("u[1]", "u[2]");
    let mut generator = op2_codegen::Generator::new();
    for text in [&first, &second, &second] {
        let (analysis, graph, _) = graph_of_source("fetch", text);
        assert_eq!(generator.graph_type(&analysis, "fetch"), graph);
    }
}
