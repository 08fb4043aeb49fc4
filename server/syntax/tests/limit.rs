//! A parse that takes longer than its text's size allows gives up (E002):
//! the text before the line it reached is parsed and checked, the rest is
//! blank to the parser, and the next edit parses afresh. Deterministic
//! tests stop the parse after a count of tree-sitter's progress calls
//! (`ParseLimit::Checks`); the tests of the real deadline use inputs whose
//! unbounded parse takes far longer than the deadline (F11, F12) and real
//! programs far larger than any written by hand, which must never meet it.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use op2_syntax::{Cancelled, Code, FileId, Parse, ParseLimit, synth};

/// `text` with everything from `cut` on but line breaks made spaces.
fn blanked(text: &str, cut: usize) -> String {
    let rest: String = text[cut..]
        .chars()
        .flat_map(|c| {
            let keep = c == '\n' || c == '\r';
            std::iter::repeat_n(
                if keep { c } else { ' ' },
                if keep { 1 } else { c.len_utf8() },
            )
        })
        .collect();
    format!("{}{rest}", &text[..cut])
}

/// What every parse that gave up must satisfy: it stopped at a line start,
/// its tree is that of the text blanked from there, E002 is reported there
/// once, and every other error lies before it.
fn assert_gave_up_well(parse: &Parse) -> usize {
    let text = parse.text();
    let cut = parse.stopped_at().expect("the parse gave up");
    assert!(
        cut == 0 || matches!(text.as_bytes()[cut - 1], b'\n' | b'\r'),
        "stopped at {cut}, not a line start"
    );
    assert_ne!(text.as_bytes().get(cut), Some(&b'\n'), "inside a `\\r\\n`");
    let root = parse.tree().root_node();
    assert_eq!(root.end_byte(), text.len(), "the tree spans the whole text");
    let prefix = Parse::new(blanked(text, cut));
    assert_eq!(prefix.stopped_at(), None);
    assert_eq!(root.to_sexp(), prefix.tree().root_node().to_sexp());
    let errors = parse.errors(FileId::MAIN);
    let stops: Vec<_> = errors.iter().filter(|e| e.code == Code::E002).collect();
    assert_eq!(stops.len(), 1, "one E002: {errors:?}");
    assert_eq!(stops[0].location.range.start as usize, cut);
    assert!(
        errors
            .iter()
            .all(|e| e.code == Code::E002 || (e.location.range.start as usize) < cut),
        "no error after the place parsing stopped: {errors:?}"
    );
    let unparsed = parse.unparsed_errors(FileId::MAIN);
    assert!(unparsed.iter().any(|e| e.code == Code::E002));
    cut
}

#[test]
fn a_parse_that_gives_up_checks_the_lines_before_the_place_it_reached() {
    // 120 lines: whole, their recovery asks for about 14 MB, under the
    // 32 MiB every parse may (400 lines ask for 147 MB and give up).
    let text = format!(
        "set cells;\nmain {{ int x = 1 }}\n{}",
        synth::broken_statement_lines(120)
    );
    let parse = Parse::with_limit(text.as_str(), ParseLimit::Checks(20));
    let cut = assert_gave_up_well(&parse);
    assert!(cut > 0, "the lines before the place reached are kept");
    let errors = parse.errors(FileId::MAIN);
    // The missing `;` in `main` (line 2) is still reported.
    assert!(
        errors
            .iter()
            .any(|e| e.code == Code::E001 && e.location.range.start < 30),
        "{errors:?}"
    );
    // Without a limit on this small input, the parse is complete.
    let complete = Parse::new(text.as_str());
    assert_eq!(complete.stopped_at(), None);
    assert!(
        complete
            .errors(FileId::MAIN)
            .iter()
            .all(|e| e.code != Code::E002)
    );
}

/// Lines ended by a lone `\r` (old Mac files; the editors and the line
/// index count them as lines): the parse stops at the start of one, not at
/// the start of the file, and E002 covers that line alone.
#[test]
fn lines_ended_by_carriage_returns_alone_are_lines_for_the_give_up() {
    let unix = format!(
        "set cells;\nmain {{ int x = 1 }}\n{}",
        synth::broken_statement_lines(400)
    );
    let limit = ParseLimit::Checks(20);
    for line_break in ["\r", "\r\n"] {
        let text = unix.replace('\n', line_break);
        let parse = Parse::with_limit(text.as_str(), limit);
        let cut = assert_gave_up_well(&parse);
        // Where it stops with `\n`, line for line.
        let line = |text: &str, cut: usize| text[..cut].matches(line_break).count();
        let unix_cut = Parse::with_limit(unix.as_str(), limit)
            .stopped_at()
            .expect("gives up");
        assert!(cut > 0, "{line_break:?}: the lines before are kept");
        assert_eq!(
            line(&text, cut),
            unix[..unix_cut].matches('\n').count(),
            "{line_break:?}"
        );
        let errors = parse.errors(FileId::MAIN);
        let stop = errors.iter().find(|e| e.code == Code::E002).expect("E002");
        let range = stop.location.range;
        assert_eq!(
            &text[range.start as usize..range.end as usize],
            "s[2] =}",
            "{line_break:?}: one line"
        );
    }
}

