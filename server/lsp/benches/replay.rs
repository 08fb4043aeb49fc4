//! A recorded editing session replayed through the real transport
//! (`op2_lsp::serve` over an in-memory duplex, `Content-Length` framed
//! JSON-RPC): someone types a new kernel character by character into the
//! 5,000-line program `op2_syntax::synth::program(5_000)`, with typos and
//! backspaces and an auto-indenting editor, then the par_loop line that runs
//! it. The session is `sessions/typing.json`: every `didChange` with the
//! time it was typed.
//!
//! Two measurements:
//!
//! - criterion: the whole session sent as one burst, timed from the first
//!   `didChange` until the diagnostics of the final version arrive (what a
//!   paste or a fast macro costs; every stale analysis the server does not
//!   cancel shows up here);
//! - printed: the session replayed at its recorded speed (about 5
//!   keystrokes a second) and at twice that, and for each keystroke the
//!   time until the diagnostics of that version or a later one arrive:
//!   keystroke to diagnostics as the editor sees it, percentiles over the
//!   session.
//!
//! `OP2_REGENERATE_SESSION=1 cargo bench -p op2-lsp --bench replay`
//! rewrites the session file (deterministically) before running.

#![allow(clippy::print_stdout)]

#[path = "../tests/support/stats.rs"]
mod stats;
#[path = "../tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stats::Samples;
use support::text::{Doc, Encoding};
use support::{Rng, Session};

const URI: &str = "file:///bench/typing.op2";

/// A recorded session.
#[derive(Debug, Serialize, Deserialize)]
struct Recording {
    /// What was typed.
    description: String,
    /// The text the session starts from.
    base: Base,
    /// The document's URI.
    uri: String,
    /// The position encoding of the changes.
    encoding: String,
    /// Every `didChange`, in order.
    events: Vec<Event>,
    /// What the session ends with.
    last: Last,
}

#[derive(Debug, Serialize, Deserialize)]
struct Base {
    /// `op2_syntax::synth::program(lines)`.
    lines: usize,
    /// Its length and FNV-1a hash, to notice when the generator changes.
    bytes: usize,
    fnv1a: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct Event {
    /// Milliseconds since the session started.
    at_ms: u64,
    /// The document version after this change.
    version: i64,
    /// The LSP content changes.
    changes: Vec<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Last {
    version: i64,
    bytes: usize,
    /// How many diagnostics the final text has.
    diagnostics: usize,
}

fn fnv1a(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{hash:016x}")
}

fn session_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/sessions/typing.json")
}

const KERNEL: &str = "kernel damp(double *res, const double *q) {
    for (int n = 0; n < 4; n++) {
        res[n] *= 0.5 * q[n];
    }
}

";
const PAR_LOOP: &str = "\n        par_loop damp over cells (p_res RW, p_q READ);";

/// Types `target` at `at` like a person in an editor that indents new
/// lines: one change per character, a newline and its indentation in one
/// change, now and then a wrong letter and a backspace.
fn type_text(
    doc: &mut Doc,
    mut at: usize,
    target: &str,
    clock: &mut u64,
    rng: &mut Rng,
    events: &mut Vec<Event>,
) {
    let mut push = |doc: &mut Doc, clock: &mut u64, change: Value| {
        doc.version += 1;
        events.push(Event {
            at_ms: *clock,
            version: doc.version,
            changes: vec![change],
        });
    };
    let mut chars = target.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        *clock += 70 + rng.below(160) as u64;
        if c == '\n' {
            let indent: String = target[i + 1..].chars().take_while(|&c| c == ' ').collect();
            for _ in 0..indent.len() {
                chars.next();
            }
            let typed = format!("\n{indent}");
            let change = doc.change(at..at, &typed);
            at += typed.len();
            push(doc, clock, change);
            *clock += 300 + rng.below(900) as u64;
            continue;
        }
        if c.is_ascii_alphabetic() && rng.below(30) == 0 {
            let change = doc.change(at..at, "x");
            push(doc, clock, change);
            *clock += 150 + rng.below(200) as u64;
            let change = doc.change(at..at + 1, "");
            push(doc, clock, change);
            *clock += 100 + rng.below(100) as u64;
        }
        let typed = c.to_string();
        let change = doc.change(at..at, &typed);
        at += typed.len();
        push(doc, clock, change);
    }
}

fn record() -> Recording {
    let base = op2_syntax::synth::program(5_000);
    let mut doc = Doc::new(&base, Encoding::Utf16);
    let mut rng = Rng::new(2026);
    let mut clock = 0;
    let mut events = Vec::new();
    let kernel_at = doc.text.find("kernel update(").expect("the update kernel");
    type_text(
        &mut doc,
        kernel_at,
        KERNEL,
        &mut clock,
        &mut rng,
        &mut events,
    );
    clock += 2_500;
    let line = doc
        .text
        .find("par_loop update over cells")
        .expect("the update par_loop");
    let line_end = line + doc.text[line..].find('\n').expect("a line end");
    type_text(
        &mut doc,
        line_end,
        PAR_LOOP,
        &mut clock,
        &mut rng,
        &mut events,
    );
    let path = PathBuf::from("/bench/typing.op2");
    let diagnostics = support::expected_diagnostics(&doc.text, URI, Encoding::Utf16, Some(&path));
    Recording {
        description: "typing a kernel `damp` character by character before `kernel update` (typos fixed with \
                      backspace, an editor that indents new lines), then `par_loop damp over cells (p_res RW, \
                      p_q READ);` after the par_loop of `update` in main"
            .into(),
        base: Base { lines: 5_000, bytes: base.len(), fnv1a: fnv1a(&base) },
        uri: URI.into(),
        encoding: "utf-16".into(),
        last: Last { version: doc.version, bytes: doc.text.len(), diagnostics: diagnostics.len() },
        events,
    }
}

