//! The host program from the first par_loop on, translated into `main`.
//! Statements are copied as written with edits: `op_par_loop` becomes
//! `par_loop`, `op_printf` becomes `print` (`printf` for part of a line),
//! `op_get_size` becomes `len`, `exit` and `return STATUS` become `exit`,
//! `op_fetch_data` a `fetch` of the dat into the global standing for its
//! host buffer, and a call of the application's own function its body
//! (inlined); timers, diagnostics and profiling are dropped with a note;
//! anything else outside the `.op2` subset is reported at its C location.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use tree_sitter::Node;

use crate::c::{self, Edits, Location, Source, op2_name, scalar_type, walk};
use crate::kernel::literal_problem;
use crate::report::{Kind, Report};

/// The most calls of the application's host functions inlined in one import
/// (every pass over the host code together).
pub const MAX_INLINED_CALLS: usize = 10_000;

/// The most text one pass of the host code's translation (there are two: a
/// scan and the translation) may take from elsewhere: the bodies of the
/// functions it inlines (each time it inlines one) and the expansions of
/// the object-like macros it names (each time it names one). A header may
/// define a macro up to a mebibyte long ([`crate::inline::EXPANSION_LIMIT`]),
/// and `main` may name it on every line: 20,000 uses of a 900 KB macro made
/// 18 GB of edits.
/// A program is at most 16 MiB (`op2_codegen::files::SOURCE_LIMIT`), and
/// the host code of a real application takes a few kilobytes from its
/// headers and functions.
pub const HOST_TEXT_LIMIT: usize = 4 << 20;

/// What the translation knows from the declarations and the capture.
///
/// The maps an inlined call's context shares with its caller's are behind
/// [`Rc`], so that inlining a call copies none of them (they hold every
/// object-like macro's expansion, up to 64 MiB, and every function; a copy
/// per call, up to [`MAX_INLINED_CALLS`] of them, was quadratic).
#[derive(Debug, Default, Clone)]
pub struct Context<'a> {
    /// Names declared with `op_decl_const`.
    pub consts: Rc<BTreeSet<String>>,
    /// C variables holding an `op_set`, `op_map` or `op_dat`.
    pub handles: Rc<BTreeSet<String>>,
    /// Object-like macros (`#define NITER 2`), expanded where named.
    pub objects: Rc<BTreeMap<String, String>>,
    /// For each kernel, the positions of its parameters bound to direct INC
    /// arguments that it reads or assigns: those arguments become RW.
    pub increments_read: BTreeMap<String, BTreeSet<usize>>,
    /// Host buffers the set-up declared dats with (known once captured):
    /// globals of the program, which `op_fetch_data` fills.
    pub buffers: Rc<BTreeMap<String, Buffer>>,
    /// Functions of the application that the host code may call, inlined
    /// at the call: their source, definition and template parameters.
    pub functions: Rc<BTreeMap<String, HostFunction<'a>>>,
    /// Locals of the host code that par_loops take as globals, with their
    /// `.op2` types: declared as globals, their declarations become
    /// assignments.
    pub hoisted: Rc<BTreeMap<String, String>>,
    /// Scalar host values captured where the set-up ended, as written.
    pub values: Rc<BTreeMap<String, String>>,
    /// The `.op2` type of each of those values.
    pub value_types: Rc<BTreeMap<String, String>>,
    /// The `.op2` name of the set of each dat, by its C variable (known
    /// once captured).
    pub dat_sets: Rc<BTreeMap<String, String>>,
    /// Host variables the host code assigns.
    pub assigned: Rc<BTreeSet<String>>,
    /// Inside an inlined function: its parameters' names in the caller.
    pub renames: BTreeMap<String, String>,
    /// Inside an inlined function: its template parameters' types.
    pub types: BTreeMap<String, String>,
    /// Inside an inlined function: what its `return VALUE;` assigns.
    pub result: Option<String>,
    /// Inside an inlined function: its return type in `.op2`'s spelling,
    /// to which its `return VALUE;` converts the value, as C does.
    pub result_type: Option<String>,
    /// How many inlined functions deep this is.
    pub depth: usize,
    /// How many calls have been inlined in all, shared by every level: the
    /// depth limit alone would let ten calls of ten calls … make 10^8 bodies.
    pub inlined: Rc<Cell<usize>>,
    /// The bytes counted against [`HOST_TEXT_LIMIT`] so far, shared by
    /// every level.
    pub host_text: Rc<Cell<usize>>,
    /// The local an inlined function's parameter becomes, by the name it
    /// is made from (the same at every call: found once, since a search
    /// past names a source spells with `_` after `_` is long).
    pub parameter_locals: Rc<std::cell::RefCell<BTreeMap<String, String>>>,
    /// Every name of the application's sources and of the macros they use
    /// ([`crate::inline::Helpers::words`]): a name made up must be none.
    pub words: Rc<crate::scope::Words>,
    /// Locals of these statements renamed (by [`translate`]) because a
    /// function inlined here would otherwise read them for a name of its
    /// own scope, or hide them.
    pub local_renames: BTreeMap<String, String>,
    /// Globals that `main` declares again before its first par_loop, whose
    /// values the capture cannot read (it reads `main`'s).
    pub shadowed: Rc<BTreeSet<String>>,
    /// Variables `main` declares before its first par_loop that hide a
    /// global a kernel or an inlined function reads, with the names they
    /// are renamed to wherever `main` names them (not inside the functions
    /// inlined there, which read the global).
    pub setup_renames: BTreeMap<String, String>,
    /// `main`'s locals renamed because the same name also means, elsewhere
    /// in the host code, a variable of the set-up or a global (C scopes
    /// them per block, `.op2`'s translation of `main` per function): the
    /// new name of each identifier (by its first byte in the main file)
    /// that declares or names one of them.
    pub block_renames: std::collections::HashMap<usize, String>,
    /// The names given with `as` to the par_loops that an optional
    /// argument's flag makes branch (one per combination of flags), shared
    /// by every level of inlining so that no two are alike. Made with
    /// [`Context::words`].
    pub invocation_names: Rc<std::cell::RefCell<crate::scope::Fresh>>,
    /// The translation unit of each of the application's own files that is
    /// one (the main file 0, the others in the order given), by path.
    pub unit_sources: Rc<BTreeMap<std::path::PathBuf, usize>>,
    /// The translation unit whose code this is: the main file's, or that of
    /// the file of the function inlined here (a header's function is its
    /// caller's).
    pub unit: usize,
    /// A kernel whose text in a translation unit differs from its first
    /// one's (a macro the unit defines otherwise), by its C name and the
    /// unit: the `.op2` kernel that unit's par_loops run.
    pub unit_kernels: Rc<BTreeMap<(String, usize), String>>,
}

/// A function the host code may call: its source, definition and template
/// parameters.
pub type HostFunction<'a> = (&'a Source, Node<'a>, Vec<String>);

/// A declaration of locals that become globals: the declaration, and each
/// variable with its initial value.
/// The number of elements of an array (`None` for a scalar).
type Hoist<'t, 's> = (Node<'t>, Vec<(&'s str, Option<Node<'t>>, Option<usize>)>);

/// A call of an application function, inlined once the walk has translated
/// its arguments.
struct Pending<'t> {
    /// The statement the call makes up, replaced.
    statement: Node<'t>,
    /// `T x = f(…)`: the type of `x`, declared before the inlined body.
    declare: Option<String>,
    /// The node naming what the result is assigned to.
    target: Option<Node<'t>>,
    /// The inlined body, translated.
    body: String,
    /// Scalar parameters: their local name, type, and argument.
    params: Vec<(String, String, Node<'t>)>,
}

/// A host buffer that holds a dat's values: `op_decl_dat(set, dim, "t",
/// BUFFER, …)`.
#[derive(Debug, Clone)]
pub struct Buffer {
    /// The dat's `.op2` name.
    pub dat: String,
    /// Its set's `.op2` name.
    pub set: String,
    /// Components per element.
    pub dim: usize,
    /// Elements × components.
    pub len: usize,
    /// The element type, in `.op2`.
    pub ty: String,
}

/// The translated host program.
#[derive(Debug, Default)]
pub struct Host {
    /// The statements of `main`, without braces.
    pub text: String,
    /// Names the statements read or write that they do not declare.
    pub referenced: BTreeSet<String>,
    /// Of those named as variables, where they are used.
    pub uses: BTreeMap<String, Uses>,
    /// Of those, the ones they assign.
    pub assigned: BTreeSet<String>,
    /// Names declared inside the statements.
    pub locals: BTreeSet<String>,
    /// Host variables passed to par_loops as globals, where first passed.
    pub globals: BTreeMap<String, Location>,
    /// Kernels the par_loops name, in order of first use.
    pub kernels: Vec<(String, Location)>,
    /// Their names, to look up (a search of `kernels` per par_loop was
    /// quadratic in the kernels).
    kernel_names: BTreeSet<String>,
    /// Host buffers `op_fetch_data` fills, translated to `fetch`.
    pub fetched: BTreeSet<String>,
    /// The scalar type (in `.op2`) of each local the statements declare.
    pub local_types: BTreeMap<String, String>,
    /// Locals of the host code passed to par_loops as globals: globals of
    /// the program (name → `.op2` type), their declarations assignments.
    pub hoisted: BTreeMap<String, String>,
    /// For each kernel, for each par_loop that runs it, each argument's
    /// mode (`None` for `idx` and `INFO`) and dimension (`None` when not an
    /// integer literal).
    pub kernel_args: BTreeMap<String, Vec<Vec<ArgUse>>>,
    /// For each kernel, the translation units whose par_loops run it.
    pub kernel_units: BTreeMap<String, BTreeSet<usize>>,
    /// Temporary dats (`op_decl_dat_temp`) the statements declare, each
    /// zeroed there by a par_loop of the kernel `op2_zero_NAME`.
    pub temporaries: BTreeSet<String>,
    /// Bytes of the `d[m[e]] MODE` arguments that vector-map arguments
    /// have become so far (see [`VECTOR_TEXT_LIMIT`]).
    vector_text: usize,
    /// Locals of the statements that a function inlined into them would
    /// read for a name of its own scope (a global), or would hide with a
    /// local of its own: [`translate`] renames them.
    hidden: BTreeSet<String>,
    /// Those locals, with their new names: the names the functions inlined
    /// read are the globals of the same names, not these locals.
    pub renamed: BTreeMap<String, String>,
}

/// Where the host code uses a variable.
#[derive(Debug, Clone)]
pub struct Uses {
    /// The first use the program makes: in `main`'s order, a call's
    /// arguments before the body of the function it inlines.
    pub first: Location,
    /// Every place in the sources that uses it, each once however many
    /// times the function it is in is inlined.
    pub places: BTreeSet<Location>,
}

impl Host {
    /// Records a use of `name` at `at`.
    fn note_use(&mut self, name: &str, at: Location) {
        match self.uses.get_mut(name) {
            Some(uses) => {
                uses.places.insert(at);
            }
            None => {
                self.uses.insert(
                    name.to_owned(),
                    Uses {
                        first: at.clone(),
                        places: BTreeSet::from([at]),
                    },
                );
            }
        }
    }
}

/// How a par_loop passes one argument to its kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArgUse {
    /// `READ`, `INC`, …; `None` for `idx` and `INFO`.
    pub mode: Option<&'static str>,
    /// The stated dimension, when an integer literal.
    pub dim: Option<usize>,
    /// Whether it is a dat passed directly (`-1, OP_ID`).
    pub direct: bool,
    /// For a vector-map argument (`-N, map`), its number of map entries `N`:
    /// the kernel gets `N` pointers, one per entry.
    pub entries: Option<usize>,
}

