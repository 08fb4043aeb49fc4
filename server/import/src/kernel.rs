//! Kernels: the C functions a par_loop names, translated into `.op2`
//! kernels. The body is copied as written, with edits where `.op2` spells a
//! thing differently; every construct outside the kernel subset is reported
//! at its C location.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use tree_sitter::Node;

use crate::c::{self, Edits, Source, op2_name, scalar_type, walk};
use crate::inline::{self, Helpers};
use crate::report::{Kind, Report};
use crate::scope::{Fresh, Scopes};

/// A translated kernel.
#[derive(Debug)]
pub struct Kernel {
    /// Its `.op2` text.
    pub text: String,
    /// Names the body reads that are neither parameters nor locals: the
    /// consts it needs.
    pub free_names: BTreeSet<String>,
    /// Where the C function starts.
    pub location: c::Location,
    /// The positions of its parameters bound to direct INC arguments that
    /// it reads or assigns: the par_loops pass those arguments as RW.
    pub increments_read: BTreeSet<usize>,
}

/// Node kinds of C that mean the same in the `.op2` kernel subset.
pub(crate) const KERNEL_KINDS: &[&str] = &[
    "compound_statement",
    "declaration",
    "init_declarator",
    "expression_statement",
    "assignment_expression",
    "binary_expression",
    "unary_expression",
    "update_expression",
    "subscript_expression",
    "subscript_argument_list",
    "parenthesized_expression",
    "number_literal",
    "identifier",
    "if_statement",
    "else_clause",
    "condition_clause",
    "for_statement",
    "while_statement",
    "do_statement",
    "break_statement",
    "continue_statement",
    "return_statement",
    "conditional_expression",
    "cast_expression",
    "type_descriptor",
    "primitive_type",
    "sized_type_specifier",
    "type_qualifier",
    "call_expression",
    "argument_list",
    "comment",
    "initializer_list",
    "array_declarator",
    "pointer_declarator",
    "pointer_expression",
    "true",
    "false",
];

/// A call the kernel makes to a macro or a function inlined into it.
enum Inlined<'t> {
    Macro(Node<'t>, String),
    Function(Node<'t>, String),
}

/// A vector-map argument (`op_arg_dat(d, -N, map, DIM, …, MODE)`), which
/// hands the kernel `N` pointers, one per map entry (a `T **` parameter
/// used as `x[i][j]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vector {
    /// The number of map entries, `N`.
    pub entries: usize,
    /// Each entry's dimension.
    pub dim: usize,
    /// Its access mode: `READ`, `WRITE`, `RW` or `INC`.
    pub mode: &'static str,
}

/// What the par_loops running a kernel bind its parameters to, where the
/// translation depends on it.
#[derive(Debug, Default)]
pub struct Bindings {
    /// The position of each parameter that every par_loop binds to an `INC`
    /// argument, with the argument's dimension and whether it is a dat
    /// passed directly.
    pub inc: BTreeMap<usize, (usize, bool)>,
    /// The position of each parameter a par_loop binds to a vector-map
    /// argument: the argument, or why it cannot be copied (the par_loops
    /// pass different ones there, one without a literal dimension, one of
    /// more than [`crate::host::MAX_VECTOR_VALUES`] values, …).
    pub vectors: BTreeMap<usize, Result<Vector, String>>,
}

