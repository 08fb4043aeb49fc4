//! Build on save over the real transport: the graph written is byte for byte
//! what `op2 build` writes; a program with errors, or an output directory
//! outside the workspace, writes nothing and says why; settings arrive by
//! initialization options and by `didChangeConfiguration`.

use crate::support;

use std::path::{Path, PathBuf};

use op2_analysis::{Analyser, NoImports, Options};
use op2_instance::NoProgress;
use serde_json::{Value, json};
use support::{Session, file_uri};

const BROKEN: &str = "set cells;
dat p_q: double on cells;
global total: double;

kernel copy(const double *a, double *b) { b[0] = a[0]; }

main {
    par_loop copy over cells (p_q READ, p_q WRITE);
    print(\"%g\", total);
}
";

/// A temporary directory with a workspace folder `ws` inside it.
struct Workspace {
    root: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let root = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir(root.path().join("ws")).expect("create the workspace folder");
        Workspace { root }
    }

    fn folder(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    /// Writes `name` in the workspace folder and returns its path and URI.
    fn file(&self, name: &str, text: &str) -> (PathBuf, String) {
        let path = self.folder().join(name);
        std::fs::write(&path, text).expect("write a source file");
        let uri = file_uri(&path);
        (path, uri)
    }
}

/// The names in a directory, sorted.
fn listing(directory: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(directory)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// What `op2 build` writes for `source`: the same library call in a
/// directory of its own, the file named as the source is.
fn expected_graph(source: &Path) -> Vec<u8> {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let copy = directory
        .path()
        .join(source.file_name().expect("a file name"));
    let text = std::fs::read_to_string(source).expect("read the source");
    let parse = op2_syntax::Parse::new(text.as_str());
    let analysis =
        Analyser::new().analyse(&copy, &parse, &NoImports, &Options { require_main: true });
    let target = copy.with_extension("graph.xml");
    op2_codegen::output::build(
        &analysis,
        &op2_codegen::graph_id(&copy),
        None,
        &target,
        &mut NoProgress,
    )
    .unwrap_or_else(|e| panic!("the reference build failed: {e}"));
    std::fs::read(&target).expect("read the reference graph")
}

/// Saves `uri` and waits for the build's log message, which is returned.
async fn save(session: &mut Session, uri: &str) -> String {
    let from = session.mark();
    session.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    build_log(session, from).await
}

async fn build_log(session: &mut Session, from: usize) -> String {
    let log = session
        .wait_for_after(from, "the build's log message", |m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("op2 build"))
        })
        .await;
    log["params"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn open(session: &mut Session, uri: &str, text: &str) -> Vec<Value> {
    session.did_open(uri, text, 1);
    session.diagnostics(uri, 1).await
}

#[tokio::test]
async fn saving_a_clean_program_writes_the_graph_op2_build_writes() {
    let workspace = Workspace::new();
    let source = support::example("airfoil.op2");
    let (path, uri) = workspace.file("airfoil.op2", &source);
    let mut session = Session::in_process();
    session
        .initialize(&[], Some(&workspace.folder()), None)
        .await;
    let diagnostics = open(&mut session, &uri, &source).await;
    assert!(
        diagnostics.iter().all(|d| d["severity"] != 1),
        "airfoil has no errors: {diagnostics:?}"
    );

    let log = save(&mut session, &uri).await;
    let graph = path.with_file_name("airfoil.graph.xml");
    assert!(log.contains("wrote"), "{log}");
    assert!(
        log.contains(graph.to_str().unwrap_or_default()),
        "the log names the file: {log}"
    );
    let written = std::fs::read(&graph)
        .unwrap_or_else(|e| panic!("{} not written ({e}); log: {log}", graph.display()));
    assert!(
        written == expected_graph(&path),
        "the graph written on save differs from `op2 build`'s"
    );
    assert_eq!(
        listing(&workspace.folder()),
        ["airfoil.graph.xml", "airfoil.op2"],
        "no temporary files are left"
    );

    // The build reported progress: a token created by request, then begin
    // and end on it.
    let created = session
        .wait_for("workDoneProgress/create", |m| {
            m["method"] == "window/workDoneProgress/create"
        })
        .await;
    let token = created["params"]["token"].clone();
    for kind in ["begin", "end"] {
        session
            .wait_for(&format!("$/progress {kind}"), |m| {
                m["method"] == "$/progress"
                    && m["params"]["token"] == token
                    && m["params"]["value"]["kind"] == kind
            })
            .await;
    }

    // `op2.build` builds on demand, the same way.
    std::fs::remove_file(&graph).expect("remove the graph");
    let from = session.mark();
    let answer = session
        .request(
            "workspace/executeCommand",
            json!({"command": "op2.build", "arguments": [uri]}),
        )
        .await;
    assert!(answer.is_ok(), "{answer:?}");
    let log = build_log(&mut session, from).await;
    assert!(log.contains("wrote"), "{log}");
    assert!(
        std::fs::read(&graph).is_ok_and(|bytes| bytes == written),
        "op2.build writes the same graph"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn the_graph_is_byte_identical_to_the_op2_binarys() {
    let Some(binary) = support::binary() else {
        return;
    };
    let workspace = Workspace::new();
    let source = support::example("jacobi.op2");
    let (path, uri) = workspace.file("jacobi.op2", &source);
    let mut session = Session::in_process();
    session
        .initialize(&["utf-8"], Some(&workspace.folder()), None)
        .await;
    open(&mut session, &uri, &source).await;
    let log = save(&mut session, &uri).await;
    let written = std::fs::read(path.with_file_name("jacobi.graph.xml"))
        .unwrap_or_else(|e| panic!("not written ({e}): {log}"));
    session.shutdown().await;

    let elsewhere = tempfile::tempdir().expect("a temporary directory");
    let copy = elsewhere.path().join("jacobi.op2");
    std::fs::write(&copy, &source).expect("copy the source");
    let status = std::process::Command::new(binary)
        .arg("build")
        .arg(&copy)
        .output()
        .expect("run op2 build");
    assert!(
        status.status.success(),
        "op2 build failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let built =
        std::fs::read(copy.with_file_name("jacobi.graph.xml")).expect("op2 build wrote the graph");
    assert!(
        written == built,
        "the graph written on save differs from `op2 build`'s"
    );
}

/// An editor that quits right after a save: `shutdown` answers once the
/// build on save has written its graph (within
/// `op2_lsp::SHUTDOWN_WAITS_FOR_BUILDS`), so the graph is there and no
/// temporary file is left.
#[tokio::test]
async fn shutdown_right_after_a_save_waits_for_its_build() {
    let workspace = Workspace::new();
    let source = support::example("airfoil.op2");
    let (path, uri) = workspace.file("airfoil.op2", &source);
    let mut session = Session::in_process();
    session
        .initialize(&[], Some(&workspace.folder()), None)
        .await;
    // Not waiting for the analysis: the save comes with the open.
    session.did_open(&uri, &source, 1);
    session.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    session.shutdown().await;
    let graph = path.with_file_name("airfoil.graph.xml");
    assert!(
        std::fs::read(&graph).is_ok_and(|bytes| bytes == expected_graph(&path)),
        "the build on save finished before `shutdown` answered"
    );
    assert_eq!(
        listing(&workspace.folder()),
        ["airfoil.graph.xml", "airfoil.op2"],
        "no temporary files are left"
    );
}

/// `exit` while a build on save is writing its graph: `op2 lsp` ends at
/// once, and the build's temporary file is removed, not left in the
/// workspace. The exit is sent once the temporary file is there (a large
/// instance makes the graph take a while to write).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_during_a_build_leaves_no_temporary_file() {
    let Some(mut session) = Session::binary(&[]) else {
        return;
    };
    let workspace = Workspace::new();
    std::fs::write(
        workspace.folder().join("mesh.json"),
        op2_instance::synth::airfoil_like(200),
    )
    .expect("write the instance");
    let source = support::example("airfoil.op2");
    let (_, uri) = workspace.file("airfoil.op2", &source);
    session
        .initialize(
            &[],
            Some(&workspace.folder()),
            Some(json!({"op2": {"build": {"instance": "mesh.json"}}})),
        )
        .await;
    session.did_open(&uri, &source, 1);
    session.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    let writing = |folder: &Path| {
        listing(folder)
            .iter()
            .any(|name| name.starts_with(".op2-build-"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !writing(&workspace.folder()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the build never started writing: {:?}",
            listing(&workspace.folder())
        );
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let status = session.exit_at_once().await;
    assert_eq!(status.code(), Some(1), "`exit` without `shutdown`");
    assert!(
        !writing(&workspace.folder()),
        "a temporary file was left: {:?}",
        listing(&workspace.folder())
    );
}

#[tokio::test]
async fn saving_a_program_with_errors_writes_nothing_and_says_why() {
    let workspace = Workspace::new();
    let (path, uri) = workspace.file("broken.op2", BROKEN);
    let mut session = Session::in_process();
    session
        .initialize(&["utf-8", "utf-16"], Some(&workspace.folder()), None)
        .await;
    let diagnostics = open(&mut session, &uri, BROKEN).await;
    assert!(
        diagnostics.iter().any(|d| d["code"] == "E401"),
        "{diagnostics:?}"
    );
    let log = save(&mut session, &uri).await;
    assert!(log.contains("nothing written"), "{log}");
    assert!(log.contains("error"), "the log says why: {log}");
    assert!(!path.with_file_name("broken.graph.xml").exists());
    assert_eq!(
        listing(&workspace.folder()),
        ["broken.op2"],
        "no file and no temporary leftovers"
    );
    // Nor the directories of an `outDir` that does not exist yet: before,
    // they were made when the target was decided, before the build refused
    // the program.
    session.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"op2": {"build": {"outDir": "gen/deep"}}}}),
    );
    let log = save(&mut session, &uri).await;
    assert!(log.contains("nothing written"), "{log}");
    assert_eq!(
        listing(&workspace.folder()),
        ["broken.op2"],
        "no directory made for a program with errors"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn an_output_directory_outside_the_workspace_writes_nothing() {
    let workspace = Workspace::new();
    let source = support::example("dot_product.op2");
    let (_, uri) = workspace.file("dot_product.op2", &source);
    let mut session = Session::in_process();
    let options = json!({"op2": {"build": {"outDir": "../x"}}});
    session
        .initialize(&[], Some(&workspace.folder()), Some(options))
        .await;
    open(&mut session, &uri, &source).await;
    let log = save(&mut session, &uri).await;
    assert!(log.contains("outside the workspace"), "{log}");
    assert_eq!(
        listing(workspace.root.path()),
        ["ws"],
        "nothing beside the workspace"
    );
    assert_eq!(
        listing(&workspace.folder()),
        ["dot_product.op2"],
        "nothing in it either"
    );

    // The same through didChangeConfiguration, with a path that climbs out
    // after going in.
    session.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"op2": {"build": {"outDir": "sub/../../y"}}}}),
    );
    let log = save(&mut session, &uri).await;
    assert!(log.contains("outside the workspace"), "{log}");
    assert_eq!(listing(workspace.root.path()), ["ws"]);
    session.shutdown().await;
}

#[tokio::test]
async fn settings_arrive_by_initialization_options_and_did_change_configuration() {
    let workspace = Workspace::new();
    let source = support::example("scatter.op2");
    let (path, uri) = workspace.file("scatter.op2", &source);
    let graph = path.with_file_name("scatter.graph.xml");
    let mut session = Session::in_process();
    session
        .initialize(
            &[],
            Some(&workspace.folder()),
            Some(json!({"op2": {"build": {"onSave": false}}})),
        )
        .await;
    open(&mut session, &uri, &source).await;

    // onSave off: a save writes nothing. A request answered after the save
    // shows the save was handled.
    session.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    let answer = session
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri}}),
        )
        .await;
    assert!(answer.is_ok(), "{answer:?}");
    session.settle(std::time::Duration::from_millis(200)).await;
    assert!(!graph.exists(), "onSave is off");
    assert!(
        session
            .log_messages()
            .iter()
            .all(|m| !m.starts_with("op2 build")),
        "{:?}",
        session.log_messages()
    );

    // onSave on, with an output directory inside the workspace (the section
    // itself, without the `op2` wrapper, is accepted too).
    std::fs::create_dir(workspace.folder().join("out")).expect("create out");
    session.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"build": {"onSave": true, "outDir": "out"}}}),
    );
    let log = save(&mut session, &uri).await;
    let in_out = workspace.folder().join("out").join("scatter.graph.xml");
    assert!(in_out.exists(), "{log}");
    assert!(!graph.exists());
    assert!(std::fs::read(&in_out).is_ok_and(|bytes| bytes == expected_graph(&path)));

    // Unknown settings are named in a warning; the known ones apply (before,
    // one unknown key dropped them all).
    let from = session.mark();
    session.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"op2": {"build": {"onSav": true}}}}),
    );
    let warning = session
        .wait_for_after(from, "a warning about the unknown setting", |m| {
            m["method"] == "window/showMessage"
        })
        .await;
    assert!(
        warning["params"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("onSav")),
        "{warning}"
    );
    assert_eq!(warning["params"]["type"], 2, "a warning");
    session.shutdown().await;
}

