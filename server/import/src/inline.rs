//! Helpers a kernel calls, inlined into it: `.op2` has no functions of the
//! user's, so a call of a function-like macro (the application's
//! `#define NAME(a, b) …`, and OP2's own `MIN` and `MAX`) or of a function
//! whose body is one `return EXPRESSION;` becomes the expression it stands
//! for.
//!
//! A macro is expanded as the C preprocessor does: its body with each
//! parameter replaced by the argument's text (`__VA_ARGS__` by the arguments
//! past the named ones), then rescanned for the macros it names, a macro
//! not being expanded again inside its own expansion. Bodies are translated
//! as kernel C once, where they are defined (`#define ABS(x) fabsf(x)` gives
//! `.op2`'s `fabs`), and checked against the kernel subset. A function is expanded with
//! C's conversions made explicit, `((R)(E))` where `E` is its expression with
//! each parameter replaced by `((T)(ARG))` (`R` the return type, `T` the
//! parameter's), so that arguments and result are converted as the call
//! converts them. Its arguments must have no side effects, because the
//! expression may evaluate a parameter twice or never.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use tree_sitter::Node;

use crate::c::{self, Edits, Source, op2_name, scalar_type, walk};
use crate::kernel::Outside;

/// A function-like macro.
#[derive(Debug, Clone)]
pub struct Macro {
    /// Its named parameters, in order.
    pub params: Vec<String>,
    /// Whether `...` follows them (`__VA_ARGS__` in the body).
    pub variadic: bool,
    /// Its body translated as kernel C, parameters as written; or why it
    /// cannot be.
    body: Result<String, String>,
    /// The names its body declares (`t` of `{ double t = a; a = b; b = t; }`):
    /// not names a kernel using it reads.
    locals: BTreeSet<String>,
    /// Where it is defined (`None` for OP2's own).
    location: Option<c::Location>,
}

/// How deep macro expansions may nest (a macro whose expansion names a
/// macro whose expansion names …, or a call in the argument of a call in
/// the argument of …): the expansion recurses that deep at most.
pub const MAX_NESTING: usize = 64;

/// OP2's own function-like macros (`op_lib_core.h`), known without reading
/// OP2's headers; an application's definition of the same name wins.
const OP2_MACROS: &[(&str, &[&str], &str)] = &[
    ("MIN", &["a", "b"], "((a < b) ? (a) : (b))"),
    ("MAX", &["a", "b"], "((a > b) ? (a) : (b))"),
];

/// Marks a name that a rescan kept unexpanded because its expansion is
/// under way (cpp's "painted blue" token): later rescans keep it too,
/// including the rescan of a kernel's macro call whose argument holds an
/// object-like macro's expansion (`TWICE(scale)`). Expansions
/// ([`Helpers::objects`], [`Helpers::expand_call`], templates) keep the
/// marks; the translation removes them with [`unpaint`] where its text is
/// done.
pub(crate) const PAINTED: char = '\u{2}';

/// `text` without the marks of names kept unexpanded (see [`PAINTED`]).
pub fn unpaint(text: &str) -> String {
    text.replace(PAINTED, "")
}

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
    /// Object-like macros with a body (`#define NN 6`) that the code names
    /// outside preprocessor lines, by name: the body
    /// translated and with the macros it names expanded (as written where
    /// it is not kernel C, a string say). Names kept unexpanded are marked (see
    /// [`unpaint`]).
    pub objects: BTreeMap<String, String>,
    /// Object-like macros' bodies translated, not expanded: what a rescan
    /// puts in their place.
    object_bodies: BTreeMap<String, String>,
    /// Functions, by name: their template, or why they cannot be inlined
    /// (with where).
    pub functions: BTreeMap<String, Result<Template, (c::Location, String)>>,
    /// Whether an unqualified `sqrt` (and the like) of a `float` calls C++'s
    /// `float` overload: a source includes `<math.h>` (whose C++ version
    /// declares the overloads outside `std`) or says `using namespace std`.
    pub float_overloads: bool,
    /// Bytes of text that macro expansions of this import have made so
    /// far, nested rescans included (see [`EXPANSION_WORK_LIMIT`]): one
    /// count for every [`Helpers`] of the import ([`Helpers::build`]).
    spent: ExpansionBudget,
    /// Every name of the sources and every word of the bodies of the
    /// macros they use: a name the translation makes up must be none of
    /// them ([`crate::scope::Fresh`]).
    pub words: Rc<crate::scope::Words>,
    /// The program-level names of this import, made unique against
    /// [`Helpers::words`] while the helpers live ([`c::ProgramNames`]).
    program_names: Option<c::ProgramNames>,
    /// How many of the sources' `#define`s the search for the macros'
    /// locations compared with a macro used: the work of that search,
    /// which a test holds to a few per macro used (it compared each with
    /// every `#define` before its own once).
    pub location_comparisons: usize,
}

/// What a kernel's variables are called where a macro is expanded into it:
/// the `.op2` name of a word of a macro's body that is not a macro
/// (`Some` where it differs: a kernel's renamed local, or `exit_` for a
/// free `exit`). The names a macro's body reads mean what they mean where
/// it is used, as in C.
pub type Rename<'r> = &'r dyn Fn(&str) -> Option<String>;

/// `.op2`'s spelling of every name of `text` (a macro's body or expansion
/// as the preprocessor writes it): [`op2_name`], where no kernel's variables
/// are in scope (the host code, a helper function's body).
pub fn op2_names(text: &str) -> String {
    rename_words(text, false, op2_spelling)
}

/// `text` (a macro's body or expansion) with its names renamed by
/// `rename`: all of them, or (`painted_only`) those marked [`PAINTED`]
/// (kept unexpanded by a rescan, which renames only the others). The type
/// words that bodies' sized types become are marked too, and never renamed.
pub fn rename_words(
    text: &str,
    painted_only: bool,
    rename: impl Fn(&str) -> Option<String>,
) -> String {
    c::map_marked_words(text, usize::MAX, Some(PAINTED), |word, painted| {
        if painted && matches!(word, "uint" | "ll" | "ull") || painted_only && !painted {
            None
        } else {
            rename(word)
        }
    })
    .unwrap_or_default()
}

/// [`op2_name`] where it differs from `word`, as a [`Rename`].
pub fn op2_spelling(word: &str) -> Option<String> {
    let renamed = op2_name(word);
    (renamed != word).then_some(renamed)
}

/// The text all macro expansions of one import may make together, nested
/// rescans counted at every level: each expansion is limited to
/// [`EXPANSION_LIMIT`], and this bounds how many of them can come near it
/// (a chain of `#define D1 (D0 + D0)`, `#define D2 (D1 + D1)`, … makes each
/// macro past the twentieth a mebibyte long before it is found too long).
/// Once it is spent, every further expansion is refused.
pub const EXPANSION_WORK_LIMIT: usize = 64 * EXPANSION_LIMIT;

/// The count of [`EXPANSION_WORK_LIMIT`] that the [`Helpers`] of one import
/// share: an import builds one for the main file's macros and up to
/// `2 × MAX_UNIT_TABLES` more for other units' and other places' tables,
/// each of which expands the macros the code writes again, so a count per
/// [`Helpers`] let one import make 33 times the limit.
pub type ExpansionBudget = Rc<std::cell::Cell<usize>>;

