//! The tower-lsp-server glue: capabilities, document synchronisation,
//! diagnostics publishing, build on save, and dispatch of every request to
//! its handler in `handlers/`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use op2_codegen::files::SOURCE_LIMIT;

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::lsp_types::*;
use tower_lsp_server::{Client, LanguageServer, LspService};

use crate::transport::SessionEnd;

use crate::config::Settings;
use crate::documents::{OpenDocument, PositionEncoding, Snapshot};
use crate::handlers::{self, Context};
use crate::world::{Analysed, Entry, World, analyse_cancellable, uri_to_path};
use op2_syntax::ParseLimit;

/// The language server.
#[derive(Debug)]
pub struct Backend {
    client: Client,
    world: Arc<Mutex<World>>,
    /// Held while deciding to publish and publishing, so that a result
    /// checked as current cannot be overtaken by a newer one on the way out.
    publishing: Arc<tokio::sync::Mutex<()>>,
    /// This server's test hooks and watchdog limit, fixed when it starts.
    options: Options,
    /// The imports running, by progress token, for their cancellation.
    imports: handlers::import::Running,
    /// The builds on save under way, which `shutdown` lets finish.
    builds: Arc<Builds>,
}

/// How long `shutdown` waits for the builds on save under way: an editor
/// that quits right after a save still gets its graph. Below the two
/// seconds clients commonly give `shutdown` before they stop the server
/// anyway; a build still running at `exit` is ended with the process and
/// its temporary file removed (`op2 lsp`, docs/reliability.md).
pub const SHUTDOWN_WAITS_FOR_BUILDS: Duration = Duration::from_millis(1500);

/// The builds on save under way: a count, and a signal each time one ends.
#[derive(Debug, Default)]
struct Builds {
    running: std::sync::atomic::AtomicUsize,
    ended: tokio::sync::Notify,
}

/// One build on save counted in [`Builds`] until it is dropped (finished,
/// failed, panicked or cancelled).
struct Building(Arc<Builds>);

impl Building {
    fn start(builds: &Arc<Builds>) -> Building {
        builds.running.fetch_add(1, Ordering::SeqCst);
        Building(Arc::clone(builds))
    }
}

impl Drop for Building {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        self.0.ended.notify_waiters();
    }
}

impl Builds {
    /// Waits until no build runs, or `limit` has passed.
    async fn settle(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            // Registered before the count is read: an end between the two
            // is not missed.
            ended.as_mut().enable();
            if self.running.load(Ordering::SeqCst) == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return;
            }
        }
    }
}

/// Commands the server executes (`workspace/executeCommand`).
pub mod commands {
    /// Build the graph of a document now: `[uri]`.
    pub const BUILD: &str = "op2.build";
    /// Import an OP2 C/C++ application: `[main file URI, output directory
    /// URI (optional: the main file's directory)]`; answers `{program,
    /// instance, faithful, report}` (see `handlers::import`).
    pub const IMPORT: &str = "op2.import";
    /// The generated device type behind a position, as a read-only document
    /// text: `[uri, set name]`.
    pub const SHOW_DEVICE_TYPE: &str = "op2.showDeviceType";
    /// Where build on save writes the graph of a document: `[uri]`; answers
    /// `{uri}` (the file need not exist yet), or an error with the reason a
    /// build would write nothing (`handlers::build::graph_path`).
    pub const GRAPH_PATH: &str = "op2.graphPath";
    /// What the server holds for each open document: version, generation,
    /// analyses run and cancelled, what was published (JSON).
    pub const STATUS: &str = "op2.status";
    /// Panics (only on a server with [`Options::test_hooks`](crate::Options)).
    pub const TEST_PANIC: &str = "op2.test.panic";
}

/// The settings of one server that are not the user's (those come from
/// the client: `config`): its test hooks and its watchdog's limit. Each
/// server has its own, fixed when it starts, so that servers running in
/// one process (the tests') do not see each other's: only `op2 lsp` reads
/// them from its environment, once ([`Options::from_env`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Enables the test hooks: the command that panics
    /// ([`commands::TEST_PANIC`]), and the documents whose text starts with
    /// `// op2.test.hang` (analysed for 10 s) or `// op2.test.slow-parse`
    /// (parsed until the watchdog abandons it): how the panic recovery and
    /// the watchdog are tested. Off by default.
    pub test_hooks: bool,
    /// How long one analysis may run before the watchdog abandons it
    /// ([`ANALYSIS_LIMIT`] by default). Counted from the end of the
    /// document's parse, which its own deadline bounds (E002); the parse is
    /// abandoned when it runs this long past its worst case
    /// ([`ParseLimit::worst_case`]).
    pub analysis_limit: Duration,
}

/// The watchdog's limit on one analysis, unless [`Options::analysis_limit`]
/// says otherwise: 20 s.
pub const ANALYSIS_LIMIT: Duration = Duration::from_secs(20);

impl Default for Options {
    /// What a server runs with unless told otherwise: no test hooks, the
    /// watchdog's limit [`ANALYSIS_LIMIT`].
    fn default() -> Options {
        Options {
            test_hooks: false,
            analysis_limit: ANALYSIS_LIMIT,
        }
    }
}

impl Options {
    /// The options of `op2 lsp`, read once from its environment when it
    /// starts: the test hooks with `OP2_LSP_TEST_PANIC=1`, the watchdog's
    /// limit in milliseconds from `OP2_LSP_ANALYSIS_LIMIT_MS` (a value that
    /// is not a whole number of milliseconds is ignored); the defaults
    /// otherwise. The tests that start `op2 lsp` as a child process set
    /// these in the child's environment.
    pub fn from_env() -> Options {
        Options::from_vars(
            std::env::var("OP2_LSP_TEST_PANIC").ok().as_deref(),
            std::env::var("OP2_LSP_ANALYSIS_LIMIT_MS").ok().as_deref(),
        )
    }

    /// The options given the values of `OP2_LSP_TEST_PANIC` and
    /// `OP2_LSP_ANALYSIS_LIMIT_MS` (`None` when unset).
    fn from_vars(test_panic: Option<&str>, limit_ms: Option<&str>) -> Options {
        let defaults = Options::default();
        Options {
            test_hooks: test_panic == Some("1"),
            analysis_limit: limit_ms
                .and_then(|v| v.parse().ok())
                .map_or(defaults.analysis_limit, Duration::from_millis),
        }
    }
}

/// Serves on standard input and output (what `op2 lsp` runs), with the
/// options of its environment ([`Options::from_env`], read once, here);
/// returns how the session ended (its exit status).
pub async fn serve_stdio() -> SessionEnd {
    serve_with(tokio::io::stdin(), tokio::io::stdout(), Options::from_env()).await
}

