//! JWT access tokens whose signature verified, kept so that a token shown
//! again (every call of a signed-in host carries the same one) is not
//! verified again: an RS256 or ES256 signature costs more than the rest of
//! a relayed call.
//!
//! What is kept is the token's [`Signed`] form (its algorithm and claims)
//! and the caller it names (made once: `jwt::caller_of`, and its digest),
//! keyed by the token's SHA-256 (never the token), with the key set it
//! verified against. A kept token counts only while that key set is still
//! the issuer's: once the set is fetched again (a rotation, a key removed)
//! every token is verified anew. Every use judges the kept claims against
//! the endpoint's own policy at that moment (`jwt::judge`: algorithms,
//! issuer, audience, lifetime, subject, scopes), so the cache only ever
//! saves the signature check and the making of the caller. Kept at most until the token's `exp`, and
//! bounded in entries and in the bytes of the tokens kept: when full of
//! live tokens, a new one is verified every time, never kept, and the
//! table is swept for expired ones at most once a second.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::oauth::resource_server::access::Caller;
use mcp_ui_identity::JwkSet;
use mcp_ui_identity::resource_server::jwt::Signed;

/// Most tokens kept per issuer.
pub(super) const MAX_KEPT: usize = 10_000;
/// Most bytes of tokens kept per issuer (their claims take less).
pub(super) const MAX_BYTES: usize = 8 << 20;
/// A token longer than this is never kept.
const MAX_TOKEN: usize = 8 << 10;

/// A key set as held by the issuer: the same `Arc` while it is the one in
/// force.
pub(super) type Keys = Arc<(JwkSet, std::time::Instant)>;

/// One issuer's kept tokens.
#[derive(Default)]
pub(super) struct Verified {
    kept: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    tokens: HashMap<[u8; 32], Kept, foldhash::fast::RandomState>,
    bytes: usize,
    /// When the full table was last swept (seconds since the epoch): at
    /// most once a second, so that callers past the bound do not each scan
    /// it under the lock every kept token's lookup takes.
    swept: u64,
}

/// A kept token: its signed form, and the caller it names (none without a
/// subject, which every use refuses).
pub(super) type Entry = (Arc<Signed>, Option<Caller>);

struct Kept {
    signed: Arc<Signed>,
    caller: Option<Caller>,
    /// The key set it verified against.
    keys: Keys,
    /// Its `exp` (seconds since the epoch): past it, it is dropped.
    until: u64,
    bytes: usize,
}

/// What a token is kept by: its SHA-256.
pub(super) fn key_of(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

impl Verified {
    /// The token keyed `key`, kept and verified against `keys` (the key set
    /// in force), at `now`.
    pub(super) fn get(&self, key: &[u8; 32], keys: &Keys, now: u64) -> Option<Entry> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.tokens
            .get(key)
            .filter(|k| Arc::ptr_eq(&k.keys, keys) && now < k.until)
            .map(|k| (k.signed.clone(), k.caller.clone()))
    }

    /// Keeps `signed` (the token keyed `key`, `len` bytes long), verified
    /// against `keys`, unless it has no `exp` in the future, is too long,
    /// or the table is full of live tokens.
    pub(super) fn keep(
        &self,
        key: [u8; 32],
        len: usize,
        (signed, caller): Entry,
        keys: &Keys,
        now: u64,
    ) {
        let Some(until) = signed.claims.get("exp").and_then(serde_json::Value::as_u64) else {
            return;
        };
        if until <= now || len > MAX_TOKEN {
            return;
        }
        let bytes = len + 64;
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let full = |t: &Table| t.tokens.len() >= MAX_KEPT || t.bytes + bytes > MAX_BYTES;
        if full(&kept) && kept.swept < now {
            // Expired tokens and tokens of a key set no longer in force go.
            let t = &mut *kept;
            t.tokens
                .retain(|_, k| now < k.until && Arc::ptr_eq(&k.keys, keys));
            t.bytes = t.tokens.values().map(|k| k.bytes).sum();
            t.swept = now;
        }
        if full(&kept) {
            return;
        }
        let old = kept.tokens.insert(
            key,
            Kept {
                signed,
                caller,
                keys: keys.clone(),
                until,
                bytes,
            },
        );
        kept.bytes += bytes;
        if let Some(old) = old {
            kept.bytes -= old.bytes;
        }
    }

    /// How many tokens are kept, and their bytes.
    #[cfg(test)]
    pub(super) fn size(&self) -> (usize, usize) {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        (kept.tokens.len(), kept.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys() -> Keys {
        Arc::new((JwkSet { keys: Vec::new() }, std::time::Instant::now()))
    }

    fn signed(exp: u64) -> Entry {
        let claims = json!({"iss": "i", "exp": exp}).as_object().unwrap().clone();
        let signed = Signed {
            alg: mcp_ui_identity::Algorithm::RS256,
            claims,
        };
        (Arc::new(signed), None)
    }

    #[test]
    fn a_token_counts_with_its_key_set_until_its_expiry() {
        let v = Verified::default();
        let (set, other) = (keys(), keys());
        let key = key_of("a.b.c");
        v.keep(key, 5, signed(200), &set, 100);
        assert!(v.get(&key, &set, 100).is_some());
        assert!(v.get(&key, &set, 199).is_some());
        // Past its exp, or once the issuer's key set is another: verified again.
        assert!(v.get(&key, &set, 200).is_none());
        assert!(v.get(&key, &other, 100).is_none());
        assert!(v.get(&key_of("a.b.d"), &set, 100).is_none());
        // Never kept: no exp, an exp already past, a token too long.
        let no_exp = (
            Arc::new(Signed {
                alg: mcp_ui_identity::Algorithm::RS256,
                claims: serde_json::Map::new(),
            }),
            None,
        );
        v.keep(key_of("x"), 1, no_exp, &set, 100);
        v.keep(key_of("y"), 1, signed(100), &set, 100);
        v.keep(key_of("z"), MAX_TOKEN + 1, signed(200), &set, 100);
        assert_eq!(v.size().0, 1);
    }

    #[test]
    fn the_table_is_bounded_in_tokens_and_bytes() {
        let v = Verified::default();
        let set = keys();
        for i in 0..MAX_KEPT + 10 {
            v.keep(key_of(&i.to_string()), 100, signed(200), &set, 100);
        }
        assert_eq!(v.size().0, MAX_KEPT);
        // Full of live tokens: a new one is not kept.
        assert!(v.get(&key_of(&MAX_KEPT.to_string()), &set, 100).is_none());
        // Once they expire (or their key set is gone), room again, found by
        // one sweep a second: a caller past the bound within the second
        // of a sweep does not sweep again.
        v.keep(key_of("late"), 100, signed(400), &set, 100);
        assert_eq!(v.size().0, MAX_KEPT, "swept within the same second");
        v.keep(key_of("late"), 100, signed(400), &set, 300);
        assert_eq!(v.size(), (1, 164));
        // Bytes: tokens of the longest kept size fill MAX_BYTES first.
        let v = Verified::default();
        for i in 0..MAX_KEPT {
            v.keep(key_of(&i.to_string()), MAX_TOKEN, signed(200), &set, 100);
        }
        let (n, bytes) = v.size();
        assert!(
            bytes <= MAX_BYTES && n == MAX_BYTES / (MAX_TOKEN + 64),
            "{n} {bytes}"
        );
    }
}