/// The most values (map entries × dimension) a vector-map argument may
/// carry: the kernel works on a local copy of them all, copied in and out
/// one by one.
pub const MAX_VECTOR_VALUES: usize = 1024;

/// The text all the vector-map arguments of an import's par_loops may
/// become together: each `d[m[e]] MODE` of one of up to 1024 entries, so
/// that an argument of about fifty bytes of C becomes about twenty
/// kilobytes, and a thousand par_loops of a hundred such arguments would
/// be gigabytes. As the kernels' staging (`inline::EXPANSION_LIMIT`).
pub const VECTOR_TEXT_LIMIT: usize = 1 << 20;

/// Whether a vector-map argument of `entries` map entries of a dat of
/// dimension `dim` copies at most [`MAX_VECTOR_VALUES`] values: the entries
/// are bounded on their own, since a dimension of 0 makes the product 0.
pub fn vector_fits(entries: usize, dim: usize) -> bool {
    entries <= MAX_VECTOR_VALUES && entries.saturating_mul(dim) <= MAX_VECTOR_VALUES
}

const DROPPED: &[(&str, &str)] = &[
    ("op_timers", "a timer"),
    ("op_timers_core", "a timer"),
    ("op_timing_output", "timing output"),
    ("op_timing2_output", "timing output"),
    ("op_diagnostic_output", "diagnostic output"),
    ("op_profile_start", "profiling"),
    ("op_profile_end", "profiling"),
    ("op_profile_enter", "profiling"),
    ("op_profile_exit", "profiling"),
    ("op_profile_output", "profiling output"),
    ("op_exit", "OP2's shutdown"),
    ("free", "freeing host memory"),
    ("op_free", "freeing host memory"),
];

const FILE_OUTPUT: &[&str] = &[
    "op_print_dat_to_txtfile",
    "op_print_dat_to_binfile",
    "op_write_hdf5",
    "op_dump_to_hdf5",
    "op_write_const_hdf5",
    "op_fetch_data_hdf5_file",
    "op_fetch_data_hdf5_file_path",
];

const FETCHES: &[&str] = &["op_fetch_data", "op_fetch_data_idx", "free", "op_free"];

