//! Sessions their clients ended.

use std::collections::{HashSet, VecDeque};

/// The sessions a client ended (DELETE), remembered so that their ids are
/// answered 404 as the protocol says, instead of being opened again like
/// an id whose connection was lost.
///
/// At most [`ENDED_MAX`] are remembered. Forgetting one must not let its id
/// back in: each id carries when its session started, and a forgotten end
/// raises a watermark, the latest start of a session forgotten; an id that
/// started at or before it is treated as ended (its client opens a new
/// session). So flooding the record with ends can make live sessions whose
/// connection is lost start over, never bring a deleted one back.
pub struct Ended<K> {
    inner: std::sync::Mutex<Inner<K>>,
}

struct Inner<K> {
    set: HashSet<K>,
    /// Each remembered end with its session's start (Unix milliseconds).
    order: VecDeque<(K, u64)>,
    /// The latest start of a session whose end was forgotten (0: none).
    watermark: u64,
}

/// Most ended sessions remembered.
pub const ENDED_MAX: usize = 65_536;

impl<K> Default for Ended<K> {
    fn default() -> Self {
        Ended {
            inner: std::sync::Mutex::new(Inner {
                set: HashSet::new(),
                order: VecDeque::new(),
                watermark: 0,
            }),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> Ended<K> {
    /// The session `key`, started at `started` (Unix milliseconds; `None`
    /// for an id that does not say), was ended by its client.
    pub fn insert(&self, key: K, started: Option<u64>) {
        self.insert_at(key, started, mcp_ui_model::clock::unix_millis(), ENDED_MAX);
    }

    fn insert_at(&self, key: K, started: Option<u64>, now: u64, max: usize) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        // An id that does not say when it started started before now.
        let started = started.unwrap_or(now);
        if g.set.insert(key.clone()) {
            g.order.push_back((key, started));
        }
        while g.order.len() > max {
            if let Some((old, at)) = g.order.pop_front() {
                g.set.remove(&old);
                g.watermark = g.watermark.max(at);
            }
        }
    }

    /// Whether the session `key`, started at `started`, may have been ended.
    pub fn contains(&self, key: &K, started: Option<u64>) -> bool {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        g.set.contains(key)
            || match started {
                Some(s) => g.watermark > 0 && s <= g.watermark,
                None => g.watermark > 0,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forgotten_end_never_lets_its_id_back_in() {
        let ended: Ended<u64> = Ended::default();
        // Sessions 1..=4 started at 100..400 and were ended; room for 3.
        for id in 1..=4u64 {
            ended.insert_at(id, Some(id * 100), 1_000, 3);
        }
        // Session 1's end is forgotten, but its id (started at 100) is no
        // less ended; nor is a live session started before it.
        assert!(ended.contains(&1, Some(100)));
        assert!(ended.contains(&77, Some(50)));
        // Sessions started after the watermark are judged by the record.
        assert!(ended.contains(&3, Some(300)));
        assert!(!ended.contains(&9, Some(101)));
        // An id that does not say when it started: ended once any end was forgotten.
        assert!(ended.contains(&9, None));
        let fresh: Ended<u64> = Ended::default();
        fresh.insert(1, Some(5));
        assert!(fresh.contains(&1, None) && !fresh.contains(&2, None));
        assert!(!fresh.contains(&2, Some(1)));
    }
}
