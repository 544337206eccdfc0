//! What the gateway holds of its upstreams, shared by every connection: the
//! HTTP client, the sessions it owns for clients that own their connection,
//! the connections sessions share, the stdio children and the memory of
//! answers read whole.

use std::sync::Arc;

use crate::session::Owned;
use crate::session::pool::Pool;
use crate::upstream::budget::Budget;
use crate::upstream::client::Client;
use crate::upstream::messages::MessageSession;
use crate::upstream::stdio::Children;

/// The upstream side of a gateway.
pub struct Upstreams {
    pub client: Client,
    /// Sessions this process owns for clients that own their connection
    /// (stdio and legacy SSE upstreams, `sessions = "client"`).
    pub sessions: Arc<Owned<MessageSession>>,
    /// By mount index: the connections clients share, and their sessions.
    pub pools: Arc<Vec<Pool>>,
    /// The stdio children running, against `limits.max_stdio_children`.
    pub children: Arc<Children>,
    /// Memory held by answers read whole, against `limits.max_buffered_bytes`.
    pub buffers: Arc<Budget>,
}