#[test]
fn the_next_edit_after_a_give_up_parses_afresh() {
    let limit = ParseLimit::Checks(20);
    let broken = synth::broken_statement_lines(400);
    let mut parse = Parse::with_limit(broken.as_str(), limit);
    assert_gave_up_well(&parse);

    // An edit that keeps the run of errors: the same as a fresh parse
    // within the same limit (an incremental parse would reuse the tree of
    // the blanked text).
    let at = broken.len() - 8;
    parse.edit(at..at, "s[1] = 2;\n").expect("valid edit");
    let fresh = Parse::with_limit(parse.text(), limit);
    assert_eq!(parse.stopped_at(), fresh.stopped_at());
    assert_eq!(
        parse.tree().root_node().to_sexp(),
        fresh.tree().root_node().to_sexp()
    );
    assert_gave_up_well(&parse);

    // Deleting the run of errors: the whole text is parsed and checked.
    let start = parse.text().find("s[2] =}").expect("a broken line");
    let end = parse.text().len();
    parse.edit(start..end, "}\n").expect("valid edit");
    assert_eq!(parse.stopped_at(), None);
    assert!(!parse.tree().root_node().has_error(), "{}", parse.text());
    assert!(parse.errors(FileId::MAIN).is_empty());

    // Several edits at once take the same path.
    let mut many = Parse::with_limit(broken.as_str(), limit);
    many.edit_many([(0..0, "set faces;\n"), (0..0, "// two edits\n")])
        .expect("valid edits");
    let fresh = Parse::with_limit(many.text(), limit);
    assert_eq!(many.stopped_at(), fresh.stopped_at());
    assert_gave_up_well(&many);
}

#[test]
fn an_incremental_parse_that_gives_up_keeps_the_lines_before() {
    let limit = ParseLimit::Checks(20);
    let mut parse = Parse::with_limit(
        "set cells;\nkernel k(double *s) {\n    s[0] = 1;\n}\n",
        limit,
    );
    assert_eq!(parse.stopped_at(), None);
    // Pasting the run of errors into the kernel.
    let at = parse.text().rfind('}').expect("the closing brace");
    parse
        .edit(at..at, &"s[2] =}\n".repeat(400))
        .expect("valid edit");
    assert_gave_up_well(&parse);
}

/// A cancellation signal that says "cancel" from its `after + 1`th
/// question on, and counts the questions (one per tree-sitter progress
/// call, a hundred parse actions).
fn cancel_after(after: u64) -> (AtomicU64, impl Fn(&AtomicU64) -> bool) {
    (AtomicU64::new(0), move |asked: &AtomicU64| {
        asked.fetch_add(1, Ordering::Relaxed) + 1 > after
    })
}

#[test]
fn a_cancelled_parse_stops_at_the_next_progress_call_and_yields_nothing() {
    // Short enough to parse whole within the memory allowed (see above).
    let broken = synth::broken_statement_lines(120);
    // Uncancelled, this parse asks many times and is complete.
    let (asked, signal) = cancel_after(u64::MAX);
    let whole = Parse::new_cancellable(broken.as_str(), ParseLimit::Time, &|| signal(&asked))
        .expect("never cancelled");
    assert_eq!(whole.stopped_at(), None);
    let full = asked.load(Ordering::Relaxed);
    assert!(full > 100, "{full} progress calls");
    assert_eq!(
        whole.tree().root_node().to_sexp(),
        Parse::new(broken.as_str()).tree().root_node().to_sexp()
    );

    // Cancelled at the fourth call: nothing more is parsed, nothing
    // retried.
    let (asked, signal) = cancel_after(3);
    let cancelled = Parse::new_cancellable(broken.as_str(), ParseLimit::Time, &|| signal(&asked));
    assert_eq!(cancelled.map(|_| ()), Err(Cancelled));
    assert_eq!(
        asked.load(Ordering::Relaxed),
        4,
        "stopped where it was cancelled, of {full}"
    );

    // A parse that gave up is cancelled in its retries too: the first
    // parse stops at its 21st call (`Checks(20)`), the retries ask on.
    let (asked, signal) = cancel_after(25);
    let cancelled =
        Parse::new_cancellable(broken.as_str(), ParseLimit::Checks(20), &|| signal(&asked));
    assert_eq!(cancelled.map(|_| ()), Err(Cancelled));
    assert_eq!(asked.load(Ordering::Relaxed), 26);

    // An incremental parse: pasting the run of errors into a kernel.
    let base = Parse::new("set cells;\nkernel k(double *s) {\n    s[0] = 1;\n}\n");
    let at = base.text().rfind('}').expect("the closing brace");
    let edits = [(at..at, broken.as_str())];
    let (asked, signal) = cancel_after(u64::MAX);
    let (edited, result) = base
        .clone()
        .edit_many_cancellable(edits.clone(), &|| signal(&asked))
        .expect("never cancelled");
    result.expect("valid edit");
    let full = asked.load(Ordering::Relaxed);
    assert!(full > 100, "{full} progress calls");
    let mut plain = base.clone();
    plain.edit_many(edits.clone()).expect("valid edit");
    assert_eq!(edited.text(), plain.text());
    assert_eq!(
        edited.tree().root_node().to_sexp(),
        plain.tree().root_node().to_sexp()
    );
    let (asked, signal) = cancel_after(2);
    let cancelled = base.edit_many_cancellable(edits, &|| signal(&asked));
    assert_eq!(cancelled.map(|_| ()), Err(Cancelled));
    assert_eq!(
        asked.load(Ordering::Relaxed),
        3,
        "stopped where it was cancelled, of {full}"
    );
}

