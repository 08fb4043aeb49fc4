//! A small JSON-RPC client for end-to-end tests of the language server over
//! its real transport: `Content-Length` framed messages over an in-memory
//! duplex to `op2_lsp::serve_with`, or over the stdio of the `op2 lsp` binary.
//!
//! The client answers every request the server sends it (progress creation,
//! inlay hint refresh, …) with a `null` result unless told not to, keeps every
//! notification and server request it receives in arrival order, and never
//! waits without a deadline: a wait that times out fails the test with what
//! was received so far.

#![allow(dead_code, clippy::print_stderr)]

pub mod text;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use text::Encoding;

/// How long any single wait may take before the test fails. Generous:
/// debug builds analyse slowly and CI machines are shared; a hang still
/// fails instead of blocking the suite.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// What the client writes: a message, framed on the way out, or raw bytes.
#[derive(Debug)]
enum Outgoing {
    Message(Value),
    Raw(Vec<u8>),
}

/// One client session with a server.
#[derive(Debug)]
pub struct Session {
    outgoing: mpsc::UnboundedSender<Outgoing>,
    incoming: mpsc::UnboundedReceiver<(Instant, Value)>,
    next_id: i64,
    /// Every notification and request from the server, in arrival order.
    pub received: Vec<Value>,
    /// When each of `received` was read from the transport.
    pub received_at: Vec<Instant>,
    responses: HashMap<i64, Value>,
    answer_requests: Arc<AtomicBool>,
    server: Option<JoinHandle<()>>,
    child: Option<tokio::process::Child>,
    tasks: Vec<JoinHandle<()>>,
    /// The encoding the server chose in `initialize`.
    pub encoding: Encoding,
}

/// The `op2` binary built in this workspace (`cargo build -p op2-cli`), if
/// it exists.
pub fn binary() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let path = target
        .join("debug")
        .join(if cfg!(windows) { "op2.exe" } else { "op2" });
    path.exists().then_some(path)
}

impl Session {
    /// A session with a server running in this process over an in-memory
    /// duplex, with the default options (no test hooks, the watchdog's
    /// production limit).
    pub fn in_process() -> Session {
        Session::in_process_with(op2_lsp::Options::default())
    }

