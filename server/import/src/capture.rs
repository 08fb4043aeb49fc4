//! The capture: the application's set-up runs for real, compiled against
//! op2's recording `op_seq.h`, and stops where its first par_loop would
//! start, leaving behind every declared set, map and dat and the host
//! values the rest of the program reads.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::compdb::Flags;

/// op2's recording implementation of OP2's API.
const RECORDING_OP_SEQ: &str = include_str!("../recorder/op_seq.h");
const RECORDING_OP_PROFILE: &str = include_str!("../recorder/op_profile.h");
const RECORDING_HDF5: &str = include_str!("../recorder/op2_import_hdf5.h");

/// The headers the recorder's directory holds, first on the capture's
/// include path: an `#include "…"` of one of these names finds the
/// recorder's (unless the including file's own directory has it), never
/// OP2's own in a `-I` directory.
pub const RECORDER_HEADERS: &[&str] = &[
    "op_seq.h",
    "op_lib_cpp.h",
    "op_lib_c.h",
    "op_lib_core.h",
    "op_profile.h",
    "op_hdf5.h",
    "op2_import_hdf5.h",
];

/// Why the capture failed.
#[derive(Debug)]
pub enum CaptureError {
    /// No C++ compiler: `CXX` is unset and none of c++, g++, clang++ runs.
    NoCompiler,
    /// The application calls OP2's HDF5 functions and the HDF5 C library
    /// is not found (`pkg-config hdf5`); why.
    NoHdf5(String),
    /// The compiler refused the application; its messages.
    CompileFailed { command: String, messages: String },
    /// The preprocessor could not give the main file's macros (`CXX -E
    /// -dM`); its messages.
    PreprocessFailed { command: String, messages: String },
    /// The application ended before its first par_loop.
    Stopped { status: String, output: String },
    /// The capture file is not what the recorder writes.
    Malformed(String),
    /// Reading or writing a temporary file failed.
    Io(String),
    /// Cancelled (by the language server's client) while the compiler or
    /// the application ran; the child was killed.
    Cancelled,
    /// The capture the set-up wrote is longer than [`CAPTURE_LIMIT`]: its
    /// length in bytes (at least).
    TooLarge(u64),
}

/// The longest capture read: the most values and map entries an instance
/// may hold (`op2_instance::MAX_DAT_VALUES`, `MAX_MAP_TARGETS`), as the
/// recorder writes them (a value as ` %.17g`, at most 25 bytes; an entry
/// as a decimal `int`, at most 12), and 64 MiB for the rest (handles,
/// names, the values of globals): 4,800 MiB. An instance file of
/// those values is smaller (JSON writes the shortest decimal, HDF5 8 bytes
/// a double), so the capture, not the file it becomes, is what is bounded.
pub const CAPTURE_LIMIT: u64 =
    op2_instance::MAX_DAT_VALUES * 25 + op2_instance::MAX_MAP_TARGETS * 12 + (64 << 20);

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::NoCompiler => f.write_str(
                "no C++ compiler found: set `CXX`, or install one of `c++`, `g++`, `clang++`",
            ),
            CaptureError::NoHdf5(why) => write!(
                f,
                "the application reads OP2's HDF5 files (`op_decl_*_hdf5`), and running its set-up needs the HDF5 C library, which was not found ({why}): install it (Debian: `apt-get install libhdf5-dev pkg-config`)"
            ),
            CaptureError::CompileFailed { command, messages } => {
                write!(
                    f,
                    "the application does not compile against op2's recording `op_seq.h`\ncommand: {command}\n{messages}"
                )
            }
            CaptureError::PreprocessFailed { command, messages } => {
                write!(
                    f,
                    "the preprocessor could not read the application's macros (with op2's recording `op_seq.h`)\ncommand: {command}\n{messages}"
                )
            }
            CaptureError::Stopped { status, output } => write!(
                f,
                "the application ended ({status}) before its first `op_par_loop`; its output:\n{output}"
            ),
            CaptureError::Malformed(why) => write!(f, "the capture is malformed: {why}"),
            CaptureError::Io(why) => f.write_str(why),
            CaptureError::Cancelled => f.write_str("the import was cancelled; nothing written"),
            CaptureError::TooLarge(bytes) => write!(
                f,
                "the set-up's capture of its sets, maps, dats and values is {bytes} bytes long; op2 import reads at most {} MiB of it, the text of the most values and map entries an instance may hold",
                CAPTURE_LIMIT >> 20
            ),
        }
    }
}