/// Translates `statements` (the host code from the first par_loop to the
/// end of `main`, or the body of a function inlined into it).
///
/// Where a function inlined into them reads a name of its own scope (a
/// global `c1`) that they also declare as a local (`double c1 = 2.0;` in
/// `main`), or declares a local that would hide their variable it must
/// reach, that local of theirs is renamed (`c1_1`, a name no source uses)
/// and they are translated again, so that the inlined body reads what it
/// reads in C. (Names are not scoped more finely than the function: the
/// local is renamed wherever the function names it.)
pub fn translate(
    source: &Source,
    statements: &[Node<'_>],
    context: &Context<'_>,
    report: &mut Report,
) -> Host {
    let entries = report.entries.len();
    let inlined = context.inlined.get();
    let host_text = context.host_text.get();
    let invocation_names = context.invocation_names.borrow().clone();
    let mut host = translate_once(source, statements, context, report);
    // A local spelled in `.op2` as a name they read from outside (the
    // local `exit`, `exit_` in `.op2`, and a global `exit_`) is renamed
    // too.
    let read: BTreeSet<String> = host.referenced.iter().map(|n| op2_name(n)).collect();
    let spelled_alike: Vec<String> = host
        .locals
        .iter()
        .filter(|l| !context.hoisted.contains_key(*l) && read.contains(&op2_name(l)))
        .cloned()
        .collect();
    host.hidden.extend(spelled_alike);
    if host.hidden.is_empty() {
        return host;
    }
    let taken = host.referenced.iter().map(|n| op2_name(n)).collect();
    let mut fresh = crate::scope::Fresh::new(Rc::clone(&context.words), taken);
    let mut again = context.clone();
    for name in &host.hidden {
        again.local_renames.insert(name.clone(), fresh.rename(name));
    }
    report.entries.truncate(entries);
    context.inlined.set(inlined);
    context.host_text.set(host_text);
    *context.invocation_names.borrow_mut() = invocation_names;
    let mut host = translate_once(source, statements, &again, report);
    host.renamed = again.local_renames;
    host
}

/// [`translate`] with the locals' renames of `context`.
fn translate_once(
    source: &Source,
    statements: &[Node<'_>],
    context: &Context<'_>,
    report: &mut Report,
) -> Host {
    let mut host = Host::default();
    let (Some(first), Some(last)) = (statements.first(), statements.last()) else {
        return host;
    };
    let dead = dead_pointers(source, statements);
    let mut edits = Edits::default();
    let mut pending = Vec::new();
    let mut hoists: Vec<Hoist<'_, '_>> = Vec::new();
    let mut branches: Vec<Branch<'_>> = Vec::new();
    if context.depth == 0 {
        host.hoisted = (*context.hoisted).clone();
    }
    if context.depth > 0 {
        for statement in statements {
            if let Err(at) = shape_returns(*statement, &mut edits) {
                report.not_translated(
                    source.location(at),
                    "a `return` that is not where the function ends: op2 import inlines a function whose `return`s end its body or end an `if` that the rest of the body follows".to_owned(),
                    Some("restructure the function so that each `return` ends it"),
                );
            }
        }
    }
    let fail = |report: &mut Report, node: Node<'_>, message: String, help: Option<&str>| {
        report.not_translated(source.location(node), message, help);
    };
    // Locals first: names are not scoped more finely than `main` (but
    // see `Context::block_renames`).
    for statement in statements {
        walk(*statement, |node, _| {
            if node.kind() == "declaration" {
                for declarator in node.children_by_field_name("declarator", &mut node.walk()) {
                    if let Some((ident, _, _)) = c::declared_name(declarator) {
                        host.locals.insert(named(source, ident, context).to_owned());
                    }
                }
            }
            true
        });
    }
    for statement in statements {
        walk(*statement, |node, ancestors| {
            // Inside a par_loop that branches on its flags, only the flags
            // are host code (the rest was translated with the par_loop).
            if let Some(branch) = branches.last()
                && node != branch.call
                && branch.call.byte_range().contains(&node.start_byte())
            {
                let inside = |outer: Node<'_>, inner: Node<'_>| {
                    outer.start_byte() <= inner.start_byte() && inner.end_byte() <= outer.end_byte()
                };
                if !branch.flags.iter().any(|f| inside(*f, node)) {
                    return branch.flags.iter().any(|f| inside(node, *f));
                }
            }
            if !node.is_named() {
                return true;
            }
            let kind = node.kind();
            // The callee of a call is translated with the call.
            if matches!(kind, "qualified_identifier" | "template_function")
                && c::is_callee(node, ancestors)
            {
                return false;
            }
            if let Some(descend) = temporary_dat(source, node, &mut edits, &mut host, report) {
                return descend;
            }
            if kind == "type_identifier"
                && let Some(ty) = context.types.get(source.text(node))
            {
                edits.replace(node, ty.clone());
                return false;
            }
            match kind {
                "comment"
                | "number_literal"
                | "true"
                | "false"
                | "primitive_type"
                | "type_qualifier"
                | "compound_statement"
                | "expression_statement"
                | "assignment_expression"
                | "binary_expression"
                | "unary_expression"
                | "update_expression"
                | "parenthesized_expression"
                | "if_statement"
                | "else_clause"
                | "condition_clause"
                | "for_statement"
                | "while_statement"
                | "do_statement"
                | "break_statement"
                | "continue_statement"
                | "conditional_expression"
                | "cast_expression"
                | "type_descriptor"
                | "argument_list"
                | "subscript_expression"
                | "subscript_argument_list"
                | "initializer_list"
                | "array_declarator"
                | "init_declarator" => {
                    if kind == "number_literal"
                        && let Some(message) = literal_problem(source.text(node))
                    {
                        fail(report, node, message, None);
                    }
                    true
                }
                "sized_type_specifier" => {
                    match scalar_type(source.text(node)) {
                        Some(ty) => edits.replace(node, ty),
                        None => fail(
                            report,
                            node,
                            format!("type `{}` has no `.op2` counterpart", source.text(node)),
                            None,
                        ),
                    }
                    false
                }
                "declaration" => {
                    let declarators: Vec<Node<'_>> = node
                        .children_by_field_name("declarator", &mut node.walk())
                        .collect();
                    // Scalars, and arrays of one literal size (`double s[3]`).
                    let variable = |d: Node<'_>| -> Option<(&str, Option<usize>)> {
                        match d.kind() {
                            "identifier" => Some((named(source, d, context), None)),
                            "array_declarator" => {
                                let ident = d
                                    .child_by_field_name("declarator")
                                    .filter(|i| i.kind() == "identifier")?;
                                let size = d
                                    .child_by_field_name("size")
                                    .and_then(|n| source.text(n).parse().ok())?;
                                Some((named(source, ident, context), Some(size)))
                            }
                            _ => None,
                        }
                    };
                    let scalars: Vec<(&str, Option<Node<'_>>, Option<usize>)> = declarators
                        .iter()
                        .filter_map(|d| match d.kind() {
                            "init_declarator" => d
                                .child_by_field_name("declarator")
                                .and_then(variable)
                                .map(|(n, size)| (n, d.child_by_field_name("value"), size)),
                            _ => variable(*d).map(|(n, size)| (n, None, size)),
                        })
                        .collect();
                    if let Some(ty) = node
                        .child_by_field_name("type")
                        .and_then(|t| scalar_type(source.text(t)))
                    {
                        for (name, _, size) in &scalars {
                            let ty = match size {
                                Some(n) => format!("{ty}[{n}]"),
                                None => ty.to_owned(),
                            };
                            host.local_types.insert((*name).to_owned(), ty);
                        }
                    }
                    if scalars
                        .iter()
                        .any(|(n, _, _)| context.hoisted.contains_key(*n))
                    {
                        if scalars.len() != declarators.len()
                            || !scalars
                                .iter()
                                .all(|(n, _, _)| context.hoisted.contains_key(*n))
                        {
                            fail(
                                report,
                                node,
                                "a declaration of variables passed to par_loops together with others".to_owned(),
                                Some("declare the variables a par_loop takes on their own"),
                            );
                            return false;
                        }
                        hoists.push((node, scalars));
                        return true;
                    }
                    let pointer = node
                        .children_by_field_name("declarator", &mut node.walk())
                        .filter_map(c::declared_name)
                        .find(|(_, pointer, _)| *pointer);
                    if let Some((ident, _, _)) = pointer {
                        let name = named(source, ident, context);
                        if dead.contains(name) {
                            edits.replace(node, "");
                            report.add(
                                Kind::Dropped,
                                Some(source.location(node)),
                                format!("host buffer `{name}`, which nothing reads"),
                                None,
                            );
                        } else {
                            fail(
                                report,
                                node,
                                format!(
                                    "host pointer `{name}`, which is not the buffer of a dat: `.op2` has no pointers"
                                ),
                                Some(
                                    "reduce the values into a global in a par_loop and print that",
                                ),
                            );
                        }
                        return false;
                    }
                    true
                }
                "return_statement" if context.depth > 0 => {
                    // In an inlined function, whose `return`s end it
                    // (`shape_returns`): the value goes to the result.
                    match (c::named_children(node).first(), &context.result) {
                        (None, _) => edits.replace(node, ""),
                        // Converted to the function's return type, as C's
                        // `return` converts it (`int f(double v) { return
                        // v * 1.5; }` gives 4 for 3.0, not 4.5); not to
                        // `double`, which changes no value the assignment
                        // then converts.
                        (Some(value), Some(target)) => match &context.result_type {
                            Some(ty)
                                if ty != "double"
                                    && !(ty == "int"
                                        && source.text(*value).parse::<i32>().is_ok()) =>
                            {
                                edits.replace_range(
                                    node.start_byte(),
                                    value.start_byte(),
                                    format!("{target} = ({ty}) ("),
                                );
                                edits.replace_range(value.end_byte(), value.end_byte(), ")");
                            }
                            _ => edits.replace_range(
                                node.start_byte(),
                                value.start_byte(),
                                format!("{target} = "),
                            ),
                        },
                        (Some(value), None) => {
                            edits.replace_range(node.start_byte(), value.start_byte(), "")
                        }
                    }
                    true
                }
                "return_statement" => {
                    let value = c::named_children(node);
                    if value.is_empty() {
                        return true;
                    }
                    if value.len() == 1 && source.text(value[0]) == "0" {
                        // The last statement of `main`'s body: nothing
                        // follows it. Anywhere else (a time loop's early
                        // end) it ends the program: `.op2`'s `return;`.
                        let at_end = node.next_named_sibling().is_none()
                            && node.parent().is_some_and(|body| {
                                body.kind() == "compound_statement"
                                    && body
                                        .parent()
                                        .is_some_and(|f| f.kind() == "function_definition")
                            });
                        if at_end {
                            edits.replace(node, "");
                            report.add(
                                Kind::Dropped,
                                Some(source.location(node)),
                                "`return 0` at the end of `main`",
                                None,
                            );
                        } else {
                            edits.replace(node, "return;");
                        }
                        return false;
                    }
                    // `return STATUS;` in `main` is `exit(STATUS);`.
                    if let [status] = value.as_slice() {
                        edits.replace_range(node.start_byte(), status.start_byte(), "exit(");
                        edits.replace_range(status.end_byte(), status.end_byte(), ")");
                        return true;
                    }
                    false
                }
                "string_literal" | "concatenated_string" => {
                    let in_print = c::enclosing_call(source, ancestors)
                        .is_some_and(|name| name == "op_printf" || name == "printf");
                    match c::string_literal(source, node) {
                        Some(value) if in_print => edits.replace(node, format!("\"{value}\"")),
                        _ => fail(
                            report,
                            node,
                            "a string outside the format of `op_printf`".to_owned(),
                            None,
                        ),
                    }
                    false
                }
                "identifier" => {
                    let name = source.text(node);
                    if c::is_callee(node, ancestors) {
                        return false;
                    }
                    // `main`'s own variable where a global of its name
                    // exists, or a local of a block whose name means
                    // another variable elsewhere: by its new name.
                    let name = match context.block_renames.get(&node.start_byte()) {
                        Some(renamed) => {
                            edits.replace(node, renamed.clone());
                            renamed.as_str()
                        }
                        None => match context.setup_renames.get(name) {
                            Some(renamed) if !host.locals.contains(name) => {
                                edits.replace(node, renamed.clone());
                                renamed.as_str()
                            }
                            _ => name,
                        },
                    };
                    if let Some(renamed) = context.renames.get(name) {
                        edits.replace(node, op2_name(renamed));
                        if context.buffers.contains_key(renamed) {
                            host.referenced.insert(renamed.clone());
                        }
                        return false;
                    }
                    if !host.locals.contains(name)
                        && let Some(body) = context.objects.get(name)
                    {
                        if let Err(why) = spend_host_text(context, body.len()) {
                            fail(
                                report,
                                node,
                                format!("the macro `{name}` is not expanded: {why}"),
                                None,
                            );
                        } else {
                            crate::inline::expand_object(
                                &context.objects,
                                source,
                                node,
                                &mut edits,
                            );
                        }
                        return false;
                    }
                    if context.handles.contains(name) {
                        fail(
                            report,
                            node,
                            format!(
                                "`{name}` (an OP2 handle) used outside a par_loop or `op_get_size`"
                            ),
                            Some("`main` in `.op2` reaches mesh data only through par_loops"),
                        );
                        return false;
                    }
                    let renamed = match context.local_renames.get(name) {
                        Some(local) if host.locals.contains(name) => local.clone(),
                        _ => op2_name(name),
                    };
                    if renamed != name {
                        edits.replace(node, renamed);
                    }
                    if !host.locals.contains(name) {
                        host.referenced.insert(name.to_owned());
                        host.note_use(name, source.location(node));
                        let assigned = c::ancestor(ancestors, 0).is_some_and(|p| {
                            (p.kind() == "assignment_expression"
                                && p.child_by_field_name("left") == Some(node))
                                || p.kind() == "update_expression"
                        });
                        if assigned {
                            host.assigned.insert(name.to_owned());
                        }
                    }
                    false
                }
                "call_expression" => call(
                    source,
                    node,
                    ancestors,
                    context,
                    &dead,
                    &mut pending,
                    &mut branches,
                    &mut host,
                    &mut edits,
                    report,
                ),
                _ => {
                    fail(
                        report,
                        node,
                        format!(
                            "{} is not in the `main` subset of `.op2`",
                            kind.replace('_', " ")
                        ),
                        Some("rewrite it with the C subset of language.md §5 and §8"),
                    );
                    false
                }
            }
        });
    }
    for (declaration, variables) in hoists {
        let mut assignments = Vec::new();
        for (name, value, size) in variables {
            let name = op2_name(name);
            let Some(value) = value else { continue };
            let Some(size) = size else {
                assignments.push(format!(
                    "{name} = {};",
                    edits.apply(&source.text, value.byte_range())
                ));
                continue;
            };
            // An array: each value given, and zero for the rest, as C
            // initialises it.
            if value.kind() != "initializer_list" {
                fail(
                    report,
                    value,
                    format!(
                        "`{name}`, an array a par_loop takes, initialised with other than `{{…}}`"
                    ),
                    None,
                );
                continue;
            }
            let items = c::named_children(value);
            for (k, item) in items.iter().take(size).enumerate() {
                assignments.push(format!(
                    "{name}[{k}] = {};",
                    edits.apply(&source.text, item.byte_range())
                ));
            }
            if items.len() < size {
                assignments.push(format!(
                    "for (int {COUNTER} = {}; {COUNTER} < {size}; {COUNTER}++) {name}[{COUNTER}] = 0;",
                    items.len()
                ));
            }
        }
        edits.replace(declaration, assignments.join(" "));
    }
    for branch in branches {
        let conditions: Vec<String> = branch
            .flags
            .iter()
            .map(|flag| {
                let text = edits.apply(&source.text, flag.byte_range());
                if int_like(source, *flag, context, &host) {
                    text
                } else {
                    format!("(int) ({text})")
                }
            })
            .collect();
        edits.replace(branch.statement, branching(&conditions, &branch.variants));
    }
    for call in pending {
        let mut text = String::new();
        let target = call
            .target
            .map(|t| edits.apply(&source.text, t.byte_range()));
        if let (Some(ty), Some(target)) = (&call.declare, &target) {
            text.push_str(&format!("{ty} {target};\n"));
        }
        text.push_str("{\n");
        for (local, ty, arg) in &call.params {
            text.push_str(&format!(
                "{ty} {local} = {};\n",
                edits.apply(&source.text, arg.byte_range())
            ));
        }
        text.push_str(&call.body);
        text.push_str("\n}");
        edits.replace(call.statement, text);
    }
    host.text = edits.apply(&source.text, first.start_byte()..last.end_byte());
    if host.text.contains(COUNTER) {
        host.text = host
            .text
            .replace(COUNTER, &counter(&[&host.text, &source.text]));
    }
    host
}

/// A call in the host code; returns whether to look inside it.
#[allow(clippy::too_many_arguments)]
fn call<'t>(
    source: &Source,
    node: Node<'t>,
    ancestors: &[Node<'t>],
    context: &Context<'_>,
    dead: &BTreeSet<String>,
    pending: &mut Vec<Pending<'t>>,
    branches: &mut Vec<Branch<'t>>,
    host: &mut Host,
    edits: &mut Edits,
    report: &mut Report,
) -> bool {
    let name = c::called_name(source, node).unwrap_or_else(|| {
        node.child_by_field_name("function")
            .map_or("", |f| source.text(f))
    });
    let location = source.location(node);
    let args = c::call_arguments(node);
    let whole_statement = c::ancestor(ancestors, 0).filter(|p| p.kind() == "expression_statement");
    match name {
        "op_par_loop" => {
            match par_loop(source, node, &args, context, host, report) {
                Some(Loop::Plain(text)) => edits.replace(node, text),
                // Emitted once the walk has translated the flags, which it
                // walks into.
                Some(Loop::Branching { flags, variants }) => match whole_statement {
                    Some(statement) => {
                        branches.push(Branch {
                            statement,
                            call: node,
                            flags,
                            variants,
                        });
                        return true;
                    }
                    None => {
                        report.add(
                            Kind::NotTranslated,
                            Some(location),
                            "`op_par_loop` whose optional arguments' flags are not known at import, inside an expression: op2 import writes it as `if`/`else` statements".to_owned(),
                            Some("call `op_par_loop` as a statement of its own"),
                        );
                        edits.replace(node, "0");
                    }
                },
                // Left out (reported), so that the rest still parses.
                None => match whole_statement {
                    Some(statement) => edits.replace(
                        statement,
                        format!(
                            "/* op2 import: not translated, see the report: {} */",
                            source.text(statement).replace("*/", "* /")
                        ),
                    ),
                    None => edits.replace(node, "0"),
                },
            }
            false
        }
        "op_printf" | "printf" => {
            // A format that ends its line is `print`; one that writes part
            // of a line (or several lines and part of one) is `printf`,
            // which writes exactly what C's `printf` writes.
            let whole_lines = args
                .first()
                .and_then(|f| c::string_literal(source, *f))
                .is_some_and(|format| format.ends_with("\\n"));
            if let Some(function) = node.child_by_field_name("function") {
                edits.replace(function, if whole_lines { "print" } else { "printf" });
            }
            if let Some(format) = args.first().and_then(|f| c::string_literal(source, *f)) {
                c::narrow_printf_arguments(&format, &args, edits);
            }
            if args
                .first()
                .is_none_or(|f| c::string_literal(source, *f).is_none())
            {
                report.add(
                    Kind::NotTranslated,
                    Some(location),
                    format!("`{name}` without a literal format"),
                    None,
                );
                return false;
            }
            true
        }
        "op_get_size" => {
            match args.as_slice() {
                [set] if set.kind() == "identifier" => {
                    edits.replace(node, format!("len({})", op2_name(source.text(*set))));
                }
                _ => report.add(
                    Kind::NotTranslated,
                    Some(location),
                    "`op_get_size` of something other than a set variable",
                    None,
                ),
            }
            false
        }
        _ if c::builtin_call(node, name, edits) => true,
        // `exit(STATUS);` is the same statement in `.op2`: its status is
        // translated as any expression.
        "exit" if args.len() == 1 && whole_statement.is_some() => true,
        _ => {
            let dropped = DROPPED.iter().find(|(n, _)| *n == name);
            let file_output = FILE_OUTPUT.contains(&name);
            let dead_fetch = FETCHES.contains(&name)
                && args.iter().any(|a| {
                    let ident = if a.kind() == "identifier" {
                        Some(*a)
                    } else {
                        a.child_by_field_name("argument")
                    };
                    ident.is_some_and(|i| dead.contains(source.text(i)))
                });
            let buffer = whole_fetch(source, name, &args, context);
            if let (Some(statement), Some((buffer_name, buffer)), false) =
                (whole_statement, buffer, dead_fetch)
            {
                edits.replace(
                    statement,
                    format!("fetch {} into {};", buffer.dat, op2_name(buffer_name)),
                );
                host.fetched.insert(buffer_name.clone());
                report.add(
                    Kind::Translated,
                    Some(location),
                    format!(
                        "`{name}` into `{buffer_name}`: `fetch {} into {}` copies dat `{}` into the global `{buffer_name}`",
                        buffer.dat,
                        op2_name(buffer_name),
                        buffer.dat
                    ),
                    None,
                );
                return false;
            }
            let clock = context
                .functions
                .get(name)
                .and_then(|(fsource, function, _)| reads_clock(fsource, *function));
            if let (Some(statement), Some(clock)) = (whole_statement, clock) {
                edits.replace(statement, "");
                report.add(
                    Kind::Dropped,
                    Some(location),
                    format!("`{name}`, a timer (it returns nothing and reads the clock with `{clock}`), as OP2's `op_timers`: `op2 run` measures no time, so what the program prints from the times it measured means nothing"),
                    None,
                );
                return false;
            }
            match (whole_statement, dropped, file_output, dead_fetch) {
                (Some(statement), Some((_, what)), _, _) => {
                    edits.replace(statement, "");
                    report.add(
                        Kind::Dropped,
                        Some(location),
                        format!("`{name}` ({what})"),
                        None,
                    );
                }
                (Some(statement), None, true, _) => {
                    edits.replace(statement, "");
                    report.add(
                        Kind::Dropped,
                        Some(location),
                        format!("`{name}`: the file it writes is not written by `op2 run`"),
                        Some(
                            "`op2 run --final-state FILE` writes every dat's final values (OP2's HDF5 layout for `.h5`, JSON otherwise)",
                        ),
                    );
                }
                (Some(statement), None, false, true) => {
                    edits.replace(statement, "");
                    report.add(
                        Kind::Dropped,
                        Some(location),
                        format!("`{name}` into a host buffer that nothing reads"),
                        None,
                    );
                }
                _ if callee_and_types(source, node)
                    .is_some_and(|(f, _)| context.functions.contains_key(f)) =>
                {
                    // Inlined: its arguments are translated as any code.
                    return inline(source, node, ancestors, context, host, pending, report);
                }
                _ => {
                    let help = match name {
                        "op_fetch_data" | "op_fetch_data_idx" => {
                            "`op_fetch_data(DAT, BUFFER)` and `op_fetch_data_idx(DAT, BUFFER, 0, op_get_size(SET) - 1)` are translated when BUFFER is the host array DAT was declared with (`op_decl_dat(…, BUFFER, …)`); fetch the whole dat into that one, or reduce into a global"
                        }
                        "exit" => "call `exit(STATUS);` as a statement of its own",
                        "abort" => "end `main` with `exit(1);`",
                        _ => "`main` may call only the math built-ins; inline the function",
                    };
                    report.add(
                        Kind::NotTranslated,
                        Some(location),
                        format!("call to `{name}` in the host code"),
                        Some(help),
                    );
                }
            }
            false
        }
    }
}

/// The name a call calls and its explicit template arguments
/// (`check_result<float>(…)`).
fn callee_and_types<'s>(source: &'s Source, call: Node<'_>) -> Option<(&'s str, Vec<&'s str>)> {
    let function = call.child_by_field_name("function")?;
    match function.kind() {
        "identifier" => Some((source.text(function), Vec::new())),
        "template_function" => Some((
            source.text(function.child_by_field_name("name")?),
            function
                .child_by_field_name("arguments")
                .map(c::named_children)
                .unwrap_or_default()
                .into_iter()
                .map(|a| source.text(a))
                .collect(),
        )),
        _ => None,
    }
}

