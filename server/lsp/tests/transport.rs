//! The language server end to end over its real transport (`serve` over an
//! in-memory duplex): position encodings, published diagnostics, the order
//! of a burst of edits, stale results, and a server that never waits on its
//! client. These are the rules of architecture.md ("Language server rules"),
//! each tested where a client would see it break.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::text::{self, Doc, Typist};
use support::{Encoding, Rng, Session, assert_same_diagnostics, expected_diagnostics};

const URI: &str = "file:///nonexistent/op2-tests/program.op2";

/// A program with an unknown name after non-BMP text in a string, and a
/// stray emoji (a syntax error) after more of it.
const NON_BMP: &str = r#"set cells;
dat p_q: double on cells;
global total: double;

kernel sum(const double *q, double *t) { *t += q[0]; }

main {
    par_loop sum over cells (p_q READ, total INC);
    print("😀𝄞é", nope);
    print("😀𝄞é %g", total) 😀 ;
}
"#;

fn code_of(diagnostic: &Value) -> &str {
    diagnostic["code"].as_str().unwrap_or_default()
}

fn find<'a>(diagnostics: &'a [Value], code: &str) -> &'a Value {
    diagnostics
        .iter()
        .find(|d| code_of(d) == code)
        .unwrap_or_else(|| {
            panic!(
                "no {code} among {}",
                serde_json::to_string_pretty(diagnostics).unwrap_or_default()
            )
        })
}

fn range(start: (u32, u32), end: (u32, u32)) -> Value {
    json!({"start": {"line": start.0, "character": start.1}, "end": {"line": end.0, "character": end.1}})
}

#[test]
fn harness_positions_follow_lsp() {
    let text = "a😀b\r\nx\ry\n𝄞z";
    assert_eq!(text::line_starts(text), vec![0, 8, 10, 12]);
    assert_eq!(text::position(text, 5, Encoding::Utf16), (0, 3));
    assert_eq!(text::position(text, 5, Encoding::Utf8), (0, 5));
    assert_eq!(text::position(text, 16, Encoding::Utf16), (3, 2));
    assert!(!text::is_position(text, 7), "between `\\r` and `\\n`");
}

#[tokio::test]
async fn utf8_is_chosen_when_offered_and_utf16_otherwise() {
    for (offered, expected) in [
        (&["utf-8", "utf-16"][..], "utf-8"),
        (&["utf-16", "utf-8"][..], "utf-8"),
        (&["utf-16"][..], "utf-16"),
        (&["utf-32"][..], "utf-16"),
        (&[][..], "utf-16"),
    ] {
        let mut session = Session::in_process();
        let result = session.initialize(offered, None, None).await;
        assert_eq!(
            result["capabilities"]["positionEncoding"], expected,
            "offered {offered:?}"
        );
        assert_eq!(
            result["capabilities"]["textDocumentSync"]["change"], 2,
            "incremental sync"
        );
        session.shutdown().await;
    }
}

#[tokio::test]
async fn diagnostic_ranges_after_non_bmp_text_in_both_encodings() {
    // `nope` is the 18th scalar value of line 8; before it, 😀 and 𝄞 are
    // two UTF-16 units and four bytes each, é one unit and two bytes.
    for (offered, nope, emoji) in [
        (
            &["utf-8", "utf-16"][..],
            ((8, 24), (8, 28)),
            ((9, 34), (9, 38)),
        ),
        (&[][..], ((8, 19), (8, 23)), ((9, 29), (9, 31))),
    ] {
        let mut session = Session::in_process();
        session.initialize(offered, None, None).await;
        session.did_open(URI, NON_BMP, 1);
        let diagnostics = session.diagnostics(URI, 1).await;
        let e101 = find(&diagnostics, "E101");
        assert_eq!(
            e101["range"],
            range(nope.0, nope.1),
            "E101 in {:?}",
            session.encoding
        );
        let e001 = find(&diagnostics, "E001");
        assert_eq!(
            e001["range"],
            range(emoji.0, emoji.1),
            "E001 in {:?}",
            session.encoding
        );
        // Every range agrees with the client's own conversion.
        assert_eq!(
            diagnostics,
            expected_diagnostics(NON_BMP, URI, session.encoding, None)
        );

        // An edit given in the same encoding lands where the client meant:
        // delete `nope` and type `total`, so only the syntax error remains.
        let mut doc = Doc::new(NON_BMP, session.encoding);
        let at = NON_BMP.find("nope").expect("nope");
        let change = doc.change(at..at + 4, "total");
        session.did_change(URI, 2, vec![change]);
        let diagnostics = session.diagnostics(URI, 2).await;
        assert!(
            diagnostics.iter().all(|d| code_of(d) != "E101"),
            "{diagnostics:?}"
        );
        assert_eq!(
            diagnostics,
            expected_diagnostics(&doc.text, URI, session.encoding, None)
        );
        session.shutdown().await;
    }
}

