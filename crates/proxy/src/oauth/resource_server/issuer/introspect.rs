//! Opaque tokens asked of the issuer (RFC 7662). What is kept is the
//! provider's answer, keyed by everything that answer depends on: the token
//! (its SHA-256, never the token), the introspection endpoint and the
//! client that asked; each endpoint holds a kept answer to its own policy
//! (issuer, audience, expiry, scopes) at every use, so an answer got for
//! one endpoint never stands as another's verdict. The calls to the
//! provider are bounded per issuer, in rate and at once: a flood of junk
//! tokens costs the provider at most `calls_per_minute` calls a minute.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::oauth::resource_server::answer::Outcome;
use mcp_ui_identity::rate::Bucket;
use mcp_ui_model::config::Introspection;

/// An active answer is kept at most this long (and never past the token's
/// expiry), so a token revoked at the provider is refused within it; any
/// other answer for this long.
const ACTIVE_FOR: Duration = Duration::from_secs(300);
const INACTIVE_FOR: Duration = Duration::from_secs(5);
/// Most answers kept at once.
const MAX_KEPT: usize = 10_000;
/// How long a call waits for a place among those in progress before the
/// token is answered 503 (to try again).
const PLACE_WAIT: Duration = Duration::from_secs(5);
/// What a caller is told to wait when no place came free in time.
const BUSY_RETRY: Duration = Duration::from_secs(1);

/// One issuer's kept answers and the bounds on its calls.
pub(crate) struct Introspected {
    kept: Mutex<HashMap<[u8; 32], Kept>>,
    per_minute: u32,
    bucket: Mutex<Bucket>,
    places: tokio::sync::Semaphore,
}

/// An answer of the provider, and until when it is used.
struct Kept {
    answer: Arc<Value>,
    until: Instant,
}

/// The bounds on one issuer's introspection calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub per_minute: u32,
    pub at_once: u32,
}

impl Default for Bounds {
    fn default() -> Self {
        use mcp_ui_model::config::auth::{
            INTROSPECTION_CALLS_PER_MINUTE, INTROSPECTION_MAX_CONCURRENT_CALLS,
        };
        Bounds {
            per_minute: INTROSPECTION_CALLS_PER_MINUTE,
            at_once: INTROSPECTION_MAX_CONCURRENT_CALLS,
        }
    }
}

impl Bounds {
    /// The bounds `with` sets.
    pub fn of(with: &Introspection) -> Bounds {
        Bounds {
            per_minute: with.calls_per_minute.max(1),
            at_once: with.max_concurrent_calls.max(1),
        }
    }
}

impl Introspected {
    pub(super) fn new(bounds: Bounds) -> Introspected {
        Introspected {
            kept: Mutex::new(HashMap::new()),
            per_minute: bounds.per_minute,
            bucket: Mutex::new(Bucket::full(bounds.per_minute, clock())),
            places: tokio::sync::Semaphore::new(bounds.at_once as usize),
        }
    }

    fn get(&self, key: &[u8; 32]) -> Option<Arc<Value>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(key)
            .filter(|k| Instant::now() < k.until)
            .map(|k| k.answer.clone())
    }

    fn keep(&self, key: [u8; 32], answer: Arc<Value>) {
        let keep = keep_for(&answer, mcp_ui_model::clock::unix_secs());
        if keep.is_zero() {
            return;
        }
        let at = Instant::now();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= MAX_KEPT {
            kept.retain(|_, k| k.until > at);
        }
        // Still full of live answers: this one is asked again next time.
        if kept.len() < MAX_KEPT {
            kept.insert(
                key,
                Kept {
                    answer,
                    until: at + keep,
                },
            );
        }
    }

    /// A place among the calls in progress and one of the minute's calls,
    /// or the 503 that says when to try again.
    async fn call(&self, issuer: &str) -> Result<tokio::sync::SemaphorePermit<'_>, Outcome> {
        let Ok(Ok(place)) = tokio::time::timeout(PLACE_WAIT, self.places.acquire()).await else {
            return Err(Outcome::Throttled(
                format!(
                    "{issuer} is asked about as many tokens at once as auth.introspection.max_concurrent_calls allows"
                ),
                BUSY_RETRY,
            ));
        };
        let mut bucket = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
        match bucket.take(self.per_minute, clock()) {
            Ok(()) => Ok(place),
            Err(wait) => Err(Outcome::Throttled(
                format!(
                    "{issuer} was asked about {} tokens this minute (auth.introspection.calls_per_minute)",
                    self.per_minute
                ),
                wait,
            )),
        }
    }
}

