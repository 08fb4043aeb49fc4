//! Building the graph type of compilation.md from the analysis' semantic
//! model: invocation plans, message types, the device types of the sets
//! and of the controller, their state, pins and handlers, and the kernel
//! functions.

use std::fmt::Write;

use op2_analysis::Analysis;
use op2_analysis::hir::Var;
use op2_analysis::model::{ArgKind, DatId, GlobalId, InvocationId, KernelId, Program, SetId};
use op2_syntax::ast::{AccessMode, ScalarType};

use crate::controller;
use crate::cpp::{Printer, Spelling, double_literal, scalar_type};
use crate::model::{
    CType, Controller, DeviceKind, DevicePlan, DeviceType, GraphType, InvocationPlan, Member,
    MessageRole, MessageType, Pin, PinRole, Terminator,
};
use crate::names;

/// Helpers every kernel may use, in the graph's shared code.
const SHARED_HELPERS: &str = "#include <cmath>
#include <cstdint>

// Built-ins of the .op2 language that C's math library lacks or spells
// differently; generic so that they keep their argument type as in C.
template <typename T> inline T op2_min(T a, T b) { return a < b ? a : b; }
template <typename T> inline T op2_max(T a, T b) { return a > b ? a : b; }
template <typename T> inline T op2_abs(T a) { return a < 0 ? -a : a; }
template <typename T> inline bool op2_bool_post(T &x, int delta) {
    bool old = x;
    x = (bool)(x + delta);
    return old;
}
inline int32_t op2_isnan(double x) { return x != x; }
inline int32_t op2_isinf(double x) { return x == x && (x - x) != (x - x); }
";

/// Builds the graph type of an analysed program that has no errors.
pub fn graph_type(analysis: &Analysis, graph_id: &str) -> GraphType {
    let program = &analysis.program;
    let invocations = invocation_plans(program);
    let message_types = message_types(program, &invocations);
    let controller = program
        .main
        .as_deref()
        .map(controller::compile)
        .unwrap_or_default();
    let mut device_types = vec![controller_device(program, &invocations, &controller)];
    for (index, set) in program.sets.iter().enumerate() {
        let set_id = SetId(u32::try_from(index).unwrap_or(u32::MAX));
        if invocations
            .iter()
            .any(|i| i.involved_sets.contains(&set_id))
        {
            device_types.push(set_device(program, set_id, &set.name, &invocations));
        }
    }
    let mut properties = Vec::new();
    for c in &program.consts {
        properties.push(Member::array(
            names::const_property(&c.name),
            CType::of(c.ty.scalar),
            c.ty.dimension,
        ));
    }
    for set in &program.sets {
        properties.push(Member::array(
            names::length_property(&set.name),
            CType::I32,
            1,
        ));
    }
    let shared_code = shared_code(program, &invocations);
    // The graph's struct names are built from its id as the types' are from
    // theirs: a graph named like a type (a file `global.op2`) would clash.
    let mut id = graph_id.to_owned();
    while device_types.iter().any(|d| d.id == id) || message_types.iter().any(|m| m.id == id) {
        id.push_str("_graph");
    }
    GraphType {
        id,
        properties,
        shared_code,
        message_types,
        device_types,
        invocations,
        controller,
    }
}

fn invocation_plans(program: &Program) -> Vec<InvocationPlan> {
    let mut plans = Vec::new();
    for (index, invocation) in program.invocations.iter().enumerate() {
        let (Some(kernel), Some(set)) = (invocation.kernel, invocation.set) else {
            continue;
        };
        if invocation.args.iter().any(Option::is_none) {
            continue;
        }
        let mut involved = vec![set];
        let mut begin_globals = Vec::new();
        let mut end_globals = Vec::new();
        for (_, arg) in invocation.resolved_args() {
            match arg.kind {
                ArgKind::IndirectDat { dat, .. } => {
                    if let Some(target) = program.dats[dat.index()].set
                        && !involved.contains(&target)
                    {
                        involved.push(target);
                    }
                }
                ArgKind::Global(global) => {
                    if matches!(
                        arg.mode,
                        AccessMode::Read | AccessMode::Min | AccessMode::Max
                    ) && !begin_globals.contains(&global)
                    {
                        begin_globals.push(global);
                    }
                    if arg.mode.is_reduction() && !end_globals.iter().any(|(g, _)| *g == global) {
                        end_globals.push((global, arg.mode));
                    }
                }
                _ => {}
            }
        }
        involved[1..].sort();
        plans.push(InvocationPlan {
            id: InvocationId(u32::try_from(index).unwrap_or(u32::MAX)),
            name: invocation.name.clone(),
            kernel,
            set,
            involved_sets: involved,
            begin_globals,
            end_globals,
        });
    }
    plans
}

