//! What the editor shows of the generated graph (compilation.md §8): the
//! per-argument summaries and labels, the inlay hints, the code lenses and
//! the device type text, checked against compilation.md's names and against
//! the `GraphType` that `op2 build` writes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use op2_analysis::model::{InvocationId, Program, SetId, Symbol};
use op2_codegen::GraphType;
use op2_codegen::model::{DeviceKind, PinRole};
use op2_lsp::config::Settings;
use op2_lsp::documents::{Document, PositionEncoding};
use op2_lsp::handlers::{Context, code_lens, inlay_hints};
use op2_lsp::ide::generated;
use op2_lsp::world::{Analysed, Overlay, analyse};
use tower_lsp_server::lsp_types::{
    InlayHint, InlayHintLabel, InlayHintTooltip, Position, Range, Uri,
};

fn example_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples")
        .join(name)
}

fn analysed_text(text: &str, path: &Path) -> Analysed {
    analyse(
        Document::new(text, 1),
        Some(path.to_path_buf()),
        &Mutex::default(),
        &Overlay::default(),
    )
}

fn airfoil() -> (String, Analysed) {
    let path = example_path("airfoil.op2");
    let text = std::fs::read_to_string(&path).expect("airfoil.op2 is readable");
    let analysed = analysed_text(&text, &path);
    assert!(analysed.graph.is_some(), "airfoil compiles to a graph");
    (text, analysed)
}

fn uri() -> Uri {
    "file:///op2-tests/program.op2".parse().expect("a URI")
}

fn context<'a>(
    analysed: &'a Analysed,
    encoding: PositionEncoding,
    settings: &'a Settings,
    uri: &'a Uri,
) -> Context<'a> {
    Context {
        analysed,
        encoding,
        settings,
        uri,
    }
}

fn program(analysed: &Analysed) -> &Program {
    &analysed.analysis.program
}

fn graph(analysed: &Analysed) -> &GraphType {
    analysed.graph.as_ref().expect("a graph")
}

fn invocation(program: &Program, name: &str) -> InvocationId {
    let index = program
        .invocations
        .iter()
        .position(|i| i.name == name)
        .unwrap_or_else(|| panic!("no invocation `{name}`"));
    InvocationId(u32::try_from(index).expect("few invocations"))
}

fn set(program: &Program, name: &str) -> SetId {
    match program.lookup(name) {
        Some(Symbol::Set(id)) => id,
        other => panic!("`{name}` is not a set: {other:?}"),
    }
}

/// The input (`false`) or output (`true`) pin `name` of device type `id`,
/// with its role and message type.
fn pin(graph: &GraphType, id: &str, output: bool, name: &str) -> (PinRole, String) {
    let device = graph
        .device_types
        .iter()
        .find(|d| d.id == id)
        .unwrap_or_else(|| panic!("no device type `{id}`"));
    let pins = if output {
        &device.outputs
    } else {
        &device.inputs
    };
    let pin = pins.iter().find(|p| p.name == name).unwrap_or_else(|| {
        panic!(
            "no {} pin `{name}` on `{id}`",
            if output { "output" } else { "input" }
        )
    });
    (pin.role, pin.message_type.clone())
}

#[test]
fn res_calc_arguments_follow_compilation_md() {
    let (_, analysed) = airfoil();
    let (program, graph) = (program(&analysed), graph(&analysed));
    let res_calc = invocation(program, "res_calc");
    let summary = |arg| generated::argument_summary(program, graph, res_calc, arg);

    assert_eq!(
        summary(0),
        [
            "reads `dat_p_x` of `nodes` via `pedge[0]`: pin `res_calc_dat_p_x_read_send` on `set_nodes` → `res_calc_arg0_read_recv` on `set_edges`, into `res_calc_arg0_buffer`",
            "`res_calc_dat_p_x_read_send` is sent once per element of `nodes` and also serves arg1",
            "messages of type `dat_p_x`: 16 bytes each",
        ]
    );
    assert_eq!(
        summary(1)[0],
        "reads `dat_p_x` of `nodes` via `pedge[1]`: pin `res_calc_dat_p_x_read_send` on `set_nodes` → `res_calc_arg1_read_recv` on `set_edges`, into `res_calc_arg1_buffer`"
    );
    assert_eq!(
        summary(5)[0],
        "reads `dat_p_adt` of `cells` via `pecell[1]`: pin `res_calc_dat_p_adt_read_send` on `set_cells` → `res_calc_arg5_read_recv` on `set_edges`, into `res_calc_arg5_buffer`"
    );
    assert_eq!(
        summary(6),
        [
            "adds to `dat_p_res` of `cells` via `pecell[0]`: `res_calc_arg6_buffer` (zeroed before the kernel) → `res_calc_arg6_write_send` on `set_edges` → `res_calc_dat_p_res_write_recv` on `set_cells` (adds)",
            "messages of type `dat_p_res`: 32 bytes each",
        ]
    );
    assert_eq!(
        summary(7)[0],
        "adds to `dat_p_res` of `cells` via `pecell[1]`: `res_calc_arg7_buffer` (zeroed before the kernel) → `res_calc_arg7_write_send` on `set_edges` → `res_calc_dat_p_res_write_recv` on `set_cells` (adds)"
    );
    // Past the last argument: nothing.
    assert!(summary(8).is_empty());

    // The pins named are the graph's, with the roles and messages of §4.
    assert_eq!(
        pin(graph, "set_nodes", true, "res_calc_dat_p_x_read_send").0,
        PinRole::DatReadSend(res_calc, op2_analysis::model::DatId(0))
    );
    assert_eq!(
        pin(graph, "set_edges", false, "res_calc_arg0_read_recv"),
        (PinRole::ArgReadRecv(res_calc, 0), "dat_p_x".to_owned())
    );
    assert_eq!(
        pin(graph, "set_edges", true, "res_calc_arg6_write_send"),
        (PinRole::ArgWriteSend(res_calc, 6), "dat_p_res".to_owned())
    );
    let (role, message) = pin(graph, "set_cells", false, "res_calc_dat_p_res_write_recv");
    assert!(
        matches!(role, PinRole::DatWriteRecv { invocation, add: true, .. } if invocation == res_calc),
        "{role:?}"
    );
    assert_eq!(message, "dat_p_res");
    let edges = graph
        .set_device_type(set(program, "edges"))
        .expect("set_edges");
    for buffer in (0..8).map(|i| format!("res_calc_arg{i}_buffer")) {
        assert!(
            edges.state.iter().any(|m| m.name == buffer),
            "{buffer} on set_edges"
        );
    }

    let label = |arg| generated::argument_label(program, graph, res_calc, arg);
    assert_eq!(label(0).as_deref(), Some("⇐ dat_p_x_read_send"));
    assert_eq!(label(2).as_deref(), Some("⇐ dat_p_q_read_send"));
    assert_eq!(label(6).as_deref(), Some("→ arg6_write_send"));
    assert_eq!(label(7).as_deref(), Some("→ arg7_write_send"));
}

