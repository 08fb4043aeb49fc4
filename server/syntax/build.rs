//! Compiles the allocator tree-sitter calls and the guarded parse
//! (`csrc/guard.c`; see `src/memory.rs`) against the headers of the
//! tree-sitter library this crate links.

fn main() {
    let include = std::env::var("DEP_TREE_SITTER_INCLUDE")
        .expect("the tree-sitter crate names its include directory to the crates that link it");
    println!("cargo:rerun-if-changed=csrc/guard.c");
    cc::Build::new()
        .std("c11")
        .include(include)
        .file("csrc/guard.c")
        .warnings(true)
        .extra_warnings(true)
        .compile("op2-guard");
}