#[tokio::test]
async fn an_output_directory_that_does_not_exist_yet_is_created() {
    let workspace = Workspace::new();
    let source = support::example("scatter.op2");
    let (_, uri) = workspace.file("scatter.op2", &source);
    let mut session = Session::in_process();
    session
        .initialize(
            &[],
            Some(&workspace.folder()),
            Some(json!({"op2": {"build": {"outDir": "build/graphs"}}})),
        )
        .await;
    open(&mut session, &uri, &source).await;
    let log = save(&mut session, &uri).await;
    assert!(
        workspace
            .folder()
            .join("build/graphs/scatter.graph.xml")
            .exists(),
        "{log}"
    );
    session.shutdown().await;
}

/// The log messages about builds so far.
fn build_logs(session: &Session) -> Vec<String> {
    session
        .log_messages()
        .into_iter()
        .filter(|m| m.starts_with("op2 build"))
        .collect()
}

/// The hover on the `main` keyword of `text`.
async fn hover_on_main(session: &mut Session, uri: &str, text: &str) -> String {
    let position = support::position_of(text, "main", 0, 0, session.encoding);
    let hover = session
        .call(
            "textDocument/hover",
            json!({"textDocument": {"uri": uri}, "position": position}),
        )
        .await;
    hover["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_document_outside_every_folder_is_not_built_and_says_why_once() {
    let workspace = Workspace::new();
    let source = support::example("scatter.op2");
    let outside = workspace.root.path().join("outside.op2");
    std::fs::write(&outside, &source).unwrap();
    let uri = file_uri(&outside);
    let mut session = Session::in_process();
    session
        .initialize(&[], Some(&workspace.folder()), None)
        .await;
    open(&mut session, &uri, &source).await;
    let log = save(&mut session, &uri).await;
    assert!(log.contains("outside every workspace folder"), "{log}");
    // Saved again: no second message.
    session.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    );
    let hover = hover_on_main(&mut session, &uri, &source).await;
    assert!(
        hover.contains("build on save: off:") && hover.contains("outside every workspace folder"),
        "{hover}"
    );
    session.settle(std::time::Duration::from_millis(200)).await;
    assert_eq!(build_logs(&session).len(), 1, "{:?}", build_logs(&session));
    assert_eq!(listing(workspace.root.path()), ["outside.op2", "ws"]);
    // Inside the folder, the hover says where the graph goes.
    let (_, inside) = workspace.file("scatter.op2", &source);
    open(&mut session, &inside, &source).await;
    let hover = hover_on_main(&mut session, &inside, &source).await;
    assert!(
        hover.contains("build on save: on, writes `scatter.graph.xml`"),
        "{hover}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn uris_spelled_with_dot_dot_are_not_built() {
    let workspace = Workspace::new();
    let source = support::example("scatter.op2");
    std::fs::write(workspace.root.path().join("outside.op2"), &source).unwrap();
    let mut session = Session::in_process();
    session
        .initialize(&[], Some(&workspace.folder()), None)
        .await;
    let folder = file_uri(&workspace.folder());
    for spelling in [
        "/../outside.op2",
        "/%2E%2E/outside.op2",
        "/%2e%2e/outside.op2",
    ] {
        let uri = format!("{folder}{spelling}");
        open(&mut session, &uri, &source).await;
        let log = save(&mut session, &uri).await;
        assert!(log.contains("spelled with `..`"), "{uri}: {log}");
    }
    assert_eq!(listing(workspace.root.path()), ["outside.op2", "ws"]);
    session.shutdown().await;
}

#[cfg(unix)]
#[tokio::test]
async fn links_leading_out_of_the_workspace_are_not_followed_for_writes() {
    use std::os::unix::fs::{FileTypeExt, symlink};
    let workspace = Workspace::new();
    let source = support::example("scatter.op2");
    let elsewhere = workspace.root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut session = Session::in_process();
    session
        .initialize(&[], Some(&workspace.folder()), None)
        .await;

    // A folder inside the workspace that is a link to one outside.
    symlink(&elsewhere, workspace.folder().join("linked")).unwrap();
    std::fs::write(elsewhere.join("prog.op2"), &source).unwrap();
    let uri = file_uri(&workspace.folder().join("linked/prog.op2"));
    open(&mut session, &uri, &source).await;
    let log = save(&mut session, &uri).await;
    assert!(log.contains("outside every workspace folder"), "{log}");

    // The target graph a link to a file outside.
    let victim = elsewhere.join("victim.xml");
    std::fs::write(&victim, "precious").unwrap();
    let (_, uri) = workspace.file("scatter.op2", &source);
    symlink(&victim, workspace.folder().join("scatter.graph.xml")).unwrap();
    open(&mut session, &uri, &source).await;
    let log = save(&mut session, &uri).await;
    assert!(log.contains("outside the workspace folder"), "{log}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

    // An output directory that is a link leading out.
    std::fs::remove_file(workspace.folder().join("scatter.graph.xml")).unwrap();
    symlink(&elsewhere, workspace.folder().join("out")).unwrap();
    session.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"op2": {"build": {"outDir": "out/graphs"}}}}),
    );
    let log = save(&mut session, &uri).await;
    assert!(log.contains("outside the workspace folder"), "{log}");
    assert_eq!(listing(&elsewhere), ["prog.op2", "victim.xml"]);

    // A FIFO where the graph goes is not replaced.
    session.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"op2": {"build": {"outDir": ""}}}}),
    );
    let fifo = workspace.folder().join("scatter.graph.xml");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let log = save(&mut session, &uri).await;
    assert!(log.contains("not a regular file (it is a FIFO)"), "{log}");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    session.shutdown().await;
}

