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
//! lost. A body whose bytes stop coming is waited for as long as they may
//! still be the start of a message, and answered as short once they cannot
//! (a Content-Length too long, and the client waiting for the answer). The
//! server's own messages pass through unchanged; one writer sends
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

/// How long a body may go without a byte before what has arrived of it is
/// looked at: it is taken to be shorter than its `Content-Length` said only
/// when that can no longer be the start of a message (see [`Stalled`]).
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
///
/// The bytes read wait in `buffer`, from the cursor `start` on. A frame is
/// taken by moving the cursor past it, and the bytes before the cursor are
/// dropped (the rest moved to the front) only when they are more than half
/// the buffer, so no byte is moved more than about once however many frames
/// the buffer holds: after a body longer than its value gives back up to
/// [`MESSAGE_LIMIT`] bytes, each frame in them cost a copy of all the
/// others, and 4 MiB of small frames took 13 s (review of 2026-11-29, F2).
struct Frames<R> {
    input: R,
    buffer: Vec<u8>,
    /// Where what is still to be read starts in `buffer`.
    start: usize,
    /// The body `next` returned last is the `taken` bytes before `start`.
    taken: usize,
    /// No header block's end starts in `buffer[start..searched]`: the
    /// search for one goes on from `searched` when more bytes arrive.
    searched: usize,
    /// The cursor is at what [`Frames::resync`] found after a framing
    /// error: its header block must start with a `Content-Length` header.
    found: bool,
    /// The input ended.
    ended: bool,
    /// The last thing read was an error already reported: garbage up to
    /// the next header is skipped silently.
    quiet: bool,
    /// How long an incomplete body may go without a byte before what has
    /// arrived of it is looked at (`None`: the server's own output, which
    /// is trusted).
    idle: Option<Duration>,
    /// The longest body taken: [`MESSAGE_LIMIT`] for the client's input;
    /// none for the server's own answers, whose size their handlers bound
    /// (one over the client's limit was dropped, and the relay stopped
    /// with it: the session answered nothing more).
    limit: usize,
    /// Bytes moved within the buffer and bytes searched so far: at most a
    /// few times the bytes read (the tests count it).
    work: usize,
}

/// One thing read.
enum Read {
    /// A body: [`Frames::body`].
    Body,
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

/// Where a header block ends.
enum HeaderEnd {
    /// At `block`, and its body starts at `body` (both from the cursor).
    At { block: usize, body: usize },
    /// Not within [`HEADER_LIMIT`] of the cursor.
    TooLong,
    /// Not in what has arrived yet.
    NotYet,
}

impl<R: AsyncRead + Unpin> Frames<R> {
    fn new(input: R, idle: Option<Duration>, limit: usize) -> Frames<R> {
        Frames {
            input,
            buffer: Vec::new(),
            start: 0,
            taken: 0,
            searched: 0,
            found: false,
            ended: false,
            quiet: false,
            idle,
            limit,
            work: 0,
        }
    }

    /// What is still to be read.
    fn pending(&self) -> &[u8] {
        &self.buffer[self.start..]
    }

    /// The body `next` returned last.
    fn body(&self) -> &[u8] {
        &self.buffer[self.start - self.taken..self.start]
    }

    /// Reads the last `count` bytes of the body `next` returned again.
    fn give_back(&mut self, count: usize) {
        let count = count.min(self.taken);
        self.start -= count;
        self.taken -= count;
        self.searched = self.start;
    }

    /// Drops what was read before the cursor once it is more than half the
    /// buffer: what is moved is less than what was dropped.
    fn compact(&mut self) {
        if self.start > self.buffer.len() / 2 {
            self.work += self.buffer.len() - self.start;
            self.buffer.drain(..self.start);
            self.searched = self.searched.saturating_sub(self.start);
            self.start = 0;
            self.taken = 0;
        }
    }

