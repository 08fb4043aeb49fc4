//! The transport in front of tower-lsp-server: it reads the client's
//! `Content-Length` frames itself, checks that each is a well-formed JSON-RPC
//! message, answers a malformed one with the error the JSON-RPC
//! specification names, and hands only well-formed messages on, so that no
//! input ends the session.
//!
//! - Invalid JSON, text that is not UTF-8 (a lone surrogate escape
//!   included), a header block that is not one, or a body longer or shorter
//!   than its `Content-Length`: `-32700` (parse error).
//! - Valid JSON that is not a request, a notification or a response (`{}`,
//!   `null`, an array, a wrong `jsonrpc`, an `id` that is neither an integer
//!   nor a string, `params` that are neither an object nor an array), or a
//!   message over [`MESSAGE_LIMIT`]: `-32600` (invalid request), with the
//!   request's `id` when it has a usable one.
//! - A malformed notification (its params do not fit the method) or a
//!   malformed response gets no reply (the protocol forbids one) but a
//!   `window/logMessage`.
//!
//! After a framing error the reader finds the next `Content-Length` header
//! and goes on; a body that is longer than the JSON value it holds gives
//! back what follows the value, so a message after a wrong length is not
//! lost. The server's own messages pass through unchanged; one writer sends
//! whole frames, so an error never lands inside another message.
//!
//! The server's own output is read without the client's limits, and
//! nothing in it ends the relay before the server's output ends: the server
//! never goes mute while it runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tower_lsp_server::lsp_types::notification::{self as note, Notification};

/// The largest message body accepted, in bytes.
pub const MESSAGE_LIMIT: usize = 64 << 20;

/// The largest header block, in bytes.
const HEADER_LIMIT: usize = 8 << 10;

/// How long a body may stay incomplete without a byte arriving before it is
/// taken to be shorter than its `Content-Length` said.
const BODY_IDLE: Duration = Duration::from_secs(1);

/// JSON-RPC error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// How a session ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionEnd {
    /// The client asked for `shutdown` before the session ended.
    pub shutdown: bool,
    /// The client sent `exit`.
    pub exit: bool,
}

impl SessionEnd {
    /// The exit status the protocol asks for: 0 when `shutdown` came
    /// first, otherwise 1 (also when the input ended without `exit`).
    pub fn status(self) -> u8 {
        if self.shutdown { 0 } else { 1 }
    }
}

/// What to do with one body.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Hand it to the server (and note `shutdown` and `exit`).
    Forward(Control),
    /// Answer with this error frame's body.
    Reply(Value),
    /// Say this in the client's log, and nothing else.
    Log(String),
}

/// The messages that change how the session ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Control {
    /// Any other message.
    None,
    /// The `shutdown` request.
    Shutdown,
    /// The `exit` notification.
    Exit,
}

/// A JSON-RPC error response.
fn error(id: Value, code: i64, message: impl Into<String>) -> Verdict {
    Verdict::Reply(json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message.into()},
    }))
}

/// Whether `id` is an id the protocol allows (an integer or a string).
fn usable_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some()
}

