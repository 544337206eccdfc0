//! A connection shared by several clients: what the upstream says on its
//! own is routed to the client it concerns, never to another.
//!
//! - A server's request (sampling, elicitation, roots) goes to the client
//!   whose request caused it: the one the upstream names by the stream it
//!   answers on (streamable HTTP), else the only client with requests
//!   waiting on this connection. It travels under an id of the gateway's
//!   ([`Mux`] keeps where it came from), so the client's answer finds its
//!   way back to this connection under the upstream's own id. A request no
//!   client can be told for, or whose client did not declare the capability
//!   it needs, is answered with an error at once: it never hangs. `ping`
//!   the gateway answers itself.
//! - A list change reaches every client session; a resource update its
//!   subscribers; a log message the client whose request it accompanies, or
//!   every client whose level lets it through.
//! - A client's cancellation names its own id; it reaches the upstream
//!   under the id the upstream saw.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use rand::RngCore;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::peer::{Peers, level_rank};
use super::state::{Delivery, State, Target};
use mcp_ui_model::outcome::Failure;
use mcp_ui_wire::jsonrpc::{self, Kind, Message, code};

/// The connection a server request came from, as the [`Mux`] reaches it
/// again with the client's answer.
pub(crate) trait Sink: Send + Sync {
    /// Send a message as it is.
    fn send_raw(&self, message: Bytes) -> Result<(), Failure>;
    fn is_closed(&self) -> bool;
}

/// Most server requests waiting for a client's answer across a mount.
const MAX_ASKED: usize = 4096;
/// Most of them waiting for one client: past it that client's oldest is
/// dropped (its upstream told so), never another client's.
const MAX_ASKED_PER_CLIENT: usize = 256;
/// A server request unanswered for this long is forgotten when room is needed.
const ASKED_TTL: Duration = Duration::from_secs(600);

/// What the connections of one mount that clients share have in common:
/// the mount's client sessions, and the server requests handed to them.
#[derive(Default)]
pub struct Mux {
    pub peers: Arc<Peers>,
    asked: Mutex<HashMap<String, Asked>>,
}

/// A server request handed to a client, by the id the client got.
struct Asked {
    session: Weak<dyn Sink>,
    /// The id the upstream gave it, as written.
    upstream_id: Box<str>,
    peer: Option<u64>,
    at: Instant,
    /// The client request it was asked for: once that is gone (answered,
    /// cancelled, its client away) nobody will answer this one.
    waiter: Option<mpsc::Sender<Delivery>>,
}

impl Asked {
    /// Whether a client may still answer it.
    fn alive(&self) -> bool {
        self.session.strong_count() > 0
            && self.at.elapsed() < ASKED_TTL
            && self.waiter.as_ref().is_none_or(|w| !w.is_closed())
    }
}

