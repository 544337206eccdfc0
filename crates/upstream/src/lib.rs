//! Reaching unmodified MCP servers. Nothing here knows of the listener, the
//! routes or the relay: the proxy crate composes these parts and never the
//! reverse; the settings and types both share are `mcp_ui_model`'s.
//!
//! - [`tls`]: the rustls connector that verifies `https://` upstreams.
//! - [`session`]: sealed ids, owned sessions, the pools of connections
//!   sessions share, in-flight places, reaping.
//! - [`upstream`]: how each kind of upstream is reached: streamable HTTP over
//!   a pooled client, legacy HTTP+SSE, or a stdio child, and the routing of
//!   what they say.
//! - [`upstreams`]: what the gateway holds of its upstreams, as one handle.
//! - [`probe`]: a one-off MCP client that lists an upstream's live tools.
//! - [`telemetry`]: OpenTelemetry traces by the MCP semantic conventions,
//!   exported over OTLP/HTTP, and the trace context passed upstream.

pub mod probe;
pub mod session;
pub mod telemetry;
pub mod tls;
pub mod upstream;
pub mod upstreams;
