//! Writing instance data: what a file gave, in either format, atomically.
//!
//! [`write_file`] is `op2 instance convert`'s writer: it writes exactly the
//! entries the data was read with ([`InstanceData::given`] and the given
//! maps and dats), each in the type the program declares, so that JSON →
//! HDF5 → JSON gives back the same values and a file OP2's
//! `op_decl_dat_hdf5` accepts. Values the program supplied (initialisers,
//! const values) are not written.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use op2_analysis::model::Program;
use op2_analysis::value::Value;

use crate::h5::{self, WriteError};
use crate::temporary::Temporary;
use crate::{DatValues, Format, InstanceData};

/// Writes a file atomically: `write` fills a temporary file beside `path`
/// (given its path), which then replaces `path`. An existing `path` that
/// is not a regular file (a directory, a FIFO, a device, a symbolic link to
/// nothing) is left alone and is an error; a link to a regular file is
/// followed. On any error the temporary file is removed.
pub(crate) fn atomically(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), WriteError>,
) -> Result<(), WriteError> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = match std::fs::metadata(path) {
        Ok(metadata) if !metadata.is_file() => None,
        Ok(_) if is_link => Some(std::fs::canonicalize(path)?),
        Ok(_) => Some(path.to_path_buf()),
        Err(_) if is_link => None,
        Err(_) => Some(path.to_path_buf()),
    };
    let Some(path) = target else {
        return Err(WriteError::new(format!(
            "`{}` exists and is not a regular file; it is left alone",
            path.display()
        )));
    };
    let directory = crate::temporary::directory_of(&path);
    if !directory.is_dir() {
        return Err(WriteError::new(format!(
            "the directory `{}` does not exist",
            directory.display()
        )));
    }
    let temporary = Temporary::new(&directory, ".op2-")?;
    write(temporary.file.path())?;
    temporary.take_mode_and_owner_of(&path)?;
    temporary.file.as_file().sync_all()?;
    temporary.persist(&path)?;
    Ok(())
}

/// Writes what `data` was read with to `path`, in the format its name asks
/// for ([`Format::of_name`]: OP2's HDF5 layout for `.h5`, JSON otherwise),
/// atomically.
pub fn write_file(path: &Path, program: &Program, data: &InstanceData) -> Result<(), WriteError> {
    match Format::of_name(path) {
        Format::Hdf5 => atomically(path, |temporary| h5::write_data(temporary, program, data)),
        Format::Json => atomically(path, |temporary| {
            let file = std::fs::OpenOptions::new().write(true).open(temporary)?;
            let mut out = BufWriter::new(file);
            write_json(&mut out, program, data)?;
            out.into_inner().map_err(|e| e.into_error())?;
            Ok(())
        }),
    }
}

/// The JSON of language.md §9 for what `data` was read with: sections in
/// the order sets, maps, dats, consts, globals, declarations in the
/// program's order, a row per line, numbers with the fewest digits that
/// read back to the same value.
pub fn write_json(out: &mut dyn Write, program: &Program, data: &InstanceData) -> io::Result<()> {
    let mut json = JsonOut { out, sections: 0 };
    json.out.write_all(b"{")?;

    let sets = program
        .sets
        .iter()
        .enumerate()
        .filter(|(i, _)| data.given.sets.get(*i) == Some(&true))
        .map(|(i, s)| (s.name.as_str(), i));
    json.section("sets", sets, |out, i| write!(out, "{}", data.set_sizes[i]))?;

    let maps = program
        .maps
        .iter()
        .enumerate()
        .filter_map(|(i, m)| Some((m.name.as_str(), (m, data.maps[i].as_deref()?))));
    json.section("maps", maps, |out, (m, targets)| {
        let arity = m.arity.max(1) as usize;
        rows(out, targets.len() / arity, arity, true, |out, k| {
            write!(out, "{}", targets[k])
        })
    })?;

    let dats = program
        .dats
        .iter()
        .enumerate()
        .filter_map(|(i, d)| match &data.dats[i] {
            DatValues::Given(column) => Some((d.name.as_str(), (d, column))),
            DatValues::Uniform(_) => None,
        });
    json.section("dats", dats, |out, (d, column)| {
        let dim = d.ty.dimension.max(1) as usize;
        rows(out, column.len() / dim, dim, dim > 1, |out, k| {
            number(out, column.get(k))
        })
    })?;

    for (key, names, values, given) in [
        (
            "consts",
            program
                .consts
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            &data.consts,
            &data.given.consts,
        ),
        (
            "globals",
            program.globals.iter().map(|g| g.name.as_str()).collect(),
            &data.globals,
            &data.given.globals,
        ),
    ] {
        let entries = names
            .into_iter()
            .enumerate()
            .filter(|(i, _)| given.get(*i) == Some(&true))
            .map(|(i, name)| (name, i));
        json.section(key, entries, |out, i| match values[i].as_slice() {
            [one] => number(out, *one),
            many => {
                out.write_all(b"[")?;
                for (k, value) in many.iter().enumerate() {
                    if k > 0 {
                        out.write_all(b", ")?;
                    }
                    number(out, *value)?;
                }
                out.write_all(b"]")
            }
        })?;
    }
    json.out.write_all(b"\n}\n")
}