/// `.op2`'s name for a C type in an inlined function: a template
/// parameter's type, or a scalar type.
fn concrete_type(text: &str, types: &BTreeMap<String, String>) -> Option<String> {
    types
        .get(text.trim())
        .cloned()
        .or_else(|| scalar_type(text).map(str::to_owned))
}

/// Inlines a call of a function of the application (in the main file or a
/// header it includes) that makes up a statement: `f(…);`, `x = f(…);` or
/// `T x = f(…);`. Its body is translated as host code with its parameters
/// as locals of a block (a pointer parameter names the caller's buffer), its
/// template parameters as the types the call gives or its casts show, and
/// its `return VALUE;` assigning the result. Returns whether it was inlined
/// (else it is reported).
fn inline<'t>(
    source: &Source,
    call: Node<'t>,
    ancestors: &[Node<'t>],
    context: &Context<'_>,
    host: &mut Host,
    pending: &mut Vec<Pending<'t>>,
    report: &mut Report,
) -> bool {
    let Some((name, explicit)) = callee_and_types(source, call) else {
        return false;
    };
    let Some((fsource, function, tparams)) = context.functions.get(name) else {
        return false;
    };
    let fail = |report: &mut Report, message: String| {
        report.not_translated(
            source.location(call),
            format!("call to `{name}`, which op2 import cannot inline: {message}"),
            Some("inline the function by hand"),
        );
        false
    };
    if context.depth >= 8 {
        return fail(
            report,
            "calls nest more than eight deep (recursion?)".to_owned(),
        );
    }
    if context.inlined.get() >= MAX_INLINED_CALLS {
        return fail(
            report,
            format!("more than {MAX_INLINED_CALLS} calls are inlined in all"),
        );
    }
    context.inlined.set(context.inlined.get() + 1);
    let parent = c::ancestor(ancestors, 0);
    let grandparent = c::ancestor(ancestors, 1);
    let (statement, target, declare) = match (parent, grandparent) {
        (Some(p), _) if p.kind() == "expression_statement" => (p, None, None),
        (Some(p), Some(g))
            if p.kind() == "assignment_expression"
                && g.kind() == "expression_statement"
                && p.child_by_field_name("right") == Some(call)
                && p
                    .child_by_field_name("operator")
                    .is_some_and(|o| source.text(o) == "=") =>
        {
            (g, p.child_by_field_name("left"), None)
        }
        (Some(p), Some(g))
            if p.kind() == "init_declarator"
                && g.kind() == "declaration"
                // Whether it is the declaration's only declarator, looking
                // no further than a second: counting them all, per call,
                // made `double a = f(x), b = f(y), …` quadratic.
                && g.children_by_field_name("declarator", &mut g.walk()).take(2).count() == 1 =>
        {
            let ty = g
                .child_by_field_name("type")
                .and_then(|t| concrete_type(source.text(t), &context.types));
            match (ty, p.child_by_field_name("declarator")) {
                (Some(ty), Some(d)) if d.kind() == "identifier" => (g, Some(d), Some(ty)),
                _ => return fail(report, "the variable it initialises is not a scalar".to_owned()),
            }
        }
        (Some(p), Some(g))
            if p.kind() == "init_declarator"
                && g.kind() == "declaration"
                && p.child_by_field_name("value") == Some(call) =>
        {
            // One of several declarators: the variable is named, not counted
            // (counting per call would be quadratic in the declarators).
            let variable = p
                .child_by_field_name("declarator")
                .map_or("the variable", |d| source.text(d));
            report.not_translated(
                source.location(p),
                format!(
                    "call to `{name}`, which op2 import cannot inline: it initialises `{variable}`, one of several variables this declaration declares; op2 import inlines a call whose result initialises a declaration's only variable (`T x = f(…);`)"
                ),
                Some(&format!("declare `{variable}` in a declaration of its own")),
            );
            return false;
        }
        _ => return fail(report, "it is called inside an expression; op2 import inlines calls that make up a statement (`f(…);`, `x = f(…);`, `T x = f(…);`)".to_owned()),
    };
    let declarator = function.child_by_field_name("declarator");
    let params = declarator
        .and_then(|d| d.child_by_field_name("parameters"))
        .map(c::named_children)
        .unwrap_or_default();
    let args = c::call_arguments(call);
    if params.len() != args.len() {
        return fail(
            report,
            format!(
                "it takes {} and is given {}",
                crate::inline::arguments(params.len()),
                args.len()
            ),
        );
    }
    let mut types: BTreeMap<String, String> = tparams
        .iter()
        .cloned()
        .zip(
            explicit
                .iter()
                .filter_map(|t| concrete_type(t, &context.types)),
        )
        .collect();
    // Deduced from arguments whose type shows: casts.
    for (param, arg) in params.iter().zip(&args) {
        if let Some(ty) = param.child_by_field_name("type").map(|t| fsource.text(t))
            && tparams.iter().any(|p| p == ty)
            && !types.contains_key(ty)
            && arg.kind() == "cast_expression"
            && let Some(cast) = arg
                .child_by_field_name("type")
                .and_then(|t| concrete_type(source.text(t), &context.types))
        {
            types.insert(ty.to_owned(), cast);
        }
    }
    if let Some(unknown) = tparams.iter().find(|p| !types.contains_key(*p)) {
        return fail(
            report,
            format!(
                "its template parameter `{unknown}` is not given, nor shown by a cast argument"
            ),
        );
    }
    let mut renames = BTreeMap::new();
    let mut locals = Vec::new();
    for (param, arg) in params.iter().zip(&args) {
        let Some((ident, pointer, arrays)) = param
            .child_by_field_name("declarator")
            .and_then(c::declared_name)
        else {
            return fail(report, "a parameter without a name".to_owned());
        };
        let pname = fsource.text(ident).to_owned();
        if pointer || arrays > 0 {
            // The caller's buffer itself.
            let Some(buffer) = (arg.kind() == "identifier").then(|| source.text(*arg)) else {
                return fail(
                    report,
                    format!("pointer parameter `{pname}` is not given a variable"),
                );
            };
            renames.insert(pname, caller_name(context, host, buffer));
            continue;
        }
        let Some(ty) = param
            .child_by_field_name("type")
            .and_then(|t| concrete_type(fsource.text(t), &types))
        else {
            return fail(
                report,
                format!("parameter `{pname}` is not of a scalar type"),
            );
        };
        // `s_show1`, with `_` appended while a source uses the name.
        let base = format!("{pname}_{name}{}", context.depth + 1);
        let local = context
            .parameter_locals
            .borrow_mut()
            .entry(base)
            .or_insert_with_key(|base| {
                crate::scope::Fresh::new(Rc::clone(&context.words), BTreeSet::new())
                    .claim(&format!("parameter {base}"), |attempt| {
                        vec![format!("{base}{}", "_".repeat(attempt))]
                    })
                    .remove(0)
            })
            .clone();
        renames.insert(pname, local.clone());
        locals.push((local, ty, *arg));
    }
    let Some(body) = function.child_by_field_name("body") else {
        return fail(report, "it has no body".to_owned());
    };
    if let Err(why) = spend_host_text(context, body.byte_range().len()) {
        return fail(report, why);
    }
    let result = target.map(|t| op2_name(&caller_name(context, host, source.text(t))));
    let result_type = function
        .child_by_field_name("type")
        .and_then(|t| concrete_type(fsource.text(t), &types));
    let inner = Context {
        consts: Rc::clone(&context.consts),
        handles: Rc::clone(&context.handles),
        objects: Rc::clone(&context.objects),
        increments_read: BTreeMap::new(),
        buffers: Rc::clone(&context.buffers),
        functions: Rc::clone(&context.functions),
        values: Rc::clone(&context.values),
        value_types: Rc::clone(&context.value_types),
        dat_sets: Rc::clone(&context.dat_sets),
        assigned: Rc::clone(&context.assigned),
        hoisted: Rc::clone(&context.hoisted),
        renames,
        types,
        result,
        result_type,
        depth: context.depth + 1,
        inlined: Rc::clone(&context.inlined),
        host_text: Rc::clone(&context.host_text),
        parameter_locals: Rc::clone(&context.parameter_locals),
        invocation_names: Rc::clone(&context.invocation_names),
        unit: context
            .unit_sources
            .get(&fsource.path)
            .copied()
            .unwrap_or(context.unit),
        unit_sources: Rc::clone(&context.unit_sources),
        unit_kernels: Rc::clone(&context.unit_kernels),
        words: Rc::clone(&context.words),
        local_renames: BTreeMap::new(),
        shadowed: Rc::clone(&context.shadowed),
        setup_renames: BTreeMap::new(),
        block_renames: std::collections::HashMap::new(),
    };
    let translated = translate(fsource, &[body], &inner, report);
    // A global it reads that `main` declares again before the first
    // par_loop: the capture has `main`'s value for the name.
    if let Some(global) = translated
        .referenced
        .iter()
        .find(|n| context.shadowed.contains(*n) && !inner.renames.values().any(|r| r == *n))
    {
        return fail(
            report,
            format!(
                "it reads the global `{global}`, and `main` declares a `{global}` of its own before its first par_loop, whose value the capture, made in `main`, would take instead"
            ),
        );
    }
    // A local of the function would hide the caller's variable that its
    // result or a pointer parameter names: the caller's local is renamed
    // (by `translate`), any other is reported.
    let renamable = |n: &str| host.locals.contains(n) && !context.hoisted.contains_key(n);
    for hidden in inner
        .result
        .iter()
        .chain(inner.renames.values())
        .filter(|n| translated.locals.contains(*n))
    {
        if !renamable(hidden) {
            return fail(
                report,
                format!(
                    "it declares a local `{hidden}`, which would hide the caller's `{hidden}` it must reach"
                ),
            );
        }
        host.hidden.insert(hidden.clone());
    }
    // A name of the function's own scope (a global) that the caller also
    // declares would read the caller's variable once inlined: the same.
    // The caller's locals by their `.op2` spelling, the first of each, made
    // once (a search of the locals per name read was quadratic).
    let arguments: BTreeSet<&String> = inner.renames.values().collect();
    let mut spelled_locals: Option<BTreeMap<String, String>> = None;
    for captured in translated
        .referenced
        .iter()
        .filter(|n| !arguments.contains(n))
    {
        let spelled_locals = spelled_locals.get_or_insert_with(|| {
            let mut by_spelling = BTreeMap::new();
            for local in &host.locals {
                by_spelling
                    .entry(op2_name(&caller_name(context, host, local)))
                    .or_insert_with(|| local.clone());
            }
            by_spelling
        });
        let Some(local) = spelled_locals.get(&op2_name(captured)).cloned() else {
            continue;
        };
        if !renamable(&local) {
            return fail(
                report,
                format!(
                    "it reads `{captured}` from outside it, and the caller declares a `{captured}` of its own, which the inlined body would read instead"
                ),
            );
        }
        host.hidden.insert(local);
    }
    host.referenced.extend(translated.referenced);
    // The arguments are evaluated before the body runs: their uses come
    // first (the walk of the caller reaches them after this call).
    for arg in &args {
        walk(*arg, |node, ancestors| {
            let name = source.text(node);
            if node.kind() == "identifier"
                && !c::is_callee(node, ancestors)
                && !context.renames.contains_key(name)
                && !context.handles.contains(name)
                && !context.objects.contains_key(name)
                && !host.locals.contains(name)
            {
                host.note_use(name, source.location(node));
            }
            true
        });
    }
    for (name, uses) in translated.uses {
        host.note_use(&name, uses.first);
        if let Some(known) = host.uses.get_mut(&name) {
            known.places.extend(uses.places);
        }
    }
    host.assigned.extend(translated.assigned);
    host.fetched.extend(translated.fetched);
    for (kernel, at) in translated.kernels {
        if host.kernel_names.insert(kernel.clone()) {
            host.kernels.push((kernel, at));
        }
    }
    for (kernel, units) in translated.kernel_units {
        host.kernel_units.entry(kernel).or_default().extend(units);
    }
    for (kernel, loops) in translated.kernel_args {
        host.kernel_args.entry(kernel).or_default().extend(loops);
    }
    for (global, at) in translated.globals {
        host.globals.entry(global).or_insert(at);
    }
    pending.push(Pending {
        statement,
        declare,
        target,
        body: translated.text,
        params: locals,
    });
    report.add(
        Kind::Translated,
        Some(source.location(call)),
        format!("call to `{name}`, inlined"),
        None,
    );
    true
}