/// Serves on any transport (tests use an in-memory duplex) with the default
/// [`Options`], whatever the environment says; see [`serve_with`].
pub async fn serve<I: AsyncRead + Unpin, O: AsyncWrite>(input: I, output: O) -> SessionEnd {
    serve_with(input, output, Options::default()).await
}

/// Serves on any transport, through the checking transport (`transport`):
/// malformed messages are answered, not fatal. `options` are this
/// server's alone.
pub async fn serve_with<I: AsyncRead + Unpin, O: AsyncWrite>(
    input: I,
    output: O,
    options: Options,
) -> SessionEnd {
    let (service, socket) = LspService::build(|client| Backend {
        client,
        world: Arc::default(),
        publishing: Arc::default(),
        options,
        imports: Arc::default(),
        builds: Arc::default(),
    })
    .custom_method("window/workDoneProgress/cancel", Backend::progress_cancel)
    .finish();
    crate::transport::serve_checked(input, output, service, socket).await
}

/// A document whose text starts with this is analysed for 10 s (only with
/// [`Options::test_hooks`]): how the watchdog is tested.
const TEST_HANG: &str = "// op2.test.hang";

/// A document whose text starts with this is parsed for longer than its
/// parse's worst case and the watchdog's limit together (only with
/// [`Options::test_hooks`]): how the watchdog over the parse is tested.
const TEST_SLOW_PARSE: &str = "// op2.test.slow-parse";

/// A request the server could not carry out, and why (LSP's
/// `RequestFailed`, -32803).
fn request_failed(message: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error {
        code: tower_lsp_server::jsonrpc::ErrorCode::ServerError(-32803),
        message: message.into(),
        data: None,
    }
}

/// The answer to a request on a document whose analysis ran away.
fn runaway_error() -> Error {
    request_failed("this document was not analysed (its diagnostic says why); edit it to try again")
}

/// How long a request about every open document (`workspace/symbol`)
/// waits for the documents whose analysis is not ready: they are waited
/// for together, and those still not ready then are left out of the answer
/// and named in the log. A document whose analysis runs away would
/// otherwise hold the answer for the watchdog's 20 s (or its parse's worst
/// case on top).
const WAIT_FOR_EVERY_DOCUMENT: Duration = Duration::from_secs(1);

/// At most this many documents are named in the log message of a request
/// answered without them; the others are counted.
const MOST_NAMED: usize = 16;

/// Why a document was left out of an answer about every open document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Missing {
    /// Its analysis did not finish in time.
    NotReady,
    /// The watchdog abandoned the analysis of its text.
    Abandoned,
    /// It changed while the request waited.
    Modified,
}

/// The log message of a request (`method`) answered without the
/// documents of `missing`, or `None` when none is missing.
fn left_out(method: &str, missing: &[(Uri, Missing)]) -> Option<String> {
    if missing.is_empty() {
        return None;
    }
    let mut message = format!(
        "{method} answered without {} document{}:",
        missing.len(),
        if missing.len() == 1 { "" } else { "s" }
    );
    for (uri, why) in missing.iter().take(MOST_NAMED) {
        let why = match why {
            Missing::NotReady => format!(
                "not analysed within {} s",
                WAIT_FOR_EVERY_DOCUMENT.as_secs_f64()
            ),
            Missing::Abandoned => "its analysis was abandoned".to_owned(),
            Missing::Modified => "changed meanwhile".to_owned(),
        };
        message.push_str(&format!(" {} ({why});", uri.as_str()));
    }
    if missing.len() > MOST_NAMED {
        message.push_str(&format!(" and {} more", missing.len() - MOST_NAMED));
    } else {
        message.pop();
    }
    Some(message)
}

/// Stops what runs for an opening of a document that was closed or
/// replaced by another `didOpen`: its parse, and its analysis at its next
/// check for cancellation.
fn forget(entry: Entry) {
    entry.invalidate();
    entry.document.close();
}

/// Moves on the generation of every open program but `uri` whose latest
/// analysis imports `path` (the file of `uri`, whose text changed, opened
/// or closed), and returns them, to be analysed again.
fn invalidate_importers(world: &mut World, uri: &Uri, path: Option<&Path>) -> Vec<Uri> {
    let Some(path) = path else {
        return Vec::new();
    };
    let mut importers = Vec::new();
    for (other, entry) in world.documents.iter_mut() {
        let imports = entry.analysed.as_ref().is_some_and(|a| {
            a.analysis
                .program
                .files
                .iter()
                .skip(1)
                .any(|f| f.path == path)
        });
        if other != uri && imports {
            entry.invalidate();
            importers.push(other.clone());
        }
    }
    importers
}

fn lock(world: &Mutex<World>) -> std::sync::MutexGuard<'_, World> {
    // A panic elsewhere never leaves the world half-updated (updates are
    // single assignments), so a poisoned lock is still usable.
    world
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Who asks for an analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asker {
    /// The document's background worker: analyses whatever is current
    /// (cancelled when the text moves on) and publishes the diagnostics.
    Worker,
    /// A request: waits for the worker when one runs, and answers from the
    /// analysis of the generation current when it asked.
    Request,
}

/// What [`Backend::analysed`] does next.
enum Next {
    /// The current generation is analysed.
    Ready(Arc<Analysed>),
    /// The worker is busy: wait until it finishes this generation.
    Wait(tokio::sync::watch::Receiver<u64>, u64),
    /// Analyse the current text now.
    Analyse,
}

impl Backend {
    /// A handle on the same server for a spawned task.
    fn handle(&self) -> Backend {
        Backend {
            client: self.client.clone(),
            world: Arc::clone(&self.world),
            publishing: Arc::clone(&self.publishing),
            options: self.options,
            imports: Arc::clone(&self.imports),
            builds: Arc::clone(&self.builds),
        }
    }

    /// The analysis of the current generation of `uri`.
    ///
    /// A request waits while the worker is busy (the worker analyses the
    /// newest text and says when it finishes); otherwise it analyses the
    /// current text itself. The worker analyses the current text,
    /// cancelling when a newer generation arrives, and publishes the
    /// diagnostics of the result when it is still current. Stale results
    /// are never kept or published.
    async fn analysed(&self, uri: &Uri, asker: Asker) -> Option<Arc<Analysed>> {
        loop {
            let next = {
                let world = lock(&self.world);
                let entry = world.documents.get(uri)?;
                if entry.runaway == Some(entry.generation()) {
                    // Abandoned by the watchdog: not again for this text.
                    return None;
                }
                match entry.current() {
                    Some(analysed) => Next::Ready(Arc::clone(analysed)),
                    None if asker == Asker::Request && entry.analysing => {
                        Next::Wait(entry.finished.subscribe(), entry.generation())
                    }
                    None => Next::Analyse,
                }
            };
            match next {
                Next::Ready(analysed) => {
                    if asker == Asker::Worker {
                        self.publish_current(uri, &analysed).await;
                    }
                    return Some(analysed);
                }
                Next::Wait(mut finished, generation) => {
                    // The worker finishes this generation or a newer one;
                    // then look again. A closed channel (the document was
                    // closed) ends the wait too.
                    let _ = finished.wait_for(|done| *done > generation).await;
                }
                Next::Analyse => return self.analyse_now(uri, asker).await,
            }
        }
    }