/// What to compile and run.
#[derive(Debug)]
pub struct Run<'a> {
    /// The source file `instrumented` is the text of: the application's
    /// main file, or (for [`macros`]) one of its other sources.
    pub main: PathBuf,
    /// Its text (the main file's with the stop inserted).
    pub instrumented: String,
    /// The application's main file: its directory is on the include path
    /// of every source, as for the main file itself.
    pub program: &'a Path,
    /// The application's other sources, compiled and linked with the main
    /// file into the capture run.
    pub sources: &'a [PathBuf],
    /// `-I` directories.
    pub include_dirs: &'a [PathBuf],
    /// `-D` definitions.
    pub defines: &'a [String],
    /// Each unit's own flags (its entry in the compilation database), by
    /// its path as given (`program`, or one of `sources`): given to the
    /// compiler before `include_dirs` and `defines`, which apply to every
    /// unit.
    pub unit_flags: &'a BTreeMap<PathBuf, Flags>,
    /// The application's command-line arguments.
    pub args: &'a [String],
    /// Where it runs; the current directory when `None`.
    pub working_dir: Option<&'a Path>,
    /// Set by another thread to stop the compiler or the application.
    pub cancel: Option<&'a AtomicBool>,
}

/// An element type as the recorder names it (`double`, `int`, …).
pub type TypeName = String;

/// A number as the recorder printed it, kept as text so that nothing is
/// rounded on the way to JSON or `.op2`.
pub type Number = String;

/// A declared set.
#[derive(Debug, Clone)]
pub struct Set {
    /// Its size.
    pub size: usize,
}

/// A declared map.
#[derive(Debug, Clone)]
pub struct Map {
    /// Source and target set, by declaration index.
    pub from: usize,
    /// Target set.
    pub to: usize,
    /// Arity.
    pub dim: usize,
    /// `from.size * dim` entries, or `None` when declared with NULL.
    pub data: Option<Vec<i64>>,
}

/// A declared dat.
#[derive(Debug, Clone)]
pub struct Dat {
    /// Its set, by declaration index.
    pub set: usize,
    /// Components per element.
    pub dim: usize,
    /// Element type.
    pub ty: TypeName,
    /// `set.size * dim` values, or `None` when declared with NULL.
    pub data: Option<Vec<Number>>,
}

/// A host variable's value where the run stopped.
#[derive(Debug, Clone)]
pub struct Value {
    /// Its type.
    pub ty: TypeName,
    /// Its values (one for a scalar).
    pub values: Vec<Number>,
    /// Whether it is a C array.
    pub array: bool,
}

