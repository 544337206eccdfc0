//! The routing state of a message session: the requests waiting for their
//! response, the client's GET stream, and what the server said while no
//! stream was open.

use std::collections::{HashMap, VecDeque};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::outcome::Failure;

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
    pub(super) progress: Option<String>,
    /// Its number in the outbox.
    pub(super) out: u64,
    /// Whether the upstream may be told it was cancelled (not `initialize`).
    pub(super) cancellable: bool,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) pending: HashMap<String, Pending>,
    pub(super) by_progress: HashMap<String, String>,
    pub(super) get_stream: Option<mpsc::Sender<Bytes>>,
    pub(super) backlog: VecDeque<Bytes>,
    pub(super) next_id: u64,
    pub(super) seq: u64,
}

pub(super) enum Target {
    Request(mpsc::Sender<Delivery>, Delivery),
    Stream(mpsc::Sender<Bytes>, Bytes),
    Queued,
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
