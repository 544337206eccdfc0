//! What the authorization server remembers between requests: the codes
//! and refresh tokens already redeemed (each is good once: a second use is
//! an attack, RFC 6749 §4.1.2 and OAuth 2.1 §4.3.1), and the families of
//! refresh tokens revoked. Each entry is kept until what it names would
//! have expired anyway.
//!
//! In this process's memory: a code or refresh token replayed to another
//! replica, or after a restart, is not recognised as used. The bound is the
//! code's lifetime (60 s) and, for refresh tokens, their family's.

use std::collections::HashMap;
use std::sync::Mutex;

/// Most entries kept; past it, expired ones are dropped, and if none has
/// expired the store refuses (a redemption it cannot record is refused,
/// never allowed twice).
const MAX_ENTRIES: usize = 1_000_000;

pub struct Store {
    used: Mutex<HashMap<String, u64>>,
    revoked: Mutex<HashMap<String, u64>>,
}

/// The store is full of live entries.
#[derive(Debug)]
pub struct Full;

impl Store {
    pub(super) fn memory() -> Store {
        Store {
            used: Mutex::new(HashMap::new()),
            revoked: Mutex::new(HashMap::new()),
        }
    }

    /// Record `id` as used until `until`: `Ok(true)` the first time,
    /// `Ok(false)` after.
    pub(super) fn first_use(&self, id: &str, until: u64, now: u64) -> Result<bool, Full> {
        insert(&self.used, id, until, now)
    }

    /// Revoke the family `id` until `until`.
    pub(super) fn revoke(&self, family: &str, until: u64, now: u64) {
        let _ = insert(&self.revoked, family, until, now);
    }

    pub(super) fn is_revoked(&self, family: &str, now: u64) -> bool {
        let map = self.revoked.lock().unwrap_or_else(|e| e.into_inner());
        map.get(family).is_some_and(|until| *until > now)
    }
}

fn insert(map: &Mutex<HashMap<String, u64>>, id: &str, until: u64, now: u64) -> Result<bool, Full> {
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(u) = map.get(id)
        && *u > now
    {
        return Ok(false);
    }
    if map.len() >= MAX_ENTRIES {
        map.retain(|_, u| *u > now);
        if map.len() >= MAX_ENTRIES {
            return Err(Full);
        }
    }
    map.insert(id.to_owned(), until);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_used_once_until_it_expires() {
        let s = Store::memory();
        assert!(s.first_use("c1", 100, 10).unwrap());
        assert!(!s.first_use("c1", 100, 20).unwrap());
        assert!(s.first_use("c1", 200, 100).unwrap());
        s.revoke("f1", 50, 10);
        assert!(s.is_revoked("f1", 40));
        assert!(!s.is_revoked("f1", 50));
    }
}