/// Everything the run recorded.
#[derive(Debug, Default)]
pub struct Capture {
    /// Sets in declaration order.
    pub sets: Vec<Set>,
    /// Maps in declaration order.
    pub maps: Vec<Map>,
    /// Dats in declaration order.
    pub dats: Vec<Dat>,
    /// C handle variable → (kind, declaration index).
    pub handles: Vec<(String, &'static str, usize)>,
    /// Host values by C name.
    pub values: Vec<(String, Value)>,
    /// What the set-up printed.
    pub output: String,
    /// The files the set-up read through OP2's HDF5 API, as it named them
    /// (relative to its working directory), each once.
    pub read_files: Vec<PathBuf>,
}

/// Finds the C++ compiler: `CXX`, else the first of c++, g++, clang++ that
/// runs.
pub fn compiler() -> Option<String> {
    if let Some(cxx) = std::env::var_os("CXX")
        && !cxx.is_empty()
    {
        return Some(cxx.to_string_lossy().into_owned());
    }
    ["c++", "g++", "clang++"]
        .into_iter()
        .find(|candidate| {
            Command::new(candidate)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .map(str::to_owned)
}

/// Whether the application calls OP2's HDF5 API (`op_decl_set_hdf5`,
/// `op_get_const_hdf5`, `op_dump_to_hdf5`, ...).
pub fn uses_hdf5(source: &str) -> bool {
    source.contains("_hdf5")
}

/// The compiler and linker flags of the HDF5 C library.
struct Hdf5Flags {
    compile: Vec<String>,
    link: Vec<String>,
}

/// Asks `pkg-config` for HDF5's flags (Debian installs the serial library
/// under `hdf5/serial`, so a bare `-lhdf5` is not enough).
fn hdf5_flags() -> Result<Hdf5Flags, String> {
    let ask = |what: &str| -> Result<Vec<String>, String> {
        let output = Command::new("pkg-config")
            .args([what, "hdf5"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run `pkg-config`: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "`pkg-config {what} hdf5` failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect())
    };
    Ok(Hdf5Flags {
        compile: ask("--cflags")?,
        link: ask("--libs")?,
    })
}

fn io(what: &str) -> impl Fn(std::io::Error) -> CaptureError + '_ {
    move |e| CaptureError::Io(format!("{what}: {e}"))
}

/// A temporary directory with op2's recording headers (`op_seq.h` and the
/// names OP2's other headers go by) and `op2_import_main.cpp`, the text of
/// `run.instrumented` said to be `run.main`'s.
fn prepare(run: &Run<'_>) -> Result<tempfile::TempDir, CaptureError> {
    let dir = tempfile::Builder::new()
        .prefix("op2-import-")
        .tempdir()
        .map_err(io("cannot create a temporary directory"))?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.path().join(name), text).map_err(io("cannot write a temporary file"))
    };
    for header in RECORDER_HEADERS {
        let text = match *header {
            "op_seq.h" => RECORDING_OP_SEQ,
            "op_profile.h" => RECORDING_OP_PROFILE,
            "op2_import_hdf5.h" => RECORDING_HDF5,
            _ => "#include \"op_seq.h\"\n",
        };
        write(header, text)?;
    }
    let main = std::path::absolute(&run.main).unwrap_or_else(|_| run.main.clone());
    let main_display = main
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    write(
        "op2_import_main.cpp",
        &format!("#line 1 \"{main_display}\"\n{}", run.instrumented),
    )?;
    Ok(dir)
}

/// The compiler command that compiles `unit` (a path as `run` names it) as
/// the capture does: `-std=c++17` or the unit's own `-std`, the recorder's
/// directory `dir`, the unit's directory and the main file's, the unit's
/// flags from the compilation database, `-I`, `-D`, and HDF5's flags when
/// `hdf5`; its source not yet given.
fn compiler_command(
    cxx: &str,
    dir: &Path,
    run: &Run<'_>,
    unit: &Path,
    hdf5: Option<&Hdf5Flags>,
) -> Command {
    let flags = run.unit_flags.get(unit);
    let mut command = Command::new(cxx);
    command.arg(format!(
        "-std={}",
        flags.and_then(|f| f.std.as_deref()).unwrap_or("c++17")
    ));
    command.arg("-I").arg(dir);
    let unit_dir = std::path::absolute(unit)
        .unwrap_or_else(|_| unit.to_owned())
        .parent()
        .map(Path::to_owned);
    if let Some(parent) = &unit_dir {
        command.arg("-I").arg(parent);
    }
    let program = std::path::absolute(run.program).unwrap_or_else(|_| run.program.to_owned());
    if let Some(parent) = program.parent().filter(|p| Some(*p) != unit_dir.as_deref()) {
        command.arg("-I").arg(parent);
    }
    if let Some(flags) = flags {
        command.args(flags.arguments());
    }
    for include in run.include_dirs {
        command.arg("-I").arg(include);
    }
    for define in run.defines {
        command.arg(format!("-D{define}"));
    }
    if let Some(flags) = hdf5 {
        command.arg("-DOP2_IMPORT_HDF5").args(&flags.compile);
    }
    command
}

/// The preprocessor's macros for a translation unit, where each is defined
/// and undefined (`CXX -E -dD`, compiled as the capture compiles it:
/// `run.instrumented` is the unit's text), kept as [`directives`] keeps
/// them, for [`crate::c::macro_stream`] (whose final table is `-dM`'s).
pub fn macros(run: &Run<'_>, progress: &mut dyn FnMut(&str)) -> Result<String, CaptureError> {
    let cxx = compiler().ok_or(CaptureError::NoCompiler)?;
    let dir = prepare(run)?;
    let preprocessed = dir.path().join("op2_import_main.ii");
    let mut command = compiler_command(&cxx, dir.path(), run, &run.main, None);
    command
        .arg("-E")
        .arg("-dD")
        .arg(dir.path().join("op2_import_main.cpp"))
        .arg("-o")
        .arg(&preprocessed);
    let shown = format!("{command:?}").replace('"', "");
    progress(&format!(
        "reading the macros of {} with {cxx}",
        run.main.display()
    ));
    let failed = |messages: String| CaptureError::PreprocessFailed {
        command: shown.clone(),
        messages,
    };
    let output = finish(&mut command, run.cancel).map_err(|e| match e {
        CaptureError::Cancelled => e,
        e => failed(e.to_string()),
    })?;
    if !output.status.success() {
        return Err(failed(output.stderr));
    }
    let file =
        std::fs::File::open(&preprocessed).map_err(io("cannot read the preprocessor's output"))?;
    directives(std::io::BufReader::new(file), MACRO_STREAM_LIMIT).map_err(failed)
}

/// The most text [`directives`] keeps of the preprocessor's output.
const MACRO_STREAM_LIMIT: usize = 4 << 20;

/// What the translation needs of the preprocessor's output (`-E -dD`): its
/// `#define`s, `#undef`s and line markers, each run of other lines written
/// as `#op2-lines N` (see [`crate::c::macro_stream`]); read a line at a
/// time, at most `limit` bytes kept.
fn directives(mut reader: impl std::io::BufRead, limit: usize) -> Result<String, String> {
    let mut out = String::new();
    let mut run = 0usize;
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("cannot read the preprocessor's output: {e}"))?;
        if read == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let kept = text.starts_with("#define ")
            || text.starts_with("#undef ")
            || text.starts_with("# ") && text[2..].starts_with(|c: char| c.is_ascii_digit());
        if !kept {
            run += 1;
            continue;
        }
        if run > 0 {
            out.push_str(&format!("#op2-lines {run}\n"));
            run = 0;
        }
        out.push_str(text);
        out.push('\n');
        if out.len() > limit {
            return Err(format!(
                "its macros and line markers come to more than {} MiB",
                limit >> 20
            ));
        }
    }
    Ok(out)
}

