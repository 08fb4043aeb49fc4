//! The temporary files of atomic writes, registered while they exist so
//! that a handler of SIGINT and SIGTERM can remove them before the process
//! ends: every atomic write of the workspace (a graph, a formatted file, an
//! instance or final state in JSON or HDF5) makes its temporary file here.

use std::io;
use std::path::{Path, PathBuf};

/// The temporary files being written now, removed by
/// [`remove_temporary_files`] when the process is told to stop.
static TEMPORARIES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn temporaries() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A temporary file beside the target, registered so that a signal
/// handler can remove it; unregistered when dropped (written or not).
#[derive(Debug)]
pub struct Temporary {
    /// The file being written.
    pub file: tempfile::NamedTempFile,
    _registered: Registered,
}

/// The registration of a temporary file, undone on drop.
#[derive(Debug)]
struct Registered(PathBuf);

impl Drop for Registered {
    fn drop(&mut self) {
        temporaries().retain(|p| *p != self.0);
    }
}

/// The error of a temporary file that could not be made in `directory`,
/// saying so, without the name of the file that was never made (the
/// library's message ends in ` at path "…/.op2-0uywvK.tmp"`).
fn cannot_create_in(directory: &Path, error: &io::Error) -> io::Error {
    let message = error.to_string();
    let message = message
        .rfind(" at path \"")
        .map_or(message.as_str(), |at| &message[..at]);
    io::Error::new(
        error.kind(),
        format!(
            "no file can be created in `{}`: {message}",
            directory.display()
        ),
    )
}

impl Temporary {
    /// Creates it under the registry's lock, so that a signal handler that
    /// removes the registered files either runs before it exists or sees it.
    pub fn new(directory: &Path, prefix: &str) -> io::Result<Temporary> {
        let temporary = Temporary::unheld(directory, prefix)?;
        hold_for_tests();
        Ok(temporary)
    }

    /// `Ok` when a file can be made in `directory` now: makes a temporary
    /// file there (registered, as every one) and removes it at once. A
    /// command checks its output's directory this way before its work, so
    /// that a long run does not end in "cannot write".
    pub fn probe(directory: &Path) -> io::Result<()> {
        Temporary::unheld(directory, ".op2-probe-").map(drop)
    }

    fn unheld(directory: &Path, prefix: &str) -> io::Result<Temporary> {
        Ok({
            let mut registered = temporaries();
            let file = tempfile::Builder::new()
                .prefix(prefix)
                .suffix(".tmp")
                .tempfile_in(directory)
                .map_err(|error| cannot_create_in(directory, &error))?;
            registered.push(file.path().to_owned());
            let name = file.path().to_owned();
            Temporary {
                file,
                _registered: Registered(name),
            }
        })
    }

    /// Gives it the permission bits, owner and group of what it will
    /// replace: those of the regular file at `target` (a private 0600 file
    /// stays private, an executable stays executable; set-user-ID,
    /// set-group-ID and sticky bits are not copied), else 0644, as a plain
    /// `create` makes an output others may read. (The temporary file itself
    /// is 0600.) The owner and group are given back where the system
    /// allows it: root's `op2 fmt` of a user's file leaves it the user's;
    /// another user who may write the file keeps its group where they
    /// belong to it, and becomes its owner otherwise, as with every editor
    /// that writes a copy and renames it. Not in a directory with the
    /// sticky bit, such as `/tmp`, where the writer keeps the file.
    pub fn take_mode_and_owner_of(&self, target: &Path) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let old = std::fs::metadata(target).ok().filter(|m| m.is_file());
            let file = self.file.as_file();
            // Not in a directory with the sticky bit (`/tmp`): there anyone may
            // make the file first, and handing root's output to its maker
            // would let them change what they could not replace.
            let directory = match target.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            let sticky =
                std::fs::metadata(directory).is_ok_and(|d| d.permissions().mode() & 0o1000 != 0);
            if let Some(old) = old.as_ref().filter(|_| !sticky) {
                let new = file.metadata()?;
                if (new.uid(), new.gid()) != (old.uid(), old.gid())
                    && std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid())).is_err()
                {
                    let _ = std::os::unix::fs::fchown(file, None, Some(old.gid()));
                }
            }
            // After the owner: a change of owner may clear mode bits.
            let mode = old.map_or(0o644, |old| old.permissions().mode() & 0o777);
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        let _ = target;
        Ok(())
    }

    /// Renames it over `path`, then unregisters it.
    pub fn persist(self, path: &Path) -> io::Result<()> {
        let Temporary { file, _registered } = self;
        file.persist(path).map(drop).map_err(|e| e.error)
    }
}

