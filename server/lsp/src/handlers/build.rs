//! Build on save: the same build as `op2 build`, reported with `$/progress`
//! and a log message; nothing is written for a program with errors, and
//! never outside the workspace.

use std::fs;
use std::path::{Component, Path, PathBuf};

use op2_codegen::output::{BuildFailure, build};
use op2_instance::NoProgress;
use tower_lsp_server::Client;
use tower_lsp_server::lsp_types::{MessageType, ProgressToken};

use crate::config::Settings;
use crate::world::Analysed;

/// Where the graph of `source` goes: `<stem>.graph.xml` beside the source,
/// or in `out_dir` (relative to the workspace folder holding the source).
///
/// Decided on canonical paths (symbolic links resolved) of the source, the
/// folders and the target directory: the server writes only inside the
/// workspace folder that holds the source. A document outside every folder,
/// a path spelled with `..`, an `outDir` that is absolute, climbs out with
/// `..` or leads out through a link, and a target that is a link leading
/// out, are all refused with the reason.
///
/// Nothing is created here: the directories of `outDir` that are missing
/// are made by [`Output::create`], once the program is known to build.
pub fn output_path(
    source: &Path,
    settings: &Settings,
    folders: &[WorkspaceFolder],
) -> Result<Output, String> {
    let stem = source
        .file_stem()
        .map_or_else(|| "graph".into(), |s| s.to_string_lossy().into_owned());
    let file_name = format!("{stem}.graph.xml");
    let folder = workspace_folder_of(source, folders)?;
    let directory = if settings.build.out_dir.is_empty() {
        let source = fs::canonicalize(source)
            .map_err(|e| format!("cannot resolve `{}`: {e}", source.display()))?;
        source.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        let out_dir = Path::new(&settings.build.out_dir);
        if !out_dir
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(format!(
                "`op2.build.outDir` (`{}`) could lead outside the workspace folder: \
                 it must be a relative path without `..`; nothing written",
                out_dir.display()
            ));
        }
        folder.join(out_dir)
    };
    // The deepest part of the directory that exists must be inside the
    // folder once links are resolved; what is missing is created below it.
    let mut existing = directory.as_path();
    while fs::symlink_metadata(existing).is_err() {
        existing = existing
            .parent()
            .ok_or_else(|| format!("cannot resolve `{}`", directory.display()))?;
    }
    inside(&folder, existing)?;
    let target = directory.join(&file_name);
    if existing == directory {
        let directory = inside(&folder, &directory)?;
        may_replace(&folder, &directory.join(&file_name))?;
    }
    Ok(Output {
        folder,
        directory,
        file_name,
        target,
    })
}

/// Where build on save writes the graph of `source`, with links resolved as
/// far as the directory exists, without creating anything: the answer of
/// `op2.graphPath`, so that an editor opens the file the build wrote (through
/// a link to the source, or an `outDir`, its own guess would differ), or
/// shows the reason the build would give for writing nothing.
pub fn graph_path(
    source: &Path,
    settings: &Settings,
    folders: &[WorkspaceFolder],
) -> Result<PathBuf, String> {
    let output = output_path(source, settings, folders)?;
    Ok(canonicalize(&output.directory)
        .map_or(output.target, |directory| directory.join(&output.file_name)))
}

/// Where a build on save writes: decided, checked as far as what exists,
/// and not yet created (see [`output_path`]).
#[derive(Debug)]
pub struct Output {
    folder: PathBuf,
    directory: PathBuf,
    file_name: String,
    /// The graph's path as decided (not canonical), for messages.
    pub target: PathBuf,
}

impl Output {
    /// Makes the directories that are missing and returns the graph's
    /// canonical path, checked again inside the folder (links resolved).
    pub fn create(self) -> Result<PathBuf, String> {
        fs::create_dir_all(&self.directory)
            .map_err(|e| format!("cannot create `{}`: {e}", self.directory.display()))?;
        let directory = inside(&self.folder, &self.directory)?;
        let target = directory.join(self.file_name);
        may_replace(&self.folder, &target)?;
        Ok(target)
    }
}