fn global_member(program: &Program, global: GlobalId) -> Member {
    let g = &program.globals[global.index()];
    Member::array(
        names::global_state(&g.name),
        CType::of(g.ty.scalar),
        g.ty.dimension,
    )
}

fn message_types(program: &Program, invocations: &[InvocationPlan]) -> Vec<MessageType> {
    let mut types = vec![MessageType {
        id: names::EMPTY_MESSAGE.into(),
        members: Vec::new(),
        role: MessageRole::Empty,
    }];
    let mut dats: Vec<DatId> = Vec::new();
    for plan in invocations {
        for (_, arg) in program.invocations[plan.id.index()].resolved_args() {
            if let ArgKind::IndirectDat { dat, .. } = arg.kind
                && !dats.contains(&dat)
            {
                dats.push(dat);
            }
        }
    }
    dats.sort();
    for dat in dats {
        let d = &program.dats[dat.index()];
        types.push(MessageType {
            id: names::dat_message(&d.name),
            members: vec![Member::array(
                names::VALUE,
                CType::of(d.ty.scalar),
                d.ty.dimension,
            )],
            role: MessageRole::Dat(dat),
        });
    }
    for plan in invocations {
        types.push(MessageType {
            id: names::begin(&plan.name),
            members: plan
                .begin_globals
                .iter()
                .map(|g| global_member(program, *g))
                .collect(),
            role: MessageRole::Begin(plan.id),
        });
        types.push(MessageType {
            id: names::end(&plan.name),
            members: plan
                .end_globals
                .iter()
                .map(|(g, _)| global_member(program, *g))
                .collect(),
            role: MessageRole::End(plan.id),
        });
    }
    types
}

/// The plan of one invocation on the devices of one set.
fn device_plan(program: &Program, plan: &InvocationPlan, set: SetId) -> DevicePlan {
    let iterates = plan.set == set;
    let mut device = DevicePlan {
        invocation: plan.id,
        name: plan.name.clone(),
        iterates,
        read_sends: Vec::new(),
        read_recvs: Vec::new(),
        write_sends: Vec::new(),
        write_recvs: Vec::new(),
    };
    for (index, arg) in program.invocations[plan.id.index()].resolved_args() {
        let ArgKind::IndirectDat { dat, .. } = arg.kind else {
            continue;
        };
        let reads = matches!(arg.mode, AccessMode::Read | AccessMode::Rw);
        let writes = matches!(
            arg.mode,
            AccessMode::Rw | AccessMode::Write | AccessMode::Inc
        );
        let on_this_set = program.dats[dat.index()].set == Some(set);
        if reads && on_this_set && !device.read_sends.contains(&dat) {
            device.read_sends.push(dat);
        }
        if reads && iterates {
            device.read_recvs.push(index);
        }
        if writes && iterates {
            device.write_sends.push(index);
        }
        if writes && on_this_set && !device.write_recvs.iter().any(|(d, _)| *d == dat) {
            device.write_recvs.push((dat, arg.mode == AccessMode::Inc));
        }
    }
    device
}

