//! Random edit sequences replayed over the real transport: after every
//! burst of didChange notifications, the diagnostics the server publishes
//! for the last version, its document symbols, folding ranges and semantic
//! tokens (which place every token) are exactly those of the client's text;
//! at the end a fresh session opened with that text answers the same. The
//! examples are edited without their comments, which no answer shows.

use crate::support;

use proptest::prelude::*;
use serde_json::Value;
use support::text::{self, Doc};
use support::{Session, diagnostics_difference, expected_diagnostics};

const URI: &str = "file:///nonexistent/op2-tests/replayed.op2";

/// One edit: what to do, where (a fraction of the text's length), what to
/// type, how many characters to remove, and whether it shares the
/// notification of the edit before it.
#[derive(Clone, Debug)]
struct Edit {
    kind: u8,
    at: u16,
    piece: usize,
    length: usize,
    together: bool,
}

fn edit() -> impl Strategy<Value = Edit> {
    (
        0u8..4,
        any::<u16>(),
        0..text::pieces().len(),
        1usize..8,
        prop::bool::weighted(0.15),
    )
        .prop_map(|(kind, at, piece, length, together)| Edit {
            kind,
            at,
            piece,
            length,
            together,
        })
}

impl Edit {
    fn apply(&self, doc: &mut Doc) -> Value {
        let start = text::next_position(&doc.text, (self.at as usize * doc.text.len()) >> 16);
        let piece = text::pieces()[self.piece];
        match self.kind {
            0 | 1 => doc.change(start..start, piece),
            2 => {
                let end = text::advance(&doc.text, start, self.length);
                doc.change(start..end, "")
            }
            _ => {
                let end = text::advance(&doc.text, start, self.length);
                doc.change(start..end, piece)
            }
        }
    }
}

async fn replay(
    example: &str,
    utf8: bool,
    edits: Vec<Edit>,
    bursts: Vec<usize>,
) -> Result<(), TestCaseError> {
    let base = support::without_comments(&support::example(example));
    let offered: &[&str] = if utf8 { &["utf-8", "utf-16"] } else { &[] };
    let mut session = Session::in_process();
    session.initialize(offered, None, None).await;
    let mut doc = Doc::new(&base, session.encoding);
    session.did_open(URI, &doc.text, doc.version);

    let mut edits = edits.into_iter().peekable();
    for (n, size) in bursts.iter().cycle().enumerate() {
        if edits.peek().is_none() {
            break;
        }
        for _ in 0..*size {
            let Some(first) = edits.next() else { break };
            let mut changes = vec![first.apply(&mut doc)];
            while let Some(next) = edits.next_if(|e| e.together) {
                changes.push(next.apply(&mut doc));
            }
            doc.version += 1;
            session.did_change(URI, doc.version, changes);
        }
        let published = session.diagnostics(URI, doc.version).await;
        let expected = expected_diagnostics(&doc.text, URI, doc.encoding, None);
        let views = support::views(&mut session, URI).await;
        if let Some(difference) = support::views_difference(
            &views,
            &support::expected_views(&doc.text, URI, doc.encoding),
        ) {
            return Err(TestCaseError::fail(format!(
                "burst {n} (version {}): {difference}\ntext: {:?}",
                doc.version, doc.text
            )));
        }
        if let Some(difference) = diagnostics_difference(&published, &expected) {
            return Err(TestCaseError::fail(format!(
                "burst {n} (version {}): {difference}\ntext: {:?}",
                doc.version, doc.text
            )));
        }
    }

    // A fresh session opened with the final text answers the same.
    let views = support::views(&mut session, URI).await;
    let mut fresh = Session::in_process();
    fresh.initialize(offered, None, None).await;
    fresh.did_open(URI, &doc.text, 1);
    fresh.diagnostics(URI, 1).await;
    prop_assert_eq!(
        support::views(&mut fresh, URI).await,
        views,
        "text {:?}",
        doc.text
    );
    fresh.shutdown().await;
    session.shutdown().await;
    Ok(())
}

/// The property's case count: 32 in the test suite, or
/// `OP2_TRANSPORT_CASES` for a long search by hand (docs/reliability.md).
/// proptest's own `PROPTEST_CASES` only changes its default, which a
/// `cases:` written here overrides; an unreadable value is an error, not
/// a silent 32.
fn cases() -> u32 {
    match std::env::var("OP2_TRANSPORT_CASES") {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("OP2_TRANSPORT_CASES={value:?} is not a count")),
        Err(_) => 32,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 200, ..ProptestConfig::default() })]

    #[test]
    fn the_servers_text_is_the_clients_after_random_edits(
        example in prop::sample::select(vec!["airfoil.op2", "jacobi.op2", "scatter.op2", "dot_product.op2"]),
        utf8 in any::<bool>(),
        edits in prop::collection::vec(edit(), 100),
        bursts in prop::collection::vec(1usize..40, 1..5),
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
        runtime.block_on(replay(example, utf8, edits, bursts))?;
    }
}
