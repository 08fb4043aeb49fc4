//! The op2 language server: a thin layer of tower-lsp-server handlers over
//! the analysis and the code generator.
//!
//! Rules this crate keeps (architecture.md, "Language server rules"), each
//! tested through the real transport:
//!
//! 1. `didOpen`, `didChange` and `didClose` apply to the document store
//!    under a short synchronous lock before any `.await`, so concurrent
//!    notifications cannot reorder edits. They edit the text only (a rope);
//!    the parse catches up in the document's worker, off the lock, so that
//!    a slow parse of one document (E002) delays no other.
//! 2. Every analysis result carries the document version it was computed
//!    for; a result for an older version is never published.
//! 3. Requests to the client (progress, configuration) are spawned, never
//!    awaited inside a handler.
//! 4. Parsing and analysis run on the blocking pool, never on the async
//!    threads, and never under the lock of the document store.
//! 5. Positions are converted at the edge, in the negotiated encoding.
//! 6. A panic in one request is caught and logged; the session goes on.
//! 7. No message ends the session but `exit`: `transport` answers malformed
//!    input with the JSON-RPC error the specification names.

pub mod config;
pub mod documents;
pub mod handlers;
pub mod ide;
mod intervals;
mod server;
mod slices;
pub mod transport;
pub mod work;
pub mod world;

pub use server::{
    ANALYSIS_LIMIT, Backend, Options, SHUTDOWN_WAITS_FOR_BUILDS, serve, serve_stdio, serve_with,
};
