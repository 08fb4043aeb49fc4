//! The names of a kernel, resolved as C resolves them: a local is visible
//! from its declarator to the end of the block that declares it, an inner
//! block may declare a name again (shadowing the outer one until it ends),
//! and a parameter is visible in the whole body. And the fresh names the
//! translation gives a kernel's variable where its own name would mean
//! something else in `.op2`.

use std::collections::{BTreeSet, HashMap};

use tree_sitter::Node;

use crate::c::{self, Source, op2_name, scalar_type, walk};

/// A parameter or local of a kernel.
#[derive(Debug)]
pub struct Binding<'t> {
    /// Its C name.
    pub name: String,
    /// Its position, for a parameter.
    pub param: Option<usize>,
    /// The declarator that declares it (a parameter's, or a local's
    /// `init_declarator`, `array_declarator`, …).
    pub declarator: Node<'t>,
    /// Whether it is declared `float`.
    pub float: bool,
    /// Where its name is written: it is visible from there…
    at: usize,
    /// …to here (the end of its block).
    end: usize,
    /// The binding of the same name visible where it is declared, which it
    /// hides.
    outer: Option<usize>,
}

impl Binding<'_> {
    /// Where its name is written (a byte of the source).
    pub fn at(&self) -> usize {
        self.at
    }
}

/// The bindings of one kernel and what each identifier of its body refers
/// to.
#[derive(Debug)]
pub struct Scopes<'t> {
    /// Parameters first, by position; then locals in the order of their
    /// declarations.
    pub bindings: Vec<Binding<'t>>,
    /// The binding each identifier of the body refers to (by node id),
    /// declarations' names included; identifiers that name none are free.
    of: HashMap<usize, usize>,
    /// The bindings of each name, in the order of their declarations.
    by_name: HashMap<String, Vec<usize>>,
}

/// Nodes that open a scope: a block, and the statements whose parts may
/// declare a name (`for (int i = 0; …)`) that lives as long as the statement.
const SCOPES: &[&str] = &[
    "compound_statement",
    "for_statement",
    "for_range_loop",
    "while_statement",
    "if_statement",
    "do_statement",
    "switch_statement",
];

