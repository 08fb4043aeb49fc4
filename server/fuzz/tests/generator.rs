//! The generator makes programs worth running: most tame ones check clean
//! and so reach `build`, `run` and `simulate`; cases are a function of the
//! seed and index; a language server script survives its text form.

#![allow(clippy::print_stdout)]

use std::path::Path;

use op2_analysis::{Options, analyse_text};
use op2_fuzz::rng::Rng;
use op2_fuzz::{Case, Corpus, generate, lsp};

#[test]
fn most_tame_generated_programs_check_clean() {
    op2_fuzz::set_tame(true);
    let mut clean = 0;
    let total = 300;
    for seed in 0..total {
        let mut rng = Rng::new(seed);
        let generated = generate::program(&mut rng);
        if !generated.imports.is_empty() {
            clean += 1; // imports are checked by the campaign, not here
            continue;
        }
        let analysis = analyse_text(
            Path::new("/g/main.op2"),
            &generated.text,
            &Options { require_main: true },
        );
        if !analysis.has_errors() {
            clean += 1;
        } else if seed < 3 {
            println!("{}\n{:#?}", generated.text, analysis.diagnostics.first());
        }
    }
    assert!(
        clean * 100 >= total * 85,
        "only {clean} of {total} generated programs check clean"
    );
}

#[test]
fn a_case_is_a_function_of_seed_and_index() {
    let corpus = Corpus::load();
    assert!(
        corpus.seeds.len() > 50,
        "the corpus has the repository's programs"
    );
    for index in [0, 1, 63, 1000] {
        let (a, _) = Case::new(&corpus, 7, index);
        let (b, _) = Case::new(&corpus, 7, index);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
    let (a, _) = Case::new(&corpus, 7, 5);
    let (b, _) = Case::new(&corpus, 8, 5);
    assert_ne!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn a_script_survives_its_text_form() {
    let corpus = Corpus::load();
    let texts: Vec<&[u8]> = corpus.seeds.iter().map(|s| s.text.as_bytes()).collect();
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let mut script = lsp::script(&corpus.seeds[0].text, &texts, &mut rng);
        script.chunks.push(b"\xff\xfe not UTF-8".to_vec());
        let again = lsp::from_text(&lsp::to_text(&script)).expect("reads back");
        assert_eq!(again.chunks, script.chunks);
    }
}
