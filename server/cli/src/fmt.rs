//! `op2 fmt FILE... [--check]`: rewrites files in the canonical layout, the
//! same the editor's "format document" produces. With `--check` nothing is
//! written; the files that would change are listed and the exit code is 1.
//! A file with syntax errors is left alone and its errors are printed.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use codespan_reporting::term::termcolor::{self, StandardStream};
use op2_syntax::format::{FormatError, format};

use crate::Outcome;
use crate::render::{SourceMap, write_human};
use crate::source::SourceFile;

pub fn run(paths: &[PathBuf], check: bool) -> Result<Outcome> {
    let mut out = io::stdout().lock();
    let mut failed = false;
    for path in paths {
        let source = SourceFile::read(path)?;
        match format(&source.text) {
            Ok(formatted) if formatted == source.text => {}
            Ok(_) if check => {
                writeln!(out, "{}", path.display())?;
                failed = true;
            }
            Ok(formatted) => op2_codegen::output::write_file_atomically(path, formatted.as_bytes())
                .with_context(|| format!("cannot write `{}`", path.display()))?,
            Err(FormatError::Syntax(errors)) => {
                let choice = if io::stderr().is_terminal() {
                    termcolor::ColorChoice::Auto
                } else {
                    termcolor::ColorChoice::Never
                };
                let stream = StandardStream::stderr(choice);
                let mut stderr = stream.lock();
                let mut sources = SourceMap::default();
                sources.add(source);
                write_human(&mut stderr, &sources, &errors)?;
                writeln!(
                    stderr,
                    "error: `{}` has syntax errors; it was not formatted",
                    path.display()
                )?;
                failed = true;
            }
            Err(error @ (FormatError::TooDeep | FormatError::Internal(_))) => {
                writeln!(
                    io::stderr().lock(),
                    "error: `{}` was not formatted: {error}",
                    path.display()
                )?;
                failed = true;
            }
        }
    }
    out.flush()?;
    Ok(if failed {
        Outcome::Errors
    } else {
        Outcome::Success
    })
}