/// Translates the function definition `function` of `source` into a
/// kernel, inlining the `helpers` it calls and reporting what cannot be
/// translated.
///
/// Where the body reads a parameter bound to an `INC` argument
/// ([`Bindings::inc`]) or assigns it with `=`: OP2 hands a kernel a direct
/// argument's own element in every backend, so a direct argument becomes RW
/// ([`Kernel::increments_read`]); any other is staged through a local (see
/// [`stage_increments`]).
///
/// A `T **x` parameter bound to a vector-map argument of `N` entries
/// ([`Bindings::vectors`]) becomes `N` parameters `x_0` … `x_{N-1}`, which
/// the par_loops pass as `N` indirect arguments, and the body works on a
/// local `x[N * DIM]`, `x[i][j]` becoming `x[(i) * DIM + (j)]` (see
/// [`stage`]); an INC one of at most [`MAX_DIRECT_ENTRIES`] entries that the
/// kernel only adds to by whole statements is added to directly instead
/// ([`direct_text`]).
///
/// Names are resolved block by block, as C resolves them ([`Scopes`]). A
/// variable whose name `.op2` reserves, or that would hide a name the
/// kernel reads from outside it (a global a helper function reads), gets a
/// fresh name ([`Fresh`]) wherever it is used, macros' expansions included.
pub fn translate(
    source: &Source,
    function: Node<'_>,
    helpers: &Helpers,
    bindings: &Bindings,
    report: &mut Report,
) -> Kernel {
    let inc = &bindings.inc;
    let location = source.location(function);
    let declarator = function.child_by_field_name("declarator");
    let name = declarator
        .and_then(|d| d.child_by_field_name("declarator"))
        .map_or("", |n| source.text(n));
    let mut text = format!(
        "// from {}:{}\nkernel {}(",
        location.file,
        location.line,
        op2_name(name)
    );
    let mut edits = Edits::default();
    let mut faithful = true;
    let fail = |report: &mut Report, node: Node<'_>, message: String, help: Option<&str>| {
        report.not_translated(source.location(node), message, help);
    };

    if let Some(return_type) = function.child_by_field_name("type")
        && source.text(return_type) != "void"
    {
        faithful = false;
        fail(
            report,
            return_type,
            format!("kernel `{name}` returns a value; a kernel returns nothing"),
            Some("write the result through a parameter"),
        );
    }
    let param_nodes = declarator
        .and_then(|d| d.child_by_field_name("parameters"))
        .map(c::named_children)
        .unwrap_or_default();
    let body = function.child_by_field_name("body");
    // Names are resolved block by block, as C resolves them.
    let scopes = &Scopes::new(source, &param_nodes, body);
    // What the kernel's variables are called in `.op2`: the C name, unless
    // `.op2` reserves it (`exit`) or the kernel reads a name spelled so
    // from outside it (a helper's global, a free `exit_`), which the
    // variable would hide: then a fresh name (`Fresh`), the same for every
    // variable of that C name, so that the blocks hide each other as in C.
    let outside = body.map_or_else(BTreeSet::new, |body| {
        read_from_outside(source, body, scopes, helpers)
    });
    let mut fresh = Fresh::new(Rc::clone(&helpers.words), outside.clone());
    let mut finals: BTreeMap<String, String> = BTreeMap::new();
    for binding in &scopes.bindings {
        if finals.contains_key(&binding.name) {
            continue;
        }
        let spelled = op2_name(&binding.name);
        let chosen = if spelled == binding.name && !outside.contains(&spelled) {
            spelled
        } else {
            fresh.rename(&binding.name)
        };
        finals.insert(binding.name.clone(), chosen);
    }
    let final_of = |b: usize| finals[&scopes.bindings[b].name].as_str();
    // What a name means at the byte `at` of the body, in `.op2`, where it
    // differs from the word (for the names of macros' bodies, which mean
    // what they mean where the macro is used).
    let name_at = |word: &str, at: usize| -> Option<String> {
        let spelled = match scopes.resolve_at(word, at) {
            Some(b) => final_of(b).to_owned(),
            None => op2_name(word),
        };
        (spelled != word).then_some(spelled)
    };
    // Each parameter's binding, found once (a search of the bindings per
    // parameter was quadratic in a kernel of many parameters).
    let mut param_bindings: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, binding) in scopes.bindings.iter().enumerate() {
        if let Some(k) = binding.param {
            param_bindings.entry(k).or_insert(i);
        }
    }
    let param_binding = |k: usize| param_bindings.get(&k).copied();
    let mut first = true;
    // Each parameter's name and `.op2` type, by position.
    let mut param_names: Vec<(String, &'static str)> = Vec::new();
    // The same with its `.op2` name.
    let mut param_finals: Vec<(String, &'static str)> = Vec::new();
    let mut vector_params: Vec<(usize, Node<'_>, String, VectorParam)> = Vec::new();
    for (k, parameter) in param_nodes.iter().copied().enumerate() {
        let ty = parameter
            .child_by_field_name("type")
            .and_then(|t| scalar_type(source.text(t)))
            .unwrap_or("double");
        let c_name = parameter
            .child_by_field_name("declarator")
            .and_then(c::declared_name)
            .map_or_else(String::new, |(i, _, _)| source.text(i).to_owned());
        let final_name =
            param_binding(k).map_or_else(|| op2_name(&c_name), |b| final_of(b).to_owned());
        param_names.push((c_name, ty));
        param_finals.push((final_name.clone(), ty));
        if !first {
            text.push_str(", ");
        }
        first = false;
        let translated = match bindings.vectors.get(&k) {
            Some(Ok(vector)) => {
                vector_parameter(source, parameter, *vector, &final_name, &mut fresh).map(
                    |(param_text, param_name, vector)| {
                        vector_params.push((k, parameter, param_name.clone(), vector));
                        (param_text, param_name)
                    },
                )
            }
            Some(Err(why)) => Err(format!(
                "parameter {} (`{}`) of kernel `{name}` is bound to a vector-map argument that cannot be copied: {why}",
                k + 1,
                param_names.last().map_or("", |(n, _)| n.as_str())
            )),
            None => parameter_text(source, parameter, &final_name),
        };
        match translated {
            Ok((param_text, _)) => text.push_str(&param_text),
            Err(message) => {
                faithful = false;
                text.push_str(source.text(parameter));
                fail(report, parameter, message, None);
            }
        }
    }
    text.push_str(") ");

    let mut free_names = BTreeSet::new();
    let Some(body) = body else {
        fail(
            report,
            function,
            format!("kernel `{name}` has no body"),
            None,
        );
        return Kernel {
            text,
            free_names,
            location,
            increments_read: BTreeSet::new(),
        };
    };
    // Local arrays of two dimensions (`double x[4][2]`), which `.op2`
    // does not have, by binding: flattened, `x[i][j]` becoming
    // `x[(i) * 2 + (j)]`.
    let mut flat: BTreeMap<usize, (Node<'_>, u64, u64)> = BTreeMap::new();
    // A vector-map parameter is used the same way (`x[i][j]`): its local
    // copy is flattened alike.
    // Each vector parameter by its position, looked up per use (a search
    // of them per use was quadratic in a kernel of many).
    let vector_of: BTreeMap<usize, &(usize, Node<'_>, String, VectorParam)> =
        vector_params.iter().map(|v| (v.0, v)).collect();
    for (k, parameter, _, vector) in &vector_params {
        if let Some(b) = param_binding(*k) {
            flat.insert(
                b,
                (*parameter, vector.entries as u64, vector.staged.dim as u64),
            );
        }
    }
    for (b, binding) in scopes.bindings.iter().enumerate() {
        if binding.param.is_none()
            && c::declared_name(binding.declarator).is_some_and(|(_, _, arrays)| arrays == 2)
            && let Some(dims) = two_dimensions(source, binding.declarator)
        {
            flat.insert(b, dims);
        }
    }
    // The same is done in the expansions of the macros the kernel names
    // (`#define V(i) x[i][0]`), by the `.op2` names of the flattened
    // arrays visible where the macro is used.
    let mut flat_by_name: BTreeMap<&str, Vec<(usize, u64)>> = BTreeMap::new();
    for (&b, (_, _, columns)) in &flat {
        flat_by_name
            .entry(final_of(b))
            .or_default()
            .push((b, *columns));
    }
    let flat_by_name = &flat_by_name;
    let flat_at = |at: usize| {
        move |word: &str| {
            flat_by_name.get(word)?.iter().find_map(|&(b, columns)| {
                (scopes.resolve_at(&scopes.bindings[b].name, at) == Some(b)).then_some(columns)
            })
        }
    };
    let mut expanded_bytes = 0usize;
    let types = |n: Node<'_>| scopes.binding(n).and_then(|b| scopes.bindings[b].ty);
    let mut flat_uses = Vec::new();
    let mut inlined = Vec::new();
    // Uses of parameters bound to INC arguments: the identifier, the `*p`
    // around it if any, and whether the use only adds to it.
    let mut inc_uses: Vec<(usize, Node<'_>, Option<Node<'_>>, bool)> = Vec::new();
    // The first use of a vector-map INC parameter other than adding to it.
    let mut vector_inc_misuse: Option<Node<'_>> = None;
    // Uses of vector-map INC parameters that are whole statements adding to
    // `x[i][j]` (see [`direct_increment`]), by parameter, and the
    // parameters used some other way too.
    let mut direct_uses: Vec<(usize, DirectIncrement<'_>)> = Vec::new();
    let mut not_direct: BTreeSet<usize> = BTreeSet::new();
    let mut returns = Vec::new();
    // What each function-like macro calls and reads, found once per macro
    // whatever its calls (each call expanded it again).
    let mut macro_calls: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut macro_reads: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut memo = Memo::default();
    walk(body, |node, ancestors| {
        let kind = node.kind();
        if !node.is_named() {
            return true;
        }
        // The callee of a call is checked with the call.
        if kind == "qualified_identifier" && c::is_callee(node, ancestors) {
            return false;
        }
        // The format of a `printf` the kernel makes (checked with the call).
        if matches!(kind, "string_literal" | "concatenated_string")
            && c::enclosing_call(source, ancestors)
                .is_some_and(|callee| callee == "printf" || callee == "op_printf")
            && c::ancestor(ancestors, 0).and_then(c::first_named_child) == Some(node)
            && let Some(value) = c::string_literal(source, node)
        {
            edits.replace(node, format!("\"{value}\""));
            return false;
        }
        if let Some((at, outside)) = outside_subset(source, node, ancestors) {
            faithful = false;
            let (message, help) = match &outside {
                Outside::Kind(what) => (
                    format!("{what} is not in the kernel subset of `.op2` (in kernel `{name}`)"),
                    Some("rewrite it with the C subset of language.md §5"),
                ),
                Outside::Address => (
                    format!("`&` is not in the kernel subset of `.op2` (in kernel `{name}`)"),
                    Some("index the parameter instead of taking an address"),
                ),
                Outside::LocalPointer => (
                    format!(
                        "a local pointer is not in the kernel subset of `.op2` (in kernel `{name}`)"
                    ),
                    Some("use an array or index the parameter"),
                ),
                Outside::Qualifier(word) => (
                    format!("`{word}` locals are not in the kernel subset"),
                    None,
                ),
                Outside::Literal(why) => (why.clone(), None),
            };
            fail(report, at, message, help);
            if outside.stops() {
                return false;
            }
        }
        match kind {
            "identifier" => {
                let ident = source.text(node);
                if c::is_callee(node, ancestors) {
                    return false;
                }
                let Some(b) = scopes.binding(node) else {
                    // A free name: an object-like macro's expansion, or a
                    // const or global the kernel needs.
                    if let Some(body) = helpers.objects.get(ident) {
                        let at = node.start_byte();
                        let expansion =
                            within_budget(&mut expanded_bytes, body.len()).and_then(|()| {
                                flatten_expansion(
                                    inline::rename_words(body, false, |w| name_at(w, at)),
                                    &flat_at(at),
                                )
                            });
                        match expansion {
                            Ok(text) => {
                                free_names.extend(
                                    inline::free_words(body, &[])
                                        .into_iter()
                                        .filter(|n| scopes.resolve_at(n, at).is_none()),
                                );
                                edits.replace(node, text);
                            }
                            Err(why) => {
                                faithful = false;
                                fail(report, node, why, None);
                            }
                        }
                        return false;
                    }
                    let renamed = op2_name(ident);
                    if renamed != ident {
                        edits.replace(node, renamed);
                    }
                    free_names.insert(ident.to_owned());
                    return true;
                };
                let param = scopes.bindings[b].param;
                let vector = param.and_then(|k| vector_of.get(&k).copied());
                if vector_inc_misuse.is_none()
                    && vector.is_some_and(|v| v.3.staged.exit == Some("+="))
                    && !increment_use(source, node, ancestors).1
                {
                    vector_inc_misuse = Some(node);
                }
                if let Some(v) = vector.filter(|v| v.3.staged.exit == Some("+=")) {
                    match direct_increment(source, node, ancestors, helpers) {
                        Some(use_) => direct_uses.push((v.0, use_)),
                        None => {
                            not_direct.insert(v.0);
                        }
                    }
                }
                if let Some((declared, rows, columns)) = flat.get(&b) {
                    let (inner, outer, whole) = two_dimensional_use(source, node, ancestors);
                    let in_declaration = c::ancestor(ancestors, 1) == Some(*declared);
                    match (inner, whole) {
                        (Some(inner), Some(whole)) => {
                            flat_uses.push((whole, inner, outer, *columns));
                        }
                        _ if in_declaration => {
                            edits
                                .replace(*declared, format!("{}[{}]", final_of(b), rows * columns));
                        }
                        _ if vector.is_some() => {
                            faithful = false;
                            fail(
                                report,
                                node,
                                format!(
                                    "parameter `{ident}`, bound to a vector-map argument, used other than as `{ident}[i][j]` (in kernel `{name}`)"
                                ),
                                Some("index both the map entry and the component"),
                            );
                        }
                        _ => {
                            faithful = false;
                            fail(
                                report,
                                node,
                                format!(
                                    "the two-dimensional local array `{ident}` used other than as `{ident}[i][j]` (in kernel `{name}`)"
                                ),
                                Some("index both dimensions, or declare the array with one"),
                            );
                        }
                    }
                }
                if final_of(b) != ident {
                    edits.replace(node, final_of(b));
                }
                if let Some(k) = param
                    && inc.contains_key(&k)
                {
                    let (deref, adds) = increment_use(source, node, ancestors);
                    inc_uses.push((k, node, deref, adds));
                }
            }
            "sized_type_specifier" | "primitive_type" => match scalar_type(source.text(node)) {
                Some(ty) if kind == "sized_type_specifier" => edits.replace(node, ty),
                Some(_) => {}
                None => {
                    faithful = false;
                    fail(
                        report,
                        node,
                        format!("type `{}` has no `.op2` counterpart", source.text(node)),
                        None,
                    );
                }
            },
            "call_expression" => {
                let callee = c::called_name(source, node).unwrap_or_else(|| {
                    node.child_by_field_name("function")
                        .map_or("", |f| source.text(f))
                });
                let arity = c::call_arguments(node).len();
                if c::builtin_call(node, callee, &mut edits) {
                    if !float_overload(
                        source,
                        node,
                        callee,
                        &types,
                        helpers.float_overloads,
                        &mut edits,
                        &mut memo,
                    ) {
                        faithful = false;
                        fail(
                            report,
                            node,
                            inexact_in_float(
                                callee,
                                &format!("C++'s `float` overload of `{callee}`"),
                                name,
                            ),
                            Some(
                                "convert the arguments to `double` in the C source if the `double` result is meant",
                            ),
                        );
                        return false;
                    }
                } else if let Some(m) = helpers.macros.get(callee) {
                    if !m.accepts(arity) {
                        faithful = false;
                        fail(
                            report,
                            node,
                            format!(
                                "{} (in kernel `{name}`)",
                                m.arity_mismatch(&format!("macro `{callee}`"), arity)
                            ),
                            None,
                        );
                        return false;
                    }
                    // C++ would call the `float` overload of what its body
                    // calls on a `float` argument: which one cannot be told
                    // from the body alone, so an inexact one is reported.
                    if helpers.float_overloads
                        && c::call_arguments(node)
                            .iter()
                            .any(|a| is_float(source, *a, &types, &mut memo))
                        && let Some(inexact) = macro_calls
                            .entry(callee.to_owned())
                            .or_insert_with(|| helpers.macro_calls(callee))
                            .iter()
                            .find(|f| INEXACT_IN_FLOAT.contains(&f.as_str()))
                            .cloned()
                    {
                        faithful = false;
                        fail(
                            report,
                            node,
                            inexact_in_float(
                                &inexact,
                                &format!(
                                    "macro `{callee}`, given a `float` argument, calls `{inexact}`, which C++ may take as its `float` overload: it"
                                ),
                                name,
                            ),
                            Some(
                                "convert the argument to `double` in the C source if the `double` result is meant",
                            ),
                        );
                        return false;
                    }
                    // A macro's names are the kernel's where it is used
                    // (`#define V(i) x[i][0]` reads the parameter `x`).
                    free_names.extend(
                        macro_reads
                            .entry(callee.to_owned())
                            .or_insert_with(|| helpers.macro_free_names(callee))
                            .iter()
                            .filter(|n| scopes.resolve_at(n, node.start_byte()).is_none())
                            .cloned(),
                    );
                    inlined.push(Inlined::Macro(node, callee.to_owned()));
                } else if let Some(helper) = helpers.functions.get(callee) {
                    let problem = match helper {
                        Ok(t) if t.arity() != arity => Some((
                            format!(
                                "{} (in kernel `{name}`)",
                                inline::arity_mismatch(
                                    &format!("`{callee}`"),
                                    &inline::arguments(t.arity()),
                                    arity
                                )
                            ),
                            None,
                        )),
                        Ok(_) => c::call_arguments(node)
                            .into_iter()
                            .find(|a| has_side_effect(source, *a, helpers, &mut memo))
                            .map(|a| {
                                (
                                    format!(
                                        "argument `{}` of `{callee}` has a side effect, which inlining `{callee}` would repeat or drop (in kernel `{name}`)",
                                        source.text(a)
                                    ),
                                    Some("compute the argument into a local first"),
                                )
                            })
                            ,
                        Err((at, why)) => Some((
                            format!(
                                "call to `{callee}`, which cannot be inlined into kernel `{name}`: {why} (at {at})"
                            ),
                            Some("write the helper as one `return EXPRESSION;` of its scalar parameters, or inline it by hand"),
                        )),
                    };
                    if let Some((message, help)) = problem {
                        faithful = false;
                        fail(report, node, message, help);
                        return false;
                    }
                    if let Ok(t) = helper {
                        free_names.extend(t.free_names.iter().cloned());
                    }
                    inlined.push(Inlined::Function(node, callee.to_owned()));
                } else if let Some(double) = callee
                    .strip_suffix('f')
                    .filter(|d| INEXACT_IN_FLOAT.contains(d))
                {
                    faithful = false;
                    fail(
                        report,
                        node,
                        inexact_in_float(double, &format!("`{callee}`"), name),
                        Some(&format!(
                            "call `{double}` (on `double`) in the C source if its result is what is meant"
                        )),
                    );
                    return false;
                } else if (callee == "printf" || callee == "op_printf")
                    && c::ancestor(ancestors, 0).is_some_and(|p| p.kind() == "expression_statement")
                    && c::call_arguments(node)
                        .first()
                        .is_some_and(|f| c::string_literal(source, *f).is_some())
                {
                    // A statement `printf("…", …);` is the kernel's
                    // `print`/`printf` statement (language.md §8), `print`
                    // when the format ends its line, as in `main`.
                    let whole_lines = c::call_arguments(node)
                        .first()
                        .and_then(|f| c::string_literal(source, *f))
                        .is_some_and(|format| format.ends_with("\\n"));
                    if let Some(function) = node.child_by_field_name("function") {
                        edits.replace(function, if whole_lines { "print" } else { "printf" });
                    }
                    let args = c::call_arguments(node);
                    if let Some(format) = args.first().and_then(|f| c::string_literal(source, *f)) {
                        c::narrow_printf_arguments(&format, &args, &mut edits);
                    }
                } else {
                    faithful = false;
                    let (message, help) = if callee == "printf" || callee == "op_printf" {
                        (
                            format!(
                                "`{callee}` inside a kernel (in kernel `{name}`) other than as a statement with a literal format"
                            ),
                            "write `printf(\"FORMAT\", …);` as a statement of its own",
                        )
                    } else {
                        (
                            format!(
                                "call to `{callee}`: a kernel may call only the math built-ins, function-like macros and functions that are one `return EXPRESSION;` (in kernel `{name}`)"
                            ),
                            "define the function in the main file or a header it includes with `\"…\"`, or inline it by hand",
                        )
                    };
                    fail(report, node, message, Some(help));
                    return false;
                }
            }
            "return_statement" if c::named_children(node).is_empty() => returns.push(node),
            "return_statement" => {
                faithful = false;
                fail(
                    report,
                    node,
                    format!("`return` with a value in kernel `{name}`"),
                    Some("a kernel returns nothing"),
                );
            }
            _ => {}
        }
        true
    });
    // `x[i][j]` → `x[(i) * C + (j)]` and `*x[i]` → `x[(i) * C + (0)]`,
    // by editing the punctuation only, so that the edits inside the
    // indices (macros, helpers, other flattened arrays) stay.
    for (whole, inner, outer, columns) in flat_uses {
        flatten(whole, inner, outer, columns, &mut edits);
    }
    let mut increments_read = BTreeSet::new();
    // The first use of each parameter that is not an increment, found in
    // one pass (a search of the uses per parameter was quadratic).
    let mut first_misuse_of = BTreeMap::new();
    for use_ in inc_uses.iter().filter(|u| !u.3) {
        first_misuse_of.entry(use_.0).or_insert(use_);
    }
    for (&k, _) in inc.iter().filter(|(_, (_, direct))| *direct) {
        if let Some(misuse) = first_misuse_of.get(&k) {
            increments_read.insert(k);
            report.add(
                Kind::Translated,
                Some(source.location(misuse.1)),
                format!(
                    "kernel `{name}` reads or assigns `{}`, bound to a dat passed directly with OP_INC: OP2 hands a kernel the element's own data for a direct argument, so the argument is passed as RW",
                    param_names[k].0
                ),
                None,
            );
        }
    }
    let staged_inc: BTreeMap<usize, usize> = inc
        .iter()
        .filter(|(_, (_, direct))| !*direct)
        .map(|(&k, &(dim, _))| (k, dim))
        .collect();
    let (mut staged_locals, staged) = stage_increments(
        &staged_inc,
        &param_finals,
        &mut fresh,
        &inc_uses,
        &mut edits,
    );
    // A vector-map INC parameter only ever added to by whole statements is
    // added to directly: no local copy, each statement on the parameter of
    // its entry, so the additions round into the targets in turn.
    let direct: BTreeSet<usize> = direct_uses
        .iter()
        .map(|u| u.0)
        .filter(|k| !not_direct.contains(k))
        .filter(|k| {
            vector_of
                .get(k)
                .is_some_and(|v| v.3.entries <= MAX_DIRECT_ENTRIES)
        })
        .collect();
    for (k, parameter, param_name, vector) in &vector_params {
        if direct.contains(k) {
            report.add(
                Kind::Translated,
                Some(source.location(*parameter)),
                format!(
                    "kernel `{name}`: parameter `{param_name}`, bound to a vector-map argument of {}, becomes {} `{}`; the kernel adds to them directly (`{param_name}[i][j] += …` with a computed `i` becomes an `if` chain on `i`), so each addition rounds into its target in turn, as in OP2's sequential build",
                    crate::report::count(vector.entries, "entry", "entries"),
                    crate::report::count(vector.entries, "parameter", "parameters"),
                    vector.params.join("`, `"),
                ),
                None,
            );
            continue;
        }
        report.add(
            Kind::Translated,
            Some(source.location(*parameter)),
            format!(
                "kernel `{name}`: parameter `{param_name}`, bound to a vector-map argument of {}, becomes {} `{}`; the body works on a local copy `{}[{}]`{}",
                crate::report::count(vector.entries, "entry", "entries"),
                crate::report::count(vector.entries, "parameter", "parameters"),
                vector.params.join("`, `"),
                vector.staged.local,
                vector.entries * vector.staged.dim,
                match vector.staged.exit {
                    Some("+=") => ", which starts at zero and is added to them where the kernel ends, as OP2's parallel backends stage an INC argument",
                    Some(_) if vector.staged.fill => " of their values, stored back where the kernel ends",
                    Some(_) => ", which starts at zero and is stored where the kernel ends (OP2 requires a WRITE argument's every component to be set)",
                    None => " of their values",
                }
            ),
            None,
        );
        staged_locals.push(vector.staged.clone());
    }
    if let Err(why) = stage(body, &staged_locals, &returns, &mut edits) {
        faithful = false;
        fail(
            report,
            body,
            format!("kernel `{name}` cannot be staged: {why}"),
            None,
        );
    }
    // Inner calls first, so that an outer one expands their expansions.
    inlined.sort_by_key(|i| match i {
        Inlined::Macro(n, _) | Inlined::Function(n, _) => n.end_byte() - n.start_byte(),
    });
    for call in inlined {
        let (node, expansion) = match &call {
            Inlined::Macro(node, callee) => {
                let args = argument_texts(source, *node, &edits);
                let at = node.start_byte();
                // The rescan renames the words it puts in, but not those it
                // keeps unexpanded (`#define scale (scale * 2.0)`).
                match helpers
                    .expand_call(callee, &args, &|w| name_at(w, at))
                    .map(|text| inline::rename_words(&text, true, |w| name_at(w, at)))
                    .and_then(|text| flatten_expansion(text, &flat_at(at)))
                    .and_then(|text| within_budget(&mut expanded_bytes, text.len()).map(|()| text))
                {
                    Ok(text) => (*node, text),
                    Err(why) => {
                        faithful = false;
                        // The macro's own problem names it already.
                        let own = format!("macro `{callee}` ");
                        let message = match why.strip_prefix(&own) {
                            Some(rest) => format!("{own}{rest} (in kernel `{name}`)"),
                            None => format!(
                                "macro `{callee}` cannot be expanded into kernel `{name}`: {why}"
                            ),
                        };
                        fail(report, *node, message, Some("inline it by hand"));
                        continue;
                    }
                }
            }
            Inlined::Function(node, callee) => {
                let args = argument_texts(source, *node, &edits);
                match helpers.functions.get(callee) {
                    Some(Ok(t)) => match t.expand(&args).and_then(|text| {
                        within_budget(&mut expanded_bytes, text.len()).map(|()| text)
                    }) {
                        Ok(text) => (*node, text),
                        Err(why) => {
                            faithful = false;
                            fail(
                                report,
                                *node,
                                format!(
                                    "function `{callee}` cannot be inlined into kernel `{name}`: {why}"
                                ),
                                Some("inline it by hand"),
                            );
                            continue;
                        }
                    },
                    _ => continue,
                }
            }
        };
        edits.replace(node, expansion);
    }
    // After every other edit, so that each branch holds the statement's
    // text as translated.
    for (k, use_) in direct_uses.iter().filter(|u| direct.contains(&u.0)) {
        let Some((_, _, _, vector)) = vector_of.get(k).copied() else {
            continue;
        };
        match direct_text(&source.text, use_, &vector.params, &edits)
            .and_then(|text| within_budget(&mut expanded_bytes, text.len()).map(|()| text))
        {
            Ok(text) => edits.replace(use_.statement, text),
            Err(why) => {
                faithful = false;
                fail(
                    report,
                    use_.statement,
                    format!(
                        "kernel `{name}`: this addition to a vector-map argument cannot be translated: {why}"
                    ),
                    None,
                );
            }
        }
    }
    if let Some(first) = staged.first().or(vector_inc_misuse.as_ref()) {
        report.add(
            Kind::Translated,
            Some(source.location(*first)),
            format!(
                "kernel `{name}` reads or assigns a parameter bound to an INC argument: it works on a local that starts at zero and is added to the argument when the kernel ends, as OP2's parallel backends stage an INC argument"
            ),
            Some(
                "OP2's sequential backend hands the kernel the target itself instead; the two agree when the kernel only adds to the parameter",
            ),
        );
    }
    text.push_str(&inline::unpaint(
        &edits.apply(&source.text, body.byte_range()),
    ));
    text.push('\n');
    if faithful {
        report.add(
            Kind::Translated,
            Some(location.clone()),
            format!("kernel `{name}`"),
            None,
        );
    }
    Kernel {
        text,
        free_names,
        location,
        increments_read,
    }
}

/// The `.op2` names of what `body` (resolved by `scopes`) reads from
/// outside the kernel: its own free names, those of the object-like and
/// function-like macros it uses that are free where it uses them, and
/// every name the helper functions it calls read (which mean what they
/// mean where the helper is defined, wherever it is inlined). A variable of
/// the kernel spelled so would hide one of them in `.op2`.
fn read_from_outside(
    source: &Source,
    body: Node<'_>,
    scopes: &Scopes<'_>,
    helpers: &Helpers,
) -> BTreeSet<String> {
    let mut read = BTreeSet::new();
    let mut macro_names: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut object_names: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let free_at = |read: &mut BTreeSet<String>, names: &BTreeSet<String>, at: usize| {
        for name in names {
            if scopes.resolve_at(name, at).is_none() {
                read.insert(op2_name(name));
            }
        }
    };
    walk(body, |node, ancestors| {
        match node.kind() {
            "identifier" if !c::is_callee(node, ancestors) && scopes.binding(node).is_none() => {
                let ident = source.text(node);
                match helpers.objects.get(ident) {
                    // Its words found once per macro, whatever its uses.
                    Some(body) => {
                        let names = object_names
                            .entry(ident)
                            .or_insert_with(|| inline::free_words(body, &[]));
                        free_at(&mut read, names, node.start_byte());
                    }
                    None => free_at(
                        &mut read,
                        &BTreeSet::from([ident.to_owned()]),
                        node.start_byte(),
                    ),
                }
            }
            "call_expression" => match c::called_name(source, node) {
                Some(callee) if c::is_builtin(callee) => {}
                Some(callee) if helpers.macros.contains_key(callee) => {
                    // Expanded once per macro, whatever its calls.
                    let names = macro_names
                        .entry(callee)
                        .or_insert_with(|| helpers.macro_free_names(callee));
                    free_at(&mut read, names, node.start_byte());
                }
                Some(callee) => {
                    if let Some(Ok(helper)) = helpers.functions.get(callee) {
                        read.extend(helper.free_names.iter().map(|n| op2_name(n)));
                    }
                }
                None => {}
            },
            _ => {}
        }
        true
    });
    read
}

/// Around the identifier `node` (with its `ancestors`): the subscript
/// `x[i]` it is the array of, and the `x[i][j]` around that, and the
/// `x[i][j]` or `*x[i]` (which is `x[i][0]`) that is the whole use.
type TwoDimensional<'t> = (Option<Node<'t>>, Option<Node<'t>>, Option<Node<'t>>);

fn two_dimensional_use<'t>(
    source: &Source,
    node: Node<'t>,
    ancestors: &[Node<'t>],
) -> TwoDimensional<'t> {
    let inner = c::ancestor(ancestors, 0)
        .filter(|p| p.kind() == "subscript_expression")
        .filter(|p| p.child_by_field_name("argument") == Some(node));
    let outer = c::ancestor(ancestors, 1)
        .filter(|p| p.kind() == "subscript_expression")
        .filter(|p| p.child_by_field_name("argument") == inner);
    let deref = c::ancestor(ancestors, 1)
        .filter(|p| p.kind() == "pointer_expression")
        .filter(|p| {
            p.child_by_field_name("operator")
                .is_some_and(|o| source.text(o) == "*")
        })
        .filter(|p| p.child_by_field_name("argument") == inner);
    (inner, outer, outer.or(deref))
}

/// The most entries of a vector-map INC argument whose additions go to
/// its parameters directly ([`direct_text`]): an `if` chain is as long as
/// the entries, in the text, in the compares a computed entry runs through
/// per addition and in the compiled engine's blocks, so a longer vector
/// (up to [`crate::host::MAX_VECTOR_VALUES`] entries) keeps the local copy,
/// whose cost is one pass over the entries per call. OP2's applications
/// pass 2 or 4 entries.
pub const MAX_DIRECT_ENTRIES: usize = 16;

/// A statement that adds to one component of a vector-map parameter:
/// `x[i][j] += e;`, `x[i][j] -= e;`, `x[i][j]++;` (and `--`), or `*x[i]`
/// for `x[i][0]`.
#[derive(Debug, Clone, Copy)]
struct DirectIncrement<'t> {
    statement: Node<'t>,
    /// `x[i][j]` or `*x[i]`.
    whole: Node<'t>,
    /// `x[i]`.
    inner: Node<'t>,
    /// `x[i][j]`, when the use is one.
    outer: Option<Node<'t>>,
}

/// The use of the vector-map parameter `node` as a [`DirectIncrement`], or
/// `None` when it is used otherwise, or its entry index `i` has a side
/// effect (an `if` chain evaluates it once per entry it passes).
fn direct_increment<'t>(
    source: &Source,
    node: Node<'t>,
    ancestors: &[Node<'t>],
    helpers: &Helpers,
) -> Option<DirectIncrement<'t>> {
    let (inner, outer, whole) = two_dimensional_use(source, node, ancestors);
    let (inner, whole) = (inner?, whole?);
    let op = c::ancestor(ancestors, 2)?;
    let adds = match op.kind() {
        "update_expression" => op.child_by_field_name("argument") == Some(whole),
        "assignment_expression" => {
            op.child_by_field_name("left") == Some(whole)
                && op
                    .child_by_field_name("operator")
                    .is_some_and(|o| matches!(source.text(o), "+=" | "-="))
        }
        _ => false,
    };
    let statement = c::ancestor(ancestors, 3).filter(|s| s.kind() == "expression_statement")?;
    (adds
        && brackets(inner).is_some()
        && !has_side_effect(source, inner, helpers, &mut Memo::default()))
    .then_some(DirectIncrement {
        statement,
        whole,
        inner,
        outer,
    })
}

/// The text of a [`DirectIncrement`] on the parameters `params` (one per
/// entry): the statement on `params[i]` where `i` is a literal, else
/// `{ if ((i) == 0) …; else if ((i) == 1) …; }`, one branch per entry, each
/// the statement as translated with `x[i][j]` replaced by `params[e][j]`.
/// `Err` when an edit crosses the use's bounds (then the pieces would not
/// make the statement).
fn direct_text(
    text: &str,
    use_: &DirectIncrement<'_>,
    params: &[String],
    edits: &Edits,
) -> Result<String, String> {
    let crossed = || "an expansion crosses it".to_owned();
    let statement = use_.statement.byte_range();
    let whole = use_.whole.byte_range();
    let (open, close) = brackets(use_.inner).ok_or_else(crossed)?;
    let entry = edits.apply(text, open.end_byte()..close.start_byte());
    let component = match use_.outer {
        Some(outer) => {
            let (open, close) = brackets(outer).ok_or_else(crossed)?;
            edits.apply(text, open.end_byte()..close.start_byte())
        }
        None => "0".to_owned(),
    };
    let before = edits.apply(text, statement.start..whole.start);
    let after = edits.apply(text, whole.end..statement.end);
    if format!("{before}{}{after}", edits.apply(text, whole.clone()))
        != edits.apply(text, statement)
    {
        return Err(crossed());
    }
    let on = |param: &str| format!("{before}{param}[{component}]{after}");
    if let Ok(e) = entry.trim().parse::<usize>()
        && let Some(param) = params.get(e)
    {
        return Ok(on(param));
    }
    let mut out = String::from("{");
    for (e, param) in params.iter().enumerate() {
        let keyword = if e == 0 { " if" } else { " else if" };
        out.push_str(&format!("{keyword} (({entry}) == {e}) {}", on(param)));
    }
    out.push_str(" }");
    Ok(out)
}

/// `x[i][j]` → `x[(i) * C + (j)]` and `*x[i]` → `x[(i) * C + (0)]` (`whole`
/// the use, `inner` its `x[i]`, `outer` its `x[i][j]` if it is one), by
/// editing the punctuation only, so that the edits inside the indices
/// (macros, helpers, other flattened arrays) stay.
fn flatten(
    whole: Node<'_>,
    inner: Node<'_>,
    outer: Option<Node<'_>>,
    columns: u64,
    edits: &mut Edits,
) {
    let Some((open, close)) = brackets(inner) else {
        return;
    };
    match outer {
        Some(outer) => {
            let Some((outer_open, outer_close)) = brackets(outer) else {
                return;
            };
            edits.replace(open, "[(");
            edits.replace_range(
                close.start_byte(),
                outer_open.end_byte(),
                format!(") * {columns} + ("),
            );
            edits.replace(outer_close, ")]");
        }
        None => {
            edits.replace(open, "[(");
            if let Some(star) = whole.child_by_field_name("operator") {
                edits.replace(star, "");
            }
            edits.replace(close, format!(") * {columns} + (0)]"));
        }
    }
}

/// A macro's expansion `text` with its two-dimensional uses of the
/// flattened arrays (`flat` gives the columns of a `.op2` name that is one) flattened as
/// [`flatten`] does in the kernel's own text (`#define V(i) x[i][0]`); the
/// uses the kernel's text flattened before (in the arguments) are already
/// one-dimensional. A text that does not parse is kept: the `.op2` analysis
/// of the result reports it.
fn flatten_expansion(text: String, flat: &dyn Fn(&str) -> Option<u64>) -> Result<String, String> {
    let mut named = false;
    c::map_words(&text, |word| {
        named |= flat(word).is_some();
        None
    });
    if !named {
        return Ok(text);
    }
    // The names kept unexpanded are marked (`inline::unpaint`) with a
    // byte the C parser does not take: parsed as a space, which has its
    // length, so the edits apply to the marked text.
    const BEFORE: &str = "void op2_import_expansion() {\n";
    let parsed = format!("{BEFORE}{}\n;}}", text.replace(inline::PAINTED, " "));
    let range = BEFORE.len()..BEFORE.len() + text.len();
    let source = Source::parse(std::path::Path::new(""), String::new(), parsed)?;
    let mut edits = Edits::default();
    walk(source.tree.root_node(), |node, ancestors| {
        if node.kind() == "identifier"
            && let Some(columns) = flat(source.text(node))
            && let (Some(inner), outer, Some(whole)) = two_dimensional_use(&source, node, ancestors)
        {
            flatten(whole, inner, outer, columns, &mut edits);
        }
        true
    });
    let marked = format!("{BEFORE}{text}\n;}}");
    Ok(edits.apply(&marked, range))
}

/// A construct of C outside the kernel subset of `.op2` (language.md §5),
/// found alike by the three walkers of kernel C: a kernel's body, a macro's
/// body ([`inline`]'s `translate_body`) and a helper's expression
/// ([`inline`]'s `template`). Each says it in its own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outside {
    /// A node of a kind the subset does not have (`switch statement`, …),
    /// its kind in words; not descended into.
    Kind(String),
    /// `&x`; not descended into.
    Address,
    /// A local declared as a pointer; not descended into.
    LocalPointer,
    /// A local declared `static` (or `volatile`, …): the word.
    Qualifier(String),
    /// A literal `.op2` does not have (an octal, a suffix): why.
    Literal(String),
}

