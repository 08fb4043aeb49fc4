//! OP2's HDF5 layout, read into the same [`Raw`] data as JSON and written
//! for final states.
//!
//! The layout is that of OP2's `op_dump_to_hdf5`, `op_write_const_hdf5` and
//! the readers `op_decl_set_hdf5`, `op_decl_map_hdf5`, `op_decl_dat_hdf5`
//! and `op_get_const_hdf5`: every name is a dataset at the root of the file.
//! A set holds its size (one integer); a map or dat has one row per element
//! (`[size, dim]`, or `[size]` for dimension 1) with the attributes `size`,
//! `dim` (integers) and `type` (the C type as a fixed-length string); a
//! const has `dim` values with the attributes `dim` and `type`. Globals,
//! which OP2 keeps in the program, are written like consts.
//!
//! Datasets are looked up by the program's names, so a file may hold more
//! than the program uses (OP2 files usually do). Rows are read in blocks of
//! at most [`BLOCK_VALUES`] values (a hyperslab each) straight into the
//! final vectors.
//!
//! The file is untrusted: only datasets stored in it are read (hard links,
//! no external files or virtual layouts, which would open other files by
//! path), and every count its headers claim (rows, values per row,
//! attribute points and sizes, chunk extents) is checked before anything is allocated for
//! it: a dataset whose storage was never written, or is compressed, costs
//! nothing in the file for any size it claims.

use std::path::Path;

use hdf5::types::{FloatSize, TypeDescriptor};
use hdf5::{Dataset, File, H5Type, LinkType};
use op2_analysis::model::{ElementType, Program};
use op2_analysis::value::Value;
use op2_syntax::Code;
use op2_syntax::ast::ScalarType;
use rustc_hash::FxHashSet;

use crate::json::{
    BAD_TARGET, Problems, Raw, RawDat, RawMap, SHOWN_PER_ENTRY, Section, checked_set_size,
};
use crate::{Column, MAX_DAT_VALUES, MAX_MAP_TARGETS, MAX_SET_SIZE, Progress};

/// Rows written at once.
const BLOCK: usize = 1 << 16;

/// Values read at once: a block is this many values, or one row where a
/// row holds more.
const BLOCK_VALUES: u64 = 1 << 18;

/// The largest chunk of a chunked dataset read, in bytes uncompressed
/// (its extents times the size of a value): 64 MiB. A valid chunk
/// decompresses to that size, and libhdf5 holds a filtered chunk whole to
/// read any of it; OP2 writes no chunks, and libraries that chunk by
/// default choose chunks of a mebibyte or so. (libhdf5 itself decompresses
/// until the stream ends, whatever the chunk's size: a chunk that lies is
/// stopped by the reader's memory limit, [`crate::CHILD_MEMORY`].)
pub(crate) const MAX_CHUNK_BYTES: u64 = 1 << 26;

/// The largest `type` attribute read, in bytes (OP2 writes the C type's
/// name, a few bytes).
const MAX_TYPE_ATTRIBUTE: usize = 256;

/// The signature every HDF5 file starts with (at offset 0, or after a user
/// block of 512, 1024, 2048... bytes).
pub(crate) const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// True when `bytes`, the start of a file, hold the HDF5 signature at
/// offset 0 or 512.
pub(crate) fn has_signature(bytes: &[u8]) -> bool {
    bytes.starts_with(SIGNATURE) || bytes.get(512..520) == Some(&SIGNATURE[..])
}

/// The OP2 name of a scalar type (`type` attribute): `double`, `float`,
/// `int`, `unsigned int`, `long long`, `unsigned long long`, `bool`.
pub(crate) fn op2_type(ty: ScalarType) -> &'static str {
    match ty {
        ScalarType::Double => "double",
        ScalarType::Float => "float",
        ScalarType::Int => "int",
        ScalarType::Uint => "unsigned int",
        ScalarType::Ll => "long long",
        ScalarType::Ull => "unsigned long long",
        ScalarType::Bool => "bool",
    }
}

/// The names [`from_op2_type`] knows.
const KNOWN_TYPES: &[&str] = &[
    "double",
    "double precision",
    "real(8)",
    "float",
    "real(4)",
    "real",
    "int",
    "int(4)",
    "integer",
    "integer(4)",
    "unsigned int",
    "uint",
    "long",
    "long long",
    "ll",
    "unsigned long long",
    "unsigned long",
    "ull",
    "bool",
];

/// The scalar type an OP2 `type` attribute names, `:soa` and Fortran
/// spellings included.
fn from_op2_type(text: &str) -> Option<ScalarType> {
    let text = text.trim_end_matches('\0').trim();
    let text = text.strip_suffix(":soa").unwrap_or(text);
    Some(match text {
        "double" | "double precision" | "real(8)" => ScalarType::Double,
        "float" | "real(4)" | "real" => ScalarType::Float,
        "int" | "int(4)" | "integer" | "integer(4)" => ScalarType::Int,
        "unsigned int" | "uint" => ScalarType::Uint,
        "long" | "long long" | "ll" => ScalarType::Ll,
        "unsigned long long" | "unsigned long" | "ull" => ScalarType::Ull,
        "bool" => ScalarType::Bool,
        _ => return None,
    })
}

/// What a dataset's storage type holds, in words.
fn describe(ty: &TypeDescriptor) -> String {
    match ty {
        TypeDescriptor::Integer(size) => format!("{}-bit integers", *size as usize * 8),
        TypeDescriptor::Unsigned(size) => format!("{}-bit unsigned integers", *size as usize * 8),
        TypeDescriptor::Float(size) => format!("{}-bit floats", *size as usize * 8),
        TypeDescriptor::Boolean => "booleans".to_owned(),
        TypeDescriptor::FixedAscii(_)
        | TypeDescriptor::FixedUnicode(_)
        | TypeDescriptor::VarLenAscii
        | TypeDescriptor::VarLenUnicode => "strings".to_owned(),
        _ => "values of a compound or other non-numeric type".to_owned(),
    }
}