#[test]
fn direct_and_global_arguments_of_update() {
    let (_, analysed) = airfoil();
    let (program, graph) = (program(&analysed), graph(&analysed));
    let update = invocation(program, "update");
    let summary = |arg| generated::argument_summary(program, graph, update, arg);
    let label = |arg| generated::argument_label(program, graph, update, arg);
    assert_eq!(summary(0), ["in place: `set_cells::dat_p_qold`"]);
    assert_eq!(summary(2), ["in place: `set_cells::dat_p_res`"]);
    assert_eq!(
        summary(4),
        [
            "landing pad `global_rms` on `set_cells`, zeroed before the kernel; partial sent in `update_end` and added up by `global`"
        ]
    );
    assert_eq!(label(0).as_deref(), Some("in place dat_p_qold"));
    assert_eq!(label(4).as_deref(), Some("global_rms pad"));
    let cells = graph
        .set_device_type(set(program, "cells"))
        .expect("set_cells");
    assert!(cells.state.iter().any(|m| m.name == "global_rms"));
    assert!(
        graph
            .message_type("update_end")
            .is_some_and(|m| m.members.iter().any(|m| m.name == "global_rms"))
    );
}

const EVERY_KIND: &str = "// Every kind of argument, and every mode of a global.
const share: double = 0.5;

set nodes;
set segments;

map seg_nodes: segments -> nodes[2];

dat p_x:       double on nodes;
dat p_density: double on segments = 1.0;
dat p_mass:    double on nodes;
dat p_tag:     int on nodes;

global g_mean_length: double;
global g_scale:       double = 2.0;
global g_max:         double;

kernel lump(const double *x0, const double *x1, const double *rho, const double *f,
            const int *nseg, double *m0, double *m1, double *mean_length,
            const double *scale, double *biggest) {
    double h = fabs(x1[0] - x0[0]) * scale[0];
    *m0 += f[0] * rho[0] * h;
    *m1 += f[0] * rho[0] * h;
    *mean_length += h / nseg[0];
    if (h > *biggest) *biggest = h;
}

kernel tag(const double *x, int *t, double *m) {
    t[0] = 1;
    m[0] = m[0] + x[0];
}

