//! A client session as the connections it shares see it: the capabilities
//! it declared (what a server may ask it), the log level it asked for, and
//! its GET stream, where what the upstream says to it on its own arrives.
//! [`Peers`] holds a mount's client sessions by number, so that a message
//! for every client (a list change) reaches each, and a message for one
//! reaches only that one.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use mcp_ui_wire::protocol::Caps;

/// Messages kept for a client session with no GET stream open.
const BACKLOG: usize = 8;
/// Bytes kept for a client session with no GET stream open.
const BACKLOG_BYTES: usize = 8 * 1024;
/// Messages buffered on an open GET stream before the sender waits.
const STREAM_BUFFER: usize = 64;

/// The levels of `logging/setLevel`, least severe first.
pub(crate) const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// The level of a session that asked for none: what servers send by default.
pub(crate) const DEFAULT_LEVEL: u8 = 1;

/// `level`'s rank in [`LEVELS`].
pub fn level_rank(level: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == level).map(|i| i as u8)
}

/// One client session.
pub struct Peer {
    key: u64,
    caps: Caps,
    level: AtomicU8,
    mailbox: Mutex<Mailbox>,
    born: Instant,
    last_ms: AtomicU64,
}

#[derive(Default)]
struct Mailbox {
    stream: Option<mpsc::Sender<Bytes>>,
    backlog: VecDeque<Bytes>,
    bytes: usize,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").field("key", &self.key).finish()
    }
}

impl Peer {
    pub fn new(key: u64, caps: Caps) -> Arc<Peer> {
        Arc::new(Peer {
            key,
            caps,
            level: AtomicU8::new(DEFAULT_LEVEL),
            mailbox: Mutex::default(),
            born: Instant::now(),
            last_ms: AtomicU64::new(0),
        })
    }

    /// The client session's number (its sealed id's).
    pub fn key(&self) -> u64 {
        self.key
    }

    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// Set the least severe log level this client wants.
    pub fn set_level(&self, rank: u8) {
        self.level.store(rank, Ordering::Relaxed);
    }

    /// Whether a log message of `rank` reaches this client.
    pub(crate) fn wants_log(&self, rank: u8) -> bool {
        rank >= self.level.load(Ordering::Relaxed)
    }

