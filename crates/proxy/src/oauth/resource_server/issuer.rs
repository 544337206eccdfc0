//! One issuer: its metadata found (RFC 8414, then OpenID Connect
//! Discovery), its key set fetched, and fetched again when a token names a
//! key it lacks; opaque tokens introspected (RFC 7662, `introspect`: the
//! answers kept within their lifetime, the calls bounded).

mod introspect;

pub(super) use introspect::Bounds;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use http::Request;
use http::header::{self, HeaderValue};
use http_body_util::{BodyExt, Full, Limited};
use serde_json::Value;

use crate::upstream::client::{Client, send};
use mcp_ui_identity::resource_server::jwt;
use mcp_ui_identity::{JwkSet, Policy, Rejection, Verified};

/// A token naming a key the set lacks fetches the set again at most this
/// often (a flood of made-up key ids cannot make the gateway hammer the
/// issuer).
pub const REFETCH_EVERY: Duration = Duration::from_secs(10);
/// A key set older than this is fetched again when next needed.
const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);
/// Each fetch from the issuer is bounded in time and size.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
const FETCH_MAX_BYTES: usize = 1024 * 1024;

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
    /// Its keys are given, never fetched (the gateway's own issuer).
    fixed: bool,
}

#[derive(Debug)]
struct Found {
    jwks_uri: Option<String>,
    introspection_endpoint: Option<String>,
}

/// The name the issuer's requests go by in the HTTP client (its TLS
/// settings, its errors).
pub(crate) fn client_name(issuer: &str) -> String {
    format!("auth:{issuer}")
}

/// Why a token has no verdict yet, or its refusal.
pub(super) enum Outcome {
    Refused(Rejection),
    /// The issuer could not be asked (its keys, its introspection).
    Unavailable(String),
    /// The issuer is asked as often as the gateway may ask it: why, and
    /// when to try again.
    Throttled(String, Duration),
}
use Outcome::{Refused, Unavailable};

impl From<Rejection> for Outcome {
    fn from(r: Rejection) -> Self {
        Refused(r)
    }
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
            fixed: false,
        }
    }

    /// An issuer whose key set is `keys`, never fetched.
    pub(super) fn with_keys(issuer: &str, keys: JwkSet, bounds: Bounds) -> Issuer {
        let i = Issuer::new(issuer, bounds);
        i.keys.store(Some(Arc::new((keys, Instant::now()))));
        Issuer { fixed: true, ..i }
    }

    pub(super) async fn verify_jwt(
        &self,
        client: &Client,
        token: &str,
        policy: &Policy,
    ) -> Result<Verified, Outcome> {
        if self.fixed {
            let keys = self
                .keys
                .load_full()
                .ok_or_else(|| Unavailable("no keys".into()))?;
            return jwt::verify(token, &keys.0, policy, crate::clock::unix_secs())
                .map_err(Outcome::from);
        }
        let fresh = self
            .keys
            .load_full()
            .filter(|k| k.1.elapsed() < KEYS_MAX_AGE);
        let keys = match fresh {
            Some(k) => k,
            None => self.fetch_keys(client, true).await?,
        };
        match jwt::verify(token, &keys.0, policy, crate::clock::unix_secs()) {
            // The issuer may have rotated its keys: fetch them again, at
            // most every REFETCH_EVERY.
            Err(Rejection::UnknownKey(kid)) => {
                let keys = self.fetch_keys(client, false).await?;
                match jwt::verify(token, &keys.0, policy, crate::clock::unix_secs()) {
                    Err(Rejection::UnknownKey(_)) => Err(Refused(Rejection::UnknownKey(kid))),
                    other => other.map_err(Outcome::from),
                }
            }
            other => other.map_err(Outcome::from),
        }
    }

    /// The key set, fetched now unless it was asked for within
    /// [`REFETCH_EVERY`] (then the one in hand). `first`: no key set may be
    /// in hand yet.
    async fn fetch_keys(
        &self,
        client: &Client,
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
        let found = self.found(client).await?;
        let Some(uri) = &found.jwks_uri else {
            return Err(Unavailable(format!(
                "{}'s metadata names no jwks_uri",
                self.issuer
            )));
        };
        let doc = fetch_json(client, &self.issuer, uri)
            .await
            .map_err(Unavailable)?;
        let set: JwkSet = match serde_json::from_value(doc) {
            Ok(s) => s,
            Err(e) => {
                // Keys it cannot read (an algorithm it does not know) are
                // left out rather than the whole set.
                tracing::debug!(issuer = %self.issuer, "key set read key by key: {e}");
                return self.store(lenient_keys(client, &self.issuer, uri).await?);
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

    /// The issuer's metadata: RFC 8414 (path inserted), then OpenID Connect
    /// Discovery (path inserted, then appended), the first that names this
    /// issuer (RFC 8414 §3.3).
    async fn found(&self, client: &Client) -> Result<Arc<Found>, Outcome> {
        if let Some(f) = self.found.load_full() {
            return Ok(f);
        }
        let mut tried = Vec::new();
        for url in metadata_urls(&self.issuer) {
            match fetch_json(client, &self.issuer, &url).await {
                Ok(doc)
                    if doc.get("issuer").and_then(Value::as_str) == Some(self.issuer.as_str()) =>
                {
                    let endpoint = |k: &str| {
                        doc.get(k)
                            .and_then(Value::as_str)
                            .filter(|u| mcp_ui_upstream::config::auth::issuer_url(u).is_ok())
                            .map(str::to_owned)
                    };
                    let found = Arc::new(Found {
                        jwks_uri: endpoint("jwks_uri"),
                        introspection_endpoint: endpoint("introspection_endpoint"),
                    });
                    tracing::info!(issuer = %self.issuer, metadata = %url, "found the issuer's metadata");
                    self.found.store(Some(found.clone()));
                    return Ok(found);
                }
                Ok(_) => tried.push(format!("{url}: names another issuer")),
                Err(why) => tried.push(why),
            }
        }
        Err(Unavailable(format!(
            "no metadata of issuer {} was found ({})",
            self.issuer,
            tried.join("; ")
        )))
    }
}

/// The metadata URLs of `issuer`, in the order they are tried.
pub(crate) fn metadata_urls(issuer: &str) -> Vec<String> {
    let Ok(uri) = issuer.parse::<http::Uri>() else {
        return Vec::new();
    };
    let origin = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("https"),
        uri.authority().map(|a| a.as_str()).unwrap_or_default()
    );
    let path = uri.path().trim_end_matches('/');
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        ),
    ]
    .into_iter()
    .fold(Vec::new(), |mut all, u| {
        if !all.contains(&u) {
            all.push(u);
        }
        all
    })
}