main {
    par_loop lump over segments (
        p_x[seg_nodes[0]]    READ,
        p_x[seg_nodes[1]]    READ,
        p_density            READ,
        share,
        len(segments),
        p_mass[seg_nodes[0]] INC,
        p_mass[seg_nodes[1]] INC,
        g_mean_length        INC,
        g_scale              READ,
        g_max                MAX,
    );
    par_loop tag as tagging over segments (p_x[seg_nodes[0]] READ, p_tag[seg_nodes[1]] WRITE, p_mass[seg_nodes[0]] RW);
    print(\"%g %g\", g_mean_length, g_max);
}
";

const INDICES: &str = "\
set nodes;
set cells;
map pcell: cells -> nodes[2];
dat p_err: double on cells;
global g_max: double;
global g_where: int[2];

kernel find(const double *err, const int *cell, const int *node, double *m, int *where) {
    if (err[0] > *m) {
        *m = err[0];
        where[0] = *cell;
        where[1] = *node;
    }
}

main {
    g_max = 0.0;
    par_loop find over cells (p_err READ, idx, idx[pcell[1]], g_max MAX, g_where INFO(g_max));
    print(\"%g %d %d\", g_max, g_where[0], g_where[1]);
}
";

#[test]
fn index_arguments_and_info_globals() {
    let path = Path::new("/op2-tests/indices.op2");
    let analysed = analysed_text(INDICES, path);
    assert!(
        analysed.graph.is_some(),
        "the program compiles: {:?}",
        analysed.diagnostics
    );
    let (program, graph) = (program(&analysed), graph(&analysed));
    let find = invocation(program, "find");
    let summary = |inv, arg| generated::argument_summary(program, graph, inv, arg);
    let label = |inv, arg| generated::argument_label(program, graph, inv, arg);
    assert_eq!(
        summary(find, 1),
        ["device property `index` of `set_cells`: the element's own index"]
    );
    assert_eq!(label(find, 1).as_deref(), Some("prop index"));
    assert_eq!(
        summary(find, 2),
        [
            "device property `find_arg2_index` of `set_cells`: the index `pcell[1]` reaches, from the instance's map"
        ]
    );
    assert_eq!(label(find, 2).as_deref(), Some("prop arg2_index"));
    assert_eq!(
        label(find, 4).as_deref(),
        Some("global_g_where pad, element_g_where")
    );
    assert!(summary(find, 4)[0].contains("the element where `g_max` improved"));
    let cells = graph
        .device_types
        .iter()
        .find(|d| d.id == "set_cells")
        .expect("set_cells");
    for property in ["index", "find_arg2_index"] {
        assert!(
            cells.properties.iter().any(|m| m.name == property),
            "{property}"
        );
    }
    assert!(cells.state.iter().any(|m| m.name == "element_g_where"));
    let end = graph.message_type("find_end").expect("find_end");
    assert!(end.members.iter().any(|m| m.name == "element_g_where"));
}

#[test]
fn every_kind_of_argument() {
    let path = Path::new("/op2-tests/every_kind.op2");
    let analysed = analysed_text(EVERY_KIND, path);
    assert!(
        analysed.graph.is_some(),
        "the program compiles: {:?}",
        analysed.diagnostics
    );
    let (program, graph) = (program(&analysed), graph(&analysed));
    let lump = invocation(program, "lump");
    let summary = |inv, arg| generated::argument_summary(program, graph, inv, arg);
    let label = |inv, arg| generated::argument_label(program, graph, inv, arg);
    assert_eq!(summary(lump, 3), ["graph property `global_share`"]);
    assert_eq!(summary(lump, 4), ["graph property `length_segments`"]);
    assert_eq!(label(lump, 3).as_deref(), Some("prop global_share"));
    assert_eq!(label(lump, 4).as_deref(), Some("prop length_segments"));
    assert_eq!(
        summary(lump, 8),
        ["carried by `lump_begin` into `global_g_scale` (landing pad on `set_segments`)"]
    );
    assert_eq!(
        summary(lump, 9),
        [
            "landing pad `global_g_max` on `set_segments`, written from `lump_begin`; partial sent in `lump_end` and combined by `global` (maximum)"
        ]
    );
    assert!(graph.properties.iter().any(|p| p.name == "global_share"));
    assert!(graph.properties.iter().any(|p| p.name == "length_segments"));

    let tagging = invocation(program, "tagging");
    assert_eq!(
        summary(tagging, 1),
        [
            "writes `dat_p_tag` of `nodes` via `seg_nodes[1]`: `tagging_arg1_buffer` (not initialised) → `tagging_arg1_write_send` on `set_segments` → `tagging_dat_p_tag_write_recv` on `set_nodes` (copies)",
            "messages of type `dat_p_tag`: 4 bytes each",
        ]
    );
    assert_eq!(
        summary(tagging, 2),
        [
            "reads `dat_p_mass` of `nodes` via `seg_nodes[0]`: pin `tagging_dat_p_mass_read_send` on `set_nodes` → `tagging_arg2_read_recv` on `set_segments`, into `tagging_arg2_buffer`",
            "writes `dat_p_mass` of `nodes` via `seg_nodes[0]`: `tagging_arg2_buffer` → `tagging_arg2_write_send` on `set_segments` → `tagging_dat_p_mass_write_recv` on `set_nodes` (copies)",
            "messages of type `dat_p_mass`: 8 bytes each",
        ]
    );
    assert_eq!(
        label(tagging, 2).as_deref(),
        Some("⇐ dat_p_mass_read_send → arg2_write_send")
    );
    assert_eq!(label(tagging, 1).as_deref(), Some("→ arg1_write_send"));
    names_exist(program, graph);
}

/// Every generated name a summary quotes exists in the graph.
fn names_exist(program: &Program, graph: &GraphType) {
    let mut known: Vec<String> = Vec::new();
    known.extend(graph.properties.iter().map(|p| p.name.clone()));
    known.extend(graph.message_types.iter().map(|m| m.id.clone()));
    known.extend(program.sets.iter().map(|s| s.name.clone()));
    for device in &graph.device_types {
        known.push(device.id.clone());
        for pin in device.inputs.iter().chain(&device.outputs) {
            known.push(pin.name.clone());
        }
        for member in device.state.iter().chain(&device.properties) {
            known.push(member.name.clone());
            known.push(format!("{}::{}", device.id, member.name));
        }
    }
    for (index, invocation) in program.invocations.iter().enumerate() {
        let id = InvocationId(u32::try_from(index).expect("few"));
        for arg in 0..invocation.args.len() {
            let lines = generated::argument_summary(program, graph, id, arg);
            assert!(
                !lines.is_empty(),
                "{} arg{arg} has a summary",
                invocation.name
            );
            for line in lines {
                for quoted in line.split('`').skip(1).step_by(2) {
                    // `map[k]` names the source, not something generated.
                    if quoted.contains('[') {
                        continue;
                    }
                    assert!(
                        known.iter().any(|k| k == quoted),
                        "`{quoted}` in \"{line}\" is not in the graph"
                    );
                }
            }
        }
    }
}

#[test]
fn airfoil_summaries_name_only_what_the_graph_has() {
    let (_, analysed) = airfoil();
    names_exist(program(&analysed), graph(&analysed));
}

/// The position of byte `offset` of `text` in `encoding` (computed here,
/// independently of the server's rope).
fn position(text: &str, offset: usize, encoding: PositionEncoding) -> Position {
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count();
    let column = match encoding {
        PositionEncoding::Utf8 => offset - line_start,
        PositionEncoding::Utf16 => before[line_start..].encode_utf16().count(),
    };
    Position::new(
        u32::try_from(line).expect("small"),
        u32::try_from(column).expect("small"),
    )
}

/// The offset just after the `nth` occurrence of `needle`.
fn end_of(text: &str, needle: &str, nth: usize) -> usize {
    let (start, _) = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("no occurrence {nth} of `{needle}`"));
    start + needle.len()
}

fn whole(text: &str) -> Range {
    Range::new(
        Position::new(0, 0),
        position(text, text.len(), PositionEncoding::Utf16),
    )
}

fn label(hint: &InlayHint) -> &str {
    match &hint.label {
        InlayHintLabel::String(s) => s,
        InlayHintLabel::LabelParts(_) => panic!("labels are strings"),
    }
}

fn hint_at<'a>(hints: &'a [InlayHint], at: Position, label_text: &str) -> &'a InlayHint {
    hints
        .iter()
        .find(|h| h.position == at && label(h) == label_text)
        .unwrap_or_else(|| {
            panic!(
                "no hint `{label_text}` at {at:?}; hints: {:?}",
                hints
                    .iter()
                    .map(|h| (h.position, label(h).to_owned()))
                    .collect::<Vec<_>>()
            )
        })
}

