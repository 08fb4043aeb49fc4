//! Helpers a kernel calls, inlined into it: `.op2` has no functions of the
//! user's, so a call of a function-like macro (the application's
//! `#define NAME(a, b) …`, and OP2's own `MIN` and `MAX`) or of a function
//! whose body is one `return EXPRESSION;` becomes the expression it stands
//! for.
//!
//! A macro is expanded as the C preprocessor does: its body with each
//! parameter replaced by the argument's text. A function is expanded with
//! C's conversions made explicit, `((R)(E))` where `E` is its expression with
//! each parameter replaced by `((T)(ARG))` (`R` the return type, `T` the
//! parameter's), so that arguments and result are converted as the call
//! converts them. Its arguments must have no side effects, because the
//! expression may evaluate a parameter twice or never.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use crate::c::{self, Edits, Source, op2_name, scalar_type, walk};

/// A function-like macro.
#[derive(Debug, Clone)]
pub struct Macro {
    /// Its parameters, in order.
    pub params: Vec<String>,
    /// Its body as written.
    pub body: String,
}

/// OP2's own function-like macros (`op_lib_core.h`), known without reading
/// OP2's headers; an application's definition of the same name wins.
const OP2_MACROS: &[(&str, &[&str], &str)] = &[
    ("MIN", &["a", "b"], "((a < b) ? (a) : (b))"),
    ("MAX", &["a", "b"], "((a > b) ? (a) : (b))"),
];

/// Marks a parameter's place in a function's template.
const PARAM: char = '\u{1}';

/// A function inlined at its calls.
#[derive(Debug, Clone)]
pub struct Template {
    /// The return type, in `.op2`.
    ret: &'static str,
    /// The parameters' types, in `.op2`.
    params: Vec<&'static str>,
    /// The returned expression, translated, with `PARAM i PARAM` in each
    /// parameter's place.
    text: String,
    /// The names it reads that are not its parameters.
    pub free_names: BTreeSet<String>,
}

/// The macros and functions of the application that kernels may call.
#[derive(Debug, Default)]
pub struct Helpers {
    /// Function-like macros, by name.
    pub macros: BTreeMap<String, Macro>,
    /// Object-like macros with a body (`#define NN 6`), by name: the body
    /// with the object-like macros it names expanded.
    pub objects: BTreeMap<String, String>,
    /// Functions, by name: their template, or why they cannot be inlined
    /// (with where).
    pub functions: BTreeMap<String, Result<Template, (c::Location, String)>>,
    /// Whether an unqualified `sqrt` (and the like) of a `float` calls C++'s
    /// `float` overload: a source includes `<math.h>` (whose C++ version
    /// declares the overloads outside `std`) or says `using namespace std`.
    pub float_overloads: bool,
}

impl Helpers {
    /// The function-like macros of `sources` (and OP2's), and every
    /// function of `functions` as a template.
    pub fn new<'s>(sources: &[&'s Source], functions: &[(&'s Source, Node<'s>)]) -> Helpers {
        let mut helpers = Helpers::default();
        for source in sources {
            helpers.float_overloads |= source.text.lines().any(|line| {
                let words: String = line.split_whitespace().collect();
                words.starts_with("#include<math.h>") || words.starts_with("usingnamespacestd;")
            });
            walk(source.tree.root_node(), |node, _| {
                if node.kind() == "preproc_function_def"
                    && let (Some(name), Some(params)) = (
                        node.child_by_field_name("name"),
                        node.child_by_field_name("parameters"),
                    )
                {
                    let body = node
                        .child_by_field_name("value")
                        .map_or("", |v| source.text(v).trim());
                    helpers
                        .macros
                        .entry(source.text(name).to_owned())
                        .or_insert_with(|| Macro {
                            params: c::named_children(params)
                                .iter()
                                .map(|p| source.text(*p).to_owned())
                                .collect(),
                            body: body.to_owned(),
                        });
                    return false;
                }
                if node.kind() == "preproc_def"
                    && let (Some(name), Some(value)) = (
                        node.child_by_field_name("name"),
                        node.child_by_field_name("value"),
                    )
                {
                    helpers
                        .objects
                        .entry(source.text(name).to_owned())
                        .or_insert_with(|| source.text(value).trim().to_owned());
                    return false;
                }
                node.kind() != "function_definition"
            });
        }
        // Bodies that name other macros, expanded as the preprocessor
        // rescans them (a name is not expanded inside its own expansion;
        // eight levels are plenty for real headers).
        // An expansion longer than `EXPANSION_LIMIT` stops where it is (its
        // names then stay unexpanded and are reported where a kernel or the
        // host code uses them).
        let raw = helpers.objects.clone();
        for (name, body) in &mut helpers.objects {
            for _ in 0..8 {
                let Some(expanded) = c::map_words_within(body, EXPANSION_LIMIT, |word| {
                    (word != name).then(|| raw.get(word).cloned()).flatten()
                }) else {
                    break;
                };
                if expanded == *body {
                    break;
                }
                *body = expanded;
            }
        }
        for (name, params, body) in OP2_MACROS {
            helpers
                .macros
                .entry((*name).to_owned())
                .or_insert_with(|| Macro {
                    params: params.iter().map(|p| (*p).to_owned()).collect(),
                    body: (*body).to_owned(),
                });
        }
        for (source, function) in functions {
            if let Some(name) = function_name(source, *function) {
                helpers
                    .functions
                    .entry(name.to_owned())
                    .or_insert_with(|| template(source, *function, &helpers.objects));
            }
        }
        helpers
    }
}

