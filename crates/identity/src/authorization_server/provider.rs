//! The identity provider's answer read as a subject: its ID token's claims
//! checked (OpenID Connect Core §3.1.3.7), or its user info.
//!
//! The ID token comes straight from the provider's token endpoint, over the
//! connection the gateway opened and (but on a loopback address) checked by
//! TLS, so its issuer is validated by TLS in place of its signature, as
//! §3.1.3.7 rule 6 allows; every claim is still checked.

use base64::Engine as _;
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;

/// What the ID token must say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect<'a> {
    pub issuer: &'a str,
    pub client_id: &'a str,
    /// The nonce the gateway sent with the authorization request.
    pub nonce: &'a str,
    pub now: u64,
    pub leeway_secs: u64,
}

/// Why the provider's ID token is refused. The provider's fault (the
/// upstream side of a sign-in), or an attacker's who slipped a token in:
/// the user's sign-in fails, and the gateway says why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdTokenError {
    #[error("the ID token is not a signed JWT")]
    NotAJwt,
    #[error("the ID token's claims are not JSON")]
    ClaimsNotJson,
    #[error("the ID token is from another issuer")]
    OtherIssuer,
    #[error("the ID token is for another client")]
    OtherClient,
    #[error("the ID token has several audiences and is not authorized for this client (`azp`)")]
    NotAuthorizedParty,
    #[error("the ID token has expired")]
    Expired,
    #[error("the ID token has no expiry")]
    NoExpiry,
    #[error("the ID token has no nonce")]
    NoNonce,
    #[error("the ID token's nonce is not the one sent")]
    OtherNonce,
}

/// The claims of ID token `id_token` (a JWS), read.
pub fn id_token_claims(id_token: &str) -> Result<Map<String, Value>, IdTokenError> {
    let mut parts = id_token.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(IdTokenError::NotAJwt);
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(IdTokenError::ClaimsNotJson)
}

/// `claims` checked: `iss` exactly, `aud` naming the gateway's client (and
/// `azp` it when there are several), not expired, and the nonce the gateway
/// sent, present (an ID token without one is refused).
pub fn check_id_token(
    claims: &Map<String, Value>,
    expect: &Expect<'_>,
) -> Result<(), IdTokenError> {
    if claims.get("iss").and_then(Value::as_str) != Some(expect.issuer) {
        return Err(IdTokenError::OtherIssuer);
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(all)) => all.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&expect.client_id) {
        return Err(IdTokenError::OtherClient);
    }
    if audiences.len() > 1 && claims.get("azp").and_then(Value::as_str) != Some(expect.client_id) {
        return Err(IdTokenError::NotAuthorizedParty);
    }
    match claims.get("exp").and_then(Value::as_u64) {
        Some(exp) if exp + expect.leeway_secs > expect.now => {}
        Some(_) => return Err(IdTokenError::Expired),
        None => return Err(IdTokenError::NoExpiry),
    }
    // OpenID Connect Core §3.1.3.7 rule 11: the nonce must be present and
    // the one sent; a missing one is never taken as an empty one.
    let Some(nonce) = claims.get("nonce").and_then(Value::as_str) else {
        return Err(IdTokenError::NoNonce);
    };
    if expect.nonce.is_empty() || !bool::from(nonce.as_bytes().ct_eq(expect.nonce.as_bytes())) {
        return Err(IdTokenError::OtherNonce);
    }
    Ok(())
}

/// The subject `claim` names in `claims` (an ID token's, or user info's):
/// a string, or a number written out (GitHub's `id`).
pub fn subject(claims: &Map<String, Value>, claim: &str) -> Option<String> {
    match claims.get(claim)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn token(claims: Value) -> String {
        let b = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        format!(
            "{}.{}.sig",
            b(br#"{"alg":"RS256"}"#),
            b(claims.to_string().as_bytes())
        )
    }

    #[test]
    fn an_id_token_must_be_the_providers_for_this_client_and_this_login() {
        let expect = Expect {
            issuer: "https://idp.example",
            client_id: "gw",
            nonce: "n1",
            now: 100,
            leeway_secs: 0,
        };
        let good = json!({"iss": "https://idp.example", "aud": "gw", "exp": 200, "nonce": "n1", "sub": "u1"});
        let claims = id_token_claims(&token(good.clone())).unwrap();
        assert_eq!(check_id_token(&claims, &expect), Ok(()));
        assert_eq!(subject(&claims, "sub").as_deref(), Some("u1"));
        let with = |k: &str, v: Value| {
            let mut c = good.as_object().unwrap().clone();
            c.insert(k.into(), v);
            check_id_token(&c, &expect)
        };
        assert!(with("iss", json!("https://evil.example")).is_err());
        assert!(with("aud", json!("other")).is_err());
        assert!(with("aud", json!(["gw", "other"])).is_err());
        assert!(with("exp", json!(50)).is_err());
        assert!(with("nonce", json!("n2")).is_err());
        assert!(id_token_claims("a.b").is_err());
        let mut no_nonce = good.as_object().unwrap().clone();
        no_nonce.remove("nonce");
        assert_eq!(
            check_id_token(&no_nonce, &expect).map_err(|e| e.to_string()),
            Err("the ID token has no nonce".into())
        );
        // Neither present nor sent is no match: a missing nonce never passes.
        let sent_none = Expect {
            nonce: "",
            ..expect
        };
        assert!(check_id_token(&no_nonce, &sent_none).is_err());
        assert!(with("nonce", json!("")).is_err());
        assert!(with("nonce", json!(1)).is_err());
        assert_eq!(
            subject(&json!({"id": 42}).as_object().unwrap().clone(), "id").as_deref(),
            Some("42")
        );
    }
}
