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

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use notify_debouncer_full::notify::{EventKind, RecursiveMode};
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
        // Watched name → the path as given, to show.
        let files: BTreeMap<PathBuf, PathBuf> = roots
            .iter()
            .chain(&asked)
            .chain(data)
            .filter_map(|path| Some((watched_name(path)?, path.clone())))
            .collect();
        let wanted: BTreeSet<PathBuf> = files
            .keys()
            .filter_map(|file| file.parent().map(Path::to_owned))
            .collect();
        for gone in directories.difference(&wanted) {
            let _ = debouncer.unwatch(gone);
        }
        for new in wanted.difference(&directories) {
            if let Err(error) = debouncer.watch(new, RecursiveMode::NonRecursive) {
                writeln!(
                    io::stderr().lock(),
                    "warning: cannot watch `{}`: {error}",
                    crate::render::visible_path(new)
                )?;
            }
        }
        directories = wanted;
        writeln!(
            io::stderr().lock(),
            "[{}] watching {} file{} for changes; Ctrl-C to stop",
            clock(),
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        )?;
        cause = Some(next_change(&receiver, &files)?);
    }
    Ok(Outcome::Success)
}

/// Blocks until an event changes one of `files`; returns that file as
/// given.
fn next_change(
    receiver: &mpsc::Receiver<DebounceEventResult>,
    files: &BTreeMap<PathBuf, PathBuf>,
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
        if let Some(path) = events.iter().find_map(|event| changed(event, files)) {
            return Ok(path);
        }
    }
}

/// The watched file an event changes, if any: reading (which the watcher
/// reports too) is no change.
fn changed(event: &DebouncedEvent, files: &BTreeMap<PathBuf, PathBuf>) -> Option<PathBuf> {
    if matches!(event.kind, EventKind::Access(_)) {
        return None;
    }
    event.paths.iter().find_map(|path| files.get(path)).cloned()
}

/// The name under which the watcher reports changes of `path`: its
/// directory made canonical (links and `..` resolved), then its file name.
/// `None` when the directory does not exist (nothing there to watch).
fn watched_name(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    Some(directory.canonicalize().ok()?.join(name))
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
        assert_eq!(watched_name(&dir.path().join("missing/a.op2")), None);
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
