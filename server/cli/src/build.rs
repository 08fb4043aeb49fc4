//! `op2 build FILE [--instance FILE] [-o OUT]`: the POETS graph of a program,
//! written atomically; nothing is written when the program has errors.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use op2_analysis::{Analyser, Options};
use op2_codegen::output::write_graph;
use op2_syntax::Severity;

use crate::check::{check_file, render};
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
) -> Result<Outcome> {
    let mut analyser = Analyser::new();
    let (analysis, report) = check_file(&mut analyser, file, &Options { require_main: true })?;
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
            file.display()
        )?;
        return Ok(Outcome::Errors);
    }
    if let Some(instance) = instance {
        bail!(
            "cannot build with `--instance {}`: graph instances are not generated yet",
            instance.display()
        );
    }
    let graph = op2_codegen::graph_type(&analysis, &op2_codegen::graph_id(file));
    let path = output.map_or_else(|| default_output(file), Path::to_path_buf);
    let summary = write_graph(&path, &graph, None)?;
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{summary}")?;
    Ok(Outcome::Success)
}
