//! A compilation database (`compile_commands.json`, as CMake and bear write
//! it): which flags each translation unit of the application is compiled
//! with, so that the capture and the preprocessor see each unit as its build
//! does.

use std::collections::BTreeMap;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::path::{Path, PathBuf};

/// The largest database read (a project of thousands of units writes a few
/// MiB).
pub const MAX_BYTES: u64 = 64 << 20;

/// The names a database is looked for under, in the directory the
/// application runs in, when none is given.
pub const FOUND_AS: &[&str] = &["compile_commands.json", "build/compile_commands.json"];

/// The flags of one translation unit that op2 import takes from its entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// `-I` and `-iquote` directories, absolute (relative ones are taken from
    /// the entry's `directory`), in order: where its `#include "…"` are
    /// looked for, after the including file's directory.
    pub include_dirs: Vec<PathBuf>,
    /// `-isystem` and `-idirafter` directories, absolute: given to the
    /// compiler, never read by the translation.
    pub system_dirs: Vec<PathBuf>,
    /// `-DNAME[=VALUE]` and `-UNAME`, in order (a later one undoes an
    /// earlier one).
    pub macros: Vec<String>,
    /// The last `-std=…` for C++ (`c++…`, `gnu++…`); the capture's `c++17`
    /// otherwise.
    pub std: Option<String>,
    /// `-include FILE`, absolute.
    pub includes: Vec<PathBuf>,
}

impl Flags {
    /// The compiler arguments these flags are, in the order the entry gives
    /// them (`-I` before `-isystem`, as the compiler searches them).
    pub fn arguments(&self) -> Vec<std::ffi::OsString> {
        let mut out: Vec<std::ffi::OsString> = Vec::new();
        for dir in &self.include_dirs {
            out.push("-I".into());
            out.push(dir.into());
        }
        for dir in &self.system_dirs {
            out.push("-isystem".into());
            out.push(dir.into());
        }
        out.extend(self.macros.iter().map(Into::into));
        for file in &self.includes {
            out.push("-include".into());
            out.push(file.into());
        }
        out
    }
}

/// One entry of the database.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its index in the database's array.
    pub index: usize,
    /// The source file, as the entry names it, joined to `directory`.
    pub file: PathBuf,
    /// The entry's `directory` (joined to the database's own directory when
    /// relative).
    pub directory: PathBuf,
    /// What op2 import takes from its command.
    pub flags: Flags,
}

/// A database, read.
#[derive(Debug, Clone)]
pub struct Database {
    /// Where it was read from, as given.
    pub path: PathBuf,
    /// Its entries, in order.
    pub entries: Vec<Entry>,
}

/// Reads the database at `path`: a regular file of at most [`MAX_BYTES`],
/// a JSON array of objects with `directory`, `file` and `command` or
/// `arguments`; an error names `path` and, within it, the JSON path.
pub fn read(path: &Path) -> Result<Database, String> {
    use op2_codegen::files::{ReadError, read_regular};
    let shown = path.display();
    // Opened without blocking (a FIFO named as the database is refused, not
    // waited on), examined, and read to at most the limit.
    let bytes = read_regular(path, MAX_BYTES).map_err(|error| match error {
        ReadError::TooLarge { .. } => format!(
            "`{shown}` is larger than the {} MiB op2 import reads of a compilation database",
            MAX_BYTES >> 20
        ),
        other => format!("cannot read `{shown}`: {other}"),
    })?;
    let base = path.parent().unwrap_or(Path::new(""));
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_owned());
    parse(path, &base, &bytes)
}

/// Parses a database's text (`path` names it in errors; a relative
/// `directory` is taken from `base`).
pub fn parse(path: &Path, base: &Path, bytes: &[u8]) -> Result<Database, String> {
    parse_counting(path, base, bytes, &mut 0)
}

/// The most words one entry's command (or `arguments`) may have, the
/// compiler's name included (a real build's have at most a few hundred).
pub const MAX_WORDS: usize = 4096;

/// The most paths one entry's flags may name: `-I`, `-iquote`, `-isystem`,
/// `-idirafter` and `-include` together (a real build names dozens). Each
/// `-I` directory is looked in for every `#include "…"` not found beside its
/// includer ([`crate::units`]).
pub const MAX_PATH_FLAGS: usize = 1024;

