//! `op2 check --watch` and `op2 build --watch` through the built binary:
//! a change of a watched file starts another run, the watched files follow
//! the imports as they change, and Ctrl-C (SIGINT) ends the process.
//!
//! Nothing here is timed: each step polls the output until what it waits
//! for appears, with a deadline far beyond what a loaded machine needs.

#![cfg(unix)]

use crate::support;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::Scratch;

const DEADLINE: Duration = Duration::from_secs(120);

/// A running `op2 … --watch`, its standard output and error gathered into
/// one text; killed if the test ends early.
struct Watching {
    child: Child,
    output: Arc<Mutex<String>>,
}

impl Watching {
    fn start(dir: &Path, args: &[&str]) -> Watching {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin!("op2"))
            .current_dir(dir)
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("op2 starts");
        let output = Arc::new(Mutex::new(String::new()));
        let stdout: Box<dyn Read + Send> = Box::new(child.stdout.take().unwrap());
        let stderr: Box<dyn Read + Send> = Box::new(child.stderr.take().unwrap());
        for mut stream in [stdout, stderr] {
            let output = Arc::clone(&output);
            std::thread::spawn(move || {
                let mut buffer = [0u8; 4096];
                while let Ok(n @ 1..) = stream.read(&mut buffer) {
                    output
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buffer[..n]));
                }
            });
        }
        Watching { child, output }
    }

    fn text(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Waits until the output after the first `marker` contains every one
    /// of `needles`; returns that part of the output.
    fn wait_for(&self, marker: &str, needles: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let text = self.text();
            if let Some(at) = text.find(marker) {
                let after = &text[at..];
                if needles.iter().all(|needle| after.contains(needle)) {
                    return after.to_owned();
                }
            }
            assert!(
                start.elapsed() < DEADLINE,
                "no {marker:?} followed by {needles:?} after {DEADLINE:?}; the output:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGINT (Ctrl-C) and waits for the process to end.
    fn interrupt(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "still running after SIGINT; the output:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Ended by SIGINT, as Ctrl-C ends a program (or exit code 130).
fn ended_by_interrupt(status: ExitStatus) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(2) || status.code() == Some(130)
}

/// Writes `text` the way many editors save: a new file renamed over the old.
fn save_by_rename(path: &Path, text: &str) {
    let temporary = path.with_extension("op2.swp");
    std::fs::write(&temporary, text).unwrap();
    std::fs::rename(&temporary, path).unwrap();
}

#[test]
fn check_watch_runs_again_on_change_and_follows_the_imports() {
    let scratch = Scratch::new();
    scratch.file("main.op2", "set nodes;\n");
    scratch.file("lib.op2", "set edges;\n");
    let mut watching = Watching::start(&scratch.path(""), &["check", "--watch", "main.op2"]);
    watching.wait_for(
        "op2 check",
        &["checked 1 file: no problems", "watching 1 file for changes"],
    );

    // main.op2 now imports lib.op2 and a file that does not exist yet.
    scratch.file(
        "main.op2",
        "import \"lib.op2\";\nimport \"later.op2\";\nset nodes;\n",
    );
    watching.wait_for(
        "run 2: `main.op2` changed",
        &["later.op2", "could not check", "watching 3 files"],
    );

    // Creating the missing import starts a run.
    scratch.file("later.op2", "set cells;\n");
    watching.wait_for(
        "run 3: `later.op2` changed",
        &["checked 3 files: no problems", "watching 3 files"],
    );

    // So does an imported file saved by renaming a new one over it.
    save_by_rename(&scratch.path("lib.op2"), "set edges\n");
    watching.wait_for(
        "run 4: `lib.op2` changed",
        &["error", "could not check", "watching 3 files"],
    );

    // Without the imports, only main.op2 is watched.
    scratch.file("main.op2", "set nodes;\n");
    watching.wait_for(
        "run 5: `main.op2` changed",
        &["checked 1 file: no problems", "watching 1 file for changes"],
    );

    let status = watching.interrupt();
    assert!(ended_by_interrupt(status), "{status:?}");
}

/// Directories that come and go, and links: an import whose directory
/// does not exist yet starts a run when it is made, a directory removed
/// and made again (a branch checked out) is watched again, and an edit
/// where a linked file leads starts a run (review of 2026-11-29: none of
/// the three started one, and the heading went on saying it watched).
#[test]
fn check_watch_follows_directories_made_removed_and_linked() {
    let scratch = Scratch::new();
    std::fs::create_dir(scratch.path("real")).unwrap();
    scratch.file("real/shared.op2", "set edges;\n");
    std::os::unix::fs::symlink("real/shared.op2", scratch.path("shared.op2")).unwrap();
    scratch.file(
        "main.op2",
        "import \"lib/common.op2\";\nimport \"shared.op2\";\nset nodes;\n",
    );
    let mut watching = Watching::start(&scratch.path(""), &["check", "--watch", "main.op2"]);
    watching.wait_for("op2 check", &["lib/common.op2", "watching 3 files"]);

    // The missing directory, then the file in it.
    std::fs::create_dir(scratch.path("lib")).unwrap();
    watching.wait_for("run 2: `lib/common.op2` changed", &["watching 3 files"]);
    scratch.file("lib/common.op2", "set cells;\n");
    watching.wait_for(
        "run 3: `lib/common.op2` changed",
        &["checked 3 files: no problems", "watching 3 files"],
    );

    // The directory removed, then made again with the file.
    std::fs::remove_dir_all(scratch.path("lib")).unwrap();
    watching.wait_for("run 4:", &["could not check", "watching 3 files"]);
    std::fs::create_dir(scratch.path("lib")).unwrap();
    scratch.file("lib/common.op2", "set cells;\n");
    watching.wait_for("checked 3 files: no problems", &["watching 3 files"]);
    let before = watching.text().matches("] op2 check, run").count();
    scratch.file("lib/common.op2", "set cells\n");
    watching.wait_for(
        &format!("run {}: `lib/common.op2` changed", before + 2),
        &["could not check", "watching 3 files"],
    );

    // An edit where the link leads.
    let before = watching.text().matches("] op2 check, run").count();
    scratch.file("real/shared.op2", "set edges;\nset faces;\n");
    watching.wait_for(
        &format!("run {}: `shared.op2` changed", before + 2),
        &["watching 3 files"],
    );

    let status = watching.interrupt();
    assert!(ended_by_interrupt(status), "{status:?}");
}

#[test]
fn build_watch_rebuilds_when_the_instance_data_changes() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
    let scratch = Scratch::new();
    let program = std::fs::read_to_string(examples.join("scatter.op2")).unwrap();
    let data = std::fs::read_to_string(examples.join("scatter.instance.json")).unwrap();
    scratch.file("scatter.op2", &program);
    scratch.file("mesh.json", &data);
    let mut watching = Watching::start(
        &scratch.path(""),
        &[
            "build",
            "--watch",
            "scatter.op2",
            "--instance",
            "mesh.json",
            "-o",
            "out.xml",
        ],
    );
    watching.wait_for("op2 build", &["wrote out.xml", "watching 2 files"]);
    std::fs::remove_file(scratch.path("out.xml")).unwrap();

    scratch.file("mesh.json", &data);
    watching.wait_for(
        "run 2: `mesh.json` changed",
        &["wrote out.xml", "watching 2 files"],
    );
    assert!(scratch.path("out.xml").is_file());

    let status = watching.interrupt();
    assert!(ended_by_interrupt(status), "{status:?}");
    let leftovers: Vec<String> = std::fs::read_dir(scratch.path(""))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// The inotify watches process `pid` holds (Linux shows each in the
/// `fdinfo` of its inotify descriptor).
#[cfg(target_os = "linux")]
fn inotify_watches(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.unwrap().path()).ok())
        .map(|info| {
            info.lines()
                .filter(|l| l.starts_with("inotify wd:"))
                .count()
        })
        .sum()
}

#[test]
#[cfg(target_os = "linux")]
fn watch_takes_at_most_its_limit_of_directories_and_says_so() {
    // Imports in 200 directories, missing, so that creating one starts a
    // run: each directory was a watch, of the user's limited number (8,192
    // on older kernels); 16,953 absolute imports of the directories under
    // /usr, /etc and /var took 16,954.
    let scratch = Scratch::new();
    let imports: String = (0..200)
        .map(|i| {
            std::fs::create_dir(scratch.path(&format!("d{i}"))).unwrap();
            format!("import \"d{i}/x.op2\";\n")
        })
        .collect();
    scratch.file("main.op2", format!("{imports}set nodes;\n"));
    let mut watching = Watching::start(&scratch.path(""), &["check", "--watch", "main.op2"]);
    watching.wait_for(
        "op2 check",
        &[
            "warning: 73 directories of imports are not watched: `--watch` watches at most 128 (those of the files given first), so changes there start no run",
            "watching 128 files for changes",
        ],
    );
    assert_eq!(inotify_watches(watching.child.id()), 128);
    // The first imports' directories are watched.
    scratch.file("d0/x.op2", "set cells;\n");
    watching.wait_for("run 2: `d0/x.op2` changed", &["watching 128 files"]);
    assert_eq!(inotify_watches(watching.child.id()), 128);
    let status = watching.interrupt();
    assert!(ended_by_interrupt(status), "{status:?}");
}
