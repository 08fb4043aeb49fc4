//! Full parse and single-keystroke incremental reparse of a generated
//! 5,000-line program (budget: p95 < 1 ms for a keystroke, architecture.md).

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use op2_syntax::{Parse, synth};
use std::hint::black_box;

fn parse(c: &mut Criterion) {
    let text = synth::program(5_000);
    assert!(
        text.lines().count() >= 4_900,
        "the generated program has {} lines",
        text.lines().count()
    );

    c.bench_function("parse 5000 lines", |b| {
        b.iter(|| Parse::new(black_box(text.as_str())))
    });

    // A keystroke inside a kernel in the middle of the file: type a digit,
    // then delete it, so that the text stays the same size across iterations.
    // Typing a digit into `t[n] = 1.0e3;` keeps the program valid.
    let offset = text[text.len() / 2..]
        .find("= 1.0e3;")
        .map(|i| i + text.len() / 2 + 2)
        .expect("a kernel body");
    let mut parse = Parse::new(text.as_str());
    parse.edit(offset..offset, "1").expect("valid edit");
    assert!(
        !parse.tree().root_node().has_error(),
        "the keystroke keeps the program valid"
    );
    parse.edit(offset..offset + 1, "").expect("valid edit");
    // The scan for `[` held open that every parse and reparse makes of the
    // whole text before tree-sitter sees it (`limit::MOST_OPEN_SUBSCRIPTS`):
    // part of each keystroke above.
    c.bench_function("open subscripts scan 5000 lines", |b| {
        b.iter(|| op2_syntax::limit::subscripts_past_limit(black_box(text.as_str())))
    });
    let mut typed = false;
    c.bench_function("keystroke reparse 5000 lines", |b| {
        b.iter(|| {
            if typed {
                parse.edit(offset..offset + 1, "").expect("valid edit");
            } else {
                parse.edit(offset..offset, "1").expect("valid edit");
            }
            typed = !typed;
            black_box(parse.tree().root_node());
        });
    });
}

fn broken_keystroke(c: &mut Criterion) {
    // A keystroke that leaves the file with a syntax error (a half-typed
    // operator) costs a second pass: the damaged top-level item is parsed
    // again with nothing inside it reused, so that the tree is the fresh
    // parse's (`Parse::reparse_damaged`). Each iteration starts from a copy
    // of the valid parse (a cheap copy, made outside the timing), so only
    // the breaking keystroke is measured.
    let text = synth::program(5_000);
    let offset = text[text.len() / 2..]
        .find("dx = x1[0]")
        .map(|i| i + text.len() / 2 + 3)
        .expect("a kernel body");
    let valid = Parse::new(text.as_str());
    let mut broken = valid.clone();
    broken.edit(offset..offset, "=").expect("valid edit");
    assert!(
        broken.tree().root_node().has_error(),
        "the keystroke breaks the program"
    );
    c.bench_function("keystroke reparse 5000 lines, leaving an error", |b| {
        b.iter_batched(
            || valid.clone(),
            |mut parse| {
                parse.edit(offset..offset, "=").expect("valid edit");
                parse
            },
            BatchSize::SmallInput,
        );
    });
    // A keystroke in the kernel that has the error already, keeping it:
    // the usual state while a statement is half typed.
    let mut typing = broken.clone();
    let inside = offset + 4;
    typing.edit(inside..inside, "y").expect("valid edit");
    assert!(typing.tree().root_node().has_error(), "still broken");
    let mut typed = true;
    c.bench_function("keystroke reparse 5000 lines, error kept", |b| {
        b.iter(|| {
            if typed {
                typing.edit(inside..inside + 1, "").expect("valid edit");
            } else {
                typing.edit(inside..inside, "y").expect("valid edit");
            }
            typed = !typed;
            black_box(typing.tree().root_node());
        });
    });
    // Two keystrokes reparsed at once (`Parse::edit_many`, as the language
    // server does with the changes that arrived while it was parsing): one
    // in the kernel that has the error, one in a valid kernel a quarter into
    // the file. The parts that held an error before are parsed with nothing
    // inside them reused, then those that hold one after.
    let other = text[..text.len() / 4]
        .rfind("= 1.0e3;")
        .map(|i| i + 2)
        .expect("a kernel body before the error");
    let mut batch = typing.clone();
    let mut typed = true;
    c.bench_function(
        "two keystrokes reparsed at once 5000 lines, error kept",
        |b| {
            b.iter(|| {
                if typed {
                    batch
                        .edit_many([(inside..inside + 1, ""), (other..other + 1, "")])
                        .expect("valid edits");
                } else {
                    batch
                        .edit_many([(inside..inside, "y"), (other..other, "1")])
                        .expect("valid edits");
                }
                typed = !typed;
                black_box(batch.tree().root_node());
            });
        },
    );
    // The keystroke after it, which makes the file valid again: an
    // incremental reparse of the tree that had the error.
    c.bench_function("keystroke reparse 5000 lines, fixing an error", |b| {
        b.iter_batched(
            || broken.clone(),
            |mut parse| {
                parse.edit(offset..offset + 1, "").expect("valid edit");
                parse
            },
            BatchSize::SmallInput,
        );
    });
}