/// The directory a file at `path` is written in (its temporary file
/// beside it): `.` for a bare name.
pub fn directory_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// The variable that makes each temporary file wait, once made and
/// registered, the milliseconds it says (at most a minute) before it is
/// written: the tests of what SIGINT and SIGTERM leave behind set it, so
/// that their signal lands while the file exists however fast the machine
/// writes (polling for a file written and renamed within a millisecond
/// failed on a loaded CI machine). Nothing else sets it.
pub const HOLD_VARIABLE: &str = "OP2_TEST_HOLD_TEMPORARY_MS";

fn hold_for_tests() {
    if let Some(ms) = std::env::var(HOLD_VARIABLE)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms.min(60_000)));
    }
}

/// Removes every temporary file a build or an atomic write is writing now,
/// and keeps the registry locked until the returned guard is dropped, so
/// that no new one is made meanwhile. A handler of SIGINT and SIGTERM calls
/// this, then ends the process while holding the guard.
pub fn remove_temporary_files() -> impl Drop {
    let registered = temporaries();
    for path in registered.iter() {
        let _ = std::fs::remove_file(path);
    }
    registered
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry is the process's: these tests take turns with it, so
    /// that one's "signal" does not remove the other's file.
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn turn() -> std::sync::MutexGuard<'static, ()> {
        TURN.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[test]
    fn a_temporary_file_is_registered_while_it_exists_and_removed_on_a_signal() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let temporary = Temporary::new(dir.path(), ".op2-").unwrap();
        let path = temporary.file.path().to_owned();
        assert!(temporaries().contains(&path));
        // What the signal handler does: every registered file is removed.
        drop(remove_temporary_files());
        assert!(!path.exists());
        drop(temporary);
        assert!(!temporaries().contains(&path));
    }

    #[test]
    fn instance_writes_make_their_temporary_files_here() {
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.json");
        let mut seen = None;
        crate::write::atomically(&target, |temporary| {
            seen = Some(temporaries().contains(&temporary.to_path_buf()));
            std::fs::write(temporary, b"{}")?;
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, Some(true), "the temporary file was not registered");
        assert!(!temporaries().iter().any(|p| p.starts_with(dir.path())));
        assert_eq!(std::fs::read(&target).unwrap(), b"{}");
    }

    /// An atomic write keeps the owner, group and mode of the file it
    /// replaces: as root, a file of another user stays theirs.
    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_owner_group_and_mode() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let _turn = turn();
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("kept.op2");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        let root = rustix::process::geteuid().is_root();
        let (uid, gid) = if root {
            (4321, 8765)
        } else {
            // Loud: part of the test cannot run without root.
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "not root: a file of another owner cannot be made here, so only the test's own owner and group are checked to be kept"
                );
            }
            let own = std::fs::metadata(&target).unwrap();
            (own.uid(), own.gid())
        };
        std::os::unix::fs::chown(&target, Some(uid), Some(gid)).unwrap();
        crate::write::atomically(&target, |temporary| Ok(std::fs::write(temporary, b"new")?))
            .unwrap();
        let new = std::fs::metadata(&target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!((new.uid(), new.gid()), (uid, gid));
        assert_eq!(new.permissions().mode() & 0o777, 0o640);
        // In a sticky directory (as `/tmp`) the file stays the writer's:
        // whoever made it first there must not get what replaces it.
        let sticky = dir.path().join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let planted = sticky.join("planted.xml");
        std::fs::write(&planted, b"old").unwrap();
        std::os::unix::fs::chown(&planted, Some(uid), Some(gid)).unwrap();
        crate::write::atomically(&planted, |temporary| Ok(std::fs::write(temporary, b"new")?))
            .unwrap();
        let writer = std::fs::metadata(dir.path()).unwrap();
        let new = std::fs::metadata(&planted).unwrap();
        assert_eq!(
            new.uid(),
            writer.uid(),
            "the writer keeps a file in a sticky directory"
        );
    }

    /// A directory that takes no new file is named, and the temporary file
    /// that was never made is not (tempfile's own message names it).
    #[test]
    fn a_directory_that_takes_no_file_is_named_and_no_temporary_name_shown() {
        let missing = Path::new("/nonexistent-op2-test/dir");
        let error = Temporary::new(missing, ".op2-").expect_err("no such directory");
        let message = error.to_string();
        assert!(
            message.starts_with("no file can be created in `/nonexistent-op2-test/dir`: "),
            "{message}"
        );
        assert!(!message.contains("at path"), "{message}");
        assert!(!message.contains(".tmp"), "{message}");
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }
}