/// Counts `bytes` of text taken into the host code against
/// [`HOST_TEXT_LIMIT`]; why not, once it is spent.
fn spend_host_text(context: &Context<'_>, bytes: usize) -> Result<(), String> {
    let spent = context.host_text.get().saturating_add(bytes);
    if spent > HOST_TEXT_LIMIT {
        return Err(format!(
            "the functions inlined and the macros expanded into the host code come to more than {} MiB of text",
            HOST_TEXT_LIMIT >> 20
        ));
    }
    context.host_text.set(spent);
    Ok(())
}

/// What the caller's variable `name` (in the statements of `host`,
/// translated with `context`) is called: a parameter of the function being
/// inlined stands for its argument, a renamed local for its new name, any
/// other as C names it (`.op2` spells it with [`op2_name`]).
fn caller_name(context: &Context<'_>, host: &Host, name: &str) -> String {
    match context.renames.get(name) {
        Some(renamed) => renamed.clone(),
        None => match context.local_renames.get(name) {
            Some(local) if host.locals.contains(name) => local.clone(),
            _ => name.to_owned(),
        },
    }
}

/// Checks that every `return` inside `node` ends the function: it is the
/// last statement of the body, or the last of an `if` (without `else`)
/// whose following statements then become its `else` (`if (c) { …; return
/// 1; } return 0;` is `if (c) { …; return 1; } else { return 0; }`). The
/// `else` braces are added to `edits`. Returns the first `return` elsewhere.
fn shape_returns<'t>(node: Node<'t>, edits: &mut Edits) -> Result<(), Node<'t>> {
    // The first `return` inside each node that holds one (by node id),
    // from one walk: each `return` marks its ancestors up to the first that
    // an earlier one marked. Walking a statement for its `return`s each
    // time it was checked made an `else if` chain quadratic.
    let mut first_returns: BTreeMap<usize, Node<'t>> = BTreeMap::new();
    walk(node, |m, ancestors| {
        if m.kind() == "return_statement" {
            for holder in std::iter::once(&m).chain(ancestors.iter().rev()) {
                if first_returns.contains_key(&holder.id()) {
                    break;
                }
                first_returns.insert(holder.id(), m);
            }
        }
        true
    });
    let contains_return = |n: Node<'t>| first_returns.contains_key(&n.id());
    let first_return = |n: Node<'t>| first_returns.get(&n.id()).copied().unwrap_or(n);
    // A list of statements, checked from the outermost block inwards
    // without recursion: (the list, whether its end ends the function).
    let mut closers: BTreeMap<usize, usize> = BTreeMap::new();
    // Lists of statements to check, each from a position: the rest of a
    // list after an `if` is the same list from further on, not a copy (a
    // copy per `if (…) return;` was quadratic in a run of them).
    let whole = |list: Vec<Node<'t>>| (Rc::<[Node<'t>]>::from(list), 0, true);
    let mut lists = vec![whole(c::named_children(node))];
    if node.kind() != "compound_statement" {
        lists = vec![whole(vec![node])];
    }
    while let Some((list, from, tail)) = lists.pop() {
        let Some(last_index) = list.len().checked_sub(1) else {
            continue;
        };
        for (i, statement) in list.iter().enumerate().skip(from) {
            let last = i == last_index && tail;
            match statement.kind() {
                "return_statement" if last => {}
                "return_statement" => return Err(*statement),
                "compound_statement" => {
                    lists.push((Rc::from(c::named_children(*statement)), 0, last));
                }
                "if_statement" if contains_return(*statement) => {
                    let consequence = statement.child_by_field_name("consequence");
                    let alternative = statement.child_by_field_name("alternative");
                    let ends_in_return = consequence.is_some_and(|c| {
                        c.kind() == "return_statement"
                            || c.kind() == "compound_statement"
                                && c::named_children(c)
                                    .last()
                                    .is_some_and(|s| s.kind() == "return_statement")
                    });
                    match (consequence, alternative) {
                        (Some(c), Some(a)) if last => {
                            lists.push(whole(vec![c]));
                            lists.push(whole(c::named_children(a)));
                        }
                        (Some(c), None) if ends_in_return && tail => {
                            lists.push(whole(vec![c]));
                            if !last {
                                // The rest becomes the `else`.
                                edits.replace_range(
                                    statement.end_byte(),
                                    statement.end_byte(),
                                    " else {",
                                );
                                *closers.entry(list[last_index].end_byte()).or_default() += 1;
                                lists.push((Rc::clone(&list), i + 1, true));
                                break;
                            }
                        }
                        _ => return Err(first_return(*statement)),
                    }
                }
                _ if contains_return(*statement) => return Err(first_return(*statement)),
                _ => {}
            }
        }
    }
    for (at, count) in closers {
        edits.replace_range(at, at, "\n}".repeat(count));
    }
    Ok(())
}

/// Pointers declared in the host code that are used only as the buffer of
/// `op_fetch_data` and `free`: leftovers of checks that were removed.
/// The clock function a function of the application's calls, when it
/// returns nothing and calls one: a timer.
fn reads_clock<'s>(source: &'s Source, function: Node<'_>) -> Option<&'s str> {
    const CLOCKS: &[&str] = &[
        "gettimeofday",
        "clock_gettime",
        "clock",
        "time",
        "omp_get_wtime",
    ];
    if function
        .child_by_field_name("type")
        .is_none_or(|t| source.text(t) != "void")
    {
        return None;
    }
    let mut found = None;
    walk(function, |node, _| {
        if let Some(name) = c::called_name(source, node)
            && CLOCKS.contains(&name)
        {
            found = Some(name);
        }
        found.is_none()
    });
    found
}

