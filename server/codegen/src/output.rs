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

/// Writes the graph (and its instance, when given) to `path` atomically.
pub fn write_graph(
    path: &Path,
    graph: &GraphType,
    instance: Option<&mut dyn InstanceWriter>,
) -> Result<Summary, BuildError> {
    let start = Instant::now();
    let io_error = |error: io::Error| BuildError::Io {
        path: path.to_owned(),
        error,
    };
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    let temporary = tempfile::Builder::new()
        .prefix(".op2-build-")
        .suffix(".tmp")
        .tempfile_in(&directory)
        .map_err(io_error)?;
    let mut out = Counting {
        inner: BufWriter::with_capacity(1 << 20, temporary.as_file()),
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
    temporary.as_file().sync_all().map_err(io_error)?;
    temporary.persist(path).map_err(|e| io_error(e.error))?;
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
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut temporary = tempfile::Builder::new()
        .prefix(".op2-")
        .suffix(".tmp")
        .tempfile_in(directory)?;
    temporary.write_all(bytes)?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|e| e.error)?;
    Ok(())
}
