//! op2's instance data: the mesh a program runs on.
//!
//! [`read`] turns the JSON instance data of language.md §9 into compact typed
//! vectors ([`InstanceData`]): set sizes, maps flattened into `u32` targets,
//! dats in one typed column each, and the values of consts and globals, with
//! the program's initialisers filled in where the data gives none. Every
//! problem is an [`InstanceError`] naming its JSON path (`maps.pedge[5][1]`):
//! E701 missing or malformed entry, E702 map target outside its set, E703
//! wrong number of rows or components, E704 two iteration elements writing
//! the same element through WRITE/RW arguments in one par_loop, W705 an entry
//! the program does not declare, and E609 a global that `fetch` fills whose
//! length is not the set's size times the dat's dimension.
//!
//! The code generator turns validated data into a graph instance and the
//! interpreter and simulator run over it; both sit above this crate, which
//! knows the program's model (`op2_analysis`) and nothing of POETS.
//!
//! Reading reports its phases to a [`Progress`]; [`TerminalProgress`] draws
//! bars on standard error for large instances, and the graph instance writer
//! reports to the same trait.

mod child;
pub mod float;
mod h5;
mod json;
pub mod naca;
mod progress;
pub mod synth;
pub mod temporary;
mod validate;
mod write;

use std::fmt;
use std::io::{self, Read};
use std::path::Path;

use op2_analysis::model::{ConstId, DatId, GlobalId, MapId, Program, SetId};
use op2_analysis::value::Value;
use op2_syntax::ast::ScalarType;
use op2_syntax::{Code, Diagnostic, Location, Related, Severity};

pub use child::{
    CHILD_BYTES_PER_SECOND, CHILD_MEMORY, CHILD_SECONDS, READER_COMMAND, reader_main,
    set_hdf5_reader, time_limit,
};
pub use h5::{WriteError, write_state};
pub use json::{Section, path};
pub use progress::{NoProgress, Phase, Progress, TerminalProgress};
pub use write::{write_file, write_json};

/// The most elements a set of instance data may have (2^24 = 16,777,216):
/// checked before anything is allocated for the set, so that a few bytes
/// claiming a set of two billion elements cannot make `op2` allocate
/// gigabytes. Sixteen times the largest airfoil mesh in use, and more
/// devices than any POETS machine holds.
pub const MAX_SET_SIZE: u32 = 1 << 24;

/// The most values all dats of a run may hold together (2^27, two gigabytes
/// as the interpreter stores them): set sizes times dimensions, checked
/// before a run or simulation allocates its state. Ten times what the
/// largest airfoil mesh in use needs.
pub const MAX_DAT_VALUES: u64 = 1 << 27;

/// The most targets all maps of instance data may hold together (2^27),
/// checked before an HDF5 file's maps are read: a compressed or unwritten
/// dataset may claim any number of rows in a few bytes. (A JSON file's size
/// bounds its maps.) Far more than the largest airfoil mesh in use needs.
pub const MAX_MAP_TARGETS: u64 = 1 << 27;

/// The largest instance data file (JSON or HDF5), in bytes.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Values reserved ahead of the data for one map or dat: beyond this the
/// vectors grow with the rows actually read, so memory follows the input.
pub(crate) const MAX_RESERVE: usize = 1 << 22;

/// One problem with instance data: its code, the JSON path it concerns
/// (`maps.pedge[5][1]`; empty for the document as a whole), what is wrong,
/// and the declaration (or par_loop) of the program it concerns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceError {
    /// E701–E704, or W705.
    pub code: Code,
    /// The JSON path, such as `maps.pedge[5][1]`; empty for the whole
    /// document (a JSON syntax error).
    pub path: String,
    /// Lower case, no trailing period, names in backticks.
    pub message: String,
    /// The declaration named by the path, or the par_loop for E704; the
    /// start of the program's root file where nothing fits.
    pub location: Location,
    /// Further places in the program (E704: the arguments that write).
    pub related: Vec<Related>,
}