/// GET a JSON document from the issuer, bounded in time and size.
pub(crate) async fn fetch_json(client: &Client, issuer: &str, url: &str) -> Result<Value, String> {
    let uri: http::Uri = url.parse().map_err(|_| format!("{url}: not a URL"))?;
    let mut req = Request::new(Full::new(Bytes::new()));
    *req.uri_mut() = uri;
    req.headers_mut()
        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    read_json(client, issuer, url, req).await
}

pub(crate) async fn read_json(
    client: &Client,
    issuer: &str,
    url: &str,
    req: Request<Full<Bytes>>,
) -> Result<Value, String> {
    let resp = send(client, &client_name(issuer), req, FETCH_TIMEOUT)
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    let status = resp.status();
    let body = tokio::time::timeout(
        FETCH_TIMEOUT,
        Limited::new(resp.into_body(), FETCH_MAX_BYTES).collect(),
    )
    .await
    .map_err(|_| {
        format!(
            "{url}: no whole answer within {} s",
            FETCH_TIMEOUT.as_secs()
        )
    })?
    .map_err(|e| format!("{url}: {e}"))?
    .to_bytes();
    if !status.is_success() {
        return Err(format!("{url}: answered {status}"));
    }
    serde_json::from_slice(&body).map_err(|_| format!("{url}: not JSON"))
}

/// The key set at `uri`, the keys it cannot read left out.
async fn lenient_keys(client: &Client, issuer: &str, uri: &str) -> Result<JwkSet, Outcome> {
    let doc = fetch_json(client, issuer, uri).await.map_err(Unavailable)?;
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter()
                .filter_map(|k| serde_json::from_value(k.clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    Ok(JwkSet { keys })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_openid_put_it() {
        assert_eq!(
            metadata_urls("https://login.example.com"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server",
                "https://login.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("https://login.example.com/tenant/1/"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://login.example.com/.well-known/openid-configuration/tenant/1",
                "https://login.example.com/tenant/1/.well-known/openid-configuration",
            ]
        );
    }
}
