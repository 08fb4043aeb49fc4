//! Reading the files a program names (sources, imports, instance data) the
//! one way both front ends do: only regular files, never more than a
//! documented limit, and without blocking on what is not a regular file.
//!
//! A path is opened with `O_NONBLOCK`, so that a FIFO or a terminal cannot
//! block the open; what was opened is then examined (`fstat`) and refused
//! unless it is a regular file; then at most `limit + 1` bytes are read, so
//! that a file growing under us or lying about its size cannot make us read
//! more. Devices such as `/dev/zero` or `/dev/urandom` are refused before a
//! byte is read.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The largest source file (an `.op2` program or import), in bytes.
pub const SOURCE_LIMIT: u64 = 16 << 20;

/// The largest instance data file (JSON or HDF5), in bytes: the limit
/// `op2_instance::read_file` checks on the handle it reads.
pub const INSTANCE_LIMIT: u64 = op2_instance::MAX_FILE_BYTES;

/// The extension of the files an `import` may name.
pub const SOURCE_EXTENSION: &str = "op2";

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The operating system refused (missing, permissions, …).
    Io(io::Error),
    /// The path names something other than a regular file.
    NotRegular(&'static str),
    /// The file is larger than the limit.
    TooLarge {
        /// Its size, or a lower bound (`limit + 1`) when it grew.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file is not UTF-8 text: the 1-based line and column (in Unicode
    /// scalar values) of the first bad byte, and its byte offset.
    NotUtf8 {
        /// Line of the first bad byte, from 1.
        line: u32,
        /// Column of the first bad byte, from 1.
        column: u32,
        /// Byte offset of the first bad byte.
        byte: usize,
    },
    /// An import that does not name an `.op2` file (after following
    /// symbolic links).
    NotSource(PathBuf),
}

impl fmt::Display for ReadError {
    /// The reason alone; [`ReadError::describe`] adds the path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(error) => write!(f, "{error}"),
            ReadError::NotRegular(kind) => write!(f, "not a regular file (it is {kind})"),
            ReadError::TooLarge { size, limit } => {
                write!(
                    f,
                    "the file is {size} bytes, over the limit of {limit} bytes"
                )
            }
            ReadError::NotUtf8 { byte, .. } => {
                write!(f, "the file is not valid UTF-8 (byte {byte})")
            }
            ReadError::NotSource(target) => write!(
                f,
                "only `.{SOURCE_EXTENSION}` files can be imported (the path leads to `{}`)",
                target.display()
            ),
        }
    }
}

impl std::error::Error for ReadError {}

impl ReadError {
    /// One line naming the file and the reason, rustc style:
    /// `` cannot read `x.op2`: … `` or `` x.op2:3:7: the file is not valid UTF-8 ``.
    pub fn describe(&self, path: &Path) -> String {
        match self {
            ReadError::NotUtf8 { line, column, .. } => {
                format!("{}:{line}:{column}: {self}", path.display())
            }
            _ => format!("cannot read `{}`: {self}", path.display()),
        }
    }
}

/// What a file type is, in words, for an error.
pub(crate) fn kind_of(file_type: fs::FileType) -> &'static str {
    if file_type.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Opens `path` for reading without blocking on FIFOs or devices.
fn open(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// The bytes of the regular file at `path`, refusing anything else and any
/// file over `limit` bytes. Symbolic links are followed.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let file = open(path).map_err(ReadError::Io)?;
    let metadata = file.metadata().map_err(ReadError::Io)?;
    if !metadata.is_file() {
        return Err(ReadError::NotRegular(kind_of(metadata.file_type())));
    }
    if metadata.len() > limit {
        return Err(ReadError::TooLarge {
            size: metadata.len(),
            limit,
        });
    }
    // The size may change while we read: never read past the limit.
    let capacity = usize::try_from(metadata.len().min(limit)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(capacity.saturating_add(1));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ReadError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// The text of the source file at `path`: a regular file of at most
/// [`SOURCE_LIMIT`] bytes of UTF-8.
pub fn read_source(path: &Path) -> Result<String, ReadError> {
    decode_source(read_regular(path, SOURCE_LIMIT)?)
}

/// The text of a source's bytes, or where the first byte that is not UTF-8
/// is ([`ReadError::NotUtf8`]): for a file and for standard input alike.
pub fn decode_source(bytes: Vec<u8>) -> Result<String, ReadError> {
    String::from_utf8(bytes).map_err(|error| {
        let valid = error.utf8_error().valid_up_to();
        let bytes = error.as_bytes();
        let prefix = String::from_utf8_lossy(&bytes[..valid]);
        let index = op2_syntax::LineIndex::new(&prefix);
        let position = index.line_col(index.len(), op2_syntax::Encoding::Utf32);
        ReadError::NotUtf8 {
            line: position.line + 1,
            column: position.col + 1,
            byte: valid,
        }
    })
}

/// What tells one file (or directory) from another, links followed: its
/// device and inode where the platform has them, else its canonical path.
#[cfg(unix)]
pub type Identity = (u64, u64);
/// What tells one file (or directory) from another, links followed: its
/// device and inode where the platform has them, else its canonical path.
#[cfg(not(unix))]
pub type Identity = PathBuf;

/// The [`Identity`] of what `path` names; `None` when nothing is there. A
/// directory removed and made again has another.
pub fn identity(path: &Path) -> Option<Identity> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        fs::canonicalize(path).ok()
    }
}

