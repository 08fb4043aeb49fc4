//! `op2 check FILE...`: every diagnostic of every file and its imports,
//! rendered. The analysis is the same one the language server runs.

use std::collections::HashSet;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use codespan_reporting::term::termcolor::{self, BufferedStandardStream};
use op2_analysis::{Analyser, Analysis, Loader, Options};
use op2_syntax::{Diagnostic, Parse, Severity};

use crate::render::{SourceMap, write_human, write_json, write_json_file_error};
use crate::source::{FileError, SourceFile};
use crate::{ColorChoice, MessageFormat, Outcome};

/// Reads imported files from disk.
#[derive(Clone, Copy, Debug)]
pub struct DiskLoader;

impl Loader for DiskLoader {
    fn load(&self, path: &Path) -> Result<Arc<str>, String> {
        // The path is in the diagnostic already; keep the reason only.
        op2_codegen::files::read_import(path)
            .map(Arc::from)
            .map_err(|error| error.to_string())
    }
}

/// The files of one analysed program and the diagnostics to show for them.
pub struct Report {
    pub sources: SourceMap,
    pub diagnostics: Vec<Diagnostic>,
}

/// Reads, parses and analyses one file with its imports, adding the code
/// generator's diagnostics (the same as the editor shows).
pub fn check_file(
    analyser: &mut Analyser,
    path: &Path,
    options: &Options,
) -> Result<(Analysis, Report), FileError> {
    check_file_with(analyser, path, options, &DiskLoader)
}

/// [`check_file`] with imports read through `loader` (`--watch` records
/// which files they were).
pub fn check_file_with(
    analyser: &mut Analyser,
    path: &Path,
    options: &Options,
    loader: &dyn Loader,
) -> Result<(Analysis, Report), FileError> {
    let source = SourceFile::read(path)?;
    let parse = Parse::new(source.text.as_str());
    let analysis = analyser.analyse(path, &parse, loader, options);
    let mut sources = SourceMap::default();
    sources.add(source);
    for file in analysis.program.files.iter().skip(1) {
        sources.add(SourceFile::from_text(
            file.path.clone(),
            file.text.to_string(),
        ));
    }
    let mut diagnostics = analysis.diagnostics.clone();
    diagnostics.extend(op2_codegen::diagnostics(
        &analysis,
        &op2_codegen::graph_id(path),
    ));
    Ok((
        analysis,
        Report {
            sources,
            diagnostics,
        },
    ))
}

/// `-D warnings`: what may be denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Deny {
    /// Every warning becomes an error (for CI).
    Warnings,
}

/// Options of `check` and `build` about what counts as an error.
#[derive(Debug, Default, clap::Args)]
pub struct Lints {
    /// `-D warnings`: treat warnings as errors (exit 1, nothing built).
    #[arg(short = 'D', long = "deny", value_enum, value_name = "WHAT")]
    pub deny: Vec<Deny>,
}

impl Lints {
    /// Whether warnings count as errors (`-D warnings`).
    pub fn denies_warnings(&self) -> bool {
        self.deny.contains(&Deny::Warnings)
    }

    /// Raises what is denied to errors.
    pub fn apply(&self, diagnostics: &mut [Diagnostic]) {
        if self.denies_warnings() {
            for diagnostic in diagnostics {
                if diagnostic.severity == Severity::Warning {
                    diagnostic.severity = Severity::Error;
                }
            }
        }
    }
}

/// Options of `check` only.
#[derive(Debug, clap::Args)]
pub struct CheckOptions {
    /// How to print diagnostics.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,
    /// When to colour diagnostics (on standard error).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print diagnostics only: no summary line when all is well.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub lints: Lints,
    #[command(flatten)]
    pub watch: crate::watch::WatchFlag,
}

pub fn run(paths: &[PathBuf], options: &CheckOptions) -> Result<Outcome> {
    if options.watch.watch {
        return crate::watch::watch("check", paths, &[], |loader| {
            run_with(paths, options, loader)
        });
    }
    run_with(paths, options, &DiskLoader)
}

