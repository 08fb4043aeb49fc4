//! `op2 parse FILE`: the syntax tree, one node a line, with fields and
//! positions, in the style of `tree-sitter parse`.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Result;
use op2_syntax::Parse;
use op2_syntax::ast::NodeText;

use crate::Outcome;
use crate::source::SourceFile;

pub fn run(path: &Path) -> Result<Outcome> {
    let source = SourceFile::read(path)?;
    let parse = Parse::new(source.text.as_str());
    let mut out = BufWriter::new(io::stdout().lock());
    write_tree(&mut out, &parse)?;
    out.flush()?;
    if let Some(cut) = parse.stopped_at() {
        // The tree holds the text before that line only (E002).
        // Lines as the editors and E002 count them (`\n`, `\r\n` or a lone `\r`).
        let index = op2_syntax::LineIndex::new(&source.text);
        let at = u32::try_from(cut).unwrap_or(u32::MAX);
        let line = index.line_col(at, op2_syntax::Encoding::Utf8).line + 1;
        writeln!(
            io::stderr().lock(),
            "error[E002]: {}:{line}: the parser gave up here; the tree above ends at this line",
            path.display()
        )?;
        return Ok(Outcome::Errors);
    }
    Ok(if parse.tree().root_node().has_error() {
        Outcome::Errors
    } else {
        Outcome::Success
    })
}

/// Deepest indentation written, in levels: a node deeper than this is
/// written at this indentation with its depth in front, `[depth 5000] `, so
/// the output stays linear in the tree's size (a chain of 100,000 operators
/// is a tree 100,000 levels deep).
const MAX_INDENT: usize = 64;

/// Writes the named nodes of the tree, indented by depth. Leaves show their
/// text; missing nodes are marked `MISSING`.
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
                if snippet.len() <= 60 && !snippet.contains('\n') {
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
