//! "Import OP2 application…": `op2 import` of an OP2 C/C++ application from
//! the editor, through the same `op2_import::import` as the CLI, with
//! `$/progress` and cancellation, writing only inside the workspace folder
//! that holds the application.
//!
//! This is the one thing the server does that runs code of the workspace
//! (the application's set-up is compiled and run to capture its mesh), so it
//! happens only when the user asks for it, never on open or on save.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use op2_codegen::files::{SOURCE_LIMIT, read_regular};
use tower_lsp_server::Client;
use tower_lsp_server::lsp_types::{MessageType, ProgressToken};

use crate::handlers::build::{WorkspaceFolder, folder_of, may_replace};

/// Where an import from the editor reads and writes, decided on canonical
/// paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The application's main file.
    pub main: PathBuf,
    /// The existing directory the program and instance are written into.
    pub out: PathBuf,
    /// The workspace folder (canonical) that holds both: the application's
    /// other translation units are taken from the compilation database only
    /// inside it.
    pub folder: PathBuf,
}

/// Decides the target of an import of `main` into `out` (else the main
/// file's directory): `main` must be a regular C/C++ file inside a workspace
/// folder that calls `op_init`, `out` an existing directory inside the
/// same folder once links are resolved, and each file the import may write
/// there (`<stem>.op2`, `.json`, `.h5`) nothing, a file, or a link leading
/// inside the folder.
pub fn target(
    main: &Path,
    out: Option<&Path>,
    folders: &[WorkspaceFolder],
) -> Result<Target, String> {
    const REFUSAL: &str = "op2 import runs only on files inside a workspace folder";
    let folder = folder_of(main, folders, REFUSAL)?;
    let bytes = read_regular(main, SOURCE_LIMIT).map_err(|error| error.describe(main))?;
    if !calls_op_init(&String::from_utf8_lossy(&bytes)) {
        return Err(format!(
            "`{}` does not call `op_init`: open the main file of an OP2 application (the one whose `main` calls `op_init` and the par_loops)",
            main.display()
        ));
    }
    let main = std::fs::canonicalize(main)
        .map_err(|e| format!("cannot resolve `{}`: {e}", main.display()))?;
    let out = match out {
        Some(out) => {
            if !out.is_dir() {
                return Err(format!(
                    "the output directory `{}` does not exist",
                    out.display()
                ));
            }
            let canonical = std::fs::canonicalize(out)
                .map_err(|e| format!("cannot resolve `{}`: {e}", out.display()))?;
            if !canonical.starts_with(&folder) {
                return Err(format!(
                    "the output directory `{}` leads to `{}`, outside the workspace folder `{}`; nothing written",
                    out.display(),
                    canonical.display(),
                    folder.display()
                ));
            }
            canonical
        }
        None => main
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| folder.clone()),
    };
    for path in op2_import::output_paths(&main, &out) {
        may_replace(&folder, &path)?;
    }
    Ok(Target { main, out, folder })
}

/// Whether C/C++ `text` calls `op_init` (a whole word followed by `(`).
pub fn calls_op_init(text: &str) -> bool {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let bytes = text.as_bytes();
    text.match_indices("op_init").any(|(at, name)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = &text[at + name.len()..];
        !before.is_some_and(word) && after.trim_start().starts_with('(')
    })
}

/// Sets its flag when dropped: a request the client cancels (`$/cancelRequest`
/// drops the future that answers it) stops the compiler or the application.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The cancellation flags of the imports running, by progress token (so that
/// `window/workDoneProgress/cancel` can reach them).
pub type Running = Arc<std::sync::Mutex<rustc_hash::FxHashMap<String, Arc<AtomicBool>>>>;

/// Cancels the import whose progress token is `token`, if it runs.
pub fn cancel(running: &Running, token: &str) {
    let running = running
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(flag) = running.get(token) {
        flag.store(true, Ordering::Relaxed);
    }
}

/// Removes a finished import's token from [`Running`].
struct Unregister<'a>(&'a Running, String);

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.1);
    }
}

