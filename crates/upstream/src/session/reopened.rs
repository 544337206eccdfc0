//! Streamable HTTP sessions opened again: when an HTTP upstream answers 404
//! for the session a client's id carries (it restarted, or expired the
//! session), the gateway opens another as the client opened the first and
//! remembers which stands in for which, so that the client's id, which it
//! keeps, goes on working (hosts do not start over on their own). The ones
//! the client ended itself are remembered too: they stay ended.

use std::collections::HashMap;
use std::sync::Mutex;

use super::ended::Ended;

/// Most reopened sessions remembered per process.
const MAX: usize = 4096;

/// By mount and the upstream session id a client's id carries.
type Key = (usize, String);

#[derive(Default)]
pub struct Reopened {
    map: Mutex<HashMap<Key, String>>,
    /// Upstream sessions their client ended (DELETE) through this process.
    pub ended: Ended<Key>,
}

impl Reopened {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, String>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The upstream session standing in for `id` of `mount` now: `id`
    /// itself unless it was opened again.
    pub fn current(&self, mount: usize, id: &str) -> Option<String> {
        self.lock().get(&(mount, id.to_owned())).cloned()
    }

    /// `new` stands in for `old` from now on.
    pub fn insert(&self, mount: usize, old: &str, new: String) {
        let mut map = self.lock();
        if map.len() >= MAX {
            map.clear();
        }
        map.insert((mount, old.to_owned()), new);
    }

    /// The client ended `id` (or what stands in for it).
    /// The client ended `id` (or what stands in for it), of a session that
    /// started at `started`.
    pub fn end(&self, mount: usize, id: &str, started: Option<u64>) {
        self.lock().remove(&(mount, id.to_owned()));
        self.ended.insert((mount, id.to_owned()), started);
    }

    pub fn is_ended(&self, mount: usize, id: &str, started: Option<u64>) -> bool {
        self.ended.contains(&(mount, id.to_owned()), started)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reopened_session_stands_in_until_the_client_ends_it() {
        let r = Reopened::default();
        assert_eq!(r.current(0, "a"), None);
        r.insert(0, "a", "b".into());
        assert_eq!(r.current(0, "a").as_deref(), Some("b"));
        assert_eq!(r.current(1, "a"), None, "another mount's");
        r.end(0, "a", Some(1));
        assert_eq!(r.current(0, "a"), None);
        assert!(r.is_ended(0, "a", Some(1)));
    }
}