#[test]
fn airfoil_inlay_hints() {
    let (text, analysed) = airfoil();
    let settings = Settings::default();
    let uri = uri();
    let encoding = PositionEncoding::Utf16;
    let c = context(&analysed, encoding, &settings, &uri);
    let hints = inlay_hints::inlay_hints(&c, whole(&text)).expect("hints");
    let (program, graph) = (program(&analysed), graph(&analysed));

    // One label per argument; no names, since each par_loop is named after
    // its kernel (the first of each kernel), which the text shows already.
    let arguments: usize = program.invocations.iter().map(|i| i.args.len()).sum();
    assert_eq!(hints.len(), arguments);
    assert!(hints.iter().all(|h| !label(h).starts_with(": ")));

    let at = |offset| position(&text, offset, encoding);
    let arg0 = hint_at(
        &hints,
        at(end_of(&text, "p_x[pedge[0]]    READ", 0)),
        "⇐ dat_p_x_read_send",
    );
    let res_calc = invocation(program, "res_calc");
    let tooltip = generated::argument_summary(program, graph, res_calc, 0).join("\n\n");
    match &arg0.tooltip {
        Some(InlayHintTooltip::MarkupContent(markup)) => assert_eq!(markup.value, tooltip),
        other => panic!("the tooltip is the summary: {other:?}"),
    }
    hint_at(
        &hints,
        at(end_of(&text, "p_res[pecell[0]] INC", 0)),
        "→ arg6_write_send",
    );
    hint_at(&hints, at(end_of(&text, "rms INC", 0)), "global_rms pad");
    hint_at(
        &hints,
        at(end_of(&text, "p_q WRITE", 0)),
        "in place dat_p_q",
    );

    // Only the par_loops in the range: the lines of res_calc.
    let start = text.find("par_loop res_calc").expect("res_calc");
    let end = text[start..].find(");").expect("its end") + start;
    let range = Range::new(at(start), at(end));
    let some = inlay_hints::inlay_hints(&c, range).expect("hints");
    assert_eq!(some.len(), 8, "{some:?}");
    assert!(
        some.iter()
            .all(|h| h.position.line >= range.start.line && h.position.line <= range.end.line)
    );
}

/// WIDE with its second par_loop unnamed: `copy_max_1`.
fn twice() -> String {
    WIDE.replace("copy_max as again over", "copy_max over")
}

#[test]
fn inlay_hint_settings() {
    let text = twice();
    let analysed = analysed_text(&text, Path::new("/op2-tests/twice.op2"));
    let uri = uri();
    let mut settings = Settings::default();
    settings.inlay_hints.generated_pins = false;
    let hints = inlay_hints::inlay_hints(
        &context(&analysed, PositionEncoding::Utf16, &settings, &uri),
        whole(&text),
    )
    .expect("hints");
    let labels: Vec<&str> = hints.iter().map(label).collect();
    assert_eq!(labels, [": copy_max_1"], "only the name that differs");

    settings.inlay_hints.generated_pins = true;
    settings.inlay_hints.invocation_names = false;
    let hints = inlay_hints::inlay_hints(
        &context(&analysed, PositionEncoding::Utf16, &settings, &uri),
        whole(&text),
    )
    .expect("hints");
    assert!(!hints.is_empty());
    assert!(hints.iter().all(|h| !label(h).starts_with(": ")));

    settings.inlay_hints.generated_pins = false;
    let hints = inlay_hints::inlay_hints(
        &context(&analysed, PositionEncoding::Utf16, &settings, &uri),
        whole(&text),
    )
    .expect("hints");
    assert!(hints.is_empty());
}

