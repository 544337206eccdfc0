//! The gateway as the hosts' OAuth 2.1 authorization server, delegating the
//! login to the operator's identity provider: the rules, with no IO and no
//! clock (the caller fetches, seals, stores and passes the time).
//!
//! - [`assertion`]: an enterprise's identity assertion (ID-JAG) redeemed as a
//!   JWT bearer grant (RFC 7523), every rule of its profile;
//! - [`params`]: query and form parameters, each at most once (RFC 6749 §3.1);
//! - [`pkce`]: the S256 code challenge and its verifier (RFC 7636);
//! - [`client`]: a client as registered (RFC 7591) or as its Client ID
//!   Metadata Document describes it, and the redirect URIs it may use
//!   (RFC 8252 §7);
//! - [`authorize`]: an authorization request checked (RFC 6749 §4.1.1,
//!   RFC 8707, RFC 9207), and where its errors may be sent;
//! - [`family`]: a family of refresh tokens, its generation and the pace
//!   of its refreshes;
//! - [`token`]: a token request checked: the client's credentials
//!   (RFC 6749 §2.3.1), the code or refresh token it redeems;
//! - [`signing`]: the keys the gateway signs access tokens with (RFC 9068),
//!   their key ids (RFC 7638 thumbprints) and published key set;
//! - [`provider`]: the identity provider's ID token and user info, read as a
//!   subject (OpenID Connect Core §3.1.3.7).

pub mod assertion;
pub mod authorize;
pub mod client;
pub mod family;
pub mod params;
pub mod pkce;
pub mod provider;
pub mod signing;
pub mod token;

/// An OAuth error answer: its code (RFC 6749 §4.1.2.1, §5.2; RFC 7591 §3.2.2;
/// RFC 8707 §2) and what went wrong, for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthError {
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    pub fn new(error: &'static str, description: impl Into<String>) -> OAuthError {
        OAuthError {
            error,
            description: description.into(),
        }
    }

    /// `invalid_request`.
    pub fn request(description: impl Into<String>) -> OAuthError {
        OAuthError::new("invalid_request", description)
    }

    /// The JSON body of the answer.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "error": self.error, "error_description": self.description })
    }
}

/// Whether `scope` is a scope token (RFC 6749 §3.3: printable ASCII but space,
/// `"` and `\`).
pub fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}
