//! The upstream connections of one mount that client sessions do not own:
//! a shared pool (`sessions = "shared"`, and every mount's sessionless
//! requests), one connection per conversation (`"conversation"`), and the
//! client sessions they serve ([`crate::upstream::messages::Peers`]).
//!
//! A connection is named by a [`SlotKey`]: the protocol era it speaks (a
//! connection the gateway `initialize`d itself, or one of the 2026-07-28
//! envelope, which has no handshake), the credentials it was opened with
//! (an HTTP upstream's held sessions are never shared across different
//! `Authorization` or forwarded headers, nor a connection opened with a
//! caller's claims across different claim values), and its lane (a pool place, a
//! conversation, one client session, or one request). A slot starts its
//! connection on first use and again whenever the connection is found gone
//! (a crashed child, an upstream that forgot its session): connections come
//! back by themselves, and clients never see them go.
//!
//! - `handshakes`: the upstream's last handshake per credentials, kept for
//!   local `initialize`s;
//! - `pick`: which pool place a request takes;
//! - `room`: the limits on connections, what is ended to make room, and
//!   what is ended for being unused;
//! - `tests`: the places, the lanes and the limits, over stand-in connections.

mod handshakes;
mod pick;
mod room;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::upstream::handshake::Handshake;
use crate::upstream::messages::{EndedBy, MessageSession, Mux, Peers};
use mcp_ui_model::outcome::Failure;
use mcp_ui_wire::protocol::Caps;
use mcp_ui_wire::protocol::Era;

/// Which connection of a mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotKey {
    pub era: Era,
    /// A digest of the credentials and claims the connection carries (0:
    /// none).
    pub creds: u64,
    /// The client capabilities the gateway declared opening it: what a
    /// server offers can depend on them (a tool that asks the client for its
    /// roots is listed only to a client that has roots), so clients share a
    /// connection only with clients that declared the same.
    pub caps: Caps,
    pub lane: Lane,
}

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lane {
    /// A place of the shared pool.
    Pool(usize),
    /// One conversation, by a digest of its key.
    Conversation(u64),
    /// One client session (`sessions = "conversation"`, no key named).
    Client(u64),
    /// One request with neither a session nor a key: ended after it.
    Single(u64),
}

/// A started connection.
#[derive(Clone)]
pub struct Conn {
    pub session: Arc<MessageSession>,
    /// The gateway's `initialize` of it (`None` for the envelope era).
    pub handshake: Option<Arc<Handshake>>,
}

/// One connection's place: started on first use, started again when found
/// ended.
#[derive(Default)]
pub struct Slot {
    /// The caller whose own connection this is (a digest of its
    /// credentials); 0 for a place of the mount's shared pool.
    owner: u64,
    conn: Arc<tokio::sync::Mutex<Option<Conn>>>,
    /// The connection in use, readable without waiting for a start.
    live: Mutex<Option<Arc<MessageSession>>>,
    born: std::sync::OnceLock<Instant>,
    last_ms: AtomicU64,
}

impl Slot {
    fn owned_by(owner: u64) -> Slot {
        Slot {
            owner,
            ..Slot::default()
        }
    }

    /// Whether the place holds nothing: no connection open, none starting.
    fn is_vacant(&self) -> bool {
        self.live().is_none() && self.conn.try_lock().is_ok()
    }

    /// Whether the connection may be ended to make room: open, with no
    /// request waiting, not starting.
    fn is_idle(&self) -> bool {
        self.live().is_some_and(|s| s.waiting() == 0) && self.conn.try_lock().is_ok()
    }

    /// Whether the connection may be ended to make room once no idle one
    /// is left: open, not starting, and every request on it set aside for
    /// its client's input (2026-07-28 rounds, which end with it: their
    /// clients are told so when they come back).
    fn is_set_aside(&self) -> bool {
        self.live().is_some_and(|s| s.only_parked()) && self.conn.try_lock().is_ok()
    }

    fn touch(&self) {
        let born = *self.born.get_or_init(Instant::now);
        self.last_ms
            .store(born.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn idle(&self) -> Duration {
        let Some(born) = self.born.get() else {
            return Duration::ZERO;
        };
        born.elapsed()
            .saturating_sub(Duration::from_millis(self.last_ms.load(Ordering::Relaxed)))
    }

    /// The connection, if one is open.
    pub fn live(&self) -> Option<Arc<MessageSession>> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|s| !s.is_closed())
    }
}

/// Whether the upstream speaks the 2026-07-28 envelope: not known yet, yes, no.
const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

