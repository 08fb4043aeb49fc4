//! One keystroke in the language server on a 5,000-line program
//! (`op2_syntax::synth::program(5_000)`), against the budgets of
//! architecture.md:
//!
//! - applying it (`OpenDocument::apply_changes`: position conversion and
//!   rope edit, what `didChange` does under the server's lock; then its
//!   parse job, which the document's worker runs off the lock: tree edit
//!   and reparse): p95 < 1 ms;
//! - keystroke to diagnostics computed: applying it, then what the server
//!   does before publishing (snapshot of the document and the overlay of
//!   open files, `world::analyse` with the warm analyser, conversion to LSP
//!   diagnostics): p95 < 20 ms;
//! - `parse_job` alone, what the server takes under its lock for each
//!   analysis (no budget of its own; docs/benchmarks.md, "The document's
//!   text under the lock").
//!
//! Each comes in two kinds: a keystroke that keeps the program valid
//! (typing a digit into `1.0e3` and deleting it again), and one that leaves
//! a syntax error (`dx = x1[0]` becomes `dx == x1[0]`), the common case
//! while typing, which parses the kernel it breaks afresh (see
//! `Parse::edit`).
//!
//! Criterion measures the mean; before it, each benchmark times a fixed
//! number of single keystrokes and prints their percentiles (`percentiles
//! NAME: … p95=…`), since the budgets are about p95 of single keystrokes.

#![allow(clippy::print_stdout)]

#[path = "../tests/support/stats.rs"]
mod stats;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use op2_analysis::Analyser;
use op2_lsp::documents::{Document, OpenDocument, PositionEncoding, Snapshot};
use op2_lsp::world::{Entry, World, analyse, analyse_cancellable};
use stats::Samples;
use tower_lsp_server::lsp_types::{Range, TextDocumentContentChangeEvent, Uri};

const ENCODING: PositionEncoding = PositionEncoding::Utf16;

/// The change event replacing `remove` bytes at `offset` by `text`.
fn change(
    document: &Document,
    offset: usize,
    remove: usize,
    text: &str,
) -> Vec<TextDocumentContentChangeEvent> {
    let range = Range {
        start: document.position(offset, ENCODING),
        end: document.position(offset + remove, ENCODING),
    };
    change_at(range, text)
}

fn change_at(range: Range, text: &str) -> Vec<TextDocumentContentChangeEvent> {
    vec![TextDocumentContentChangeEvent {
        range: Some(range),
        range_length: None,
        text: text.into(),
    }]
}

/// The program and the two places keystrokes go.
struct Program {
    text: String,
    /// Inside `1.0e3` in a kernel in the middle: a digit typed here keeps
    /// the program valid.
    valid_at: usize,
    /// After `dx =` in a kernel in the middle: a `=` typed here is a syntax
    /// error.
    breaking_at: usize,
}

fn program() -> Program {
    let text = op2_syntax::synth::program(5_000);
    assert!(
        text.lines().count() >= 4_900,
        "{} lines",
        text.lines().count()
    );
    let middle = text.len() / 2;
    let valid_at = text[middle..]
        .find("= 1.0e3;")
        .map(|i| middle + i + 2)
        .expect("a kernel body");
    let breaking_at = text[middle..]
        .find("dx = x1[0]")
        .map(|i| middle + i + 4)
        .expect("a kernel body");
    Program {
        text,
        valid_at,
        breaking_at,
    }
}

/// A world holding the document the way the server does, with a warm
/// analyser.
struct Server {
    world: World,
    uri: Uri,
}

impl Server {
    fn new(text: &str) -> Server {
        let uri: Uri = "file:///bench/program.op2".parse().expect("a URI");
        let path = PathBuf::from("/bench/program.op2");
        let mut world = World {
            encoding: Some(ENCODING),
            ..World::default()
        };
        let entry = Entry::new(OpenDocument::new(text, 1), Some(path));
        world.documents.insert(uri.clone(), entry);
        let mut server = Server { world, uri };
        // The analysis finds nothing; code generation reports that 225
        // par_loops need more output pins than POETS allows (E802, one per
        // device type), which is what the server publishes.
        let overlay = server.world.overlay(None);
        let entry = server.entry();
        let analysed = analyse(
            entry.document.parsed(),
            entry.path.clone(),
            &entry.engine,
            &overlay,
        );
        assert!(
            analysed.analysis.diagnostics.is_empty(),
            "the generated program analyses cleanly"
        );
        assert!(
            analysed
                .diagnostics
                .iter()
                .all(|d| d.code == op2_syntax::Code::E802)
        );
        server.diagnostics();
        server
    }