/// Whether the server may write `target`, a file in a directory already
/// found inside `folder` (canonical): when `target` is a symbolic link, it
/// must lead inside `folder` too. (That what is there is a regular file,
/// or nothing, is decided by the write itself: it never replaces anything
/// else.)
pub fn may_replace(folder: &Path, target: &Path) -> Result<(), String> {
    if fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()) {
        inside(folder, target)?;
    }
    Ok(())
}

/// The canonical workspace folder holding `source` (the innermost one), or
/// why there is none.
pub fn workspace_folder_of(source: &Path, folders: &[WorkspaceFolder]) -> Result<PathBuf, String> {
    folder_of(source, folders, "build on save is off for it")
}

/// The canonical workspace folder holding `source`, or why there is none,
/// ending with `refusal` (what is off for such a file).
///
/// The folders' canonical forms are those found when the client named them
/// ([`WorkspaceFolders::change`]); only a folder that could not be resolved
/// then is tried again here, so a lookup resolves the source and, at
/// most, the folders missing then ([`MAX_WORKSPACE_FOLDERS`] at worst), not
/// every folder each time.
pub fn folder_of(
    source: &Path,
    folders: &[WorkspaceFolder],
    refusal: &str,
) -> Result<PathBuf, String> {
    if source.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "`{}` is spelled with `..`; {refusal}",
            source.display()
        ));
    }
    let canonical =
        canonicalize(source).map_err(|e| format!("cannot resolve `{}`: {e}", source.display()))?;
    folders
        .iter()
        .filter_map(WorkspaceFolder::canonical)
        .filter(|folder| canonical.starts_with(folder))
        .max_by_key(|folder| folder.components().count())
        .map(std::borrow::Cow::into_owned)
        .ok_or_else(|| {
            format!(
                "`{}` is outside every workspace folder; {refusal}",
                source.display()
            )
        })
}

/// The most workspace folders the server keeps: those the client names
/// first (in `initialize`, then in each `workspace/didChangeWorkspaceFolders`
/// in order); the others are refused and logged. Each lookup of the folder
/// of a file looks at every folder kept, and each folder added is resolved
/// once.
pub const MAX_WORKSPACE_FOLDERS: usize = 1024;

/// One workspace folder: its path as the client named it, and its
/// canonical form when it could be resolved then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceFolder {
    /// The path of the folder's URI.
    pub path: PathBuf,
    canonical: Option<PathBuf>,
}

impl WorkspaceFolder {
    /// The folder at `path`, resolved now.
    pub fn new(path: PathBuf) -> WorkspaceFolder {
        let canonical = canonicalize(&path).ok();
        WorkspaceFolder { path, canonical }
    }

    /// Its canonical form: the one found when it was added, else (it did
    /// not exist then) resolved now.
    fn canonical(&self) -> Option<std::borrow::Cow<'_, Path>> {
        match &self.canonical {
            Some(canonical) => Some(std::borrow::Cow::Borrowed(canonical)),
            None => canonicalize(&self.path).ok().map(std::borrow::Cow::Owned),
        }
    }
}

/// The workspace folders, each once, at most [`MAX_WORKSPACE_FOLDERS`].
#[derive(Clone, Debug, Default)]
pub struct WorkspaceFolders {
    list: Vec<WorkspaceFolder>,
    /// What `initialize` refused, to log once the client is initialized.
    pub unreported: Option<String>,
}

/// The folders a change could not keep.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Refused {
    /// How many.
    pub count: usize,
    /// The first few, to name in the log.
    pub first: Vec<PathBuf>,
}