fn mask(bits: usize) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// The largest finite value of a type (`MIN`'s identity) or the lowest
/// (`MAX`'s), as a C++ literal (compilation.md §10: finite extremes).
fn identity(ty: ScalarType, mode: AccessMode) -> String {
    let lowest = mode == AccessMode::Max;
    match (ty, lowest) {
        (_, _) if mode == AccessMode::Inc => "0".into(),
        (ScalarType::Double, false) => double_literal(f64::MAX),
        (ScalarType::Double, true) => double_literal(f64::MIN),
        (ScalarType::Float, false) => format!("{:?}f", f32::MAX),
        (ScalarType::Float, true) => format!("{:?}f", f32::MIN),
        (ScalarType::Int, false) => i32::MAX.to_string(),
        (ScalarType::Int, true) => "(-2147483647 - 1)".into(),
        (ScalarType::Uint, false) => format!("{}u", u32::MAX),
        (ScalarType::Uint | ScalarType::Ull | ScalarType::Bool, true) => "0".into(),
        (ScalarType::Ll, false) => format!("{}LL", i64::MAX),
        (ScalarType::Ll, true) => "(-9223372036854775807LL - 1)".into(),
        (ScalarType::Ull, false) => format!("{}ULL", u64::MAX),
        (ScalarType::Bool, false) => "1".into(),
    }
}

/// `for` over the components of an array, as one line.
fn copy_loop(length: u32, statement: &str) -> String {
    if length == 1 {
        format!("{}\n", statement.replace("[c]", "[0]"))
    } else {
        format!("for (uint32_t c = 0; c < {length}; c++) {statement}\n")
    }
}