#[test]
fn invocation_names_without_a_graph() {
    // An unknown name: an error, so no graph, but the names remain.
    let broken = twice().replacen("p_b READ", "p_c READ", 1);
    let analysed = analysed_text(&broken, Path::new("/op2-tests/twice.op2"));
    assert!(analysed.graph.is_none());
    let settings = Settings::default();
    let uri = uri();
    let c = context(&analysed, PositionEncoding::Utf16, &settings, &uri);
    let hints = inlay_hints::inlay_hints(&c, whole(&broken)).expect("hints");
    let labels: Vec<&str> = hints.iter().map(label).collect();
    assert_eq!(labels, [": copy_max_1"]);
    let (text, _) = airfoil();
    let broken = text.replacen("p_qold WRITE", "p_qnew WRITE", 1);
    let analysed = analysed_text(&broken, &example_path("airfoil.op2"));
    let c = context(&analysed, PositionEncoding::Utf16, &settings, &uri);
    // Lenses stay, saying why there are no counts, and open nothing.
    let lenses = code_lens::code_lenses(&c).expect("lenses");
    assert_eq!(lenses.len(), 5);
    for lens in lenses {
        let command = lens.command.expect("a command");
        assert_eq!(command.title, "no graph while the program has errors");
        assert!(command.command.is_empty());
    }
    assert_eq!(code_lens::device_type_text(&c, Some("cells")), None);
}

const WIDE: &str = "// Non-ASCII before the arguments: é (2 bytes, 1 unit), 😀 (4 bytes, 2 units).
set cells;
dat p_a: double on cells = 1.0;
dat p_b: double on cells;
global g_big: double;
kernel copy_max(const double *a, double *b, double *big) { b[0] = a[0]; if (a[0] > *big) *big = a[0]; }
main {
    par_loop /* é */ copy_max over cells (/* 😀 */ p_a READ, /* ü */ p_b WRITE, g_big MAX);
    par_loop /* 😀 */ copy_max as again over cells (p_b READ, p_a WRITE, g_big MAX);
}
";

#[test]
fn hint_positions_in_both_encodings() {
    let path = Path::new("/op2-tests/wide.op2");
    let analysed = analysed_text(WIDE, path);
    assert!(
        analysed.graph.is_some(),
        "the program compiles: {:?}",
        analysed.diagnostics
    );
    let settings = Settings::default();
    let uri = uri();
    for encoding in [PositionEncoding::Utf8, PositionEncoding::Utf16] {
        let c = context(&analysed, encoding, &settings, &uri);
        let end = position(WIDE, WIDE.len(), encoding);
        let hints =
            inlay_hints::inlay_hints(&c, Range::new(Position::new(0, 0), end)).expect("hints");
        let at = |offset| position(WIDE, offset, encoding);
        // `copy_max` is named after its kernel: no name hint for it.
        assert!(!hints.iter().any(|h| label(h) == ": copy_max"));
        hint_at(&hints, at(end_of(WIDE, "p_a READ", 0)), "in place dat_p_a");
        hint_at(&hints, at(end_of(WIDE, "p_b WRITE", 0)), "in place dat_p_b");
        hint_at(&hints, at(end_of(WIDE, "g_big MAX", 0)), "global_g_big pad");
        hint_at(&hints, at(end_of(WIDE, "g_big MAX", 1)), "global_g_big pad");
        // `again` is named in the text: no name hint for it.
        assert!(!hints.iter().any(|h| label(h) == ": again"));
        assert_eq!(hints.len(), 3 + 3);
        // The encodings differ on these lines, so the test means something.
        let utf8 = position(WIDE, end_of(WIDE, "p_b WRITE", 0), PositionEncoding::Utf8);
        let utf16 = position(WIDE, end_of(WIDE, "p_b WRITE", 0), PositionEncoding::Utf16);
        assert_ne!(utf8, utf16);

        // A range from the middle of a line with wide text.
        let from = at(end_of(WIDE, "p_a READ", 0));
        let to = at(end_of(WIDE, "p_b WRITE", 0));
        let some = inlay_hints::inlay_hints(&c, Range::new(from, to)).expect("hints");
        let labels: Vec<&str> = some.iter().map(label).collect();
        assert_eq!(labels, ["in place dat_p_a", "in place dat_p_b"]);
    }
}

/// The invocation a pin serves, written out here independently of the
/// server's own helper.
fn serves(role: PinRole, id: InvocationId) -> bool {
    match role {
        PinRole::Begin(i)
        | PinRole::DatReadSend(i, _)
        | PinRole::ArgReadRecv(i, _)
        | PinRole::Execute(i)
        | PinRole::ArgWriteSend(i, _)
        | PinRole::End(i)
        | PinRole::ControllerBegin(i)
        | PinRole::ControllerEnd(i)
        | PinRole::TreeBegin(i)
        | PinRole::TreeBeginForward(i)
        | PinRole::TreeEnd(i)
        | PinRole::TreeEndForward(i) => i == id,
        PinRole::DatWriteRecv { invocation, .. } => invocation == id,
        PinRole::Step => false,
    }
}