    /// Parses (when the parse has not caught up with the text) and analyses
    /// the current text of `uri` on the blocking pool, keeps the result
    /// when it is still current, and (for the worker) publishes it. Only
    /// the snapshot is taken under the world's lock: a slow parse (one that
    /// gives up at its deadline, E002) or analysis of one document never
    /// holds up requests on the others.
    async fn analyse_now(&self, uri: &Uri, asker: Asker) -> Option<Arc<Analysed>> {
        let taken = {
            let world = lock(&self.world);
            let entry = world.documents.get(uri)?;
            // A text over the limit of a source file is not parsed: the
            // bounds of docs/reliability.md ("Limits") hold for what the
            // server analyses as for what `op2 check` reads.
            let length = entry.document.len_bytes();
            if !u64::try_from(length).is_ok_and(|n| n <= SOURCE_LIMIT) {
                Err((entry.generation(), length))
            } else {
                Ok((
                    entry.document.parse_job(),
                    self.options.test_hooks && entry.document.starts_with(TEST_HANG),
                    self.options.test_hooks && entry.document.starts_with(TEST_SLOW_PARSE),
                    entry.generation(),
                    Arc::clone(&entry.generation),
                    entry.path.clone(),
                    Arc::clone(&entry.engine),
                    world.overlay(Some(uri)),
                ))
            }
        };
        let (snapshot, hang, slow_parse, generation, counter, path, engine, overlay) = match taken {
            Ok(taken) => taken,
            Err((generation, length)) => {
                let message = format!(
                    "this document is {length} bytes, over the limit of {SOURCE_LIMIT} bytes \
                     for a program, and is not analysed; it is again once edits bring it \
                     under the limit"
                );
                self.abandon(uri, generation, message).await;
                return None;
            }
        };
        let worker = asker == Asker::Worker;
        let limit = self.options.analysis_limit;
        let (world, parsed_uri) = (Arc::clone(&self.world), uri.clone());
        // The most a parse of this text takes within its deadline, all its
        // retries after a give-up included (nothing when it is parsed).
        let parse_bound = match &snapshot {
            Snapshot::Parsed(_) => Duration::ZERO,
            Snapshot::Job(job) => ParseLimit::worst_case(job.text_len()),
        };
        // Said (or dropped, when the parse is cancelled) when the parse
        // ends: the watchdog times what comes after it.
        let (parse_ends, parse_ended) = tokio::sync::oneshot::channel::<()>();
        // Set when the watchdog abandons the parse: its analysis is not run.
        let abandoned = Arc::new(AtomicBool::new(false));
        let abandoned_run = Arc::clone(&abandoned);
        let task = tokio::task::spawn_blocking(move || {
            // Only the worker's runs are cancelled: a request answers for
            // the text it was sent after, whatever came next.
            let document = match snapshot {
                Snapshot::Parsed(document) => document,
                Snapshot::Job(job) => {
                    // The worker's parse stops when the text moves on or
                    // the document closes, and yields nothing. A request's
                    // parse is put back even when the text moved on
                    // meanwhile: the next parse starts from it.
                    let superseded = job.superseded();
                    if slow_parse {
                        std::thread::sleep(parse_bound + limit + Duration::from_secs(5));
                    }
                    let parsed = job.run(&|| worker && superseded())?;
                    let document = parsed.document.clone();
                    if let Some(entry) = lock(&world).documents.get_mut(&parsed_uri) {
                        entry.document.install(parsed);
                    }
                    document
                }
            };
            let _ = parse_ends.send(());
            if abandoned_run.load(Ordering::SeqCst) {
                return None;
            }
            if hang {
                std::thread::sleep(Duration::from_secs(10));
            }
            let cancelled = || worker && counter.load(Ordering::SeqCst) != generation;
            analyse_cancellable(document, generation, path, &engine, &overlay, &cancelled)
        });
        // The parse is bounded by its own deadline (a parse that reaches
        // it gives up with E002, which the user must see, also for a file
        // whose worst case is longer than the watchdog's limit), but that
        // deadline is asked only at tree-sitter's progress calls, and what
        // it counts is CPU time: the watchdog gives the parse its worst case
        // and its own limit on top, and abandons it after that as it
        // abandons an analysis. Its clock for the analysis starts when the
        // parse ends.
        let waited = parse_bound + limit;
        if tokio::time::timeout(waited, parse_ended).await.is_err() {
            abandoned.store(true, Ordering::SeqCst);
            self.runaway(uri, generation, waited).await;
            return None;
        }
        // The watchdog: a run that does not finish in time is left behind
        // (a thread cannot be stopped), the document gets a fresh engine
        // (the old one stays locked by that run) and a diagnostic saying
        // so, and it is not analysed again until it changes.
        let Ok(result) = tokio::time::timeout(limit, task).await else {
            self.runaway(uri, generation, limit).await;
            return None;
        };
        let analysed = match result {
            Ok(Some(analysed)) => Arc::new(analysed),
            Ok(None) => {
                if let Some(entry) = lock(&self.world).documents.get_mut(uri) {
                    entry.cancelled_runs += 1;
                }
                return None;
            }
            Err(error) => {
                self.client
                    .log_message(
                        MessageType::ERROR,
                        format!("analysis of {} failed: {error}", uri.as_str()),
                    )
                    .await;
                return None;
            }
        };
        let current = {
            let mut world = lock(&self.world);
            let entry = world.documents.get_mut(uri)?;
            entry.runs += 1;
            let current = entry.generation() == generation;
            if current {
                entry.analysed = Some(Arc::clone(&analysed));
            }
            current
        };
        if !current {
            return None;
        }
        if worker {
            self.publish_current(uri, &analysed).await;
        }
        Some(analysed)
    }

    /// Records that the parse or analysis of `generation` of `uri` ran
    /// away, abandoned after `waited`, and tells the user on the document.
    async fn runaway(&self, uri: &Uri, generation: u64, waited: Duration) {
        let message = format!(
            "the analysis of this document did not finish within {} s and was abandoned; \
             it starts again when the document changes (please report the program)",
            (waited.as_secs_f64() * 10.0).round() / 10.0
        );
        self.abandon(uri, generation, message).await;
    }