/// True when a dataset stored as `stored` holds values of `ty`: the same
/// kind and no wider (a 32-bit integer file is fine for `long long`).
fn holds(stored: &TypeDescriptor, ty: ScalarType) -> bool {
    use TypeDescriptor as T;
    match (ty, stored) {
        (ScalarType::Double, T::Float(_)) => true,
        (ScalarType::Float, T::Float(FloatSize::U4)) => true,
        (ScalarType::Int, T::Integer(s)) => (*s as usize) <= 4,
        (ScalarType::Int, T::Unsigned(s)) => (*s as usize) < 4,
        (ScalarType::Uint, T::Unsigned(s)) => (*s as usize) <= 4,
        (ScalarType::Ll, T::Integer(_)) => true,
        (ScalarType::Ll, T::Unsigned(s)) => (*s as usize) < 8,
        (ScalarType::Ull, T::Unsigned(_)) => true,
        (ScalarType::Bool, T::Boolean) => true,
        _ => false,
    }
}

/// A dataset's shape as OP2 reads it: rows and values per row.
fn rows_and_dim(shape: &[usize]) -> Option<(u64, u64)> {
    match shape {
        [] => Some((1, 1)),
        [rows] => Some((*rows as u64, 1)),
        [rows, dim] => Some((*rows as u64, *dim as u64)),
        _ => None,
    }
}

/// The number of points of a shape, `None` when it does not fit in 64
/// bits (a header can claim any extents).
fn points(shape: &[usize]) -> Option<u64> {
    shape
        .iter()
        .try_fold(1u64, |n, &extent| n.checked_mul(extent as u64))
}

/// Why a chunked dataset's chunks are not read, if they are not: extents
/// that cannot be read, or a chunk of more than [`MAX_CHUNK_BYTES`]
/// (checked from the header, before any chunk is).
fn chunk_too_large(dataset: &Dataset) -> Option<String> {
    let chunk = match dataset.dcpl().and_then(|dcpl| dcpl.get_chunk()) {
        Ok(Some(chunk)) => chunk,
        Ok(None) => return Some("is chunked, but its chunks have no extents".to_owned()),
        Err(error) => return Some(format!("has chunks whose extents cannot be read: {error}")),
    };
    let size = dataset.dtype().map_or(0, |t| t.size()) as u64;
    let values = points(&chunk);
    match values.and_then(|n| n.checked_mul(size)) {
        Some(bytes) if bytes <= MAX_CHUNK_BYTES => None,
        Some(bytes) => Some(format!(
            "is stored in chunks of {bytes} bytes ({} values of {size} bytes), more than the {MAX_CHUNK_BYTES} bytes a chunk may have",
            values.unwrap_or(0)
        )),
        None => Some(format!(
            "is stored in chunks of {chunk:?} values, more than the {MAX_CHUNK_BYTES} bytes a chunk may have"
        )),
    }
}

/// Reads OP2's HDF5 layout at `path` for `program` into [`Raw`]; `None`
/// when the file cannot be opened (reported).
pub(crate) fn parse<'p>(
    file_path: &Path,
    program: &'p Program,
    problems: &mut Problems<'p>,
    progress: &mut dyn Progress,
) -> Option<Raw> {
    let declared = Declared::of(program);
    let mut recorded = Recorded::default();
    let raw = read(file_path, &declared, &mut recorded, progress);
    recorded.replay(problems);
    raw
}

/// What the reader needs of a program: the names it declares, with the
/// arity of each map and the element type of each dat, const and global.
/// Small and serialisable, for a reader in a child process
/// ([`crate::child`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Declared {
    pub(crate) sets: Vec<String>,
    /// Name and arity.
    pub(crate) maps: Vec<(String, u32)>,
    pub(crate) dats: Vec<(String, ElementType)>,
    pub(crate) consts: Vec<(String, ElementType)>,
    pub(crate) globals: Vec<(String, ElementType)>,
    /// The other names the program declares (kernels): a dataset named so
    /// is not reported as unknown.
    pub(crate) others: Vec<String>,
}

impl Declared {
    pub(crate) fn of(program: &Program) -> Declared {
        Declared {
            sets: program.sets.iter().map(|s| s.name.clone()).collect(),
            maps: program
                .maps
                .iter()
                .map(|m| (m.name.clone(), m.arity))
                .collect(),
            dats: program
                .dats
                .iter()
                .map(|d| (d.name.clone(), d.ty))
                .collect(),
            consts: program
                .consts
                .iter()
                .map(|c| (c.name.clone(), c.ty))
                .collect(),
            globals: program
                .globals
                .iter()
                .map(|g| (g.name.clone(), g.ty))
                .collect(),
            others: program.kernels.iter().map(|k| k.name.clone()).collect(),
        }
    }

    /// Nothing read yet, an entry per declaration.
    fn empty(&self) -> Raw {
        Raw::of_counts([
            self.sets.len(),
            self.maps.len(),
            self.dats.len(),
            self.consts.len(),
            self.globals.len(),
        ])
    }

    /// Every name the program declares.
    fn names(&self) -> FxHashSet<&str> {
        fn named(entries: &[(String, ElementType)]) -> impl Iterator<Item = &str> {
            entries.iter().map(|(n, _)| n.as_str())
        }
        self.sets
            .iter()
            .map(String::as_str)
            .chain(self.maps.iter().map(|(n, _)| n.as_str()))
            .chain(named(&self.dats))
            .chain(named(&self.consts))
            .chain(named(&self.globals))
            .chain(self.others.iter().map(String::as_str))
            .collect()
    }

    fn name(&self, section: Section, id: u32) -> &str {
        let index = id as usize;
        let found = match section {
            Section::Sets => self.sets.get(index),
            Section::Maps => self.maps.get(index).map(|(n, _)| n),
            Section::Dats => self.dats.get(index).map(|(n, _)| n),
            Section::Consts => self.consts.get(index).map(|(n, _)| n),
            Section::Globals => self.globals.get(index).map(|(n, _)| n),
        };
        found.map_or("", String::as_str)
    }
}

