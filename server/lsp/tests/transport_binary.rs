//! A session with the real `op2 lsp` binary over its stdio: initialize,
//! diagnostics after non-BMP text, a burst of edits, shutdown and a clean
//! exit. Skipped, loudly, when the binary is not built (`cargo build -p
//! op2-cli`); the in-process tests cover the rest with the same server.

use crate::support;

use serde_json::json;
use support::text::{Doc, Typist};
use support::{Rng, Session, expected_diagnostics};

const URI: &str = "file:///nonexistent/op2-tests/jacobi.op2";

/// Warns when the binary is older than the server's sources: it then tests
/// an older server.
fn warn_if_stale() {
    let Some(binary) = support::binary() else {
        return;
    };
    let built = std::fs::metadata(&binary).and_then(|m| m.modified()).ok();
    let sources = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let newest = walk(&sources).into_iter().max();
    if let (Some(built), Some(newest)) = (built, newest)
        && newest > built
    {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "WARNING: {} is older than server/lsp/src; rebuild it with `cargo build -p op2-cli`",
                binary.display()
            );
        }
    }
}

fn walk(directory: &std::path::Path) -> Vec<std::time::SystemTime> {
    let mut times = Vec::new();
    for entry in std::fs::read_dir(directory).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            times.extend(walk(&path));
        } else if let Ok(time) = entry.metadata().and_then(|m| m.modified()) {
            times.push(time);
        }
    }
    times
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_the_binarys_stdio() {
    let Some(mut session) = Session::binary(&[]) else {
        return;
    };
    warn_if_stale();
    let result = session.initialize(&["utf-8", "utf-16"], None, None).await;
    assert_eq!(result["capabilities"]["positionEncoding"], "utf-8");
    assert_eq!(result["serverInfo"]["name"], "op2");
    session
        .wait_for("the ready message", |m| m["method"] == "window/logMessage")
        .await;

    let mut doc = Doc::new(&support::example("jacobi.op2"), session.encoding);
    let end = doc.text.len();
    doc.change(end..end, "// 😀𝄞\nset 𝄞;\n");
    session.did_open(URI, &doc.text, doc.version);
    let diagnostics = session.diagnostics(URI, doc.version).await;
    assert!(
        diagnostics.iter().any(|d| d["code"] == "E001"),
        "{diagnostics:?}"
    );
    assert_eq!(
        diagnostics,
        expected_diagnostics(&doc.text, URI, doc.encoding, None)
    );

    let mut rng = Rng::new(7);
    let mut typist = Typist::new(doc.text.len() / 2);
    for _ in 0..200 {
        let change = typist.edit(&mut doc, &mut rng);
        doc.version += 1;
        session.did_change(URI, doc.version, vec![change]);
    }
    let symbols = session
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert!(symbols.is_ok(), "{symbols:?}");
    let diagnostics = session.diagnostics(URI, doc.version).await;
    assert_eq!(
        diagnostics,
        expected_diagnostics(&doc.text, URI, doc.encoding, None)
    );
    session.shutdown().await;
}
