//! MCP on the wire, with no IO: what the gateway reads of every message and
//! nothing more. Pure functions and borrowed views, so each piece is tested
//! and fuzzed on its own.
//!
//! - [`jsonrpc`]: JSON-RPC envelopes, classified without parsing the
//!   payload, ids kept as sent;
//! - [`sse`]: an incremental server-sent-events parser that keeps each
//!   event's exact bytes, and the framing of the gateway's own events;
//! - [`protocol`]: the MCP revisions, their two eras, and the client
//!   capabilities a message declares;
//! - [`percent`]: percent-decoding of paths, queries and header lists.

pub mod jsonrpc;
pub mod percent;
pub mod protocol;
pub mod sse;
