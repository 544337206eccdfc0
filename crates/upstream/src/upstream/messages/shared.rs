//! What a message session keeps for each client of a connection several
//! clients share: their cancellations, routed to the request each names;
//! their answers to the server's requests, sent as they are; the resources
//! each subscribed to; and the lowest log level any asked for.

use bytes::Bytes;
use serde_json::value::RawValue;

use super::MessageSession;
use super::mux::Sink;
use super::state::Delivery;
use mcp_ui_model::outcome::Failure;
use mcp_ui_wire::jsonrpc;

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