impl Outside {
    /// Whether the walk must not look inside the node.
    pub(crate) fn stops(&self) -> bool {
        matches!(
            self,
            Outside::Kind(_) | Outside::Address | Outside::LocalPointer
        )
    }
}

/// What of the named node `node` (with its `ancestors`) is outside the
/// kernel subset, and where: the node itself, or a word of a declaration.
/// A callee written `std::sqrt` is the call's to check.
pub(crate) fn outside_subset<'t>(
    source: &Source,
    node: Node<'t>,
    ancestors: &[Node<'t>],
) -> Option<(Node<'t>, Outside)> {
    let kind = node.kind();
    if kind == "qualified_identifier" && c::is_callee(node, ancestors) {
        return None;
    }
    if !KERNEL_KINDS.contains(&kind) {
        return Some((node, Outside::Kind(kind.replace('_', " "))));
    }
    match kind {
        "pointer_expression"
            if node
                .child_by_field_name("operator")
                .is_some_and(|o| source.text(o) == "&") =>
        {
            Some((node, Outside::Address))
        }
        "pointer_declarator"
            if c::ancestor(ancestors, 0).is_some_and(|p| p.kind() != "parameter_declaration") =>
        {
            Some((node, Outside::LocalPointer))
        }
        "number_literal" => {
            literal_problem(source.text(node)).map(|why| (node, Outside::Literal(why)))
        }
        "declaration" => c::named_children(node)
            .into_iter()
            .find(|child| {
                matches!(child.kind(), "storage_class_specifier" | "type_qualifier")
                    && source.text(*child) != "const"
            })
            .map(|child| (child, Outside::Qualifier(source.text(child).to_owned()))),
        _ => None,
    }
}