impl InstanceError {
    /// The severity of the code: an error, or a warning for W705.
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }

    /// True for an error (anything but W705).
    pub fn is_error(&self) -> bool {
        self.severity() == Severity::Error
    }

    /// The problem as a diagnostic of the program, the JSON path first in
    /// the message: "`maps.pedge[5][1]`: target 900 is outside set `nodes`
    /// of 496 elements".
    pub fn to_diagnostic(&self) -> Diagnostic {
        let message = if self.path.is_empty() {
            self.message.clone()
        } else {
            format!("`{}`: {}", self.path, self.message)
        };
        let mut diagnostic = Diagnostic::new(self.code, self.location, message);
        diagnostic.related.clone_from(&self.related);
        diagnostic
    }
}

/// `maps.pedge[5][1]: target 900 is outside set `nodes` of 496 elements`.
impl fmt::Display for InstanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The values of one dat's elements, flattened (element-major), in the
/// dat's own type.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// `double`
    Double(Vec<f64>),
    /// `float`
    Float(Vec<f32>),
    /// `int`
    Int(Vec<i32>),
    /// `uint`
    Uint(Vec<u32>),
    /// `ll`
    Ll(Vec<i64>),
    /// `ull`
    Ull(Vec<u64>),
    /// `bool`
    Bool(Vec<bool>),
}

impl Column {
    /// An empty column of a type.
    pub fn new(ty: ScalarType) -> Column {
        match ty {
            ScalarType::Double => Column::Double(Vec::new()),
            ScalarType::Float => Column::Float(Vec::new()),
            ScalarType::Int => Column::Int(Vec::new()),
            ScalarType::Uint => Column::Uint(Vec::new()),
            ScalarType::Ll => Column::Ll(Vec::new()),
            ScalarType::Ull => Column::Ull(Vec::new()),
            ScalarType::Bool => Column::Bool(Vec::new()),
        }
    }

    /// The column's type.
    pub fn ty(&self) -> ScalarType {
        match self {
            Column::Double(_) => ScalarType::Double,
            Column::Float(_) => ScalarType::Float,
            Column::Int(_) => ScalarType::Int,
            Column::Uint(_) => ScalarType::Uint,
            Column::Ll(_) => ScalarType::Ll,
            Column::Ull(_) => ScalarType::Ull,
            Column::Bool(_) => ScalarType::Bool,
        }
    }

    /// Appends a value, converted to the column's type.
    pub fn push(&mut self, value: Value) {
        let value = value.convert(self.ty());
        match (self, value) {
            (Column::Double(v), Value::Double(x)) => v.push(x),
            (Column::Float(v), Value::Float(x)) => v.push(x),
            (Column::Int(v), Value::Int(x)) => v.push(x),
            (Column::Uint(v), Value::Uint(x)) => v.push(x),
            (Column::Ll(v), Value::Ll(x)) => v.push(x),
            (Column::Ull(v), Value::Ull(x)) => v.push(x),
            (Column::Bool(v), Value::Bool(x)) => v.push(x),
            _ => unreachable!("Value::convert returns the requested type"),
        }
    }