/// Whether `a` and `b` name one file, links followed. False when either
/// does not exist.
pub fn same_file(a: &Path, b: &Path) -> bool {
    matches!((identity(a), identity(b)), (Some(a), Some(b)) if a == b)
}

/// Whether `path` names an `.op2` file.
pub fn is_source_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(SOURCE_EXTENSION))
}

/// The text of a file an `import` names: like [`read_source`], and only when
/// the file (after following symbolic links) is an `.op2` file, so that an
/// import of `/etc/shadow`, or of an `.op2` link to it, never shows a line of
/// that file in a diagnostic.
pub fn read_import(path: &Path) -> Result<String, ReadError> {
    if !is_source_path(path) {
        return Err(ReadError::NotSource(path.to_owned()));
    }
    let target = fs::canonicalize(path).map_err(ReadError::Io)?;
    if !is_source_path(&target) {
        return Err(ReadError::NotSource(target));
    }
    read_source(&target)
}

/// Instance data: a regular file of at most [`INSTANCE_LIMIT`] bytes.
pub fn read_instance(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_regular(path, INSTANCE_LIMIT)
}

/// Checks, without reading it, that `path` is instance data op2 may open: a
/// regular file (after links) of at most [`INSTANCE_LIMIT`] bytes. For
/// readers that open the file themselves (HDF5 reads by path, in chunks).
pub fn check_instance(path: &Path) -> Result<(), ReadError> {
    let file = open(path).map_err(ReadError::Io)?;
    let metadata = file.metadata().map_err(ReadError::Io)?;
    if !metadata.is_file() {
        return Err(ReadError::NotRegular(kind_of(metadata.file_type())));
    }
    if metadata.len() > INSTANCE_LIMIT {
        return Err(ReadError::TooLarge {
            size: metadata.len(),
            limit: INSTANCE_LIMIT,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_regular_file_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_source(dir.path()),
            Err(ReadError::NotRegular("a directory"))
        ));
        #[cfg(unix)]
        {
            for device in ["/dev/zero", "/dev/urandom", "/dev/null"] {
                let error = read_source(Path::new(device)).unwrap_err();
                assert!(
                    matches!(error, ReadError::NotRegular("a character device")),
                    "{device}: {error}"
                );
            }
            let fifo = dir.path().join("pipe.op2");
            let status = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap();
            assert!(status.success());
            // No writer: a blocking open would wait forever.
            let error = read_import(&fifo).unwrap_err();
            assert_eq!(error.to_string(), "not a regular file (it is a FIFO)");
        }
    }

    #[test]
    fn refuses_files_over_the_limit_and_reads_those_at_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.op2");
        fs::write(&path, vec![b' '; 1000]).unwrap();
        assert_eq!(read_regular(&path, 1000).unwrap().len(), 1000);
        let error = read_regular(&path, 999).unwrap_err();
        assert_eq!(
            error.describe(&path),
            format!(
                "cannot read `{}`: the file is 1000 bytes, over the limit of 999 bytes",
                path.display()
            )
        );
    }

    #[test]
    fn imports_only_op2_files_even_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.txt");
        fs::write(&secret, "root:x:0:0\n").unwrap();
        assert!(matches!(read_import(&secret), Err(ReadError::NotSource(_))));
        #[cfg(unix)]
        {
            let link = dir.path().join("lib.op2");
            std::os::unix::fs::symlink(&secret, &link).unwrap();
            let error = read_import(&link).unwrap_err();
            assert!(
                error.to_string().starts_with("only `.op2` files"),
                "{error}"
            );
        }
        let real = dir.path().join("real.OP2");
        fs::write(&real, "set cells;\n").unwrap();
        assert_eq!(read_import(&real).unwrap(), "set cells;\n");
    }

    #[test]
    fn names_the_first_byte_that_is_not_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.op2");
        fs::write(&path, b"set a;\n\xc3\xa9 \xff").unwrap();
        let error = read_source(&path).unwrap_err();
        assert_eq!(
            error.describe(&path),
            format!(
                "{}:2:3: the file is not valid UTF-8 (byte 10)",
                path.display()
            )
        );
    }
}
