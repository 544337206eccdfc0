//! One issuer, for the resource server: its keys
//! ([`crate::oauth::keys`]); JWTs whose signature verified kept
//! (`verified`); opaque tokens introspected (RFC 7662, `introspect`: the
//! answers kept within their lifetime, the calls bounded).

mod introspect;
mod verified;

pub(super) use introspect::Bounds;

use serde_json::Value;

use super::access::Caller;
use super::answer::Outcome::{self, Refused, Unavailable};
use crate::oauth::fetch::{ClientAuth, Fetcher};
use crate::oauth::keys::{IssuerKeys, Unchecked};
use mcp_ui_identity::resource_server::{introspection, jwt};
use mcp_ui_identity::{JwkSet, Policy, Rejection, Verified};
use mcp_ui_model::config::Auth;

pub use crate::oauth::keys::REFETCH_EVERY;

/// What the gateway knows of one issuer.
pub(super) struct Issuer {
    issuer: String,
    keys: IssuerKeys,
    /// Introspection answers kept, and the bounds on the calls.
    introspected: introspect::Introspected,
    /// JWTs whose signature verified, kept.
    verified: verified::Verified,
}

impl Issuer {
    /// `issuer`, its introspection calls within `bounds`.
    pub(super) fn new(issuer: &str, bounds: Bounds) -> Issuer {
        Issuer::of(issuer, IssuerKeys::new(issuer), bounds)
    }

    /// An issuer whose key set is `keys`, never fetched.
    pub(super) fn with_keys(issuer: &str, keys: JwkSet, bounds: Bounds) -> Issuer {
        Issuer::of(issuer, IssuerKeys::fixed(issuer, keys), bounds)
    }

    fn of(issuer: &str, keys: IssuerKeys, bounds: Bounds) -> Issuer {
        Issuer {
            issuer: issuer.to_owned(),
            keys,
            introspected: introspect::Introspected::new(bounds),
            verified: verified::Verified::default(),
        }
    }

    /// The caller of the JWT `token` at an endpoint with `policy`: its
    /// signature verified and its caller made once per key set
    /// (`verified`), its claims judged at every use.
    pub(super) async fn verify_jwt(
        &self,
        fetcher: &Fetcher,
        token: &str,
        policy: &Policy,
    ) -> Result<Caller, Outcome> {
        let keys = self.keys.current(fetcher).await.map_err(Unavailable)?;
        let now = mcp_ui_model::clock::unix_secs();
        let key = verified::key_of(token);
        let (signed, caller) = match self.verified.get(&key, &keys, now) {
            Some(kept) => kept,
            None => {
                let (signed, keys) = self
                    .keys
                    .check(fetcher, keys, |set| jwt::signed(token, set, policy))
                    .await
                    .map_err(|e| match e {
                        Unchecked::Refused(r) => Outcome::from(r),
                        Unchecked::Unavailable(why) => Unavailable(why),
                    })?;
                let caller = jwt::caller_of(&signed).map(Caller::new);
                let kept = (std::sync::Arc::new(signed), caller);
                self.verified
                    .keep(key, token.len(), kept.clone(), &keys, now);
                kept
            }
        };
        jwt::judge(&signed, caller.as_ref().map(|c| &*c.verified), policy, now)
            .map_err(Outcome::from)?;
        caller.ok_or_else(|| Refused(Rejection::Invalid("the token names no subject".into())))
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
        introspection::verdict(&answer, policy, mcp_ui_model::clock::unix_secs())
            .map_err(Outcome::from)
    }

    /// The provider's answer about `token` (RFC 7662 §2.1), the gateway's
    /// client authenticated with HTTP Basic.
    async fn ask(
        &self,
        fetcher: &Fetcher,
        with: &mcp_ui_model::config::Introspection,
        token: &str,
    ) -> Result<Value, Outcome> {
        let endpoint = match &with.endpoint {
            Some(e) => mcp_ui_model::config::auth::issuer_url(e)
                .map_err(|why| Unavailable(format!("auth.introspection.endpoint {why}")))?,
            None => self
                .keys
                .found(fetcher)
                .await
                .map_err(Unavailable)?
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