/// The `[` and `]` of a subscript expression's indices.
fn brackets(subscript: Node<'_>) -> Option<(Node<'_>, Node<'_>)> {
    let list = subscript.child_by_field_name("indices")?;
    let open = list.child(0).filter(|t| t.kind() == "[")?;
    let close = list
        .child(list.child_count().checked_sub(1)?)
        .filter(|t| t.kind() == "]")?;
    Some((open, close))
}

/// The math built-ins whose C++ `float` overload (`std::sqrt(float)`, which
/// `<cmath>` and C++'s `<math.h>` declare) gives the `double` version's result
/// rounded to `float`, as these are exact or correctly rounded.
const FLOAT_OVERLOADS: &[&str] = &["sqrt", "fabs", "fmin", "fmax", "floor", "ceil", "round"];

/// The math built-ins whose `float` versions (`expf`, and C++'s overload
/// `std::exp(float)`) `.op2` cannot compute: its built-in is the `double`
/// one, and that result rounded to `float` differs from glibc's `float`
/// function in the last bit for some arguments (docs/import.md).
const INEXACT_IN_FLOAT: &[&str] = &[
    "exp", "log", "log10", "pow", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
];

/// Translates the call `node` of the math built-in `callee` where C++
/// calls its `float` overload, on arguments that are all `float`
/// ([`is_float`], `types` giving an identifier's declared scalar type; the call is `std::…`, or
/// `overloads`: a source includes `<math.h>` or says `using namespace
/// std`): `(float) sqrt(x)` for an exact one. `false` for one `.op2`
/// cannot compute in `float` (`exp`, …), which the caller reports.
pub(crate) fn float_overload(
    source: &Source,
    node: Node<'_>,
    callee: &str,
    types: &dyn Fn(Node<'_>) -> Option<&'static str>,
    overloads: bool,
    edits: &mut Edits,
    memo: &mut Memo,
) -> bool {
    let args = c::call_arguments(node);
    let function = node.child_by_field_name("function");
    let qualified = function.is_some_and(|f| f.kind() == "qualified_identifier");
    let float = (qualified || overloads)
        && !args.is_empty()
        && args.iter().all(|a| is_float(source, *a, types, memo));
    if float
        && FLOAT_OVERLOADS.contains(&callee)
        && let Some(f) = function
    {
        edits.replace(f, format!("(float) {callee}"));
    }
    !(float && INEXACT_IN_FLOAT.contains(&callee))
}

/// Why `what`, the `float` version of the built-in `double`, is not
/// translated (in kernel `kernel`).
fn inexact_in_float(double: &str, what: &str, kernel: &str) -> String {
    format!(
        "{what} computes in `float`, which `.op2` cannot reproduce: its `{double}` computes in `double`, and that result rounded to `float` differs from C's `{double}f` in the last bit for some arguments (in kernel `{kernel}`)"
    )
}

/// Whether C++ gives `node` the type `float`: a `float` literal, variable
/// or element, a cast to `float`, arithmetic of those (an integer literal,
/// variable or element converts to the other operand's type), or a float
/// overload of them;
/// `false` when it does not or when this cannot tell.
fn is_float(
    source: &Source,
    node: Node<'_>,
    types: &dyn Fn(Node<'_>) -> Option<&'static str>,
    memo: &mut Memo,
) -> bool {
    // After the parts it depends on, each node once: asked for each of a
    // chain of nested calls `sqrt(sqrt(…))`, a walk of the rest of the chain
    // each time was quadratic in its depth.
    let mut stack = vec![(node, false)];
    while let Some((n, parts_known)) = stack.pop() {
        if memo.float.contains_key(&n.id()) {
            continue;
        }
        match float_parts(source, n, types) {
            None => {
                memo.float.insert(n.id(), false);
            }
            Some(parts) if parts_known => {
                let float = parts.iter().all(|p| memo.float.get(&p.id()) == Some(&true));
                memo.float.insert(n.id(), float);
            }
            Some(parts) => {
                stack.push((n, true));
                stack.extend(
                    parts
                        .into_iter()
                        .filter(|p| !memo.float.contains_key(&p.id()))
                        .map(|p| (p, false)),
                );
            }
        }
    }
    memo.float.get(&node.id()) == Some(&true)
}

/// What [`is_float`] decides at `n` alone: `None` when `n` is not `float`
/// whatever its parts, else the parts it is `float` with, all of them.
fn float_parts<'t>(
    source: &Source,
    n: Node<'t>,
    types: &dyn Fn(Node<'_>) -> Option<&'static str>,
) -> Option<Vec<Node<'t>>> {
    let leaf = |float: bool| float.then(Vec::new);
    match n.kind() {
        "number_literal" => {
            let t = source.text(n);
            leaf(
                !t.starts_with("0x")
                    && !t.starts_with("0X")
                    && t.ends_with(['f', 'F'])
                    && t.contains(['.', 'e', 'E']),
            )
        }
        "identifier" => leaf(types(n) == Some("float")),
        "parenthesized_expression" | "unary_expression" | "pointer_expression" => {
            let operator = n.child_by_field_name("operator").map(|o| source.text(o));
            let inner = if n.kind() == "parenthesized_expression" {
                n.named_child(0)
            } else {
                n.child_by_field_name("argument")
            };
            match (operator, inner) {
                (None | Some("-" | "+" | "*"), Some(inner)) => Some(vec![inner]),
                _ => None,
            }
        }
        "subscript_expression" => n.child_by_field_name("argument").map(|array| vec![array]),
        "cast_expression" => leaf(
            n.child_by_field_name("type")
                .is_some_and(|t| scalar_type(source.text(t)) == Some("float")),
        ),
        "binary_expression" => {
            let operator = n.child_by_field_name("operator").map(|o| source.text(o));
            match (
                operator,
                n.child_by_field_name("left"),
                n.child_by_field_name("right"),
            ) {
                (Some("+" | "-" | "*" | "/"), Some(l), Some(r)) => {
                    // An integer converts to the other operand's `float`:
                    // a literal, or a variable, element or `*` of one
                    // declared of an integer type (`x[0] * n[0]`).
                    let int = |x: Node<'_>| {
                        let dereferenced = x.kind() == "subscript_expression"
                            || (x.kind() == "pointer_expression"
                                && x.child_by_field_name("operator")
                                    .is_some_and(|o| source.text(o) == "*"));
                        let named = match x.kind() {
                            "identifier" => Some(x),
                            _ if dereferenced => x
                                .child_by_field_name("argument")
                                .filter(|a| a.kind() == "identifier"),
                            _ => None,
                        };
                        (x.kind() == "number_literal"
                            && source.text(x).bytes().all(|b| b.is_ascii_digit()))
                            || named.is_some_and(|v| {
                                matches!(types(v), Some("int" | "uint" | "ll" | "ull" | "bool"))
                            })
                    };
                    Some(if int(l) {
                        vec![r]
                    } else if int(r) {
                        vec![l]
                    } else {
                        vec![l, r]
                    })
                }
                _ => None,
            }
        }
        "call_expression" => {
            let args = c::call_arguments(n);
            (c::called_name(source, n).is_some_and(|f| FLOAT_OVERLOADS.contains(&f))
                && !args.is_empty())
            .then_some(args)
        }
        _ => None,
    }
}