/// The name a function definition defines.
pub fn function_name<'s>(source: &'s Source, function: Node<'_>) -> Option<&'s str> {
    function
        .child_by_field_name("declarator")
        .filter(|d| d.kind() == "function_declarator")
        .and_then(|d| d.child_by_field_name("declarator"))
        .map(|n| source.text(n))
}

/// `function` as a template, or why it cannot be inlined.
fn template(
    source: &Source,
    function: Node<'_>,
    objects: &BTreeMap<String, String>,
) -> Result<Template, (c::Location, String)> {
    let fail = |node: Node<'_>, why: &str| Err((source.location(node), why.to_owned()));
    let ret = match function
        .child_by_field_name("type")
        .map(|t| (t, scalar_type(source.text(t))))
    {
        Some((_, Some(ty))) => ty,
        Some((t, None)) => return fail(t, "its return type is not a scalar type of `.op2`"),
        None => return fail(function, "it has no return type"),
    };
    let declarator = function.child_by_field_name("declarator");
    let mut names = Vec::new();
    let mut params = Vec::new();
    for parameter in declarator
        .and_then(|d| d.child_by_field_name("parameters"))
        .map(c::named_children)
        .unwrap_or_default()
    {
        let ty = parameter
            .child_by_field_name("type")
            .and_then(|t| scalar_type(source.text(t)));
        let declarator = parameter.child_by_field_name("declarator");
        match (ty, declarator) {
            (Some(ty), Some(d)) if d.kind() == "identifier" => {
                names.push(source.text(d).to_owned());
                params.push(ty);
            }
            _ => return fail(parameter, "a parameter is not a scalar passed by value"),
        }
    }
    let Some(body) = function.child_by_field_name("body") else {
        return fail(function, "it has no body");
    };
    let statements = c::named_children(body);
    let expression = match statements.as_slice() {
        [r] if r.kind() == "return_statement" => match c::named_children(*r).as_slice() {
            [e] => *e,
            _ => return fail(*r, "its `return` has no value"),
        },
        _ => return fail(body, "its body is not a single `return EXPRESSION;`"),
    };
    let mut edits = Edits::default();
    let mut free_names = BTreeSet::new();
    let mut problem = None;
    walk(expression, |node, ancestors| {
        if problem.is_some() || !node.is_named() {
            return false;
        }
        let kind = node.kind();
        if kind == "qualified_identifier" && c::is_callee(node, ancestors) {
            return false;
        }
        // The kernel's C subset, without what changes a variable (the
        // parameters are the helper's copies; inlined they would be the
        // caller's).
        if !crate::kernel::KERNEL_KINDS.contains(&kind)
            || matches!(kind, "assignment_expression" | "update_expression")
            || kind.ends_with("_statement")
            || kind == "declaration"
        {
            problem = Some((
                node,
                format!("its expression holds a {}", kind.replace('_', " ")),
            ));
            return false;
        }
        match kind {
            "identifier" if !c::is_callee(node, ancestors) => {
                let ident = source.text(node);
                if let Some(i) = names.iter().position(|n| n == ident) {
                    edits.replace(node, format!("{PARAM}{i}{PARAM}"));
                } else if let Some(body) = objects.get(ident) {
                    free_names.extend(free_words(body, &[]));
                    edits.replace(node, body.clone());
                } else {
                    free_names.insert(ident.to_owned());
                    let renamed = op2_name(ident);
                    if renamed != ident {
                        edits.replace(node, renamed);
                    }
                }
            }
            "sized_type_specifier" => {
                if let Some(ty) = scalar_type(source.text(node)) {
                    edits.replace(node, ty);
                }
            }
            "pointer_expression"
                if node
                    .child_by_field_name("operator")
                    .is_some_and(|o| source.text(o) == "&") =>
            {
                problem = Some((node, "its expression takes an address".to_owned()));
            }
            "call_expression" => match c::called_name(source, node) {
                Some(callee) if c::builtin_call(node, callee, &mut edits) => {}
                _ => {
                    problem = Some((
                        node,
                        "its expression calls something other than the math built-ins".to_owned(),
                    ));
                }
            },
            _ => {}
        }
        problem.is_none()
    });
    if let Some((node, why)) = problem {
        return Err((source.location(node), why));
    }
    Ok(Template {
        ret,
        params,
        text: edits.apply(&source.text, expression.byte_range()),
        free_names,
    })
}

