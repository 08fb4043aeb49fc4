//! A language server session that builds on save, and the property that it
//! writes nowhere it may not (issue #12's "stray write"): the server writes
//! only regular files inside its workspace folder, decided on canonical
//! paths, never replaces what is not a regular file, removes nothing and
//! leaves no temporary file (docs/reliability.md, "What the server reads and
//! writes").
//!
//! A session's text names its folder as [`ROOT`]; each run lays out a fresh
//! temporary folder ([`Layout::new`]) and puts its path in ROOT's place, so
//! that a saved session replays. The folder holds the workspace `ws`, a
//! folder beside it, `outside`, links from the workspace to it (a folder, a
//! file where a graph would go, a link back to the root), a FIFO where a
//! graph would go, and sources at each of those places. After the session
//! every entry of the folder is compared with what was there before.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::Finding;
use crate::rng::Rng;

/// The stand-in for the session's own folder in its URIs and settings.
pub const ROOT: &str = "/op2-fuzz-root";

/// The most entries a layout may hold after a session (it starts with 17):
/// a server that made more has written far past what a build makes.
const MAX_ENTRIES: usize = 4096;

/// The deepest a layout's walk goes (the layout is 3 deep; an output
/// directory such as `out/graphs` adds 2).
const MAX_DEPTH: usize = 16;

/// Where a session's document may be, relative to ROOT: in the workspace,
/// below it, through its link to the folder outside, outside, and spelled
/// with `..` both ways.
const DOCUMENTS: &[&str] = &[
    "ws/main.op2",
    "ws/sub/main.op2",
    "ws/link/main.op2",
    "ws/sub/up/outside/main.op2",
    "outside/main.op2",
    "ws/../outside/main.op2",
    "ws/%2E%2E/outside/main.op2",
    "ws/sub/../main.op2",
    "ws/victim.op2",
    "ws/fifo.op2",
];

/// A document URI of the layout.
pub fn document(rng: &mut Rng) -> String {
    format!("file://{ROOT}/{}", rng.pick(DOCUMENTS))
}

/// The workspace folder's URI.
pub fn folder() -> String {
    format!("file://{ROOT}/ws")
}

/// Build settings as a client sends them: on save or not, an output
/// directory inside the workspace, through its links, or leading out of it
/// (relative, absolute, with `..`), and sometimes an instance file.
pub fn settings(rng: &mut Rng) -> serde_json::Value {
    let out_dirs = [
        String::new(),
        "out".into(),
        "sub".into(),
        "out/graphs".into(),
        "link".into(),
        "link/deeper".into(),
        "sub/up/outside".into(),
        "../outside".into(),
        "out/../../outside".into(),
        "sub/../..".into(),
        "victim.graph.xml".into(),
        format!("{ROOT}/outside"),
        format!("{ROOT}/ws/out"),
    ];
    let instances = [
        String::new(),
        "data.json".into(),
        "../outside/x.json".into(),
        format!("{ROOT}/outside/x.json"),
    ];
    let mut build = serde_json::json!({
        "onSave": !rng.one_in(8),
        "outDir": rng.pick(&out_dirs),
    });
    if rng.one_in(4) {
        build["instance"] = serde_json::Value::String(rng.pick(&instances).clone());
    }
    serde_json::json!({"op2": {"build": build}})
}

/// What one path of the layout is, as far as the property looks.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    Directory,
    File(Vec<u8>),
    Link(PathBuf),
    Fifo,
    Other,
}

impl Entry {
    fn kind(&self) -> &'static str {
        match self {
            Entry::Directory => "directory",
            Entry::File(_) => "regular file",
            Entry::Link(_) => "symbolic link",
            Entry::Fifo => "FIFO",
            Entry::Other => "special file",
        }
    }
}

/// A session's folder, removed when dropped.
#[derive(Debug)]
pub struct Layout {
    root: tempfile::TempDir,
    before: BTreeMap<PathBuf, Entry>,
}