/// The answers of [`is_float`] and [`has_side_effect`] for the nodes of
/// one tree, each node's found once.
#[derive(Default)]
pub(crate) struct Memo {
    float: std::collections::HashMap<usize, bool>,
    side_effect: std::collections::HashMap<usize, bool>,
}

/// The array declarator of `x[R][C]` (the outer one) and its sizes, when
/// both are integer literals.
fn two_dimensions<'t>(source: &Source, declarator: Node<'t>) -> Option<(Node<'t>, u64, u64)> {
    let outer = if declarator.kind() == "init_declarator" {
        if declarator.child_by_field_name("value").is_some() {
            return None;
        }
        declarator.child_by_field_name("declarator")?
    } else {
        declarator
    };
    let inner = outer.child_by_field_name("declarator")?;
    if outer.kind() != "array_declarator" || inner.kind() != "array_declarator" {
        return None;
    }
    let size =
        |n: Node<'_>| -> Option<u64> { source.text(n.child_by_field_name("size")?).parse().ok() };
    let (rows, columns) = (size(inner)?, size(outer)?);
    rows.checked_mul(columns)?;
    Some((outer, rows, columns))
}

/// Whether the identifier `node` (a parameter) is used only to add to it
/// (`p[i] += …`, `*p -= …`, `(*p)++`), and the `*p` around it if any.
fn increment_use<'t>(
    source: &Source,
    node: Node<'t>,
    ancestors: &[Node<'t>],
) -> (Option<Node<'t>>, bool) {
    let mut top = node;
    let mut deref = None;
    let mut above = ancestors.iter().rev();
    let parent = loop {
        let Some(parent) = above.next() else {
            return (deref, false);
        };
        match parent.kind() {
            "subscript_expression" if parent.child_by_field_name("argument") == Some(top) => {
                top = *parent;
            }
            "pointer_expression"
                if parent
                    .child_by_field_name("operator")
                    .is_some_and(|o| source.text(o) == "*") =>
            {
                if top == node {
                    deref = Some(*parent);
                }
                top = *parent;
            }
            "parenthesized_expression" => top = *parent,
            _ => break *parent,
        }
    };
    let adds = match parent.kind() {
        "update_expression" => true,
        "assignment_expression" => {
            parent.child_by_field_name("left") == Some(top)
                && parent
                    .child_by_field_name("operator")
                    .is_some_and(|o| matches!(source.text(o), "+=" | "-="))
        }
        _ => false,
    };
    (deref, adds)
}

