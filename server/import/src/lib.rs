//! `op2 import`: an OP2 C/C++ application, unmodified, brought into `.op2`
//! with its mesh.
//!
//! The application's main file, its other translation units (if any) and
//! the headers they include with `"…"` ([`units`]) are parsed with
//! tree-sitter's C++ grammar. `main` is split at the first
//! top-level statement that contains an `op_par_loop`:
//!
//! - the set-up before it is **executed, not translated**: the main file is
//!   compiled (with the other units) with the system C++ compiler against op2's recording
//!   `op_seq.h` ([`capture`]), with a call inserted before that statement
//!   that writes the host values the rest of the program reads and ends the
//!   run. Every `op_decl_*` call has recorded its sizes and data by then;
//! - the rest becomes `main` ([`host`]), and the kernels its par_loops name
//!   become `.op2` kernels ([`kernel`]).
//!
//! The result is written as `<out>/<stem>.op2` (formatted, every item with a
//! comment naming the C file and line it came from) and `<out>/<stem>.json`
//! (the instance; `<out>/<stem>.h5`, OP2's HDF5 layout, when the application
//! reads its mesh with OP2's HDF5 API), with a [`Report`] of what was translated, captured,
//! dropped and not translated.

pub mod c;
pub mod capture;
pub mod compdb;
pub mod host;
pub mod inline;
pub mod kernel;
pub mod report;
pub mod scope;
pub mod units;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use tree_sitter::Node;

use crate::c::{Location, Source, op2_name, scalar_type, walk};
pub use crate::capture::Capture;
pub use crate::capture::CaptureError;
use crate::capture::Value;
use crate::host::Context;
pub use crate::report::{Entry, Kind, Report};

/// The most translation units whose kernels are expanded with a table of
/// macros of their own (each costs a walk of the application's macros).
pub const MAX_UNIT_TABLES: usize = 16;

/// The most text of the preprocessor's macros and line markers kept for all
/// the translation units of one import together (each unit's is at most
/// 4 MiB): each unit's definitions are kept as long as the import runs,
/// and a unit that includes the standard C++ headers alone has about
/// 110 KB of them, so this is some 600 such units. Without it, 1,023 units
/// each including one 3.5 MB header of `#define`s would have kept
/// gigabytes.
pub const MACRO_TEXT_LIMIT: usize = 64 << 20;

/// OP2's calls that write HDF5 files; the recorder makes them do nothing.
const SETUP_FILE_OUTPUT: &[&str] = &[
    "op_dump_to_hdf5",
    "op_write_hdf5",
    "op_write_const_hdf5",
    "op_fetch_data_hdf5_file",
    "op_fetch_data_hdf5_file_path",
];

/// What to import.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The C/C++ file with `main`.
    pub main: PathBuf,
    /// The application's other C/C++ files (translation units): compiled
    /// and linked with the main file into the capture run, and searched,
    /// with the headers they include, for kernels and host functions.
    pub sources: Vec<PathBuf>,
    /// The existing directory to write `<stem>.op2` and the instance into
    /// (empty: the working directory; it is not created): `<stem>.h5` (OP2's
    /// HDF5 layout) when the application reads its mesh with OP2's HDF5 API
    /// and the program checks, `<stem>.json` otherwise.
    pub out: PathBuf,
    /// `-I` directories for the compiler and for finding kernel headers.
    pub include_dirs: Vec<PathBuf>,
    /// `-D NAME[=VALUE]` for the compiler.
    pub defines: Vec<String>,
    /// The compilation database (`compile_commands.json`) that gives each
    /// translation unit its own `-I`, `-D`, `-U`, `-std` and `-include`;
    /// when `None`, `compile_commands.json` or `build/compile_commands.json`
    /// where the application runs, if it lists the main file.
    pub compile_commands: Option<PathBuf>,
    /// Arguments the application is run with.
    pub args: Vec<String>,
    /// Where the application runs (so that it finds its mesh files); the
    /// current directory when `None`.
    pub working_dir: Option<PathBuf>,
    /// Set by another thread to stop the import: the compiler or the
    /// application is killed and [`CaptureError::Cancelled`] returned.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// A finished import.
#[derive(Debug)]
pub struct Imported {
    /// The `.op2` program written.
    pub program: PathBuf,
    /// The instance written.
    pub instance: PathBuf,
    /// What became of each construct.
    pub report: Report,
    /// What the set-up printed while it was captured.
    pub setup_output: String,
    /// Notes on how it was imported (the compilation database used), each
    /// printed as `note: …`.
    pub notes: Vec<String>,
    /// The application's other translation units, imported with the main
    /// file.
    pub sources: Vec<PathBuf>,
}

impl Imported {
    /// What the import says once it is done (the same text from `op2 import`
    /// and the language server): what the set-up printed, the report, what
    /// was written and, when the result is not faithful, that it is not.
    pub fn summary(&self) -> String {
        let mut text = String::new();
        for note in &self.notes {
            text.push_str(&format!("note: {note}\n"));
        }
        if !self.setup_output.is_empty() {
            text.push_str("the set-up printed:\n");
            for line in self.setup_output.lines() {
                text.push_str(&format!("  | {line}\n"));
            }
        }
        text.push_str(&self.report.to_string());
        text.push_str(&format!(
            "wrote {} and {}\n",
            self.program.display(),
            self.instance.display()
        ));
        if !self.report.faithful() {
            text.push_str(
                "the result is not faithful to the application: see `not translated` above\n",
            );
        }
        text
    }
}