fn set_device(
    program: &Program,
    set: SetId,
    set_name: &str,
    invocations: &[InvocationPlan],
) -> DeviceType {
    let plans: Vec<DevicePlan> = invocations
        .iter()
        .filter(|p| p.involved_sets.contains(&set))
        .map(|p| device_plan(program, p, set))
        .collect();
    let mut properties = Vec::new();
    let mut state = Vec::new();
    for dat in program.dats.iter().filter(|d| d.set == Some(set)) {
        state.push(Member::array(
            names::dat_state(&dat.name),
            CType::of(dat.ty.scalar),
            dat.ty.dimension,
        ));
    }
    // One landing pad per global per set, for the invocations iterating it.
    let mut pads: Vec<GlobalId> = Vec::new();
    for plan in invocations.iter().filter(|p| p.set == set) {
        for (_, arg) in program.invocations[plan.id.index()].resolved_args() {
            if let ArgKind::Global(global) = arg.kind
                && !pads.contains(&global)
            {
                pads.push(global);
            }
        }
    }
    pads.sort();
    for global in &pads {
        state.push(global_member(program, *global));
    }
    let mut shared_code = String::new();
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut ready = String::new();
    for device in &plans {
        let inv = device.name.as_str();
        let invocation = &program.invocations[device.invocation.index()];
        let plan = invocations
            .iter()
            .find(|p| p.id == device.invocation)
            .expect("every device plan has an invocation plan");
        properties.push(Member::scalar(names::read_recv_total(inv), CType::U32));
        properties.push(Member::scalar(names::write_recv_total(inv), CType::U32));
        for arg in device.read_recvs.iter().chain(&device.write_sends) {
            let buffer = names::arg_buffer(inv, *arg);
            if state.iter().all(|m: &Member| m.name != buffer) {
                let ty = invocation.args[*arg]
                    .as_ref()
                    .map(|a| a.ty)
                    .expect("plans have resolved arguments");
                state.push(Member::array(buffer, CType::of(ty.scalar), ty.dimension));
            }
        }
        state.push(Member::scalar(names::in_progress(inv), CType::U8));
        state.push(Member::scalar(names::read_send_mask(inv), CType::U32));
        state.push(Member::scalar(names::read_recv_count(inv), CType::U32));
        state.push(Member::scalar(names::write_send_mask(inv), CType::U32));
        state.push(Member::scalar(names::write_recv_count(inv), CType::U32));
        let read_mask_all = names::read_send_mask_all(inv, set_name);
        let write_mask_all = names::write_send_mask_all(inv, set_name);
        let _ = writeln!(
            shared_code,
            "const uint32_t {read_mask_all} = {}u;",
            mask(device.read_sends.len())
        );
        let _ = writeln!(
            shared_code,
            "const uint32_t {write_mask_all} = {}u;",
            mask(device.write_sends.len())
        );

        // Step 1 of the lifecycle, on whichever message comes first.
        let first = format!(
            "if (!deviceState->{p}) {{\n    deviceState->{p} = 1;\n    deviceState->{m} = {read_mask_all};\n}}\n",
            p = names::in_progress(inv),
            m = names::read_send_mask(inv),
        );
        let read_count = names::read_recv_count(inv);
        let write_count = names::write_recv_count(inv);

        // Inputs: begin, indirect reads, indirect writes.
        let mut begin = first.clone();
        if device.iterates {
            for global in &plan.begin_globals {
                let member = global_member(program, *global);
                begin.push_str(&copy_loop(
                    member.components(),
                    &format!("deviceState->{0}[c] = message->{0}[c];", member.name),
                ));
            }
        }
        let _ = writeln!(begin, "deviceState->{read_count}++;");
        inputs.push(Pin {
            name: names::begin(inv),
            message_type: names::begin(inv),
            role: PinRole::Begin(device.invocation),
            handler: begin,
        });
        for arg in &device.read_recvs {
            let ArgKind::IndirectDat { dat, .. } = invocation.args[*arg]
                .as_ref()
                .map(|a| a.kind)
                .expect("resolved")
            else {
                continue;
            };
            let length = program.dats[dat.index()].ty.dimension;
            let mut handler = first.clone();
            handler.push_str(&copy_loop(
                length,
                &format!(
                    "deviceState->{}[c] = message->{}[c];",
                    names::arg_buffer(inv, *arg),
                    names::VALUE
                ),
            ));
            let _ = writeln!(handler, "deviceState->{read_count}++;");
            inputs.push(Pin {
                name: names::read_recv(inv, *arg),
                message_type: names::dat_message(&program.dats[dat.index()].name),
                role: PinRole::ArgReadRecv(device.invocation, *arg),
                handler,
            });
        }
        for (dat, add) in &device.write_recvs {
            let d = &program.dats[dat.index()];
            let op = if *add { "+=" } else { "=" };
            let mut handler = first.clone();
            handler.push_str(&copy_loop(
                d.ty.dimension,
                &format!(
                    "deviceState->{}[c] {op} message->{}[c];",
                    names::dat_state(&d.name),
                    names::VALUE
                ),
            ));
            let _ = writeln!(handler, "deviceState->{write_count}++;");
            inputs.push(Pin {
                name: names::write_recv(inv, &d.name),
                message_type: names::dat_message(&d.name),
                role: PinRole::DatWriteRecv {
                    invocation: device.invocation,
                    dat: *dat,
                    add: *add,
                },
                handler,
            });
        }

        // Outputs: read sends, execute, write sends, end.
        let _ = writeln!(ready, "if (deviceState->{}) {{", names::in_progress(inv));
        for (bit, dat) in device.read_sends.iter().enumerate() {
            let d = &program.dats[dat.index()];
            let pin = names::read_send(inv, &d.name);
            let mut handler = copy_loop(
                d.ty.dimension,
                &format!(
                    "message->{}[c] = deviceState->{}[c];",
                    names::VALUE,
                    names::dat_state(&d.name)
                ),
            );
            let _ = writeln!(
                handler,
                "deviceState->{} &= ~(1u << {bit});",
                names::read_send_mask(inv)
            );
            let _ = writeln!(
                ready,
                "    if (deviceState->{} & (1u << {bit})) *readyToSend |= RTS_FLAG_{pin};",
                names::read_send_mask(inv)
            );
            outputs.push(Pin {
                name: pin,
                message_type: names::dat_message(&d.name),
                role: PinRole::DatReadSend(device.invocation, *dat),
                handler,
            });
        }
        let execute = names::execute(inv);
        let mut handler = String::new();
        if device.iterates {
            for (index, arg) in invocation.resolved_args() {
                if arg.mode != AccessMode::Inc {
                    continue;
                }
                match arg.kind {
                    ArgKind::Global(global) => {
                        let member = global_member(program, global);
                        handler.push_str(&copy_loop(
                            member.components(),
                            &format!("deviceState->{}[c] = 0;", member.name),
                        ));
                    }
                    ArgKind::IndirectDat { .. } => {
                        handler.push_str(&copy_loop(
                            arg.ty.dimension,
                            &format!("deviceState->{}[c] = 0;", names::arg_buffer(inv, index)),
                        ));
                    }
                    _ => {}
                }
            }
            let kernel = &program.kernels[plan.kernel.index()];
            let mut call_args: Vec<String> = invocation
                .resolved_args()
                .map(|(index, arg)| match arg.kind {
                    ArgKind::DirectDat(dat) => format!(
                        "deviceState->{}",
                        names::dat_state(&program.dats[dat.index()].name)
                    ),
                    ArgKind::IndirectDat { .. } => {
                        format!("deviceState->{}", names::arg_buffer(inv, index))
                    }
                    ArgKind::Global(global) => format!(
                        "deviceState->{}",
                        names::global_state(&program.globals[global.index()].name)
                    ),
                    // Graph properties are const in the handlers: the kernel
                    // gets a copy, so that a parameter another invocation
                    // binds to writable data need not be const.
                    ArgKind::Const(_) | ArgKind::Len(_) => format!("op2_arg{index}"),
                })
                .collect();
            for (index, arg) in invocation.resolved_args() {
                let (source, ty, length) = match arg.kind {
                    ArgKind::Const(id) => {
                        let c = &program.consts[id.index()];
                        (names::const_property(&c.name), c.ty.scalar, c.ty.dimension)
                    }
                    ArgKind::Len(set) => (
                        names::length_property(&program.sets[set.index()].name),
                        ScalarType::Int,
                        1,
                    ),
                    _ => continue,
                };
                let _ = writeln!(
                    handler,
                    "{} op2_arg{index}[{length}];",
                    scalar_type_decl(ty)
                );
                handler.push_str(&copy_loop(
                    length,
                    &format!("op2_arg{index}[c] = graphProperties->{source}[c];"),
                ));
            }
            for id in &kernel.consts_used {
                call_args.push(format!(
                    "graphProperties->{}",
                    names::const_property(&program.consts[id.index()].name)
                ));
            }
            let _ = writeln!(
                handler,
                "{}({});",
                names::cpp_identifier(&kernel.name),
                call_args.join(", ")
            );
        }
        let _ = writeln!(handler, "deviceState->{read_count} = 0;");
        let _ = writeln!(handler, "deviceState->{write_count}++;");
        let _ = writeln!(
            handler,
            "deviceState->{} = {write_mask_all};",
            names::write_send_mask(inv)
        );
        let _ = writeln!(
            ready,
            "    if (deviceState->{read_count} == deviceProperties->{}) *readyToSend |= RTS_FLAG_{execute};",
            names::read_recv_total(inv)
        );
        outputs.push(Pin {
            name: execute,
            message_type: names::EMPTY_MESSAGE.into(),
            role: PinRole::Execute(device.invocation),
            handler,
        });
        for (bit, arg) in device.write_sends.iter().enumerate() {
            let ArgKind::IndirectDat { dat, .. } = invocation.args[*arg]
                .as_ref()
                .map(|a| a.kind)
                .expect("resolved")
            else {
                continue;
            };
            let d = &program.dats[dat.index()];
            let pin = names::write_send(inv, *arg);
            let mut handler = copy_loop(
                d.ty.dimension,
                &format!(
                    "message->{}[c] = deviceState->{}[c];",
                    names::VALUE,
                    names::arg_buffer(inv, *arg)
                ),
            );
            let _ = writeln!(
                handler,
                "deviceState->{} &= ~(1u << {bit});",
                names::write_send_mask(inv)
            );
            let _ = writeln!(
                ready,
                "    if (deviceState->{} & (1u << {bit})) *readyToSend |= RTS_FLAG_{pin};",
                names::write_send_mask(inv)
            );
            outputs.push(Pin {
                name: pin,
                message_type: names::dat_message(&d.name),
                role: PinRole::ArgWriteSend(device.invocation, *arg),
                handler,
            });
        }
        let end = names::end(inv);
        let mut handler = String::new();
        for (global, mode) in &plan.end_globals {
            let member = global_member(program, *global);
            let value = if device.iterates {
                format!("deviceState->{}[c]", member.name)
            } else {
                identity(program.globals[global.index()].ty.scalar, *mode)
            };
            handler.push_str(&copy_loop(
                member.components(),
                &format!("message->{}[c] = {value};", member.name),
            ));
        }
        let _ = writeln!(handler, "deviceState->{write_count} = 0;");
        let _ = writeln!(handler, "deviceState->{} = 0;", names::in_progress(inv));
        let _ = writeln!(
            ready,
            "    if (deviceState->{} == 0 && deviceState->{} == 0 && deviceState->{write_count} == deviceProperties->{}) *readyToSend |= RTS_FLAG_{end};",
            names::read_send_mask(inv),
            names::write_send_mask(inv),
            names::write_recv_total(inv)
        );
        ready.push_str("}\n");
        outputs.push(Pin {
            name: end.clone(),
            message_type: end,
            role: PinRole::End(device.invocation),
            handler,
        });
    }
    DeviceType {
        id: names::set_device_type(set_name),
        kind: DeviceKind::Set(set),
        properties,
        state,
        shared_code,
        inputs,
        outputs,
        ready_to_send: ready,
        on_init: String::new(),
        plans,
    }
}