    fn entry(&mut self) -> &mut Entry {
        self.world
            .documents
            .get_mut(&self.uri)
            .expect("the document")
    }

    /// What `did_change` does under the world's lock (the text's edit),
    /// then the document's worker off the lock (the parse).
    fn keystroke(&mut self, offset: usize, remove: usize, text: &str) {
        let entry = self.entry();
        let range = Range {
            start: entry.document.position(offset, ENCODING),
            end: entry.document.position(offset + remove, ENCODING),
        };
        let version = entry.document.version() + 1;
        entry
            .document
            .apply_changes(change_at(range, text), version, ENCODING);
        entry.invalidate();
        black_box(entry.document.parsed());
    }

    /// What the server's worker does from the change to the diagnostics it
    /// publishes: snapshot, analysis (cancellable, never cancelled here),
    /// conversion. Returns how many.
    fn diagnostics(&mut self) -> usize {
        let overlay = self.world.overlay(Some(&self.uri));
        let entry = self.entry();
        let (document, generation, path, engine) = (
            entry.document.parsed(),
            entry.generation(),
            entry.path.clone(),
            Arc::clone(&entry.engine),
        );
        let analysed =
            analyse_cancellable(document, generation, path, &engine, &overlay, &|| false)
                .expect("never cancelled");
        let diagnostics = op2_lsp::handlers::diagnostics::to_lsp(&analysed, &self.uri, ENCODING);
        black_box(diagnostics).len()
    }
}

/// Times `count` single runs of `run` after `setup` (which is not timed)
/// and prints their percentiles.
fn percentiles<S, T>(
    name: &str,
    count: usize,
    mut setup: impl FnMut() -> S,
    mut run: impl FnMut(S) -> T,
) {
    let mut samples = Samples::new();
    for _ in 0..count {
        let input = setup();
        let start = Instant::now();
        black_box(run(input));
        samples.push(start.elapsed());
    }
    samples.report(name);
}

fn keystroke(c: &mut Criterion) {
    let program = program();

    // A valid keystroke: type a digit, then delete it.
    let mut server = Server::new(&program.text);
    let at = program.valid_at;
    let mut typed = false;
    let mut toggle = move |server: &mut Server| {
        if typed {
            server.keystroke(at, 1, "");
        } else {
            server.keystroke(at, 0, "1");
        }
        typed = !typed;
    };
    percentiles(
        "lsp keystroke 5000 lines",
        2_000,
        || (),
        |()| toggle(&mut server),
    );
    c.bench_function("lsp keystroke 5000 lines", |b| {
        b.iter(|| toggle(&mut server))
    });

    // A keystroke that leaves a syntax error, from the valid document each
    // time (the copy is not timed).
    let valid = Server::new(&program.text);
    let breaking = program.breaking_at;
    let open = &valid.world.documents[&valid.uri].document;
    let Snapshot::Parsed(parsed) = open.parse_job() else {
        panic!("parsed when the server was made")
    };
    let changes = change(&parsed, breaking, 0, "=");
    let fresh = || open.clone();
    let type_equals = |mut document: OpenDocument| {
        document.apply_changes(changes.clone(), 2, ENCODING);
        document.parsed()
    };
    assert!(
        type_equals(fresh()).parse().tree().root_node().has_error(),
        "the keystroke breaks the program"
    );
    percentiles(
        "lsp keystroke 5000 lines, leaving an error",
        1_000,
        fresh,
        type_equals,
    );
    c.bench_function("lsp keystroke 5000 lines, leaving an error", |b| {
        b.iter_custom(|iters| timed(iters, fresh, type_equals));
    });
}

/// Total time of `iters` runs of `run`, each after an untimed `setup`.
fn timed<S, T>(iters: u64, mut setup: impl FnMut() -> S, mut run: impl FnMut(S) -> T) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let input = setup();
        let start = Instant::now();
        black_box(run(input));
        total += start.elapsed();
    }
    total
}

