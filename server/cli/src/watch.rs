//! `op2 check --watch` and `op2 build --watch`: the same check or build as
//! without `--watch` (the functions of `check.rs` and `build.rs`), run again
//! whenever one of its files changes.
//!
//! The files watched are those the last run read: the files given, every
//! file their imports asked for (recorded by the loader, so an import that
//! is missing now is watched too and a run follows its creation), and the
//! instance data. Each run may import other files, so the set is computed
//! anew after every run. Directories are watched rather than files, so that
//! an editor that saves by writing a new file and renaming it over the old
//! one is seen. Events come through a debouncer: a save that touches a file
//! several times starts one run. Ctrl-C ends the process through the
//! signal handler of `main.rs`, which removes the temporary file of a build
//! in progress.
//!
//! A program chooses its imports, missing ones included, in any directory
//! that exists (`import "/usr/share/doc/x/a.op2";`), and each watched
//! directory takes one of the user's inotify watches
//! (`fs.inotify.max_user_watches`, shared with every other program of the
//! user; 8,192 on older kernels). So at most [`MAX_DIRECTORIES`] are
//! watched, the most relevant first: those of the files given and the
//! instance data, then those of the imports that were read, then those of
//! missing imports, each in the order the run asked for them. What is not
//! watched is said once per run, and so is a watch the system refuses (its
//! limit reached: the rest are not tried); a directory whose watch failed
//! is tried again after the next run.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use notify_debouncer_full::notify::{self, EventKind, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, DebouncedEvent, new_debouncer};
use op2_analysis::Loader;

use crate::Outcome;
use crate::check::DiskLoader;

/// `--watch`, shared by `check` and `build`.
#[derive(Debug, Default, clap::Args)]
pub struct WatchFlag {
    /// Run again whenever a file changes: the files given, every file they
    /// import and the instance data; Ctrl-C stops.
    #[arg(short, long)]
    pub watch: bool,
}

/// How long the files must be quiet before a run starts.
const QUIET: Duration = Duration::from_millis(200);

/// The most directories one `--watch` watches: far more than the imports
/// of a real program are spread over, and 1.6 % of the 8,192 inotify
/// watches older kernels give a user for all of their programs.
pub const MAX_DIRECTORIES: usize = 128;

/// Adds and removes watches on directories: the debouncer, or a stand-in
/// in tests.
trait Watches {
    fn watch(&mut self, directory: &Path) -> notify::Result<()>;
    fn unwatch(&mut self, directory: &Path);
}

impl<T: notify::Watcher, C: notify_debouncer_full::FileIdCache> Watches
    for notify_debouncer_full::Debouncer<T, C>
{
    fn watch(&mut self, directory: &Path) -> notify::Result<()> {
        notify_debouncer_full::Debouncer::watch(self, directory, RecursiveMode::NonRecursive)
    }

    fn unwatch(&mut self, directory: &Path) {
        let _ = notify_debouncer_full::Debouncer::unwatch(self, directory);
    }
}

/// The directories to watch, most relevant first, at most
/// [`MAX_DIRECTORIES`]; and how many more there were. `files` are watched
/// names: first the `given` files (on the command line and the instance
/// data), then the imports in the order the run asked for them; `exists`
/// says whether a file is there. After the directories of the files given
/// come those of the imports that exist, then those of missing ones.
fn choose_directories(
    files: &[PathBuf],
    given: usize,
    exists: impl Fn(&Path) -> bool,
) -> (Vec<PathBuf>, usize) {
    let mut seen: BTreeSet<&Path> = BTreeSet::new();
    let mut ordered: Vec<PathBuf> = Vec::new();
    let mut missing: Vec<PathBuf> = Vec::new();
    for (at, file) in files.iter().enumerate() {
        let Some(directory) = file.parent() else {
            continue;
        };
        if !seen.insert(directory) {
            continue;
        }
        if at < given || exists(file) {
            ordered.push(directory.to_owned());
        } else {
            missing.push(directory.to_owned());
        }
    }
    ordered.extend(missing);
    let more = ordered.len().saturating_sub(MAX_DIRECTORIES);
    ordered.truncate(MAX_DIRECTORIES);
    (ordered, more)
}

