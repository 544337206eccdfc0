//! The Identity Assertion JWT Authorization Grant (ID-JAG,
//! draft-ietf-oauth-identity-assertion-authz-grant-04; the MCP
//! enterprise-managed authorization extension): an enterprise identity
//! provider the operator trusts asserts one user for one of the gateway's
//! endpoints and one client, and the client redeems the assertion at the
//! token endpoint as a JWT bearer grant (RFC 7523 §2.1,
//! `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`) for an access
//! token, with no browser step.
//!
//! The rules, with no IO and no clock: which trusted issuer an assertion
//! names (read before its signature is checked, only to choose the keys),
//! its header and signature ([`crate::resource_server::jwt::signed_as`],
//! `typ` exactly `oauth-id-jag+jwt`), then every claim:
//! - `iss` the trusted issuer's, exactly;
//! - `aud` the gateway's issuer as its sole audience (RFC 7523 §3, as
//!   draft-ietf-oauth-rfc7523bis tightens it);
//! - `client_id` the client that authenticated, and one the issuer may
//!   assert for;
//! - `exp` not past, `iat` not ahead, `nbf` reached (each within a leeway),
//!   and the assertion living no longer than the trusted issuer allows;
//! - `jti` present (the caller refuses a second use of it);
//! - `resource` present: the endpoint, which the caller checks is one it
//!   protects, and the issued token's audience;
//! - the subject: the trusted issuer's subject claim, a string.
//!
//! No refresh token is issued for it: the client asks the enterprise for a
//! new assertion, so revoking the user there ends the access.

use base64::Engine as _;
use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::JwkSet;
use serde_json::{Map, Value};

use super::OAuthError;
use crate::Rejection;
use crate::resource_server::jwt::{self, Typ};

/// The grant type a client redeems an assertion with (RFC 7523 §2.1).
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The authorization grant profile metadata names
/// (`authorization_grant_profiles_supported`).
pub const PROFILE: &str = "urn:ietf:params:oauth:grant-profile:id-jag";
/// The `typ` of an ID-JAG's header.
pub const TYP: &str = "oauth-id-jag+jwt";
/// The longest `jti` and subject accepted.
pub const MAX_CLAIM: usize = 512;

/// What the operator trusts an enterprise issuer with.
#[derive(Debug, Clone, Copy)]
pub struct Trust<'a> {
    /// Its issuer identifier, as its metadata names it.
    pub issuer: &'a str,
    /// The clients (their `client_id` here) it may assert users for; `*`
    /// for any (the assertion's `client_id` still binds it to one).
    pub clients: &'a [String],
    /// The claim that names the user (`sub`, or `email`, …).
    pub subject_claim: &'a str,
    /// The longest an assertion may live (`exp - iat`), in seconds.
    pub max_lifetime_secs: u64,
    /// Clock skew tolerated on `exp`, `iat` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// The signature algorithms accepted (never an HMAC, never `none`).
    pub algorithms: &'a [Algorithm],
}

impl Trust<'_> {
    /// Whether the issuer may assert users for `client_id`: one of its
    /// `clients`, or any client when they are `*`.
    pub fn admits(&self, client_id: &str) -> bool {
        self.clients.iter().any(|c| c == "*" || c == client_id)
    }
}

/// An assertion that passed every rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assertion {
    /// The user, by the trusted issuer's subject claim.
    pub subject: String,
    /// The endpoint asserted for (the `resource` claim, as written).
    pub resource: String,
    /// The scopes asserted (`scope`), if it names any.
    pub scopes: Option<Vec<String>>,
    /// Its id, unique for its issuer.
    pub jti: String,
    pub expires_at: u64,
    /// When the user authenticated (`auth_time`), else when it was issued.
    pub auth_time: u64,
}

fn grant(why: impl Into<String>) -> OAuthError {
    OAuthError::new("invalid_grant", why)
}

/// The issuer an assertion names, read without checking anything: only to
/// choose which trusted issuer's keys check it.
pub fn named_issuer(assertion: &str) -> Result<String, OAuthError> {
    let mut parts = assertion.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(grant("the assertion is not a signed JWT"));
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.as_bytes())
        .ok()
        .and_then(|b| serde_json::from_slice::<Map<String, Value>>(&b).ok())
        .and_then(|claims| Some(claims.get("iss")?.as_str()?.to_owned()))
        .ok_or_else(|| grant("the assertion's claims name no issuer (`iss`)"))
}

/// The assertion's header and signature checked against the trusted
/// issuer's `keys`: its claims, as signed. `Err(Rejection::UnknownKey)`
/// when it names a key the set lacks (the caller may fetch the set again).
pub fn signed(
    assertion: &str,
    keys: &JwkSet,
    trust: &Trust<'_>,
) -> Result<Map<String, Value>, Rejection> {
    jwt::signed_as(assertion, keys, Typ::Exactly(TYP), |alg| {
        trust.algorithms.contains(&alg)
    })
    .map(|s| s.claims)
}

/// Why a signature check refused an assertion, as the token endpoint says
/// it.
pub fn refusal(r: Rejection) -> OAuthError {
    match r {
        Rejection::Invalid(why) | Rejection::BadRequest(why) => {
            grant(why.replace("the token", "the assertion"))
        }
        Rejection::UnknownKey(kid) => grant(format!(
            "the assertion names a key (`{kid}`) its issuer does not publish"
        )),
        other => grant(format!("the assertion is refused ({other:?})")),
    }
}