    /// A session with a server running in this process with `options`,
    /// which are that server's alone: the other servers of the test binary
    /// keep theirs.
    pub fn in_process_with(options: op2_lsp::Options) -> Session {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_end);
        let server = tokio::spawn(async move {
            op2_lsp::serve_with(server_read, server_write, options).await;
        });
        let (read, write) = tokio::io::split(client_end);
        let mut session = Session::over(read, write);
        session.server = Some(server);
        session
    }

    /// A session with `op2 lsp` run as a child process, with `env` added to
    /// its environment: the variables of its test options
    /// (`op2_lsp::Options::from_env`) are removed first, so that it has only
    /// those `env` gives it. `None` (and a loud message) when the binary is
    /// not built.
    pub fn binary(env: &[(&str, &str)]) -> Option<Session> {
        let Some(path) = binary() else {
            eprintln!(
                "SKIPPED: the `op2` binary is not built (run `cargo build -p op2-cli`); \
                 the stdio session test did not run"
            );
            return None;
        };
        let mut command = tokio::process::Command::new(&path);
        command
            .arg("lsp")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true);
        command
            .env_remove("OP2_LSP_TEST_PANIC")
            .env_remove("OP2_LSP_ANALYSIS_LIMIT_MS");
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{} lsp`: {e}", path.display()));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut session = Session::over(stdout, stdin);
        session.child = Some(child);
        Some(session)
    }

    /// A session over any transport: `read` carries the server's messages,
    /// `write` the client's.
    pub fn over<R, W>(read: R, write: W) -> Session
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (outgoing, mut to_write) = mpsc::unbounded_channel::<Outgoing>();
        let (deliver, incoming) = mpsc::unbounded_channel::<(Instant, Value)>();
        let answer_requests = Arc::new(AtomicBool::new(true));

        let writer = tokio::spawn(async move {
            let mut write = write;
            while let Some(message) = to_write.recv().await {
                let bytes = match message {
                    Outgoing::Message(message) => {
                        let body = serde_json::to_vec(&message).expect("serialisable message");
                        let mut bytes =
                            format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
                        bytes.extend_from_slice(&body);
                        bytes
                    }
                    Outgoing::Raw(bytes) => bytes,
                };
                if write.write_all(&bytes).await.is_err() {
                    return;
                }
                if write.flush().await.is_err() {
                    return;
                }
            }
        });

        let answer = Arc::clone(&answer_requests);
        let reply = outgoing.clone();
        let reader = tokio::spawn(async move {
            let mut read = BufReader::new(read);
            loop {
                let message = match read_message(&mut read).await {
                    Ok(Some(message)) => message,
                    Ok(None) => return,
                    Err(error) => panic!("malformed message from the server: {error}"),
                };
                // A request from the server: answer it at once, so that a
                // server awaiting its client never waits on the test.
                if let (Some(_), Some(id)) = (message.get("method"), message.get("id"))
                    && answer.load(Ordering::SeqCst)
                {
                    let _ = reply.send(Outgoing::Message(
                        json!({"jsonrpc": "2.0", "id": id, "result": null}),
                    ));
                }
                if deliver.send((Instant::now(), message)).is_err() {
                    return;
                }
            }
        });

        Session {
            outgoing,
            incoming,
            next_id: 1,
            received: Vec::new(),
            received_at: Vec::new(),
            responses: HashMap::new(),
            answer_requests,
            server: None,
            child: None,
            tasks: vec![writer, reader],
            encoding: Encoding::Utf16,
        }
    }

    /// Whether requests from the server are answered (they are unless this
    /// is turned off, to test that the server never waits on its client).
    pub fn answer_server_requests(&self, answer: bool) {
        self.answer_requests.store(answer, Ordering::SeqCst);
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn send(&mut self, message: Value) {
        self.outgoing
            .send(Outgoing::Message(message))
            .expect("the client's writer is running");
    }

    /// Sends bytes as they are (headers included), in order with the
    /// messages sent before and after.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.outgoing
            .send(Outgoing::Raw(bytes.to_vec()))
            .expect("the client's writer is running");
    }

    /// Sends a request and waits for its answer: `Ok(result)` or
    /// `Err(error object)`.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.send_request(method, params);
        self.response(id, method).await
    }

    /// Sends a request and returns its result, failing the test on an error
    /// response.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        match self.request(method, params).await {
            Ok(result) => result,
            Err(error) => panic!("`{method}` answered with an error: {error}"),
        }
    }

    /// Waits for the answer to request `id`.
    pub async fn response(&mut self, id: i64, what: &str) -> Result<Value, Value> {
        loop {
            if let Some(response) = self.responses.remove(&id) {
                return match response.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(response.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            self.receive(&format!("the answer to `{what}` (id {id})"))
                .await;
        }
    }

    /// Receives one message (waiting at most [`TIMEOUT`]).
    async fn receive(&mut self, what: &str) {
        match tokio::time::timeout(TIMEOUT, self.incoming.recv()).await {
            Ok(Some((at, message))) => self.file(at, message),
            Ok(None) => panic!(
                "the server closed the connection while the test waited for {what}; received:\n{}",
                self.tail()
            ),
            Err(_) => panic!(
                "timed out after {TIMEOUT:?} waiting for {what}; received:\n{}",
                self.tail()
            ),
        }
    }

    /// Files what has arrived and returns how many messages were received,
    /// for [`Session::wait_for_after`].
    pub fn mark(&mut self) -> usize {
        self.drain();
        self.received.len()
    }

    /// Files every message that has already arrived, without waiting.
    pub fn drain(&mut self) {
        while let Ok((at, message)) = self.incoming.try_recv() {
            self.file(at, message);
        }
    }

    fn file(&mut self, at: Instant, message: Value) {
        let is_response = message.get("method").is_none();
        match (is_response, message.get("id").and_then(Value::as_i64)) {
            (true, Some(id)) => {
                self.responses.insert(id, message);
            }
            _ => {
                self.received.push(message);
                self.received_at.push(at);
            }
        }
    }

    /// Files whatever arrives until `deadline`.
    pub async fn pump(&mut self, deadline: Instant) {
        while let Ok(Some((at, message))) =
            tokio::time::timeout_at(deadline.into(), self.incoming.recv()).await
        {
            self.file(at, message);
        }
    }

    /// Forgets the messages received so far (long sessions).
    pub fn forget(&mut self) {
        self.received.clear();
        self.received_at.clear();
    }

    /// The last messages received, for failure messages.
    pub fn tail(&self) -> String {
        let start = self.received.len().saturating_sub(8);
        self.received[start..]
            .iter()
            .map(|m| format!("  {}\n", abbreviate(m)))
            .collect()
    }

    /// Waits until a received notification or server request satisfies
    /// `matches` (including those already received) and returns it.
    pub async fn wait_for(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_after(0, what, matches).await
    }

    /// Like [`Session::wait_for`], but only messages received after the
    /// first `from` count (`from` is `received.len()` taken earlier).
    pub async fn wait_for_after(
        &mut self,
        from: usize,
        what: &str,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        let mut seen = from;
        loop {
            if let Some(found) = self.received[seen..].iter().find(|m| matches(m)) {
                return found.clone();
            }
            seen = self.received.len();
            self.receive(what).await;
        }
    }

    /// Waits for diagnostics of `uri` published for `version`, and returns
    /// them (the `diagnostics` array).
    pub async fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let published = self
            .wait_for(&format!("diagnostics of {uri} version {version}"), |m| {
                m["method"] == "textDocument/publishDiagnostics"
                    && m["params"]["uri"] == uri
                    && m["params"]["version"] == version
            })
            .await;
        published["params"]["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Every `publishDiagnostics` received so far for `uri`, in order.
    pub fn published(&self, uri: &str) -> Vec<Value> {
        self.received
            .iter()
            .filter(|m| {
                m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
            })
            .map(|m| m["params"].clone())
            .collect()
    }

    /// `window/logMessage` texts received so far.
    pub fn log_messages(&self) -> Vec<String> {
        self.received
            .iter()
            .filter(|m| m["method"] == "window/logMessage")
            .filter_map(|m| m["params"]["message"].as_str().map(str::to_owned))
            .collect()
    }

    /// Waits until nothing has arrived for `quiet` (at most ten times that
    /// in all), so that background work of the server has settled.
    pub async fn settle(&mut self, quiet: Duration) {
        for _ in 0..10 {
            match tokio::time::timeout(quiet, self.incoming.recv()).await {
                Ok(Some((at, message))) => self.file(at, message),
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// `initialize` with the given capabilities and options, then
    /// `initialized`. Returns the result of `initialize`.
    pub async fn initialize_with(&mut self, params: Value) -> Value {
        let result = self.call("initialize", params).await;
        self.encoding = match result["capabilities"]["positionEncoding"].as_str() {
            Some("utf-8") => Encoding::Utf8,
            Some("utf-16") | None => Encoding::Utf16,
            Some(other) => panic!("the server chose an encoding the client did not offer: {other}"),
        };
        self.notify("initialized", json!({}));
        result
    }

    /// `initialize` offering `encodings` (none: the field is left out, as
    /// VS Code does), with a workspace folder when given.
    pub async fn initialize(
        &mut self,
        encodings: &[&str],
        workspace: Option<&Path>,
        options: Option<Value>,
    ) -> Value {
        let mut capabilities = json!({
            "window": {"workDoneProgress": true},
            "workspace": {"configuration": true, "inlayHint": {"refreshSupport": true}},
            "textDocument": {"publishDiagnostics": {"relatedInformation": true, "versionSupport": true, "codeDescriptionSupport": true}},
        });
        if !encodings.is_empty() {
            capabilities["general"] = json!({"positionEncodings": encodings});
        }
        let mut params = json!({"processId": null, "rootUri": null, "capabilities": capabilities});
        if let Some(folder) = workspace {
            let uri = file_uri(folder);
            params["rootUri"] = json!(uri);
            params["workspaceFolders"] = json!([{"uri": uri, "name": "workspace"}]);
        }
        if let Some(options) = options {
            params["initializationOptions"] = options;
        }
        self.initialize_with(params).await
    }

    /// `textDocument/didOpen`.
    pub fn did_open(&mut self, uri: &str, text: &str, version: i64) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "op2", "version": version, "text": text}}),
        );
    }

    /// `textDocument/didChange` with incremental changes (in order).
    pub fn did_change(&mut self, uri: &str, version: i64, changes: Vec<Value>) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
        );
    }

    /// `exit` with no `shutdown` before it, to a server run as a child
    /// process; its exit status once it has stopped.
    pub async fn exit_at_once(mut self) -> std::process::ExitStatus {
        self.notify("exit", Value::Null);
        let mut child = self.child.take().expect("a server run as a child process");
        match tokio::time::timeout(TIMEOUT, child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(error)) => panic!("waiting for `op2 lsp`: {error}"),
            Err(_) => panic!("`op2 lsp` did not exit after `exit`"),
        }
    }

    /// `shutdown` then `exit`, and waits for the server to stop.
    pub async fn shutdown(mut self) {
        let answer = self.request("shutdown", Value::Null).await;
        assert!(answer.is_ok(), "shutdown failed: {answer:?}");
        self.notify("exit", Value::Null);
        if let Some(server) = self.server.take() {
            match tokio::time::timeout(TIMEOUT, server).await {
                Ok(result) => result.expect("the server task ends without panicking"),
                Err(_) => panic!("the server did not stop after `exit`"),
            }
        }
        if let Some(mut child) = self.child.take() {
            let status = tokio::time::timeout(TIMEOUT, child.wait()).await;
            match status {
                Ok(Ok(status)) => assert!(status.success(), "`op2 lsp` exited with {status}"),
                Ok(Err(error)) => panic!("waiting for `op2 lsp`: {error}"),
                Err(_) => panic!("`op2 lsp` did not exit after `exit`"),
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        if let Some(server) = &self.server {
            server.abort();
        }
    }
}

/// Reads one framed message; `None` at the end of the stream.
async fn read_message<R: AsyncRead + Unpin>(
    read: &mut BufReader<R>,
) -> Result<Option<Value>, String> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        let n = read.read_line(&mut line).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Ok(None);
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        if let Some(value) = header.strip_prefix("Content-Length:") {
            length = Some(
                value
                    .trim()
                    .parse::<usize>()
                    .map_err(|e| format!("bad Content-Length `{header}`: {e}"))?,
            );
        }
    }
    let length = length.ok_or("a message without Content-Length")?;
    let mut body = vec![0; length];
    read.read_exact(&mut body)
        .await
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| format!("invalid JSON body: {e}"))
}

/// A message shortened for failure output.
pub fn abbreviate(message: &Value) -> String {
    if message["method"] == "textDocument/publishDiagnostics" {
        let params = &message["params"];
        return format!(
            "publishDiagnostics {} version {} ({} diagnostics)",
            params["uri"],
            params["version"],
            params["diagnostics"].as_array().map_or(0, Vec::len)
        );
    }
    let text = message.to_string();
    if text.len() > 300 {
        let mut end = 300;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &text[..end])
    } else {
        text
    }
}

/// The `file:` URI of an absolute path (percent-encoding what needs it).
pub fn file_uri(path: &Path) -> String {
    let text = path.to_str().expect("a UTF-8 path");
    let mut uri = String::from("file://");
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(byte as char)
            }
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

/// The text of an example program in `docs/examples`.
pub fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `text` without its `//` comments (a line that held only a comment stays,
/// empty), so that every character of it shows in the server's answers:
/// the tests that compare the server's view of a text with the client's
/// use it, since no LSP request reads a comment back.
pub fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (content, end) = match line.strip_suffix('\n') {
            Some(content) => (content, "\n"),
            None => (line, ""),
        };
        let mut in_string = false;
        let mut cut = content.len();
        let bytes = content.as_bytes();
        for i in 0..bytes.len() {
            match bytes[i] {
                b'"' if i == 0 || bytes[i - 1] != b'\\' => in_string = !in_string,
                b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => {
                    cut = i;
                    break;
                }
                _ => {}
            }
        }
        out.push_str(content[..cut].trim_end());
        out.push_str(end);
    }
    out
}

