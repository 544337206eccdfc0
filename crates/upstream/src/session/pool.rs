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

/// Most handshakes a pool keeps for local `initialize`s: one per
/// credentials (a held HTTP session's caller and claims).
const MAX_HANDSHAKES: usize = 4096;

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

    /// Make room for one more place of `owner`'s, in `slots`: forget the
    /// vacant places, then, where a limit is reached, end the least
    /// recently used idle connection that counts against it (the caller's
    /// own first, so that one caller's many never push out another's),
    /// else the least recently used whose requests all wait for their
    /// clients' input; refused when every one that counts is busy. The ended connections
    /// are given back to be closed outside the lock.
    fn make_room(
        &self,
        slots: &mut HashMap<SlotKey, Arc<Slot>>,
        owner: u64,
        evicted: &mut Vec<Arc<Slot>>,
    ) -> Result<(), Failure> {
        let before = slots.len();
        slots.retain(|_, s| !s.is_vacant());
        // The mount's shared places are nobody's: never ended for room.
        let mine = |s: &Slot| owner != 0 && s.owner == owner;
        let limits = [
            ("the caller", self.room.per_caller, "max_caller_connections"),
            ("the mount", self.room.per_mount, "max_mount_connections"),
            ("the gateway", self.room.cap, "max_connections"),
        ];
        for (who, max, limit) in limits {
            let own = who == "the caller";
            // Counted as they are now, what this call already ended included
            // (every pool's total learns of it when the change is done).
            let held = match who {
                "the caller" if owner == 0 => continue,
                "the caller" => slots.values().filter(|s| mine(s)).count(),
                "the mount" => slots.len(),
                _ => (self.room.total.load(Ordering::Relaxed) + slots.len()).saturating_sub(before),
            };
            if held < max {
                continue;
            }
            let Some((key, _)) = idlest_of(slots, |s| !own || mine(s)) else {
                return Err(Failure::Crowded {
                    upstream: self.upstream.clone(),
                    who,
                    max,
                    limit,
                });
            };
            evicted.extend(slots.remove(&key));
        }
        Ok(())
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

    /// Keep `h` as the handshake of `creds`, for local `initialize`s. At
    /// most [`MAX_HANDSHAKES`] are kept: past it, those of credentials with
    /// no connection open are forgotten (a forgotten one is asked again).
    fn keep_handshake(&self, creds: u64, h: Arc<Handshake>) {
        let full = |init: &HashMap<u64, Arc<Handshake>>| {
            init.len() >= MAX_HANDSHAKES && !init.contains_key(&creds)
        };
        if full(&self.init.lock().unwrap_or_else(|e| e.into_inner())) {
            let open: std::collections::HashSet<u64> = self
                .lock()
                .iter()
                .filter(|(_, s)| s.live().is_some())
                .map(|(k, _)| k.creds)
                .collect();
            let mut init = self.init.lock().unwrap_or_else(|e| e.into_inner());
            init.retain(|c, _| open.contains(c));
            if full(&init) {
                init.clear();
            }
        }
        let mut init = self.init.lock().unwrap_or_else(|e| e.into_inner());
        init.insert(creds, h);
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

    /// End the idle connection of `slot`, whose place was given up to make
    /// room for `why`; whether there was one.
    fn end_for_room(&self, slot: &Slot, why: &str) -> bool {
        let Some(session) = slot.live() else {
            return false;
        };
        let what = match session.waiting() {
            0 => "an idle connection",
            _ => "a connection whose requests all wait for their clients' input",
        };
        tracing::info!(upstream = %self.upstream, idle_secs = slot.idle().as_secs(), "{what} ended to make room for {why}");
        session.end(EndedBy::Gateway, format!("ended to make room for {why}"));
        true
    }

    /// The connection of a caller's own that would end first for room, if
    /// there is one: whether it is idle (else its requests all wait for
    /// their clients' input) and how long it has been unused. The gateway
    /// ends the greatest of every mount's when it runs out of something
    /// they share (stdio children): idle ones before those.
    pub fn idlest(&self) -> Option<(bool, Duration)> {
        let slots = self.lock();
        let (key, idle) = idlest_of(&slots, |_| true)?;
        Some((slots.get(&key).is_some_and(|s| s.is_idle()), idle))
    }

    /// End the least recently used idle connection of a caller's own, to
    /// make room for `why`; whether there was one.
    pub fn end_idlest(&self, why: &str) -> bool {
        let slot = self.change(|slots| slots.remove(&idlest_of(slots, |_| true)?.0));
        slot.is_some_and(|s| self.end_for_room(&s, why))
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

    /// End the connections unused beyond their limit (pool places:
    /// `session`; conversations and the others: `conversation`), and forget
    /// the client sessions idle beyond `session` with no stream open.
    pub(crate) fn reap(&self, session: Duration, conversation: Duration) {
        let idle: Vec<(SlotKey, Arc<Slot>)> = self.change(|slots| {
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
        });
        for (key, slot) in idle {
            if let Some(s) = slot.live() {
                let limit = key.lane.idle_limit(session, conversation);
                s.end(
                    EndedBy::Gateway,
                    format!("connection unused for more than {} s", limit.as_secs()),
                );
            }
        }
        let forgotten = self.mux.peers.reap(session);
        let forgotten = forgotten
            .iter()
            .map(|p| p.key())
            .chain(self.mux.peers.take_evicted());
        for key in forgotten {
            for s in self.live() {
                s.forget_peer(key);
            }
        }
        self.mux.purge();
    }

    /// End every connection (shutdown).
    pub fn close_all(&self, reason: &str) {
        let slots: Vec<Arc<Slot>> = self.change(|slots| slots.drain().map(|(_, s)| s).collect());
        for s in slots.iter().filter_map(|s| s.live()) {
            s.end(EndedBy::Gateway, reason);
        }
    }
}

/// The connection of a caller's own that `pick` takes to end for room, and
/// how long it has been unused: the least recently used idle one, else the
/// least recently used whose requests all wait for their clients' input
/// (the mount's shared places are nobody's: never ended for room).
fn idlest_of(
    slots: &HashMap<SlotKey, Arc<Slot>>,
    pick: impl Fn(&Slot) -> bool,
) -> Option<(SlotKey, Duration)> {
    let lru = |spare: fn(&Slot) -> bool| {
        slots
            .iter()
            .filter(|(_, s)| s.owner != 0 && spare(s) && pick(s))
            .map(|(k, s)| (*k, s.idle()))
            .max_by_key(|(_, idle)| *idle)
    };
    lru(Slot::is_idle).or_else(|| lru(Slot::is_set_aside))
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
        let a = pool.connect(key, 0, |again| async move {
            assert!(!again);
            Ok(conn("a"))
        });
        let a = a.await.unwrap();
        let same = pool
            .connect(key, 0, |_| async { panic!("started twice") })
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&a.session, &same.session));
        a.session.close("exited");
        let b = pool
            .connect(key, 0, |again| async move {
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
            .connect(first, 0, |_| async { Ok(conn("a")) })
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
            .connect(shared, 0, |_| async { Ok(conn("s")) })
            .await
            .unwrap();
        let t = pool
            .connect(talk, 0, |_| async { Ok(conn("t")) })
            .await
            .unwrap();
        tokio::time::advance(Duration::from_secs(120)).await;
        pool.reap(Duration::from_secs(3600), Duration::from_secs(60));
        assert!(t.session.is_closed(), "a quiet conversation ends");
        assert!(!s.session.is_closed(), "the pool stays");
    }

    fn room(per_mount: usize, per_caller: usize) -> Room {
        Room {
            per_mount,
            per_caller,
            ..Room::unlimited()
        }
    }

    fn talk(n: u64) -> SlotKey {
        SlotKey {
            era: Era::Handshake,
            creds: 0,
            caps: Caps::default(),
            lane: Lane::Conversation(n),
        }
    }

    async fn open(pool: &Pool, n: u64, owner: u64) -> Result<Conn, Failure> {
        pool.connect(
            talk(n),
            owner,
            |_| async move { Ok(conn(&format!("c{n}"))) },
        )
        .await
    }

    async fn busy(
        c: &Conn,
    ) -> (
        tokio::sync::mpsc::Receiver<crate::upstream::messages::Delivery>,
        crate::upstream::messages::PendingGuard,
    ) {
        c.session
            .request(
                br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#,
                &RawValueOf::one(),
                None,
            )
            .await
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_at_its_limit_ends_its_own_least_recently_used_connection() {
        let pool = Pool::with_room("u", 1, room(10, 2), usize::MAX);
        let other = open(&pool, 100, 7).await.unwrap();
        let first = open(&pool, 1, 3).await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let second = open(&pool, 2, 3).await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let third = open(&pool, 3, 3).await.unwrap();
        assert!(
            first.session.is_closed(),
            "the caller's least recently used ends"
        );
        assert!(!second.session.is_closed() && !third.session.is_closed());
        assert!(
            !other.session.is_closed(),
            "another caller's is never ended for it"
        );
        // Busy connections are not ended: the caller is refused, with why.
        let _a = busy(&second).await;
        let _b = busy(&third).await;
        let refused = open(&pool, 4, 3).await.err().expect("refused");
        assert!(matches!(
            refused,
            Failure::Crowded {
                who: "the caller",
                max: 2,
                ..
            }
        ));
        assert!(
            refused
                .to_string()
                .contains("limits.max_caller_connections"),
            "{refused}"
        );
        assert_eq!(refused.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        // Another caller still has room.
        assert!(open(&pool, 5, 8).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_mount_ends_its_least_recently_used_idle_connection_or_refuses() {
        let pool = Pool::with_room("u", 1, room(2, 2), usize::MAX);
        let a = open(&pool, 1, 1).await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let b = open(&pool, 2, 2).await.unwrap();
        let _b = busy(&b).await;
        let c = open(&pool, 3, 3).await.unwrap();
        assert!(a.session.is_closed(), "the idle one ends");
        let _c = busy(&c).await;
        let refused = open(&pool, 4, 4).await.err().expect("refused");
        assert!(matches!(
            refused,
            Failure::Crowded {
                who: "the mount",
                ..
            }
        ));
        // Every pool of a gateway counts against one cap.
        let total = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let capped = |name| {
            Pool::with_room(
                name,
                1,
                Room {
                    total: total.clone(),
                    cap: 2,
                    ..Room::unlimited()
                },
                usize::MAX,
            )
        };
        let (p, q) = (capped("p"), capped("q"));
        let x = open(&p, 1, 1).await.unwrap();
        let _x = busy(&x).await;
        let y = open(&q, 1, 1).await.unwrap();
        let _y = busy(&y).await;
        let refused = open(&q, 2, 2).await.err().expect("refused");
        assert!(matches!(
            refused,
            Failure::Crowded {
                who: "the gateway",
                ..
            }
        ));
        drop(_x);
        p.end(&talk(1), "done");
        assert!(open(&q, 2, 2).await.is_ok(), "room again once one is gone");
    }

    /// A connection whose requests all wait for their client's input (a
    /// 2026-07-28 round) is ended for room, after the idle ones: open
    /// rounds never keep another caller out. One with a request running
    /// is not; nor the mount's shared places.
    #[tokio::test(start_paused = true)]
    async fn connections_whose_requests_all_wait_for_input_make_room_after_idle_ones() {
        let pool = Pool::with_room("u", 1, room(3, 3), usize::MAX);
        let shared = pool
            .connect(talk(0), 0, |_| async { Ok(conn("shared")) })
            .await
            .unwrap();
        let (_r0, parked_on_shared) = busy(&shared).await;
        parked_on_shared.park(true);
        let rounds = open(&pool, 1, 1).await.unwrap();
        let (_r1, parked) = busy(&rounds).await;
        parked.park(true);
        tokio::time::advance(Duration::from_secs(1)).await;
        let idle = open(&pool, 2, 2).await.unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(pool.idlest().map(|(idle, _)| idle), Some(true));
        let third = open(&pool, 3, 3).await.unwrap();
        assert!(idle.session.is_closed(), "the idle one ends first");
        assert!(!rounds.session.is_closed());
        let _running = busy(&third).await;
        assert_eq!(pool.idlest().map(|(idle, _)| idle), Some(false));
        let fourth = open(&pool, 4, 4).await.unwrap();
        assert!(
            rounds.session.is_closed(),
            "then the one whose requests all wait for their client"
        );
        assert!(!shared.session.is_closed(), "a shared place is nobody's");
        // Taken up again, a round's request runs: its connection is not
        // ended for room.
        let _running = busy(&fourth).await;
        let refused = open(&pool, 5, 5).await.err().expect("refused");
        assert!(matches!(refused, Failure::Crowded { .. }), "{refused}");
    }

    #[tokio::test]
    async fn a_connection_that_failed_to_start_leaves_no_place_behind() {
        let pool = Pool::new(1);
        for n in 0..100 {
            let failed = pool
                .connect(talk(n), 5, |_| async { Err(Failure::Full { max: 1 }) })
                .await;
            assert!(failed.is_err());
        }
        assert_eq!(pool.lock().len(), 0);
        assert_eq!(pool.room.total.load(Ordering::Relaxed), 0);
    }

    /// One handshake is kept per credentials for local `initialize`s, and
    /// no more than [`MAX_HANDSHAKES`] however many callers came and went:
    /// past it those with no connection open are forgotten.
    #[tokio::test]
    async fn the_handshakes_kept_are_bounded() {
        let pool = Pool::new(1);
        let handshake = || {
            let reply = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}"#;
            let result = serde_json::value::RawValue::from_string(
                r#"{"protocolVersion":"2025-11-25"}"#.to_owned(),
            )
            .unwrap();
            Arc::new(Handshake::new(
                bytes::Bytes::from_static(reply.as_bytes()),
                result,
                "2025-11-25".into(),
            ))
        };
        let open = |creds: u64| {
            let key = pool.pick(Era::Handshake, creds, Caps::default());
            let h = handshake();
            pool.connect(key, creds, move |_| async move {
                Ok(Conn {
                    handshake: Some(h),
                    ..conn("c")
                })
            })
        };
        let kept = open(1).await.unwrap();
        for creds in 2..=(MAX_HANDSHAKES as u64 + 10) {
            let c = open(creds).await.unwrap();
            c.session.close("its caller went away");
        }
        let init = pool.init.lock().unwrap();
        assert!(init.len() <= MAX_HANDSHAKES, "{} kept", init.len());
        assert!(
            init.contains_key(&1),
            "the one with a connection open stays"
        );
        drop(kept);
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
