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