impl<'t> Scopes<'t> {
    /// Resolves the names of `body` (a function's body) with the
    /// parameters `params` (their declarations, in order). Walks the tree
    /// without recursion, so that no nesting of blocks exhausts the stack.
    pub fn new(source: &Source, params: &[Node<'t>], body: Option<Node<'t>>) -> Scopes<'t> {
        let mut scopes = Scopes {
            bindings: Vec::new(),
            of: HashMap::new(),
            by_name: HashMap::new(),
        };
        // The names visible now, innermost last per name.
        let mut visible: HashMap<String, Vec<usize>> = HashMap::new();
        let end = body.map_or(0, |b| b.end_byte());
        for (k, parameter) in params.iter().enumerate() {
            let Some(declarator) = parameter.child_by_field_name("declarator") else {
                continue;
            };
            let Some((ident, _, _)) = c::declared_name(declarator) else {
                continue;
            };
            let float = parameter
                .child_by_field_name("type")
                .is_some_and(|t| scalar_type(source.text(t)) == Some("float"));
            let id = scopes.declare(source, ident, declarator, Some(k), float, end, &visible);
            visible
                .entry(source.text(ident).to_owned())
                .or_default()
                .push(id);
        }
        let Some(body) = body else {
            return scopes;
        };
        // Open scopes: where each ends, and the names it declared.
        let mut open: Vec<(usize, Vec<String>)> = Vec::new();
        // Declarators' names not reached yet: (name's node id, declarator,
        // float).
        let mut pending: HashMap<usize, (Node<'t>, bool)> = HashMap::new();
        walk(body, |node, _| {
            while let Some((scope_end, _)) = open.last() {
                if node.start_byte() < *scope_end {
                    break;
                }
                if let Some((_, names)) = open.pop() {
                    for name in names {
                        if let Some(stack) = visible.get_mut(&name) {
                            stack.pop();
                        }
                    }
                }
            }
            let kind = node.kind();
            if SCOPES.contains(&kind) {
                open.push((node.end_byte(), Vec::new()));
            } else if kind == "declaration" {
                let float = node
                    .child_by_field_name("type")
                    .is_some_and(|t| scalar_type(source.text(t)) == Some("float"));
                for declarator in node.children_by_field_name("declarator", &mut node.walk()) {
                    if let Some((ident, _, _)) = c::declared_name(declarator) {
                        pending.insert(ident.id(), (declarator, float));
                    }
                }
            } else if kind == "identifier" {
                let name = source.text(node);
                if let Some((declarator, float)) = pending.remove(&node.id()) {
                    let scope_end = open.last().map_or(end, |(e, _)| *e);
                    let id =
                        scopes.declare(source, node, declarator, None, float, scope_end, &visible);
                    visible.entry(name.to_owned()).or_default().push(id);
                    if let Some((_, names)) = open.last_mut() {
                        names.push(name.to_owned());
                    }
                } else if let Some(&id) = visible.get(name).and_then(|s| s.last()) {
                    scopes.of.insert(node.id(), id);
                }
            }
            true
        });
        scopes
    }

    /// Adds the binding that `ident` (of `declarator`) declares, visible to
    /// `end`, hiding the one of its name in `visible`.
    #[allow(clippy::too_many_arguments)]
    fn declare(
        &mut self,
        source: &Source,
        ident: Node<'t>,
        declarator: Node<'t>,
        param: Option<usize>,
        float: bool,
        end: usize,
        visible: &HashMap<String, Vec<usize>>,
    ) -> usize {
        let name = source.text(ident).to_owned();
        let id = self.bindings.len();
        self.bindings.push(Binding {
            outer: visible.get(&name).and_then(|s| s.last().copied()),
            name: name.clone(),
            param,
            declarator,
            float,
            at: ident.start_byte(),
            end,
        });
        self.of.insert(ident.id(), id);
        self.by_name.entry(name).or_default().push(id);
        id
    }

    /// The binding the identifier `node` of the body refers to (or
    /// declares), `None` for a free name.
    pub fn binding(&self, node: Node<'_>) -> Option<usize> {
        self.of.get(&node.id()).copied()
    }

    /// The binding `name` refers to at the byte `at` of the body (where a
    /// macro or a helper that names it is used), `None` for a free name:
    /// the last one declared before `at`, or the one it hides, and so on,
    /// whose block has not ended at `at`.
    pub fn resolve_at(&self, name: &str, at: usize) -> Option<usize> {
        let ids = self.by_name.get(name)?;
        let before = ids.partition_point(|&id| self.bindings[id].at <= at);
        let mut candidate = ids.get(before.checked_sub(1)?).copied();
        while let Some(id) = candidate {
            if self.bindings[id].end > at {
                return Some(id);
            }
            candidate = self.bindings[id].outer;
        }
        None
    }
}

/// Names that a translation may give what it writes (a kernel's renamed
/// variable, a generated parameter or local): one that is no name of the
/// application's sources nor a word of the macros they use (`words`, so
/// that it means nothing else anywhere in the program), no name the kernel
/// reads from outside it in `.op2`'s spelling, and not one given already.
#[derive(Debug)]
pub struct Fresh<'w> {
    words: &'w BTreeSet<String>,
    taken: BTreeSet<String>,
}