/// Translates what concerns OP2's temporary dats: `op_dat d =
/// op_decl_dat_temp(set, …);` becomes a par_loop that zeroes `d` (OP2
/// allocates a temporary dat zeroed and ignores the data argument; the
/// import declares the dat in the program), and `op_free_dat_temp(d)` is
/// dropped, with an `if` that tests what it returns (it fails only for a
/// dat that was never declared). `None` for any other node.
fn temporary_dat(
    source: &Source,
    node: Node<'_>,
    edits: &mut Edits,
    host: &mut Host,
    report: &mut Report,
) -> Option<bool> {
    let calls_free = |n: Node<'_>| c::contains_call(source, n, "op_free_dat_temp");
    match node.kind() {
        "declaration" => {
            let declarator = node
                .child_by_field_name("declarator")
                .filter(|d| d.kind() == "init_declarator")?;
            let ident = declarator
                .child_by_field_name("declarator")
                .filter(|i| i.kind() == "identifier")?;
            let call = declarator.child_by_field_name("value")?;
            if c::called_name(source, call) != Some("op_decl_dat_temp") {
                return None;
            }
            let set = *c::call_arguments(call).first()?;
            let name = op2_name(source.text(ident));
            edits.replace(
                node,
                format!(
                    "par_loop {} over {} ({name} WRITE);",
                    c::generated_name(&format!("op2_zero_{name}")),
                    op2_name(source.text(set))
                ),
            );
            report.add(
                Kind::Translated,
                Some(source.location(call)),
                format!("`op_decl_dat_temp` of `{name}`: a dat of the program, zeroed here by a par_loop (OP2 allocates a temporary dat zeroed, whatever the data argument)"),
                None,
            );
            host.temporaries.insert(source.text(ident).to_owned());
            Some(false)
        }
        "expression_statement"
            if c::named_children(node)
                .first()
                .is_some_and(|e| c::called_name(source, *e) == Some("op_free_dat_temp")) =>
        {
            edits.replace(node, "");
            report.add(
                Kind::Dropped,
                Some(source.location(node)),
                "`op_free_dat_temp`: the program's dats live as long as it runs",
                None,
            );
            Some(false)
        }
        "if_statement"
            if node.child_by_field_name("alternative").is_none()
                && node
                    .child_by_field_name("condition")
                    .is_some_and(calls_free) =>
        {
            edits.replace(node, "");
            report.add(
                Kind::Dropped,
                Some(source.location(node)),
                "`if` on what `op_free_dat_temp` returns: it fails only for a dat never declared, and the program's dats live as long as it runs",
                None,
            );
            Some(false)
        }
        _ => None,
    }
}

fn dead_pointers(source: &Source, statements: &[Node<'_>]) -> BTreeSet<String> {
    let mut pointers = BTreeSet::new();
    for statement in statements {
        walk(*statement, |node, _| {
            if node.kind() == "declaration" {
                for declarator in node.children_by_field_name("declarator", &mut node.walk()) {
                    if let Some((ident, true, _)) = c::declared_name(declarator) {
                        pointers.insert(source.text(ident).to_owned());
                    }
                }
            }
            true
        });
    }
    let mut live = BTreeSet::new();
    for statement in statements {
        walk(*statement, |node, ancestors| {
            if node.kind() == "identifier" && pointers.contains(source.text(node)) {
                let declared = c::ancestor(ancestors, 0)
                    .is_some_and(|p| matches!(p.kind(), "pointer_declarator" | "init_declarator"));
                let in_fetch = c::enclosing_call(source, ancestors)
                    .is_some_and(|name| FETCHES.contains(&name) || name == "op_decl_dat_temp");
                if !declared && !in_fetch {
                    live.insert(source.text(node).to_owned());
                }
            }
            true
        });
    }
    pointers.difference(&live).cloned().collect()
}

/// `OP_READ` and friends.
fn access(source: &Source, node: Node<'_>) -> Option<&'static str> {
    Some(match source.text(node) {
        "OP_READ" => "READ",
        "OP_WRITE" => "WRITE",
        "OP_RW" => "RW",
        "OP_INC" => "INC",
        "OP_MIN" => "MIN",
        "OP_MAX" => "MAX",
        _ => return None,
    })
}

/// An integer literal, possibly negated.
fn integer(source: &Source, node: Node<'_>) -> Option<i64> {
    source.text(node).replace(' ', "").parse().ok()
}

/// An integer argument of an `op_arg_*` (a map index, a dimension): an
/// integer literal, or a name `#define`d as one (`#define ALL -4`).
fn integer_or_macro(source: &Source, node: Node<'_>, context: &Context<'_>) -> Option<i64> {
    integer(source, node).or_else(|| {
        let body = context.objects.get(source.text(node))?;
        // An integer is a few bytes: a longer body is none, and is not
        // copied (a macro may be a mebibyte long, named at every argument).
        if body.len() > 64 {
            return None;
        }
        let body = body.trim_start_matches('(').trim_end_matches(')');
        body.replace(' ', "").parse().ok()
    })
}

/// Why the map index `idx` (whose value is `index`, when an integer
/// literal or a macro of one) and the map `map` of an `op_arg_dat` are not
/// one of the pairs a par_loop argument has: where to report it, what to
/// say and a help.
fn map_index_problem<'t>(
    source: &Source,
    idx: Node<'t>,
    map: Node<'t>,
    index: Option<i64>,
    context: &Context<'_>,
) -> (Node<'t>, String, &'static str) {
    let (idx_text, map_text) = (source.text(idx), source.text(map));
    let literal = "write the index as an integer literal, or `#define` it as one";
    match index {
        None if idx.kind() == "identifier" && context.objects.contains_key(idx_text) => (
            idx,
            format!(
                "`op_arg_dat` whose map index `{idx_text}` is a macro that does not expand to an integer literal"
            ),
            literal,
        ),
        None if idx.kind() == "identifier" => (
            idx,
            format!(
                "`op_arg_dat` whose map index `{idx_text}` is a variable, not an integer literal: the par_loop's arguments are fixed when it is translated"
            ),
            literal,
        ),
        None => (
            idx,
            format!("`op_arg_dat` whose map index `{idx_text}` is not an integer literal"),
            literal,
        ),
        Some(-1) => (
            map,
            format!(
                "`op_arg_dat` with map index -1 and the map `{map_text}`: the index -1 passes the dat directly, with the map `OP_ID`"
            ),
            "pass the dat directly with `-1, OP_ID`, or through the map with an index from 0",
        ),
        Some(_) if map_text == "OP_ID" => (
            idx,
            format!(
                "`op_arg_dat` with map index {idx_text} and the map `OP_ID`, which only the index -1 goes with"
            ),
            "pass the dat directly with `-1, OP_ID`, or name the map that an index from 0 reads",
        ),
        Some(_) => (
            map,
            format!("`op_arg_dat` whose map `{map_text}` is not a plain name"),
            "name the map with a variable of its own (`op_map m = …;`)",
        ),
    }
}

/// Stands for the counter of the loops that zero the values a hoisted
/// array's initialiser does not give, until the statements' text is done
/// and a name that nothing uses can be chosen for it (see [`counter`]).
const COUNTER: &str = "\u{3}";

/// The counter of the loops that zero the rest of a hoisted array:
/// `op2_k`, with `_` appended while one of `texts` uses it as a word, so
/// that it can neither be the array (`double op2_k[4] = {1.0};` made
/// `op2_k[op2_k] = 0`) nor hide a name of `main` or of the program.
fn counter(texts: &[&str]) -> String {
    let mut used = BTreeSet::new();
    for text in texts {
        c::map_words(text, |word| {
            if word.starts_with("op2_k") {
                used.insert(word.to_owned());
            }
            None
        });
    }
    let mut name = "op2_k".to_owned();
    while used.contains(&name) {
        name.push('_');
    }
    name
}

/// The name an identifier of the host code declares or reads: its text, or
/// its new name ([`Context::block_renames`]).
fn named<'a>(source: &'a Source, ident: Node<'_>, context: &'a Context<'_>) -> &'a str {
    context
        .block_renames
        .get(&ident.start_byte())
        .map_or_else(|| source.text(ident), String::as_str)
}

/// The identifier of `x` or `&x`.
fn data_ident(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "identifier" => Some(node),
        "pointer_expression" => node
            .child_by_field_name("argument")
            .filter(|a| a.kind() == "identifier"),
        _ => None,
    }
}

/// The variable an argument names: `x` or `&x`.
fn variable<'s>(source: &'s Source, node: Node<'_>) -> Option<&'s str> {
    match node.kind() {
        "identifier" => Some(source.text(node)),
        "pointer_expression" => {
            let argument = node.child_by_field_name("argument")?;
            (argument.kind() == "identifier"
                && node
                    .child_by_field_name("operator")
                    .is_some_and(|o| source.text(o) == "&"))
            .then(|| source.text(argument))
        }
        _ => None,
    }
}

/// The most distinct flags not known at import that the optional arguments
/// of one par_loop may have: it is written once for each combination of
/// them, so at most [`MAX_BRANCH_VARIANTS`] times.
pub const MAX_BRANCH_FLAGS: usize = 3;

/// The most par_loops one `op_par_loop` becomes (`2^MAX_BRANCH_FLAGS`).
pub const MAX_BRANCH_VARIANTS: usize = 1 << MAX_BRANCH_FLAGS;

/// A translated `op_par_loop`.
enum Loop<'t> {
    /// One `par_loop` statement.
    Plain(String),
    /// Optional arguments whose flags `main` decides: the distinct flags,
    /// and the `par_loop` statement for each combination of them (bit `i`
    /// of the index set when flag `i` is).
    Branching {
        flags: Vec<Node<'t>>,
        variants: Vec<String>,
    },
}

/// A par_loop statement that branches on its flags, written once the walk
/// has translated them.
struct Branch<'t> {
    /// The statement replaced.
    statement: Node<'t>,
    /// The `op_par_loop` call, inside which only the flags are walked.
    call: Node<'t>,
    flags: Vec<Node<'t>>,
    variants: Vec<String>,
}

/// How an optional argument's flag is decided.
#[derive(Clone, Copy)]
enum Flag {
    /// At import: set or not.
    Known(bool),
    /// By `main`: the par_loop's distinct flag of this position.
    Branch(usize),
}

/// OP2's truth of a flag's value as written (`op_opt_arg_dat` takes an
/// `int`: C converts a `double` toward zero and a `long long` modulo 2^32).
fn truth(value: &str) -> Option<bool> {
    if let Ok(v) = value.parse::<i64>() {
        // As C++ converts (modulo 2^32), the truncation is meant.
        #[allow(clippy::cast_possible_truncation)]
        return Some(v as i32 != 0);
    }
    let v = value.parse::<f64>().ok()?;
    // NaN and values out of `int`'s range convert to a non-zero `int`.
    Some(v.is_nan() || v.trunc() != 0.0)
}

/// Whether the flag of an `op_opt_arg_dat` is set, when that is known at
/// import: a literal (or a macro of one), or a host variable the set-up
/// computed (captured) and the host code never assigns. `None`: `main`
/// decides it.
fn known_flag(
    source: &Source,
    flag: Node<'_>,
    context: &Context<'_>,
    host: &mut Host,
) -> Option<bool> {
    match flag.kind() {
        "true" => Some(true),
        "false" => Some(false),
        "number_literal" => truth(source.text(flag)),
        "identifier" => {
            let name = source.text(flag);
            if let Some(value) = integer_or_macro(source, flag, context) {
                #[allow(clippy::cast_possible_truncation)]
                return Some(value as i32 != 0);
            }
            if context.assigned.contains(name)
                || host.locals.contains(name)
                || context.renames.contains_key(name)
                || context.setup_renames.contains_key(name)
                || context.block_renames.contains_key(&flag.start_byte())
            {
                return None;
            }
            // Captured, so that the import decides it where it can (even
            // where the flag changes none of the arguments and is not
            // walked as `main`'s).
            host.referenced.insert(name.to_owned());
            truth(context.values.get(name)?)
        }
        _ => None,
    }
}

