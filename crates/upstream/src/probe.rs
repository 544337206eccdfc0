//! A one-off MCP client for `check` and `init`: it opens a session with one
//! configured upstream, over whichever transport that upstream speaks, fetches
//! every page of its live `tools/list`, and ends the session.
//!
//! It speaks real MCP rather than peeking (`initialize`, then
//! `notifications/initialized`, then `tools/list` while there is a
//! `nextCursor`), because an upstream that needs the handshake answers
//! nothing useful without it, and because what the gateway will later rewrite
//! is exactly what such a client sees. Stdio and legacy SSE upstreams go
//! through the gateway's own [`MessageSession`]s; streamable HTTP is spoken
//! here, request by request, since the relay only forwards other clients'
//! exchanges. Every wait is bounded by the configured limits, and every error
//! names the upstream.

mod client;
mod outcome;
mod prober;
mod round_trip;
#[cfg(test)]
mod tests;

pub use client::list_tools;
pub use outcome::Listing;
pub use prober::Prober;
pub use round_trip::PROTOCOL_VERSION;