/// One check of `paths`, imports read through `loader`.
pub fn run_with(paths: &[PathBuf], options: &CheckOptions, loader: &dyn Loader) -> Result<Outcome> {
    let (format, color) = (options.message_format, options.color);
    let mut analyser = Analyser::new();
    let mut files: HashSet<PathBuf> = HashSet::new();
    // A file imported by several checked files is reported once.
    let mut seen: HashSet<(PathBuf, u32, u32, &'static str, String)> = HashSet::new();
    let mut reports = Vec::new();
    let mut unreadable = false;
    for path in paths {
        let checked = check_file_with(&mut analyser, path, &Options::default(), loader);
        let (analysis, mut report) = match checked {
            Ok(checked) => checked,
            Err(error) => {
                // Reported in the chosen format; the other files are
                // still checked.
                render_file_error(&error, format)?;
                unreadable = true;
                continue;
            }
        };
        options.lints.apply(&mut report.diagnostics);
        files.extend(analysis.program.files.iter().map(|f| f.path.clone()));
        let sources = &report.sources;
        report.diagnostics.retain(|d| {
            let file = sources
                .get(d.location.file)
                .map(|f| f.path.clone())
                .unwrap_or_default();
            seen.insert((
                file,
                d.location.range.start,
                d.location.range.end,
                d.code.as_str(),
                d.message.clone(),
            ))
        });
        reports.push(report);
    }
    render(&reports, format, color)?;
    let failed = reports
        .iter()
        .flat_map(|r| &r.diagnostics)
        .any(|d| d.severity == Severity::Error);
    let clean = !unreadable && reports.iter().all(|r| r.diagnostics.is_empty());
    if clean && format == MessageFormat::Human && !options.quiet {
        let count = files.len();
        writeln!(
            io::stderr().lock(),
            "checked {count} file{}: no problems",
            if count == 1 { "" } else { "s" }
        )?;
    }
    Ok(if unreadable {
        Outcome::Failed
    } else if failed {
        Outcome::Errors
    } else {
        Outcome::Success
    })
}

/// Prints a file that could not be read: `error: cannot read …` for
/// humans, or one JSON object with the same fields as a diagnostic.
pub fn render_file_error(error: &FileError, format: MessageFormat) -> Result<()> {
    match format {
        MessageFormat::Json => {
            let mut out = io::stdout().lock();
            write_json_file_error(&mut out, error)?;
            out.flush()?;
        }
        MessageFormat::Human => writeln!(
            io::stderr().lock(),
            "error: {}",
            crate::render::visible(&error.to_string())
        )?,
    }
    Ok(())
}

/// Prints the diagnostics of every report, with a summary line for humans.
pub fn render(reports: &[Report], format: MessageFormat, color: ColorChoice) -> Result<()> {
    let all: Vec<&Diagnostic> = reports.iter().flat_map(|r| &r.diagnostics).collect();
    match format {
        MessageFormat::Json => {
            let mut out = io::BufWriter::new(io::stdout().lock());
            for report in reports {
                write_json(&mut out, &report.sources, &report.diagnostics)?;
            }
            out.flush()?;
        }
        MessageFormat::Human => {
            let choice = match color {
                ColorChoice::Always => termcolor::ColorChoice::Always,
                ColorChoice::Never => termcolor::ColorChoice::Never,
                ColorChoice::Auto if io::stderr().is_terminal() => termcolor::ColorChoice::Auto,
                ColorChoice::Auto => termcolor::ColorChoice::Never,
            };
            let mut out = BufferedStandardStream::stderr(choice);
            for report in reports {
                write_human(&mut out, &report.sources, &report.diagnostics)?;
            }
            write_summary(&mut out, &all)?;
            out.flush()?;
        }
    }
    Ok(())
}

fn write_summary(out: &mut dyn Write, diagnostics: &[&Diagnostic]) -> io::Result<()> {
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