/// The time the minute's calls are counted by (tokio's, which a test can
/// pause and move on).
fn clock() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// How long `answer` is used, given at `now` (seconds since the epoch).
fn keep_for(answer: &Value, now: u64) -> Duration {
    if answer.get("active") != Some(&Value::Bool(true)) {
        return INACTIVE_FOR;
    }
    let left = answer
        .get("exp")
        .and_then(Value::as_u64)
        .map_or(ACTIVE_FOR, |exp| {
            Duration::from_secs(exp.saturating_sub(now))
        });
    left.min(ACTIVE_FOR)
}

/// What an answer is kept by: the token, the endpoint asked (`None`: the
/// one the issuer's metadata names, fixed once found) and the client that
/// asked, secret included (a client the provider refuses is given nothing
/// another client was). Each part length-prefixed.
pub(super) fn key_of(token: &str, with: &Introspection) -> [u8; 32] {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    let endpoint = with.endpoint.as_deref().unwrap_or("");
    for part in [token, endpoint, &with.client_id, &with.client_secret] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

impl Introspected {
    /// The provider's answer about the token keyed `key`: the one kept, or
    /// what `ask` gets from the provider (within the issuer's bounds), kept.
    pub(super) async fn answer<F, Fut>(
        &self,
        issuer: &str,
        key: [u8; 32],
        ask: F,
    ) -> Result<Arc<Value>, Outcome>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Value, Outcome>>,
    {
        if let Some(answer) = self.get(&key) {
            return Ok(answer);
        }
        let _place = self.call(issuer).await?;
        // Answered while this call waited for its place.
        if let Some(answer) = self.get(&key) {
            return Ok(answer);
        }
        let answer = Arc::new(ask().await?);
        self.keep(key, answer.clone());
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(endpoint: Option<&str>, client: &str, secret: &str) -> Introspection {
        Introspection {
            client_id: client.into(),
            client_secret: secret.into(),
            endpoint: endpoint.map(str::to_owned),
            calls_per_minute: 2,
            max_concurrent_calls: 1,
        }
    }

    #[test]
    fn an_answer_is_kept_by_the_token_the_endpoint_and_the_client() {
        let base = with(None, "gw", "s");
        let k = key_of("t", &base);
        assert_eq!(k, key_of("t", &base.clone()));
        for other in [
            key_of("u", &base),
            key_of("t", &with(Some("https://idp/introspect"), "gw", "s")),
            key_of("t", &with(None, "other", "s")),
            key_of("t", &with(None, "gw", "wrong")),
            // The parts cannot run into one another.
            key_of("t", &with(None, "g", "ws")),
        ] {
            assert_ne!(k, other);
        }
    }

    #[test]
    fn active_answers_are_kept_until_expiry_or_five_minutes() {
        let at = 1_000_000;
        let active = |exp: Option<u64>| match exp {
            Some(e) => serde_json::json!({"active": true, "exp": e}),
            None => serde_json::json!({"active": true}),
        };
        assert_eq!(keep_for(&active(None), at), ACTIVE_FOR);
        assert_eq!(
            keep_for(&active(Some(at + 60)), at),
            Duration::from_secs(60)
        );
        assert_eq!(keep_for(&active(Some(at + 3600)), at), ACTIVE_FOR);
        assert_eq!(keep_for(&active(Some(at - 1)), at), Duration::ZERO);
        for other in [
            serde_json::json!({"active": false}),
            serde_json::json!({"active": "true"}),
            serde_json::json!([]),
        ] {
            assert_eq!(keep_for(&other, at), INACTIVE_FOR, "{other}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn calls_are_bounded_in_rate_and_at_once() {
        let i = Introspected::new(Bounds {
            per_minute: 2,
            at_once: 1,
        });
        let first = i.call("idp").await.ok().expect("a place");
        // The one place is taken: the next waits, then is told to retry.
        match i.call("idp").await {
            Err(Outcome::Throttled(why, retry)) => {
                assert!(why.contains("max_concurrent_calls"), "{why}");
                assert_eq!(retry, BUSY_RETRY);
            }
            _ => panic!("a second call at once"),
        }
        drop(first);
        drop(
            i.call("idp")
                .await
                .ok()
                .expect("the second call of the minute"),
        );
        match i.call("idp").await {
            Err(Outcome::Throttled(why, retry)) => {
                assert!(why.contains("calls_per_minute"), "{why}");
                // A call every 30 s, and 5 s went by waiting for the place.
                assert!(retry > Duration::from_secs(20), "{retry:?}");
            }
            _ => panic!("a third call in the minute"),
        }
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(i.call("idp").await.is_ok(), "one more after half a minute");
    }
}