/// The most bytes of paths (each entry's `directory` and `file`, and the
/// paths of its flags, joined to its `directory`) and macros that op2
/// import keeps of one database, each counted as its length and
/// [`KEPT_OVERHEAD`] bytes: four times [`MAX_BYTES`]. A path joined to a
/// long `directory` is longer than its flag, so this is counted before each
/// is built.
pub const MAX_KEPT_BYTES: usize = 4 * (MAX_BYTES as usize);

/// What each path or macro kept counts against [`MAX_KEPT_BYTES`] besides
/// its length (its `String` or `PathBuf`).
pub const KEPT_OVERHEAD: usize = size_of::<PathBuf>();

/// The bytes kept of a database so far, against [`MAX_KEPT_BYTES`].
#[derive(Debug, Default)]
struct Kept {
    bytes: usize,
}

impl Kept {
    /// Counts a path or macro of `len` bytes, before it is built.
    fn take(&mut self, len: usize) -> Result<(), String> {
        self.bytes = self.bytes.saturating_add(len).saturating_add(KEPT_OVERHEAD);
        if self.bytes > MAX_KEPT_BYTES {
            return Err(format!(
                "the paths and macros op2 import keeps of the database come to more than {} MiB here (its directories joined to its paths), which is more than op2 import reads",
                MAX_KEPT_BYTES >> 20
            ));
        }
        Ok(())
    }

    /// `dir` joined to `path`, counted before it is built.
    fn join(&mut self, dir: &Path, path: &str) -> Result<PathBuf, String> {
        let len = if Path::new(path).is_absolute() {
            path.len()
        } else {
            dir.as_os_str().len() + 1 + path.len()
        };
        self.take(len)?;
        Ok(dir.join(path))
    }
}

/// [`parse`], adding to `steps` one for each entry, each argument and each
/// character of a command it splits ([`split_within`]) and each word of
/// the flags it reads: its work past the JSON parser, which a test holds to
/// at most one per byte of the database.
fn parse_counting(
    path: &Path,
    base: &Path,
    bytes: &[u8],
    steps: &mut usize,
) -> Result<Database, String> {
    parse_kept(path, base, bytes, steps, &mut Kept::default())
}

/// How the word of an index of an entry's command is named in an error (its
/// JSON path).
type Namer = Box<dyn Fn(usize) -> String>;

/// [`parse_counting`], counting what it keeps in `kept`. The JSON is read
/// as a stream (no tree of it is built): each entry is made as soon as it
/// is read, so that only one entry's words are held at a time, and only
/// the strings of the fields op2 import reads are kept.
fn parse_kept(
    path: &Path,
    base: &Path,
    bytes: &[u8],
    steps: &mut usize,
    kept: &mut Kept,
) -> Result<Database, String> {
    let shown = path.display();
    let at = |json_path: &str, what: String| format!("{shown}: `{json_path}`: {what}");
    let mut entries = Vec::new();
    let mut stopped = None;
    let make = |index: usize, raw: Option<RawEntry>, steps: &mut usize| -> Result<(), String> {
        let Some(raw) = raw else {
            return Err(at(&format!("[{index}]"), "expected an object".to_owned()));
        };
        // Counted as kept too: an entry's own record.
        kept.take(size_of::<Entry>())
            .map_err(|why| at(&format!("[{index}]"), why))?;
        let entry = make_entry(index, raw, base, steps, kept).map_err(|(p, why)| at(&p, why))?;
        entries.push(entry);
        Ok(())
    };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let read = DatabaseSeed {
        steps,
        make,
        stopped: &mut stopped,
    }
    .deserialize(&mut deserializer)
    .and_then(|array| deserializer.end().map(|()| array));
    match read {
        Ok(true) => Ok(Database {
            path: path.to_owned(),
            entries,
        }),
        Ok(false) => Err(at("", "expected an array of entries".to_owned())),
        Err(e) => Err(stopped.unwrap_or_else(|| {
            format!(
                "{shown}:{}:{}: not a compilation database: {e}",
                e.line(),
                e.column()
            )
        })),
    }
}

