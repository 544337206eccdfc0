//! The limits on a pool's connections (per caller, per mount, per
//! gateway), the connections ended to make room under them, and those ended
//! for being unused.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::{Lane, Pool, Slot, SlotKey};
use crate::upstream::messages::EndedBy;
use mcp_ui_model::outcome::Failure;

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

impl Pool {
    /// Make room for one more place of `owner`'s, in `slots`: forget the
    /// vacant places, then, where a limit is reached, end the least
    /// recently used idle connection that counts against it (the caller's
    /// own first, so that one caller's many never push out another's),
    /// else the least recently used whose requests all wait for their
    /// clients' input; refused when every one that counts is busy. The ended connections
    /// are given back to be closed outside the lock.
    pub(super) fn make_room(
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

    /// End the idle connection of `slot`, whose place was given up to make
    /// room for `why`; whether there was one.
    pub(super) fn end_for_room(&self, slot: &Slot, why: &str) -> bool {
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