impl<'w> Fresh<'w> {
    /// Fresh names besides `words` ([`crate::inline::Helpers::words`]) and
    /// `taken`.
    pub fn new(words: &'w BTreeSet<String>, taken: BTreeSet<String>) -> Fresh<'w> {
        Fresh { words, taken }
    }

    /// Whether `name` is in use.
    pub fn is_taken(&self, name: &str) -> bool {
        self.words.contains(name) || self.taken.contains(name)
    }

    /// The first of `candidates(0)`, `candidates(1)`, … whose names are all
    /// free, which it takes. `candidates` must give other names for each
    /// attempt, so that one is free by the time the names in use run out.
    pub fn claim(&mut self, candidates: impl Fn(usize) -> Vec<String>) -> Vec<String> {
        let names = c::first_free(candidates, |n| !self.is_taken(n));
        self.taken.extend(names.iter().cloned());
        names
    }

    /// A fresh name for the C variable `name`: `.op2`'s spelling of it
    /// (`exit_` for `exit`) when that is free and not `name` itself, else
    /// `name_1`, `name_2`, … ([`c::numbered`], as the program's names).
    pub fn rename(&mut self, name: &str) -> String {
        let spelled = op2_name(name);
        let preferred: Vec<String> = (spelled != name).then_some(spelled).into_iter().collect();
        let names = self.claim(|attempt| vec![c::numbered(name, &preferred, attempt)]);
        names.into_iter().next().unwrap_or_default()
    }

    /// Takes `name` as in use.
    pub fn take(&mut self, name: String) {
        self.taken.insert(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolved(text: &str) -> Vec<(String, Option<usize>)> {
        let source = Source::parse(
            std::path::Path::new("k.h"),
            "k.h".to_owned(),
            text.to_owned(),
        )
        .unwrap();
        let function = source.tree.root_node().named_child(0).unwrap();
        let params = function
            .child_by_field_name("declarator")
            .and_then(|d| d.child_by_field_name("parameters"))
            .map(c::named_children)
            .unwrap_or_default();
        let body = function.child_by_field_name("body");
        let scopes = Scopes::new(&source, &params, body);
        let mut out = Vec::new();
        walk(body.unwrap(), |node, _| {
            if node.kind() == "identifier" {
                out.push((source.text(node).to_owned(), scopes.binding(node)));
                let by_place = scopes.resolve_at(source.text(node), node.start_byte());
                assert_eq!(by_place, scopes.binding(node), "{}", source.text(node));
            }
            true
        });
        out
    }

    #[test]
    fn names_are_resolved_block_by_block_as_c_resolves_them() {
        let found = resolved(
            "void k(double *x, double *c) {\n  double a = *x;\n  { double a = 2.0; *c += a; { a += 1.0; } }\n  for (int i = 0; i < 2; i++) { double x = a; *c += x; }\n  for (int i = 0; i < 1; i++) *c += i;\n  *c += a + g;\n  { double g = a; *c += g; }\n}\n",
        );
        let shown: Vec<String> = found
            .iter()
            .map(|(n, b)| format!("{n}{}", b.map_or("?".to_owned(), |b| b.to_string())))
            .collect();
        // Parameters 0 and 1; `a` 2, the inner `a` 3, the first loop's `i`
        // 4 and its `x` 5, the second loop's `i` 6, the inner `g` 7.
        assert_eq!(
            shown.join(" "),
            "a2 x0 a3 c1 a3 a3 i4 i4 i4 x5 a2 c1 x5 i6 i6 i6 c1 i6 c1 a2 g? g7 a2 c1 g7"
        );
    }

    #[test]
    fn deeply_nested_blocks_resolve_without_recursion() {
        // Each of 20,000 nested blocks declares `x` again; the use after
        // them all is the parameter.
        let depth = 20_000;
        let text = format!(
            "void k(double *x) {{\n{}{}\n  *x += 1.0;\n}}\n",
            "{ double x = 1.0; ".repeat(depth),
            "x += 1.0; }".repeat(depth)
        );
        let found = resolved(&text);
        assert_eq!(found.len(), 2 * depth + 1);
        assert_eq!(found.last(), Some(&("x".to_owned(), Some(0))));
        // The innermost `x += 1.0` is the innermost `x`.
        assert_eq!(found[depth], ("x".to_owned(), Some(depth)));
    }

    #[test]
    fn fresh_names_avoid_every_word_and_each_other() {
        let words: BTreeSet<String> = ["c1", "c1_1", "exit", "len", "len_"]
            .iter()
            .map(|w| (*w).to_owned())
            .collect();
        let mut fresh = Fresh::new(&words, BTreeSet::from(["c1_2".to_owned()]));
        assert_eq!(fresh.rename("c1"), "c1_3");
        assert_eq!(fresh.rename("c1"), "c1_4");
        assert_eq!(fresh.rename("exit"), "exit_");
        assert_eq!(fresh.rename("exit"), "exit_1");
        assert_eq!(fresh.rename("len"), "len_1");
        assert!(fresh.is_taken("exit_") && !fresh.is_taken("exit_2"));
    }
}
