//! What an operator adds to an unmodified MCP server, as typed data, with no
//! network and no async: the overlay files and their rules, the widgets they
//! name (bundled into one document each), and the built-in widgets.
//!
//! - [`overlay`]: the format, loading (the only filesystem code), the rules,
//!   the widget bundler and the built-in widgets; compiled into one
//!   immutable set a reload swaps whole;
//! - [`host`]: which MCP host a client is, for the one answer that differs
//!   by host (a widget's sandbox domain);
//! - [`spelling`]: the "did you mean" every message names.

pub mod host;
pub mod overlay;
pub mod spelling;