/// Compiles and runs the application in the current directory, with
/// `progress` told of each phase.
pub fn capture(run: &Run<'_>, progress: &mut dyn FnMut(&str)) -> Result<Capture, CaptureError> {
    let cxx = compiler().ok_or(CaptureError::NoCompiler)?;
    // The other sources are read as the translation read them (bounded,
    // regular files only); one that cannot be read is the compiler's to say.
    let hdf5 = if uses_hdf5(&run.instrumented)
        || run.sources.iter().any(|source| {
            op2_codegen::files::read_source(source).is_ok_and(|text| uses_hdf5(&text))
        }) {
        Some(hdf5_flags().map_err(CaptureError::NoHdf5)?)
    } else {
        None
    };
    let dir = prepare(run)?;
    // Each unit with its own flags, then the link; progress names each.
    let units = 1 + run.sources.len();
    let mut objects = Vec::new();
    for (i, (unit, source)) in std::iter::once((&run.main, dir.path().join("op2_import_main.cpp")))
        .chain(run.sources.iter().map(|s| (s, s.clone())))
        .enumerate()
    {
        progress(&compiling_progress(unit, i, units, &cxx));
        let object = dir.path().join(format!("op2_import_unit{i}.o"));
        let mut command = compiler_command(&cxx, dir.path(), run, unit, hdf5.as_ref());
        command
            .arg("-O1")
            .arg("-w")
            .arg("-c")
            .arg(source)
            .arg("-o")
            .arg(&object);
        compile(&mut command, run.cancel)?;
        objects.push(object);
    }
    let binary = dir.path().join("op2_import_app");
    if units > 1 {
        progress(&format!("linking {units} translation units"));
    }
    let mut command = Command::new(&cxx);
    command.args(&objects).arg("-o").arg(&binary);
    if let Some(flags) = &hdf5 {
        command.args(&flags.link);
    }
    command.arg("-lm");
    compile(&mut command, run.cancel)?;
    progress("running the set-up to its first par_loop");
    let capture_file = dir.path().join("capture.txt");
    let mut command = Command::new(&binary);
    if let Some(dir) = run.working_dir {
        command.current_dir(dir);
    }
    command
        .args(run.args)
        .env("OP2_IMPORT_CAPTURE", &capture_file)
        .stdin(Stdio::null());
    let output = finish(&mut command, run.cancel)?;
    let mut printed = output.stdout;
    printed.push_str(&output.stderr);
    // A set-up that failed is reported as such, whatever it left in the
    // capture (cut short, in the middle of a character).
    let text = read_capture(&capture_file, CAPTURE_LIMIT);
    if !output.status.success() || text.as_ref().is_ok_and(|t| !t.ends_with("stop\n")) {
        let status = match output.status.code() {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_owned(),
        };
        return Err(CaptureError::Stopped {
            status,
            output: printed,
        });
    }
    let text = text?;
    progress("reading what the set-up declared");
    let mut capture = parse(&text).map_err(CaptureError::Malformed)?;
    capture.output = printed;
    Ok(capture)
}

