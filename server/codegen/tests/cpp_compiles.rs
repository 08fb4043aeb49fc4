//! The generated C++ compiles in the environment POETS gives handlers
//! (poets-v4.md §3): for every bundled example and every program under
//! `tests/programs/`, the graph type becomes one C++ translation unit laid
//! out the way GS's `write_cpp.py` lays out its provider, and the system C++
//! compiler checks it.
//!
//! Each handler is pasted into a function that has exactly the variables
//! §3.2 puts in scope for its kind, with their `const`-ness, so a handler
//! that writes a `const` pointer, uses a name that does not exist there
//! (`requestIdle` in GS, `handler_exit` in ReadyToSend) or refers to an RTS
//! constant of another device type fails to compile. Every handler is
//! compiled a second time as the Orchestrator would (§3.2 "How the
//! Orchestrator differs"): `OnInit` returning `uint32_t`, so a bare
//! `return;` fails, `OnSend` without `doSend` and `sendIndex`.

use crate::graph_type_support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use op2_codegen::model::{DeviceType, GraphType, Member};

use graph_type_support::{analyse_file, build, examples_dir, op2_stems, programs_dir};

/// A translation unit under construction that knows its own line count, so
/// that pasted code can be given `#line` directives: the compiler then names
/// the handler (`set_cells.update_execute.OnSend:3`) in its messages.
struct Unit {
    file: String,
    text: String,
}

impl Unit {
    fn line(&mut self, text: &str) {
        self.text.push_str(text);
        self.text.push('\n');
    }

    /// Pastes `code` as if it came from the file `origin`, then returns to
    /// the unit's own numbering.
    fn paste(&mut self, origin: &str, code: &str) {
        self.line(&format!("#line 1 \"{origin}\""));
        self.text.push_str(code);
        if !code.ends_with('\n') {
            self.text.push('\n');
        }
        let next = self.text.matches('\n').count() + 2;
        let file = self.file.clone();
        self.line(&format!("#line {next} \"{file}\""));
    }
}

fn declarations(members: &[Member]) -> String {
    let mut out = String::new();
    for member in members {
        match member.length {
            Some(length) => {
                let _ = writeln!(out, "    {} {}[{length}];", member.ty.name(), member.name);
            }
            None => {
                let _ = writeln!(out, "    {} {};", member.ty.name(), member.name);
            }
        }
    }
    out
}

fn packed_struct(unit: &mut Unit, name: &str, members: &[Member]) {
    unit.line(&format!("struct {name} {{"));
    unit.text.push_str(&declarations(members));
    unit.line("};");
}