impl Helpers {
    /// Counts `bytes` of expanded text against [`EXPANSION_WORK_LIMIT`];
    /// why not, once it is spent.
    fn spend(&self, bytes: usize) -> Result<(), String> {
        let spent = self.spent.get().saturating_add(bytes);
        self.spent.set(spent);
        if spent > EXPANSION_WORK_LIMIT {
            return Err(format!(
                "the import's macro expansions together made more than {} MiB of text",
                EXPANSION_WORK_LIMIT >> 20
            ));
        }
        Ok(())
    }

    /// The macros of `table` (the preprocessor's final table: conditionals,
    /// `-D`, `#undef` and redefinitions resolved) that `sources` use, with
    /// OP2's where the table lacks them, and every function of `functions`
    /// as a template. A macro is used when its name is written in a source
    /// outside a preprocessor line, or in the body of a macro used (the
    /// table holds every macro of the system headers too). Only object-like
    /// macros written outside preprocessor lines are expanded here (into
    /// [`Helpers::objects`]), within [`EXPANSION_WORK_LIMIT`]: a header's
    /// macros that the code never names cost no expansion and leave the
    /// budget to those it does.
    /// `sources`' own `#define`s give the macros their locations.
    pub fn new<'s>(
        table: &[c::Define],
        sources: &[&'s Source],
        functions: &[(&'s Source, Node<'s>)],
    ) -> Helpers {
        Helpers::build(
            table,
            sources,
            functions,
            &BTreeSet::new(),
            true,
            &ExpansionBudget::default(),
        )
    }

    /// The words of the bodies of the macros of `table` that `sources` use
    /// (see [`Helpers::new`]): what [`Helpers::build`] of another table
    /// adds to [`Helpers::words`].
    pub fn macro_words(table: &[c::Define], sources: &[&Source]) -> BTreeSet<String> {
        let written = Helpers::written_words(sources);
        let by_name: BTreeMap<&str, &c::Define> =
            table.iter().map(|d| (d.name.as_str(), d)).collect();
        let mut words = BTreeSet::new();
        used_macros(&by_name, &written, &mut words);
        words
    }

    /// The words `sources` write outside preprocessor lines (the names
    /// whose macros count).
    pub fn written_words(sources: &[&Source]) -> BTreeSet<String> {
        sources.iter().flat_map(|s| code_words(&s.text)).collect()
    }

    /// [`Helpers::new`], with `extra_words` (the [`Helpers::macro_words`]
    /// of other tables whose helpers will translate kernels of the same
    /// program) among its words; `install`: whether its words make the
    /// program's names ([`c::ProgramNames`]). Helpers of another table of
    /// the same import are built with `install` false while the first
    /// lives, so that every kernel spells the program's names alike. Its
    /// expansions count against `budget`, which the import's other
    /// [`Helpers`] share.
    pub fn build<'s>(
        table: &[c::Define],
        sources: &[&'s Source],
        functions: &[(&'s Source, Node<'s>)],
        extra_words: &BTreeSet<String>,
        install: bool,
        budget: &ExpansionBudget,
    ) -> Helpers {
        let mut helpers = Helpers {
            spent: budget.clone(),
            ..Helpers::default()
        };
        let language = tree_sitter::Language::from(tree_sitter_cpp::LANGUAGE);
        let language_loaded = op2_syntax::limit::check_language(&language).is_ok();
        let mut written = BTreeSet::new();
        let mut words = BTreeSet::new();
        for source in sources {
            helpers.float_overloads |= source.text.lines().any(|line| {
                let words: String = line.split_whitespace().collect();
                words.starts_with("#include<math.h>")
                    || words.starts_with("usingnamespacestd;")
                    || includes_op2_header(&words)
            });
            written.extend(code_words(&source.text));
            // Its names (not the words of its comments and strings).
            walk(source.tree.root_node(), |node, _| {
                if node.kind().ends_with("identifier") {
                    let name = source.text(node);
                    if !words.contains(name) {
                        words.insert(name.to_owned());
                    }
                }
                true
            });
        }
        let by_name: BTreeMap<&str, &c::Define> =
            table.iter().map(|d| (d.name.as_str(), d)).collect();
        let used = used_macros(&by_name, &written, &mut words);
        words.extend(extra_words.iter().cloned());
        helpers.words = Rc::new(crate::scope::Words::new(words));
        // Every name is known: the program's names can be made unique
        // before any body is translated.
        if install {
            helpers.program_names = Some(c::ProgramNames::install(helpers.words.names()));
        }
        // Where each is defined: the first definition of the same name,
        // parameters and body (spaces aside) in a source; none for one from
        // `-D` or a system header. The sources' definitions by name, so that
        // each macro looks only at those of its name (each name is looked
        // up once: linear in the definitions).
        let squeeze = |text: &str| text.split_whitespace().collect::<String>();
        let mut defined: BTreeMap<&str, Vec<&c::Define>> = BTreeMap::new();
        for define in sources.iter().flat_map(|s| &s.defines) {
            defined
                .entry(define.name.as_str())
                .or_default()
                .push(define);
        }
        let compared = std::cell::Cell::new(0);
        let location = |define: &c::Define| {
            let body = squeeze(&define.body);
            defined
                .get(define.name.as_str())?
                .iter()
                .find(|d| {
                    compared.set(compared.get() + 1);
                    d.params == define.params
                        && d.variadic == define.variadic
                        && squeeze(&d.body) == body
                })
                .and_then(|d| d.location.clone())
        };
        // By name: parameters, `...`, body as written and where defined.
        type Raw = (Vec<String>, bool, String, Option<c::Location>);
        let mut raw_macros: BTreeMap<String, Raw> = BTreeMap::new();
        let mut raw_objects = BTreeMap::new();
        for define in used.iter().map(|name| by_name[name]) {
            match &define.params {
                Some(params) => {
                    raw_macros.insert(
                        define.name.clone(),
                        (
                            params.clone(),
                            define.variadic,
                            define.body.clone(),
                            location(define),
                        ),
                    );
                }
                None if !define.body.is_empty() => {
                    raw_objects.insert(define.name.clone(), define.body.clone());
                }
                None => {}
            }
        }
        helpers.location_comparisons = compared.get();
        for (name, params, body) in OP2_MACROS {
            raw_macros.entry((*name).to_owned()).or_insert_with(|| {
                (
                    params.iter().map(|p| (*p).to_owned()).collect(),
                    false,
                    (*body).to_owned(),
                    None,
                )
            });
        }
        // Bodies translated as kernel C, now that every macro's name is
        // known.
        let names: BTreeSet<String> = raw_macros.keys().cloned().collect();
        for (name, (params, variadic, body, location)) in raw_macros {
            let mut named = params.clone();
            if variadic {
                named.push(VA_ARGS.to_owned());
            }
            let translated = if language_loaded {
                translate_body(&language, &body, &named, &names)
            } else {
                Err("the C++ grammar could not be loaded".to_owned())
            };
            let (body, locals) = match translated {
                Ok((body, locals)) => (Ok(body), locals),
                Err(why) => (Err(why), BTreeSet::new()),
            };
            helpers.macros.insert(
                name,
                Macro {
                    params,
                    variadic,
                    body,
                    locals,
                    location,
                },
            );
        }
        for (name, body) in &raw_objects {
            let translated = if language_loaded {
                translate_body(&language, body, &[], &names)
                    .ok()
                    .map(|(text, _)| text)
            } else {
                None
            };
            // Not kernel C (a string, say): as written, for the host code.
            helpers
                .object_bodies
                .insert(name.clone(), translated.unwrap_or_else(|| body.clone()));
        }
        // Each expanded as the preprocessor rescans it: an expansion longer
        // than `EXPANSION_LIMIT`, or nested deeper than `MAX_NESTING`,
        // stops where it is (its names then stay unexpanded and are
        // reported where a kernel or the host code uses them).
        // Only those the code names: the others are expanded where a
        // rescan meets them, inside the expansion that names them.
        let bodies = helpers.object_bodies.clone();
        for (name, body) in bodies.iter().filter(|(name, _)| written.contains(*name)) {
            let expanded = helpers
                .rescan(body, &mut vec![name.clone()], 1, &|_| None)
                .unwrap_or_else(|_| body.clone());
            helpers.objects.insert(name.clone(), expanded);
        }
        for (source, function) in functions {
            if let Some(name) = function_name(source, *function) {
                helpers.functions.entry(name.to_owned()).or_insert_with(|| {
                    template(source, *function, &helpers.objects, helpers.float_overloads)
                });
            }
        }
        helpers
    }

