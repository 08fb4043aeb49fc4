//! The syntax tree as text, one node a line, with fields and positions, in
//! the style of `tree-sitter parse`: what `op2 parse FILE` prints.

use std::io::{self, Write};

use crate::Parse;
use crate::ast::NodeText;

/// Deepest indentation written, in levels: a node deeper than this is
/// written at this indentation with its depth in front, `[depth 5000] `, so
/// the output stays linear in the tree's size (a chain of 100,000 operators
/// is a tree 100,000 levels deep).
pub const MAX_INDENT: usize = 64;

/// Longest leaf text written, in bytes; a longer leaf (or one spanning lines)
/// is written without its text.
pub const MAX_SNIPPET: usize = 60;

/// Writes the named nodes of the tree, indented by depth. Leaves show their
/// text; missing nodes are marked `MISSING`. The walk is iterative, so a tree
/// of any depth is written without deep recursion.
pub fn write_tree(out: &mut impl Write, parse: &Parse) -> io::Result<()> {
    let text = parse.text();
    let mut cursor = parse.tree().walk();
    let mut depth = 0usize;
    loop {
        let node = cursor.node();
        if node.is_named() || node.is_missing() {
            let start = node.start_position();
            let end = node.end_position();
            write!(out, "{:indent$}", "", indent = depth.min(MAX_INDENT) * 2)?;
            if depth > MAX_INDENT {
                write!(out, "[depth {depth}] ")?;
            }
            if let Some(field) = cursor.field_name() {
                write!(out, "{field}: ")?;
            }
            if node.is_missing() {
                write!(out, "MISSING ")?;
            }
            write!(out, "{}", node.kind())?;
            write!(
                out,
                " [{}, {}] - [{}, {}]",
                start.row, start.column, end.row, end.column
            )?;
            if node.named_child_count() == 0 && !node.is_missing() && node.is_named() {
                let snippet = node.text(text);
                if snippet.len() <= MAX_SNIPPET && !snippet.contains('\n') {
                    write!(out, " {snippet:?}")?;
                }
            }
            writeln!(out)?;
        }
        if cursor.goto_first_child() {
            depth += usize::from(node.is_named() || node.is_missing());
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return Ok(());
            }
            let parent = cursor.node();
            depth -= usize::from(parent.is_named() || parent.is_missing());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(text: &str) -> String {
        let mut out = Vec::new();
        write_tree(&mut out, &Parse::new(text)).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_deep_tree_is_written_at_bounded_indentation_with_its_depth() {
        let deep = format!("main {{ x = {}1{}; }}", "(".repeat(300), ")".repeat(300));
        let out = printed(&deep);
        let mut deepest = 0usize;
        for line in out.lines() {
            let indent = line.len() - line.trim_start().len();
            assert!(indent <= MAX_INDENT * 2, "{line:?}");
            // A line is its indentation, a depth, a field, a kind, positions
            // and at most a short snippet.
            assert!(line.len() <= MAX_INDENT * 2 + 200, "{line:?}");
            if let Some(rest) = line.trim_start().strip_prefix("[depth ") {
                let depth: usize = rest[..rest.find(']').unwrap()].parse().unwrap();
                assert_eq!(indent, MAX_INDENT * 2, "{line:?}");
                assert!(depth > MAX_INDENT, "{line:?}");
                deepest = deepest.max(depth);
            }
        }
        assert!(deepest > 300, "the deepest line names depth {deepest}");
        assert!(out.lines().last().unwrap().ends_with(" \"1\""), "{out}");
    }

    #[test]
    fn fields_positions_missing_nodes_and_leaves_are_written() {
        let out = printed("main { x = ; }");
        assert!(out.starts_with("source_file [0, 0] - [0, 14]\n"), "{out}");
        assert!(out.contains("\"x\""), "{out}");
        let long = format!("main {{ {} = 1; }}", "y".repeat(MAX_SNIPPET + 1));
        assert!(!printed(&long).contains(&"y".repeat(MAX_SNIPPET + 1)));
    }
}