/// The verdict on an assertion's signed `claims`, redeemed by the client
/// `client_id` (authenticated) at the authorization server `audience` (its
/// issuer), at `now`.
pub fn judge(
    claims: &Map<String, Value>,
    trust: &Trust<'_>,
    client_id: &str,
    audience: &str,
    now: u64,
) -> Result<Assertion, OAuthError> {
    check_parties(claims, trust, client_id, audience)?;
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    let (expires_at, issued_at) = times(claims, trust, now)?;
    let jti = match text("jti") {
        Some(j) if !j.is_empty() && j.len() <= MAX_CLAIM => j.to_owned(),
        Some(_) => return Err(grant("the assertion's `jti` is empty or too long")),
        None => return Err(grant("the assertion has no `jti`")),
    };
    let resource = match claims.get("resource") {
        Some(Value::String(r)) if !r.is_empty() => r.clone(),
        Some(_) => return Err(grant("the assertion's `resource` is not one URL")),
        None => return Err(grant("the assertion names no `resource`")),
    };
    // RFC 7523 §3: a JWT grant names its subject, whichever claim names the
    // user here.
    if !matches!(claims.get("sub"), Some(Value::String(s)) if !s.is_empty()) {
        return Err(grant("the assertion has no `sub`"));
    }
    let subject = match claims.get(trust.subject_claim) {
        Some(Value::String(s)) if !s.is_empty() && s.len() <= MAX_CLAIM => s.clone(),
        _ => {
            return Err(grant(format!(
                "the assertion's `{}` (the user) is missing or not a string",
                trust.subject_claim
            )));
        }
    };
    let scopes = match claims.get("scope") {
        None => None,
        Some(Value::String(s)) => Some(
            s.split(' ')
                .filter(|t| !t.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        Some(_) => return Err(grant("the assertion's `scope` is not a string")),
    };
    let auth_time = claims
        .get("auth_time")
        .and_then(Value::as_u64)
        .unwrap_or(issued_at);
    Ok(Assertion {
        subject,
        resource,
        scopes,
        jti,
        expires_at,
        auth_time,
    })
}

/// Who the assertion is between: from the trusted issuer, for this
/// authorization server alone, issued to the client redeeming it, which
/// the issuer's settings let redeem it.
fn check_parties(
    claims: &Map<String, Value>,
    trust: &Trust<'_>,
    client_id: &str,
    audience: &str,
) -> Result<(), OAuthError> {
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    if text("iss") != Some(trust.issuer) {
        return Err(grant("the assertion is not from the issuer it names"));
    }
    let sole_audience = match claims.get("aud") {
        Some(Value::String(a)) => a == audience,
        Some(Value::Array(all)) => matches!(all.as_slice(), [Value::String(a)] if a == audience),
        _ => false,
    };
    if !sole_audience {
        return Err(grant(format!(
            "the assertion is not for this authorization server (its `aud` must be {audience:?} alone)"
        )));
    }
    match text("client_id") {
        Some(c) if c == client_id => {}
        Some(_) => {
            return Err(grant(
                "the assertion was issued to another client than the one redeeming it",
            ));
        }
        None => return Err(grant("the assertion names no client (`client_id`)")),
    }
    if !trust.admits(client_id) {
        return Err(OAuthError::new(
            "unauthorized_client",
            "this client may not redeem assertions of this issuer",
        ));
    }
    Ok(())
}

/// `exp` and `iat`, each present and within the leeway of `now`, `nbf`
/// reached, and the assertion living no longer than allowed.
fn times(
    claims: &Map<String, Value>,
    trust: &Trust<'_>,
    now: u64,
) -> Result<(u64, u64), OAuthError> {
    let number = |name: &str| match claims.get(name) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
            .map(Some)
            .ok_or_else(|| grant(format!("the assertion's `{name}` is not a time"))),
    };
    let leeway = trust.leeway_secs;
    let exp = number("exp")?.ok_or_else(|| grant("the assertion has no `exp`"))?;
    let iat = number("iat")?.ok_or_else(|| grant("the assertion has no `iat`"))?;
    if exp.saturating_add(leeway) <= now {
        return Err(grant("the assertion has expired"));
    }
    if iat > now.saturating_add(leeway) {
        return Err(grant("the assertion is issued in the future (`iat`)"));
    }
    if let Some(nbf) = number("nbf")?
        && nbf > now.saturating_add(leeway)
    {
        return Err(grant("the assertion is not valid yet (`nbf`)"));
    }
    if exp.saturating_sub(iat) > trust.max_lifetime_secs {
        return Err(grant(format!(
            "the assertion lives longer than {} s (`exp` - `iat`): ask its issuer for a short-lived one",
            trust.max_lifetime_secs
        )));
    }
    Ok((exp, iat))
}

/// The scopes granted for an assertion: those `asked` (the token request's
/// `scope`, else the assertion's), each one the endpoint `offered` and, when
/// the assertion names scopes, one it names; none left is the endpoint's
/// `default` if the assertion allows them, else `invalid_scope`.
pub fn grant_scopes(
    asked: Option<&str>,
    assertion: &Assertion,
    offered: &[String],
    default: &[String],
) -> Result<Vec<String>, OAuthError> {
    let allowed = |s: &str| {
        offered.iter().any(|o| o == s)
            && assertion
                .scopes
                .as_ref()
                .is_none_or(|all| all.iter().any(|a| a == s))
    };
    let asserted = assertion.scopes.as_ref().map(|s| s.join(" "));
    let asked = asked.or(asserted.as_deref()).unwrap_or_default();
    let mut granted: Vec<String> = Vec::new();
    for s in asked.split(' ') {
        if allowed(s) && !granted.iter().any(|g| g == s) {
            granted.push(s.to_owned());
        }
    }
    if granted.is_empty() {
        if !default.iter().all(|s| allowed(s)) {
            return Err(OAuthError::new(
                "invalid_scope",
                "the assertion does not grant the scopes this endpoint needs",
            ));
        }
        granted = default.to_vec();
    }
    Ok(granted)
}

#[cfg(test)]
mod tests;