    /// The expansion of a call of the function-like macro `name` with the
    /// arguments `args`, translated and with their own macros expanded (a
    /// kernel expands the calls inside an argument first), rescanned as the
    /// preprocessor does; or why it cannot be expanded. Names kept
    /// unexpanded are marked, in the arguments too (see [`unpaint`]).
    ///
    /// The names of the bodies that are not macros are given `rename`'s
    /// names (the arguments' texts are final already).
    pub fn expand_call(
        &self,
        name: &str,
        args: &[String],
        rename: Rename<'_>,
    ) -> Result<String, String> {
        let m = self
            .macros
            .get(name)
            .ok_or_else(|| format!("`{name}` is not a macro"))?;
        let text = m.substitute(name, args, &self.not_macros(rename))?;
        self.spend(text.len())?;
        self.rescan(&text, &mut vec![name.to_owned()], 1, rename)
    }

    /// `rename` for the words that are not macros (which a rescan expands
    /// or paints).
    fn not_macros<'r>(&'r self, rename: Rename<'r>) -> impl Fn(&str) -> Option<String> + 'r {
        move |word: &str| {
            if self.macros.contains_key(word) || self.object_bodies.contains_key(word) {
                None
            } else {
                rename(word)
            }
        }
    }

    /// The expansion of the macro `name` with its parameters as the
    /// arguments (empty when it cannot be expanded), and those parameters
    /// (`__VA_ARGS__` last for a variadic one); `None` for no macro.
    fn expansion_as_written(&self, name: &str) -> Option<(String, Vec<String>)> {
        let m = self.macros.get(name)?;
        let mut params = m.params.clone();
        if m.variadic {
            params.push(VA_ARGS.to_owned());
        }
        let body = self
            .expand_call(name, &params, &|_| None)
            .unwrap_or_default();
        Some((body, params))
    }

    /// The names the expansion of the macro `name` reads that are not its
    /// parameters (nor C's type words or the math built-ins): the consts a
    /// kernel using it needs.
    pub fn macro_free_names(&self, name: &str) -> BTreeSet<String> {
        let Some((body, params)) = self.expansion_as_written(name) else {
            return BTreeSet::new();
        };
        // Less what the bodies of the macros its expansion goes through
        // declare.
        let mut through = BTreeSet::from([name]);
        let mut pending = vec![name];
        let mut declared = BTreeSet::new();
        while let Some(next) = pending.pop() {
            let Some(m) = self.macros.get(next) else {
                continue;
            };
            declared.extend(m.locals.iter().cloned());
            if let Ok(body) = &m.body {
                c::map_words(body, |word| {
                    if let Some((key, _)) = self.macros.get_key_value(word)
                        && through.insert(key.as_str())
                    {
                        pending.push(key.as_str());
                    }
                    None
                });
            }
        }
        let mut names = free_words(&body, &params);
        names.retain(|n| !declared.contains(n));
        names
    }

    /// The functions the expansion of the macro `name` calls (`exp` of
    /// `#define EXPM(v) exp(v)`), its parameters as written.
    pub fn macro_calls(&self, name: &str) -> BTreeSet<String> {
        let Some((body, _)) = self.expansion_as_written(name) else {
            return BTreeSet::new();
        };
        let mut calls = BTreeSet::new();
        let mut rest = body.as_str();
        while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
            let word_on = &rest[start..];
            let end = word_on
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(word_on.len());
            let in_number = c::in_number(&rest[..start]);
            if !in_number && word_on[end..].trim_start().starts_with('(') {
                calls.insert(word_on[..end].to_owned());
            }
            rest = &word_on[end..];
        }
        calls
    }

    /// `text` with the macros it names expanded, except those `disabled`
    /// (the ones whose expansion this is part of): object-like macros by
    /// their bodies, calls of function-like ones by their expansions, each
    /// rescanned in turn, as the preprocessor does.
    ///
    /// `depth` counts every level of this recursion (a macro's body, a
    /// call's expansion and each argument expanded before substitution),
    /// so input cannot nest it deeper than [`MAX_NESTING`].
    ///
    /// The words of the bodies it puts in that are not macros get
    /// `rename`'s names; `text`'s own are final.
    fn rescan(
        &self,
        text: &str,
        disabled: &mut Vec<String>,
        depth: usize,
        rename: Rename<'_>,
    ) -> Result<String, String> {
        if depth > MAX_NESTING {
            return Err(format!(
                "its expansion nests macros more than {MAX_NESTING} deep"
            ));
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        // Each `(` with its `)`, found once (when a call needs them): a text
        // of many unclosed calls would otherwise be scanned to its end at
        // each one.
        let mut closing = None;
        while at < text.len() {
            let made = out.len();
            let rest = &text[at..];
            let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') else {
                out.push_str(rest);
                break;
            };
            out.push_str(&rest[..start]);
            let word_on = &rest[start..];
            let len = word_on
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(word_on.len());
            let word = &word_on[..len];
            at += start + len;
            let in_number = c::in_number(&rest[..start]);
            if in_number || rest[..start].ends_with(PAINTED) {
                out.push_str(word);
            } else if disabled.iter().any(|d| d == word) {
                // Painted, as cpp does: no later rescan expands it.
                out.push(PAINTED);
                out.push_str(word);
            } else if let Some(body) = self.object_bodies.get(word) {
                disabled.push(word.to_owned());
                let body = rename_words(body, false, self.not_macros(rename));
                let expanded = self.rescan(&body, disabled, depth + 1, rename);
                disabled.pop();
                out.push_str(&expanded?);
            } else if let Some(m) = self.macros.get(word)
                && let Some((args, end)) =
                    macro_arguments(text, at, closing.get_or_insert_with(|| parentheses(text)))
            {
                let args = args
                    .iter()
                    .map(|a| self.rescan(a, disabled, depth + 1, rename))
                    .collect::<Result<Vec<_>, _>>()?;
                let substituted = m.substitute(word, &args, &self.not_macros(rename))?;
                self.spend(substituted.len())?;
                disabled.push(word.to_owned());
                let expanded = self.rescan(&substituted, disabled, depth + 1, rename);
                disabled.pop();
                out.push_str(&expanded?);
                at = end;
            } else {
                out.push_str(word);
            }
            if out.len() > EXPANSION_LIMIT {
                return Err(too_long());
            }
            self.spend(out.len() - made)?;
        }
        Ok(out)
    }
}

