//! The syntax layer of op2: parsing `.op2` text with the tree-sitter grammar,
//! typed views over the tree, line/column conversion, and syntax diagnostics.
//!
//! Parsing never fails: [`Parse::new`] always returns a tree, and
//! [`Parse::errors`] says what was wrong with it. Nothing here does IO or
//! knows about editors; ranges are byte ranges ([`TextRange`]) and the
//! [`LineIndex`] converts them at the edges.

pub mod ast;
pub mod diagnostic;
mod errors;
pub mod format;
pub mod limit;
pub mod line_index;
pub mod literal;
mod memory;
mod parse;
pub mod path;
pub mod print;
mod text;

pub use diagnostic::{Code, Diagnostic, FileId, Fix, Location, Related, Severity, Tag, TextEdit};
pub use limit::ParseLimit;
pub use line_index::{Encoding, LineCol, LineIndex};
pub use parse::{Cancelled, EditError, Parse, on_parse_stack, point_at};
pub use path::NodePath;
pub use text::TextRange;
pub mod synth;
pub use tree_sitter;
