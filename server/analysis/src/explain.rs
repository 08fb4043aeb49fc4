//! One explanation per diagnostic code, written in Markdown in
//! `explanations/CODE.md`: printed by `op2 explain`, shown on hover in
//! editors and compiled into docs/diagnostics.md.

use op2_syntax::Code;

/// The explanation of `code`, in Markdown.
pub fn explanation(code: Code) -> &'static str {
    match code {
        Code::E001 => include_str!("../explanations/E001.md"),
        Code::E002 => include_str!("../explanations/E002.md"),
        Code::E101 => include_str!("../explanations/E101.md"),
        Code::E102 => include_str!("../explanations/E102.md"),
        Code::E103 => include_str!("../explanations/E103.md"),
        Code::E104 => include_str!("../explanations/E104.md"),
        Code::E201 => include_str!("../explanations/E201.md"),
        Code::E202 => include_str!("../explanations/E202.md"),
        Code::E203 => include_str!("../explanations/E203.md"),
        Code::W204 => include_str!("../explanations/W204.md"),
        Code::E301 => include_str!("../explanations/E301.md"),
        Code::E302 => include_str!("../explanations/E302.md"),
        Code::E303 => include_str!("../explanations/E303.md"),
        Code::E304 => include_str!("../explanations/E304.md"),
        Code::E305 => include_str!("../explanations/E305.md"),
        Code::E306 => include_str!("../explanations/E306.md"),
        Code::E307 => include_str!("../explanations/E307.md"),
        Code::E308 => include_str!("../explanations/E308.md"),
        Code::E309 => include_str!("../explanations/E309.md"),
        Code::E310 => include_str!("../explanations/E310.md"),
        Code::E311 => include_str!("../explanations/E311.md"),
        Code::E312 => include_str!("../explanations/E312.md"),
        Code::E313 => include_str!("../explanations/E313.md"),
        Code::E401 => include_str!("../explanations/E401.md"),
        Code::W402 => include_str!("../explanations/W402.md"),
        Code::E501 => include_str!("../explanations/E501.md"),
        Code::E502 => include_str!("../explanations/E502.md"),
        Code::W503 => include_str!("../explanations/W503.md"),
        Code::E504 => include_str!("../explanations/E504.md"),
        Code::H505 => include_str!("../explanations/H505.md"),
        Code::H506 => include_str!("../explanations/H506.md"),
        Code::E507 => include_str!("../explanations/E507.md"),
        Code::E508 => include_str!("../explanations/E508.md"),
        Code::E601 => include_str!("../explanations/E601.md"),
        Code::E602 => include_str!("../explanations/E602.md"),
        Code::E603 => include_str!("../explanations/E603.md"),
        Code::W604 => include_str!("../explanations/W604.md"),
        Code::H605 => include_str!("../explanations/H605.md"),
        Code::E606 => include_str!("../explanations/E606.md"),
        Code::E607 => include_str!("../explanations/E607.md"),
        Code::E608 => include_str!("../explanations/E608.md"),
        Code::E609 => include_str!("../explanations/E609.md"),
        Code::E701 => include_str!("../explanations/E701.md"),
        Code::E702 => include_str!("../explanations/E702.md"),
        Code::E703 => include_str!("../explanations/E703.md"),
        Code::E704 => include_str!("../explanations/E704.md"),
        Code::W705 => include_str!("../explanations/W705.md"),
        Code::W801 => include_str!("../explanations/W801.md"),
        Code::E802 => include_str!("../explanations/E802.md"),
    }
}

/// Codes whose example cannot be a small program, shown shortened in a
/// `text` block instead: E002 needs thousands of broken lines before a parse
/// takes longer than its deadline.
pub const SHORTENED_EXAMPLES: &[Code] = &[Code::E002];

/// Codes no longer reported, kept with an explanation that says so and
/// since when (`op2 explain` still answers for them), with no example:
/// E608, a print in a kernel, which every backend runs since 2026-11-27.
pub const RETIRED: &[Code] = &[Code::E608];

