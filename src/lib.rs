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
//! - `mcp-ui-upstream`: reaching upstreams: configuration, TLS, sessions,
//!   the three transports, the probe, trace export, outcomes;
//! - `mcp-ui-rewrite`: the pure rewrites and the plan that picks one;
//! - `mcp-ui-overlay`: the operator's overlay files, compiled;
//! - `mcp-ui-wire`: JSON-RPC envelopes, SSE events, protocol revisions,
//!   percent-decoding.
//!
//! Their modules are re-exported here under their own names
//! (`mcp_ui_gateway::relay`, `::config`, `::overlay`, …), one path for each
//! whatever crate holds it.

pub mod cli;
pub mod demo;
pub mod log_filter;

pub use mcp_ui_model::{config, outcome, reply};
pub use mcp_ui_overlay::{host, overlay, spelling};
pub use mcp_ui_proxy::{
    app_endpoint, assets, endpoint, gateway, health, live, metrics, middleware, oauth, preview,
    relay, router, server, stack, upstream_tools,
};
pub use mcp_ui_rewrite::{combine, rewrite};
pub use mcp_ui_upstream::{probe, session, telemetry, upstream};
pub use mcp_ui_wire::{jsonrpc, percent, protocol, sse};
