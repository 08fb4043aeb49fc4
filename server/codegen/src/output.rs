//! Writing a graph to a file atomically: into a temporary file beside the
//! target, flushed and synced, then renamed over it, so that a crash or an
//! error never leaves a truncated graph where a good one was.

use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::model::GraphType;
use crate::xml;

/// What a build wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Where.
    pub path: PathBuf,
    /// Device types.
    pub device_types: usize,
    /// Input and output pins over all device types.
    pub pins: usize,
    /// Device instances (0 without an instance).
    pub devices: u64,
    /// Edge instances (0 without an instance).
    pub edges: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Time taken.
    pub elapsed: Duration,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wrote {}: {} device types, {} pins, {} devices, {} edges, {} bytes in {:.1?}",
            self.path.display(),
            self.device_types,
            self.pins,
            self.devices,
            self.edges,
            self.bytes,
            self.elapsed
        )
    }
}

use op2_instance::temporary::Temporary;
pub use op2_instance::temporary::remove_temporary_files;

/// Whether a write may go through a symbolic link at its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// The user named the output: a link to a regular file is followed
    /// (the file it leads to is replaced, the link stays).
    Follow,
    /// `op2` derived the output's name itself (`<stem>.graph.xml` beside
    /// the source): a link there is the repository's, which may lead
    /// anywhere, and is refused.
    Refuse,
}

/// Where a write to `path` goes: `path` itself when nothing is there or a
/// regular file is; the file a symbolic link leads to when that is a
/// regular file (the link stays). Anything else (a device, a FIFO, a
/// directory, a socket, a link to one of them or to nothing) is refused,
/// so a write never replaces what is not a regular file.
pub fn write_target(path: &Path) -> io::Result<PathBuf> {
    write_target_with(path, Links::Follow)
}

/// [`write_target`], with [`Links::Refuse`] refusing any symbolic link at
/// `path`. (A link put there after this check is replaced by the rename,
/// never followed: a rename does not follow a link at its destination.)
pub fn write_target_with(path: &Path, links: Links) -> io::Result<PathBuf> {
    let refuse = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file (it is {what})"),
        )
    };
    if let Some(directory) = missing_directory(path) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("the directory `{}` does not exist", directory.display()),
        ));
    }
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(path.to_owned()),
        Err(error) => return Err(error),
    };
    if metadata.is_file() {
        return Ok(path.to_owned());
    }
    if !metadata.file_type().is_symlink() {
        return Err(refuse(crate::files::kind_of(metadata.file_type())));
    }
    if links == Links::Refuse {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is a symbolic link, and op2 does not write through a link at an output \
             it names itself",
        ));
    }
    match std::fs::metadata(path) {
        Ok(followed) if followed.is_file() => std::fs::canonicalize(path),
        Ok(followed) => Err(refuse(&format!(
            "a symbolic link to {}",
            crate::files::kind_of(followed.file_type())
        ))),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            Err(refuse("a symbolic link to nothing"))
        }
        Err(error) => Err(error),
    }
}

/// Counts bytes passing through.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Something that writes a GraphInstance after the graph type and reports
/// how many devices and edges it wrote.
pub trait InstanceWriter {
    /// Writes the `<GraphInstance>` element.
    fn write(&mut self, out: &mut dyn Write, graph: &GraphType) -> Result<(u64, u64), BuildError>;
}