/// A problem found by the reader, as data: replayed into [`Problems`] by
/// whoever holds the program.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Record {
    /// [`Problems::report`].
    Entry {
        code: Code,
        section: Section,
        id: u32,
        indices: Vec<u64>,
        message: String,
    },
    /// [`Problems::report_unknown`].
    Unknown {
        code: Code,
        path: String,
        message: String,
    },
}

/// The problems found by the reader, at most [`SHOWN_PER_ENTRY`] per entry
/// and code kept (the messages of the others are never built, as in
/// [`Problems`]), with a count of those not kept.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Recorded {
    pub(crate) records: Vec<Record>,
    /// Per entry and code: problems seen.
    pub(crate) counts: Vec<((Section, u32, Code), u64)>,
    index: rustc_hash::FxHashMap<(Section, u32, Code), usize>,
}

impl Recorded {
    pub(crate) fn report(
        &mut self,
        code: Code,
        section: Section,
        id: u32,
        indices: &[u64],
        message: impl FnOnce() -> String,
    ) {
        let key = (section, id, code);
        let slot = *self.index.entry(key).or_insert_with(|| {
            self.counts.push((key, 0));
            self.counts.len() - 1
        });
        self.counts[slot].1 += 1;
        if self.counts[slot].1 > SHOWN_PER_ENTRY {
            return;
        }
        self.records.push(Record::Entry {
            code,
            section,
            id,
            indices: indices.to_vec(),
            message: message(),
        });
    }

    pub(crate) fn report_unknown(&mut self, code: Code, path: String, message: String) {
        self.records.push(Record::Unknown {
            code,
            path,
            message,
        });
    }

    /// Rebuilds the index after decoding ([`crate::child`]).
    pub(crate) fn from_parts(
        records: Vec<Record>,
        counts: Vec<((Section, u32, Code), u64)>,
    ) -> Recorded {
        let index = counts
            .iter()
            .enumerate()
            .map(|(slot, (key, _))| (*key, slot))
            .collect();
        Recorded {
            records,
            counts,
            index,
        }
    }

    /// Reports every problem recorded into `problems`, as if the reader had
    /// reported them there.
    pub(crate) fn replay(self, problems: &mut Problems<'_>) {
        for record in self.records {
            match record {
                Record::Entry {
                    code,
                    section,
                    id,
                    indices,
                    message,
                } => problems.report(code, section, id, &indices, || message),
                Record::Unknown {
                    code,
                    path,
                    message,
                } => problems.report_unknown(code, path, message),
            }
        }
        for ((section, id, code), count) in self.counts {
            problems.count_hidden(code, section, id, count.saturating_sub(SHOWN_PER_ENTRY));
        }
    }
}

/// Reads OP2's HDF5 layout at `path` for what a program declares into
/// [`Raw`], recording problems; `None` when the file cannot be opened.
pub(crate) fn read(
    file_path: &Path,
    declared: &Declared,
    problems: &mut Recorded,
    progress: &mut dyn Progress,
) -> Option<Raw> {
    // Without HDF5's file locking: a reader takes a shared lock, which
    // fails at once while any process holds the exclusive lock of a
    // writer, and a lock outlives its writer in every process started
    // while the writer had the file open (a child inherits the
    // descriptor). A file read while it is written is read as damaged at
    // worst, which the checks below report. A file this process has open
    // already (with locking) opens only with the same flag: then it is
    // opened again with HDF5's defaults.
    let opened = File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open(file_path)
        .or_else(|error| File::open(file_path).map_err(|_| error));
    let file = match opened {
        Ok(file) => file,
        Err(error) => {
            problems.report_unknown(
                Code::E701,
                String::new(),
                format!("the HDF5 file cannot be read (truncated or damaged?): {error}"),
            );
            return None;
        }
    };
    // The names at the root that are hard links: anything else (a soft or
    // external link) is never opened, since opening it may open another
    // file by path.
    let mut stored = FxHashSet::default();
    let listed = file.iter_visit_default(|name, info| {
        if info.link_type == LinkType::Hard {
            stored.insert(name.to_owned());
        }
        Ok(())
    });
    if let Err(error) = listed {
        problems.report_unknown(
            Code::E701,
            String::new(),
            format!("the HDF5 file's root group cannot be listed (truncated or damaged?): {error}"),
        );
        return None;
    }
    let mut reader = Reader {
        file: &file,
        stored,
        declared,
        problems,
        progress,
        dat_values: 0,
        map_targets: 0,
    };
    let mut raw = declared.empty();
    reader.unknown_datasets();
    for index in 0..declared.sets.len() {
        raw.sets[index] = reader.set(index as u32);
    }
    for index in 0..declared.maps.len() {
        raw.maps[index] = reader.map(index as u32);
    }
    for index in 0..declared.dats.len() {
        raw.dats[index] = reader.dat(index as u32);
    }
    for (index, (name, ty)) in declared.consts.iter().enumerate() {
        raw.consts[index] = reader.values(Section::Consts, index as u32, name, *ty);
    }
    for (index, (name, ty)) in declared.globals.iter().enumerate() {
        raw.globals[index] = reader.values(Section::Globals, index as u32, name, *ty);
    }
    Some(raw)
}

struct Reader<'a, 'g> {
    file: &'a File,
    /// The hard links at the root.
    stored: FxHashSet<String>,
    declared: &'a Declared,
    problems: &'g mut Recorded,
    progress: &'g mut dyn Progress,
    /// The values of the dats read so far, and the targets of the maps.
    dat_values: u64,
    map_targets: u64,
}

/// A dataset found for a declaration, with its shape and storage type.
struct Found {
    dataset: Dataset,
    rows: u64,
    dim: u64,
    /// `rows * dim`, which fits in 64 bits.
    values: u64,
    stored: TypeDescriptor,
}

