//! The routing state of a message session: the requests waiting for their
//! response, the client's GET stream, and what the server said while no
//! stream was open.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::peer::Peer;
use mcp_ui_model::outcome::Failure;
use mcp_ui_wire::jsonrpc::{self, Message};

/// Most server messages kept for a client that has no stream open yet.
pub(super) const BACKLOG: usize = 1024;

/// What reaches a waiting request.
#[derive(Debug)]
pub enum Delivery {
    /// A message related to the request (progress, a server request, logging).
    Related(Bytes),
    /// The response that completes the request.
    Final(Bytes),
    /// What completes the request instead of a response: the session ended,
    /// the upstream refused the message, or the client cancelled it.
    Failed(Failure),
}

pub(super) struct Pending {
    pub(super) tx: mpsc::Sender<Delivery>,
    pub(super) seq: u64,
    /// The client's id, as it sent it.
    pub(super) client_id: Box<str>,
    /// Whether the upstream saw another id (shared sessions).
    pub(super) rewritten: bool,
    /// The progress token as the upstream knows it.
    pub(super) progress: Option<String>,
    /// The client's own progress token, as it wrote it, when the upstream
    /// saw another (shared sessions).
    pub(super) client_token: Option<Box<str>>,
    /// Its number in the outbox.
    pub(super) out: u64,
    /// Whether the upstream may be told it was cancelled (not `initialize`).
    pub(super) cancellable: bool,
    /// The client session it came from, on a shared connection (`None`: a
    /// client with no session, or the only client).
    pub(super) peer: Option<Arc<Peer>>,
    /// The gateway's own request (it opened the connection).
    pub(super) own: bool,
    /// Set aside waiting for its client's input (a 2026-07-28 round): the
    /// upstream waits for the answers to what it asked, and its requester
    /// reads nothing until the client comes back.
    pub(super) parked: bool,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) pending: HashMap<String, Pending>,
    pub(super) by_progress: HashMap<String, String>,
    pub(super) get_stream: Option<mpsc::Sender<Bytes>>,
    pub(super) backlog: VecDeque<Bytes>,
    pub(super) next_id: u64,
    pub(super) seq: u64,
    /// Shared connections: the client sessions subscribed to each resource.
    pub(super) subscribers: HashMap<String, Vec<u64>>,
    /// Shared connections: the log level asked of the upstream, if any.
    pub(super) level: Option<u8>,
}

impl Pending {
    /// Where `d` for this request goes: as any request's, or as one set
    /// aside's ([`Target::Parked`]).
    pub(super) fn target(&self, d: Delivery) -> Target {
        match self.parked {
            true => Target::Parked(self.tx.clone(), d),
            false => Target::Request(self.tx.clone(), d),
        }
    }
}

impl State {
    /// A JSON string id no waiting request or progress token has.
    pub(super) fn fresh_key(&mut self, prefix: &str) -> String {
        loop {
            self.next_id += 1;
            let key = format!("\"{prefix}{}\"", self.next_id);
            if !self.pending.contains_key(&key) && !self.by_progress.contains_key(&key) {
                return key;
            }
        }
    }
}

pub(super) enum Target {
    Request(mpsc::Sender<Delivery>, Delivery),
    /// A request set aside for its client's input, whose requester reads
    /// nothing meanwhile: given what fits, never waited for (the upstream's
    /// other messages must not wait on a client that may not come back).
    Parked(mpsc::Sender<Delivery>, Delivery),
    Stream(mpsc::Sender<Bytes>, Bytes),
    /// A client session's GET stream (shared connections).
    Peer(Arc<Peer>, Bytes),
    /// Several client sessions' GET streams (shared connections).
    Peers(Vec<Arc<Peer>>, Bytes),
    /// An answer the gateway gives the upstream itself.
    Upstream(Bytes),
    Queued,
}

/// Progress for a waiting request goes to it, with the client's own token
/// when the upstream saw another.
pub(super) fn progress_of(st: &State, m: &Message<'_>, message: &Bytes) -> Option<Target> {
    if m.method.as_deref() != Some("notifications/progress") {
        return None;
    }
    let token = jsonrpc::params_view(m.params).progress_token?;
    let key = st.by_progress.get(&jsonrpc::id_key(token))?;
    let p = st.pending.get(key)?;
    if p.parked {
        // Progress has no place in a round: dropped.
        return Some(Target::Queued);
    }
    let bytes = match &p.client_token {
        Some(theirs) => jsonrpc::splice(message, token, theirs)
            .map(Bytes::from)
            .unwrap_or_else(|| message.clone()),
        None => message.clone(),
    };
    Some(Target::Request(p.tx.clone(), Delivery::Related(bytes)))
}

/// A server message unrelated to any request goes to the most recent open
/// request stream (clients accept server messages on any stream, and a
/// sampling request during a tool call belongs there), else the GET stream,
/// else the backlog.
pub(super) fn route_unrelated(st: &mut State, message: Bytes) -> Target {
    let newest = st
        .pending
        .values()
        .filter(|p| !p.tx.is_closed())
        .max_by_key(|p| p.seq)
        .map(|p| p.tx.clone());
    if let Some(tx) = newest {
        return Target::Request(tx, Delivery::Related(message));
    }
    if let Some(tx) = st.get_stream.as_ref().filter(|tx| !tx.is_closed()) {
        return Target::Stream(tx.clone(), message);
    }
    if st.backlog.len() == BACKLOG {
        st.backlog.pop_front();
        tracing::warn!("server message backlog full; dropped the oldest message");
    }
    st.backlog.push_back(message);
    Target::Queued
}
