//! mcp-ui-gateway: a lossless reverse proxy in front of unmodified MCP
//! servers, adding what MCP Apps and ChatGPT hosts need to render a UI.
//!
//! This crate is the program: the binary's startup (`main.rs`), the
//! [`cli`]'s `check` and `init` commands, the bundled [`demo`] server the
//! default configuration fronts, and [`log_filter`], `RUST_LOG` across the
//! crates. The gateway itself is a workspace of
//! crates whose dependencies are its layers (ARCHITECTURE.md, "Crates"):
//! - `mcp-ui-proxy`: the HTTP side: listener, layers, routes, endpoints,
//!   the relay, the shared state, OAuth, metrics, readiness, the preview;
//! - `mcp-ui-upstream`: reaching upstreams: the client pool and its TLS,
//!   sessions, the three transports, the probe, trace export;
//! - `mcp-ui-model`: what every layer shares: configuration, sealed session
//!   ids, outcomes, the clock, the body reader;
//! - `mcp-ui-identity`: the OAuth rules, pure;
//! - `mcp-ui-rewrite`: the pure rewrites and the plan that picks one;
//! - `mcp-ui-overlay`: the operator's overlay files, compiled;
//! - `mcp-ui-wire`: JSON-RPC envelopes, SSE events, protocol revisions,
//!   percent-decoding.
//!
//! The binary, the tests and the benches name each crate's modules by the
//! crate that holds them (`mcp_ui_proxy::relay`, `mcp_ui_model::config`,
//! `mcp_ui_overlay::overlay`, …); this crate exports only its own.

pub mod cli;
pub mod demo;
pub mod log_filter;