    /// Records that `generation` of `uri` is not analysed (it ran away, or
    /// its text is over the limit), and tells the user on the document:
    /// requests on it answer with an error until it changes.
    async fn abandon(&self, uri: &Uri, generation: u64, message: String) {
        let _publishing = self.publishing.lock().await;
        let version = {
            let mut world = lock(&self.world);
            let Some(entry) = world.documents.get_mut(uri) else {
                return;
            };
            if entry.runaway == Some(generation) || entry.generation() != generation {
                return;
            }
            entry.runaway = Some(generation);
            entry.engine = Arc::default();
            entry.published = Some(generation);
            entry.document.version()
        };
        let diagnostic = Diagnostic {
            range: Range::default(),
            severity: Some(DiagnosticSeverity::ERROR),
            source: Some("op2".into()),
            message: message.clone(),
            ..Diagnostic::default()
        };
        self.client
            .publish_diagnostics(uri.clone(), vec![diagnostic], Some(version))
            .await;
        self.client
            .log_message(MessageType::ERROR, format!("{}: {message}", uri.as_str()))
            .await;
    }

    /// Publishes an analysis that is current, unless its generation was
    /// published already. Deciding and sending happen under the publishing
    /// lock: whatever is published after this is for this generation or a
    /// newer one (rule 2).
    async fn publish_current(&self, uri: &Uri, analysed: &Analysed) {
        let _publishing = self.publishing.lock().await;
        let (send, encoding) = {
            let mut world = lock(&self.world);
            let encoding = world.encoding();
            let Some(entry) = world.documents.get_mut(uri) else {
                return;
            };
            let send = entry.generation() == analysed.generation
                && entry.published.is_none_or(|p| p < analysed.generation);
            if send {
                entry.published = Some(analysed.generation);
            }
            (send, encoding)
        };
        if send {
            let diagnostics = handlers::diagnostics::to_lsp(analysed, uri, encoding);
            self.client
                .publish_diagnostics(uri.clone(), diagnostics, Some(analysed.version))
                .await;
        }
    }

    /// Makes sure the current generation of `uri` gets analysed and its
    /// diagnostics published: starts the document's worker unless it runs
    /// (a running worker picks up the newest text when it finishes).
    fn schedule(&self, uri: Uri) {
        {
            let mut world = lock(&self.world);
            let Some(entry) = world.documents.get_mut(&uri) else {
                return;
            };
            if entry.analysing {
                return;
            }
            entry.analysing = true;
        }
        let backend = self.handle();
        tokio::spawn(async move { backend.work(uri).await });
    }

    /// The worker of one document: analyses until the current generation
    /// is analysed and published, skipping the generations that went by
    /// meanwhile. One analysis that fails (a panic, logged) ends the run,
    /// so a program that crashes the analyser does not loop; the next
    /// change starts a new worker.
    async fn work(&self, uri: Uri) {
        // The opening this worker serves, told by its generation's count:
        // a document closed and opened again meanwhile has a worker of its
        // own, and this one leaves it alone.
        let Some(opening) = lock(&self.world)
            .documents
            .get(&uri)
            .map(|entry| Arc::clone(&entry.generation))
        else {
            return;
        };
        loop {
            let started = match lock(&self.world).documents.get(&uri) {
                Some(entry) if Arc::ptr_eq(&entry.generation, &opening) => entry.generation(),
                _ => return,
            };
            let analysed = self.analysed(&uri, Asker::Worker).await;
            let mut world = lock(&self.world);
            let Some(entry) = world
                .documents
                .get_mut(&uri)
                .filter(|entry| Arc::ptr_eq(&entry.generation, &opening))
            else {
                return;
            };
            entry.finished.send_replace(started + 1);
            let generation = entry.generation();
            let failed = analysed.is_none() && generation == started;
            if entry.current().is_some() || failed {
                entry.analysing = false;
                // Wake the requests waiting for this generation.
                entry.finished.send_replace(generation + 1);
                return;
            }
        }
    }

    /// The analysis of the generation of `uri` current when the request
    /// arrived: the worker's when it finishes that generation, or one run
    /// here. When the document (or a file it imports) changes before that
    /// analysis exists, the answer is `ContentModified`: an answer always
    /// belongs to the version it was asked about. `Ok(None)`: the document
    /// is not open.
    async fn analysed_as_asked(&self, uri: &Uri) -> Result<Option<Arc<Analysed>>> {
        let mut asked = None;
        loop {
            let next = {
                let world = lock(&self.world);
                let Some(entry) = world.documents.get(uri) else {
                    return Ok(None);
                };
                let generation = entry.generation();
                let asked = *asked.get_or_insert(generation);
                if generation != asked {
                    return Err(Error::content_modified());
                }
                if entry.runaway == Some(generation) {
                    return Err(runaway_error());
                }
                match entry.current() {
                    Some(analysed) => Next::Ready(Arc::clone(analysed)),
                    None if entry.analysing => Next::Wait(entry.finished.subscribe(), generation),
                    None => Next::Analyse,
                }
            };
            match next {
                Next::Ready(analysed) => return Ok(Some(analysed)),
                Next::Wait(mut finished, generation) => {
                    let _ = finished.wait_for(|done| *done > generation).await;
                }
                Next::Analyse => {
                    if let Some(analysed) = self.analyse_now(uri, Asker::Request).await
                        && Some(analysed.generation) == asked
                    {
                        return Ok(Some(analysed));
                    }
                    // Not analysed, or moved on: look again (a change
                    // answers ContentModified, a runaway its error).
                    let world = lock(&self.world);
                    match world.documents.get(uri) {
                        None => return Ok(None),
                        Some(entry) if entry.runaway == asked => return Err(runaway_error()),
                        Some(_) => return Err(Error::content_modified()),
                    }
                }
            }
        }
    }

