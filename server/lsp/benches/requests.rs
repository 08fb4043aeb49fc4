//! Hover, go to definition and inlay hints on a 5,000-line program
//! (`op2_syntax::synth::program(5_000)`), against the budget of
//! architecture.md: p95 < 5 ms each.
//!
//! The handlers are called as the server calls them, on the analysis of the
//! current version (which the server computes once per version, after the
//! keystroke, not per request). Then hover once more through the whole
//! transport: request framed over the in-memory duplex, dispatch, the
//! handler on the blocking pool, the answer back.
//!
//! Before criterion measures each mean, a fixed number of single calls is
//! timed and their percentiles printed (`percentiles NAME: … p95=…`).

#![allow(clippy::print_stdout)]

#[path = "../tests/support/stats.rs"]
mod stats;
#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use op2_lsp::config::Settings;
use op2_lsp::documents::{Document, PositionEncoding};
use op2_lsp::handlers::{self, Context};
use op2_lsp::world::{Analysed, Overlay, analyse};
use serde_json::json;
use stats::Samples;
use tower_lsp_server::lsp_types::{Position, Range, Uri};

const ENCODING: PositionEncoding = PositionEncoding::Utf16;
const URI: &str = "file:///bench/program.op2";

fn percentiles<T>(name: &str, count: usize, mut run: impl FnMut() -> T) {
    let mut samples = Samples::new();
    for _ in 0..count {
        let start = Instant::now();
        black_box(run());
        samples.push(start.elapsed());
    }
    samples.report(name);
}

/// The byte offset of the `nth` occurrence of `needle`, plus `skip`.
fn offset_of(text: &str, needle: &str, nth: usize, skip: usize) -> usize {
    text.match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("no `{needle}` #{nth}"))
        .0
        + skip
}

fn requests(c: &mut Criterion) {
    let text = op2_syntax::synth::program(5_000);
    let analysed: Analysed = analyse(
        Document::new(&text, 1),
        Some(PathBuf::from("/bench/program.op2")),
        &Mutex::default(),
        &Overlay::default(),
    );
    assert!(
        analysed.graph.is_some(),
        "the generated program is clean and has a graph"
    );
    let settings = Settings::default();
    let uri: Uri = URI.parse().expect("a URI");
    let context = Context {
        analysed: &analysed,
        encoding: ENCODING,
        settings: &settings,
        uri: &uri,
    };
    let at = |offset: usize| analysed.document.position(offset, ENCODING);

    // Places in the middle of the file: a dat in the middle par_loop of
    // `main`, that par_loop's kernel name, a parameter inside the middle
    // kernel's body, and the set a par_loop runs over.
    let kernels = text.matches("par_loop flux_").count();
    let middle = kernels / 2;
    let par_loop = offset_of(&text, &format!("par_loop flux_{middle} over"), 0, 0);
    let places: Vec<(&str, Position)> = vec![
        (
            "a dat in a par_loop",
            at(par_loop + text[par_loop..].find("p_q[").expect("p_q") + 1),
        ),
        (
            "a kernel name in a par_loop",
            at(par_loop + "par_loop fl".len()),
        ),
        (
            "a set after over",
            at(par_loop + text[par_loop..].find("edges").expect("edges") + 1),
        ),
        ("a parameter in a kernel body", {
            let kernel = offset_of(&text, &format!("kernel flux_{middle}("), 0, 0);
            at(kernel + text[kernel..].find("/ q1[0]").expect("q1 in the body") + 2)
        }),
    ];
    for (what, position) in &places {
        assert!(
            handlers::hover::hover(&context, *position).is_some(),
            "a hover on {what}"
        );
    }

    for (what, position) in &places {
        let name = format!("lsp hover 5000 lines, {what}");
        percentiles(&name, 500, || handlers::hover::hover(&context, *position));
        c.bench_function(&name, |b| {
            b.iter(|| handlers::hover::hover(&context, black_box(*position)))
        });
    }
    for (what, position) in &places[..2] {
        let name = format!("lsp definition 5000 lines, {what}");
        assert!(
            handlers::definition::definition(&context, *position).is_some(),
            "a definition of {what}"
        );
        percentiles(&name, 500, || {
            handlers::definition::definition(&context, *position)
        });
        c.bench_function(&name, |b| {
            b.iter(|| handlers::definition::definition(&context, black_box(*position)))
        });
    }

    // Inlay hints for what an editor shows (60 lines around the middle
    // par_loop), and for the whole file.
    let line = at(par_loop).line;
    let viewport = Range {
        start: Position::new(line.saturating_sub(30), 0),
        end: Position::new(line + 30, 0),
    };
    let whole = Range {
        start: Position::new(0, 0),
        end: at(text.len()),
    };
    // Tooltips come with the hints for clients that cannot resolve them,
    // and on `inlayHint/resolve` for those that can (VS Code).
    use handlers::inlay_hints::{Tooltips, inlay_hints_with};
    for (what, range, tooltips) in [
        ("a 60-line viewport", viewport, Tooltips::Now),
        ("the whole file", whole, Tooltips::Now),
        (
            "a 60-line viewport, tooltips on resolve",
            viewport,
            Tooltips::OnResolve,
        ),
        (
            "the whole file, tooltips on resolve",
            whole,
            Tooltips::OnResolve,
        ),
    ] {
        let name = format!("lsp inlay hints 5000 lines, {what}");
        let hints = inlay_hints_with(&context, range, tooltips).expect("hints");
        assert!(!hints.is_empty(), "hints for {what}");
        percentiles(&name, if range == whole { 50 } else { 500 }, || {
            inlay_hints_with(&context, range, tooltips)
        });
        c.bench_function(&name, |b| {
            b.iter(|| inlay_hints_with(&context, black_box(range), tooltips))
        });
    }
    let hint = inlay_hints_with(&context, viewport, Tooltips::OnResolve)
        .and_then(|hints| hints.into_iter().nth(1))
        .expect("a hint");
    percentiles("lsp inlay hint resolve", 500, || {
        handlers::inlay_hints::resolve(&context, hint.clone())
    });

    // Hover through the transport.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let mut session = runtime.block_on(async {
        let mut session = support::Session::in_process();
        session.initialize(&[], None, None).await;
        session.did_open(URI, &text, 1);
        session.diagnostics(URI, 1).await;
        session
    });
    let position = places[0].1;
    let params = json!({"textDocument": {"uri": URI}, "position": {"line": position.line, "character": position.character}});
    let mut round_trip = || {
        runtime.block_on(async {
            let hover = session.call("textDocument/hover", params.clone()).await;
            assert!(!hover.is_null());
            session.forget();
            hover
        })
    };
    percentiles(
        "lsp hover 5000 lines over the transport",
        500,
        &mut round_trip,
    );
    c.bench_function("lsp hover 5000 lines over the transport", |b| {
        b.iter(&mut round_trip)
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = requests
}
criterion_main!(benches);
