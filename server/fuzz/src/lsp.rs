//! The language server under random edits interleaved with malformed
//! messages, through its real transport (`op2_lsp::serve` over an in-memory
//! pipe, `Content-Length` framing and all). A session is a list of byte
//! chunks written in order; after them the server must still answer a
//! request, then shut down and exit when told.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::Finding;
use crate::mutate;
use crate::rng::Rng;
use crate::workspace::{self, Layout};

/// The document every session edits.
pub const URI: &str = "file:///op2-fuzz/main.op2";

/// How long the server has to answer the probe, and to stop after `exit`.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A session: what the client writes, chunk by chunk.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// Raw bytes, each written (and flushed) in one go.
    pub chunks: Vec<Vec<u8>>,
}

pub(crate) fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn frame_raw(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// A line and UTF-16 column of byte `offset` of `text` (a char boundary).
fn position(text: &str, offset: usize) -> Value {
    let before = &text[..offset];
    let line = before.matches('\n').count();
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let character: usize = before[start..].chars().map(char::len_utf16).sum();
    json!({"line": line, "character": character})
}

fn boundary(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A session on `text`, with `corpus` for the edits. Half of them build on
/// save in a folder of their own (`workspace`): a workspace folder, the
/// document somewhere in or out of it, saves and changes of the build
/// settings among the edits.
pub fn script(text: &str, corpus: &[&[u8]], rng: &mut Rng) -> Script {
    let mut chunks = Vec::new();
    let encodings = if rng.chance(50) {
        json!(["utf-8", "utf-16"])
    } else {
        json!(["utf-16"])
    };
    let utf8 = encodings.as_array().is_some_and(|a| a.len() == 2);
    let building = rng.chance(50);
    let uri = if building {
        workspace::document(rng)
    } else {
        URI.to_owned()
    };
    let mut params = json!({
        "processId": null, "rootUri": null, "capabilities": {
            "general": {"positionEncodings": encodings},
            "window": {"workDoneProgress": true},
            "textDocument": {"publishDiagnostics": {"versionSupport": true}}}});
    if building {
        params["rootUri"] = json!(workspace::folder());
        params["workspaceFolders"] = json!([{"uri": workspace::folder(), "name": "ws"}]);
        params["initializationOptions"] = workspace::settings(rng);
    }
    chunks.push(frame(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}),
    ));
    chunks.push(frame(
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    ));
    let mut doc = text.to_string();
    let mut version = 1;
    chunks.push(frame(
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "op2", "version": version, "text": doc}}}),
    ));
    let mut id = 10;
    for _ in 0..rng.range(3, 30) {
        match rng.below(if building { 13 } else { 10 }) {
            0..=3 => {
                // An incremental edit, in the encoding the server will
                // choose (UTF-8 when offered, else UTF-16).
                let a = boundary(&doc, rng.below(doc.len() + 1));
                let b = boundary(&doc, a + rng.size(16).min(doc.len() - a));
                let insert =
                    String::from_utf8_lossy(&mutate::mutate(&doc.as_bytes()[a..b], corpus, rng, 2))
                        .into_owned();
                let range = if utf8 {
                    let pos = |o: usize| {
                        let before = &doc[..o];
                        let line = before.matches('\n').count();
                        let start = before.rfind('\n').map_or(0, |i| i + 1);
                        json!({"line": line, "character": o - start})
                    };
                    json!({"start": pos(a), "end": pos(b)})
                } else {
                    json!({"start": position(&doc, a), "end": position(&doc, b)})
                };
                doc.replace_range(a..b, &insert);
                version += 1;
                chunks.push(frame(
                    &json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"range": range, "text": insert}]}}),
                ));
            }
            4 => {
                let next = mutate::mutate(doc.as_bytes(), corpus, rng, 3);
                doc = String::from_utf8_lossy(&next).into_owned();
                version += 1;
                chunks.push(frame(
                    &json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": doc}]}}),
                ));
            }
            5..=7 => {
                id += 1;
                let at = boundary(&doc, rng.below(doc.len() + 1));
                let mut pos = position(&doc, at);
                if rng.one_in(10) {
                    pos = json!({"line": rng.next_u64() % 100_000, "character": u32::MAX});
                }
                let method = *rng.pick(&[
                    "textDocument/hover",
                    "textDocument/definition",
                    "textDocument/references",
                    "textDocument/completion",
                    "textDocument/documentSymbol",
                    "textDocument/semanticTokens/full",
                    "textDocument/inlayHint",
                    "textDocument/codeLens",
                    "textDocument/formatting",
                    "textDocument/foldingRange",
                    "textDocument/selectionRange",
                    "textDocument/codeAction",
                    "textDocument/signatureHelp",
                    "textDocument/prepareRename",
                    "textDocument/rename",
                    "textDocument/documentHighlight",
                ]);
                let whole = json!({"start": {"line": 0, "character": 0}, "end": pos});
                let params = json!({
                    "textDocument": {"uri": uri},
                    "position": pos,
                    "positions": [pos],
                    "range": whole,
                    "context": {"includeDeclaration": true, "diagnostics": []},
                    "newName": "renamed",
                    "options": {"tabSize": 4, "insertSpaces": true},
                });
                chunks.push(frame(
                    &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
                ));
            }
            8 | 9 if crate::tame() => {}
            8 | 9 => chunks.push(malformed(rng, &mut id)),
            10 | 11 => {
                // A save of the document, or of another place of the
                // folder (open or not); or `op2.build`, which builds now
                // and writes as a save does.
                let saved = if rng.chance(70) {
                    uri.clone()
                } else {
                    workspace::document(rng)
                };
                if rng.one_in(3) {
                    id += 1;
                    chunks.push(frame(&json!({"jsonrpc": "2.0", "id": id,
                        "method": "workspace/executeCommand",
                        "params": {"command": "op2.build", "arguments": [saved]}})));
                } else {
                    chunks.push(frame(
                        &json!({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
                        "textDocument": {"uri": saved}}}),
                    ));
                }
            }
            _ => chunks.push(frame(
                &json!({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {
                "settings": workspace::settings(rng)}}),
            )),
        }
    }
    Script { chunks }
}

