//! The graph of a `fetch` (compilation.md, "A `fetch` on POETS"): the
//! linear fetch in windows. The invocation keeps its pins and its tree, but
//! `{inv}_begin` is a window's request `{first; last}` and `{inv}_end` one
//! item `{item; value[C]}`:
//!
//! - the controller asks for the items `[first, last)` of a window, at most
//!   [`FetchPlan::window`] of them, stores each item that arrives in its
//!   place in the global, and asks for the next window once it has them
//!   all, or continues `main` after the last;
//! - an aggregator forwards a request to its children only when the window
//!   meets its leaves' items `[item_lo, item_hi)`, and keeps its children's
//!   items in a buffer of W slots, sending them up one per send;
//! - a set device ignores a request that does not meet its own items,
//!   starts again (`{inv}_sent = 0`) at the first one that does (the
//!   window holding its first item), and sends its items of the window one
//!   per send.

use std::fmt::Write;

use op2_analysis::model::Program;

use crate::model::{
    CType, DeviceType, FetchPlan, InvocationPlan, Member, MessageRole, MessageType, Pin, PinRole,
};
use crate::names;

/// The request and item message types of a fetch: `{inv}_begin` and
/// `{inv}_end`.
pub(crate) fn message_types(plan: &InvocationPlan, fetch: &FetchPlan) -> [MessageType; 2] {
    [
        MessageType {
            id: names::begin(&plan.name),
            members: vec![
                Member::scalar(names::FIRST, CType::U32),
                Member::scalar(names::LAST, CType::U32),
            ],
            role: MessageRole::Begin(plan.id),
        },
        MessageType {
            id: names::end(&plan.name),
            members: vec![
                Member::scalar(names::ITEM, CType::U32),
                Member::array(names::VALUE, CType::of(fetch.scalar), fetch.components),
            ],
            role: MessageRole::End(plan.id),
        },
    ]
}

/// The element's first item, as C++.
fn first_item(fetch: &FetchPlan) -> String {
    if fetch.parts == 1 {
        format!("(uint32_t){}", index())
    } else {
        format!("(uint32_t){} * {}u", index(), fetch.parts)
    }
}

fn index() -> String {
    format!("deviceProperties->{}", names::INDEX_PROPERTY)
}

/// What a fetch adds to the device type of its dat's set: the state
/// `{inv}_sent` and `{inv}_last`, the request's input and the item's
/// output, and its part of `ReadyToSend`.
pub(crate) fn set_pins(
    program: &Program,
    plan: &InvocationPlan,
    fetch: &FetchPlan,
    state: &mut Vec<Member>,
    inputs: &mut Vec<Pin>,
    outputs: &mut Vec<Pin>,
    ready: &mut String,
) {
    let inv = plan.name.as_str();
    let sent = names::fetch_sent(inv);
    let last = names::fetch_last(inv);
    state.push(Member::scalar(sent.clone(), CType::U32));
    state.push(Member::scalar(last.clone(), CType::U32));
    let parts = fetch.parts;
    let first = first_item(fetch);
    // A request for a window that meets the element's items; the first
    // such of a fetch holds its first item and starts it again.
    let mut request = format!("uint32_t op2_first = {first};\n");
    let _ = writeln!(
        request,
        "if (message->{f} < op2_first + {parts}u && message->{l} > op2_first) {{\n    if (message->{f} <= op2_first) deviceState->{sent} = 0;\n    deviceState->{last} = message->{l};\n}}",
        f = names::FIRST,
        l = names::LAST,
    );
    let begin = names::begin(inv);
    inputs.push(Pin {
        name: begin.clone(),
        message_type: begin,
        role: PinRole::Begin(plan.id),
        handler: request,
    });
    let end = names::end(inv);
    let dat = names::dat_state(&program.dats[fetch.dat.index()].name);
    let (c, dim) = (fetch.components, fetch.dimension);
    let mut item = format!(
        "uint32_t op2_part = deviceState->{sent};\nmessage->{} = {first}{};\n",
        names::ITEM,
        if parts == 1 { "" } else { " + op2_part" }
    );
    if parts == 1 {
        let _ = writeln!(
            item,
            "for (uint32_t c = 0; c < {c}; c++) message->{v}[c] = deviceState->{dat}[c];",
            v = names::VALUE
        );
    } else {
        let _ = writeln!(
            item,
            "for (uint32_t c = 0; c < {c}; c++) message->{v}[c] = op2_part * {c}u + c < {dim}u ? deviceState->{dat}[op2_part * {c}u + c] : 0;",
            v = names::VALUE
        );
    }
    let _ = writeln!(item, "deviceState->{sent} = op2_part + 1;");
    let _ = writeln!(
        ready,
        "if (deviceState->{sent} < {parts}u && {first} + deviceState->{sent} < deviceState->{last}) *readyToSend |= RTS_FLAG_{end};"
    );
    outputs.push(Pin {
        name: end.clone(),
        message_type: end,
        role: PinRole::End(plan.id),
        handler: item,
    });
}

