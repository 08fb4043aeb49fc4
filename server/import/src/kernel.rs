//! Kernels: the C functions a par_loop names, translated into `.op2`
//! kernels. The body is copied as written, with edits where `.op2` spells a
//! thing differently; every construct outside the kernel subset is reported
//! at its C location.

use std::collections::BTreeSet;

use tree_sitter::Node;

use crate::c::{self, BUILTINS, Edits, Source, op2_name, scalar_type, walk};
use crate::report::{Kind, Report};

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
}

/// Node kinds of C that mean the same in the `.op2` kernel subset.
const KERNEL_KINDS: &[&str] = &[
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

/// Translates the function definition `function` of `source` into a
/// kernel, reporting what cannot be translated.
pub fn translate(source: &Source, function: Node<'_>, report: &mut Report) -> Kernel {
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
    let mut locals = BTreeSet::new();
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
    let parameters = declarator.and_then(|d| d.child_by_field_name("parameters"));
    let mut first = true;
    for parameter in parameters.map(c::named_children).unwrap_or_default() {
        if !first {
            text.push_str(", ");
        }
        first = false;
        match parameter_text(source, parameter) {
            Ok((param_text, param_name)) => {
                text.push_str(&param_text);
                locals.insert(param_name);
            }
            Err(message) => {
                faithful = false;
                if let Some((ident, _, _)) = parameter
                    .child_by_field_name("declarator")
                    .and_then(c::declared_name)
                {
                    locals.insert(source.text(ident).to_owned());
                }
                text.push_str(source.text(parameter));
                fail(report, parameter, message, None);
            }
        }
    }
    text.push_str(") ");

    let mut free_names = BTreeSet::new();
    let Some(body) = function.child_by_field_name("body") else {
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
        };
    };
    // Locals first, so that uses before a nested declaration still count
    // as local (names are not scoped more finely than the kernel).
    walk(body, |node| {
        if node.kind() == "declaration" {
            for declarator in node.children_by_field_name("declarator", &mut node.walk()) {
                if let Some((ident, _, _)) = c::declared_name(declarator) {
                    locals.insert(source.text(ident).to_owned());
                }
            }
        }
        true
    });
    walk(body, |node| {
        let kind = node.kind();
        if !node.is_named() {
            return true;
        }
        if !KERNEL_KINDS.contains(&kind) {
            faithful = false;
            let what = kind.replace('_', " ");
            fail(
                report,
                node,
                format!("{what} is not in the kernel subset of `.op2` (in kernel `{name}`)"),
                Some("rewrite it with the C subset of language.md §5"),
            );
            return false;
        }
        match kind {
            "identifier" => {
                let ident = source.text(node);
                let renamed = op2_name(ident);
                if renamed != ident {
                    edits.replace(node, renamed);
                }
                let is_callee = node.parent().is_some_and(|p| {
                    p.kind() == "call_expression" && p.child_by_field_name("function") == Some(node)
                });
                if !is_callee && !locals.contains(ident) {
                    free_names.insert(ident.to_owned());
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
            "pointer_expression"
                if node
                    .child_by_field_name("operator")
                    .is_some_and(|o| source.text(o) == "&") =>
            {
                faithful = false;
                fail(
                    report,
                    node,
                    format!("`&` is not in the kernel subset of `.op2` (in kernel `{name}`)"),
                    Some("index the parameter instead of taking an address"),
                );
                return false;
            }
            "pointer_declarator"
                if node
                    .parent()
                    .is_some_and(|p| p.kind() != "parameter_declaration") =>
            {
                faithful = false;
                fail(
                    report,
                    node,
                    format!(
                        "a local pointer is not in the kernel subset of `.op2` (in kernel `{name}`)"
                    ),
                    Some("use an array or index the parameter"),
                );
                return false;
            }
            "call_expression" => {
                let callee = c::called_name(source, node).unwrap_or_else(|| {
                    node.child_by_field_name("function")
                        .map_or("", |f| source.text(f))
                });
                if !BUILTINS.contains(&callee) {
                    faithful = false;
                    let (message, help) = if callee == "printf" || callee == "op_printf" {
                        (
                            format!(
                                "`{callee}` inside a kernel is not yet translated (in kernel `{name}`)"
                            ),
                            "print from `main` after reducing the value into a global",
                        )
                    } else {
                        (
                            format!(
                                "call to `{callee}`: a kernel may call only the math built-ins (in kernel `{name}`)"
                            ),
                            "inline the function into the kernel",
                        )
                    };
                    fail(report, node, message, Some(help));
                    return false;
                }
            }
            "return_statement" if !c::named_children(node).is_empty() => {
                faithful = false;
                fail(
                    report,
                    node,
                    format!("`return` with a value in kernel `{name}`"),
                    Some("a kernel returns nothing"),
                );
            }
            "number_literal" => {
                if let Some(message) = literal_problem(source.text(node)) {
                    faithful = false;
                    fail(report, node, message, None);
                }
            }
            "declaration" => {
                for child in c::named_children(node) {
                    if matches!(child.kind(), "storage_class_specifier" | "type_qualifier")
                        && source.text(child) != "const"
                    {
                        faithful = false;
                        fail(
                            report,
                            child,
                            format!(
                                "`{}` locals are not in the kernel subset",
                                source.text(child)
                            ),
                            None,
                        );
                    }
                }
            }
            _ => {}
        }
        true
    });
    text.push_str(&edits.apply(&source.text, body.byte_range()));
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
    }
}

/// A parameter's `.op2` text and name: `[const] TYPE *NAME` or
/// `[const] TYPE NAME[DIM]`.
fn parameter_text(source: &Source, parameter: Node<'_>) -> Result<(String, String), String> {
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
    let name = source.text(ident).to_owned();
    let levels = source.text(declarator).matches('*').count() + arrays;
    if levels != 1 || !(pointer || arrays == 1) {
        return Err(format!(
            "parameter `{name}` has {levels} levels of indirection; a vector-map argument (negative index) is not yet translated"
        ));
    }
    let constness = if is_const { "const " } else { "" };
    let text = if pointer {
        format!("{constness}{op2_ty} *{}", op2_name(&name))
    } else {
        let open = source.text(declarator).find('[').unwrap_or(0);
        format!(
            "{constness}{op2_ty} {}{}",
            op2_name(&name),
            &source.text(declarator)[open..]
        )
    };
    Ok((text, name))
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