/// The session and the text it starts from.
fn load() -> (Recording, String) {
    let path = session_path();
    if std::env::var_os("OP2_REGENERATE_SESSION").is_some() {
        let recording = record();
        // One event per line: readable, and diffs stay small.
        let mut value = serde_json::to_value(&recording).expect("serialisable");
        let events = value["events"].take();
        let mut json = serde_json::to_string_pretty(&value).expect("serialisable");
        let lines: Vec<String> = events
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| format!("    {e}"))
            .collect();
        json = json.replacen(
            "\"events\": null",
            &format!("\"events\": [\n{}\n  ]", lines.join(",\n")),
            1,
        );
        std::fs::create_dir_all(path.parent().expect("a directory")).expect("create sessions/");
        std::fs::write(&path, json + "\n").expect("write the session");
    }
    let json = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); regenerate it with OP2_REGENERATE_SESSION=1",
            path.display()
        )
    });
    let recording: Recording = serde_json::from_str(&json).expect("a session file");
    let base = op2_syntax::synth::program(recording.base.lines);
    assert!(
        base.len() == recording.base.bytes && fnv1a(&base) == recording.base.fnv1a,
        "synth::program changed since the session was recorded; regenerate it with OP2_REGENERATE_SESSION=1"
    );
    (recording, base)
}

/// A session with the base text open and analysed.
async fn open(base: &str) -> Session {
    let mut session = Session::in_process();
    session.initialize(&[], None, None).await;
    session.did_open(URI, base, 1);
    session.diagnostics(URI, 1).await;
    session
}

/// Replays every event at once; returns the time to the final diagnostics.
async fn burst(recording: &Recording, base: &str) -> Duration {
    let mut session = open(base).await;
    let start = Instant::now();
    for event in &recording.events {
        session.did_change(URI, event.version, event.changes.clone());
    }
    let diagnostics = session.diagnostics(URI, recording.last.version).await;
    let elapsed = start.elapsed();
    assert_eq!(
        diagnostics.len(),
        recording.last.diagnostics,
        "the final diagnostics"
    );
    session.shutdown().await;
    elapsed
}

/// Replays the session at `speed` times its recorded pace; returns, per
/// keystroke, the time until diagnostics of its version or a later one
/// arrived.
async fn paced(recording: &Recording, base: &str, speed: u64) -> Samples {
    let mut session = open(base).await;
    session.forget();
    let start = Instant::now();
    let mut sent = Vec::new();
    for event in &recording.events {
        let due = start + Duration::from_millis(event.at_ms / speed);
        session.pump(due).await;
        session.did_change(URI, event.version, event.changes.clone());
        sent.push((event.version, Instant::now()));
    }
    session.diagnostics(URI, recording.last.version).await;
    let published: Vec<(i64, Instant)> = session
        .received
        .iter()
        .zip(&session.received_at)
        .filter(|(m, _)| m["method"] == "textDocument/publishDiagnostics")
        .filter_map(|(m, at)| Some((m["params"]["version"].as_i64()?, *at)))
        .collect();
    let mut samples = Samples::new();
    for (version, at) in sent {
        let answered = published
            .iter()
            .find(|(v, t)| *v >= version && *t >= at)
            .map(|(_, t)| *t);
        samples.push(answered.expect("every keystroke is eventually answered") - at);
    }
    session.shutdown().await;
    samples
}

fn replay(c: &mut Criterion) {
    let (recording, base) = load();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    println!(
        "session: {} didChange notifications over {:.1} s, final version {}, {} diagnostics at the end",
        recording.events.len(),
        recording.events.last().map_or(0, |e| e.at_ms) as f64 / 1e3,
        recording.last.version,
        recording.last.diagnostics
    );

    for speed in [1, 2] {
        let latencies = runtime.block_on(paced(&recording, &base, speed));
        latencies.report(&format!(
            "lsp replay typing session 5000 lines at {speed}x, keystroke to diagnostics over the transport"
        ));
    }

    let mut bursts = Samples::new();
    c.bench_function(
        "lsp replay typing session 5000 lines as a burst, to final diagnostics",
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let elapsed = runtime.block_on(burst(&recording, &base));
                    bursts.push(elapsed);
                    total += elapsed;
                }
                total
            });
        },
    );
    if !bursts.is_empty() {
        bursts.report(
            "lsp replay typing session 5000 lines as a burst (every run, warm-up included)",
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = replay
}
criterion_main!(benches);