fn keystroke_to_diagnostics(c: &mut Criterion) {
    let program = program();

    // Valid keystrokes in one kernel: the analyser reuses every other one.
    let mut server = Server::new(&program.text);
    let at = program.valid_at;
    let mut typed = false;
    let mut step = move |server: &mut Server| {
        if typed {
            server.keystroke(at, 1, "");
        } else {
            server.keystroke(at, 0, "1");
        }
        typed = !typed;
        server.diagnostics()
    };
    percentiles(
        "lsp keystroke to diagnostics 5000 lines",
        200,
        || (),
        |()| step(&mut server),
    );
    c.bench_function("lsp keystroke to diagnostics 5000 lines", |b| {
        b.iter(|| step(&mut server))
    });

    // A keystroke that leaves a syntax error: the edit, then the analysis of
    // the broken program (its diagnostics are E001 and what follows from
    // the damaged kernel). Each starts from the valid document; the
    // analyser stays warm.
    let mut server = Server::new(&program.text);
    let breaking = program.breaking_at;
    let valid = server.entry().document.clone();
    let mut step = move |()| {
        server.entry().document = valid.clone();
        server.keystroke(breaking, 0, "=");
        let count = server.diagnostics();
        assert!(count > 0, "the broken program has diagnostics");
        count
    };
    // The document copy is inside the timing here (a rope clone and a
    // string copy of 200 kB, tens of microseconds): negligible next to the
    // analysis.
    percentiles(
        "lsp keystroke to diagnostics 5000 lines, leaving an error",
        100,
        || (),
        &mut step,
    );
    c.bench_function(
        "lsp keystroke to diagnostics 5000 lines, leaving an error",
        |b| b.iter(|| step(())),
    );
}

/// Where the time of a valid keystroke's diagnostics goes: the parts of
/// `world::analyse` and of publishing, each timed alone (printed only).
fn breakdown(_: &mut Criterion) {
    let program = program();
    let mut server = Server::new(&program.text);
    let at = program.valid_at;
    let path = std::path::Path::new("/bench/program.op2");
    let options = op2_analysis::Options::default();
    let mut analyser = Analyser::new();
    let mut generator = op2_codegen::Generator::default();
    let mut typed = false;
    let mut parts: Vec<(&str, Samples)> = [
        "snapshot (document and overlay copies)",
        "Analyser::analyse (warm)",
        "Generator::graph_type (warm)",
        "limits::check",
        "to_lsp",
    ]
    .into_iter()
    .map(|name| (name, Samples::new()))
    .collect();
    for _ in 0..100 {
        if typed {
            server.keystroke(at, 1, "");
        } else {
            server.keystroke(at, 0, "1");
        }
        typed = !typed;
        let start = Instant::now();
        let overlay = server.world.overlay(Some(&server.uri));
        let document = server.entry().document.parsed();
        parts[0].1.push(start.elapsed());
        let start = Instant::now();
        let analysis = analyser.analyse(path, document.parse(), &overlay, &options);
        parts[1].1.push(start.elapsed());
        let start = Instant::now();
        let graph = generator.graph_type(&analysis, "program");
        parts[2].1.push(start.elapsed());
        let start = Instant::now();
        black_box(op2_codegen::limits::check(analysis.lowered(), &graph));
        parts[3].1.push(start.elapsed());
        let analysed = analyse(
            document,
            Some(path.to_path_buf()),
            &Mutex::default(),
            &overlay,
        );
        let start = Instant::now();
        black_box(op2_lsp::handlers::diagnostics::to_lsp(
            &analysed,
            &server.uri,
            ENCODING,
        ));
        parts[4].1.push(start.elapsed());
        black_box((overlay, analysis, graph));
    }
    for (name, samples) in &parts {
        samples.report(&format!("breakdown of keystroke to diagnostics: {name}"));
    }
}

/// What the server takes under the world's lock for the analysis of a
/// keystroke (`OpenDocument::parse_job`: the job's base, that is the last
/// parse and the edits since, and the rope), and a request's snapshot of a
/// document that is parsed already; on the whole 5,000-line text.
fn parse_job(c: &mut Criterion) {
    let program = program();
    let mut server = Server::new(&program.text);
    let entry = server.entry();
    let mut parsed = entry.document.clone();
    assert!(matches!(parsed.parse_job(), Snapshot::Parsed(_)));
    let range = Range {
        start: entry.document.position(program.valid_at, ENCODING),
        end: entry.document.position(program.valid_at, ENCODING),
    };
    let mut typed = entry.document.clone();
    typed.apply_changes(change_at(range, "1"), 2, ENCODING);
    assert!(matches!(typed.parse_job(), Snapshot::Job(_)));
    println!("parse_job: a text of {} bytes", program.text.len());
    let name = "lsp parse_job 5000 lines, after a keystroke";
    percentiles(name, 2_000, || (), |()| typed.parse_job());
    c.bench_function(name, |b| b.iter(|| typed.parse_job()));
    let name = "lsp parse_job 5000 lines, parsed";
    let parsed = {
        parsed.parsed();
        parsed
    };
    percentiles(name, 2_000, || (), |()| parsed.parse_job());
    c.bench_function(name, |b| b.iter(|| parsed.parse_job()));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = keystroke, keystroke_to_diagnostics, breakdown, parse_job
}
criterion_main!(benches);
