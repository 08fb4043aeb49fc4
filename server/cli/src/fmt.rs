//! `op2 fmt FILE... [--check]`: rewrites files in the canonical layout, the
//! same the editor's "format document" produces. With `--check` nothing is
//! written; a unified diff of every file that would change is printed and
//! the exit code is 1. `-` is standard input, formatted to standard output.
//! A file with syntax errors is left alone and its errors are printed.

use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use codespan_reporting::term::termcolor::{self, BufferedStandardStream};
use op2_syntax::format::{FormatError, format};

use crate::Outcome;
use crate::render::{SourceMap, write_human};
use crate::source::SourceFile;

/// The text of standard input, named `<stdin>` in messages: at most the
/// source limit of a file (16 MiB), and UTF-8, as a file's.
fn read_stdin() -> Result<SourceFile> {
    use op2_codegen::files::{SOURCE_LIMIT, decode_source};
    let mut bytes = Vec::new();
    io::stdin()
        .lock()
        .take(SOURCE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .context("cannot read standard input")?;
    if bytes.len() as u64 > SOURCE_LIMIT {
        anyhow::bail!(
            "cannot read standard input: it is more than {SOURCE_LIMIT} bytes, over the limit for a program"
        );
    }
    let name = PathBuf::from("<stdin>");
    let text = decode_source(bytes).map_err(|error| anyhow::anyhow!(error.describe(&name)))?;
    Ok(SourceFile::from_text(name, text))
}

/// `Ok` when the file at `path` may be written itself (links followed), as
/// an editor saving it would need: it has a write permission bit (a copy
/// made read-only is refused, whoever runs `op2 fmt`), and on Unix the user
/// may write it (another's file).
fn may_write(path: &Path) -> io::Result<()> {
    if std::fs::metadata(path)?.permissions().readonly() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the file is read-only",
        ));
    }
    #[cfg(unix)]
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK)?;
    Ok(())
}

mod diff;

/// A unified diff from `old` to `new`, with `path` in its header: the same
/// on every machine, computed in time linear in the texts plus at most
/// [`diff::WORK_LIMIT`] steps of search.
fn unified_diff(path: &Path, old: &str, new: &str) -> String {
    diff::unified(&path.display().to_string(), old, new, diff::WORK_LIMIT)
}

pub fn run(paths: &[PathBuf], check: bool) -> Result<Outcome> {
    let mut out = io::stdout().lock();
    let mut failed = false;
    let mut unreadable = false;
    for path in paths {
        let stdin = path.as_os_str() == "-";
        // A file that cannot be read is reported and the others are
        // formatted, as `op2 check` goes on with the other files.
        let source = if stdin {
            read_stdin()
        } else {
            SourceFile::read(path).map_err(anyhow::Error::from)
        };
        let source = match source {
            Ok(source) => source,
            Err(error) => {
                writeln!(
                    io::stderr().lock(),
                    "error: {}",
                    crate::render::visible(&format!("{error:#}"))
                )?;
                unreadable = true;
                continue;
            }
        };
        let path = &source.path.clone();
        match format(&source.text) {
            Ok(formatted) if stdin && !check => out.write_all(formatted.as_bytes())?,
            Ok(formatted) if formatted == source.text => {}
            Ok(formatted) if check => {
                write!(out, "{}", unified_diff(path, &source.text, &formatted))?;
                failed = true;
            }
            Ok(formatted) => {
                // The new text is renamed over the file, which needs only
                // the directory: a file the user may not write (a read-only
                // copy, another's file) is refused as an editor would. As
                // for a file that cannot be read, the others go on.
                let written = may_write(path).and_then(|()| {
                    op2_codegen::output::write_file_atomically(path, formatted.as_bytes())
                });
                if let Err(error) = written {
                    writeln!(
                        io::stderr().lock(),
                        "error: cannot write `{}`: {}",
                        crate::render::visible_path(path),
                        crate::render::visible(&error.to_string())
                    )?;
                    unreadable = true;
                }
            }
            Err(FormatError::Syntax(errors)) => {
                let choice = if io::stderr().is_terminal() {
                    termcolor::ColorChoice::Auto
                } else {
                    termcolor::ColorChoice::Never
                };
                let mut stderr = BufferedStandardStream::stderr(choice);
                let mut sources = SourceMap::default();
                sources.add(source);
                write_human(&mut stderr, &sources, &errors)?;
                writeln!(
                    stderr,
                    "error: `{}` has syntax errors; it was not formatted",
                    crate::render::visible_path(path)
                )?;
                stderr.flush()?;
                failed = true;
            }
            Err(error @ (FormatError::TooDeep | FormatError::Internal(_))) => {
                writeln!(
                    io::stderr().lock(),
                    "error: `{}` was not formatted: {error}",
                    crate::render::visible_path(path)
                )?;
                failed = true;
            }
        }
    }
    out.flush()?;
    // As `op2 check`: a file that could not be read (or written) is exit
    // status 2.
    Ok(if unreadable {
        Outcome::Failed
    } else if failed {
        Outcome::Errors
    } else {
        Outcome::Success
    })
}