impl Reader<'_, '_> {
    /// W705 for datasets at the root that name nothing in the program
    /// (groups are OP2's own bookkeeping and are passed over).
    fn unknown_datasets(&mut self) {
        let Ok(names) = self.file.member_names() else {
            return;
        };
        let declared = self.declared.names();
        for name in names {
            if declared.contains(name.as_str())
                || !self.stored.contains(&name)
                || self.file.dataset(&name).is_err()
            {
                continue;
            }
            self.problems.report_unknown(
                Code::W705,
                format!("/{name}"),
                format!("the program declares nothing named `{name}`; the dataset is ignored"),
            );
        }
    }

    fn e701(&mut self, section: Section, id: u32, indices: &[u64], message: String) {
        self.problems
            .report(Code::E701, section, id, indices, || message);
    }

    /// The dataset of a declaration, when the file has one; a group or an
    /// unreadable dataset is reported.
    fn find(&mut self, section: Section, id: u32, name: &str) -> Option<Found> {
        if !self.file.link_exists(name) {
            return None;
        }
        if !self.stored.contains(name) {
            self.e701(
                section,
                id,
                &[],
                format!(
                    "`/{name}` is a soft or external link; only datasets stored in the file are read"
                ),
            );
            return None;
        }
        let dataset = match self.file.dataset(name) {
            Ok(dataset) => dataset,
            Err(error) => {
                self.e701(
                    section,
                    id,
                    &[],
                    format!("`/{name}` is not a readable dataset: {error}"),
                );
                return None;
            }
        };
        let stored = match dataset.dtype().and_then(|t| t.to_descriptor()) {
            Ok(stored) => stored,
            Err(error) => {
                self.e701(
                    section,
                    id,
                    &[],
                    format!("the type of dataset `/{name}` cannot be read: {error}"),
                );
                return None;
            }
        };
        // External files and virtual datasets read other files by path.
        let (layout, external) = match dataset.dcpl() {
            Ok(dcpl) => (dcpl.layout(), dcpl.external().len()),
            Err(error) => {
                self.e701(
                    section,
                    id,
                    &[],
                    format!("the storage of dataset `/{name}` cannot be read: {error}"),
                );
                return None;
            }
        };
        if external > 0
            || !matches!(
                layout,
                hdf5::dataset::Layout::Compact
                    | hdf5::dataset::Layout::Contiguous
                    | hdf5::dataset::Layout::Chunked
            )
        {
            self.e701(
                section,
                id,
                &[],
                format!(
                    "dataset `/{name}` keeps its values in other files (external storage or a virtual dataset); only values stored in the file are read"
                ),
            );
            return None;
        }
        if layout == hdf5::dataset::Layout::Chunked
            && let Some(message) = chunk_too_large(&dataset)
        {
            self.e701(section, id, &[], format!("dataset `/{name}` {message}"));
            return None;
        }
        let shape = dataset.shape();
        let Some(values) = points(&shape) else {
            self.e701(
                section,
                id,
                &[],
                format!("dataset `/{name}` claims more values than fit in 64 bits"),
            );
            return None;
        };
        let Some((rows, dim)) = rows_and_dim(&shape) else {
            self.e701(
                section,
                id,
                &[],
                format!(
                    "dataset `/{name}` has {} dimensions; OP2's layout has one row per element (at most 2)",
                    dataset.ndim()
                ),
            );
            return None;
        };
        Some(Found {
            dataset,
            rows,
            dim,
            values,
            stored,
        })
    }