/// OP2's C++ headers, each of which includes `<math.h>` (through
/// `op_lib_core.h`), which in C++ declares the `float` overloads of `sqrt`
/// and the rest outside `std`: an application that includes one calls
/// `sqrtf` for `sqrt` of a `float`.
const OP2_CPP_HEADERS: &[&str] = &[
    "op_seq.h",
    "op_lib_cpp.h",
    "op_lib_core.h",
    "op_lib_mpi.h",
    "op_hdf5.h",
];

/// Whether `words` (a line without its spaces) includes one of
/// [`OP2_CPP_HEADERS`], by any path.
fn includes_op2_header(words: &str) -> bool {
    let Some(name) = words.strip_prefix("#include") else {
        return false;
    };
    let name = name.trim_start_matches(['"', '<']);
    let Some(end) = name.find(['"', '>']) else {
        return false;
    };
    let file = name[..end].rsplit('/').next().unwrap_or_default();
    OP2_CPP_HEADERS.contains(&file)
}

/// The words of C `text` outside preprocessor lines (a line starting
/// with `#`, and the lines it continues with a backslash).
/// The macros of `by_name` used: those `written`, and those their bodies
/// name, in turn (iteratively; each once); the words of their bodies are
/// added to `words`.
fn used_macros<'t>(
    by_name: &BTreeMap<&'t str, &c::Define>,
    written: &BTreeSet<String>,
    words: &mut BTreeSet<String>,
) -> BTreeSet<&'t str> {
    let mut used: BTreeSet<&str> = BTreeSet::new();
    let mut pending: Vec<&str> = written
        .iter()
        .filter_map(|w| by_name.get_key_value(w.as_str()).map(|(k, _)| *k))
        .collect();
    while let Some(name) = pending.pop() {
        if !used.insert(name) {
            continue;
        }
        c::map_words(&by_name[name].body, |word| {
            if !words.contains(word) {
                words.insert(word.to_owned());
            }
            if let Some((k, _)) = by_name.get_key_value(word)
                && !used.contains(k)
            {
                pending.push(k);
            }
            None
        });
    }
    used
}

fn code_words(text: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    let mut continued = false;
    for line in text.lines() {
        let directive = continued || line.trim_start().starts_with('#');
        continued = directive && line.trim_end().ends_with('\\');
        if !directive {
            c::map_words(line, |word| {
                if !words.contains(word) {
                    words.insert(word.to_owned());
                }
                None
            });
        }
    }
    words
}

/// The name of the arguments past a variadic macro's named parameters.
const VA_ARGS: &str = "__VA_ARGS__";

/// Where each `(` of `text` is closed, by the byte positions of both.
fn parentheses(text: &str) -> std::collections::HashMap<usize, usize> {
    let mut open = Vec::new();
    let mut pairs = std::collections::HashMap::new();
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'(' => open.push(i),
            b')' => {
                if let Some(o) = open.pop() {
                    pairs.insert(o, i);
                }
            }
            _ => {}
        }
    }
    pairs
}

/// The arguments of a macro call whose name ends at byte `at` of `text`
/// (`(a, f(b, c))` → `a` and `f(b, c)`), and the byte after the call; `None`
/// when no `(` follows or it is not closed (`closing`: [`parentheses`] of
/// `text`).
fn macro_arguments(
    text: &str,
    at: usize,
    closing: &std::collections::HashMap<usize, usize>,
) -> Option<(Vec<String>, usize)> {
    let rest = &text[at..];
    let open = at + rest.len() - rest.trim_start().len();
    if !text[open..].starts_with('(') {
        return None;
    }
    let close = *closing.get(&open)?;
    let mut args = Vec::new();
    let mut depth = 0usize;
    let mut from = open + 1;
    for (i, b) in text.bytes().enumerate().take(close).skip(open + 1) {
        match b {
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                args.push(text[from..i].trim().to_owned());
                from = i + 1;
            }
            _ => {}
        }
    }
    let last = text[from..close].trim();
    if !(args.is_empty() && last.is_empty()) {
        args.push(last.to_owned());
    }
    Some((args, close + 1))
}

