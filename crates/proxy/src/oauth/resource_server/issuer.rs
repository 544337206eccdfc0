//! One issuer: its metadata found (RFC 8414, then OpenID Connect
//! Discovery), its key set fetched, and fetched again when a token names a
//! key it lacks; JWTs whose signature verified kept (`verified`); opaque tokens introspected (RFC 7662, `introspect`: the
//! answers kept within their lifetime, the calls bounded).

mod introspect;
mod verified;

pub(super) use introspect::Bounds;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use serde_json::Value;
use url::Url;

use super::answer::Outcome::{self, Refused, Unavailable};
use crate::config::Auth;
use crate::oauth::fetch::{self, ClientAuth, Fetcher};
use mcp_ui_identity::resource_server::{introspection, jwt};
use mcp_ui_identity::{JwkSet, Policy, Rejection, Verified};

/// A token naming a key the set lacks fetches the set again at most this
/// often (a flood of made-up key ids cannot make the gateway hammer the
/// issuer).
pub const REFETCH_EVERY: Duration = Duration::from_secs(10);
/// A key set older than this is fetched again when next needed.
const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);

/// What the gateway knows of one issuer.
pub(super) struct Issuer {
    issuer: String,
    /// Its metadata's endpoints, once found.
    found: ArcSwapOption<Found>,
    keys: ArcSwapOption<(JwkSet, Instant)>,
    /// When the metadata or the keys were last asked for.
    asked: Mutex<Option<Instant>>,
    /// One fetch at a time.
    fetching: tokio::sync::Mutex<()>,
    /// Introspection answers kept, and the bounds on the calls.
    introspected: introspect::Introspected,
    /// JWTs whose signature verified, kept.
    verified: verified::Verified,
    /// Its keys are given, never fetched (the gateway's own issuer).
    fixed: bool,
}

#[derive(Debug)]
struct Found {
    jwks_uri: Option<Url>,
    introspection_endpoint: Option<Url>,
}

impl Issuer {
    /// `issuer`, its introspection calls within `bounds`.
    pub(super) fn new(issuer: &str, bounds: Bounds) -> Issuer {
        Issuer {
            issuer: issuer.to_owned(),
            found: ArcSwapOption::empty(),
            keys: ArcSwapOption::empty(),
            asked: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
            introspected: introspect::Introspected::new(bounds),
            verified: verified::Verified::default(),
            fixed: false,
        }
    }

    /// An issuer whose key set is `keys`, never fetched.
    pub(super) fn with_keys(issuer: &str, keys: JwkSet, bounds: Bounds) -> Issuer {
        let i = Issuer::new(issuer, bounds);
        i.keys.store(Some(Arc::new((keys, Instant::now()))));
        Issuer { fixed: true, ..i }
    }

    /// The verdict on the JWT `token` at an endpoint with `policy`: its
    /// signature verified once per key set (`verified`), its claims judged
    /// at every use.
    pub(super) async fn verify_jwt(
        &self,
        fetcher: &Fetcher,
        token: &str,
        policy: &Policy,
    ) -> Result<Verified, Outcome> {
        let keys = if self.fixed {
            self.keys
                .load_full()
                .ok_or_else(|| Unavailable("no keys".into()))?
        } else {
            let fresh = self
                .keys
                .load_full()
                .filter(|k| k.1.elapsed() < KEYS_MAX_AGE);
            match fresh {
                Some(k) => k,
                None => self.fetch_keys(fetcher, true).await?,
            }
        };
        let now = crate::clock::unix_secs();
        let key = verified::key_of(token);
        if let Some(signed) = self.verified.get(&key, &keys, now) {
            return jwt::verdict(&signed, policy, now).map_err(Outcome::from);
        }
        let (signed, keys) = match jwt::signed(token, &keys.0, policy) {
            Ok(signed) => (signed, keys),
            // The issuer may have rotated its keys: fetch them again, at
            // most every REFETCH_EVERY.
            Err(Rejection::UnknownKey(kid)) if !self.fixed => {
                let keys = self.fetch_keys(fetcher, false).await?;
                match jwt::signed(token, &keys.0, policy) {
                    Ok(signed) => (signed, keys),
                    Err(Rejection::UnknownKey(_)) => {
                        return Err(Refused(Rejection::UnknownKey(kid)));
                    }
                    Err(other) => return Err(other.into()),
                }
            }
            Err(other) => return Err(other.into()),
        };
        let signed = Arc::new(signed);
        self.verified
            .keep(key, token.len(), signed.clone(), &keys, now);
        jwt::verdict(&signed, policy, now).map_err(Outcome::from)
    }

