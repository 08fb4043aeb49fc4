//! Every program in docs/examples, and the programs of the user docs,
//! checks with no diagnostic at all when built as a program.

use std::path::{Path, PathBuf};

use op2_analysis::{Options, analyse_text};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn examples_check_clean() {
    let mut checked = 0;
    let mut entries: Vec<PathBuf> = std::fs::read_dir(repository().join("docs/examples"))
        .expect("docs/examples exists")
        .map(|entry| entry.expect("readable directory").path())
        .filter(|path| path.extension().is_some_and(|e| e == "op2"))
        .collect();
    entries.sort();
    for path in entries {
        let text = std::fs::read_to_string(&path).expect("readable example");
        let analysis = analyse_text(&path, &text, &Options { require_main: true });
        assert!(
            analysis.diagnostics.is_empty(),
            "{}: {:#?}",
            path.display(),
            analysis.diagnostics
        );
        assert!(
            !analysis.program.invocations.is_empty(),
            "{} runs par_loops",
            path.display()
        );
        checked += 1;
    }
    assert!(checked >= 4, "the four required examples exist");
}

#[test]
fn user_doc_blocks_check_clean() {
    let text = std::fs::read_to_string(repository().join("docs/language.md"))
        .expect("docs/language.md exists");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match current.as_mut() {
            Some(block) if line.trim_end() == "```" => blocks.push(std::mem::take(block)),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
        if line.trim_end() == "```" && current.is_some() {
            current = None;
        } else if line.trim_end() == "```op2" {
            current = Some(String::new());
        }
    }
    assert!(blocks.len() >= 5, "the user docs have examples");
    for (index, block) in blocks.iter().enumerate() {
        let analysis = analyse_text(Path::new("block.op2"), block, &Options::default());
        assert!(
            analysis.diagnostics.is_empty(),
            "docs/language.md block {}:\n{block}\n{:#?}",
            index + 1,
            analysis.diagnostics
        );
    }
}
