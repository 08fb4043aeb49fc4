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
pub fn output_path(
    source: &Path,
    settings: &Settings,
    folders: &[PathBuf],
) -> Result<PathBuf, String> {
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
    fs::create_dir_all(&directory)
        .map_err(|e| format!("cannot create `{}`: {e}", directory.display()))?;
    let directory = inside(&folder, &directory)?;
    let target = directory.join(file_name);
    may_replace(&folder, &target)?;
    Ok(target)
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
pub fn workspace_folder_of(source: &Path, folders: &[PathBuf]) -> Result<PathBuf, String> {
    folder_of(source, folders, "build on save is off for it")
}

/// The canonical workspace folder holding `source`, or why there is none,
/// ending with `refusal` (what is off for such a file).
pub fn folder_of(source: &Path, folders: &[PathBuf], refusal: &str) -> Result<PathBuf, String> {
    if source.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "`{}` is spelled with `..`; {refusal}",
            source.display()
        ));
    }
    let canonical = fs::canonicalize(source)
        .map_err(|e| format!("cannot resolve `{}`: {e}", source.display()))?;
    folders
        .iter()
        .filter_map(|folder| fs::canonicalize(folder).ok())
        .filter(|folder| canonical.starts_with(folder))
        .max_by_key(|folder| folder.components().count())
        .ok_or_else(|| {
            format!(
                "`{}` is outside every workspace folder; {refusal}",
                source.display()
            )
        })
}

/// The canonical form of `path` when it is inside `folder` (canonical).
fn inside(folder: &Path, path: &Path) -> Result<PathBuf, String> {
    let canonical =
        fs::canonicalize(path).map_err(|e| format!("cannot resolve `{}`: {e}", path.display()))?;
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
pub fn status_line(source: Option<&Path>, settings: &Settings, folders: &[PathBuf]) -> String {
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
    folders: &[PathBuf],
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
    pub folders: &'a [PathBuf],
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
    let path = match output_path(&source, settings, folders) {
        Ok(path) => path,
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
    let result = tokio::task::spawn_blocking(move || {
        build(
            &analysis,
            &graph_id,
            instance.as_deref(),
            &target,
            &mut NoProgress,
        )
    })
    .await;
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
