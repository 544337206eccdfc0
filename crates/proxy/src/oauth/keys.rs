//! An issuer's signing keys: its metadata found (RFC 8414, then OpenID
//! Connect Discovery), its key set fetched, fetched again when a token names
//! a key it lacks (at most every [`REFETCH_EVERY`]) and when it is older
//! than an hour. For the resource server's issuers and the authorization
//! server's enterprise issuers alike.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use serde_json::Value;
use url::Url;

use crate::oauth::fetch::{self, ClientAuth, Fetcher};
use mcp_ui_identity::{JwkSet, Rejection};

/// A token naming a key the set lacks fetches the set again at most this
/// often (a flood of made-up key ids cannot make the gateway hammer the
/// issuer).
pub const REFETCH_EVERY: Duration = Duration::from_secs(10);
/// A key set older than this is fetched again when next needed.
const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);

/// A key set, and when it was fetched; compared by identity (`Arc::ptr_eq`)
/// to know a set has not changed.
pub type Held = Arc<(JwkSet, Instant)>;

/// What the gateway knows of one issuer's keys.
pub struct IssuerKeys {
    issuer: String,
    /// Its metadata's endpoints, once found.
    found: ArcSwapOption<Found>,
    keys: ArcSwapOption<(JwkSet, Instant)>,
    /// When the metadata or the keys were last asked for.
    asked: Mutex<Option<Instant>>,
    /// One fetch at a time.
    fetching: tokio::sync::Mutex<()>,
    /// Its keys are given, never fetched (the gateway's own issuer).
    fixed: bool,
}

/// The endpoints of an issuer's metadata the gateway uses.
#[derive(Debug)]
pub struct Found {
    pub jwks_uri: Option<Url>,
    pub introspection_endpoint: Option<Url>,
}

/// Why a token could not be checked with an issuer's keys.
#[derive(Debug)]
pub enum Unchecked {
    /// The token is refused (by its header, its key or its signature).
    Refused(Rejection),
    /// The keys could not be had: nothing is said of the token.
    Unavailable(String),
}

impl IssuerKeys {
    /// `issuer`'s keys, found by its metadata when first needed.
    pub fn new(issuer: &str) -> IssuerKeys {
        IssuerKeys {
            issuer: issuer.to_owned(),
            found: ArcSwapOption::empty(),
            keys: ArcSwapOption::empty(),
            asked: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
            fixed: false,
        }
    }

    /// An issuer whose key set is `keys`, never fetched.
    pub fn fixed(issuer: &str, keys: JwkSet) -> IssuerKeys {
        let i = IssuerKeys::new(issuer);
        i.keys.store(Some(Arc::new((keys, Instant::now()))));
        IssuerKeys { fixed: true, ..i }
    }

    /// The key set to check a token with: the one in hand while it is
    /// fresh, else fetched now.
    pub(crate) async fn current(&self, fetcher: &Fetcher) -> Result<Held, String> {
        if self.fixed {
            return self.keys.load_full().ok_or_else(|| "no keys".to_owned());
        }
        let fresh = self
            .keys
            .load_full()
            .filter(|k| k.1.elapsed() < KEYS_MAX_AGE);
        match fresh {
            Some(k) => Ok(k),
            None => self.fetch_keys(fetcher, true).await,
        }
    }

    /// `check` of a token with the key set `keys` (from [`Self::current`]);
    /// when the token names a key the set lacks, the issuer may have rotated
    /// its keys: `check` again with the set fetched again (at most every
    /// [`REFETCH_EVERY`]). The set the verdict came from is returned with it.
    pub async fn check<T>(
        &self,
        fetcher: &Fetcher,
        keys: Held,
        check: impl Fn(&JwkSet) -> Result<T, Rejection>,
    ) -> Result<(T, Held), Unchecked> {
        match check(&keys.0) {
            Ok(t) => Ok((t, keys)),
            Err(Rejection::UnknownKey(kid)) if !self.fixed => {
                let keys = self
                    .fetch_keys(fetcher, false)
                    .await
                    .map_err(Unchecked::Unavailable)?;
                match check(&keys.0) {
                    Ok(t) => Ok((t, keys)),
                    Err(Rejection::UnknownKey(_)) => {
                        Err(Unchecked::Refused(Rejection::UnknownKey(kid)))
                    }
                    Err(other) => Err(Unchecked::Refused(other)),
                }
            }
            Err(other) => Err(Unchecked::Refused(other)),
        }
    }

    /// The key set, fetched now unless it was asked for within
    /// [`REFETCH_EVERY`] (then the one in hand). `first`: no key set may be
    /// in hand yet.
    async fn fetch_keys(&self, fetcher: &Fetcher, first: bool) -> Result<Held, String> {
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
            return Err(format!(
                "the key set of {} could not be fetched (tried less than {} s ago)",
                self.issuer,
                REFETCH_EVERY.as_secs()
            ));
        }
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        let found = self.found(fetcher).await?;
        let Some(uri) = &found.jwks_uri else {
            return Err(format!("{}'s metadata names no jwks_uri", self.issuer));
        };
        let doc = fetcher.get(&self.issuer, uri, ClientAuth::None).await?;
        let set: JwkSet = match serde::Deserialize::deserialize(&doc) {
            Ok(s) => s,
            Err(e) => {
                // Keys it cannot read (an algorithm it does not know) are
                // left out rather than the whole set.
                tracing::debug!(issuer = %self.issuer, "key set read key by key: {e}");
                lenient_keys(doc)
            }
        };
        tracing::info!(issuer = %self.issuer, keys = set.keys.len(), "fetched the issuer's signing keys");
        let k = Arc::new((set, Instant::now()));
        self.keys.store(Some(k.clone()));
        Ok(k)
    }

    /// The issuer's metadata (`oauth::fetch::Fetcher::discover`), found
    /// once.
    pub(crate) async fn found(&self, fetcher: &Fetcher) -> Result<Arc<Found>, String> {
        if let Some(f) = self.found.load_full() {
            return Ok(f);
        }
        let (url, doc) = fetcher
            .discover(&self.issuer, &self.issuer)
            .await
            .map_err(|e| e.to_string())?;
        let found = Arc::new(Found {
            jwks_uri: fetch::endpoint(&doc, "jwks_uri"),
            introspection_endpoint: fetch::endpoint(&doc, "introspection_endpoint"),
        });
        tracing::info!(issuer = %self.issuer, metadata = %url, "found the issuer's metadata");
        self.found.store(Some(found.clone()));
        Ok(found)
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
