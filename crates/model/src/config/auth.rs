//! `[auth]`: the gateway as an OAuth 2.1 resource server for servers that
//! have none. Set at the top level for every mount and app, and per
//! `[[upstream]]` or `[[app]]` (`auth = { … }` overriding what it sets,
//! `auth = false` for a public endpoint):
//!
//! ```toml
//! [auth]
//! issuer = "https://login.example.com/"   # discovered: OpenID Connect, else RFC 8414
//! scopes = ["mcp"]                          # every request needs them
//! ```
//!
//! - `endpoint`: one endpoint's `auth` resolved over `[auth]`, every rule
//!   checked, and the rules across endpoints.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub(super) mod endpoint;

/// `[auth]` as written (at the top level, or a mount's or app's table).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The authorization server whose tokens are accepted, as its metadata
    /// names itself (`https://`, or `http://` on a loopback address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The audience tokens must name. Default: the endpoint's resource URL
    /// (`public_url` and its path, RFC 8707), which is what clients ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// Signature algorithms accepted. Default: RS256, RS384, RS512, PS256,
    /// PS384, PS512, ES256, ES384, EdDSA. `none` and the HMAC ones are
    /// refused: a key set is public.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithms: Option<Vec<String>>,
    /// Clock skew tolerated on a token's times. Default 60.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew_secs: Option<u64>,
    /// Scopes every request needs (and that the endpoint's metadata and
    /// challenges ask for). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// Opaque tokens are checked by the issuer's RFC 7662 introspection
    /// endpoint, with this client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub introspection: Option<IntrospectionConfig>,
    /// Let a caller without a token in: `initialize`, the listings, the
    /// widgets and the tools whose overlay lists `noauth` among their
    /// `security_schemes` (ChatGPT's mixed auth); every other request is
    /// challenged. Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anonymous: Option<bool>,
    /// Requests a minute each caller (a verified subject; callers without a
    /// token together) may send to an endpoint; past it, 429 with
    /// `Retry-After`. Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    /// Headers the upstream gets with the verified caller's claims, header
    /// name to claim name (`{ "x-user" = "sub", "x-email" = "email" }`); a
    /// client's own header of such a name never reaches the upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims_to_headers: Option<std::collections::BTreeMap<String, String>>,
    /// For a stdio upstream with `sessions = "conversation"`: environment
    /// variables of each caller's own process, variable to claim name
    /// (`{ MCP_USER = "sub" }`): a single-user server knows its user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims_to_env: Option<std::collections::BTreeMap<String, String>>,
    /// Log each verified caller (issuer, subject, client) with its request
    /// id, at `info`. Default false: logs name no one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_callers: Option<bool>,
    /// Pass the client's token on to the upstream. Default false: a token
    /// is for the gateway's audience, and an upstream that is no resource of
    /// that audience must not get it (no token passthrough).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_token: Option<bool>,
    /// A PEM bundle of the certificate authorities to trust for the issuer
    /// instead of the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

/// The client the gateway introspects opaque tokens with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionConfig {
    pub client_id: String,
    /// The secret, written here (prefer `client_secret_env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The environment variable holding the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// The endpoint. Default: the issuer metadata's `introspection_endpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// Introspection calls a minute to the issuer, whichever endpoint asks
    /// (a token already answered costs none); past it a token the gateway
    /// has no answer for gets 503 with `Retry-After`. Default
    /// [`INTROSPECTION_CALLS_PER_MINUTE`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_minute: Option<u32>,
    /// Introspection calls to the issuer in progress at once; the others
    /// wait their turn (at most a few seconds, then 503). Default
    /// [`INTROSPECTION_MAX_CONCURRENT_CALLS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_calls: Option<u32>,
}

/// Introspection calls a minute to one issuer, when `calls_per_minute` is
/// unset: ten a second, in bursts of up to a minute's worth.
pub const INTROSPECTION_CALLS_PER_MINUTE: u32 = 600;
/// Introspection calls to one issuer at once, when `max_concurrent_calls`
/// is unset.
pub const INTROSPECTION_MAX_CONCURRENT_CALLS: u32 = 8;

/// A mount's or app's `auth`: `false` (public), or a table over `[auth]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AuthSetting {
    /// `auth = false`: anyone may call; `auth = true`: as `[auth]` says.
    Enabled(bool),
    /// What it sets overrides `[auth]`.
    Table(Box<AuthConfig>),
}