/// Why a build wrote nothing.
#[derive(Debug)]
pub enum BuildError {
    /// Writing failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        error: io::Error,
    },
    /// The instance data could not be turned into a graph instance; the
    /// message names the place (JSON path) and the problem.
    Instance(String),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Io { path, error } => {
                write!(f, "cannot write `{}`: {error}", path.display())
            }
            BuildError::Instance(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for BuildError {}

/// Writes the graph (and its instance, when given) to `path` atomically,
/// following a symbolic link there ([`Links::Follow`]).
pub fn write_graph(
    path: &Path,
    graph: &GraphType,
    instance: Option<&mut dyn InstanceWriter>,
) -> Result<Summary, BuildError> {
    write_graph_with(path, Links::Follow, graph, instance)
}

/// [`write_graph`], through a symbolic link at `path` only as `links` allows.
pub fn write_graph_with(
    path: &Path,
    links: Links,
    graph: &GraphType,
    instance: Option<&mut dyn InstanceWriter>,
) -> Result<Summary, BuildError> {
    let start = Instant::now();
    let io_error = |error: io::Error| BuildError::Io {
        path: path.to_owned(),
        error,
    };
    let path = &write_target_with(path, links).map_err(io_error)?;
    let directory = directory_of(path);
    let temporary = Temporary::new(&directory, ".op2-build-").map_err(io_error)?;
    let mut out = Counting {
        inner: BufWriter::with_capacity(1 << 20, temporary.file.as_file()),
        bytes: 0,
    };
    xml::write_graph_type(&mut out, graph).map_err(io_error)?;
    let (devices, edges) = match instance {
        Some(writer) => writer.write(&mut out, graph)?,
        None => (0, 0),
    };
    xml::write_end(&mut out).map_err(io_error)?;
    out.flush().map_err(io_error)?;
    let bytes = out.bytes;
    drop(out);
    temporary.file.as_file().sync_all().map_err(io_error)?;
    temporary.take_mode_and_owner_of(path).map_err(io_error)?;
    temporary.persist(path).map_err(io_error)?;
    Ok(Summary {
        path: path.to_owned(),
        device_types: graph.device_types.len(),
        pins: graph
            .device_types
            .iter()
            .map(|d| d.inputs.len() + d.outputs.len())
            .sum(),
        devices,
        edges,
        bytes,
        elapsed: start.elapsed(),
    })
}

/// Writes `bytes` to `path` atomically (temporary file beside it, synced,
/// renamed over it).
/// Like [`write_graph`], it never replaces what is not a regular file.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_file_atomically_with(path, Links::Follow, bytes)
}

/// [`write_file_atomically`], through a symbolic link at `path` only as
/// `links` allows.
pub fn write_file_atomically_with(path: &Path, links: Links, bytes: &[u8]) -> io::Result<()> {
    let path = &write_target_with(path, links)?;
    let mut temporary = Temporary::new(&directory_of(path), ".op2-")?;
    temporary.file.write_all(bytes)?;
    temporary.file.as_file().sync_all()?;
    temporary.take_mode_and_owner_of(path)?;
    temporary.persist(path)
}

/// The directory a file at `path` would be written in, when it is not an
/// existing directory. Nothing here creates directories: a missing one is
/// the caller's error to report (`op2` says so before it starts the work).
pub fn missing_directory(path: &Path) -> Option<PathBuf> {
    let directory = directory_of(path);
    (!directory.is_dir()).then_some(directory)
}

pub use op2_instance::temporary::directory_of;

/// Why `build` wrote nothing.
#[derive(Debug)]
pub enum BuildFailure {
    /// The program has errors (the diagnostics say which).
    ProgramErrors(usize),
    /// The instance data has errors; every problem found, errors and
    /// warnings.
    InstanceErrors(Vec<op2_instance::InstanceError>),
    /// The instance data file cannot be read.
    Unreadable(PathBuf, io::Error),
    /// Writing failed.
    Write(BuildError),
}

impl fmt::Display for BuildFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildFailure::ProgramErrors(n) => write!(
                f,
                "the program has {n} error{}",
                if *n == 1 { "" } else { "s" }
            ),
            BuildFailure::InstanceErrors(problems) => {
                let errors = problems.iter().filter(|p| p.is_error()).count();
                write!(
                    f,
                    "the instance data has {errors} error{}",
                    if errors == 1 { "" } else { "s" }
                )
            }
            BuildFailure::Unreadable(path, error) => {
                write!(f, "cannot read `{}`: {error}", path.display())
            }
            BuildFailure::Write(error) => write!(f, "{error}"),
        }
    }
}

/// The build `op2 build` and the editor's build on save both run: the graph
/// type of an analysed program, and its instance when instance data is
/// given (a file, JSON or OP2's HDF5, read by [`op2_instance::read_file`]),
/// written atomically to `path`. Nothing is written when the program or the
/// data has errors. Returns the summary and the instance data's warnings,
/// with those of the fan check (W801 and E802 on pins with too many edges,
/// [`crate::limits::check_instance`]).
pub fn build(
    analysis: &op2_analysis::Analysis,
    graph_id: &str,
    instance: Option<&Path>,
    path: &Path,
    progress: &mut dyn op2_instance::Progress,
) -> Result<(Summary, Vec<op2_instance::InstanceError>), BuildFailure> {
    build_with_fan_limit(
        analysis,
        graph_id,
        crate::model::DEFAULT_FAN_LIMIT,
        instance,
        path,
        progress,
    )
}

