//! Every saved input that once found a defect is replayed through the real
//! binary (a crash in one is a finding, not the end of the test run), and
//! must pass every property now.

use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitStatus;

#[test]
fn every_regression_input_passes() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let inputs = std::fs::read_dir(&folder)
        .expect("the regressions folder exists")
        .flatten()
        .filter(|e| {
            e.path()
                .extension()
                .is_some_and(|x| x == "op2" || x == "lsp")
        })
        .count();
    if inputs == 0 {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("SKIPPED: no regression inputs in {} yet", folder.display());
        }
        return;
    }
    let (status, report) = replay(&folder, 60);
    assert!(status.success(), "{report}");
    assert!(report.contains(&format!("{inputs} cases")), "{report}");
}

/// The campaign of 0295429 (seed 18, case 1095160): a `ull[65536]` dat on
/// 716 elements, 47 million values. Alone, the campaign's worker peaked at
/// 3.7 GB on it (four engines' final states held at once), just under its
/// 4 GiB, and in the campaign, after earlier cases, it aborted. Replayed
/// here within 1 GiB of address space, where that worker aborts at once:
/// the case now stops after the build.
#[test]
fn a_case_of_a_large_dat_stays_within_the_workers_memory() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let guard = crate::temporary_folder("op2-fuzz-large-dat-");
    for extension in ["op2", "instance.json", "options"] {
        let name = format!("worker-memory-large-dat.{extension}");
        std::fs::copy(source.join(&name), guard.path().join(&name)).expect("copy the input");
    }
    let out = crate::temporary_folder("op2-fuzz-replay-");
    let args = [
        OsStr::new("replay"),
        guard.path().as_os_str(),
        OsStr::new("--memory-mb"),
        OsStr::new("1024"),
        OsStr::new("--out"),
        out.path().as_os_str(),
        OsStr::new("--quiet"),
    ];
    let (status, report) = crate::op2_fuzz(args, &[]);
    assert!(status.success(), "{report}");
    assert!(report.contains("1 cases"), "{report}");
}

/// F10 (campaign seed 22, cases 13405 and 13944): a MISSING token deep
/// inside nested blocks, or nested `if`s, overflowed the 2 MB stack of a
/// fuzz worker in the syntax error checker (tree-sitter's C recursed once
/// per level). The inputs are generated here, small and deep, rather than
/// kept (they were 32 KB and 160 KB), and replayed through the binary like
/// the files of `regressions/`, so that a stack overflow is a finding and
/// not the end of the test run.
#[test]
fn deep_inputs_with_a_missing_token_pass() {
    let depth = 20_000;
    let programs = [
        (
            "deep-blocks-missing-name.op2",
            format!(
                "set s;\nkernel k(double *q) {{\n{}q[0] = ;{}\n}}\nmain {{ }}\n",
                "{".repeat(depth),
                "}".repeat(depth)
            ),
        ),
        (
            "deep-ifs-missing-semicolon.op2",
            format!(
                "kernel k(double *q) {{\n double h = 0.0;\n{}int x = 1\n}}\nmain {{ }}\n",
                "if (h) ".repeat(depth)
            ),
        ),
    ];
    replay_generated("deep", &programs, 60);
}

/// F12 (campaign seed 23, cases 14238 and 50566): runs of recoverable
/// errors, `s[2] =}` on 8,000 lines and `*] ` 4,000 times in a kernel's
/// expression, on which tree-sitter's error recovery is quadratic and worse
/// (minutes for each command unbounded). Every parse now gives up at a
/// deadline proportional to the text (E002), so each command ends in a few
/// seconds, far under `--slow-secs`. F11 (deep nesting with an error
/// inside) is tested through the commands by `op2-cli`'s
/// `tests/parse_limit.rs`.
#[test]
fn runs_of_errors_end_in_time() {
    let programs = [
        (
            "broken-statement-lines.op2",
            op2_syntax::synth::broken_statement_lines(8_000),
        ),
        (
            "stray-brackets-in-an-expression.op2",
            format!(
                "set cells;\nkernel k(double *t, const double *q, const double *s) {{\n    *t += q[0] {}* s[0];\n}}\n",
                "*] ".repeat(4_000)
            ),
        ),
    ];
    replay_generated("runs", &programs, 30);
}

/// Campaign seed 1, cases 608063, 633279 and 726207 (2026-11-27): a
/// selection range asked at the start of a chain of 40,000 `+` after a
/// syntax error was a linked list 40,000 deep, which overflowed the
/// server's stack when it was serialised. The chain is now bounded
/// (`MAX_SELECTION_LEVELS`). The session is generated here (80 KB) and
/// replayed through the binary like the files of `regressions/`.
#[test]
fn a_selection_range_in_a_deep_chain_passes() {
    let frame = |message: serde_json::Value| {
        let body = message.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    };
    let uri = op2_fuzz::lsp::URI;
    let text = format!("main {{ int y = (1)x{}; }}\n", "+x".repeat(40_000));
    let chunks = vec![
        frame(
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"capabilities": {}, "processId": null, "rootUri": null}}),
        ),
        frame(serde_json::json!({"jsonrpc": "2.0", "method": "initialized", "params": {}})),
        frame(
            serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
            "params": {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": text}}}),
        ),
        frame(
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "textDocument/selectionRange",
            "params": {"textDocument": {"uri": uri}, "positions": [{"line": 0, "character": 18}]}}),
        ),
    ];
    let session = op2_fuzz::lsp::to_text(&op2_fuzz::lsp::Script { chunks });
    replay_generated(
        "selection",
        &[("deep-chain-selection-range.lsp", session)],
        60,
    );
}