impl Refused {
    /// The log message, when any folder was refused.
    pub fn message(&self) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let names: Vec<String> = self
            .first
            .iter()
            .map(|path| format!("`{}`", path.display()))
            .collect();
        let more = if self.count > self.first.len() {
            ", …"
        } else {
            ""
        };
        Some(format!(
            "ignored {} workspace folder{} beyond the {MAX_WORKSPACE_FOLDERS} the server keeps ({}{more}); \
             build on save and op2.import do not write in them",
            self.count,
            if self.count == 1 { "" } else { "s" },
            names.join(", ")
        ))
    }
}

impl WorkspaceFolders {
    /// The folders, in the order they were added.
    pub fn as_slice(&self) -> &[WorkspaceFolder] {
        &self.list
    }

    /// Removes `removed`, then adds each of `added` not there yet, while
    /// there is room; linear in the folders and the change (one set of
    /// each, not a search of the list per folder: 40,000 folders added at
    /// once stalled the server for two minutes, audit D1).
    pub fn change(&mut self, removed: &[PathBuf], added: Vec<PathBuf>) -> Refused {
        if !removed.is_empty() {
            let removed: rustc_hash::FxHashSet<&PathBuf> = removed.iter().collect();
            self.list.retain(|folder| !removed.contains(&folder.path));
        }
        let mut present: rustc_hash::FxHashSet<PathBuf> =
            self.list.iter().map(|folder| folder.path.clone()).collect();
        let mut refused = Refused::default();
        for path in added {
            if present.contains(&path) {
                continue;
            }
            if self.list.len() >= MAX_WORKSPACE_FOLDERS {
                refused.count += 1;
                if refused.first.len() < 3 {
                    refused.first.push(path);
                }
                continue;
            }
            present.insert(path.clone());
            self.list.push(WorkspaceFolder::new(path));
        }
        refused
    }
}

/// `fs::canonicalize`, counted in tests (each is a system call per
/// component of the path).
fn canonicalize(path: &Path) -> std::io::Result<PathBuf> {
    #[cfg(test)]
    tests::CANONICALISATIONS.with(|count| count.set(count.get() + 1));
    fs::canonicalize(path)
}

/// The canonical form of `path` when it is inside `folder` (canonical).
fn inside(folder: &Path, path: &Path) -> Result<PathBuf, String> {
    let canonical =
        canonicalize(path).map_err(|e| format!("cannot resolve `{}`: {e}", path.display()))?;
    if canonical.starts_with(folder) {
        Ok(canonical)
    } else {
        Err(format!(
            "`{}` leads to `{}`, outside the workspace folder `{}`; nothing written",
            path.display(),
            canonical.display(),
            folder.display()
        ))
    }
}

/// The line the hover of `main` shows about build on save: on (and into
/// which folder), or off and why.
pub fn status_line(
    source: Option<&Path>,
    settings: &Settings,
    folders: &[WorkspaceFolder],
) -> String {
    if !settings.build.on_save {
        return "build on save: off (`op2.build.onSave` is false)".into();
    }
    let Some(source) = source else {
        return "build on save: off: the document is not a file".into();
    };
    match workspace_folder_of(source, folders) {
        Ok(folder) => format!(
            "build on save: on, writes `{}.graph.xml` inside `{}`",
            source
                .file_stem()
                .map_or_else(|| "graph".into(), |s| s.to_string_lossy()),
            folder.display()
        ),
        Err(reason) => format!("build on save: off: {reason}"),
    }
}

/// Whether `offset` is on the `main` keyword of the document.
pub fn on_main_keyword(parse: &op2_syntax::Parse, offset: u32) -> bool {
    use op2_syntax::ast::{Item, NodeText};
    parse.root().items().any(|item| match item {
        Item::Main(main) => main
            .node()
            .child(0)
            .is_some_and(|keyword| keyword.text_range().touches(offset)),
        _ => false,
    })
}

/// The instance data file of the settings: inside the workspace folder of
/// `source` (canonical paths), a regular file within the size limit.
fn instance_path(
    source: &Path,
    settings: &Settings,
    folders: &[WorkspaceFolder],
) -> Result<PathBuf, String> {
    let folder = workspace_folder_of(source, folders)?;
    let path = folder.join(&settings.build.instance);
    let path = inside(&folder, &path)?;
    op2_codegen::files::check_instance(&path).map_err(|e| e.describe(&path))?;
    Ok(path)
}