    /// The analyses of `uris` as asked (see [`Backend::analysed_as_asked`]),
    /// in the order of `uris`, and the documents left out with why. Those
    /// analysed already are taken at once; the others are waited for
    /// together, each in a task of its own, and those not ready after
    /// `wait` are left out (their waits are dropped; a worker's analysis
    /// goes on). Closed documents are neither.
    async fn analysed_together(
        &self,
        uris: Vec<Uri>,
        wait: Duration,
    ) -> (Vec<(Uri, Arc<Analysed>)>, Vec<(Uri, Missing)>) {
        let deadline = tokio::time::Instant::now() + wait;
        // `None`: not analysed yet; `Some(None)`: closed.
        let mut answers: Vec<Option<std::result::Result<Option<Arc<Analysed>>, Missing>>> = {
            let world = lock(&self.world);
            uris.iter()
                .map(|uri| match world.documents.get(uri) {
                    None => Some(Ok(None)),
                    Some(entry) => entry.current().map(|a| Ok(Some(Arc::clone(a)))),
                })
                .collect()
        };
        let mut waits = tokio::task::JoinSet::new();
        for (index, uri) in uris.iter().enumerate() {
            if answers[index].is_none() {
                let (backend, uri) = (self.handle(), uri.clone());
                waits.spawn(async move { (index, backend.analysed_as_asked(&uri).await) });
            }
        }
        while let Ok(Some(joined)) = tokio::time::timeout_at(deadline, waits.join_next()).await {
            // A wait that panicked stays `None`: left out as not ready.
            if let Ok((index, answer)) = joined {
                answers[index] = Some(answer.map_err(|error| {
                    if error.code == runaway_error().code {
                        Missing::Abandoned
                    } else {
                        Missing::Modified
                    }
                }));
            }
        }
        // Dropping the set aborts the waits still running.
        drop(waits);
        let (mut ready, mut missing) = (Vec::new(), Vec::new());
        for (uri, answer) in uris.into_iter().zip(answers) {
            match answer {
                Some(Ok(Some(analysed))) => ready.push((uri, analysed)),
                Some(Ok(None)) => {}
                Some(Err(why)) => missing.push((uri, why)),
                None => missing.push((uri, Missing::NotReady)),
            }
        }
        (ready, missing)
    }

    /// Runs a request handler over the current analysis, on the blocking
    /// pool. A panic in it is logged and answered with an internal error.
    async fn request<T, F>(&self, name: &str, uri: &Uri, handler: F) -> Result<Option<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Context<'_>) -> Option<T> + Send + 'static,
    {
        let Some(analysed) = self.analysed_as_asked(uri).await? else {
            return Ok(None);
        };
        let (encoding, settings) = {
            let world = lock(&self.world);
            (world.encoding(), world.settings.clone())
        };
        let uri = uri.clone();
        let result = tokio::task::spawn_blocking(move || {
            let context = Context {
                analysed: &analysed,
                encoding,
                settings: &settings,
                uri: &uri,
            };
            handler(&context)
        })
        .await;
        match result {
            Ok(value) => Ok(value),
            Err(error) => {
                self.client
                    .log_message(MessageType::ERROR, format!("{name} failed: {error}"))
                    .await;
                Err(Error::internal_error())
            }
        }
    }

    fn build_on_save(&self, uri: Uri) {
        let client = self.client.clone();
        let world = Arc::clone(&self.world);
        let backend = self.handle();
        let building = Building::start(&self.builds);
        tokio::spawn(async move {
            let _building = building;
            let Some(analysed) = backend.analysed(&uri, Asker::Request).await else {
                return;
            };
            let (settings, folders, path, progress, refusals) = {
                let world = lock(&world);
                let path = world.documents.get(&uri).and_then(|e| e.path.clone());
                (
                    world.settings.clone(),
                    world.workspace_folders.clone(),
                    path,
                    world.client_progress,
                    Arc::clone(&world.build_refusals),
                )
            };
            let save = handlers::build::Save {
                document: &uri,
                source: path,
                settings: &settings,
                folders: folders.as_slice(),
                client_progress: progress,
                refusals: &refusals,
            };
            handlers::build::build_with_progress(&client, &analysed, save).await;
        });
    }

    /// `op2.import`: decides where it may read and write, then imports.
    async fn import(&self, main: &Uri, out: Option<&Uri>) -> Result<Option<serde_json::Value>> {
        let failed = |message: String| request_failed(message);
        let file = |uri: &Uri| {
            uri_to_path(uri).ok_or_else(|| failed(format!("`{}` is not a file", uri.as_str())))
        };
        let main = file(main)?;
        let out = out.map(file).transpose()?;
        let (folders, progress) = {
            let world = lock(&self.world);
            (world.workspace_folders.clone(), world.client_progress)
        };
        let target =
            handlers::import::target(&main, out.as_deref(), folders.as_slice()).map_err(failed)?;
        handlers::import::import_with_progress(&self.client, target, progress, &self.imports)
            .await
            .map(Some)
            .map_err(failed)
    }

    /// `window/workDoneProgress/cancel`: the cancel button of an import.
    async fn progress_cancel(&self, params: WorkDoneProgressCancelParams) {
        if let ProgressToken::String(token) = &params.token {
            handlers::import::cancel(&self.imports, token);
        }
    }
}