/// A fenced ```` ```LANG ```` block of an explanation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeBlock {
    /// The fence's language: `op2` or `json`.
    pub language: String,
    /// The block's text.
    pub text: String,
    /// The section it is in: `Example` or `How to fix`.
    pub section: String,
}

/// The fenced code blocks of an explanation, in order, with the section
/// they belong to.
pub fn code_blocks(markdown: &str) -> Vec<CodeBlock> {
    let mut blocks = Vec::new();
    let mut section = String::new();
    let mut current: Option<CodeBlock> = None;
    for line in markdown.lines() {
        if let Some(block) = current.as_mut() {
            if line.trim_end() == "```" {
                blocks.extend(current.take());
            } else {
                block.text.push_str(line);
                block.text.push('\n');
            }
        } else if let Some(heading) = line.strip_prefix("## ") {
            heading.trim().clone_into(&mut section);
        } else if let Some(language) = line.strip_prefix("```") {
            current = Some(CodeBlock {
                language: language.trim().to_owned(),
                text: String::new(),
                section: section.clone(),
            });
        }
    }
    blocks
}

/// The one-line summary of an explanation (its title without the code).
pub fn title(code: Code) -> &'static str {
    let first = explanation(code).lines().next().unwrap_or("");
    first
        .split_once(": ")
        .map_or(first, |(_, rest)| rest)
        .trim()
}

/// docs/diagnostics.md: every explanation, in code order, under an index.
pub fn diagnostics_index() -> String {
    let mut out = String::from(
        "# Diagnostics\n\n\
         Generated from `server/analysis/explanations/*.md` by the test \
         `diagnostics_index_is_current`; do not edit by hand. `op2 explain CODE` prints \
         one of these in a terminal.\n\n| code | severity | summary |\n| --- | --- | --- |\n",
    );
    for code in Code::ALL {
        out.push_str(&format!(
            "| [{code}](#{}) | {} | {} |\n",
            code.as_str().to_lowercase(),
            code.severity(),
            title(*code)
        ));
    }
    for code in Code::ALL {
        // An explicit anchor, stable whatever the title says: editors link
        // to `diagnostics.md#e401`.
        out.push_str(&format!(
            "\n<a id=\"{}\"></a>\n\n",
            code.as_str().to_lowercase()
        ));
        // Headings become `## E401: …` under the index's `#`.
        let text = explanation(*code);
        for line in text.lines() {
            if line.starts_with('#') {
                out.push('#');
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_an_explanation_with_its_own_title() {
        for code in Code::ALL {
            let text = explanation(*code);
            let first = text.lines().next().unwrap_or("");
            assert!(
                first.starts_with(&format!("# {code}: ")),
                "{code}: first line is {first:?}"
            );
            let summary = title(*code);
            // rustc style: lower case, except the language's own upper-case
            // keywords (`READ`, `INC`, …).
            let first_word = summary.split_whitespace().next().unwrap_or("");
            let keyword = op2_syntax::ast::AccessMode::from_keyword(first_word).is_some();
            assert!(
                keyword || !first_word.starts_with(|c: char| c.is_uppercase()),
                "{code}: summary should start in lower case: {summary:?}"
            );
            assert!(!summary.ends_with('.'), "{code}: no trailing period");
            let blocks = code_blocks(text);
            if RETIRED.contains(code) {
                assert!(text.contains("no longer reported"), "{code}");
                assert!(blocks.is_empty(), "{code}: a retired code has no example");
                continue;
            }
            assert!(
                blocks.iter().any(|b| b.section == "Example"
                    && (b.language == "op2"
                        || (SHORTENED_EXAMPLES.contains(code) && b.language == "text"))),
                "{code}: needs an example"
            );
            assert!(
                blocks
                    .iter()
                    .any(|b| b.section == "How to fix" && b.language == "op2"),
                "{code}: needs a fix"
            );
        }
    }
}
