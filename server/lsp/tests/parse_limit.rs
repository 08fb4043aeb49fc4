//! A document on which tree-sitter's error recovery is superlinear (F12: a
//! kernel whose last statement was pasted six thousand times) is published
//! with E002 where parsing stopped, within the time its size allows (the
//! unbounded parse takes about a minute, the session's timeout); deleting
//! the broken lines parses the document afresh and clears it, and pasting
//! them back stops again. The syntax crate's `tests/limit.rs` tests the
//! give-up itself. While such a parse runs, other documents are answered:
//! the parse holds no lock their requests need.

use crate::support;

use op2_syntax::synth;
use serde_json::json;
use support::Session;
use support::text::Doc;

const URI: &str = "file:///nonexistent/op2-tests/broken.op2";
const OTHER: &str = "file:///nonexistent/op2-tests/airfoil.op2";

fn codes(diagnostics: &[serde_json::Value]) -> Vec<String> {
    diagnostics
        .iter()
        .filter_map(|d| d["code"].as_str().map(str::to_owned))
        .collect()
}

/// The diagnostics say where the parser gave up (E002).
fn assert_stopped(diagnostics: &[serde_json::Value]) {
    assert!(
        diagnostics.iter().any(|d| d["code"] == "E002"),
        "{:?}",
        codes(diagnostics)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_errors_stops_with_e002_and_an_edit_that_removes_it_parses_afresh() {
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    let text = synth::broken_statement_lines(6_000);
    session.did_open(URI, &text, 1);
    let diagnostics = session.diagnostics(URI, 1).await;
    let stops: Vec<_> = diagnostics.iter().filter(|d| d["code"] == "E002").collect();
    assert_eq!(stops.len(), 1, "{:?}", codes(&diagnostics));
    let line = stops[0]["range"]["start"]["line"].as_u64().expect("a line");
    assert!(line > 2, "the kernel's first lines are parsed: line {line}");

    // Deleting the broken lines: the whole document is parsed and checked.
    let mut doc = Doc::new(&text, session.encoding);
    let first = text.find("s[2] =}").expect("a broken line");
    let change = doc.change(first..text.len(), "}\n");
    session.did_change(URI, 2, vec![change]);
    let diagnostics = session.diagnostics(URI, 2).await;
    let codes_now = codes(&diagnostics);
    assert!(
        !codes_now.iter().any(|c| c == "E001" || c == "E002"),
        "{codes_now:?}"
    );

    // Pasting them back stops again.
    let end = doc.text.len();
    let change = doc.change(end - 2..end, &"s[2] =}\n".repeat(6_000));
    session.did_change(URI, 3, vec![change]);
    assert_stopped(&session.diagnostics(URI, 3).await);
    session.shutdown().await;
}

/// While one document is in a parse that gives up (the 6,000 broken lines
/// pasted in), a hover and the semantic tokens of another open document are
/// answered, and so is `op2.status`: the parse runs in the broken
/// document's worker, holding no lock that other requests need. Proved by
/// order, not by timing: all three answers arrive before the broken
/// document's diagnostics of that version, and the status, asked with them,
/// shows its parse still behind its text. A parse that gives up cannot end
/// before it has used 1 s of CPU time (its allowance is 1 s plus 1 s per
/// 256 KiB reached), and the answers take milliseconds; when a parse held the
/// server's lock (before), every answer waited for it and the status showed
/// it done. The session's 60 s timeout is only a safety net.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_documents_are_answered_while_a_parse_gives_up() {
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    let other = support::example("airfoil.op2");
    session.did_open(OTHER, &other, 1);
    let start = "set cells;\n";
    session.did_open(URI, start, 1);
    session.diagnostics(OTHER, 1).await;
    session.diagnostics(URI, 1).await;

    let mut doc = Doc::new(start, session.encoding);
    let change = doc.change(0..start.len(), &synth::broken_statement_lines(6_000));
    session.did_change(URI, 2, vec![change]);
    let position = support::position_of(&other, "p_q", 0, 1, session.encoding);
    let hover = session.send_request(
        "textDocument/hover",
        json!({"textDocument": {"uri": OTHER}, "position": position}),
    );
    let tokens = session.send_request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": OTHER}}),
    );
    let status = session.send_request(
        "workspace/executeCommand",
        json!({"command": "op2.status", "arguments": []}),
    );
    let hover = session.response(hover, "hover").await;
    let tokens = session.response(tokens, "semantic tokens").await;
    let status = session.response(status, "op2.status").await;
    // Messages are filed in the order they arrive, up to the last answer.
    let early: Vec<_> = session
        .published(URI)
        .into_iter()
        .filter(|p| p["version"] == 2)
        .collect();
    assert!(
        early.is_empty(),
        "the broken document was published before the other's answers: {early:?}"
    );
    assert!(
        hover.as_ref().is_ok_and(|h| h["contents"]["value"]
            .as_str()
            .is_some_and(|v| v.contains("p_q"))),
        "a hover on the other document: {hover:?}"
    );
    assert!(
        tokens
            .as_ref()
            .is_ok_and(|t| t["data"].as_array().is_some_and(|data| !data.is_empty())),
        "the other document's semantic tokens: {tokens:?}"
    );
    let status = status.expect("op2.status answers");
    let broken = status["documents"]
        .as_array()
        .and_then(|documents| documents.iter().find(|d| d["uri"] == URI))
        .expect("the broken document's status");
    assert_eq!(broken["version"], 2, "{broken}");
    assert_eq!(
        broken["parsedVersion"], 1,
        "the parse of version 2 was still running: {broken}"
    );

    // Then the broken document is published, stopped with E002.
    assert_stopped(&session.diagnostics(URI, 2).await);
    session.shutdown().await;
}