    /// An integer attribute (`dim`, `size`) when present.
    fn int_attr(&mut self, section: Section, id: u32, found: &Found, name: &str) -> Option<i64> {
        let attribute = found.dataset.attr(name).ok()?;
        // One point of an integer of at most 8 bytes, checked before
        // reading: the library sizes its buffer by the points claimed.
        let one_integer = points(&attribute.shape()) == Some(1)
            && matches!(
                attribute.dtype().and_then(|t| t.to_descriptor()),
                Ok(TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_))
            );
        let read = if one_integer {
            attribute.read_raw::<i64>().ok()
        } else {
            None
        };
        match read {
            Some(values) if values.len() == 1 => Some(values[0]),
            _ => {
                let dataset = self.program_name(section, id);
                self.e701(
                    section,
                    id,
                    &[],
                    format!("attribute `{name}` of dataset `/{dataset}` is not one integer"),
                );
                None
            }
        }
    }

    /// The `type` attribute when present, as text.
    fn type_attr(&mut self, section: Section, id: u32, found: &Found) -> Option<String> {
        let attribute = found.dataset.attr("type").ok()?;
        // One string of a few bytes, checked before reading.
        let small = points(&attribute.shape()) == Some(1)
            && attribute
                .dtype()
                .is_ok_and(|t| t.size() <= MAX_TYPE_ATTRIBUTE);
        if !small {
            let dataset = self.program_name(section, id);
            self.e701(
                section,
                id,
                &[],
                format!(
                    "attribute `type` of dataset `/{dataset}` is not one string of at most {MAX_TYPE_ATTRIBUTE} bytes"
                ),
            );
            return None;
        }
        match attribute.read_scalar::<hdf5::types::FixedAscii<64>>() {
            Ok(text) => {
                // The bytes as they are: the library does not check that a
                // string stored as ASCII is (its `as_str` would be a `str`
                // of any bytes).
                let text = String::from_utf8_lossy(text.as_bytes());
                let text = text.trim_end_matches('\0');
                // OP2 stores the text in a NUL-terminated string exactly as
                // long as it, so converting it loses the last character
                // ("doubl" for "double"): take the known name it begins.
                let stored = match attribute.dtype().and_then(|t| t.to_descriptor()) {
                    Ok(TypeDescriptor::FixedAscii(n) | TypeDescriptor::FixedUnicode(n)) => n,
                    _ => 0,
                };
                let whole = KNOWN_TYPES.iter().find(|name| {
                    name.len() == stored && stored == text.len() + 1 && name.starts_with(text)
                });
                Some(whole.map_or_else(|| text.to_owned(), |name| (*name).to_owned()))
            }
            Err(_) => match attribute.read_scalar::<hdf5::types::VarLenAscii>() {
                Ok(text) => Some(String::from_utf8_lossy(text.as_bytes()).into_owned()),
                Err(_) => {
                    let dataset = self.program_name(section, id);
                    self.e701(
                        section,
                        id,
                        &[],
                        format!("attribute `type` of dataset `/{dataset}` is not a string"),
                    );
                    None
                }
            },
        }
    }

    fn program_name(&self, section: Section, id: u32) -> String {
        self.declared.name(section, id).to_owned()
    }

    /// Checks the `dim`, `size` and `type` attributes against the shape and
    /// storage; false when one disagrees (reported).
    fn attributes_agree(&mut self, section: Section, id: u32, found: &Found, rows: bool) -> bool {
        let name = self.program_name(section, id);
        let mut ok = true;
        if let Some(dim) = self.int_attr(section, id, found, "dim")
            && u64::try_from(dim) != Ok(found.dim)
            && !(found.rows == 0 || (!rows && u64::try_from(dim) == Ok(found.values)))
        {
            ok = false;
            self.e701(
                section,
                id,
                &[],
                format!(
                    "attribute `dim` of dataset `/{name}` is {dim}, but its rows hold {} value{}",
                    found.dim,
                    plural(found.dim)
                ),
            );
        }
        // OP2 writes a map's `size` as its rows, a dat's as the bytes of
        // one element (`op_dat::size`); only the first says something here.
        if rows
            && section == Section::Maps
            && let Some(size) = self.int_attr(section, id, found, "size")
            && u64::try_from(size) != Ok(found.rows)
        {
            ok = false;
            self.e701(
                section,
                id,
                &[],
                format!(
                    "attribute `size` of dataset `/{name}` is {size}, but it has {} row{}",
                    found.rows,
                    plural(found.rows)
                ),
            );
        }
        if let Some(text) = self.type_attr(section, id, found) {
            match from_op2_type(&text) {
                Some(ty) if holds(&found.stored, ty) => {}
                Some(_) | None => {
                    ok = false;
                    self.e701(
                        section,
                        id,
                        &[],
                        format!(
                            "attribute `type` of dataset `/{name}` is {text:?}, but it holds {}",
                            describe(&found.stored)
                        ),
                    );
                }
            }
        }
        ok
    }

    fn set(&mut self, id: u32) -> Option<Option<u32>> {
        let name = self.declared.sets[id as usize].clone();
        let found = self.find(Section::Sets, id, &name)?;
        if !matches!(
            found.stored,
            TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_)
        ) || found.values != 1
        {
            self.e701(
                Section::Sets,
                id,
                &[],
                format!(
                    "expected the size of set `{name}` (one integer), found {} value{} of {}",
                    found.values,
                    plural(found.values),
                    describe(&found.stored)
                ),
            );
            return Some(None);
        }
        let size = match found.dataset.read_raw::<i64>() {
            Ok(values) if values.len() == 1 => values[0],
            Ok(values) => {
                self.e701(
                    Section::Sets,
                    id,
                    &[],
                    format!(
                        "expected the size of set `{name}` (one integer), found {} value{}",
                        values.len(),
                        plural(values.len() as u64)
                    ),
                );
                return Some(None);
            }
            Err(error) => {
                self.e701(
                    Section::Sets,
                    id,
                    &[],
                    format!("dataset `/{name}` cannot be read: {error}"),
                );
                return Some(None);
            }
        };
        let checked = u64::try_from(size)
            .map_err(|_| format!("set size {size} is negative"))
            .and_then(checked_set_size);
        match checked {
            Ok(size) => Some(Some(size)),
            Err(message) => {
                self.e701(Section::Sets, id, &[], message);
                Some(None)
            }
        }
    }

    /// The rows of a dataset whose shape is known to be right, as values of
    /// `T`, [`BLOCK_VALUES`] values (or one row) at a time; `each` gets the
    /// first row of a block and its values.
    fn blocks<T: H5Type>(
        &mut self,
        section: Section,
        id: u32,
        found: &Found,
        mut each: impl FnMut(&mut Self, u64, &[T]),
    ) -> bool {
        let rows = found.rows as usize;
        let block = usize::try_from((BLOCK_VALUES / found.dim.max(1)).max(1)).unwrap_or(1);
        let mut start = 0usize;
        while start < rows {
            let end = start.saturating_add(block).min(rows);
            let block = if found.dataset.ndim() == 2 {
                found
                    .dataset
                    .read_slice_2d::<T, _>((start..end, ..))
                    .map(|a| a.into_raw_vec_and_offset().0)
            } else {
                found
                    .dataset
                    .read_slice_1d::<T, _>(start..end)
                    .map(|a| a.into_raw_vec_and_offset().0)
            };
            match block {
                Ok(values) => each(self, start as u64, &values),
                Err(error) => {
                    self.e701(
                        section,
                        id,
                        &[start as u64],
                        format!("rows {start} to {} cannot be read: {error}", end - 1),
                    );
                    return false;
                }
            }
            self.progress.advance((end - start) as u64);
            start = end;
        }
        true
    }

    /// Checks that a map's or dat's shape fits its declaration before
    /// anything is allocated: rows within [`MAX_SET_SIZE`], `dim` equal to
    /// the declared arity or dimension.
    fn shape_fits(
        &mut self,
        section: Section,
        id: u32,
        found: &Found,
        dim: u32,
        what: &str,
    ) -> bool {
        let name = self.program_name(section, id);
        if found.rows > u64::from(MAX_SET_SIZE) {
            self.e701(
                section,
                id,
                &[],
                format!(
                    "{} rows is more than the {MAX_SET_SIZE} elements a set may have",
                    found.rows
                ),
            );
            return false;
        }
        if found.dim != u64::from(dim.max(1)) {
            self.problems.report(Code::E703, section, id, &[], || {
                format!(
                    "rows of {} value{}, but {what} `{name}` has {} {dim}",
                    found.dim,
                    plural(found.dim),
                    if section == Section::Maps {
                        "arity"
                    } else {
                        "dimension"
                    }
                )
            });
            return false;
        }
        // The values already read and these, against the limit, before any
        // is allocated: the file's size does not bound them.
        let (total, limit) = if section == Section::Maps {
            (&mut self.map_targets, MAX_MAP_TARGETS)
        } else {
            (&mut self.dat_values, MAX_DAT_VALUES)
        };
        match total.checked_add(found.values) {
            Some(sum) if sum <= limit => {
                *total = sum;
                true
            }
            _ => {
                let (values, rows) = (found.values, found.rows);
                let message = if section == Section::Maps {
                    format!(
                        "map `{name}` needs {values} targets ({rows} elements of arity {dim}), which brings the maps to more than the {limit} targets instance data may hold"
                    )
                } else {
                    format!(
                        "dat `{name}` needs {values} values ({rows} elements of dimension {dim}), which brings the dats to more than the {limit} values a run may hold"
                    )
                };
                self.e701(section, id, &[], message);
                false
            }
        }
    }

    fn map(&mut self, id: u32) -> Option<RawMap> {
        let (name, arity) = self.declared.maps[id as usize].clone();
        let found = self.find(Section::Maps, id, &name)?;
        let mut raw = RawMap {
            malformed: true,
            ..RawMap::default()
        };
        if !matches!(
            found.stored,
            TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_)
        ) {
            self.e701(
                Section::Maps,
                id,
                &[],
                format!(
                    "dataset `/{name}` holds {}, but map targets are integers",
                    describe(&found.stored)
                ),
            );
            return Some(raw);
        }
        if !self.attributes_agree(Section::Maps, id, &found, true)
            || !self.shape_fits(Section::Maps, id, &found, arity, "map")
        {
            return Some(raw);
        }
        let arity = u64::from(arity.max(1));
        // Exactly the targets checked against the limit: the reader's
        // memory limit counts on it (`CHILD_MEMORY`), and libhdf5 gives
        // every row a file claims (fill values where it stored none).
        raw.targets.reserve_exact(found.values as usize);
        let read = self.blocks::<i64>(Section::Maps, id, &found, |_, first, values| {
            for (k, &target) in values.iter().enumerate() {
                match u32::try_from(target) {
                    Ok(t) if t != BAD_TARGET => raw.targets.push(t),
                    _ => {
                        let k = k as u64;
                        raw.bad
                            .push((first + k / arity, k % arity, target.to_string()));
                        raw.targets.push(BAD_TARGET);
                    }
                }
            }
        });
        raw.rows = found.rows;
        raw.malformed = !read;
        Some(raw)
    }

    fn dat(&mut self, id: u32) -> Option<RawDat> {
        let (name, ty) = self.declared.dats[id as usize].clone();
        let found = self.find(Section::Dats, id, &name)?;
        let mut raw = RawDat {
            column: Column::new(ty.scalar),
            rows: 0,
            malformed: true,
        };
        if !holds(&found.stored, ty.scalar) {
            self.e701(
                Section::Dats,
                id,
                &[],
                format!(
                    "dataset `/{name}` holds {}, but dat `{name}` is `{}`",
                    describe(&found.stored),
                    ty.scalar
                ),
            );
            return Some(raw);
        }
        if !self.attributes_agree(Section::Dats, id, &found, true)
            || !self.shape_fits(Section::Dats, id, &found, ty.dimension, "dat")
        {
            return Some(raw);
        }
        let dim = u64::from(ty.dimension.max(1));
        // Exactly the values checked against the limit, as for a map.
        raw.column.reserve(found.values as usize);
        let read = self.read_column(Section::Dats, id, &found, dim, &mut raw.column);
        raw.rows = found.rows;
        raw.malformed = !read;
        Some(raw)
    }

    /// Reads every row into `column` (of the dataset's declared type),
    /// reporting values that are not finite with their row and component.
    fn read_column(
        &mut self,
        section: Section,
        id: u32,
        found: &Found,
        dim: u64,
        column: &mut Column,
    ) -> bool {
        let not_finite = |reader: &mut Self, first: u64, k: usize, value: f64| {
            let k = k as u64;
            reader.e701(
                section,
                id,
                &[first + k / dim, k % dim],
                format!("{value} is not a finite number"),
            );
        };
        match column {
            Column::Double(v) => self.blocks::<f64>(section, id, found, |r, first, values| {
                for (k, &x) in values.iter().enumerate() {
                    if !x.is_finite() {
                        not_finite(r, first, k, x);
                    }
                }
                v.extend_from_slice(values);
            }),
            Column::Float(v) => self.blocks::<f32>(section, id, found, |r, first, values| {
                for (k, &x) in values.iter().enumerate() {
                    if !x.is_finite() {
                        not_finite(r, first, k, f64::from(x));
                    }
                }
                v.extend_from_slice(values);
            }),
            Column::Int(v) => self.blocks::<i32>(section, id, found, |_, _, values| {
                v.extend_from_slice(values);
            }),
            Column::Uint(v) => self.blocks::<u32>(section, id, found, |_, _, values| {
                v.extend_from_slice(values);
            }),
            Column::Ll(v) => self.blocks::<i64>(section, id, found, |_, _, values| {
                v.extend_from_slice(values);
            }),
            Column::Ull(v) => self.blocks::<u64>(section, id, found, |_, _, values| {
                v.extend_from_slice(values);
            }),
            Column::Bool(v) => self.blocks::<bool>(section, id, found, |_, _, values| {
                v.extend_from_slice(values);
            }),
        }
    }

    /// The values of a const or global.
    fn values(
        &mut self,
        section: Section,
        id: u32,
        name: &str,
        ty: ElementType,
    ) -> Option<Vec<Value>> {
        let found = self.find(section, id, name)?;
        let kind = if section == Section::Consts {
            "const"
        } else {
            "global"
        };
        if !holds(&found.stored, ty.scalar) {
            self.e701(
                section,
                id,
                &[],
                format!(
                    "dataset `/{name}` holds {}, but {kind} `{name}` is `{}`",
                    describe(&found.stored),
                    ty.scalar
                ),
            );
            return Some(Vec::new());
        }
        if !self.attributes_agree(section, id, &found, false) {
            return Some(Vec::new());
        }
        let count = found.values;
        if count != u64::from(ty.dimension) {
            self.problems.report(Code::E703, section, id, &[], || {
                format!(
                    "{count} value{}, but {kind} `{name}` has dimension {}",
                    plural(count),
                    ty.dimension
                )
            });
            return Some(Vec::new());
        }
        // A handful of values (the program bounds the dimension): read whole.
        let read = match ty.scalar {
            ScalarType::Double => read_all::<f64>(&found.dataset, Value::Double),
            ScalarType::Float => read_all::<f32>(&found.dataset, Value::Float),
            ScalarType::Int => read_all::<i32>(&found.dataset, Value::Int),
            ScalarType::Uint => read_all::<u32>(&found.dataset, Value::Uint),
            ScalarType::Ll => read_all::<i64>(&found.dataset, Value::Ll),
            ScalarType::Ull => read_all::<u64>(&found.dataset, Value::Ull),
            ScalarType::Bool => read_all::<bool>(&found.dataset, Value::Bool),
        };
        match read {
            Ok(values) => {
                for (k, value) in values.iter().enumerate() {
                    if let Value::Double(x) = value.convert(ScalarType::Double)
                        && !x.is_finite()
                    {
                        self.e701(
                            section,
                            id,
                            &[k as u64],
                            format!("{x} is not a finite number"),
                        );
                    }
                }
                Some(values)
            }
            Err(error) => {
                self.e701(
                    section,
                    id,
                    &[],
                    format!("dataset `/{name}` cannot be read: {error}"),
                );
                Some(Vec::new())
            }
        }
    }
}

