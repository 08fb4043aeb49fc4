//! Tree-sitter grammar for the OP2 kernel description language (`.op2`).
//!
//! ```
//! let mut parser = tree_sitter::Parser::new();
//! parser
//!     .set_language(&tree_sitter_op2::LANGUAGE.into())
//!     .expect("the op2 grammar loads");
//! let tree = parser.parse("set cells;", None).unwrap();
//! assert!(!tree.root_node().has_error());
//! ```

use tree_sitter_language::LanguageFn;

unsafe extern "C" {
    fn tree_sitter_op2() -> *const ();
}

/// The tree-sitter [`LanguageFn`] for this grammar.
pub const LANGUAGE: LanguageFn = unsafe { LanguageFn::from_raw(tree_sitter_op2) };

/// The content of the [`node-types.json`] file for this grammar.
///
/// [`node-types.json`]: https://tree-sitter.github.io/tree-sitter/using-parsers/6-static-node-types
pub const NODE_TYPES: &str = include_str!("../../src/node-types.json");

/// Syntax highlighting query.
pub const HIGHLIGHTS_QUERY: &str = include_str!("../../queries/highlights.scm");

/// Local-variable scoping query.
pub const LOCALS_QUERY: &str = include_str!("../../queries/locals.scm");

/// Symbol tagging query.
pub const TAGS_QUERY: &str = include_str!("../../queries/tags.scm");

/// Folding query.
pub const FOLDS_QUERY: &str = include_str!("../../queries/folds.scm");

/// Indentation query.
pub const INDENTS_QUERY: &str = include_str!("../../queries/indents.scm");

#[cfg(test)]
mod tests {
    #[test]
    fn language_loads() {
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&super::LANGUAGE.into())
            .expect("the op2 grammar loads");
    }
}
