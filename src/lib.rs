//! mcp-ui-gateway: a lossless reverse proxy in front of unmodified MCP
//! servers, adding what MCP Apps and ChatGPT hosts need to render a UI.
//!
//! Layout, from the wire inwards; dependencies point down this list (the
//! module graph has no cycle: `scripts/module-graph.py`, and ARCHITECTURE.md
//! for the path of a request):
//! - [`server`]: the listener, worker threads, connection deadlines and cap,
//!   and the graceful drain.
//! - [`stack`]: the layers every request passes, stacked in one place.
//! - [`middleware`]: one tower layer per cross-cutting concern: request id
//!   (and the span that carries it), status counts, CORS, Host/Origin
//!   policy, body limit.
//! - [`router`]: which part answers a path; [`endpoint`]: a mount's MCP
//!   endpoint (streamable HTTP's method and media rules);
//!   [`app_endpoint`]: an app's endpoint, one over several mounts, and
//!   [`combine`], the pure rules by which it unites their answers.
//! - [`relay`]: joins one client exchange to its session, the overlay
//!   snapshot, a plan and its upstream; [`relay::member`] is the same typed
//!   session without HTTP, for an app's members.
//! - [`gateway`]: the shared state, composed from what each part owns.
//! - [`session`]: sealed ids, owned sessions, the pools of connections
//!   sessions share, in-flight places, reaping.
//! - [`upstream`]: how each kind of upstream is reached: streamable HTTP over
//!   a pooled client, legacy HTTP+SSE, or a stdio child, and the routing of
//!   what they say.
//! - [`auth`]: OAuth through the gateway: challenges rewritten to the
//!   gateway's protected-resource metadata, which it serves per mount.
//! - [`tls`]: rustls on both sides: the connector that verifies `https://`
//!   upstreams, and the listener's certificate, rotated without a restart.
//! - [`telemetry`]: OpenTelemetry traces by the MCP semantic conventions,
//!   exported over OTLP/HTTP, and the trace context passed upstream.
//! - [`metrics`], [`health`], [`preview`]: `/metrics`, `/readyz`, `/preview`;
//!   [`assets`]: the widget files the gateway serves, `/assets/…`.
//! - [`live`]: the overlay snapshot in force, swapped whole on reload.
//! - [`outcome`]: how an exchange ended, the one source of both the answer
//!   to a failure and its metrics label; [`reply`]: the response body type
//!   and the gateway's own responses.
//! - [`rewrite`]: pure rewrites of results (`tools/list`, `tools/call`,
//!   resources, capabilities) that add the overlays' UI metadata.
//! - [`overlay`]: the operator's overlay files, loaded, checked and compiled
//!   into one immutable set (tool metadata and widget resources).
//! - [`jsonrpc`] and [`sse`]: pure, allocation-light message and event parsing;
//!   [`protocol`]: the revisions the gateway knows, their two eras and the
//!   client capabilities that decide what a server offers.
//! - [`host`]: which MCP host a client is (ChatGPT, Claude, another), for
//!   the widget domain, whose form differs by host, and the origins hosts
//!   render widgets at.
//! - [`config`]: layered configuration and its validation.
//! - [`probe`]: a one-off MCP client that lists an upstream's live tools;
//!   [`cli`]: the `check` and `init` commands built on it.
//! - [`demo`]: the bundled legacy MCP server the default configuration fronts.

pub mod app_endpoint;
pub mod assets;
pub mod auth;
pub mod cli;
pub mod combine;
pub mod config;
pub mod demo;
pub mod endpoint;
pub mod gateway;
pub mod health;
pub mod live;
pub mod metrics;
pub mod middleware;
pub mod outcome;
pub mod preview;
pub mod probe;
pub mod relay;
pub mod reply;
pub mod router;
pub mod server;
pub mod session;
pub mod stack;
pub mod telemetry;
pub mod tls;
pub mod upstream;
pub mod upstream_tools;

pub use mcp_ui_overlay::{host, overlay, spelling};
pub use mcp_ui_rewrite::rewrite;
pub use mcp_ui_wire::{jsonrpc, protocol, sse};
