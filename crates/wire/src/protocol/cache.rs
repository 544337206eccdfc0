//! The freshness a 2026-07-28 listing or read announces (SEP-2549): how
//! long a client may reuse it (`ttlMs`) and with whom (`cacheScope`). Pure.

use serde::{Deserialize, Serialize};

/// Who may reuse a cached answer: anyone (`public`), or only the same
/// authorization context (`private`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    Public,
    #[default]
    Private,
}

impl CacheScope {
    /// As written on the wire and in the configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// `ttlMs` and `cacheScope`. The default (`0`, `private`) is right for a
/// server the gateway knows nothing about: its listings may change at any
/// moment, and may differ by who asks (the gateway forwards the caller's
/// credentials), so nothing is reused and nothing is shared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Hints {
    pub ttl_ms: u64,
    pub scope: CacheScope,
}

impl Hints {
    /// What an answer made of two answers (an app's, of its members') may
    /// announce: the shorter life, and `private` unless both are public.
    pub fn strictest(self, other: Hints) -> Hints {
        Hints {
            ttl_ms: self.ttl_ms.min(other.ttl_ms),
            scope: match (self.scope, other.scope) {
                (CacheScope::Public, CacheScope::Public) => CacheScope::Public,
                _ => CacheScope::Private,
            },
        }
    }
}

/// The longest `ttlMs` the gateway announces (a day, the longest clients
/// keep an answer).
pub const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_strictest_of_two_is_the_shorter_life_and_private_unless_both_are_public() {
        let public = |ttl_ms| Hints {
            ttl_ms,
            scope: CacheScope::Public,
        };
        let private = |ttl_ms| Hints {
            ttl_ms,
            scope: CacheScope::Private,
        };
        assert_eq!(public(5_000).strictest(public(60_000)), public(5_000));
        assert_eq!(public(5_000).strictest(private(60_000)), private(5_000));
        assert_eq!(private(0).strictest(public(60_000)), private(0));
    }
}