/// The entry `index` of the database from its fields as read, or the JSON
/// path and what is wrong there.
fn make_entry(
    index: usize,
    raw: RawEntry,
    base: &Path,
    steps: &mut usize,
    kept: &mut Kept,
) -> Result<Entry, (String, String)> {
    let string =
        |key: &str, value: Option<Option<String>>| -> Result<Option<String>, (String, String)> {
            match value {
                None => Ok(None),
                Some(Some(s)) => Ok(Some(s)),
                Some(None) => Err((format!("[{index}].{key}"), "expected a string".to_owned())),
            }
        };
    let required = |key: &str, value: Option<Option<String>>| -> Result<String, (String, String)> {
        string(key, value)?.ok_or_else(|| (format!("[{index}]"), format!("no `{key}`")))
    };
    let directory = required("directory", raw.directory)?;
    let file = required("file", raw.file)?;
    let directory = kept
        .join(base, &directory)
        .map_err(|why| (format!("[{index}].directory"), why))?;
    let file = kept
        .join(&directory, &file)
        .map_err(|why| (format!("[{index}].file"), why))?;
    let too_many = || format!("more than {MAX_WORDS} words, which op2 import does not read");
    let (words, name, json_path): (Vec<String>, Namer, &str) = match raw.arguments {
        Some(Arguments::Words(words)) => (
            words,
            Box::new(move |i| format!("[{index}].arguments[{i}]")),
            "arguments",
        ),
        Some(Arguments::NotString(i)) => {
            return Err((
                format!("[{index}].arguments[{i}]"),
                "expected a string".to_owned(),
            ));
        }
        Some(Arguments::TooMany) => return Err((format!("[{index}].arguments"), too_many())),
        Some(Arguments::NotArray) => {
            return Err((
                format!("[{index}].arguments"),
                "expected an array of strings".to_owned(),
            ));
        }
        None => {
            let command = string("command", raw.command)?.ok_or_else(|| {
                (
                    format!("[{index}]"),
                    "neither `arguments` nor `command`".to_owned(),
                )
            })?;
            let json_path = format!("[{index}].command");
            let words = split_within(&command, MAX_WORDS, steps)
                .map_err(|why| (json_path.clone(), why))?
                .ok_or_else(|| (json_path.clone(), too_many()))?;
            (
                words,
                Box::new(move |i| format!("[{index}].command (word {})", i + 1)),
                "command",
            )
        }
    };
    if words.is_empty() {
        return Err((
            format!("[{index}].{json_path}"),
            "empty: no compiler named".to_owned(),
        ));
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let flags = flags(&words, &*name, &directory, steps, kept)?;
    Ok(Entry {
        index,
        file,
        directory,
        flags,
    })
}

/// A JSON value read as a string, or `None` when it is another value
/// (skipped, whatever its size, without being kept).
struct MaybeString;

impl<'de> DeserializeSeed<'de> for MaybeString {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The `visit_…` methods of a visitor whose answer is `$other` for every
/// JSON value but those it defines itself (arrays and objects are skipped),
/// strings too with `str`.
macro_rules! otherwise {
    ($other:expr) => {
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
    ($other:expr, str) => {
        otherwise!($other);
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
}

/// Skips the rest of an array.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Skips the rest of an object.
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'de> Visitor<'de> for MaybeString {
    type Value = Option<String>;

    otherwise!(None);

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq)?;
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)?;
        Ok(None)
    }
}

/// An entry's `arguments`, as read.
enum Arguments {
    /// Its words, at most [`MAX_WORDS`].
    Words(Vec<String>),
    /// Not an array.
    NotArray,
    /// The index of its first element that is not a string.
    NotString(usize),
    /// More than [`MAX_WORDS`] elements (those past it are skipped).
    TooMany,
}

/// Reads an entry's `arguments`, adding to `steps` one for each element.
struct ArgumentsSeed<'s> {
    steps: &'s mut usize,
}

impl<'de> DeserializeSeed<'de> for ArgumentsSeed<'_> {
    type Value = Arguments;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ArgumentsSeed<'_> {
    type Value = Arguments;

    otherwise!(Arguments::NotArray, str);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)?;
        Ok(Arguments::NotArray)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut words = Vec::new();
        let mut i = 0;
        while let Some(word) = seq.next_element_seed(MaybeString)? {
            *self.steps += 1;
            let answer = match word {
                None => Arguments::NotString(i),
                Some(_) if i >= MAX_WORDS => Arguments::TooMany,
                Some(word) => {
                    words.push(word);
                    i += 1;
                    continue;
                }
            };
            skip_seq(seq)?;
            return Ok(answer);
        }
        Ok(Arguments::Words(words))
    }
}

