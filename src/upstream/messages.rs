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

pub mod mux;
mod outbox;
pub mod peer;
mod state;

pub use mux::{Mux, Sink};
pub use outbox::{Full, MAX_QUEUED, MAX_QUEUED_BYTES, Outbox};
pub use peer::{Peer, Peers};
pub use state::Delivery;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::Bytes;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{self, Kind};
use crate::outcome::{Failure, UpstreamError};
use state::{BACKLOG, Pending, State, Target, progress_of, route_unrelated};

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
    pub fn with_outbox(upstream: Arc<str>, mux: Option<Arc<Mux>>, outbox: Outbox) -> Arc<Self> {
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
    pub fn is_shared(&self) -> bool {
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
    pub fn is_quiet(&self) -> bool {
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

    /// Send a client request and get the stream of what relates to it. The
    /// receiver ends with [`Delivery::Final`].
    pub async fn request(
        self: &Arc<Self>,
        message: &[u8],
        id: &RawValue,
        progress_token: Option<&RawValue>,
    ) -> Result<(mpsc::Receiver<Delivery>, PendingGuard), Failure> {
        self.request_as(message, id, progress_token, None).await
    }

    /// [`Self::request`] for one client session of a shared connection
    /// (`None`: a client with no session, or the only client). On a shared
    /// connection `id` and `progress_token` must be the ones found in
    /// `message`: they are spliced.
    pub async fn request_as(
        self: &Arc<Self>,
        message: &[u8],
        id: &RawValue,
        progress_token: Option<&RawValue>,
        peer: Option<&Arc<Peer>>,
    ) -> Result<(mpsc::Receiver<Delivery>, PendingGuard), Failure> {
        self.send_request(message, id, progress_token, peer, false)
    }

    /// A request of the gateway's own (its `initialize` of a connection it
    /// opens): never taken for a client's when routing what the server says.
    /// `id` is the one found in `message` (a shared connection splices it).
    pub fn request_own(
        self: &Arc<Self>,
        message: &[u8],
        id: &RawValue,
    ) -> Result<(mpsc::Receiver<Delivery>, PendingGuard), Failure> {
        self.send_request(message, id, None, None, true)
    }

    fn send_request(
        self: &Arc<Self>,
        message: &[u8],
        id: &RawValue,
        progress_token: Option<&RawValue>,
        peer: Option<&Arc<Peer>>,
        own: bool,
    ) -> Result<(mpsc::Receiver<Delivery>, PendingGuard), Failure> {
        self.touch();
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let shared = self.is_shared();
        let (key, seq) = {
            let mut st = self.lock();
            if self.is_closed() {
                return Err(self.closed_error());
            }
            // Ids are unique among a session's waiting requests: a second
            // request with the id of one still waiting could take its answer.
            if !shared && st.pending.contains_key(&jsonrpc::id_key(id)) {
                return Err(Failure::IdInUse {
                    id: id.get().to_owned(),
                });
            }
            st.seq += 1;
            let seq = st.seq;
            let (key, wire, progress, client_token, rewritten) = if shared {
                // Clients' ids and progress tokens pass as they are unless
                // another client's request waiting here has the same: only
                // then does the upstream see one of the connection's own.
                let mut parts = Vec::new();
                let mut key = jsonrpc::id_key(id);
                if st.pending.contains_key(&key) {
                    key = st.fresh_key("mcp-ui-gateway/");
                    parts.push((id, key.clone()));
                }
                let mut progress = progress_token.map(jsonrpc::id_key);
                let mut client_token = None;
                if let (Some(t), Some(p)) = (progress_token, &progress)
                    && st.by_progress.contains_key(p)
                {
                    let mine = st.fresh_key("mcp-ui-gateway/p");
                    parts.push((t, mine.clone()));
                    progress = Some(mine);
                    client_token = Some(Box::<str>::from(t.get()));
                }
                let wire = match parts.is_empty() {
                    true => Bytes::copy_from_slice(message),
                    false => jsonrpc::splice_all(message, &parts)
                        .map(Bytes::from)
                        .unwrap_or_else(|| Bytes::copy_from_slice(message)),
                };
                let rewritten = parts.iter().any(|(p, _)| std::ptr::eq(*p, id));
                (key, wire, progress, client_token, rewritten)
            } else {
                let progress = progress_token.map(jsonrpc::id_key);
                (
                    jsonrpc::id_key(id),
                    Bytes::copy_from_slice(message),
                    progress,
                    None,
                    false,
                )
            };
            // Queued under the lock: the upstream sees requests in the order
            // they were registered.
            let out = self.outbox.push(wire).map_err(|full| self.backlog(full))?;
            if let Some(p) = &progress {
                st.by_progress.insert(p.clone(), key.clone());
            }
            let cancellable = jsonrpc::classify_one(message)
                .is_ok_and(|m| m.method.as_deref() != Some("initialize"));
            st.pending.insert(
                key.clone(),
                Pending {
                    tx,
                    seq,
                    client_id: id.get().into(),
                    rewritten,
                    progress,
                    client_token,
                    out,
                    cancellable,
                    peer: peer.cloned(),
                    own,
                },
            );
            (key, seq)
        };
        let guard = PendingGuard {
            session: self.clone(),
            key,
            seq,
            gave_up_after: None,
        };
        Ok((rx, guard))
    }

    /// Send a client notification or response (nothing comes back for it).
    pub async fn notify(
        &self,
        message: Bytes,
        kind: Kind,
        method: Option<&str>,
        params: Option<&RawValue>,
    ) -> Result<(), Failure> {
        self.touch();
        if self.is_closed() {
            return Err(self.closed_error());
        }
        let cancel = method == Some("notifications/cancelled");
        // On a shared connection, whose request `requestId` names is known
        // only with the client ([`Self::cancel_for`]), and a client's answer
        // goes back through the [`Mux`] that gave its request an id.
        if self.is_shared() && (kind == Kind::Response || cancel) {
            tracing::debug!(upstream = %self.upstream, "dropped a message a shared connection cannot route");
            return Ok(());
        }
        if cancel {
            // The server will not answer a cancelled request: end the wait
            // for it now rather than at the request timeout.
            if let Some(id) = jsonrpc::params_view(params).request_id {
                self.fail(&jsonrpc::id_key(id), Failure::Cancelled);
            }
        }
        self.outbox
            .push(message)
            .map(|_| ())
            .map_err(|full| self.backlog(full))
    }

    /// End the wait of the request the upstream knows as `key` (its id as
    /// the upstream saw it) with `failure` instead of a response.
    pub fn fail(&self, key: &str, failure: Failure) {
        let p = {
            let mut st = self.lock();
            let p = st.pending.remove(key);
            if let Some(t) = p.as_ref().and_then(|p| p.progress.as_ref()) {
                st.by_progress.remove(t);
            }
            p
        };
        if let Some(p) = p {
            let _ = p.tx.try_send(Delivery::Failed(failure));
        }
    }

    /// Attach the client's GET stream, which receives what the server says on
    /// its own, starting with anything queued. At most one at a time.
    pub fn attach_stream(&self) -> Option<mpsc::Receiver<Bytes>> {
        self.touch();
        let mut st = self.lock();
        if st.get_stream.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_BUFFER.max(st.backlog.len()));
        for m in st.backlog.drain(..) {
            let _ = tx.try_send(m);
        }
        st.get_stream = Some(tx);
        Some(rx)
    }

    /// Route one message from the upstream.
    pub async fn deliver(&self, message: Bytes) {
        self.deliver_for(message, None).await;
    }

    /// Route one message from the upstream that it sent in answer to the
    /// request the upstream knows as `related` (a streamable HTTP upstream
    /// says so by the stream it sends it on), if that is known.
    pub async fn deliver_for(&self, message: Bytes, related: Option<&str>) {
        let parsed = match jsonrpc::classify_one(&message) {
            Ok(m) => m,
            Err(e) => {
                if let Err(bad) = std::str::from_utf8(&message) {
                    return self.not_utf8(&message, bad);
                }
                tracing::warn!(upstream = %self.upstream, error = %e, "ignored a message from the upstream that is not JSON-RPC");
                return;
            }
        };
        let target = {
            let mut st = self.lock();
            match parsed.kind {
                Kind::Response => {
                    let key = jsonrpc::id_key(parsed.id.expect("responses have ids"));
                    let Some(p) = st.pending.remove(&key) else {
                        tracing::debug!(upstream = %self.upstream, id = %key, "response to no waiting request");
                        return;
                    };
                    if let Some(t) = &p.progress {
                        st.by_progress.remove(t);
                    }
                    let bytes = match parsed.id {
                        Some(id) if p.rewritten => jsonrpc::splice(&message, id, &p.client_id)
                            .map(Bytes::from)
                            .unwrap_or_else(|| message.clone()),
                        _ => message.clone(),
                    };
                    Target::Request(p.tx, Delivery::Final(bytes))
                }
                _ => match (progress_of(&st, &parsed, &message), &self.mux) {
                    (Some(target), _) => target,
                    (None, Some(mux)) => {
                        let me: Weak<dyn Sink> = self.me.clone();
                        let up = &self.upstream;
                        mux::route(&mut st, mux, &me, up, &parsed, &message, related)
                    }
                    (None, None) => route_unrelated(&mut st, message.clone()),
                },
            }
        };
        self.hand_over(target).await;
    }

    async fn hand_over(&self, target: Target) {
        match target {
            Target::Request(tx, d) => {
                let _ = tx.send(d).await;
            }
            Target::Stream(tx, m) => {
                let _ = tx.send(m).await;
            }
            Target::Peer(peer, m) => peer.send(m),
            Target::Peers(peers, m) => {
                for p in peers {
                    p.send(m.clone());
                }
            }
            Target::Upstream(m) => {
                if self.outbox.push(m).is_err() {
                    tracing::debug!(upstream = %self.upstream, "no room to answer the upstream's request");
                }
            }
            Target::Queued => {}
        }
    }

    /// Say something of the gateway's own (an overlay change) to the client:
    /// on its GET stream, or queued until it opens one. Never on a request's
    /// stream, which belongs to that request's exchange.
    pub async fn announce(&self, message: Bytes) {
        let tx = {
            let mut st = self.lock();
            match st.get_stream.as_ref().filter(|tx| !tx.is_closed()) {
                Some(tx) => tx.clone(),
                None => {
                    if st.backlog.len() == BACKLOG {
                        st.backlog.pop_front();
                    }
                    st.backlog.push_back(message);
                    return;
                }
            }
        };
        let _ = tx.send(message).await;
    }

    /// How long since the session started.
    pub fn age(&self) -> std::time::Duration {
        self.created.elapsed()
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

/// What a connection shared by several clients keeps for each.
impl MessageSession {
    /// A client's `notifications/cancelled` (`message`) for its request
    /// `request_id`, on a shared connection: that request's wait ends and the
    /// upstream is told under the id it saw. `peer` is the client session
    /// (`None`: a client with no session, whose id must be unambiguous).
    /// Whether a request was found.
    pub fn cancel_for(&self, peer: Option<u64>, message: &[u8], request_id: &RawValue) -> bool {
        let wanted = jsonrpc::id_key(request_id);
        let found = {
            let mut st = self.lock();
            let mut keys = st.pending.iter().filter(|(_, p)| {
                !p.own
                    && p.peer.as_ref().map(|p| p.key()) == peer
                    && jsonrpc::id_key_str(&p.client_id) == wanted
            });
            let key = match (keys.next(), keys.next()) {
                (Some((k, _)), None) => k.clone(),
                _ => return false,
            };
            let p = st.pending.remove(&key);
            if let Some(t) = p.as_ref().and_then(|p| p.progress.as_ref()) {
                st.by_progress.remove(t);
            }
            p.map(|p| (key, p))
        };
        let Some((key, p)) = found else {
            return false;
        };
        let _ = p.tx.try_send(Delivery::Failed(Failure::Cancelled));
        if self.outbox.withdraw(p.out) {
            return true;
        }
        let wire = jsonrpc::splice(message, request_id, &key)
            .map(Bytes::from)
            .unwrap_or_else(|| Bytes::copy_from_slice(message));
        let _ = self.send_raw(wire);
        true
    }

    /// Send a message as it is (a client's answer, already under the
    /// upstream's id).
    pub fn send_raw(&self, message: Bytes) -> Result<(), Failure> {
        self.touch();
        if self.is_closed() {
            return Err(self.closed_error());
        }
        self.outbox
            .push(message)
            .map(|_| ())
            .map_err(|full| self.backlog(full))
    }

    /// Client session `peer` subscribed to `uri` here.
    pub fn subscribe(&self, peer: u64, uri: &str) {
        let mut st = self.lock();
        let subs = st.subscribers.entry(uri.to_owned()).or_default();
        if !subs.contains(&peer) {
            subs.push(peer);
        }
    }

    /// Client session `peer` unsubscribed from `uri`; whether no client is
    /// subscribed to it any more (the upstream may be told).
    pub fn unsubscribe(&self, peer: u64, uri: &str) -> bool {
        let mut st = self.lock();
        let Some(subs) = st.subscribers.get_mut(uri) else {
            return true;
        };
        subs.retain(|k| *k != peer);
        let last = subs.is_empty();
        if last {
            st.subscribers.remove(uri);
        }
        last
    }

    /// Client session `peer` is gone: the resources no client is subscribed
    /// to any more.
    pub fn forget_peer(&self, peer: u64) -> Vec<String> {
        let mut st = self.lock();
        let mut orphans = Vec::new();
        st.subscribers.retain(|uri, subs| {
            subs.retain(|k| *k != peer);
            if subs.is_empty() {
                orphans.push(uri.clone());
            }
            !subs.is_empty()
        });
        orphans
    }

    /// A client asked for log messages from `rank` up: whether the upstream
    /// must be asked for more than it sends now (each client's own level
    /// filters what reaches it).
    pub fn lower_level(&self, rank: u8) -> bool {
        let mut st = self.lock();
        match st.level {
            Some(now) if now <= rank => false,
            _ => {
                st.level = Some(rank);
                true
            }
        }
    }
}

impl Sink for MessageSession {
    fn send_raw(&self, message: Bytes) -> Result<(), Failure> {
        MessageSession::send_raw(self, message)
    }

    fn is_closed(&self) -> bool {
        MessageSession::is_closed(self)
    }
}

impl MessageSession {
    fn backlog(&self, full: Full) -> Failure {
        Failure::Upstream(UpstreamError::Backlog {
            upstream: self.upstream.to_string(),
            messages: full.messages,
            bytes: full.bytes,
        })
    }

    /// The requester of `key` stopped waiting for `reason`: take the request
    /// back if it was not written yet, else tell the upstream it is cancelled
    /// (when that fits in the outbox: this never waits).
    fn forget(&self, key: &str, seq: u64, reason: &str) {
        let p = {
            let mut st = self.lock();
            if st.pending.get(key).is_none_or(|p| p.seq != seq) {
                return;
            }
            let p = st.pending.remove(key);
            if let Some(t) = p.as_ref().and_then(|p| p.progress.as_ref()) {
                st.by_progress.remove(t);
            }
            p
        };
        let Some(p) = p else { return };
        if self.is_closed() || self.outbox.withdraw(p.out) || !p.cancellable {
            return;
        }
        let reason = serde_json::to_string(reason).expect("strings serialise");
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{key},"reason":{reason}}}}}"#
        );
        if self.outbox.push(Bytes::from(cancel)).is_err() {
            tracing::debug!(upstream = %self.upstream, id = %key, "no room to send the cancellation of a request");
        }
    }

    /// A message that is not UTF-8: when it still reads as a response (its
    /// bad bytes replaced), the request it answers gets an error naming the
    /// upstream rather than waiting for its timeout; anything else is ignored.
    fn not_utf8(&self, message: &[u8], bad: std::str::Utf8Error) {
        let lossy = String::from_utf8_lossy(message);
        let detail = format!(
            "its answer is not valid UTF-8 (byte {} of {})",
            bad.valid_up_to(),
            message.len()
        );
        let id = jsonrpc::classify_one(lossy.as_bytes())
            .ok()
            .filter(|m| m.kind == Kind::Response)
            .and_then(|m| m.id.map(jsonrpc::id_key));
        tracing::warn!(upstream = %self.upstream, id = id.as_deref().unwrap_or("none"), "{detail}");
        if let Some(key) = id {
            let failure = Failure::Upstream(UpstreamError::Protocol {
                upstream: self.upstream.to_string(),
                detail,
            });
            self.fail(&key, failure);
        }
    }
}

/// A client's session in the gateway's table of owned sessions.
impl crate::session::Held for MessageSession {
    fn is_closed(&self) -> bool {
        MessageSession::is_closed(self)
    }

    fn idle(&self) -> std::time::Duration {
        MessageSession::idle(self)
    }

    fn is_quiet(&self) -> bool {
        MessageSession::is_quiet(self)
    }

    async fn announce(&self, message: Bytes) {
        MessageSession::announce(self, message).await;
    }

    fn end_by_gateway(&self, reason: String) {
        self.end(EndedBy::Gateway, reason);
    }
}

#[cfg(test)]
mod tests;
