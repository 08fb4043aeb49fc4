//! HDF5 files read in a child process.
//!
//! libhdf5 1.10 is not memory-safe on damaged files: a file with two bytes
//! changed can make it write out of bounds or dereference a wild pointer
//! (docs/reliability.md). So op2 reads HDF5 in a child, itself started with
//! the hidden command [`READER_COMMAND`]: the child gets the checked file
//! handle as its standard input (libhdf5 opens `/proc/self/fd/0`), its
//! memory limit as an argument and the [`Declared`] names in a temporary
//! file; it limits its own address space ([`CHILD_MEMORY`]) before anything
//! else, reads with [`h5::read`], and writes the [`Raw`] data and the
//! [`Recorded`] problems to its standard output in the form below. A child
//! that is killed by a signal, exits with an error, runs out of its time
//! limit ([`time_limit`]) or its memory, or writes something that does not
//! decode is an E701 of the file; the parent reads
//! the child's output as untrusted (every length is checked against the
//! bytes that remain before anything is allocated for it, every count
//! against the program).
//!
//! The form: [`MAGIC`], then little-endian fields: `u8` tags, `u32` and
//! `u64` numbers, strings as a `u64` byte count and UTF-8 bytes, lists as
//! a `u64` count and their items.

use std::ffi::OsString;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use op2_analysis::model::ElementType;
use op2_analysis::value::Value;
use op2_syntax::Code;
use op2_syntax::ast::ScalarType;

use crate::h5::{self, Declared, Record, Recorded};
use crate::json::{Raw, RawDat, RawMap, Section, checked_set_size};
use crate::{Column, MAX_DAT_VALUES, MAX_MAP_TARGETS, NoProgress};

/// The first argument that makes `op2` an HDF5 reader (not listed by
/// `--help`: op2 starts it itself).
pub const READER_COMMAND: &str = "__read-hdf5";

/// The seconds a reader may take, whatever the file's size.
pub const CHILD_SECONDS: u64 = 60;

/// The bytes of the file per further second a reader may take.
pub const CHILD_BYTES_PER_SECOND: u64 = 8 << 20;

/// The address space a reader may use (`RLIMIT_AS`), in bytes: 2,560 MiB,
/// what it may legitimately hold and room for the process. Every dat value
/// the limits allow at 8 bytes ([`MAX_DAT_VALUES`], 1 GiB) and every map
/// target at 4 ([`MAX_MAP_TARGETS`], 512 MiB), each dataset read into a
/// vector reserved once for the values its header claims; 512 MiB for
/// problems (a map target that is not a `u32` keeps its text, some 80 bytes:
/// about six million of them); and 512 MiB for the process itself: its
/// code and libraries, libhdf5's metadata and chunk caches, a chunk being
/// decompressed (at most [`h5::MAX_CHUNK_BYTES`] when valid) and a block of
/// rows. The output is written as it is made, not held. libhdf5 allocates
/// by what the file says (a deflated chunk is decompressed until its stream
/// ends, whatever the chunk's size): past the limit an allocation fails,
/// and the read ends with an E701 instead of taking the machine's memory.
pub const CHILD_MEMORY: u64 = (512 << 20) + MAX_DAT_VALUES * 8 + MAX_MAP_TARGETS * 4 + (512 << 20);

/// The most a reader may write: every dat value and map target the limits
/// allow, each target with a bad value's text, and room for problems.
const MAX_OUTPUT: u64 = MAX_DAT_VALUES * 8 + MAX_MAP_TARGETS * 48 + (1 << 26);

/// The most of a reader's standard error kept, for the message.
const MAX_STDERR: u64 = 1 << 16;

/// The start of a reader's output.
const MAGIC: &[u8; 8] = b"op2-h5r1";

static READER: OnceLock<PathBuf> = OnceLock::new();

/// Makes [`crate::read_file`] read HDF5 files in a child process running
/// `executable` (op2 itself) with [`READER_COMMAND`]; called once, at start.
/// Without it HDF5 files are read in process.
pub fn set_hdf5_reader(executable: PathBuf) {
    let _ = READER.set(executable);
}

/// The reader executable, when one is set (and the system gives a process
/// a path to its standard input).
pub(crate) fn reader() -> Option<&'static Path> {
    if cfg!(target_os = "linux") {
        READER.get().map(PathBuf::as_path)
    } else {
        None
    }
}

