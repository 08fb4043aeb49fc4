//! Ancestors of a node, found by descending from the root with a cursor.
//!
//! Tree-sitter's `Node::parent`, `prev_sibling` and `next_sibling` each
//! descend from the root of the tree again, so climbing to the root by them
//! costs the square of the depth; and for an empty node (a MISSING token)
//! tree-sitter 0.27's C recurses once per level, which a deeply nested file
//! turns into a stack overflow on a 2 MiB thread. Code that needs the
//! ancestors of a node takes a [`NodePath`] instead: one descent, no
//! recursion, and every parent after it for nothing.

use tree_sitter::Node;

/// A node with its ancestors: `nodes[0]` is the root the path was found
/// from, the last is the node itself, and each is the (visible) parent of
/// the next.
#[derive(Clone, Debug)]
pub struct NodePath<'t> {
    nodes: Vec<Node<'t>>,
}

impl<'t> NodePath<'t> {
    /// The path that holds only `root`, to be extended by [`NodePath::push`]
    /// as a walk descends (and shortened by [`NodePath::pop`]).
    pub fn root(root: Node<'t>) -> NodePath<'t> {
        NodePath { nodes: vec![root] }
    }

    /// The path to the node `root.descendant_for_byte_range(start, end)`
    /// returns: the smallest node that holds the range (an empty node at an
    /// empty range's place counts).
    pub fn at(root: Node<'t>, start: usize, end: usize) -> NodePath<'t> {
        let mut nodes = vec![root];
        if start > end {
            return NodePath { nodes };
        }
        let mut cursor = root.walk();
        'descend: while cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                let child_end = child.end_byte();
                let empty = child.start_byte() == child_end;
                // As tree-sitter's search: the child must reach the end of
                // the range, and go past its start unless it is empty.
                let reaches = child_end >= end
                    && if empty {
                        child_end >= start
                    } else {
                        child_end > start
                    };
                if reaches {
                    if child.start_byte() > start {
                        break 'descend;
                    }
                    nodes.push(child);
                    continue 'descend;
                }
                if !cursor.goto_next_sibling() {
                    break 'descend;
                }
            }
        }
        NodePath { nodes }
    }