/// One malformed message of the kinds issue #12 lists.
fn malformed(rng: &mut Rng, id: &mut i64) -> Vec<u8> {
    *id += 1;
    match rng.below(16) {
        0 => frame_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": "),
        1 => frame_raw(b"{}"),
        2 => frame_raw(b"null"),
        3 => frame_raw(b"[]"),
        4 => frame_raw(b"\xff\xfe{\"jsonrpc\":\"2.0\"}"),
        5 => frame_raw(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{\"textDocument\":{\"uri\":\"file:///op2-fuzz/main.op2\",\"version\":99},\"contentChanges\":[{\"text\":\"\\ud800 lone\"}]}}",
        ),
        6 => {
            // A Content-Length shorter than the body.
            let body = json!({"jsonrpc": "2.0", "id": *id, "method": "textDocument/hover"}).to_string();
            let mut out = format!("Content-Length: {}\r\n\r\n", body.len() / 2).into_bytes();
            out.extend_from_slice(body.as_bytes());
            out
        }
        7 => b"Content-Length: 99999999999999\r\n\r\n{}".to_vec(),
        8 => b"Content-Length: -5\r\n\r\n".to_vec(),
        9 => b"Content-Type: nothing\r\n\r\n{}".to_vec(),
        10 => frame(&json!({"jsonrpc": "2.0", "id": *id, "method": "textDocument/hover", "params": null})),
        11 => frame(&json!({"jsonrpc": "2.0", "id": *id, "method": "no/such/method", "params": {}})),
        12 => frame(&json!({"jsonrpc": "2.0", "id": {"nested": [1]}, "method": "textDocument/hover", "params": {}})),
        13 => frame(&json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": 1},
            "contentChanges": [{"range": {"start": {"line": 4_000_000_000u64, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "x"}]}})),
        14 => frame(&json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": "file:///op2-fuzz/%2E%2E/x.op2", "languageId": "op2", "version": 1, "text": "set s;"}}})),
        _ => frame(&json!([{"jsonrpc": "2.0", "id": *id, "method": "shutdown"}])),
    }
}

