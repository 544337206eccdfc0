//! Sessions over message-oriented upstreams (a stdio child, a legacy SSE
//! connection): the transport moves whole messages both ways, and this module
//! routes what comes back: a response to the client request waiting for it,
//! progress to the request that asked for it, and everything else the server
//! says on its own (logging, sampling, elicitation, list changes) to an open
//! request stream or the client's GET stream, queued until one exists.
//!
//! One client per session passes ids unchanged. A connection shared by
//! several clients ([`Mux`]) rewrites request ids and progress tokens to its
//! own and restores them on the way back, and routes what the server says
//! on its own to the client it concerns ([`mux`]): a server's request to the
//! client whose request caused it (under an id of the gateway's, so that
//! the answer finds its way back), a list change to every client, a
//! resource update to its subscribers.
//!
//! What goes to the upstream waits in a bounded [`Outbox`]; a request whose
//! requester stops waiting (its time ran out, the client went away) is taken
//! back if it was not written yet, and otherwise the upstream is sent
//! `notifications/cancelled` for it, so that it can stop the work.

mod deliver;
pub mod mux;
mod outbox;
pub mod peer;
mod request;
mod shared;
mod state;

pub use mux::Mux;
pub use outbox::Full;
pub(crate) use outbox::Outbox;
pub use peer::{Peer, Peers};
pub use state::Delivery;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::Bytes;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use mcp_ui_model::outcome::{Failure, UpstreamError};
#[cfg(test)]
use mcp_ui_wire::jsonrpc;
#[cfg(test)]
use serde_json::value::RawValue;
use state::{Pending, State};
#[cfg(test)]
use tokio::sync::mpsc;

/// Messages buffered per request or GET stream before the upstream waits.
const STREAM_BUFFER: usize = 64;

/// A session with one message-oriented upstream connection.
pub struct MessageSession {
    upstream: Arc<str>,
    outbox: Outbox,
    state: Mutex<State>,
    closed: CancellationToken,
    reason: OnceLock<String>,
    /// Who ended it, first one wins; unset while open.
    ended_by: OnceLock<EndedBy>,
    /// Set on a connection shared by several clients: ids are rewritten and
    /// what the server says on its own is routed by client.
    mux: Option<Arc<Mux>>,
    /// This session, for the server requests it hands to clients.
    me: Weak<MessageSession>,
    created: Instant,
    last_active_ms: AtomicU64,
}

/// Who ended a session, for its duration metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// The upstream: its process exited, its connection broke.
    Upstream,
    /// The client (`DELETE`).
    Client,
    /// The gateway: idle beyond its limit, or shutdown.
    Gateway,
    /// It never opened for the client (`initialize` failed).
    Unopened,
    /// A probe of the gateway's own (listing the tools at start, for
    /// readiness or a command) was done with it.
    Probe,
}

/// Removes a request's routing entry if it is dropped before its response
/// arrived (the client went away, or the request timed out): the request is
/// taken out of the outbox, or the upstream is told it was cancelled. Only
/// its own entry, never a later request's under the same key.
pub struct PendingGuard {
    session: Arc<MessageSession>,
    key: String,
    seq: u64,
    gave_up_after: Option<u64>,
}

impl PendingGuard {
    /// The request waited its `secs` in vain: say so to the upstream.
    pub fn timed_out(mut self, secs: u64) {
        self.gave_up_after = Some(secs);
    }

    /// The request is set aside for its client's input (`true`), or taken
    /// up again: a connection where every request is set aside may be
    /// ended for room ([`MessageSession::only_parked`]).
    pub fn park(&self, parked: bool) {
        self.session.set_parked(&self.key, self.seq, parked);
    }
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        let reason = match self.gave_up_after {
            Some(secs) => format!("no answer within {secs} s (the gateway's request timeout)"),
            None => "the client stopped waiting for the answer".to_owned(),
        };
        self.session.forget(&self.key, self.seq, &reason);
    }
}