/// How the controller spells the names of `main`.
struct ControllerSpelling<'a> {
    program: &'a Program,
    locals: &'a [String],
}

impl Spelling for ControllerSpelling<'_> {
    fn base(&self, var: Var) -> String {
        match var {
            Var::Local(id) => format!("deviceState->{}", self.locals[id.0 as usize]),
            Var::Global(id) => format!(
                "deviceState->{}",
                names::global_state(&self.program.globals[id.index()].name)
            ),
            Var::Const(id) => format!(
                "graphProperties->{}",
                names::const_property(&self.program.consts[id.index()].name)
            ),
            // `main` has no parameters.
            Var::Param(_) => "0".into(),
        }
    }

    fn stored_as_array(&self, var: Var) -> bool {
        matches!(var, Var::Global(_) | Var::Const(_))
    }

    fn length(&self, set: SetId) -> String {
        format!(
            "graphProperties->{}[0]",
            names::length_property(&self.program.sets[set.index()].name)
        )
    }
}

fn controller_device(
    program: &Program,
    invocations: &[InvocationPlan],
    controller: &Controller,
) -> DeviceType {
    let mut state: Vec<Member> = (0..program.globals.len())
        .map(|g| global_member(program, GlobalId(u32::try_from(g).unwrap_or(u32::MAX))))
        .collect();
    if let Some(main) = program.main.as_deref() {
        for (local, name) in main.locals.iter().zip(&controller.locals) {
            let ty = CType::of(local.ty);
            state.push(match local.dimension {
                Some(length) => Member::array(name.clone(), ty, length),
                None => Member::scalar(name.clone(), ty),
            });
        }
    }
    state.push(Member::scalar(names::PROGRAM_COUNTER, CType::U32));
    state.push(Member::scalar(names::RUNNING, CType::U8));
    state.push(Member::scalar(names::BEGIN_PENDING, CType::U32));
    state.push(Member::scalar(names::END_COUNT, CType::U32));
    let properties = invocations
        .iter()
        .map(|p| Member::scalar(names::end_total(&p.name), CType::U32))
        .collect();

    // The step handler: run blocks until a par_loop or the end.
    let spelling = ControllerSpelling {
        program,
        locals: &controller.locals,
    };
    let main_body = program.main.as_deref().cloned().unwrap_or_default();
    let mut printer = Printer {
        spelling: &spelling,
        out: String::new(),
        indent: 2,
    };
    let index_of = |id: InvocationId| invocations.iter().position(|p| p.id == id).unwrap_or(0);
    for (number, block) in controller.blocks.iter().enumerate() {
        printer.out.push_str(&format!("    case {number}: {{\n"));
        for stmt in &block.statements {
            printer.controller_stmt(&main_body, stmt, &controller.locals);
        }
        let text = match &block.terminator {
            Terminator::Goto(next) => {
                format!("deviceState->{} = {next};\nbreak;", names::PROGRAM_COUNTER)
            }
            Terminator::Branch {
                condition,
                then_block,
                else_block,
            } => format!(
                "deviceState->{} = {} ? {then_block} : {else_block};\nbreak;",
                names::PROGRAM_COUNTER,
                printer.expr(condition)
            ),
            Terminator::ParLoop { invocation, next } => format!(
                "deviceState->{pc} = {next};\ndeviceState->{running} = 0;\ndeviceState->{pending} = {};\nreturn;",
                index_of(*invocation) + 1,
                pc = names::PROGRAM_COUNTER,
                running = names::RUNNING,
                pending = names::BEGIN_PENDING,
            ),
            Terminator::Exit => format!(
                "deviceState->{} = 0;\nhandler_log(0, \"{}\");\nhandler_exit(0);\nreturn;",
                names::RUNNING,
                names::EXIT_MARKER
            ),
        };
        for line in text.lines() {
            printer.out.push_str(&format!("        {line}\n"));
        }
        printer.out.push_str("    }\n");
    }
    let step_handler = format!(
        "while (1) {{\n    switch (deviceState->{}) {{\n{}    default:\n        return;\n    }}\n}}\n",
        names::PROGRAM_COUNTER,
        printer.out
    );

    let mut outputs = vec![Pin {
        name: names::STEP_PIN.into(),
        message_type: names::EMPTY_MESSAGE.into(),
        role: PinRole::Step,
        handler: step_handler,
    }];
    let mut inputs = Vec::new();
    let mut ready = format!(
        "if (deviceState->{}) *readyToSend |= RTS_FLAG_{};\n",
        names::RUNNING,
        names::STEP_PIN
    );
    for (index, plan) in invocations.iter().enumerate() {
        let inv = plan.name.as_str();
        let mut begin = String::new();
        for global in &plan.begin_globals {
            let member = global_member(program, *global);
            begin.push_str(&copy_loop(
                member.components(),
                &format!("message->{0}[c] = deviceState->{0}[c];", member.name),
            ));
        }
        let _ = writeln!(begin, "deviceState->{} = 0;", names::BEGIN_PENDING);
        let _ = writeln!(begin, "deviceState->{} = 0;", names::END_COUNT);
        // An invocation over no devices at all completes at once.
        let _ = writeln!(
            begin,
            "if (deviceProperties->{} == 0) deviceState->{} = 1;",
            names::end_total(inv),
            names::RUNNING
        );
        let _ = writeln!(
            ready,
            "if (deviceState->{} == {}) *readyToSend |= RTS_FLAG_{};",
            names::BEGIN_PENDING,
            index + 1,
            names::begin(inv)
        );
        outputs.push(Pin {
            name: names::begin(inv),
            message_type: names::begin(inv),
            role: PinRole::ControllerBegin(plan.id),
            handler: begin,
        });
        let mut end = String::new();
        for (global, mode) in &plan.end_globals {
            let member = global_member(program, *global);
            let statement = match mode {
                AccessMode::Min => format!(
                    "if (message->{0}[c] < deviceState->{0}[c]) deviceState->{0}[c] = message->{0}[c];",
                    member.name
                ),
                AccessMode::Max => format!(
                    "if (message->{0}[c] > deviceState->{0}[c]) deviceState->{0}[c] = message->{0}[c];",
                    member.name
                ),
                _ => format!("deviceState->{0}[c] += message->{0}[c];", member.name),
            };
            end.push_str(&copy_loop(member.components(), &statement));
        }
        let _ = writeln!(end, "deviceState->{}++;", names::END_COUNT);
        let _ = writeln!(
            end,
            "if (deviceState->{count} == deviceProperties->{total}) {{\n    deviceState->{count} = 0;\n    deviceState->{running} = 1;\n}}",
            count = names::END_COUNT,
            total = names::end_total(inv),
            running = names::RUNNING
        );
        inputs.push(Pin {
            name: names::end(inv),
            message_type: names::end(inv),
            role: PinRole::ControllerEnd(plan.id),
            handler: end,
        });
    }
    DeviceType {
        id: names::GLOBAL_DEVICE.into(),
        kind: DeviceKind::Controller,
        properties,
        state,
        shared_code: String::new(),
        inputs,
        outputs,
        ready_to_send: ready,
        on_init: format!(
            "deviceState->{} = 0;\ndeviceState->{} = 1;\n",
            names::PROGRAM_COUNTER,
            names::RUNNING
        ),
        plans: Vec::new(),
    }
}