#[test]
fn airfoil_lenses_count_what_the_graph_contains() {
    let (text, analysed) = airfoil();
    let settings = Settings::default();
    let uri = uri();
    let c = context(&analysed, PositionEncoding::Utf16, &settings, &uri);
    let lenses = code_lens::code_lenses(&c).expect("lenses");
    let (program, graph) = (program(&analysed), graph(&analysed));
    assert_eq!(lenses.len(), program.invocations.len());
    for (index, (invocation, lens)) in program.invocations.iter().zip(&lenses).enumerate() {
        let id = InvocationId(u32::try_from(index).expect("few"));
        let inv = invocation.name.as_str();
        let pins: usize = graph
            .device_types
            .iter()
            .flat_map(|d| d.inputs.iter().chain(&d.outputs))
            .filter(|p| serves(p.role, id))
            .count();
        // No airfoil invocation name is `another_` + a suffix, so the prefix
        // finds exactly the members of this invocation.
        let state: usize = graph
            .device_types
            .iter()
            .flat_map(|d| &d.state)
            .filter(|m| m.name.starts_with(&format!("{inv}_")))
            .count()
            + graph.tree_device_type(id).map_or(0, |t| t.state.len());
        let iteration = graph
            .set_device_type(invocation.set.expect("resolved"))
            .expect("a device type");
        let per_element = 2 + iteration
            .inputs
            .iter()
            .chain(&iteration.outputs)
            .filter(|p| {
                matches!(p.role, PinRole::ArgReadRecv(i, _) | PinRole::ArgWriteSend(i, _) if i == id)
            })
            .count();
        let command = lens.command.as_ref().expect("a command");
        assert_eq!(
            command.title,
            format!(
                "{pins} pins · {state} state · {per_element} messages/element · \
                 tree depth 1 from 17 devices, 2 from 257"
            ),
            "{inv}"
        );
        assert_eq!(command.command, "op2.showDeviceType");
        let set_name = &program.sets[invocation.set.expect("resolved").index()].name;
        assert_eq!(
            command.arguments,
            Some(vec![
                serde_json::Value::String(uri.as_str().to_owned()),
                serde_json::Value::String(set_name.clone()),
            ])
        );
        // On the par_loop's first line.
        let line = text[..invocation.location.range.start as usize]
            .matches('\n')
            .count();
        assert_eq!(lens.range.start.line as usize, line);
    }
    // res_calc, by hand: 2 controller pins; set_edges: begin, 6 read_recv,
    // execute, 2 write_send, end; set_nodes: begin, read_send, execute, end;
    // set_cells: begin, 2 read_send, write_recv, execute, end; tree_res_calc
    // (the default trees): begin, end, and both forwarded. State: 8
    // buffers and 5 counters on edges, 5 counters each on nodes and cells,
    // begin_pending and end_count on the aggregators (res_calc has no
    // globals).
    let res_calc = invocation(program, "res_calc").index();
    assert_eq!(
        lenses[res_calc].command.as_ref().map(|c| c.title.as_str()),
        Some("27 pins · 25 state · 10 messages/element · tree depth 1 from 17 devices, 2 from 257")
    );
    let all = generated::all_invocation_counts(program, graph);
    for (index, counts) in all.iter().enumerate() {
        let id = InvocationId(u32::try_from(index).expect("few"));
        assert_eq!(counts, &generated::invocation_counts(program, graph, id));
    }
    let counts = all[res_calc].clone().expect("counts");
    let devices: Vec<(&str, usize, usize, usize, usize)> = counts
        .devices
        .iter()
        .map(|d| {
            (
                d.device_type.as_str(),
                d.inputs,
                d.outputs,
                d.state,
                d.properties,
            )
        })
        .collect();
    assert_eq!(
        devices,
        [
            ("global", 1, 1, 0, 1),
            ("set_edges", 7, 4, 13, 2),
            ("set_nodes", 1, 3, 5, 2),
            ("set_cells", 2, 4, 5, 2),
            ("tree_res_calc", 2, 2, 2, 1),
        ]
    );
}

#[test]
fn hints_of_many_par_loops_sit_where_the_hints_of_few_do() {
    // Ranges holding many par_loops convert positions with the line index,
    // small ones with the rope: both must agree, in both encodings, after
    // non-BMP text and every kind of line break.
    let text = format!("// 😀 é 𝄞\r\n// \r{}", op2_syntax::synth::program(2_500));
    let path = Path::new("/virtual/many.op2");
    let analysed = analysed_text(&text, path);
    let uri: Uri = "file:///virtual/many.op2".parse().expect("a URI");
    let settings = Settings::default();
    for encoding in [PositionEncoding::Utf16, PositionEncoding::Utf8] {
        let c = context(&analysed, encoding, &settings, &uri);
        let end = position(&text, text.len(), encoding);
        let all =
            inlay_hints::inlay_hints(&c, Range::new(Position::new(0, 0), end)).expect("hints");
        assert!(all.len() > 500, "{} hints", all.len());
        let mut windowed = Vec::new();
        for first in (0..=end.line).step_by(20) {
            let range = Range::new(Position::new(first, 0), Position::new(first + 20, 0));
            for hint in inlay_hints::inlay_hints(&c, range).expect("hints") {
                let key = (hint.position, label(&hint).to_owned());
                if !windowed.contains(&key) {
                    windowed.push(key);
                }
            }
        }
        windowed.sort_by_key(|(p, _)| (p.line, p.character));
        let mut all: Vec<(Position, String)> = all
            .iter()
            .map(|h| (h.position, label(h).to_owned()))
            .collect();
        all.sort_by_key(|(p, _)| (p.line, p.character));
        assert_eq!(all, windowed, "{encoding:?}");
    }
}

#[test]
fn the_head_of_a_device_type_is_its_first_lines_and_counts_the_rest() {
    let (_, analysed) = airfoil();
    let (program, graph) = (program(&analysed), graph(&analysed));
    for set in ["nodes", "edges", "bedges", "cells"] {
        let id = self::set(program, set);
        let Some(full) = generated::device_type_text(program, graph, id) else {
            continue;
        };
        let total = full.lines().count();
        for max in [0, 1, 7, 20, total - 1, total, total + 5] {
            let head = generated::device_type_head(program, graph, id, max).expect("the same set");
            let expected: Vec<&str> = full.lines().take(max).collect();
            assert_eq!(
                head.text.lines().collect::<Vec<_>>(),
                expected,
                "{set}, {max} lines"
            );
            assert_eq!(head.count, total, "{set}");
            assert_eq!(
                head.omitted(),
                total.saturating_sub(max),
                "{set}, {max} lines"
            );
        }
    }
}