/// Runs `script` against a fresh server and checks that it survives it;
/// a session that names [`workspace::ROOT`] runs in a fresh folder laid out
/// for it, and must write nowhere it may not ([`Layout::check`]).
pub fn run(script: &Script) -> Result<(), Finding> {
    let root = workspace::ROOT.as_bytes();
    let names_root = script
        .chunks
        .iter()
        .any(|c| c.windows(root.len()).any(|w| w == root));
    if !names_root {
        return serve(script);
    }
    let layout = Layout::new()?;
    run_in(script, &layout)
}

/// Runs `script`, which names [`workspace::ROOT`], in `layout`'s folder and
/// checks what it wrote there.
pub fn run_in(script: &Script, layout: &Layout) -> Result<(), Finding> {
    let placed = Script {
        chunks: script.chunks.iter().map(|c| place(layout, c)).collect(),
    };
    serve(&placed)?;
    layout.check()
}

/// `chunk` with the layout's folder in place of the root: a whole framed
/// message is framed again for its new length; other bytes are replaced
/// as they are (a malformed chunk stays malformed).
fn place(layout: &Layout, chunk: &[u8]) -> Vec<u8> {
    if let Some(end) = chunk.windows(4).position(|w| w == b"\r\n\r\n") {
        let length = std::str::from_utf8(&chunk[..end]).ok().and_then(|header| {
            header
                .strip_prefix("Content-Length: ")
                .and_then(|n| n.trim().parse::<usize>().ok())
        });
        if length == Some(chunk.len() - end - 4) {
            return frame_raw(&layout.place(&chunk[end + 4..]));
        }
    }
    layout.place(chunk)
}

fn serve(script: &Script) -> Result<(), Finding> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .map_err(|e| Finding::property("lsp", format!("cannot start a runtime: {e}")))?;
    let result = runtime.block_on(session(script));
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

async fn session(script: &Script) -> Result<(), Finding> {
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let mut server_task = tokio::spawn(op2_lsp::serve(server_read, server_write));
    let (mut read, mut write) = tokio::io::split(client);
    let (to_write, mut writes) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        while let Some(chunk) = writes.recv().await {
            if write.write_all(&chunk).await.is_err() || write.flush().await.is_err() {
                break;
            }
        }
    });
    let (responses, mut answers) = mpsc::unbounded_channel::<Value>();
    let answer_requests = to_write.clone();
    let reader = tokio::spawn(async move {
        let mut buffer = Vec::new();
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            match read.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
            while let Some((message, used)) = parse_frame(&buffer) {
                buffer.drain(..used);
                if message.get("method").is_some() && message.get("id").is_some() {
                    // A request from the server: answer it.
                    let _ = answer_requests.send(frame(
                        &json!({"jsonrpc": "2.0", "id": message["id"], "result": null}),
                    ));
                } else {
                    let _ = responses.send(message);
                }
            }
        }
    });
    // As a client does, nothing after `initialize` before its answer: the
    // server rejects what comes sooner (`Server not initialized`) and drops
    // notifications, so a session sent at once would test little more than
    // that (before 2026-11-28 most sessions of the campaigns did). A script
    // whose first chunk is not an answered `initialize` goes on after a
    // while all the same.
    let mut chunks = script.chunks.iter();
    if let Some(first) = chunks.next() {
        let _ = to_write.send(first.clone());
        answer_to(&mut answers, 1, PATIENCE / 4, &mut server_task).await?;
    }
    for chunk in chunks {
        let _ = to_write.send(chunk.clone());
    }
    // The probe, sent a few times: a malformed length may have swallowed
    // the bytes that follow it.
    let mut answered = false;
    let mut logged_panic = None;
    'probe: for attempt in 0..4i64 {
        let id = 1_000_000 + attempt;
        let _ = to_write.send(frame(
            &json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/documentSymbol",
            "params": {"textDocument": {"uri": URI}}}),
        ));
        let deadline = tokio::time::Instant::now() + PATIENCE / 4;
        loop {
            tokio::select! {
                message = answers.recv() => {
                    let Some(message) = message else { break 'probe };
                    if message["method"] == "window/logMessage"
                        && message["params"]["type"] == 1
                        && message["params"]["message"].as_str().is_some_and(|m| m.contains("panic"))
                    {
                        logged_panic = message["params"]["message"].as_str().map(str::to_string);
                    }
                    if message["id"] == id {
                        answered = true;
                        break 'probe;
                    }
                }
                _ = tokio::time::sleep_until(deadline) => break,
                _ = &mut server_task => {
                    return Err(Finding::property("lsp", "the server stopped before `shutdown`"));
                }
            }
        }
    }
    if !answered {
        return Err(Finding::property(
            "lsp",
            format!(
                "the server did not answer a request within {} s",
                PATIENCE.as_secs()
            ),
        ));
    }
    if let Some(message) = logged_panic {
        return Err(Finding::property(
            "lsp",
            format!("the server logged a panic: {message}"),
        ));
    }
    let _ = to_write.send(frame(
        &json!({"jsonrpc": "2.0", "id": 2_000_000, "method": "shutdown", "params": null}),
    ));
    // `exit` after the answer to `shutdown`, as a client sends it: the
    // server lets its builds on save finish before it answers, and `exit`
    // would cancel that wait.
    if !answer_to(&mut answers, 2_000_000, PATIENCE, &mut server_task).await? {
        return Err(Finding::property(
            "lsp",
            format!(
                "the server did not answer `shutdown` within {} s",
                PATIENCE.as_secs()
            ),
        ));
    }
    let _ = to_write.send(frame(
        &json!({"jsonrpc": "2.0", "method": "exit", "params": null}),
    ));
    let stopped = tokio::time::timeout(PATIENCE, &mut server_task).await;
    writer.abort();
    reader.abort();
    match stopped {
        Ok(_) => Ok(()),
        Err(_) => {
            server_task.abort();
            Err(Finding::property(
                "lsp",
                "the server did not stop after `shutdown` and `exit`",
            ))
        }
    }
}