/// The controller's items of the fetch at `length` (`length_S` of the
/// dat's set), as C++.
fn items(program: &Program, plan: &InvocationPlan, fetch: &FetchPlan) -> String {
    let length = names::length_property(&program.sets[plan.set.index()].name);
    if fetch.parts == 1 {
        format!("(uint32_t)graphProperties->{length}[0]")
    } else {
        format!("(uint32_t)graphProperties->{length}[0] * {}u", fetch.parts)
    }
}

/// The controller's handlers of a fetch: the request of the next window
/// (`{inv}_begin`, sent when `begin_pending` is `position + 1`) and the
/// item (`{inv}_end`).
pub(crate) fn controller_handlers(
    program: &Program,
    plan: &InvocationPlan,
    fetch: &FetchPlan,
    position: usize,
    fan_limit: u32,
) -> (String, String) {
    let items = items(program, plan, fetch);
    let (first, last) = (names::FETCH_FIRST, names::FETCH_LAST);
    let mut begin =
        format!("uint32_t op2_items = {items};\nuint32_t op2_first = deviceState->{last};\n");
    if fan_limit == 0 {
        begin.push_str("uint32_t op2_last = op2_items;\n");
    } else {
        let window = FetchPlan::window(fan_limit);
        let _ = writeln!(
            begin,
            "uint32_t op2_last = op2_items - op2_first > {window}u ? op2_first + {window}u : op2_items;"
        );
    }
    let _ = writeln!(
        begin,
        "message->{f} = op2_first;\nmessage->{l} = op2_last;\ndeviceState->{first} = op2_first;\ndeviceState->{last} = op2_last;\ndeviceState->{pending} = 0;\ndeviceState->{count} = 0;\nif (op2_items == 0) deviceState->{running} = 1;",
        f = names::FIRST,
        l = names::LAST,
        pending = names::BEGIN_PENDING,
        count = names::END_COUNT,
        running = names::RUNNING,
    );
    let global = names::global_state(&program.globals[fetch.global.index()].name);
    let (c, dim, parts) = (fetch.components, fetch.dimension, fetch.parts);
    let mut end = format!("uint32_t op2_item = message->{};\n", names::ITEM);
    if parts == 1 {
        let _ = writeln!(
            end,
            "for (uint32_t c = 0; c < {c}; c++) deviceState->{global}[op2_item * {dim}u + c] = message->{v}[c];",
            v = names::VALUE
        );
    } else {
        let _ = writeln!(
            end,
            "uint32_t op2_at = op2_item / {parts}u * {dim}u + op2_item % {parts}u * {c}u;\nuint32_t op2_end = op2_item / {parts}u * {dim}u + {dim}u;\nfor (uint32_t c = 0; c < {c} && op2_at + c < op2_end; c++) deviceState->{global}[op2_at + c] = message->{v}[c];",
            v = names::VALUE
        );
    }
    let _ = writeln!(
        end,
        "deviceState->{count}++;\nif (deviceState->{count} == deviceState->{last} - deviceState->{first}) {{\n    deviceState->{count} = 0;\n    if (deviceState->{last} == {items}) {{\n        deviceState->{last} = 0;\n        deviceState->{running} = 1;\n    }} else {{\n        deviceState->{pending} = {};\n    }}\n}}",
        position + 1,
        count = names::END_COUNT,
        pending = names::BEGIN_PENDING,
        running = names::RUNNING,
    );
    (begin, end)
}