    /// The path from `root` to `node`, or `None` when `node` is not in
    /// `root`'s subtree. Only nodes whose range holds `node`'s are looked
    /// into, so the cost is about the depth of `node` and the siblings
    /// before each of its ancestors.
    pub fn to(root: Node<'t>, node: Node<'t>) -> Option<NodePath<'t>> {
        let (start, end) = (node.start_byte(), node.end_byte());
        let holds = |n: Node<'_>| n.start_byte() <= start && end <= n.end_byte();
        let mut cursor = root.walk();
        // The ancestors of the cursor's node.
        let mut nodes: Vec<Node<'t>> = Vec::new();
        let mut fresh = true;
        loop {
            let current = cursor.node();
            if fresh {
                if current.id() == node.id() {
                    nodes.push(current);
                    return Some(NodePath { nodes });
                }
                if holds(current) && cursor.goto_first_child() {
                    nodes.push(current);
                    continue;
                }
            }
            if cursor.goto_next_sibling() {
                // Siblings are in order: one that starts after `node`
                // cannot hold it.
                if cursor.node().start_byte() <= start {
                    fresh = true;
                    continue;
                }
            }
            if !cursor.goto_parent() {
                return None;
            }
            nodes.pop();
            fresh = false;
        }
    }

    /// The node the path leads to.
    pub fn node(&self) -> Node<'t> {
        self.nodes[self.nodes.len() - 1]
    }

    /// The ancestors of [`NodePath::node`], its parent first.
    pub fn ancestors(&self) -> impl Iterator<Item = Node<'t>> + '_ {
        self.nodes[..self.nodes.len() - 1].iter().rev().copied()
    }

    /// The node and then its ancestors, up to the root.
    pub fn up(&self) -> impl Iterator<Item = Node<'t>> + '_ {
        self.nodes.iter().rev().copied()
    }

    /// The `n`-th ancestor of the node: 1 is its parent.
    pub fn ancestor(&self, n: usize) -> Option<Node<'t>> {
        let len = self.nodes.len();
        (n < len).then(|| self.nodes[len - 1 - n])
    }

    /// The parent of `node`, when `node` is on the path.
    pub fn parent_of(&self, node: Node<'t>) -> Option<Node<'t>> {
        let index = self.nodes.iter().rposition(|n| n.id() == node.id())?;
        index.checked_sub(1).map(|i| self.nodes[i])
    }

    /// The path cut to end at its `n`-th ancestor (0: the whole path).
    pub fn up_to(&self, n: usize) -> Option<NodePath<'t>> {
        let len = self.nodes.len();
        (n < len).then(|| NodePath {
            nodes: self.nodes[..len - n].to_vec(),
        })
    }

    /// Extends the path by `child`, a child of its node.
    pub fn push(&mut self, child: Node<'t>) {
        self.nodes.push(child);
    }

    /// Takes the node off the end of the path (never the root): the path
    /// then leads to its parent. Returns the node taken off.
    pub fn pop(&mut self) -> Option<Node<'t>> {
        if self.nodes.len() > 1 {
            self.nodes.pop()
        } else {
            None
        }
    }

    /// The number of nodes on the path, the root and the node included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Never true: a path holds at least its root.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Parse;

    fn all_nodes(root: Node<'_>) -> Vec<Node<'_>> {
        let mut out = vec![root];
        let mut index = 0;
        while index < out.len() {
            let node = out[index];
            let mut cursor = node.walk();
            out.extend(node.children(&mut cursor));
            index += 1;
        }
        out
    }

    const TEXTS: &[&str] = &[
        "main { int y = (1)x+x+x+x; }",
        "set s; /* c */ dat d: double on s;\nkernel k(double *q) { q[0] = ; }\nmain { par_loop k over s (d RW) }",
        "main { for (int i = 0; i < 3; i++) { x = = 1 } // end\n }",
        "main { { { if (x) { y = 1 } } /* c */",
        "kernel k(const double *q, double r[2]) { r[0] = q[0] ? 1 : ; }",
    ];

    /// The paths agree with tree-sitter's own `parent` and
    /// `descendant_for_byte_range` (fine on small trees).
    #[test]
    fn paths_agree_with_tree_sitter() {
        for text in TEXTS {
            let parse = Parse::new(*text);
            let root = parse.tree().root_node();
            for node in all_nodes(root) {
                let path = NodePath::to(root, node).expect("every node is found");
                assert_eq!(path.node().id(), node.id());
                let mut expected = Vec::new();
                let mut current = node.parent();
                while let Some(parent) = current {
                    expected.push(parent.id());
                    current = parent.parent();
                }
                let got: Vec<usize> = path.ancestors().map(|n| n.id()).collect();
                assert_eq!(got, expected, "{text:?} at {node:?}");
                assert_eq!(
                    path.parent_of(node).map(|n| n.id()),
                    node.parent().map(|n| n.id())
                );
            }
            for start in 0..=text.len() {
                for end in start..=(start + 2).min(text.len()) {
                    let path = NodePath::at(root, start, end);
                    let expected = root.descendant_for_byte_range(start, end).unwrap();
                    assert_eq!(
                        path.node().id(),
                        expected.id(),
                        "{text:?} at {start}..{end}: {:?} against {expected:?}",
                        path.node()
                    );
                    let again = NodePath::to(root, expected).unwrap();
                    let ids = |p: &NodePath<'_>| p.up().map(|n| n.id()).collect::<Vec<_>>();
                    assert_eq!(ids(&path), ids(&again));
                }
            }
        }
    }

    /// A MISSING token under 100,000 nested blocks, on a 2 MiB stack.
    #[test]
    fn deep_paths_need_no_stack() {
        let depth = 100_000;
        let text = format!(
            "main {{\n{}x = ;{}}}\n",
            "{ ".repeat(depth),
            " }".repeat(depth)
        );
        let found = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let parse = Parse::new(text.as_str());
                let root = parse.tree().root_node();
                // The MISSING node, found by a cursor.
                let mut cursor = root.walk();
                let mut depth = 0;
                let missing = loop {
                    let node = cursor.node();
                    if node.is_missing() {
                        break node;
                    }
                    if cursor.goto_first_child() {
                        depth += 1;
                        continue;
                    }
                    while !cursor.goto_next_sibling() {
                        assert!(cursor.goto_parent(), "no MISSING node");
                        depth -= 1;
                    }
                };
                let path = NodePath::to(root, missing).expect("found");
                let at = NodePath::at(root, missing.start_byte(), missing.end_byte());
                (
                    path.len(),
                    depth + 1,
                    at.len(),
                    path.parent_of(missing).is_some(),
                )
            })
            .unwrap()
            .join()
            .unwrap();
        let (to, depth, at, parent) = found;
        assert!(depth > 100_000, "{depth}");
        assert_eq!(to, depth);
        assert!(at >= depth - 2, "{at} against {depth}");
        assert!(parent);
    }
}
