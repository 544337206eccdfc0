//! Requests waiting for an upstream, per client session, against
//! `limits.max_in_flight_per_session`. A request counts until its response
//! body ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The count of waiting requests by client session id (as sent).
#[derive(Debug, Default)]
pub struct InFlight {
    // Keys are session ids the gateway sealed: no client picks them.
    map: Mutex<HashMap<Box<[u8]>, usize, foldhash::fast::RandomState>>,
}

impl InFlight {
    /// A place for one more request of `session`, unless it has `max` already.
    pub fn try_enter(self: &Arc<Self>, session: &[u8], max: usize) -> Option<InFlightGuard> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match map.get_mut(session) {
            Some(n) if *n >= max => return None,
            Some(n) => *n += 1,
            None => {
                map.insert(session.into(), 1);
            }
        }
        Some(InFlightGuard {
            table: self.clone(),
            session: session.into(),
        })
    }

    /// Requests `session` has waiting.
    pub fn count(&self, session: &[u8]) -> usize {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session)
            .copied()
            .unwrap_or(0)
    }
}

/// One request's place in [`InFlight`], given back on drop.
#[derive(Debug)]
pub struct InFlightGuard {
    table: Arc<InFlight>,
    session: Box<[u8]>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        let mut map = self.table.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.session) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_bounded_and_given_back() {
        let t = Arc::new(InFlight::default());
        let a = t.try_enter(b"s", 2).unwrap();
        let _b = t.try_enter(b"s", 2).unwrap();
        assert!(t.try_enter(b"s", 2).is_none());
        assert!(t.try_enter(b"other", 2).is_some());
        drop(a);
        assert_eq!(t.count(b"s"), 1);
        assert!(t.try_enter(b"s", 2).is_some());
    }
}
