//! The examples in the explanations are programs: each erroneous example
//! produces its code, and each fixed example produces no diagnostic at all.

use std::path::Path;

use op2_analysis::explain::{code_blocks, explanation};
use op2_analysis::{Options, analyse_text};
use op2_syntax::Code;

/// Codes the code generator and the instance builder report; the analysis
/// cannot produce them from a program alone, and their examples are checked
/// where those are implemented. Their programs must still check clean.
const LATER_STAGES: &[Code] = &[
    Code::E701,
    Code::E702,
    Code::E703,
    Code::E704,
    Code::W705,
    Code::W801,
    Code::E802,
];

fn codes_of(program: &str) -> Vec<(Code, String)> {
    let options = Options {
        require_main: false,
    };
    analyse_text(Path::new("example.op2"), program, &options)
        .diagnostics
        .into_iter()
        .map(|d| (d.code, d.message))
        .collect()
}

#[test]
fn erroneous_examples_produce_their_code_and_fixes_produce_nothing() {
    let mut failures = Vec::new();
    for code in Code::ALL {
        let blocks = code_blocks(explanation(*code));
        for block in blocks.iter().filter(|b| b.language == "op2") {
            let found = codes_of(&block.text);
            match block.section.as_str() {
                "Example" if LATER_STAGES.contains(code) => {
                    if let Some(error) = found
                        .iter()
                        .find(|(c, _)| c.severity() == op2_syntax::Severity::Error)
                    {
                        failures.push(format!(
                            "{code}: example program has an analysis error: {error:?}"
                        ));
                    }
                }
                "Example" => {
                    if !found.iter().any(|(c, _)| c == code) {
                        failures.push(format!(
                            "{code}: example does not produce {code}; found {found:?}"
                        ));
                    }
                }
                "How to fix" => {
                    if !found.is_empty() {
                        failures.push(format!("{code}: fixed example is not clean: {found:?}"));
                    }
                }
                other => failures.push(format!(
                    "{code}: code block in unexpected section {other:?}"
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
