//! What a client sends the upstream through a message session: a request,
//! registered under the key the upstream will answer to (a shared
//! connection's own when another client's waiting request has the same
//! id) and waited for until its answer or its failure; a notification or
//! answer, which nothing comes back for. A requester that stops waiting
//! takes its request back, or has the upstream told it was cancelled.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::peer::Peer;
use super::state::{Delivery, Pending, State};
use super::{MessageSession, PendingGuard, STREAM_BUFFER};
use mcp_ui_model::outcome::Failure;
use mcp_ui_wire::jsonrpc::{self, Kind};

impl MessageSession {
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
    pub(crate) fn request_own(
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
            let Wire {
                key,
                wire,
                progress,
                client_token,
                rewritten,
            } = if shared {
                Wire::shared(&mut st, message, id, progress_token, own)
            } else {
                Wire {
                    key: jsonrpc::id_key(id),
                    wire: Bytes::copy_from_slice(message),
                    progress: progress_token.map(jsonrpc::id_key),
                    client_token: None,
                    rewritten: false,
                }
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
                    parked: false,
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

    /// Mark the request `key` (registered as `seq`) as set aside for its
    /// client's input, or taken up again.
    pub(super) fn set_parked(&self, key: &str, seq: u64, parked: bool) {
        if let Some(p) = self.lock().pending.get_mut(key).filter(|p| p.seq == seq) {
            p.parked = parked;
        }
    }

    /// Whether every request waiting here is set aside for its client's
    /// input (and one is): nothing runs, and nothing the upstream says
    /// will be read until those clients come back.
    pub fn only_parked(&self) -> bool {
        let st = self.lock();
        !st.pending.is_empty() && st.pending.values().all(|p| p.parked)
    }

    /// The requester of `key` stopped waiting for `reason`: take the request
    /// back if it was not written yet, else tell the upstream it is cancelled
    /// (when that fits in the outbox: this never waits).
    pub(super) fn forget(&self, key: &str, seq: u64, reason: &str) {
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
}

/// A request as the upstream sees it.
struct Wire {
    /// The key the upstream answers to: the request's id, or the
    /// connection's own in its place.
    key: String,
    wire: Bytes,
    /// The key of its progress token as the upstream sees it.
    progress: Option<String>,
    /// The client's own progress token, when the upstream sees another.
    client_token: Option<Box<str>>,
    /// Whether its id was replaced.
    rewritten: bool,
}

impl Wire {
    /// On a connection several clients use, the upstream sees only ids and
    /// progress tokens of the connection's own: clients' could be told
    /// apart by the gateway and not by the upstream (`0` and `-0`, integers
    /// a JavaScript server rounds alike), which would hand one client's
    /// answer to another. The gateway's own requests keep theirs.
    fn shared(
        st: &mut State,
        message: &[u8],
        id: &RawValue,
        progress_token: Option<&RawValue>,
        own: bool,
    ) -> Wire {
        let mut parts = Vec::new();
        let mut key = jsonrpc::id_key(id);
        if !own || st.pending.contains_key(&key) {
            key = st.fresh_key("mcp-ui-gateway/");
            parts.push((id, key.clone()));
        }
        let mut progress = progress_token.map(jsonrpc::id_key);
        let mut client_token = None;
        if let (Some(t), Some(p)) = (progress_token, &progress)
            && (!own || st.by_progress.contains_key(p))
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
        Wire {
            key,
            wire,
            progress,
            client_token,
            rewritten,
        }
    }
}
