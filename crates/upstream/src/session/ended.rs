//! Sessions their clients ended.

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
