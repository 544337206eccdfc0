//! Reaching unmodified MCP servers, and the vocabulary every layer above
//! shares. Nothing here knows of the listener, the routes or the relay: the
//! gateway crate composes these parts and never the reverse.
//!
//! - [`body`]: a request's or a fetched answer's body, read whole within
//!   bounds.
//! - [`clock`]: the one wall clock, Unix seconds, milliseconds and
//!   nanoseconds.
//! - [`config`]: layered configuration and its validation into one settings
//!   value.
//! - [`reply`]: the response body type and the gateway's own responses;
//!   [`outcome`]: how an exchange ended, the one source of both the answer
//!   to a failure and its metrics label.
//! - [`tls`]: rustls on both sides: the connector that verifies `https://`
//!   upstreams, and the listener's certificate, rotated without a restart.
//! - [`session`]: sealed ids, owned sessions, the pools of connections
//!   sessions share, in-flight places, reaping.
//! - [`upstream`]: how each kind of upstream is reached: streamable HTTP over
//!   a pooled client, legacy HTTP+SSE, or a stdio child, and the routing of
//!   what they say.
//! - [`probe`]: a one-off MCP client that lists an upstream's live tools.
//! - [`telemetry`]: OpenTelemetry traces by the MCP semantic conventions,
//!   exported over OTLP/HTTP, and the trace context passed upstream.

pub mod body;
pub mod clock;
pub mod config;
pub mod outcome;
pub mod probe;
pub mod reply;
pub mod session;
pub mod telemetry;
pub mod tls;
pub mod upstream;

use mcp_ui_overlay::{host, overlay, spelling};
use mcp_ui_wire::{jsonrpc, percent, protocol, sse};