#[tokio::test]
async fn workspace_folders_added_and_removed_decide_where_build_on_save_writes() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let source = support::example("scatter.op2");
    let (a, b) = (root.path().join("a"), root.path().join("b"));
    let mut uris = Vec::new();
    for folder in [&a, &b] {
        std::fs::create_dir(folder).unwrap();
        std::fs::write(folder.join("scatter.op2"), &source).unwrap();
        uris.push(file_uri(&folder.join("scatter.op2")));
    }
    let mut session = Session::in_process();
    let answer = session.initialize(&[], Some(&a), None).await;
    assert_eq!(
        answer["capabilities"]["workspace"]["workspaceFolders"],
        json!({"supported": true, "changeNotifications": true}),
        "{answer}"
    );
    for uri in &uris {
        open(&mut session, uri, &source).await;
    }
    let log = save(&mut session, &uris[1]).await;
    assert!(log.contains("outside every workspace folder"), "{log}");
    assert_eq!(listing(&b), ["scatter.op2"]);

    // `b` added, `a` removed.
    session.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {
            "added": [{"uri": file_uri(&b), "name": "b"}],
            "removed": [{"uri": file_uri(&a), "name": "a"}],
        }}),
    );
    let log = save(&mut session, &uris[1]).await;
    assert_eq!(listing(&b), ["scatter.graph.xml", "scatter.op2"], "{log}");
    let log = save(&mut session, &uris[0]).await;
    assert!(log.contains("outside every workspace folder"), "{log}");
    assert_eq!(listing(&a), ["scatter.op2"]);
    let hover = hover_on_main(&mut session, &uris[0], &source).await;
    assert!(hover.contains("build on save: off:"), "{hover}");
    session.shutdown().await;
}

