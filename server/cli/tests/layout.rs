//! The workspace's test layout: a crate with `tests/main.rs` compiles its integration
//! tests as one binary (`autotests = false`), so a file in `tests/` without a `mod` line
//! in `main.rs` would never be compiled nor run. This finds any such file.

use std::fs;
use std::path::Path;

#[test]
fn every_test_file_is_compiled() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("the workspace manifest");
    let members = manifest
        .lines()
        .find_map(|line| line.strip_prefix("members = ["))
        .expect("the workspace lists its members on one line");
    let mut problems = Vec::new();
    let mut merged = 0;
    for member in members.trim_end_matches(']').split(',') {
        let crate_dir = root.join(member.trim().trim_matches('"'));
        let main = crate_dir.join("tests/main.rs");
        let Ok(main_text) = fs::read_to_string(&main) else {
            continue;
        };
        merged += 1;
        let crate_manifest = fs::read_to_string(crate_dir.join("Cargo.toml")).expect("a manifest");
        if !crate_manifest.contains("\nautotests = false\n") {
            problems.push(format!(
                "{}: tests/main.rs without `autotests = false`: every file would be compiled twice",
                crate_dir.display()
            ));
        }
        let declared: Vec<&str> = main_text
            .lines()
            .filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';'))
            .collect();
        for entry in fs::read_dir(crate_dir.join("tests")).expect("the tests directory") {
            let path = entry.expect("a directory entry").path();
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if path.extension().is_some_and(|e| e == "rs")
                && stem != "main"
                && !declared.contains(&stem)
            {
                problems.push(format!(
                    "{} is not compiled: add `mod {stem};` to {} (and use `use crate::support;` \
                     in it instead of `mod support;`)",
                    path.display(),
                    main.display()
                ));
            }
        }
    }
    assert!(
        merged >= 8,
        "only {merged} crates have tests/main.rs: is the workspace list read right?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