/// The aggregators of a fetch's tree: properties `item_lo` and `item_hi`,
/// a request to forward, and a buffer of W items.
pub(crate) fn tree_device(plan: &InvocationPlan, fetch: &FetchPlan, fan_limit: u32) -> DeviceType {
    let inv = plan.name.as_str();
    let window = FetchPlan::window(fan_limit);
    let c = fetch.components;
    let (f, l) = (names::FIRST, names::LAST);
    let (lo, hi) = (names::ITEM_LO, names::ITEM_HI);
    let (items, values, count) = (names::BUFFER_ITEM, names::BUFFER_VALUE, names::BUFFER_COUNT);
    let pending = names::BEGIN_PENDING;
    let state = vec![
        Member::scalar(f, CType::U32),
        Member::scalar(l, CType::U32),
        Member::scalar(pending, CType::U8),
        Member::array(items, CType::U32, window),
        // The window is at most MAX_FAN_LIMIT and `c` at most 52
        // (ITEM_BYTES), so the product never saturates.
        Member::array(values, CType::of(fetch.scalar), window.saturating_mul(c)),
        Member::scalar(count, CType::U32),
    ];
    let begin = format!(
        "if (message->{f} < deviceProperties->{hi} && message->{l} > deviceProperties->{lo}) {{\n    deviceState->{f} = message->{f};\n    deviceState->{l} = message->{l};\n    deviceState->{pending} = 1;\n}}\n"
    );
    let forward = format!(
        "message->{f} = deviceState->{f};\nmessage->{l} = deviceState->{l};\ndeviceState->{pending} = 0;\n"
    );
    // At most W items are in flight in the whole graph, so the buffer
    // cannot overflow; if it did, the generated code would be wrong.
    let device_type = names::tree_device_type(inv);
    let end = format!(
        "if (deviceState->{count} >= {window}u) {{\n    handler_log(0, \"op2: fault of the generated code: the item buffer of a {device_type} device overflowed\");\n    handler_exit(1);\n    handler_log(0, \"{fail}\");\n    return;\n}}\nuint32_t op2_slot = deviceState->{count};\ndeviceState->{items}[op2_slot] = message->{item};\nfor (uint32_t c = 0; c < {c}; c++) deviceState->{values}[op2_slot * {c}u + c] = message->{v}[c];\ndeviceState->{count} = op2_slot + 1;\n",
        fail = names::EXIT_FAIL_MARKER,
        item = names::ITEM,
        v = names::VALUE,
    );
    let end_forward = format!(
        "uint32_t op2_slot = deviceState->{count} - 1;\nmessage->{item} = deviceState->{items}[op2_slot];\nfor (uint32_t c = 0; c < {c}; c++) message->{v}[c] = deviceState->{values}[op2_slot * {c}u + c];\ndeviceState->{count} = op2_slot;\n",
        item = names::ITEM,
        v = names::VALUE,
    );
    let ready = format!(
        "if (deviceState->{pending}) *readyToSend |= RTS_FLAG_{};\nif (deviceState->{count} != 0) *readyToSend |= RTS_FLAG_{};\n",
        names::begin_forward(inv),
        names::end_forward(inv),
    );
    crate::build::aggregator_type(
        plan,
        vec![
            Member::scalar(lo, CType::U32),
            Member::scalar(hi, CType::U32),
        ],
        state,
        [begin, end, forward, end_forward],
        ready,
    )
}
