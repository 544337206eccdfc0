//! Client sessions: the ids the gateway gives clients, the sessions it owns
//! with upstreams, how many requests each may have waiting, and the reaping
//! of idle ones.
//!
//! - [`app`]: the sealed id of a session with an app, one session per member;
//! - [`hello`]: what a client said of itself at `initialize`, carried in its id;
//! - [`id`]: sealed ids that carry their own routing, so any replica holding
//!   the key serves an HTTP-upstream session with no shared store;
//! - [`owned`]: the sessions this process holds open with stdio and legacy
//!   SSE upstreams for clients that own their connection, by number;
//! - [`pool`]: per mount, the connections clients share (a pool, one per
//!   conversation) and the client sessions they serve;
//! - [`in_flight`]: requests waiting for an upstream, per client session;
//! - [`reaper`]: ends sessions and connections idle beyond their time;
//! - [`reopened`]: streamable HTTP sessions opened again after their upstream
//!   forgot them, by the id they stand in for.

pub mod app;
pub mod hello;
pub mod id;
pub mod in_flight;
pub mod owned;
pub mod pool;
pub mod reaper;
pub mod reopened;

pub use hello::{Caps, Hello};
pub use id::{KeyError, OpenedIds, Route, SessionKey, Token};
pub use in_flight::{InFlight, InFlightGuard};
pub use owned::Owned;

/// The sessions a client ended (DELETE), remembered so that their ids are
/// answered 404 as the protocol says, instead of being opened again like
/// an id whose connection was lost. Bounded: the oldest are forgotten
/// first (a process holds no more than this many recent ends).
pub struct Ended<K> {
    set: std::sync::Mutex<(std::collections::HashSet<K>, std::collections::VecDeque<K>)>,
}

/// Most ended sessions remembered.
const ENDED_MAX: usize = 65_536;

impl<K> Default for Ended<K> {
    fn default() -> Self {
        Ended {
            set: std::sync::Mutex::default(),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> Ended<K> {
    pub fn insert(&self, key: K) {
        let mut g = self.set.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *g;
        if set.insert(key.clone()) {
            order.push_back(key);
        }
        while order.len() > ENDED_MAX {
            if let Some(old) = order.pop_front() {
                set.remove(&old);
            }
        }
    }

    pub fn contains(&self, key: &K) -> bool {
        let g = self.set.lock().unwrap_or_else(|e| e.into_inner());
        g.0.contains(key)
    }
}
