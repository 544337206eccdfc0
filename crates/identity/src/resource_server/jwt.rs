//! A JWT access token checked as a resource server must (RFC 9068 §4,
//! RFC 8725): its header's algorithm among those accepted (never `none`,
//! never an HMAC), its key one the issuer publishes for signing, its
//! signature, then its claims: issuer, audience, lifetime, subject, and the
//! scopes every request needs.
//!
//! RFC 9068 asks for `typ` `at+jwt`; most issuers (Auth0, Entra, Okta,
//! Keycloak, Google) write `JWT` or nothing on their access tokens, so those
//! are accepted too, and any other `typ` (an ID token's `id_token+jwt`, a
//! logout token) is refused. An ID token with no `typ` is still refused by
//! its audience: it is issued to a client, not to this resource.

use base64::Engine as _;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{DecodingKey, Header, Validation};
use serde_json::{Map, Value};

use super::claims;
use crate::{Policy, Rejection, Verified};

/// The verdict on `token` (the bearer token's text), signed by a key of
/// `keys`, at `now` (seconds since the epoch).
pub fn verify(
    token: &str,
    keys: &JwkSet,
    policy: &Policy,
    now: u64,
) -> Result<Verified, Rejection> {
    verdict(&signed(token, keys, policy)?, policy, now)
}

/// A token whose header is an access token's and whose signature verified
/// with a key of the issuer's: what holds whatever endpoint it is shown to,
/// as long as that key is the issuer's. Nothing of its claims is judged yet.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The algorithm it was signed with.
    pub alg: jsonwebtoken::Algorithm,
    /// Its claims, as signed.
    pub claims: Map<String, Value>,
}

/// The verdict on a token whose signature verified, at an endpoint with
/// `policy`, at `now`: the endpoint's algorithms, then every claim.
pub fn verdict(signed: &Signed, policy: &Policy, now: u64) -> Result<Verified, Rejection> {
    let caller = caller_of(signed);
    judge(signed, caller.as_ref(), policy, now)?;
    caller.ok_or_else(no_subject)
}