/// The prologue: what `graph.hpp` and `write_cpp.py` provide before the
/// program's own code (§3.1 items 1–7).
fn prologue(unit: &mut Unit, graph: &GraphType) {
    let id = &graph.id;
    unit.line(&format!(
        "// Graph type `{id}` as GS's write_cpp.py lays it out (poets-v4.md section 3)."
    ));
    // `<cerrno>` too, as GS's `graph.hpp` may bring it: `errno` is then a
    // macro.
    for header in ["cstdint", "cmath", "cstdio", "cassert", "cerrno"] {
        unit.line(&format!("#include <{header}>"));
    }
    unit.line("");
    unit.line("// What graph.hpp declares for handlers.");
    unit.line(
        "extern \"C\" void handler_log(int level, const char *fmt, ...) \
         __attribute__((format(printf, 2, 3)));",
    );
    unit.line("extern \"C\" void handler_exit(int code);");
    unit.line("void handler_assert(bool condition);");
    unit.line("");
    unit.line("#pragma pack(push, 1)");
    packed_struct(unit, &format!("{id}_properties_t"), &graph.properties);
    unit.line("#pragma pack(pop)");
    unit.line("");
    unit.line("#undef assert");
    unit.line("#define assert handler_assert");
    unit.line("");
    unit.line("// The Orchestrator-style macros (GS _add_orchestrator_hack_macros).");
    unit.line("#define GRAPHPROPERTIES(x) graphProperties->x");
    unit.line("#define DEVICEPROPERTIES(x) deviceProperties->x");
    unit.line("#define DEVICESTATE(x) deviceState->x");
    unit.line("#define EDGEPROPERTIES(x) edgeProperties->x");
    unit.line("#define EDGESTATE(x) edgeState->x");
    unit.line("#define MSG(x) message->x");
    unit.line("#define PKT(x) message->x");
    unit.line("#define RTS(pin) (*readyToSend |= RTS_FLAG_##pin)");
    unit.line("");
    unit.line("#pragma pack(push, 1)");
    for message in &graph.message_types {
        let name = format!("{}_message_t", message.id);
        packed_struct(unit, &name, &message.members);
        unit.line(&format!("typedef {name} {id}_{name};"));
    }
    for device in &graph.device_types {
        let dev = &device.id;
        packed_struct(unit, &format!("{dev}_properties_t"), &device.properties);
        packed_struct(unit, &format!("{dev}_state_t"), &device.state);
        unit.line(&format!(
            "typedef {dev}_properties_t {id}_{dev}_properties_t;"
        ));
        unit.line(&format!("typedef {dev}_state_t {id}_{dev}_state_t;"));
    }
    for device in &graph.device_types {
        for pin in &device.inputs {
            let dev = &device.id;
            let name = &pin.name;
            unit.line(&format!("struct {dev}_{name}_properties_t {{}};"));
            unit.line(&format!("struct {dev}_{name}_state_t {{}};"));
        }
    }
    unit.line("#pragma pack(pop)");
    unit.line("");
    // GS defines `{id}_Spec_get` for every message type and every device
    // type, so that equal ids fail to compile (poets-v4.md §3.1).
    unit.line("// The type registrations GS generates; equal ids clash here as in GS.");
    for message in &graph.message_types {
        unit.line(&format!(
            "inline int {}_Spec_get() {{ return 0; }}",
            message.id
        ));
    }
    for device in &graph.device_types {
        unit.line(&format!(
            "inline int {}_Spec_get() {{ return 1; }}",
            device.id
        ));
    }
    unit.line("");
}

/// Which implementation's handler signatures to use.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavour {
    /// GS (`write_cpp.py`): the table of §3.2.
    Gs,
    /// The Orchestrator (`Composer.cpp`): `OnInit` returns `uint32_t`,
    /// `OnSend` has no `doSend`/`sendIndex`, `ReadyToSend` has `requestIdle`.
    Orchestrator,
}

