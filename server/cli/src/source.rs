//! Reading source files, with errors that name the file and the place.
//! The rules (regular files only, size limit, UTF-8) are those of
//! `op2_codegen::files`, shared with the language server.

use std::path::{Path, PathBuf};

use op2_codegen::files::{self, ReadError};
use op2_syntax::LineIndex;

/// A file read from disk, its text and line index.
#[derive(Debug)]
pub struct SourceFile {
    /// The path as the user gave it.
    pub path: PathBuf,
    /// The text.
    pub text: String,
    /// Line starts, for positions.
    pub index: LineIndex,
}

/// A file that could not be read: its path and why.
#[derive(Debug)]
pub struct FileError {
    /// The path as the user gave it.
    pub path: PathBuf,
    /// Why.
    pub error: ReadError,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error.describe(&self.path))
    }
}

impl std::error::Error for FileError {}

impl SourceFile {
    /// A file whose text is already known (an import read by the analysis).
    pub fn from_text(path: PathBuf, text: String) -> SourceFile {
        let index = LineIndex::new(&text);
        SourceFile { path, text, index }
    }

    /// Reads a source file: a regular file of UTF-8 text within the size
    /// limit; otherwise an error naming the file (and, for text that is not
    /// UTF-8, the line and column of the first bad byte).
    pub fn read(path: &Path) -> Result<SourceFile, FileError> {
        let text = files::read_source(path).map_err(|error| FileError {
            path: path.to_owned(),
            error,
        })?;
        Ok(SourceFile::from_text(path.to_owned(), text))
    }
}

/// Checks instance data (JSON or HDF5) under the same rules, with its own
/// limit, before the instance reader opens it.
pub fn check_instance(path: &Path) -> Result<(), FileError> {
    files::check_instance(path).map_err(|error| FileError {
        path: path.to_owned(),
        error,
    })
}
