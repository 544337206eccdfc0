//! The sessions this process owns with message-oriented upstreams (stdio
//! children, legacy SSE connections) for clients that own their connection
//! (`sessions = "client"`): each client session by number, and those opened
//! again in place of a session whose id outlived its connection (by the id's
//! process and number). Connections clients share are in
//! [`super::pool`]; HTTP-upstream sessions live only in their sealed ids.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

use crate::upstream::messages::{EndedBy, MessageSession};
use mcp_ui_model::outcome::Failure;

/// What the table needs of a session it holds: the upstream side owns the
/// session type (`upstream::messages::MessageSession`) and says how.
pub trait Held: Send + Sync {
    /// Whether it has ended (its child exited, its connection broke, …).
    fn is_closed(&self) -> bool;
    /// How long since it last carried a message.
    fn idle(&self) -> Duration;
    /// Whether nothing is open on it (no request waiting, no stream).
    fn is_quiet(&self) -> bool;
    /// Sends the client a message of the gateway's own.
    fn announce(&self, message: Bytes) -> impl Future<Output = ()> + Send;
    /// Ends it, by the gateway, for `reason`.
    fn end_by_gateway(&self, reason: String);
}

/// A client's session in the gateway's table of owned sessions.
impl Held for MessageSession {
    fn is_closed(&self) -> bool {
        MessageSession::is_closed(self)
    }

    fn idle(&self) -> std::time::Duration {
        MessageSession::idle(self)
    }

    fn is_quiet(&self) -> bool {
        MessageSession::is_quiet(self)
    }

    async fn announce(&self, message: Bytes) {
        MessageSession::announce(self, message).await;
    }

    fn end_by_gateway(&self, reason: String) {
        self.end(EndedBy::Gateway, reason);
    }
}

/// A session id's process and number.
type Origin = ([u8; 16], u64);

/// Most sessions opened again that are remembered by their old id.
const MAX_REVIVED: usize = 4096;

/// Owned sessions, against `limits.max_sessions`.
pub struct Owned<S> {
    next: AtomicU64,
    map: Mutex<HashMap<u64, (usize, Arc<S>)>>,
    /// Sessions opened again, by the id they stand in for: mount, number.
    revived: Mutex<HashMap<Origin, (usize, u64)>>,
    /// The ids of sessions their client ended.
    pub ended: super::ended::Ended<Origin>,
    mounts: usize,
    max: usize,
}

impl<S: Held> Owned<S> {
    /// A table for `mounts` mounts holding at most `max` client sessions.
    pub fn new(mounts: usize, max: usize) -> Self {
        Owned {
            next: AtomicU64::new(0),
            map: Mutex::default(),
            revived: Mutex::default(),
            ended: Default::default(),
            mounts,
            max,
        }
    }

    /// Register `session`, opened again in place of session `id` of process
    /// `instance`; its number.
    pub fn insert_revived(
        &self,
        mount: usize,
        instance: [u8; 16],
        id: u64,
        session: Arc<S>,
    ) -> u64 {
        let number = self.insert(mount, session);
        let mut revived = self.revived.lock().unwrap_or_else(|e| e.into_inner());
        if revived.len() >= MAX_REVIVED {
            let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            revived.retain(|_, (_, n)| map.contains_key(n));
        }
        revived.insert((instance, id), (mount, number));
        number
    }

    /// The number of the session opened in place of session `id` of
    /// process `instance`, if one was.
    pub fn revived_number(&self, mount: usize, instance: [u8; 16], id: u64) -> Option<u64> {
        let revived = self.revived.lock().unwrap_or_else(|e| e.into_inner());
        revived
            .get(&(instance, id))
            .filter(|(m, _)| *m == mount)
            .map(|(_, n)| *n)
    }

    /// The open session opened in place of session `id` of process `instance`.
    pub fn revived(&self, mount: usize, instance: [u8; 16], id: u64) -> Option<Arc<S>> {
        self.get(mount, self.revived_number(mount, instance, id)?)
    }

    /// Whether one more client session may open.
    pub fn check_room(&self) -> Result<(), Failure> {
        match self.len() >= self.max {
            true => Err(Failure::Full { max: self.max }),
            false => Ok(()),
        }
    }

    /// Register a new client session of `mount`; its number.
    pub fn insert(&self, mount: usize, session: Arc<S>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        // Ended sessions are purged lazily (on lookup, count and reaping),
        // so a child that exits on its own needs no callback into this table.
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, (mount, session));
        id
    }

    /// Session `id` of `mount`, if it is open.
    pub fn get(&self, mount: usize, id: u64) -> Option<Arc<S>> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&id) {
            Some((m, s)) if *m == mount && !s.is_closed() => Some(s.clone()),
            Some((_, s)) if s.is_closed() => {
                map.remove(&id);
                None
            }
            _ => None,
        }
    }

    pub fn remove(&self, id: u64) -> Option<Arc<S>> {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id)
            .map(|(_, s)| s)
    }

    /// Open client sessions; ended ones are dropped from the table on the way.
    pub fn len(&self) -> usize {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, (_, s)| !s.is_closed());
        map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Open sessions by mount index.
    pub fn open_by_mount(&self) -> Vec<usize> {
        let mut open = vec![0; self.mounts];
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, (_, s)| !s.is_closed());
        for (m, _) in map.values() {
            if let Some(n) = open.get_mut(*m) {
                *n += 1;
            }
        }
        open
    }

    /// Tell every client session something of the gateway's own.
    pub async fn announce(&self, messages: &[&'static [u8]]) {
        let sessions: Vec<Arc<S>> = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            map.retain(|_, (_, s)| !s.is_closed());
            map.values().map(|(_, s)| s.clone()).collect()
        };
        for session in sessions {
            for m in messages {
                session.announce(Bytes::from_static(m)).await;
            }
        }
    }

    /// End the sessions idle for longer than `ttl`, and those of a mount
    /// with a `quiet[mount]` limit that have nothing open (see
    /// [`Held::is_quiet`]) and were idle for longer than it.
    pub(crate) fn reap(&self, ttl: Duration, quiet: &[Option<Duration>]) {
        let why = |s: &S, mount: usize| -> Option<String> {
            if s.idle() > ttl {
                return Some(format!("session idle for more than {} s", ttl.as_secs()));
            }
            let quiet = quiet.get(mount).copied().flatten()?;
            (s.idle() > quiet && s.is_quiet()).then(|| {
                format!(
                    "session idle for more than {} s with no request or stream open (limits.stdio_quiet_session_secs)",
                    quiet.as_secs()
                )
            })
        };
        let idle: Vec<(Arc<S>, String)> = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            map.retain(|_, (_, s)| !s.is_closed());
            map.values()
                .filter_map(|(mount, s)| Some((s.clone(), why(s, *mount)?)))
                .collect()
        };
        for (s, reason) in idle {
            s.end_by_gateway(reason);
        }
    }

    /// End every session (children are stopped).
    pub fn close_all(&self, reason: &str) {
        let all: Vec<Arc<S>> = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            map.drain().map(|(_, (_, s))| s).collect()
        };
        for s in all {
            s.end_by_gateway(reason.into());
        }
    }
}
