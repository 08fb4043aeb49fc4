//! Every quick fix that the language server offers (the `fixes` of the
//! analysis' and the code generator's diagnostics), applied to every
//! program of the diagnostic corpus, leaves a program with fewer problems:
//! fixing an error removes more errors than it adds, and fixing a warning
//! or a hint adds no error and no warning.

use std::path::{Path, PathBuf};

use op2_analysis::{Options, analyse_text};
use op2_syntax::{Diagnostic, FileId, Fix, Severity};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The analysis' diagnostics and, for a program without errors, the code
/// generator's: what the server publishes.
fn diagnostics(text: &str) -> Vec<Diagnostic> {
    let analysis = analyse_text(Path::new("corpus.op2"), text, &Options::default());
    let mut all = analysis.diagnostics.clone();
    all.extend(op2_codegen::diagnostics(&analysis, "corpus"));
    all
}

fn apply(text: &str, fix: &Fix) -> Option<String> {
    let mut edits = fix.edits.clone();
    if edits.iter().any(|e| e.file != FileId::MAIN) {
        return None;
    }
    edits.sort_by_key(|e| std::cmp::Reverse((e.range.start, e.range.end)));
    let mut out = text.to_owned();
    for edit in edits {
        out.replace_range(edit.range.to_usize(), &edit.replacement);
    }
    Some(out)
}

fn count(diagnostics: &[Diagnostic], severity: Severity) -> usize {
    diagnostics
        .iter()
        .filter(|d| d.severity == severity)
        .count()
}

/// Every `.op2` of the analysis fixtures and the examples, and every
/// `op2` block of the explanations.
fn corpus() -> Vec<(String, String)> {
    let root = repository();
    let mut found = Vec::new();
    let mut stack = vec![
        root.join("server/analysis/tests/fixtures"),
        root.join("docs/examples"),
        root.join("server/codegen/tests/programs"),
    ];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "op2") {
                let text = std::fs::read_to_string(&path).expect("readable");
                found.push((path.display().to_string(), text));
            }
        }
    }
    for entry in std::fs::read_dir(root.join("server/analysis/explanations")).expect("readable") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("readable");
        for (n, block) in text.split("```op2\n").skip(1).enumerate() {
            if let Some((body, _)) = block.split_once("```") {
                found.push((
                    format!("{} block {}", path.display(), n + 1),
                    body.to_owned(),
                ));
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_quick_fix_leaves_fewer_problems() {
    let mut applied = 0;
    let mut failures = Vec::new();
    for (name, text) in corpus() {
        let before = diagnostics(&text);
        for diagnostic in &before {
            for fix in &diagnostic.fixes {
                let Some(fixed) = apply(&text, fix) else {
                    continue;
                };
                applied += 1;
                let after = diagnostics(&fixed);
                let (errors_before, errors_after) = (
                    count(&before, Severity::Error),
                    count(&after, Severity::Error),
                );
                let (warnings_before, warnings_after) = (
                    count(&before, Severity::Warning),
                    count(&after, Severity::Warning),
                );
                let better = match diagnostic.severity {
                    Severity::Error => errors_after < errors_before,
                    Severity::Warning => {
                        errors_after <= errors_before && warnings_after < warnings_before
                    }
                    Severity::Hint => {
                        errors_after <= errors_before && warnings_after <= warnings_before
                    }
                };
                if !better {
                    let new: Vec<String> = after
                        .iter()
                        .filter(|d| !before.iter().any(|b| b.code == d.code))
                        .map(|d| format!("{} {}", d.code, d.message))
                        .collect();
                    failures.push(format!(
                        "{name}: {} `{}` ({}): errors {errors_before} -> {errors_after}, warnings {warnings_before} -> {warnings_after}; new: {new:?}",
                        diagnostic.code, fix.title, diagnostic.message
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {applied} fixes do not leave fewer problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(applied >= 20, "only {applied} fixes found in the corpus");
}