/// The time a reader of a file of `bytes` bytes may take.
pub fn time_limit(bytes: u64) -> Duration {
    Duration::from_secs(CHILD_SECONDS + bytes / CHILD_BYTES_PER_SECOND)
}

/// The hidden command: `args` are those after [`READER_COMMAND`], the
/// memory limit in bytes and the description file's path. Limits its own
/// address space to that first, then reads the HDF5 file on standard input
/// and writes the result to standard output.
pub fn reader_main(args: &[OsString]) -> ExitCode {
    let [memory, description] = args else {
        let _ = writeln!(
            io::stderr(),
            "usage: op2 {READER_COMMAND} MEMORY-LIMIT-BYTES DESCRIPTION < FILE.h5"
        );
        return ExitCode::from(2);
    };
    let Some(memory) = memory.to_str().and_then(|m| m.parse::<u64>().ok()) else {
        let _ = writeln!(
            io::stderr(),
            "op2 {READER_COMMAND}: {memory:?} is not a memory limit in bytes"
        );
        return ExitCode::from(2);
    };
    // Before libhdf5 (or anything else) allocates: no read without it.
    if let Err(error) = limit_memory(memory) {
        let _ = writeln!(
            io::stderr(),
            "op2 {READER_COMMAND}: the memory limit cannot be set: {error}"
        );
        return ExitCode::from(2);
    }
    let declared = match std::fs::read(description)
        .map_err(|e| e.to_string())
        .and_then(|bytes| decode_declared(&bytes))
    {
        Ok(declared) => declared,
        Err(error) => {
            let _ = writeln!(
                io::stderr(),
                "op2 {READER_COMMAND}: the description cannot be read: {error}"
            );
            return ExitCode::from(2);
        }
    };
    let mut recorded = Recorded::default();
    let raw = h5::read(
        Path::new("/proc/self/fd/0"),
        &declared,
        &mut recorded,
        &mut NoProgress,
    );
    name_the_limit(&mut recorded, memory);
    let mut stdout = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    match write_result(raw.as_ref(), &recorded, &mut stdout).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(2),
    }
}

/// Limits this process's address space to `bytes` (or to its hard limit,
/// when that is lower), soft and hard limit both.
#[cfg(unix)]
fn limit_memory(bytes: u64) -> io::Result<()> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let bytes = getrlimit(Resource::As)
        .maximum
        .map_or(bytes, |hard| hard.min(bytes));
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some(bytes),
            maximum: Some(bytes),
        },
    )?;
    Ok(())
}

/// No limit where the system has no `setrlimit` (the reader runs only on
/// Linux: [`reader`]).
#[cfg(not(unix))]
fn limit_memory(_bytes: u64) -> io::Result<()> {
    Ok(())
}

/// Adds the memory limit to the problems where libhdf5 said an allocation
/// failed (it then fails the read it was doing, and says so in words such
/// as "memory allocation failed for deflate uncompression").
fn name_the_limit(recorded: &mut Recorded, memory: u64) {
    for record in &mut recorded.records {
        let (Record::Entry { message, .. } | Record::Unknown { message, .. }) = record;
        if message.contains("memory allocation failed") {
            message.push_str(&format!(
                " (the reader process's memory limit is {} MiB)",
                memory >> 20
            ));
        }
    }
}

/// True when `line`, of a reader's standard error, is what Rust writes
/// before aborting on an allocation that failed.
fn allocation_failed(line: &str) -> bool {
    line.starts_with("memory allocation of ") && line.ends_with(" bytes failed")
}

