//! `op2 check FILE...`: every diagnostic of every file, rendered.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Result;
use codespan_reporting::term::termcolor::{self, StandardStream};
use op2_syntax::{Diagnostic, Parse, Severity};

use crate::render::{SourceMap, write_human, write_json};
use crate::source::SourceFile;
use crate::{ColorChoice, MessageFormat, Outcome};

pub fn run(paths: &[PathBuf], format: MessageFormat, color: ColorChoice) -> Result<Outcome> {
    let mut sources = SourceMap::default();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    for path in paths {
        let source = SourceFile::read(path)?;
        let parse = Parse::new(source.text.as_str());
        let id = sources.add(source);
        diagnostics.extend(parse.errors(id));
    }

    match format {
        MessageFormat::Json => {
            let mut out = io::BufWriter::new(io::stdout().lock());
            write_json(&mut out, &sources, &diagnostics)?;
            out.flush()?;
        }
        MessageFormat::Human => {
            let choice = match color {
                ColorChoice::Always => termcolor::ColorChoice::Always,
                ColorChoice::Never => termcolor::ColorChoice::Never,
                ColorChoice::Auto if io::stderr().is_terminal() => termcolor::ColorChoice::Auto,
                ColorChoice::Auto => termcolor::ColorChoice::Never,
            };
            let stream = StandardStream::stderr(choice);
            let mut out = stream.lock();
            write_human(&mut out, &sources, &diagnostics)?;
            write_summary(&mut out, &diagnostics)?;
        }
    }

    let failed = diagnostics.iter().any(|d| d.severity == Severity::Error);
    Ok(if failed {
        Outcome::Errors
    } else {
        Outcome::Success
    })
}

fn write_summary(out: &mut dyn Write, diagnostics: &[Diagnostic]) -> io::Result<()> {
    let count = |severity| {
        diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    };
    let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    match (errors, warnings) {
        (0, 0) => Ok(()),
        (0, w) => writeln!(out, "warning: {} emitted", plural(w, "warning")),
        (e, 0) => writeln!(
            out,
            "error: could not check due to {}",
            plural(e, "previous error")
        ),
        (e, w) => writeln!(
            out,
            "error: could not check due to {}; {} emitted",
            plural(e, "previous error"),
            plural(w, "warning")
        ),
    }
}