#[test]
fn runs_of_errors_give_up_within_the_time_allowed() {
    // Unbounded, this parse takes about a minute (6.7 s at 2,000 lines,
    // quadratic); the deadline for its 48 KB is 1.7 s.
    let parse = Parse::new(synth::broken_statement_lines(6_000));
    let cut = assert_gave_up_well(&parse);
    assert!(cut > 0, "the kernel's first lines are kept");
}

#[test]
fn deep_nesting_with_an_error_inside_gives_up_within_the_time_allowed() {
    // Unbounded, about half a minute (N^2.4: 1.9 s at 2,000 heads); the
    // deadline for its 156 KB is 3.4 s.
    let parse = Parse::new(synth::nested_ifs_with_a_stray_bracket(6_000));
    assert_gave_up_well(&parse);
}

#[test]
fn error_recovery_that_asks_for_too_much_memory_gives_up() {
    // Fuzz seed 3, case 520799, at 87 KB: unbounded, its recovery asks for
    // 3.1 GB at the end of the text (the unit test in `limit.rs` checks
    // that the parse stops before the end).
    let text = synth::unclosed_subscripts_in_a_call(8_000, 0);
    let parse = Parse::new(text.as_str());
    let cut = assert_gave_up_well(&parse);
    assert_eq!(cut, text.find("    *lo").expect("the statement"));
    let errors = parse.errors(FileId::MAIN);
    let stop = errors.iter().find(|e| e.code == Code::E002).expect("E002");
    assert!(
        stop.message
            .contains("needed more memory than a file of its size is allowed"),
        "{}",
        stop.message
    );
    // A real program as long parses whole.
    let mut lines = 1_000;
    while synth::program(lines).len() < text.len() {
        lines += 500;
    }
    let program = Parse::new(synth::program(lines));
    assert_eq!(program.stopped_at(), None);
    assert!(program.errors(FileId::MAIN).is_empty());
}

#[test]
fn a_valid_file_ending_in_a_long_run_of_comments_parses_whole() {
    // The comments after the last item wait on the parse stack until the
    // end of the file, each one parse action and about 1.5 KiB of memory
    // asked for: far more per progress call than any program, and the parse
    // gave up at about 1 MB (E002 for memory) before
    // `MEMORY_PER_HELD_COMMENT`.
    let program = "set cells;\ndat p: double on cells;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k over cells (p WRITE); }\n";
    // (25,000 lines of 80 bytes gave up at line 12,504; 30,000 at 15,004.)
    for (comment, lines) in [
        (format!("// {}\n", "x".repeat(76)), 25_000),
        (format!("// {}\n", "x".repeat(76)), 30_000),
        ("/* a short one */\n".to_owned(), 100_000),
    ] {
        let text = format!("{program}{}", comment.repeat(lines));
        let parse = Parse::new(text.as_str());
        assert_eq!(parse.stopped_at(), None, "a {} byte file", text.len());
        assert!(
            parse.errors(FileId::MAIN).is_empty(),
            "a clean file stays clean"
        );
    }
}

#[test]
fn large_real_programs_never_meet_the_deadline() {
    // The examples concatenated to 4 MB (their names clash, which the
    // parser does not mind) and a 2 MB generated program: about 1 s and
    // 0.5 s to parse where 65 s and 33 s are allowed, and about 40 bytes of
    // memory asked for per byte where 512 are.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
    let mut examples = String::new();
    for entry in std::fs::read_dir(&dir).expect("docs/examples") {
        let path = entry.expect("an entry").path();
        if path.extension().is_some_and(|ext| ext == "op2") {
            examples.push_str(&std::fs::read_to_string(&path).expect("an example"));
        }
    }
    assert!(
        examples.len() > 10_000,
        "the examples: {} bytes",
        examples.len()
    );
    let many = examples.repeat(4_000_000 / examples.len());
    for text in [many, synth::program(50_000)] {
        let parse = Parse::new(text.as_str());
        assert_eq!(parse.stopped_at(), None, "a {} byte program", text.len());
        assert!(
            parse.errors(FileId::MAIN).is_empty(),
            "a clean program stays clean"
        );
    }
}
