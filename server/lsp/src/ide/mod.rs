//! Editor queries over the analysis and the graph model, in plain data:
//! byte offsets and ranges in, byte ranges and text out. Nothing here knows
//! LSP; the handlers convert.

pub mod completion;
pub mod generated;
pub mod navigation;