/// [`build`] with trees of at most `fan_limit` edges per begin and end pin
/// (0: the flat controller).
pub fn build_with_fan_limit(
    analysis: &op2_analysis::Analysis,
    graph_id: &str,
    fan_limit: u32,
    instance: Option<&Path>,
    path: &Path,
    progress: &mut dyn op2_instance::Progress,
) -> Result<(Summary, Vec<op2_instance::InstanceError>), BuildFailure> {
    build_with_links(
        analysis,
        graph_id,
        fan_limit,
        instance,
        path,
        Links::Follow,
        false,
        progress,
    )
}

/// [`build_with_fan_limit`], through a symbolic link at `path` only as
/// `links` allows ([`Links::Refuse`] when `op2` named the output itself),
/// and with the instance data's warnings (W705, W801) counted as errors
/// when `deny_warnings` (`op2 build -D warnings`): then nothing is
/// written for them either.
#[allow(clippy::too_many_arguments)]
pub fn build_with_links(
    analysis: &op2_analysis::Analysis,
    graph_id: &str,
    fan_limit: u32,
    instance: Option<&Path>,
    path: &Path,
    links: Links,
    deny_warnings: bool,
    progress: &mut dyn op2_instance::Progress,
) -> Result<(Summary, Vec<op2_instance::InstanceError>), BuildFailure> {
    let mut errors = analysis
        .diagnostics
        .iter()
        .filter(|d| d.severity == op2_syntax::Severity::Error)
        .count();
    let graph = crate::graph_type_with_fan_limit(analysis, graph_id, fan_limit);
    errors += crate::limits::check(analysis.lowered(), &graph)
        .iter()
        .filter(|d| d.severity == op2_syntax::Severity::Error)
        .count();
    if errors > 0 || analysis.program.main.is_none() {
        return Err(BuildFailure::ProgramErrors(errors.max(1)));
    }
    match instance {
        None => write_graph_with(path, links, &graph, None)
            .map(|s| (s, Vec::new()))
            .map_err(BuildFailure::Write),
        Some(instance) => {
            let loaded = op2_instance::read_file(instance, &analysis.program, progress)
                .map_err(|error| BuildFailure::Unreadable(instance.to_path_buf(), error))?;
            let Some(data) = loaded.data else {
                return Err(BuildFailure::InstanceErrors(loaded.problems));
            };
            // Fan-in and fan-out depend on the mesh: checked here, before
            // anything is written.
            let mut problems = loaded.problems;
            problems.extend(crate::limits::check_instance(
                analysis.lowered(),
                &graph,
                &data,
            ));
            if problems.iter().any(|p| {
                p.is_error() || (deny_warnings && p.severity() == op2_syntax::Severity::Warning)
            }) {
                return Err(BuildFailure::InstanceErrors(problems));
            }
            let mut writer =
                crate::instance::GraphInstance::new(analysis.lowered(), &data, progress);
            let summary = write_graph_with(
                path,
                links,
                &graph,
                Some(&mut writer as &mut dyn InstanceWriter),
            )
            .map_err(BuildFailure::Write)?;
            Ok((summary, problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_written_into_a_directory_that_does_not_exist_and_none_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let error = write_file_atomically(&missing.join("a.json"), b"{}").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        let message = error.to_string();
        assert!(
            message.contains("the directory `") && message.contains("missing` does not exist"),
            "{message}"
        );
        assert!(!missing.exists());
        assert_eq!(missing_directory(&missing.join("a.json")), Some(missing));
        assert_eq!(missing_directory(&dir.path().join("a.json")), None);
        assert_eq!(missing_directory(Path::new("a.json")), None);
        // A file where a directory should be is no directory either.
        let file = dir.path().join("file");
        write_file_atomically(&file, b"x").unwrap();
        assert!(write_file_atomically(&file.join("a.json"), b"{}").is_err());
        assert_eq!(missing_directory(&file.join("a.json")), Some(file));
    }
}