/// What [`update_watches`] could not do.
#[derive(Debug, Default, PartialEq, Eq)]
struct Refusals {
    /// Directories whose watch failed, with why (the system's limit aside).
    failed: Vec<(PathBuf, String)>,
    /// Directories not tried after the system's limit of watches was
    /// reached, the one that reached it included.
    over_system_limit: usize,
}

/// Makes `watched` the directories of `wanted` (in its order) that can be
/// watched: removes the watches no longer wanted, adds the new ones, and
/// stops adding at the system's limit of watches. A failed directory is
/// left out of `watched`, so the next update tries it again.
fn update_watches(
    watches: &mut impl Watches,
    watched: &mut BTreeSet<PathBuf>,
    wanted: &[PathBuf],
) -> Refusals {
    let keep: BTreeSet<&PathBuf> = wanted.iter().collect();
    watched.retain(|directory| {
        let kept = keep.contains(directory);
        if !kept {
            watches.unwatch(directory);
        }
        kept
    });
    let mut refusals = Refusals::default();
    for (at, directory) in wanted.iter().enumerate() {
        if watched.contains(directory) {
            continue;
        }
        match watches.watch(directory) {
            Ok(()) => {
                watched.insert(directory.clone());
            }
            Err(error) if matches!(error.kind, notify::ErrorKind::MaxFilesWatch) => {
                refusals.over_system_limit = wanted[at..]
                    .iter()
                    .filter(|d| !watched.contains(*d))
                    .count();
                break;
            }
            Err(error) => refusals
                .failed
                .push((directory.clone(), without_paths(error))),
        }
    }
    refusals
}

/// A watcher's error without the paths it appends (the message names the
/// directory itself), starting in lower case.
fn without_paths(mut error: notify::Error) -> String {
    error.paths.clear();
    let text = error.to_string();
    let text = text.trim_end_matches('.');
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_lowercase().chain(chars).collect()
    })
}

/// The warnings of one run about what is not watched: directories over
/// [`MAX_DIRECTORIES`] (`more`) and those `refusals` lists.
fn warnings(more: usize, refusals: &Refusals) -> Vec<String> {
    let mut lines = Vec::new();
    if more > 0 {
        lines.push(format!(
            "warning: {more} director{} of imports {} not watched: `--watch` watches at most {MAX_DIRECTORIES} (those of the files given first), so changes there start no run",
            if more == 1 { "y" } else { "ies" },
            if more == 1 { "is" } else { "are" }
        ));
    }
    const SHOWN: usize = 3;
    for (directory, why) in refusals.failed.iter().take(SHOWN) {
        lines.push(format!(
            "warning: cannot watch `{}`: {why}",
            crate::render::visible_path(directory)
        ));
    }
    if refusals.failed.len() > SHOWN {
        lines.push(format!(
            "warning: cannot watch {} more directories either",
            refusals.failed.len() - SHOWN
        ));
    }
    if refusals.over_system_limit > 0 {
        lines.push(format!(
            "warning: the system's limit of inotify watches is reached (`fs.inotify.max_user_watches`): {} director{} not watched, and changes there start no run",
            refusals.over_system_limit,
            if refusals.over_system_limit == 1 { "y is" } else { "ies are" }
        ));
    }
    lines
}

/// Reads imports from disk and remembers every path asked for, read or not.
#[derive(Debug, Default)]
struct Recording {
    asked: Mutex<Vec<PathBuf>>,
}

impl Loader for Recording {
    fn load(&self, path: &Path) -> Result<Arc<str>, String> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(path.to_owned());
        DiskLoader.load(path)
    }
}