/// Rule 1 of E401 (from the analysis fixtures) after a syntax error.
const BROKEN: &str = "set cells;
map pnbr: cells -> cells[1];
dat p_q: double on cells;
dat p_r double on cells;
global total: double;

kernel copy(const double *a, double *b) { b[0] = a[0]; }
kernel sum(const double *q, double *t) { *t += q[0]; }

main {
    par_loop copy over cells (p_q READ, p_q WRITE);
    par_loop sum over cells (p_q READ, total INC);
    print(\"%g\", total);
}
";

#[tokio::test]
async fn published_diagnostics_carry_codes_versions_links_and_related_information() {
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    session.did_open(URI, BROKEN, 7);
    let diagnostics = session.diagnostics(URI, 7).await;

    let e001 = find(&diagnostics, "E001");
    assert_eq!(e001["severity"], 1, "an error");
    assert_eq!(e001["source"], "op2");
    assert_eq!(
        e001["range"]["start"]["line"], 3,
        "on `dat p_r double`: {e001}"
    );
    let index = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnostics.md");
    if index.exists() {
        let href = e001["codeDescription"]["href"]
            .as_str()
            .unwrap_or_else(|| panic!("no codeDescription: {e001}"));
        assert!(
            href.starts_with("file://") && href.ends_with("diagnostics.md#e001"),
            "{href}"
        );
    }

    let e401 = find(&diagnostics, "E401");
    let second = text::range(
        BROKEN,
        BROKEN.find("p_q WRITE").expect("arg")..BROKEN.find("p_q WRITE").expect("arg") + 9,
        Encoding::Utf16,
    );
    assert_eq!(e401["range"], second, "on the later argument");
    let related = e401["relatedInformation"]
        .as_array()
        .unwrap_or_else(|| panic!("no related information: {e401}"));
    let first = BROKEN.find("p_q READ, p_q WRITE").expect("arg");
    assert!(
        related.iter().any(|r| r["location"]["uri"] == URI
            && r["location"]["range"] == text::range(BROKEN, first..first + 8, Encoding::Utf16)),
        "the earlier argument is related: {related:?}"
    );
    assert!(
        related
            .iter()
            .all(|r| r["message"].as_str().is_some_and(|m| !m.is_empty()))
    );
    assert_eq!(
        diagnostics,
        expected_diagnostics(BROKEN, URI, Encoding::Utf16, None)
    );

    // Closing clears them.
    session.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": URI}}),
    );
    let cleared = session
        .wait_for("diagnostics cleared on close", |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == URI
                && m["params"]["diagnostics"] == json!([])
        })
        .await;
    assert!(cleared["params"]["version"].is_null(), "{cleared}");
    session.shutdown().await;
}

