//! `op2 build FILE [--instance FILE] [-o OUT]`: the POETS graph of a program,
//! and with instance data its graph instance too, in one document written
//! atomically; nothing is written when the program or the data has errors.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use codespan_reporting::term::termcolor::{self, Color, ColorSpec, StandardStream, WriteColor};
use op2_analysis::{Analyser, Loader, Options};
use op2_codegen::output::{BuildFailure, Links, build_with_links};
use op2_instance::{InstanceError, TerminalProgress};
use op2_syntax::{Encoding, Severity};

use crate::check::{DiskLoader, Lints, Report, check_file_with, render};
use crate::render::{visible, visible_path};
use crate::{ColorChoice, MessageFormat, Outcome};

/// `<stem>.graph.xml` beside the source.
pub fn default_output(file: &Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map_or_else(|| "graph".into(), |s| s.to_string_lossy().into_owned());
    file.with_file_name(format!("{stem}.graph.xml"))
}

pub fn run(
    file: &Path,
    instance: Option<&Path>,
    output: Option<&Path>,
    color: ColorChoice,
    lints: &Lints,
    fan_limit: u32,
    watch: bool,
) -> Result<Outcome> {
    let once = |loader: &dyn Loader| build(file, instance, output, color, lints, fan_limit, loader);
    if watch {
        let roots = [file.to_owned()];
        let data: Vec<PathBuf> = instance.into_iter().map(Path::to_owned).collect();
        return crate::watch::watch("build", &roots, &data, once);
    }
    once(&DiskLoader)
}

/// One build, imports read through `loader`.
fn build(
    file: &Path,
    instance: Option<&Path>,
    output: Option<&Path>,
    color: ColorChoice,
    lints: &Lints,
    fan_limit: u32,
    loader: &dyn Loader,
) -> Result<Outcome> {
    if let Some(output) = output {
        crate::output::file_in_existing_directory(output)?;
    }
    let mut analyser = Analyser::new();
    let options = Options { require_main: true };
    let (analysis, mut report) = check_file_with(&mut analyser, file, &options, loader)?;
    lints.apply(&mut report.diagnostics);
    render(std::slice::from_ref(&report), MessageFormat::Human, color)?;
    if report
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error)
    {
        let mut stderr = io::stderr().lock();
        writeln!(
            stderr,
            "error: nothing written: `{}` has errors",
            visible_path(file)
        )?;
        return Ok(Outcome::Errors);
    }
    // A name op2 derives itself is never written through a symbolic link:
    // the repository may ship one leading anywhere. A name the user gives
    // with `-o` is the user's choice, link included.
    let (path, links) = match output {
        Some(output) => (output.to_path_buf(), Links::Follow),
        None => (default_output(file), Links::Refuse),
    };
    if let Some(instance_path) = instance {
        crate::source::check_instance(instance_path)?;
    }
    let instance_input = instance.map(|i| (i, "the instance data"));
    crate::output::not_an_input(
        &path,
        "name another file with `-o`",
        crate::output::program_files(&analysis.program).chain(instance_input),
    )?;
    crate::output::writable(&path, links).map_err(|error| {
        if links == Links::Refuse && path.is_symlink() {
            anyhow::anyhow!("{error:#}\nhelp: name the output with `-o` to write through the link")
        } else {
            error
        }
    })?;
    // The same build the editor runs on save.
    let mut progress = TerminalProgress::stderr();
    let result = build_with_links(
        &analysis,
        &op2_codegen::graph_id(file),
        fan_limit,
        instance,
        &path,
        links,
        lints.denies_warnings(),
        &mut *progress,
    );
    let instance_path = instance.unwrap_or(Path::new(""));
    let summary = match result {
        Ok((summary, warnings)) => {
            print_problems(instance_path, &report, &warnings, color)?;
            summary
        }
        Err(BuildFailure::InstanceErrors(problems)) => {
            // As rustc's `-D warnings`: a warning denied is shown as the
            // error it counts as.
            let denied = lints.denies_warnings();
            print_problems_denying(instance_path, &report, &problems, color, denied)?;
            let errors = problems
                .iter()
                .filter(|p| p.is_error() || (denied && p.severity() == Severity::Warning))
                .count();
            let mut stderr = io::stderr().lock();
            writeln!(
                stderr,
                "error: nothing written: `{}` has {errors} error{}",
                visible_path(instance_path),
                if errors == 1 { "" } else { "s" }
            )?;
            return Ok(Outcome::Errors);
        }
        Err(BuildFailure::ProgramErrors(_)) => {
            writeln!(
                io::stderr().lock(),
                "error: nothing written: `{}` has errors",
                visible_path(file)
            )?;
            return Ok(Outcome::Errors);
        }
        Err(BuildFailure::Write(error)) => return Err(error.into()),
        Err(BuildFailure::Unreadable(path, error)) => {
            return Err(error).with_context(|| format!("cannot read `{}`", path.display()));
        }
    };
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{}", visible(&summary.to_string()))?;
    Ok(Outcome::Success)
}

/// Prints each problem with the instance file and JSON path first, rustc
/// style: `error[E702]: mesh.json: maps.pedge[5][1]: target 900 is …`,
/// then where the program declares what the path names.
pub(crate) fn print_problems(
    instance_path: &Path,
    report: &Report,
    problems: &[InstanceError],
    color: ColorChoice,
) -> io::Result<()> {
    print_problems_denying(instance_path, report, problems, color, false)
}

/// [`print_problems`], each warning shown as an error when `deny_warnings`
/// (`-D warnings`).
fn print_problems_denying(
    instance_path: &Path,
    report: &Report,
    problems: &[InstanceError],
    color: ColorChoice,
    deny_warnings: bool,
) -> io::Result<()> {
    if problems.is_empty() {
        return Ok(());
    }
    let choice = match color {
        ColorChoice::Always => termcolor::ColorChoice::Always,
        ColorChoice::Never => termcolor::ColorChoice::Never,
        ColorChoice::Auto if io::stderr().is_terminal() => termcolor::ColorChoice::Auto,
        ColorChoice::Auto => termcolor::ColorChoice::Never,
    };
    let stream = StandardStream::stderr(choice);
    let mut out = stream.lock();
    for problem in problems {
        let severity = match problem.severity() {
            Severity::Warning if deny_warnings => Severity::Error,
            severity => severity,
        };
        let (word, tint) = match severity {
            Severity::Error => ("error", Color::Red),
            Severity::Warning => ("warning", Color::Yellow),
            Severity::Hint => ("help", Color::Cyan),
        };
        out.set_color(ColorSpec::new().set_fg(Some(tint)).set_bold(true))?;
        write!(out, "{word}[{}]", problem.code)?;
        out.set_color(ColorSpec::new().set_bold(true))?;
        write!(out, ": {}: ", visible_path(instance_path))?;
        if !problem.path.is_empty() {
            write!(out, "{}: ", visible(&problem.path))?;
        }
        writeln!(out, "{}", visible(&problem.message))?;
        out.reset()?;
        let declared = problem.location != op2_syntax::Location::default();
        if let Some(source) = report
            .sources
            .get(problem.location.file)
            .filter(|_| declared)
        {
            let at = source
                .index
                .line_col(problem.location.range.start, Encoding::Utf32);
            out.set_color(ColorSpec::new().set_fg(Some(Color::Blue)).set_bold(true))?;
            write!(out, "  --> ")?;
            out.reset()?;
            writeln!(
                out,
                "{}:{}:{}",
                visible_path(&source.path),
                at.line + 1,
                at.col + 1
            )?;
        }
    }
    out.flush()
}