/// The params of a notification the server handles fit its method.
fn check_params<N: Notification>(params: &Value) -> Result<(), String> {
    N::Params::deserialize(params)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn check_notification(method: &str, params: &Value) -> Result<(), String> {
    match method {
        note::Initialized::METHOD => check_params::<note::Initialized>(params),
        note::DidOpenTextDocument::METHOD => check_params::<note::DidOpenTextDocument>(params),
        note::DidChangeTextDocument::METHOD => check_params::<note::DidChangeTextDocument>(params),
        note::DidCloseTextDocument::METHOD => check_params::<note::DidCloseTextDocument>(params),
        note::DidSaveTextDocument::METHOD => check_params::<note::DidSaveTextDocument>(params),
        note::DidChangeConfiguration::METHOD => {
            check_params::<note::DidChangeConfiguration>(params)
        }
        note::DidChangeWatchedFiles::METHOD => check_params::<note::DidChangeWatchedFiles>(params),
        note::Cancel::METHOD => check_params::<note::Cancel>(params),
        note::SetTrace::METHOD => check_params::<note::SetTrace>(params),
        _ => Ok(()),
    }
}

/// Judges one parsed message.
fn judge(message: &Value) -> Verdict {
    let Some(object) = message.as_object() else {
        let what = match message {
            Value::Array(_) => "a batch (an array); batches are not supported",
            Value::Null => "`null`",
            _ => "not an object",
        };
        return error(
            Value::Null,
            INVALID_REQUEST,
            format!("invalid request: {what}"),
        );
    };
    let id = object.get("id");
    let reply_id = id
        .filter(|id| usable_id(id))
        .cloned()
        .unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return match object.get("method") {
            Some(_) if id.is_none() => {
                Verdict::Log("ignored a notification without `\"jsonrpc\": \"2.0\"`".into())
            }
            _ => error(
                reply_id,
                INVALID_REQUEST,
                "invalid request: `jsonrpc` must be \"2.0\"",
            ),
        };
    }
    match object.get("method") {
        Some(Value::String(method)) => {
            let params = object.get("params").unwrap_or(&Value::Null);
            let params_ok = matches!(params, Value::Object(_) | Value::Array(_) | Value::Null);
            match id {
                None => {
                    if !params_ok {
                        return Verdict::Log(format!(
                            "ignored the notification `{method}`: `params` must be an object or an array"
                        ));
                    }
                    match check_notification(method, params) {
                        Ok(()) if method == "exit" => Verdict::Forward(Control::Exit),
                        Ok(()) => Verdict::Forward(Control::None),
                        Err(why) => Verdict::Log(format!(
                            "ignored the notification `{method}`: invalid params: {why}"
                        )),
                    }
                }
                Some(id) if !usable_id(id) => error(
                    Value::Null,
                    INVALID_REQUEST,
                    "invalid request: `id` must be an integer or a string",
                ),
                Some(_) if !params_ok => error(
                    reply_id,
                    INVALID_REQUEST,
                    "invalid request: `params` must be an object or an array",
                ),
                Some(_) if method == "shutdown" => Verdict::Forward(Control::Shutdown),
                Some(_) => Verdict::Forward(Control::None),
            }
        }
        Some(_) => error(
            reply_id,
            INVALID_REQUEST,
            "invalid request: `method` must be a string",
        ),
        None if object.contains_key("result") || object.contains_key("error") => {
            // A response to one of the server's requests.
            let well_formed = id.is_some_and(|id| usable_id(id) || id.is_null())
                && (object.contains_key("result") != object.contains_key("error"))
                && object.get("error").is_none_or(|e| {
                    e.get("code").and_then(Value::as_i64).is_some()
                        && e.get("message").is_some_and(Value::is_string)
                });
            if well_formed {
                Verdict::Forward(Control::None)
            } else {
                Verdict::Log("ignored a malformed response".into())
            }
        }
        None => error(
            reply_id,
            INVALID_REQUEST,
            "invalid request: no `method`, `result` or `error`",
        ),
    }
}

/// Reads frames from the client's byte stream.
struct Frames<R> {
    input: R,
    buffer: Vec<u8>,
    /// The input ended.
    ended: bool,
    /// The last thing read was an error already reported: garbage up to
    /// the next header is skipped silently.
    quiet: bool,
    /// How long an incomplete body may wait for bytes (`None`: the
    /// server's own output, which is trusted).
    idle: Option<Duration>,
    /// The longest body taken: [`MESSAGE_LIMIT`] for the client's input;
    /// none for the server's own answers, whose size their handlers bound
    /// (one over the client's limit was dropped, and the relay stopped
    /// with it: the session answered nothing more).
    limit: usize,
}

/// One thing read.
enum Read {
    /// A body.
    Body(Vec<u8>),
    /// A framing error to report.
    Error(Verdict),
    /// The input ended.
    End,
}

/// Where `needle` starts in `haystack`, ignoring ASCII case.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

const CONTENT_LENGTH: &[u8] = b"content-length";

impl<R: AsyncRead + Unpin> Frames<R> {
    fn new(input: R, idle: Option<Duration>, limit: usize) -> Frames<R> {
        Frames {
            input,
            buffer: Vec::new(),
            ended: false,
            quiet: false,
            idle,
            limit,
        }
    }