/// What the server must publish for `text`: the diagnostics of a fresh
/// analysis of the client's text, computed in this process with the same
/// functions, as JSON.
pub fn expected_diagnostics(
    text: &str,
    uri: &str,
    encoding: Encoding,
    path: Option<&Path>,
) -> Vec<Value> {
    use op2_lsp::documents::{Document, PositionEncoding};
    let document = Document::new(text, 0);
    let analyser = std::sync::Mutex::default();
    let analysed = op2_lsp::world::analyse(
        document,
        path.map(Path::to_path_buf),
        &analyser,
        &op2_lsp::world::Overlay::default(),
    );
    let encoding = match encoding {
        Encoding::Utf8 => PositionEncoding::Utf8,
        Encoding::Utf16 => PositionEncoding::Utf16,
    };
    let uri = uri.parse().expect("a valid URI");
    let diagnostics = op2_lsp::handlers::diagnostics::to_lsp(&analysed, &uri, encoding);
    diagnostics
        .into_iter()
        .map(|d| serde_json::to_value(d).expect("serialisable"))
        .collect()
}

/// Requests whose answers show where every token of the text is: the
/// client's check that the server holds the text it holds.
pub const VIEWS: [&str; 3] = [
    "textDocument/documentSymbol",
    "textDocument/foldingRange",
    "textDocument/semanticTokens/full",
];