/// What an endpoint requires of its callers, every rule checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    pub issuer: String,
    /// `None`: the endpoint's resource URL.
    pub audience: Option<String>,
    /// The accepted algorithms' names (`RS256`, …; none symmetric).
    pub algorithms: Vec<String>,
    pub leeway_secs: u64,
    pub scopes: Vec<String>,
    pub introspection: Option<Introspection>,
    pub anonymous: bool,
    pub requests_per_minute: Option<u32>,
    /// Header to claim name.
    pub claims_to_headers: Vec<(http::HeaderName, String)>,
    /// Environment variable to claim name.
    pub claims_to_env: Vec<(String, String)>,
    pub log_callers: bool,
    pub forward_token: bool,
    pub ca_file: Option<PathBuf>,
}

impl Auth {
    /// Whether it passes the provider's token for the user on
    /// ([`PROVIDER_ACCESS_TOKEN`]).
    pub fn wants_provider_token(&self) -> bool {
        self.claims_to_headers
            .iter()
            .map(|(_, c)| c)
            .chain(self.claims_to_env.iter().map(|(_, c)| c))
            .any(|c| c == PROVIDER_ACCESS_TOKEN)
    }
}

/// The introspection client, its secret read, and the bounds on its calls.
#[derive(Clone, PartialEq, Eq)]
pub struct Introspection {
    pub client_id: String,
    pub client_secret: String,
    pub endpoint: Option<String>,
    pub calls_per_minute: u32,
    pub max_concurrent_calls: u32,
}

impl std::fmt::Debug for Introspection {
    // The secret is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspection")
            .field("client_id", &self.client_id)
            .field("endpoint", &self.endpoint)
            .field("calls_per_minute", &self.calls_per_minute)
            .field("max_concurrent_calls", &self.max_concurrent_calls)
            .finish_non_exhaustive()
    }
}

/// The pseudo-claim naming the user's access token at the identity provider
/// the gateway signed them in with (`[authorization_server]`): mapped by
/// `claims_to_headers` or `claims_to_env`, it reaches the upstream, which
/// then acts as that user at the provider. It is the only claim that may be
/// put in `authorization` (as `Bearer …`).
pub const PROVIDER_ACCESS_TOKEN: &str = "provider_access_token";

/// Headers a claim may not be put in: the protocol's and the gateway's own.
const RESERVED_HEADERS: [&str; 12] = [
    "authorization",
    "host",
    "content-type",
    "content-length",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
    "traceparent",
    "tracestate",
];

/// The algorithms accepted when none are named.
pub const DEFAULT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// Whether `s` is a scope token (RFC 6749 §3.3: printable ASCII but space,
/// `"` and `\`).
pub(crate) fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
}

/// Why a URL is not one an authorization server may have
/// ([`issuer_url`]). The fault is whoever wrote it: the operator's for a
/// setting (a startup error), the issuer's for a URL its metadata names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssuerUrlError {
    #[error("is not a URL")]
    NotAUrl,
    /// How a browser reads it, which differs from what is written.
    #[error("is not written as a browser reads it ({0:?})")]
    NotAsRead(String),
    #[error("has no host")]
    NoHost,
    #[error("must have no user information")]
    UserInformation,
    #[error("must have no query or fragment")]
    QueryOrFragment,
    #[error("must be https:// (http:// only on a loopback address)")]
    NotHttps,
}

/// `text` as the URL of an authorization server or one of its endpoints:
/// `https://`, or `http://` on a loopback address (OAuth 2.1 §1.5); no user
/// information, query or fragment; and written as a browser reads it (the
/// WHATWG URL Standard; a host without a path may go without its `/`), so
/// that the URL checked is the URL fetched, whichever parser fetches it.
pub fn issuer_url(text: &str) -> Result<url::Url, IssuerUrlError> {
    let url = url::Url::parse(text).map_err(|_| IssuerUrlError::NotAUrl)?;
    let read = url.as_str();
    if read != text && !(url.path() == "/" && read.strip_suffix('/') == Some(text)) {
        return Err(IssuerUrlError::NotAsRead(read.to_owned()));
    }
    if !url.has_host() {
        return Err(IssuerUrlError::NoHost);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(IssuerUrlError::UserInformation);
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(IssuerUrlError::QueryOrFragment);
    }
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(IssuerUrlError::NotHttps),
    }
}

#[cfg(test)]
mod tests;
