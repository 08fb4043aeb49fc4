//! Every name the generated graph uses, built in one place from
//! compilation.md §1–§6. Nothing else in the code generator formats a
//! generated identifier.

/// The device type of a set: `set_S`.
pub fn set_device_type(set: &str) -> String {
    format!("set_{set}")
}

/// The graph instance of graph type `G`: `G_instance`.
pub fn graph_instance(graph: &str) -> String {
    format!("{graph}_instance")
}

/// The device instance of element `i` of set `S`: `S_i`.
pub fn set_device(set: &str, index: usize) -> String {
    format!("{set}_{index}")
}

/// The controller's device type and instance id.
pub const GLOBAL_DEVICE: &str = "global";

/// State member of a dat: `dat_D`.
pub fn dat_state(dat: &str) -> String {
    format!("dat_{dat}")
}

/// State member of a mutable global (controller and landing pads): `global_G`.
pub fn global_state(global: &str) -> String {
    format!("global_{global}")
}

/// Graph property of a const: `global_C`.
pub fn const_property(name: &str) -> String {
    format!("global_{name}")
}

/// Graph property of a set's size: `length_S`.
pub fn length_property(set: &str) -> String {
    format!("length_{set}")
}

/// Input pin of set devices and output pin of the controller, and the
/// message type they carry: `{inv}_begin`.
pub fn begin(inv: &str) -> String {
    format!("{inv}_begin")
}

/// Output pin of set devices and input pin of the controller, and their
/// message type: `{inv}_end`.
pub fn end(inv: &str) -> String {
    format!("{inv}_end")
}

/// Output pin that sends a dat read indirectly: `{inv}_dat_{D}_read_send`.
pub fn read_send(inv: &str, dat: &str) -> String {
    format!("{inv}_dat_{dat}_read_send")
}

/// Input pin receiving indirect argument `i`: `{inv}_arg{i}_read_recv`.
pub fn read_recv(inv: &str, arg: usize) -> String {
    format!("{inv}_arg{arg}_read_recv")
}

/// Output pin that runs the kernel: `{inv}_execute`.
pub fn execute(inv: &str) -> String {
    format!("{inv}_execute")
}

/// Output pin that sends indirect argument `i` back: `{inv}_arg{i}_write_send`.
pub fn write_send(inv: &str, arg: usize) -> String {
    format!("{inv}_arg{arg}_write_send")
}

/// Input pin applying writes to a dat: `{inv}_dat_{D}_write_recv`.
pub fn write_recv(inv: &str, dat: &str) -> String {
    format!("{inv}_dat_{dat}_write_recv")
}

/// Landing pad of indirect argument `i`: `{inv}_arg{i}_buffer`.
pub fn arg_buffer(inv: &str, arg: usize) -> String {
    format!("{inv}_arg{arg}_buffer")
}

/// `{inv}_in_progress`
pub fn in_progress(inv: &str) -> String {
    format!("{inv}_in_progress")
}

/// `{inv}_read_send_mask`
pub fn read_send_mask(inv: &str) -> String {
    format!("{inv}_read_send_mask")
}

/// `{inv}_read_recv_count`
pub fn read_recv_count(inv: &str) -> String {
    format!("{inv}_read_recv_count")
}

/// `{inv}_write_send_mask`
pub fn write_send_mask(inv: &str) -> String {
    format!("{inv}_write_send_mask")
}

/// `{inv}_write_recv_count`
pub fn write_recv_count(inv: &str) -> String {
    format!("{inv}_write_recv_count")
}

/// Device property: `{inv}_read_recv_total`.
pub fn read_recv_total(inv: &str) -> String {
    format!("{inv}_read_recv_total")
}

/// Device property: `{inv}_write_recv_total`.
pub fn write_recv_total(inv: &str) -> String {
    format!("{inv}_write_recv_total")
}

/// State and message member of an `INFO` global `G`: `element_G`, the
/// element that set it.
pub fn info_element(global: &str) -> String {
    format!("element_{global}")
}

