//! One connection's place in a pool: its connection, started on first use
//! and again when found ended, and how long it has gone unused.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::Conn;
use crate::upstream::messages::MessageSession;

/// One connection's place: started on first use, started again when found
/// ended.
#[derive(Default)]
pub(super) struct Slot {
    /// The caller whose own connection this is (a digest of its
    /// credentials); 0 for a place of the mount's shared pool.
    pub(super) owner: u64,
    pub(super) conn: Arc<tokio::sync::Mutex<Option<Conn>>>,
    /// The connection in use, readable without waiting for a start.
    pub(super) live: Mutex<Option<Arc<MessageSession>>>,
    born: std::sync::OnceLock<Instant>,
    last_ms: AtomicU64,
}

impl Slot {
    pub(super) fn owned_by(owner: u64) -> Slot {
        Slot {
            owner,
            ..Slot::default()
        }
    }

    /// Whether the place holds nothing: no connection open, none starting.
    pub(super) fn is_vacant(&self) -> bool {
        self.live().is_none() && self.conn.try_lock().is_ok()
    }

    /// Whether the connection may be ended to make room: open, with no
    /// request waiting, not starting.
    pub(super) fn is_idle(&self) -> bool {
        self.live().is_some_and(|s| s.waiting() == 0) && self.conn.try_lock().is_ok()
    }

    /// Whether the connection may be ended to make room once no idle one
    /// is left: open, not starting, and every request on it set aside for
    /// its client's input (2026-07-28 rounds, which end with it: their
    /// clients are told so when they come back).
    pub(super) fn is_set_aside(&self) -> bool {
        self.live().is_some_and(|s| s.only_parked()) && self.conn.try_lock().is_ok()
    }

    pub(super) fn touch(&self) {
        let born = *self.born.get_or_init(Instant::now);
        self.last_ms
            .store(born.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    pub(super) fn idle(&self) -> Duration {
        let Some(born) = self.born.get() else {
            return Duration::ZERO;
        };
        born.elapsed()
            .saturating_sub(Duration::from_millis(self.last_ms.load(Ordering::Relaxed)))
    }

    /// The connection, if one is open.
    pub(super) fn live(&self) -> Option<Arc<MessageSession>> {
        self.live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|s| !s.is_closed())
    }
}