/// Reads the HDF5 file `file` (checked) in a child running `executable`,
/// killed after `limit` ([`time_limit`] of the file's size), its address
/// space limited to `memory` bytes ([`CHILD_MEMORY`]); `Err` says why the
/// child gave no result.
pub(crate) fn read_in_child(
    executable: &Path,
    file: &std::fs::File,
    limit: Duration,
    memory: u64,
    declared: &Declared,
) -> Result<(Option<Raw>, Recorded), String> {
    let mut description =
        tempfile::NamedTempFile::new().map_err(|e| format!("no temporary file: {e}"))?;
    description
        .write_all(&encode_declared(declared))
        .and_then(|()| description.flush())
        .map_err(|e| format!("no temporary file: {e}"))?;
    let stdin = file
        .try_clone()
        .map_err(|e| format!("the file cannot be passed on: {e}"))?;
    let mut child = Command::new(executable)
        .arg(READER_COMMAND)
        .arg(memory.to_string())
        .arg(description.path())
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("the reader process cannot be started: {e}"))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let too_much = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let output = std::thread::spawn({
        let too_much = too_much.clone();
        move || -> io::Result<Vec<u8>> {
            let mut bytes = Vec::new();
            if let Some(stdout) = stdout {
                stdout.take(MAX_OUTPUT + 1).read_to_end(&mut bytes)?;
            }
            if bytes.len() as u64 > MAX_OUTPUT {
                too_much.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Ok(bytes)
        }
    });
    let errors = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut stderr) = stderr {
            let _ = (&mut stderr).take(MAX_STDERR).read_to_end(&mut bytes);
            let _ = io::copy(&mut stderr, &mut io::sink());
        }
        bytes
    });
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(error) => break Err(format!("the reader process cannot be waited for: {error}")),
        }
        // Output over the limit stops being read: the child would block.
        let over = too_much.load(std::sync::atomic::Ordering::Relaxed);
        if over || Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break Err(if over {
                format!("the reader process wrote more than {MAX_OUTPUT} bytes; stopped")
            } else {
                format!(
                    "the reader process did not finish within {:.1} s; stopped",
                    limit.as_secs_f64()
                )
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    // A child stopped is not waited for further: its pipes' readers are
    // left to end on their own.
    let status = status?;
    let output = output.join();
    let errors = errors.join().unwrap_or_default();
    let errors = String::from_utf8_lossy(&errors);
    let last_line = errors
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| format!(" ({})", line.chars().take(200).collect::<String>()))
        .unwrap_or_default();
    if !status.success() {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(signal) = status.signal() {
                // The line Rust writes, followed by a backtrace when the
                // environment asks for one.
                let failed = errors.lines().map(str::trim).find(|l| allocation_failed(l));
                if signal == libc::SIGABRT
                    && let Some(line) = failed
                {
                    return Err(format!(
                        "the reader process ran out of its memory limit of {} MiB ({})",
                        memory >> 20,
                        line.chars().take(200).collect::<String>()
                    ));
                }
                return Err(format!("killed by signal {signal}{last_line}"));
            }
        }
        return Err(match status.code() {
            Some(code) => format!("the reader process exited with status {code}{last_line}"),
            None => format!("the reader process failed{last_line}"),
        });
    }
    let output = match output {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => return Err(format!("the reader's output cannot be read: {error}")),
        Err(_) => return Err("the reader's output cannot be read".to_owned()),
    };
    decode_result(&output, declared)
        .map_err(|error| format!("the reader's output is malformed: {error}"))
}

// ---------------------------------------------------------------------------
// Writing.

/// The form written to `sink` as it is made (a reader does not hold its
/// output: [`CHILD_MEMORY`]); the first error writing stops the writing and
/// is kept.
struct Out<W: Write> {
    sink: W,
    error: Option<io::Error>,
}

impl<W: Write> Out<W> {
    fn new(mut sink: W) -> Out<W> {
        let error = sink.write_all(MAGIC).err();
        Out { sink, error }
    }
    fn finish(self) -> io::Result<W> {
        match self.error {
            None => Ok(self.sink),
            Some(error) => Err(error),
        }
    }
    fn bytes(&mut self, bytes: &[u8]) {
        if self.error.is_none()
            && let Err(error) = self.sink.write_all(bytes)
        {
            self.error = Some(error);
        }
    }
    fn u8(&mut self, value: u8) {
        self.bytes(&[value]);
    }
    fn u32(&mut self, value: u32) {
        self.bytes(&value.to_le_bytes());
    }
    fn u64(&mut self, value: u64) {
        self.bytes(&value.to_le_bytes());
    }
    fn len(&mut self, len: usize) {
        self.u64(len as u64);
    }
    fn str(&mut self, text: &str) {
        self.len(text.len());
        self.bytes(text.as_bytes());
    }
    fn ty(&mut self, ty: ElementType) {
        self.u8(scalar_tag(ty.scalar));
        self.u32(ty.dimension);
    }
    fn section(&mut self, section: Section) {
        self.u8(section_tag(section));
    }
    fn value(&mut self, value: Value) {
        self.u8(scalar_tag(value.ty()));
        let bits = match value {
            Value::Double(x) => x.to_bits(),
            Value::Float(x) => u64::from(x.to_bits()),
            Value::Int(x) => x as u32 as u64,
            Value::Uint(x) => u64::from(x),
            Value::Ll(x) => x as u64,
            Value::Ull(x) => x,
            Value::Bool(x) => u64::from(x),
        };
        self.u64(bits);
    }
}