/// An entry's fields that op2 import reads, as read: `None` when absent,
/// `Some(None)` when not a string.
#[derive(Default)]
struct RawEntry {
    directory: Option<Option<String>>,
    file: Option<Option<String>>,
    command: Option<Option<String>>,
    arguments: Option<Arguments>,
}

/// Reads an entry: `None` when it is not an object.
struct EntrySeed<'s> {
    steps: &'s mut usize,
}

impl<'de> DeserializeSeed<'de> for EntrySeed<'_> {
    type Value = Option<RawEntry>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed<'_> {
    type Value = Option<RawEntry>;

    otherwise!(None, str);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq)?;
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entry = RawEntry::default();
        // A key given twice: the last is taken, as a JSON object keeps it.
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "directory" => entry.directory = Some(map.next_value_seed(MaybeString)?),
                "file" => entry.file = Some(map.next_value_seed(MaybeString)?),
                "command" => entry.command = Some(map.next_value_seed(MaybeString)?),
                "arguments" => {
                    entry.arguments = Some(map.next_value_seed(ArgumentsSeed {
                        steps: &mut *self.steps,
                    })?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(entry))
    }
}

/// Reads the database's array, making each entry as soon as it is read
/// (`make`, given `None` for one that is not an object), so that only one
/// entry's words are held at a time. `Ok(false)` when the database is not
/// an array; an error of `make` is kept in `stopped`, and the reading
/// stopped.
struct DatabaseSeed<'s, F> {
    steps: &'s mut usize,
    make: F,
    stopped: &'s mut Option<String>,
}

impl<'de, F: FnMut(usize, Option<RawEntry>, &mut usize) -> Result<(), String>> DeserializeSeed<'de>
    for DatabaseSeed<'_, F>
{
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, F: FnMut(usize, Option<RawEntry>, &mut usize) -> Result<(), String>> Visitor<'de>
    for DatabaseSeed<'_, F>
{
    type Value = bool;

    otherwise!(false, str);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map)?;
        Ok(false)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut index = 0;
        loop {
            let Some(entry) = seq.next_element_seed(EntrySeed {
                steps: &mut *self.steps,
            })?
            else {
                return Ok(true);
            };
            *self.steps += 1;
            if let Err(why) = (self.make)(index, entry, self.steps) {
                *self.stopped = Some(why);
                return Err(de::Error::custom("stopped"));
            }
            index += 1;
        }
    }
}

/// The words of `command` as a POSIX shell splits them: blanks separate,
/// `'…'` is taken as it is, `"…"` with `\"`, `\\`, `\$` and `` \` ``
/// escaped, and `\` outside quotes takes the next character. One pass.
pub fn split(command: &str) -> Result<Vec<String>, String> {
    Ok(split_within(command, usize::MAX, &mut 0)?.unwrap_or_default())
}

/// [`split`], adding to `steps` one for each character it reads: its work,
/// which a test holds to one per character of the command; `None` as soon
/// as a word past the first `most` begins.
fn split_within(
    command: &str,
    most: usize,
    steps: &mut usize,
) -> Result<Option<Vec<String>>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.char_indices().inspect(|_| *steps += 1);
    while let Some((at, c)) = chars.next() {
        if !in_word && !matches!(c, ' ' | '\t' | '\n' | '\r') && words.len() >= most {
            return Ok(None);
        }
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, c)) => word.push(c),
                        None => return Err(format!("the `'` at byte {at} is not closed")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.next() {
                            Some((_, c @ ('"' | '\\' | '$' | '`'))) => word.push(c),
                            Some((_, '\n')) => {}
                            Some((_, c)) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("the `\"` at byte {at} is not closed")),
                        },
                        Some((_, c)) => word.push(c),
                        None => return Err(format!("the `\"` at byte {at} is not closed")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some((_, '\n')) => {}
                Some((_, c)) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(format!("the `\\` at byte {at} ends the command")),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(Some(words))
}

