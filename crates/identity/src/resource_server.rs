//! The gateway as an OAuth 2.1 resource server in front of servers that
//! have none: who is calling, and whether their token lets them in. Pure:
//! the caller fetches the issuer's keys and introspection answers and
//! passes the time.
//!
//! - [`bearer`]: the token of a request's `Authorization` header (RFC 6750
//!   §2.1; the header only);
//! - [`jwt`]: a JWT access token checked against the issuer's key set and a
//!   [`Policy`] (RFC 9068, RFC 7519, RFC 8725);
//! - [`introspection`]: an RFC 7662 introspection answer read as the same
//!   verdict;
//! - [`challenge`]: the `WWW-Authenticate` value hosts act on (RFC 6750 §3,
//!   RFC 9728 §5.1), and the scopes a request lacks.
//!
//! A verdict is a [`Verified`] caller (its issuer and subject, its scopes)
//! or a [`Rejection`] that says which challenge answers it.

pub mod bearer;
pub mod challenge;
mod claims;
pub mod introspection;
pub mod jwt;

pub use jsonwebtoken::Algorithm;
pub use jsonwebtoken::jwk::JwkSet;

/// What a token must be to be accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The issuer, as its metadata names it (`iss` must be exactly this).
    pub issuer: String,
    /// The audiences the gateway answers to (the mount's or app's resource
    /// URL, RFC 8707): `aud` must name one.
    pub audiences: Vec<String>,
    /// The signature algorithms accepted. Never `none`, never an HMAC
    /// (the key set is public): [`Policy::accepts`] refuses them whatever
    /// is listed.
    pub algorithms: Vec<Algorithm>,
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
    pub leeway_secs: u64,
    /// Scopes every request must carry.
    pub required_scopes: Vec<String>,
}

impl Policy {
    /// Whether a token signed with `alg` may be accepted.
    pub fn accepts(&self, alg: Algorithm) -> bool {
        !is_hmac(alg) && self.algorithms.contains(&alg)
    }
}

/// Whether `alg` is a symmetric (HMAC) algorithm: a key set is public, so a
/// token "signed" with one of its keys as an HMAC secret is a forgery.
pub fn is_hmac(alg: Algorithm) -> bool {
    matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

/// The asymmetric algorithms accepted when the configuration names none.
pub const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// A caller whose token was accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The issuer that vouches for it.
    pub issuer: String,
    /// Who it is at that issuer (`sub`; a client acting for itself, with
    /// no `sub`, is its `client_id`).
    pub subject: String,
    /// The scopes it was granted.
    pub scopes: Vec<String>,
    /// When the token stops being valid (seconds since the epoch), when it
    /// says.
    pub expires_at: Option<u64>,
    /// The client it was issued to, when it says.
    pub client_id: Option<String>,
    /// Every claim of the token (or of the introspection answer).
    pub claims: serde_json::Map<String, serde_json::Value>,
}

impl Verified {
    /// Claim `name` as text, for a header or an environment variable, in
    /// one encoding that reads back as the token said it: a string as it
    /// is, a number or a boolean written out, an array or an object as its
    /// compact JSON, members in the token's order (`["Finance Admins","b"]`:
    /// no element split or lost); `None` when absent or `null`.
    pub fn claim_text(&self, name: &str) -> Option<String> {
        use serde_json::Value;
        match self.claims.get(name)? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            whole @ (Value::Array(_) | Value::Object(_)) => Some(whole.to_string()),
        }
    }
}

impl Verified {
    /// The scopes of `wanted` it lacks, in `wanted`'s order.
    pub fn missing<'a>(&self, wanted: &'a [String]) -> Vec<&'a str> {
        wanted
            .iter()
            .filter(|s| !self.scopes.iter().any(|h| h == *s))
            .map(String::as_str)
            .collect()
    }
}

/// Why a request's token is not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// No token: 401 with no error code (RFC 6750 §3.1).
    Missing,
    /// The `Authorization` header is malformed or repeated: 400
    /// `invalid_request`.
    BadRequest(String),
    /// The token is not one the gateway accepts (malformed, forged,
    /// expired, for another audience, inactive): 401 `invalid_token`.
    Invalid(String),
    /// The token names a key the key set lacks: the set is fetched again
    /// (the issuer may have rotated its keys), and if still missing the
    /// token is [`Rejection::Invalid`].
    UnknownKey(String),
    /// A valid token without scopes the request needs: 403
    /// `insufficient_scope` naming them (RFC 6750 §3.1).
    InsufficientScope(Vec<String>),
}

impl Rejection {
    /// The HTTP status of the answer.
    pub fn status(&self) -> u16 {
        match self {
            Rejection::Missing | Rejection::Invalid(_) | Rejection::UnknownKey(_) => 401,
            Rejection::BadRequest(_) => 400,
            Rejection::InsufficientScope(_) => 403,
        }
    }

    /// The RFC 6750 error code, if any.
    pub fn error(&self) -> Option<&'static str> {
        match self {
            Rejection::Missing => None,
            Rejection::BadRequest(_) => Some("invalid_request"),
            Rejection::Invalid(_) | Rejection::UnknownKey(_) => Some("invalid_token"),
            Rejection::InsufficientScope(_) => Some("insufficient_scope"),
        }
    }

    /// What went wrong, for the client (never the token itself).
    pub fn description(&self) -> Option<String> {
        match self {
            Rejection::Missing => None,
            Rejection::BadRequest(why) | Rejection::Invalid(why) => Some(why.clone()),
            Rejection::UnknownKey(kid) => Some(format!(
                "the token is signed with key `{kid}`, which the issuer does not publish"
            )),
            Rejection::InsufficientScope(missing) => Some(format!(
                "the token lacks the scope{} {}",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(" ")
            )),
        }
    }
}

/// The scopes a token's claims grant: `scope` (RFC 9068 §2.2.3, space
/// separated) or `scp` (a string or an array, as some issuers write it).
pub fn scopes_of(claims: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    use serde_json::Value;
    let split = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => split(s),
        (_, Some(Value::String(s))) => split(s),
        (_, Some(Value::Array(a))) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
