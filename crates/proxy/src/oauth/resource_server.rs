//! The gateway as an OAuth 2.1 resource server (`[auth]`): each request to a
//! protected mount or app brings a bearer token, checked before anything
//! reaches an upstream. The rules are [`mcp_ui_identity`]'s; this module
//! does their IO: the issuer's metadata found (RFC 8414, OpenID Connect
//! Discovery), its key set fetched and fetched again when a token names a
//! key it lacks (at most every [`REFETCH_EVERY`]: a rotation needs no
//! restart), opaque tokens introspected (RFC 7662, answers kept within
//! their lifetime), and the challenges that answer a refusal.
//!
//! Tokens are never logged or kept: a kept introspection answer is keyed
//! by the token's SHA-256, with the endpoint and client that asked.

//! - `access`: who a request is once admitted, and what it may reach;
//! - `issuer`: one issuer's metadata, keys and introspection answers;
//! - `answer`: the refusals, challenges and metadata documents.

mod access;
mod answer;
mod issuer;

pub(crate) use access::gate;
pub use access::{Access, Caller, Claimed};
pub use answer::{challenge_value, declared_scopes, metadata, refusal, refusal_for};
pub use issuer::REFETCH_EVERY;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http::Response;
use http::header::{self, HeaderMap, HeaderValue};

use crate::oauth::fetch::Fetcher;
use answer::Outcome;
use issuer::Issuer;
use mcp_ui_identity::resource_server::bearer;
use mcp_ui_identity::{Policy, Rejection};
use mcp_ui_model::config::Auth;
use mcp_ui_model::reply::Body;

/// The issuers the gateway's endpoints accept tokens from.
pub struct ResourceServer {
    fetcher: Fetcher,
    issuers: HashMap<String, Arc<Issuer>>,
    /// Each caller's requests at each endpoint (`requests_per_minute`).
    rates: std::sync::Mutex<mcp_ui_identity::rate::Buckets<u64>>,
    /// Each endpoint's policy, by its configured path: made at its first
    /// request, read with no lock after.
    policies: arc_swap::ArcSwap<HashMap<String, Arc<Policy>>>,
}

/// Most callers whose rate is kept at once; past it, those whose bucket is
/// full again are forgotten, else one (a forgotten caller starts full).
const MAX_RATED: usize = 65_536;

