//! Which pool place a request takes: the started connection with the
//! fewest requests waiting, or a new place while every started one is busy.

use super::{Lane, Pool, SlotKey};
use mcp_ui_wire::protocol::Caps;
use mcp_ui_wire::protocol::Era;

impl Pool {
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
}
