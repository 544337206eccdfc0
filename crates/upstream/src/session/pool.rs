//! The upstream connections of one mount that client sessions do not own:
//! a shared pool (`sessions = "shared"`, and every mount's sessionless
//! requests), one connection per conversation (`"conversation"`), and the
//! client sessions they serve ([`crate::upstream::messages::Peers`]).
//!
//! A connection is named by a [`SlotKey`]: the protocol era it speaks (a
//! connection the gateway `initialize`d itself, or one of the 2026-07-28
//! envelope, which has no handshake), the credentials it was opened with
//! (an HTTP upstream's held sessions are never shared across different
//! `Authorization` or forwarded headers), and its lane (a pool place, a
//! conversation, one client session, or one request). A slot starts its
//! connection on first use and again whenever the connection is found gone
//! (a crashed child, an upstream that forgot its session): connections come
//! back by themselves, and clients never see them go.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::outcome::Failure;
use crate::protocol::Era;
use crate::session::Caps;
use crate::upstream::handshake::Handshake;
use crate::upstream::messages::{EndedBy, MessageSession, Mux, Peers};

/// Which connection of a mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SlotKey {
    pub era: Era,
    /// A digest of the credentials the connection carries (0: none).
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

impl Lane {
    /// How long the connection may stay unused: a pool place lasts as long
    /// as any session; the others end when their conversation goes quiet.
    fn idle_limit(self, session: Duration, conversation: Duration) -> Duration {
        match self {
            Lane::Pool(_) => session,
            _ => conversation,
        }
    }
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
    conn: tokio::sync::Mutex<Option<Conn>>,
    /// The connection in use, readable without waiting for a start.
    live: Mutex<Option<Arc<MessageSession>>>,
    born: std::sync::OnceLock<Instant>,
    last_ms: AtomicU64,
}

impl Slot {
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

/// A mount's connections that no client session owns.
pub struct Pool {
    pub mux: Arc<Mux>,
    size: usize,
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
        Pool {
            mux: Mux::new(Arc::new(Peers::default())),
            size: size.max(1),
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

    /// The last handshake of this mount's upstream with `creds`, if any
    /// connection made one.
    pub fn handshake(&self, creds: u64) -> Option<Arc<Handshake>> {
        self.init
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&creds)
            .cloned()
    }

    /// The pool place for a request of `era` with `creds` from a client
    /// that declared `caps`: the started connection with the fewest
    /// requests waiting, or a new place while every started one is busy and
    /// the pool has room.
    pub fn pick(&self, era: Era, creds: u64, caps: Caps) -> SlotKey {
        let key = |i| SlotKey {
            era,
            creds,
            caps,
            lane: Lane::Pool(i),
        };
        if self.size == 1 {
            return key(0);
        }
        let slots = self.lock();
        let mut best: Option<(usize, usize)> = None;
        for i in 0..self.size {
            let waiting = match slots.get(&key(i)).and_then(|s| s.live()) {
                Some(s) => s.waiting(),
                None if best.is_some_and(|(_, w)| w == 0) => continue,
                // An unstarted place: taken when every started one is busy.
                None => return key(i),
            };
            if best.is_none_or(|(_, w)| waiting < w) {
                best = Some((i, waiting));
            }
        }
        key(best.map_or(0, |(i, _)| i))
    }

    /// Whether the connection at `key` has a request waiting (a request
    /// the upstream asks its client about then could be for either).
    pub fn busy(&self, key: &SlotKey) -> bool {
        self.lock()
            .get(key)
            .and_then(|s| s.live())
            .is_some_and(|s| s.waiting() > 0)
    }

    /// The pool place for a request of a client that declared nothing (it
    /// has no session): any started connection of `era` with `creds`, the
    /// least busy, else a place of a connection that declares nothing.
    pub fn pick_any(&self, era: Era, creds: u64) -> SlotKey {
        let best = self
            .lock()
            .iter()
            .filter(|(k, _)| k.era == era && k.creds == creds && matches!(k.lane, Lane::Pool(_)))
            .filter_map(|(k, s)| Some((*k, s.live()?.waiting())))
            .min_by_key(|(_, waiting)| *waiting);
        match best {
            Some((key, 0)) => key,
            Some((key, _)) if self.size == 1 => key,
            _ => self.pick(era, creds, Caps::default()),
        }
    }

    /// The connection of `key`, started by `start` when there is none or it
    /// ended. `start` gets whether this is a restart.
    pub async fn connect<F, Fut>(&self, key: SlotKey, start: F) -> Result<Conn, Failure>
    where
        F: FnOnce(bool) -> Fut,
        Fut: Future<Output = Result<Conn, Failure>>,
    {
        let slot = self.lock().entry(key).or_default().clone();
        slot.touch();
        let mut conn = slot.conn.lock().await;
        if let Some(c) = conn.as_ref().filter(|c| !c.session.is_closed()) {
            return Ok(c.clone());
        }
        let again = conn.is_some();
        let c = start(again).await?;
        self.started.fetch_add(1, Ordering::Relaxed);
        if again {
            self.revived.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(h) = &c.handshake {
            let mut init = self.init.lock().unwrap_or_else(|e| e.into_inner());
            init.insert(key.creds, h.clone());
        }
        *slot.live.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.session.clone());
        *conn = Some(c.clone());
        Ok(c)
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
        let slot = self.lock().remove(key);
        if let Some(s) = slot.and_then(|s| s.live()) {
            s.end(EndedBy::Gateway, reason);
        }
    }