impl MessageSession {
    /// The transport's writer takes what to send from [`Self::outgoing`];
    /// `mux` is set for a connection shared by several clients.
    pub fn new(upstream: Arc<str>, mux: Option<Arc<Mux>>) -> Arc<Self> {
        Self::with_outbox(upstream, mux, Outbox::default())
    }

    /// [`Self::new`] with an outbox of other bounds.
    pub(crate) fn with_outbox(
        upstream: Arc<str>,
        mux: Option<Arc<Mux>>,
        outbox: Outbox,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| MessageSession {
            upstream,
            outbox,
            state: Mutex::new(State::default()),
            closed: CancellationToken::new(),
            reason: OnceLock::new(),
            ended_by: OnceLock::new(),
            mux,
            me: me.clone(),
            created: Instant::now(),
            last_active_ms: AtomicU64::new(0),
        })
    }

    /// Whether several clients share this connection.
    pub(crate) fn is_shared(&self) -> bool {
        self.mux.is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Requests waiting for their answer (the gateway's own included).
    pub fn waiting(&self) -> usize {
        self.lock().pending.len()
    }

    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// Cancelled once the session ends, for whatever reason.
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// The next message for the upstream, in the order sent, once there is
    /// one. Cancel safe.
    pub async fn outgoing(&self) -> Bytes {
        self.outbox.next().await
    }

    /// Time since the last client request.
    pub fn idle(&self) -> std::time::Duration {
        let last = self.last_active_ms.load(Ordering::Relaxed);
        self.created
            .elapsed()
            .saturating_sub(std::time::Duration::from_millis(last))
    }

    /// Whether the client has nothing open here: no request waiting for its
    /// answer and no GET stream.
    pub(crate) fn is_quiet(&self) -> bool {
        let st = self.lock();
        st.pending.values().all(|p| p.tx.is_closed())
            && st.get_stream.as_ref().is_none_or(|tx| tx.is_closed())
    }

    fn touch(&self) {
        let ms = self.created.elapsed().as_millis() as u64;
        self.last_active_ms.store(ms, Ordering::Relaxed);
    }

    fn closed_error(&self) -> Failure {
        let reason = self.reason.get().map_or("session ended", String::as_str);
        Failure::Ended {
            upstream: self.upstream.to_string(),
            what: format!("is closed: {reason}"),
        }
    }

    fn backlog(&self, full: Full) -> Failure {
        Failure::Upstream(UpstreamError::Backlog {
            upstream: self.upstream.to_string(),
            messages: full.messages,
            bytes: full.bytes,
        })
    }

    /// How long since the session started.
    pub fn age(&self) -> std::time::Duration {
        self.created.elapsed()
    }

    /// Why the session ended, as first said; `None` while it is open.
    pub fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }

    /// Who ended the session; `None` while it is open.
    pub fn ended_by(&self) -> Option<EndedBy> {
        self.ended_by.get().copied()
    }

    /// [`Self::close`], saying who ended it (unless it had ended already).
    pub fn end(&self, by: EndedBy, reason: impl Into<String>) {
        let _ = self.ended_by.set(by);
        self.close(reason);
    }

    /// End the session: every waiting request gets an error naming the
    /// upstream and `reason`, streams close, and the transport stops. Unless
    /// [`Self::end`] said otherwise, the upstream ended it.
    pub fn close(&self, reason: impl Into<String>) {
        let _ = self.ended_by.set(EndedBy::Upstream);
        let reason = reason.into();
        let first = self.reason.set(reason.clone()).is_ok();
        let pending: Vec<Pending> = {
            let mut st = self.lock();
            st.by_progress.clear();
            st.get_stream = None;
            st.backlog.clear();
            st.pending.drain().map(|(_, p)| p).collect()
        };
        self.closed.cancel();
        if first && !pending.is_empty() {
            tracing::warn!(upstream = %self.upstream, %reason, failed = pending.len(), "upstream session ended with requests in flight");
        }
        for p in pending {
            let failure = Failure::Ended {
                upstream: self.upstream.to_string(),
                what: reason.clone(),
            };
            let _ = p.tx.try_send(Delivery::Failed(failure));
        }
    }
}

#[cfg(test)]
mod tests;