impl ResourceServer {
    /// For every issuer the mounts and apps accept (`auths`), with a client
    /// trusting each one's `ca_file`.
    ///
    /// `own`: the gateway's own issuer and key set, when it is an
    /// authorization server: its tokens are checked against those keys, as
    /// any issuer's are against what it publishes, with nothing fetched.
    pub fn new<'a>(
        connect_timeout: Duration,
        auths: impl Iterator<Item = &'a Auth>,
        own: Option<(String, mcp_ui_identity::JwkSet)>,
    ) -> Result<ResourceServer, Vec<String>> {
        let auths: Vec<&Auth> = auths.collect();
        // An issuer's introspection calls are bounded once, as its
        // endpoints say (`check` refuses endpoints that disagree).
        let bounds = |issuer: &str| {
            auths
                .iter()
                .filter(|a| a.issuer == issuer)
                .find_map(|a| a.introspection.as_ref())
                .map_or_else(issuer::Bounds::default, issuer::Bounds::of)
        };
        let mut issuers = HashMap::new();
        if let Some((issuer, keys)) = own {
            let own = Issuer::with_keys(&issuer, keys, bounds(&issuer));
            issuers.insert(issuer.clone(), Arc::new(own));
        }
        for a in auths.iter().copied() {
            if issuers.contains_key(&a.issuer) {
                continue;
            }
            let issuer = Issuer::new(&a.issuer, bounds(&a.issuer));
            issuers.insert(a.issuer.clone(), Arc::new(issuer));
        }
        let trusted = auths
            .iter()
            .filter_map(|a| Some((a.issuer.as_str(), a.ca_file.as_ref()?)));
        let fetcher = Fetcher::new(connect_timeout, trusted)?;
        Ok(ResourceServer {
            fetcher,
            issuers,
            rates: std::sync::Mutex::new(mcp_ui_identity::rate::Buckets::new(
                MAX_RATED,
                mcp_ui_identity::rate::WhenFull::ForgetOne,
            )),
            policies: arc_swap::ArcSwap::default(),
        })
    }

    /// The policy of the endpoint configured at `path`, which requires
    /// `auth` and whose tokens must name the audience `audience` gives:
    /// made once. Paths are the configuration's, never a request's, so
    /// the table holds one policy per endpoint.
    pub fn policy_for<E>(
        &self,
        path: &str,
        auth: &Auth,
        audience: impl FnOnce() -> Result<String, E>,
    ) -> Result<Arc<Policy>, E> {
        if let Some(p) = self.policies.load().get(path) {
            return Ok(p.clone());
        }
        let made = Arc::new(policy(auth, &audience()?));
        self.policies.rcu(|all| {
            let mut all = HashMap::clone(all);
            all.insert(path.to_owned(), made.clone());
            all
        });
        Ok(made)
    }

    /// Take `cost` of `caller`'s requests (a batch's, or one) to the
    /// endpoint at `path` (`None`: the callers without a token), at most
    /// `per_minute` a minute, all or none: `Err` with the 429 that refuses
    /// them.
    pub fn rate(
        &self,
        per_minute: u32,
        path: &str,
        caller: Option<u64>,
        cost: u32,
    ) -> Result<(), Box<Response<Body>>> {
        use mcp_ui_identity::rate::Bucket;
        if !Bucket::fits(cost, per_minute) {
            return Err(Box::new(answer::too_large(per_minute, cost)));
        }
        let key = mcp_ui_upstream::session::pool::digest([
            path.as_bytes(),
            &caller.unwrap_or(0).to_le_bytes(),
        ]);
        self.rates
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take(key, cost, per_minute, std::time::Instant::now())
            .map_err(|wait| Box::new(answer::too_many(per_minute, cost, wait)))
    }

    /// The caller of a request with `headers` to an endpoint that requires
    /// `auth`, with `policy` ([`Self::policy_for`]: its audience the
    /// endpoint's URL under `public_url`, or `auth.audience`, never made of
    /// the request); or the answer refusing it.
    pub async fn admit(
        &self,
        auth: &Auth,
        headers: &HeaderMap,
        policy: &Policy,
        metadata_url: &str,
    ) -> Result<Caller, Box<Response<Body>>> {
        let refuse = |r: Rejection| Box::new(refusal(auth, metadata_url, &r));
        let values: Vec<&[u8]> = headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .map(HeaderValue::as_bytes)
            .collect();
        let token = match bearer::token(&values) {
            Ok(Some(t)) => t,
            Ok(None) => return Err(refuse(Rejection::Missing)),
            Err(r) => return Err(refuse(r)),
        };
        let Some(issuer) = self.issuers.get(&auth.issuer) else {
            return Err(refuse(Rejection::Invalid("no issuer is configured".into())));
        };
        let verdict = match token.split('.').count() {
            3 => issuer.verify_jwt(&self.fetcher, token, policy).await,
            _ => issuer
                .introspect(&self.fetcher, auth, token, policy)
                .await
                .map(Caller::new),
        };
        match verdict {
            Ok(v) => Ok(v),
            Err(Outcome::Unavailable(why)) => {
                tracing::warn!(issuer = %auth.issuer, "a token could not be checked: {why}");
                Err(Box::new(answer::unavailable(
                    &why,
                    answer::UNAVAILABLE_RETRY,
                )))
            }
            Err(Outcome::Throttled(why, retry)) => {
                // A flood would flood the log too: said where asked.
                tracing::debug!(issuer = %auth.issuer, "a token was not checked: {why}");
                Err(Box::new(answer::unavailable(&why, retry)))
            }
            Err(Outcome::Refused(r)) => {
                tracing::debug!(issuer = %auth.issuer, status = r.status(), "token refused: {}", r.description().unwrap_or_default());
                Err(refuse(r))
            }
        }
    }
}

/// The policy of an endpoint requiring `auth`, whose tokens must name
/// `audience`.
fn policy(auth: &Auth, audience: &str) -> Policy {
    Policy {
        issuer: auth.issuer.clone(),
        audiences: vec![audience.to_owned()],
        algorithms: auth
            .algorithms
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect(),
        leeway_secs: auth.leeway_secs,
        required_scopes: auth.scopes.clone(),
    }
}