    /// The client did something now.
    pub fn touch(&self) {
        let ms = self.born.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Time since the client last did something.
    pub fn idle(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.born.elapsed().saturating_sub(last)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Mailbox> {
        self.mailbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Open the client's GET stream, starting with what was kept for it; at
    /// most one at a time.
    pub fn attach_stream(&self) -> Option<mpsc::Receiver<Bytes>> {
        self.touch();
        let mut mb = self.lock();
        if mb.stream.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return None;
        }
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        for m in mb.backlog.drain(..) {
            let _ = tx.try_send(m);
        }
        mb.bytes = 0;
        mb.stream = Some(tx);
        Some(rx)
    }

    /// The client ended its session: its GET stream ends, and nothing more
    /// is kept for it.
    pub fn close(&self) {
        let mut mb = self.lock();
        mb.stream = None;
        mb.backlog.clear();
        mb.bytes = 0;
    }

    /// Whether the client has its GET stream open.
    pub(crate) fn has_stream(&self) -> bool {
        self.lock()
            .stream
            .as_ref()
            .is_some_and(|tx| !tx.is_closed())
    }

    /// Say `message` on the client's GET stream, or keep it (a few, the
    /// oldest dropped first) until the client opens one. Never waits: a
    /// client that does not read its stream loses what does not fit.
    pub fn send(&self, message: Bytes) {
        let mut mb = self.lock();
        if let Some(tx) = mb.stream.as_ref().filter(|tx| !tx.is_closed()) {
            if tx.try_send(message).is_err() {
                tracing::debug!(client = self.key, "GET stream full; dropped a message");
            }
            return;
        }
        if message.len() > BACKLOG_BYTES {
            return;
        }
        if mb.backlog.contains(&message) {
            return;
        }
        while mb.backlog.len() >= BACKLOG || mb.bytes + message.len() > BACKLOG_BYTES {
            let Some(old) = mb.backlog.pop_front() else {
                break;
            };
            mb.bytes -= old.len();
        }
        mb.bytes += message.len();
        mb.backlog.push_back(message);
    }
}

/// A mount's client sessions on shared connections, by number: at most
/// `max`, beyond which the least recently used with no GET stream open are
/// forgotten (a forgotten session goes on: its id carries what it declared;
/// what it asked since, its log level, is back to the default).
pub struct Peers {
    map: Mutex<HashMap<u64, Arc<Peer>, foldhash::fast::RandomState>>,
    max: usize,
    /// Sessions forgotten to make room, for the connections to forget too.
    evicted: Mutex<Vec<u64>>,
}

impl Default for Peers {
    fn default() -> Self {
        Peers::with_max(usize::MAX)
    }
}

impl Peers {
    /// At most `max` client sessions (at least 16).
    pub fn with_max(max: usize) -> Peers {
        Peers {
            map: Mutex::default(),
            max: max.max(16),
            evicted: Mutex::default(),
        }
    }

    /// The client sessions forgotten to make room since last asked.
    pub(crate) fn take_evicted(&self) -> Vec<u64> {
        std::mem::take(&mut *self.evicted.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Forget the least recently used sixteenth of the sessions with no GET
    /// stream open (a few at a time, so a full table costs one scan per
    /// many new sessions).
    fn make_room(&self, map: &mut HashMap<u64, Arc<Peer>, foldhash::fast::RandomState>) {
        let mut quiet: Vec<(Duration, u64)> = map
            .values()
            .filter(|p| !p.has_stream())
            .map(|p| (p.idle(), p.key))
            .collect();
        let n = (self.max / 16).clamp(1, quiet.len().max(1));
        if quiet.len() > n {
            quiet.select_nth_unstable_by(n, |a, b| b.0.cmp(&a.0));
            quiet.truncate(n);
        }
        let mut evicted = self.evicted.lock().unwrap_or_else(|e| e.into_inner());
        for (_, key) in quiet {
            if let Some(p) = map.remove(&key) {
                p.close();
                evicted.push(key);
            }
        }
        if !evicted.is_empty() {
            tracing::debug!(
                forgotten = evicted.len(),
                max = self.max,
                "client sessions forgotten to make room (limits.max_client_sessions)"
            );
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Peer>, foldhash::fast::RandomState>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Client session `key`, registered with `caps` when this process has
    /// not seen it (a new session, or one whose id outlived the process
    /// that issued it).
    pub fn get_or_insert(&self, key: u64, caps: Caps) -> Arc<Peer> {
        let mut map = self.lock();
        if map.len() >= self.max && !map.contains_key(&key) {
            self.make_room(&mut map);
        }
        let peer = map
            .entry(key)
            .or_insert_with(|| Peer::new(key, caps))
            .clone();
        drop(map);
        peer.touch();
        peer
    }

    pub fn get(&self, key: u64) -> Option<Arc<Peer>> {
        self.lock().get(&key).cloned()
    }

    pub fn remove(&self, key: u64) -> Option<Arc<Peer>> {
        self.lock().remove(&key)
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every client session, for a message to all.
    pub fn all(&self) -> Vec<Arc<Peer>> {
        self.lock().values().cloned().collect()
    }

    /// Forget the client sessions with no GET stream open that did nothing
    /// for `idle`; the ones forgotten.
    pub(crate) fn reap(&self, idle: Duration) -> Vec<Arc<Peer>> {
        let mut gone = Vec::new();
        self.lock().retain(|_, p| {
            let keep = p.has_stream() || p.idle() <= idle;
            if !keep {
                gone.push(p.clone());
            }
            keep
        });
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_peer_keeps_a_few_messages_until_its_stream_opens() {
        let p = Peer::new(1, Caps::default());
        for i in 0..20u8 {
            p.send(Bytes::from(vec![b'a' + i; 10]));
        }
        // The same message twice is kept once.
        p.send(Bytes::from(vec![b'a' + 19; 10]));
        let mut rx = p.attach_stream().unwrap();
        assert!(p.attach_stream().is_none(), "one GET stream at a time");
        let mut got = Vec::new();
        while let Ok(m) = rx.try_recv() {
            got.push(m);
        }
        assert_eq!(got.len(), BACKLOG);
        assert_eq!(got[0][0], b'a' + 12, "the oldest were dropped");
        p.send(Bytes::from_static(b"live"));
        assert_eq!(&rx.recv().await.unwrap()[..], b"live");
        drop(rx);
        assert!(!p.has_stream());
    }

    #[test]
    fn levels_filter_log_messages() {
        let p = Peer::new(1, Caps::default());
        assert!(!p.wants_log(level_rank("debug").unwrap()));
        assert!(p.wants_log(level_rank("info").unwrap()));
        p.set_level(level_rank("error").unwrap());
        assert!(!p.wants_log(level_rank("warning").unwrap()));
        assert!(p.wants_log(level_rank("alert").unwrap()));
        assert_eq!(level_rank("loud"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn past_its_limit_the_least_recently_used_without_a_stream_are_forgotten() {
        let peers = Peers::with_max(32);
        let streaming = peers.get_or_insert(1, Caps::default());
        let _stream = streaming.attach_stream();
        for key in 2..=32 {
            peers.get_or_insert(key, Caps::default());
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        // Session 2 is the least recently used but one; 3 is touched again.
        peers.get_or_insert(3, Caps::default());
        for key in 100..1_100 {
            peers.get_or_insert(key, Caps::default());
            assert!(peers.len() <= 32, "{} sessions kept", peers.len());
        }
        assert!(
            peers.get(1).is_some(),
            "a session with its stream open stays"
        );
        assert!(
            peers.get(2).is_none(),
            "the least recently used is forgotten"
        );
        let evicted = peers.take_evicted();
        assert!(evicted.contains(&2) && !evicted.contains(&1));
        assert!(peers.take_evicted().is_empty(), "each told once");
    }

    #[tokio::test(start_paused = true)]
    async fn idle_peers_without_a_stream_are_forgotten() {
        let peers = Peers::default();
        let a = peers.get_or_insert(1, Caps::default());
        let b = peers.get_or_insert(2, Caps::default());
        let _stream = b.attach_stream();
        tokio::time::advance(Duration::from_secs(100)).await;
        let gone = peers.reap(Duration::from_secs(60));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].key(), a.key());
        assert_eq!(peers.len(), 1);
        assert!(peers.get(2).is_some());
    }
}