/// Waits for the server's answer to request `id`: whether it came within
/// `patience` (or the server's messages ended); the server stopping first is
/// a finding.
async fn answer_to<T>(
    answers: &mut mpsc::UnboundedReceiver<Value>,
    id: i64,
    patience: Duration,
    server: &mut tokio::task::JoinHandle<T>,
) -> Result<bool, Finding> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        tokio::select! {
            message = answers.recv() => match message {
                Some(message) if message["id"] == id => return Ok(true),
                Some(_) => {}
                None => return Ok(true),
            },
            () = tokio::time::sleep_until(deadline) => return Ok(false),
            _ = &mut *server => {
                return Err(Finding::property("lsp", "the server stopped before `exit`"));
            }
        }
    }
}

/// One `Content-Length` framed message at the start of `buffer` and the
/// bytes it used.
fn parse_frame(buffer: &[u8]) -> Option<(Value, usize)> {
    let end = buffer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let header = std::str::from_utf8(&buffer[..end]).ok()?;
    let length: usize = header
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))?
        .trim()
        .parse()
        .ok()?;
    let start = end + 4;
    if buffer.len() < start + length {
        return None;
    }
    let message = serde_json::from_slice(&buffer[start..start + length]).unwrap_or(Value::Null);
    Some((message, start + length))
}

/// The script as text: one chunk a line, `t ` and a JSON string when the
/// chunk is UTF-8, `x ` and hex otherwise.
pub fn to_text(script: &Script) -> String {
    let mut out = String::new();
    for chunk in &script.chunks {
        match std::str::from_utf8(chunk) {
            Ok(text) => {
                let _ = writeln!(out, "t {}", Value::String(text.to_string()));
            }
            Err(_) => {
                out.push_str("x ");
                for byte in chunk {
                    let _ = write!(out, "{byte:02x}");
                }
                out.push('\n');
            }
        }
    }
    out
}

/// Reads what [`to_text`] wrote.
pub fn from_text(text: &str) -> Result<Script, String> {
    let mut chunks = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(json) = line.strip_prefix("t ") {
            let Ok(Value::String(s)) = serde_json::from_str(json) else {
                return Err(format!("line {}: not a JSON string", n + 1));
            };
            chunks.push(s.into_bytes());
        } else if let Some(hex) = line.strip_prefix("x ") {
            let bytes: Result<Vec<u8>, _> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
                .collect();
            chunks.push(bytes.map_err(|_| format!("line {}: bad hex", n + 1))?);
        } else if !line.is_empty() {
            return Err(format!("line {}: expected `t ` or `x `", n + 1));
        }
    }
    Ok(Script { chunks })
}
