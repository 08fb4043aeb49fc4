//! A document on which tree-sitter's error recovery is superlinear (F12: a
//! kernel whose last statement was pasted six thousand times) is published
//! with E002 where parsing stopped, within the time its size allows (the
//! unbounded parse takes about a minute, the session's timeout); deleting
//! the broken lines parses the document afresh and clears it, and pasting
//! them back stops again. The syntax crate's `tests/limit.rs` tests the
//! give-up itself.

use crate::support;

use op2_syntax::synth;
use support::Session;
use support::text::Doc;

const URI: &str = "file:///nonexistent/op2-tests/broken.op2";

fn codes(diagnostics: &[serde_json::Value]) -> Vec<String> {
    diagnostics
        .iter()
        .filter_map(|d| d["code"].as_str().map(str::to_owned))
        .collect()
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
    let diagnostics = session.diagnostics(URI, 3).await;
    assert!(
        diagnostics.iter().any(|d| d["code"] == "E002"),
        "{:?}",
        codes(&diagnostics)
    );
    session.shutdown().await;
}