/// Runs `once` (`op2 VERB` on `roots`), then again after every change of
/// the files it read or of `data`, until the process is stopped.
pub fn watch(
    verb: &str,
    roots: &[PathBuf],
    data: &[PathBuf],
    mut once: impl FnMut(&dyn Loader) -> Result<Outcome>,
) -> Result<Outcome> {
    let (sender, receiver) = mpsc::channel::<DebounceEventResult>();
    let mut debouncer = new_debouncer(QUIET, None, sender)
        .context("cannot watch files for changes (the file watcher could not start)")?;
    let mut directories: BTreeSet<PathBuf> = BTreeSet::new();
    // Each watched directory's identity: one removed and made again (its
    // watch gone with the old one) has another.
    let mut identities: BTreeMap<PathBuf, Option<op2_codegen::files::Identity>> = BTreeMap::new();
    let terminal = io::stderr().is_terminal();
    let mut cause: Option<PathBuf> = None;
    for number in 1u64.. {
        if terminal && number > 1 {
            // Each run on a clean screen, as `tsc --watch` does.
            write!(io::stderr().lock(), "\x1b[2J\x1b[H")?;
        }
        let heading = match &cause {
            None => format!("op2 {verb}"),
            Some(path) => format!(
                "op2 {verb}, run {number}: `{}` changed",
                crate::render::visible_path(path)
            ),
        };
        writeln!(io::stderr().lock(), "[{}] {heading}", clock())?;
        let recording = Recording::default();
        match once(&recording) {
            Ok(_) => {}
            Err(error) => {
                if error
                    .downcast_ref::<io::Error>()
                    .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
                {
                    return Err(error);
                }
                writeln!(
                    io::stderr().lock(),
                    "error: {}",
                    crate::render::visible(&format!("{error:#}"))
                )?;
            }
        }
        let asked = recording
            .asked
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Watched names, most relevant first, with the paths as given.
        let mut named: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut known: BTreeSet<PathBuf> = BTreeSet::new();
        let mut given = 0;
        for (at, path) in roots.iter().chain(data).chain(&asked).enumerate() {
            // A file reached through a link is watched where the link
            // leads too: an edit there changes what the run reads.
            let target = std::fs::canonicalize(path).ok();
            for name in watched_name(path).into_iter().chain(target) {
                if known.insert(name.clone()) {
                    named.push((name, path.clone()));
                    if at < roots.len() + data.len() {
                        given = named.len();
                    }
                }
            }
        }
        let names: Vec<PathBuf> = named.iter().map(|(name, _)| name.clone()).collect();
        let (wanted, more) = choose_directories(&names, given, Path::is_file);
        // A directory removed since it was watched (and perhaps made
        // again) lost its watch: it is watched anew.
        directories.retain(|directory| {
            let same = identities.get(directory).cloned().flatten()
                == op2_codegen::files::identity(directory);
            if !same {
                Watches::unwatch(&mut debouncer, directory);
                identities.remove(directory);
            }
            same
        });
        let refusals = update_watches(&mut debouncer, &mut directories, &wanted);
        for directory in &directories {
            identities
                .entry(directory.clone())
                .or_insert_with(|| op2_codegen::files::identity(directory));
        }
        identities.retain(|directory, _| directories.contains(directory));
        {
            let mut stderr = io::stderr().lock();
            for line in warnings(more, &refusals) {
                writeln!(stderr, "{}", crate::render::visible(&line))?;
            }
        }
        // Watched name → the path as given, to show: the files of the
        // directories watched.
        let files: BTreeMap<PathBuf, PathBuf> = named
            .into_iter()
            .filter(|(name, _)| name.parent().is_some_and(|d| directories.contains(d)))
            .collect();
        // A file watched under two names (a link and where it leads)
        // counts once.
        let watching = files.values().collect::<BTreeSet<_>>().len();
        writeln!(
            io::stderr().lock(),
            "[{}] watching {watching} file{} for changes; Ctrl-C to stop",
            clock(),
            if watching == 1 { "" } else { "s" }
        )?;
        cause = Some(next_change(&receiver, &files, &directories)?);
    }
    Ok(Outcome::Success)
}

