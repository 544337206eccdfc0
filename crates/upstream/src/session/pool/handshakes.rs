//! The handshake the upstream last answered each credentials with, kept so
//! that a client's `initialize` can be answered without asking it again;
//! bounded in number.

use std::collections::HashMap;
use std::sync::Arc;

use super::Pool;
use crate::upstream::handshake::Handshake;

/// Most handshakes a pool keeps for local `initialize`s: one per
/// credentials (a held HTTP session's caller and claims).
pub(super) const MAX_HANDSHAKES: usize = 4096;

impl Pool {
    /// The last handshake of this mount's upstream with `creds`, if any
    /// connection made one.
    pub fn handshake(&self, creds: u64) -> Option<Arc<Handshake>> {
        self.init
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&creds)
            .cloned()
    }

    /// Keep `h` as the handshake of `creds`, for local `initialize`s. At
    /// most [`MAX_HANDSHAKES`] are kept: past it, those of credentials with
    /// no connection open are forgotten (a forgotten one is asked again).
    pub(super) fn keep_handshake(&self, creds: u64, h: Arc<Handshake>) {
        let full = |init: &HashMap<u64, Arc<Handshake>>| {
            init.len() >= MAX_HANDSHAKES && !init.contains_key(&creds)
        };
        if full(&self.init.lock().unwrap_or_else(|e| e.into_inner())) {
            let open: std::collections::HashSet<u64> = self
                .lock()
                .iter()
                .filter(|(_, s)| s.live().is_some())
                .map(|(k, _)| k.creds)
                .collect();
            let mut init = self.init.lock().unwrap_or_else(|e| e.into_inner());
            init.retain(|c, _| open.contains(c));
            if full(&init) {
                init.clear();
            }
        }
        let mut init = self.init.lock().unwrap_or_else(|e| e.into_inner());
        init.insert(creds, h);
    }
}
