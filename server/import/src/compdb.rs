//! A compilation database (`compile_commands.json`, as CMake and bear write
//! it): which flags each translation unit of the application is compiled
//! with, so that the capture and the preprocessor see each unit as its build
//! does.

use std::collections::BTreeMap;
use std::io::Read;
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
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    let metadata = file
        .metadata()
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    if !metadata.is_file() {
        return Err(format!("`{shown}` is not a regular file"));
    }
    if metadata.len() > MAX_BYTES {
        return Err(format!(
            "`{shown}` is {} bytes, more than the {} MiB op2 import reads of a compilation database",
            metadata.len(),
            MAX_BYTES >> 20
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(format!(
            "`{shown}` grew past {} MiB while it was read",
            MAX_BYTES >> 20
        ));
    }
    let base = path.parent().unwrap_or(Path::new(""));
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_owned());
    parse(path, &base, &bytes)
}

/// Parses a database's text (`path` names it in errors; a relative
/// `directory` is taken from `base`).
pub fn parse(path: &Path, base: &Path, bytes: &[u8]) -> Result<Database, String> {
    parse_counting(path, base, bytes, &mut 0)
}

/// [`parse`], adding to `steps` one for each entry, each argument and each
/// character of a command it splits ([`split_counting`]) and each word of
/// the flags it reads: its work past the JSON parser, which a test holds to
/// at most one per byte of the database.
fn parse_counting(
    path: &Path,
    base: &Path,
    bytes: &[u8],
    steps: &mut usize,
) -> Result<Database, String> {
    let shown = path.display();
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "{shown}:{}:{}: not a compilation database: {e}",
            e.line(),
            e.column()
        )
    })?;
    let at = |json_path: &str, what: String| format!("{shown}: `{json_path}`: {what}");
    let serde_json::Value::Array(items) = value else {
        return Err(at("", "expected an array of entries".to_owned()));
    };
    let mut entries = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        *steps += 1;
        let serde_json::Value::Object(object) = item else {
            return Err(at(&format!("[{index}]"), "expected an object".to_owned()));
        };
        let string = |key: &str| -> Result<Option<&str>, String> {
            match object.get(key) {
                None => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.as_str())),
                Some(_) => Err(at(
                    &format!("[{index}].{key}"),
                    "expected a string".to_owned(),
                )),
            }
        };
        let required = |key: &str| -> Result<&str, String> {
            string(key)?.ok_or_else(|| at(&format!("[{index}]"), format!("no `{key}`")))
        };
        let directory = base.join(required("directory")?);
        let file = directory.join(required("file")?);
        let (words, json_path): (Vec<(String, String)>, &str) = match object.get("arguments") {
            Some(serde_json::Value::Array(arguments)) => {
                let mut words = Vec::with_capacity(arguments.len());
                for (i, argument) in arguments.iter().enumerate() {
                    *steps += 1;
                    let json_path = format!("[{index}].arguments[{i}]");
                    let serde_json::Value::String(word) = argument else {
                        return Err(at(&json_path, "expected a string".to_owned()));
                    };
                    words.push((word.clone(), json_path));
                }
                (words, "arguments")
            }
            Some(_) => {
                return Err(at(
                    &format!("[{index}].arguments"),
                    "expected an array of strings".to_owned(),
                ));
            }
            None => {
                let command = string("command")?.ok_or_else(|| {
                    at(
                        &format!("[{index}]"),
                        "neither `arguments` nor `command`".to_owned(),
                    )
                })?;
                let json_path = format!("[{index}].command");
                let words = split_counting(command, steps).map_err(|why| at(&json_path, why))?;
                let words = words
                    .into_iter()
                    .enumerate()
                    .map(|(i, w)| (w, format!("{json_path} (word {})", i + 1)))
                    .collect();
                (words, "command")
            }
        };
        if words.is_empty() {
            return Err(at(
                &format!("[{index}].{json_path}"),
                "empty: no compiler named".to_owned(),
            ));
        }
        let flags = flags(&words[1..], &directory, steps)
            .map_err(|(json_path, why)| at(&json_path, why))?;
        entries.push(Entry {
            index,
            file,
            directory,
            flags,
        });
    }
    Ok(Database {
        path: path.to_owned(),
        entries,
    })
}

/// The words of `command` as a POSIX shell splits them: blanks separate,
/// `'…'` is taken as it is, `"…"` with `\"`, `\\`, `\$` and `` \` ``
/// escaped, and `\` outside quotes takes the next character. One pass.
pub fn split(command: &str) -> Result<Vec<String>, String> {
    split_counting(command, &mut 0)
}

/// [`split`], adding to `steps` one for each character it reads: its work,
/// which a test holds to one per character of the command.
fn split_counting(command: &str, steps: &mut usize) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.char_indices().inspect(|_| *steps += 1);
    while let Some((at, c)) = chars.next() {
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
    Ok(words)
}

/// What op2 import takes from a command's arguments (after the compiler):
/// `-I`, `-iquote`, `-isystem`, `-idirafter`, `-D`, `-U`, `-std=` and
/// `-include`, each joined or separate from its value; the rest (`-c`, `-o`,
/// optimisation, warnings, the source) is the build's own. An error names
/// the argument's JSON path.
/// Adds to `steps` one for each word it looks at.
fn flags(
    words: &[(String, String)],
    directory: &Path,
    steps: &mut usize,
) -> Result<Flags, (String, String)> {
    let mut flags = Flags::default();
    let mut i = 0;
    while i < words.len() {
        *steps += 1;
        let (word, json_path) = &words[i];
        i += 1;
        // The option with its value joined (`-Idir`) or in the next word.
        let mut value = |option: &str| -> Result<Option<String>, (String, String)> {
            let Some(rest) = word.strip_prefix(option) else {
                return Ok(None);
            };
            if !rest.is_empty() {
                return Ok(Some(rest.to_owned()));
            }
            match words.get(i) {
                Some((next, _)) => {
                    i += 1;
                    Ok(Some(next.clone()))
                }
                None => Err((
                    json_path.clone(),
                    format!("`{option}` is the last argument: its value is missing"),
                )),
            }
        };
        if let Some(dir) = value("-iquote")? {
            flags.include_dirs.push(directory.join(dir));
        } else if let Some(dir) = value("-isystem")? {
            flags.system_dirs.push(directory.join(dir));
        } else if let Some(dir) = value("-idirafter")? {
            flags.system_dirs.push(directory.join(dir));
        } else if let Some(file) = value("-include")? {
            flags.includes.push(directory.join(file));
        } else if let Some(dir) = value("-I")? {
            flags.include_dirs.push(directory.join(dir));
        } else if let Some(definition) = value("-D")? {
            flags.macros.push(format!("-D{definition}"));
        } else if let Some(name) = value("-U")? {
            flags.macros.push(format!("-U{name}"));
        } else if let Some(std) = word.strip_prefix("-std=").or(word.strip_prefix("--std=")) {
            if std.starts_with("c++") || std.starts_with("gnu++") {
                flags.std = Some(std.to_owned());
            }
        } else if word.starts_with('@') {
            return Err((
                json_path.clone(),
                format!("`{word}` is a response file, which op2 import does not read"),
            ));
        } else if matches!(
            word.as_str(),
            "-o" | "-MF" | "-MT" | "-MQ" | "-x" | "-Xclang"
        ) {
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
            let long = r#"'-DA=1' \"-I\" inc x\\ y "#.repeat(n);
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
            assert_eq!(last.macros.len(), n);
            assert_eq!(last.include_dirs.len(), n);
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
