//! An RFC 7662 introspection answer read as a verdict, with the same rules
//! as a JWT's claims where the answer carries them.

use serde_json::Value;

use super::claims;
use crate::{Policy, Rejection, Verified};

/// The verdict of the answer `answer` (the introspection endpoint's JSON)
/// at `now` (seconds since the epoch).
///
/// `active` must be `true` (§2.2). `iss`, `aud`, `exp` and `nbf` are
/// optional in an answer; where present they are held to `policy` as a
/// JWT's are (the issuer decides what it says: the answer comes from it, to
/// the gateway's own client).
pub fn verdict(answer: &Value, policy: &Policy, now: u64) -> Result<Verified, Rejection> {
    let claims = answer.as_object().ok_or_else(|| {
        Rejection::Invalid("the issuer's introspection answer is not an object".into())
    })?;
    if claims.get("active") != Some(&Value::Bool(true)) {
        return Err(Rejection::Invalid(
            "the token is not active (expired, revoked or unknown to the issuer)".into(),
        ));
    }
    if let Some(iss) = claims.get("iss")
        && iss.as_str() != Some(policy.issuer.as_str())
    {
        return Err(Rejection::Invalid(
            "the token is from another issuer".into(),
        ));
    }
    if claims.contains_key("aud") && !claims::audience_matches(claims.get("aud"), policy) {
        return Err(Rejection::Invalid(
            "the token is for another resource (its audience is not this one)".into(),
        ));
    }
    claims::check_times(claims, policy, now, false)?;
    claims::caller(claims, policy)
}