/// How many connections a mount's pool may hold: all told (`per_mount`),
/// those of one caller (`per_caller`), and those of every mount together
/// (`total`, shared by the pools of one gateway, against `cap`).
#[derive(Clone, Debug)]
pub struct Room {
    pub per_mount: usize,
    pub per_caller: usize,
    pub total: Arc<std::sync::atomic::AtomicUsize>,
    pub cap: usize,
}

impl Room {
    /// No limit (tests, and pools that hold a few places).
    pub fn unlimited() -> Room {
        Room {
            per_mount: usize::MAX,
            per_caller: usize::MAX,
            total: Arc::default(),
            cap: usize::MAX,
        }
    }
}

/// A mount's connections that no client session owns.
pub struct Pool {
    pub mux: Arc<Mux>,
    size: usize,
    room: Room,
    /// The upstream's name, for what is logged and refused.
    upstream: String,
    slots: Mutex<HashMap<SlotKey, Arc<Slot>>>,
    /// The last handshake the upstream answered with each credentials, for
    /// local `initialize`s.
    init: Mutex<HashMap<u64, Arc<Handshake>>>,
    envelope: AtomicU8,
    /// An HTTP upstream that refused a request without a session.
    stateful: std::sync::atomic::AtomicBool,
    /// Connections started, and connections started again after theirs ended.
    started: AtomicU64,
    revived: AtomicU64,
    /// The client sessions their client ended.
    pub ended: super::ended::Ended<u64>,
}

impl Pool {
    /// A pool of `size` places per era and credentials.
    pub fn new(size: usize) -> Self {
        Pool::with_room("upstream", size, Room::unlimited(), usize::MAX)
    }