fn device_namespace(unit: &mut Unit, graph: &GraphType, device: &DeviceType, flavour: Flavour) {
    let dev = &device.id;
    let namespace = match flavour {
        Flavour::Gs => format!("ns_{dev}"),
        Flavour::Orchestrator => format!("orch_{dev}"),
    };
    unit.line(&format!("namespace {namespace} {{"));
    // RTS constants, indexed in the order of the output pins (§3.3).
    for (index, pin) in device.outputs.iter().enumerate() {
        let name = &pin.name;
        unit.line(&format!("const unsigned RTS_INDEX_{name} = {index};"));
        unit.line(&format!("const unsigned RTS_FLAG_{name} = 1ul << {index};"));
        if flavour == Flavour::Gs {
            unit.line(&format!("const unsigned RTS_INDEX_{dev}_{name} = {index};"));
            unit.line(&format!(
                "const unsigned RTS_FLAG_{dev}_{name} = 1ul << {index};"
            ));
            unit.line(&format!(
                "const unsigned OUTPUT_INDEX_{dev}_{name} = {index};"
            ));
        }
    }
    if flavour == Flavour::Gs {
        for (index, pin) in device.inputs.iter().enumerate() {
            unit.line(&format!(
                "const unsigned INPUT_INDEX_{dev}_{} = {index};",
                pin.name
            ));
        }
        unit.line(&format!(
            "const unsigned OUTPUT_COUNT_{dev} = {};",
            device.outputs.len()
        ));
    }
    unit.line(&format!(
        "typedef {}_properties_t GRAPH_PROPERTIES_T;",
        graph.id
    ));
    unit.line(&format!("typedef {dev}_properties_t DEVICE_PROPERTIES_T;"));
    unit.line(&format!("typedef {dev}_state_t DEVICE_STATE_T;"));
    unit.line("");
    if !device.shared_code.is_empty() {
        unit.paste(&format!("{dev}.SharedCode"), &device.shared_code);
        unit.line("");
    }

    let common = "const GRAPH_PROPERTIES_T *graphProperties, \
                  const DEVICE_PROPERTIES_T *deviceProperties";
    // OnInit: GS wraps it in a lambda whose value is ignored; the
    // Orchestrator's returns uint32_t, 1 by default.
    match flavour {
        Flavour::Gs => unit.line(&format!(
            "void on_init({common}, DEVICE_STATE_T *deviceState) {{"
        )),
        Flavour::Orchestrator => unit.line(&format!(
            "uint32_t on_init({common}, DEVICE_STATE_T *deviceState) {{"
        )),
    }
    unit.paste(&format!("{dev}.OnInit"), &device.on_init);
    if flavour == Flavour::Orchestrator {
        unit.line("return 1;");
    }
    unit.line("}");
    unit.line("");

    // ReadyToSend: the device state is const, and handler_exit is not
    // available in GS.
    match flavour {
        Flavour::Gs => unit.line(&format!(
            "void ready_to_send({common}, const DEVICE_STATE_T *deviceState, \
             uint32_t *readyToSend) {{"
        )),
        Flavour::Orchestrator => unit.line(&format!(
            "void ready_to_send({common}, const DEVICE_STATE_T *deviceState, \
             uint32_t *readyToSend, bool *requestIdle) {{"
        )),
    }
    unit.line("struct not_available_in_ReadyToSend {} handler_exit; (void)handler_exit;");
    unit.paste(&format!("{dev}.ReadyToSend"), &device.ready_to_send);
    unit.line("}");
    unit.line("");

    for pin in &device.inputs {
        let name = &pin.name;
        let msg = format!("{}_message_t", pin.message_type);
        let edge = format!("{dev}_{name}_properties_t");
        // GS gives edgeState the pin's Properties type (its bug, §3.2).
        unit.line(&format!(
            "void on_receive_{name}({common}, DEVICE_STATE_T *deviceState, \
             const {msg} *message, const {edge} *edgeProperties, {edge} *edgeState) {{"
        ));
        unit.paste(&format!("{dev}.{name}.OnReceive"), &pin.handler);
        unit.line("}");
        unit.line("");
    }
    for pin in &device.outputs {
        let name = &pin.name;
        let msg = format!("{}_message_t", pin.message_type);
        match flavour {
            Flavour::Gs => unit.line(&format!(
                "void on_send_{name}({common}, DEVICE_STATE_T *deviceState, {msg} *message, \
                 bool *doSend, unsigned *sendIndex) {{"
            )),
            Flavour::Orchestrator => unit.line(&format!(
                "void on_send_{name}({common}, DEVICE_STATE_T *deviceState, {msg} *message) {{"
            )),
        }
        unit.paste(&format!("{dev}.{name}.OnSend"), &pin.handler);
        unit.line("}");
        unit.line("");
    }
    unit.line(&format!("}} // namespace {namespace}"));
    unit.line("");
}

/// The whole translation unit for a graph type.
fn translation_unit(graph: &GraphType, file: &str) -> String {
    let mut unit = Unit {
        file: file.to_owned(),
        text: String::new(),
    };
    prologue(&mut unit, graph);
    // The graph SharedCode comes before every device type (§3.1 item 8).
    unit.paste(&format!("{}.SharedCode", graph.id), &graph.shared_code);
    unit.line("");
    for flavour in [Flavour::Gs, Flavour::Orchestrator] {
        for device in &graph.device_types {
            device_namespace(&mut unit, graph, device, flavour);
        }
    }
    unit.text
}

/// The C++ compiler: `$CXX`, else `c++`, else `g++`.
pub(crate) fn compiler() -> String {
    let candidates: Vec<String> = std::env::var("CXX")
        .ok()
        .filter(|c| !c.is_empty())
        .into_iter()
        .chain(["c++".to_owned(), "g++".to_owned()])
        .collect();
    for candidate in &candidates {
        let found = Command::new(candidate)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return candidate.clone();
        }
    }
    panic!(
        "no C++ compiler found (tried {}): these tests need one on PATH",
        candidates.join(", ")
    );
}

pub(crate) fn work_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpp_compiles");
    std::fs::create_dir_all(&dir).expect("creating the scratch directory");
    dir
}

/// Builds the graph type of the program at `path`, writes its translation
/// unit and compiles it; fails with the compiler's output.
fn check(path: &Path) {
    check_as(path, &op2_codegen::graph_id(path));
}