/// A macro's body translated as kernel C: `.op2`'s spelling of the math
/// built-ins (`fabsf(x)` → `(float) fabs((float) (x))`, `std::min` → `min`)
/// and of sized types; names as C spells them (where the macro is used
/// decides what they are, and their `.op2` names), parameters (`params`)
/// and calls of other macros (`macros`) left for the expansion. `Err` says what
/// is outside the kernel subset.
fn translate_body(
    language: &tree_sitter::Language,
    body: &str,
    params: &[String],
    macros: &BTreeSet<String>,
) -> Result<(String, BTreeSet<String>), String> {
    if body.contains('#') || body.contains('"') || body.contains('\'') {
        return Err("its body uses `#`, `##` or a literal string or character".to_owned());
    }
    if body.is_empty() {
        return Ok((String::new(), BTreeSet::new()));
    }
    const BEFORE: &str = "void op2_import_macro() {\n";
    let text = format!("{BEFORE}{body}\n;}}");
    let range = BEFORE.len()..BEFORE.len() + body.len();
    // Within the limits of every parse (`op2_syntax::limit`): a body is one
    // logical line of the application, as long as its author made it.
    let tree = op2_syntax::on_parse_stack(text.len(), || {
        op2_syntax::limit::parse_within(
            language,
            &text,
            None,
            op2_syntax::ParseLimit::Time,
            &|| false,
        )
    })
    .map_err(|_| "the C++ parser gave up on its body: recovering from its syntax errors needed more time or memory than its length allows")?;
    let source = Source::new(std::path::PathBuf::new(), String::new(), text, tree);
    // A body that unbalances the function it is put in (`}`) leaves its
    // error outside the body's text.
    if source.tree.root_node().has_error() {
        return Err("its body is not a C expression or statement".to_owned());
    }
    let mut edits = Edits::default();
    let mut problem = None;
    let mut locals = BTreeSet::new();
    walk(source.tree.root_node(), |node, ancestors| {
        if problem.is_some() {
            return false;
        }
        if node.end_byte() <= range.start || node.start_byte() >= range.end {
            return true;
        }
        if node.is_error() || node.is_missing() {
            problem = Some("its body is not a C expression or statement".to_owned());
            return false;
        }
        let kind = node.kind();
        let inside = node.start_byte() >= range.start && node.end_byte() <= range.end;
        if !node.is_named() || !inside {
            return true;
        }
        if kind == "qualified_identifier" && c::is_callee(node, ancestors) {
            return false;
        }
        if let Some((_, outside)) = crate::kernel::outside_subset(&source, node, ancestors) {
            problem = Some(match outside {
                Outside::Kind(what) => {
                    format!("its body holds a {what}, which is not in the kernel subset")
                }
                Outside::Address => "its body takes an address".to_owned(),
                Outside::LocalPointer => {
                    "its body declares a local pointer, which is not in the kernel subset"
                        .to_owned()
                }
                Outside::Qualifier(word) => {
                    format!("its body declares a `{word}` local, which is not in the kernel subset")
                }
                Outside::Literal(why) => format!("in its body, {why}"),
            });
            return false;
        }
        // Its names are left as C spells them: they mean what they mean
        // where the macro is used ([`Rename`]).
        match kind {
            "declaration" => {
                for declarator in node.children_by_field_name("declarator", &mut node.walk()) {
                    if let Some((ident, _, _)) = c::declared_name(declarator) {
                        locals.insert(source.text(ident).to_owned());
                    }
                }
            }
            // A kernel copies what it staged back to its parameters before
            // each `return` of its own text, never before one a macro
            // brings in.
            "return_statement" => {
                problem = Some(
                    "its body holds a `return`, which would leave the kernel without what it stores where it ends"
                        .to_owned(),
                );
            }
            "sized_type_specifier" => {
                if let Some(ty) = scalar_type(source.text(node)) {
                    edits.replace(node, format!("{PAINTED}{ty}"));
                }
            }
            "call_expression" => match c::called_name(&source, node) {
                Some(callee) if c::builtin_call(node, callee, &mut edits) => {}
                Some(callee) if macros.contains(callee) || params.iter().any(|p| p == callee) => {}
                _ => {
                    let callee = node
                        .child_by_field_name("function")
                        .map_or("", |f| source.text(f));
                    problem = Some(format!(
                        "its body calls `{callee}`; a macro a kernel uses may call only the math built-ins and other macros"
                    ));
                }
            },
            _ => {}
        }
        problem.is_none()
    });
    match problem {
        Some(why) => Err(why),
        None => Ok((edits.apply(&source.text, range), locals)),
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
    float_overloads: bool,
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
    // Each parameter's position, looked up per word (a search of the list
    // per word was quadratic in a function of many parameters).
    let position: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .rev()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    // The bytes the macros named in the expression put into the template
    // (each use copies its expansion), and the macros whose names are known.
    let mut grown = 0usize;
    let mut expanded_once = BTreeSet::new();
    let mut memo = crate::kernel::Memo::default();
    // C++ calls the `float` overload of `sqrt` and the like on the
    // parameters declared `float`.
    let floats: BTreeSet<String> = names
        .iter()
        .zip(&params)
        .filter(|(_, ty)| **ty == "float")
        .map(|(n, _)| n.clone())
        .collect();
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
        let outside = crate::kernel::outside_subset(source, node, ancestors);
        if matches!(outside, Some((_, Outside::Kind(_))))
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
        match outside {
            Some((at, Outside::Address)) => {
                problem = Some((at, "its expression takes an address".to_owned()));
                return false;
            }
            Some((at, Outside::Literal(why))) => {
                problem = Some((at, format!("in its expression, {why}")));
                return false;
            }
            _ => {}
        }
        match kind {
            "identifier" if !c::is_callee(node, ancestors) => {
                let ident = source.text(node);
                if let Some(i) = position.get(ident) {
                    edits.replace(node, format!("{PARAM}{i}{PARAM}"));
                } else if let Some(body) = objects.get(ident) {
                    grown = grown.saturating_add(body.len());
                    if grown > EXPANSION_LIMIT {
                        problem = Some((
                            node,
                            format!(
                                "the macros its expression names expand to more than {} KiB",
                                EXPANSION_LIMIT >> 10
                            ),
                        ));
                        return false;
                    }
                    // It expands here, in the function's scope, as C
                    // expands it: a name of a parameter is the parameter,
                    // the others mean what they mean where the function is
                    // defined (`.op2`'s spelling of them).
                    let expanded = rename_words(body, false, |word| match position.get(word) {
                        Some(i) => Some(format!("{PARAM}{i}{PARAM}")),
                        None => op2_spelling(word),
                    });
                    edits.replace(node, expanded);
                    if expanded_once.insert(ident) {
                        free_names.extend(free_words(body, &names));
                    }
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
            "call_expression" => match c::called_name(source, node) {
                Some(callee) if c::builtin_call(node, callee, &mut edits) => {
                    if !crate::kernel::float_overload(
                        source,
                        node,
                        callee,
                        &|n| floats.contains(source.text(n)).then_some("float"),
                        float_overloads,
                        &mut edits,
                        &mut memo,
                    ) {
                        problem = Some((
                            node,
                            format!(
                                "its expression calls C++'s `float` overload of `{callee}`, which `.op2` cannot reproduce: its `{callee}` computes in `double`"
                            ),
                        ));
                    }
                }
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
    /// Whether a call with `arity` arguments fits its parameters (`F()` is
    /// one empty argument for a macro of one parameter, as in cpp).
    pub fn accepts(&self, arity: usize) -> bool {
        if self.variadic {
            arity >= self.params.len()
        } else {
            arity == self.params.len() || (arity == 0 && self.params.len() == 1)
        }
    }

    /// Why a call with `given` arguments does not fit, for the macro
    /// `what` (`macro `PAIR` takes 2 arguments but 1 argument was
    /// supplied`).
    pub fn arity_mismatch(&self, what: &str, given: usize) -> String {
        let takes = arguments(self.params.len());
        let takes = if self.variadic {
            format!("at least {takes}")
        } else {
            takes
        };
        arity_mismatch(what, &takes, given)
    }

    /// Its translated body with each parameter replaced by the argument's
    /// text (and `__VA_ARGS__` by the arguments past the named ones), not
    /// yet rescanned; or why it cannot be expanded (named `name`).
    ///
    /// Its other words get `rename`'s names.
    fn substitute(
        &self,
        name: &str,
        args: &[String],
        rename: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        let at = self
            .location
            .as_ref()
            .map_or(String::new(), |l| format!(" (at {l})"));
        let body = self
            .body
            .as_ref()
            .map_err(|why| format!("macro `{name}`{at}: {why}"))?;
        if !self.accepts(args.len()) {
            return Err(self.arity_mismatch(&format!("macro `{name}`{at}"), args.len()));
        }
        let empty = [String::new()];
        let args = if args.is_empty() {
            &empty[..self.params.len().min(1)]
        } else {
            args
        };
        let rest = args.get(self.params.len()..).unwrap_or_default().join(", ");
        // Each parameter's position, looked up per word of the body (a
        // search of the parameters per word was quadratic in them).
        let position: BTreeMap<&str, usize> = self
            .params
            .iter()
            .enumerate()
            .rev()
            .map(|(i, p)| (p.as_str(), i))
            .collect();
        c::map_marked_words(
            body,
            EXPANSION_LIMIT,
            Some(PAINTED),
            |word, marked| match position.get(word).copied() {
                _ if marked => None,
                Some(i) => args.get(i).cloned(),
                None if self.variadic && word == VA_ARGS => Some(rest.clone()),
                None => rename(word),
            },
        )
        .ok_or_else(too_long)
    }
}

/// `n argument(s)`.
pub fn arguments(n: usize) -> String {
    crate::report::count(n, "argument", "arguments")
}

/// `WHAT takes TAKES but N argument(s) was/were supplied`, as rustc says it.
pub fn arity_mismatch(what: &str, takes: &str, given: usize) -> String {
    let verb = if given == 1 { "was" } else { "were" };
    format!(
        "{what} takes {takes} but {} {verb} supplied",
        arguments(given)
    )
}

/// Puts the expansion of the object-like macro that the identifier `node`
/// names in its place, as the preprocessor does; returns the names the
/// expansion reads, or `None` (and edits nothing) when `node` names none.
pub fn expand_object(
    objects: &BTreeMap<String, String>,
    source: &Source,
    node: Node<'_>,
    edits: &mut Edits,
) -> Option<BTreeSet<String>> {
    let body = objects.get(source.text(node))?;
    edits.replace(node, body.clone());
    Some(free_words(body, &[]))
}

/// C's words of the kernel subset that are not names (besides the type
/// names [`scalar_type`] knows).
const C_WORDS: &[&str] = &[
    "const", "long", "unsigned", "signed", "short", "void", "if", "else", "for", "while", "do",
    "break", "continue", "return", "true", "false", "sizeof", "static",
];

/// The words of C text that are not `params`, C's words or the math
/// built-ins: the names it reads.
pub fn free_words(text: &str, params: &[String]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let params: BTreeSet<&str> = params.iter().map(String::as_str).collect();
    // Whether the text holds each `.op2` type word a body's sized types
    // became (marked): looked for once per word, not once per use (a body
    // of many `ll` searched itself for each).
    let mut painted: [Option<bool>; 3] = [None; 3];
    c::map_words(text, |word| {
        let type_word = ["uint", "ll", "ull"]
            .iter()
            .position(|w| *w == word)
            .is_some_and(|i| {
                *painted[i].get_or_insert_with(|| text.contains(&format!("{PAINTED}{word}")))
            });
        if !params.contains(word)
            && !c::is_builtin(word)
            && scalar_type(word).is_none()
            && !C_WORDS.contains(&word)
            && !type_word
        {
            names.insert(word.to_owned());
        }
        None
    });
    names
}

/// Calls `f` with the source of a file `file` of the text `text`, its
/// functions and the helpers they and its macros make (for tests).
#[cfg(test)]
pub(crate) fn with_helpers<R>(
    file: &str,
    text: &str,
    f: impl FnOnce(&Source, &[(&Source, Node<'_>)], &Helpers) -> R,
) -> R {
    let path = std::path::Path::new(file);
    let mut source = Source::parse(path, file.to_owned(), text.to_owned()).unwrap();
    source.defines = c::defines(&source);
    let functions: Vec<(&Source, Node<'_>)> = c::named_children(source.tree.root_node())
        .into_iter()
        .filter(|n| n.kind() == "function_definition")
        .map(|n| (&source, n))
        .collect();
    let helpers = Helpers::new(&source.defines, &[&source], &functions);
    f(&source, &functions, &helpers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OP2's C++ headers bring `<math.h>`, so `sqrt` of a `float` is
    /// `sqrtf` in an application that includes one, by any path.
    #[test]
    fn an_op2_header_brings_the_float_overloads() {
        for line in [
            "#include \"op_seq.h\"",
            "#  include <op_seq.h>",
            "#include \"../../include/op_lib_cpp.h\"",
            "#include <op_hdf5.h>",
        ] {
            let words: String = line.split_whitespace().collect();
            assert!(includes_op2_header(&words), "{line}");
        }
        for line in [
            "#include \"op_lib_c.h\"",
            "#include \"my_op_seq.h.in\"",
            "op_seq.h",
        ] {
            let words: String = line.split_whitespace().collect();
            assert!(!includes_op2_header(&words), "{line}");
        }
    }

    /// The macros of a header with the text `text`.
    fn helpers(text: &str) -> Helpers {
        let source = using_every_macro(text);
        Helpers::new(&source.defines, &[&source], &[])
    }

    /// The source `text` with its `#define`s, which writes every macro it
    /// defines (a comment naming them), as a kernel that uses them does.
    fn using_every_macro(text: &str) -> Source {
        let path = std::path::Path::new("t.h");
        let mut source = Source::parse(path, "t.h".to_owned(), text.to_owned()).unwrap();
        source.defines = c::defines(&source);
        let names: Vec<&str> = source.defines.iter().map(|d| d.name.as_str()).collect();
        source
            .text
            .push_str(&format!("\n// uses: {}\n", names.join(" ")));
        source
    }

    /// The helpers of one import's tables (up to 33) share one budget: with
    /// a budget each, the same doubling chain was expanded by each of them,
    /// 33 times the limit in all.
    #[test]
    fn the_helpers_of_one_import_spend_one_budget() {
        let mut text = "#define D0 1\n".to_owned();
        for i in 1..400 {
            text.push_str(&format!("#define D{i} (D{} + D{})\n", i - 1, i - 1));
        }
        let source = using_every_macro(&text);
        let build = |install, budget: &ExpansionBudget| {
            Helpers::build(
                &source.defines,
                &[&source],
                &[],
                &BTreeSet::new(),
                install,
                budget,
            )
        };
        let budget = ExpansionBudget::default();
        let first = build(true, &budget);
        assert!(
            budget.get() > EXPANSION_WORK_LIMIT,
            "{} bytes",
            budget.get()
        );
        assert_eq!(first.objects["D1"], "(1 + 1)");
        // Another table of the same import expands nothing more.
        let second = build(false, &budget);
        assert_eq!(second.objects["D1"], "(D0 + D0)");
        assert!(budget.get() <= EXPANSION_WORK_LIMIT + 2 * EXPANSION_LIMIT);
        drop(second);
        // A budget of its own would have expanded it again.
        drop(first);
        assert_eq!(
            build(true, &ExpansionBudget::default()).objects["D1"],
            "(1 + 1)"
        );
    }

    #[test]
    fn many_function_like_macros_each_used_find_their_locations_in_linear_time() {
        // Each macro used looked for its location among every `#define` of
        // the sources before its own: n * (n + 1) / 2 comparisons, which
        // took 57 s for 80,000 macros. Counted, not timed: a few per macro.
        let n = 2_000;
        let mut text: String = (0..n - 1)
            .map(|i| format!("#define M{i}(x) ((x) + {i}.0)\n"))
            .collect();
        // The last takes an address, which the kernel subset has not.
        let last = n - 1;
        text.push_str(&format!("#define M{last}(x) &x\n"));
        let helpers = helpers(&text);
        assert_eq!(helpers.macros.len(), n + OP2_MACROS.len());
        // One each; a search that has stopped counting fails too.
        assert!(
            (n..=2 * n).contains(&helpers.location_comparisons),
            "{} comparisons for {n} macros",
            helpers.location_comparisons
        );
        // Each still at its own `#define`, the last's error too.
        let own = &helpers.macros[&format!("M{last}")];
        let location = own.location.as_ref().expect("a location");
        assert_eq!((location.file.as_str(), location.line), ("t.h", n));
        assert!(own.body.is_err());
        assert_eq!(
            helpers.macros["M7"].location.as_ref().map(|l| l.line),
            Some(8)
        );
    }

    fn args(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn nested_expansions_stop_at_the_limit_instead_of_doubling_on() {
        // OP2's MAX(a,b) uses each parameter twice: thirty nested calls would
        // be 2^30 copies of the innermost argument.
        let helpers = helpers("");
        let mut text = "x".to_owned();
        let mut levels = 0;
        let why = loop {
            match helpers.expand_call("MAX", &[text.clone(), "y".to_owned()], &op2_spelling) {
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
    fn a_function_like_macro_in_another_macros_body_is_expanded() {
        let helpers = helpers(
            "#define SQR(x) ((x) * (x))\n#define NORM2(a, b) (SQR(a) + SQR(b))\n#define UNIT NORM2(0.6, SQR(0.5))\n",
        );
        assert_eq!(
            helpers
                .expand_call("NORM2", &args(&["p[0]", "q"]), &op2_spelling)
                .unwrap(),
            "(((p[0]) * (p[0])) + ((q) * (q)))"
        );
        // In an object-like macro's body too, and in an argument.
        assert_eq!(
            helpers.objects["UNIT"],
            "(((0.6) * (0.6)) + ((((0.5) * (0.5))) * (((0.5) * (0.5)))))"
        );
        assert!(helpers.macro_free_names("NORM2").is_empty());
    }

    #[test]
    fn a_macro_body_is_translated_as_kernel_c() {
        let helpers = helpers(
            "#define ABS(x) fabsf(x)\n#define LOW(x) std::min(x, len)\n#define WIDE(x) ((long long) (x))\n",
        );
        assert_eq!(
            helpers
                .expand_call("ABS", &args(&["*f - 1.5f"]), &op2_spelling)
                .unwrap(),
            "(float) fabs((float) (*f - 1.5f))"
        );
        // `len` is reserved in `.op2`; the const it names is renamed where
        // the macro is used (here by `op2_spelling`, as the host code does;
        // a kernel may have a local `len` of its own). Its free names are
        // C's.
        assert_eq!(
            helpers
                .expand_call("LOW", &args(&["a"]), &op2_spelling)
                .unwrap(),
            "min(a, len_)"
        );
        assert_eq!(
            helpers
                .expand_call("LOW", &args(&["a"]), &|w| (w == "len")
                    .then(|| "len_2".to_owned()))
                .unwrap(),
            "min(a, len_2)"
        );
        assert_eq!(
            helpers.macro_free_names("LOW"),
            BTreeSet::from(["len".to_owned()])
        );
        // The type word is marked, so that no renaming takes it for a name.
        assert_eq!(
            helpers
                .expand_call("WIDE", &args(&["k"]), &op2_spelling)
                .unwrap(),
            format!("(({PAINTED}ll) (k))")
        );
    }

    #[test]
    fn a_macro_body_outside_the_kernel_subset_is_said_with_its_location() {
        let helpers = helpers(
            "#define ADDR(x) &x\n#define CALL(x) foo(x)\n#define SHOW(x) printf(\"%g\", x)\n#define LIST(x) (x, 1)\n",
        );
        let why = |name: &str| {
            helpers
                .expand_call(name, &args(&["v"]), &op2_spelling)
                .unwrap_err()
        };
        assert_eq!(
            why("ADDR"),
            "macro `ADDR` (at t.h:1:1): its body takes an address"
        );
        assert_eq!(
            why("CALL"),
            "macro `CALL` (at t.h:2:1): its body calls `foo`; a macro a kernel uses may call only the math built-ins and other macros"
        );
        assert_eq!(
            why("SHOW"),
            "macro `SHOW` (at t.h:3:1): its body uses `#`, `##` or a literal string or character"
        );
        assert_eq!(
            why("LIST"),
            "macro `LIST` (at t.h:4:1): its body holds a comma expression, which is not in the kernel subset"
        );
    }

    #[test]
    fn variadic_macros_take_their_extra_arguments_as_va_args() {
        let helpers = helpers(
            "#define SUM(first, ...) ((first) + PAIR(__VA_ARGS__))\n#define PAIR(a, b) ((a) + (b))\n#define ALL(...) PAIR(__VA_ARGS__)\n",
        );
        assert_eq!(
            helpers
                .expand_call("SUM", &args(&["1", "x[2]", "f(3, 4)"]), &op2_spelling)
                .unwrap(),
            "((1) + ((x[2]) + (f(3, 4))))"
        );
        assert_eq!(
            helpers
                .expand_call("ALL", &args(&["a", "b"]), &op2_spelling)
                .unwrap(),
            "((a) + (b))"
        );
        let m = &helpers.macros["SUM"];
        assert!(m.accepts(1) && m.accepts(4) && !m.accepts(0));
        assert_eq!(
            helpers.expand_call("SUM", &[], &op2_spelling).unwrap_err(),
            "macro `SUM` (at t.h:1:1) takes at least 1 argument but 0 arguments were supplied"
        );
        // The inner macro given the wrong number is named, with its place.
        assert_eq!(
            helpers
                .expand_call("SUM", &args(&["1", "2"]), &op2_spelling)
                .unwrap_err(),
            "macro `PAIR` (at t.h:2:1) takes 2 arguments but 1 argument was supplied"
        );
    }

    #[test]
    fn an_empty_call_of_a_one_parameter_macro_is_one_empty_argument() {
        // `ONE()` compiles in C: cpp substitutes an empty argument. It was
        // refused as given 0 of 1 arguments, in words that said "takes 1
        // arguments".
        let helpers = helpers("#define ONE(x) ( x + 1)\n#define TWO(a, b) (a + b)\n");
        assert!(helpers.macros["ONE"].accepts(0));
        assert_eq!(
            helpers.expand_call("ONE", &[], &op2_spelling).unwrap(),
            "(  + 1)"
        );
        assert_eq!(
            helpers
                .expand_call("TWO", &args(&["1"]), &op2_spelling)
                .unwrap_err(),
            "macro `TWO` (at t.h:2:1) takes 2 arguments but 1 argument was supplied"
        );
        assert_eq!(
            helpers
                .expand_call("ONE", &args(&["1", "2"]), &op2_spelling)
                .unwrap_err(),
            "macro `ONE` (at t.h:1:1) takes 1 argument but 2 arguments were supplied"
        );
    }

    #[test]
    fn a_macro_is_not_expanded_inside_its_own_expansion() {
        // As the preprocessor stops: `scale` inside its own body is the
        // variable; a cycle stops where it comes back to the macro it began
        // with.
        // A name kept because its expansion is under way stays kept when
        // the text holding it is rescanned again (as an argument), as cpp
        // paints it.
        let painted = helpers(
            "#define scale (scale * 2.0)\n#define TWICE(v) (2 * (v))\n#define T TWICE(scale)\n#define A (B + 1)\n#define B (A * 2)\n#define U TWICE(A)\n",
        );
        assert_eq!(unpaint(&painted.objects["T"]), "(2 * ((scale * 2.0)))");
        assert_eq!(unpaint(&painted.objects["U"]), "(2 * (((A * 2) + 1)))");
        let helpers = helpers(
            "#define scale (scale * 2.0)\n#define FACTOR scale\n#define A (B + 1)\n#define B (A * 2)\n#define TWICE(x) (2 * (x))\n#define FOUR TWICE(TWICE(1))\n",
        );
        assert_eq!(unpaint(&helpers.objects["FACTOR"]), "(scale * 2.0)");
        assert_eq!(unpaint(&helpers.objects["scale"]), "(scale * 2.0)");
        assert_eq!(unpaint(&helpers.objects["A"]), "((A * 2) + 1)");
        assert_eq!(unpaint(&helpers.objects["B"]), "((B + 1) * 2)");
        // A macro in its own arguments is expanded (before substitution).
        assert_eq!(unpaint(&helpers.objects["FOUR"]), "(2 * ((2 * (1))))");
    }

    #[test]
    fn expansions_nest_at_most_max_nesting_deep() {
        let chain = |n: usize| {
            let mut text = String::new();
            for i in 0..n {
                text.push_str(&format!(
                    "#define F{i}(x) F{}(x)\n#define O{i} O{}\n",
                    i + 1,
                    i + 1
                ));
            }
            text.push_str(&format!("#define F{n}(x) (x)\n#define O{n} 1\n"));
            helpers(&text)
        };
        let shallow = chain(MAX_NESTING - 1);
        assert_eq!(
            shallow
                .expand_call("F0", &args(&["y"]), &op2_spelling)
                .unwrap(),
            "(y)"
        );
        assert_eq!(shallow.objects["O0"], "1");
        let deep = chain(MAX_NESTING + 1);
        assert_eq!(
            deep.expand_call("F0", &args(&["y"]), &op2_spelling)
                .unwrap_err(),
            "its expansion nests macros more than 64 deep"
        );
        // An object-like macro whose expansion stops keeps its body.
        assert_eq!(deep.objects["O0"], "O1");
    }

    #[test]
    fn doubling_chains_of_macros_stop_when_the_import_has_expanded_enough() {
        // Found by `op2-fuzz --import` (seed 1, case 135): each `D{i}` past
        // the twentieth grows to a mebibyte, at every level of its rescan,
        // before it is found too long; a few hundred took ten seconds.
        let mut text = "#define D0 1\n".to_owned();
        for i in 1..400 {
            text.push_str(&format!("#define D{i} (D{} + D{})\n", i - 1, i - 1));
        }
        text.push_str("#define F(x) (x + D3)\n");
        let helpers = helpers(&text);
        assert!(helpers.spent.get() <= EXPANSION_WORK_LIMIT + EXPANSION_LIMIT);
        // Those expanded first are whole; the others keep their body.
        assert_eq!(helpers.objects["D0"], "1");
        assert_eq!(helpers.objects["D1"], "(1 + 1)");
        assert_eq!(helpers.objects["D399"], "(D398 + D398)");
        // And from then on every expansion is refused, with why.
        assert_eq!(
            helpers
                .expand_call("F", &args(&["y"]), &op2_spelling)
                .unwrap_err(),
            "the import's macro expansions together made more than 64 MiB of text"
        );
    }

    #[test]
    fn object_like_macros_the_code_never_names_are_not_expanded() {
        // Every object-like macro was expanded when the helpers were made:
        // two hundred unused `#define P{i} O16`, each a quarter mebibyte
        // made at every level of its rescan, spent the import's budget
        // (and took seconds and hundreds of MB), so that the one the kernel
        // used was refused.
        let mut text = "#define O0 1\n".to_owned();
        for i in 1..=16 {
            text.push_str(&format!("#define O{i} (O{}+O{})\n", i - 1, i - 1));
        }
        for i in 0..200 {
            text.push_str(&format!("#define P{i} O16\n"));
        }
        text.push_str("inline void k(double *s) { *s += P150; }\n");
        let path = std::path::Path::new("t.h");
        let mut source = Source::parse(path, "t.h".to_owned(), text).unwrap();
        source.defines = c::defines(&source);
        let helpers = Helpers::new(&source.defines, &[&source], &[]);
        let expected_len = 4 * (1 << 16) - 3;
        assert_eq!(helpers.objects["P150"].len(), expected_len);
        assert_eq!(helpers.objects.len(), 1, "{:?}", helpers.objects.keys());
        assert!(
            helpers.spent.get() < EXPANSION_WORK_LIMIT / 4,
            "{} bytes spent",
            helpers.spent.get()
        );
    }

    #[test]
    fn macro_bodies_and_helpers_are_held_to_the_kernel_subset_as_kernels_are() {
        // A macro's body took local pointers, `static` locals and a `}`
        // that closed the function it was checked in, and a helper's
        // expression took literals `.op2` does not have: each failed later,
        // in the `.op2` analysis, or not at all.
        let text = "#define P(v) { double *p; v = 1.0; }\n#define S(v) { static double t = 0.0; t += v; v = t; }\n#define CLOSE(v) }\n#define FINE(v) { double t = v; v = t * 2.0; }\ninline double twice(double a) { return a * 2L; }\ninline double half(double a) { return a * 0.5; }\n// uses: P S CLOSE FINE\n";
        with_helpers("t.h", text, |_, _, helpers| subset_checked(helpers));
    }

    fn subset_checked(helpers: &Helpers) {
        let body = |name: &str| helpers.macros[name].body.clone();
        assert_eq!(
            body("P"),
            Err("its body declares a local pointer, which is not in the kernel subset".to_owned())
        );
        assert_eq!(
            body("S"),
            Err("its body declares a `static` local, which is not in the kernel subset".to_owned())
        );
        assert_eq!(
            body("CLOSE"),
            Err("its body is not a C expression or statement".to_owned())
        );
        assert!(body("FINE").is_ok(), "{:?}", body("FINE"));
        let why = match &helpers.functions["twice"] {
            Err((at, why)) => format!("{at}: {why}"),
            Ok(t) => panic!("inlined: {t:?}"),
        };
        assert_eq!(
            why,
            "t.h:5:44: in its expression, literal `2L` has a suffix `.op2` does not have"
        );
        assert!(helpers.functions["half"].is_ok());
    }

    /// A helper's one `return` may name an object-like macro many times;
    /// each use copies its expansion into the template, which is bounded
    /// as a kernel's expansions are (20,000 uses of a 500 KB macro were
    /// 10 GB, for every function of every source, called or not).
    #[test]
    fn the_macros_a_helper_names_expand_within_the_limit() {
        let terms = vec!["1.0"; 25_000].join("+");
        let uses = |n: usize| vec!["U"; n].join(" + ");
        let text = format!(
            "#define U ({terms})\ndouble few(double x) {{ return x + {}; }}\ndouble many(double x) {{ return x + {}; }}\n",
            uses(2),
            uses(11)
        );
        with_helpers("t.h", &text, |_, _, helpers| {
            assert!(helpers.functions["few"].is_ok());
            let why = match &helpers.functions["many"] {
                Err((at, why)) => format!("{at}: {why}"),
                Ok(_) => panic!("inlined"),
            };
            assert_eq!(
                why,
                format!(
                    "t.h:3:{}: the macros its expression names expand to more than 1024 KiB",
                    "double many(double x) { return x + ".len() + 1 + 10 * "U + ".len()
                )
            );
        });
    }

    #[test]
    fn macro_arguments_split_at_top_level_commas() {
        let at = |text: &str, at: usize| macro_arguments(text, at, &parentheses(text));
        assert_eq!(
            at("F (a, f(b, c), (d, e)) + 1", 1),
            Some((args(&["a", "f(b, c)", "(d, e)"]), 22))
        );
        assert_eq!(at("F()", 1), Some((Vec::new(), 3)));
        assert_eq!(at("F + (a)", 1), None);
        assert_eq!(at("F(a, (b)", 1), None);
        // Unclosed calls do not make each other's search quadratic: a
        // megabyte of `F(` is one pass.
        let unclosed = "F(".repeat(1 << 19);
        let closing = parentheses(&unclosed);
        assert!((0..1000).all(|k| macro_arguments(&unclosed, 2 * k + 1, &closing).is_none()));
        // So an object-like macro of a hundred thousand unclosed calls is
        // rescanned once, and kept as written.
        let body = "F(".repeat(100_000);
        let helpers = helpers(&format!("#define F(x) (x)\n#define O {body}\n"));
        assert_eq!(helpers.objects["O"], body);
    }

    #[test]
    fn closed_calls_nested_in_arguments_stop_at_max_nesting() {
        // Arguments are expanded before substitution, one level deeper
        // each: twenty thousand closed calls overflowed the stack, even in
        // an object-like macro never used.
        let deep = |n: usize| format!("{}1{}", "F(".repeat(n), ")".repeat(n));
        let body = deep(100_000);
        let helpers = helpers(&format!(
            "#define F(x) (x)\n#define G(x) (x)\n#define O {body}\n"
        ));
        assert!(helpers.objects["O"] == body, "`O` expanded");
        assert_eq!(
            helpers
                .expand_call("G", &[deep(100_000)], &op2_spelling)
                .err()
                .as_deref(),
            Some("its expansion nests macros more than 64 deep")
        );
        // Shallow enough, it is expanded.
        assert_eq!(
            helpers
                .expand_call("G", &[deep(10)], &op2_spelling)
                .unwrap(),
            format!("({}1{})", "(".repeat(10), ")".repeat(10))
        );
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