    /// Reads more bytes; false at the end of the input.
    async fn fill(&mut self) -> bool {
        if self.ended {
            return false;
        }
        let mut chunk = [0u8; 1 << 16];
        match self.input.read(&mut chunk).await {
            Ok(0) | Err(_) => {
                self.ended = true;
                false
            }
            Ok(n) => {
                self.buffer.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// Drops everything before the next `Content-Length` header at or
    /// after `from` (keeping a tail that may be the start of one).
    fn resync(&mut self, from: usize) {
        let from = from.min(self.buffer.len());
        match find(&self.buffer[from..], CONTENT_LENGTH) {
            Some(at) => {
                self.buffer.drain(..from + at);
            }
            None => {
                // Keep what may be the start of a header, but always drop
                // `from` bytes: every resync makes progress.
                let keep = (self.buffer.len() - from).min(CONTENT_LENGTH.len() - 1);
                self.buffer.drain(..self.buffer.len() - keep);
            }
        }
    }

    /// A framing error: reported unless one was just reported.
    fn framing_error(&mut self, message: String) -> Option<Read> {
        // Past the header that failed.
        self.resync(1);
        if std::mem::replace(&mut self.quiet, true) {
            return None;
        }
        Some(Read::Error(error(Value::Null, PARSE_ERROR, message)))
    }

    /// The next body or error.
    async fn next(&mut self) -> Read {
        loop {
            // Leading line breaks between messages are harmless.
            let skip = self
                .buffer
                .iter()
                .take_while(|b| matches!(b, b'\r' | b'\n'))
                .count();
            self.buffer.drain(..skip);
            let end = find(&self.buffer, b"\r\n\r\n")
                .map(|at| (at, at + 4))
                .or_else(|| find(&self.buffer, b"\n\n").map(|at| (at, at + 2)));
            let Some((headers_end, body_start)) = end.filter(|(at, _)| *at <= HEADER_LIMIT) else {
                if self.buffer.len() > HEADER_LIMIT {
                    if let Some(read) =
                        self.framing_error("parse error: invalid message header".into())
                    {
                        return read;
                    }
                    continue;
                }
                if !self.fill().await {
                    return Read::End;
                }
                continue;
            };
            let length = match parse_headers(&self.buffer[..headers_end]) {
                Ok(length) => length,
                Err(why) => {
                    if let Some(read) = self.framing_error(format!("parse error: {why}")) {
                        return read;
                    }
                    continue;
                }
            };
            if length > self.limit {
                // Never buffered: what follows is skipped up to the next
                // header.
                self.buffer.drain(..body_start);
                self.resync(0);
                self.quiet = true;
                return Read::Error(error(
                    Value::Null,
                    INVALID_REQUEST,
                    format!(
                        "invalid request: the message is {length} bytes, over the limit of {MESSAGE_LIMIT} bytes"
                    ),
                ));
            }
            // The body: wait for it, but not forever when the length was
            // a lie and nothing more comes.
            while self.buffer.len() < body_start + length {
                let filled = match self.idle {
                    Some(idle) => tokio::time::timeout(idle, self.fill()).await,
                    None => Ok(self.fill().await),
                };
                match filled {
                    Ok(true) => {}
                    Ok(false) | Err(_) => {
                        let got = self.buffer.len() - body_start;
                        if got == 0 && self.ended {
                            return Read::End;
                        }
                        // Whatever arrived is judged as it is.
                        let body = self.buffer.split_off(body_start);
                        self.buffer.clear();
                        self.quiet = true;
                        return Read::Error(short_body(&body, length));
                    }
                }
            }
            let rest = self.buffer.split_off(body_start + length);
            let body = std::mem::replace(&mut self.buffer, rest).split_off(body_start);
            self.quiet = false;
            return Read::Body(body);
        }
    }

    /// Puts bytes back in front of what is still to be read.
    fn unread(&mut self, bytes: &[u8]) {
        let mut buffer = bytes.to_vec();
        buffer.append(&mut self.buffer);
        self.buffer = buffer;
    }
}

/// The error for a body shorter than its `Content-Length`.
fn short_body(body: &[u8], length: usize) -> Verdict {
    let id = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("id").filter(|id| usable_id(id)).cloned())
        .unwrap_or(Value::Null);
    error(
        id,
        PARSE_ERROR,
        format!(
            "parse error: the body is {} bytes, shorter than its Content-Length of {length}",
            body.len()
        ),
    )
}

/// The `Content-Length` of a header block.
fn parse_headers(block: &[u8]) -> Result<usize, String> {
    let text = std::str::from_utf8(block).map_err(|_| "a header that is not UTF-8")?;
    let mut length = None;
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("invalid header line `{}`", line.escape_debug()))?;
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| format!("invalid Content-Length `{}`", value.escape_debug()))?,
            );
        }
    }
    length.ok_or_else(|| "a message without Content-Length".into())
}

