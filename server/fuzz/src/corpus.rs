//! The seed programs the mutator starts from: the bundled examples, the
//! analysis fixtures, the code generator's test programs, the CLI's render
//! tests and the regression inputs, read from the repository at start-up.

use std::path::{Path, PathBuf};

/// A program of the corpus.
#[derive(Clone, Debug)]
pub struct Seed {
    /// Where it came from (relative to the repository).
    pub name: String,
    /// Its text.
    pub text: String,
    /// Its instance data, when it has one beside it.
    pub instance: Option<Vec<u8>>,
}

/// The repository's root (two levels above this crate).
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The folders searched for `.op2` files, relative to the repository.
pub const FOLDERS: &[&str] = &[
    "docs/examples",
    "server/analysis/tests/fixtures",
    "server/codegen/tests/programs",
    "server/cli/tests/render",
    "grammar/test",
    "server/fuzz/regressions",
];

/// Every seed program under [`FOLDERS`], in a fixed order. When the
/// repository is not there (the binary was moved), a small built-in program
/// stands in so that mutation still has something to work on.
pub fn load() -> Vec<Seed> {
    let root = repository();
    let mut files = Vec::new();
    for folder in FOLDERS {
        collect(&root.join(folder), &mut files);
    }
    files.sort();
    let mut seeds: Vec<Seed> = files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).ok()?;
            let instance = std::fs::read(path.with_extension("instance.json")).ok();
            let name = path
                .strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string();
            Some(Seed {
                name,
                text,
                instance,
            })
        })
        .collect();
    if seeds.is_empty() {
        seeds.push(Seed {
            name: "built-in".into(),
            text: BUILT_IN.into(),
            instance: None,
        });
    }
    seeds
}

fn collect(directory: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect(&path, files);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "op2") {
            files.push(path);
        }
    }
}

const BUILT_IN: &str = "set cells;\ndat p_v: double on cells = 1.0;\nglobal g: double;\n\
kernel k(const double *v, double *s) { *s += v[0]; }\n\
main { par_loop k over cells (p_v READ, g INC); print(\"%g\", g); }\n";