/// A small program, so that the sources on disk are real ones.
const SOURCE: &str = "set cells;\ndat q: double on cells = 1.0;\n\nmain {\n}\n";

impl Layout {
    /// Lays out a fresh folder and records what is in it.
    pub fn new() -> Result<Layout, Finding> {
        let failed = |what: &str, e: std::io::Error| {
            Finding::property(
                "lsp",
                format!("cannot lay out the session's folder ({what}): {e}"),
            )
        };
        let root = tempfile::Builder::new()
            .prefix("op2-fuzz-")
            .tempdir()
            .map_err(|e| failed("a temporary folder", e))?;
        let r = root.path();
        for dir in ["ws", "ws/sub", "outside"] {
            std::fs::create_dir(r.join(dir)).map_err(|e| failed(dir, e))?;
        }
        for file in [
            "ws/main.op2",
            "ws/sub/main.op2",
            "ws/victim.op2",
            "ws/fifo.op2",
            "outside/main.op2",
        ] {
            std::fs::write(r.join(file), SOURCE).map_err(|e| failed(file, e))?;
        }
        std::fs::write(r.join("outside/victim.xml"), "precious")
            .map_err(|e| failed("victim", e))?;
        std::fs::write(r.join("outside/x.json"), "{}").map_err(|e| failed("x.json", e))?;
        std::fs::write(r.join("ws/data.json"), "{}").map_err(|e| failed("data.json", e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            symlink(r.join("outside"), r.join("ws/link")).map_err(|e| failed("link", e))?;
            symlink(r.join("outside/victim.xml"), r.join("ws/victim.graph.xml"))
                .map_err(|e| failed("victim link", e))?;
            symlink(r, r.join("ws/sub/up")).map_err(|e| failed("up", e))?;
            let fifo = r.join("ws/fifo.graph.xml");
            let status = std::process::Command::new("mkfifo").arg(&fifo).status();
            if !status.is_ok_and(|s| s.success()) {
                return Err(Finding::property("lsp", "cannot make a FIFO with mkfifo"));
            }
        }
        let before = walk(r)?;
        Ok(Layout { root, before })
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// `text` with the folder's path in place of [`ROOT`].
    pub fn place(&self, text: &[u8]) -> Vec<u8> {
        let root = self.root.path().to_string_lossy();
        replace(text, ROOT.as_bytes(), root.as_bytes())
    }

    /// Compares the folder with what it held before the session: each
    /// entry that is new or changed must be a directory or a regular file
    /// whose canonical path is inside the workspace's, an entry that was
    /// not a regular file must be as it was, nothing may be gone, and no
    /// build's temporary file may be left.
    pub fn check(&self) -> Result<(), Finding> {
        let stray = |message: String| Err(Finding::property("lsp", message));
        let r = self.root.path();
        let workspace = std::fs::canonicalize(r.join("ws"))
            .map_err(|e| Finding::property("lsp", format!("the workspace is gone: {e}")))?;
        let after = walk(r)?;
        let name = |path: &Path| path.strip_prefix(r).unwrap_or(path).display().to_string();
        for (path, entry) in &after {
            let file_name = path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            if file_name.starts_with(".op2-build-") || file_name.ends_with(".tmp") {
                return stray(format!(
                    "a build's temporary file was left behind: `{}`",
                    name(path)
                ));
            }
            match self.before.get(path) {
                Some(old) if old == entry => continue,
                Some(old) if !matches!(old, Entry::File(_)) => {
                    return stray(format!(
                        "the server replaced the {} `{}` (now a {})",
                        old.kind(),
                        name(path),
                        entry.kind()
                    ));
                }
                _ => {}
            }
            if !matches!(entry, Entry::File(_) | Entry::Directory) {
                return stray(format!(
                    "the server made a {} at `{}`",
                    entry.kind(),
                    name(path)
                ));
            }
            let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            if !canonical.starts_with(&workspace) {
                return stray(format!(
                    "the server wrote `{}` outside the workspace folder `ws`",
                    name(path)
                ));
            }
        }
        if let Some(gone) = self.before.keys().find(|p| !after.contains_key(*p)) {
            return stray(format!("the server removed `{}`", name(gone)));
        }
        Ok(())
    }
}

/// Every entry below `root`, links not followed, bounded in count and
/// depth.
fn walk(root: &Path) -> Result<BTreeMap<PathBuf, Entry>, Finding> {
    let mut entries = BTreeMap::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let listing = std::fs::read_dir(&dir).map_err(|e| {
            Finding::property("lsp", format!("cannot list `{}`: {e}", dir.display()))
        })?;
        for item in listing {
            let item = item.map_err(|e| Finding::property("lsp", format!("cannot list: {e}")))?;
            let path = item.path();
            let meta = std::fs::symlink_metadata(&path)
                .map_err(|e| Finding::property("lsp", format!("cannot stat: {e}")))?;
            let kind = meta.file_type();
            let entry = if kind.is_symlink() {
                Entry::Link(std::fs::read_link(&path).unwrap_or_default())
            } else if kind.is_dir() {
                if depth + 1 < MAX_DEPTH {
                    stack.push((path.clone(), depth + 1));
                }
                Entry::Directory
            } else if kind.is_file() {
                // The layout's files are small; what a build writes is read
                // up to the limit a graph may reach here, which is small too.
                Entry::File(std::fs::read(&path).unwrap_or_default())
            } else if is_fifo(&kind) {
                Entry::Fifo
            } else {
                Entry::Other
            };
            entries.insert(path, entry);
            if entries.len() > MAX_ENTRIES {
                return Err(Finding::property(
                    "lsp",
                    format!(
                        "the server made more than {MAX_ENTRIES} entries in the session's folder"
                    ),
                ));
            }
        }
    }
    Ok(entries)
}

#[cfg(unix)]
fn is_fifo(kind: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    kind.is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::FileType) -> bool {
    false
}

/// `text` with every `from` replaced by `to`.
fn replace(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        if text[at..].starts_with(from) {
            out.extend_from_slice(to);
            at += from.len();
        } else {
            out.push(text[at]);
            at += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check finds each kind of stray write, and nothing in a folder
    /// the session left alone or wrote only inside the workspace.
    #[cfg(unix)]
    #[test]
    fn the_check_finds_every_kind_of_stray_write() {
        let clean = Layout::new().expect("laid out");
        assert!(clean.check().is_ok());
        std::fs::create_dir_all(clean.path().join("ws/out/graphs")).unwrap();
        std::fs::write(clean.path().join("ws/out/graphs/main.graph.xml"), "<x/>").unwrap();
        std::fs::write(clean.path().join("ws/main.graph.xml"), "<x/>").unwrap();
        assert!(clean.check().is_ok(), "{:?}", clean.check());

        type Act = fn(&Path);
        let cases: [(&str, Act); 6] = [
            ("outside the workspace", |r| {
                std::fs::write(r.join("outside/main.graph.xml"), "<x/>").unwrap();
            }),
            ("outside the workspace", |r| {
                std::fs::write(r.join("ws/link/evil.xml"), "<x/>").unwrap();
            }),
            ("replaced the symbolic link", |r| {
                std::fs::remove_file(r.join("ws/victim.graph.xml")).unwrap();
                std::fs::write(r.join("ws/victim.graph.xml"), "<x/>").unwrap();
            }),
            ("replaced the FIFO", |r| {
                std::fs::remove_file(r.join("ws/fifo.graph.xml")).unwrap();
                std::fs::write(r.join("ws/fifo.graph.xml"), "<x/>").unwrap();
            }),
            ("temporary file", |r| {
                std::fs::write(r.join("ws/.op2-build-1.tmp"), "").unwrap();
            }),
            ("removed", |r| {
                std::fs::remove_file(r.join("ws/main.op2")).unwrap();
            }),
        ];
        for (expected, act) in cases {
            let layout = Layout::new().expect("laid out");
            act(layout.path());
            let finding = layout.check().expect_err(expected);
            assert!(
                finding.message.contains(expected),
                "{expected}: {}",
                finding.message
            );
        }
        // The victim's content changed through its link: outside.
        let layout = Layout::new().expect("laid out");
        std::fs::write(layout.path().join("ws/victim.graph.xml"), "gone").unwrap();
        let finding = layout.check().expect_err("written through a link");
        assert!(
            finding.message.contains("outside/victim.xml"),
            "{}",
            finding.message
        );
    }

    /// A session that saves a clean program in the workspace, or asks
    /// `op2.build` for it, builds it there (so the property looks at real
    /// writes), one that saves it
    /// outside or through a link writes nothing, and the check passes both.
    #[cfg(unix)]
    #[test]
    fn a_building_session_writes_its_graph_in_the_workspace_only() {
        use crate::lsp::{Script, frame, run_in};
        use serde_json::json;
        let program = "set cells;\ndat q: double on cells;\n\nkernel k(double *x) { x[0] = 1.0; }\n\nmain {\n    par_loop k over cells (q WRITE);\n}\n";
        let session = |document: &str, out_dir: &str| {
            let uri = format!("file://{ROOT}/{document}");
            let chunks = vec![
                frame(
                    &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "processId": null, "rootUri": folder(), "capabilities": {},
                    "workspaceFolders": [{"uri": folder(), "name": "ws"}],
                    "initializationOptions": {"op2": {"build": {"onSave": true, "outDir": out_dir}}}}}),
                ),
                frame(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})),
                frame(
                    &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                    "textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": program}}}),
                ),
                frame(
                    &json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/documentSymbol",
                    "params": {"textDocument": {"uri": uri}}}),
                ),
                frame(
                    &json!({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
                    "textDocument": {"uri": uri}}}),
                ),
            ];
            Script { chunks }
        };
        let layout = Layout::new().expect("laid out");
        run_in(&session("ws/main.op2", "out/graphs"), &layout).expect("no stray write");
        let graph = layout.path().join("ws/out/graphs/main.graph.xml");
        assert!(graph.is_file(), "the build on save wrote no graph");
        // `op2.build` writes as a save does.
        let mut build = session("ws/sub/main.op2", "");
        let uri = format!("file://{ROOT}/ws/sub/main.op2");
        *build.chunks.last_mut().expect("a save") = frame(&json!({"jsonrpc": "2.0", "id": 3,
            "method": "workspace/executeCommand",
            "params": {"command": "op2.build", "arguments": [uri]}}));
        let layout = Layout::new().expect("laid out");
        run_in(&build, &layout).expect("no stray write");
        assert!(
            layout.path().join("ws/sub/main.graph.xml").is_file(),
            "op2.build wrote no graph"
        );
        for (document, out_dir) in [
            ("ws/link/main.op2", ""),
            ("ws/main.op2", "../outside"),
            ("ws/main.op2", "link"),
            ("ws/victim.op2", ""),
        ] {
            let layout = Layout::new().expect("laid out");
            run_in(&session(document, out_dir), &layout)
                .unwrap_or_else(|f| panic!("{document} with outDir `{out_dir}`: {}", f.message));
            assert!(!layout.path().join("outside/main.graph.xml").exists());
        }
    }

    #[test]
    fn the_root_is_replaced_everywhere() {
        assert_eq!(
            replace(
                b"a/op2-fuzz-root/b /op2-fuzz-root",
                ROOT.as_bytes(),
                b"/tmp/x"
            ),
            b"a/tmp/x/b /tmp/x"
        );
    }
}