/// The ten-million campaign's first chunk, seed 1 case 130885 (a 1.25 MB
/// mutated program, reported slow in `fmt`, the stage it was in when its
/// time ran out): `par_loop … (n {` heads never closed, each followed by
/// two comment lines and a statement, 5,463 times. tree-sitter's error
/// recovery is quadratic on it (1,000 / 2,000 / 4,000 repetitions: 0.26 /
/// 1.1 / 5.1 s of CPU; without the comments, or with one, it is linear),
/// and the parse's deadline, 1 s plus 1 s per 64 KiB of the whole text in
/// wall time, let it run for 20 s before it gave up, then retried. The
/// deadline now counts the parsing thread's CPU time against the place the
/// parser has reached, at 256 KiB a second: a parse whose cost grows faster
/// than the text gives up where the cost leaves that line, after a few
/// seconds whatever the text's length. This input, 15,000 repetitions
/// (2.5 MB), took 44.9 s in `op2-fuzz replay` before (release build,
/// loaded machine, 23.8 s of CPU), past `--slow-secs 30`; `op2 check` of
/// it takes 3.5 s of CPU now.
#[test]
fn unclosed_heads_between_comments_end_in_time() {
    let unit = "    par_loop dot_pair over pairs (n {\n    // The sums start at zero, so the loop below defines them.\n    // Each pair adds its product and both squares.\n    g_dot = 0.0;\n";
    let program = format!(
        "set pairs;\nglobal g_dot: double;\nkernel dot_pair(double *dot) {{\n    *dot += 1.0;\n}}\nmain {{\n{}}}\n",
        unit.repeat(15_000)
    );
    replay_generated(
        "heads",
        &[("unclosed-heads-between-comments.op2", program)],
        30,
    );
}

/// The counted campaign's seed 3, case 520799 (2026-11-27): `q[0lo, ` 44,000
/// times in a call in a kernel, with a `q{0lo, ` among them (310 KB). Before
/// the end of the text tree-sitter's error recovery asked for about 1,200
/// bytes per byte, within the deadline; at the end, where no progress call
/// comes, it walked every path of its merged stack and took 2.8 GB at once,
/// and the worker (4 GB of address space) aborted. A parse now gives up when
/// it has asked for more than 32 MiB plus the lesser of 512 bytes per byte
/// reached and 16 KiB per progress call (E002), long before the end. Generated here at the case's size, with
/// `op2_syntax::synth`; the campaign's binary (8e7c1a6) aborts on it.
#[test]
fn unclosed_subscripts_in_a_call_end_within_memory() {
    replay_generated(
        "subscripts",
        &[(
            "unclosed-subscripts-in-a-call.op2",
            op2_syntax::synth::unclosed_subscripts_in_a_call(28_000, 0),
        )],
        30,
    );
}

/// The campaign of 883bf24, seed 14, case 79163 (1 MB, F13): a run of
/// `u[;` lines, each leaving a `[` open, with one other token half way;
/// tree-sitter's walk of its stack at the end of the text is quadratic in
/// the run and no allowance can stop it (12 GB for the case; the worker
/// aborted at 4 GB). A parse now gives up before tree-sitter sees a text
/// with more than 512 `[` open (E002). Generated at the case's size with a
/// `)` and with a NUL byte (the case's) half way.
#[test]
fn a_run_of_open_subscripts_ends_within_memory() {
    replay_generated(
        "open-subscripts",
        &[
            (
                "open-subscripts-paren.op2",
                op2_syntax::synth::open_subscripts_around(45_485, ")"),
            ),
            (
                "open-subscripts-nul.op2",
                op2_syntax::synth::open_subscripts_around(45_485, "\0"),
            ),
        ],
        30,
    );
}

/// Campaign 2efac03, seed 5, case 713594 (2 MB, issue #12): 32,982 lines
/// `par_loop … INC)i++) {` in `main`'s `for`, each opening a block never
/// closed. The parse is linear, but the file is one ERROR holding some
/// 66,000 items, and the unsupported C of each item was looked up after
/// asking tree-sitter for the item's parent, which walks the root's
/// children from the first: `op2 check` of the case took 54 s (debug
/// build), now 1.6 s. Generated with `op2_syntax::synth` a fifth larger
/// than the case (40,000 lines, 2.4 MB), against `--slow-secs 15`: the
/// quadratic lookup took 31 s at the case's size in this replay, the
/// linear code takes about 2 s at this one.
#[test]
fn unclosed_par_loop_lines_are_checked_in_linear_time() {
    replay_generated(
        "par-loops",
        &[(
            "unclosed-par-loop-lines.op2",
            op2_syntax::synth::unclosed_par_loop_lines(40_000),
        )],
        15,
    );
}

