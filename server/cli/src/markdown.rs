//! The explanations' Markdown for a terminal: headings in bold, code blocks
//! indented and coloured, paragraphs and list items wrapped to the width,
//! inline code in bold. Only the Markdown the explanations use (headings,
//! paragraphs, `-` lists, fenced code, inline code); anything else passes
//! through as text.

const BOLD: &str = "\x1b[1m";
const UNDERLINE: &str = "\x1b[4m";
const CODE: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// Renders `markdown` for a terminal `width` columns wide, with ANSI
/// styles when `styled`.
pub fn render(markdown: &str, width: usize, styled: bool) -> String {
    let width = width.clamp(40, 100);
    let style = |codes: &str, text: &str| {
        if styled {
            format!("{codes}{text}{RESET}")
        } else {
            text.to_owned()
        }
    };
    let mut out = String::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut in_code = false;
    let flush = |paragraph: &mut Vec<&str>, out: &mut String| {
        if paragraph.is_empty() {
            return;
        }
        let text = paragraph.join(" ");
        let (first, rest, body) = match text.strip_prefix("- ") {
            Some(item) => ("  • ", "    ", item),
            None => ("", "", text.as_str()),
        };
        wrap(body, width, first, rest, styled, out);
        paragraph.clear();
    };
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            flush(&mut paragraph, &mut out);
            in_code = !in_code;
            continue;
        }
        if in_code {
            out.push_str("    ");
            out.push_str(&style(CODE, line));
            out.push('\n');
            continue;
        }
        if let Some(heading) = line.strip_prefix("# ") {
            flush(&mut paragraph, &mut out);
            out.push_str(&style(&format!("{BOLD}{UNDERLINE}"), heading));
            out.push('\n');
        } else if let Some(heading) = line.strip_prefix("## ") {
            flush(&mut paragraph, &mut out);
            out.push_str(&style(BOLD, heading));
            out.push('\n');
        } else if line.trim().is_empty() {
            flush(&mut paragraph, &mut out);
            if !out.ends_with("\n\n") && !out.is_empty() {
                out.push('\n');
            }
        } else {
            if line.starts_with("- ") {
                flush(&mut paragraph, &mut out);
            }
            paragraph.push(line.trim());
        }
    }
    flush(&mut paragraph, &mut out);
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// Appends `text` wrapped at `width` visible columns, the first line after
/// `first` and the others after `rest`; `code` spans in bold when `styled`.
fn wrap(text: &str, width: usize, first: &str, rest: &str, styled: bool, out: &mut String) {
    out.push_str(first);
    let mut column = first.chars().count();
    let mut at_start = true;
    let mut in_code = false;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let visible = word.chars().filter(|c| !styled || *c != '`').count();
        if !at_start {
            if column + 1 + visible > width {
                out.push('\n');
                out.push_str(rest);
                column = rest.chars().count();
            } else {
                out.push(' ');
                column += 1;
            }
        }
        at_start = false;
        if styled {
            for c in word.chars() {
                if c == '`' {
                    in_code = !in_code;
                    out.push_str(if in_code { BOLD } else { RESET });
                } else {
                    out.push(c);
                }
            }
        } else {
            out.push_str(word);
        }
        column += visible;
    }
    if in_code {
        out.push_str(RESET);
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# E999: a title\n\nA paragraph with `code` in it that is long enough to wrap at forty columns for sure.\n\n- an item that is long enough to wrap as well, with a hanging indent\n- another\n\n## Example\n\n```op2\nset cells;\n```\n";

    #[test]
    fn wraps_indents_and_styles() {
        let plain = render(SAMPLE, 40, false);
        for line in plain.lines() {
            assert!(line.chars().count() <= 40, "{line:?} in\n{plain}");
        }
        assert!(
            plain.starts_with("E999: a title\n\nA paragraph with `code`"),
            "{plain}"
        );
        assert!(plain.contains("  • an item"), "{plain}");
        assert!(plain.contains("\n    set cells;"), "{plain}");
        let styled = render(SAMPLE, 40, true);
        assert!(
            styled.starts_with("\x1b[1m\x1b[4mE999: a title\x1b[0m"),
            "{styled:?}"
        );
        assert!(styled.contains("\x1b[1mcode\x1b[0m"), "{styled:?}");
        assert!(
            styled.contains("    \x1b[36mset cells;\x1b[0m"),
            "{styled:?}"
        );
    }

    #[test]
    fn every_explanation_renders_within_the_width() {
        for code in op2_syntax::Code::ALL {
            let text = op2_analysis::explain::explanation(*code);
            let code_lines: Vec<&str> = text.lines().map(str::trim_end).collect();
            let rendered = render(text, 60, false);
            for line in rendered.lines() {
                // Code is never wrapped; prose is, unless one word is longer.
                let is_code = line
                    .strip_prefix("    ")
                    .is_some_and(|rest| code_lines.contains(&rest));
                // Headings are never wrapped either.
                let is_heading = code_lines.iter().any(|source| {
                    source
                        .trim_start_matches('#')
                        .strip_prefix(' ')
                        .is_some_and(|heading| heading == line)
                });
                let is_code = is_code || is_heading;
                if line.chars().count() > 60 && !is_code {
                    assert!(!line.trim().contains(' '), "{code}: {line:?}");
                }
            }
        }
    }
}
