//! Build on save: the same build as `op2 build`, reported with `$/progress`
//! and a log message; nothing is written for a program with errors, and
//! never outside the workspace.

use std::path::{Component, Path, PathBuf};

use op2_codegen::output::{BuildFailure, build};
use op2_instance::NoProgress;
use tower_lsp_server::Client;
use tower_lsp_server::lsp_types::{MessageType, ProgressToken};

use crate::config::Settings;
use crate::world::Analysed;

/// Where the graph of `source` goes: `<stem>.graph.xml` beside the source,
/// or in `out_dir` (relative to the workspace folder holding the source).
/// `None` when that would be outside every workspace folder.
pub fn output_path(
    source: &Path,
    settings: &Settings,
    folders: &[PathBuf],
) -> Result<PathBuf, String> {
    let stem = source
        .file_stem()
        .map_or_else(|| "graph".into(), |s| s.to_string_lossy().into_owned());
    let file_name = format!("{stem}.graph.xml");
    let folder = folders
        .iter()
        .filter(|f| source.starts_with(f))
        .max_by_key(|f| f.components().count());
    let target = if settings.build.out_dir.is_empty() {
        source.with_file_name(file_name)
    } else {
        let Some(folder) = folder else {
            return Err(
                "`op2.build.outDir` needs the source to be inside a workspace folder".into(),
            );
        };
        normalise(&folder.join(&settings.build.out_dir).join(file_name))
    };
    match folder {
        Some(folder) if !target.starts_with(folder) => Err(format!(
            "`{}` is outside the workspace folder `{}`; nothing written",
            target.display(),
            folder.display()
        )),
        _ => Ok(target),
    }
}

fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Builds and reports. Called from a spawned task, so awaiting the client
/// here never blocks a handler.
pub async fn build_with_progress(
    client: &Client,
    analysed: &Analysed,
    source: Option<PathBuf>,
    settings: &Settings,
    folders: &[PathBuf],
    client_progress: bool,
) {
    let Some(source) = source else { return };
    let path = match output_path(&source, settings, folders) {
        Ok(path) => path,
        Err(message) => {
            client
                .log_message(MessageType::WARNING, format!("op2 build: {message}"))
                .await;
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
        let base = folders
            .iter()
            .find(|f| source.starts_with(f))
            .cloned()
            .unwrap_or_else(|| source.parent().map(Path::to_path_buf).unwrap_or_default());
        // Only a regular file within the size limit (never a FIFO or a
        // device, which would block or never end).
        match op2_codegen::files::read_instance(&base.join(&settings.build.instance)) {
            Ok(bytes) => Some(bytes),
            Err(error) => {
                client
                    .log_message(
                        MessageType::ERROR,
                        format!(
                            "op2 build: cannot read `{}`: {error}; nothing written",
                            settings.build.instance
                        ),
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
