//! `fetch DAT into GLOBAL;` on POETS (compilation.md, "A `fetch` on POETS"):
//! the controller runs the generated reduction `op2_fetch_DAT` over the
//! dat's set, `(DAT READ, idx, GLOBAL INC)`, zeroing the global as it starts
//! it; the kernel adds each element's values at `idx * DIM + j`; its end
//! message carries the whole global (W801 beyond a packet).

use crate::graph_type_support;

use op2_analysis::hir::{self, StmtKind};
use op2_analysis::model::ArgKind;
use op2_codegen::model::{DeviceKind, PinRole};
use op2_syntax::Code;
use op2_syntax::ast::AccessMode;

use graph_type_support::graph_of_source;

fn program(length: u32, extra: &str, fetches: &str) -> String {
    format!(
        "set nodes;\n\ndat p_u: double[2] on nodes;\n\nglobal u: double[{length}];\n{extra}\nmain {{\n{fetches}    print(\"%g\", u[1]);\n}}\n"
    )
}

#[test]
fn the_graph_of_a_fetch_is_a_reduction_over_the_dats_set() {
    let text = program(6, "", "    fetch p_u into u;\n");
    let (analysis, graph, xml) = graph_of_source("fetch", &text);
    let lowered = analysis.lowered();
    // The program as written keeps its `fetch` (what `op2 run` runs); the
    // one the graph is built from has none left, and a par_loop instead,
    // with no statement or local more.
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
    assert!(invocation.zeroes_inc_globals);
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
    // The graph's plan: over `nodes`, nothing begins, `u` comes back added.
    let plan = graph.invocations.first().expect("one invocation");
    assert_eq!(plan.name, "op2_fetch_p_u");
    assert!(plan.begin_globals.is_empty());
    assert_eq!(plan.end_globals.len(), 1);
    assert_eq!(plan.end_globals[0].1, AccessMode::Inc);
    assert_eq!(plan.zeroed_globals, [plan.end_globals[0].0]);
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
    // The controller zeroes `u` as it sends the begin message: no loop of
    // `main`, no generated local.
    assert!(
        begin
            .handler
            .contains("for (uint32_t c = 0; c < 6; c++) deviceState->global_u[c] = 0;\n"),
        "{}",
        begin.handler
    );
    assert!(!xml.contains("op2_fetch_k"), "{xml}");
    // The kernel adds both components of each element at `idx * 2 + j`.
    assert!(
        xml.contains(
            "(const double *d, const int32_t *i, double *g) {\n    (g[((2 * i[0]) + 0)] += d[0]);\n    (g[((2 * i[0]) + 1)] += d[1]);\n}"
        ),
        "{xml}"
    );
    // The end message carries all of `u`.
    assert!(
        xml.contains("<MessageType id=\"op2_fetch_p_u_end\">\n        <Message><![CDATA[\ndouble global_u[6];\n]]>"),
        "{xml}"
    );
    // 48 bytes fit a packet.
    let diagnostics = op2_codegen::diagnostics(&analysis, "fetch");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
}

#[test]
fn a_fetched_global_larger_than_a_packet_is_w801_at_the_fetch() {
    let text = program(8, "", "    fetch p_u into u;\n");
    let (analysis, _, _) = graph_of_source("fetch", &text);
    let diagnostics = op2_codegen::diagnostics(&analysis, "fetch");
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    let w801 = &diagnostics[0];
    assert_eq!(w801.code, Code::W801);
    assert!(
        w801.message
            .contains("message `op2_fetch_p_u_end` carries 64 bytes"),
        "{}",
        w801.message
    );
    assert_eq!(
        w801.label,
        "the whole global `u` that `fetch` fills, which its reduction `op2_fetch_p_u` returns, does not fit one hardware message; simulators accept it, hardware does not"
    );
    let at = w801.location.range;
    assert_eq!(
        &text[at.start as usize..at.end as usize],
        "fetch p_u into u;"
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
    // Both reductions zero their global; the program's par_loop does not.
    let zeroes: Vec<bool> = lowered
        .invocations
        .iter()
        .map(|i| i.zeroes_inc_globals)
        .collect();
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
