//! Where commands write. `op2` creates no directories (but the last part
//! of `import --out`, see `import::out_directory`): a file is written into
//! a directory that exists, and an option naming a place in one that does
//! not is an error before any work starts (a long simulation does not end
//! in "cannot write"), with the command that would create it.

use std::fmt;
use std::path::{Path, PathBuf};

use op2_codegen::output::missing_directory;

/// An output in a directory that does not exist.
#[derive(Debug)]
pub struct MissingDirectory {
    /// The file to write, or the option that names the directory.
    what: What,
    /// The directory that does not exist.
    directory: PathBuf,
    /// It exists, but is not a directory.
    not_a_directory: bool,
}

#[derive(Debug)]
enum What {
    File(PathBuf),
    Option(&'static str),
}

impl fmt::Display for MissingDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let directory = self.directory.display();
        match &self.what {
            What::File(file) => write!(f, "cannot write `{}`: ", file.display())?,
            What::Option(option) => write!(f, "`{option}`: ")?,
        }
        if self.not_a_directory {
            return write!(
                f,
                "`{directory}` is not a directory\nhelp: name a place in an existing directory"
            );
        }
        write!(
            f,
            "the directory `{directory}` does not exist\nhelp: create it first (`mkdir -p {directory}`); op2 does not create directories"
        )
    }
}

impl std::error::Error for MissingDirectory {}

/// `Ok` when the file `path` can be written: its directory exists.
pub fn file_in_existing_directory(path: &Path) -> Result<(), MissingDirectory> {
    match missing_directory(path) {
        None => Ok(()),
        Some(directory) => Err(MissingDirectory {
            what: What::File(path.to_owned()),
            not_a_directory: directory.exists(),
            directory,
        }),
    }
}

/// `Ok` when `directory`, which `option` names, exists.
pub fn existing_directory(option: &'static str, directory: &Path) -> Result<(), MissingDirectory> {
    if directory.is_dir() {
        return Ok(());
    }
    Err(MissingDirectory {
        what: What::Option(option),
        directory: directory.to_owned(),
        not_a_directory: directory.exists(),
    })
}

/// An output that names a file the command reads: writing it would replace
/// the user's input (rustc refuses the same: "the input file would be
/// overwritten").
#[derive(Debug)]
pub struct OutputIsInput {
    output: PathBuf,
    /// What the input is: "the program", "the instance data", …
    what: &'static str,
    /// The input as the command was given it, when it is named otherwise
    /// (through a link, or another spelling of the path).
    input: PathBuf,
    /// What to do instead.
    help: &'static str,
}

impl fmt::Display for OutputIsInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot write `{}`: it is {}",
            self.output.display(),
            self.what
        )?;
        if self.input != self.output {
            write!(f, " (`{}`)", self.input.display())?;
        }
        write!(
            f,
            ", which this command reads; nothing was written\nhelp: {}",
            self.help
        )
    }
}

impl std::error::Error for OutputIsInput {}

/// `Ok` when `output` is none of `inputs` (each with what it is to the
/// command), checked before any work starts; `help` says what to do
/// instead.
pub fn not_an_input<'a>(
    output: &Path,
    help: &'static str,
    inputs: impl IntoIterator<Item = (&'a Path, &'static str)>,
) -> Result<(), OutputIsInput> {
    match inputs
        .into_iter()
        .find(|(input, _)| op2_codegen::files::same_file(output, input))
    {
        None => Ok(()),
        Some((input, what)) => Err(OutputIsInput {
            output: output.to_owned(),
            what,
            input: input.to_owned(),
            help,
        }),
    }
}

/// The files of a program, each with what it is to the command: the
/// program itself, then its imports.
pub fn program_files(
    program: &op2_analysis::Program,
) -> impl Iterator<Item = (&Path, &'static str)> {
    program.files.iter().enumerate().map(|(i, file)| {
        let what = if i == 0 {
            "the program"
        } else {
            "a file the program imports"
        };
        (file.path.as_path(), what)
    })
}

/// `Ok` when a file can be written at `path` before any work starts: what
/// is there (if anything) is a regular file or a link the output may
/// follow, and its directory takes a new file (a file is written beside
/// its target and renamed over it). A long run does not end in "cannot
/// write".
pub fn writable(path: &Path, links: op2_codegen::output::Links) -> anyhow::Result<()> {
    use anyhow::Context;
    let target = op2_codegen::output::write_target_with(path, links)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    op2_instance::temporary::Temporary::probe(&op2_codegen::output::directory_of(&target))
        .with_context(|| format!("cannot write `{}`", path.display()))
}
