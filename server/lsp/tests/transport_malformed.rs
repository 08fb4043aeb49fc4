//! Malformed input over the real transport (in-process duplex and the
//! binary's stdio): every malformed message gets the JSON-RPC error the
//! specification names, or for a notification a log message, and the
//! session goes on with its documents; `exit` exits 1 unless `shutdown`
//! came first.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::Session;

const URI: &str = "file:///nonexistent/op2-tests/malformed.op2";
const PROGRAM: &str = "set cells;\ndat p: double on cells;\n";

/// A frame with `body` and its true length.
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Sends `bytes` and waits for the error answer with `code` that follows
/// (an answer with a numeric id is filed as the response to that id).
async fn expect_error(session: &mut Session, bytes: &[u8], code: i64, what: &str) -> Value {
    let from = session.mark();
    session.send_raw(bytes);
    let id = serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| v.get("id").and_then(Value::as_i64));
    let id = id.or_else(|| {
        // A framed body: its id, when it has one.
        let text = String::from_utf8_lossy(bytes);
        let body = text.split("\r\n\r\n").nth(1)?;
        serde_json::from_str::<Value>(body)
            .ok()?
            .get("id")?
            .as_i64()
    });
    if let Some(id) = id.filter(|_| code == -32600) {
        let error = session
            .response(id, what)
            .await
            .expect_err("an error answer");
        assert_eq!(error["code"], code, "{what}: {error}");
        return json!({"id": id, "error": error});
    }
    session
        .wait_for_after(from, what, |m| m["error"]["code"] == code)
        .await
}

/// The session still serves: the document opened before is there and a
/// request is answered.
async fn still_serving(session: &mut Session, what: &str) {
    let symbols = session
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await
        .unwrap_or_else(|e| panic!("after {what}: {e}"));
    assert_eq!(
        symbols.as_array().map(Vec::len),
        Some(2),
        "after {what}: {symbols}"
    );
}