impl Mux {
    pub fn new(peers: Arc<Peers>) -> Arc<Mux> {
        Arc::new(Mux {
            peers,
            asked: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Asked>> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new id for a server request of `session`, asked of client `peer`
    /// for its request `waiter`, remembered. Room is made from what nobody
    /// will answer (its connection, its client's request or its time gone),
    /// then from this client's own oldest: one client never pushes out
    /// another's. A request dropped for room is answered with an error
    /// upstream, so the server does not wait for it.
    fn remember(
        &self,
        session: Weak<dyn Sink>,
        upstream_id: &RawValue,
        peer: Option<u64>,
        waiter: Option<mpsc::Sender<Delivery>>,
    ) -> String {
        let ours = format!("\"mcp-ui-gateway/{:016x}\"", rand::rng().next_u64());
        let mut dropped = Vec::new();
        {
            let mut asked = self.lock();
            let mine =
                |asked: &HashMap<String, Asked>| asked.values().filter(|a| a.peer == peer).count();
            if asked.len() >= MAX_ASKED || mine(&asked) >= MAX_ASKED_PER_CLIENT {
                let gone: Vec<String> = asked
                    .iter()
                    .filter(|(_, a)| !a.alive())
                    .map(|(k, _)| k.clone())
                    .collect();
                dropped.extend(gone.iter().filter_map(|k| asked.remove(k)));
            }
            while mine(&asked) >= MAX_ASKED_PER_CLIENT || asked.len() >= MAX_ASKED {
                // This client's oldest; with none of its own, the oldest.
                let oldest = asked
                    .iter()
                    .filter(|(_, a)| a.peer == peer)
                    .min_by_key(|(_, a)| a.at)
                    .or_else(|| asked.iter().min_by_key(|(_, a)| a.at))
                    .map(|(k, _)| k.clone());
                let Some(k) = oldest else { break };
                dropped.extend(asked.remove(&k));
            }
            asked.insert(
                ours.clone(),
                Asked {
                    session,
                    upstream_id: upstream_id.get().into(),
                    peer,
                    at: Instant::now(),
                    waiter,
                },
            );
        }
        if !dropped.is_empty() {
            tracing::debug!(
                dropped = dropped.len(),
                "server requests no client will answer, or past a client's share, dropped"
            );
        }
        for a in dropped {
            if let Some(s) = a.session.upgrade().filter(|s| !s.is_closed()) {
                let error = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":"the gateway dropped this request: its client will not answer it (gone, or {MAX_ASKED_PER_CLIENT} requests already wait for it)"}}}}"#,
                    a.upstream_id,
                    code::SERVER_ERROR
                );
                let _ = s.send_raw(Bytes::from(error));
            }
        }
        ours
    }

    /// A client's answer (`message`, whose id is `id`) to a server request
    /// it was handed: to the connection that asked, under the upstream's
    /// id. `false` when no request of this mount waits under that id.
    pub fn answer(&self, message: &[u8], id: &RawValue) -> Result<bool, Failure> {
        let Some(asked) = self.lock().remove(&jsonrpc::id_key(id)) else {
            return Ok(false);
        };
        let Some(session) = asked.session.upgrade().filter(|s| !s.is_closed()) else {
            return Ok(false);
        };
        let wire = jsonrpc::splice(message, id, &asked.upstream_id)
            .map(Bytes::from)
            .unwrap_or_else(|| Bytes::copy_from_slice(message));
        session.send_raw(wire)?;
        Ok(true)
    }

    /// The id a client was handed a server request of `session` under.
    fn ours_for(
        &self,
        session: &Weak<dyn Sink>,
        upstream_id: &str,
    ) -> Option<(String, Option<u64>)> {
        self.lock()
            .iter()
            .find(|(_, a)| Weak::ptr_eq(&a.session, session) && *a.upstream_id == *upstream_id)
            .map(|(k, a)| (k.clone(), a.peer))
    }

    /// Forget what was asked on connections that are gone.
    pub(crate) fn purge(&self) {
        self.lock().retain(|_, a| a.session.strong_count() > 0);
    }
}

/// The client a message that is no response concerns, and the stream of
/// its newest waiting request: the request the upstream names (`related`),
/// else the only client with requests waiting here (a client with no
/// session counts as one client per request).
fn candidate<'a>(st: &'a State, related: Option<&str>) -> Option<&'a super::state::Pending> {
    if let Some(p) = related
        .and_then(|k| st.pending.get(k))
        .filter(|p| !p.own && !p.tx.is_closed())
    {
        return Some(p);
    }
    let mut found: Option<(u64, bool, &super::state::Pending)> = None;
    for p in st.pending.values().filter(|p| !p.own && !p.tx.is_closed()) {
        let (group, named) = match &p.peer {
            Some(peer) => (peer.key(), true),
            None => (p.seq, false),
        };
        match found {
            None => found = Some((group, named, p)),
            Some((g, n, best)) if g == group && n == named => {
                if p.seq > best.seq {
                    found = Some((g, n, p));
                }
            }
            Some(_) => return None,
        }
    }
    found.map(|(_, _, p)| p)
}

#[derive(Deserialize)]
struct LogParams<'a> {
    #[serde(borrow)]
    level: std::borrow::Cow<'a, str>,
}

/// An error response to the upstream's request `id`.
fn refusal(id: &RawValue, message: &str) -> Target {
    Target::Upstream(jsonrpc::error_response(
        Some(id),
        code::METHOD_NOT_FOUND,
        message,
    ))
}