/// How a kernel function spells its names.
struct KernelSpelling<'a> {
    program: &'a Program,
    kernel: KernelId,
}

impl Spelling for KernelSpelling<'_> {
    fn base(&self, var: Var) -> String {
        let kernel = &self.program.kernels[self.kernel.index()];
        match var {
            Var::Param(k) => names::cpp_identifier(&kernel.params[k as usize].name),
            Var::Local(id) => names::cpp_identifier(&kernel.body.local(id).name),
            Var::Const(id) => names::const_parameter(&self.program.consts[id.index()].name),
            Var::Global(_) => "0".into(),
        }
    }

    fn stored_as_array(&self, var: Var) -> bool {
        matches!(var, Var::Param(_) | Var::Const(_))
    }

    fn length(&self, _set: SetId) -> String {
        "0".into()
    }
}

fn shared_code(program: &Program, invocations: &[InvocationPlan]) -> String {
    let mut out = String::from(SHARED_HELPERS);
    let mut kernels: Vec<KernelId> = invocations.iter().map(|p| p.kernel).collect();
    kernels.sort();
    kernels.dedup();
    for kernel_id in kernels {
        let kernel = &program.kernels[kernel_id.index()];
        // A parameter only ever bound to READ arguments is passed const
        // data (graph properties), so it must take a const pointer.
        let read_only = |k: usize| {
            invocations
                .iter()
                .filter(|p| p.kernel == kernel_id)
                .all(|p| {
                    program.invocations[p.id.index()]
                        .args
                        .get(k)
                        .and_then(Option::as_ref)
                        .is_none_or(|a| a.mode == AccessMode::Read)
                })
        };
        let mut params: Vec<String> = kernel
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let constness = if p.is_const || read_only(k) {
                    "const "
                } else {
                    ""
                };
                format!(
                    "{constness}{} *{}",
                    scalar_type_decl(p.ty),
                    names::cpp_identifier(&p.name)
                )
            })
            .collect();
        for id in &kernel.consts_used {
            let c = &program.consts[id.index()];
            params.push(format!(
                "const {} *{}",
                scalar_type_decl(c.ty.scalar),
                names::const_parameter(&c.name)
            ));
        }
        let _ = writeln!(
            out,
            "\n// kernel {}\ninline void {}({}) {{",
            kernel.name,
            names::cpp_identifier(&kernel.name),
            params.join(", ")
        );
        let spelling = KernelSpelling {
            program,
            kernel: kernel_id,
        };
        let mut printer = Printer {
            spelling: &spelling,
            out: String::new(),
            indent: 1,
        };
        for stmt in &kernel.body.statements {
            printer.kernel_stmt(&kernel.body, stmt);
        }
        out.push_str(&printer.out);
        out.push_str("}\n");
    }
    out
}

/// The declared type of stored data: `bool` is stored as `uint8_t`.
fn scalar_type_decl(ty: ScalarType) -> &'static str {
    if ty == ScalarType::Bool {
        CType::U8.name()
    } else {
        scalar_type(ty)
    }
}