/// Stages each parameter bound to an INC argument that the body reads or
/// assigns with `=`: OP2 defines an INC argument as an increment, which its
/// parallel backends give the kernel as a zeroed local that is added to the
/// target afterwards, and `.op2` allows only `+=`, `-=`, `++` and `--` on
/// the parameter (E502). So the body works on a local
/// `NAME_inc[DIM]` (`params` holds the parameters' `.op2` names) that starts
/// at zero and is added to the parameter where the kernel ends ([`stage`]),
/// with `_` appended while [`Fresh`] has the name in use. Returns the
/// locals, and where each staged parameter is first used in a way `.op2`
/// forbids.
fn stage_increments<'t>(
    inc: &BTreeMap<usize, usize>,
    params: &[(String, &'static str)],
    fresh: &mut Fresh,
    uses: &[IncUse<'t>],
    edits: &mut Edits,
) -> (Vec<Staged>, Vec<Node<'t>>) {
    let mut first_misuse = Vec::new();
    let mut staged = Vec::new();
    // Each parameter's uses, and the first that is not an increment, in
    // one pass (searches of all the uses per parameter were quadratic).
    let mut uses_of: BTreeMap<usize, Vec<&IncUse<'t>>> = BTreeMap::new();
    for use_ in uses {
        uses_of.entry(use_.0).or_default().push(use_);
    }
    for (&k, &dim) in inc {
        let of_k = uses_of.get(&k).map_or(&[][..], Vec::as_slice);
        let Some(misuse) = of_k.iter().find(|u| !u.3) else {
            continue;
        };
        first_misuse.push(misuse.1);
        let (name, ty) = &params[k];
        let local = fresh
            .claim(&format!("inc {name}"), |attempt| {
                vec![format!("{name}_inc{}", "_".repeat(attempt))]
            })
            .remove(0);
        for (_, ident, deref, _) in of_k.iter().copied() {
            match deref {
                Some(deref) => edits.replace(*deref, format!("{local}[0]")),
                None => edits.replace(*ident, local.clone()),
            }
        }
        staged.push(Staged {
            local,
            ty,
            params: vec![name.clone()],
            dim,
            fill: false,
            exit: Some("+="),
        });
    }
    (staged, first_misuse)
}

/// A local array the kernel works on in place of parameters (each of `dim`
/// components, one after another in the local).
#[derive(Debug, Clone)]
struct Staged {
    local: String,
    ty: &'static str,
    /// The `.op2` parameters it stands for.
    params: Vec<String>,
    dim: usize,
    /// Whether it starts with the parameters' values (else with zeros).
    fill: bool,
    /// How it goes back to the parameters where the kernel ends: `+=`
    /// (added), `=` (stored), or not at all.
    exit: Option<&'static str>,
}

/// A kernel parameter bound to a vector-map argument, as `.op2` takes it.
#[derive(Debug)]
struct VectorParam {
    /// The parameters it becomes, one per map entry.
    params: Vec<String>,
    entries: usize,
    staged: Staged,
}

/// A use of a parameter bound to an INC argument: the parameter's position,
/// the identifier, the dereference around it (if any), and whether the use
/// only adds to it.
type IncUse<'t> = (usize, Node<'t>, Option<Node<'t>>, bool);

/// Declares each staged local after the body's opening brace, and puts what
/// goes back to the parameters where the kernel ends: before each `return;`
/// and before the closing brace. `Err` (and nothing edited) when those
/// copies together would pass [`inline::EXPANSION_LIMIT`].
fn stage<'t>(
    body: Node<'t>,
    staged: &[Staged],
    returns: &[Node<'t>],
    edits: &mut Edits,
) -> Result<(), String> {
    if staged.is_empty() {
        return Ok(());
    }
    let too_long = || {
        Err(format!(
            "the locals it works on and what goes back to its parameters where it ends, at its {} and its end, are longer than {} KiB",
            crate::report::count(returns.len(), "`return`", "`return`s"),
            inline::EXPANSION_LIMIT >> 10
        ))
    };
    // What the copies take, counted as they are made: each exit is put at
    // every `return` and at the end.
    let written = |declarations: &String, exits: &String| {
        exits
            .len()
            .saturating_mul(returns.len() + 1)
            .saturating_add(declarations.len())
    };
    let mut declarations = String::new();
    let mut exits = String::new();
    for s in staged {
        // Every value takes a few bytes at least: refused before it is
        // written when there are too many.
        if s.params.len().saturating_mul(s.dim).saturating_mul(3) > inline::EXPANSION_LIMIT {
            return too_long();
        }
        let zero = match s.ty {
            "double" => "0.0",
            "float" => "0.0f",
            "uint" => "0u",
            _ => "0",
        };
        let values: Vec<String> = s
            .params
            .iter()
            .flat_map(|p| {
                (0..s.dim).map(move |c| {
                    if s.fill {
                        format!("{p}[{c}]")
                    } else {
                        zero.to_owned()
                    }
                })
            })
            .collect();
        declarations.push_str(&format!(
            "\n    {} {}[{}] = {{{}}};",
            s.ty,
            s.local,
            values.len(),
            values.join(", ")
        ));
        if let Some(op) = s.exit {
            for (e, p) in s.params.iter().enumerate() {
                for c in 0..s.dim {
                    exits.push_str(&format!(" {p}[{c}] {op} {}[{}];", s.local, e * s.dim + c));
                }
            }
        }
        // The locals' declarations count too: a READ vector has no copies
        // back, and a hundred of them, 1024 values each, made a megabyte.
        if written(&declarations, &exits) > inline::EXPANSION_LIMIT {
            return too_long();
        }
    }
    if !exits.is_empty() {
        for ret in returns {
            edits.replace(*ret, format!("{{{exits} return; }}"));
        }
    }
    // After the opening brace, and before the closing one.
    let open = body.start_byte() + 1;
    edits.replace_range(open, open, declarations);
    if !exits.is_empty() {
        let close = body.end_byte() - 1;
        edits.replace_range(close, close, format!("{exits}\n"));
    }
    Ok(())
}

/// The translated texts of a call's arguments.
fn argument_texts(source: &Source, call: Node<'_>, edits: &Edits) -> Vec<String> {
    c::call_arguments(call)
        .into_iter()
        .map(|a| edits.apply(&source.text, a.byte_range()))
        .collect()
}

/// Whether evaluating `node` changes something: an assignment, `++`, `--`,
/// or a call of anything but the math built-ins and macros.
fn has_side_effect(source: &Source, node: Node<'_>, helpers: &Helpers, memo: &mut Memo) -> bool {
    // After its children, each node once: asked for the arguments of each
    // of a chain of nested calls `f(f(…))`, a walk of the rest of the chain
    // each time was quadratic in its depth.
    let own = |n: Node<'_>| match n.kind() {
        "assignment_expression" | "update_expression" => true,
        "call_expression" => c::called_name(source, n)
            .is_none_or(|callee| !c::is_builtin(callee) && !helpers.macros.contains_key(callee)),
        _ => false,
    };
    let mut stack = vec![(node, false)];
    while let Some((n, children_known)) = stack.pop() {
        if memo.side_effect.contains_key(&n.id()) {
            continue;
        }
        if own(n) {
            memo.side_effect.insert(n.id(), true);
        } else if children_known {
            let mut cursor = n.walk();
            let any = n
                .children(&mut cursor)
                .any(|child| memo.side_effect.get(&child.id()) == Some(&true));
            memo.side_effect.insert(n.id(), any);
        } else {
            stack.push((n, true));
            let mut cursor = n.walk();
            stack.extend(
                n.children(&mut cursor)
                    .filter(|child| !memo.side_effect.contains_key(&child.id()))
                    .map(|child| (child, false)),
            );
        }
    }
    memo.side_effect.get(&node.id()) == Some(&true)
}

/// A parameter's `.op2` text and name: `[const] TYPE *NAME` or
/// `[const] TYPE NAME[DIM]`.
/// (`NAME` its `.op2` name `renamed`).
fn parameter_text(
    source: &Source,
    parameter: Node<'_>,
    renamed: &str,
) -> Result<(String, String), String> {
    let (op2_ty, name, is_const, levels, pointer) = parameter_parts(source, parameter)?;
    if levels == 2 && pointer {
        return Err(format!(
            "parameter `{name}` is `T **{name}`, but the par_loops do not pass it a vector-map argument (an `op_arg_dat` with index `-N`)"
        ));
    }
    if levels != 1 {
        return Err(format!(
            "parameter `{name}` has {} of indirection; a kernel parameter is `T *{name}` or `T {name}[DIM]`",
            crate::report::count(levels, "level", "levels")
        ));
    }
    let declarator = parameter
        .child_by_field_name("declarator")
        .ok_or("a parameter without a name")?;
    let constness = if is_const { "const " } else { "" };
    let text = if pointer {
        format!("{constness}{op2_ty} *{renamed}")
    } else {
        let open = source.text(declarator).find('[').unwrap_or(0);
        format!(
            "{constness}{op2_ty} {renamed}{}",
            &source.text(declarator)[open..]
        )
    };
    Ok((text, name))
}

/// A `T **x` (or `T *x[K]`) parameter bound to a vector-map argument (its
/// `.op2` name `local`, the local copy's): the `.op2` text of the
/// parameters it becomes (`T *x_0, …`, with `_` appended to `x` while
/// [`Fresh`] has one of the names in use), its name, and how the body
/// stages it.
fn vector_parameter(
    source: &Source,
    parameter: Node<'_>,
    vector: Vector,
    local: &str,
    fresh: &mut Fresh,
) -> Result<(String, String, VectorParam), String> {
    let (ty, name, is_const, levels, pointer) = parameter_parts(source, parameter)?;
    if levels != 2 || !pointer {
        return Err(format!(
            "parameter `{name}` is bound to a vector-map argument (a negative index) but is not `T **{name}`"
        ));
    }
    let params = fresh.claim(&format!("vector {local} {}", vector.entries), |attempt| {
        (0..vector.entries)
            .map(|e| format!("{local}{}_{e}", "_".repeat(attempt)))
            .collect()
    });
    let local = local.to_owned();
    let constness = if is_const { "const " } else { "" };
    let text = params
        .iter()
        .map(|p| format!("{constness}{ty} *{p}"))
        .collect::<Vec<_>>()
        .join(", ");
    let staged = Staged {
        local,
        ty,
        params: params.clone(),
        dim: vector.dim,
        fill: matches!(vector.mode, "READ" | "RW"),
        exit: match vector.mode {
            "INC" => Some("+="),
            "RW" | "WRITE" => Some("="),
            _ => None,
        },
    };
    Ok((
        text,
        name,
        VectorParam {
            params,
            entries: vector.entries,
            staged,
        },
    ))
}

/// A parameter's `.op2` scalar type, name, whether it is `const`, its levels
/// of indirection (`*` and `[]`), and whether it has a `*`.
fn parameter_parts(
    source: &Source,
    parameter: Node<'_>,
) -> Result<(&'static str, String, bool, usize, bool), String> {
    let ty = parameter
        .child_by_field_name("type")
        .ok_or("a parameter without a type")?;
    let op2_ty = scalar_type(source.text(ty)).ok_or_else(|| {
        format!(
            "parameter type `{}` has no `.op2` counterpart",
            source.text(ty)
        )
    })?;
    let declarator = parameter
        .child_by_field_name("declarator")
        .ok_or("a parameter without a name")?;
    let (ident, pointer, arrays) =
        c::declared_name(declarator).ok_or("a parameter that is not a pointer or an array")?;
    let is_const = c::named_children(parameter)
        .iter()
        .any(|n| n.kind() == "type_qualifier" && source.text(*n) == "const");
    let levels = source.text(declarator).matches('*').count() + arrays;
    Ok((
        op2_ty,
        source.text(ident).to_owned(),
        is_const,
        levels,
        pointer,
    ))
}

/// Why a C number literal cannot be written as it is in `.op2`.
pub fn literal_problem(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let is_hex = lower.starts_with("0x");
    let float = !is_hex && (lower.contains('.') || lower.contains('e'));
    if text.contains('\'') {
        return Some(format!("literal `{text}` has digit separators"));
    }
    if !float && !is_hex && text.len() > 1 && text.starts_with('0') {
        return Some(format!(
            "octal literal `{text}`: `.op2` reads it as decimal"
        ));
    }
    if lower.starts_with("0b") {
        return Some(format!("binary literal `{text}`"));
    }
    let suffix_ok = if float {
        !lower.ends_with('l')
    } else {
        !lower.trim_end_matches('u').contains('l')
    };
    (!suffix_ok).then(|| format!("literal `{text}` has a suffix `.op2` does not have"))
}

/// Counts an expansion of `len` bytes against the kernel's budget of
/// [`inline::EXPANSION_LIMIT`] bytes in all (every use of an object-like
/// macro counts too).
fn within_budget(spent: &mut usize, len: usize) -> Result<(), String> {
    *spent = spent.saturating_add(len);
    if *spent > inline::EXPANSION_LIMIT {
        return Err(format!(
            "the kernel's expansions together are longer than {} KiB",
            inline::EXPANSION_LIMIT >> 10
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Its first parameter bound to a vector-map argument.
    fn vector_bindings(entries: usize, dim: usize, mode: &'static str) -> Bindings {
        Bindings {
            vectors: BTreeMap::from([(0, Ok(Vector { entries, dim, mode }))]),
            ..Bindings::default()
        }
    }

    /// Translates the last function of `text`, with `bindings`; the
    /// functions before it are helpers it may call.
    fn translate_one(text: &str, bindings: &Bindings) -> (Kernel, Report) {
        let path = std::path::Path::new("k.h");
        let mut source = Source::parse(path, "k.h".to_owned(), text.to_owned()).unwrap();
        source.defines = c::defines(&source);
        let mut functions: Vec<_> = c::named_children(source.tree.root_node())
            .into_iter()
            .filter(|n| n.kind() == "function_definition")
            .map(|n| (&source, n))
            .collect();
        let (_, function) = functions.pop().unwrap();
        let helpers = Helpers::new(&source.defines, &[&source], &functions);
        let mut report = Report::default();
        let kernel = translate(&source, function, &helpers, bindings, &mut report);
        (kernel, report)
    }

    /// Each of a chain of nested calls asks whether its arguments are
    /// `float`, walking the rest of the chain each time (quadratic in its
    /// depth): now answered once per node, the same at every depth; and a
    /// helper's argument is searched for side effects through a deep chain.
    #[test]
    fn nested_calls_are_decided_alike_at_every_depth() {
        let depth = 3_000;
        let kernel_of = |bottom: &str| {
            format!(
                "double twice(double y) {{ return 2.0 * y; }}\nvoid k(float *x, double *d) {{ *x = {}*x{}; *d = twice({}{bottom}{}); }}",
                "std::sqrt(".repeat(depth),
                ")".repeat(depth),
                "std::fabs(".repeat(depth),
                ")".repeat(depth)
            )
        };
        let (kernel, report) = translate_one(&kernel_of("*d"), &Bindings::default());
        assert_eq!(kernel.text.matches("(float) sqrt").count(), depth);
        let side_effect = |report: &Report| report.to_string().contains("has a side effect");
        assert!(!side_effect(&report));
        // One side effect at the bottom of the chain is found.
        let (_, report) = translate_one(&kernel_of("(*d)++"), &Bindings::default());
        assert!(side_effect(&report));
    }

    #[test]
    fn copies_back_at_too_many_returns_are_reported_not_written() {
        let bindings = vector_bindings(16, 64, "RW");
        // Few returns: the copies are written before each.
        let (kernel, report) = translate_one(
            "inline void k(double **x) { if (x[0][0] > 1) return; x[1][0] = 2; }",
            &bindings,
        );
        assert!(report.faithful(), "{report}");
        assert!(
            kernel.text.contains("x_15[63] = x[1023]; return;"),
            "{}",
            kernel.text
        );
        // A thousand returns would copy 1024 values at each.
        let returns = "if (x[0][0] > 1) return; ".repeat(1000);
        let (kernel, report) = translate_one(
            &format!("inline void k(double **x) {{ {returns} }}"),
            &bindings,
        );
        assert!(!report.faithful());
        assert!(
            report.to_string().contains("kernel `k` cannot be staged: the locals it works on and what goes back to its parameters where it ends, at its 1000 `return`s and its end, are longer than 1024 KiB"),
            "{report}"
        );
        assert!(kernel.text.len() < 100_000, "{}", kernel.text.len());
    }

    #[test]
    fn a_self_referential_macro_in_a_macro_call_of_the_kernel_expands_as_cpp_does() {
        // An object-like macro written in the argument of a function-like
        // one in the kernel was expanded into the argument, then expanded
        // again when the call's expansion was rescanned: the name its own
        // expansion keeps (`scale`, `A`) was not marked as kept. The
        // expected text is what `cpp -P` gives for the same lines.
        let (kernel, _) = translate_one(
            "#define scale (scale * 2.0)\n#define TWICE(v) (2 * (v))\n#define A (B + 1)\n#define B (A * 2)\ninline void k(double *s) { *s += TWICE(scale) + TWICE(A) + TWICE(TWICE(scale)); }\n",
            &Bindings::default(),
        );
        assert!(
            kernel.text.contains(
                "*s += (2 * ((scale * 2.0))) + (2 * (((A * 2) + 1))) + (2 * ((2 * ((scale * 2.0)))));"
            ),
            "{}",
            kernel.text
        );
        assert!(!kernel.text.contains('\u{2}'), "{:?}", kernel.text);
        // `scale` and `A` are names the kernel reads (consts, say).
        assert!(
            kernel.free_names.contains("scale"),
            "{:?}",
            kernel.free_names
        );
    }

    #[test]
    fn macros_whose_expansions_index_a_vector_parameter_twice_are_flattened() {
        // The kernel's own `x[i][j]` was flattened, but a macro's
        // expansion was put in its place as the macro wrote it: `x[m][0]`
        // of the `double x[8]` copy, which the `.op2` analysis refused.
        let bindings = vector_bindings(4, 2, "READ");
        let (kernel, report) = translate_one(
            "#define V(i) x[i][0]\n#define W(i, j) (x[i][j] + a[j][i])\n#define NEXT(m) (((m) + 1) % 4)\n#define X11 x[1][1]\n#define TWICE(v) (2 * (v))\n\
             inline void k(const double **x, double *s) {\n\
               double a[2][4];\n\
               for (int m = 0; m < 4; m++) { a[0][m] = 1.0; a[1][m] = 2.0; }\n\
               for (int m = 0; m < 4; m++)\n\
                 *s += V(m) * V(NEXT(m)) + TWICE(V(x[3][1] > 0.0 ? 1 : 2)) + W(m % 2, 1) + *x[2] + X11;\n\
             }\n",
            &bindings,
        );
        assert!(report.faithful(), "{report}");
        assert!(
            kernel.text.contains(
                "*s += x[(m) * 2 + (0)] * x[((((m) + 1) % 4)) * 2 + (0)] + (2 * (x[(x[(3) * 2 + (1)] > 0.0 ? 1 : 2) * 2 + (0)])) + (x[(m % 2) * 2 + (1)] + a[(1) * 4 + (m % 2)]) + x[(2) * 2 + (0)] + x[(1) * 2 + (1)];"
            ),
            "{}",
            kernel.text
        );
    }

    #[test]
    fn generated_parameter_names_avoid_the_names_macros_bring_in() {
        // `x_0`, the first parameter the vector-map argument `x` became,
        // was the const `x_0` that the macro `C1` names: the kernel read
        // the parameter's y coordinate instead of the const.
        let bindings = vector_bindings(2, 2, "READ");
        let (kernel, report) = translate_one(
            "#define C1 x_0[1]\n#define C2(v) ((v) * x_1[0])\ninline void k1(const double **x, double *s) { *s += C2(x[0][0]) * C1; }\n",
            &bindings,
        );
        assert!(report.faithful(), "{report}");
        assert!(
            kernel.text.contains("const double *x__0,")
                && kernel.text.contains("const double *x__1,"),
            "{}",
            kernel.text
        );
        assert!(
            kernel
                .text
                .contains("*s += ((x[(0) * 2 + (0)]) * x_1[0]) * x_0[1];"),
            "{}",
            kernel.text
        );
    }

    #[test]
    fn statement_macros_read_only_the_names_they_do_not_declare() {
        // The words of an expansion were taken as names the kernel reads:
        // the macro's own local `t`, `true`, `false`, `if` and `return`,
        // each reported as a value the import could not find.
        let macros = "#define SWAP(a, b) { double t = a; a = b; b = t; }\n#define POS(v) ((v) > 0.0 ? true : false)\n#define BOTH(a, b) { SWAP(a, b); if (POS(a)) a = a * gain; }\n#define STOP(c) if (c) return;\n";
        let (kernel, report) = translate_one(
            &format!("{macros}inline void k(double *x, double *y) {{ BOTH(*x, *y); }}\n"),
            &Bindings::default(),
        );
        assert!(report.faithful(), "{report}");
        assert_eq!(
            kernel.free_names,
            BTreeSet::from(["gain".to_owned()]),
            "{}",
            kernel.text
        );
        // A `return` a macro brings in would skip the copies back of what
        // the kernel staged: refused, naming the macro.
        let (_, report) = translate_one(
            &format!("{macros}inline void k(double *x) {{ STOP(*x > 1.0) *x = 2.0; }}\n"),
            &Bindings::default(),
        );
        assert!(
            report
                .to_string()
                .contains("macro `STOP` (at k.h:4:1): its body holds a `return`"),
            "{report}"
        );
    }

    #[test]
    fn a_vector_map_inc_parameter_read_or_assigned_gets_the_staging_note() {
        // A vector-map INC parameter works on a local that starts at zero,
        // as a staged INC one does; reading it or assigning it with `=`
        // differs from OP2's sequential build, and was not said.
        let bindings = vector_bindings(2, 1, "INC");
        let note = "reads or assigns a parameter bound to an INC argument";
        let (_, report) = translate_one(
            "inline void k(float **f) { f[0][0] = f[1][0] + 1.0f; }",
            &bindings,
        );
        let entry = report
            .entries
            .iter()
            .find(|e| e.message.contains(note))
            .unwrap_or_else(|| panic!("{report}"));
        assert_eq!(entry.kind, Kind::Translated);
        assert_eq!(
            entry.location.as_ref().map(ToString::to_string).as_deref(),
            Some("k.h:1:28")
        );
        // Only adding: no note.
        let (_, report) = translate_one(
            "inline void k(float **f) { f[0][0] += 1.0f; f[1][0] -= 2.0f; }",
            &bindings,
        );
        assert!(!report.to_string().contains(note), "{report}");
    }

    #[test]
    fn float_overloads_in_helpers_and_macros_are_translated_or_reported() {
        // With `<math.h>`, C++ calls `exp(float)` and `sqrt(float)` in a
        // helper function on its `float` parameter, and in a macro given a
        // `float` argument: the helper's `exp` was computed in `double`
        // silently, and its `sqrt` was not rounded to `float` first.
        let text = "#include <math.h>\n#define EXPM(v) exp(v)\ninline float fexp(float a) { return exp(a); }\ninline double root(float a) { return sqrt(a); }\ninline void k(float *f, double *d) { d[0] = root(*f); d[1] = EXPM(*d); }\ninline void j(float *f) { *f = fexp(*f); }\ninline void m(float *f) { *f = EXPM(*f); }\n";
        inline::with_helpers("k.h", text, |source, functions, helpers| {
            float_overloads_checked(source, functions, helpers);
        });
    }

    /// `float` times an `int` is a `float` in C++, so `sqrt` of it is the
    /// `float` overload; `int` times `int` is not (it was taken as
    /// `double` whenever an operand was not a `float`).
    #[test]
    fn a_float_beside_an_integer_takes_the_float_overload() {
        let text = "#include <math.h>\ninline void k(const float *x, const int *n, const double *y, double *d) { d[0] = sqrt(x[0] * n[0]); d[1] = sqrt(n[0] * *n); d[2] = sqrt(x[0] * y[0]); }\n";
        inline::with_helpers("k.h", text, |source, functions, helpers| {
            let node = functions[0].1;
            let mut report = Report::default();
            let translated = translate(source, node, helpers, &Bindings::default(), &mut report);
            assert!(report.faithful(), "{report}");
            assert!(
                translated
                    .text
                    .contains("d[0] = (float) sqrt(x[0] * n[0]);"),
                "{}",
                translated.text
            );
            assert!(
                translated.text.contains("d[1] = sqrt(n[0] * *n);"),
                "{}",
                translated.text
            );
            assert!(
                translated.text.contains("d[2] = sqrt(x[0] * y[0]);"),
                "{}",
                translated.text
            );
        });
    }

    fn float_overloads_checked(
        source: &Source,
        functions: &[(&Source, Node<'_>)],
        helpers: &Helpers,
    ) {
        let kernel = |kernel: &str| {
            let node = functions
                .iter()
                .find(|(_, n)| inline::function_name(source, *n) == Some(kernel))
                .unwrap()
                .1;
            let mut report = Report::default();
            let translated = translate(source, node, helpers, &Bindings::default(), &mut report);
            (translated, report)
        };
        // The exact one is the `float` overload, and `EXPM` of a `double`
        // is the `double` `exp`.
        let (k, report) = kernel("k");
        assert!(report.faithful(), "{report}");
        assert!(
            k.text
                .contains("d[0] = ((double)((float) sqrt(((float)(*f)))));"),
            "{}",
            k.text
        );
        assert!(k.text.contains("d[1] = exp(*d);"), "{}", k.text);
        let (_, report) = kernel("j");
        assert!(
            report.to_string().contains("call to `fexp`, which cannot be inlined into kernel `j`: its expression calls C++'s `float` overload of `exp`"),
            "{report}"
        );
        let (_, report) = kernel("m");
        assert!(
            report
                .to_string()
                .contains("macro `EXPM`, given a `float` argument, calls `exp`"),
            "{report}"
        );
    }

    #[test]
    fn a_vector_map_argument_that_cannot_be_copied_is_reported_with_its_one_cause() {
        // The message named every possible cause at once ("differ in
        // entries, dimension or mode, whose dimension is not an integer
        // literal, or of more than 1024 values") and no parameter name.
        let bindings = Bindings {
            vectors: BTreeMap::from([(1, Err("its dimension is 0".to_owned()))]),
            ..Bindings::default()
        };
        let (_, report) = translate_one(
            "inline void k(double *s, const double **x) { *s += x[0][0]; }",
            &bindings,
        );
        assert!(!report.faithful());
        assert!(
            report.to_string().contains(
                "parameter 2 (`x`) of kernel `k` is bound to a vector-map argument that cannot be copied: its dimension is 0"
            ),
            "{report}"
        );
    }

    #[test]
    fn the_locals_of_many_read_vectors_count_towards_the_staging_limit() {
        // READ vectors have no copies back, so only what went back at the
        // returns was bounded: a hundred parameters of 1024 values each
        // declared a megabyte of locals.
        let vector = Vector {
            entries: 64,
            dim: 16,
            mode: "READ",
        };
        let bindings = Bindings {
            vectors: (0..100).map(|k| (k, Ok(vector))).collect(),
            ..Bindings::default()
        };
        let params: Vec<String> = (0..100).map(|k| format!("const double **p{k}")).collect();
        let (kernel, report) = translate_one(
            &format!("inline void k({}) {{ }}", params.join(", ")),
            &bindings,
        );
        assert!(
            report
                .to_string()
                .contains("kernel `k` cannot be staged: the locals it works on"),
            "{report}"
        );
        assert!(kernel.text.len() < 200_000, "{}", kernel.text.len());
        // Ten of them are fine.
        let bindings = Bindings {
            vectors: (0..10).map(|k| (k, Ok(vector))).collect(),
            ..Bindings::default()
        };
        let (_, report) = translate_one(
            &format!("inline void k({}) {{ }}", params[..10].join(", ")),
            &bindings,
        );
        assert!(report.faithful(), "{report}");
    }

    #[test]
    fn a_helpers_names_are_not_captured_by_the_kernels_locals() {
        // `scaled` reads the global `c1`; inlined into a kernel with a local
        // `c1`, its text `v * c1` would read the local (2.0, not 10.0): the
        // import wrote `*s += ((double) (((double) (*x)) * c1)) + c1;`, and
        // `op2 run` printed 18 where the native build prints 66. Then it
        // was reported (exit status 1); now the kernel's variable is
        // renamed to a name no source uses (`c1_1` is one, so `c1_2`).
        let helper =
            "double c1 = 10.0;\nint c1_1;\ninline double scaled(double v) { return v * c1; }\n";
        for (kernel, expected) in [
            (
                "inline void k(const double *x, double *s) { double c1 = 2.0; *s += scaled(*x) + c1; }",
                "kernel k(const double *x, double *s) { double c1_2 = 2.0; *s += ((double)(((double)(*x)) * c1)) + c1_2; }",
            ),
            (
                "inline void k(const double *c1, double *s) { *s += scaled(*c1); }",
                "kernel k(const double *c1_2, double *s) { *s += ((double)(((double)(*c1_2)) * c1)); }",
            ),
        ] {
            let (translated, report) =
                translate_one(&format!("{helper}{kernel}\n"), &Bindings::default());
            assert!(report.faithful(), "{report}");
            assert!(translated.text.contains(expected), "{}", translated.text);
            assert!(
                translated.free_names.contains("c1"),
                "{:?}",
                translated.free_names
            );
        }
        // Without the clash it is inlined, reading the global.
        let (kernel, report) = translate_one(
            &format!(
                "{helper}inline void k(const double *x, double *s) {{ double c2 = 2.0; *s += scaled(*x) + c2; }}\n"
            ),
            &Bindings::default(),
        );
        assert!(report.faithful(), "{report}");
        assert!(kernel.free_names.contains("c1"), "{:?}", kernel.free_names);
        // The local an INC parameter is staged through (`s_inc`) takes no
        // name a helper reads either.
        let bindings = Bindings {
            inc: BTreeMap::from([(1, (1, false))]),
            ..Bindings::default()
        };
        let (kernel, report) = translate_one(
            "double s_inc = 1.0;\ninline double bump(double v) { return v + s_inc; }\ninline void k(const double *x, double *s) { *s = bump(*x) * *s; }\n",
            &bindings,
        );
        assert!(report.faithful(), "{report}");
        assert!(
            kernel.text.contains("s_inc_[0] = ((double)"),
            "{}",
            kernel.text
        );
        assert!(!kernel.text.contains("s_inc[0]"), "{}", kernel.text);
    }

    #[test]
    fn renamed_variables_are_renamed_everywhere_they_travel() {
        // A helper reads the global `exit` (`.op2`'s `exit_`): the
        // kernel's local `exit`, `exit_` by default, is `exit_1`; a
        // self-referential macro's kept name (`len`, a global) is `.op2`'s
        // `len_`; a macro names the renamed local; a parameter renamed
        // because a helper reads its name is staged as `c1_1_inc`; and a
        // vector-map parameter renamed alike gives `c1_1_0`, ….
        let text = "double exit, len, c1;\n#define len (len * 2.0)\n#define EXIT2 (exit + exit)\ninline double ex(double v) { return v * exit; }\ninline double sc(double v) { return v * c1; }\ninline void k(const double *x, double *c1) {\n  double exit = *x;\n  *c1 = ex(exit) + EXIT2 + len + sc(1.0);\n}\n";
        let bindings = Bindings {
            inc: BTreeMap::from([(1, (1, false))]),
            ..Bindings::default()
        };
        let (kernel, report) = translate_one(text, &bindings);
        assert!(report.faithful(), "{report}");
        for expected in [
            "kernel k(const double *x, double *c1_1) {",
            "double c1_1_inc[1] = {0.0};",
            "double exit_1 = *x;",
            "c1_1_inc[0] = ((double)(((double)(exit_1)) * exit_)) + (exit_1 + exit_1) + (len_ * 2.0) + ((double)(((double)(1.0)) * c1));",
            "c1_1[0] += c1_1_inc[0];",
        ] {
            assert!(
                kernel.text.contains(expected),
                "{expected}\n{}",
                kernel.text
            );
        }
        assert_eq!(
            kernel.free_names,
            ["c1", "exit", "len"]
                .iter()
                .map(|n| (*n).to_owned())
                .collect()
        );
        let text = "double c1;\ninline double sc(double v) { return v * c1; }\ninline void k(double **c1, double *s) {\n  *s += sc(c1[1][0]);\n}\n";
        let (kernel, report) = translate_one(text, &vector_bindings(2, 1, "READ"));
        assert!(report.faithful(), "{report}");
        for expected in [
            "kernel k(double *c1_1_0, double *c1_1_1, double *s) {",
            "double c1_1[2] = {c1_1_0[0], c1_1_1[0]};",
            "*s += ((double)(((double)(c1_1[(1) * 1 + (0)])) * c1));",
        ] {
            assert!(
                kernel.text.contains(expected),
                "{expected}\n{}",
                kernel.text
            );
        }
    }

    #[test]
    fn a_helpers_object_macro_reads_the_c_name_it_names() {
        // The names a helper's object-like macro reads are C's (`len`, the
        // variable the capture reads), written as `.op2` spells them.
        let text = "double len;\n#define SCALE (len * 2.0)\ninline double sc(double v) { return v * SCALE; }\ninline void k(double *s) { *s += sc(1.0); }\n";
        let (kernel, report) = translate_one(text, &Bindings::default());
        assert!(report.faithful(), "{report}");
        assert!(kernel.text.contains("* (len_ * 2.0)"), "{}", kernel.text);
        assert_eq!(kernel.free_names, BTreeSet::from(["len".to_owned()]));
    }

    #[test]
    fn a_helpers_object_macro_reads_the_helpers_parameter_it_names() {
        // C expands `SC` inside `sc`, where `v` is `sc`'s parameter: the
        // argument, not the kernel's `v`, which keeps its name.
        let text = "double c1;\n#define SC (v * c1)\ninline double sc(double v) { return SC; }\ninline void k(const double *v, double *s) { double w = 3.0; *s += sc(w) + *v; }\n";
        let (kernel, report) = translate_one(text, &Bindings::default());
        assert!(report.faithful(), "{report}");
        assert!(
            kernel.text.contains("(((double)(w)) * c1)"),
            "{}",
            kernel.text
        );
        assert!(kernel.text.contains("const double *v,"), "{}", kernel.text);
        assert_eq!(kernel.free_names, BTreeSet::from(["c1".to_owned()]));
    }
}