/// What op2 import takes from a command's `words` (the compiler first,
/// then its arguments): `-I`, `-iquote`, `-isystem`, `-idirafter`, `-D`,
/// `-U`, `-std=` and `-include`, each joined or separate from its value;
/// the rest (`-c`, `-o`, optimisation, warnings, the source) is the
/// build's own. At most [`MAX_PATH_FLAGS`] paths, each counted in `kept`
/// before it is built. An error names the argument's JSON path (`name` of
/// its index in `words`).
/// Adds to `steps` one for each word it looks at.
fn flags(
    words: &[&str],
    name: &dyn Fn(usize) -> String,
    directory: &Path,
    steps: &mut usize,
    kept: &mut Kept,
) -> Result<Flags, (String, String)> {
    let mut flags = Flags::default();
    let mut paths = 0usize;
    let mut i = 1;
    while i < words.len() {
        *steps += 1;
        let word = words[i];
        let at = i;
        i += 1;
        // The option with its value joined (`-Idir`) or in the next word.
        let mut value = |option: &str| -> Result<Option<&str>, (String, String)> {
            let Some(rest) = word.strip_prefix(option) else {
                return Ok(None);
            };
            if !rest.is_empty() {
                return Ok(Some(rest));
            }
            match words.get(i) {
                Some(next) => {
                    i += 1;
                    Ok(Some(next))
                }
                None => Err((
                    name(at),
                    format!("`{option}` is the last argument: its value is missing"),
                )),
            }
        };
        let mut path = |path: &str| -> Result<PathBuf, (String, String)> {
            paths += 1;
            if paths > MAX_PATH_FLAGS {
                return Err((
                    name(at),
                    format!(
                        "more than {MAX_PATH_FLAGS} include directories and files (`-I`, `-iquote`, `-isystem`, `-idirafter`, `-include`), which op2 import does not read"
                    ),
                ));
            }
            kept.join(directory, path).map_err(|why| (name(at), why))
        };
        if let Some(dir) = value("-iquote")? {
            flags.include_dirs.push(path(dir)?);
        } else if let Some(dir) = value("-isystem")? {
            flags.system_dirs.push(path(dir)?);
        } else if let Some(dir) = value("-idirafter")? {
            flags.system_dirs.push(path(dir)?);
        } else if let Some(file) = value("-include")? {
            flags.includes.push(path(file)?);
        } else if let Some(dir) = value("-I")? {
            flags.include_dirs.push(path(dir)?);
        } else if let Some(definition) = value("-D")? {
            kept.take(2 + definition.len())
                .map_err(|why| (name(at), why))?;
            flags.macros.push(format!("-D{definition}"));
        } else if let Some(macro_name) = value("-U")? {
            kept.take(2 + macro_name.len())
                .map_err(|why| (name(at), why))?;
            flags.macros.push(format!("-U{macro_name}"));
        } else if let Some(std) = word.strip_prefix("-std=").or(word.strip_prefix("--std=")) {
            if std.starts_with("c++") || std.starts_with("gnu++") {
                kept.take(std.len()).map_err(|why| (name(at), why))?;
                flags.std = Some(std.to_owned());
            }
        } else if word.starts_with('@') {
            return Err((
                name(at),
                format!("`{word}` is a response file, which op2 import does not read"),
            ));
        } else if matches!(word, "-o" | "-MF" | "-MT" | "-MQ" | "-x" | "-Xclang") {
            // Their value is no source and no flag of ours.
            i += 1;
        }
    }
    Ok(flags)
}

/// Where to look for a database when none is given: [`FOUND_AS`] in `dir`.
pub fn candidates(dir: &Path) -> Vec<PathBuf> {
    FOUND_AS.iter().map(|name| dir.join(name)).collect()
}

/// [`Database::by_file`]'s answer.
#[derive(Debug)]
pub struct ByFile<'a> {
    /// The first entry of each file, by identity.
    pub first: BTreeMap<PathBuf, &'a Entry>,
    /// The later entries of a file listed again with other flags, each with
    /// the first entry's index.
    pub again: Vec<(&'a Entry, usize)>,
}