/// [`check`] with the graph id that `op2 build` gives a file whose stem is
/// `graph_id`.
fn check_as(path: &Path, graph_id: &str) {
    let (_, analysis) = analyse_file(path);
    let graph = build(&analysis, graph_id);
    let file = work_dir().join(format!("{graph_id}.cpp"));
    let text = translation_unit(&graph, &file.display().to_string());
    std::fs::write(&file, &text).expect("writing the translation unit");
    let compiler = compiler();
    // GS compiles with the compiler's default standard (no `-std`), the
    // Orchestrator as C++14 (poets-v4.md §3.1): both must accept the code.
    for standard in [Some("-std=c++14"), None] {
        let output = Command::new(&compiler)
            .args(standard)
            .args([
                "-fsyntax-only",
                "-Wall",
                "-Werror=return-type",
                // handler_log is printf-like: arguments must match the format.
                "-Werror=format",
                // `??!` in a string is `|` in C++14.
                "-Werror=trigraphs",
            ])
            .arg(&file)
            .output()
            .unwrap_or_else(|e| panic!("running {compiler}: {e}"));
        let diagnostics = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{compiler} {} rejects the C++ of {} ({}):\n{diagnostics}",
            standard.unwrap_or("(default standard)"),
            path.display(),
            file.display()
        );
    }
}

fn example(stem: &str) -> PathBuf {
    examples_dir().join(format!("{stem}.op2"))
}

fn program(stem: &str) -> PathBuf {
    programs_dir().join(format!("{stem}.op2"))
}

/// The examples and test programs that have a test below.
const EXAMPLES: &[&str] = &["airfoil", "dot_product", "jacobi", "scatter"];
const PROGRAMS: &[&str] = &[
    "cpp_bool_updates",
    "cpp_builtin_argument_types",
    "cpp_builtin_names_as_variables",
    "cpp_const_shadowed_by_local",
    "cpp_fetch",
    "cpp_globals",
    "cpp_indices_and_info",
    "cpp_indirect_modes",
    "cpp_kernel_ops",
    "cpp_kernel_prints",
    "cpp_main_control",
    "cpp_min_max_of_comparisons_and_wide_literals",
    "cpp_names_of_c_macros",
    "cpp_names_the_generated_code_uses",
    "cpp_param_bound_to_const_and_rw",
    "cpp_print_integer_widths",
    "cpp_print_question_marks",
    "cpp_printf_and_exit",
    "cpp_repeated_inc",
];

#[test]
fn every_example_and_test_program_has_a_test() {
    assert_eq!(op2_stems(&examples_dir()), EXAMPLES, "docs/examples/");
    let programs: Vec<String> = op2_stems(&programs_dir())
        .into_iter()
        .filter(|s| s.starts_with("cpp_"))
        .collect();
    assert_eq!(programs, PROGRAMS, "tests/programs/cpp_*");
}

#[test]
fn example_airfoil() {
    check(&example("airfoil"));
}

#[test]
fn example_dot_product() {
    check(&example("dot_product"));
}

#[test]
fn example_jacobi() {
    check(&example("jacobi"));
}

#[test]
fn example_scatter() {
    check(&example("scatter"));
}

#[test]
fn program_globals() {
    check(&program("cpp_globals"));
}

#[test]
fn program_indices_and_info() {
    check(&program("cpp_indices_and_info"));
}

#[test]
fn program_indirect_modes() {
    check(&program("cpp_indirect_modes"));
}

#[test]
fn program_kernel_ops() {
    check(&program("cpp_kernel_ops"));
}

#[test]
fn program_kernel_prints() {
    check(&program("cpp_kernel_prints"));
}

#[test]
fn program_main_control() {
    check(&program("cpp_main_control"));
}

#[test]
fn program_min_max_of_comparisons_and_wide_literals() {
    check(&program("cpp_min_max_of_comparisons_and_wide_literals"));
}

#[test]
fn program_bool_updates() {
    check(&program("cpp_bool_updates"));
}

#[test]
fn program_builtin_argument_types() {
    check(&program("cpp_builtin_argument_types"));
}

#[test]
fn program_builtin_names_as_variables() {
    check(&program("cpp_builtin_names_as_variables"));
}

#[test]
fn program_print_integer_widths() {
    check(&program("cpp_print_integer_widths"));
}

#[test]
fn program_repeated_inc() {
    check(&program("cpp_repeated_inc"));
}

