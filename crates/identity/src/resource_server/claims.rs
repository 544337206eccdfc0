//! The rules a token's claims are held to, whether they come in a JWT or
//! in an introspection answer.

use serde_json::{Map, Value};

use crate::{Policy, Rejection, Verified};

/// The caller whose held claims are `claims`: its subject, scopes, expiry
/// and client, refused when it names no subject or lacks a scope every
/// request needs.
pub(crate) fn caller(claims: &Map<String, Value>, policy: &Policy) -> Result<Verified, Rejection> {
    let subject = subject_of(claims)
        .ok_or_else(|| Rejection::Invalid("the token names no subject".into()))?;
    let verified = Verified {
        issuer: policy.issuer.clone(),
        subject,
        scopes: crate::scopes_of(claims),
        expires_at: claims.get("exp").and_then(Value::as_u64),
        client_id: claims
            .get("client_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        claims: claims.clone(),
    };
    required(verified, policy)
}

/// `verified`, when it has every scope the policy requires of all requests.
pub(crate) fn required(verified: Verified, policy: &Policy) -> Result<Verified, Rejection> {
    let missing = verified.missing(&policy.required_scopes);
    match missing.is_empty() {
        true => Ok(verified),
        false => Err(Rejection::InsufficientScope(
            missing.into_iter().map(str::to_owned).collect(),
        )),
    }
}

/// Whether `aud` (a string or an array of them) names one of the policy's
/// audiences. A token without one is for no resource in particular: refused.
pub(crate) fn audience_matches(aud: Option<&Value>, policy: &Policy) -> bool {
    let ours = |a: &str| policy.audiences.iter().any(|x| x == a);
    match aud {
        Some(Value::String(a)) => ours(a),
        Some(Value::Array(all)) => all.iter().filter_map(Value::as_str).any(ours),
        _ => false,
    }
}

/// `exp` (required when `exp_required`), `nbf` and `iat` against `now`,
/// each with the policy's leeway.
pub(crate) fn check_times(
    claims: &Map<String, Value>,
    policy: &Policy,
    now: u64,
    exp_required: bool,
) -> Result<(), Rejection> {
    let leeway = policy.leeway_secs;
    let time = |name: &str| -> Result<Option<u64>, Rejection> {
        match claims.get(name) {
            None => Ok(None),
            Some(v) => number_of(v)
                .map(Some)
                .ok_or_else(|| Rejection::Invalid(format!("the token's `{name}` is not a time"))),
        }
    };
    match time("exp")? {
        Some(exp) if exp.saturating_add(leeway) <= now => {
            return Err(Rejection::Invalid("the token has expired".into()));
        }
        None if exp_required => {
            return Err(Rejection::Invalid("the token has no expiry (`exp`)".into()));
        }
        _ => {}
    }
    if let Some(nbf) = time("nbf")?
        && nbf > now.saturating_add(leeway)
    {
        return Err(Rejection::Invalid(
            "the token is not valid yet (`nbf`)".into(),
        ));
    }
    if let Some(iat) = time("iat")?
        && iat > now.saturating_add(leeway)
    {
        return Err(Rejection::Invalid(
            "the token is issued in the future (`iat`)".into(),
        ));
    }
    Ok(())
}

/// A NumericDate (RFC 7519 §2): seconds, possibly with a fraction, never
/// negative.
fn number_of(v: &Value) -> Option<u64> {
    match v.as_u64() {
        Some(n) => Some(n),
        None => v
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(|f| f as u64),
    }
}

/// `sub`, else the `client_id` of a client acting for itself.
pub(crate) fn subject_of(claims: &Map<String, Value>) -> Option<String> {
    claims
        .get("sub")
        .or_else(|| claims.get("client_id"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}