#[test]
fn device_type_text_of_cells() {
    let (_, analysed) = airfoil();
    let (program, graph) = (program(&analysed), graph(&analysed));
    let cells = set(program, "cells");
    let text = generated::device_type_text(program, graph, cells).expect("set_cells");
    let device = graph.set_device_type(cells).expect("set_cells");
    assert!(text.starts_with("device type set_cells\n"), "{text}");
    for member in device.state.iter().chain(&device.properties) {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().any(|w| w == member.name
                    || w.strip_prefix(member.name.as_str())
                        .is_some_and(|rest| rest.starts_with('[')))),
            "`{}` missing from\n{text}",
            member.name
        );
    }
    for pin in device.inputs.iter().chain(&device.outputs) {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().any(|w| w == pin.name)),
            "pin `{}` missing from\n{text}",
            pin.name
        );
    }
    assert!(text.contains("double dat_p_q[4]"), "{text}");
    assert!(
        text.contains("invocation res_calc (over `edges`; this set holds dats it reaches)"),
        "{text}"
    );
    assert!(text.contains("invocation update (iterates here)"), "{text}");
    assert!(
        text.contains(&format!(
            "{} input pins, {} output pins (limit 32)",
            device.inputs.len(),
            device.outputs.len()
        )),
        "{text}"
    );

    // Through the command's handler: by set name, the controller, all.
    let settings = Settings::default();
    let uri = uri();
    let c = context(&analysed, PositionEncoding::Utf16, &settings, &uri);
    assert_eq!(
        code_lens::device_type_text(&c, Some("cells")),
        Some(text.clone())
    );
    assert_eq!(code_lens::device_type_text(&c, Some("p_q")), None);
    assert_eq!(code_lens::device_type_text(&c, Some("no_such_set")), None);
    let controller = code_lens::device_type_text(&c, Some("global")).expect("the controller");
    assert!(
        controller.starts_with("device type global\n"),
        "{controller}"
    );
    let controller_device = graph
        .device_types
        .iter()
        .find(|d| d.kind == DeviceKind::Controller)
        .expect("a controller");
    for member in controller_device
        .state
        .iter()
        .chain(&controller_device.properties)
    {
        assert!(
            controller.contains(&member.name),
            "`{}` in\n{controller}",
            member.name
        );
    }
    let all = code_lens::device_type_text(&c, None).expect("every device type");
    for device in &graph.device_types {
        assert!(
            all.contains(&format!("device type {}\n", device.id)),
            "{}",
            device.id
        );
    }
}

/// The trees of each airfoil loop as the lens and hover show them: the
/// begin passes controller → aggregator → every involved set, the end the
/// other way, each pin exists with its role, and the depths agree with the
/// trees `op2 build` and `op2 simulate` build (`topology::levels`).
#[test]
fn airfoil_trees_show_their_pins_and_depths() {
    let (_, analysed) = airfoil();
    let (program, graph) = (program(&analysed), graph(&analysed));
    let name_of = |device: &str, pin: &str| format!("{device}.{pin}");
    for (index, invocation) in program.invocations.iter().enumerate() {
        let id = InvocationId(u32::try_from(index).expect("few"));
        let tree = generated::tree_summary(graph, id).expect("a tree");
        let inv = invocation.name.as_str();
        let plan = graph.invocation(id).expect("a plan");
        let sets: Vec<String> = plan
            .involved_sets
            .iter()
            .map(|s| format!("set_{}", program.sets[s.index()].name))
            .collect();
        let aggregator = format!("tree_{inv}");
        assert_eq!(
            tree.begin,
            vec![
                vec![name_of("global", &format!("{inv}_begin"))],
                vec![name_of(&aggregator, &format!("{inv}_begin"))],
                vec![name_of(&aggregator, &format!("{inv}_begin_forward"))],
                sets.iter()
                    .map(|s| name_of(s, &format!("{inv}_begin")))
                    .collect(),
            ]
        );
        assert_eq!(
            tree.end,
            vec![
                sets.iter()
                    .map(|s| name_of(s, &format!("{inv}_end")))
                    .collect(),
                vec![name_of(&aggregator, &format!("{inv}_end"))],
                vec![name_of(&aggregator, &format!("{inv}_end_forward"))],
                vec![name_of("global", &format!("{inv}_end"))],
            ]
        );
        assert_eq!(tree.fan_limit, op2_codegen::DEFAULT_FAN_LIMIT);
        for (depth, most) in &tree.depths {
            let levels = |n: u64| op2_codegen::topology::levels(tree.fan_limit, n).len();
            assert_eq!(levels(*most), *depth as usize, "{most} devices");
            assert_eq!(
                levels(most + 1),
                *depth as usize + 1,
                "{} devices",
                most + 1
            );
        }
        assert_eq!(
            tree.depth_text(),
            "0 up to 16, 1 up to 256, 2 up to 4,096, 3 up to 65,536"
        );
    }
    // The flat controller: begin straight to the devices, no depths.
    let flat = op2_codegen::graph_type_with_fan_limit(&analysed.analysis, "airfoil", 0);
    let update = invocation(program, "update");
    let tree = generated::tree_summary(&flat, update).expect("a tree");
    assert_eq!(
        generated::TreeSummary::path_text(&tree.begin),
        "`global.update_begin` → `set_cells.update_begin`"
    );
    assert!(tree.depths.is_empty());
}