fn encoding_of(params: &InitializeParams) -> PositionEncoding {
    let offered = params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(encodings) if encodings.contains(&PositionEncodingKind::UTF8) => {
            PositionEncoding::Utf8
        }
        _ => PositionEncoding::Utf16,
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let encoding = encoding_of(&params);
        let settings = match params
            .initialization_options
            .as_ref()
            .map(Settings::from_json)
        {
            Some(Ok((settings, unknown))) => {
                if let Some(message) = Settings::unknown_message(&unknown) {
                    let client = self.client.clone();
                    tokio::spawn(async move {
                        client.show_message(MessageType::WARNING, message).await
                    });
                }
                settings
            }
            Some(Err(message)) => {
                // Spawned: never await the client inside a handler.
                let client = self.client.clone();
                tokio::spawn(
                    async move { client.show_message(MessageType::WARNING, message).await },
                );
                Settings::default()
            }
            None => Settings::default(),
        };
        {
            let mut world = lock(&self.world);
            world.client_progress = params
                .capabilities
                .window
                .as_ref()
                .and_then(|w| w.work_done_progress)
                .unwrap_or(false);
            world.client_inlay_resolve = params
                .capabilities
                .text_document
                .as_ref()
                .and_then(|t| t.inlay_hint.as_ref())
                .and_then(|i| i.resolve_support.as_ref())
                .is_some_and(|r| r.properties.iter().any(|p| p == "tooltip"));
            world.client_inlay_refresh = params
                .capabilities
                .workspace
                .as_ref()
                .and_then(|w| w.inlay_hint.as_ref())
                .and_then(|i| i.refresh_support)
                .unwrap_or(false);
            world.encoding = Some(encoding);
            world.settings = settings;
            let mut folders: Vec<std::path::PathBuf> = params
                .workspace_folders
                .iter()
                .flatten()
                .filter_map(|folder| uri_to_path(&folder.uri))
                .collect();
            #[allow(deprecated)]
            if folders.is_empty()
                && let Some(root) = params.root_uri.as_ref().and_then(uri_to_path)
            {
                folders.push(root);
            }
            // At most `MAX_WORKSPACE_FOLDERS`; the others are named in the
            // log once the client is initialized (nothing can be sent to it
            // before).
            let mut kept = handlers::build::WorkspaceFolders::default();
            let refused = kept.change(&[], folders);
            kept.unreported = refused.message();
            world.workspace_folders = kept;
        }
        Ok(InitializeResult {
            server_info: Some(ServerInfo {
                name: "op2".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            capabilities: handlers::capabilities(encoding),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        self.client
            .log_message(MessageType::INFO, "op2 language server ready")
            .await;
        let refused = lock(&self.world).workspace_folders.unreported.take();
        if let Some(message) = refused {
            self.client.log_message(MessageType::WARNING, message).await;
        }
    }

    async fn shutdown(&self) -> Result<()> {
        // The builds on save under way finish first, for a while: the
        // client sends `exit` when this answers.
        self.builds.settle(SHUTDOWN_WAITS_FOR_BUILDS).await;
        Ok(())
    }

    async fn did_open(&self, params: DidOpenTextDocumentParams) {
        let document = params.text_document;
        // Not parsed here: the document's worker parses it off the lock.
        let entry = Entry::new(
            OpenDocument::new(&document.text, document.version),
            uri_to_path(&document.uri),
        );
        let importers = {
            let mut world = lock(&self.world);
            // A second `didOpen` without a close replaces the opening: the
            // old one's parse and analysis stop.
            if let Some(old) = world.documents.insert(document.uri.clone(), entry) {
                forget(old);
            }
            // Open programs that import this file read its text from here
            // now.
            let path = uri_to_path(&document.uri);
            invalidate_importers(&mut world, &document.uri, path.as_deref())
        };
        self.schedule(document.uri);
        for importer in importers {
            self.schedule(importer);
        }
    }

    async fn did_change(&self, params: DidChangeTextDocumentParams) {
        // Applied to the text before any `.await` (rule 1); the parse
        // catches up in the document's worker, off the lock.
        let uri = params.text_document.uri;
        {
            let mut world = lock(&self.world);
            let encoding = world.encoding();
            let Some(entry) = world.documents.get_mut(&uri) else {
                return;
            };
            entry.document.apply_changes(
                params.content_changes,
                params.text_document.version,
                encoding,
            );
            entry.invalidate();
        }
        // Open programs that import this file see its new text too.
        let importers = {
            let mut world = lock(&self.world);
            let path = world.documents.get(&uri).and_then(|e| e.path.clone());
            invalidate_importers(&mut world, &uri, path.as_deref())
        };
        self.schedule(uri);
        for importer in importers {
            self.schedule(importer);
        }
    }

    async fn did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        let importers = {
            // Under the publishing lock, so that no diagnostics of the
            // closed document decided on before the close are sent after
            // the empty list below.
            let _publishing = self.publishing.lock().await;
            let importers = {
                let mut world = lock(&self.world);
                match world.documents.remove(&uri) {
                    Some(closed) => {
                        let path = closed.path.clone();
                        forget(closed);
                        if let Ok(mut refusals) = world.build_refusals.lock() {
                            refusals.retain(|(refused, _)| refused != uri.as_str());
                        }
                        // Open programs that import this file read it from
                        // disk again.
                        invalidate_importers(&mut world, &uri, path.as_deref())
                    }
                    None => Vec::new(),
                }
            };
            handlers::semantic_tokens::forget(uri.as_str());
            self.client.publish_diagnostics(uri, Vec::new(), None).await;
            importers
        };
        for importer in importers {
            self.schedule(importer);
        }
    }

    async fn did_save(&self, params: DidSaveTextDocumentParams) {
        if lock(&self.world).settings.build.on_save {
            self.build_on_save(params.text_document.uri);
        }
    }

    async fn did_change_configuration(&self, params: DidChangeConfigurationParams) {
        match Settings::from_json(&params.settings) {
            Ok((settings, unknown)) => {
                lock(&self.world).settings = settings;
                if let Some(message) = Settings::unknown_message(&unknown) {
                    self.client
                        .show_message(MessageType::WARNING, message)
                        .await;
                }
            }
            Err(message) => {
                self.client
                    .show_message(MessageType::WARNING, message)
                    .await
            }
        }
        // A request to the client: spawned, never awaited in the handler.
        if lock(&self.world).client_inlay_refresh {
            let client = self.client.clone();
            tokio::spawn(async move {
                let _ = client.inlay_hint_refresh().await;
            });
        }
    }

    async fn did_change_workspace_folders(&self, params: DidChangeWorkspaceFoldersParams) {
        // Build on save (and its hover line) and `op2.import` read the
        // folders when they run: a folder removed is no longer written in,
        // one added is.
        // Linear in the folders and the change, and at most
        // `MAX_WORKSPACE_FOLDERS` kept (each resolved once, here); the
        // others are named in the log.
        let removed: Vec<std::path::PathBuf> = params
            .event
            .removed
            .iter()
            .filter_map(|folder| uri_to_path(&folder.uri))
            .collect();
        let added = params
            .event
            .added
            .iter()
            .filter_map(|f| uri_to_path(&f.uri))
            .collect();
        let refused = lock(&self.world)
            .workspace_folders
            .change(&removed, added)
            .message();
        if let Some(message) = refused {
            // Spawned: never await the client inside a handler.
            let client = self.client.clone();
            tokio::spawn(async move { client.log_message(MessageType::WARNING, message).await });
        }
    }

    async fn did_change_watched_files(&self, _: DidChangeWatchedFilesParams) {
        // An imported file changed on disk: every open program may see it.
        let uris: Vec<Uri> = {
            let world = lock(&self.world);
            for entry in world.documents.values() {
                entry.invalidate();
            }
            world.documents.keys().cloned().collect()
        };
        for uri in uris {
            self.schedule(uri);
        }
    }

    async fn execute_command(
        &self,
        params: ExecuteCommandParams,
    ) -> Result<Option<serde_json::Value>> {
        let uri = params
            .arguments
            .first()
            .and_then(|a| a.as_str())
            .and_then(|s| s.parse::<Uri>().ok());
        match params.command.as_str() {
            commands::TEST_PANIC if self.options.test_hooks => {
                let result =
                    tokio::task::spawn_blocking(|| -> () { panic!("test panic requested") }).await;
                self.client
                    .log_message(
                        MessageType::ERROR,
                        format!(
                            "command failed: {}",
                            result.err().map_or_else(String::new, |e| e.to_string())
                        ),
                    )
                    .await;
                Err(Error::internal_error())
            }
            commands::STATUS => {
                let world = lock(&self.world);
                let mut documents: Vec<(&Uri, &Entry)> = world.documents.iter().collect();
                documents.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
                let documents: Vec<serde_json::Value> = documents
                    .into_iter()
                    .map(|(uri, entry)| entry.status(uri))
                    .collect();
                Ok(Some(serde_json::json!({ "documents": documents })))
            }
            commands::IMPORT => {
                let Some(uri) = uri else {
                    return Err(Error::invalid_params(
                        "expected the URI of the application's main C/C++ file",
                    ));
                };
                let out = match params.arguments.get(1) {
                    None | Some(serde_json::Value::Null) => None,
                    Some(out) => Some(
                        out.as_str()
                            .and_then(|s| s.parse::<Uri>().ok())
                            .ok_or_else(|| {
                                Error::invalid_params("expected the output directory as a URI")
                            })?,
                    ),
                };
                self.import(&uri, out.as_ref()).await
            }
            commands::BUILD => {
                let Some(uri) = uri else {
                    return Err(Error::invalid_params("expected a document URI"));
                };
                self.build_on_save(uri);
                Ok(None)
            }
            commands::GRAPH_PATH => {
                let Some(uri) = uri else {
                    return Err(Error::invalid_params("expected a document URI"));
                };
                let (path, settings, folders) = {
                    let world = lock(&self.world);
                    let path = world.documents.get(&uri).and_then(|e| e.path.clone());
                    (
                        path.or_else(|| uri_to_path(&uri)),
                        world.settings.clone(),
                        world.workspace_folders.clone(),
                    )
                };
                let Some(path) = path else {
                    return Err(request_failed(
                        "the document is not a file: no graph is written for it",
                    ));
                };
                let graph = handlers::build::graph_path(&path, &settings, folders.as_slice())
                    .map_err(request_failed)?;
                let uri = handlers::path_to_uri(&graph).ok_or_else(|| {
                    request_failed(format!("`{}` cannot be written as a URI", graph.display()))
                })?;
                Ok(Some(serde_json::json!({ "uri": uri.as_str() })))
            }
            commands::SHOW_DEVICE_TYPE => {
                let Some(uri) = uri else {
                    return Err(Error::invalid_params("expected a document URI"));
                };
                let set = params
                    .arguments
                    .get(1)
                    .and_then(|a| a.as_str())
                    .map(str::to_owned);
                self.request("showDeviceType", &uri, move |context| {
                    handlers::code_lens::device_type_text(context, set.as_deref())
                        .map(serde_json::Value::String)
                })
                .await
            }
            other => Err(Error::invalid_params(format!("unknown command `{other}`"))),
        }
    }

    async fn hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let position = params.text_document_position_params;
        let uri = position.text_document.uri.clone();
        let (path, folders) = {
            let world = lock(&self.world);
            let path = world.documents.get(&uri).and_then(|e| e.path.clone());
            (path, world.workspace_folders.clone())
        };
        self.request("hover", &uri, move |c| {
            let offset = c.offset(position.position);
            if !handlers::build::on_main_keyword(c.analysed.document.parse(), offset) {
                return handlers::hover::hover(c, position.position);
            }
            // On `main`: whether and where the program is built on save.
            let line =
                handlers::build::status_line(path.as_deref(), c.settings, folders.as_slice());
            let mut hover = handlers::hover::hover(c, position.position).unwrap_or(Hover {
                contents: HoverContents::Markup(MarkupContent {
                    kind: MarkupKind::Markdown,
                    value: "```op2\nmain\n```".into(),
                }),
                range: None,
            });
            if let HoverContents::Markup(markup) = &mut hover.contents {
                markup.value.push_str(&format!("\n\n---\n\n{line}"));
            }
            Some(hover)
        })
        .await
    }

    async fn goto_definition(
        &self,
        params: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let position = params.text_document_position_params;
        self.request(
            "definition",
            &position.text_document.uri.clone(),
            move |c| handlers::definition::definition(c, position.position),
        )
        .await
    }

    async fn references(&self, params: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let position = params.text_document_position;
        let include = params.context.include_declaration;
        self.request(
            "references",
            &position.text_document.uri.clone(),
            move |c| handlers::references::references(c, position.position, include),
        )
        .await
    }

    async fn document_highlight(
        &self,
        params: DocumentHighlightParams,
    ) -> Result<Option<Vec<DocumentHighlight>>> {
        let position = params.text_document_position_params;
        self.request("highlight", &position.text_document.uri.clone(), move |c| {
            handlers::references::highlights(c, position.position)
        })
        .await
    }

    async fn prepare_rename(
        &self,
        params: TextDocumentPositionParams,
    ) -> Result<Option<PrepareRenameResponse>> {
        // A refusal is an error with its reason, which editors show.
        let answer = self
            .request(
                "prepareRename",
                &params.text_document.uri.clone(),
                move |c| Some(handlers::rename::try_prepare(c, params.position)),
            )
            .await?;
        match answer {
            Some(Ok(response)) => Ok(Some(response)),
            Some(Err(message)) => Err(Error::invalid_params(message)),
            None => Ok(None),
        }
    }

    async fn rename(&self, params: RenameParams) -> Result<Option<WorkspaceEdit>> {
        let position = params.text_document_position;
        let name = params.new_name;
        let answer = self
            .request("rename", &position.text_document.uri.clone(), move |c| {
                Some(handlers::rename::try_rename(c, position.position, &name))
            })
            .await?;
        match answer {
            Some(Ok(edit)) => Ok(Some(edit)),
            Some(Err(message)) => Err(Error::invalid_params(message)),
            None => Ok(None),
        }
    }

    async fn completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let position = params.text_document_position;
        self.request(
            "completion",
            &position.text_document.uri.clone(),
            move |c| handlers::completion::completion(c, position.position),
        )
        .await
    }

    async fn signature_help(&self, params: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        let position = params.text_document_position_params;
        self.request(
            "signatureHelp",
            &position.text_document.uri.clone(),
            move |c| handlers::signature_help::signature_help(c, position.position),
        )
        .await
    }

    async fn document_symbol(
        &self,
        params: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        self.request(
            "documentSymbol",
            &params.text_document.uri.clone(),
            handlers::symbols::document_symbols,
        )
        .await
    }

    async fn symbol(
        &self,
        params: WorkspaceSymbolParams,
    ) -> Result<Option<OneOf<Vec<SymbolInformation>, Vec<WorkspaceSymbol>>>> {
        // Every open document's analysis as asked, waited for together and
        // at most `WAIT_FOR_EVERY_DOCUMENT`: a document still (or forever)
        // being analysed is left out and named in the log, never waited for
        // in turn.
        let uris: Vec<Uri> = lock(&self.world).documents.keys().cloned().collect();
        let (ready, missing) = self.analysed_together(uris, WAIT_FOR_EVERY_DOCUMENT).await;
        if let Some(message) = left_out("workspace/symbol", &missing) {
            self.client.log_message(MessageType::WARNING, message).await;
        }
        let (encoding, settings) = {
            let world = lock(&self.world);
            (world.encoding(), world.settings.clone())
        };
        let query = params.query;
        let result = tokio::task::spawn_blocking(move || {
            let mut symbols = Vec::new();
            for (uri, analysed) in &ready {
                let context = Context {
                    analysed,
                    encoding,
                    settings: &settings,
                    uri,
                };
                symbols.extend(handlers::symbols::workspace_symbols(&context, &query));
            }
            // Every open program reports its imports too: one entry per
            // place.
            let mut seen = std::collections::HashSet::new();
            symbols.retain(|symbol: &WorkspaceSymbol| {
                let place = match &symbol.location {
                    OneOf::Left(location) => (
                        location.uri.as_str().to_owned(),
                        Some((location.range.start, location.range.end)),
                    ),
                    OneOf::Right(location) => (location.uri.as_str().to_owned(), None),
                };
                seen.insert((
                    symbol.name.clone(),
                    place.0,
                    place
                        .1
                        .map(|(s, e)| (s.line, s.character, e.line, e.character)),
                ))
            });
            symbols
        })
        .await;
        match result {
            Ok(symbols) => Ok(Some(OneOf::Right(symbols))),
            Err(error) => {
                self.client
                    .log_message(
                        MessageType::ERROR,
                        format!("workspaceSymbol failed: {error}"),
                    )
                    .await;
                Err(Error::internal_error())
            }
        }
    }

    async fn semantic_tokens_full(
        &self,
        params: SemanticTokensParams,
    ) -> Result<Option<SemanticTokensResult>> {
        self.request("semanticTokens", &params.text_document.uri.clone(), |c| {
            handlers::semantic_tokens::full(c).map(SemanticTokensResult::Tokens)
        })
        .await
    }

    async fn semantic_tokens_full_delta(
        &self,
        params: SemanticTokensDeltaParams,
    ) -> Result<Option<SemanticTokensFullDeltaResult>> {
        let previous = params.previous_result_id;
        self.request(
            "semanticTokensDelta",
            &params.text_document.uri.clone(),
            move |c| handlers::semantic_tokens::delta(c, &previous),
        )
        .await
    }

    async fn inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        let range = params.range;
        let tooltips = if lock(&self.world).client_inlay_resolve {
            handlers::inlay_hints::Tooltips::OnResolve
        } else {
            handlers::inlay_hints::Tooltips::Now
        };
        self.request("inlayHint", &params.text_document.uri.clone(), move |c| {
            handlers::inlay_hints::inlay_hints_with(c, range, tooltips)
        })
        .await
    }

    async fn inlay_hint_resolve(&self, hint: InlayHint) -> Result<InlayHint> {
        let Some(uri) = handlers::inlay_hints::resolve_target(&hint) else {
            return Ok(hint);
        };
        let unresolved = hint.clone();
        let resolved = self
            .request("inlayHint/resolve", &uri, move |c| {
                Some(handlers::inlay_hints::resolve(c, hint))
            })
            .await?;
        Ok(resolved.unwrap_or(unresolved))
    }

    async fn code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        self.request(
            "codeLens",
            &params.text_document.uri.clone(),
            handlers::code_lens::code_lenses,
        )
        .await
    }

    async fn code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        let range = params.range;
        self.request("codeAction", &params.text_document.uri.clone(), move |c| {
            handlers::code_actions::code_actions(c, range)
        })
        .await
    }

    async fn folding_range(&self, params: FoldingRangeParams) -> Result<Option<Vec<FoldingRange>>> {
        self.request(
            "foldingRange",
            &params.text_document.uri.clone(),
            handlers::folding::folding_ranges,
        )
        .await
    }

    async fn selection_range(
        &self,
        params: SelectionRangeParams,
    ) -> Result<Option<Vec<SelectionRange>>> {
        let positions = params.positions;
        self.request(
            "selectionRange",
            &params.text_document.uri.clone(),
            move |c| handlers::folding::selection_ranges(c, &positions),
        )
        .await
    }

    async fn formatting(&self, params: DocumentFormattingParams) -> Result<Option<Vec<TextEdit>>> {
        self.request(
            "formatting",
            &params.text_document.uri.clone(),
            handlers::formatting::formatting,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documents_left_out_are_named_up_to_a_bound() {
        assert_eq!(left_out("workspace/symbol", &[]), None);
        let uri = |n: usize| format!("file:///p/{n}.op2").parse::<Uri>().expect("a URI");
        assert_eq!(
            left_out(
                "workspace/symbol",
                &[(uri(0), Missing::NotReady), (uri(1), Missing::Abandoned)]
            )
            .as_deref(),
            Some(
                "workspace/symbol answered without 2 documents: file:///p/0.op2 (not analysed \
                 within 1 s); file:///p/1.op2 (its analysis was abandoned)"
            )
        );
        let many: Vec<(Uri, Missing)> = (0..MOST_NAMED + 3)
            .map(|n| (uri(n), Missing::Modified))
            .collect();
        let message = left_out("workspace/symbol", &many).expect("a message");
        assert!(message.starts_with("workspace/symbol answered without 19 documents: "));
        assert!(message.ends_with("file:///p/15.op2 (changed meanwhile); and 3 more"));
        assert_eq!(message.matches("changed meanwhile").count(), MOST_NAMED);
    }

    /// What `op2 lsp` makes of its environment: the production values
    /// unless told otherwise, as before the options were per server.
    #[test]
    fn the_options_of_the_environment() {
        assert_eq!(Options::from_vars(None, None), Options::default());
        assert_eq!(
            Options::default(),
            Options {
                test_hooks: false,
                analysis_limit: Duration::from_secs(20)
            }
        );
        assert!(Options::from_vars(Some("1"), None).test_hooks);
        assert!(!Options::from_vars(Some("0"), None).test_hooks);
        assert!(!Options::from_vars(Some("yes"), None).test_hooks);
        assert_eq!(
            Options::from_vars(None, Some("1500")).analysis_limit,
            Duration::from_millis(1500)
        );
        for ignored in ["", "1.5", "-1", "20s", "99999999999999999999"] {
            assert_eq!(
                Options::from_vars(None, Some(ignored)).analysis_limit,
                ANALYSIS_LIMIT,
                "{ignored:?}"
            );
        }
    }
}
