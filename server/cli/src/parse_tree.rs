//! `op2 parse FILE`: the syntax tree, one node a line, with fields and
//! positions, in the style of `tree-sitter parse`.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Result;
use op2_syntax::Parse;
use op2_syntax::print::write_tree;

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
            crate::render::visible_path(path)
        )?;
        return Ok(Outcome::Errors);
    }
    Ok(if parse.tree().root_node().has_error() {
        Outcome::Errors
    } else {
        Outcome::Success
    })
}