/// Regression: the code lenses looked up, per par_loop, its plan, its
/// device types and pins and the controller's `end_total` properties by a
/// scan of the whole graph, whose lists grow with the par_loops, so they
/// were quadratic: 0.74 s at 4,000 aliased par_loops, 9.7 s at 16,000
/// through the server. Now every lookup is indexed once per request. In
/// this test the old code took 7.4 s at 24,000 (so about 20 s at 40,000);
/// the new takes 0.6 s at 40,000 against a limit of 5 s.
#[test]
fn lenses_of_many_par_loops_take_linear_time() {
    let n = 40_000;
    let text = op2_syntax::synth::par_loops_of_one_kernel(n, true);
    let path = Path::new("/virtual/many.op2");
    let analysed = analysed_text(&text, path);
    assert!(analysed.graph.is_some(), "the program has a graph");
    let uri: Uri = "file:///virtual/many.op2".parse().expect("a URI");
    let settings = Settings::default();
    let c = context(&analysed, PositionEncoding::Utf16, &settings, &uri);
    let started = std::time::Instant::now();
    let lenses = code_lens::code_lenses(&c).expect("lenses");
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(5),
        "the lenses of {n} par_loops took {took:?}"
    );
    let titles: Vec<&str> = lenses
        .iter()
        .filter_map(|l| l.command.as_ref().map(|c| c.title.as_str()))
        .collect();
    assert_eq!(titles.len() % n, 0, "{} lenses", titles.len());
    let per = titles.len() / n;
    assert!(per > 0, "no lens");
    // Every par_loop is the same loop under another name: the last one's
    // lenses, found through the indexes, are the first one's.
    assert_eq!(titles[..per], titles[titles.len() - per..]);
    assert!(titles[0].contains(" pins · "), "{}", titles[0]);
}

/// The device type text of a set with n dats (the code lens command
/// `op2.showDeviceType`) examines each shared member once: looking each up
/// among all the dats made it quadratic (issue #12, an audit: 12.6 s at
/// 20,000 loops).
#[test]
fn the_device_type_text_is_linear_in_the_dats() {
    let [small, large] = [500, 1_000].map(|n| {
        let dats: String = (0..n)
            .map(|i| format!("dat d{i}: double on cells;\n"))
            .collect();
        let loops: String = (0..n)
            .map(|i| format!("    par_loop k over cells (d{i} WRITE);\n"))
            .collect();
        let text = format!(
            "set cells;\n{dats}kernel k(double *v) {{ v[0] = 1.0; }}\nmain {{\n{loops}}}\n"
        );
        let analysed = analysed_text(&text, Path::new("/op2-tests/wide.op2"));
        let program = program(&analysed);
        let cells = set(program, "cells");
        let before = op2_lsp::work::on_this_thread();
        let shown = generated::device_type_text(program, graph(&analysed), cells);
        let work = op2_lsp::work::on_this_thread() - before;
        let shown = shown.expect("a device type for the cells");
        assert!(shown.contains(&format!("dat `d{}`", n - 1)), "{shown}");
        work
    });
    assert!(small > 0, "no work counted");
    assert!(
        large * 10 <= small * 22,
        "{small} items at n dats and {large} at 2n"
    );
}

/// A par_loop of `n` arguments `x[m[I]] RW` on one dat, bound to a kernel
/// that does nothing.
fn many_readers_of_one_dat(n: usize) -> String {
    let params: Vec<String> = (0..n).map(|i| format!("double *a{i}")).collect();
    let args: Vec<String> = (0..n).map(|i| format!("x[m[{i}]] RW")).collect();
    format!(
        "set s;\nset t;\nmap m: s -> t [{n}];\ndat x: double on t;\nkernel k({}) {{ }}\nmain {{\n    par_loop k over s ({});\n}}\n",
        params.join(", "),
        args.join(", ")
    )
}

/// The arguments a read pin also serves are named up to eight and counted
/// beyond: a hint per argument naming every other made the inlay hints of
/// 10,000 such arguments 894 MB of JSON, 90 s (review of 2026-11-29).
#[test]
fn a_shared_read_pin_names_a_few_of_its_arguments_and_counts_the_rest() {
    let path = Path::new("/virtual/readers.op2");
    let summary_of = |n: usize, arg: usize| {
        let analysed = analysed_text(&many_readers_of_one_dat(n), path);
        let program = program(&analysed);
        generated::argument_summary(program, graph(&analysed), invocation(program, "k"), arg)
    };
    assert_eq!(
        summary_of(3, 1)[1],
        "`k_dat_x_read_send` is sent once per element of `t` and also serves arg0 and arg2"
    );
    assert_eq!(
        summary_of(20, 5)[1],
        "`k_dat_x_read_send` is sent once per element of `t` and also serves arg0, arg1, arg2, arg3, arg4, arg6, arg7, arg8 and 11 more"
    );

    let n = 10_000;
    let text = many_readers_of_one_dat(n);
    let analysed = analysed_text(&text, path);
    let uri: Uri = "file:///virtual/readers.op2".parse().expect("a URI");
    let settings = Settings::default();
    let c = context(&analysed, PositionEncoding::Utf16, &settings, &uri);
    let hints = inlay_hints::inlay_hints(&c, whole(&text)).expect("hints");
    assert_eq!(hints.len(), n);
    let bytes = serde_json::to_string(&hints).expect("JSON").len();
    assert!(
        bytes < 1_000 * n,
        "{bytes} bytes of hints for {n} arguments"
    );
}
