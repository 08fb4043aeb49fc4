//! `op2 instance check PROG FILE` and `op2 instance convert IN OUT --program
//! PROG`: instance data checked against a program's mesh layout, and
//! converted between JSON and OP2's HDF5 layout. Reading, validation and
//! writing are `op2_instance`'s; this module only prints.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use op2_analysis::{Analyser, Analysis, Options};
use op2_instance::{self as instance, InstanceData, Section, TerminalProgress};
use op2_syntax::Severity;

use crate::build::print_problems;
use crate::check::{Report, check_file, render};
use crate::{ColorChoice, MessageFormat, Outcome};

/// `op2 instance …`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check instance data (JSON or OP2's HDF5) against a program's sets,
    /// maps, dats, consts and globals; exits 1 when anything is missing or
    /// does not match.
    Check {
        /// The `.op2` program whose mesh layout the data must fit.
        program: PathBuf,
        /// The instance data: JSON or OP2's HDF5 layout (told apart by
        /// content).
        file: PathBuf,
        /// When to colour diagnostics (on standard error).
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
    /// Convert instance data between JSON and OP2's HDF5 layout (`.h5`,
    /// `.hdf5` or `.he5` for HDF5, JSON for any other name), checked
    /// against the program; written atomically, nothing on errors.
    Convert {
        /// The instance data to read: JSON or HDF5 (told apart by content).
        input: PathBuf,
        /// The file to write; its extension chooses the format.
        output: PathBuf,
        /// The `.op2` program the data is for: it says which entries are
        /// sets, maps, dats, consts and globals, and their types (JSON does
        /// not tell `0` from `0.0`, nor HDF5 a map from a dat).
        #[arg(long, value_name = "PROG.op2")]
        program: PathBuf,
        /// When to colour diagnostics (on standard error).
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
}

pub fn run(command: &Command) -> Result<Outcome> {
    match command {
        Command::Check {
            program,
            file,
            color,
        } => check(program, file, *color),
        Command::Convert {
            input,
            output,
            program,
            color,
        } => convert(input, output, program, *color),
    }
}

/// The program analysed and the instance data read and validated for it,
/// with every problem printed; `None` when either has errors.
fn load(
    program: &Path,
    file: &Path,
    color: ColorChoice,
) -> Result<Option<(Analysis, InstanceData)>> {
    let mut analyser = Analyser::new();
    let (analysis, report) = check_file(
        &mut analyser,
        program,
        &Options {
            require_main: false,
        },
    )?;
    if analysis.has_errors() {
        let errors = Report {
            sources: report.sources,
            diagnostics: report
                .diagnostics
                .into_iter()
                .filter(|d| d.severity == Severity::Error)
                .collect(),
        };
        render(std::slice::from_ref(&errors), MessageFormat::Human, color)?;
        writeln!(
            io::stderr().lock(),
            "error: `{}` has errors, so its mesh layout is unknown",
            crate::render::visible_path(program)
        )?;
        return Ok(None);
    }
    crate::source::check_instance(file)?;
    let mut progress = TerminalProgress::stderr();
    let loaded = instance::read_file(file, &analysis.program, progress.as_mut())
        .with_context(|| format!("cannot read `{}`", file.display()))?;
    drop(progress);
    print_problems(file, &report, &loaded.problems, color)?;
    let errors = loaded.problems.iter().filter(|p| p.is_error()).count();
    match loaded.data {
        Some(data) => Ok(Some((analysis, data))),
        None => {
            writeln!(
                io::stderr().lock(),
                "error: `{}` does not fit `{}`: {errors} error{}",
                crate::render::visible_path(file),
                crate::render::visible_path(program),
                plural(errors)
            )?;
            Ok(None)
        }
    }
}

fn check(program: &Path, file: &Path, color: ColorChoice) -> Result<Outcome> {
    let Some((analysis, data)) = load(program, file, color)? else {
        return Ok(Outcome::Errors);
    };
    let mut stderr = io::stderr().lock();
    for (section, name) in data.from_program(&analysis.program) {
        // Globals are the program's state, seldom part of a mesh: no note.
        let (kind, value) = match section {
            Section::Dats => ("dat", "its initialiser"),
            Section::Consts => ("const", "the program's value"),
            _ => continue,
        };
        writeln!(
            stderr,
            "note: {kind} `{name}` is not in `{}`; it takes {value}",
            crate::render::visible_path(file)
        )?;
    }
    let counts = given_counts(&analysis, &data);
    writeln!(
        io::stdout().lock(),
        "`{}` fits `{}`: {counts}",
        crate::render::visible_path(file),
        crate::render::visible_path(program)
    )?;
    Ok(Outcome::Success)
}

fn convert(input: &Path, output: &Path, program: &Path, color: ColorChoice) -> Result<Outcome> {
    crate::output::file_in_existing_directory(output)?;
    crate::output::writable(output, op2_codegen::output::Links::Follow)?;
    crate::output::not_an_input(
        output,
        "name another output file",
        [(input, "the instance data"), (program, "the program")],
    )?;
    let Some((analysis, data)) = load(program, input, color)? else {
        writeln!(
            io::stderr().lock(),
            "error: nothing written to `{}`",
            crate::render::visible_path(output)
        )?;
        return Ok(Outcome::Errors);
    };
    instance::write_file(output, &analysis.program, &data)
        .with_context(|| format!("cannot write `{}`", output.display()))?;
    let format = match instance::Format::of_name(output) {
        instance::Format::Hdf5 => "OP2's HDF5 layout",
        instance::Format::Json => "JSON",
    };
    writeln!(
        io::stdout().lock(),
        "wrote `{}` ({format}): {}",
        crate::render::visible_path(output),
        given_counts(&analysis, &data)
    )?;
    Ok(Outcome::Success)
}

/// "4 sets, 6 maps, 4 dats, 2 consts, 0 globals given": what a file gave.
fn given_counts(analysis: &Analysis, data: &InstanceData) -> String {
    let program = &analysis.program;
    let count = |flags: &[bool]| flags.iter().filter(|&&b| b).count();
    let dats = program.dats.len()
        - data
            .from_program(program)
            .iter()
            .filter(|(s, _)| *s == Section::Dats)
            .count();
    let parts = [
        (count(&data.given.sets), "set"),
        (data.maps.iter().flatten().count(), "map"),
        (dats, "dat"),
        (count(&data.given.consts), "const"),
        (count(&data.given.globals), "global"),
    ];
    let parts: Vec<String> = parts
        .iter()
        .map(|(n, what)| format!("{n} {what}{}", plural(*n)))
        .collect();
    format!("{} given", parts.join(", "))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