/// Where a message of the upstream that is neither a response nor progress
/// goes, on a shared connection (`me`, the upstream `upstream`).
pub(super) fn route(
    st: &mut State,
    mux: &Mux,
    me: &Weak<dyn Sink>,
    upstream: &str,
    m: &Message<'_>,
    message: &Bytes,
    related: Option<&str>,
) -> Target {
    let method = m.method.as_deref().unwrap_or_default();
    if m.kind == Kind::Request {
        return server_request(st, mux, me, m, message, related);
    }
    match method {
        "notifications/cancelled" => server_cancelled(st, mux, me, m, message),
        "notifications/message" => server_log(st, mux, m, message, related),
        m if m.starts_with("notifications/") && m.ends_with("/list_changed") => {
            Target::Peers(mux.peers.all(), message.clone())
        }
        "notifications/resources/updated" => {
            let uri = jsonrpc::params_view(m.params).uri;
            let keys = uri
                .and_then(|u| st.subscribers.get(u.as_ref()))
                .cloned()
                .unwrap_or_default();
            let to = keys.iter().filter_map(|k| mux.peers.get(*k)).collect();
            Target::Peers(to, message.clone())
        }
        _ => match candidate(st, related) {
            Some(p) => p.target(Delivery::Related(message.clone())),
            None => {
                tracing::debug!(
                    upstream,
                    method,
                    "a shared connection's notification concerns no client it can tell; dropped"
                );
                Target::Queued
            }
        },
    }
}

/// A server's request: `ping` answered here, else handed to the client it
/// concerns under an id of the gateway's, or refused when no client can be
/// told or the client did not declare what it needs.
fn server_request(
    st: &State,
    mux: &Mux,
    me: &Weak<dyn Sink>,
    m: &Message<'_>,
    message: &Bytes,
    related: Option<&str>,
) -> Target {
    let method = m.method.as_deref().unwrap_or_default();
    let id = m.id.expect("requests have ids");
    if method == "ping" {
        let pong = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, id.get());
        return Target::Upstream(Bytes::from(pong));
    }
    let Some(p) = candidate(st, related) else {
        return refusal(
            id,
            &format!(
                "{method}: no client of the gateway can be told for this request: the connection is shared between clients (sessions = \"shared\" or \"conversation\") and none, or several, have requests waiting on it; a server that asks its clients wants sessions = \"client\""
            ),
        );
    };
    let caps = p.peer.as_ref().map(|p| p.caps()).unwrap_or_default();
    if !caps.answers(method) {
        return refusal(
            id,
            &format!("{method}: the client did not declare the capability this request needs"),
        );
    }
    let ours = mux.remember(
        me.clone(),
        id,
        p.peer.as_ref().map(|p| p.key()),
        Some(p.tx.clone()),
    );
    let bytes = jsonrpc::splice(message, id, &ours)
        .map(Bytes::from)
        .unwrap_or_else(|| message.clone());
    p.target(Delivery::Related(bytes))
}

/// A log message: to the client whose request it accompanies, if its level
/// lets it through; with no such request, to every client with a stream
/// whose level does.
fn server_log(
    st: &State,
    mux: &Mux,
    m: &Message<'_>,
    message: &Bytes,
    related: Option<&str>,
) -> Target {
    let rank = m
        .params
        .and_then(|p| serde_json::from_str::<LogParams<'_>>(p.get()).ok())
        .and_then(|p| level_rank(&p.level))
        .unwrap_or(u8::MAX);
    match candidate(st, related) {
        Some(p) if p.peer.as_ref().is_none_or(|p| p.wants_log(rank)) => {
            p.target(Delivery::Related(message.clone()))
        }
        Some(_) => Target::Queued,
        None => {
            let to = mux
                .peers
                .all()
                .into_iter()
                .filter(|p| p.has_stream() && p.wants_log(rank))
                .collect();
            Target::Peers(to, message.clone())
        }
    }
}

/// The upstream cancels a request it handed a client: the client is told
/// under the id it got.
fn server_cancelled(
    st: &State,
    mux: &Mux,
    me: &Weak<dyn Sink>,
    m: &Message<'_>,
    message: &Bytes,
) -> Target {
    let Some(id) = jsonrpc::params_view(m.params).request_id else {
        return Target::Queued;
    };
    let Some((ours, peer)) = mux.ours_for(me, id.get()) else {
        return Target::Queued;
    };
    let bytes = jsonrpc::splice(message, id, &ours)
        .map(Bytes::from)
        .unwrap_or_else(|| message.clone());
    let waiting = st
        .pending
        .values()
        .filter(|p| !p.tx.is_closed() && p.peer.as_ref().map(|p| p.key()) == peer)
        .max_by_key(|p| p.seq);
    match (waiting, peer.and_then(|k| mux.peers.get(k))) {
        (Some(p), _) => p.target(Delivery::Related(bytes)),
        (None, Some(peer)) => Target::Peer(peer, bytes),
        (None, None) => Target::Queued,
    }
}

#[cfg(test)]
mod tests;
