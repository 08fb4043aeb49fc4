//! docs/diagnostics.md is generated from the explanations; this test fails
//! when it is stale. Regenerate with `UPDATE_DOCS=1 cargo test -p op2-analysis --test integration docs_index`.

use std::path::PathBuf;

#[test]
fn diagnostics_index_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnostics.md");
    let expected = op2_analysis::explain::diagnostics_index();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).expect("docs/diagnostics.md is writable");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/diagnostics.md is stale: run `UPDATE_DOCS=1 cargo test -p op2-analysis --test integration docs_index` and commit it"
    );
}