/// What a build on save is asked for, and the server state it reads.
#[derive(Debug)]
pub struct Save<'a> {
    /// The document saved.
    pub document: &'a tower_lsp_server::lsp_types::Uri,
    /// Its file path, when it is a `file:` URI.
    pub source: Option<PathBuf>,
    /// Current settings.
    pub settings: &'a Settings,
    /// The workspace folders.
    pub folders: &'a [WorkspaceFolder],
    /// The client shows `$/progress`.
    pub client_progress: bool,
    /// The documents and reasons of refusals logged already.
    pub refusals: &'a std::sync::Mutex<rustc_hash::FxHashSet<(String, String)>>,
}

/// Builds and reports. Called from a spawned task, so awaiting the client
/// here never blocks a handler. Why a document is not built is logged once
/// per document.
pub async fn build_with_progress(client: &Client, analysed: &Analysed, save: Save<'_>) {
    let Save {
        document,
        source,
        settings,
        folders,
        client_progress,
        refusals,
    } = save;
    let Some(source) = source else { return };
    // A program with errors is not built, and nothing is made for it: not
    // even the directories of `outDir` (the build itself checks again).
    let errors = analysed
        .diagnostics
        .iter()
        .filter(|d| d.severity == op2_syntax::Severity::Error)
        .count();
    let refused = (errors > 0 || analysed.analysis.program.main.is_none())
        .then(|| BuildFailure::ProgramErrors(errors.max(1)));
    let path = match output_path(&source, settings, folders) {
        Ok(output) if refused.is_some() => output.target,
        Ok(output) => match output.create() {
            Ok(path) => path,
            Err(message) => {
                client
                    .log_message(MessageType::ERROR, format!("op2 build: {message}"))
                    .await;
                return;
            }
        },
        Err(message) => {
            let said = (document.as_str().to_owned(), message.clone());
            let new = refusals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(said);
            if new {
                client
                    .log_message(MessageType::WARNING, format!("op2 build: {message}"))
                    .await;
            }
            return;
        }
    };
    let token = ProgressToken::String(format!("op2-build-{}", source.display()));
    // Progress only for clients that show it, and the build never waits
    // long for the client to acknowledge the token.
    let progress_created = client_progress
        && tokio::time::timeout(
            std::time::Duration::from_secs(1),
            client.send_request::<tower_lsp_server::lsp_types::request::WorkDoneProgressCreate>(
                tower_lsp_server::lsp_types::WorkDoneProgressCreateParams {
                    token: token.clone(),
                },
            ),
        )
        .await
        .is_ok_and(|answer| answer.is_ok());
    let progress = progress_created.then(|| {
        client
            .progress(token, "op2: building graph")
            .with_message(path.display().to_string())
    });
    let progress = match progress {
        Some(progress) => Some(progress.begin().await),
        None => None,
    };
    let instance = if settings.build.instance.is_empty() {
        None
    } else {
        match instance_path(&source, settings, folders) {
            Ok(path) => Some(path),
            Err(error) => {
                client
                    .log_message(
                        MessageType::ERROR,
                        format!("op2 build: {error}; nothing written"),
                    )
                    .await;
                if let Some(progress) = progress {
                    progress.finish_with_message("failed").await;
                }
                return;
            }
        }
    };
    let analysis = analysed.analysis.clone();
    let graph_id = crate::world::graph_id(Some(&source));
    let target = path.clone();
    let result = match refused {
        Some(failure) => Ok(Err(failure)),
        None => {
            tokio::task::spawn_blocking(move || {
                build(
                    &analysis,
                    &graph_id,
                    instance.as_deref(),
                    &target,
                    &mut NoProgress,
                )
            })
            .await
        }
    };
    let (kind, message) = match result {
        Ok(Ok((summary, warnings))) => {
            let mut message = format!("op2 build: {summary}");
            for warning in warnings {
                message.push_str(&format!("\n  {warning}"));
            }
            (MessageType::INFO, message)
        }
        Ok(Err(BuildFailure::InstanceErrors(problems))) => {
            let mut message = format!(
                "op2 build: nothing written: `{}` has errors",
                settings.build.instance
            );
            for problem in problems {
                message.push_str(&format!("\n  {problem}"));
            }
            (MessageType::ERROR, message)
        }
        Ok(Err(failure)) => (
            MessageType::ERROR,
            format!("op2 build: nothing written: {failure}"),
        ),
        Err(error) => (MessageType::ERROR, format!("op2 build failed: {error}")),
    };
    if let Some(progress) = progress {
        progress
            .finish_with_message(if kind == MessageType::INFO {
                "done"
            } else {
                "failed"
            })
            .await;
    }
    client.log_message(kind, message).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        pub(super) static CANONICALISATIONS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn counted<T>(f: impl FnOnce() -> T) -> (T, usize) {
        CANONICALISATIONS.with(|count| count.set(0));
        let result = f();
        (result, CANONICALISATIONS.with(std::cell::Cell::get))
    }

    #[test]
    fn a_folder_lookup_resolves_the_source_not_every_folder() {
        let root = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..200)
            .map(|i| {
                let folder = root.path().join(format!("f{i}"));
                fs::create_dir(&folder).unwrap();
                folder
            })
            .collect();
        let source = paths[150].join("main.op2");
        fs::write(&source, "").unwrap();
        let mut folders = WorkspaceFolders::default();
        let (refused, resolved) = counted(|| folders.change(&[], paths.clone()));
        assert_eq!(refused, Refused::default());
        assert_eq!(resolved, 200, "each folder is resolved once, when added");
        for _ in 0..10 {
            let (found, resolved) = counted(|| folder_of(&source, folders.as_slice(), "off"));
            assert_eq!(found, Ok(fs::canonicalize(&paths[150]).unwrap()));
            assert_eq!(resolved, 1, "only the source is resolved per lookup");
        }
    }

    #[test]
    fn folders_are_kept_once_up_to_the_cap_and_the_rest_named() {
        let root = tempfile::tempdir().unwrap();
        let path = |i: usize| root.path().join(format!("f{i}"));
        let mut folders = WorkspaceFolders::default();
        // Twice each, and past the cap: each kept once, the rest refused
        // without being resolved.
        let added: Vec<PathBuf> = (0..3000).chain(0..3000).map(path).collect();
        let (refused, resolved) = counted(|| folders.change(&[], added));
        assert_eq!(folders.as_slice().len(), MAX_WORKSPACE_FOLDERS);
        assert_eq!(resolved, MAX_WORKSPACE_FOLDERS);
        assert_eq!(refused.count, 2 * 3000 - 2 * MAX_WORKSPACE_FOLDERS);
        assert_eq!(refused.first, vec![path(1024), path(1025), path(1026)]);
        let message = refused.message().unwrap();
        assert!(
            message.starts_with("ignored 3952 workspace folders beyond the 1024"),
            "{message}"
        );
        assert!(
            message.contains(&format!("`{}`", path(1024).display())),
            "{message}"
        );
        // Removing makes room again; the order of the others is kept.
        let removed: Vec<PathBuf> = (0..10).map(path).collect();
        let refused = folders.change(&removed, (5000..5020).map(path).collect());
        assert_eq!(refused.count, 10);
        assert_eq!(folders.as_slice().len(), MAX_WORKSPACE_FOLDERS);
        assert_eq!(folders.as_slice()[0].path, path(10));
        assert_eq!(
            folders.as_slice()[MAX_WORKSPACE_FOLDERS - 1].path,
            path(5009)
        );
        assert_eq!(folders.change(&[], vec![path(10)]), Refused::default());
        assert_eq!(Refused::default().message(), None);
    }
}