    /// A pool of `size` places per era and credentials for `upstream`,
    /// holding what `room` allows, keeping state for at most `clients`
    /// client sessions.
    pub fn with_room(upstream: &str, size: usize, room: Room, clients: usize) -> Self {
        Pool {
            mux: Mux::new(Arc::new(Peers::with_max(clients))),
            size: size.max(1),
            room,
            upstream: upstream.to_owned(),
            slots: Mutex::default(),
            init: Mutex::default(),
            envelope: AtomicU8::new(UNKNOWN),
            stateful: Default::default(),
            started: AtomicU64::new(0),
            revived: AtomicU64::new(0),
            ended: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SlotKey, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Change the places, keeping the count of every pool's places true.
    fn change<R>(&self, f: impl FnOnce(&mut HashMap<SlotKey, Arc<Slot>>) -> R) -> R {
        let mut slots = self.lock();
        let before = slots.len();
        let r = f(&mut slots);
        let after = slots.len();
        if after > before {
            self.room.total.fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.room.total.fetch_sub(before - after, Ordering::Relaxed);
        }
        r
    }

    pub fn peers(&self) -> &Arc<Peers> {
        &self.mux.peers
    }

    /// Whether the upstream speaks the 2026-07-28 envelope (`None`: not known yet).
    pub fn speaks_envelope(&self) -> Option<bool> {
        match self.envelope.load(Ordering::Relaxed) {
            YES => Some(true),
            NO => Some(false),
            _ => None,
        }
    }

    pub fn set_speaks_envelope(&self, yes: bool) {
        self.envelope
            .store(if yes { YES } else { NO }, Ordering::Relaxed);
    }

    /// Whether the (HTTP) upstream refuses requests without a session.
    pub fn stateful(&self) -> bool {
        self.stateful.load(Ordering::Relaxed)
    }

    pub fn set_stateful(&self) {
        self.stateful.store(true, Ordering::Relaxed);
    }

    /// The connection of `key`, `owner`'s own (0: a shared place), started
    /// by `start` when there is none or it ended; a new place is made room
    /// for ([`Self::make_room`]). `start` gets whether this is a restart.
    pub async fn connect<F, Fut>(&self, key: SlotKey, owner: u64, start: F) -> Result<Conn, Failure>
    where
        F: FnOnce(bool) -> Fut,
        Fut: Future<Output = Result<Conn, Failure>>,
    {
        let mut attempts = 0;
        let (slot, mut conn) = loop {
            let slot = self.place(key, owner)?;
            slot.touch();
            let conn = slot.conn.clone().lock_owned().await;
            if let Some(c) = conn.as_ref().filter(|c| !c.session.is_closed()) {
                return Ok(c.clone());
            }
            // A place ended for room (or forgotten as vacant) while this
            // waited for it: a connection started there would be counted
            // and reaped by nobody, so the place is made again.
            let kept = self.lock().get(&key).is_some_and(|s| Arc::ptr_eq(s, &slot));
            attempts += 1;
            if kept || attempts >= 3 {
                break (slot, conn);
            }
        };
        let again = conn.is_some();
        let c = match start(again).await {
            Ok(c) => c,
            Err(e) => {
                // A place that never held a connection is not kept for it.
                if !again {
                    drop(conn);
                    self.change(|slots| {
                        if slots.get(&key).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                            slots.remove(&key);
                        }
                    });
                }
                return Err(e);
            }
        };
        self.started.fetch_add(1, Ordering::Relaxed);
        if again {
            self.revived.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(h) = &c.handshake {
            self.keep_handshake(key.creds, h.clone());
        }
        *slot.live.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.session.clone());
        *conn = Some(c.clone());
        Ok(c)
    }

    /// The place of `key`, made (with room made for it) when there is none.
    fn place(&self, key: SlotKey, owner: u64) -> Result<Arc<Slot>, Failure> {
        let mut evicted = Vec::new();
        let slot = self.change(|slots| match slots.get(&key) {
            Some(s) => Ok(s.clone()),
            None => {
                self.make_room(slots, owner, &mut evicted)?;
                let s = Arc::new(Slot::owned_by(owner));
                s.touch();
                slots.insert(key, s.clone());
                Ok(s)
            }
        });
        for s in &evicted {
            self.end_for_room(
                s,
                "another connection (limits.max_mount_connections, max_caller_connections)",
            );
        }
        slot
    }

    /// The places kept: connections open or starting, and ended ones whose
    /// place is not yet forgotten.
    pub fn places(&self) -> usize {
        self.lock().len()
    }

    /// Whether a connection of `era` with `creds` is open (the upstream is
    /// there: a client's `initialize` can be answered without asking it).
    pub fn has_live(&self, era: Era, creds: u64) -> bool {
        self.lock()
            .iter()
            .any(|(k, s)| k.era == era && k.creds == creds && s.live().is_some())
    }

    /// The open connections of this mount, for a message that may concern
    /// any of them (a client's cancellation).
    pub fn live(&self) -> Vec<Arc<MessageSession>> {
        self.lock().values().filter_map(|s| s.live()).collect()
    }

    /// End and forget the connection of `key` (a request's own connection,
    /// once answered).
    pub fn end(&self, key: &SlotKey, reason: &str) {
        let slot = self.change(|slots| slots.remove(key));
        if let Some(s) = slot.and_then(|s| s.live()) {
            s.end(EndedBy::Gateway, reason);
        }
    }

    /// End the connections of client session `client`'s own (its client
    /// ended it).
    pub fn end_client(&self, client: u64, reason: &str) {
        let own: Vec<Arc<Slot>> = self.change(|slots| {
            let keys: Vec<SlotKey> = slots
                .keys()
                .filter(|k| k.lane == Lane::Client(client))
                .copied()
                .collect();
            keys.iter().filter_map(|k| slots.remove(k)).collect()
        });
        for s in own.iter().filter_map(|s| s.live()) {
            s.end(EndedBy::Gateway, reason);
        }
    }

    /// Count a client's session opened again on a connection of its own.
    pub fn count_revived(&self) {
        self.revived.fetch_add(1, Ordering::Relaxed);
    }

    /// Open connections, and connections started since the start of the
    /// process and started again after theirs ended.
    pub fn counts(&self) -> (usize, u64, u64) {
        (
            self.live().len(),
            self.started.load(Ordering::Relaxed),
            self.revived.load(Ordering::Relaxed),
        )
    }

    /// End every connection (shutdown).
    pub fn close_all(&self, reason: &str) {
        let slots: Vec<Arc<Slot>> = self.change(|slots| slots.drain().map(|(_, s)| s).collect());
        for s in slots.iter().filter_map(|s| s.live()) {
            s.end(EndedBy::Gateway, reason);
        }
    }
}

/// A digest of `parts` (credentials, a conversation key) that does not
/// reveal them and that no client can aim at another's: keyed per process.
pub fn digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    use sha2::{Digest, Sha256};
    static SALT: std::sync::OnceLock<[u8; 16]> = std::sync::OnceLock::new();
    let salt = SALT.get_or_init(|| {
        let mut s = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut s);
        s
    });
    let mut h = Sha256::new();
    h.update(salt);
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    let d = h.finalize();
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes")) | 1
}