const SCALARS: [ScalarType; 7] = [
    ScalarType::Double,
    ScalarType::Float,
    ScalarType::Int,
    ScalarType::Uint,
    ScalarType::Ll,
    ScalarType::Ull,
    ScalarType::Bool,
];

const SECTIONS: [Section; 5] = [
    Section::Sets,
    Section::Maps,
    Section::Dats,
    Section::Consts,
    Section::Globals,
];

fn scalar_tag(ty: ScalarType) -> u8 {
    SCALARS.iter().position(|&t| t == ty).unwrap_or(0) as u8
}

fn section_tag(section: Section) -> u8 {
    SECTIONS.iter().position(|&s| s == section).unwrap_or(0) as u8
}

pub(crate) fn encode_declared(declared: &Declared) -> Vec<u8> {
    let mut out = Out::new(Vec::new());
    out.len(declared.sets.len());
    for name in &declared.sets {
        out.str(name);
    }
    out.len(declared.maps.len());
    for (name, arity) in &declared.maps {
        out.str(name);
        out.u32(*arity);
    }
    for entries in [&declared.dats, &declared.consts, &declared.globals] {
        out.len(entries.len());
        for (name, ty) in entries {
            out.str(name);
            out.ty(*ty);
        }
    }
    out.len(declared.others.len());
    for name in &declared.others {
        out.str(name);
    }
    // Writing to a vector does not fail.
    out.finish().unwrap_or_default()
}

/// What a reader writes, as bytes.
#[cfg(test)]
pub(crate) fn encode_result(raw: Option<&Raw>, recorded: &Recorded) -> Vec<u8> {
    let mut bytes = Vec::new();
    // Writing to a vector does not fail.
    let _ = write_result(raw, recorded, &mut bytes);
    bytes
}

/// Writes what a reader writes to `sink`.
pub(crate) fn write_result(
    raw: Option<&Raw>,
    recorded: &Recorded,
    sink: impl Write,
) -> io::Result<()> {
    let mut out = Out::new(sink);
    match raw {
        None => out.u8(0),
        Some(raw) => {
            out.u8(1);
            encode_raw(&mut out, raw);
        }
    }
    out.len(recorded.records.len());
    for record in &recorded.records {
        match record {
            Record::Entry {
                code,
                section,
                id,
                indices,
                message,
            } => {
                out.u8(0);
                out.str(code.as_str());
                out.section(*section);
                out.u32(*id);
                out.len(indices.len());
                for &index in indices {
                    out.u64(index);
                }
                out.str(message);
            }
            Record::Unknown {
                code,
                path,
                message,
            } => {
                out.u8(1);
                out.str(code.as_str());
                out.str(path);
                out.str(message);
            }
        }
    }
    out.len(recorded.counts.len());
    for ((section, id, code), count) in &recorded.counts {
        out.section(*section);
        out.u32(*id);
        out.str(code.as_str());
        out.u64(*count);
    }
    out.finish().map(drop)
}

fn encode_raw<W: Write>(out: &mut Out<W>, raw: &Raw) {
    out.len(raw.sets.len());
    for set in &raw.sets {
        match set {
            None => out.u8(0),
            Some(None) => out.u8(1),
            Some(Some(size)) => {
                out.u8(2);
                out.u32(*size);
            }
        }
    }
    out.len(raw.maps.len());
    for map in &raw.maps {
        let Some(map) = map else {
            out.u8(0);
            continue;
        };
        out.u8(1);
        out.u64(map.rows);
        out.u8(u8::from(map.malformed));
        out.len(map.targets.len());
        for &target in &map.targets {
            out.u32(target);
        }
        out.len(map.bad.len());
        for (row, column, text) in &map.bad {
            out.u64(*row);
            out.u64(*column);
            out.str(text);
        }
    }
    out.len(raw.dats.len());
    for dat in &raw.dats {
        let Some(dat) = dat else {
            out.u8(0);
            continue;
        };
        out.u8(1);
        out.u64(dat.rows);
        out.u8(u8::from(dat.malformed));
        out.u8(scalar_tag(dat.column.ty()));
        out.len(dat.column.len());
        match &dat.column {
            Column::Double(v) => v.iter().for_each(|x| out.bytes(&x.to_le_bytes())),
            Column::Float(v) => v.iter().for_each(|x| out.bytes(&x.to_le_bytes())),
            Column::Int(v) => v.iter().for_each(|x| out.bytes(&x.to_le_bytes())),
            Column::Uint(v) => v.iter().for_each(|x| out.bytes(&x.to_le_bytes())),
            Column::Ll(v) => v.iter().for_each(|x| out.bytes(&x.to_le_bytes())),
            Column::Ull(v) => v.iter().for_each(|x| out.bytes(&x.to_le_bytes())),
            Column::Bool(v) => v.iter().for_each(|x| out.u8(u8::from(*x))),
        }
    }
    for values in [&raw.consts, &raw.globals] {
        out.len(values.len());
        for entry in values {
            let Some(entry) = entry else {
                out.u8(0);
                continue;
            };
            out.u8(1);
            out.len(entry.len());
            for &value in entry {
                out.value(value);
            }
        }
    }
    out.len(raw.malformed.len());
    for &section in &raw.malformed {
        out.section(section);
    }
}

