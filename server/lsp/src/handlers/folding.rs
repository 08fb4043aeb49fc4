//! `textDocument/foldingRange` and `textDocument/selectionRange`, from the
//! syntax tree: blocks, parameter and argument lists, initialiser lists,
//! multi-line comments and runs of line comments or imports fold; a selection
//! grows through the ancestors of the node at the cursor.

use op2_syntax::tree_sitter::Node;
use op2_syntax::{Encoding, LineIndex};
use tower_lsp_server::lsp_types::{FoldingRange, FoldingRangeKind, Position, SelectionRange};

use super::Context;

/// Node kinds that fold: their text between the brackets.
const FOLDED: &[&str] = &[
    "compound_statement",
    "parameter_list",
    "par_loop_arguments",
    "initializer_list",
    "argument_list",
    "print_statement",
];

/// The folding ranges of the document, outermost first for equal starts.
pub fn folding_ranges(context: &Context<'_>) -> Option<Vec<FoldingRange>> {
    let parse = context.analysed.document.parse();
    let text = parse.text();
    let index = LineIndex::new(text);
    let line = |offset: usize| {
        index
            .line_col(u32::try_from(offset).unwrap_or(u32::MAX), Encoding::Utf8)
            .line
    };
    let mut ranges: Vec<FoldingRange> = Vec::new();
    let mut push = |start: u32, end: u32, kind: Option<FoldingRangeKind>| {
        if end > start && !ranges.iter().any(|r| r.start_line == start) {
            ranges.push(FoldingRange {
                start_line: start,
                end_line: end,
                kind,
                ..FoldingRange::default()
            });
        }
    };
    let mut nodes: Vec<Node<'_>> = Vec::new();
    let mut stack = vec![parse.tree().root_node()];
    while let Some(node) = stack.pop() {
        nodes.push(node);
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    // Runs on consecutive lines: line comments that begin their lines, and
    // imports.
    let mut comment_lines = Vec::new();
    let mut import_lines = Vec::new();
    for &node in &nodes {
        let (start, end) = (line(node.start_byte()), line(node.end_byte()));
        match node.kind() {
            "comment" if text[node.byte_range()].starts_with("/*") => {
                push(start, end, Some(FoldingRangeKind::Comment))
            }
            "comment" if starts_line(text, node.start_byte()) => comment_lines.push((start, end)),
            "import_declaration" => import_lines.push((start, end)),
            kind if FOLDED.contains(&kind) => {
                // The closing bracket stays visible when it begins its line.
                let last = node.end_byte().saturating_sub(1);
                let end = if starts_line(text, last) {
                    end.saturating_sub(1)
                } else {
                    end
                };
                push(start, end, Some(FoldingRangeKind::Region));
            }
            _ => {}
        }
    }
    for (lines, kind) in [
        (comment_lines, FoldingRangeKind::Comment),
        (import_lines, FoldingRangeKind::Imports),
    ] {
        let mut run: Option<(u32, u32)> = None;
        for (start, end) in lines {
            run = match run {
                Some((first, last)) if start == last + 1 => Some((first, end)),
                Some((first, last)) => {
                    push(first, last, Some(kind.clone()));
                    Some((start, end))
                }
                None => Some((start, end)),
            };
        }
        if let Some((first, last)) = run {
            push(first, last, Some(kind));
        }
    }
    ranges.sort_by_key(|r| (r.start_line, std::cmp::Reverse(r.end_line)));
    Some(ranges)
}

/// True when only blanks precede `offset` on its line.
fn starts_line(text: &str, offset: usize) -> bool {
    let before = &text[..offset.min(text.len())];
    let line_start = before.rfind(['\n', '\r']).map_or(0, |i| i + 1);
    before[line_start..].chars().all(|c| c == ' ' || c == '\t')
}

/// Most ranges in one position's chain: the innermost half and the
/// outermost half of them when the node has more ancestors than this (a
/// chain of 10,000 `+` after a syntax error nests 10,000 deep; the answer
/// is a linked list the client, and our own serialiser, walk recursively).
pub const MAX_SELECTION_LEVELS: usize = 128;

/// For each position, the node at it and each ancestor with a larger range
/// (at most [`MAX_SELECTION_LEVELS`] of them).
pub fn selection_ranges(
    context: &Context<'_>,
    positions: &[Position],
) -> Option<Vec<SelectionRange>> {
    let parse = context.analysed.document.parse();
    let root = parse.tree().root_node();
    let ranges = positions
        .iter()
        .map(|&position| {
            let offset = context.offset(position) as usize;
            let mut chain: Vec<std::ops::Range<usize>> = Vec::new();
            // The node at `offset` and its ancestors, found in one descent.
            for n in op2_syntax::NodePath::at(root, offset, offset).up() {
                let range = n.byte_range();
                if chain.last() != Some(&range) {
                    chain.push(range);
                }
            }
            if chain.len() > MAX_SELECTION_LEVELS {
                let half = MAX_SELECTION_LEVELS / 2;
                chain.drain(half..chain.len() - half);
            }
            let mut selection: Option<SelectionRange> = None;
            for range in chain.into_iter().rev() {
                let range = context.range(range.into());
                selection = Some(SelectionRange {
                    range,
                    parent: selection.map(Box::new),
                });
            }
            selection.unwrap_or(SelectionRange {
                range: tower_lsp_server::lsp_types::Range {
                    start: position,
                    end: position,
                },
                parent: None,
            })
        })
        .collect();
    Some(ranges)
}
