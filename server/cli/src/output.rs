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