    /// End the connections of client session `client`'s own (its client
    /// ended it).
    pub fn end_client(&self, client: u64, reason: &str) {
        let own: Vec<Arc<Slot>> = {
            let mut slots = self.lock();
            let keys: Vec<SlotKey> = slots
                .keys()
                .filter(|k| k.lane == Lane::Client(client))
                .copied()
                .collect();
            keys.iter().filter_map(|k| slots.remove(k)).collect()
        };
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

    /// End the connections unused beyond their limit (pool places:
    /// `session`; conversations and the others: `conversation`), and forget
    /// the client sessions idle beyond `session` with no stream open.
    pub(crate) fn reap(&self, session: Duration, conversation: Duration) {
        let idle: Vec<(SlotKey, Arc<Slot>)> = {
            let mut slots = self.lock();
            let mut gone = Vec::new();
            slots.retain(|key, slot| {
                let limit = key.lane.idle_limit(session, conversation);
                let busy = slot.live().is_some_and(|s| s.waiting() > 0);
                let keep = busy || slot.idle() <= limit;
                if !keep {
                    gone.push((*key, slot.clone()));
                }
                keep
            });
            gone
        };
        for (key, slot) in idle {
            if let Some(s) = slot.live() {
                let limit = key.lane.idle_limit(session, conversation);
                s.end(
                    EndedBy::Gateway,
                    format!("connection unused for more than {} s", limit.as_secs()),
                );
            }
        }
        for peer in self.mux.peers.reap(session) {
            for s in self.live() {
                s.forget_peer(peer.key());
            }
        }
        self.mux.purge();
    }

    /// End every connection (shutdown).
    pub fn close_all(&self, reason: &str) {
        let slots: Vec<Arc<Slot>> = self.lock().drain().map(|(_, s)| s).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(name: &str) -> Conn {
        Conn {
            session: MessageSession::new(name.into(), None),
            handshake: None,
        }
    }

    #[tokio::test]
    async fn a_slot_starts_once_and_again_when_its_connection_ended() {
        let pool = Pool::new(1);
        let key = pool.pick(Era::Handshake, 0, Caps::default());
        let a = pool.connect(key, |again| async move {
            assert!(!again);
            Ok(conn("a"))
        });
        let a = a.await.unwrap();
        let same = pool
            .connect(key, |_| async { panic!("started twice") })
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&a.session, &same.session));
        a.session.close("exited");
        let b = pool
            .connect(key, |again| async move {
                assert!(again);
                Ok(conn("b"))
            })
            .await
            .unwrap();
        assert!(!Arc::ptr_eq(&a.session, &b.session));
        assert_eq!(pool.counts(), (1, 2, 1));
    }

    #[tokio::test]
    async fn a_pool_spreads_requests_over_its_places() {
        let pool = Pool::new(2);
        let none = Caps::default();
        let first = pool.pick(Era::Handshake, 0, none);
        let c = pool
            .connect(first, |_| async { Ok(conn("a")) })
            .await
            .unwrap();
        // Idle: the started place is taken.
        assert_eq!(pool.pick(Era::Handshake, 0, none), first);
        assert_eq!(pool.pick_any(Era::Handshake, 0), first);
        let _waiting = c
            .session
            .request(
                br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#,
                &RawValueOf::one(),
                None,
            )
            .await
            .unwrap();
        // Busy: the second place.
        assert_eq!(pool.pick(Era::Handshake, 0, none).lane, Lane::Pool(1));
        // Other credentials, other places; other capabilities too.
        assert_ne!(pool.pick(Era::Handshake, 9, none), first);
        assert_ne!(pool.pick(Era::Handshake, 0, Caps::ALL), first);
    }

    #[tokio::test(start_paused = true)]
    async fn idle_connections_end_by_their_lane() {
        let pool = Pool::new(1);
        let shared = pool.pick(Era::Handshake, 0, Caps::default());
        let talk = SlotKey {
            lane: Lane::Conversation(5),
            ..shared
        };
        let s = pool
            .connect(shared, |_| async { Ok(conn("s")) })
            .await
            .unwrap();
        let t = pool
            .connect(talk, |_| async { Ok(conn("t")) })
            .await
            .unwrap();
        tokio::time::advance(Duration::from_secs(120)).await;
        pool.reap(Duration::from_secs(3600), Duration::from_secs(60));
        assert!(t.session.is_closed(), "a quiet conversation ends");
        assert!(!s.session.is_closed(), "the pool stays");
    }

    #[test]
    fn digests_tell_parts_apart() {
        assert_eq!(digest([&b"a"[..], b"b"]), digest([&b"a"[..], b"b"]));
        assert_ne!(digest([&b"ab"[..], b""]), digest([&b"a"[..], b"b"]));
        assert_ne!(digest([&b"x"[..]]), 0);
    }

    struct RawValueOf;
    impl RawValueOf {
        fn one() -> Box<serde_json::value::RawValue> {
            serde_json::value::RawValue::from_string("1".into()).unwrap()
        }
    }
}
