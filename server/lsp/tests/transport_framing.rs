//! How the transport frames the client's bytes, seen from the client: a
//! frame with `\n\n` ending its headers followed in the same write by a
//! frame with `\r\n\r\n`, and frames inside a body longer than its JSON
//! value, are each answered. (The reader's work and the bodies that pause
//! are tested on the reader itself, `transport::tests`, with the clock
//! paused.)

use crate::support;

use serde_json::{Value, json};
use support::Session;

const URI: &str = "file:///nonexistent/op2-tests/framing.op2";
const PROGRAM: &str = "set cells;\ndat p: double on cells;\n";

/// A `documentSymbol` request with `id`, framed with `end` after its
/// header.
fn symbols_request(id: i64, end: &str) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "textDocument/documentSymbol",
        "params": {"textDocument": {"uri": URI}},
    })
    .to_string();
    format!("Content-Length: {}{end}{body}", body.len()).into_bytes()
}

fn symbols(answer: &Result<Value, Value>) -> Option<usize> {
    answer.as_ref().ok()?.as_array().map(Vec::len)
}

async fn lf_headers_then_crlf_headers_in_one_write_are_both_answered(mut session: Session) {
    session.initialize(&[], None, None).await;
    session.did_open(URI, PROGRAM, 1);
    session.diagnostics(URI, 1).await;
    // Both frames in one write, so that the reader has both at once: the
    // second's `\r\n\r\n` was taken as the end of the first's headers, and
    // the first was answered only with -32700 and `id: null`.
    let mut bytes = symbols_request(101, "\n\n");
    bytes.extend(symbols_request(102, "\r\n\r\n"));
    session.send_raw(&bytes);
    let first = session.response(101, "the frame with `\\n\\n`").await;
    let second = session.response(102, "the frame with `\\r\\n\\r\\n`").await;
    assert_eq!(symbols(&first), Some(2), "{first:?}");
    assert_eq!(symbols(&second), Some(2), "{second:?}");
    session.shutdown().await;
}

#[tokio::test]
async fn in_process_lf_headers_then_crlf_headers_in_one_write_are_both_answered() {
    lf_headers_then_crlf_headers_in_one_write_are_both_answered(Session::in_process()).await;
}

#[tokio::test]
async fn binary_lf_headers_then_crlf_headers_in_one_write_are_both_answered() {
    let Some(session) = Session::binary(&[]) else {
        return;
    };
    lf_headers_then_crlf_headers_in_one_write_are_both_answered(session).await;
}

#[tokio::test]
async fn frames_inside_a_body_longer_than_its_value_are_answered_in_order() {
    // A body `{}` that holds an edit and then a request on it: the request
    // sees the edit.
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    session.did_open(URI, PROGRAM, 1);
    session.diagnostics(URI, 1).await;
    let edit = json!({
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"text": format!("{PROGRAM}dat q: double on cells;\n")}],
        },
    })
    .to_string();
    let mut body = format!("{{}}Content-Length: {}\r\n\r\n{edit}", edit.len()).into_bytes();
    body.extend(symbols_request(103, "\r\n\r\n"));
    let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    bytes.extend(body);
    session.send_raw(&bytes);
    let answer = session.response(103, "the request inside the body").await;
    assert_eq!(symbols(&answer), Some(3), "{answer:?}");
    session.shutdown().await;
}