    /// The value at `index`.
    pub fn get(&self, index: usize) -> Value {
        match self {
            Column::Double(v) => Value::Double(v[index]),
            Column::Float(v) => Value::Float(v[index]),
            Column::Int(v) => Value::Int(v[index]),
            Column::Uint(v) => Value::Uint(v[index]),
            Column::Ll(v) => Value::Ll(v[index]),
            Column::Ull(v) => Value::Ull(v[index]),
            Column::Bool(v) => Value::Bool(v[index]),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Column::Double(v) => v.len(),
            Column::Float(v) => v.len(),
            Column::Int(v) => v.len(),
            Column::Uint(v) => v.len(),
            Column::Ll(v) => v.len(),
            Column::Ull(v) => v.len(),
            Column::Bool(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn reserve(&mut self, additional: usize) {
        match self {
            Column::Double(v) => v.reserve_exact(additional),
            Column::Float(v) => v.reserve_exact(additional),
            Column::Int(v) => v.reserve_exact(additional),
            Column::Uint(v) => v.reserve_exact(additional),
            Column::Ll(v) => v.reserve_exact(additional),
            Column::Ull(v) => v.reserve_exact(additional),
            Column::Bool(v) => v.reserve_exact(additional),
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Column::Double(v) => v.shrink_to_fit(),
            Column::Float(v) => v.shrink_to_fit(),
            Column::Int(v) => v.shrink_to_fit(),
            Column::Uint(v) => v.shrink_to_fit(),
            Column::Ll(v) => v.shrink_to_fit(),
            Column::Ull(v) => v.shrink_to_fit(),
            Column::Bool(v) => v.shrink_to_fit(),
        }
    }
}

/// Where a dat's initial values come from.
#[derive(Clone, Debug, PartialEq)]
pub enum DatValues {
    /// One row per element from the instance data, flattened.
    Given(Column),
    /// The same components for every element: the dat's initialiser (or
    /// the const it names), or zero.
    Uniform(Vec<Value>),
}

/// Validated instance data for one program: every size, target and value
/// is known, in range and finite. Indexed by the program's ids.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceData {
    /// Elements per set (0 for a set the program does not use and the data
    /// does not size).
    pub set_sizes: Vec<u32>,
    /// Targets per map, flattened (`rows × arity`, element-major); `None`
    /// for a map the program does not use and the data does not give.
    pub maps: Vec<Option<Vec<u32>>>,
    /// Initial values per dat.
    pub dats: Vec<DatValues>,
    /// Values per const, one per component: from the data, else the
    /// program.
    pub consts: Vec<Vec<Value>>,
    /// Initial values per mutable global, one per component.
    pub globals: Vec<Vec<Value>>,
    /// Which sets, consts and globals the data itself gave (the others
    /// come from the program); maps and dats say it by `Some` and
    /// [`DatValues::Given`].
    pub given: Given,
}

/// Which sets, consts and globals instance data gave, indexed by the
/// program's ids: what a conversion writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Given {
    /// Per set.
    pub sets: Vec<bool>,
    /// Per const.
    pub consts: Vec<bool>,
    /// Per global.
    pub globals: Vec<bool>,
}

impl InstanceData {
    /// Elements of a set.
    pub fn set_size(&self, set: SetId) -> u32 {
        self.set_sizes[set.index()]
    }

    /// The flattened targets of a map, when known.
    pub fn map(&self, map: MapId) -> Option<&[u32]> {
        self.maps[map.index()].as_deref()
    }

    /// Component `component` of element `element` of a dat of dimension
    /// `dimension`.
    pub fn dat_value(&self, dat: DatId, dimension: u32, element: u32, component: u32) -> Value {
        match &self.dats[dat.index()] {
            DatValues::Given(column) => {
                column.get(element as usize * dimension as usize + component as usize)
            }
            DatValues::Uniform(values) => values[component as usize],
        }
    }

    /// The value of a const.
    pub fn const_value(&self, id: ConstId) -> &[Value] {
        &self.consts[id.index()]
    }

    /// The initial value of a mutable global.
    pub fn global_value(&self, id: GlobalId) -> &[Value] {
        &self.globals[id.index()]
    }

    /// Elements over all sets.
    pub fn elements(&self) -> u64 {
        self.set_sizes.iter().map(|&n| u64::from(n)).sum()
    }

    /// The dats, consts and globals of `program` (the one the data was
    /// read for) that the data did not give, so that they take the
    /// program's values, in the program's order.
    pub fn from_program<'p>(&self, program: &'p Program) -> Vec<(Section, &'p str)> {
        let dats = program
            .dats
            .iter()
            .zip(&self.dats)
            .filter(|(_, values)| matches!(values, DatValues::Uniform(_)))
            .map(|(d, _)| (Section::Dats, d.name.as_str()));
        let consts = program
            .consts
            .iter()
            .zip(&self.given.consts)
            .filter(|(_, given)| !**given)
            .map(|(c, _)| (Section::Consts, c.name.as_str()));
        let globals = program
            .globals
            .iter()
            .zip(&self.given.globals)
            .filter(|(_, given)| !**given)
            .map(|(g, _)| (Section::Globals, g.name.as_str()));
        dats.chain(consts).chain(globals).collect()
    }
}

