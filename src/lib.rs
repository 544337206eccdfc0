//! mcp-ui-gateway: a lossless reverse proxy in front of unmodified MCP
//! servers, adding what MCP Apps and ChatGPT hosts need to render a UI.
//!
//! Layout, from the wire inwards:
//! - [`server`]: the listener and the checks every request passes (host and
//!   origin, CORS, media types, body limit), then hands over to the relay.
//! - [`relay`]: joins one client exchange to its session and upstream.
//! - [`upstream`]: how each kind of upstream is reached: streamable HTTP,
//!   legacy HTTP+SSE, or a stdio child, and the routing of what they say.
//! - [`gateway`]: shared state: mounts, session key, client, owned sessions.
//! - [`session`]: sealed session ids that carry their own routing.
//! - [`jsonrpc`] and [`sse`]: pure, allocation-light message and event parsing.
//! - [`rewrite`]: pure rewrites of results (`tools/list`, `tools/call`,
//!   resources, capabilities) that add the overlays' UI metadata.
//! - [`live`]: the overlay snapshot in force, swapped whole on reload.
//! - [`overlay`]: the operator's overlay files, loaded, checked and compiled
//!   into one immutable set (tool metadata and widget resources).
//! - [`auth`]: OAuth through the gateway: challenges rewritten to the
//!   gateway's protected-resource metadata, which it serves per mount.
//! - [`config`]: layered configuration and its validation.
//! - [`demo`]: the bundled legacy MCP server the default configuration fronts.
//! - [`metrics`] and [`health`]: `/metrics` (Prometheus text), request
//!   ids, and `/readyz` (every upstream answers).
//! - [`probe`]: a one-off MCP client that lists an upstream's live tools.
//! - [`preview`]: the `/preview` page, a browser MCP Apps host for the
//!   gateway's own mounts.
//! - [`cli`]: the `check` and `init` commands, built on [`overlay`] and
//!   [`probe`].

pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod demo;
pub mod endpoint;
pub mod gateway;
pub mod health;
pub mod jsonrpc;
pub mod live;
pub mod metrics;
pub mod middleware;
pub mod outcome;
pub mod overlay;
pub mod preview;
pub mod probe;
pub mod relay;
pub mod reply;
pub mod rewrite;
pub mod router;
pub mod server;
pub mod session;
pub mod sse;
pub mod upstream;