/// The first place in a flag that `main` would evaluate with an effect of
/// its own (an assignment, `++`, a call other than a math built-in or
/// `op_get_size`): C evaluates each flag as often as it is written, the
/// branches once.
fn side_effect<'t>(source: &Source, flag: Node<'t>) -> Option<Node<'t>> {
    let mut found = None;
    walk(flag, |node, _| {
        if found.is_some() {
            return false;
        }
        let effect = match node.kind() {
            "assignment_expression" | "update_expression" => true,
            "call_expression" => {
                let name = c::called_name(source, node).unwrap_or("");
                !(c::is_builtin(name) || name == "op_get_size")
            }
            _ => false,
        };
        if effect {
            found = Some(node);
        }
        !effect
    });
    found
}

/// Whether `main` may test `flag` as written for OP2's truth of it: an
/// `int` of at most 32 bits (or `bool`, a comparison, a logical operation),
/// whose conversion to `int` keeps it non-zero; anything else is converted
/// with `(int)` first, as `op_opt_arg_dat` converts it.
fn int_like(source: &Source, flag: Node<'_>, context: &Context<'_>, host: &Host) -> bool {
    let mut node = flag;
    while node.kind() == "parenthesized_expression" {
        match c::named_children(node).first() {
            Some(inner) => node = *inner,
            None => return false,
        }
    }
    let operator = || {
        node.child_by_field_name("operator")
            .map_or("", |o| source.text(o))
    };
    match node.kind() {
        "true" | "false" => true,
        "number_literal" => integer(source, node).is_some_and(|v| i32::try_from(v).is_ok()),
        "binary_expression" => matches!(
            operator(),
            "==" | "!=" | "<" | ">" | "<=" | ">=" | "&&" | "||"
        ),
        "unary_expression" => operator() == "!",
        "identifier" => {
            let name = source.text(node);
            let ty = if host.locals.contains(name) {
                host.local_types.get(name)
            } else {
                context.value_types.get(name)
            };
            matches!(ty.map(String::as_str), Some("int" | "uint" | "bool"))
        }
        _ => false,
    }
}

/// The statements that run the par_loop `variants` (bit `i` of the index
/// set where `conditions[i]` holds): `if`/`else` on each condition in turn.
fn branching(conditions: &[String], variants: &[String]) -> String {
    // Built from the innermost (the last condition) out, without
    // recursion: at level `L` the arms left are indexed by the bits below
    // `L`, and each becomes an `if` on condition `L` of the arm with bit
    // `L` set and the arm without.
    let mut arms: Vec<String> = variants.iter().map(|v| format!("{v};")).collect();
    for (level, condition) in conditions.iter().enumerate().rev() {
        let bit = 1 << level;
        arms = (0..bit)
            .map(|mask| {
                format!(
                    "if ({condition}) {{\n{}\n}} else {{\n{}\n}}",
                    arms[mask | bit],
                    arms[mask]
                )
            })
            .collect();
    }
    arms.concat()
}

/// `op_par_loop(kernel, "name", set, args…)` as a `par_loop` statement (or,
/// when optional arguments' flags are decided by `main`, one for each
/// combination of them), or `None` (reported) when an argument cannot be
/// translated.
fn par_loop<'t>(
    source: &Source,
    node: Node<'t>,
    args: &[Node<'t>],
    context: &Context<'_>,
    host: &mut Host,
    report: &mut Report,
) -> Option<Loop<'t>> {
    let location = source.location(node);
    let fail = |report: &mut Report, at: Node<'_>, message: String, help: Option<&str>| {
        report.not_translated(source.location(at), message, help);
        None
    };
    let [kernel, _name, set, rest @ ..] = args else {
        return fail(
            report,
            node,
            "`op_par_loop` with fewer than three arguments".into(),
            None,
        );
    };
    if kernel.kind() != "identifier" || set.kind() != "identifier" {
        return fail(
            report,
            node,
            "`op_par_loop` whose kernel or set is not a plain name".into(),
            None,
        );
    }
    let kernel_name = source.text(*kernel).to_owned();
    if host.kernel_names.insert(kernel_name.clone()) {
        host.kernels.push((kernel_name.clone(), location.clone()));
    }
    host.kernel_units
        .entry(kernel_name.clone())
        .or_default()
        .insert(context.unit);
    let set_name = op2_name(source.text(*set));
    // `op_opt_arg_dat(flag, …)`: an `op_arg_dat` when the flag is set;
    // when it is not, OP2 hands the kernel the argument unused. Each flag
    // is known at import or one of the distinct flags (by their text) that
    // `main` tests.
    let mut flags: Vec<(String, Node<'t>)> = Vec::new();
    let mut decided: Vec<Option<Flag>> = Vec::with_capacity(rest.len());
    for arg in rest {
        let inner = c::call_arguments(*arg);
        if c::called_name(source, *arg) != Some("op_opt_arg_dat") || inner.len() != 7 {
            decided.push(None);
            continue;
        }
        let flag = inner[0];
        if let Some(set) = known_flag(source, flag, context, host) {
            report.add(
                Kind::Translated,
                Some(source.location(*arg)),
                if set {
                    "`op_opt_arg_dat` whose flag is set: an argument like any other".to_owned()
                } else {
                    "`op_opt_arg_dat` whose flag is not set: passed directly, as OP2 hands it to the kernel (which must not use it), and as `RW` where it is `WRITE` or (of a dat on the par_loop's set) `INC`, so that nothing is stored".to_owned()
                },
                None,
            );
            if !set && integer_or_macro(source, inner[2], context).is_some_and(|k| k < -1) {
                return fail(
                    report,
                    inner[2],
                    "`op_opt_arg_dat` of a vector-map argument whose flag is not set: the kernel's parameter takes the map's entries, which a dat passed directly does not give".into(),
                    Some("pass the argument with `op_arg_dat`, or each map entry as an optional argument of its own"),
                );
            }
            decided.push(Some(Flag::Known(set)));
            continue;
        }
        if let Some(at) = side_effect(source, flag) {
            return fail(
                report,
                at,
                "`op_opt_arg_dat` whose flag has an effect (an assignment, `++`, a call): `main` tests each distinct flag once, where C evaluates it for each argument".into(),
                Some("compute the flag into a variable before the `op_par_loop`, and pass that"),
            );
        }
        if integer_or_macro(source, inner[2], context).is_some_and(|k| k < -1) {
            return fail(
                report,
                inner[2],
                "`op_opt_arg_dat` of a vector-map argument whose flag is not known at import: the kernel's parameter takes the map's entries, which the argument passed directly where the flag is not set does not give".into(),
                Some("pass the argument with `op_arg_dat`, or each map entry as an optional argument of its own"),
            );
        }
        let text: String = source
            .text(flag)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let position = match flags.iter().position(|(t, _)| *t == text) {
            Some(position) => position,
            None if flags.len() == MAX_BRANCH_FLAGS => {
                return fail(
                    report,
                    flag,
                    format!(
                        "`op_par_loop` of `{kernel_name}` whose optional arguments have more than {MAX_BRANCH_FLAGS} distinct flags not known at import: op2 import writes the par_loop once for each combination of its flags, at most {MAX_BRANCH_VARIANTS} times"
                    ),
                    Some(
                        "give optional arguments that go together the same flag, or compute the flags before the set-up ends",
                    ),
                );
            }
            None => {
                flags.push((text, flag));
                flags.len() - 1
            }
        };
        decided.push(Some(Flag::Branch(position)));
    }
    let all = (1usize << flags.len()) - 1;
    let mut variants: Vec<String> = Vec::with_capacity(all + 1);
    for mask in 0..=all {
        // The kernel's bindings follow the par_loop with every flag set:
        // where one is not, the argument is passed directly, which any
        // binding takes.
        let text = loop_arguments(
            source,
            &kernel_name,
            &set_name,
            rest,
            &decided,
            mask,
            mask == all,
            context,
            host,
            report,
        )?;
        variants.push(text);
    }
    // A flag whose arguments are passed alike set or not (a `READ` of a
    // dat passed directly, or of one of another set, which stays indirect)
    // needs no branch: the variants where it is set are dropped.
    let mut same = Vec::new();
    let mut k = 0;
    while k < flags.len() {
        let bit = 1 << k;
        let alike = (0..variants.len())
            .filter(|mask| mask & bit == 0)
            .all(|mask| variants[mask] == variants[mask | bit]);
        if alike {
            same.push(flags.remove(k).0);
            // Keep the variants without bit `k`, renumbered without it.
            variants = (0..variants.len() / 2)
                .map(|mask| {
                    let low = mask & (bit - 1);
                    let high = (mask & !(bit - 1)) << 1;
                    std::mem::take(&mut variants[high | low])
                })
                .collect();
        } else {
            k += 1;
        }
    }
    let all = variants.len() - 1;
    let alike = match same.as_slice() {
        [] => String::new(),
        [one] => format!(
            "; the flag `{one}` of its optional arguments, which `main` decides, changes none of them (passed alike set or not), so it is not tested"
        ),
        many => format!(
            "; the flags `{}` of its optional arguments, which `main` decides, change none of them (passed alike set or not), so they are not tested",
            many.join("`, `")
        ),
    };
    // This unit's own text of the kernel, where it differs.
    let kernel_op2 = context
        .unit_kernels
        .get(&(kernel_name.clone(), context.unit))
        .cloned()
        .unwrap_or_else(|| op2_name(&kernel_name));
    if flags.is_empty() {
        report.add(
            Kind::Translated,
            Some(location),
            format!("par_loop `{kernel_name}` over `{set_name}`{alike}"),
            None,
        );
        return Some(Loop::Plain(format!(
            "par_loop {kernel_op2} over {set_name} ({})",
            variants.concat()
        )));
    }
    // Each variant is named `KERNEL_` and `on` or `off` for each flag in
    // turn (`res_calc_on_off`), or the first of those numbered (`_1`, …)
    // that no source and no other variant uses.
    let mut taken = context.invocation_names.borrow_mut();
    let mut names = Vec::with_capacity(variants.len());
    for mask in 0..=all {
        let states: Vec<&str> = (0..flags.len())
            .map(|i| if mask & (1 << i) == 0 { "off" } else { "on" })
            .collect();
        let base = format!("{kernel_op2}_{}", states.join("_"));
        let name = taken
            .claim(&format!("variant {base}"), |attempt| {
                vec![c::numbered(&base, std::slice::from_ref(&base), attempt)]
            })
            .into_iter()
            .next()
            .unwrap_or(base);
        names.push(name);
    }
    let listed: Vec<String> = flags.iter().map(|(t, _)| format!("`{t}`")).collect();
    report.add(
        Kind::Translated,
        Some(location),
        format!(
            "par_loop `{kernel_name}` over `{set_name}`, branching on {} of its optional arguments, which `main` decides: {} par_loops in `if`/`else` (`{}`), each optional argument passed as an argument like any other where its flag is set, directly (`WRITE` and `INC` as `RW`) where it is not",
            if flags.len() == 1 {
                format!("the flag {}", listed[0])
            } else {
                format!("the flags {}", listed.join(", "))
            },
            variants.len(),
            names.join("`, `")
        ) + &alike,
        None,
    );
    let variants = variants
        .iter()
        .zip(&names)
        .map(|(arguments, name)| {
            format!("par_loop {kernel_op2} as {name} over {set_name} ({arguments})")
        })
        .collect();
    Some(Loop::Branching {
        flags: flags.into_iter().map(|(_, f)| f).collect(),
        variants,
    })
}