/// Every value of a small dataset.
fn read_all<T: H5Type>(dataset: &Dataset, value: fn(T) -> Value) -> hdf5::Result<Vec<Value>> {
    Ok(dataset.read_raw::<T>()?.into_iter().map(value).collect())
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Why instance data or a final state could not be written.
#[derive(Debug)]
pub struct WriteError(String);

impl WriteError {
    pub(crate) fn new(message: String) -> WriteError {
        WriteError(message)
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WriteError {}

impl From<hdf5::Error> for WriteError {
    fn from(error: hdf5::Error) -> WriteError {
        WriteError(error.to_string())
    }
}

impl From<std::io::Error> for WriteError {
    fn from(error: std::io::Error) -> WriteError {
        WriteError(error.to_string())
    }
}

/// Writes the state of a run in OP2's layout to `path`, atomically (a
/// temporary file beside it, renamed over it when complete): a dataset per
/// set holding its size, a dataset `[size, arity]` of `int` per map given
/// (`size`, `dim` and `type` attributes), a dataset `[size, dim]` per dat with the
/// attributes `size`, `dim` and `type`, and a dataset `[dim]` per global
/// (and per const when `consts` are given) with `dim` and `type`, as
/// `op_dump_to_hdf5` and `op_write_const_hdf5` write them. `dats[i]` holds
/// dat `i`'s values flattened element-major; globals and consts hold their
/// components.
pub fn write_state(
    path: &Path,
    program: &Program,
    set_sizes: &[u32],
    maps: &[Option<&[u32]>],
    dats: &[&[Value]],
    consts: &[&[Value]],
    globals: &[&[Value]],
) -> Result<(), WriteError> {
    crate::write::atomically(path, |temporary| {
        let out = Out(File::create(temporary)?);
        for (set, &size) in program.sets.iter().zip(set_sizes) {
            out.set(&set.name, size)?;
        }
        for (map, targets) in program.maps.iter().zip(maps) {
            if let Some(targets) = targets {
                out.map(&map.name, map.arity, targets)?;
            }
        }
        for (dat, values) in program.dats.iter().zip(dats) {
            let dim = dat.ty.dimension.max(1) as usize;
            out.dat(&dat.name, dim, dat.ty.scalar, values.len(), |k| values[k])?;
        }
        let small = program
            .consts
            .iter()
            .map(|c| (&c.name, c.ty))
            .zip(consts)
            .chain(program.globals.iter().map(|g| (&g.name, g.ty)).zip(globals));
        for ((name, ty), values) in small {
            out.values(name, ty.scalar, values)?;
        }
        out.0.close()?;
        Ok(())
    })
}

/// Writes what `data` was read with (see [`crate::write_file`]) in OP2's
/// layout to the file at `path`, replacing it.
pub(crate) fn write_data(
    path: &Path,
    program: &Program,
    data: &crate::InstanceData,
) -> Result<(), WriteError> {
    let out = Out(File::create(path)?);
    let given = &data.given;
    for (index, set) in program.sets.iter().enumerate() {
        if given.sets.get(index) == Some(&true) {
            out.set(&set.name, data.set_sizes[index])?;
        }
    }
    for (map, targets) in program.maps.iter().zip(&data.maps) {
        if let Some(targets) = targets {
            out.map(&map.name, map.arity, targets)?;
        }
    }
    for (dat, values) in program.dats.iter().zip(&data.dats) {
        if let crate::DatValues::Given(column) = values {
            let dim = dat.ty.dimension.max(1) as usize;
            out.dat(&dat.name, dim, dat.ty.scalar, column.len(), |k| {
                column.get(k)
            })?;
        }
    }
    let consts = program.consts.iter().map(|c| (&c.name, c.ty.scalar));
    let globals = program.globals.iter().map(|g| (&g.name, g.ty.scalar));
    let small = consts
        .zip(data.consts.iter().zip(&given.consts))
        .chain(globals.zip(data.globals.iter().zip(&given.globals)));
    for ((name, ty), (values, &given)) in small {
        if given {
            out.values(name, ty, values)?;
        }
    }
    out.0.close()?;
    Ok(())
}

/// A file being written in OP2's layout.
struct Out(File);

impl Out {
    /// A set: one `int`, its size.
    fn set(&self, name: &str, size: u32) -> Result<(), WriteError> {
        let size =
            i32::try_from(size).map_err(|_| WriteError(format!("set `{name}` is too large")))?;
        self.0
            .new_dataset::<i32>()
            .shape([1])
            .create(name)?
            .write_raw(&[size])?;
        Ok(())
    }

    /// A map: `[rows, arity]` of `int`, with `size` (rows), `dim` and `type`.
    fn map(&self, name: &str, arity: u32, targets: &[u32]) -> Result<(), WriteError> {
        let arity = arity.max(1) as usize;
        let rows = targets.len() / arity;
        let dataset = rows_of::<i32>(&self.0, name, rows, arity, true, |k| targets[k] as i32)?;
        int_attr(&dataset, "size", rows)?;
        int_attr(&dataset, "dim", arity)?;
        type_attr(&dataset, "int")?;
        Ok(())
    }

    /// A dat: `[rows, dim]` of its type, with `size` (as OP2's
    /// `op_dat::size`, the bytes of one element), `dim` and `type`.
    fn dat(
        &self,
        name: &str,
        dim: usize,
        ty: ScalarType,
        count: usize,
        value: impl Fn(usize) -> Value,
    ) -> Result<(), WriteError> {
        let dataset = typed_rows(&self.0, name, count / dim, dim, true, ty, value)?;
        int_attr(&dataset, "size", dim * scalar_bytes(ty))?;
        int_attr(&dataset, "dim", dim)?;
        type_attr(&dataset, op2_type(ty))?;
        Ok(())
    }

    /// A const or global: `[dim]` values with `dim` and `type`.
    fn values(&self, name: &str, ty: ScalarType, values: &[Value]) -> Result<(), WriteError> {
        let dataset = typed_rows(&self.0, name, values.len(), 1, false, ty, |k| values[k])?;
        int_attr(&dataset, "dim", values.len())?;
        type_attr(&dataset, op2_type(ty))?;
        Ok(())
    }
}

/// The bytes of one value of `ty` in C.
fn scalar_bytes(ty: ScalarType) -> usize {
    match ty {
        ScalarType::Double | ScalarType::Ll | ScalarType::Ull => 8,
        ScalarType::Float | ScalarType::Int | ScalarType::Uint => 4,
        ScalarType::Bool => 1,
    }
}

/// A dataset of `rows` rows of `width` values (`[rows, width]` when
/// `two_d`, else `[rows]`) of `ty`, value `k` (element-major) converted from
/// `value(k)`.
fn typed_rows(
    file: &File,
    name: &str,
    rows: usize,
    width: usize,
    two_d: bool,
    ty: ScalarType,
    value: impl Fn(usize) -> Value,
) -> Result<Dataset, WriteError> {
    macro_rules! as_type {
        ($t:ty, $variant:ident) => {
            rows_of::<$t>(file, name, rows, width, two_d, |k| {
                match value(k).convert(ty) {
                    Value::$variant(x) => x,
                    _ => unreachable!("Value::convert returns the requested type"),
                }
            })
        };
    }
    match ty {
        ScalarType::Double => as_type!(f64, Double),
        ScalarType::Float => as_type!(f32, Float),
        ScalarType::Int => as_type!(i32, Int),
        ScalarType::Uint => as_type!(u32, Uint),
        ScalarType::Ll => as_type!(i64, Ll),
        ScalarType::Ull => as_type!(u64, Ull),
        ScalarType::Bool => as_type!(bool, Bool),
    }
}

/// A dataset of `rows` rows of `width` values of `T`, written [`BLOCK`]
/// rows at a time (a hyperslab each).
fn rows_of<T: H5Type>(
    file: &File,
    name: &str,
    rows: usize,
    width: usize,
    two_d: bool,
    value: impl Fn(usize) -> T,
) -> Result<Dataset, WriteError> {
    let dataset = if two_d {
        file.new_dataset::<T>().shape([rows, width]).create(name)?
    } else {
        file.new_dataset::<T>().shape([rows * width]).create(name)?
    };
    let mut row = 0usize;
    while row < rows {
        let n = BLOCK.min(rows - row);
        let block: Vec<T> = (row * width..(row + n) * width).map(&value).collect();
        if two_d {
            let array = ndarray::ArrayView2::from_shape((n, width), &block)
                .map_err(|e| WriteError(e.to_string()))?;
            dataset.write_slice(array, (row..row + n, ..))?;
        } else {
            dataset.write_slice(&block, row * width..(row + n) * width)?;
        }
        row += n;
    }
    Ok(dataset)
}

/// An integer attribute of one value, as OP2 writes `size` and `dim`.
fn int_attr(dataset: &Dataset, name: &str, value: usize) -> Result<(), WriteError> {
    let value = i32::try_from(value)
        .map_err(|_| WriteError(format!("`{name}` {value} does not fit an int")))?;
    dataset
        .new_attr::<i32>()
        .shape([1])
        .create(name)?
        .write_raw(&[value])?;
    Ok(())
}

/// The `type` attribute: a scalar fixed-length string as long as the
/// text, as OP2 writes it.
fn type_attr(dataset: &Dataset, text: &str) -> Result<(), WriteError> {
    use hdf5::types::FixedAscii;
    macro_rules! fixed {
        ($($n:literal)*) => {
            match text.len() {
                $($n => {
                    let value = FixedAscii::<$n>::from_ascii(text.as_bytes())
                        .map_err(|e| WriteError(e.to_string()))?;
                    dataset
                        .new_attr::<FixedAscii<$n>>()
                        .create("type")?
                        .write_scalar(&value)?;
                })*
                _ => return Err(WriteError(format!("no type attribute for `{text}`"))),
            }
        };
    }
    fixed!(3 4 5 6 9 12 18);
    Ok(())
}
