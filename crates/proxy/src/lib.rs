//! The gateway's HTTP side, from the wire inwards; dependencies point down
//! this list, and below it to the upstream crate and the pure ones:
//! - [`server`]: the listener, worker threads, connection deadlines and cap,
//!   and the graceful drain.
//! - [`stack`]: the layers every request passes, stacked in one place.
//! - [`middleware`]: one tower layer per cross-cutting concern: request id
//!   (and the span that carries it), status counts, CORS, Host/Origin
//!   policy, body limit.
//! - [`router`]: which part answers a path; [`endpoint`]: a mount's MCP
//!   endpoint (streamable HTTP's method and media rules);
//!   [`app_endpoint`]: an app's endpoint, one over several mounts (the
//!   rules by which it unites their answers are `mcp_ui_rewrite::combine`).
//! - [`relay`]: joins one client exchange to its session, the overlay
//!   snapshot, a plan and its upstream; [`relay::member`] is the same typed
//!   session without HTTP, for an app's members.
//! - [`gateway`]: the shared state, composed from what each part owns.
//! - [`oauth`]: the gateway's three OAuth roles: passing an upstream's own
//!   OAuth through, the resource server of `[auth]` and the authorization
//!   server of `[authorization_server]` (their rules are `mcp_ui_identity`'s).
//! - [`metrics`], [`health`], [`preview`]: `/metrics`, `/readyz`, `/preview`;
//!   [`assets`]: the widget files the gateway serves, `/assets/…`;
//!   `challenge`: ChatGPT's domain-verification token.
//! - [`live`]: the overlay snapshot in force, swapped whole on reload;
//!   [`upstream_tools`]: what each upstream last listed, and what `check`
//!   would say of it.
//! - [`apps`]: what each `[[app]]` has learnt from its listings;
//!   [`pending`]: requests waiting upstream and those set aside for their
//!   client's input; [`fd`]: the open-file limit and the connection cap it
//!   allows. State the gateway composes, beneath it.

pub mod app_endpoint;
pub mod apps;
pub mod assets;
mod challenge;
pub mod endpoint;
pub mod fd;
pub mod gateway;
pub mod health;
pub mod live;
pub mod metrics;
pub mod middleware;
pub mod oauth;
pub mod pending;
pub mod preview;
pub mod relay;
pub mod router;
pub mod server;
pub mod stack;
pub mod upstream_tools;