/// A frame for the client.
fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// A `window/logMessage` (error) for the client.
fn log_frame(message: &str) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0",
        "method": "window/logMessage",
        "params": {"type": 1, "message": format!("op2: {message}")},
    });
    frame(body.to_string().as_bytes())
}

/// Judges a body: its first JSON value, and whether bytes follow it.
fn judge_body(body: &[u8]) -> (Verdict, Option<usize>) {
    let mut values = serde_json::Deserializer::from_slice(body).into_iter::<Value>();
    match values.next() {
        Some(Ok(value)) => {
            let end = values.byte_offset();
            if body[end..].iter().all(u8::is_ascii_whitespace) {
                (judge(&value), None)
            } else {
                // Longer than the value: the Content-Length was wrong, and
                // what follows may be the next message.
                let id = value
                    .get("id")
                    .filter(|id| usable_id(id))
                    .cloned()
                    .unwrap_or(Value::Null);
                (
                    error(
                        id,
                        PARSE_ERROR,
                        format!(
                            "parse error: the body holds {} bytes after its JSON value; wrong Content-Length?",
                            body.len() - end
                        ),
                    ),
                    Some(end),
                )
            }
        }
        Some(Err(e)) => (
            error(Value::Null, PARSE_ERROR, format!("parse error: {e}")),
            None,
        ),
        None => (
            error(Value::Null, PARSE_ERROR, "parse error: an empty body"),
            None,
        ),
    }
}

/// Reads the client's messages, answers the malformed ones through
/// `replies`, forwards the others to the server, and stops after `exit` or
/// at the end of the input.
async fn read_client<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    input: R,
    mut server: W,
    replies: mpsc::Sender<Vec<u8>>,
    end: &mut SessionEnd,
) {
    let mut frames = Frames::new(input, Some(BODY_IDLE), MESSAGE_LIMIT);
    loop {
        let body = match frames.next().await {
            Read::End => return,
            Read::Error(verdict) => {
                if let Verdict::Reply(error) = verdict {
                    let _ = replies.send(frame(error.to_string().as_bytes())).await;
                }
                continue;
            }
            Read::Body(body) => body,
        };
        let (verdict, rest) = judge_body(&body);
        if let Some(at) = rest {
            frames.unread(&body[at..]);
            frames.resync(0);
        }
        // After a body that is not JSON (or is more than one value), what
        // follows up to the next header is the rest of it: skipped quietly.
        if matches!(&verdict, Verdict::Reply(e) if e["error"]["code"] == PARSE_ERROR) {
            frames.quiet = true;
        }
        match verdict {
            Verdict::Forward(control) => {
                if server.write_all(&frame(&body)).await.is_err() || server.flush().await.is_err() {
                    return;
                }
                match control {
                    Control::Shutdown => end.shutdown = true,
                    Control::Exit => {
                        end.exit = true;
                        return;
                    }
                    Control::None => {}
                }
            }
            Verdict::Reply(error) => {
                let _ = replies.send(frame(error.to_string().as_bytes())).await;
            }
            Verdict::Log(message) => {
                let _ = replies.send(log_frame(&message)).await;
            }
        }
    }
}

/// Copies the server's frames, whole, to the writer, until the server's
/// output ends. Nothing the server writes ends the relay: a framing error
/// (tower-lsp writes none) is logged, to the client and on standard error,
/// and skipped; when the writer is gone (the client left) the server's
/// output is still drained, so that the server never blocks writing.
async fn relay_server<R: AsyncRead + Unpin>(server: R, out: mpsc::Sender<Vec<u8>>) {
    let mut frames = Frames::new(server, None, usize::MAX);
    let mut writer_gone = false;
    loop {
        let frame = match frames.next().await {
            Read::End => return,
            Read::Error(verdict) => {
                let message = format!("skipped a malformed message of the server: {verdict:?}");
                stderr(&message);
                log_frame(&message)
            }
            Read::Body(body) => frame(&body),
        };
        if !writer_gone && out.send(frame).await.is_err() {
            writer_gone = true;
        }
    }
}

/// Says `message` on standard error too: what the server failed to send
/// may be what the client needed to hear of it.
#[allow(clippy::print_stderr)]
fn stderr(message: &str) {
    eprintln!("op2 lsp: {message}");
}