    /// The key set, fetched now unless it was asked for within
    /// [`REFETCH_EVERY`] (then the one in hand). `first`: no key set may be
    /// in hand yet.
    async fn fetch_keys(
        &self,
        fetcher: &Fetcher,
        first: bool,
    ) -> Result<Arc<(JwkSet, Instant)>, Outcome> {
        let _one = self.fetching.lock().await;
        let recent = self
            .asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() < REFETCH_EVERY);
        if let Some(k) = self.keys.load_full()
            && (recent || (first && k.1.elapsed() < KEYS_MAX_AGE))
        {
            return Ok(k);
        }
        if recent && self.keys.load().is_none() {
            return Err(Unavailable(format!(
                "the key set of {} could not be fetched (tried less than {} s ago)",
                self.issuer,
                REFETCH_EVERY.as_secs()
            )));
        }
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let found = self.found(fetcher).await?;
        let Some(uri) = &found.jwks_uri else {
            return Err(Unavailable(format!(
                "{}'s metadata names no jwks_uri",
                self.issuer
            )));
        };
        let doc = fetcher
            .get(&self.issuer, uri, ClientAuth::None)
            .await
            .map_err(Unavailable)?;
        let set: JwkSet = match serde::Deserialize::deserialize(&doc) {
            Ok(s) => s,
            Err(e) => {
                // Keys it cannot read (an algorithm it does not know) are
                // left out rather than the whole set.
                tracing::debug!(issuer = %self.issuer, "key set read key by key: {e}");
                return self.store(lenient_keys(doc));
            }
        };
        tracing::info!(issuer = %self.issuer, keys = set.keys.len(), "fetched the issuer's signing keys");
        self.store(set)
    }

    fn store(&self, set: JwkSet) -> Result<Arc<(JwkSet, Instant)>, Outcome> {
        let k = Arc::new((set, Instant::now()));
        self.keys.store(Some(k.clone()));
        Ok(k)
    }

    /// The issuer's metadata (`oauth::fetch::Fetcher::discover`), found
    /// once.
    async fn found(&self, fetcher: &Fetcher) -> Result<Arc<Found>, Outcome> {
        if let Some(f) = self.found.load_full() {
            return Ok(f);
        }
        let (url, doc) = fetcher
            .discover(&self.issuer, &self.issuer)
            .await
            .map_err(Unavailable)?;
        let found = Arc::new(Found {
            jwks_uri: fetch::endpoint(&doc, "jwks_uri"),
            introspection_endpoint: fetch::endpoint(&doc, "introspection_endpoint"),
        });
        tracing::info!(issuer = %self.issuer, metadata = %url, "found the issuer's metadata");
        self.found.store(Some(found.clone()));
        Ok(found)
    }

    /// The verdict on the opaque `token` at an endpoint requiring `auth`,
    /// whose policy is `policy`: the provider's answer, kept or asked
    /// (within the issuer's bounds), held to the endpoint's policy.
    pub(super) async fn introspect(
        &self,
        fetcher: &Fetcher,
        auth: &Auth,
        token: &str,
        policy: &Policy,
    ) -> Result<Verified, Outcome> {
        let Some(with) = &auth.introspection else {
            return Err(Refused(Rejection::Invalid(
                "the token is not a JWT, and opaque tokens are not accepted here (no introspection is configured)".into(),
            )));
        };
        let key = introspect::key_of(token, with);
        let answer = self
            .introspected
            .answer(&self.issuer, key, || self.ask(fetcher, with, token))
            .await?;
        introspection::verdict(&answer, policy, crate::clock::unix_secs()).map_err(Outcome::from)
    }

    /// The provider's answer about `token` (RFC 7662 §2.1), the gateway's
    /// client authenticated with HTTP Basic.
    async fn ask(
        &self,
        fetcher: &Fetcher,
        with: &crate::config::Introspection,
        token: &str,
    ) -> Result<Value, Outcome> {
        let endpoint = match &with.endpoint {
            Some(e) => mcp_ui_upstream::config::auth::issuer_url(e)
                .map_err(|why| Unavailable(format!("auth.introspection.endpoint {why}")))?,
            None => self
                .found(fetcher)
                .await?
                .introspection_endpoint
                .clone()
                .ok_or_else(|| {
                    Unavailable(format!(
                        "{}'s metadata names no introspection_endpoint",
                        self.issuer
                    ))
                })?,
        };
        let form = [("token", token), ("token_type_hint", "access_token")];
        let client = ClientAuth::Basic {
            id: &with.client_id,
            secret: &with.client_secret,
        };
        fetcher
            .post_form(&self.issuer, &endpoint, &form, client)
            .await
            .map_err(Unavailable)
    }
}

/// The keys of the key set `doc` that can be read, the others left out (an
/// algorithm the gateway does not know).
fn lenient_keys(doc: Value) -> JwkSet {
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .filter_map(|k| serde_json::from_value(k.clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    JwkSet { keys }
}