// ---------------------------------------------------------------------------
// Reading, of untrusted bytes.

struct In<'a> {
    bytes: &'a [u8],
}

type Decoded<T> = Result<T, String>;

impl<'a> In<'a> {
    fn take(&mut self, n: usize) -> Decoded<&'a [u8]> {
        if n > self.bytes.len() {
            return Err(format!("{n} bytes expected, {} remain", self.bytes.len()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Decoded<[u8; N]> {
        let mut array = [0; N];
        array.copy_from_slice(self.take(N)?);
        Ok(array)
    }
    fn u8(&mut self) -> Decoded<u8> {
        Ok(self.array::<1>()?[0])
    }
    fn bool(&mut self) -> Decoded<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(format!("{other} is not a truth value")),
        }
    }
    fn u32(&mut self) -> Decoded<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Decoded<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A count of items of at least `item` bytes each, checked against the
    /// bytes that remain before anything is allocated for them.
    fn len(&mut self, item: usize) -> Decoded<usize> {
        let count = self.u64()?;
        let remain = self.bytes.len() as u64;
        match count.checked_mul(item.max(1) as u64) {
            Some(needed) if needed <= remain => Ok(count as usize),
            _ => Err(format!(
                "a count of {count} items of {item} bytes, but {remain} bytes remain"
            )),
        }
    }
    /// A count that must be `expected` (a number of declarations).
    fn count(&mut self, expected: usize, what: &str) -> Decoded<()> {
        let count = self.u64()?;
        if count != expected as u64 {
            return Err(format!(
                "{count} {what}, but the program declares {expected}"
            ));
        }
        Ok(())
    }
    fn str(&mut self) -> Decoded<String> {
        let len = self.len(1)?;
        String::from_utf8(self.take(len)?.to_vec()).map_err(|_| "a string is not UTF-8".to_owned())
    }
    fn code(&mut self) -> Decoded<Code> {
        let text = self.str()?;
        Code::parse(&text).ok_or_else(|| format!("{text:?} is not a code"))
    }
    fn scalar(&mut self) -> Decoded<ScalarType> {
        let tag = self.u8()?;
        SCALARS
            .get(tag as usize)
            .copied()
            .ok_or_else(|| format!("{tag} is not a type"))
    }
    fn section(&mut self) -> Decoded<Section> {
        let tag = self.u8()?;
        SECTIONS
            .get(tag as usize)
            .copied()
            .ok_or_else(|| format!("{tag} is not a section"))
    }
    fn ty(&mut self) -> Decoded<ElementType> {
        Ok(ElementType {
            scalar: self.scalar()?,
            dimension: self.u32()?,
        })
    }
    fn value(&mut self) -> Decoded<Value> {
        let ty = self.scalar()?;
        let bits = self.u64()?;
        Ok(match ty {
            ScalarType::Double => Value::Double(f64::from_bits(bits)),
            ScalarType::Float => Value::Float(f32::from_bits(bits as u32)),
            ScalarType::Int => Value::Int(bits as u32 as i32),
            ScalarType::Uint => Value::Uint(bits as u32),
            ScalarType::Ll => Value::Ll(bits as i64),
            ScalarType::Ull => Value::Ull(bits),
            ScalarType::Bool => Value::Bool(bits != 0),
        })
    }
    fn magic(&mut self) -> Decoded<()> {
        if self.take(MAGIC.len()).ok() != Some(&MAGIC[..]) {
            return Err("it does not start as a reader's output does".to_owned());
        }
        Ok(())
    }
    fn end(&self) -> Decoded<()> {
        if !self.bytes.is_empty() {
            return Err(format!("{} bytes follow the end", self.bytes.len()));
        }
        Ok(())
    }
}

pub(crate) fn decode_declared(bytes: &[u8]) -> Decoded<Declared> {
    let mut input = In { bytes };
    input.magic()?;
    let mut declared = Declared::default();
    for _ in 0..input.len(8)? {
        declared.sets.push(input.str()?);
    }
    for _ in 0..input.len(12)? {
        declared.maps.push((input.str()?, input.u32()?));
    }
    for entries in [
        &mut declared.dats,
        &mut declared.consts,
        &mut declared.globals,
    ] {
        for _ in 0..input.len(13)? {
            entries.push((input.str()?, input.ty()?));
        }
    }
    for _ in 0..input.len(8)? {
        declared.others.push(input.str()?);
    }
    input.end()?;
    Ok(declared)
}

/// The reader's output, checked against what the program declares.
pub(crate) fn decode_result(bytes: &[u8], declared: &Declared) -> Decoded<(Option<Raw>, Recorded)> {
    let mut input = In { bytes };
    input.magic()?;
    let raw = match input.u8()? {
        0 => None,
        1 => Some(decode_raw(&mut input, declared)?),
        other => return Err(format!("{other} is not a tag")),
    };
    let mut records = Vec::new();
    for _ in 0..input.len(1)? {
        records.push(match input.u8()? {
            0 => {
                let code = input.code()?;
                let section = input.section()?;
                let id = input.u32()?;
                check_id(declared, section, id)?;
                let count = input.len(8)?;
                let mut indices = Vec::with_capacity(count);
                for _ in 0..count {
                    indices.push(input.u64()?);
                }
                Record::Entry {
                    code,
                    section,
                    id,
                    indices,
                    message: input.str()?,
                }
            }
            1 => Record::Unknown {
                code: input.code()?,
                path: input.str()?,
                message: input.str()?,
            },
            other => return Err(format!("{other} is not a tag")),
        });
    }
    let mut counts = Vec::new();
    for _ in 0..input.len(21)? {
        let section = input.section()?;
        let id = input.u32()?;
        check_id(declared, section, id)?;
        let code = input.code()?;
        counts.push(((section, id, code), input.u64()?));
    }
    input.end()?;
    Ok((raw, Recorded::from_parts(records, counts)))
}

fn check_id(declared: &Declared, section: Section, id: u32) -> Decoded<()> {
    let count = match section {
        Section::Sets => declared.sets.len(),
        Section::Maps => declared.maps.len(),
        Section::Dats => declared.dats.len(),
        Section::Consts => declared.consts.len(),
        Section::Globals => declared.globals.len(),
    };
    if id as usize >= count {
        return Err(format!("entry {id} of {} is not declared", section.key()));
    }
    Ok(())
}

fn decode_raw(input: &mut In<'_>, declared: &Declared) -> Decoded<Raw> {
    let mut raw = Raw {
        sets: Vec::with_capacity(declared.sets.len()),
        maps: Vec::with_capacity(declared.maps.len()),
        dats: Vec::with_capacity(declared.dats.len()),
        consts: Vec::with_capacity(declared.consts.len()),
        globals: Vec::with_capacity(declared.globals.len()),
        malformed: Vec::new(),
    };
    input.count(declared.sets.len(), "sets")?;
    for _ in &declared.sets {
        raw.sets.push(match input.u8()? {
            0 => None,
            1 => Some(None),
            2 => {
                let size = input.u32()?;
                checked_set_size(u64::from(size))?;
                Some(Some(size))
            }
            other => return Err(format!("{other} is not a tag")),
        });
    }
    input.count(declared.maps.len(), "maps")?;
    for (name, arity) in &declared.maps {
        if !input.bool()? {
            raw.maps.push(None);
            continue;
        }
        let rows = input.u64()?;
        let malformed = input.bool()?;
        let count = input.len(4)?;
        if !malformed && rows.checked_mul(u64::from((*arity).max(1))) != Some(count as u64) {
            return Err(format!("map `{name}` has {count} targets for {rows} rows"));
        }
        let mut targets = Vec::with_capacity(count);
        for _ in 0..count {
            targets.push(input.u32()?);
        }
        let mut bad = Vec::new();
        for _ in 0..input.len(24)? {
            bad.push((input.u64()?, input.u64()?, input.str()?));
        }
        raw.maps.push(Some(RawMap {
            targets,
            rows,
            bad,
            malformed,
        }));
    }
    input.count(declared.dats.len(), "dats")?;
    for (name, ty) in &declared.dats {
        if !input.bool()? {
            raw.dats.push(None);
            continue;
        }
        let rows = input.u64()?;
        let malformed = input.bool()?;
        let scalar = input.scalar()?;
        if scalar != ty.scalar {
            return Err(format!("dat `{name}` holds values of type `{scalar}`"));
        }
        let width = match scalar {
            ScalarType::Double | ScalarType::Ll | ScalarType::Ull => 8,
            ScalarType::Float | ScalarType::Int | ScalarType::Uint => 4,
            ScalarType::Bool => 1,
        };
        let count = input.len(width)?;
        if !malformed && rows.checked_mul(u64::from(ty.dimension.max(1))) != Some(count as u64) {
            return Err(format!("dat `{name}` has {count} values for {rows} rows"));
        }
        let values = input.take(count * width)?;
        fn each<const N: usize, T>(values: &[u8], from: fn([u8; N]) -> T) -> Vec<T> {
            values
                .chunks_exact(N)
                .map(|chunk| {
                    let mut array = [0; N];
                    array.copy_from_slice(chunk);
                    from(array)
                })
                .collect()
        }
        let column = match scalar {
            ScalarType::Double => Column::Double(each(values, f64::from_le_bytes)),
            ScalarType::Float => Column::Float(each(values, f32::from_le_bytes)),
            ScalarType::Int => Column::Int(each(values, i32::from_le_bytes)),
            ScalarType::Uint => Column::Uint(each(values, u32::from_le_bytes)),
            ScalarType::Ll => Column::Ll(each(values, i64::from_le_bytes)),
            ScalarType::Ull => Column::Ull(each(values, u64::from_le_bytes)),
            ScalarType::Bool => Column::Bool(values.iter().map(|&b| b != 0).collect()),
        };
        raw.dats.push(Some(RawDat {
            column,
            rows,
            malformed,
        }));
    }
    for (entries, values, what) in [
        (&declared.consts, &mut raw.consts, "consts"),
        (&declared.globals, &mut raw.globals, "globals"),
    ] {
        input.count(entries.len(), what)?;
        for (name, ty) in entries {
            if !input.bool()? {
                values.push(None);
                continue;
            }
            let count = input.len(9)?;
            if count != 0 && count as u64 != u64::from(ty.dimension) {
                return Err(format!("`{name}` has {count} values"));
            }
            let mut read = Vec::with_capacity(count);
            for _ in 0..count {
                let value = input.value()?;
                if value.ty() != ty.scalar {
                    return Err(format!("`{name}` holds a value of type `{}`", value.ty()));
                }
                read.push(value);
            }
            values.push(Some(read));
        }
    }
    for _ in 0..input.len(1)? {
        raw.malformed.push(input.section()?);
    }
    Ok(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> Declared {
        Declared {
            sets: vec!["s".to_owned()],
            maps: vec![("m".to_owned(), 2)],
            dats: vec![(
                "x".to_owned(),
                ElementType {
                    scalar: ScalarType::Float,
                    dimension: 2,
                },
            )],
            consts: vec![(
                "c".to_owned(),
                ElementType {
                    scalar: ScalarType::Ll,
                    dimension: 1,
                },
            )],
            globals: Vec::new(),
            others: vec!["k".to_owned()],
        }
    }

    fn result() -> (Raw, Recorded) {
        let raw = Raw {
            sets: vec![Some(Some(3))],
            maps: vec![Some(RawMap {
                targets: vec![0, 1, 2, crate::json::BAD_TARGET, 1, 0],
                rows: 3,
                bad: vec![(1, 1, "-4".to_owned())],
                malformed: false,
            })],
            dats: vec![Some(RawDat {
                column: Column::Float(vec![1.0, f32::NAN, 3.0, 4.0, 5.0, -0.0]),
                rows: 3,
                malformed: false,
            })],
            consts: vec![Some(vec![Value::Ll(-7)])],
            globals: Vec::new(),
            malformed: Vec::new(),
        };
        let mut recorded = Recorded::default();
        for row in 0..60 {
            recorded.report(Code::E701, Section::Dats, 0, &[row, 1], || {
                format!("row {row}")
            });
        }
        recorded.report_unknown(Code::W705, "/y".to_owned(), "unknown".to_owned());
        (raw, recorded)
    }

    #[test]
    fn what_a_reader_writes_reads_back_the_same() {
        let (raw, recorded) = result();
        let bytes = encode_result(Some(&raw), &recorded);
        let (back, back_recorded) = decode_result(&bytes, &declared()).unwrap();
        let back = back.unwrap();
        // `Raw` compares by its encoding (a NaN is not equal to itself).
        assert_eq!(encode_result(Some(&back), &back_recorded), bytes);
        assert_eq!(back_recorded, recorded);
        assert_eq!(back_recorded.records.len(), 51);
        assert_eq!(
            back_recorded.counts,
            vec![((Section::Dats, 0, Code::E701), 60)]
        );
        assert_eq!(
            decode_declared(&encode_declared(&declared())).unwrap(),
            declared()
        );
    }

    #[test]
    fn every_truncation_of_a_reader_output_is_an_error() {
        let (raw, recorded) = result();
        let bytes = encode_result(Some(&raw), &recorded);
        for end in 0..bytes.len() {
            assert!(decode_result(&bytes[..end], &declared()).is_err(), "{end}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_result(&longer, &declared()).is_err());
    }

    #[test]
    fn output_that_disagrees_with_the_program_is_an_error() {
        let (mut raw, recorded) = result();
        // Fewer targets than rows times arity.
        if let Some(Some(map)) = raw.maps.first_mut() {
            map.targets.pop();
        }
        let bytes = encode_result(Some(&raw), &recorded);
        let error = decode_result(&bytes, &declared()).unwrap_err();
        assert!(
            error.contains("map `m` has 5 targets for 3 rows"),
            "{error}"
        );
        // A dat of another type than declared.
        let (mut raw, recorded) = result();
        raw.dats[0] = Some(RawDat {
            column: Column::Double(vec![0.0; 6]),
            rows: 3,
            malformed: false,
        });
        let bytes = encode_result(Some(&raw), &recorded);
        assert!(decode_result(&bytes, &declared()).is_err());
        // A set larger than a set may be.
        let (mut raw, recorded) = result();
        raw.sets[0] = Some(Some(u32::MAX));
        let bytes = encode_result(Some(&raw), &recorded);
        assert!(decode_result(&bytes, &declared()).is_err());
    }

    #[test]
    fn an_allocation_libhdf5_reports_failed_names_the_memory_limit() {
        let mut recorded = Recorded::default();
        recorded.report(Code::E701, Section::Dats, 0, &[0], || {
            "rows 0 to 0 cannot be read: H5Dread(): can't read data: memory allocation failed for deflate uncompression".to_owned()
        });
        recorded.report(Code::E701, Section::Dats, 0, &[1], || {
            "rows 1 to 1 cannot be read: H5Dread(): can't read data".to_owned()
        });
        name_the_limit(&mut recorded, 96 << 20);
        let messages: Vec<&str> = recorded
            .records
            .iter()
            .map(|record| match record {
                Record::Entry { message, .. } | Record::Unknown { message, .. } => message.as_str(),
            })
            .collect();
        assert_eq!(
            messages,
            [
                "rows 0 to 0 cannot be read: H5Dread(): can't read data: memory allocation failed for deflate uncompression (the reader process's memory limit is 96 MiB)",
                "rows 1 to 1 cannot be read: H5Dread(): can't read data",
            ]
        );
    }

    /// A reader that hangs (libhdf5 looping on a damaged file) is killed
    /// at its time limit, and that is the answer.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_reader_that_hangs_is_stopped_at_its_time_limit() {
        use std::os::unix::fs::PermissionsExt;
        let directory = tempfile::tempdir().unwrap();
        let reader = directory.path().join("reader");
        std::fs::write(&reader, "#!/bin/sh\nexec sleep 600\n").unwrap();
        std::fs::set_permissions(&reader, std::fs::Permissions::from_mode(0o755)).unwrap();
        let file = std::fs::File::open(&reader).unwrap();
        let started = Instant::now();
        let error = read_in_child(
            &reader,
            &file,
            Duration::from_millis(300),
            CHILD_MEMORY,
            &declared(),
        )
        .unwrap_err();
        assert_eq!(
            error,
            "the reader process did not finish within 0.3 s; stopped"
        );
        // Stopped, not waited for: far less than the child's 600 s.
        assert!(started.elapsed() < Duration::from_secs(60));
    }
}
