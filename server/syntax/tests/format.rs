//! The formatter's promises, checked on the bundled examples and on
//! generated programs: formatting is idempotent, keeps every comment in
//! order, never changes the syntax tree (whitespace and trailing commas
//! aside), and does not depend on how the input was laid out.

use std::path::Path;

use op2_syntax::Parse;
use op2_syntax::format::{FormatError, MAX_DEPTH, format, format_parse};
use op2_syntax::tree_sitter::Node;
use proptest::prelude::*;

/// Every named node but comments, in pre-order, with the text of leaves.
fn shape(text: &str) -> Vec<(String, String)> {
    let parse = Parse::new(text);
    let mut out = Vec::new();
    let mut stack = vec![parse.tree().root_node()];
    while let Some(node) = stack.pop() {
        if node.kind() == "comment" {
            continue;
        }
        if node.is_named() {
            let leaf = node.named_child_count() == 0;
            let token = if leaf {
                text[node.byte_range()].to_owned()
            } else {
                String::new()
            };
            out.push((node.kind().to_owned(), token));
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// Every comment, in order, without trailing blanks.
fn comments(text: &str) -> Vec<String> {
    let parse = Parse::new(text);
    let mut out = Vec::new();
    let mut stack = vec![parse.tree().root_node()];
    while let Some(node) = stack.pop() {
        if node.kind() == "comment" {
            out.push(text[node.byte_range()].trim_end().to_owned());
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

/// The tokens of a text (comments included, string literals whole) as
/// byte ranges, in order.
fn tokens(text: &str) -> Vec<std::ops::Range<usize>> {
    let parse = Parse::new(text);
    let mut out = Vec::new();
    let mut stack = vec![parse.tree().root_node()];
    while let Some(node) = stack.pop() {
        if node.child_count() == 0 || node.kind() == "string_literal" || node.kind() == "comment" {
            if !node.byte_range().is_empty() {
                out.push(node.byte_range());
            }
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out.sort_by_key(|r| r.start);
    out
}

/// Formats `text` and checks every promise; returns the formatted text.
#[track_caller]
fn check_promises(text: &str) -> String {
    let formatted = format(text).unwrap_or_else(|e| panic!("format failed: {e}\n{text}"));
    assert!(
        !Parse::new(&formatted).tree().root_node().has_error(),
        "formatted text has errors:\n{formatted}"
    );
    assert_eq!(
        format(&formatted).as_deref(),
        Ok(formatted.as_str()),
        "not idempotent; first result:\n{formatted}"
    );
    assert_eq!(
        comments(&formatted),
        comments(text),
        "comments changed:\n{formatted}"
    );
    assert_eq!(shape(&formatted), shape(text), "tree changed:\n{formatted}");
    for (number, line) in formatted.lines().enumerate() {
        assert_eq!(
            line,
            line.trim_end(),
            "trailing blanks on line {}:\n{formatted}",
            number + 1
        );
    }
    assert!(
        !formatted.contains("\n\n\n"),
        "two blank lines in a row:\n{formatted}"
    );
    formatted
}

fn examples() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("docs/examples exists") {
        let path = entry.expect("readable directory").path();
        if path.extension().is_some_and(|e| e == "op2") {
            let text = std::fs::read_to_string(&path).expect("readable example");
            found.push((path.display().to_string(), text));
        }
    }
    assert!(!found.is_empty(), "no examples in {}", dir.display());
    found
}

#[test]
fn examples_keep_every_promise() {
    for (path, text) in examples() {
        let formatted = check_promises(&text);
        // Long par_loops break; every line of code fits.
        for line in formatted
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
        {
            assert!(
                line.chars().count() <= 100 || !line.contains("par_loop"),
                "{path}: long line {line:?}"
            );
        }
    }
}

/// `format_parse` formats what `format` does from a parse the caller has,
/// and gives the parse of the formatted text, the same as a fresh one.
#[test]
fn format_parse_is_format_and_gives_the_parse_of_its_result() {
    for (path, text) in examples() {
        let parse = Parse::new(text.as_str());
        let (formatted, reparsed) = format_parse(&parse).expect("examples format");
        assert_eq!(Ok(&formatted), format(&text).as_ref(), "{path}");
        assert_eq!(reparsed.text(), formatted, "{path}");
        assert_eq!(
            reparsed.tree().root_node().to_sexp(),
            Parse::new(formatted.as_str()).tree().root_node().to_sexp(),
            "{path}"
        );
    }
    let broken = Parse::new("set a");
    assert!(matches!(
        format_parse(&broken),
        Err(FormatError::Syntax(errors)) if !errors.is_empty()
    ));
}

#[test]
fn syntax_errors_are_refused() {
    for text in [
        "set a",
        "kernel k(double *x) { x[0] = ; }",
        "main { par_loop k over s (a READ; }",
    ] {
        match format(text) {
            Err(FormatError::Syntax(errors)) => assert!(!errors.is_empty(), "{text}"),
            other => panic!("{text}: expected a refusal, got {other:?}"),
        }
    }
    // Unsupported C is a syntax error (E001) too.
    assert!(matches!(
        format("kernel k(double *x) { goto end; }"),
        Err(FormatError::Syntax(_))
    ));
}

#[test]
fn layout_of_every_construct() {
    let input = "import \"lib.op2\";\nset  s;\nglobal g:double=0.0;\nkernel k(const double*a,double b[2],int *n){\n\
        double t[2]={a[0],a[1]};int i;\nfor(;;){break;}\nwhile(i<2){i++;continue;}\n\
        do i--;while(i>0);\ndo{--i;}while(!(i>=0)&&true);\nif(i==0){return;}else if(i<0)b[0]=t[0]?1:2;else{;}\n\
        b[1]=fmax(a[0]*2.0f,-a[1])<<1>>1|0x2A^3u&~1%2;}\n\
        main{int k=len(s);print(\"%d\",k);par_loop k as first over s(a READ,b RW,len(s));fetch   d\ninto g ;}";
    let expected = "import \"lib.op2\";\nset s;\nglobal g: double = 0.0;\nkernel k(const double *a, double b[2], int *n) {\n    \
        double t[2] = {a[0], a[1]};\n    int i;\n    for (;;) {\n        break;\n    }\n    while (i < 2) {\n        i++;\n        continue;\n    }\n    \
        do\n        i--;\n    while (i > 0);\n    do {\n        --i;\n    } while (!(i >= 0) && true);\n    \
        if (i == 0) {\n        return;\n    } else if (i < 0)\n        b[0] = t[0] ? 1 : 2;\n    else {\n        ;\n    }\n    \
        b[1] = fmax(a[0] * 2.0f, -a[1]) << 1 >> 1 | 0x2A ^ 3u & ~1 % 2;\n}\n\
        main {\n    int k = len(s);\n    print(\"%d\", k);\n    par_loop k as first over s (a READ, b RW, len(s));\n    fetch d into g;\n}\n";
    assert_eq!(check_promises(input), expected);
}

#[test]
fn long_lists_take_one_item_per_line() {
    let long = "a_rather_long_name_for_a_value";
    let input = format!(
        "main {{ print(\"%g %g %g\", {long}, {long}, {long}); }}\nconst c: double[4] = {{{long}, {long}, {long}, {long}}};\n"
    );
    let expected = format!(
        "main {{\n    print(\n        \"%g %g %g\",\n        {long},\n        {long},\n        {long}\n    );\n}}\n\
         const c: double[4] = {{\n    {long},\n    {long},\n    {long},\n    {long},\n}};\n"
    );
    assert_eq!(check_promises(&input), expected);
}

#[test]
fn comments_keep_their_places() {
    let input = "/* header\n   block */\nset a; /* after */\n\n\n// before b\nset b;\nmain {\n\
        par_loop k over a ( // why\n  x READ, /* inline */ y WRITE\n  // last\n);\n    g = 1 + // split\n 2;\n}\n";
    let expected = "/* header\n   block */\nset a; /* after */\n\n// before b\nset b;\nmain {\n    \
        par_loop k over a ( // why\n        x READ, /* inline */\n        y WRITE,\n        // last\n    );\n    \
        g = 1 + // split\n        2;\n}\n";
    assert_eq!(check_promises(input), expected);
}

#[test]
fn deep_nesting_is_formatted_or_refused_without_overflowing() {
    let nested = |levels: usize| {
        format!(
            "main {{ g = {}1{}; }}",
            "(".repeat(levels),
            ")".repeat(levels)
        )
    };
    let formatted = check_promises(&nested(150));
    assert!(formatted.contains(&format!("g = {}1", "(".repeat(150))));
    // Just under the limit, on the stack of a tokio blocking thread (2 MiB).
    let near = nested(MAX_DEPTH - 10);
    let near = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || format(&near))
        .expect("a thread")
        .join()
        .expect("no overflow");
    assert!(near.is_ok(), "{near:?}");
    let deep = nested(20_000);
    let refused = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || format(&deep))
        .expect("a thread")
        .join()
        .expect("no overflow");
    assert!(
        matches!(refused, Err(FormatError::TooDeep | FormatError::Syntax(_))),
        "{refused:?}"
    );
}

#[test]
fn empty_and_comment_only_files() {
    assert_eq!(format("").as_deref(), Ok(""));
    assert_eq!(format("  \n\n").as_deref(), Ok(""));
    assert_eq!(
        format("// only\n\n\n/* this */").as_deref(),
        Ok("// only\n\n/* this */\n")
    );
    assert_eq!(
        format("set a;\r\n\r\n\r\nset b;\r\n").as_deref(),
        Ok("set a;\n\nset b;\n")
    );
}

/// A generated program with comments put between random tokens.
fn with_comments(program: &str, picks: &[(usize, bool)]) -> String {
    let code: Vec<usize> = tokens(program)
        .into_iter()
        .filter(|r| !program[r.clone()].starts_with("//") && !program[r.clone()].starts_with("/*"))
        .map(|r| r.end)
        .collect();
    let mut at: Vec<(usize, usize, bool)> = picks
        .iter()
        .enumerate()
        .map(|(i, &(pick, line))| (code[pick % code.len()], i, line))
        .collect();
    at.sort();
    let mut out = String::with_capacity(program.len() + picks.len() * 12);
    let mut last = 0;
    for (offset, i, line) in at {
        out.push_str(&program[last..offset]);
        if line {
            out.push_str(&format!(" // c{i}\n"));
        } else {
            out.push_str(&format!(" /* c{i} */ "));
        }
        last = offset;
    }
    out.push_str(&program[last..]);
    out
}

/// The same tokens with other whitespace between them: the same amount of
/// line breaks (none, one, or a blank line), other blanks and line ends.
fn relaid(text: &str, seeds: &[u8]) -> String {
    let ranges = tokens(text);
    let mut out = String::with_capacity(text.len() * 2);
    let mut last = 0;
    for (i, range) in ranges.iter().enumerate() {
        let gap = &text[last..range.start];
        let seed = seeds.get(i % seeds.len().max(1)).copied().unwrap_or(0) as usize;
        let blanks = " ".repeat(seed % 3 + 1);
        let newline = if seed.is_multiple_of(2) { "\n" } else { "\r\n" };
        let breaks = gap.matches('\n').count();
        if i == 0 || gap.is_empty() {
            out.push_str(gap);
        } else if breaks == 0 {
            out.push_str(&blanks);
        } else if breaks == 1 {
            out.push_str(&format!("{blanks}{newline}{blanks}"));
        } else {
            out.push_str(&format!("{newline}{blanks}{newline}\t"));
        }
        out.push_str(&text[range.clone()]);
        last = range.end;
    }
    out.push_str(&text[last..]);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn generated_programs_keep_every_promise(lines in 30usize..400) {
        check_promises(&op2_syntax::synth::program(lines));
    }

    #[test]
    fn comments_anywhere_keep_every_promise(
        lines in 30usize..120,
        picks in prop::collection::vec((0usize..10_000, any::<bool>()), 1..40),
    ) {
        let text = with_comments(&op2_syntax::synth::program(lines), &picks);
        check_promises(&text);
    }

    #[test]
    fn layout_does_not_depend_on_the_input_layout(
        lines in 30usize..120,
        picks in prop::collection::vec((0usize..10_000, any::<bool>()), 0..20),
        seeds in prop::collection::vec(any::<u8>(), 1..50),
    ) {
        let text = with_comments(&op2_syntax::synth::program(lines), &picks);
        let expected = format(&text).expect("the program is valid");
        prop_assert_eq!(format(&relaid(&text, &seeds)).expect("still valid"), expected);
    }

    #[test]
    fn examples_with_comments_anywhere(
        example in 0usize..16,
        picks in prop::collection::vec((0usize..100_000, any::<bool>()), 1..30),
        seeds in prop::collection::vec(any::<u8>(), 1..50),
    ) {
        let all = examples();
        let (_, text) = &all[example % all.len()];
        let text = with_comments(text, &picks);
        let formatted = check_promises(&text);
        prop_assert_eq!(format(&relaid(&text, &seeds)).expect("still valid"), formatted);
    }
}

/// Directories whose `.op2` files carry markers under columns (`^^^ E001`,
/// `// <- keyword`), which reformatting would move off their targets.
const MARKED: [&str; 4] = [
    "grammar/test",
    "server/analysis/tests/fixtures",
    "server/syntax/tests",
    "editors/vscode/test/grammar",
];

fn repository_texts(dir: &Path, root: &Path, found: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("readable directory")
        .map(|e| e.expect("readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let relative = path.strip_prefix(root).expect("under the root");
        let name = relative.to_string_lossy().replace('\\', "/");
        let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        if path.is_dir() {
            let skip = matches!(
                file_name.as_deref(),
                Some("target" | "node_modules" | ".git" | ".tools" | "out" | "dist")
            ) || MARKED.contains(&name.as_str());
            if !skip {
                repository_texts(&path, root, found);
            }
        } else if path.extension().is_some_and(|e| e == "op2") {
            let text = std::fs::read_to_string(&path).expect("readable program");
            found.push((name, text));
        } else if path.extension().is_some_and(|e| e == "md") {
            let text = std::fs::read_to_string(&path).expect("readable Markdown");
            let mut block: Option<(usize, String)> = None;
            for (number, line) in text.lines().enumerate() {
                match &mut block {
                    None if line.trim_start() == "```op2" => {
                        block = Some((number + 2, String::new()))
                    }
                    Some((start, body)) if line.trim_start() == "```" => {
                        found.push((
                            format!("{name}:{start} (```op2 block)"),
                            std::mem::take(body),
                        ));
                        block = None;
                    }
                    Some((_, body)) => {
                        body.push_str(line);
                        body.push('\n');
                    }
                    None => {}
                }
            }
        }
    }
}

#[test]
fn every_program_in_the_repository_is_formatted() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().expect("the repository");
    let mut texts = Vec::new();
    repository_texts(&root, &root, &mut texts);
    let mut formatted = 0;
    let mut unformatted = Vec::new();
    for (name, text) in &texts {
        match format(text) {
            Ok(result) if result == *text => formatted += 1,
            Ok(_) => unformatted.push(name.clone()),
            // Examples of syntax errors (in the explanations, say) cannot
            // be formatted; the formatter refuses them.
            Err(FormatError::Syntax(_)) => {}
            Err(error) => panic!("{name}: {error}"),
        }
    }
    assert!(
        unformatted.is_empty(),
        "not formatted (run `op2 fmt` on the file, or format the block):\n{}",
        unformatted.join("\n")
    );
    assert!(formatted >= 20, "only {formatted} programs found");
}
