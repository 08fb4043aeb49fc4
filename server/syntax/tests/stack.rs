//! Tree-sitter's C library recurses once per merged node of its parse stack
//! when it frees stack versions, and error recovery can chain such nodes as
//! long as the text: the parse runs where the stack grows with the text
//! (`parse::on_parse_stack`), whatever the caller's thread.

use op2_syntax::{Parse, ParseLimit};

/// 44,000 `= err[` after an assignment in a kernel (fuzz campaign seed 2,
/// case 22135: 267 KB) went 18,600 frames deep in `stack_node_release` and
/// overflowed the 2 MiB stack of a language server or fuzz worker thread.
/// Its recovery asks for more memory than the bound allows (29 KiB per
/// progress call), which stops it long before its end, so it is parsed
/// here without the bounds (`Checks(u64::MAX)`), to the whole chain.
#[test]
fn error_recovery_that_chains_the_parse_stack_does_not_overflow_a_small_stack() {
    let text = format!(
        "set cells;\ndat p: double on cells;\nkernel k(const double *err, double *m) {{\n    *m = err[{}\n}}\nmain {{ }}\n",
        "= err[".repeat(44_000)
    );
    let length = text.len();
    let outcome = std::thread::Builder::new()
        .name("a 2 MiB thread, as the language server's".into())
        .stack_size(2 << 20)
        .spawn(move || {
            let parse = Parse::with_limit(text, ParseLimit::Checks(u64::MAX));
            (parse.tree().root_node().has_error(), parse.text().len())
        })
        .expect("a thread")
        .join()
        .expect("the parse ends without overflowing the stack");
    assert_eq!(outcome, (true, length), "parsed whole, with its errors");
}

/// Texts over 32 KiB are parsed on threads kept for it, four at a time; a
/// parse that comes while all four are busy gets a thread of its own rather
/// than waiting for one of them. Six parses here each wait, at their first
/// progress call, until all six have got that far (10 s at most): if any
/// waited for a thread, the first four would give up waiting.
#[test]
fn parses_of_long_texts_at_once_do_not_wait_for_each_other() {
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    const PARSES: usize = 6;
    let text = op2_syntax::synth::program(1_500);
    assert!(text.len() > 32 << 10, "{} bytes", text.len());
    let arrived = Mutex::new(0usize);
    let all_there = Condvar::new();
    let met = std::thread::scope(|scope| {
        let parses: Vec<_> = (0..PARSES)
            .map(|_| {
                scope.spawn(|| {
                    // Whether all the parses were there at this one's first
                    // progress call.
                    let met: Mutex<Option<bool>> = Mutex::new(None);
                    let meet = || {
                        let mut met = met.lock().expect("this parse's lock");
                        if met.is_none() {
                            let mut count = arrived.lock().expect("the count");
                            *count += 1;
                            all_there.notify_all();
                            let (count, _) = all_there
                                .wait_timeout_while(count, Duration::from_secs(10), |count| {
                                    *count < PARSES
                                })
                                .expect("the count");
                            *met = Some(*count >= PARSES);
                        }
                        false
                    };
                    let parse = Parse::new_cancellable(text.as_str(), ParseLimit::Time, &meet)
                        .expect("never cancelled");
                    assert_eq!(parse.stopped_at(), None);
                    met.into_inner().expect("this parse's lock") == Some(true)
                })
            })
            .collect();
        parses
            .into_iter()
            .map(|parse| parse.join().expect("the parse's thread"))
            .collect::<Vec<_>>()
    });
    assert_eq!(met, vec![true; PARSES], "every parse ran with the others");
}