impl Database {
    /// The first entry of each file, by `identity` (the file system's, so
    /// that `./a.cpp` and `a.cpp` are one), and the later entries of a file
    /// listed again with other flags (entry, the first entry's index). An
    /// entry whose file does not exist is an error naming it.
    pub fn by_file(
        &self,
        exists: &dyn Fn(&Path) -> bool,
        identity: &dyn Fn(&Path) -> PathBuf,
    ) -> Result<ByFile<'_>, String> {
        let mut first: BTreeMap<PathBuf, &Entry> = BTreeMap::new();
        let mut again = Vec::new();
        for entry in &self.entries {
            if !exists(&entry.file) {
                return Err(format!(
                    "{}: `[{}].file`: `{}` is not found",
                    self.path.display(),
                    entry.index,
                    entry.file.display()
                ));
            }
            match first.entry(identity(&entry.file)) {
                std::collections::btree_map::Entry::Vacant(slot) => {
                    slot.insert(entry);
                }
                std::collections::btree_map::Entry::Occupied(slot) => {
                    if slot.get().flags != entry.flags {
                        again.push((entry, slot.get().index));
                    }
                }
            }
        }
        Ok(ByFile { first, again })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_split_as_a_shell_splits_them() {
        assert_eq!(
            split(r#"c++ -DNAME="a b" -I'x y' z\ w "q\"\\\$" '' -c"#).unwrap(),
            ["c++", "-DNAME=a b", "-Ix y", "z w", "q\"\\$", "", "-c"]
        );
        assert_eq!(split("  a\t\tb\n").unwrap(), ["a", "b"]);
        assert_eq!(split(r#""a\nb""#).unwrap(), ["a\\nb"]);
        assert!(split("c++ 'x").unwrap_err().contains("`'` at byte 4"));
        assert!(split("c++ \"x").unwrap_err().contains("`\"` at byte 4"));
        assert!(split("c++ x\\").unwrap_err().contains("`\\` at byte 5"));
    }

    /// A FIFO or a device named as the database is refused at once, not
    /// waited on or read (`--compile-commands`, or one found beside the
    /// application).
    #[cfg(unix)]
    #[test]
    fn a_database_that_is_not_a_regular_file_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("compile_commands.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let error = read(&fifo).unwrap_err();
        assert!(
            error.contains("not a regular file (it is a FIFO)"),
            "{error}"
        );
        let error = read(Path::new("/dev/zero")).unwrap_err();
        assert!(
            error.contains("not a regular file (it is a character device)"),
            "{error}"
        );
    }

    #[test]
    fn flags_are_taken_joined_or_separate_and_paths_from_the_directory() {
        let text = r#"[{"directory": "/b", "file": "a.cpp",
            "arguments": ["c++", "-Iinc", "-I", "/abs", "-iquote", "q", "-isystem/sys",
                          "-DA=1", "-D", "B", "-UA", "-std=c++20", "-std=c99", "-include", "pre.h",
                          "-o", "-Inot", "-c", "a.cpp", "-O2"]},
            {"directory": "rel", "file": "/x/b.cpp", "command": "g++ -DQ=\"1 + 2\" -std=gnu++14 -c /x/b.cpp"}]"#;
        let db = parse(Path::new("cc.json"), Path::new("/base"), text.as_bytes()).unwrap();
        let a = &db.entries[0];
        assert_eq!(a.file, Path::new("/b/a.cpp"));
        assert_eq!(
            a.flags.include_dirs,
            [
                PathBuf::from("/b/inc"),
                PathBuf::from("/abs"),
                PathBuf::from("/b/q")
            ]
        );
        assert_eq!(a.flags.system_dirs, [PathBuf::from("/sys")]);
        assert_eq!(a.flags.macros, ["-DA=1", "-DB", "-UA"]);
        assert_eq!(a.flags.std.as_deref(), Some("c++20"));
        assert_eq!(a.flags.includes, [PathBuf::from("/b/pre.h")]);
        let b = &db.entries[1];
        assert_eq!(b.directory, Path::new("/base/rel"));
        assert_eq!(b.file, Path::new("/x/b.cpp"));
        assert_eq!(b.flags.macros, ["-DQ=1 + 2"]);
        assert_eq!(b.flags.std.as_deref(), Some("gnu++14"));
    }

    #[test]
    fn a_large_database_is_read_in_linear_time() {
        // Entries of `arguments`, and one `command` of many words (quoted,
        // escaped, `-I` separate from its value). Counted, not timed: each
        // character of the command is read once, and the whole takes at
        // most a step per byte.
        for n in [1_000, 100_000] {
            let mut text = String::from("[");
            for i in 0..n {
                text.push_str(&format!(
                    r#"{{"directory": "/d", "file": "f{i}.cpp", "arguments": ["c++", "-DN={i}", "-I", "inc", "-c", "f{i}.cpp"]}},"#
                ));
            }
            // Within the limits of one command: at most a thousand `-I` of
            // four words each.
            let reps = n.min(1_000);
            let long = r#"'-DA=1' \"-I\" inc x\\ y "#.repeat(reps);
            let command = format!("c++ {long}");
            text.push_str(&format!(
                r#"{{"directory": "/d", "file": "last.cpp", "command": "{command}"}}]"#
            ));
            let mut steps = 0;
            let db = parse_counting(
                Path::new("cc.json"),
                Path::new("/"),
                text.as_bytes(),
                &mut steps,
            )
            .unwrap();
            let by_file = db.by_file(&|_| true, &|p| p.to_owned()).unwrap();
            assert_eq!(by_file.first.len(), n + 1);
            assert!(by_file.again.is_empty());
            let last = &db.entries[n].flags;
            assert_eq!(last.macros.len(), reps);
            assert_eq!(last.include_dirs.len(), reps);
            assert_eq!(last.include_dirs[0], Path::new("/d/inc"));
            // The command as JSON holds `\"` and `\\` for `"` and `\`.
            let chars = command.replace("\\\"", "\"").replace("\\\\", "\\").len();
            // At least one each: a count that has stopped counting fails.
            assert!(
                (chars..=text.len()).contains(&steps),
                "{steps} steps for a database of {} bytes whose command has {chars}",
                text.len()
            );
        }
    }

    #[test]
    fn a_command_of_more_words_or_paths_than_the_limits_is_an_error_naming_it() {
        let error =
            |text: &str| parse(Path::new("cc.json"), Path::new("/"), text.as_bytes()).unwrap_err();
        // The compiler and `MAX_WORDS` arguments: one word too many.
        let command = format!("c++{}", " -c".repeat(MAX_WORDS));
        assert_eq!(
            error(&format!(
                r#"[{{"directory": "/", "file": "a.c", "command": "{command}"}}]"#
            )),
            "cc.json: `[0].command`: more than 4096 words, which op2 import does not read"
        );
        let arguments = format!("\"c++\"{}", r#", "-c""#.repeat(MAX_WORDS));
        assert_eq!(
            error(&format!(
                r#"[{{"directory": "/", "file": "a.c", "arguments": [{arguments}]}}]"#
            )),
            "cc.json: `[0].arguments`: more than 4096 words, which op2 import does not read"
        );
        // One word fewer is read.
        let command = format!("c++{}", " -c".repeat(MAX_WORDS - 1));
        assert!(
            parse(
                Path::new("cc.json"),
                Path::new("/"),
                format!(r#"[{{"directory": "/", "file": "a.c", "command": "{command}"}}]"#)
                    .as_bytes()
            )
            .is_ok()
        );
        // The paths of `-I`, `-iquote`, `-isystem`, `-idirafter` and
        // `-include` together, named at the one past the limit.
        let command = format!(
            "c++ -iquote q -isystem s -idirafter d -include f.h{}",
            " -Ia".repeat(MAX_PATH_FLAGS - 4)
        );
        let text = format!(r#"[{{"directory": "/", "file": "a.c", "command": "{command}"}}]"#);
        assert_eq!(
            parse(Path::new("cc.json"), Path::new("/"), text.as_bytes())
                .unwrap()
                .entries[0]
                .flags
                .include_dirs
                .len(),
            MAX_PATH_FLAGS - 3
        );
        assert_eq!(
            error(&text.replace("c++ ", "c++ -Ib ")),
            "cc.json: `[0].command (word 2)`: more than 1024 include directories and files (`-I`, `-iquote`, `-isystem`, `-idirafter`, `-include`), which op2 import does not read"
                .replace("word 2", &format!("word {}", 2 * 4 + MAX_PATH_FLAGS - 4 + 2))
        );
    }

    #[test]
    fn paths_joined_to_a_long_directory_are_counted_before_they_are_built() {
        // A directory of a mebibyte joined to each of three hundred `-I`
        // (within the count of paths): 300 MiB of paths from a database of
        // 1 MiB, refused at the `-I` that passes the limit, before it is
        // built.
        let directory = format!("/{}", "d".repeat(1 << 20));
        let command = format!("c++{}", " -Ia".repeat(300));
        let text = format!(
            r#"[{{"directory": "{directory}", "file": "other.cpp", "command": "{command}"}}]"#
        );
        let mut kept = Kept::default();
        // (Not `unwrap_err`, which would print the paths it built.)
        let Err(error) = parse_kept(
            Path::new("cc.json"),
            Path::new("/"),
            text.as_bytes(),
            &mut 0,
            &mut kept,
        ) else {
            panic!("read, with {} bytes of paths", kept.bytes);
        };
        // The directory and the file, then each `-I`: the directory, `/`
        // and `a`.
        let directory = directory.len() + KEPT_OVERHEAD;
        let file = directory + 1 + "other.cpp".len();
        let each = directory + 2;
        let record = size_of::<Entry>() + KEPT_OVERHEAD;
        let taken = (MAX_KEPT_BYTES - record - directory - file) / each;
        assert_eq!(
            error,
            format!(
                "cc.json: `[0].command (word {})`: the paths and macros op2 import keeps of the database come to more than 256 MiB here (its directories joined to its paths), which is more than op2 import reads",
                taken + 2
            )
        );
        assert!(kept.bytes <= MAX_KEPT_BYTES + each, "{} bytes", kept.bytes);
        // The same through `parse`, which the import uses.
        let Err(again) = parse(Path::new("cc.json"), Path::new("/"), text.as_bytes()) else {
            panic!("read through `parse`");
        };
        assert_eq!(again, error);
    }

    #[test]
    fn a_malformed_database_is_an_error_naming_the_json_path() {
        let error =
            |text: &str| parse(Path::new("cc.json"), Path::new("/"), text.as_bytes()).unwrap_err();
        assert_eq!(error("{}"), "cc.json: ``: expected an array of entries");
        assert_eq!(error("[1]"), "cc.json: `[0]`: expected an object");
        assert_eq!(
            error(r#"[{"directory": "/", "command": "c++"}]"#),
            "cc.json: `[0]`: no `file`"
        );
        assert_eq!(
            error(r#"[{"directory": "/", "file": 3, "command": "c++"}]"#),
            "cc.json: `[0].file`: expected a string"
        );
        assert_eq!(
            error(r#"[{"directory": "/", "file": "a.c"}]"#),
            "cc.json: `[0]`: neither `arguments` nor `command`"
        );
        assert_eq!(
            error(r#"[{"directory": "/", "file": "a.c", "arguments": ["c++", 2]}]"#),
            "cc.json: `[0].arguments[1]`: expected a string"
        );
        assert_eq!(
            error(r#"[{"directory": "/", "file": "a.c", "arguments": ["c++", "-I"]}]"#),
            "cc.json: `[0].arguments[1]`: `-I` is the last argument: its value is missing"
        );
        assert_eq!(
            error(r#"[{"directory": "/", "file": "a.c", "command": "c++ -c 'a.c"}]"#),
            "cc.json: `[0].command`: the `'` at byte 7 is not closed"
        );
        assert_eq!(
            error(r#"[{"directory": "/", "file": "a.c", "command": "c++ @flags.rsp"}]"#),
            "cc.json: `[0].command (word 2)`: `@flags.rsp` is a response file, which op2 import does not read"
        );
        assert_eq!(
            error(r#"[{"directory": "/", "file": "a.c", "command": " "}]"#),
            "cc.json: `[0].command`: empty: no compiler named"
        );
        assert!(error("[{").starts_with("cc.json:1:2: not a compilation database: "));
        // Nesting past serde_json's limit is an error, not a stack overflow.
        assert!(error(&"[".repeat(100_000)).contains("not a compilation database"));
    }
}
