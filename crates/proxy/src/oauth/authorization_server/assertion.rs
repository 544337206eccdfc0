//! Enterprise-managed authorization: the JWT bearer grant (RFC 7523 §2.1)
//! with an identity assertion (ID-JAG) of an enterprise issuer the operator
//! trusts (`[[authorization_server.enterprise_issuers]]`). The rules are
//! [`mcp_ui_identity::authorization_server::assertion`]'s; this module
//! finds the issuer's keys ([`crate::oauth::keys`]), remembers each
//! assertion's `jti` as redeemed (the store of codes: a second use is
//! refused, on every replica with Redis) and issues the access token, for
//! the endpoint the assertion names, with no refresh token.
//!
//! The issuer is read from the assertion before its signature is checked,
//! only to choose whose keys check it: an issuer not configured is refused
//! before anything is fetched, so an assertion cannot make the gateway
//! fetch from a place of its choosing.

use serde_json::Value;

use super::clients::Known;
use super::enterprise::Trusted;
use super::grant::{Grant, Refused, issue};
use super::state::AuthorizationServer;
use crate::oauth::keys::Unchecked;
use mcp_ui_identity::authorization_server::OAuthError;
use mcp_ui_identity::authorization_server::assertion::{self as rules, Assertion, Trust};
use mcp_ui_identity::authorization_server::authorize::Resource;
use mcp_ui_identity::authorization_server::client::AuthMethod;
use mcp_ui_identity::authorization_server::params::Params;
use mcp_ui_identity::authorization_server::token::Presented;
use mcp_ui_identity::resource_server::DEFAULT_ALGORITHMS;

/// Clock skew tolerated on an assertion's times.
const LEEWAY_SECS: u64 = 30;

fn grant(why: impl Into<String>) -> OAuthError {
    OAuthError::new("invalid_grant", why)
}

/// The token answer for the assertion in `form`, redeemed by the client
/// `presented` (authenticated as `client`), for one of `resources`.
pub(super) async fn redeem(
    a: &AuthorizationServer,
    form: &Params,
    presented: &Presented,
    client: &Known,
    resources: &[Resource],
    now: u64,
) -> Result<Value, Refused> {
    let Some(assertion) = form.one("assertion")? else {
        return Err(OAuthError::request("`assertion` is missing").into());
    };
    // An identity assertion is a bearer credential bound to a client id; a
    // public client's id proves nothing of who presents it.
    if presented.method == AuthMethod::None || client.secret.is_none() {
        return Err(OAuthError::new(
            "unauthorized_client",
            "identity assertions are redeemed by confidential clients (authenticated with their secret)",
        )
        .into());
    }
    let trusted = trusted_issuer(a, assertion)?;
    let config = &trusted.config;
    let trust = Trust {
        issuer: &config.issuer,
        clients: &config.clients,
        subject_claim: &config.subject_claim,
        max_lifetime_secs: config.max_lifetime_secs,
        leeway_secs: LEEWAY_SECS,
        algorithms: &DEFAULT_ALGORITHMS,
    };
    if !trust.admits(&presented.client_id) {
        return Err(OAuthError::new(
            "unauthorized_client",
            "this client may not redeem assertions of this issuer",
        )
        .into());
    }
    let claims = signed(a, trusted, assertion, &trust).await?;
    let asserted = rules::judge(&claims, &trust, &presented.client_id, a.issuer(), now)?;
    let resource = resources
        .iter()
        .find(|r| mcp_ui_identity::urls::names_resource(&asserted.resource, &r.url))
        .ok_or_else(|| {
            OAuthError::new(
                "invalid_target",
                format!(
                    "the assertion's resource {:?} is not an endpoint this gateway protects",
                    asserted.resource
                ),
            )
        })?;
    mcp_ui_identity::authorization_server::token::same_resource(form, &resource.url)?;
    let scopes = rules::grant_scopes(
        form.one("scope")?,
        &asserted,
        &resource.offered,
        &resource.default,
    )?;
    first_use(a, &config.issuer, &asserted, now).await?;
    Ok(issue(
        a,
        Grant {
            client_id: &presented.client_id,
            subject: &asserted.subject,
            resource: &resource.url,
            scopes: &scopes,
            granted: &scopes,
            auth_time: asserted.auth_time,
            family: "",
            generation: 0,
            upstream: None,
            refresh: false,
            by: "jwt-bearer",
        },
        now,
    )?)
}

/// The trusted issuer the assertion names, read before its signature is
/// checked only to choose whose keys check it; one not configured is
/// refused before anything is fetched.
fn trusted_issuer<'a>(a: &'a AuthorizationServer, assertion: &str) -> Result<&'a Trusted, Refused> {
    let named = rules::named_issuer(assertion)?;
    let Some(trusted) = a
        .enterprise
        .trusted
        .iter()
        .find(|t| t.config.issuer == named)
    else {
        return Err(grant("the assertion's issuer is not one this server trusts").into());
    };
    Ok(trusted)
}

/// Remember the assertion's `jti` as redeemed until it expires; refused
/// when it already was.
async fn first_use(
    a: &AuthorizationServer,
    issuer: &str,
    asserted: &Assertion,
    now: u64,
) -> Result<(), Refused> {
    let used = format!(
        "jag:{}:{}",
        super::sealed::digest(issuer),
        super::sealed::digest(&asserted.jti)
    );
    if !a
        .store
        .first_use(&used, asserted.expires_at + LEEWAY_SECS, now)
        .await?
    {
        tracing::warn!(issuer = %issuer, "an identity assertion was presented twice");
        return Err(grant("the assertion was already used").into());
    }
    Ok(())
}

/// The assertion's claims, its signature checked with the trusted issuer's
/// keys (fetched again once when it names a key they lack).
async fn signed(
    a: &AuthorizationServer,
    trusted: &Trusted,
    assertion: &str,
    trust: &Trust<'_>,
) -> Result<serde_json::Map<String, Value>, OAuthError> {
    let unavailable = |why: String| {
        tracing::warn!(issuer = %trusted.config.issuer, "an enterprise issuer's keys could not be had: {why}");
        OAuthError::new(
            "temporarily_unavailable",
            "the assertion's issuer's keys cannot be fetched now; try again",
        )
    };
    let keys = trusted
        .keys
        .current(&a.enterprise.fetcher)
        .await
        .map_err(unavailable)?;
    match trusted
        .keys
        .check(&a.enterprise.fetcher, keys, |set| {
            rules::signed(assertion, set, trust)
        })
        .await
    {
        Ok((claims, _)) => Ok(claims),
        Err(Unchecked::Refused(r)) => Err(rules::refusal(r)),
        Err(Unchecked::Unavailable(why)) => Err(unavailable(why)),
    }
}