/// What [`read`] found: the data when there was no error, and every
/// problem (errors and W705 warnings) in the order found.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The validated data; `None` when any problem is an error.
    pub data: Option<InstanceData>,
    /// Errors and warnings.
    pub problems: Vec<InstanceError>,
}

impl Loaded {
    /// True when any problem is an error.
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(InstanceError::is_error)
    }

    /// The problems as diagnostics of the program (for editors).
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        self.problems
            .iter()
            .map(InstanceError::to_diagnostic)
            .collect()
    }
}

/// The formats of instance data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The JSON of language.md §9.
    Json,
    /// OP2's HDF5 layout (`op_dump_to_hdf5`).
    Hdf5,
}

impl Format {
    /// The format of a file, by content: HDF5 when it starts with the HDF5
    /// signature (at offset 0 or after a 512-byte user block), else JSON.
    pub fn of_file(path: &Path) -> io::Result<Format> {
        let mut file = open_regular(path)?;
        let (head, filled) = read_head(&mut file)?;
        Ok(Format::of_head(&head[..filled]))
    }

    fn of_head(head: &[u8]) -> Format {
        if h5::has_signature(head) {
            Format::Hdf5
        } else {
            Format::Json
        }
    }

    /// The format a file name asks for when written: HDF5 for `.h5`,
    /// `.hdf5` and `.he5`, JSON otherwise.
    pub fn of_name(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if ["h5", "hdf5", "he5"].contains(&e.to_ascii_lowercase().as_str()) => {
                Format::Hdf5
            }
            _ => Format::Json,
        }
    }
}

/// Reads and validates the instance data in the file at `path`, JSON or
/// OP2's HDF5 layout (told apart by content, [`Format::of_file`]), for
/// `program`. Only a file that cannot be opened is an `Err`; everything
/// wrong inside it is a problem of the [`Loaded`] result, named by its JSON
/// path or HDF5 dataset (`/pedge[5][1]`).
///
/// HDF5 files are read in a child process when a reader was set
/// ([`set_hdf5_reader`]), else in this one.
pub fn read_file(
    path: &Path,
    program: &Program,
    progress: &mut dyn Progress,
) -> io::Result<Loaded> {
    read_file_using(path, program, progress, child::reader())
}

/// [`read_file`], reading HDF5 files in a child process running
/// `hdf5_reader` (op2, [`READER_COMMAND`]) when given, else in this one.
pub fn read_file_using(
    path: &Path,
    program: &Program,
    progress: &mut dyn Progress,
    hdf5_reader: Option<&Path>,
) -> io::Result<Loaded> {
    read_file_with(
        path,
        program,
        progress,
        hdf5_reader.map(|reader| (reader, CHILD_MEMORY)),
    )
}

/// [`read_file_using`] with a reader process whose address space is
/// limited to `memory` bytes rather than [`CHILD_MEMORY`] (tests lower it).
pub fn read_file_in_child(
    path: &Path,
    program: &Program,
    progress: &mut dyn Progress,
    hdf5_reader: &Path,
    memory: u64,
) -> io::Result<Loaded> {
    read_file_with(path, program, progress, Some((hdf5_reader, memory)))
}