    /// Reads more bytes; false at the end of the input.
    async fn fill(&mut self) -> bool {
        if self.ended {
            return false;
        }
        self.compact();
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

    /// Finds the end of the header block at the cursor: the earliest
    /// `\r\n\r\n` or `\n\n`, looked for only within [`HEADER_LIMIT`] of the
    /// cursor and never twice at the same place. (A `\r\n\r\n` anywhere in
    /// the buffer was taken before a `\n\n` that came first, so a frame
    /// with `\n\n` followed in the same read by another was lost; and the
    /// whole buffer was searched at every frame.)
    fn header_end(&mut self) -> HeaderEnd {
        let last = self.start + HEADER_LIMIT;
        let mut at = self.searched.max(self.start);
        let from = at;
        let found = loop {
            if at > last {
                break HeaderEnd::TooLong;
            }
            let Some(rest) = self.buffer.get(at..).filter(|rest| !rest.is_empty()) else {
                break HeaderEnd::NotYet;
            };
            let end = [&b"\n\n"[..], b"\r\n\r\n"]
                .into_iter()
                .find(|end| rest.starts_with(end));
            if let Some(end) = end {
                break HeaderEnd::At {
                    block: at - self.start,
                    body: at + end.len() - self.start,
                };
            }
            if b"\n\n".starts_with(rest) || b"\r\n\r\n".starts_with(rest) {
                // The start of an end, perhaps: decided when more arrives.
                break HeaderEnd::NotYet;
            }
            at += 1;
        };
        self.work += at - from;
        self.searched = at;
        found
    }

    /// Moves the cursor to the next `content-length` at or after `from`
    /// bytes past it, or, when there is none, to a tail that may be the
    /// start of one; the bytes are searched once, however many there are.
    fn resync(&mut self, from: usize) {
        let from = (self.start + from).min(self.buffer.len());
        let rest = &self.buffer[from..];
        match find(rest, CONTENT_LENGTH) {
            Some(at) => {
                self.work += at + CONTENT_LENGTH.len();
                self.start = from + at;
            }
            None => {
                // Keep what may be the start of a header, but always drop
                // `from` bytes: every resync makes progress.
                self.work += rest.len();
                let keep = rest.len().min(CONTENT_LENGTH.len() - 1);
                self.start = self.buffer.len() - keep;
            }
        }
        self.found = true;
    }

    /// A framing error: reported unless one was just reported; the reader
    /// goes on at the next header `from` bytes or more past the cursor.
    fn framing_error(&mut self, message: String, from: usize) -> Option<Read> {
        self.resync(from.max(1));
        if std::mem::replace(&mut self.quiet, true) {
            return None;
        }
        Some(Read::Error(error(Value::Null, PARSE_ERROR, message)))
    }

    /// The next body or error.
    async fn next(&mut self) -> Read {
        self.taken = 0;
        loop {
            // Leading line breaks between messages are harmless.
            let skip = self
                .pending()
                .iter()
                .take_while(|b| matches!(b, b'\r' | b'\n'))
                .count();
            self.start += skip;
            let (block, body_start) = match self.header_end() {
                HeaderEnd::At { block, body } => (block, body),
                HeaderEnd::TooLong => {
                    if let Some(read) =
                        self.framing_error("parse error: invalid message header".into(), 1)
                    {
                        return read;
                    }
                    continue;
                }
                HeaderEnd::NotYet => {
                    if !self.fill().await {
                        return Read::End;
                    }
                    continue;
                }
            };
            let length = match parse_headers(&self.pending()[..block], self.found) {
                Ok(length) => length,
                Err(failed) => {
                    if let Some(read) =
                        self.framing_error(format!("parse error: {}", failed.why), failed.from)
                    {
                        return read;
                    }
                    continue;
                }
            };
            self.found = false;
            if length > self.limit {
                // Never buffered: what follows is skipped up to the next
                // header.
                self.start += body_start;
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
            // The body. A legal message may pause anywhere in it (the
            // client's event loop busy, a loaded machine), so silence alone
            // never cuts it short: a body paused for more than a second was
            // dropped, and with it an edit (review of 2026-11-29, F3). But
            // when nothing has arrived for `idle`, what has is looked at
            // once: if it can no longer be the start of a message (its JSON
            // value is complete, or broken), the Content-Length was longer
            // than the body, and the client may be waiting for the answer.
            let mut looked_at = 0;
            while self.pending().len() < body_start + length {
                let filled = match self.idle {
                    Some(idle) => tokio::time::timeout(idle, self.fill()).await,
                    None => Ok(self.fill().await),
                };
                let got = self.pending().len() - body_start;
                let short = match filled {
                    Ok(true) => continue,
                    Err(_) if got == looked_at => continue,
                    Err(_) => {
                        looked_at = got;
                        match stalled(&self.pending()[body_start..]) {
                            Stalled::Arriving => continue,
                            short @ Stalled::Short { .. } => short,
                        }
                    }
                    Ok(false) if got == 0 => return Read::End,
                    Ok(false) => stalled(&self.pending()[body_start..]),
                };
                let (id, end) = match short {
                    Stalled::Short { id, end } => (id, end),
                    Stalled::Arriving => (Value::Null, None),
                };
                // What follows a complete value may be the next message;
                // what follows a broken one is searched for a header.
                self.start += body_start + end.unwrap_or(0);
                self.resync(0);
                self.quiet = true;
                return Read::Error(short_body(id, got, length));
            }
            self.start += body_start + length;
            self.taken = length;
            self.quiet = false;
            return Read::Body;
        }
    }
}

/// What has arrived of a body that stopped arriving.
#[derive(Debug, PartialEq)]
enum Stalled {
    /// It may still be the start of a message: no JSON value ends in it
    /// and nothing in it is invalid yet, as with a legal message paused.
    Arriving,
    /// It cannot be: its JSON value is complete (its `id`, and where it
    /// ends) or broken (`end` is `None`).
    Short { id: Value, end: Option<usize> },
}

fn stalled(received: &[u8]) -> Stalled {
    let mut values = serde_json::Deserializer::from_slice(received).into_iter::<Value>();
    match values.next() {
        None => Stalled::Arriving,
        Some(Err(e)) if e.is_eof() => Stalled::Arriving,
        Some(Err(_)) => Stalled::Short {
            id: Value::Null,
            end: None,
        },
        Some(Ok(value)) => Stalled::Short {
            id: value
                .get("id")
                .filter(|id| usable_id(id))
                .cloned()
                .unwrap_or(Value::Null),
            end: Some(values.byte_offset()),
        },
    }
}

/// The error for a body of `got` bytes, shorter than its `Content-Length`.
fn short_body(id: Value, got: usize, length: usize) -> Verdict {
    error(
        id,
        PARSE_ERROR,
        format!(
            "parse error: the body is {got} bytes, shorter than its Content-Length of {length}"
        ),
    )
}

/// Why a header block is not one, and how far past its start the next
/// header may be.
#[derive(Debug, PartialEq)]
struct HeaderError {
    why: String,
    /// Every `content-length` before this offset starts a block that fails
    /// the same way (the line that failed is one of its lines), so the
    /// reader looks from here: trying each in turn parsed the same lines
    /// again for each.
    from: usize,
}

/// The `Content-Length` of a header block. When the block is one the
/// reader `found` after a framing error, its first line must be a
/// `Content-Length` header, read only as far as it can be one: several
/// `content-length` in a long line were each read to the line's end.
fn parse_headers(block: &[u8], found: bool) -> Result<usize, HeaderError> {
    let fail = |why: String, from: usize| Err(HeaderError { why, from });
    if found && !starts_with_length(block) {
        return fail("a header that is not Content-Length".into(), 1);
    }
    let mut length = None;
    let mut line_start = 0;
    // The lines as `str::lines` splits them.
    let lines = block.strip_suffix(b"\n").unwrap_or(block);
    for line in lines.split(|b| *b == b'\n').filter(|_| !block.is_empty()) {
        let from = line_start;
        line_start += line.len() + 1;
        let Ok(line) = std::str::from_utf8(line) else {
            return fail("a header that is not UTF-8".into(), from);
        };
        let line = line.trim_end_matches('\r');
        let Some((name, value)) = line.split_once(':') else {
            return fail(
                format!("invalid header line `{}`", line.escape_debug()),
                from,
            );
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            match value.parse::<usize>() {
                Ok(value) => length = Some(value),
                Err(_) => {
                    return fail(
                        format!("invalid Content-Length `{}`", value.escape_debug()),
                        from,
                    );
                }
            }
        }
    }
    match length {
        Some(length) => Ok(length),
        None => fail("a message without Content-Length".into(), 1),
    }
}

/// Whether `block` starts with `content-length`, blanks and `:`, and the
/// rest of that line holds nothing a number cannot: read up to the first
/// byte that rules it out.
fn starts_with_length(block: &[u8]) -> bool {
    let Some((name, rest)) = block.split_at_checked(CONTENT_LENGTH.len()) else {
        return false;
    };
    let mut rest = rest.iter().skip_while(|b| matches!(b, b' ' | b'\t'));
    name.eq_ignore_ascii_case(CONTENT_LENGTH)
        && rest.next() == Some(&b':')
        && rest
            .take_while(|b| **b != b'\n')
            .all(|b| b.is_ascii_digit() || b.is_ascii_whitespace() || *b == b'+')
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
        match frames.next().await {
            Read::End => return,
            Read::Error(verdict) => {
                if let Verdict::Reply(error) = verdict {
                    let _ = replies.send(frame(error.to_string().as_bytes())).await;
                }
                continue;
            }
            Read::Body => {}
        }
        let (verdict, rest) = judge_body(frames.body());
        if let Some(at) = rest {
            // Read again from the end of the value: no copy.
            frames.give_back(frames.body().len() - at);
            frames.resync(0);
        }
        // After a body that is not JSON (or is more than one value), what
        // follows up to the next header is the rest of it: skipped quietly.
        if matches!(&verdict, Verdict::Reply(e) if e["error"]["code"] == PARSE_ERROR) {
            frames.quiet = true;
        }
        match verdict {
            Verdict::Forward(control) => {
                if server.write_all(&frame(frames.body())).await.is_err()
                    || server.flush().await.is_err()
                {
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
            Read::Body => frame(frames.body()),
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
        assert_eq!(parse_headers(b"Content-Length: 12", false), Ok(12));
        assert_eq!(
            parse_headers(
                b"content-length: 3\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8",
                false
            ),
            Ok(3)
        );
        assert!(parse_headers(b"Content-Type: x", false).is_err());
        assert!(parse_headers(b"Content-Length: -1", false).is_err());
        assert!(parse_headers(b"garbage", false).is_err());
    }

    /// What a test read: a body, or the code of an error.
    type Taken = Result<Vec<u8>, Option<i64>>;

    /// Reads every frame of `input` as `read_client` does (what follows a
    /// body's value is read again): the bodies whose value fills them, the
    /// codes of the errors, in order, and the reader's work.
    fn read_all(input: &[u8]) -> (Vec<Taken>, usize) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut frames = Frames::new(input, None, MESSAGE_LIMIT);
        let mut read = Vec::new();
        loop {
            match runtime.block_on(frames.next()) {
                Read::End => return (read, frames.work),
                Read::Error(verdict) => read.push(Err(code(&verdict))),
                Read::Body => match judge_body(frames.body()) {
                    (verdict, Some(at)) => {
                        read.push(Err(code(&verdict)));
                        frames.give_back(frames.body().len() - at);
                        frames.resync(0);
                    }
                    (_, None) => read.push(Ok(frames.body().to_vec())),
                },
            }
        }
    }

    const NOTE: &[u8] = br#"{"jsonrpc":"2.0","method":"$/x"}"#;

    #[test]
    fn frames_in_a_body_given_back_are_read_in_linear_work() {
        // One body `{}` that holds 20,000 frames (1.1 MB): each frame in it
        // is read, and the reader moves and searches each byte a few times
        // at most (taking each frame copied all that followed it: 12 GB).
        let count = 20_000;
        let mut body = b"{}".to_vec();
        for _ in 0..count {
            body.extend(frame(NOTE));
        }
        let input = frame(&body);
        let (read, work) = read_all(&input);
        assert_eq!(read.len(), count + 1);
        assert_eq!(read[0], Err(Some(PARSE_ERROR)));
        assert!(read[1..].iter().all(|r| r.as_deref() == Ok(NOTE)));
        assert!(work <= 2 * input.len(), "{work} for {} bytes", input.len());
    }

    #[test]
    fn a_tail_of_content_lengths_without_a_header_end_is_searched_once() {
        // 70,000 `content-length` with no header end after a body's value:
        // the reader steps from each to the next, and the message after them
        // is read; each step searched the 8 KiB after it again.
        let mut body = b"{}".to_vec();
        for _ in 0..70_000 {
            body.extend(b"content-length ");
        }
        let mut input = frame(&body);
        input.extend(frame(NOTE));
        let (read, work) = read_all(&input);
        assert_eq!(read.first(), Some(&Err(Some(PARSE_ERROR))));
        assert_eq!(read.last(), Some(&Ok(NOTE.to_vec())));
        assert!(work <= 4 * input.len(), "{work} for {} bytes", input.len());
    }

    #[test]
    fn the_earliest_header_end_ends_the_header() {
        // A frame with `\n\n` then, in the same read, a frame with
        // `\r\n\r\n` (and one whose body holds `\r\n\r\n` as JSON white
        // space): every body is read (the `\r\n\r\n` was taken first, and
        // the first frame lost to "invalid header line").
        let spaced = b"{\"jsonrpc\":\r\n\r\n\"2.0\",\"method\":\"$/y\"}";
        let mut input = format!("Content-Length: {}\n\n", NOTE.len()).into_bytes();
        input.extend(NOTE);
        input.extend(frame(NOTE));
        input.extend(format!("Content-Length: {}\n\n", NOTE.len()).into_bytes());
        input.extend(NOTE);
        input.extend(frame(spaced));
        let (read, _) = read_all(&input);
        assert_eq!(
            read,
            [
                Ok(NOTE.to_vec()),
                Ok(NOTE.to_vec()),
                Ok(NOTE.to_vec()),
                Ok(spaced.to_vec())
            ]
        );
    }

    #[test]
    fn after_a_framing_error_the_next_content_length_header_is_found() {
        let mut input = b"garbage\r\nContent-Length: 2\r\n\r\n{}".to_vec();
        input.extend(b"x content-length content-length: 2\r\nX: y\r\n\r\n[]");
        input.extend(b"Content-Length: 2\r\nbad\r\ncontent-Length: 3\r\n\r\n[1]");
        input.extend(frame(NOTE));
        let (read, _) = read_all(&input);
        assert_eq!(
            read,
            [
                Err(Some(PARSE_ERROR)),
                Ok(b"{}".to_vec()),
                Err(Some(PARSE_ERROR)),
                Ok(b"[]".to_vec()),
                Err(Some(PARSE_ERROR)),
                Ok(b"[1]".to_vec()),
                Ok(NOTE.to_vec()),
            ]
        );
    }

    #[test]
    fn a_failed_header_is_searched_again_from_the_line_that_failed() {
        // Every `content-length` before the line that failed starts a block
        // with that line in it.
        let block =
            b"Content-Length: 2\r\ncontent-length: 3\r\ncontent-length: 4x content-length: 5";
        let failed = parse_headers(block, false).unwrap_err();
        assert_eq!(failed.from, 38, "{failed:?}");
        assert_eq!(parse_headers(&block[57..], true), Ok(5));
        // A block found after an error starts with a Content-Length header.
        assert!(parse_headers(b"content-lengths: 2\r\nContent-Length: 2", true).is_err());
        assert_eq!(parse_headers(b"content-length :+2 \r\nX: y", true), Ok(2));
    }

    #[test]
    fn a_stalled_body_is_short_only_when_it_cannot_be_a_message() {
        let message =
            br#"{"jsonrpc":"2.0","id":4,"method":"x","params":{"t":"\u00e9\ud83d\ude00 \u00e9"}}"#;
        // Every proper prefix of a message may be one still arriving...
        let text = "{\"jsonrpc\":\"2.0\",\"id\":4,\"params\":{\"t\":\"é😀\"}}";
        for bytes in [message.as_slice(), text.as_bytes()] {
            for end in 0..bytes.len() {
                assert_eq!(
                    stalled(&bytes[..end]),
                    Stalled::Arriving,
                    "{}",
                    String::from_utf8_lossy(&bytes[..end])
                );
            }
        }
        // ... a complete value is not, nor a broken one.
        assert_eq!(
            stalled(message),
            Stalled::Short {
                id: json!(4),
                end: Some(message.len())
            }
        );
        let mut next = message.to_vec();
        next.extend(frame(NOTE));
        assert_eq!(
            stalled(&next),
            Stalled::Short {
                id: json!(4),
                end: Some(message.len())
            }
        );
        assert_eq!(
            stalled(b"{\"a\":\"b\r\nContent-Length: 2\r\n\r\n{}"),
            Stalled::Short {
                id: Value::Null,
                end: None
            }
        );
    }

    /// Reads what `write` sends into a pipe, with the clock paused (it
    /// moves on only when every task waits): the bodies and error codes in
    /// order, as `read_all`.
    async fn read_paused<W, F>(write: W) -> Vec<Taken>
    where
        W: FnOnce(tokio::io::DuplexStream) -> F,
        F: Future<Output = ()> + Send + 'static,
    {
        let (client, input) = tokio::io::duplex(1 << 20);
        let writer = tokio::spawn(write(client));
        let mut frames = Frames::new(input, Some(BODY_IDLE), MESSAGE_LIMIT);
        let mut read = Vec::new();
        loop {
            match frames.next().await {
                Read::End => break,
                Read::Error(verdict) => read.push(Err(code(&verdict))),
                Read::Body => read.push(Ok(frames.body().to_vec())),
            }
        }
        writer.await.unwrap();
        read
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_paused_for_a_minute_is_read_whole() {
        // A message cut in three, with a minute without a byte between the
        // parts: read whole (it was dropped after a second).
        let message = frame(br#"{"jsonrpc":"2.0","method":"$/z","params":{"t":"abc"}}"#);
        let expected = message[message.len() - 53..].to_vec();
        let read = read_paused(|mut client| async move {
            for part in [&message[..30], &message[30..45], &message[45..]] {
                client.write_all(part).await.unwrap();
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
        })
        .await;
        assert_eq!(read, [Ok(expected)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_shorter_than_its_length_is_answered_when_the_client_waits() {
        // A Content-Length 40 bytes too long, and the client waits for the
        // answer: answered with the request's id; then a message after the
        // value, and the client waits again: the message is read too (it
        // was thrown away with the short body).
        let request = br#"{"jsonrpc":"2.0","id":6,"method":"x"}"#;
        let read = read_paused(|mut client| async move {
            let mut long = format!("Content-Length: {}\r\n\r\n", request.len() + 40).into_bytes();
            long.extend(request);
            client.write_all(&long).await.unwrap();
            tokio::time::sleep(Duration::from_secs(5)).await;
            let mut long = format!("Content-Length: {}\r\n\r\n", request.len() + 400).into_bytes();
            long.extend(request);
            long.extend(frame(NOTE));
            client.write_all(&long).await.unwrap();
            tokio::time::sleep(Duration::from_secs(5)).await;
        })
        .await;
        assert_eq!(
            read,
            [
                Err(Some(PARSE_ERROR)),
                Err(Some(PARSE_ERROR)),
                Ok(NOTE.to_vec())
            ]
        );
    }
}