/// Blocks until an event changes one of `files`; returns that file as
/// given.
fn next_change(
    receiver: &mpsc::Receiver<DebounceEventResult>,
    files: &BTreeMap<PathBuf, PathBuf>,
    directories: &BTreeSet<PathBuf>,
) -> Result<PathBuf> {
    loop {
        let events = match receiver.recv().context("the file watcher stopped")? {
            Ok(events) => events,
            Err(errors) => {
                let mut stderr = io::stderr().lock();
                for error in errors {
                    writeln!(stderr, "warning: watching files: {error}")?;
                }
                continue;
            }
        };
        if let Some(path) = events
            .iter()
            .find_map(|event| changed(event, files, directories))
        {
            return Ok(path);
        }
    }
}

/// The watched file an event changes, if any: reading (which the watcher
/// reports too) is no change. The removal of a watched directory itself
/// (`rm -r`, a branch checked out) is one: its watch is gone with it.
fn changed(
    event: &DebouncedEvent,
    files: &BTreeMap<PathBuf, PathBuf>,
    directories: &BTreeSet<PathBuf>,
) -> Option<PathBuf> {
    if matches!(event.kind, EventKind::Access(_)) {
        return None;
    }
    let removed = matches!(event.kind, EventKind::Remove(_));
    event.paths.iter().find_map(|path| {
        files
            .get(path)
            .cloned()
            .or_else(|| (removed && directories.contains(path)).then(|| path.clone()))
    })
}

/// The name under which the watcher reports changes of `path`: its
/// directory made canonical (links and `..` resolved), then its file name.
/// Where the directory does not exist, the first missing directory under
/// the nearest one that does (`/p/lib` for `lib/common.op2` before `lib`
/// is made): creating it starts a run, and the run watches further down.
/// `None` only when no ancestor exists.
fn watched_name(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if let Ok(directory) = directory.canonicalize() {
        return Some(directory.join(name));
    }
    // Bounded by the path's own components.
    let mut missing = directory;
    while let Some(parent) = missing.parent() {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if let Ok(existing) = parent.canonicalize() {
            return Some(existing.join(missing.file_name()?));
        }
        missing = parent;
    }
    None
}