/// The server's answers to [`VIEWS`] for `uri` (a semantic tokens result id,
/// which may count requests, removed).
pub async fn views(session: &mut Session, uri: &str) -> Vec<Value> {
    let mut answers = Vec::new();
    for method in VIEWS {
        let mut answer = session
            .call(method, json!({"textDocument": {"uri": uri}}))
            .await;
        if let Value::Object(object) = &mut answer {
            object.remove("resultId");
        }
        answers.push(answer);
    }
    answers
}

/// What the server must answer to [`VIEWS`] for `text`: the same handlers
/// on a fresh analysis of the client's text, in this process.
pub fn expected_views(text: &str, uri: &str, encoding: Encoding) -> Vec<Value> {
    use op2_lsp::documents::{Document, PositionEncoding};
    use op2_lsp::handlers::{Context, folding, semantic_tokens, symbols};
    let analyser = std::sync::Mutex::default();
    let path = uri_path(uri);
    let analysed = op2_lsp::world::analyse(
        Document::new(text, 0),
        path,
        &analyser,
        &op2_lsp::world::Overlay::default(),
    );
    let encoding = match encoding {
        Encoding::Utf8 => PositionEncoding::Utf8,
        Encoding::Utf16 => PositionEncoding::Utf16,
    };
    let settings = op2_lsp::config::Settings::default();
    let uri = uri.parse().expect("a valid URI");
    let context = Context {
        analysed: &analysed,
        encoding,
        settings: &settings,
        uri: &uri,
    };
    let json = |value: Result<Value, serde_json::Error>| value.expect("serialisable");
    let mut tokens = json(serde_json::to_value(semantic_tokens::full(&context)));
    if let Value::Object(object) = &mut tokens {
        object.remove("resultId");
    }
    vec![
        json(serde_json::to_value(symbols::document_symbols(&context))),
        json(serde_json::to_value(folding::folding_ranges(&context))),
        tokens,
    ]
}