/// The caller a token whose signature verified names, whatever endpoint it
/// is shown to: its issuer, subject, scopes, expiry, client and claims;
/// `None` when it names no subject. Made once for a kept token; whether it
/// may reach an endpoint is [`judge`]'s, at every use.
pub fn caller_of(signed: &Signed) -> Option<Verified> {
    let claims = &signed.claims;
    Some(Verified {
        issuer: claims.get("iss")?.as_str()?.to_owned(),
        subject: claims::subject_of(claims)?,
        scopes: crate::scopes_of(claims),
        expires_at: claims.get("exp").and_then(Value::as_u64),
        client_id: claims
            .get("client_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        claims: claims.clone(),
    })
}

/// Whether a token whose signature verified, naming `caller` (its
/// [`caller_of`]), may reach an endpoint with `policy` at `now`: the
/// endpoint's algorithms, the issuer, the audience, the lifetime, a
/// subject, and the scopes every request needs, in that order. Kept tokens
/// are judged by this at every use, with nothing made anew.
pub fn judge(
    signed: &Signed,
    caller: Option<&Verified>,
    policy: &Policy,
    now: u64,
) -> Result<(), Rejection> {
    if !policy.accepts(signed.alg) {
        return Err(not_accepted(signed.alg));
    }
    issuer_and_audience(&signed.claims, policy)?;
    claims::check_times(&signed.claims, policy, now, true)?;
    let caller = caller.ok_or_else(no_subject)?;
    let missing = caller.missing(&policy.required_scopes);
    match missing.is_empty() {
        true => Ok(()),
        false => Err(Rejection::InsufficientScope(
            missing.into_iter().map(str::to_owned).collect(),
        )),
    }
}

fn no_subject() -> Rejection {
    Rejection::Invalid("the token names no subject".into())
}

fn not_accepted(alg: jsonwebtoken::Algorithm) -> Rejection {
    Rejection::Invalid(format!(
        "the token is signed with {alg:?}, which is not accepted"
    ))
}

/// `token`'s header and signature checked against `keys`, for an endpoint
/// with `policy` (whose algorithms the header's must be among).
pub fn signed(token: &str, keys: &JwkSet, policy: &Policy) -> Result<Signed, Rejection> {
    signed_as(token, keys, Typ::AccessToken, |alg| policy.accepts(alg))
}

/// The `typ` a JWT's header must carry to be read as what it is used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typ {
    /// An access token: `at+jwt` (RFC 9068 §2.1), or `JWT` or none, as most
    /// issuers write them.
    AccessToken,
    /// Exactly this media type (with or without its `application/` prefix,
    /// compared without regard to case, RFC 7515 §4.1.9); never absent.
    Exactly(&'static str),
}

impl Typ {
    fn admits(self, typ: Option<&str>) -> bool {
        let typ = typ.map(str::to_ascii_lowercase);
        let typ = typ.as_deref();
        let bare = typ.map(|t| t.strip_prefix("application/").unwrap_or(t));
        match self {
            Typ::AccessToken => matches!(bare, None | Some("at+jwt" | "jwt")),
            Typ::Exactly(wanted) => bare == Some(wanted),
        }
    }
}

/// `token`'s header (its `typ` one `typ` admits, its algorithm one
/// `accepts` takes, no key of its own) and signature checked against
/// `keys`. Nothing of its claims is judged.
pub fn signed_as(
    token: &str,
    keys: &JwkSet,
    typ: Typ,
    accepts: impl Fn(jsonwebtoken::Algorithm) -> bool,
) -> Result<Signed, Rejection> {
    let header = header_of(token, typ)?;
    if crate::resource_server::is_hmac(header.alg) || !accepts(header.alg) {
        return Err(not_accepted(header.alg));
    }
    let key = key_for(&header, keys)?;
    let decoding = DecodingKey::from_jwk(key)
        .map_err(|e| Rejection::Invalid(format!("the issuer's key cannot be used: {e}")))?;
    // The signature only: every claim is checked below, against `now`.
    let mut validation = Validation::new(header.alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let data = jsonwebtoken::decode::<Map<String, Value>>(token, &decoding, &validation)
        .map_err(|e| Rejection::Invalid(format!("the token's signature does not verify ({e})")))?;
    Ok(Signed {
        alg: header.alg,
        claims: data.claims,
    })
}

/// The verdict on a token's claims, its signature verified.
pub fn claims_verdict(
    claims: &Map<String, Value>,
    policy: &Policy,
    now: u64,
) -> Result<Verified, Rejection> {
    issuer_and_audience(claims, policy)?;
    claims::check_times(claims, policy, now, true)?;
    claims::caller(claims, policy)
}

/// `iss` the policy's issuer, and `aud` one of its audiences.
fn issuer_and_audience(claims: &Map<String, Value>, policy: &Policy) -> Result<(), Rejection> {
    match claims.get("iss").and_then(Value::as_str) {
        Some(iss) if iss == policy.issuer => {}
        Some(_) => {
            return Err(Rejection::Invalid(
                "the token is from another issuer".into(),
            ));
        }
        None => return Err(Rejection::Invalid("the token names no issuer".into())),
    }
    if !claims::audience_matches(claims.get("aud"), policy) {
        return Err(Rejection::Invalid(
            "the token is for another resource (its audience is not this one)".into(),
        ));
    }
    Ok(())
}

/// The token's header, refused when it is no JWS of type `typ` the gateway
/// understands.
fn header_of(token: &str, typ: Typ) -> Result<Header, Rejection> {
    let first = token.split('.').next().unwrap_or_default();
    if token.split('.').count() != 3 {
        return Err(Rejection::Invalid("the token is not a signed JWT".into()));
    }
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(first.as_bytes())
        .ok()
        .and_then(|b| serde_json::from_slice::<Map<String, Value>>(&b).ok())
        .ok_or_else(|| Rejection::Invalid("the token's header is not JSON".into()))?;
    // RFC 7515 §4.1.11: extensions that must be understood; none are.
    if raw.contains_key("crit") {
        return Err(Rejection::Invalid(
            "the token's header has critical extensions (`crit`) the gateway does not know".into(),
        ));
    }
    let given = match raw.get("typ") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => Some(""),
    };
    if !typ.admits(given) {
        let what = match typ {
            Typ::AccessToken => "an access token's".to_owned(),
            Typ::Exactly(wanted) => format!("`{wanted}`"),
        };
        return Err(Rejection::Invalid(match given {
            Some(t) => format!(
                "the token's type `{}` is not {what}",
                t.to_ascii_lowercase()
            ),
            None => format!("the token names no type (`typ`); it must be {what}"),
        }));
    }
    // The key is the issuer's, found by `kid`: never one the token carries.
    for embedded in ["jwk", "jku", "x5u", "x5c"] {
        if raw.contains_key(embedded) {
            return Err(Rejection::Invalid(format!(
                "the token names its own key (`{embedded}`): only the issuer's published keys are used"
            )));
        }
    }
    jsonwebtoken::decode_header(token)
        .map_err(|e| Rejection::Invalid(format!("the token's header cannot be read ({e})")))
}

/// The issuer's key that signed a token with `header`: the one its `kid`
/// names, or without a `kid` the only signing key for its algorithm.
fn key_for<'a>(header: &Header, keys: &'a JwkSet) -> Result<&'a Jwk, Rejection> {
    let usable = |k: &&Jwk| {
        !matches!(k.algorithm, AlgorithmParameters::OctetKey(_))
            && matches!(
                k.common.public_key_use,
                None | Some(PublicKeyUse::Signature)
            )
            && k.common
                .key_algorithm
                .is_none_or(|a| format!("{a:?}") == format!("{:?}", header.alg))
    };
    match &header.kid {
        Some(kid) => {
            let key = keys
                .keys
                .iter()
                .find(|k| k.common.key_id.as_deref() == Some(kid.as_str()))
                .ok_or_else(|| Rejection::UnknownKey(kid.clone()))?;
            match usable(&key) {
                true => Ok(key),
                false => Err(Rejection::Invalid(format!(
                    "the issuer's key `{kid}` is not for signing with {:?}",
                    header.alg
                ))),
            }
        }
        None => {
            let mut candidates = keys
                .keys
                .iter()
                .filter(usable)
                .filter(|k| family_of(k) == Some(header.alg.family()));
            match (candidates.next(), candidates.next()) {
                (Some(k), None) => Ok(k),
                _ => Err(Rejection::Invalid(
                    "the token names no key (`kid`) and the issuer has not exactly one for its algorithm".into(),
                )),
            }
        }
    }
}

/// The algorithm family a key serves.
fn family_of(key: &Jwk) -> Option<jsonwebtoken::AlgorithmFamily> {
    use jsonwebtoken::AlgorithmFamily as F;
    match key.algorithm {
        AlgorithmParameters::RSA(_) => Some(F::Rsa),
        AlgorithmParameters::EllipticCurve(_) => Some(F::Ec),
        AlgorithmParameters::OctetKeyPair(_) => Some(F::Ed),
        _ => None,
    }
}
