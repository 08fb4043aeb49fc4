//! The names of a kernel, resolved as C resolves them: a local is visible
//! from its declarator to the end of the block that declares it, an inner
//! block may declare a name again (shadowing the outer one until it ends),
//! and a parameter is visible in the whole body. And the fresh names the
//! translation gives a kernel's variable where its own name would mean
//! something else in `.op2`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

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
    /// Its declared type in `.op2`'s spelling, when it is a scalar one.
    pub ty: Option<&'static str>,
    /// Where its name is written: it is visible from there…
    at: usize,
    /// …to here (the end of its block).
    end: usize,
    /// The binding of the same name visible where it is declared, which it
    /// hides. Along this chain `end` never decreases (an outer binding's
    /// block encloses the inner one's).
    outer: Option<usize>,
    /// How many bindings it hides (the length of its chain of `outer`).
    depth: usize,
    /// A binding further along the chain (itself at the chain's end), by
    /// the skew-binary scheme of jump pointers: from any binding, the first
    /// one along the chain that passes a test which holds from some point
    /// of the chain on is found in O(log depth) steps.
    jump: usize,
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
            let ty = parameter
                .child_by_field_name("type")
                .and_then(|t| scalar_type(source.text(t)));
            let id = scopes.declare(source, ident, declarator, Some(k), ty, end, &visible);
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
        // type).
        let mut pending: HashMap<usize, (Node<'t>, Option<&'static str>)> = HashMap::new();
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
                let ty = node
                    .child_by_field_name("type")
                    .and_then(|t| scalar_type(source.text(t)));
                for declarator in node.children_by_field_name("declarator", &mut node.walk()) {
                    if let Some((ident, _, _)) = c::declared_name(declarator) {
                        pending.insert(ident.id(), (declarator, ty));
                    }
                }
            } else if kind == "identifier" {
                let name = source.text(node);
                if let Some((declarator, ty)) = pending.remove(&node.id()) {
                    let scope_end = open.last().map_or(end, |(e, _)| *e);
                    let id =
                        scopes.declare(source, node, declarator, None, ty, scope_end, &visible);
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
        ty: Option<&'static str>,
        end: usize,
        visible: &HashMap<String, Vec<usize>>,
    ) -> usize {
        let name = source.text(ident).to_owned();
        let id = self.bindings.len();
        let outer = visible.get(&name).and_then(|s| s.last().copied());
        let (depth, jump) = match outer {
            None => (0, id),
            Some(o) => {
                let j = self.bindings[o].jump;
                let jj = self.bindings[j].jump;
                let depth = |b: usize| self.bindings[b].depth;
                let jump = if depth(o) - depth(j) == depth(j) - depth(jj) {
                    jj
                } else {
                    o
                };
                (depth(o) + 1, jump)
            }
        };
        self.bindings.push(Binding {
            outer,
            depth,
            jump,
            name: name.clone(),
            param,
            declarator,
            float: ty == Some("float"),
            ty,
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
    /// whose block has not ended at `at`. O(log n) in the bindings of
    /// `name`, however deeply they hide one another: the ends never
    /// decrease along the chain, so a jump past bindings whose blocks have
    /// ended skips only such.
    pub fn resolve_at(&self, name: &str, at: usize) -> Option<usize> {
        let ids = self.by_name.get(name)?;
        let before = ids.partition_point(|&id| self.bindings[id].at <= at);
        let mut id = *ids.get(before.checked_sub(1)?)?;
        loop {
            let binding = &self.bindings[id];
            if binding.end > at {
                return Some(id);
            }
            id = if self.bindings[binding.jump].end <= at && binding.jump != id {
                binding.jump
            } else {
                binding.outer?
            };
        }
    }
}

/// Every name of the application's sources and every word of the bodies
/// of the macros they use: a name the translation makes up must be none of
/// them. And, for each family of candidates that searches for fresh names
/// try ([`Fresh::claim`]), the runs of attempts known to name one of them,
/// so that no search tries an attempt another search found taken by them:
/// each kernel's search past `x_inc`, `x_inc_`, `x_inc__`, … that a source
/// spells tried them all again, quadratic in the kernels and the names.
#[derive(Debug, Default)]
pub struct Words {
    names: BTreeSet<String>,
    /// Family → runs of attempts (first → one past the last) whose
    /// candidates name a word; disjoint, and no two adjacent.
    runs: RefCell<HashMap<String, BTreeMap<usize, usize>>>,
}

impl Words {
    /// The words `names`.
    pub fn new(names: BTreeSet<String>) -> Words {
        Words {
            names,
            runs: RefCell::default(),
        }
    }

    /// Whether `name` is one of them.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// All of them.
    pub fn names(&self) -> &BTreeSet<String> {
        &self.names
    }

    /// The first attempt from `from` on whose candidates name no word.
    /// Each attempt of a family is tried here once, whatever the searches.
    fn first_unnamed(
        &self,
        family: &str,
        from: usize,
        candidates: &impl Fn(usize) -> Vec<String>,
    ) -> usize {
        let mut all = self.runs.borrow_mut();
        let runs = all.entry(family.to_owned()).or_default();
        // The run `from` is in, or that ends where it is: the new run
        // extends it.
        let (begin, mut at) = match runs.range(..=from).next_back() {
            Some((&first, &end)) if from <= end => {
                runs.remove(&first);
                (first, end)
            }
            _ => (from, from),
        };
        loop {
            if let Some(end) = runs.remove(&at) {
                at = end;
            } else if candidates(at).iter().any(|n| self.names.contains(n)) {
                at += 1;
            } else {
                break;
            }
        }
        if at > begin {
            runs.insert(begin, at);
        }
        at
    }
}

/// Names that a translation may give what it writes (a kernel's renamed
/// variable, a generated parameter or local): one that is no name of the
/// application's sources nor a word of the macros they use (`words`, so
/// that it means nothing else anywhere in the program), no name the kernel
/// reads from outside it in `.op2`'s spelling, and not one given already.
#[derive(Clone, Debug, Default)]
pub struct Fresh {
    words: Rc<Words>,
    taken: BTreeSet<String>,
    /// Family → the first attempt not tried yet: every one before it is
    /// taken (the names in use only grow), so a search starts there.
    tried: HashMap<String, usize>,
}

impl Fresh {
    /// Fresh names besides `words` ([`crate::inline::Helpers::words`]) and
    /// `taken`.
    pub fn new(words: Rc<Words>, taken: BTreeSet<String>) -> Fresh {
        Fresh {
            words,
            taken,
            tried: HashMap::new(),
        }
    }

    /// Whether `name` is in use.
    pub fn is_taken(&self, name: &str) -> bool {
        self.words.contains(name) || self.taken.contains(name)
    }

    /// The first of `candidates(0)`, `candidates(1)`, … whose names are all
    /// free, which it takes. `candidates` must give other names for each
    /// attempt, so that one is free by the time the names in use run out,
    /// and the same names for the same `family` (a string naming the way
    /// they are made and what from), whose searches go on where the last
    /// stopped: linear in the names in use, however many searches.
    pub fn claim(
        &mut self,
        family: &str,
        candidates: impl Fn(usize) -> Vec<String>,
    ) -> Vec<String> {
        let mut attempt = self.tried.get(family).copied().unwrap_or(0);
        loop {
            attempt = self.words.first_unnamed(family, attempt, &candidates);
            let names = candidates(attempt);
            if names.iter().all(|n| !self.taken.contains(n)) {
                self.taken.extend(names.iter().cloned());
                self.tried.insert(family.to_owned(), attempt + 1);
                return names;
            }
            attempt += 1;
        }
    }

    /// A fresh name for the C variable `name`: `.op2`'s spelling of it
    /// (`exit_` for `exit`) when that is free and not `name` itself, else
    /// `name_1`, `name_2`, … ([`c::numbered`], as the program's names).
    pub fn rename(&mut self, name: &str) -> String {
        let spelled = op2_name(name);
        let preferred: Vec<String> = (spelled != name).then_some(spelled).into_iter().collect();
        let names = self.claim(&format!("rename {name}"), |attempt| {
            vec![c::numbered(name, &preferred, attempt)]
        });
        names.into_iter().next().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls `f` with the source `text` (one function), the scopes of its
    /// function and its body.
    fn with_scopes<R>(text: &str, f: impl FnOnce(&Source, &Scopes<'_>, Node<'_>) -> R) -> R {
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
        let body = function.child_by_field_name("body").unwrap();
        let scopes = Scopes::new(&source, &params, Some(body));
        f(&source, &scopes, body)
    }

    fn resolved(text: &str) -> Vec<(String, Option<usize>)> {
        with_scopes(text, |source, scopes, body| {
            let mut out = Vec::new();
            walk(body, |node, _| {
                if node.kind() == "identifier" {
                    out.push((source.text(node).to_owned(), scopes.binding(node)));
                    let by_place = scopes.resolve_at(source.text(node), node.start_byte());
                    assert_eq!(by_place, scopes.binding(node), "{}", source.text(node));
                }
                true
            });
            out
        })
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

    /// Resolution by place, with its jump pointers, against a walk of the
    /// chain of hidden bindings one by one, at every byte of a body whose
    /// blocks nest 300 deep, each declaring `x` again, with blocks beside
    /// them that declare it too and end before the uses that follow.
    #[test]
    fn resolving_by_place_jumps_to_what_a_walk_of_the_chain_finds() {
        let depth = 300;
        let mut text = "void k(double *x) {\n".to_owned();
        for level in 0..depth {
            text.push_str("{ double x = 1.0; ");
            if level % 3 == 0 {
                text.push_str("{ double x = 2.0; x += 1.0; } ");
            }
        }
        for level in 0..depth {
            text.push_str("x += 1.0; ");
            if level % 5 == 0 {
                text.push_str("{ int x = 0; } x -= 1.0; ");
            }
            text.push('}');
        }
        text.push_str("\n  *x += 1.0;\n}\n");
        with_scopes(&text, |_, scopes, _| {
            let walked = |at: usize| {
                let ids = &scopes.by_name["x"];
                let before = ids.partition_point(|&id| scopes.bindings[id].at <= at);
                let mut candidate = ids.get(before.checked_sub(1)?).copied();
                while let Some(id) = candidate {
                    if scopes.bindings[id].end > at {
                        return Some(id);
                    }
                    candidate = scopes.bindings[id].outer;
                }
                None
            };
            assert!(scopes.bindings.len() > depth + depth / 3 + depth / 5);
            assert!(scopes.bindings.iter().any(|b| b.depth == depth));
            for at in 0..=text.len() {
                assert_eq!(scopes.resolve_at("x", at), walked(at), "at byte {at}");
            }
        });
    }

    /// A thousand kernels' searches past the thousand names a source
    /// spells `x_inc`, `x_inc_`, … try each of them once in all, and a
    /// thousand searches of one kernel go on where the last stopped: the
    /// candidates made are counted, linear where they were quadratic.
    #[test]
    fn searches_for_fresh_names_try_each_attempt_once() {
        let n = 1_000;
        let spelled = |attempt: usize| format!("x_inc{}", "_".repeat(attempt));
        let numbered = |attempt: usize| format!("y_{attempt}");
        let words: BTreeSet<String> = (0..n).flat_map(|k| [spelled(k), numbered(k)]).collect();
        let words = Rc::new(Words::new(words));
        let made = std::cell::Cell::new(0);
        for _ in 0..n {
            let mut fresh = Fresh::new(Rc::clone(&words), BTreeSet::new());
            let names = fresh.claim("inc x", |attempt| {
                made.set(made.get() + 1);
                vec![spelled(attempt)]
            });
            assert_eq!(names, [spelled(n)]);
        }
        assert!(made.get() <= 3 * n, "{} candidates made", made.get());
        made.set(0);
        let mut fresh = Fresh::new(Rc::clone(&words), BTreeSet::from([numbered(n + 1)]));
        for k in 0..n {
            let names = fresh.claim("numbered y", |attempt| {
                made.set(made.get() + 1);
                vec![numbered(attempt)]
            });
            // y_1000 first, then y_1002 on (y_1001 is taken).
            assert_eq!(names, [numbered(n + k + usize::from(k > 0))]);
        }
        assert!(made.get() <= 4 * n, "{} candidates made", made.get());
    }

    #[test]
    fn fresh_names_avoid_every_word_and_each_other() {
        let words: BTreeSet<String> = ["c1", "c1_1", "exit", "len", "len_"]
            .iter()
            .map(|w| (*w).to_owned())
            .collect();
        let mut fresh = Fresh::new(
            Rc::new(Words::new(words)),
            BTreeSet::from(["c1_2".to_owned()]),
        );
        assert_eq!(fresh.rename("c1"), "c1_3");
        assert_eq!(fresh.rename("c1"), "c1_4");
        assert_eq!(fresh.rename("exit"), "exit_");
        assert_eq!(fresh.rename("exit"), "exit_1");
        assert_eq!(fresh.rename("len"), "len_1");
        assert!(fresh.is_taken("exit_") && !fresh.is_taken("exit_2"));
    }
}