/// The capture file at `path`, at most `limit` bytes of it, its length
/// checked before it is read (a set-up can write any amount); an empty text
/// when it is missing, unreadable or not a regular file (the set-up then
/// stopped early, which the caller reports with the application's output).
/// Through `op2_codegen::files::read_regular`, which opens without blocking:
/// a FIFO the set-up left in its place would otherwise hold the import.
fn read_capture(path: &Path, limit: u64) -> Result<String, CaptureError> {
    use op2_codegen::files::{ReadError, decode_source, read_regular};
    let text = read_regular(path, limit).and_then(decode_source);
    match text {
        Ok(text) => Ok(text),
        Err(ReadError::TooLarge { size, .. }) => Err(CaptureError::TooLarge(size)),
        Err(ReadError::NotUtf8 { line, column, .. }) => Err(CaptureError::Malformed(format!(
            "line {line}, column {column} is not UTF-8 text"
        ))),
        Err(_) => Ok(String::new()),
    }
}

/// The capture's progress as it compiles `unit`, the `index`th (from 0)
/// of `units`: `compiling app.cpp with g++`, or with `(2 of 200)` after the
/// file where there are several.
fn compiling_progress(unit: &Path, index: usize, units: usize, cxx: &str) -> String {
    let of = if units > 1 {
        format!(" ({} of {units})", index + 1)
    } else {
        String::new()
    };
    format!("compiling {}{of} with {cxx}", unit.display())
}

/// Runs the compiler or the linker `command`; its messages when it fails.
fn compile(command: &mut Command, cancel: Option<&AtomicBool>) -> Result<(), CaptureError> {
    let shown = format!("{command:?}").replace('"', "");
    let output = finish(command, cancel).map_err(|e| match e {
        CaptureError::Cancelled => e,
        e => CaptureError::CompileFailed {
            command: shown.clone(),
            messages: e.to_string(),
        },
    })?;
    if !output.status.success() {
        return Err(CaptureError::CompileFailed {
            command: shown,
            messages: output.stderr,
        });
    }
    Ok(())
}

/// How much of each of a child's output streams is kept: the rest is read
/// and dropped, so that a program printing without end cannot exhaust memory.
const OUTPUT_LIMIT: usize = 1 << 20;

/// A child that ended: its status and the start of what it printed.
struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// How long the output of a child that ended is waited for: a process it
/// started (and left running) may hold its pipes open for as long as it
/// lives, and the import does not wait for that.
const OUTPUT_GRACE: Duration = Duration::from_secs(10);

/// The process groups of the children running now (the compiler's or the
/// application's, each in a group of its own), so that [`kill_children`]
/// can end them and whatever they started.
static GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, Vec<u32>> {
    GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills the process group `group` (a child and what it started).
fn kill_group(group: u32) {
    #[cfg(unix)]
    if let Some(pid) = i32::try_from(group)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = group;
}

/// Kills every child an import is running now, with what it started, and
/// keeps the registry locked until the returned guard is dropped, so that
/// no new one starts meanwhile. A handler of SIGINT and SIGTERM calls this,
/// then ends the process while holding the guard: the children run in
/// groups of their own, which a terminal's signal does not reach.
pub fn kill_children() -> impl Drop {
    let registry = groups();
    for &group in registry.iter() {
        kill_group(group);
    }
    registry
}

/// A child's process group while it is registered: killed and
/// unregistered when dropped, so that nothing it started outlives it.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let mut registry = groups();
        kill_group(self.0);
        registry.retain(|&g| g != self.0);
    }
}