/// The longest text one macro or function expansion may produce, and all of
/// a kernel's together: each parameter used twice, nested thirty deep, would
/// otherwise take 2^30 copies (docs/reliability.md, limits).
pub const EXPANSION_LIMIT: usize = 1 << 20;

fn too_long() -> String {
    format!("its expansion is longer than {} KiB", EXPANSION_LIMIT >> 10)
}

impl Template {
    /// The number of parameters.
    pub fn arity(&self) -> usize {
        self.params.len()
    }

    /// The expression a call with the arguments' (translated) texts stands
    /// for.
    pub fn expand(&self, args: &[String]) -> Result<String, String> {
        let mut out = format!("(({})(", self.ret);
        for (k, piece) in self.text.split(PARAM).enumerate() {
            if k % 2 == 0 {
                out.push_str(piece);
            } else if let Some((ty, arg)) = piece
                .parse::<usize>()
                .ok()
                .and_then(|i| Some((self.params.get(i)?, args.get(i)?)))
            {
                out.push_str(&format!("(({ty})({arg}))"));
            }
            if out.len() > EXPANSION_LIMIT {
                return Err(too_long());
            }
        }
        out.push_str("))");
        Ok(out)
    }
}

impl Macro {
    /// The body with each parameter replaced by the argument's text, as the
    /// preprocessor expands it, or why it cannot be expanded here.
    pub fn expand(
        &self,
        args: &[String],
        objects: &BTreeMap<String, String>,
    ) -> Result<String, String> {
        if self.body.contains('#') || self.body.contains('"') || self.body.contains('\'') {
            return Err("its body uses `#`, `##` or a literal string".to_owned());
        }
        c::map_words_within(&self.body, EXPANSION_LIMIT, |word| {
            match self.params.iter().position(|p| p == word) {
                Some(i) => args.get(i).cloned(),
                None => objects.get(word).cloned(),
            }
        })
        .ok_or_else(too_long)
    }

    /// The names its body reads that are not its parameters nor C's type
    /// words or the math built-ins: the consts a kernel using it needs.
    pub fn free_names(&self, objects: &BTreeMap<String, String>) -> BTreeSet<String> {
        let body = self.expand(&self.params, objects).unwrap_or_default();
        free_words(&body, &self.params)
    }
}

/// The words of C text that are not `params`, C's type words or the math
/// built-ins: the names it reads.
pub fn free_words(text: &str, params: &[String]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    c::map_words(text, |word| {
        if !params.iter().any(|p| p == word)
            && !c::is_builtin(word)
            && scalar_type(word).is_none()
            && !matches!(word, "const" | "long" | "unsigned" | "signed")
        {
            names.insert(word.to_owned());
        }
        None
    });
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_expansions_stop_at_the_limit_instead_of_doubling_on() {
        // MAX(a,b) uses each parameter twice: thirty nested calls would be
        // 2^30 copies of the innermost argument.
        let max = Macro {
            params: vec!["a".to_owned(), "b".to_owned()],
            body: "((a) > (b) ? (a) : (b))".to_owned(),
        };
        let objects = BTreeMap::new();
        let mut text = "x".to_owned();
        let mut levels = 0;
        let why = loop {
            match max.expand(&[text.clone(), "y".to_owned()], &objects) {
                Ok(expanded) => {
                    assert!(expanded.len() <= EXPANSION_LIMIT);
                    text = expanded;
                    levels += 1;
                    assert!(levels < 30, "never stopped");
                }
                Err(why) => break why,
            }
        };
        assert!(why.contains("longer than 1024 KiB"), "{why}");
        assert!(levels > 10, "stopped too early, at {levels}");
    }

    #[test]
    fn a_word_map_stops_as_soon_as_its_result_is_too_long() {
        let mut calls = 0;
        let out = c::map_words_within(&"w ".repeat(1000), 100, |_| {
            calls += 1;
            Some("long".repeat(10))
        });
        assert_eq!(out, None);
        assert!(
            calls <= 3,
            "{calls} words mapped after the limit was passed"
        );
        assert_eq!(
            c::map_words_within("a b", 100, |w| Some(w.to_uppercase())).as_deref(),
            Some("A B")
        );
    }
}