/// `element_G` when no element set `G`.
pub const NO_ELEMENT: u32 = u32::MAX;

/// Device property of a set's devices: the element's own index, which an
/// `idx` argument passes.
pub const INDEX_PROPERTY: &str = "index";

/// Device property: `{inv}_arg{i}_index`, the index of the element that
/// argument `idx[M[K]]` reaches, from the map.
pub fn index_property(inv: &str, arg: usize) -> String {
    format!("{inv}_arg{arg}_index")
}

/// Shared-code constant: `{inv}_{S}_read_send_mask_all`.
pub fn read_send_mask_all(inv: &str, set: &str) -> String {
    format!("{inv}_{set}_read_send_mask_all")
}

/// Shared-code constant: `{inv}_{S}_write_send_mask_all`.
pub fn write_send_mask_all(inv: &str, set: &str) -> String {
    format!("{inv}_{set}_write_send_mask_all")
}

/// Controller property: `{inv}_end_total`.
pub fn end_total(inv: &str) -> String {
    format!("{inv}_end_total")
}

/// Message type of a dat's values, for reads and writes: `dat_{D}`.
pub fn dat_message(dat: &str) -> String {
    format!("dat_{dat}")
}

/// Device type of the aggregators of invocation `{inv}`'s completion and
/// broadcast tree: `tree_{inv}`.
pub fn tree_device_type(inv: &str) -> String {
    format!("tree_{inv}")
}

/// Device instance of aggregator `i` of `{inv}`'s tree (numbered from the
/// top level down): `tree_{inv}_{i}`.
pub fn tree_device(inv: &str, index: usize) -> String {
    format!("tree_{inv}_{index}")
}

/// Aggregator output pin that passes `{inv}_begin` on to its children:
/// `{inv}_begin_forward`.
pub fn begin_forward(inv: &str) -> String {
    format!("{inv}_begin_forward")
}

/// Aggregator output pin that sends the combined `{inv}_end` to its
/// parent: `{inv}_end_forward`.
pub fn end_forward(inv: &str) -> String {
    format!("{inv}_end_forward")
}

/// Aggregator state: the partial reduction of global `G` over its
/// children: `partial_G`.
pub fn partial_state(global: &str) -> String {
    format!("partial_{global}")
}

/// The member of `dat_{D}` messages, and of begin/end messages per global.
pub const VALUE: &str = "value";

/// The empty message type of local steps.
pub const EMPTY_MESSAGE: &str = "empty";

/// The controller's output pin with no edges that runs `main` between
/// invocations.
pub const STEP_PIN: &str = "step";

/// Controller state: the program counter of `main`'s state machine.
pub const PROGRAM_COUNTER: &str = "pc";

/// Controller state: the text of the line `printf` left unfinished, NUL
/// terminated (programs whose `main` has a `printf`).
pub const LINE: &str = "line";

/// Controller state: the bytes in [`LINE`].
pub const LINE_LENGTH: &str = "line_length";

/// Controller state: 1 while `main` may run (not waiting for an invocation).
pub const RUNNING: &str = "running";

/// Controller state: 1 + the invocation whose begin is to be sent, else 0.
/// Aggregator state: 1 while the begin is to be forwarded.
pub const BEGIN_PENDING: &str = "begin_pending";

/// Controller and aggregator state: `{inv}_end` messages received for the
/// current invocation.
pub const END_COUNT: &str = "end_count";

/// Controller state of a local variable of `main`: `local_{name}` (with the
/// local's number when two locals share a name).
pub fn main_local(name: &str, id: u32, shared_name: bool) -> String {
    if shared_name {
        format!("local_{name}_{id}")
    } else {
        format!("local_{name}")
    }
}

/// The kernel parameter that carries a const the kernel reads by name:
/// `op2_const_{C}`, which no program name can shadow.
pub fn const_parameter(name: &str) -> String {
    format!("op2_const_{name}")
}

/// The simulators' marker for a successful end (poets-v4.md §4.7).
pub const EXIT_MARKER: &str = "_HANDLER_EXIT_SUCCESS_9be65737_";

