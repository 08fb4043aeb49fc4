//! Every feature of the server at least once on `docs/examples/airfoil.op2`,
//! through the real transport: each request answers without an error, with
//! something (not `null`), and with an answer of the right shape in the right
//! place. What exactly each feature answers is for the feature's own tests.

use crate::support;

use serde_json::{Value, json};
use support::text;
use support::{Encoding, Session, position_of};

const URI: &str = "file:///nonexistent/op2-tests/airfoil.op2";

/// A session with airfoil open (UTF-16, as VS Code), its diagnostics in.
async fn airfoil() -> (Session, String) {
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    let text = support::example("airfoil.op2");
    session.did_open(URI, &text, 1);
    let diagnostics = session.diagnostics(URI, 1).await;
    assert!(
        diagnostics.iter().all(|d| d["severity"] != 1),
        "airfoil has no errors: {diagnostics:?}"
    );
    (session, text)
}

/// The answer of `method`, which must be neither an error nor `null`.
async fn answer(session: &mut Session, method: &str, params: Value) -> Value {
    let result = session.call(method, params).await;
    assert!(
        !result.is_null(),
        "`{method}` answered null (not implemented yet?)"
    );
    result
}

fn at(text: &str, needle: &str, nth: usize, skip: usize) -> Value {
    position_of(text, needle, nth, skip, Encoding::Utf16)
}

fn document_position(position: &Value) -> Value {
    json!({"textDocument": {"uri": URI}, "position": position})
}

/// Whether an LSP range contains a position.
fn contains(range: &Value, position: &Value) -> bool {
    let key = |p: &Value| {
        (
            p["line"].as_u64().unwrap_or(u64::MAX),
            p["character"].as_u64().unwrap_or(u64::MAX),
        )
    };
    key(&range["start"]) <= key(position) && key(position) <= key(&range["end"])
}

/// The line (0-based) on which `needle` first occurs.
fn line_of(text: &str, needle: &str) -> u64 {
    let offset = text.find(needle).unwrap_or_else(|| panic!("no `{needle}`"));
    u64::from(text::position(text, offset, Encoding::Utf16).0)
}

/// A cursor on `p_q` in the first par_loop.
fn on_p_q(text: &str) -> Value {
    at(text, "(p_q READ", 0, 2)
}

#[tokio::test]
async fn hover() {
    let (mut session, text) = airfoil().await;
    let position = on_p_q(&text);
    let hover = answer(
        &mut session,
        "textDocument/hover",
        document_position(&position),
    )
    .await;
    let contents = &hover["contents"];
    let shown = contents["value"]
        .as_str()
        .or(contents.as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| contents.to_string());
    assert!(!shown.trim().is_empty(), "{hover}");
    if !hover["range"].is_null() {
        assert!(
            contains(&hover["range"], &position),
            "the hover range covers the cursor: {hover}"
        );
    }
    session.shutdown().await;
}