async fn malformed_messages_are_answered_and_the_session_goes_on(mut session: Session) {
    session.initialize(&[], None, None).await;
    session.did_open(URI, PROGRAM, 1);
    session.diagnostics(URI, 1).await;
    let parse_errors: &[(&str, &[u8])] = &[
        ("invalid JSON", b"{\"jsonrpc\": \"2.0\", \"id\": 9, "),
        ("not JSON", b"hello"),
        (
            "a lone surrogate",
            br#"{"jsonrpc":"2.0","id":10,"method":"textDocument/hover","params":{"x":"\udc00"}}"#,
        ),
        (
            "invalid UTF-8",
            b"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"textDocument/hover\",\"params\":{\"x\":\"\xff\xfe\"}}",
        ),
    ];
    for (what, body) in parse_errors {
        let answer = expect_error(&mut session, &framed(body), -32700, what).await;
        assert_eq!(answer["id"], Value::Null, "{what}: {answer}");
        still_serving(&mut session, what).await;
    }
    let invalid: &[(&str, &[u8], Value)] = &[
        ("an empty object", b"{}", Value::Null),
        ("null", b"null", Value::Null),
        ("an array", b"[1, 2]", Value::Null),
        (
            "a wrong jsonrpc",
            br#"{"jsonrpc":"1.0","id":12,"method":"textDocument/hover"}"#,
            json!(12),
        ),
        (
            "an id that is an object",
            br#"{"jsonrpc":"2.0","id":{},"method":"shutdown"}"#,
            Value::Null,
        ),
        (
            "params that are a number",
            br#"{"jsonrpc":"2.0","id":13,"method":"textDocument/hover","params":5}"#,
            json!(13),
        ),
    ];
    for (what, body, id) in invalid {
        let answer = expect_error(&mut session, &framed(body), -32600, what).await;
        assert_eq!(answer["id"], *id, "{what}: {answer}");
        still_serving(&mut session, what).await;
    }
    // Framing: a header that is not one, a Content-Length too short and
    // one too long (followed by a good message, which is not lost).
    expect_error(
        &mut session,
        b"Content-Lenght: 2\r\n\r\n{}",
        -32700,
        "a bad header",
    )
    .await;
    still_serving(&mut session, "a bad header").await;
    let good = br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///nonexistent/op2-tests/malformed.op2","version":2},"contentChanges":[{"text":"set cells;\ndat p: double on cells;\ndat q: double on cells;\n"}]}}"#;
    let body = br#"{"jsonrpc":"2.0","id":14,"method":"shutdown"}"#;
    let mut short = format!("Content-Length: {}\r\n\r\n", body.len() - 5).into_bytes();
    short.extend_from_slice(body);
    expect_error(&mut session, &short, -32700, "a short Content-Length").await;
    still_serving(&mut session, "a short Content-Length").await;
    let mut long = format!("Content-Length: {}\r\n\r\n", body.len() + 40).into_bytes();
    long.extend_from_slice(body);
    long.extend_from_slice(&framed(good));
    let from = session.mark();
    session.send_raw(&long);
    let error = session
        .response(14, "a long Content-Length")
        .await
        .expect_err("an error answer");
    assert_eq!(error["code"], -32700, "{error}");
    let _ = from;
    session.diagnostics(URI, 2).await;
    // A long Content-Length with nothing after it is answered too.
    let mut alone = format!("Content-Length: {}\r\n\r\n", body.len() + 40).into_bytes();
    alone.extend_from_slice(br#"{"jsonrpc":"2.0","id":15,"method":"textDocument/hover"}"#);
    session.send_raw(&alone);
    let error = session
        .response(15, "a long Content-Length alone")
        .await
        .expect_err("an error answer");
    assert_eq!(error["code"], -32700, "{error}");
    // A message over the limit is refused without being read into memory.
    let huge = format!(
        "Content-Length: {}\r\n\r\n",
        op2_lsp::transport::MESSAGE_LIMIT + 1
    );
    expect_error(
        &mut session,
        huge.as_bytes(),
        -32600,
        "a message over the limit",
    )
    .await;
    // A malformed notification: no answer, a log message.
    let from = session.mark();
    session.send_raw(&framed(
        br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{}}}"#,
    ));
    session
        .wait_for_after(from, "the log of a malformed notification", |m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|s| s.contains("textDocument/didOpen"))
        })
        .await;
    // The documents are intact: the text is the one of version 2.
    let symbols = session
        .call(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert_eq!(symbols.as_array().map(Vec::len), Some(3), "{symbols}");
    session.shutdown().await;
}

#[tokio::test]
async fn in_process_malformed_messages_are_answered_and_the_session_goes_on() {
    malformed_messages_are_answered_and_the_session_goes_on(Session::in_process()).await;
}

#[tokio::test]
async fn binary_malformed_messages_are_answered_and_the_session_goes_on() {
    let Some(session) = Session::binary(&[]) else {
        return;
    };
    malformed_messages_are_answered_and_the_session_goes_on(session).await;
}

/// `op2 lsp` with `input` written to its stdin (left open), and its exit
/// status.
async fn exit_status(input: &[u8]) -> Option<i32> {
    let binary = support::binary()?;
    let mut child = tokio::process::Command::new(binary)
        .arg("lsp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("op2 lsp starts");
    let mut stdin = child.stdin.take().expect("piped");
    tokio::io::AsyncWriteExt::write_all(&mut stdin, input)
        .await
        .expect("write");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("op2 lsp exits after `exit` without its input closing")
        .expect("wait");
    drop(stdin);
    status.code()
}

#[tokio::test]
async fn exit_is_status_1_without_shutdown_and_0_after_it() {
    let initialize =
        framed(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#);
    let shutdown = framed(br#"{"jsonrpc":"2.0","id":2,"method":"shutdown"}"#);
    let exit = framed(br#"{"jsonrpc":"2.0","method":"exit"}"#);
    let Some(without) = exit_status(&[initialize.clone(), exit.clone()].concat()).await else {
        return;
    };
    assert_eq!(without, 1);
    let with = exit_status(&[initialize, shutdown, exit].concat()).await;
    assert_eq!(with, Some(0));
}