/// Past `PUBLISHED_LIMIT` a document's diagnostics are cut to the limit,
/// errors first and each severity in the order of positions, and one more
/// says how many were left out, on the first of them: every error of a
/// document with more warnings than the limit before its errors is there.
#[tokio::test]
async fn past_the_limit_errors_are_published_first_and_the_rest_counted() {
    use op2_lsp::handlers::diagnostics::PUBLISHED_LIMIT;
    let warnings = PUBLISHED_LIMIT + 100;
    let errors = 20;
    let mut program = String::new();
    // A const without a value is a warning (W204) that errors do not hide;
    // each `set s;` after the first an error (E102).
    for i in 0..warnings {
        program.push_str(&format!("const c{i}: int;\n"));
    }
    for _ in 0..=errors {
        program.push_str("set s;\n");
    }
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    session.did_open(URI, &program, 3);
    let diagnostics = session.diagnostics(URI, 3).await;

    assert_eq!(diagnostics.len(), PUBLISHED_LIMIT + 1);
    let (last, kept) = diagnostics.split_last().expect("some");
    let line = |d: &Value| d["range"]["start"]["line"].as_u64().expect("a line");
    let duplicates: Vec<u64> = kept
        .iter()
        .filter(|d| code_of(d) == "E102")
        .map(line)
        .collect();
    let first_duplicate = warnings as u64 + 1;
    assert_eq!(
        duplicates,
        (first_duplicate..first_duplicate + errors as u64).collect::<Vec<_>>(),
        "every error, in order"
    );
    let unused: Vec<u64> = kept
        .iter()
        .filter(|d| code_of(d) == "W204")
        .map(line)
        .collect();
    let room = PUBLISHED_LIMIT - errors;
    assert_eq!(
        unused,
        (0..room as u64).collect::<Vec<_>>(),
        "the first warnings by position fill the rest"
    );

    // Everything the analysis found, counted the way the CLI counts it.
    let analysis = op2_analysis::analyse_text(
        std::path::Path::new("program.op2"),
        &program,
        &op2_analysis::Options::default(),
    );
    let total = analysis.diagnostics.len();
    assert!(total > PUBLISHED_LIMIT, "{total}");
    assert_eq!(last["severity"], 3, "information: {last}");
    assert_eq!(line(last), room as u64, "on the first left out: {last}");
    let message = last["message"].as_str().expect("a message");
    assert!(
        message.starts_with(&format!(
            "{} more problems in this file not shown",
            total - PUBLISHED_LIMIT
        )),
        "{message}"
    );
    assert_eq!(
        diagnostics,
        expected_diagnostics(&program, URI, Encoding::Utf16, None)
    );
    session.shutdown().await;
}

/// A program the bursts edit: airfoil, whose analysis does real work,
/// without its comments, so that every edit shows in the server's answers.
fn base_text() -> String {
    support::without_comments(&support::example("airfoil.op2"))
}

/// Sends `count` didChange notifications without waiting for anything, each
/// with one to three edits typed by `typist`; returns the last version.
fn burst(
    session: &mut Session,
    doc: &mut Doc,
    typist: &mut Typist,
    rng: &mut Rng,
    count: usize,
) -> i64 {
    for _ in 0..count {
        let edits = if rng.below(10) == 0 {
            2 + rng.below(2)
        } else {
            1
        };
        let changes = (0..edits).map(|_| typist.edit(doc, rng)).collect();
        doc.version += 1;
        session.did_change(URI, doc.version, changes);
    }
    doc.version
}

/// Publication order: versions never go back, and the last is `last`.
fn assert_versions_in_order(session: &Session, uri: &str, last: i64) {
    let versions: Vec<i64> = session
        .published(uri)
        .iter()
        .filter_map(|p| p["version"].as_i64())
        .collect();
    if let Some(at) = versions.windows(2).position(|w| w[0] > w[1]) {
        panic!(
            "diagnostics for version {} published after those for version {} (publication {} of {}: …{:?}…)",
            versions[at + 1],
            versions[at],
            at + 1,
            versions.len(),
            &versions[at.saturating_sub(3)..(at + 5).min(versions.len())]
        );
    }
    assert_eq!(
        versions.last().copied(),
        Some(last),
        "the last publication is for the last version: {versions:?}"
    );
}