fn after_a_long_main(c: &mut Criterion) {
    // A keystroke just after a syntax error in the item that follows a
    // `main` of 50,000 statements: each damaged item is parsed from the last
    // token of the item before it (`Parse::damaged_items`), here the `}` of
    // that `main`, found by walking down to its last leaf (`last_leaf`). For
    // comparison, a keystroke inside that `main`, the file otherwise valid.
    // A keystroke costs a large part of a second here: ten samples.
    const STATEMENTS: usize = 50_000;
    let mut body = String::with_capacity(STATEMENTS * 16 + 64);
    body.push_str("set cells;\nmain {\n");
    for _ in 0..STATEMENTS {
        body.push_str("    int a = 1;\n");
    }
    body.push_str("}\n");
    let broken = format!("{body}\ndat d: double on = 1.0;\n");
    // Typing a digit into `1.0` keeps the error (the set is missing).
    let after = broken
        .find("on = 1.0")
        .map(|i| i + 5)
        .expect("the broken item");
    let mut parse = Parse::new(broken.as_str());
    let root = parse.tree().root_node();
    assert!(root.has_error(), "the item after `main` is broken");
    let main = root.child(1).expect("main");
    assert!(
        main.kind() == "main_definition" && !main.has_error(),
        "`main` is intact"
    );
    parse.edit(after..after, "2").expect("valid edit");
    assert!(parse.tree().root_node().has_error(), "still broken");
    parse.edit(after..after + 1, "").expect("valid edit");

    // Typing a digit into the `1` of a statement in the middle of `main`.
    let inside = body.len() / 2;
    let inside = inside + body[inside..].find("= 1;").expect("a statement") + 2;
    let mut valid = Parse::new(body.as_str());
    assert!(!valid.tree().root_node().has_error(), "the file is valid");

    let mut group = c.benchmark_group("main of 50000 statements");
    group.sample_size(10);
    for (name, parse, offset) in [
        (
            "keystroke after an error that follows it",
            &mut parse,
            after,
        ),
        ("keystroke inside it", &mut valid, inside),
    ] {
        let mut typed = false;
        group.bench_function(name, |b| {
            b.iter(|| {
                if typed {
                    parse.edit(offset..offset + 1, "").expect("valid edit");
                } else {
                    parse.edit(offset..offset, "2").expect("valid edit");
                }
                typed = !typed;
                black_box(parse.tree().root_node());
            });
        });
    }
    group.finish();
}

fn long_main_scaling(c: &mut Criterion) {
    // How a keystroke inside one long block grows with the block, beside a
    // fresh parse of the same text: tree-sitter's incremental reparse of a
    // long repetition is superlinear, so the question is whether a
    // keystroke ever costs more than parsing the whole file again.
    let mut group = c.benchmark_group("long main");
    group.sample_size(10);
    for statements in [12_500usize, 25_000, 50_000, 100_000] {
        let mut body = String::with_capacity(statements * 16 + 32);
        body.push_str("set cells;\nmain {\n");
        for _ in 0..statements {
            body.push_str("    int a = 1;\n");
        }
        body.push_str("}\n");
        let inside = body.len() / 2;
        let inside = inside + body[inside..].find("= 1;").expect("a statement") + 2;
        group.bench_function(format!("fresh parse, {statements} statements"), |b| {
            b.iter(|| Parse::new(black_box(body.as_str())))
        });
        let mut parse = Parse::new(body.as_str());
        assert!(!parse.tree().root_node().has_error(), "the file is valid");
        let mut typed = false;
        group.bench_function(format!("keystroke inside, {statements} statements"), |b| {
            b.iter(|| {
                if typed {
                    parse.edit(inside..inside + 1, "").expect("valid edit");
                } else {
                    parse.edit(inside..inside, "2").expect("valid edit");
                }
                typed = !typed;
                black_box(parse.tree().root_node());
            });
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    parse,
    broken_keystroke,
    after_a_long_main,
    long_main_scaling
);
criterion_main!(benches);