#[tokio::test]
async fn definition() {
    let (mut session, text) = airfoil().await;
    let result = answer(
        &mut session,
        "textDocument/definition",
        document_position(&on_p_q(&text)),
    )
    .await;
    let first = if result.is_array() {
        result[0].clone()
    } else {
        result
    };
    let (uri, range) = if first["targetUri"].is_string() {
        (
            first["targetUri"].clone(),
            first["targetSelectionRange"].clone(),
        )
    } else {
        (first["uri"].clone(), first["range"].clone())
    };
    assert_eq!(uri, URI);
    assert_eq!(
        range["start"]["line"],
        line_of(&text, "dat p_q:"),
        "the declaration of p_q: {range}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn references() {
    let (mut session, text) = airfoil().await;
    let mut params = document_position(&on_p_q(&text));
    params["context"] = json!({"includeDeclaration": true});
    let result = answer(&mut session, "textDocument/references", params).await;
    let locations = result.as_array().expect("an array of locations");
    let uses = text.matches("p_q ").count() + text.matches("p_q[").count();
    assert!(
        locations.len() >= uses,
        "{} references for {uses} uses: {result}",
        locations.len()
    );
    assert!(locations.iter().all(|l| l["uri"] == URI));
    assert!(
        locations
            .iter()
            .any(|l| l["range"]["start"]["line"] == line_of(&text, "dat p_q:")),
        "the declaration is included"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn document_highlight() {
    let (mut session, text) = airfoil().await;
    let position = on_p_q(&text);
    let result = answer(
        &mut session,
        "textDocument/documentHighlight",
        document_position(&position),
    )
    .await;
    let highlights = result.as_array().expect("an array");
    assert!(highlights.len() >= 2, "{result}");
    assert!(
        highlights.iter().any(|h| contains(&h["range"], &position)),
        "the cursor's own occurrence: {result}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn prepare_rename_and_rename() {
    let (mut session, text) = airfoil().await;
    let position = on_p_q(&text);
    let prepared = answer(
        &mut session,
        "textDocument/prepareRename",
        document_position(&position),
    )
    .await;
    let range = if prepared["range"].is_object() {
        prepared["range"].clone()
    } else {
        prepared.clone()
    };
    if range["start"].is_object() {
        assert!(contains(&range, &position), "{prepared}");
    } else {
        assert_eq!(prepared["defaultBehavior"], true, "{prepared}");
    }

    let mut params = document_position(&position);
    params["newName"] = json!("p_state");
    let edit = answer(&mut session, "textDocument/rename", params).await;
    let edits: Vec<Value> = if let Some(changes) = edit["changes"].as_object() {
        changes
            .get(URI)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    } else {
        edit["documentChanges"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["textDocument"]["uri"] == URI)
            .flat_map(|c| c["edits"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    assert!(!edits.is_empty(), "{edit}");
    let renamed = text::apply_edits(&text, &edits, Encoding::Utf16);
    assert!(
        !renamed.contains("p_q ") && !renamed.contains("p_q:") && renamed.contains("dat p_state:"),
        "every p_q renamed"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn a_rename_to_a_huge_name_is_refused_and_the_session_goes_on() {
    // Ten megabytes of name on airfoil's seven uses of `p_q` made a 73 MB
    // answer, over the transport's message limit: it was never sent and
    // the session answered nothing more.
    let (mut session, text) = airfoil().await;
    let position = on_p_q(&text);
    let mut params = document_position(&position);
    params["newName"] = json!("a".repeat(10 << 20));
    let error = session
        .request("textDocument/rename", params)
        .await
        .expect_err("refused");
    assert_eq!(error["code"], -32602, "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("a name may be at most") && message.len() < 200,
        "{message}"
    );
    answer(
        &mut session,
        "textDocument/hover",
        document_position(&position),
    )
    .await;
    session.shutdown().await;
}

#[tokio::test]
async fn completion() {
    let (mut session, text) = airfoil().await;
    // Right after `over `: a set goes here.
    let position = at(
        &text,
        "par_loop save_soln over ",
        0,
        "par_loop save_soln over ".len(),
    );
    let result = answer(
        &mut session,
        "textDocument/completion",
        document_position(&position),
    )
    .await;
    let items = result["items"]
        .as_array()
        .or(result.as_array())
        .expect("items");
    assert!(!items.is_empty(), "{result}");
    let labels: Vec<&str> = items.iter().filter_map(|i| i["label"].as_str()).collect();
    assert!(labels.contains(&"cells"), "sets after `over`: {labels:?}");
    session.shutdown().await;
}

#[tokio::test]
async fn signature_help() {
    let (mut session, text) = airfoil().await;
    let position = at(&text, "(p_q READ, p_qold", 0, "(p_q READ, ".len());
    let help = answer(
        &mut session,
        "textDocument/signatureHelp",
        document_position(&position),
    )
    .await;
    let signatures = help["signatures"].as_array().expect("signatures");
    assert!(!signatures.is_empty(), "{help}");
    assert!(
        signatures[0]["label"]
            .as_str()
            .is_some_and(|l| l.contains("save_soln") || l.contains("qold")),
        "{help}"
    );
    session.shutdown().await;
}

/// Names of document symbols, nested ones included.
fn symbol_names(symbols: &Value, out: &mut Vec<String>) {
    for symbol in symbols.as_array().into_iter().flatten() {
        if let Some(name) = symbol["name"].as_str() {
            out.push(name.to_owned());
        }
        symbol_names(&symbol["children"], out);
    }
}

#[tokio::test]
async fn document_symbols() {
    let (mut session, _) = airfoil().await;
    let result = answer(
        &mut session,
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": URI}}),
    )
    .await;
    let mut names = Vec::new();
    symbol_names(&result, &mut names);
    for expected in ["res_calc", "p_q", "cells", "pedge", "gam"] {
        assert!(
            names.iter().any(|n| n == expected),
            "`{expected}` among {names:?}"
        );
    }
    session.shutdown().await;
}

#[tokio::test]
async fn workspace_symbols() {
    let (mut session, _) = airfoil().await;
    let result = answer(
        &mut session,
        "workspace/symbol",
        json!({"query": "res_calc"}),
    )
    .await;
    let symbols = result.as_array().expect("an array");
    assert!(
        symbols
            .iter()
            .any(|s| s["name"] == "res_calc" && s["location"]["uri"] == URI),
        "{result}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn semantic_tokens_full_and_delta() {
    let mut session = Session::in_process();
    let init = session.initialize(&[], None, None).await;
    let legend = &init["capabilities"]["semanticTokensProvider"]["legend"];
    assert!(
        legend["tokenTypes"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "a legend: {legend}"
    );
    let text = support::example("airfoil.op2");
    session.did_open(URI, &text, 1);

    let full = answer(
        &mut session,
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": URI}}),
    )
    .await;
    let data = full["data"].as_array().expect("data");
    assert!(
        !data.is_empty() && data.len() % 5 == 0,
        "{} numbers",
        data.len()
    );
    let types = legend["tokenTypes"].as_array().map_or(0, Vec::len) as u64;
    assert!(
        data.chunks(5)
            .all(|t| t[3].as_u64().is_some_and(|k| k < types)),
        "token types index the legend"
    );
    let previous = full["resultId"]
        .as_str()
        .expect("a resultId, for deltas")
        .to_owned();

    let mut doc = text::Doc::new(&text, Encoding::Utf16);
    let at = text.find("const mach").expect("mach");
    let change = doc.change(at..at, "const extra: double = 2.0;\n");
    session.did_change(URI, 2, vec![change]);
    let delta = answer(
        &mut session,
        "textDocument/semanticTokens/full/delta",
        json!({"textDocument": {"uri": URI}, "previousResultId": previous}),
    )
    .await;
    assert!(
        delta["edits"].is_array() || delta["data"].is_array(),
        "{delta}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn inlay_hints() {
    let (mut session, text) = airfoil().await;
    let whole = text::range(&text, 0..text.len(), Encoding::Utf16);
    let result = answer(
        &mut session,
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": URI}, "range": whole}),
    )
    .await;
    let hints = result.as_array().expect("an array");
    assert!(!hints.is_empty(), "{result}");
    let par_loop_lines: Vec<u64> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            l.contains("par_loop")
                || l.contains("READ")
                || l.contains("INC")
                || l.contains("WRITE")
                || l.contains(" RW")
        })
        .map(|(n, _)| n as u64)
        .collect();
    assert!(
        hints.iter().all(|h| h["position"]["line"]
            .as_u64()
            .is_some_and(|l| par_loop_lines.contains(&l))),
        "hints sit in par_loops: {result}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn inlay_hint_tooltips_resolve_for_clients_that_resolve_them() {
    // A client that does not resolve tooltips gets them with the hints.
    let (mut eager, text) = airfoil().await;
    let whole = text::range(&text, 0..text.len(), Encoding::Utf16);
    let params = json!({"textDocument": {"uri": URI}, "range": whole});
    let with_tooltips = answer(&mut eager, "textDocument/inlayHint", params.clone()).await;
    eager.shutdown().await;

    // One that resolves them (VS Code) gets the same hints without, and
    // each tooltip when it resolves the hint.
    let mut session = Session::in_process();
    let result = session
        .initialize_with(json!({
            "processId": null,
            "rootUri": null,
            "capabilities": {"textDocument": {"inlayHint": {"resolveSupport": {"properties": ["tooltip"]}}}},
        }))
        .await;
    assert_eq!(
        result["capabilities"]["inlayHintProvider"]["resolveProvider"],
        json!(true)
    );
    session.did_open(URI, &text, 1);
    let lazy = answer(&mut session, "textDocument/inlayHint", params).await;
    let (eager, lazy) = (
        with_tooltips.as_array().expect("hints"),
        lazy.as_array().expect("hints"),
    );
    assert_eq!(eager.len(), lazy.len());
    assert!(eager.iter().any(|h| h["tooltip"].is_object()));
    for (eager, lazy) in eager.iter().zip(lazy) {
        assert_eq!(eager["label"], lazy["label"]);
        assert_eq!(eager["position"], lazy["position"]);
        assert!(lazy["tooltip"].is_null(), "no tooltip yet: {lazy}");
        let resolved = session.call("inlayHint/resolve", lazy.clone()).await;
        assert_eq!(resolved["tooltip"], eager["tooltip"], "{lazy}");
    }

    // A hint from an older text is returned as it is.
    let old = lazy[0].clone();
    session.did_change(
        URI,
        2,
        vec![json!({"range": text::range(&text, 0..0, Encoding::Utf16), "text": "\n"})],
    );
    let resolved = session.call("inlayHint/resolve", old.clone()).await;
    assert!(resolved["tooltip"].is_null(), "{resolved}");
    session.shutdown().await;
}

#[tokio::test]
async fn code_lenses() {
    let (mut session, text) = airfoil().await;
    let result = answer(
        &mut session,
        "textDocument/codeLens",
        json!({"textDocument": {"uri": URI}}),
    )
    .await;
    let lenses = result.as_array().expect("an array");
    let par_loops = text.matches("par_loop ").count();
    assert!(
        lenses.len() >= par_loops,
        "{} lenses for {par_loops} par_loops",
        lenses.len()
    );
    let lines: Vec<&str> = text.lines().collect();
    for lens in lenses {
        let line = lens["range"]["start"]["line"]
            .as_u64()
            .and_then(|l| lines.get(l as usize))
            .copied()
            .unwrap_or_default();
        assert!(
            line.contains("par_loop"),
            "a lens over a par_loop, not `{line}`"
        );
    }
    session.shutdown().await;
}

#[tokio::test]
async fn code_actions_offer_the_quick_fix() {
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    let text = support::example("airfoil.op2").replace("sum / cfl;", "sum / cfll;");
    session.did_open(URI, &text, 1);
    let diagnostics = session.diagnostics(URI, 1).await;
    let e101: Vec<Value> = diagnostics
        .into_iter()
        .filter(|d| d["code"] == "E101")
        .collect();
    assert_eq!(e101.len(), 1, "{e101:?}");
    let params = json!({"textDocument": {"uri": URI}, "range": e101[0]["range"], "context": {"diagnostics": e101}});
    let result = answer(&mut session, "textDocument/codeAction", params).await;
    let actions = result.as_array().expect("an array");
    let fixed = actions.iter().any(|a| {
        a["edit"]["changes"][URI].as_array().is_some_and(|edits| {
            text::apply_edits(&text, edits, Encoding::Utf16).contains("sum / cfl;")
        })
    });
    assert!(fixed, "a quick fix that restores `cfl`: {result}");
    session.shutdown().await;
}

#[tokio::test]
async fn folding_ranges() {
    let (mut session, text) = airfoil().await;
    let result = answer(
        &mut session,
        "textDocument/foldingRange",
        json!({"textDocument": {"uri": URI}}),
    )
    .await;
    let ranges = result.as_array().expect("an array");
    assert!(
        ranges
            .iter()
            .all(|r| r["startLine"].as_u64() <= r["endLine"].as_u64())
    );
    let kernel = line_of(&text, "kernel res_calc");
    assert!(
        ranges.iter().any(|r| r["startLine"] == kernel),
        "res_calc folds: {result}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn selection_ranges() {
    let (mut session, text) = airfoil().await;
    let position = on_p_q(&text);
    let result = answer(
        &mut session,
        "textDocument/selectionRange",
        json!({"textDocument": {"uri": URI}, "positions": [position]}),
    )
    .await;
    let ranges = result.as_array().expect("an array");
    assert_eq!(ranges.len(), 1, "one per position");
    assert!(contains(&ranges[0]["range"], &position), "{result}");
    assert!(
        ranges[0]["parent"].is_object(),
        "a wider range around it: {result}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn formatting() {
    let (mut session, text) = airfoil().await;
    let result = answer(
        &mut session,
        "textDocument/formatting",
        json!({"textDocument": {"uri": URI}, "options": {"tabSize": 4, "insertSpaces": true}}),
    )
    .await;
    let edits = result.as_array().expect("an array of edits");
    let formatted = text::apply_edits(&text, edits, Encoding::Utf16);
    let diagnostics = support::expected_diagnostics(&formatted, URI, Encoding::Utf16, None);
    assert!(
        diagnostics.iter().all(|d| d["severity"] != 1),
        "the formatted text still has no errors: {diagnostics:?}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn show_device_type() {
    let (mut session, _) = airfoil().await;
    let result = answer(
        &mut session,
        "workspace/executeCommand",
        json!({"command": "op2.showDeviceType", "arguments": [URI, "cells"]}),
    )
    .await;
    let shown = result.as_str().expect("text");
    assert!(shown.contains("cells"), "{shown}");
    session.shutdown().await;
}
