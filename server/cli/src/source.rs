//! Reading source files, with errors that name the file and the place.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
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

impl SourceFile {
    /// A file whose text is already known (an import read by the analysis).
    pub fn from_text(path: PathBuf, text: String) -> SourceFile {
        let index = LineIndex::new(&text);
        SourceFile { path, text, index }
    }

    /// Reads a UTF-8 file; a file that is not UTF-8 is an error naming the
    /// line and column of the first bad byte.
    pub fn read(path: &Path) -> Result<SourceFile> {
        let bytes = fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))?;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(error) => {
                let valid = error.utf8_error().valid_up_to();
                let bytes = error.as_bytes();
                let prefix = String::from_utf8_lossy(&bytes[..valid]);
                let index = LineIndex::new(&prefix);
                let position = index.line_col(index.len(), op2_syntax::Encoding::Utf32);
                bail!(
                    "{}:{}:{}: the file is not valid UTF-8 (byte {valid})",
                    path.display(),
                    position.line + 1,
                    position.col + 1
                );
            }
        };
        if u32::try_from(text.len()).is_err() {
            bail!("`{}` is larger than 4 GiB", path.display());
        }
        let index = LineIndex::new(&text);
        Ok(SourceFile {
            path: path.to_owned(),
            text,
            index,
        })
    }
}