#[test]
fn program_print_question_marks() {
    check(&program("cpp_print_question_marks"));
}

#[test]
fn program_printf_and_exit() {
    check(&program("cpp_printf_and_exit"));
}

#[test]
fn program_fetch() {
    check(&program("cpp_fetch"));
}

#[test]
fn program_const_shadowed_by_local() {
    check(&program("cpp_const_shadowed_by_local"));
}

#[test]
fn program_names_of_c_macros() {
    check(&program("cpp_names_of_c_macros"));
}

#[test]
fn program_names_the_generated_code_uses() {
    check(&program("cpp_names_the_generated_code_uses"));
}

/// `op2 build global.op2` names the graph `global`, the id of the
/// controller's device type: GS's `{graph}_properties_t` (graph properties)
/// and `{device}_properties_t` then name two different structs.
#[test]
fn example_scatter_in_a_file_named_global() {
    let id = op2_codegen::graph_id(Path::new("global.op2"));
    check_as(&example("scatter"), &id);
}

#[test]
fn program_param_bound_to_const_and_rw() {
    check(&program("cpp_param_bound_to_const_and_rw"));
}

/// The SharedCode's arithmetic helpers, compiled at -O2 and run, give what
/// `op2 run` gives (`op2_analysis::value`): signed division and remainder
/// of the most negative value by -1 (which x86's division traps on), and
/// `max` of two zeros and of a NaN (`a > b ? a : b`).
#[test]
fn the_shared_helpers_compute_what_op2_run_computes() {
    use op2_analysis::value::{self, Value};
    use op2_syntax::ast::BinaryOp;
    let (_, analysis) = analyse_file(&example("dot_product"));
    let graph = build(&analysis, "helpers");
    let cases: [(&str, Value, BinaryOp, Value); 6] = [
        (
            "op2_div(opaque((int32_t) INT32_MIN), opaque((int32_t) -1))",
            Value::Int(i32::MIN),
            BinaryOp::Div,
            Value::Int(-1),
        ),
        (
            "op2_rem(opaque((int32_t) INT32_MIN), opaque((int32_t) -1))",
            Value::Int(i32::MIN),
            BinaryOp::Rem,
            Value::Int(-1),
        ),
        (
            "op2_div(opaque((int64_t) INT64_MIN), opaque((int64_t) -1))",
            Value::Ll(i64::MIN),
            BinaryOp::Div,
            Value::Ll(-1),
        ),
        (
            "op2_rem(opaque((int64_t) INT64_MIN), opaque((int64_t) -1))",
            Value::Ll(i64::MIN),
            BinaryOp::Rem,
            Value::Ll(-1),
        ),
        (
            "op2_div(opaque((int32_t) 7), opaque((int32_t) -2))",
            Value::Int(7),
            BinaryOp::Div,
            Value::Int(-2),
        ),
        (
            "op2_rem(opaque((int32_t) -7), opaque((int32_t) 2))",
            Value::Int(-7),
            BinaryOp::Rem,
            Value::Int(2),
        ),
    ];
    let mut program = format!("{}\n#include <cstdio>\n", graph.shared_code);
    // Operands the compiler cannot see, so that the division runs.
    program.push_str(
        "template <typename T> T opaque(T x) { volatile T v = x; return v; }\nint main() {\n",
    );
    let mut expected = String::new();
    for (text, a, op, b) in &cases {
        program.push_str(&format!("    printf(\"%lld\\n\", (long long) {text});\n"));
        let result = value::binary(*op, *a, *b).expect("defined in op2 run");
        expected.push_str(&format!("{}\n", result.as_i128().expect("an integer")));
    }
    // max(a, b) of 0.0 and -0.0 each way, and of a NaN and 1.0 each way.
    program.push_str(
        "    volatile double zero = 0.0, one = 1.0;\n    double nan = zero / zero;\n    \
         printf(\"%d %d %d %d\\n\", std::signbit(op2_max(zero, -zero)), \
         std::signbit(op2_max(-zero, zero)), std::isnan(op2_max(nan, one)), \
         std::isnan(op2_max(one, nan)));\n    return 0;\n}\n",
    );
    let max = |a: f64, b: f64| match op2_analysis::consts::call_builtin(
        op2_analysis::hir::Builtin::Max,
        &[Value::Double(a), Value::Double(b)],
        op2_syntax::ast::ScalarType::Double,
    ) {
        Value::Double(v) => v,
        other => panic!("{other:?}"),
    };
    let nan = f64::NAN;
    expected.push_str(&format!(
        "{} {} {} {}\n",
        i32::from(max(0.0, -0.0).is_sign_negative()),
        i32::from(max(-0.0, 0.0).is_sign_negative()),
        i32::from(max(nan, 1.0).is_nan()),
        i32::from(max(1.0, nan).is_nan()),
    ));
    assert_eq!(compile_and_run("helpers", &program, &["-O2"]), expected);
}

