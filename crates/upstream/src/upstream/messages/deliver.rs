//! What an upstream says, routed by its message session: a response to the
//! request waiting for it (under the client's own id again), progress to
//! the request that asked for it, and anything else to the client it
//! concerns (through the [`Mux`](super::Mux) on a shared connection), else
//! to the newest open request stream, the GET stream, or a backlog kept
//! until a stream opens.

use std::sync::Weak;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::mux::{self, Sink};
use super::state::{BACKLOG, Delivery, Target, progress_of, route_unrelated};
use super::{MessageSession, STREAM_BUFFER};
use mcp_ui_model::outcome::{Failure, UpstreamError};
use mcp_ui_wire::jsonrpc::{self, Kind};

impl MessageSession {
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
    pub(crate) async fn deliver_for(&self, message: Bytes, related: Option<&str>) {
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
                    // The client gets its id as it wrote it (a server may
                    // write `-0` as `0`).
                    let bytes = match parsed.id {
                        Some(id) if p.rewritten || id.get() != &*p.client_id => {
                            jsonrpc::splice(&message, id, &p.client_id)
                                .map(Bytes::from)
                                .unwrap_or_else(|| message.clone())
                        }
                        _ => message.clone(),
                    };
                    p.target(Delivery::Final(bytes))
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
            Target::Parked(tx, d) => {
                if tx.try_send(d).is_err() {
                    tracing::debug!(upstream = %self.upstream, "a message for a request waiting for its client's input found no room; dropped");
                }
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