/// At most 1,024 workspace folders are kept, from `initialize` and from
/// changes; the others are named in the log, and a folder removed makes
/// room (the audit's D1: 40,000 folders added at once were compared
/// pairwise under the lock every request needs, and every hover on `main`
/// and every save resolved every folder).
#[tokio::test]
async fn workspace_folders_past_the_cap_are_refused_and_logged() {
    let root = tempfile::tempdir().expect("a temporary directory");
    let source = support::example("scatter.op2");
    let folder = |i: usize| root.path().join(format!("f{i}"));
    let entry = |i: usize| json!({"uri": file_uri(&folder(i)), "name": format!("f{i}")});
    // The folder holding the program is the last one: past the cap.
    std::fs::create_dir(folder(1030)).unwrap();
    std::fs::write(folder(1030).join("scatter.op2"), &source).unwrap();
    let uri = file_uri(&folder(1030).join("scatter.op2"));

    let mut session = Session::in_process();
    let mut params = json!({"processId": null, "rootUri": null, "capabilities": {}});
    params["workspaceFolders"] = (0..=1030).map(entry).collect();
    session.initialize_with(params).await;
    let refused = session
        .wait_for("the log of the folders refused", |m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("ignored 7 workspace folders beyond the 1024"))
        })
        .await;
    let message = refused["params"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("`{}`", folder(1024).display())),
        "{message}"
    );
    open(&mut session, &uri, &source).await;
    let log = save(&mut session, &uri).await;
    assert!(log.contains("outside every workspace folder"), "{log}");

    // 2,000 more: all refused; one removed makes room for the program's.
    let from = session.mark();
    session.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {"added": (2000..4000).map(entry).collect::<Value>(), "removed": []}}),
    );
    session
        .wait_for_after(from, "the log of the 2,000 folders refused", |m| {
            m["params"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("ignored 2000 workspace folders"))
        })
        .await;
    session.notify(
        "workspace/didChangeWorkspaceFolders",
        json!({"event": {"added": [entry(1030)], "removed": [entry(0)]}}),
    );
    let log = save(&mut session, &uri).await;
    assert_eq!(
        listing(&folder(1030)),
        ["scatter.graph.xml", "scatter.op2"],
        "{log}"
    );
    session.shutdown().await;
}