/// The time of day, `HH:MM:SS UTC`.
fn clock() -> String {
    let seconds = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_by_its_canonical_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let through_dots = dir.path().join("sub/../a.op2");
        let canonical = dir.path().canonicalize().unwrap().join("a.op2");
        assert_eq!(watched_name(&through_dots), Some(canonical));
        // A missing directory is named under the nearest one that exists,
        // so that making it starts a run.
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(
            watched_name(&dir.path().join("missing/deeper/a.op2")),
            Some(root.join("missing"))
        );
        assert_eq!(
            watched_name(&dir.path().join("sub/missing/a.op2")),
            Some(root.join("sub/missing"))
        );
    }

    /// Watches that succeed until `room` is used up, then fail as the
    /// system does at its limit; `refuse` fails with another error.
    #[derive(Default)]
    struct Counted {
        calls: usize,
        room: usize,
        refuse: Option<PathBuf>,
        live: BTreeSet<PathBuf>,
    }

    impl Watches for Counted {
        fn watch(&mut self, directory: &Path) -> notify::Result<()> {
            self.calls += 1;
            if self.refuse.as_deref() == Some(directory) {
                return Err(notify::Error::io(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "Permission denied",
                ))
                .add_path(directory.to_owned()));
            }
            if self.live.len() >= self.room {
                return Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch));
            }
            self.live.insert(directory.to_owned());
            Ok(())
        }

        fn unwatch(&mut self, directory: &Path) {
            self.live.remove(directory);
        }
    }

    fn imports(count: usize) -> Vec<PathBuf> {
        (0..count)
            .map(|i| PathBuf::from(format!("/p/d{i}/x.op2")))
            .collect()
    }

    #[test]
    fn at_most_the_limit_of_directories_is_watched_the_given_first() {
        // The file given, then 300 imports in as many directories, of which
        // the even ones exist.
        let mut files = vec![PathBuf::from("/p/main.op2")];
        files.extend(imports(300));
        let exists = |file: &Path| {
            let name = file
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy();
            name.trim_start_matches('d')
                .parse::<usize>()
                .is_ok_and(|i| i % 2 == 0)
        };
        let (wanted, more) = choose_directories(&files, 1, exists);
        assert_eq!(wanted.len(), MAX_DIRECTORIES);
        assert_eq!(more, 301 - MAX_DIRECTORIES);
        assert_eq!(wanted[0], Path::new("/p"));
        assert_eq!(wanted[1], Path::new("/p/d0"));
        assert_eq!(
            wanted[2],
            Path::new("/p/d2"),
            "existing imports before missing ones"
        );
        let mut watches = Counted {
            room: usize::MAX,
            ..Counted::default()
        };
        let mut watched = BTreeSet::new();
        let refusals = update_watches(&mut watches, &mut watched, &wanted);
        assert_eq!(refusals, Refusals::default());
        assert_eq!(watches.calls, MAX_DIRECTORIES);
        assert_eq!(watches.live.len(), MAX_DIRECTORIES);
        assert_eq!(
            warnings(more, &refusals),
            [format!(
                "warning: 173 directories of imports are not watched: `--watch` watches at most {MAX_DIRECTORIES} (those of the files given first), so changes there start no run"
            )]
        );
        // The same directories again: no new watch.
        let again = update_watches(&mut watches, &mut watched, &wanted);
        assert_eq!(again, Refusals::default());
        assert_eq!(watches.calls, MAX_DIRECTORIES);
    }

    #[test]
    fn the_systems_limit_stops_adding_and_is_said_once() {
        let wanted: Vec<PathBuf> = imports(50)
            .iter()
            .map(|f| f.parent().unwrap().to_owned())
            .collect();
        let mut watches = Counted {
            room: 10,
            refuse: Some(PathBuf::from("/p/d3")),
            ..Counted::default()
        };
        let mut watched = BTreeSet::new();
        let refusals = update_watches(&mut watches, &mut watched, &wanted);
        // d3 refused, ten watched, the one that met the limit and the rest
        // not tried.
        assert_eq!(watches.calls, 12);
        assert_eq!(watched.len(), 10);
        assert!(!watched.contains(Path::new("/p/d3")));
        assert_eq!(refusals.over_system_limit, 50 - 11);
        assert_eq!(
            warnings(0, &refusals),
            [
                "warning: cannot watch `/p/d3`: permission denied".to_owned(),
                "warning: the system's limit of inotify watches is reached (`fs.inotify.max_user_watches`): 39 directories are not watched, and changes there start no run".to_owned(),
            ]
        );
        // Room again and the refusal gone: the next run tries the rest,
        // and a directory no longer wanted is let go.
        watches.room = usize::MAX;
        watches.refuse = None;
        let fewer = &wanted[1..];
        let refusals = update_watches(&mut watches, &mut watched, fewer);
        assert_eq!(refusals, Refusals::default());
        assert_eq!(watched.len(), 49);
        assert_eq!(watches.live.len(), 49);
        assert!(!watches.live.contains(Path::new("/p/d0")));
    }

    #[test]
    fn the_clock_reads_hours_minutes_and_seconds() {
        let text = clock();
        let (time, zone) = text.split_once(' ').unwrap();
        assert_eq!(zone, "UTC");
        let parts: Vec<u64> = time.split(':').map(|p| p.parse().unwrap()).collect();
        assert!(parts.len() == 3 && parts[0] < 24 && parts[1] < 60 && parts[2] < 60);
    }
}