/// Runs the import with progress (when the client shows it) and logs the
/// report. The answer names what was written (`program`, `instance`, as
/// URIs), the application's other translation units imported with the main
/// file (`units`, URIs, chosen from its compilation database), whether the
/// result is `faithful`, and the `report` text that `op2 import` prints; a
/// failure is the error message, nothing written.
pub async fn import_with_progress(
    client: &Client,
    target: Target,
    client_progress: bool,
    running: &Running,
) -> Result<serde_json::Value, String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let token = format!("op2-import-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let flag = Arc::new(AtomicBool::new(false));
    let _cancel = CancelOnDrop(Arc::clone(&flag));
    running
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(token.clone(), Arc::clone(&flag));
    let _unregister = Unregister(running, token.clone());

    let created = client_progress
        && tokio::time::timeout(
            std::time::Duration::from_secs(1),
            client.send_request::<tower_lsp_server::lsp_types::request::WorkDoneProgressCreate>(
                tower_lsp_server::lsp_types::WorkDoneProgressCreateParams {
                    token: ProgressToken::String(token.clone()),
                },
            ),
        )
        .await
        .is_ok_and(|answer| answer.is_ok());
    let progress = if created {
        Some(
            client
                .progress(ProgressToken::String(token), "op2: importing")
                .with_message(target.main.display().to_string())
                .with_cancel_button()
                .begin()
                .await,
        )
    } else {
        None
    };

    let (steps, mut said) = tokio::sync::mpsc::unbounded_channel::<String>();
    let working_dir = target.main.parent().map(Path::to_path_buf);
    let options = op2_import::Options {
        main: target.main.clone(),
        out: target.out.clone(),
        working_dir: working_dir.clone(),
        cancel: Some(Arc::clone(&flag)),
        ..op2_import::Options::default()
    };
    let folder = target.folder.clone();
    let mut work = tokio::task::spawn_blocking(move || {
        // The application's other translation units: those its compilation
        // database lists in the workspace folder and the main file links
        // (none without a database, as notes say).
        let mut options = options;
        let mut notes = Vec::new();
        if let Some(found) = op2_import::database_units(
            &options.main,
            working_dir.as_deref().unwrap_or(Path::new("")),
            &folder,
            &mut notes,
        )? {
            options.sources = found.units;
            options.compile_commands = Some(found.database);
        }
        for note in &notes {
            let _ = steps.send(format!("note: {note}"));
        }
        let prepared = op2_import::prepare(&options, &mut |step: &str| {
            let _ = steps.send(step.to_owned());
        })?;
        // Decided again right before writing: the set-up that ran is code
        // of the workspace, and may have put a link there meanwhile.
        for path in prepared.paths() {
            may_replace(&folder, path).map_err(op2_import::ImportError::Write)?;
        }
        let mut imported = prepared.write(options.cancel.as_deref())?;
        imported.notes.splice(0..0, notes);
        Ok::<_, op2_import::ImportError>(imported)
    });
    let result = loop {
        tokio::select! {
            result = &mut work => break result,
            Some(step) = said.recv() => {
                if let Some(progress) = &progress {
                    progress.report_with_message(step.clone(), None).await;
                }
                client.log_message(MessageType::INFO, format!("op2 import: {step}")).await;
            }
        }
    };
    let outcome = match result {
        Ok(Ok(imported)) => Ok(imported),
        Ok(Err(error)) => Err(error.to_string()),
        Err(error) => Err(format!("the import failed: {error}")),
    };
    if let Some(progress) = progress {
        progress
            .finish_with_message(if outcome.is_ok() { "done" } else { "failed" })
            .await;
    }
    match outcome {
        Ok(imported) => {
            let summary = imported.summary();
            let faithful = imported.report.faithful();
            client
                .log_message(
                    if faithful {
                        MessageType::INFO
                    } else {
                        MessageType::WARNING
                    },
                    format!("op2 import of {}:\n{summary}", target.main.display()),
                )
                .await;
            let uri =
                |path: &Path| crate::handlers::path_to_uri(path).map(|uri| uri.as_str().to_owned());
            Ok(serde_json::json!({
                "program": uri(&imported.program),
                "instance": uri(&imported.instance),
                "units": imported.sources.iter().map(|p| uri(p)).collect::<Vec<_>>(),
                "faithful": faithful,
                "report": summary,
            }))
        }
        Err(message) => {
            client
                .log_message(
                    MessageType::ERROR,
                    format!("op2 import of {}: {message}", target.main.display()),
                )
                .await;
            Err(message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::calls_op_init;

    #[test]
    fn op_init_is_found_as_a_call_only() {
        assert!(calls_op_init(
            "int main(int c, char **v) { op_init(c, v, 2); }"
        ));
        assert!(calls_op_init("op_init (argc, argv, 1);"));
        assert!(calls_op_init("x;\nop_init\n(argc, argv, 1);"));
        assert!(!calls_op_init("my_op_init(argc, argv, 2);"));
        assert!(!calls_op_init("op_initialise(argc, argv);"));
        assert!(!calls_op_init("// op_init is called elsewhere"));
        assert!(!calls_op_init(""));
    }
}