/// `op2.graphPath` of `uri`: the graph's path, or the error's message.
async fn graph_path(session: &mut Session, uri: &str) -> Result<PathBuf, String> {
    let answer = session
        .request(
            "workspace/executeCommand",
            json!({"command": "op2.graphPath", "arguments": [uri]}),
        )
        .await;
    match answer {
        Ok(value) => {
            Ok(support::uri_path(value["uri"].as_str().expect("a URI")).expect("a file URI"))
        }
        Err(error) => Err(error["message"].as_str().unwrap_or_default().to_owned()),
    }
}

/// Editors ask the server where the graph is, and open the file the build
/// wrote: through a link to the source (the build writes beside the file the
/// link leads to), in an `outDir`, and with the build's own reason when it
/// would write nothing.
#[cfg(unix)]
#[tokio::test]
async fn the_graph_path_is_where_the_build_writes() {
    let workspace = Workspace::new();
    let source = support::example("scatter.op2");
    std::fs::create_dir(workspace.folder().join("real")).expect("a directory");
    let (real, _) = workspace.file("real/scatter.op2", &source);
    let linked = workspace.folder().join("scatter.op2");
    std::os::unix::fs::symlink(&real, &linked).expect("a link");
    let uri = file_uri(&linked);
    let mut session = Session::in_process();
    session
        .initialize(&[], Some(&workspace.folder()), None)
        .await;
    open(&mut session, &uri, &source).await;
    let log = save(&mut session, &uri).await;
    let written = std::fs::canonicalize(workspace.folder())
        .expect("the folder")
        .join("real/scatter.graph.xml");
    assert!(written.exists(), "{log}");
    assert_eq!(graph_path(&mut session, &uri).await, Ok(written));

    // In an `outDir`, before it exists and after the build made it.
    session.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"op2": {"build": {"outDir": "gen/graphs"}}}}),
    );
    let expected = std::fs::canonicalize(workspace.folder())
        .expect("the folder")
        .join("gen/graphs/scatter.graph.xml");
    assert_eq!(graph_path(&mut session, &uri).await, Ok(expected.clone()));
    let log = save(&mut session, &uri).await;
    assert!(expected.exists(), "{log}");
    assert_eq!(graph_path(&mut session, &uri).await, Ok(expected));

    // An `outDir` a build refuses: the same reason.
    session.notify(
        "workspace/didChangeConfiguration",
        json!({"settings": {"op2": {"build": {"outDir": "../out"}}}}),
    );
    let refused = graph_path(&mut session, &uri).await.expect_err("refused");
    assert!(
        refused.contains("could lead outside the workspace folder"),
        "{refused}"
    );
    session.shutdown().await;
}