/// Compiles the C++ `program` as `{stem}.cpp` with `flags`, runs it and
/// returns its standard output; fails if either step does.
fn compile_and_run(stem: &str, program: &str, flags: &[&str]) -> String {
    let source = work_dir().join(format!("{stem}.cpp"));
    let binary = work_dir().join(stem);
    std::fs::write(&source, program).expect("writing the program");
    let compiled = Command::new(compiler())
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .output()
        .expect("running the compiler");
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let ran = Command::new(&binary).output().expect("running the program");
    assert!(ran.status.success(), "{ran:?}");
    String::from_utf8_lossy(&ran.stdout).into_owned()
}

/// Runs `main` of the program `text` (one with no par_loop, so that one
/// step of the controller runs it to its end) in the generated C++,
/// compiled and run: what `handler_log` and `handler_exit` are given, one
/// line each, in order. `handler_exit` returns, as in epoch_sim, so what
/// follows it shows too.
fn run_main(id: &str, text: &str) -> String {
    let (_, graph, _) = graph_type_support::graph_of_source(id, text);
    let source = work_dir().join(format!("{id}.cpp"));
    let mut program = translation_unit(&graph, &source.display().to_string());
    let _ = write!(
        program,
        r#"
#include <cstdarg>
#include <cstdlib>
extern "C" void handler_log(int level, const char *fmt, ...) {{
    va_list args;
    va_start(args, fmt);
    printf("log %d: ", level);
    vprintf(fmt, args);
    va_end(args);
    printf("\n");
}}
extern "C" void handler_exit(int code) {{ printf("exit %d\n", code); }}
void handler_assert(bool condition) {{ if (!condition) abort(); }}
int main() {{
    static {id}_properties_t graph;
    static global_properties_t properties;
    static global_state_t state;
    static empty_message_t message;
    bool send = true;
    ns_global::on_init(&graph, &properties, &state);
    ns_global::on_send_step(&graph, &properties, &state, &message, &send, nullptr);
    return 0;
}}
"#
    );
    compile_and_run(id, &program, &[])
}

/// `exit(STATUS)` evaluates its status once (`exit(i++)` ends with 0 and
/// the success marker, as in `op2 run`), and a status outside 0..=255 stops
/// the program with the fault `op2 run` reports, status 1 and the failure
/// marker, whatever the status's type.
#[test]
fn exit_evaluates_its_status_once_and_refuses_one_outside_a_byte() {
    let success = "log 0: _HANDLER_EXIT_SUCCESS_9be65737_";
    let fail = "log 0: _HANDLER_EXIT_FAIL_9be65737_";
    let outside = |shown: &str| {
        format!(
            "log 0: op2: exit status {shown} is outside 0..=255, the statuses a process can end with\nexit 1\n{fail}\n"
        )
    };
    let cases = [
        (
            "exit_once",
            "main {\n    int i = 0;\n    exit(i++);\n}\n",
            format!("exit 0\n{success}\n"),
        ),
        (
            "exit_three",
            "main {\n    ll n = 1;\n    exit(n + 2);\n}\n",
            format!("exit 3\n{fail}\n"),
        ),
        (
            "exit_high",
            "main {\n    int n = 300;\n    exit(n);\n}\n",
            outside("300"),
        ),
        (
            "exit_negative",
            "main {\n    ll n = -1;\n    exit(n);\n}\n",
            outside("-1"),
        ),
        (
            "exit_unsigned",
            "main {\n    uint n = 256u;\n    exit(n);\n}\n",
            outside("256"),
        ),
        (
            "exit_bool",
            "main {\n    bool b = true;\n    exit(b);\n}\n",
            format!("exit 1\n{fail}\n"),
        ),
    ];
    for (id, text, expected) in cases {
        assert_eq!(run_main(id, text), expected, "{text}");
    }
}