/// Issue #12, the audit after case 713594: the lowering looked a local up
/// by a scan of its block's locals and a parameter by a scan of the
/// kernel's parameters (and a duplicate parameter by a scan of the earlier
/// ones), and the controller counted the locals of each name by a scan of
/// all of `main`'s, so `check` and `build` were quadratic in the number of
/// locals or parameters: at 32,000, 5.9 s and 9.4 s for the locals, 9.2 s
/// for the parameters (debug build). Now hashed by name. Generated at
/// 60,000 locals and 40,000 parameters (1.2 and 1.7 MB), where the scans
/// take over a minute in this replay, against `--slow-secs 20`.
#[test]
fn many_locals_and_parameters_are_checked_in_linear_time() {
    replay_generated(
        "names",
        &[
            ("many-locals.op2", op2_syntax::synth::many_locals(60_000)),
            (
                "many-parameters.op2",
                op2_syntax::synth::many_parameters(40_000),
            ),
        ],
        20,
    );
}

/// Review of 2026-11-29: the rules of §7 compared each argument of a
/// par_loop with every earlier one on the same dat, and each mode fix
/// (H506's `READ` here) with every other argument, so 40,000 arguments on
/// one dat through different map indices took 3.4 s to check in a release
/// build and 80,000 about 14 s. Now each is compared with at most one
/// earlier argument per variant and mode (`checks::first_clashes`,
/// `checks::Uses`).
#[test]
fn many_arguments_on_one_dat_are_checked_in_linear_time() {
    replay_generated(
        "arguments",
        &[(
            "many-arguments.op2",
            op2_syntax::synth::many_arguments_on_one_dat(80_000),
        )],
        20,
    );
}

/// Campaign 3abfbf9, seed 6, case 2122860 (640 KB, issue #12): a kernel
/// whose one statement chains 28,000 conditionals with `==`. Building its
/// compiled loop asked for 4.7 GB (Cranelift's function builder grows
/// faster than the blocks it holds, about 3 per conditional), and the
/// worker (4 GB of address space) aborted in `run`. A body past
/// `MAX_BLOCKS` (8,192) basic blocks is now declined as it is built and
/// runs interpreted, in `run` and `simulate` alike: 0.14 GB. Generated here
/// at the case's size; without the limit, `op2 run` of it took 6.5 GB.
#[test]
fn a_kernel_of_many_branches_runs_within_memory() {
    let term = "(p[0] > 0.5 ? 1.0 : 0.0)";
    let chain = vec![term; 28_000].join(" == ");
    let program = format!(
        "set s;\ndat a: double on s = 1.0;\ndat b: double on s = 0.0;\n\
         kernel k(const double *p, double *x) {{\n    double h = {chain};\n    x[0] = h;\n}}\n\
         main {{\n    par_loop k over s (a READ, b WRITE);\n}}\n"
    );
    let guard = crate::temporary_folder("op2-fuzz-branches-");
    let folder = guard.path();
    std::fs::write(folder.join("many-branches.op2"), program).expect("write the input");
    std::fs::write(
        folder.join("many-branches.instance.json"),
        r#"{"sets": {"s": 3}}"#,
    )
    .expect("write the instance");
    let (status, report) = replay(folder, 30);
    assert!(status.success(), "{report}");
    assert!(report.contains("run and simulate 1"), "{report}");
}

/// Writes `programs` (name, text) into a temporary folder and replays them
/// through the binary with `--slow-secs slow_secs`: every one must pass.
fn replay_generated(tag: &str, programs: &[(&str, String)], slow_secs: u32) {
    let guard = crate::temporary_folder(&format!("op2-fuzz-{tag}-"));
    let folder = guard.path();
    for (name, text) in programs {
        std::fs::write(folder.join(name), text).expect("write the input");
    }
    let (status, report) = replay(folder, slow_secs);
    assert!(status.success(), "{report}");
    assert!(
        report.contains(&format!("{} cases", programs.len())),
        "{report}"
    );
}

/// `op2-fuzz replay` of `folder` with `--slow-secs slow_secs`, quiet. A
/// finding is saved in a temporary folder (the report says what it was), not
/// in `fuzz-findings` beside the crate.
fn replay(folder: &Path, slow_secs: u32) -> (ExitStatus, String) {
    let slow = slow_secs.to_string();
    let out = crate::temporary_folder("op2-fuzz-replay-");
    let args = [
        OsStr::new("replay"),
        folder.as_os_str(),
        OsStr::new("--hang-secs"),
        OsStr::new("120"),
        OsStr::new("--slow-secs"),
        OsStr::new(&slow),
        OsStr::new("--out"),
        out.path().as_os_str(),
        OsStr::new("--quiet"),
    ];
    crate::op2_fuzz(args, &[])
}