/// The simulators' marker for a failed end (poets-v4.md §4.7): `exit` with
/// a status other than 0.
pub const EXIT_FAIL_MARKER: &str = "_HANDLER_EXIT_FAIL_9be65737_";

pub use op2_analysis::reserved::CPP_KEYWORDS;

/// Names of the language's built-in functions, which a local or parameter
/// may shadow in `.op2` but not in the C++ that also calls them.
const BUILTIN_FUNCTIONS: &[&str] = &[
    "sqrt", "fabs", "abs", "fmin", "fmax", "min", "max", "pow", "exp", "log", "log10", "sin",
    "cos", "tan", "asin", "acos", "atan", "atan2", "floor", "ceil", "round", "isnan", "isinf",
];

/// Names that are neither keywords nor built-ins but that a kernel's C++
/// cannot declare: `snprintf`, which a printing kernel calls unqualified (a
/// local of that name hides it); `errno`, a macro once `<cerrno>` is in;
/// and the macros g++ predefines (as `1`) in its default GNU modes, which GS
/// compiles with (poets-v4.md §3.1): `linux`, `unix`, and `i386` on 32-bit
/// x86. (`NULL` and the other capitals are macro-style names.)
const UNQUALIFIED_AND_PREDEFINED: &[&str] = &["snprintf", "errno", "linux", "unix", "i386"];

/// A name from the program as a C++ identifier. Names C++ would read
/// otherwise are prefixed with `op2_v_`: keywords, the generated code's own
/// names, built-in functions, the names of [`UNQUALIFIED_AND_PREDEFINED`],
/// names in the macro style of C headers (`M_PI`, `INFINITY`, `NULL`: all
/// capitals), and names that already start with `op2_` (so that no two
/// program names can meet after the prefix). Kernel names go through it too,
/// where the kernel is defined and where it is called.
pub fn cpp_identifier(name: &str) -> String {
    let macro_style = name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if CPP_KEYWORDS.contains(&name)
        || BUILTIN_FUNCTIONS.contains(&name)
        || UNQUALIFIED_AND_PREDEFINED.contains(&name)
        || macro_style
        || name.starts_with("op2_")
    {
        format!("op2_v_{name}")
    } else {
        name.to_owned()
    }
}

/// Member of a fetch's `{inv}_begin` (a window's request): its first item.
pub const FIRST: &str = "first";

/// Member of a fetch's `{inv}_begin`: the item after its last.
pub const LAST: &str = "last";

/// Member of a fetch's `{inv}_end`: the item's number; its values are
/// [`VALUE`].
pub const ITEM: &str = "item";

/// Set device state of a fetch: the items of the element sent, `{inv}_sent`.
pub fn fetch_sent(inv: &str) -> String {
    format!("{inv}_sent")
}

/// Set device state of a fetch: the item after the last of the window it
/// was asked for, `{inv}_last`.
pub fn fetch_last(inv: &str) -> String {
    format!("{inv}_last")
}

/// Controller state: the first item of the window a fetch asked for.
pub const FETCH_FIRST: &str = "fetch_first";

/// Controller state: the item after the last of that window, 0 between
/// fetches.
pub const FETCH_LAST: &str = "fetch_last";

/// Aggregator property of a fetch's tree: the first item of its leaves.
pub const ITEM_LO: &str = "item_lo";

/// Aggregator property of a fetch's tree: the item after the last of its
/// leaves.
pub const ITEM_HI: &str = "item_hi";

/// Aggregator state of a fetch's tree: the numbers of the buffered items
/// (the request to forward is kept as [`FIRST`] and [`LAST`]).
pub const BUFFER_ITEM: &str = "buffer_item";

/// Aggregator state of a fetch's tree: the values of the buffered items,
/// [`BUFFER_ITEM`]'s slot `i` at `i × components`.
pub const BUFFER_VALUE: &str = "buffer_value";

/// Aggregator state of a fetch's tree: the items in the buffer.
pub const BUFFER_COUNT: &str = "buffer_count";
