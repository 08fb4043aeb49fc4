//! A panic inside one request is answered with an error and the session
//! goes on. The server has the panicking test command only with its test
//! hooks on: an option of the one server the in-process test starts
//! (`op2_lsp::Options`), and `OP2_LSP_TEST_PANIC=1` in the environment of
//! the `op2 lsp` child process, never in this test process's.

use crate::support;

use serde_json::json;
use support::Session;

const URI: &str = "file:///nonexistent/op2-tests/airfoil.op2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_a_request_leaves_the_session_working() {
    let mut session = Session::in_process_with(op2_lsp::Options {
        test_hooks: true,
        ..op2_lsp::Options::default()
    });
    session.initialize(&[], None, None).await;
    let text = support::example("airfoil.op2");
    session.did_open(URI, &text, 1);
    session.diagnostics(URI, 1).await;

    for round in 0..3 {
        let from = session.mark();
        let answer = session
            .request(
                "workspace/executeCommand",
                json!({"command": "op2.test.panic", "arguments": []}),
            )
            .await;
        let error = answer.expect_err("the panicking command answers with an error");
        assert_eq!(error["code"], -32603, "an internal error: {error}");
        session
            .wait_for_after(from, "the panic logged", |m| {
                m["method"] == "window/logMessage"
                    && m["params"]["type"] == 1
                    && m["params"]["message"]
                        .as_str()
                        .is_some_and(|s| s.contains("panic"))
            })
            .await;

        // The session still answers requests and publishes diagnostics.
        let symbols = session
            .request(
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": URI}}),
            )
            .await;
        assert!(symbols.is_ok(), "round {round}: {symbols:?}");
        let hover = session
            .request(
                "textDocument/hover",
                json!({"textDocument": {"uri": URI}, "position": support::position_of(&text, "p_q", 0, 1, session.encoding)}),
            )
            .await;
        assert!(hover.is_ok(), "round {round}: {hover:?}");
        let version = 2 + round;
        session.did_change(URI, version, vec![json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "\n"})]);
        let diagnostics = session.diagnostics(URI, version).await;
        assert!(
            diagnostics.iter().all(|d| d["severity"] != 1),
            "{diagnostics:?}"
        );
    }
    session.shutdown().await;
}

#[tokio::test]
async fn the_binary_survives_a_panic_too() {
    let Some(mut session) = Session::binary(&[("OP2_LSP_TEST_PANIC", "1")]) else {
        return;
    };
    session.initialize(&["utf-8"], None, None).await;
    let text = support::example("jacobi.op2");
    session.did_open(URI, &text, 1);
    session.diagnostics(URI, 1).await;
    let answer = session
        .request(
            "workspace/executeCommand",
            json!({"command": "op2.test.panic", "arguments": []}),
        )
        .await;
    assert!(answer.is_err(), "{answer:?}");
    let symbols = session
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert!(symbols.is_ok(), "{symbols:?}");
    session.did_change(URI, 2, vec![json!({"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "😀"})]);
    let diagnostics = session.diagnostics(URI, 2).await;
    assert!(
        diagnostics.iter().any(|d| d["code"] == "E001"),
        "{diagnostics:?}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn without_the_variable_the_command_does_not_exist() {
    // The binary started without the variable (`Session::binary` removes
    // it from the child's environment).
    let Some(mut session) = Session::binary(&[]) else {
        return;
    };
    session.initialize(&[], None, None).await;
    let answer = session
        .request(
            "workspace/executeCommand",
            json!({"command": "op2.test.panic", "arguments": []}),
        )
        .await;
    let error = answer.expect_err("an unknown command is an error");
    assert_eq!(error["code"], -32602, "invalid params: {error}");
    session.shutdown().await;
}