/// Why nothing was written.
#[derive(Debug)]
pub enum ImportError {
    /// A source could not be read.
    Read(String),
    /// The main file has no `main` function.
    NoMain(String),
    /// `main` runs no par_loop.
    NoParLoop(Location),
    /// An `op_decl_*` call comes after the first par_loop.
    DeclAfterParLoop {
        call: String,
        at: Location,
        first: Location,
    },
    /// The capture failed.
    Capture(CaptureError),
    /// Writing the output failed.
    Write(String),
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Read(why) | ImportError::Write(why) => f.write_str(why),
            ImportError::NoMain(file) => write!(f, "`{file}` has no `main` function"),
            ImportError::NoParLoop(at) => {
                write!(
                    f,
                    "{at}: `main` calls no `op_par_loop`, so there is nothing to import"
                )
            }
            ImportError::DeclAfterParLoop { call, at, first } => write!(
                f,
                "{at}: `{call}` after the first `op_par_loop` (at {first}); op2 import captures declarations by running the program up to its first par_loop\n  help: move the declaration before the first par_loop"
            ),
            ImportError::Capture(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ImportError {}

/// A host variable declared in the set-up or at file scope.
#[derive(Debug, Clone)]
struct Declared {
    location: Location,
    /// The byte where its declaration ends in the main file (0 at file
    /// scope or in a header: always in scope).
    end: usize,
    handle: bool,
    pointer: bool,
}

/// Where the translation finds the application's sources: the disk for an
/// import, a map of texts for the fuzzing of the translation (which never
/// compiles or runs anything).
pub trait Files {
    /// Whether `path` is a file that [`Files::read`] can read (an include is
    /// looked for in each directory in turn).
    fn is_file(&self, path: &Path) -> bool;
    /// The text of `path`, or why not, naming it.
    fn read(&self, path: &Path) -> Result<String, String>;
    /// What tells `path` from another spelling of the same file (`a/../b.h`
    /// and `b.h`), so that each file is read once.
    fn identity(&self, path: &Path) -> PathBuf {
        units::normalised(path)
    }
}

/// The file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

impl Files for Disk {
    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    /// As `op2` reads its own sources: a regular file (a FIFO or a device
    /// is refused without blocking) of at most 16 MiB of UTF-8 (the first
    /// bad byte named by line and column).
    fn read(&self, path: &Path) -> Result<String, String> {
        op2_codegen::files::read_source(path).map_err(|e| e.describe(path))
    }

    /// Its canonical path (links followed), else its path normalised.
    fn identity(&self, path: &Path) -> PathBuf {
        std::fs::canonicalize(path).unwrap_or_else(|_| units::normalised(path))
    }
}

impl Files for BTreeMap<PathBuf, String> {
    fn is_file(&self, path: &Path) -> bool {
        self.contains_key(path)
    }

    fn read(&self, path: &Path) -> Result<String, String> {
        self.get(path)
            .cloned()
            .ok_or_else(|| format!("cannot read `{}`: no such file", path.display()))
    }
}

/// What the capture is asked for: the main file's text with the calls that
/// record the declarations and values, and the stop, inserted before the
/// first par_loop.
#[derive(Debug, Clone)]
pub struct Instrumented {
    /// The main file.
    pub main: PathBuf,
    /// Its instrumented text.
    pub text: String,
}

/// A translation, not yet written.
#[derive(Debug)]
pub struct Translation {
    /// Where the `.op2` program goes (in `out`).
    pub program_path: PathBuf,
    /// Its text.
    pub program: String,
    /// Where the instance goes: `<stem>.h5` when there is `instance_h5`,
    /// `<stem>.json` otherwise.
    pub instance_path: PathBuf,
    /// The instance as JSON.
    pub instance: String,
    /// The instance in OP2's HDF5 layout, when the application read its
    /// mesh with OP2's HDF5 API and the program checks.
    pub instance_h5: Option<(op2_analysis::Analysis, op2_instance::InstanceData)>,
    /// What became of each construct.
    pub report: Report,
    /// What the set-up printed while it was captured.
    pub setup_output: String,
    /// The files the set-up read through OP2's HDF5 API, as it named them:
    /// the import writes over none of them.
    pub read_files: Vec<PathBuf>,
}

/// Imports `options.main`, telling `progress` what it is doing: [`prepare`],
/// then [`Prepared::write`].
pub fn import(options: &Options, progress: &mut dyn FnMut(&str)) -> Result<Imported, ImportError> {
    prepare(options, progress)?.write(options.cancel.as_deref())
}

/// An import translated and not yet written: the language server decides
/// whether it may write [`Prepared::paths`] before it writes them.
#[derive(Debug)]
pub struct Prepared {
    translation: Translation,
    notes: Vec<String>,
    sources: Vec<PathBuf>,
}

/// The error of an import cancelled through [`Options::cancel`].
fn cancelled(cancel: Option<&std::sync::atomic::AtomicBool>) -> Result<(), ImportError> {
    match cancel {
        Some(flag) if flag.load(std::sync::atomic::Ordering::Relaxed) => {
            Err(ImportError::Capture(CaptureError::Cancelled))
        }
        _ => Ok(()),
    }
}

/// Where an import of `main` into `out` may write: `<stem>.op2`, and the
/// instance as `<stem>.json` or `<stem>.h5` (which one is known only once
/// the application is translated).
pub fn output_paths(main: &Path, out: &Path) -> [PathBuf; 3] {
    let stem = output_stem(main);
    ["op2", "json", "h5"].map(|extension| out.join(format!("{stem}.{extension}")))
}

/// The name the outputs of an import of `main` take, before their extension.
fn output_stem(main: &Path) -> String {
    main.file_stem().map_or_else(
        || "imported".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// Translates `options.main` (capturing its set-up), telling `progress`
/// what it is doing; writes nothing. A cancellation through
/// `options.cancel` is an error from any phase.
pub fn prepare(options: &Options, progress: &mut dyn FnMut(&str)) -> Result<Prepared, ImportError> {
    let cancel = options.cancel.as_deref();
    // Nothing creates it: a missing one is said before the work starts.
    if !(options.out.as_os_str().is_empty() || options.out.is_dir()) {
        return Err(ImportError::Write(format!(
            "the output directory `{}` does not exist",
            options.out.display()
        )));
    }
    cancelled(cancel)?;
    let mut notes = Vec::new();
    let unit_flags = unit_flags(options, &mut notes)?;
    for note in &notes {
        progress(&format!("note: {note}"));
    }
    let run = |instrumented: Instrumented| capture::Run {
        main: instrumented.main,
        instrumented: instrumented.text,
        program: &options.main,
        sources: &options.sources,
        include_dirs: &options.include_dirs,
        defines: &options.defines,
        unit_flags: &unit_flags,
        args: &options.args,
        working_dir: options.working_dir.as_deref(),
        cancel: options.cancel.as_deref(),
    };
    // Both ask `progress`, one after the other.
    let progress = std::cell::RefCell::new(progress);
    let mut macros = |main: Instrumented| capture::macros(&run(main), *progress.borrow_mut());
    let mut capture =
        |instrumented: Instrumented| capture::capture(&run(instrumented), *progress.borrow_mut());
    let translation = translate_units(
        &options.main,
        &Given {
            units: &options.sources,
            include_dirs: &options.include_dirs,
            unit_flags: &unit_flags,
        },
        &options.out,
        &Disk,
        &mut macros,
        &mut capture,
    )?;
    // The cancel may have come while the last child's output was read or
    // while the capture was translated.
    cancelled(cancel)?;
    let mut translation = translation;
    // The set-up named its files relative to where it ran.
    if let Some(base) = options
        .working_dir
        .clone()
        .or_else(|| std::env::current_dir().ok())
    {
        for path in &mut translation.read_files {
            *path = base.join(&*path);
        }
    }
    Ok(Prepared {
        translation,
        notes,
        sources: options.sources.clone(),
    })
}

impl Prepared {
    /// The program and the instance it writes.
    pub fn paths(&self) -> [&Path; 2] {
        [
            &self.translation.program_path,
            &self.translation.instance_path,
        ]
    }

    /// Writes the program and the instance (each atomically, never over
    /// what is not a regular file, and neither when either is such a
    /// file), unless `cancel` is set before either.
    pub fn write(
        self,
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<Imported, ImportError> {
        let translation = self.translation;
        let program_path = &translation.program_path;
        let instance_path = &translation.instance_path;
        let write_error = |path: &Path, e: &dyn fmt::Display| {
            ImportError::Write(format!("cannot write `{}`: {e}", path.display()))
        };
        // Both targets are looked at before either is written, so that an
        // instance that cannot be written (a FIFO there, say) leaves no
        // program without it.
        // Their names are derived from the main file's, so a symbolic link
        // there is not the user's choice (a repository may ship one leading
        // anywhere): refused, as at `op2 build`'s default output.
        for path in [program_path, instance_path] {
            // The application's own mesh (`grid.h5`, read by `grid.cpp`)
            // is where `<stem>.h5` goes when both share the directory: the
            // capture, which keeps only what the set-up read, would replace
            // the user's file.
            if let Some(input) = self
                .sources
                .iter()
                .chain(&translation.read_files)
                .find(|input| op2_codegen::files::same_file(path, input))
            {
                return Err(write_error(
                    path,
                    &format_args!(
                        "it is `{}`, which the application reads; the import would replace it\nhelp: import into another `--out` directory",
                        input.display()
                    ),
                ));
            }
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(write_error(
                    path,
                    &"it is a symbolic link, and op2 import does not write through a link at a file it names itself (remove it, or import into another `--out` directory)",
                ));
            }
            op2_codegen::output::write_target_with(path, op2_codegen::output::Links::Refuse)
                .map_err(|e| write_error(path, &e))?;
        }
        cancelled(cancel)?;
        op2_codegen::output::write_file_atomically_with(
            program_path,
            op2_codegen::output::Links::Refuse,
            translation.program.as_bytes(),
        )
        .map_err(|e| write_error(program_path, &e))?;
        cancelled(cancel)?;
        match &translation.instance_h5 {
            Some((analysis, data)) => {
                op2_instance::write_file(instance_path, &analysis.program, data)
                    .map_err(|e| write_error(instance_path, &e))?
            }
            None => op2_codegen::output::write_file_atomically_with(
                instance_path,
                op2_codegen::output::Links::Refuse,
                translation.instance.as_bytes(),
            )
            .map_err(|e| write_error(instance_path, &e))?,
        }
        Ok(Imported {
            program: translation.program_path,
            instance: translation.instance_path,
            report: translation.report,
            setup_output: translation.setup_output,
            notes: self.notes,
            sources: self.sources,
        })
    }
}

/// Each translation unit's flags (`options.main`'s and each of
/// `options.sources`', by the path given) from the compilation database:
/// `options.compile_commands`, else the first of [`compdb::FOUND_AS`] where
/// the application runs that lists the main file (a note says which was
/// used, or why one found was not). Every unit must be listed in a database
/// used.
fn unit_flags(
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<PathBuf, compdb::Flags>, ImportError> {
    let identity = |path: &Path| Disk.identity(path);
    let exists = |path: &Path| path.is_file();
    let database = match &options.compile_commands {
        Some(path) => compdb::read(path).map_err(ImportError::Read)?,
        None => {
            let dir = options.working_dir.clone().unwrap_or_default();
            match find_database(&options.main, &dir, notes) {
                Some(database) => database,
                None => return Ok(BTreeMap::new()),
            }
        }
    };
    let compdb::ByFile {
        first: by_file,
        again,
    } = database
        .by_file(&exists, &identity)
        .map_err(ImportError::Read)?;
    // The later entries of each file by its first entry's index, so that
    // each unit finds its own without walking the others'.
    let mut again_of: BTreeMap<usize, Vec<&compdb::Entry>> = BTreeMap::new();
    for (later, first) in &again {
        again_of.entry(*first).or_default().push(later);
    }
    let mut flags = BTreeMap::new();
    let mut used = Vec::new();
    for unit in std::iter::once(&options.main).chain(&options.sources) {
        let entry = by_file.get(&identity(unit)).ok_or_else(|| {
            ImportError::Read(format!(
                "`{}` is not listed in the compilation database `{}`\n  help: op2 import compiles each translation unit with the flags of its entry: build the application with the database's build once more, or name another database with --compile-commands",
                unit.display(),
                database.path.display()
            ))
        })?;
        used.push(entry.index);
        flags.insert(unit.clone(), entry.flags.clone());
        for later in again_of.get(&entry.index).into_iter().flatten() {
            notes.push(format!(
                "`{}` lists `{}` again at `[{}]` with other flags; those of `[{}]` were used",
                database.path.display(),
                later.file.display(),
                later.index,
                entry.index
            ));
        }
    }
    notes.insert(
        0,
        format!(
            "each translation unit was compiled with its flags in `{}` ({})",
            database.path.display(),
            entries_used(&used)
        ),
    );
    Ok(flags)
}

/// The most entries the note on a compilation database names; it counts
/// the others.
const ENTRIES_NAMED: usize = 8;

/// `entries `[0]`, `[1]``, the database's entries that `indices` (in the
/// units' order) name, the first [`ENTRIES_NAMED`] of them, and how many
/// others.
fn entries_used(indices: &[usize]) -> String {
    let named: Vec<String> = indices
        .iter()
        .take(ENTRIES_NAMED)
        .map(|i| format!("`[{i}]`"))
        .collect();
    let others = indices.len().saturating_sub(ENTRIES_NAMED);
    format!(
        "{} {}{}",
        if indices.len() == 1 {
            "entry"
        } else {
            "entries"
        },
        named.join(", "),
        if others > 0 {
            format!(" and {others} more")
        } else {
            String::new()
        }
    )
}

/// The first of [`compdb::FOUND_AS`] in `dir` that lists `main`; a note in
/// `notes` for each found that does not, or cannot be read.
fn find_database(main: &Path, dir: &Path, notes: &mut Vec<String>) -> Option<compdb::Database> {
    let main_identity = Disk.identity(main);
    for candidate in compdb::candidates(dir) {
        if !candidate.is_file() {
            continue;
        }
        match compdb::read(&candidate) {
            Ok(database)
                if database
                    .entries
                    .iter()
                    .any(|e| e.file.is_file() && Disk.identity(&e.file) == main_identity) =>
            {
                return Some(database);
            }
            Ok(_) => notes.push(format!(
                "`{}` does not list `{}`, so it was not used",
                candidate.display(),
                main.display()
            )),
            Err(why) => notes.push(format!("not used: {why}")),
        }
    }
    None
}

/// An application's other translation units, chosen from a compilation
/// database (for the editor's import, which is given only the main file).
#[derive(Debug, Clone)]
pub struct DatabaseUnits {
    /// The database.
    pub database: PathBuf,
    /// The other units, in the database's order.
    pub units: Vec<PathBuf>,
}

/// The compilation database for `main` found in `dir` (as [`import`] finds
/// it: [`compdb::FOUND_AS`], listing `main`), and the application's other
/// translation units among its entries inside `within`, chosen as a linker
/// chooses the members of a library ([`units::linked`]: a unit is taken
/// when it defines a function or a global that the main file, or a unit
/// taken, calls, runs as a kernel or names, and does not define; never a
/// unit with its own `main`).
/// `None` when no database lists `main`. Notes (in `notes`) say what was
/// found and chosen. At most [`units::MAX_FILES`] files and
/// [`units::MAX_BYTES`] of text are read.
pub fn database_units(
    main: &Path,
    dir: &Path,
    within: &Path,
    notes: &mut Vec<String>,
) -> Result<Option<DatabaseUnits>, ImportError> {
    let Some(database) = find_database(main, dir, notes) else {
        notes.push(format!(
            "no compilation database lists `{}` (looked for {} in `{}`): only the main file and the headers it includes were imported; for an application of several files, write one with its build (CMake: `-DCMAKE_EXPORT_COMPILE_COMMANDS=ON`; make: `bear -- make`)",
            main.display(),
            compdb::FOUND_AS.join(" and "),
            dir.display()
        ));
        return Ok(None);
    };
    let identity = |path: &Path| Disk.identity(path);
    let by_file = database
        .by_file(&|p| p.is_file(), &identity)
        .map_err(ImportError::Read)?
        .first;
    let main_identity = identity(main);
    let parse = |path: &Path| -> Result<Source, ImportError> {
        let text = Disk.read(path).map_err(ImportError::Read)?;
        Source::parse(path, path.display().to_string(), text).map_err(ImportError::Read)
    };
    let main_symbols = units::symbols(&parse(main)?);
    let mut paths = Vec::new();
    let mut symbols = Vec::new();
    let mut bytes = 0usize;
    for entry in database.entries.iter() {
        let id = identity(&entry.file);
        let first = by_file.get(&id).is_some_and(|e| e.index == entry.index);
        let extension = entry
            .file
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("");
        if !first
            || id == main_identity
            || !id.starts_with(within)
            || !units::UNIT_EXTENSIONS.contains(&extension)
        {
            continue;
        }
        let source = parse(&entry.file)?;
        bytes = bytes.saturating_add(source.text.len());
        if paths.len() >= units::MAX_FILES || bytes > units::MAX_BYTES {
            return Err(ImportError::Read(format!(
                "{}: its files in `{}` come to more than {} files or {} MiB, which is more than op2 import reads to choose the application's translation units",
                database.path.display(),
                within.display(),
                units::MAX_FILES,
                units::MAX_BYTES >> 20
            )));
        }
        symbols.push(units::symbols(&source));
        paths.push(entry.file.clone());
    }
    let units: Vec<PathBuf> = units::linked(&main_symbols, &symbols)
        .into_iter()
        .map(|i| paths[i].clone())
        .collect();
    notes.push(match units.len() {
        0 => format!(
            "`{}` lists no other translation unit that the main file needs: imported as one file",
            database.path.display()
        ),
        _ => format!(
            "the application's other translation units, chosen from `{}` as a linker chooses from a library: {}",
            database.path.display(),
            units
                .iter()
                .map(|u| format!("`{}`", u.display()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    Ok(Some(DatabaseUnits {
        database: database.path,
        units,
    }))
}

/// Translates the application whose `main` is in `main`, reading its
/// sources from `files`, asking `macros` for the preprocessor's final table
/// of macros for the main file (given its text; `CXX -E -dM`'s output, see
/// [`c::macro_table`]) and `capture` for what its set-up declares:
/// everything [`import`] does except compiling and running the application
/// and writing the result. `out` is where the program would be written (it
/// names the program in its diagnostics).
pub fn translate(
    main: &Path,
    include_dirs: &[PathBuf],
    out: &Path,
    files: &dyn Files,
    macros: &mut dyn FnMut(Instrumented) -> Result<String, CaptureError>,
    capture: &mut dyn FnMut(Instrumented) -> Result<Capture, CaptureError>,
) -> Result<Translation, ImportError> {
    translate_units(
        main,
        &Given {
            units: &[],
            include_dirs,
            unit_flags: &BTreeMap::new(),
        },
        out,
        files,
        macros,
        capture,
    )
}

/// What [`translate_units`] is given besides the main file.
#[derive(Debug, Clone, Copy)]
pub struct Given<'a> {
    /// The application's other C/C++ files.
    pub units: &'a [PathBuf],
    /// `-I` directories for every unit.
    pub include_dirs: &'a [PathBuf],
    /// Each unit's own flags (its compilation database entry), by its path
    /// as given.
    pub unit_flags: &'a BTreeMap<PathBuf, compdb::Flags>,
}

/// [`translate`] of an application of several translation units: `main`
/// and `units`, its other C/C++ files, which the capture compiles and
/// links with the main file (`macros` is asked for each unit's table too,
/// given the unit's text) and whose functions, and the headers they
/// include, are searched for kernels and host functions.
pub fn translate_units(
    main: &Path,
    given: &Given<'_>,
    out: &Path,
    files: &dyn Files,
    macros: &mut dyn FnMut(Instrumented) -> Result<String, CaptureError>,
    capture: &mut dyn FnMut(Instrumented) -> Result<Capture, CaptureError>,
) -> Result<Translation, ImportError> {
    let read = |path: &Path| -> Result<Source, ImportError> {
        let text = files.read(path).map_err(ImportError::Read)?;
        let source =
            Source::parse(path, path.display().to_string(), text).map_err(ImportError::Read)?;
        let defines = c::defines(&source);
        // A macro defined empty (`#define OP_FUN_PREFIX`) in front of a type
        // confuses the parser: blank its uses (same lines and columns) and
        // parse again. Preprocessor lines are kept, so the `#define`s read
        // from the first parse stand.
        let empty: Vec<String> = defines
            .iter()
            .filter(|d| d.params.is_none() && d.body.is_empty())
            .map(|d| d.name.clone())
            .collect();
        let mut source = if empty.is_empty() {
            source
        } else {
            let text = c::blank_words(&source.text, &empty);
            Source::parse(path, source.display, text).map_err(ImportError::Read)?
        };
        source.defines = defines;
        Ok(source)
    };
    let Given {
        units,
        include_dirs,
        unit_flags,
    } = *given;
    let application = units::read(main, units, include_dirs, unit_flags, files, &read)?;
    // What the main file's translation unit sees: what the capture, made
    // there, can name.
    let visible: Vec<&Source> = application.all[..application.visible].iter().collect();
    let main_source = &application.all[application.main];
    let mut report = Report::default();

    let main_fn = functions(main_source)
        .into_iter()
        .find(|(name, _)| name == "main")
        .map(|(_, node)| node)
        .ok_or_else(|| ImportError::NoMain(main_source.display.clone()))?;
    let body = main_fn
        .child_by_field_name("body")
        .ok_or_else(|| ImportError::NoMain(main_source.display.clone()))?;
    let statements = c::named_children(body);
    let stop = statements
        .iter()
        .position(|s| c::contains_call(main_source, *s, "op_par_loop"))
        .ok_or_else(|| ImportError::NoParLoop(main_source.location(main_fn)))?;
    let stop_node = statements[stop];
    let stop_location = main_source.location(stop_node);
    // Temporary dats declared in the host code (`op_dat d =
    // op_decl_dat_temp(…)`): the set-up declares each once more where it
    // stops, so that the capture knows it; the host code zeroes it where C
    // declares it.
    let temporaries = temporary_dats(main_source, &statements[stop..]);
    for statement in &statements[stop..] {
        let mut bad = None;
        walk(*statement, |node, _| {
            if let Some(name) = c::called_name(main_source, node)
                && name.starts_with("op_decl_")
                && !(name == "op_decl_dat_temp"
                    && temporaries.iter().any(|t| t.call == node.start_byte()))
                && bad.is_none()
            {
                bad = Some((name.to_owned(), main_source.location(node)));
            }
            bad.is_none()
        });
        if let Some((call, at)) = bad {
            return Err(ImportError::DeclAfterParLoop {
                call,
                at,
                first: stop_location,
            });
        }
    }

    // What the set-up and the file scopes declare.
    let mut declared: BTreeMap<String, Declared> = BTreeMap::new();
    for source in &visible {
        for node in units::file_scope(source) {
            declarations(source, node, 0, &mut declared);
        }
    }
    // The file-scope variables of the other translation units that the
    // main file's does not declare: the capture, made there, cannot read
    // them.
    let mut elsewhere: BTreeMap<String, Declared> = BTreeMap::new();
    for source in &application.all[application.visible..] {
        for node in units::file_scope(source) {
            declarations(source, node, 0, &mut elsewhere);
        }
    }
    elsewhere.retain(|name, _| !declared.contains_key(name));
    let file_scope: BTreeMap<String, Location> = declared
        .iter()
        .map(|(name, d)| (name.clone(), d.location.clone()))
        .collect();
    let file_declared = declared.clone();
    if let Some(parameters) = main_fn
        .child_by_field_name("declarator")
        .and_then(|d| d.child_by_field_name("parameters"))
    {
        for parameter in c::named_children(parameters) {
            declarations(main_source, parameter, parameter.end_byte(), &mut declared);
        }
    }
    for statement in &statements[..stop] {
        declarations(main_source, *statement, statement.end_byte(), &mut declared);
    }
    // Globals that `main` declares again before its first par_loop: there
    // the name is `main`'s variable, and the capture, made there, reads
    // that one, not the global a kernel or a function reads.
    let shadowed: BTreeMap<String, (Location, Location)> = declared
        .iter()
        .filter(|(_, d)| d.end > 0)
        .filter_map(|(name, d)| {
            let global = file_scope.get(name)?;
            Some((name.clone(), (global.clone(), d.location.clone())))
        })
        .collect();
    let sources: Vec<&Source> = application.all.iter().collect();
    let helper_functions: Vec<(&Source, Node<'_>)> = sources
        .iter()
        .flat_map(|source| {
            functions(source)
                .into_iter()
                .map(move |(_, n)| (*source, n))
        })
        .collect();
    // A kernel or a function the host code or a kernel runs, defined in two
    // files: which one the application runs is the linker's (or, for
    // `static` functions, each unit's) to say, not op2 import's; the first
    // is translated.
    let mut every_definition: BTreeMap<String, Vec<(&Source, Node<'_>)>> = BTreeMap::new();
    for (source, node) in &helper_functions {
        if let Some(name) = inline::function_name(source, *node)
            && name != "main"
        {
            every_definition
                .entry(name.to_owned())
                .or_default()
                .push((*source, *node));
        }
    }
    let mut consts = BTreeMap::new();
    // An `op_decl_const(dim, "type", &var)` (or `op_decl_const2(name, …)`)
    // of the set-up, in `main` or (`function`) in a function it calls: the
    // global `var` is a const of the program.
    let decl_const = |source: &Source,
                      node: Node<'_>,
                      function: Option<&str>,
                      consts: &mut BTreeMap<String, Location>,
                      report: &mut Report| {
        let args = c::call_arguments(node);
        let data = if c::called_name(source, node) == Some("op_decl_const") {
            args.get(2)
        } else {
            args.get(3)
        };
        match (data.and_then(|d| pointee(source, *d)), function) {
            (Some(var), None) => {
                consts
                    .entry(var.to_owned())
                    .or_insert_with(|| source.location(node));
            }
            // In a function, a global's: the capture, made in `main`, reads
            // globals (another unit's is reported where it is defined).
            (Some(var), Some(_))
                if file_declared.contains_key(var) || elsewhere.contains_key(var) =>
            {
                consts
                    .entry(var.to_owned())
                    .or_insert_with(|| source.location(node));
            }
            (Some(var), Some(function)) => report.add(
                Kind::NotTranslated,
                Some(source.location(node)),
                format!(
                    "`op_decl_const` of `{var}` in `{function}`, which is not a global variable; the capture, made in `main`, can read only `main`'s variables and globals"
                ),
                Some("declare the const from a global variable"),
            ),
            (None, _) => report.add(
                Kind::NotTranslated,
                Some(source.location(node)),
                "`op_decl_const` of something other than a variable",
                Some("declare the const from a named variable"),
            ),
        }
    };
    // The functions the set-up calls, followed from call to call.
    let setup_functions = units::reached(
        statements[..stop].iter().map(|s| (main_source, *s)),
        &every_definition,
    );
    for function in &setup_functions {
        for (source, node) in every_definition.get(function).into_iter().flatten() {
            walk(*node, |call, _| {
                if matches!(
                    c::called_name(source, call),
                    Some("op_decl_const" | "op_decl_const2")
                ) {
                    decl_const(source, call, Some(function), &mut consts, &mut report);
                }
                true
            });
        }
    }
    let mut decl_sites: BTreeMap<String, Location> = BTreeMap::new();
    // Host buffer → the dat variable declared with it.
    let mut dat_buffers: BTreeMap<String, String> = BTreeMap::new();
    // Host array → the map variable declared with it (for the report of a
    // host loop that still reads it).
    let mut map_buffers: BTreeMap<String, String> = BTreeMap::new();
    for statement in &statements[..stop] {
        walk(*statement, |node, ancestors| {
            let Some(name) = c::called_name(main_source, node) else {
                return true;
            };
            let args = c::call_arguments(node);
            if name == "op_decl_const" || name == "op_decl_const2" {
                decl_const(main_source, node, None, &mut consts, &mut report);
            } else if name.starts_with("op_decl_") {
                if let Some(var) = assigned_variable(main_source, ancestors) {
                    if name == "op_decl_dat"
                        && let Some(buffer) = args.get(3).filter(|b| b.kind() == "identifier")
                    {
                        dat_buffers.insert(main_source.text(*buffer).to_owned(), var.clone());
                    }
                    if name == "op_decl_map"
                        && let Some(buffer) = args.get(3).filter(|b| b.kind() == "identifier")
                    {
                        map_buffers.insert(main_source.text(*buffer).to_owned(), var.clone());
                    }
                    decl_sites.insert(var, main_source.location(node));
                }
                if name.ends_with("_hdf5") {
                    report.add(
                        Kind::Captured,
                        Some(main_source.location(node)),
                        format!("`{name}`: read from OP2's HDF5 file during the set-up"),
                        None,
                    );
                }
            } else if name == "op_get_const_hdf5" {
                report.add(
                    Kind::Captured,
                    Some(main_source.location(node)),
                    "`op_get_const_hdf5`: read from OP2's HDF5 file during the set-up",
                    None,
                );
            } else if SETUP_FILE_OUTPUT.contains(&name) {
                report.add(
                    Kind::Dropped,
                    Some(main_source.location(node)),
                    format!("`{name}` in the set-up: op2 import does not write the file it writes"),
                    Some("`op2 instance convert` writes an instance in OP2's HDF5 layout"),
                );
            }
            true
        });
    }
    let mut handles: BTreeSet<String> = declared
        .iter()
        .filter(|(_, d)| d.handle)
        .map(|(n, _)| n.clone())
        .collect();
    for temporary in &temporaries {
        handles.insert(temporary.name.clone());
        decl_sites.insert(temporary.name.clone(), temporary.location.clone());
    }
    // The macros in effect where the main file ends, as the preprocessor
    // left them (conditionals, `-D`, `#undef` and redefinitions resolved),
    // and those only another unit defines where it ends.
    let mut streams = Vec::new();
    let mut kept = 0usize;
    for unit in std::iter::once(main).chain(units.iter().map(PathBuf::as_path)) {
        let text = macros(Instrumented {
            main: unit.to_owned(),
            text: files.read(unit).map_err(ImportError::Read)?,
        })
        .map_err(ImportError::Capture)?;
        // Each unit's is at most 4 MiB; all of them are kept, each
        // definition a few times its text.
        kept = kept.saturating_add(text.len());
        if kept > MACRO_TEXT_LIMIT {
            return Err(ImportError::Read(format!(
                "the preprocessor's macros and line markers of the {} translation units come to more than {} MiB together: import fewer of the application's units at once",
                streams.len() + 1,
                MACRO_TEXT_LIMIT >> 20
            )));
        }
        streams.push(c::macro_stream(&text));
    }
    let at_end = |stream: &c::MacroStream| stream.table_at(stream.events.len());
    let main_table = streams.first().map(at_end).unwrap_or_default();
    let (table, differing) = units::merge_macros(streams.iter().map(at_end));
    // Where the sources write `define` (the application's own macros): the
    // first definition of each name and body, looked up, not searched for
    // (a search per differing macro was quadratic in the `#define`s).
    let mut written_at: BTreeMap<(&str, &str), &Option<Location>> = BTreeMap::new();
    for define in sources.iter().flat_map(|s| &s.defines) {
        written_at
            .entry((define.name.as_str(), define.body.trim()))
            .or_insert(&define.location);
    }
    let written_differently = |define: &c::Define| {
        written_at
            .get(&(define.name.as_str(), define.body.trim()))
            .and_then(|location| (*location).clone())
    };
    // Each other unit whose table defines a macro of the application
    // differently from the merged table expands its own kernels with its
    // own table (with the main file's macros it lacks), at most
    // `MAX_UNIT_TABLES` of them; past that, the difference is reported.
    // Made one unit at a time, and kept only for those.
    let merged: BTreeMap<&str, &c::Define> = table.iter().map(|d| (d.name.as_str(), d)).collect();
    let mut unit_tables: BTreeMap<usize, Vec<c::Define>> = BTreeMap::new();
    for (u, stream) in streams.iter().enumerate().skip(1) {
        if unit_tables.len() == MAX_UNIT_TABLES {
            break;
        }
        let unit_table = units::merge_macros([at_end(stream), main_table.clone()]).0;
        let own = unit_table.iter().any(|define| {
            merged
                .get(define.name.as_str())
                .is_some_and(|kept| !units::same_definition(kept, define))
                && written_differently(define).is_some()
        });
        if own {
            unit_tables.insert(u, unit_table);
        }
    }
    let own_units: Vec<usize> = unit_tables.keys().copied().collect();
    let mut extra_words: BTreeSet<String> = own_units
        .iter()
        .flat_map(|u| inline::Helpers::macro_words(&unit_tables[u], &sources))
        .collect();
    // And every definition, where it is in effect, of a macro the sources
    // write (a kernel may be expanded with it: below).
    let written = inline::Helpers::written_words(&sources);
    for (name, define) in streams.iter().flat_map(|s| &s.events) {
        if let Some(define) = define
            && written.contains(name)
        {
            c::map_words(&define.body, |word| {
                if !extra_words.contains(word) {
                    extra_words.insert(word.to_owned());
                }
                None
            });
        }
    }
    // The definitions of the units whose kernels are expanded with their
    // own tables, each name and body once.
    let own_definitions: BTreeSet<(&str, &str)> = own_units
        .iter()
        .flat_map(|u| &unit_tables[u])
        .map(|d| (d.name.as_str(), d.body.as_str()))
        .collect();
    for (kept, other) in differing {
        // Only the application's own: a difference in what system headers
        // define is no difference a kernel sees.
        let (Some(at), first) = (written_differently(&other), written_differently(&kept)) else {
            continue;
        };
        // Expanded with their own unit's table where they are used.
        if own_definitions.contains(&(other.name.as_str(), other.body.as_str())) {
            continue;
        }
        report.add(
            Kind::NotTranslated,
            Some(at),
            format!(
                "the macro `{}` is defined here differently from the main file's translation unit{}; op2 import expands the kernels of at most {MAX_UNIT_TABLES} translation units with their own tables, and those of the others with the main file's",
                kept.name,
                first.map_or(String::new(), |first| format!(" (at {first})"))
            ),
            Some("give the macro one definition in a header every source includes"),
        );
    }
    // One count of the expansions' work for every table's helpers.
    let budget = inline::ExpansionBudget::default();
    let helpers = inline::Helpers::build(
        &table,
        &sources,
        &helper_functions,
        &extra_words,
        true,
        &budget,
    );
    // Built while `helpers` lives, so that the program's names are its.
    let own_helpers: BTreeMap<usize, inline::Helpers> = own_units
        .iter()
        .map(|&u| {
            (
                u,
                inline::Helpers::build(
                    &unit_tables[&u],
                    &sources,
                    &helper_functions,
                    &BTreeSet::new(),
                    false,
                    &budget,
                ),
            )
        })
        .collect();
    let mut context = Context {
        consts: Rc::new(consts.keys().cloned().collect()),
        handles: Rc::new(handles.clone()),
        objects: Rc::new(
            helpers
                .objects
                .iter()
                .map(|(name, body)| (name.clone(), inline::unpaint(&inline::op2_names(body))))
                .collect(),
        ),
        increments_read: BTreeMap::new(),
        functions: Rc::new(
            sources
                .iter()
                .flat_map(|source| host_functions(source))
                .collect(),
        ),
        words: Rc::clone(&helpers.words),
        invocation_names: Rc::new(std::cell::RefCell::new(scope::Fresh::new(
            Rc::clone(&helpers.words),
            BTreeSet::new(),
        ))),
        ..Context::default()
    };
    let unit_paths: Vec<PathBuf> = std::iter::once(main)
        .chain(units.iter().map(PathBuf::as_path))
        .map(|p| files.identity(p))
        .collect();
    context.unit_sources = Rc::new(
        sources
            .iter()
            .filter_map(|s| {
                let id = files.identity(&s.path);
                let unit = unit_paths.iter().position(|p| *p == id)?;
                Some((s.path.clone(), unit))
            })
            .collect(),
    );
    // A scalar that `main` declares before its first par_loop where a
    // global of that name exists: `main`'s is renamed (`gam_1`, a name no
    // source uses) wherever `main` names it after the set-up, and captured
    // under that name, while the kernels and the functions inlined read
    // the global, captured as `::gam`. (Not an OP2 handle, a buffer or a
    // const that `op_decl_const` declares from `main`'s variable: those
    // are reported where read, below.)
    let mut setup_renames: BTreeMap<String, String> = BTreeMap::new();
    // Captured name → the C expression the capture reads it with.
    let mut captured_as: BTreeMap<String, String> = BTreeMap::new();
    let taken = declared.keys().map(|n| op2_name(n)).collect();
    let mut fresh = scope::Fresh::new(Rc::clone(&helpers.words), taken);
    {
        for name in shadowed.keys() {
            let renamable = |d: Option<&Declared>| d.is_some_and(|d| !d.handle && !d.pointer);
            if renamable(declared.get(name))
                && renamable(file_declared.get(name))
                && !consts.contains_key(name)
                && !dat_buffers.contains_key(name)
                && !map_buffers.contains_key(name)
            {
                setup_renames.insert(name.clone(), fresh.rename(name));
            }
        }
    }
    for (name, renamed) in &setup_renames {
        if let (Some(local), Some(global)) = (declared.get(name), file_declared.get(name)) {
            let (local, global) = (local.clone(), global.clone());
            declared.insert(renamed.clone(), local);
            declared.insert(name.clone(), global);
            captured_as.insert(renamed.clone(), name.clone());
            captured_as.insert(name.clone(), format!("::{name}"));
        }
    }
    context.setup_renames = setup_renames.clone();
    // The host code is translated with one scope per function, C's with
    // one per block: where a local of the host code has a name that
    // elsewhere in the host code means a variable of the set-up or a
    // global (`{ double dt = 100.0; … }` and `dt` after the block), every
    // local of that name is renamed (`dt_1`), so that the other `dt` is
    // the one captured.
    {
        let scopes = scope::Scopes::new(main_source, &[], Some(body));
        let host_start = stop_node.start_byte();
        let in_host = |id: usize| scopes.bindings[id].at() >= host_start;
        let host_names: BTreeSet<&str> = scopes
            .bindings
            .iter()
            .filter(|b| b.at() >= host_start)
            .map(|b| b.name.as_str())
            .collect();
        let mut outer: BTreeSet<&str> = BTreeSet::new();
        let mut locals: Vec<(usize, &str)> = Vec::new();
        for statement in &statements[stop..] {
            walk(*statement, |node, ancestors| {
                if node.kind() == "identifier" && !c::is_callee(node, ancestors) {
                    let name = main_source.text(node);
                    match scopes.binding(node) {
                        Some(id) if in_host(id) => locals.push((node.start_byte(), name)),
                        _ if host_names.contains(name) => {
                            outer.insert(name);
                        }
                        _ => {}
                    }
                }
                true
            });
        }
        let new_names: BTreeMap<&str, String> =
            outer.into_iter().map(|n| (n, fresh.rename(n))).collect();
        for (at, name) in locals {
            if let Some(renamed) = new_names.get(name) {
                context.block_renames.insert(at, renamed.clone());
            }
        }
    }
    context.shadowed = Rc::new(
        shadowed
            .keys()
            .filter(|n| !setup_renames.contains_key(*n))
            .cloned()
            .collect(),
    );

    // First pass over the host code: what it reads and which kernels.
    let host_statements = &statements[stop..];
    let scan = host::translate(
        main_source,
        host_statements,
        &context,
        &mut Report::default(),
    );

    // Kernels.
    let mut definitions = BTreeMap::new();
    for (index, source) in sources.iter().enumerate() {
        for (name, node) in functions(source) {
            definitions.entry(name).or_insert((index, node));
        }
    }
    let mut run_names: BTreeSet<String> = scan.kernels.iter().map(|(k, _)| k.clone()).collect();
    run_names.extend(units::reached(
        host_statements
            .iter()
            .map(|s| (main_source, *s))
            .chain(scan.kernels.iter().filter_map(|(k, _)| {
                let (index, node) = definitions.get(k)?;
                Some((sources[*index], *node))
            })),
        &every_definition,
    ));
    for (name, first, again) in units::defined_twice(&run_names, &every_definition) {
        report.add(
            Kind::NotTranslated,
            Some(again),
            format!("`{name}` is defined here and at {first}; op2 import cannot tell which of the two the application runs, and translated the one at {first}"),
            Some("give the function one definition, or different names"),
        );
    }
    // A kernel is expanded with the macros in effect where it is defined
    // in its unit (two headers may define one macro differently, with an
    // `#undef` between them), where they differ from those in effect where
    // the unit ends in a macro the sources name: the preprocessor's stream
    // says how many of its `#define`s and `#undef`s come before the
    // kernel's last line.
    let marker_names: Vec<BTreeMap<PathBuf, &str>> = streams
        .iter()
        .map(|stream| {
            stream
                .checkpoints
                .keys()
                .map(|k| (files.identity(Path::new(k)), k.as_str()))
                .collect()
        })
        .collect();
    // Per unit, how many events that touch a name of the sources come
    // before each event.
    let relevant: Vec<Vec<usize>> = streams
        .iter()
        .map(|stream| {
            let mut prefix = Vec::with_capacity(stream.events.len() + 1);
            let mut count = 0;
            prefix.push(0);
            for (name, _) in &stream.events {
                if helpers.words.contains(name) {
                    count += 1;
                }
                prefix.push(count);
            }
            prefix
        })
        .collect();
    let mut place_helpers: BTreeMap<(usize, usize), inline::Helpers> = BTreeMap::new();
    let mut kernels = Vec::new();
    let mut kernel_reads = BTreeSet::new();
    let mut unit_kernels: BTreeMap<(String, usize), String> = BTreeMap::new();
    for (name, used_at) in &scan.kernels {
        match definitions.get(name) {
            Some((index, node)) => {
                // The unit that first includes the kernel's file, then each
                // other unit whose par_loops run it and that defines it too
                // (its file is in the unit's preprocessor stream); the first
                // of them gives the kernel its own name. A `static` kernel
                // is each unit's own, so the first unit counts only if its
                // par_loops run it, and no text is written unused; one that
                // is not `static` is one function whose text any unit may
                // give (the rule of one definition, reported below when the
                // texts differ). Where no unit that runs it defines it (a
                // prototype in the others), the unit that first includes
                // its file.
                let first = application.unit_of(*index);
                let file = files.identity(&sources[*index].path);
                let runs = scan.kernel_units.get(name);
                let own_per_unit = is_static(sources[*index], *node);
                let mut callers: Vec<usize> = std::iter::once(first)
                    .filter(|u| !own_per_unit || runs.is_none_or(|units| units.contains(u)))
                    .chain(
                        runs.into_iter()
                            .flatten()
                            .copied()
                            .filter(|u| *u != first && marker_names[*u].contains_key(&file)),
                    )
                    .collect();
                if callers.is_empty() {
                    callers.push(first);
                }
                let mut places = Vec::with_capacity(callers.len());
                for &unit in &callers {
                    let stream = &streams[unit];
                    let seen = marker_names[unit]
                        .get(&file)
                        .and_then(|file| stream.seen_at(file, node.end_position().row + 1));
                    let place = seen.filter(|&count| {
                        relevant[unit][count] < relevant[unit][stream.events.len()]
                    });
                    if let Some(count) = place {
                        let key = (unit, relevant[unit][count]);
                        if !place_helpers.contains_key(&key) {
                            if place_helpers.len() < MAX_UNIT_TABLES {
                                let mut table = stream.table_at(count);
                                if unit > 0 {
                                    table =
                                        units::merge_macros(vec![table, main_table.clone()]).0;
                                }
                                place_helpers.insert(
                                    key,
                                    inline::Helpers::build(
                                        &table,
                                        &sources,
                                        &helper_functions,
                                        &BTreeSet::new(),
                                        false,
                                        &budget,
                                    ),
                                );
                            } else {
                                report.add(
                                    Kind::NotTranslated,
                                    Some(sources[*index].location(*node)),
                                    format!(
                                        "kernel `{name}` is defined where its unit's macros are not yet what they are where the unit ends; op2 import expands the kernels of at most {MAX_UNIT_TABLES} such places with the macros in effect there, and this one with those of the unit's end"
                                    ),
                                    Some("give each macro one definition"),
                                );
                            }
                        }
                    }
                    places.push((unit, place));
                }
                let args = scan.kernel_args.get(name);
                let bindings = kernel::Bindings {
                    inc: increments(args),
                    vectors: vectors(args),
                };
                let mut first_text = None;
                // The report of the first unit's translation.
                let mut first_entries = 0..0;
                for (unit, place) in places {
                    // Its macros as the translation unit defines them where
                    // it is defined.
                    let helpers = place
                        .and_then(|count| place_helpers.get(&(unit, relevant[unit][count])))
                        .or_else(|| own_helpers.get(&unit))
                        .unwrap_or(&helpers);
                    let entries = report.entries.len();
                    let mut translated =
                        kernel::translate(sources[*index], *node, helpers, &bindings, &mut report);
                    if let Some(first_text) = &first_text {
                        // The same text as the first unit's: the same kernel.
                        if translated.text == *first_text {
                            report.entries.truncate(entries);
                            continue;
                        }
                        // Another: a kernel of its own, which this unit's
                        // par_loops run.
                        let stem = units
                            .get(unit - 1)
                            .and_then(|u| u.file_stem())
                            .map(|s| {
                                s.to_string_lossy()
                                    .chars()
                                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                                    .collect::<String>()
                            })
                            .unwrap_or_default();
                        let own = c::generated_name(&format!("{}_{stem}", op2_name(name)));
                        translated.text = translated.text.replacen(
                            &format!("\nkernel {}(", op2_name(name)),
                            &format!("\nkernel {own}("),
                            1,
                        );
                        let unit_file = units
                            .get(unit - 1)
                            .map_or(String::new(), |u| u.display().to_string());
                        // Its report once: what differs from the first.
                        // (Looked up in a set: a search of the first's
                        // entries per entry was quadratic in them.)
                        let added: Vec<Entry> = report.entries.drain(entries..).collect();
                        let first: BTreeSet<&Entry> =
                            report.entries[first_entries.clone()].iter().collect();
                        let differing: Vec<Entry> =
                            added.into_iter().filter(|e| !first.contains(e)).collect();
                        report.entries.extend(differing);
                        report.add(
                            Kind::Translated,
                            Some(translated.location.clone()),
                            format!(
                                "kernel `{name}` as `{own}` for the par_loops of `{unit_file}` as well, whose macros give it another text than the first translation unit that includes it"
                            ),
                            None,
                        );
                        if !is_static(sources[*index], *node) {
                            report.add(
                                Kind::NotTranslated,
                                Some(translated.location.clone()),
                                format!(
                                    "kernel `{name}` is not `static`, and the translation units that define it give it different texts (the macros of `{unit_file}` differ): C++ requires one definition (the rule of one definition), and which the native build runs is its compiler's and linker's choice; op2 import translates each unit's"
                                ),
                                Some(
                                    "declare the kernel `static`, or give the macros it uses one definition in a header every source includes",
                                ),
                            );
                        }
                        unit_kernels.insert((name.clone(), unit), own);
                    } else {
                        first_text = Some(translated.text.clone());
                        first_entries = entries..report.entries.len();
                    }
                    for (global, (at, local)) in translated
                        .free_names
                        .iter()
                        .filter(|n| !setup_renames.contains_key(*n))
                        .filter_map(|n| Some((n, shadowed.get(n)?)))
                    {
                        report.add(
                            Kind::NotTranslated,
                            Some(translated.location.clone()),
                            format!(
                                "kernel `{name}` reads the global `{global}` (declared at {at}), and `main` declares a `{global}` of its own (at {local}) before its first par_loop, whose value the capture, made in `main`, would take instead"
                            ),
                            Some("rename `main`'s variable"),
                        );
                    }
                    kernel_reads.extend(translated.free_names.iter().cloned());
                    context
                        .increments_read
                        .insert(name.clone(), translated.increments_read.clone());
                    kernels.push(translated);
                }
            }
            None => report.add(
                Kind::NotTranslated,
                Some(used_at.clone()),
                format!("kernel `{name}` is not defined in the main file, the other sources given or a header they include with `\"…\"`"),
                Some("give the file that defines it after the main file, or pass its header's directory with -I"),
            ),
        }
    }

    // The capture.
    let wanted: BTreeSet<String> = scan
        .referenced
        .iter()
        .chain(&kernel_reads)
        .chain(consts.keys())
        .filter(|n| {
            (!scan.locals.contains(*n) || scan.renamed.contains_key(*n)) && !handles.contains(*n)
        })
        .cloned()
        .collect();
    let in_scope = |d: &Declared| d.end <= stop_node.start_byte();
    let mut insertion = String::new();
    for name in &handles {
        if declared.get(name).is_some_and(in_scope) {
            let _ = write!(insertion, "op2_import_handle(\"{name}\", {name}); ");
        }
    }
    for name in &wanted {
        match declared.get(name) {
            // The dat's buffer: a global made from the dat (below).
            Some(_) if dat_buffers.contains_key(name) => {}
            Some(d) if in_scope(d) && !d.pointer => {
                let expression = captured_as.get(name).unwrap_or(name);
                let _ = write!(insertion, "op2_import_value(\"{name}\", {expression}); ");
            }
            Some(d) if d.pointer => match scan.uses.get(name) {
                // At the first use, which is what needs rewriting; a map's
                // data (a host loop over the mesh not yet made a par_loop,
                // as in OP2's tutorial) says which map.
                Some(uses) => {
                    let map = map_buffers.get(name);
                    let help = map.map(|map| {
                        format!(
                            "write the loop that reads it as a par_loop whose `op_arg_dat`s take `{map}`: the kernel is handed the elements the map names"
                        )
                    });
                    report.add(
                        Kind::NotTranslated,
                        Some(uses.first.clone()),
                        format!(
                            "`{name}` is a pointer (declared at {}{}), which `.op2` has no place for; the host code after the first par_loop uses it {}, first here",
                            d.location,
                            map.map_or(String::new(), |map| format!(
                                ", the data of map `{map}`"
                            )),
                            report::count(uses.places.len(), "time", "times")
                        ),
                        Some(help.as_deref().unwrap_or("reach the data it points at through a par_loop")),
                    );
                }
                None => report.add(
                    Kind::NotTranslated,
                    Some(d.location.clone()),
                    format!("`{name}` is a pointer, which `.op2` has no place for"),
                    None,
                ),
            },
            None if let Some(d) = elsewhere.get(name) => report.add(
                Kind::NotTranslated,
                Some(d.location.clone()),
                format!(
                    "`{name}` is a variable of another translation unit, which the main file's does not declare; the capture, made in `main`, cannot read it"
                ),
                Some("declare it `extern` in a header the main file includes"),
            ),
            _ if kernel_reads.contains(name) && !scan.referenced.contains(name) => report.add(
                Kind::NotTranslated,
                kernels.first().map(|k| k.location.clone()),
                format!("a kernel reads `{name}`, which is not a variable op2 import can capture (a macro?)"),
                Some("declare it as a global variable and with op_decl_const"),
            ),
            _ => {}
        }
    }
    for t in &temporaries {
        let _ = write!(
            insertion,
            "op2_import_handle(\"{name}\", op_decl_dat_temp({set}, {dim}, \"{ty}\", ({ty} *)0, \"{name}\")); ",
            name = t.name,
            set = t.set,
            dim = t.dim,
            ty = t.ty
        );
    }
    insertion.push_str("op2_import_stop(); ");
    let mut instrumented = main_source.text.clone();
    instrumented.insert_str(stop_node.start_byte(), &insertion);
    let captured = capture(Instrumented {
        main: main.to_owned(),
        text: instrumented,
    })
    .map_err(|error| match error {
        // A kernel defined in no source read is most likely in a unit not
        // given: the link fails, and the report would say why.
        CaptureError::CompileFailed {
            command,
            mut messages,
        } => {
            for entry in report.entries.iter().filter(|e| {
                e.kind == Kind::NotTranslated
                    && e.message.contains("is not defined in the main file")
            }) {
                if let Some(at) = &entry.location {
                    let _ = write!(
                        messages,
                        "\nnote: {at}: {}\n  help: {}",
                        entry.message,
                        entry.suggestion.as_deref().unwrap_or_default()
                    );
                }
            }
            ImportError::Capture(CaptureError::CompileFailed { command, messages })
        }
        error => ImportError::Capture(error),
    })?;

    // Names of the declarations: the C variables holding them.
    let names = Names::new(&captured);
    for (buffer, dat_var) in &dat_buffers {
        let dat = captured
            .handles
            .iter()
            .find(|(name, kind, _)| name == dat_var && *kind == "dat")
            .and_then(|(_, _, i)| Some((*i, captured.dats.get(*i)?)));
        if let Some((i, dat)) = dat
            && let Some(set) = captured.sets.get(dat.set)
            && let Some(len) = set.size.checked_mul(dat.dim)
        {
            Rc::make_mut(&mut context.buffers).insert(
                buffer.clone(),
                host::Buffer {
                    dat: names.dats[i].clone(),
                    set: names.set(dat.set),
                    dim: dat.dim,
                    len,
                    ty: dat.ty.clone(),
                },
            );
        }
    }
    context.dat_sets = Rc::new(
        captured
            .handles
            .iter()
            .filter(|(_, kind, _)| *kind == "dat")
            .filter_map(|(name, _, i)| Some((name.clone(), names.set(captured.dats.get(*i)?.set))))
            .collect(),
    );
    context.values = Rc::new(
        captured
            .values
            .iter()
            .filter(|(_, v)| !v.array && v.values.len() == 1)
            .map(|(n, v)| (n.clone(), v.values[0].clone()))
            .collect(),
    );
    context.unit_kernels = Rc::new(unit_kernels);
    context.value_types = Rc::new(
        captured
            .values
            .iter()
            .filter(|(_, v)| !v.array && v.values.len() == 1)
            .map(|(n, v)| (n.clone(), v.ty.clone()))
            .collect(),
    );
    context.assigned = Rc::new(scan.assigned.clone());
    // The names the scan gave the par_loops that branch are given again.
    *context.invocation_names.borrow_mut() =
        scope::Fresh::new(Rc::clone(&context.words), BTreeSet::new());
    // Locals of `main` that par_loops take as globals.
    for (name, at) in &scan.globals {
        if !scan.locals.contains(name) {
            continue;
        }
        match scan.local_types.get(name) {
            Some(ty) => {
                Rc::make_mut(&mut context.hoisted).insert(name.clone(), ty.clone());
                report.add(
                    Kind::Translated,
                    Some(at.clone()),
                    format!("`{name}`, a local of `main` that a par_loop takes: a global, its declarations assignments"),
                    None,
                );
            }
            None => report.add(
                Kind::NotTranslated,
                Some(at.clone()),
                format!("`{name}`, a local of `main` that a par_loop takes, is not a scalar or an array of a literal size"),
                Some("declare it before the first par_loop"),
            ),
        }
    }
    // The text taken into the host code is counted per pass: the scan's
    // does not make it into the program.
    context.host_text.set(0);
    let host = host::translate(main_source, host_statements, &context, &mut report);

    let stem = output_stem(main);
    let program_path = out.join(format!("{stem}.op2"));
    // A mesh that came from OP2's HDF5 files goes back to HDF5 (it is
    // large, and OP2's tools read it); any other as JSON.
    let hdf5 = capture::uses_hdf5(&main_source.text)
        || application.all[application.visible..]
            .iter()
            .any(|s| units.contains(&s.path) && capture::uses_hdf5(&s.text));
    let text = program_text(
        main_source,
        &captured,
        &names,
        &consts,
        &kernel_reads,
        &host,
        &declared,
        &decl_sites,
        &kernels,
        main_fn,
        &context.buffers,
        &mut report,
    );
    let text = match op2_syntax::format::format(&text) {
        Ok(formatted) => formatted,
        Err(_) => text,
    };
    let analysis = check_program(&program_path, &text, &mut report);
    let instance = instance_json(&captured, &names, &mut report);
    let mut instance_h5 = None;
    if let Some(analysis) = analysis {
        // The instance must be what `op2 run` and `op2 build` accept.
        let loaded = op2_instance::read(
            instance.as_bytes(),
            &analysis.program,
            &mut op2_instance::NoProgress,
        );
        for problem in loaded.problems.iter().filter(|p| p.is_error()) {
            report.add(
                Kind::NotTranslated,
                None,
                format!(
                    "the captured instance has an error at `{}`: {}[{}]: {}",
                    problem.path,
                    problem.severity().as_str(),
                    problem.code.as_str(),
                    problem.message
                ),
                None,
            );
        }
        if hdf5 && let Some(data) = loaded.data {
            instance_h5 = Some((analysis, data));
        }
    }
    let instance_path = out.join(format!(
        "{stem}.{}",
        if instance_h5.is_some() { "h5" } else { "json" }
    ));
    Ok(Translation {
        program_path,
        program: text,
        instance_path,
        instance,
        instance_h5,
        report,
        setup_output: captured.output,
        read_files: captured.read_files,
    })
}

/// The positions of the parameters that every par_loop running a kernel
/// binds to an INC argument of one dimension, with that dimension and
/// whether it is always a dat passed directly.
fn increments(loops: Option<&Vec<Vec<host::ArgUse>>>) -> BTreeMap<usize, (usize, bool)> {
    let mut inc = BTreeMap::new();
    let Some((first, rest)) = loops.and_then(|l| l.split_first()) else {
        return inc;
    };
    for (k, arg) in first.iter().enumerate() {
        if let host::ArgUse {
            mode: Some("INC"),
            dim: Some(dim),
            direct,
            entries: None,
        } = *arg
            && rest.iter().all(|other| other.get(k) == Some(arg))
            // A staged copy is a local array written out in full; past this
            // the analysis reports the access (E502) instead.
            && dim <= 1024
        {
            inc.insert(k, (dim, direct));
        }
    }
    inc
}

/// The positions of the parameters that a par_loop running a kernel binds
/// to a vector-map argument (`op_arg_dat(d, -N, map, …)`): its entries,
/// dimension and mode when every par_loop running the kernel passes one
/// alike there (with a literal dimension, and at most
/// [`host::MAX_VECTOR_VALUES`] values), `None` when they do not.
fn vectors(
    loops: Option<&Vec<Vec<host::ArgUse>>>,
) -> BTreeMap<usize, Result<kernel::Vector, String>> {
    let mut found = BTreeMap::new();
    let loops = loops.map_or(&[][..], |l| l.as_slice());
    let positions: BTreeSet<usize> = loops
        .iter()
        .flat_map(|args| args.iter().enumerate())
        .filter(|(_, arg)| arg.entries.is_some())
        .map(|(k, _)| k)
        .collect();
    for k in positions {
        let mut agreed: Option<Result<kernel::Vector, String>> = None;
        for arg in loops.iter().map(|args| args.get(k)) {
            let vector = match arg {
                Some(host::ArgUse {
                    mode: Some(mode),
                    dim: Some(dim),
                    entries: Some(entries),
                    ..
                }) if *dim >= 1 && host::vector_fits(*entries, *dim) => Ok(kernel::Vector {
                    entries: *entries,
                    dim: *dim,
                    mode,
                }),
                Some(host::ArgUse {
                    entries: Some(_),
                    dim: None,
                    ..
                }) => Err("its dimension is not an integer literal".to_owned()),
                Some(host::ArgUse {
                    entries: Some(_),
                    dim: Some(0),
                    ..
                }) => Err("its dimension is 0".to_owned()),
                Some(host::ArgUse {
                    entries: Some(_),
                    mode: Some(_),
                    ..
                }) => Err(format!(
                    "it copies more than {} values",
                    host::MAX_VECTOR_VALUES
                )),
                Some(host::ArgUse {
                    entries: Some(_), ..
                }) => Err("its access mode is not known".to_owned()),
                _ => Err(
                    "a par_loop running the kernel passes no vector-map argument there".to_owned(),
                ),
            };
            agreed = Some(match (agreed, vector) {
                (None, vector) => vector,
                (Some(Err(why)), _) | (Some(Ok(_)), Err(why)) => Err(why),
                (Some(Ok(a)), Ok(b)) if a == b => Ok(a),
                (Some(Ok(_)), Ok(_)) => Err(
                    "its par_loops pass vector-map arguments that differ in entries, dimension or mode"
                        .to_owned(),
                ),
            });
        }
        if let Some(agreed) = agreed {
            found.insert(k, agreed);
        }
    }
    found
}

/// The `.op2` names of the captured declarations.
struct Names {
    sets: Vec<String>,
    maps: Vec<String>,
    dats: Vec<String>,
}

impl Names {
    fn new(capture: &Capture) -> Names {
        let mut names = Names {
            sets: vec![String::new(); capture.sets.len()],
            maps: vec![String::new(); capture.maps.len()],
            dats: vec![String::new(); capture.dats.len()],
        };
        for (name, kind, index) in &capture.handles {
            let slot = match *kind {
                "set" => names.sets.get_mut(*index),
                "map" => names.maps.get_mut(*index),
                _ => names.dats.get_mut(*index),
            };
            if let Some(slot) = slot.filter(|s| s.is_empty()) {
                *slot = op2_name(name);
            }
        }
        // A declaration the program keeps no variable of gets a generated
        // name.
        for (kind, slots) in [
            ("set", &mut names.sets),
            ("map", &mut names.maps),
            ("dat", &mut names.dats),
        ] {
            for (i, slot) in slots.iter_mut().enumerate() {
                if slot.is_empty() {
                    *slot = c::generated_name(&format!("{kind}_{i}"));
                }
            }
        }
        names
    }
    fn set(&self, i: usize) -> String {
        self.sets[i].clone()
    }
    fn map(&self, i: usize) -> String {
        self.maps[i].clone()
    }
}

/// Function definitions outside other functions, by name.
/// Whether the function `definition` is declared `static` (each
/// translation unit has its own).
fn is_static(source: &Source, definition: Node<'_>) -> bool {
    let mut cursor = definition.walk();
    definition
        .children(&mut cursor)
        .any(|c| c.kind() == "storage_class_specifier" && source.text(c) == "static")
}

fn functions(source: &Source) -> Vec<(String, Node<'_>)> {
    let mut out = Vec::new();
    walk(source.tree.root_node(), |node, _| {
        if node.kind() == "function_definition" {
            if let Some(name) = node
                .child_by_field_name("declarator")
                .filter(|d| d.kind() == "function_declarator")
                .and_then(|d| d.child_by_field_name("declarator"))
            {
                out.push((source.text(name).to_owned(), node));
            }
            return false;
        }
        true
    });
    out
}

/// The functions of `source` that host code may call (all but `main`), by
/// name, with their template parameters.
fn host_functions(source: &Source) -> Vec<(String, host::HostFunction<'_>)> {
    let mut out = Vec::new();
    walk(source.tree.root_node(), |node, ancestors| {
        if node.kind() != "function_definition" {
            return true;
        }
        if let Some(name) = inline::function_name(source, node)
            && name != "main"
        {
            let tparams = c::ancestor(ancestors, 0)
                .filter(|t| t.kind() == "template_declaration")
                .and_then(|t| t.child_by_field_name("parameters"))
                .map(c::named_children)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|p| {
                    c::named_children(p)
                        .into_iter()
                        .find(|n| n.kind() == "type_identifier")
                        .map(|n| source.text(n).to_owned())
                })
                .collect();
            out.push((name.to_owned(), (source, node, tparams)));
        }
        false
    });
    out
}

/// Records the variables a top-level declaration (or parameter) declares.
fn declarations(
    source: &Source,
    node: Node<'_>,
    end: usize,
    declared: &mut BTreeMap<String, Declared>,
) {
    if !matches!(node.kind(), "declaration" | "parameter_declaration") {
        return;
    }
    let Some(ty) = node.child_by_field_name("type") else {
        return;
    };
    let typed_handle = matches!(source.text(ty), "op_set" | "op_map" | "op_dat");
    for declarator in node.children_by_field_name("declarator", &mut node.walk()) {
        if declarator.kind() == "function_declarator" {
            continue;
        }
        // `auto s = op_decl_set(…)` holds a handle too.
        let handle = typed_handle
            || (source.text(ty) == "auto"
                && declarator
                    .child_by_field_name("value")
                    .and_then(|v| c::called_name(source, v))
                    .is_some_and(|f| {
                        ["op_decl_set", "op_decl_map", "op_decl_dat"]
                            .iter()
                            .any(|d| {
                                f.strip_prefix(d)
                                    .is_some_and(|r| r.is_empty() || r == "_hdf5")
                            })
                    }));
        if let Some((ident, pointer, _)) = c::declared_name(declarator) {
            declared.insert(
                source.text(ident).to_owned(),
                Declared {
                    location: source.location(ident),
                    end,
                    handle,
                    pointer,
                },
            );
        }
    }
}

/// `x` from `&x` or `x`.
fn pointee<'s>(source: &'s Source, node: Node<'_>) -> Option<&'s str> {
    match node.kind() {
        "identifier" => Some(source.text(node)),
        "pointer_expression" => node
            .child_by_field_name("argument")
            .filter(|a| a.kind() == "identifier")
            .map(|a| source.text(a)),
        _ => None,
    }
}

/// The variable a call's result is stored in (`x = f()` or `T x = f()`),
/// from the call's ancestors.
fn assigned_variable(source: &Source, ancestors: &[Node<'_>]) -> Option<String> {
    let parent = c::ancestor(ancestors, 0)?;
    let target = match parent.kind() {
        "init_declarator" => parent.child_by_field_name("declarator")?,
        "assignment_expression" => parent.child_by_field_name("left")?,
        _ => return None,
    };
    (target.kind() == "identifier").then(|| source.text(target).to_owned())
}

/// An `.op2` literal of a captured number of type `ty`, or `None` when
/// `.op2` cannot write it (not finite).
fn literal(ty: &str, text: &str) -> Option<String> {
    match ty {
        "double" => {
            let v: f64 = text.parse().ok()?;
            v.is_finite().then(|| format!("{v:?}"))
        }
        "float" => {
            let v: f32 = text.parse().ok()?;
            v.is_finite().then(|| format!("{v:?}f"))
        }
        "bool" => Some(if text == "0" { "false" } else { "true" }.to_owned()),
        "uint" | "ull" => Some(format!("{text}u")),
        _ => Some(text.to_owned()),
    }
}

/// A captured value as an `.op2` initialiser.
fn initialiser(name: &str, value: &Value, report: &mut Report) -> String {
    let items: Vec<String> = value
        .values
        .iter()
        .map(|v| {
            literal(&value.ty, v).unwrap_or_else(|| {
                // An infinity was meant (`double lo = INFINITY;`, the start
                // of a MIN reduction): not translated, since a POETS
                // initialiser holds finite values only. A NaN is most
                // likely an uninitialised variable, set before it is read.
                let infinite = v.trim_start_matches(['-', '+']).starts_with("inf");
                if infinite {
                    report.add(
                        Kind::NotTranslated,
                        None,
                        format!("`{name}` held `{v}` where the run stopped, which a `.op2` initialiser cannot hold (POETS initialisers are finite); it would start at 0"),
                        Some("start it at a finite value (`DBL_MAX` for a MIN reduction, `-DBL_MAX` for a MAX)"),
                    );
                } else {
                    report.add(
                        Kind::Dropped,
                        None,
                        format!("`{name}` held `{v}` where the run stopped (uninitialised?), which `.op2` cannot write; it starts at 0"),
                        None,
                    );
                }
                "0".to_owned()
            })
        })
        .collect();
    if value.array {
        format!("{{{}}}", items.join(", "))
    } else {
        items.join("")
    }
}

fn element_type(ty: &str, dim: usize) -> String {
    if dim == 1 {
        ty.to_owned()
    } else {
        format!("{ty}[{dim}]")
    }
}

#[allow(clippy::too_many_arguments)]
fn program_text(
    main_source: &Source,
    capture: &Capture,
    names: &Names,
    consts: &BTreeMap<String, Location>,
    kernel_reads: &BTreeSet<String>,
    host: &host::Host,
    declared: &BTreeMap<String, Declared>,
    decl_sites: &BTreeMap<String, Location>,
    kernels: &[kernel::Kernel],
    main_fn: Node<'_>,
    buffers: &BTreeMap<String, host::Buffer>,
    report: &mut Report,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Imported by `op2 import` from {}. Every item names the C code it came from.\n",
        main_source.display
    );
    let from = |at: Option<&Location>| match at {
        Some(at) => format!("// from {}:{}\n", at.file, at.line),
        None => String::new(),
    };
    let values: BTreeMap<&str, &Value> = capture
        .values
        .iter()
        .map(|(n, v)| (n.as_str(), v))
        .collect();
    let mut locals = String::new();
    let mut globals = String::new();
    for (name, value) in &values {
        let ty = element_type(&value.ty, if value.array { value.values.len() } else { 1 });
        let site = consts
            .get(*name)
            .or_else(|| declared.get(*name).map(|d| &d.location));
        let init = initialiser(name, value, report);
        let op2 = op2_name(name);
        let is_const = consts.contains_key(*name) || kernel_reads.contains(*name);
        if host.globals.contains_key(*name) {
            let _ = write!(
                globals,
                "{}global {op2}: {ty} = {init};\n\n",
                from(host.globals.get(*name))
            );
            report.add(
                Kind::Captured,
                site.cloned(),
                format!("global `{name}`, starting at its value where the set-up ended"),
                None,
            );
        } else if host.assigned.contains(*name) {
            if is_const {
                report.add(
                    Kind::NotTranslated,
                    site.cloned(),
                    format!("`{name}` is a const of the kernels but the host code assigns it"),
                    None,
                );
            }
            let (base, dims) = match ty.find('[') {
                Some(open) => (&ty[..open], &ty[open..]),
                None => (ty.as_str(), ""),
            };
            let _ = writeln!(
                locals,
                "{base} {op2}{dims} = {init}; // captured from {}",
                site.map_or(String::new(), |s| format!("{}:{}", s.file, s.line))
            );
            report.add(
                Kind::Captured,
                site.cloned(),
                format!("host variable `{name}`, a local of `main` starting at its captured value"),
                None,
            );
        } else {
            let _ = write!(out, "{}const {op2}: {ty} = {init};\n\n", from(site));
            report.add(
                Kind::Captured,
                site.cloned(),
                format!("const `{name}`"),
                None,
            );
        }
    }
    // Where each set, map and dat is declared, by its `.op2` name.
    let decl_sites: BTreeMap<String, &Location> = decl_sites
        .iter()
        .map(|(name, at)| (op2_name(name), at))
        .collect();
    for (i, set) in capture.sets.iter().enumerate() {
        let name = names.set(i);
        let _ = write!(
            out,
            "{}set {name}; // {} when captured\n\n",
            from(decl_sites.get(&name).copied()),
            report::count(set.size, "element", "elements")
        );
    }
    for (i, map) in capture.maps.iter().enumerate() {
        let name = names.map(i);
        let _ = write!(
            out,
            "{}map {name}: {} -> {}[{}];\n\n",
            from(decl_sites.get(&name).copied()),
            names.set(map.from),
            names.set(map.to),
            map.dim
        );
    }
    for (i, dat) in capture.dats.iter().enumerate() {
        let name = names.dats[i].clone();
        let _ = write!(
            out,
            "{}dat {name}: {} on {};\n\n",
            from(decl_sites.get(&name).copied()),
            element_type(&dat.ty, dat.dim),
            names.set(dat.set)
        );
    }
    out.push_str(&globals);
    for (name, ty) in &host.hoisted {
        let _ = write!(
            out,
            "{}global {}: {ty};\n\n",
            from(host.globals.get(name)),
            op2_name(name)
        );
    }
    // Host buffers the translated code reads: globals that start with the
    // values the dat was declared with (OP2 copies them at `op_decl_dat`),
    // and that `op_fetch_data` fills.
    for (name, buffer) in buffers
        .iter()
        .filter(|(name, _)| host.referenced.contains(*name) || host.fetched.contains(*name))
    {
        let Some(dat) = names
            .dats
            .iter()
            .position(|d| *d == buffer.dat)
            .and_then(|i| capture.dats.get(i))
        else {
            continue;
        };
        // A global of `.op2` is at most this long: a larger one is said
        // here, before its initialiser is made.
        if buffer.len > op2_analysis::MAX_DIMENSION as usize {
            report.add(
                Kind::NotTranslated,
                declared.get(name).map(|d| d.location.clone()),
                format!(
                    "`{name}`, the values of dat `{}` that the host code reads, holds {}; a global of `.op2` holds at most {}",
                    buffer.dat,
                    report::count(buffer.len, "value", "values"),
                    op2_analysis::MAX_DIMENSION
                ),
                Some("read the dat's values through a par_loop"),
            );
            continue;
        }
        let values: Vec<String> = match &dat.data {
            Some(data) => data
                .iter()
                .map(|v| literal(&buffer.ty, v).unwrap_or_else(|| "0".to_owned()))
                .collect(),
            None => vec!["0".to_owned(); buffer.len],
        };
        let site = declared.get(name).map(|d| &d.location);
        let _ = write!(
            out,
            "{}global {}: {}[{}] = {{{}}};\n\n",
            from(site),
            op2_name(name),
            buffer.ty,
            buffer.len,
            values.join(", ")
        );
        report.add(
            Kind::Captured,
            site.cloned(),
            format!(
                "host buffer `{name}` of dat `{}`: a global starting with the values the dat was declared with",
                buffer.dat
            ),
            None,
        );
    }
    for name in &host.temporaries {
        let Some(dat) = capture
            .handles
            .iter()
            .find(|(n, kind, _)| n == name && *kind == "dat")
            .and_then(|(_, _, i)| capture.dats.get(*i))
        else {
            continue;
        };
        let _ = write!(
            out,
            "// zeroes the temporary dat `{name}` where the application declares it (`op_decl_dat_temp`)\nkernel {zero}({ty} *d) {{\n    for (int c = 0; c < {dim}; c++)\n        d[c] = 0;\n}}\n\n",
            zero = c::generated_name(&format!("op2_zero_{}", op2_name(name))),
            ty = dat.ty,
            dim = dat.dim,
        );
    }
    for kernel in kernels {
        out.push_str(&kernel.text);
        out.push('\n');
    }
    let at = main_source.location(main_fn);
    let _ = write!(
        out,
        "// from {}:{}\nmain {{\n{locals}{}\n}}\n",
        at.file, at.line, host.text
    );
    out
}

/// Analyses the translated program; its errors make the import unfaithful.
/// The analysis, when the program has no errors.
fn check_program(path: &Path, text: &str, report: &mut Report) -> Option<op2_analysis::Analysis> {
    let parse = op2_syntax::Parse::new(text);
    let analysis = op2_analysis::Analyser::new().analyse(
        path,
        &parse,
        &op2_analysis::NoImports,
        &op2_analysis::Options { require_main: true },
    );
    let index = op2_syntax::LineIndex::new(text);
    let errors: Vec<_> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.severity == op2_syntax::Severity::Error)
        .collect();
    if !report.faithful() && !errors.is_empty() {
        // They follow from what is reported already; one line says so.
        report.add(
            Kind::NotTranslated,
            None,
            format!(
                "the translated program has {}, which {} from the constructs above",
                report::count(errors.len(), "error", "errors"),
                if errors.len() == 1 {
                    "follows"
                } else {
                    "follow"
                }
            ),
            Some(&format!("`op2 check {}` lists them", path.display())),
        );
        return None;
    }
    let clean = errors.is_empty();
    for diagnostic in errors {
        let at = index.line_col(diagnostic.location.range.start, op2_syntax::Encoding::Utf32);
        report.add(
            Kind::NotTranslated,
            None,
            format!(
                "the translated program has an error at {}:{}:{}: {}[{}]: {}",
                path.display(),
                at.line + 1,
                at.col + 1,
                diagnostic.severity.as_str(),
                diagnostic.code.as_str(),
                diagnostic.message
            ),
            Some("edit the C construct it came from, or the `.op2` file"),
        );
    }
    clean.then_some(analysis)
}

/// A captured number as JSON.
fn json_number(ty: &str, text: &str) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    match ty {
        "double" => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(J::Number),
        "float" => text
            .parse::<f32>()
            .ok()
            .and_then(|v| serde_json::Number::from_f64(f64::from(v)))
            .map(J::Number),
        "bool" => Some(J::Bool(text != "0")),
        "uint" | "ull" => text.parse::<u64>().ok().map(|v| J::Number(v.into())),
        _ => text.parse::<i64>().ok().map(|v| J::Number(v.into())),
    }
}

/// The instance: every set's size, every map and every dat with data.
fn instance_json(capture: &Capture, names: &Names, report: &mut Report) -> String {
    use serde_json::{Map, Value as J};
    let mut sets = Map::new();
    for (i, set) in capture.sets.iter().enumerate() {
        sets.insert(names.set(i), J::from(set.size));
    }
    let mut maps = Map::new();
    for (i, map) in capture.maps.iter().enumerate() {
        if let Some(data) = &map.data {
            let rows = data
                .chunks(map.dim.max(1))
                .map(|row| J::from(row.to_vec()))
                .collect();
            maps.insert(names.map(i), J::Array(rows));
        } else {
            report.add(
                Kind::NotTranslated,
                None,
                format!("map `{}` was declared without data", names.map(i)),
                None,
            );
        }
    }
    let mut dats = Map::new();
    for (i, dat) in capture.dats.iter().enumerate() {
        let Some(data) = &dat.data else { continue };
        let name = &names.dats[i];
        let mut bad = 0usize;
        let values: Vec<J> = data
            .iter()
            .map(|v| {
                json_number(&dat.ty, v).unwrap_or_else(|| {
                    bad += 1;
                    J::from(0)
                })
            })
            .collect();
        if bad > 0 {
            report.add(
                Kind::NotTranslated,
                None,
                format!(
                    "dat `{name}` holds {} not finite numbers; the instance has 0 in their place",
                    report::count(bad, "value that is", "values that are")
                ),
                None,
            );
        }
        // A dimension of 0 (which `.op2` refuses, and the check says so)
        // has no values to make rows of.
        let value = if dat.dim <= 1 {
            J::Array(values)
        } else {
            J::Array(
                values
                    .chunks(dat.dim)
                    .map(|row| J::Array(row.to_vec()))
                    .collect(),
            )
        };
        dats.insert(name.clone(), value);
    }
    let mut root = Map::new();
    root.insert("sets".into(), J::Object(sets));
    root.insert("maps".into(), J::Object(maps));
    root.insert("dats".into(), J::Object(dats));
    let mut text = serde_json::to_string(&J::Object(root)).unwrap_or_default();
    text.push('\n');
    text
}

/// `op_dat NAME = op_decl_dat_temp(SET, DIM, "TYPE", DATA, "…");` in the host
/// code.
struct Temporary {
    /// The handle variable.
    name: String,
    /// The set, dimension and element type, as written.
    set: String,
    dim: String,
    ty: String,
    /// Where the call starts (a byte offset of the main file).
    call: usize,
    location: Location,
}

/// The temporary dats `statements` declare in the form above, with a set
/// variable, a dimension of digits or a variable, and a scalar C type.
fn temporary_dats(source: &Source, statements: &[Node<'_>]) -> Vec<Temporary> {
    let mut found = Vec::new();
    for statement in statements {
        walk(*statement, |node, _| {
            if node.kind() != "declaration" {
                return true;
            }
            let Some(declarator) = node
                .child_by_field_name("declarator")
                .filter(|d| d.kind() == "init_declarator")
            else {
                return false;
            };
            let (Some(ident), Some(call)) = (
                declarator
                    .child_by_field_name("declarator")
                    .filter(|i| i.kind() == "identifier"),
                declarator.child_by_field_name("value"),
            ) else {
                return false;
            };
            if c::called_name(source, call) != Some("op_decl_dat_temp") {
                return false;
            }
            let args = c::call_arguments(call);
            let simple = |n: &Node<'_>| matches!(n.kind(), "identifier" | "number_literal");
            if let [set, dim, ty, _, _] = args[..]
                && set.kind() == "identifier"
                && simple(&dim)
                && let Some(ty) = c::string_literal(source, ty)
                && scalar_type(&ty).is_some()
                && ty.bytes().all(|b| b.is_ascii_alphanumeric() || b == b' ')
            {
                found.push(Temporary {
                    name: source.text(ident).to_owned(),
                    set: source.text(set).to_owned(),
                    dim: source.text(dim).to_owned(),
                    ty,
                    call: call.start_byte(),
                    location: source.location(call),
                });
            }
            false
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(entries: usize, dim: usize, mode: &'static str) -> host::ArgUse {
        host::ArgUse {
            mode: Some(mode),
            dim: Some(dim),
            direct: false,
            entries: Some(entries),
        }
    }

    #[test]
    fn a_kernels_vector_map_arguments_must_agree_across_its_par_loops() {
        let direct = host::ArgUse {
            mode: Some("READ"),
            dim: Some(1),
            direct: true,
            entries: None,
        };
        let loops = vec![
            vec![
                vector(4, 2, "READ"),
                direct,
                vector(2, 1, "INC"),
                vector(2, 1, "RW"),
            ],
            vec![vector(4, 2, "READ"), direct, vector(2, 1, "RW"), direct],
        ];
        let found = vectors(Some(&loops));
        assert_eq!(
            found,
            BTreeMap::from([
                (
                    0,
                    Ok(kernel::Vector {
                        entries: 4,
                        dim: 2,
                        mode: "READ"
                    })
                ),
                // Another mode, and no vector at all, in the second loop.
                (
                    2,
                    Err("its par_loops pass vector-map arguments that differ in entries, dimension or mode".to_owned())
                ),
                (
                    3,
                    Err("a par_loop running the kernel passes no vector-map argument there".to_owned())
                ),
            ])
        );
        // A vector-map INC argument is not staged as a plain INC one.
        assert!(increments(Some(&loops)).is_empty());
        // Without a literal dimension it cannot be copied.
        let unknown = vec![vec![host::ArgUse {
            dim: None,
            ..vector(2, 1, "READ")
        }]];
        assert_eq!(
            vectors(Some(&unknown)),
            BTreeMap::from([(0, Err("its dimension is not an integer literal".to_owned()))])
        );
        // Nor when it is too large to copy (the host code reports it; the
        // kernel must not make a billion parameters).
        let huge = vec![vec![vector(1 << 30, 1, "READ")]];
        assert_eq!(
            vectors(Some(&huge)),
            BTreeMap::from([(0, Err("it copies more than 1024 values".to_owned()))])
        );
        // A dimension of 0 neither makes the entries free nor is copied.
        let empty = vec![vec![vector(3_000_000, 0, "READ")]];
        assert_eq!(
            vectors(Some(&empty)),
            BTreeMap::from([(0, Err("its dimension is 0".to_owned()))])
        );
    }

    /// The main file's `#define`s as the preprocessor's table (no
    /// conditionals, nothing included).
    fn written_macros(main: Instrumented) -> Result<String, CaptureError> {
        let source =
            Source::parse(&main.main, String::new(), main.text).map_err(CaptureError::Io)?;
        Ok(c::write_macro_table(&c::defines(&source)))
    }

    /// The translation of the main file `text` with the capture read from
    /// the recorder's `capture` text (nothing compiled or run).
    fn translated(text: &str, capture: &str) -> Result<Translation, ImportError> {
        translated_and_instrumented(text, capture).0
    }

    /// [`translated`], with the text the capture was asked to run.
    fn translated_and_instrumented(
        text: &str,
        capture: &str,
    ) -> (Result<Translation, ImportError>, String) {
        let main = PathBuf::from("app/app.cpp");
        let files = BTreeMap::from([(main.clone(), text.to_owned())]);
        let mut instrumented = String::new();
        let mut run = |asked: Instrumented| {
            instrumented = asked.text;
            capture::parse(capture).map_err(CaptureError::Malformed)
        };
        let translation = translate(
            &main,
            &[],
            Path::new(""),
            &files,
            &mut written_macros,
            &mut run,
        );
        (translation, instrumented)
    }

    /// An application whose kernel `k1` runs in a host loop, with `top`
    /// before the kernel, `kernel` at the end of its body and `host` after
    /// the par_loop: inputs of generated size.
    fn generated_app(top: &str, kernel: &str, host: &str) -> String {
        format!(
            "#include \"op_seq.h\"\n{top}void k1(double *g) {{\n  g[0] += 1.0;\n{kernel}}}\nint main(int argc, char **argv) {{\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  for (int r = 0; r < 2; r++) {{\n    double acc[1] = {{0.0}};\n    op_par_loop(k1, \"k1\", cells, op_arg_gbl(acc, 1, \"double\", OP_INC));\n{host}    op_printf(\"%g\\n\", acc[0]);\n  }}\n}}\n"
        )
    }

    /// The translation of `app`, which must take less than 10 s: a limit
    /// that the translation of these inputs meets many times over, and
    /// that the quadratic walks they were written against (measured in
    /// docs/reliability.md) missed several times over.
    fn translated_in_linear_time(app: &str) -> Translation {
        let started = std::time::Instant::now();
        let translation =
            translated(app, "set 0 1\nhandle cells set 0\nstop\n").expect("a translation");
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(10),
            "{} bytes took {took:?}",
            app.len()
        );
        translation
    }

    #[test]
    fn an_op_decl_const_of_a_set_up_functions_local_is_reported_where_it_is_made() {
        let app = "#include \"op_seq.h\"\nvoid k1(double *g) { g[0] += 1.0; }\nvoid setup() {\n  double local = 2.0;\n  op_decl_const(1, \"double\", &local);\n}\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  setup();\n  double acc[1] = {0.0};\n  op_par_loop(k1, \"k1\", cells, op_arg_gbl(acc, 1, \"double\", OP_INC));\n}\n";
        let translation =
            translated(app, "set 0 1\nhandle cells set 0\nstop\n").expect("a translation");
        let (entry, location) = reported(&translation, "`op_decl_const` of `local`");
        assert_eq!(
            entry.message,
            "`op_decl_const` of `local` in `setup`, which is not a global variable; the capture, made in `main`, can read only `main`'s variables and globals"
        );
        assert_eq!(location.as_deref(), Some("app/app.cpp:5:3"));
    }

    #[test]
    fn many_kernels_each_after_a_redefinition_are_translated_in_linear_time() {
        // 3,000 kernels, each after `#undef N` / `#define N i.0`, as the
        // preprocessor's stream (`-E -dD`) places them: the first 16 places
        // get their own tables, the others are reported and take the last.
        let n = 3_000;
        let mut top = String::new();
        let mut stream = String::from("# 1 \"app/app.cpp\"\n");
        let mut host = String::new();
        for i in 0..n {
            // `#include` is line 1, and each kernel's three lines follow.
            let line = 2 + 3 * i;
            top.push_str(&format!(
                "#undef N\n#define N {i}.0\nvoid k{i}(double *x) {{ *x = N; }}\n"
            ));
            stream.push_str(&format!(
                "# {line} \"app/app.cpp\"\n#undef N\n#define N {i}.0\n"
            ));
            host.push_str(&format!(
                "  op_par_loop(k{i}, \"k{i}\", cells, op_arg_dat(p_x, -1, OP_ID, 1, \"double\", OP_WRITE));\n"
            ));
        }
        let app = format!(
            "#include \"op_seq.h\"\n{top}int main(int argc, char **argv) {{\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  op_dat p_x = op_decl_dat(cells, 1, \"double\", 0, \"p_x\");\n{host}}}\n"
        );
        let main = PathBuf::from("app/app.cpp");
        let files = BTreeMap::from([(main.clone(), app.clone())]);
        let mut macros = |_: Instrumented| Ok(stream.clone());
        let mut run = |_: Instrumented| {
            capture::parse(
                "set 0 1\nhandle cells set 0\ndat 0 0 1 double\nnull\nhandle p_x dat 0\nstop\n",
            )
            .map_err(CaptureError::Malformed)
        };
        let started = std::time::Instant::now();
        let translation = translate(&main, &[], Path::new(""), &files, &mut macros, &mut run)
            .expect("a translation");
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(10),
            "{} bytes took {took:?}",
            app.len()
        );
        for i in 0..16 {
            assert!(
                translation
                    .program
                    .contains(&format!("kernel k{i}(double *x) {{\n    *x = {i}.0;")),
                "{i}"
            );
        }
        let last = n - 1;
        assert!(
            translation
                .program
                .contains(&format!("kernel k{last}(double *x) {{\n    *x = {last}.0;"))
        );
        let reported = translation
            .report
            .entries
            .iter()
            .filter(|e| e.message.contains("at most 16 such places"))
            .count();
        // The last kernel is where the unit ends: its own table.
        assert_eq!(reported, n - 16 - 1);
    }

    #[test]
    fn a_kernels_printf_of_many_arguments_is_translated_in_linear_time() {
        // Each string argument of a kernel's `printf` collected the whole
        // argument list to ask whether it was the format: 10,000 arguments
        // (50 KB) took 47 s.
        let kernel = format!("  printf(\"%g\\n\"{});\n", ", \"s\"".repeat(10_000));
        let translation = translated_in_linear_time(&generated_app("", &kernel, ""));
        // The format is still told from the other strings, which `.op2`
        // cannot print and are reported.
        assert!(
            translation
                .program
                .contains("print(\"%g\\n\", \"s\", \"s\"")
        );
        let strings = translation
            .report
            .entries
            .iter()
            .filter(|e| {
                e.message
                    .starts_with("string literal is not in the kernel subset")
            })
            .count();
        assert_eq!(strings, 10_000);
    }

    #[test]
    fn a_declaration_of_many_host_function_calls_is_translated_in_linear_time() {
        // Each call counted every declarator of its declaration to ask
        // whether it was the only one: 8,000 (167 KB) took 52 s.
        let top = "static double one(double x) { return x + 1.0; }\n";
        let declarators: Vec<String> = (0..8_000).map(|i| format!("v{i} = one(acc[0])")).collect();
        let host = format!("    double {};\n", declarators.join(", "));
        let translation = translated_in_linear_time(&generated_app(top, "", &host));
        // Such a call is still reported, as what it is, at its declarator:
        // only a declaration's only declarator can take an inlined call's
        // result.
        let (entry, location) = reported(&translation, "one of several variables");
        assert_eq!(
            entry.message,
            "call to `one`, which op2 import cannot inline: it initialises `v0`, one of several variables this declaration declares; op2 import inlines a call whose result initialises a declaration's only variable (`T x = f(…);`)"
        );
        assert_eq!(location.as_deref(), Some("app/app.cpp:12:12"));
    }

    #[test]
    fn the_text_macros_put_into_the_host_code_is_bounded() {
        // Each use of an object-like macro in the host code copied its
        // expansion, up to a mebibyte, with no bound in all: 20,000 uses
        // of a 900 KB macro were 18 GB. 45 uses of a 100 KB one would be
        // 4.5 MB: those past the limit are reported, not expanded.
        let terms = vec!["1.0"; 25_000].join("+");
        let top = format!("#define BIG ({terms})\n");
        let host = "    acc[0] = BIG;\n".repeat(45);
        let translation = translated(
            &generated_app(&top, "", &host),
            "set 0 1\nhandle cells set 0\nstop\n",
        )
        .expect("a translation");
        let (entry, _) = reported(&translation, "the macro `BIG` is not expanded");
        assert_eq!(
            entry.message,
            format!(
                "the macro `BIG` is not expanded: the functions inlined and the macros expanded into the host code come to more than {} MiB of text",
                host::HOST_TEXT_LIMIT >> 20
            )
        );
        // The uses within the limit are expanded, the rest reported; the
        // program spaces the operators out (`1.0 + 1.0`).
        let body = terms.len() + 2;
        let left = translation.program.matches("acc[0] = BIG;").count();
        assert_eq!(left, 45 - host::HOST_TEXT_LIMIT / body);
        assert!(
            translation.program.len() < 2 * host::HOST_TEXT_LIMIT,
            "{} bytes",
            translation.program.len()
        );
    }

    #[test]
    fn a_host_function_of_a_long_else_if_chain_is_inlined_in_linear_time() {
        // Each `if` of the chain that ends the function was walked whole
        // to find whether it held a `return`: 4,000 `else if`s (138 KB)
        // took 43 s.
        let chain: String = (0..4_000)
            .map(|i| format!("  else if (x < {i}.5) x = {i}.0;\n"))
            .collect();
        let top = format!(
            "static double pick(double x) {{\n  if (x < 0.0) x = 0.0;\n{chain}  else return -1.0;\n}}\n"
        );
        let app = generated_app(&top, "", "    acc[0] = pick(acc[0]);\n");
        let translation = translated_in_linear_time(&app);
        // Inlined, its one `return` assigning the result.
        reported(&translation, "call to `pick`, inlined");
        assert!(
            translation.program.contains("else acc[0] = -1.0;\n"),
            "{}",
            &translation.program[translation.program.len().saturating_sub(800)..]
        );
    }

    /// The translation of an application of several files (`files`, by
    /// path under `app/`, the first the main file; `units` its other
    /// translation units), each unit's macros read from its own text.
    fn translated_units(
        files: &[(&str, &str)],
        units: &[&str],
        capture: &str,
    ) -> Result<Translation, ImportError> {
        let path = |name: &str| match name.strip_prefix("/") {
            Some(outside) => PathBuf::from(outside),
            None => Path::new("app").join(name),
        };
        let main = path(files[0].0);
        let files: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(name, text)| (path(name), (*text).to_owned()))
            .collect();
        let units: Vec<PathBuf> = units.iter().map(|u| path(u)).collect();
        // OP2's own headers, where a user's `-I` might name them.
        let include_dirs = [PathBuf::from("op2")];
        let mut run = |_: Instrumented| capture::parse(capture).map_err(CaptureError::Malformed);
        // The main file's table has every header's macros after its own;
        // another unit's, its own only.
        let mut macros = |unit: Instrumented| {
            let mut text = unit.text;
            if unit.main == main {
                for (path, header) in &files {
                    if path.extension().is_some_and(|e| e == "h") {
                        text.push_str(header);
                    }
                }
            }
            written_macros(Instrumented {
                main: unit.main,
                text,
            })
        };
        translate_units(
            &main,
            &Given {
                units: &units,
                include_dirs: &include_dirs,
                unit_flags: &BTreeMap::new(),
            },
            Path::new(""),
            &files,
            &mut macros,
            &mut run,
        )
    }

    /// The macro tables of all the units together are bounded: each
    /// unit's is at most 4 MiB, and 1,023 units could have kept gigabytes.
    #[test]
    fn the_macro_tables_of_all_units_together_are_bounded() {
        let count = MACRO_TEXT_LIMIT / (4 << 20) + 1;
        let names: Vec<String> = (0..count).map(|i| format!("u{i}.cpp")).collect();
        let mut files = vec![("app.cpp", UNITS_MAIN)];
        files.extend(names.iter().map(|name| (name.as_str(), "int unused();\n")));
        let files: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(name, text)| (Path::new("app").join(name), (*text).to_owned()))
            .collect();
        let units: Vec<PathBuf> = names.iter().map(|n| Path::new("app").join(n)).collect();
        // Each unit's macros just under the preprocessor's 4 MiB.
        let body = "x ".repeat((4 << 20) / 2 - 64);
        let mut macros = |_: Instrumented| Ok(format!("#define BIG {body}\n"));
        let mut run = |_: Instrumented| -> Result<Capture, CaptureError> {
            panic!("no capture past the macros")
        };
        let error = translate_units(
            Path::new("app/app.cpp"),
            &Given {
                units: &units,
                include_dirs: &[],
                unit_flags: &BTreeMap::new(),
            },
            Path::new(""),
            &files,
            &mut macros,
            &mut run,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "the preprocessor's macros and line markers of the {} translation units come to more than 64 MiB together: import fewer of the application's units at once",
                count
            )
        );
    }

    const UNITS_MAIN: &str = "#include \"op_seq.h\"\n#include \"app.h\"\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(4, \"cells\");\n  op_dat p_x = op_decl_dat(cells, 1, \"double\", x, \"p_x\");\n  op_par_loop(step, \"step\", cells, op_arg_dat(p_x, -1, OP_ID, 1, \"double\", OP_RW));\n  double y = twice(1.0);\n  op_printf(\"%g\\n\", y);\n}\n";
    const UNITS_CAPTURE: &str =
        "set 0 4\ndat 0 0 1 double\n0 0 0 0\nhandle cells set 0\nhandle p_x dat 0\nstop\n";

    #[test]
    fn kernels_and_host_functions_are_found_in_other_units_and_nested_headers() {
        // `app.h` includes `kernels/step.h`, which includes `../app.h`
        // again (read once); `twice` is defined in another unit.
        let translation = translated_units(
            &[
                ("app.cpp", UNITS_MAIN),
                (
                    "app.h",
                    "#ifndef APP_H\n#define APP_H\n#include \"kernels/step.h\"\ndouble twice(double v);\n#endif\n",
                ),
                (
                    "kernels/step.h",
                    "#include \"../app.h\"\n#define STEP 1.5\ninline void step(double *x) { *x += STEP; }\n",
                ),
                ("host.cpp", "double twice(double v) { return 2.0 * v; }\n"),
                // The compiler finds the recorder's `op_seq.h` first: OP2's
                // own, in a `-I` directory, is never read.
                (
                    "/op2/op_seq.h",
                    "template <class... A> void op_par_loop(A...) {}\ninline void step(double *x) {}\n",
                ),
            ],
            &["host.cpp"],
            UNITS_CAPTURE,
        )
        .unwrap();
        assert!(translation.report.faithful(), "{}", translation.report);
        assert!(!translation.report.to_string().contains("op2/op_seq.h"));
        assert!(translation.program.contains("// from app/kernels/step.h:3"));
        assert!(
            translation.program.contains("*x += 1.5;"),
            "{}",
            translation.program
        );
        assert!(
            translation.program.contains("2.0 * "),
            "{}",
            translation.program
        );
    }

    #[test]
    fn the_note_on_a_database_names_its_first_entries_and_counts_the_others() {
        assert_eq!(entries_used(&[3]), "entry `[3]`");
        assert_eq!(entries_used(&[0, 2]), "entries `[0]`, `[2]`");
        let many: Vec<usize> = (0..201).collect();
        assert_eq!(
            entries_used(&many),
            "entries `[0]`, `[1]`, `[2]`, `[3]`, `[4]`, `[5]`, `[6]`, `[7]` and 193 more"
        );
    }

    #[test]
    fn an_application_of_many_units_is_translated_in_linear_time() {
        // 1,000 units (near the 1,024 files an import reads), each with a
        // macro of its own and `SCALE` defined differently from the main
        // file's: 200 took 0.2 s and 1,000 took 1.1 s.
        let n = 1_000;
        let names: Vec<String> = (0..n).map(|i| format!("u{i}.cpp")).collect();
        let texts: Vec<String> = (0..n)
            .map(|i| {
                format!("#define U{i} {i}.0\n#define SCALE {i}.5\ndouble f{i}(double v) {{ return v * SCALE + U{i}; }}\n")
            })
            .collect();
        let mut files = vec![
            ("app.cpp", UNITS_MAIN),
            (
                "app.h",
                "#define SCALE 2.0\ninline void step(double *x) { *x += SCALE; }\ndouble twice(double v);\n",
            ),
            ("host.cpp", "double twice(double v) { return 2.0 * v; }\n"),
        ];
        files.extend(
            names
                .iter()
                .map(String::as_str)
                .zip(texts.iter().map(String::as_str)),
        );
        let mut units = vec!["host.cpp"];
        units.extend(names.iter().map(String::as_str));
        let started = std::time::Instant::now();
        let translation = translated_units(&files, &units, UNITS_CAPTURE).expect("a translation");
        let took = started.elapsed();
        assert!(
            took < std::time::Duration::from_secs(10),
            "{n} units took {took:?}"
        );
        // The main file's kernel with the main file's `SCALE`.
        assert!(
            translation.program.contains("*x += 2.0;"),
            "{}",
            translation.program
        );
        assert!(translation.report.faithful(), "{}", translation.report);
    }

    #[test]
    fn a_function_defined_in_two_units_is_reported_where_defined_again() {
        let translation = translated_units(
            &[
                ("app.cpp", UNITS_MAIN),
                ("app.h", "#include \"step.h\"\ndouble twice(double v);\n"),
                ("step.h", "inline void step(double *x) { *x += 1.0; }\n"),
                (
                    "other.cpp",
                    "static void step(double *x) { *x += 2.0; }\ndouble twice(double v) { return 2.0 * v; }\n",
                ),
                ("third.cpp", "\n\ndouble twice(double v) { return v + v; }\n"),
                // Defined twice, but nothing the translation runs calls it.
                ("unused.cpp", "static int usage() { return 1; }\n"),
                ("unused2.cpp", "static int usage() { return 2; }\n"),
            ],
            &["other.cpp", "third.cpp", "unused.cpp", "unused2.cpp"],
            UNITS_CAPTURE,
        )
        .unwrap();
        let (entry, at) = reported(&translation, "`step` is defined here and at");
        assert_eq!(entry.kind, Kind::NotTranslated);
        assert_eq!(at.as_deref(), Some("app/other.cpp:1:1"));
        assert!(
            entry.message.contains("app/step.h:1:1"),
            "{}",
            entry.message
        );
        let (_, at) = reported(
            &translation,
            "`twice` is defined here and at app/other.cpp:2:1",
        );
        assert_eq!(at.as_deref(), Some("app/third.cpp:3:1"));
        assert!(
            !translation
                .report
                .entries
                .iter()
                .any(|e| e.message.contains("usage")),
            "{}",
            translation.report
        );
    }

    #[test]
    fn what_another_unit_defines_and_the_main_file_cannot_name_is_reported() {
        // The kernel's global, defined in its unit and declared nowhere the
        // main file sees; a kernel no file defines.
        let main = UNITS_MAIN.replace(
            "  double y",
            "  op_par_loop(gone, \"gone\", cells, op_arg_dat(p_x, -1, OP_ID, 1, \"double\", OP_RW));\n  double y",
        );
        let translation = translated_units(
            &[
                ("app.cpp", &main),
                (
                    "app.h",
                    "#define SCALE 3.0\nvoid step(double *x);\ninline double twice(double v) { return SCALE * v; }\n",
                ),
                (
                    "kernels.cpp",
                    "#define SCALE 2.0\ndouble gain = 2.0;\nvoid step(double *x) { *x *= gain * SCALE; }\n",
                ),
            ],
            &["kernels.cpp"],
            UNITS_CAPTURE,
        )
        .unwrap();
        let (_, at) = reported(
            &translation,
            "`gain` is a variable of another translation unit",
        );
        assert_eq!(at.as_deref(), Some("app/kernels.cpp:2:8"));
        // The kernel of the unit that defines `SCALE` as 2.0 is expanded
        // with its unit's definition, not reported.
        assert!(
            !translation
                .report
                .entries
                .iter()
                .any(|e| e.message.contains("defined here differently")),
            "{}",
            translation.report
        );
        assert!(
            translation.program.contains("*x *= gain * 2.0;"),
            "{}",
            translation.program
        );
        let (entry, at) = reported(&translation, "kernel `gone` is not defined");
        assert!(entry.message.contains("the other sources given"));
        assert_eq!(at.as_deref(), Some("app/app.cpp:8:3"));
    }

    #[test]
    fn the_files_an_import_reads_are_bounded_in_number() {
        // A chain of headers, each including the next: read breadth first
        // without recursion, and refused past the limit at the `#include`
        // that goes over it.
        let names: Vec<String> = (0..units::MAX_FILES + 4)
            .map(|i| format!("h{i}.h"))
            .collect();
        let texts: Vec<String> = (0..names.len())
            .map(|i| match names.get(i + 1) {
                Some(next) => format!("#include \"{next}\"\n"),
                None => String::new(),
            })
            .collect();
        let main = format!("#include \"h0.h\"\n{UNITS_MAIN}");
        let mut files = vec![("app.cpp", main.as_str())];
        files.extend(
            names
                .iter()
                .map(String::as_str)
                .zip(texts.iter().map(String::as_str)),
        );
        let error = translated_units(&files, &[], UNITS_CAPTURE).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("app/h{}.h:1:1: ", units::MAX_FILES - 1)),
            "{text}"
        );
        assert!(text.contains("more than 1024 files"), "{text}");
        // A unit given twice, or naming the main file, is refused.
        let error =
            translated_units(&[("app.cpp", UNITS_MAIN)], &["./app.cpp"], "stop\n").unwrap_err();
        assert!(error.to_string().contains("is given twice"), "{error}");
        // A header given as a unit is refused: it is read where included.
        let error = translated_units(
            &[("app.cpp", UNITS_MAIN), ("app.h", "")],
            &["app.h"],
            "stop\n",
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("`app/app.h` is not a C/C++ source"),
            "{error}"
        );
    }

    /// The report's entry whose message contains `text`, and where.
    fn reported<'t>(translation: &'t Translation, text: &str) -> (&'t Entry, Option<String>) {
        let entry = translation
            .report
            .entries
            .iter()
            .find(|e| e.message.contains(text))
            .unwrap_or_else(|| panic!("not reported: {:?}", translation.report.entries));
        (entry, entry.location.as_ref().map(ToString::to_string))
    }

    #[test]
    fn a_par_loop_branches_on_at_most_three_distinct_flags_not_known_at_import() {
        // `f` is assigned by the time loop, so `main` tests the flags. The
        // first par_loop has three distinct flags (the fourth argument's is
        // the first's again): 8 par_loops; the second a fourth distinct one,
        // reported where it is written.
        let args = |flags: [&str; 5]| {
            flags
                .iter()
                .map(|f| format!("op_opt_arg_dat({f}, p, -1, OP_ID, 1, \"double\", OP_WRITE)"))
                .collect::<Vec<_>>()
                .join(",\n      ")
        };
        let app = format!(
            "#include \"op_seq.h\"\nvoid k(double *a, double *b, double *c, double *d, double *e) {{ a[0] = 1.0; }}\nint main(int argc, char **argv) {{\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  op_dat p = op_decl_dat(cells, 1, \"double\", (double *)0, \"p\");\n  int f = 0;\n  for (int i = 0; i < 2; i++) {{\n    f = i;\n    op_par_loop(k, \"k\", cells,\n      {});\n    op_par_loop(k, \"k\", cells,\n      {});\n  }}\n}}\n",
            args(["f", "f + 1", "f > 1", "f", "f>1"]),
            args(["f", "f + 1", "f > 1", "f", "f - 1"]),
        );
        let translation = translated(
            &app,
            "set 0 1\nhandle cells set 0\ndat 0 0 1 double\nnull\nhandle p dat 0\nvalue f int 1\n0\nstop\n",
        )
        .expect("a translation");
        let (entry, location) = reported(&translation, "distinct flags");
        assert_eq!(entry.kind, Kind::NotTranslated);
        assert_eq!(
            entry.message,
            "`op_par_loop` of `k` whose optional arguments have more than 3 distinct flags not known at import: op2 import writes the par_loop once for each combination of its flags, at most 8 times"
        );
        assert_eq!(location.as_deref(), Some("app/app.cpp:21:22"));
        let (entry, _) = reported(&translation, "branching on the flags");
        assert_eq!(entry.kind, Kind::Translated);
        assert!(
            entry.message.contains(
                "`f`, `f+1`, `f>1` of its optional arguments, which `main` decides: 8 par_loops"
            ),
            "{}",
            entry.message
        );
        assert_eq!(translation.program.matches("par_loop k as k_").count(), 8);
        let compact: String = translation
            .program
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for expected in [
            "if (f) { if ((int) (f + 1)) { if (f > 1) { par_loop k as k_on_on_on over cells ( p WRITE, p WRITE, p WRITE, p WRITE, p WRITE, ); } else {",
            "par_loop k as k_off_on_off over cells (p RW, p WRITE, p RW, p RW, p RW);",
        ] {
            assert!(
                compact.contains(expected),
                "{expected}\n{}",
                translation.program
            );
        }
    }

    #[test]
    fn a_double_flag_known_at_import_is_set_as_its_int_is() {
        // `op_opt_arg_dat` takes an `int`: 0.5 is not set, 1.5 is.
        let app = "#include \"op_seq.h\"\nvoid k(double *a, double *b) { }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  op_dat p = op_decl_dat(cells, 1, \"double\", (double *)0, \"p\");\n  double h = 0.5, g = 1.5;\n  op_par_loop(k, \"k\", cells,\n      op_opt_arg_dat(h, p, -1, OP_ID, 1, \"double\", OP_WRITE),\n      op_opt_arg_dat(g, p, -1, OP_ID, 1, \"double\", OP_WRITE));\n}\n";
        let translation = translated(
            app,
            "set 0 1\nhandle cells set 0\ndat 0 0 1 double\nnull\nhandle p dat 0\nvalue g double 1\n1.5\nvalue h double 1\n0.5\nstop\n",
        )
        .expect("a translation");
        assert!(
            translation
                .program
                .contains("par_loop k over cells (p RW, p WRITE);"),
            "{}",
            translation.program
        );
    }

    #[test]
    fn an_unset_argument_of_another_sets_dat_stays_indirect_where_it_only_reads() {
        // `p` is on `nodes`, the loop over `edges`: not set, a READ of it
        // stays `p[pedge[0]] READ` (`p READ` would be E302), and a WRITE
        // through the map is reported at its mode.
        let app = "#include \"op_seq.h\"\nvoid k(const double *a, double *b) { }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set nodes = op_decl_set(2, \"nodes\");\n  op_set edges = op_decl_set(1, \"edges\");\n  op_map pedge = op_decl_map(edges, nodes, 2, (int *)0, \"pedge\");\n  op_dat p = op_decl_dat(nodes, 1, \"double\", (double *)0, \"p\");\n  op_par_loop(k, \"k\", edges,\n      op_opt_arg_dat(0, p, 0, pedge, 1, \"double\", OP_READ),\n      op_opt_arg_dat(0, p, 1, pedge, 1, \"double\", OP_READ));\n  op_par_loop(k, \"k\", edges,\n      op_opt_arg_dat(0, p, 0, pedge, 1, \"double\", OP_READ),\n      op_opt_arg_dat(0, p, 1, pedge, 1, \"double\", OP_WRITE));\n}\n";
        let translation = translated(
            app,
            "set 0 2\nset 1 1\nmap 0 1 0 2\n0 1\ndat 0 0 1 double\nnull\nhandle nodes set 0\nhandle edges set 1\nhandle pedge map 0\nhandle p dat 0\nstop\n",
        )
        .expect("a translation");
        assert!(
            translation
                .program
                .contains("par_loop k over edges (p[pedge[0]] READ, p[pedge[1]] READ);"),
            "{}",
            translation.program
        );
        let (entry, location) = reported(&translation, "written by every element");
        assert_eq!(entry.kind, Kind::NotTranslated);
        assert_eq!(location.as_deref(), Some("app/app.cpp:14:51"));
    }

    const BUFFER_APP: &str = "#include \"op_seq.h\"\nvoid step(const double *w, double *x) { x[0] += w[0]; }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  double *w = 0;\n  op_set cells = op_decl_set(n, \"cells\");\n  op_dat p_w = op_decl_dat(cells, DIM, \"double\", w, \"p_w\");\n  op_par_loop(step, \"step\", cells, op_arg_dat(p_w, -1, OP_ID, 1, \"double\", OP_READ), op_arg_dat(p_w, -1, OP_ID, 1, \"double\", OP_RW));\n  op_printf(\"%g\\n\", w[0]);\n}\n";

    #[test]
    fn a_host_buffer_too_large_for_a_global_is_reported_not_allocated() {
        // Found by `op2-fuzz --import` (seed 2, case 1870): a dat declared
        // with NULL data on a set of 2^40 elements, whose buffer the host
        // code reads, asked for 13 GB of "0"s.
        let capture = "set 0 1099511627776\nhandle cells set 0\ndat 0 0 1 double\nnull\nhandle p_w dat 0\nstop\n";
        let translation = translated(BUFFER_APP, capture).expect("a translation");
        let (entry, location) = reported(&translation, "a global of `.op2` holds at most 65536");
        assert_eq!(entry.kind, Kind::NotTranslated);
        assert_eq!(location.as_deref(), Some("app/app.cpp:5:11"));
        assert!(translation.program.len() < 10_000);
        // A small one is still a global with the dat's values.
        let capture =
            "set 0 3\nhandle cells set 0\ndat 0 0 1 double\n1 2 3\nhandle p_w dat 0\nstop\n";
        let translation = translated(BUFFER_APP, capture).expect("a translation");
        assert!(
            translation.program.contains("= {1.0, 2.0, 3.0}"),
            "{}",
            translation.program
        );
    }

    #[test]
    fn a_vector_map_argument_of_dimension_0_is_reported_where_written() {
        // A dimension of 0 made entries × dimension 0, so three million
        // entries passed the limit and built three million arguments.
        let app = "#include \"op_seq.h\"\nvoid k1(const double **x) { }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set nodes = op_decl_set(2, \"nodes\");\n  op_set cells = op_decl_set(1, \"cells\");\n  op_map pcell = op_decl_map(cells, nodes, 2, 0, \"pcell\");\n  op_dat p_x = op_decl_dat(nodes, 2, \"double\", 0, \"p_x\");\n  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, -3000000, pcell, 0, \"double\", OP_READ));\n}\n";
        let capture = "set 0 2\nhandle nodes set 0\nset 1 1\nhandle cells set 1\nmap 0 1 0 2\n0 1\nhandle pcell map 0\ndat 0 0 2 double\n1 2 3 4\nhandle p_x dat 0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        let (entry, location) = reported(&translation, "has dimension 0");
        assert_eq!(
            entry.message,
            "vector-map argument (index -3000000) of `k1` has dimension 0"
        );
        assert_eq!(location.as_deref(), Some("app/app.cpp:9:65"));
        assert!(translation.program.len() < 10_000);
    }

    #[test]
    fn a_vector_map_inc_is_added_to_directly_up_to_sixteen_entries() {
        // At most `MAX_DIRECT_ENTRIES` entries, `r[j][0] += …` with a loop
        // variable `j` becomes an `if` chain on `j` over the parameters;
        // past it the kernel keeps its local copy, added where it ends.
        for entries in [kernel::MAX_DIRECT_ENTRIES, kernel::MAX_DIRECT_ENTRIES + 1] {
            let app = format!(
                "#include \"op_seq.h\"\nvoid k1(double **r, const double *a) {{\n  for (int j = 0; j < {entries}; j++)\n    r[j][0] += *a * j;\n}}\nint main(int argc, char **argv) {{\n  op_init(argc, argv, 2);\n  op_set nodes = op_decl_set(2, \"nodes\");\n  op_set cells = op_decl_set(1, \"cells\");\n  op_map pcell = op_decl_map(cells, nodes, {entries}, 0, \"pcell\");\n  op_dat p_r = op_decl_dat(nodes, 1, \"double\", 0, \"p_r\");\n  op_dat p_a = op_decl_dat(cells, 1, \"double\", 0, \"p_a\");\n  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_r, -{entries}, pcell, 1, \"double\", OP_INC), op_arg_dat(p_a, -1, OP_ID, 1, \"double\", OP_READ));\n}}\n"
            );
            let rows: Vec<String> = (0..entries).map(|e| (e % 2).to_string()).collect();
            let capture = format!(
                "set 0 2\nhandle nodes set 0\nset 1 1\nhandle cells set 1\nmap 0 1 0 {entries}\n{}\nhandle pcell map 0\ndat 0 0 1 double\n1 2\nhandle p_r dat 0\ndat 1 1 1 double\n3\nhandle p_a dat 1\nstop\n",
                rows.join(" ")
            );
            let translation = translated(&app, &capture).expect("a translation");
            let program = &translation.program;
            let last = entries - 1;
            let chain = format!("else if ((j) == {last})\n            r_{last}[0] += *a * j;");
            let local = format!("double r[{entries}] =");
            if entries <= kernel::MAX_DIRECT_ENTRIES {
                assert!(
                    program.contains("if ((j) == 0)\n            r_0[0] += *a * j;"),
                    "{program}"
                );
                assert!(program.contains(&chain), "{program}");
                assert!(!program.contains(&local), "{program}");
            } else {
                assert!(!program.contains("if ((j) == 0)"), "{program}");
                assert!(program.contains(&local), "{program}");
                assert!(
                    program.contains(&format!("r_{last}[0] += r[{last}];")),
                    "{program}"
                );
            }
        }
    }

    #[test]
    fn the_arguments_vector_map_arguments_become_are_bounded_in_total() {
        // Each argument of 1024 entries becomes 1024 `p_x[pcell[e]] READ`,
        // about 22 KB from 60 bytes of C, and no limit held the sum: a
        // thousand par_loops of a hundred of them would be gigabytes.
        let loops = 60;
        let mut app = "#include \"op_seq.h\"\nvoid k1(const double **x) { }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set nodes = op_decl_set(2, \"nodes\");\n  op_set cells = op_decl_set(1, \"cells\");\n  op_map pcell = op_decl_map(cells, nodes, 1024, 0, \"pcell\");\n  op_dat p_x = op_decl_dat(nodes, 1, \"double\", 0, \"p_x\");\n".to_owned();
        for _ in 0..loops {
            app.push_str("  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, -1024, pcell, 1, \"double\", OP_READ));\n");
        }
        app.push_str("}\n");
        let entries: Vec<String> = (0..1024).map(|e| (e % 2).to_string()).collect();
        let capture = format!(
            "set 0 2\nhandle nodes set 0\nset 1 1\nhandle cells set 1\nmap 0 1 0 1024\n{}\nhandle pcell map 0\ndat 0 0 1 double\n1 2\nhandle p_x dat 0\nstop\n",
            entries.join(" ")
        );
        let translation = translated(&app, &capture).expect("a translation");
        // The par_loops whose arguments fit are written; the first that
        // does not is reported at its argument (line 9 is the first loop's).
        let one = (0..1024)
            .map(|e| format!("p_x[pcell[{e}]] READ"))
            .collect::<Vec<_>>()
            .join(", ")
            .len();
        let fitting = host::VECTOR_TEXT_LIMIT / one;
        assert!(fitting < loops);
        let (entry, location) = reported(&translation, "together, which op2 import does not write");
        assert_eq!(
            entry.message,
            "vector-map argument (index -1024) of `k1` would make the arguments that the par_loops' vector-map arguments become longer than 1024 KiB together, which op2 import does not write"
        );
        assert_eq!(entry.kind, Kind::NotTranslated);
        assert_eq!(
            location.as_deref(),
            Some(format!("app/app.cpp:{}:32", 9 + fitting).as_str())
        );
        let refused = translation
            .report
            .entries
            .iter()
            .filter(|e| e.message == entry.message)
            .count();
        assert_eq!(refused, loops - fitting);
        assert_eq!(
            translation.program.matches("p_x[pcell[1023]] READ").count(),
            fitting
        );
        assert!(translation.program.len() < 2 * host::VECTOR_TEXT_LIMIT);
    }

    #[test]
    fn an_op_arg_dat_map_index_or_map_that_cannot_be_translated_is_reported_with_its_cause() {
        // Each was "`op_arg_dat` with a map index that is not an integer
        // literal", at the whole argument, whatever the cause.
        let app = "#include \"op_seq.h\"\n#define TWO (1 + 1)\n#define ONE 1\nvoid k1(const double *x) { }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set nodes = op_decl_set(2, \"nodes\");\n  op_set cells = op_decl_set(1, \"cells\");\n  op_map pcell = op_decl_map(cells, nodes, 2, 0, \"pcell\");\n  op_map maps[1] = {pcell};\n  op_dat p_x = op_decl_dat(nodes, 1, \"double\", 0, \"p_x\");\n  int j = 1;\n\
  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, TWO, pcell, 1, \"double\", OP_READ));\n\
  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, j, pcell, 1, \"double\", OP_READ));\n\
  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, j - 1, pcell, 1, \"double\", OP_READ));\n\
  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, ONE, maps[0], 1, \"double\", OP_READ));\n\
  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, -1, pcell, 1, \"double\", OP_READ));\n\
  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, 0, OP_ID, 1, \"double\", OP_READ));\n\
  op_par_loop(k1, \"k1\", cells, op_arg_dat(p_x, ONE, pcell, 1, \"double\", OP_READ));\n}\n";
        let capture = "set 0 2\nhandle nodes set 0\nset 1 1\nhandle cells set 1\nmap 0 1 0 2\n0 1\nhandle pcell map 0\ndat 0 0 1 double\n1 2\nhandle p_x dat 0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        for (message, at) in [
            (
                "`op_arg_dat` whose map index `TWO` is a macro that does not expand to an integer literal",
                "app/app.cpp:13:46",
            ),
            (
                "`op_arg_dat` whose map index `j` is a variable, not an integer literal: the par_loop's arguments are fixed when it is translated",
                "app/app.cpp:14:46",
            ),
            (
                "`op_arg_dat` whose map index `j - 1` is not an integer literal",
                "app/app.cpp:15:46",
            ),
            (
                "`op_arg_dat` whose map `maps[0]` is not a plain name",
                "app/app.cpp:16:51",
            ),
            (
                "`op_arg_dat` with map index -1 and the map `pcell`: the index -1 passes the dat directly, with the map `OP_ID`",
                "app/app.cpp:17:50",
            ),
            (
                "`op_arg_dat` with map index 0 and the map `OP_ID`, which only the index -1 goes with",
                "app/app.cpp:18:46",
            ),
        ] {
            let (entry, location) = reported(&translation, message);
            assert_eq!(entry.message, message);
            assert_eq!(entry.kind, Kind::NotTranslated);
            assert_eq!(location.as_deref(), Some(at), "{message}");
        }
        // A macro of an integer literal is one.
        assert!(
            translation.program.contains("p_x[pcell[1]] READ"),
            "{}",
            translation.program
        );
        assert!(
            !translation
                .report
                .entries
                .iter()
                .any(|e| e.message.contains("not an integer literal")
                    && e.location.as_ref().is_some_and(|l| l.line == 19)),
            "{}",
            translation.report
        );
    }

    #[test]
    fn the_counter_that_zeroes_a_hoisted_array_takes_no_name_in_use() {
        // The counter was always `op2_k`: an array of that name became
        // `op2_k[op2_k] = 0`, indexing the counter.
        let app = "#include \"op_seq.h\"\nvoid k1(double *g) { g[0] += 1.0; }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  for (int r = 0; r < 2; r++) {\n    double op2_k[3] = {1.0};\n    double op2_k_[2] = {2.0};\n    op_par_loop(k1, \"k1\", cells, op_arg_gbl(op2_k, 3, \"double\", OP_INC));\n    op_par_loop(k1, \"k1\", cells, op_arg_gbl(op2_k_, 2, \"double\", OP_INC));\n    op_printf(\"%g %g\\n\", op2_k[2], op2_k_[1]);\n  }\n}\n";
        let capture = "set 0 1\nhandle cells set 0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        for expected in [
            "for (int op2_k__ = 1; op2_k__ < 3; op2_k__++)\n            op2_k[op2_k__] = 0;",
            "for (int op2_k__ = 1; op2_k__ < 2; op2_k__++)\n            op2_k_[op2_k__] = 0;",
        ] {
            assert!(
                translation.program.contains(expected),
                "{expected}\n{}",
                translation.program
            );
        }
        // With no such names it is `op2_k`.
        let plain = app.replace("op2_k_", "b").replace("op2_k", "a");
        let translation = translated(&plain, capture).expect("a translation");
        assert!(
            translation
                .program
                .contains("for (int op2_k = 1; op2_k < 3; op2_k++)\n            a[op2_k] = 0;"),
            "{}",
            translation.program
        );
    }

    #[test]
    fn the_reports_counts_of_one_are_singular() {
        // "the translated program has 1 errors", "uses it 1 times", "// 1
        // elements when captured": every count now goes through
        // `report::count`.
        let app = "#include \"op_seq.h\"\nvoid k1(double *g) { g[0] += 1.0; }\ndouble *gp = 0;\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  double s = 0.0;\n  op_par_loop(k1, \"k1\", cells, op_arg_gbl(&s, 1, \"double\", OP_INC));\n  op_printf(\"%g\\n\", gp[2]);\n}\n";
        let capture = "set 0 1\nhandle cells set 0\nvalue s double 1\n0.0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        let (entry, _) = reported(&translation, "`gp` is a pointer");
        assert!(
            entry.message.ends_with("uses it 1 time, first here"),
            "{}",
            entry.message
        );
        assert!(
            translation
                .program
                .contains("set cells; // 1 element when captured"),
            "{}",
            translation.program
        );
        // One error of the translated program, which the pointer causes.
        let (entry, _) = reported(&translation, "the translated program has");
        assert_eq!(
            entry.message,
            "the translated program has 1 error, which follows from the constructs above"
        );
        // A capture whose line of values is short.
        let short = capture::parse("set 0 1\ndat 0 0 2 double\n1.0\n").unwrap_err();
        assert_eq!(short, "line 3: 1 value where 2 were declared");
        // A host function given more arguments than it takes.
        let app = app.replace(
            "  op_printf(\"%g\\n\", gp[2]);\n}\n",
            "  show(s, s);\n}\nvoid show(double v) { op_printf(\"%g\\n\", v); }\n",
        );
        let translation = translated(&app, capture).expect("a translation");
        let (entry, _) = reported(&translation, "is given");
        assert!(
            entry.message.contains("it takes 1 argument and is given 2"),
            "{}",
            entry.message
        );
    }

    #[test]
    fn a_pointers_report_counts_places_and_starts_at_the_first_the_program_reaches() {
        // Uses inside an inlined function counted once per inlining (`gp`
        // of `show`, inlined twice), and the first use was the one inside
        // `peek`'s body rather than the argument its call passes, which the
        // program evaluates first.
        let app = "#include \"op_seq.h\"\nvoid k1(double *g) { g[0] += 1.0; }\ndouble *gp = 0;\nvoid show(int i) {\n  op_printf(\"%g\\n\", gp[i]);\n}\nvoid peek(double v) {\n  op_printf(\"%g %g\\n\", v, gp[4]);\n}\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  double s = 0.0;\n  for (int r = 0; r < 2; r++) {\n    op_par_loop(k1, \"k1\", cells, op_arg_gbl(&s, 1, \"double\", OP_INC));\n    peek(gp[3]);\n    show(0);\n    show(1);\n    op_printf(\"%g\\n\", gp[2]);\n  }\n}\n";
        let capture = "set 0 1\nhandle cells set 0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        let (entry, location) = reported(&translation, "`gp` is a pointer");
        // `peek(gp[3])`, `peek`'s `gp[4]`, `show`'s `gp[i]` and `gp[2]`.
        assert_eq!(
            entry.message,
            "`gp` is a pointer (declared at app/app.cpp:3:9), which `.op2` has no place for; the host code after the first par_loop uses it 4 times, first here"
        );
        assert_eq!(location.as_deref(), Some("app/app.cpp:16:10"));
    }

    /// A global that starts at an infinity (`double lo = INFINITY;`, a MIN
    /// reduction's start) cannot be a POETS initialiser: it is not
    /// translated, so the import is not faithful (it was dropped, the
    /// global started at 0, and `op2 run` printed 0 where C prints the
    /// minimum). A NaN, an uninitialised variable's likely value, is still
    /// only dropped.
    #[test]
    fn a_global_that_starts_at_an_infinity_is_not_translated() {
        let app = "#include \"op_seq.h\"\nvoid low(const double *x, double *lo) { if (*x < *lo) *lo = *x; }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  double xs[1] = {2.5};\n  op_dat p_x = op_decl_dat(cells, 1, \"double\", xs, \"p_x\");\n  double lo = INFINITY;\n  double unset;\n  op_par_loop(low, \"low\", cells, op_arg_dat(p_x, -1, OP_ID, 1, \"double\", OP_READ), op_arg_gbl(&lo, 1, \"double\", OP_MIN));\n  unset = lo;\n  op_printf(\"%g %g\\n\", lo, unset);\n}\n";
        let capture = "set 0 1\nhandle cells set 0\ndat 0 0 1 double\n2.5\nhandle p_x dat 0\nvalue lo double 1\ninf\nvalue unset double 1\nnan\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        let (entry, _) = reported(&translation, "`lo` held `inf`");
        assert_eq!(entry.kind, Kind::NotTranslated);
        assert!(!translation.report.faithful());
        let (entry, _) = reported(&translation, "`unset` held `nan`");
        assert_eq!(entry.kind, Kind::Dropped);
    }

    #[test]
    fn a_host_functions_global_is_not_read_as_the_callers_local_of_that_name() {
        // `show` reads the global `c1`; inlined into `main`, which declares
        // a `c1` of its own, its text read `main`'s: the import exited 0 and
        // `op2 run` printed `s*c1 = 12` where the native build prints 60.
        // Then the call was reported; now `main`'s `c1` is renamed, and the
        // inlined body reads the global, captured as the const `c1`. A
        // function whose local would hide the caller's variable it returns
        // into (`t` of `twice`) makes the caller's `t` renamed alike.
        let app = "#include \"op_seq.h\"\nvoid k1(double *g) { g[0] += 1.0; }\ndouble c1 = 10.0;\nvoid show(double s) {\n  op_printf(\"s*c1 = %g\\n\", s * c1);\n}\ndouble twice(double v) {\n  double t = 2.0 * v;\n  return t;\n}\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  double s = 0.0;\n  op_par_loop(k1, \"k1\", cells, op_arg_gbl(&s, 1, \"double\", OP_INC));\n  double c1 = 2.0;\n  double t = c1;\n  t = twice(s);\n  show(t + c1);\n}\n";
        let capture =
            "set 0 1\nhandle cells set 0\nvalue c1 double 1\n10.0\nvalue s double 1\n0.0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        assert!(translation.report.faithful(), "{}", translation.report);
        for expected in [
            "const c1: double = 10.0;",
            "double c1_1 = 2.0;\n    double t_1 = c1_1;",
            "double t = 2.0 * v_twice1;\n            t_1 = t;",
            "double s_show1 = t_1 + c1_1;",
            "print(\"s*c1 = %g\\n\", s_show1 * c1);",
        ] {
            assert!(
                translation.program.contains(expected),
                "{expected}\n{}",
                translation.program
            );
        }
    }

    #[test]
    fn a_local_of_main_spelled_in_op2_as_a_name_main_reads_is_renamed() {
        // `exit` is `exit_` in `.op2`, which is the global `main` reads.
        let app = "#include \"op_seq.h\"\nvoid k1(double *g) { g[0] += 1.0; }\ndouble exit_ = 5.0;\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  double s = 0.0;\n  op_par_loop(k1, \"k1\", cells, op_arg_gbl(&s, 1, \"double\", OP_INC));\n  double exit = 2.0;\n  op_printf(\"%g\\n\", exit * exit_);\n}\n";
        let capture =
            "set 0 1\nhandle cells set 0\nvalue exit_ double 1\n5.0\nvalue s double 1\n0.0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        assert!(translation.report.faithful(), "{}", translation.report);
        for expected in [
            "const exit_: double = 5.0;",
            "double exit_1 = 2.0;\n    print(\"%g\\n\", exit_1 * exit_);",
        ] {
            assert!(
                translation.program.contains(expected),
                "{expected}\n{}",
                translation.program
            );
        }
    }

    #[test]
    fn a_host_loop_reading_a_maps_data_is_reported_with_the_map() {
        // OP2's tutorial (airfoil step3, step4) keeps host loops over the
        // mesh that read the arrays the set-up declared maps with.
        let app = "#include \"op_seq.h\"\n#include <stdlib.h>\nvoid k1(double *g) { g[0] += 1.0; }\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  int *edge = (int *)malloc(4 * sizeof(int));\n  op_set nodes = op_decl_set(3, \"nodes\");\n  op_set edges = op_decl_set(2, \"edges\");\n  op_map pedge = op_decl_map(edges, nodes, 2, edge, \"pedge\");\n  double s = 0.0;\n  op_par_loop(k1, \"k1\", edges, op_arg_gbl(&s, 1, \"double\", OP_INC));\n  for (int e = 0; e < 2; e++)\n    s += edge[2 * e];\n}\n";
        let capture = "set 0 3\nset 1 2\nmap 0 1 0 2\n0 1 1 2\nhandle nodes set 0\nhandle edges set 1\nhandle pedge map 0\nvalue s double 1\n0.0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        let (entry, location) = reported(&translation, "`edge` is a pointer");
        assert_eq!(
            entry.message,
            "`edge` is a pointer (declared at app/app.cpp:6:8, the data of map `pedge`), which `.op2` has no place for; the host code after the first par_loop uses it 1 time, first here"
        );
        assert_eq!(
            entry.suggestion.as_deref(),
            Some(
                "write the loop that reads it as a par_loop whose `op_arg_dat`s take `pedge`: the kernel is handed the elements the map names"
            )
        );
        assert_eq!(location.as_deref(), Some("app/app.cpp:13:10"));
    }

    #[test]
    fn a_global_that_mains_set_up_declares_again_is_read_as_the_global_and_mains_renamed() {
        // `k1` and `show` read the global `c1`; `main` declares a `c1` of
        // its own in the set-up and reads it after: the capture reads the
        // global as `::c1` and `main`'s as `c1_1`, which `main` is
        // translated with.
        let app = "#include \"op_seq.h\"\ndouble c1 = 10.0;\nvoid k1(double *g) { g[0] += c1; }\nvoid show(double s) {\n  op_printf(\"%g\\n\", s * c1);\n}\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  double c1 = 2.0;\n  op_set cells = op_decl_set(1, \"cells\");\n  double s = c1;\n  op_par_loop(k1, \"k1\", cells, op_arg_gbl(&s, 1, \"double\", OP_INC));\n  show(s);\n  op_printf(\"%g\\n\", c1);\n}\n";
        let capture = "set 0 1\nhandle cells set 0\nvalue c1 double 1\n10.0\nvalue c1_1 double 1\n2.0\nvalue s double 1\n2.0\nstop\n";
        let (translation, inserted) = translated_and_instrumented(app, capture);
        let translation = translation.expect("a translation");
        assert!(translation.report.faithful(), "{}", translation.report);
        assert!(
            inserted.contains("op2_import_value(\"c1\", ::c1); "),
            "{inserted}"
        );
        assert!(
            inserted.contains("op2_import_value(\"c1_1\", c1); "),
            "{inserted}"
        );
        let program = &translation.program;
        assert!(program.contains("const c1: double = 10.0;"), "{program}");
        assert!(program.contains("const c1_1: double = 2.0;"), "{program}");
        assert!(program.contains("g[0] += c1;"), "{program}");
        assert!(program.contains("print(\"%g\\n\", c1_1);"), "{program}");
        assert!(program.contains("s_show1 * c1"), "{program}");
        // A const that `op_decl_const` declares from `main`'s variable is
        // still reported: which of the two the kernels mean is not clear.
        let app = app.replace(
            "  double s = c1;\n",
            "  double s = c1;\n  op_decl_const(1, \"double\", &c1);\n",
        );
        let translation = translated(&app, capture).expect("a translation");
        assert!(!translation.report.faithful());
        let (entry, location) = reported(&translation, "kernel `k1` reads the global");
        assert_eq!(
            entry.message,
            "kernel `k1` reads the global `c1` (declared at app/app.cpp:2:8), and `main` declares a `c1` of its own (at app/app.cpp:9:10) before its first par_loop, whose value the capture, made in `main`, would take instead"
        );
        assert_eq!(location.as_deref(), Some("app/app.cpp:3:1"));
        let (entry, location) = reported(&translation, "call to `show`");
        assert_eq!(
            entry.message,
            "call to `show`, which op2 import cannot inline: it reads the global `c1`, and `main` declares a `c1` of its own before its first par_loop, whose value the capture, made in `main`, would take instead"
        );
        // One line lower: the `op_decl_const` line was added.
        assert_eq!(location.as_deref(), Some("app/app.cpp:14:3"));
    }

    #[test]
    fn the_local_a_host_functions_parameter_becomes_takes_no_name_in_use() {
        // `s_show1` is `show`'s parameter `s` at depth 1; `main` has a
        // variable of that name, which the block's local would hide.
        let app = "#include \"op_seq.h\"\nvoid k1(double *g) { g[0] += 1.0; }\nvoid show(double s) {\n  op_printf(\"%g\\n\", s);\n}\nint main(int argc, char **argv) {\n  op_init(argc, argv, 2);\n  op_set cells = op_decl_set(1, \"cells\");\n  double s = 0.0;\n  op_par_loop(k1, \"k1\", cells, op_arg_gbl(&s, 1, \"double\", OP_INC));\n  double s_show1 = 3.0;\n  show(s + s_show1);\n}\n";
        let capture = "set 0 1\nhandle cells set 0\nvalue s double 1\n0.0\nstop\n";
        let translation = translated(app, capture).expect("a translation");
        assert!(translation.report.faithful(), "{}", translation.report);
        assert!(
            translation
                .program
                .contains("double s_show1_ = s + s_show1;"),
            "{}",
            translation.program
        );
    }

    #[test]
    fn a_dat_of_dimension_0_is_written_without_rows() {
        // Found by `op2-fuzz --import` (seed 2, case 393): rows of 0 values
        // panicked in `chunks`.
        let capture = "set 0 2\nhandle cells set 0\ndat 0 0 0 double\n\nhandle p_w dat 0\nstop\n";
        let translation = translated(BUFFER_APP, capture).expect("a translation");
        assert!(
            translation.instance.contains("\"p_w\":[]"),
            "{}",
            translation.instance
        );
    }

    #[test]
    fn sources_are_read_as_op2_reads_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let mut never = |_: Instrumented| -> Result<Capture, CaptureError> {
            panic!("nothing is captured from a file that cannot be read")
        };
        let read =
            |path: &Path, never: &mut dyn FnMut(Instrumented) -> Result<Capture, CaptureError>| {
                match translate(path, &[], dir.path(), &Disk, &mut written_macros, never) {
                    Err(ImportError::Read(why)) => why,
                    other => panic!("{other:?}"),
                }
            };
        // Bytes that are not UTF-8: named by line and column.
        let bad = dir.path().join("bad.cpp");
        std::fs::write(&bad, b"int main() {\n  int \xff;\n}\n").unwrap();
        assert_eq!(
            read(&bad, &mut never),
            format!(
                "{}:2:7: the file is not valid UTF-8 (byte 19)",
                bad.display()
            )
        );
        // Not a regular file: refused before a byte is read.
        assert_eq!(
            read(dir.path(), &mut never),
            format!(
                "cannot read `{}`: not a regular file (it is a directory)",
                dir.path().display()
            )
        );
    }

    /// A translation of nothing in particular into `dir`, as `x.op2` and
    /// `x.json`.
    fn prepared_into(dir: &Path) -> Prepared {
        Prepared {
            translation: Translation {
                program_path: dir.join("x.op2"),
                program: "main {}\n".to_owned(),
                instance_path: dir.join("x.json"),
                instance: "{}\n".to_owned(),
                instance_h5: None,
                report: Report::default(),
                setup_output: String::new(),
                read_files: Vec::new(),
            },
            notes: Vec::new(),
            sources: Vec::new(),
        }
    }

    #[test]
    fn an_instance_that_cannot_be_written_leaves_no_program_without_it() {
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("x.json"))
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let error = prepared_into(dir.path()).write(None).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("not a regular file (it is a FIFO)"),
            "{error}"
        );
        assert!(
            !dir.path().join("x.op2").exists(),
            "the program was written"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_at_an_output_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "SECRET").unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&victim, out.join("x.op2")).unwrap();
        let error = prepared_into(&out).write(None).unwrap_err();
        assert!(
            error.to_string().contains("it is a symbolic link"),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "SECRET");
        assert!(!out.join("x.json").exists(), "the instance was written");
    }

    #[test]
    fn a_cancel_before_writing_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = std::sync::atomic::AtomicBool::new(true);
        let error = prepared_into(dir.path()).write(Some(&cancel)).unwrap_err();
        assert!(
            matches!(error, ImportError::Capture(CaptureError::Cancelled)),
            "{error}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Not cancelled, both are written.
        let imported = prepared_into(dir.path()).write(None).unwrap();
        assert_eq!(
            std::fs::read_to_string(imported.program).unwrap(),
            "main {}\n"
        );
        assert_eq!(std::fs::read_to_string(imported.instance).unwrap(), "{}\n");
    }
}
