//! `op2 explain`: the Markdown source when piped, rendered for a terminal
//! with `--color always` (what a terminal gets by default).

use crate::support;

use support::op2;

#[test]
fn piped_it_is_the_markdown_source() {
    let output = op2().args(["explain", "E502"]).output().expect("runs");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(text.starts_with("# E502: "), "{text}");
    assert!(text.contains("```op2"), "{text}");
    assert!(!text.contains('\x1b'), "no escapes when piped");
}

#[test]
fn on_a_terminal_it_is_rendered_and_wrapped() {
    let output = op2()
        .args(["explain", "E502", "--color", "always"])
        .env("COLUMNS", "60")
        .output()
        .expect("runs");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(text.starts_with("\x1b[1m\x1b[4mE502: "), "{text:?}");
    assert!(!text.contains("```"), "fences are gone: {text}");
    assert!(
        text.contains("    \x1b[36mset cells;\x1b[0m"),
        "code indented: {text:?}"
    );
    let source = String::from_utf8(
        op2()
            .args(["explain", "E502"])
            .output()
            .expect("runs")
            .stdout,
    )
    .expect("UTF-8");
    let code_lines: Vec<&str> = source.lines().collect();
    for line in text.lines() {
        let visible: String = strip(line);
        // Code and headings are never wrapped.
        let is_code = visible
            .strip_prefix("    ")
            .is_some_and(|rest| code_lines.contains(&rest))
            || code_lines.contains(&format!("# {visible}").as_str())
            || code_lines.contains(&format!("## {visible}").as_str());
        assert!(
            is_code || visible.chars().count() <= 60,
            "prose wider than 60 columns: {visible:?}"
        );
    }
}

/// The text without ANSI escapes.
fn strip(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