/// The path of a `file:` URI as the server reads it.
pub fn uri_path(uri: &str) -> Option<PathBuf> {
    op2_lsp::world::uri_to_path(&uri.parse().ok()?)
}

/// Which of [`VIEWS`] differ between two sets of answers.
pub fn views_difference(actual: &[Value], expected: &[Value]) -> Option<String> {
    let differing: Vec<String> = VIEWS
        .iter()
        .zip(actual.iter().zip(expected))
        .filter(|(_, (a, e))| a != e)
        .map(|(method, (a, e))| {
            format!(
                "{method}:\n  got:      {}\n  expected: {}",
                abbreviate(a),
                abbreviate(e)
            )
        })
        .collect();
    (!differing.is_empty()).then(|| differing.join("\n"))
}

/// The first difference between two lists of diagnostics, described (the
/// whole lists are too long to read in a failure message); `None` when
/// they are equal.
pub fn diagnostics_difference(actual: &[Value], expected: &[Value]) -> Option<String> {
    if actual == expected {
        return None;
    }
    let first = actual
        .iter()
        .zip(expected)
        .position(|(a, e)| a != e)
        .unwrap_or(actual.len().min(expected.len()));
    let show = |list: &[Value]| {
        list.get(first)
            .map_or_else(|| "(none)".to_owned(), abbreviate)
    };
    Some(format!(
        "{} diagnostics where {} were expected; the first difference, at {first}:\n  got:      {}\n  expected: {}",
        actual.len(),
        expected.len(),
        show(actual),
        show(expected)
    ))
}

/// Fails with the first difference between two lists of diagnostics.
#[track_caller]
pub fn assert_same_diagnostics(actual: &[Value], expected: &[Value], context: &str) {
    if let Some(difference) = diagnostics_difference(actual, expected) {
        panic!("{context}: {difference}");
    }
}

/// `{"line": …, "character": …}` of byte `offset` in `text`.
pub fn position(text: &str, offset: usize, encoding: Encoding) -> Value {
    let (line, character) = text::position(text, offset, encoding);
    json!({"line": line, "character": character})
}

/// The position of the `nth` (0-based) occurrence of `needle` in `text`,
/// plus `skip` bytes.
pub fn position_of(text: &str, needle: &str, nth: usize, skip: usize, encoding: Encoding) -> Value {
    let offset = text
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("`{needle}` occurs fewer than {} times", nth + 1))
        .0;
    position(text, offset + skip, encoding)
}

/// A small deterministic random number generator (SplitMix64), so that
/// seeds name reproducible edit sequences.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}