/// Runs `command` to its end, keeping the first [`OUTPUT_LIMIT`] bytes of
/// each stream; when `cancel` is set meanwhile, kills it and says so. It
/// runs in a process group of its own, killed when it ends or is
/// cancelled: a process the set-up started and left running does not
/// outlive the import.
///
/// Once the child has ended its output is read for at most
/// [`OUTPUT_GRACE`] more (what was read by then is kept), and not at all
/// once `cancel` is set: a process the child left behind with its pipes
/// neither delays the import nor keeps a cancelled one alive. The readers
/// of such pipes end when that process closes them.
fn finish(command: &mut Command, cancel: Option<&AtomicBool>) -> Result<Finished, CaptureError> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    // Spawned under the registry's lock: a signal's handler either runs
    // before it exists or sees its group.
    let mut registry = groups();
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            CaptureError::Io(format!(
                "cannot run `{}`: {e}",
                command.get_program().to_string_lossy()
            ))
        })?;
    registry.push(child.id());
    drop(registry);
    let group = Group(child.id());
    let (done, ended) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().map(|s| keep_start(s, done.clone()));
    let stderr = child.stderr.take().map(|s| keep_start(s, done.clone()));
    drop(done);
    let cancelled = || cancel.is_some_and(|cancel| cancel.load(Ordering::Relaxed));
    let status = match cancel {
        None => child.wait(),
        Some(_) => loop {
            if cancelled() {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CaptureError::Cancelled);
            }
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => break Err(e),
            }
        },
    }
    .map_err(io("cannot wait for a child process"))?;
    // What it started and left running ends with it, and with them their
    // hold on its output.
    drop(group);
    // Each reader says once that its stream ended (or drops its sender).
    let mut open = usize::from(stdout.is_some()) + usize::from(stderr.is_some());
    let deadline = std::time::Instant::now() + OUTPUT_GRACE;
    while open > 0 {
        if cancelled() {
            return Err(CaptureError::Cancelled);
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        match ended.recv_timeout(left.min(Duration::from_millis(20))) {
            Ok(()) => open -= 1,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let text = |kept: Option<Kept>| kept.map(|kept| kept.text()).unwrap_or_default();
    Ok(Finished {
        status,
        stdout: text(stdout),
        stderr: text(stderr),
    })
}

/// The start of a stream that a reader thread keeps, and how many bytes
/// after it were dropped.
#[derive(Debug, Clone, Default)]
struct Kept(std::sync::Arc<std::sync::Mutex<(Vec<u8>, usize)>>);

impl Kept {
    /// What was kept so far, with a line saying how much was dropped.
    fn text(&self) -> String {
        let kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut text = String::from_utf8_lossy(&kept.0).into_owned();
        if kept.1 > 0 {
            text.push_str(&format!("\n… ({} more bytes not kept)\n", kept.1));
        }
        text
    }
}

/// Reads `stream` to its end on a thread of its own, keeping its start,
/// and sends on `ended` when it has.
fn keep_start(mut stream: impl Read + Send + 'static, ended: std::sync::mpsc::Sender<()>) -> Kept {
    let kept = Kept::default();
    let shared = kept.clone();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let mut kept = shared
                        .0
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let room = n.min(OUTPUT_LIMIT - kept.0.len());
                    kept.0.extend_from_slice(&buffer[..room]);
                    kept.1 = kept.1.saturating_add(n - room);
                }
            }
        }
        let _ = ended.send(());
    });
    kept
}

/// A path from the bytes the recorder wrote.
fn path_of_bytes(bytes: Vec<u8>) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        PathBuf::from(std::ffi::OsString::from_vec(bytes))
    }
    #[cfg(not(unix))]
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