struct JsonOut<'a> {
    out: &'a mut dyn Write,
    sections: usize,
}

impl JsonOut<'_> {
    /// `"key": { "name": …, … }` when there are entries; nothing otherwise.
    fn section<'n, E>(
        &mut self,
        key: &str,
        entries: impl Iterator<Item = (&'n str, E)>,
        mut value: impl FnMut(&mut dyn Write, E) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut count = 0;
        for (name, entry) in entries {
            if count == 0 {
                let comma = if self.sections > 0 { "," } else { "" };
                write!(self.out, "{comma}\n  \"{key}\": {{")?;
            }
            let comma = if count > 0 { "," } else { "" };
            // Names are identifiers: nothing to escape.
            write!(self.out, "{comma}\n    \"{name}\": ")?;
            value(self.out, entry)?;
            count += 1;
        }
        if count > 0 {
            self.out.write_all(b"\n  }")?;
            self.sections += 1;
        }
        Ok(())
    }
}

/// `rows` rows of `width` values as a JSON list: a list per row when
/// `nested` (a line holding up to 16 values), else the values flat, ten to
/// a line.
fn rows(
    out: &mut dyn Write,
    rows: usize,
    width: usize,
    nested: bool,
    mut value: impl FnMut(&mut dyn Write, usize) -> io::Result<()>,
) -> io::Result<()> {
    let per_line = if nested { (16 / width).max(1) } else { 10 };
    out.write_all(b"[")?;
    for row in 0..rows {
        if row > 0 {
            out.write_all(b",")?;
        }
        if row % per_line == 0 {
            out.write_all(b"\n      ")?;
        } else {
            out.write_all(b" ")?;
        }
        if nested {
            out.write_all(b"[")?;
        }
        for k in 0..width {
            if k > 0 {
                out.write_all(b", ")?;
            }
            value(out, row * width + k)?;
        }
        if nested {
            out.write_all(b"]")?;
        }
    }
    if rows > 0 {
        out.write_all(b"\n    ")?;
    }
    out.write_all(b"]")
}

/// A value as JSON: integers exactly, floats with the fewest digits that
/// read back to the same value (in their own precision), `true`/`false`.
/// Instance data holds only finite values.
fn number(out: &mut dyn Write, value: Value) -> io::Result<()> {
    match value {
        Value::Double(x) => serde_json::to_writer(out, &x).map_err(io::Error::other),
        Value::Float(x) => {
            let shortest = serde_json::to_string(&x).map_err(io::Error::other)?;
            out.write_all(crate::float::float_text(x, shortest).as_bytes())
        }
        Value::Int(x) => write!(out, "{x}"),
        Value::Uint(x) => write!(out, "{x}"),
        Value::Ll(x) => write!(out, "{x}"),
        Value::Ull(x) => write!(out, "{x}"),
        Value::Bool(x) => write!(out, "{x}"),
    }
}