/// The ordering test: 500 didChange notifications in a burst, then the
/// server's view of the text must be the client's.
async fn ordering(seed: u64, offered: &[&str]) {
    let mut rng = Rng::new(seed);
    let mut session = Session::in_process();
    session.initialize(offered, None, None).await;
    let base = base_text();
    let mut doc = Doc::new(&base, session.encoding);
    session.did_open(URI, &doc.text, doc.version);
    let mut typist = Typist::new(rng.below(base.len()));
    burst(&mut session, &mut doc, &mut typist, &mut rng, 499);

    // The last edit adds a first line whose diagnostic exists only in the
    // final text (a syntax error after non-BMP characters), and which moves
    // every later diagnostic down a line.
    let before_last = doc.text.clone();
    let last_change = doc.change(0..0, "set 😀𝄞 zz_final;\r\n");
    doc.version += 1;
    session.did_change(URI, doc.version, vec![last_change]);
    let last = doc.version;
    assert_eq!(last, 501);

    // Requests right after the burst answer for the final text: they show
    // where every token is, so a lost or misplaced edit shows in them.
    let document = json!({"textDocument": {"uri": URI}});
    let ids: Vec<i64> = support::VIEWS
        .iter()
        .map(|method| session.send_request(method, document.clone()))
        .collect();
    let end_position = support::position_of(&doc.text, "zz_final", 0, 0, doc.encoding);
    let hover_id = session.send_request(
        "textDocument/hover",
        json!({"textDocument": {"uri": URI}, "position": end_position}),
    );
    let mut answers = Vec::new();
    for (id, method) in ids.into_iter().zip(support::VIEWS) {
        let mut answer = session
            .response(id, method)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"));
        if let Value::Object(object) = &mut answer {
            object.remove("resultId");
        }
        answers.push(answer);
    }
    let hover = session.response(hover_id, "hover").await;
    if let Some(difference) = support::views_difference(
        &answers,
        &support::expected_views(&doc.text, URI, doc.encoding),
    ) {
        panic!(
            "seed {seed}: the server's view of the final text is not the client's:\n{difference}"
        );
    }

    let published = session.diagnostics(URI, last).await;
    let expected = expected_diagnostics(&doc.text, URI, doc.encoding, None);
    assert!(
        expected != expected_diagnostics(&before_last, URI, doc.encoding, None),
        "seed {seed}: the final edit changes the diagnostics (else this test proves little)"
    );
    assert_same_diagnostics(
        &published,
        &expected,
        &format!(
            "seed {seed}: the diagnostics of the final version are those of the client's text"
        ),
    );

    // A fresh session opened with the final text says the same.
    let mut fresh = Session::in_process();
    fresh.initialize(offered, None, None).await;
    fresh.did_open(URI, &doc.text, 1);
    assert_same_diagnostics(
        &fresh.diagnostics(URI, 1).await,
        &published,
        &format!("seed {seed}: a fresh open of the final text"),
    );
    assert_eq!(
        support::views(&mut fresh, URI).await,
        answers,
        "seed {seed}: a fresh open of the final text"
    );
    let fresh_hover = fresh
        .request(
            "textDocument/hover",
            json!({"textDocument": {"uri": URI}, "position": end_position}),
        )
        .await;
    assert_eq!(fresh_hover, hover, "seed {seed}: hover at the end");
    fresh.shutdown().await;

    session.settle(Duration::from_millis(300)).await;
    assert_versions_in_order(&session, URI, last);
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ordering_burst_utf16_seed_1() {
    ordering(1, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ordering_burst_utf16_seed_2() {
    ordering(2, &["utf-16"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ordering_burst_utf8_seed_3() {
    ordering(3, &["utf-8", "utf-16"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ordering_burst_utf8_seed_4() {
    ordering(4, &["utf-8"]).await;
}

#[tokio::test(flavor = "current_thread")]
async fn ordering_burst_on_one_thread_seed_5() {
    ordering(5, &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_results_are_never_published_after_a_newer_version() {
    // A larger program makes each analysis slow enough that many are in
    // flight at once; bursts alternate with waits for the diagnostics.
    let mut rng = Rng::new(42);
    let mut session = Session::in_process();
    session.initialize(&["utf-8"], None, None).await;
    let base = op2_syntax::synth::program(600);
    let mut doc = Doc::new(&base, session.encoding);
    session.did_open(URI, &doc.text, doc.version);
    let mut typist = Typist::new(base.len() / 2);
    for round in 0..6 {
        let last = burst(
            &mut session,
            &mut doc,
            &mut typist,
            &mut rng,
            40 + 20 * round,
        );
        let published = session.diagnostics(URI, last).await;
        assert_same_diagnostics(
            &published,
            &expected_diagnostics(&doc.text, URI, doc.encoding, None),
            &format!("round {round}"),
        );
        // Nothing older may follow a newer publication.
        session.drain();
        assert_versions_in_order(&session, URI, last);
    }
    session.settle(Duration::from_millis(300)).await;
    assert_versions_in_order(&session, URI, doc.version);
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn versions_that_went_by_are_skipped_not_queued() {
    // One worker per document analyses whatever is current when it starts
    // and stops a run when the text moves on: a burst of 300 changes to a
    // program whose analysis takes milliseconds is analysed far fewer than
    // 300 times (one analysis per change, as before the worker, gives 300),
    // and the last version's diagnostics still arrive. The bound assumes
    // that an analysis of 2,000 lines takes longer than the client takes to
    // send a change; here about 120 of 300 run.
    let mut rng = Rng::new(7);
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    let base = op2_syntax::synth::program(2_000);
    let mut doc = Doc::new(&base, session.encoding);
    session.did_open(URI, &doc.text, doc.version);
    let _ = session.diagnostics(URI, doc.version).await;
    let mut typist = Typist::new(base.len() / 2);
    let last = burst(&mut session, &mut doc, &mut typist, &mut rng, 300);
    let published = session.diagnostics(URI, last).await;
    assert_same_diagnostics(
        &published,
        &expected_diagnostics(&doc.text, URI, doc.encoding, None),
        "after the burst",
    );
    session.settle(Duration::from_millis(300)).await;
    assert_versions_in_order(&session, URI, last);
    let status = session
        .call(
            "workspace/executeCommand",
            json!({"command": "op2.status", "arguments": []}),
        )
        .await;
    let document = &status["documents"][0];
    assert_eq!(document["version"], json!(last));
    assert_eq!(document["analysedGeneration"], document["generation"]);
    assert_eq!(document["publishedGeneration"], document["generation"]);
    assert_eq!(document["analysing"], json!(false));
    let analyses = document["analyses"].as_u64().expect("a count");
    assert!(
        (1..250).contains(&analyses),
        "{analyses} analyses ran to the end for 300 changes: stale versions were analysed ({status})"
    );
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_answers_cannot_wedge_the_server() {
    // Rule 3: requests to the client are spawned, never awaited inside a
    // handler. The client here answers none of the server's requests
    // (inlay hint refresh, progress creation); notifications that make the
    // server send them must not use up the server's handler slots.
    let workspace = tempfile::tempdir().expect("a temporary directory");
    let mut session = Session::in_process();
    session.initialize(&[], Some(workspace.path()), None).await;
    session.answer_server_requests(false);
    let path = workspace.path().join("scatter.op2");
    let source = support::example("scatter.op2");
    std::fs::write(&path, &source).expect("write the source");
    let uri = support::file_uri(&path);
    session.did_open(&uri, &source, 1);
    session.diagnostics(&uri, 1).await;
    for _ in 0..8 {
        session.notify(
            "workspace/didChangeConfiguration",
            json!({"settings": {"op2": {"inlayHints": {"generatedPins": false}}}}),
        );
        session.notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": uri}}),
        );
    }
    let answer = session
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": uri}}),
        )
        .await;
    assert!(answer.is_ok(), "{answer:?}");
    let mut doc = Doc::new(&source, session.encoding);
    let change = doc.change(0..0, "\n");
    session.did_change(&uri, 2, vec![change]);
    assert_eq!(
        session.diagnostics(&uri, 2).await,
        expected_diagnostics(&doc.text, &uri, doc.encoding, Some(&path))
    );
    session.shutdown().await;
}

#[tokio::test]
async fn changes_in_one_notification_apply_in_order() {
    // Rule 6: each change's range refers to the text the previous change
    // left. Three edits on one line, each after the one before.
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    let mut doc = Doc::new(NON_BMP, session.encoding);
    session.did_open(URI, &doc.text, 1);
    let at = doc.text.find("nope").expect("nope");
    let changes = vec![
        doc.change(at..at + 4, "😀x"),
        doc.change(at + 4..at + 5, "é\r\n𝄞"),
        doc.change(at..at + 4, ""),
    ];
    assert!(doc.text.contains("é\r\n𝄞);"), "{}", doc.text);
    session.did_change(URI, 2, changes);
    assert_eq!(
        session.diagnostics(URI, 2).await,
        expected_diagnostics(&doc.text, URI, doc.encoding, None)
    );
    session.shutdown().await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_final_version_is_published_when_requests_follow_a_burst() {
    // Rule 2 the other way round: after a burst, requests that need the
    // analysis of the final version may compute it before the background
    // task that publishes diagnostics runs; the final diagnostics must
    // still be published. Whether the requests get there first depends on
    // scheduling, so several rounds on one thread, with airfoil as it is
    // (comments make each analysis a little different in length).
    let mut rng = Rng::new(5);
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    let mut doc = Doc::new(&support::example("airfoil.op2"), session.encoding);
    session.did_open(URI, &doc.text, doc.version);
    let mut typist = Typist::new(doc.text.len() / 3);
    for round in 0..5 {
        let last = burst(&mut session, &mut doc, &mut typist, &mut rng, 100);
        let document = json!({"textDocument": {"uri": URI}});
        let ids = [
            session.send_request("textDocument/documentSymbol", document.clone()),
            session.send_request("textDocument/foldingRange", document.clone()),
            session.send_request("textDocument/semanticTokens/full", document),
        ];
        for id in ids {
            let answer = session.response(id, "a request after the burst").await;
            assert!(answer.is_ok(), "round {round}: {answer:?}");
        }
        let published = session.diagnostics(URI, last).await;
        assert_same_diagnostics(
            &published,
            &expected_diagnostics(&doc.text, URI, doc.encoding, None),
            &format!("round {round}: the final version"),
        );
    }
    session.shutdown().await;
}

/// A language server behind the real transport whose hover on
/// [`BIG_URI`] answers more than the client may send (a text of
/// `MESSAGE_LIMIT` bytes and more), and on any other document a short text
/// after a log message.
#[derive(Debug)]
struct LongHover {
    client: tower_lsp_server::Client,
}

const BIG_URI: &str = "file:///nonexistent/op2-tests/big.op2";

impl tower_lsp_server::LanguageServer for LongHover {
    async fn initialize(
        &self,
        _: tower_lsp_server::lsp_types::InitializeParams,
    ) -> tower_lsp_server::jsonrpc::Result<tower_lsp_server::lsp_types::InitializeResult> {
        Ok(tower_lsp_server::lsp_types::InitializeResult::default())
    }

    async fn shutdown(&self) -> tower_lsp_server::jsonrpc::Result<()> {
        Ok(())
    }

    async fn hover(
        &self,
        params: tower_lsp_server::lsp_types::HoverParams,
    ) -> tower_lsp_server::jsonrpc::Result<Option<tower_lsp_server::lsp_types::Hover>> {
        use tower_lsp_server::lsp_types::{Hover, HoverContents, MarkedString, MessageType};
        let uri = params.text_document_position_params.text_document.uri;
        let text = if uri.as_str() == BIG_URI {
            "x".repeat(op2_lsp::transport::MESSAGE_LIMIT + 1)
        } else {
            self.client
                .log_message(MessageType::INFO, format!("hover on {}", uri.as_str()))
                .await;
            "small".to_owned()
        };
        Ok(Some(Hover {
            contents: HoverContents::Scalar(MarkedString::String(text)),
            range: None,
        }))
    }
}

/// An answer longer than the client's message limit reaches the client
/// whole, and the session goes on: a later request on another document is
/// answered, and the server's notifications still arrive (the audit's D0:
/// a rename to a 40 KB name, or selectionRange of 7,000 positions, made the
/// server send nothing more for the session).
#[tokio::test]
async fn an_answer_over_the_clients_limit_is_sent_and_the_session_goes_on() {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_end);
    let (service, socket) = tower_lsp_server::LspService::new(|client| LongHover { client });
    let server = tokio::spawn(async move {
        op2_lsp::transport::serve_checked(server_read, server_write, service, socket).await
    });
    let (read, write) = tokio::io::split(client_end);
    let mut session = Session::over(read, write);
    session.initialize(&[], None, None).await;
    let hover =
        |uri: &str| json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}});

    let long = session.call("textDocument/hover", hover(BIG_URI)).await;
    assert_eq!(
        long["contents"].as_str().map(str::len),
        Some(op2_lsp::transport::MESSAGE_LIMIT + 1)
    );

    let from = session.mark();
    let small = session.call("textDocument/hover", hover(URI)).await;
    assert_eq!(small["contents"], "small");
    session
        .wait_for_after(from, "the log message of the later hover", |m| {
            m["method"] == "window/logMessage"
                && m["params"]["message"] == format!("hover on {URI}")
        })
        .await;
    session.shutdown().await;
    let end = tokio::time::timeout(support::TIMEOUT, server)
        .await
        .expect("the session ends after `exit`")
        .expect("the server task does not panic");
    assert_eq!(end.status(), 0);
}

/// The diagnostics of the first publish for `uri` received after the
/// first `from` messages.
async fn published_after(session: &mut Session, from: usize, uri: &str) -> Vec<Value> {
    let published = session
        .wait_for_after(from, &format!("diagnostics of {uri}"), |m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        })
        .await;
    published["params"]["diagnostics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// An open program reads each file it imports from the editor while that
/// file is open (its unsaved text), and from disk once it is closed: it is
/// analysed again, and its diagnostics published again, when an imported
/// file is opened with other text and when it is closed. Before, only
/// edits of an open import did so: a program went on with the disk's text
/// after its import was opened with other text, and with the unsaved text
/// after the import was closed, until the program itself changed.
#[tokio::test]
async fn opening_and_closing_an_import_analyses_its_importers_again() {
    let workspace = tempfile::tempdir().expect("a temporary directory");
    let library = workspace.path().join("lib.op2");
    std::fs::write(&library, "set cells;\n").expect("write the library");
    let main = workspace.path().join("main.op2");
    let source = "import \"lib.op2\";\ndat p: double on cells;\nmain {}\n";
    std::fs::write(&main, source).expect("write the program");
    let (main_uri, library_uri) = (support::file_uri(&main), support::file_uri(&library));
    let mut session = Session::in_process();
    session.initialize(&[], Some(workspace.path()), None).await;
    session.did_open(&main_uri, source, 1);
    let errors = |diagnostics: &[Value]| {
        diagnostics
            .iter()
            .filter(|d| d["severity"] == 1)
            .filter_map(|d| d["message"].as_str().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        errors(&session.diagnostics(&main_uri, 1).await),
        Vec::<String>::new()
    );

    // Opened with text that no longer declares `cells`.
    let from = session.mark();
    session.did_open(&library_uri, "set nodes;\n", 1);
    let diagnostics = published_after(&mut session, from, &main_uri).await;
    assert!(
        errors(&diagnostics).iter().any(|e| e.contains("cells")),
        "{diagnostics:?}"
    );

    // Closed: the disk's text, which declares it, again.
    let from = session.mark();
    session.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": library_uri}}),
    );
    let diagnostics = published_after(&mut session, from, &main_uri).await;
    assert_eq!(
        errors(&diagnostics),
        Vec::<String>::new(),
        "{diagnostics:?}"
    );
    session.shutdown().await;
}

/// A document over the 16 MiB limit of a source file is not parsed or
/// analysed, as `op2 check` does not read such a file: it gets one
/// diagnostic saying so, requests on it answer with an error, and an edit
/// that brings it under the limit has it analysed again. Before, the
/// server parsed any text the client sent (up to the transport's 64 MiB a
/// message, and without end through appends), past the bounds the limits
/// are derived from.
#[tokio::test]
async fn a_document_over_the_source_limit_is_not_analysed_until_it_is_under_it() {
    let limit = usize::try_from(op2_codegen::files::SOURCE_LIMIT).expect("a size");
    let program = "set cells;\nmain {}\n";
    let mut text = String::with_capacity(limit + 64);
    text.push_str(program);
    while text.len() <= limit {
        text.push_str("// padding padding padding padding padding padding padding\n");
    }
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    session.did_open(URI, &text, 1);
    let diagnostics = session.diagnostics(URI, 1).await;
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    let message = diagnostics[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "this document is {} bytes, over the limit of {limit} bytes",
            text.len()
        )),
        "{message}"
    );
    let answer = session
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert_eq!(answer.expect_err("an error")["code"], -32803);

    // The padding removed: analysed as any program.
    session.did_change(URI, 2, vec![json!({"text": program})]);
    let diagnostics = session.diagnostics(URI, 2).await;
    assert!(
        diagnostics.iter().all(|d| d["severity"] != 1),
        "{diagnostics:?}"
    );
    let answer = session
        .request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": URI}}),
        )
        .await;
    assert!(answer.is_ok_and(|symbols| symbols.to_string().contains("cells")));
    session.shutdown().await;
}
