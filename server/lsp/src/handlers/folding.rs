//! `textDocument/foldingRange` and `textDocument/selectionRange`, from the
//! syntax tree: blocks, parameter and argument lists, initialiser lists,
//! multi-line comments and runs of line comments or imports fold; a selection
//! grows through the ancestors of the node at the cursor.

use op2_syntax::tree_sitter::Node;
use op2_syntax::{Encoding, LineIndex};
use rustc_hash::{FxHashMap, FxHashSet};
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
    // Whether only blanks precede an offset on its line, from the offset
    // of each line's first other character, found once per line: a test
    // that scanned back to the line's start for every node was quadratic
    // on a long line.
    let mut first_text: FxHashMap<u32, usize> = FxHashMap::default();
    let mut starts_line = |offset: usize| {
        let number = line(offset);
        let start = index.line_start(number).unwrap_or(0) as usize;
        let first = *first_text.entry(number).or_insert_with(|| {
            let blanks = text
                .get(start..)
                .unwrap_or("")
                .bytes()
                .take_while(|&b| b == b' ' || b == b'\t')
                .count();
            crate::work::count(blanks + 1);
            start + blanks
        });
        offset <= first
    };
    let mut ranges: Vec<FoldingRange> = Vec::new();
    // The start lines taken: the first range to start on a line keeps it.
    let mut taken: FxHashSet<u32> = FxHashSet::default();
    let mut push = |start: u32, end: u32, kind: Option<FoldingRangeKind>| {
        if end > start && taken.insert(start) {
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
        crate::work::count(1);
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
            "comment" if starts_line(node.start_byte()) => comment_lines.push((start, end)),
            "import_declaration" => import_lines.push((start, end)),
            // A node on one line folds nothing.
            kind if FOLDED.contains(&kind) && end > start => {
                // The closing bracket stays visible when it begins its line.
                let last = node.end_byte().saturating_sub(1);
                let end = if starts_line(last) {
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

/// Most ranges in one position's chain: the innermost half and the
/// outermost half of them when the node has more ancestors than this (a
/// chain of 10,000 `+` after a syntax error nests 10,000 deep; the answer
/// is a linked list the client, and our own serialiser, walk recursively).
pub const MAX_SELECTION_LEVELS: usize = 128;

/// Most positions of one request that get their ranges (an editor sends one
/// per cursor); the others get an empty range at the position. Each costs
/// a descent of the tree past the siblings before it (once per distinct
/// position) and up to [`MAX_SELECTION_LEVELS`] ranges of answer (for a
/// repeat too), so the request's work and answer are bounded whatever the
/// client sends.
pub const MAX_SELECTION_POSITIONS: usize = 1024;

/// For each position, the node at it and each ancestor with a larger range
/// (at most [`MAX_SELECTION_LEVELS`] of them). A position asked twice is
/// worked out once.
pub fn selection_ranges(
    context: &Context<'_>,
    positions: &[Position],
) -> Option<Vec<SelectionRange>> {
    let parse = context.analysed.document.parse();
    let root = parse.tree().root_node();
    let mut done: FxHashMap<usize, SelectionRange> = FxHashMap::default();
    let empty = |position: Position| SelectionRange {
        range: tower_lsp_server::lsp_types::Range {
            start: position,
            end: position,
        },
        parent: None,
    };
    let ranges = positions
        .iter()
        .enumerate()
        .map(|(index, &position)| {
            if index >= MAX_SELECTION_POSITIONS {
                return empty(position);
            }
            let offset = context.offset(position) as usize;
            if let Some(known) = done.get(&offset) {
                return known.clone();
            }
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
            let selection = selection.unwrap_or_else(|| empty(position));
            done.insert(offset, selection.clone());
            selection
        })
        .collect();
    Some(ranges)
}