/// Reads the recorder's file: one header line per declaration, followed by
/// a line of its values.
pub fn parse(text: &str) -> Result<Capture, String> {
    let mut capture = Capture::default();
    let mut read: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    let mut lines = text.lines().enumerate();
    let number = |word: Option<&str>, line: usize| -> Result<usize, String> {
        word.and_then(|w| w.parse().ok())
            .ok_or_else(|| format!("line {}: expected a count", line + 1))
    };
    while let Some((n, line)) = lines.next() {
        let mut words = line.split_whitespace();
        let mut values = |expected: usize| -> Result<Option<Vec<String>>, String> {
            let (_, data) = lines
                .next()
                .ok_or_else(|| format!("line {}: values missing", n + 2))?;
            if data == "null" {
                return Ok(None);
            }
            let values: Vec<String> = data.split_whitespace().map(str::to_owned).collect();
            if values.len() != expected {
                return Err(format!(
                    "line {}: {} where {} declared",
                    n + 2,
                    crate::report::count(values.len(), "value", "values"),
                    crate::report::count(expected, "was", "were")
                ));
            }
            Ok(Some(values))
        };
        match words.next() {
            Some("set") => {
                let _index = number(words.next(), n)?;
                let size = number(words.next(), n)?;
                capture.sets.push(Set { size });
            }
            Some("map") => {
                let _index = number(words.next(), n)?;
                let from = number(words.next(), n)?;
                let to = number(words.next(), n)?;
                let dim = number(words.next(), n)?;
                if to >= capture.sets.len() {
                    return Err(format!("line {}: unknown set", n + 1));
                }
                let size = capture
                    .sets
                    .get(from)
                    .ok_or_else(|| format!("line {}: unknown set", n + 1))?
                    .size;
                let expected = size
                    .checked_mul(dim)
                    .ok_or_else(|| format!("line {}: map too large", n + 1))?;
                let data = match values(expected)? {
                    Some(v) => Some(
                        v.iter()
                            .map(|x| x.parse::<i64>())
                            .collect::<Result<Vec<_>, _>>()
                            .map_err(|_| {
                                format!("line {}: a map entry is not an integer", n + 2)
                            })?,
                    ),
                    None => None,
                };
                capture.maps.push(Map {
                    from,
                    to,
                    dim,
                    data,
                });
            }
            Some("dat") => {
                let _index = number(words.next(), n)?;
                let set = number(words.next(), n)?;
                let dim = number(words.next(), n)?;
                let ty = words.next().unwrap_or("").to_owned();
                let size = capture
                    .sets
                    .get(set)
                    .ok_or_else(|| format!("line {}: unknown set", n + 1))?
                    .size;
                let expected = size
                    .checked_mul(dim)
                    .ok_or_else(|| format!("line {}: dat too large", n + 1))?;
                let data = values(expected)?;
                capture.dats.push(Dat { set, dim, ty, data });
            }
            Some("handle") => {
                let name = words.next().unwrap_or("").to_owned();
                let kind = match words.next() {
                    Some("set") => "set",
                    Some("map") => "map",
                    _ => "dat",
                };
                let index: i64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(-1);
                let declared = match kind {
                    "set" => capture.sets.len(),
                    "map" => capture.maps.len(),
                    _ => capture.dats.len(),
                };
                if let Ok(index) = usize::try_from(index) {
                    if index >= declared {
                        return Err(format!("line {}: unknown {kind}", n + 1));
                    }
                    capture.handles.push((name, kind, index));
                }
            }
            Some("value") => {
                let name = words.next().unwrap_or("").to_owned();
                let ty = words.next().unwrap_or("").to_owned();
                let count = number(words.next(), n)?;
                let array = count != 1 || line.ends_with(" array");
                let values = values(count)?.unwrap_or_default();
                capture.values.push((name, Value { ty, values, array }));
            }
            Some("read") => {
                let hex = words.next().unwrap_or("");
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| {
                        hex.get(i..i + 2)
                            .and_then(|b| u8::from_str_radix(b, 16).ok())
                    })
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(|| format!("line {}: a file name is not in hex", n + 1))?;
                let path = path_of_bytes(bytes);
                // Each once, in the order first read: a set-up may open one
                // file through many spellings (`./x.h5`, `.//x.h5`, …).
                if !path.as_os_str().is_empty() && read.insert(path.clone()) {
                    capture.read_files.push(path);
                }
            }
            Some("stop") => return Ok(capture),
            _ => return Err(format!("line {}: unexpected `{line}`", n + 1)),
        }
    }
    Err("the capture ends before the stop".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The capture is read up to its limit and refused past it, by its
    /// length before it is read; a missing one reads as empty (the set-up
    /// stopped before writing it).
    #[test]
    fn a_capture_past_its_limit_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("capture.txt");
        std::fs::write(&path, "set 0 3\nstop\n").unwrap();
        assert_eq!(read_capture(&path, 13).unwrap(), "set 0 3\nstop\n");
        let error = read_capture(&path, 12).unwrap_err();
        assert!(matches!(error, CaptureError::TooLarge(13)), "{error}");
        assert!(
            error.to_string().starts_with("the set-up's capture of its sets, maps, dats and values is 13 bytes long; op2 import reads at most 4800 MiB"),
            "{error}"
        );
        std::fs::write(&path, b"set 0 3\n\xff\n").unwrap();
        let error = read_capture(&path, 100).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the capture is malformed: line 2, column 1 is not UTF-8 text"
        );
        assert_eq!(read_capture(&dir.path().join("none"), 100).unwrap(), "");
        // A FIFO in its place is not waited on.
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            assert!(
                Command::new("mkfifo")
                    .arg(&fifo)
                    .status()
                    .unwrap()
                    .success()
            );
            assert_eq!(read_capture(&fifo, 100).unwrap(), "");
        }
    }

    #[test]
    fn the_preprocessors_output_keeps_its_directives_and_counts_the_rest() {
        let output = "# 0 \"a.cpp\"\n#define A 1\nint x;\r\n\nint y;\n# 5 \"a.cpp\"\n#undef A\n#pragma once\nz\n";
        assert_eq!(
            directives(output.as_bytes(), 1 << 20).unwrap(),
            "# 0 \"a.cpp\"\n#define A 1\n#op2-lines 3\n# 5 \"a.cpp\"\n#undef A\n"
        );
        // Bounded: past the limit, an error.
        let many = "#define A 1\n".repeat(1000);
        assert!(
            directives(many.as_bytes(), 100)
                .unwrap_err()
                .contains("more than")
        );
    }

    #[test]
    fn the_progress_of_a_capture_names_each_unit_it_compiles() {
        assert_eq!(
            compiling_progress(Path::new("app.cpp"), 0, 1, "g++"),
            "compiling app.cpp with g++"
        );
        assert_eq!(
            compiling_progress(Path::new("src/mesh.cpp"), 1, 200, "c++"),
            "compiling src/mesh.cpp (2 of 200) with c++"
        );
    }

    #[test]
    fn the_files_the_set_up_read_are_kept_once_each() {
        // `grid.h5` twice and `a b/é.h5`, as the recorder writes them.
        let capture =
            "read 677269642e6835\nset 0 2\nread 677269642e6835\nread 6120622fc3a92e6835\nstop\n";
        assert_eq!(
            parse(capture).unwrap().read_files,
            vec![PathBuf::from("grid.h5"), PathBuf::from("a b/é.h5")]
        );
        assert_eq!(
            parse("read 6g\nstop\n").unwrap_err(),
            "line 1: a file name is not in hex"
        );
    }

    #[test]
    fn declarations_named_by_index_must_exist() {
        // Found by `op2-fuzz --import` (seed 4, cases 8098 and 8693): a
        // capture naming a set or dat that was never declared panicked
        // where the translation named it.
        let map_to_nothing = "set 0 2\nmap 0 0 3 1\n0 1\nstop\n";
        assert_eq!(parse(map_to_nothing).unwrap_err(), "line 2: unknown set");
        let handle_of_nothing = "set 0 2\nhandle d dat 0\nstop\n";
        assert_eq!(parse(handle_of_nothing).unwrap_err(), "line 2: unknown dat");
        let fine = "set 0 2\nmap 0 0 0 1\n0 1\nhandle m map 0\nstop\n";
        assert_eq!(
            parse(fine).unwrap().handles,
            vec![("m".to_owned(), "map", 0)]
        );
    }

    /// A shell that leaves a `sleep` behind holding its output, and prints
    /// the sleep's process id; the sleep is killed once the test is done.
    struct LeavesASleep(Option<String>);

    impl LeavesASleep {
        fn command() -> Command {
            let mut command = Command::new("sh");
            command.args(["-c", "sleep 120 & echo $!"]);
            command
        }
    }

    impl Drop for LeavesASleep {
        fn drop(&mut self) {
            if let Some(pid) = self.0.as_deref() {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
    }

    #[test]
    fn a_process_left_behind_holding_the_output_does_not_hold_the_import() {
        let start = std::time::Instant::now();
        let finished = finish(&mut LeavesASleep::command(), None).unwrap();
        let _sleep = LeavesASleep(Some(finished.stdout.clone()));
        assert!(finished.status.success());
        // What was printed before the shell ended is kept.
        assert!(
            finished.stdout.trim().parse::<u32>().is_ok(),
            "{:?}",
            finished.stdout
        );
        // Waited for the grace, not for the sleep's 120 s.
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{:?}",
            start.elapsed()
        );
    }

    /// Whether process `pid` has ended (gone, or a zombie nobody reaped).
    fn ended(pid: &str) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        match stat {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn what_a_child_leaves_running_ends_with_it() {
        let finished = finish(&mut LeavesASleep::command(), None).unwrap();
        let pid = finished.stdout.clone();
        let _sleep = LeavesASleep(Some(pid.clone()));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !ended(&pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(ended(&pid), "the sleep {} still runs", pid.trim());
        // (The registry is not looked at: other tests of this binary run
        // children at the same time.)
    }

    #[test]
    fn a_cancel_while_the_output_is_read_stops_the_wait() {
        let cancel = std::sync::Arc::new(AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&cancel);
        let setter = std::thread::spawn(move || {
            // Past the shell's end (it ends at once), while the sleep holds
            // its output.
            std::thread::sleep(Duration::from_millis(500));
            flag.store(true, Ordering::Relaxed);
        });
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let mut command = Command::new("sh");
        command
            // Out of the shell's process group (which ends with the
            // shell), so that it holds the output on. The shell ends only
            // once the sleep has left the group (its pid is written after
            // `setsid`): ending first, it had the sleep killed with the
            // group under load, and nothing held the output.
            .args([
                "-c",
                "setsid sh -c 'echo $$ > \"$0\"; exec sleep 120' \"$0\" & \
                 while [ ! -s \"$0\" ]; do sleep 0.05; done",
            ])
            .arg(&pid_file);
        let start = std::time::Instant::now();
        let result = finish(&mut command, Some(&cancel));
        setter.join().unwrap();
        let _sleep = LeavesASleep(std::fs::read_to_string(&pid_file).ok());
        assert!(
            matches!(result, Err(CaptureError::Cancelled)),
            "{:?}",
            result.map(|f| f.stdout)
        );
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{:?}",
            start.elapsed()
        );
    }
}
