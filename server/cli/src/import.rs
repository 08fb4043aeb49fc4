//! `op2 import MAIN.cpp`: an OP2 C/C++ application into `.op2` and its
//! instance, through `op2_import`; this file parses arguments and renders.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::Outcome;
use crate::render::visible;

/// The arguments of `op2 import`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The application's main C/C++ file (the one with `main`).
    pub main: PathBuf,
    /// The application's other C/C++ files, if it has several translation
    /// units: compiled and linked with the main file to capture the set-up,
    /// and searched, with the headers they include, for kernels and the
    /// functions the host code calls.
    #[arg(value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// The directory to write `<stem>.op2` and the instance into
    /// (`<stem>.json`, or `<stem>.h5` when the application reads its mesh with
    /// OP2's HDF5 API); created when only its last part is missing, and
    /// removed again if the import writes nothing into it.
    #[arg(long, default_value = ".")]
    pub out: PathBuf,
    /// An include directory for compiling the application.
    #[arg(short = 'I', value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// A preprocessor definition, `NAME` or `NAME=VALUE`.
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    pub define: Vec<String>,
    /// The compilation database (`compile_commands.json`, as CMake and bear
    /// write it) giving each translation unit its own -I, -D, -U, -std and
    /// -include; by default `compile_commands.json` or
    /// `build/compile_commands.json`, when it lists the main file.
    #[arg(long, value_name = "PATH")]
    pub compile_commands: Option<PathBuf>,
    /// Arguments the application is run with while its set-up is captured.
    #[arg(last = true)]
    pub args: Vec<String>,
}

pub fn run(args: &Args) -> Result<Outcome> {
    let created = out_directory(&args.out)?;
    let outcome = import(args);
    // A directory made for this import and left empty (the import failed
    // before writing) goes again; `remove_dir` leaves one with files in it.
    if created && !matches!(outcome, Ok(Outcome::Success)) {
        let _ = std::fs::remove_dir(&args.out);
    }
    outcome
}

/// Checks `--out` before any work, creating it when only its last part is
/// missing (`op2 import app.cpp --out ported`, as one ports an
/// application into a new directory). A missing parent is an error, as
/// for every output of `op2`, so that a mistyped path costs a second.
/// Returns whether the directory was created.
fn out_directory(out: &Path) -> Result<bool> {
    if out.is_dir() || out.exists() {
        crate::output::existing_directory("--out", out)?;
        return Ok(false);
    }
    let parent = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    crate::output::existing_directory("--out", parent)?;
    std::fs::create_dir(out)
        .with_context(|| format!("`--out`: cannot create the directory `{}`", out.display()))?;
    Ok(true)
}

fn import(args: &Args) -> Result<Outcome> {
    let options = op2_import::Options {
        main: args.main.clone(),
        sources: args.sources.clone(),
        out: args.out.clone(),
        include_dirs: args.include.clone(),
        defines: args.define.clone(),
        compile_commands: args.compile_commands.clone(),
        args: args.args.clone(),
        working_dir: None,
        cancel: None,
    };
    // What is printed quotes the application (file names, its set-up's
    // output, macros): shown, never acted on by the terminal.
    let mut progress = |what: &str| {
        let _ = writeln!(io::stderr().lock(), "{}", visible(what));
    };
    let imported = match op2_import::import(&options, &mut progress) {
        Ok(imported) => imported,
        Err(error) => {
            writeln!(
                io::stderr().lock(),
                "error: {}",
                visible(&error.to_string())
            )?;
            return Ok(Outcome::Errors);
        }
    };
    write!(io::stdout().lock(), "{}", visible(&imported.summary()))?;
    Ok(if imported.report.faithful() {
        Outcome::Success
    } else {
        Outcome::Errors
    })
}