/// The arguments of the par_loop running `kernel_name` with `args` where
/// the flags of `mask` are set (bit `i` for the flag `Flag::Branch(i)`);
/// `record`: the kernel's bindings follow these. `None` when reported.
#[allow(clippy::too_many_arguments)]
fn loop_arguments(
    source: &Source,
    kernel_name: &str,
    set_name: &str,
    args: &[Node<'_>],
    decided: &[Option<Flag>],
    mask: usize,
    record: bool,
    context: &Context<'_>,
    host: &mut Host,
    report: &mut Report,
) -> Option<String> {
    let fail = |report: &mut Report, at: Node<'_>, message: String, help: Option<&str>| {
        report.not_translated(source.location(at), message, help);
        None
    };
    // The modes and names of global arguments, for op_arg_info's reference.
    let mut modes: Vec<Option<(&str, String)>> = Vec::new();
    let mut out = Vec::new();
    let mut uses = Vec::new();
    for (arg, flag) in args.iter().zip(decided) {
        let mut callee = c::called_name(source, *arg).unwrap_or("");
        let mut inner = c::call_arguments(*arg);
        let unused = match flag {
            None => false,
            Some(Flag::Known(set)) => !set,
            Some(Flag::Branch(i)) => mask & (1 << i) == 0,
        };
        if flag.is_some() {
            callee = "op_arg_dat";
            inner.remove(0);
        }
        let text = match (callee, inner.as_slice()) {
            ("op_arg_dat", [dat, idx, map, dim, _ty, acc]) => {
                modes.push(None);
                let map_text = source.text(*map);
                let index = integer_or_macro(source, *idx, context);
                let direct = index == Some(-1) && map_text == "OP_ID";
                let entries = index
                    .filter(|k| *k < -1 && !unused)
                    .and_then(|k| usize::try_from(k.unsigned_abs()).ok());
                let dim_value =
                    integer_or_macro(source, *dim, context).and_then(|d| usize::try_from(d).ok());
                uses.push(ArgUse {
                    mode: access(source, *acc),
                    dim: dim_value,
                    direct,
                    entries,
                });
                let Some(mut mode) = access(source, *acc) else {
                    return fail(
                        report,
                        *acc,
                        format!("unknown access mode `{}`", source.text(*acc)),
                        None,
                    );
                };
                if direct
                    && mode == "INC"
                    && context
                        .increments_read
                        .get(kernel_name)
                        .is_some_and(|k| k.contains(&(uses.len() - 1)))
                {
                    mode = "RW";
                }
                // As OP2 does, an unused optional argument is direct; but
                // `.op2` takes a dat directly only on the iteration set
                // (E302), so one of another set stays indirect, which is
                // harmless where the kernel only reads or adds.
                let elsewhere = !direct
                    && context
                        .dat_sets
                        .get(source.text(*dat))
                        .is_some_and(|s| s != set_name);
                // The kernel does not touch an unused argument: passed
                // directly as RW, it stores back what was there, bit for
                // bit, where WRITE would store what the kernel left and
                // INC would add a zero (`-0.0` → `0.0`).
                if unused && (mode == "WRITE" || (mode == "INC" && !elsewhere)) {
                    mode = "RW";
                }
                if unused && elsewhere && mode == "RW" {
                    return fail(
                        report,
                        *acc,
                        "`op_opt_arg_dat` whose flag is not set, of a dat on another set than the par_loop's that it writes through a map: OP2 hands the kernel the dat as if direct, which `.op2` cannot pass (E302), and passed through the map it would be written by every element reaching it (E704)".to_owned(),
                        Some(
                            "declare a dat on the par_loop's set for the kernel to be handed where the flag is not set, and pass that",
                        ),
                    );
                }
                let dat = op2_name(source.text(*dat));
                match index {
                    _ if unused && !elsewhere => format!("{dat} {mode}"),
                    Some(-1) if map_text == "OP_ID" => format!("{dat} {mode}"),
                    Some(k) if k >= 0 && map.kind() == "identifier" && map_text != "OP_ID" => {
                        format!("{dat}[{}[{k}]] {mode}", op2_name(map_text))
                    }
                    // A vector-map argument: the kernel gets the first N
                    // entries of the map, one argument each.
                    Some(k) if k < -1 && map.kind() == "identifier" && map_text != "OP_ID" => {
                        let n = entries.unwrap_or(0);
                        if dim_value == Some(0) {
                            return fail(
                                report,
                                *dim,
                                format!(
                                    "vector-map argument (index {k}) of `{kernel_name}` has dimension 0"
                                ),
                                Some("a dat's dimension is at least 1"),
                            );
                        }
                        if !vector_fits(n, dim_value.unwrap_or(1)) {
                            return fail(
                                report,
                                *idx,
                                format!(
                                    "vector-map argument (index {k}) of `{kernel_name}` passes more than {MAX_VECTOR_VALUES} values (entries × dimension), which op2 import does not copy into a kernel"
                                ),
                                Some("pass each map entry as its own argument"),
                            );
                        }
                        let map_name = op2_name(map_text);
                        let text = (0..n)
                            .map(|e| format!("{dat}[{map_name}[{e}]] {mode}"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        let total = host.vector_text.saturating_add(text.len());
                        if total > VECTOR_TEXT_LIMIT {
                            return fail(
                                report,
                                *arg,
                                format!(
                                    "vector-map argument (index {k}) of `{kernel_name}` would make the arguments that the par_loops' vector-map arguments become longer than {} KiB together, which op2 import does not write",
                                    VECTOR_TEXT_LIMIT >> 10
                                ),
                                Some(
                                    "pass fewer map entries in each argument, or fewer such arguments",
                                ),
                            );
                        }
                        host.vector_text = total;
                        text
                    }
                    _ => {
                        let (at, message, help) =
                            map_index_problem(source, *idx, *map, index, context);
                        return fail(report, at, message, Some(help));
                    }
                }
            }
            ("op_arg_gbl", [data, dim, _ty, acc]) => {
                uses.push(ArgUse {
                    mode: access(source, *acc),
                    dim: integer_or_macro(source, *dim, context)
                        .and_then(|d| usize::try_from(d).ok()),
                    ..ArgUse::default()
                });
                let Some(mode) = access(source, *acc) else {
                    return fail(
                        report,
                        *acc,
                        format!("unknown access mode `{}`", source.text(*acc)),
                        None,
                    );
                };
                let Some(name) = variable(source, *data) else {
                    return fail(
                        report,
                        *data,
                        "`op_arg_gbl` of something other than a variable".into(),
                        Some("pass `&x` or an array `x`"),
                    );
                };
                let name = match data_ident(*data)
                    .and_then(|i| context.block_renames.get(&i.start_byte()))
                {
                    Some(renamed) => renamed.as_str(),
                    None => match context.setup_renames.get(name) {
                        Some(renamed) if !host.locals.contains(name) => renamed.as_str(),
                        _ => name,
                    },
                };
                if !(context.consts.contains(name) && mode == "READ") {
                    host.globals
                        .entry(name.to_owned())
                        .or_insert_with(|| source.location(*data));
                }
                host.referenced.insert(name.to_owned());
                modes.push(Some((mode, op2_name(name))));
                format!("{} {mode}", op2_name(name))
            }
            ("op_arg_idx", [idx, map]) => {
                modes.push(None);
                uses.push(ArgUse {
                    dim: Some(1),
                    ..ArgUse::default()
                });
                match integer(source, *idx) {
                    Some(-1) if source.text(*map) == "OP_ID" => "idx".to_owned(),
                    Some(k) if k >= 0 && map.kind() == "identifier" => {
                        format!("idx[{}[{k}]]", op2_name(source.text(*map)))
                    }
                    _ => {
                        return fail(
                            report,
                            *arg,
                            "`op_arg_idx` with this index and map".into(),
                            None,
                        );
                    }
                }
            }
            ("op_arg_info", [data, _dim, _ty, reference]) => {
                let Some(name) = variable(source, *data) else {
                    return fail(
                        report,
                        *data,
                        "`op_arg_info` of something other than a variable".into(),
                        None,
                    );
                };
                // OP2's reference is the position of the MIN or MAX
                // argument, counting from 0.
                let referenced = integer(source, *reference)
                    .and_then(|r| usize::try_from(r).ok())
                    .and_then(|r| modes.get(r).cloned().flatten());
                let Some(("MIN" | "MAX", of)) = referenced else {
                    return fail(
                        report,
                        *reference,
                        "`op_arg_info` whose reference is not the position of an earlier MIN or MAX `op_arg_gbl` of the loop".into(),
                        Some("`G INFO(R)` follows the global `R` reduced with `MIN` or `MAX` in the same par_loop"),
                    );
                };
                modes.push(None);
                uses.push(ArgUse::default());
                host.globals
                    .entry(name.to_owned())
                    .or_insert_with(|| source.location(*data));
                host.referenced.insert(name.to_owned());
                format!("{} INFO({of})", op2_name(name))
            }

            _ => {
                return fail(
                    report,
                    *arg,
                    format!(
                        "`{}` is not an OP2 argument op2 import knows",
                        source.text(*arg)
                    ),
                    None,
                );
            }
        };
        out.push(text);
    }
    if record {
        host.kernel_args
            .entry(kernel_name.to_owned())
            .or_default()
            .push(uses);
    }
    Some(out.join(", "))
}

/// The host buffer a fetch of a whole dat fills: `op_fetch_data(DAT,
/// BUFFER)`, or `op_fetch_data_idx(DAT, BUFFER, 0, op_get_size(SET) - 1)`
/// (every element, as OP2's applications call it), where BUFFER is the host
/// array DAT was declared with. Any other fetch is reported where it is.
fn whole_fetch<'c>(
    source: &Source,
    name: &str,
    args: &[Node<'_>],
    context: &'c Context<'_>,
) -> Option<(&'c String, &'c Buffer)> {
    let set = match (name, args) {
        ("op_fetch_data", [_, _]) => None,
        ("op_fetch_data_idx", [_, _, low, high]) => {
            let compact = |node: Node<'_>| -> String {
                let text = source.text(node);
                text.chars().filter(|c| !c.is_whitespace()).collect()
            };
            let high = compact(*high);
            let set = high.strip_prefix("op_get_size(")?.strip_suffix(")-1")?;
            if compact(*low) != "0" {
                return None;
            }
            Some(op2_name(set))
        }
        _ => return None,
    };
    let (buffer_name, buffer) = context.buffers.get_key_value(source.text(args[1]))?;
    let same_dat = op2_name(source.text(args[0])) == buffer.dat;
    let every_element = set.is_none_or(|set| set == buffer.set);
    (same_dat && every_element).then_some((buffer_name, buffer))
}