fn read_file_with(
    path: &Path,
    program: &Program,
    progress: &mut dyn Progress,
    hdf5_reader: Option<(&Path, u64)>,
) -> io::Result<Loaded> {
    // One handle, checked and then read: the path is never opened again,
    // so a file swapped for a FIFO or another file after the check is not
    // what is read.
    let mut file = open_regular(path)?;
    let (head, filled) = read_head(&mut file)?;
    match Format::of_head(&head[..filled]) {
        Format::Json => {
            let mut bytes = head[..filled].to_vec();
            (&mut file)
                .take(MAX_FILE_BYTES + 1 - filled as u64)
                .read_to_end(&mut bytes)?;
            if bytes.len() as u64 > MAX_FILE_BYTES {
                return Err(too_large(bytes.len() as u64));
            }
            if Format::of_name(path) == Format::Hdf5 && !bytes.trim_ascii_start().starts_with(b"{")
            {
                let mut problems = json::Problems::new(program, json::Notation::Hdf5);
                problems.report_unknown(
                    Code::E701,
                    String::new(),
                    "the file is not HDF5 (it does not start with the HDF5 signature) nor JSON"
                        .to_owned(),
                );
                return Ok(Loaded {
                    data: None,
                    problems: problems.finish(),
                });
            }
            Ok(read(&bytes, program, progress))
        }
        Format::Hdf5 => {
            let mut problems = json::Problems::new(program, json::Notation::Hdf5);
            progress.start(Phase::Reading, None);
            let raw = match hdf5_reader {
                Some((reader, memory)) => {
                    let declared = h5::Declared::of(program);
                    let bytes = file.metadata()?.len();
                    let limit = time_limit(bytes);
                    match child::read_in_child(reader, &file, limit, memory, &declared) {
                        Ok((raw, recorded)) => {
                            recorded.replay(&mut problems);
                            raw
                        }
                        Err(why) => {
                            problems.report_unknown(
                                Code::E701,
                                String::new(),
                                format!("the HDF5 library failed reading this file: {why}"),
                            );
                            None
                        }
                    }
                }
                None => h5::parse(&same_file(&file, path), program, &mut problems, progress),
            };
            progress.finish();
            Ok(finish(raw, program, problems, progress))
        }
    }
}

/// Opens `path` for reading without blocking (a FIFO or a terminal cannot
/// hold the open) and checks the open handle: a regular file of at most
/// [`MAX_FILE_BYTES`].
fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(too_large(metadata.len()));
    }
    Ok(file)
}

fn too_large(size: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the file is {size} bytes, over the limit of {MAX_FILE_BYTES} bytes"),
    )
}

/// The first bytes of a file, enough to find the HDF5 signature, and how
/// many there are.
fn read_head(file: &mut std::fs::File) -> io::Result<([u8; 520], usize)> {
    let mut head = [0u8; 520];
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok((head, filled))
}

/// A path that opens the file `file` has open, whatever has become of
/// `path` since: libhdf5 opens files by path. On Linux that is the open
/// descriptor's entry in `/proc/self/fd`; elsewhere `path` itself (there a
/// file swapped after the check could still be read in its place).
fn same_file(file: &std::fs::File, path: &Path) -> std::path::PathBuf {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let entry = std::path::PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if entry.exists() {
            return entry;
        }
    }
    let _ = file;
    path.to_owned()
}

/// Reads and validates JSON instance data (language.md §9) for `program`,
/// which should have no errors. Values given in the data take precedence
/// over the program's initialisers and const values.
pub fn read(json: &[u8], program: &Program, progress: &mut dyn Progress) -> Loaded {
    let mut problems = json::Problems::new(program, json::Notation::Json);
    progress.start(Phase::Reading, None);
    let raw = json::parse(json, program, &mut problems, progress);
    progress.finish();
    finish(raw, program, problems, progress)
}

/// Validates what was read.
fn finish(
    raw: Option<json::Raw>,
    program: &Program,
    mut problems: json::Problems<'_>,
    progress: &mut dyn Progress,
) -> Loaded {
    let data = raw.map(|raw| validate::validate(raw, program, &mut problems, progress));
    let problems = problems.finish();
    let data = if problems.iter().any(InstanceError::is_error) {
        None
    } else {
        data
    };
    if let Some(data) = &data {
        progress.instance_size(data.elements());
    }
    Loaded { data, problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_checked_handle_is_what_libhdf5_opens_after_a_swap() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("mesh.h5");
        std::fs::write(&path, "checked").unwrap();
        let file = open_regular(&path).unwrap();
        let other = directory.path().join("other");
        std::fs::write(&other, "swapped in").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(
            std::fs::read_to_string(same_file(&file, &path)).unwrap(),
            "checked"
        );
    }
}
