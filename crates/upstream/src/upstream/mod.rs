//! Upstream MCP servers: how the gateway reaches each kind. Streamable HTTP is
//! relayed request by request over the pooled [`client`], or through a
//! session the gateway holds itself ([`held`]); a stdio child ([`stdio`])
//! and a legacy HTTP+SSE connection ([`legacy_sse`]) are message pipes
//! too, each joined to a [`messages::MessageSession`] that routes what they
//! say. [`handshake`]: the gateway's own opening of a connection.
//! Answers read whole draw from one memory [`budget`].

pub mod budget;
pub mod client;
pub mod handshake;
pub mod held;
pub(crate) mod legacy_sse;
pub mod messages;
pub mod stdio;
pub mod vetted;

use std::sync::Arc;
use std::time::Duration;

use mcp_ui_model::config::{Limits, Mount, Transport};
use mcp_ui_model::outcome::UpstreamError;
use messages::{MessageSession, Mux};

/// Open a new session on a message-oriented upstream. `shared` sessions
/// serve several sessionless clients and rewrite ids.
pub async fn open_session(
    mount: &Mount,
    limits: &Limits,
    client: &client::Client,
    mux: Option<Arc<Mux>>,
) -> Result<Arc<MessageSession>, UpstreamError> {
    open_supervised(mount, limits, client, mux, None).await
}

/// [`open_session`], with a stdio child counted against `sup` (the
/// gateway's child limit and the mount's restart backoff).
pub async fn open_supervised(
    mount: &Mount,
    limits: &Limits,
    client: &client::Client,
    mux: Option<Arc<Mux>>,
    sup: Option<&stdio::Supervisor>,
) -> Result<Arc<MessageSession>, UpstreamError> {
    match &mount.transport {
        Transport::Stdio(cmd) => match sup {
            Some(sup) => stdio::spawn_supervised(&mount.name, cmd, limits, mux, sup),
            None => stdio::spawn(&mount.name, cmd, limits, mux),
        },
        Transport::Sse { url } => {
            legacy_sse::connect(
                &mount.name,
                url,
                limits,
                client,
                mux,
                Duration::from_secs(limits.connect_timeout_secs),
            )
            .await
        }
        Transport::Http { url } => Ok(held::open(
            &mount.name,
            url,
            limits,
            client,
            mux,
            http::HeaderMap::new(),
            None,
        )),
    }
}