/// Writes whole frames to the client.
async fn write_client<O: AsyncWrite>(output: O, mut frames: mpsc::Receiver<Vec<u8>>) {
    let mut output = std::pin::pin!(output);
    while let Some(frame) = frames.recv().await {
        if output.write_all(&frame).await.is_err() || output.flush().await.is_err() {
            // The client is gone: keep draining so nobody blocks.
            while frames.recv().await.is_some() {}
            return;
        }
    }
}

/// How many of the client's messages tower-lsp-server runs at a time.
/// Past this many it reads no further message until one ends, and a
/// request on a document waits for that document's parse and analysis
/// (the watchdog's 20 s, or the parse's worst case on top): with its
/// default of 4, the few requests an editor sends about a document it
/// opens (symbols, folding ranges, tokens, lenses) held up, while that
/// document was slow, every other message: edits, requests on the other
/// documents, and the `$/cancelRequest` that would have freed them. A
/// message running costs its future and its parameters, which tower-lsp
/// also keeps for the 100 messages it queues before these.
pub const MESSAGES_RUNNING: usize = 128;

/// Serves `service` (tower-lsp-server's) on `input` and `output` through
/// this transport; returns how the session ended.
pub async fn serve_checked<I, O, S>(
    input: I,
    output: O,
    service: tower_lsp_server::LspService<S>,
    socket: tower_lsp_server::ClientSocket,
) -> SessionEnd
where
    I: AsyncRead + Unpin,
    O: AsyncWrite,
    S: tower_lsp_server::LanguageServer,
{
    let (to_server, server_input) = tokio::io::duplex(1 << 16);
    let (server_output, from_server) = tokio::io::duplex(1 << 16);
    let (frames_tx, frames_rx) = mpsc::channel(64);
    let server_done = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(tokio::sync::Notify::new());
    let mut end = SessionEnd::default();
    let server = {
        let server_done = Arc::clone(&server_done);
        let stop = Arc::clone(&stop);
        async move {
            tower_lsp_server::Server::new(server_input, server_output, socket)
                .concurrency_level(MESSAGES_RUNNING)
                .serve(service)
                .await;
            server_done.store(true, Ordering::SeqCst);
            stop.notify_one();
        }
    };
    let reader = {
        let replies = frames_tx.clone();
        let end = &mut end;
        async move {
            tokio::select! {
                () = read_client(input, to_server, replies, end) => {}
                () = stop.notified() => {}
            }
        }
    };
    let relay = relay_server(from_server, frames_tx);
    tokio::join!(server, reader, relay, write_client(output, frames_rx));
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(verdict: &Verdict) -> Option<i64> {
        match verdict {
            Verdict::Reply(error) => error["error"]["code"].as_i64(),
            _ => None,
        }
    }

    #[test]
    fn judges_bodies_as_the_specification_names() {
        let cases: &[(&[u8], Option<i64>)] = &[
            (b"{", Some(PARSE_ERROR)),
            (b"not json", Some(PARSE_ERROR)),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"hover","params":{"a":"\ud800"}}"#,
                Some(PARSE_ERROR),
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"h\xff\"}",
                Some(PARSE_ERROR),
            ),
            (b"", Some(PARSE_ERROR)),
            (b"{}", Some(INVALID_REQUEST)),
            (b"null", Some(INVALID_REQUEST)),
            (b"[]", Some(INVALID_REQUEST)),
            (b"42", Some(INVALID_REQUEST)),
            (
                br#"{"jsonrpc":"1.0","id":1,"method":"hover"}"#,
                Some(INVALID_REQUEST),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"hover"}"#,
                Some(INVALID_REQUEST),
            ),
            (
                br#"{"jsonrpc":"2.0","id":{},"method":"hover"}"#,
                Some(INVALID_REQUEST),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":7}"#,
                Some(INVALID_REQUEST),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"hover","params":3}"#,
                Some(INVALID_REQUEST),
            ),
            (br#"{"jsonrpc":"2.0","id":1}"#, Some(INVALID_REQUEST)),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"hover","params":{}}"#,
                None,
            ),
            (
                br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
                None,
            ),
            (br#"{"jsonrpc":"2.0","id":"a","result":null}"#, None),
        ];
        for (body, expected) in cases {
            let (verdict, rest) = judge_body(body);
            assert_eq!(
                code(&verdict),
                *expected,
                "{}: {verdict:?}",
                String::from_utf8_lossy(body)
            );
            assert!(rest.is_none());
        }
        // The id of a request is kept in its error when it is usable.
        let (verdict, _) = judge_body(br#"{"jsonrpc":"2.0","id":7,"method":"hover","params":1}"#);
        assert!(
            matches!(verdict, Verdict::Reply(ref e) if e["id"] == 7),
            "{verdict:?}"
        );
    }

    #[test]
    fn malformed_notifications_and_responses_are_logged_not_answered() {
        for body in [
            br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{}}"#.as_slice(),
            br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":[1]}"#,
            br#"{"jsonrpc":"2.0","method":"initialized","params":7}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}"#,
            br#"{"method":"exit"}"#,
        ] {
            let (verdict, _) = judge_body(body);
            assert!(
                matches!(verdict, Verdict::Log(_)),
                "{}: {verdict:?}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn a_body_longer_than_its_value_gives_back_the_rest() {
        let body = br#"{"jsonrpc":"2.0","id":3,"method":"hover"}Content-Length: 2"#;
        let (verdict, rest) = judge_body(body);
        assert_eq!(code(&verdict), Some(PARSE_ERROR));
        assert!(matches!(verdict, Verdict::Reply(ref e) if e["id"] == 3));
        assert_eq!(&body[rest.unwrap()..], b"Content-Length: 2");
    }

    #[test]
    fn the_servers_answers_are_relayed_whatever_their_length() {
        // An answer one byte over the client's limit, then a small one: both
        // reach the client (before, the relay stopped at the first).
        let long = vec![b' '; MESSAGE_LIMIT + 1];
        let mut input = frame(&long);
        input.extend(frame(b"{}"));
        let (sender, mut receiver) = mpsc::channel(4);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(relay_server(&input[..], sender));
        let lengths: Vec<usize> = std::iter::from_fn(|| receiver.try_recv().ok())
            .map(|f| f.len())
            .collect();
        assert_eq!(lengths, [frame(&long).len(), frame(b"{}").len()]);
        // The client's own messages keep their limit.
        let mut frames = Frames::new(&input[..], None, MESSAGE_LIMIT);
        match runtime.block_on(frames.next()) {
            Read::Error(verdict) => assert_eq!(code(&verdict), Some(INVALID_REQUEST)),
            _ => panic!("a body over the limit was taken from the client"),
        }
    }

    #[tokio::test]
    async fn the_relay_skips_malformed_frames_of_the_server() {
        let (mut server, from_server) = tokio::io::duplex(1 << 10);
        let (out, mut sent) = mpsc::channel(4);
        let relay = tokio::spawn(relay_server(from_server, out));
        server
            .write_all(b"Content-Length: nope\r\n\r\n{}")
            .await
            .unwrap();
        server.write_all(&frame(br#"{"id":1}"#)).await.unwrap();
        drop(server);
        let log = sent.recv().await.unwrap();
        assert!(
            String::from_utf8_lossy(&log).contains("skipped a malformed message of the server"),
            "{}",
            String::from_utf8_lossy(&log)
        );
        assert_eq!(sent.recv().await.unwrap(), frame(br#"{"id":1}"#));
        assert!(sent.recv().await.is_none());
        relay.await.unwrap();
    }

    #[tokio::test]
    async fn the_relay_drains_the_server_when_the_client_is_gone() {
        // Many more frames than the channel and the pipe hold: with the
        // receiver gone the relay still reads them all, so the server
        // never blocks writing.
        let (mut server, from_server) = tokio::io::duplex(1 << 10);
        let (out, sent) = mpsc::channel(1);
        drop(sent);
        let relay = tokio::spawn(relay_server(from_server, out));
        let written = async {
            for _ in 0..1000 {
                server.write_all(&frame(br#"{"id":1}"#)).await.unwrap();
            }
        };
        // Only a guard against a hang: writing takes milliseconds.
        tokio::time::timeout(Duration::from_secs(60), written)
            .await
            .expect("the server's writes are never blocked");
        drop(server);
        relay.await.unwrap();
    }

    #[test]
    fn headers_need_a_content_length() {
        assert_eq!(parse_headers(b"Content-Length: 12"), Ok(12));
        assert_eq!(
            parse_headers(
                b"content-length: 3\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8"
            ),
            Ok(3)
        );
        assert!(parse_headers(b"Content-Type: x").is_err());
        assert!(parse_headers(b"Content-Length: -1").is_err());
        assert!(parse_headers(b"garbage").is_err());
    }
}
