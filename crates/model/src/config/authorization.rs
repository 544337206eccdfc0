//! `[authorization_server]`: the gateway as the hosts' OAuth 2.1
//! authorization server, its issuer the gateway's `public_url`. Hosts
//! register with it (RFC 7591, or a Client ID Metadata Document) and sign in
//! through it; the login itself is the operator's identity provider's, with
//! a client registered there:
//!
//! ```toml
//! public_url = "https://mcp.example.com"
//! [auth]                                    # the issuer defaults to public_url
//! scopes = ["mcp"]
//! [authorization_server]
//! signing_keys = ["/etc/mcp-ui-gateway/signing.pem"]
//! [authorization_server.provider]
//! issuer = "https://accounts.google.com"    # or the endpoints, for GitHub
//! client_id = "1234.apps.googleusercontent.com"
//! client_secret_env = "GOOGLE_CLIENT_SECRET"
//! ```
//!
//! - `provider`: the identity provider, as written and checked.
//! - `documents`: clients known by the URL of their metadata document.
//! - `enterprise`: the enterprise issuers whose assertions are redeemed.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::auth::issuer_url;

mod documents;
mod enterprise;
mod provider;

pub use documents::MetadataDocumentsConfig;
pub use enterprise::{DEFAULT_MAX_LIFETIME_SECS, EnterpriseIssuer, EnterpriseIssuerConfig};
pub use provider::{Provider, ProviderAuth, ProviderConfig};

/// `[authorization_server]` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorizationServerConfig {
    /// The identity provider users sign in with.
    pub provider: ProviderConfig,
    /// Private keys (PEM: EC P-256 or P-384, Ed25519, RSA) the access
    /// tokens are signed with: the first signs, every one is published, so a
    /// key listed second still verifies the tokens it signed. Unset: a key
    /// made at start, for this process only (its tokens die with it, and
    /// replicas do not accept each other's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signing_keys: Vec<PathBuf>,
    /// Scopes clients may be granted besides those the endpoints require
    /// and their overlays declare.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Lifetime of an access token. Default 3600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token_ttl_secs: Option<u64>,
    /// Lifetime of a refresh token (each use replaces it). Default 30 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token_ttl_secs: Option<u64>,
    /// How long a user's consent to a client is remembered by their browser.
    /// Default 30 days; 0 asks every time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent_days: Option<u32>,
    /// Sign-ins (each a family of refresh tokens) one user keeps at once;
    /// a sign-in past it ends that user's sign-in refreshed longest ago.
    /// Default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_ins_per_user: Option<u32>,
    /// The token and revocation endpoints' rate limits.
    #[serde(default)]
    pub token_endpoint: TokenEndpointConfig,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration: RegistrationConfig,
    /// Clients known by the HTTPS URL of their metadata document.
    #[serde(default)]
    pub client_metadata_documents: MetadataDocumentsConfig,
    /// Where redeemed codes and refresh tokens and revoked families are
    /// remembered: `"memory"` (the default: this process; a replay to
    /// another replica is not recognised) or a Redis URL every replica
    /// shares (`redis://host:6379/0`, `unix:///run/redis.sock`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Enterprise identity providers whose identity assertions (ID-JAG)
    /// the token endpoint redeems, by the JWT bearer grant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enterprise_issuers: Vec<EnterpriseIssuerConfig>,
}

/// `[authorization_server.registration]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegistrationConfig {
    pub enabled: bool,
    /// Registrations a minute from one address; past it, 429.
    pub per_minute: u32,
    pub max_redirect_uris: usize,
    /// The largest registration request.
    pub max_bytes: usize,
    /// A registered client not used (an authorization or a token request)
    /// for this long is forgotten: its `client_id` is refused as unknown and
    /// its host registers again. 0: never. Default 90 days.
    pub unused_client_secs: u64,
}

impl Default for RegistrationConfig {
    fn default() -> Self {
        RegistrationConfig {
            enabled: true,
            per_minute: 10,
            max_redirect_uris: 10,
            max_bytes: 16 * 1024,
            unused_client_secs: 90 * 24 * 3600,
        }
    }
}

/// `[authorization_server.token_endpoint]`: how often clients may ask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenEndpointConfig {
    /// Token and revocation requests a minute of one client from one
    /// address (in bursts of up to a minute's worth); past it, 429. 0: no
    /// limit.
    pub per_minute: u32,
    /// Refreshes a minute of one sign-in (a family of refresh tokens), at
    /// every replica together; past it, 429 and the refresh token stays
    /// good.
    pub refreshes_per_minute: u32,
}

impl Default for TokenEndpointConfig {
    fn default() -> Self {
        TokenEndpointConfig {
            per_minute: 1200,
            refreshes_per_minute: 30,
        }
    }
}

/// `[authorization_server]`, every rule checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationServer {
    /// The gateway's `public_url`, without a trailing slash: the `iss` of
    /// its tokens and metadata.
    pub issuer: String,
    pub provider: Provider,
    pub signing_keys: Vec<PathBuf>,
    pub scopes: Vec<String>,
    pub access_token_ttl_secs: u64,
    pub refresh_token_ttl_secs: u64,
    pub consent_days: u32,
    pub sign_ins_per_user: u32,
    pub token_endpoint: TokenEndpointConfig,
    pub registration: RegistrationConfig,
    pub documents: MetadataDocumentsConfig,
    /// `None`: this process's memory; else the Redis URL.
    pub store: Option<String>,
    /// Some endpoint passes the provider's token for the user on
    /// (`provider_access_token`): it is kept, sealed, in the gateway's tokens.
    pub provider_tokens: bool,
    /// The enterprise issuers whose assertions are redeemed.
    pub enterprise: Vec<EnterpriseIssuer>,
}

/// The issuer `[authorization_server]` makes of `public_url`.
pub fn issuer_of(public_url: &str) -> String {
    public_url.trim_end_matches('/').to_owned()
}

/// `config` checked, with the gateway's `public_url`. Every problem names
/// its field.
pub fn resolve(
    config: &AuthorizationServerConfig,
    public_url: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<AuthorizationServer, Vec<String>> {
    let mut problems = Vec::new();
    let at = "authorization_server";
    let issuer = own_issuer(public_url, &mut problems);
    let provider = provider::resolve(&config.provider, env, &mut problems);
    for (field, list) in [
        (format!("{at}.provider.scopes"), &provider.scopes),
        (format!("{at}.scopes"), &config.scopes),
    ] {
        for s in list {
            if !super::auth::is_scope_token(s) {
                problems.push(format!("{field}: \"{s}\" is not a scope token"));
            }
        }
    }
    let (access, refresh) = lifetimes(config, &mut problems);
    let reg = &config.registration;
    let sign_ins_per_user = config.sign_ins_per_user.unwrap_or(100);
    check_rates(config, sign_ins_per_user, &mut problems);
    let docs = &config.client_metadata_documents;
    documents::check(docs, &mut problems);
    let store = store(config.store.as_deref(), &mut problems);
    let enterprise = enterprise::resolve(&config.enterprise_issuers, &issuer, &mut problems);
    if !docs.enabled && !reg.enabled {
        problems.push(format!(
            "{at}: with neither registration nor client_metadata_documents enabled, no client could sign in"
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(AuthorizationServer {
        issuer,
        provider,
        signing_keys: config.signing_keys.clone(),
        scopes: config.scopes.clone(),
        access_token_ttl_secs: access,
        refresh_token_ttl_secs: refresh,
        consent_days: config.consent_days.unwrap_or(30),
        sign_ins_per_user,
        token_endpoint: config.token_endpoint.clone(),
        registration: reg.clone(),
        documents: docs.clone(),
        store,
        provider_tokens: false,
        enterprise,
    })
}

/// The gateway's issuer: `public_url`, which it needs.
fn own_issuer(public_url: Option<&str>, problems: &mut Vec<String>) -> String {
    let at = "authorization_server";
    match public_url {
        Some(u) => {
            if let Err(why) = issuer_url(u.trim_end_matches('/')) {
                problems.push(format!(
                    "public_url: \"{u}\" {why} (it is the issuer of [{at}])"
                ));
            }
            issuer_of(u)
        }
        None => {
            problems.push(format!(
                "public_url: needed by [{at}]: it is the issuer clients see, and must not change with the Host a request names"
            ));
            String::new()
        }
    }
}

/// The lifetimes of access and refresh tokens, each within its bounds.
fn lifetimes(config: &AuthorizationServerConfig, problems: &mut Vec<String>) -> (u64, u64) {
    let at = "authorization_server";
    let ttl = |name: &str, v: Option<u64>, default: u64, max: u64, problems: &mut Vec<String>| {
        let v = v.unwrap_or(default);
        if v == 0 || v > max {
            problems.push(format!("{at}.{name}: {v} must be between 1 and {max}"));
        }
        v
    };
    let access = ttl(
        "access_token_ttl_secs",
        config.access_token_ttl_secs,
        3600,
        86_400,
        problems,
    );
    let refresh = ttl(
        "refresh_token_ttl_secs",
        config.refresh_token_ttl_secs,
        30 * 86_400,
        365 * 86_400,
        problems,
    );
    (access, refresh)
}

/// The bounds on registration, sign-ins and refreshes: none 0.
fn check_rates(
    config: &AuthorizationServerConfig,
    sign_ins_per_user: u32,
    problems: &mut Vec<String>,
) {
    let at = "authorization_server";
    let reg = &config.registration;
    if reg.enabled && (reg.per_minute == 0 || reg.max_redirect_uris == 0 || reg.max_bytes < 256) {
        problems.push(format!(
            "{at}.registration: per_minute and max_redirect_uris must be at least 1, max_bytes at least 256"
        ));
    }
    if sign_ins_per_user == 0 {
        problems.push(format!("{at}.sign_ins_per_user: must be at least 1"));
    }
    if config.token_endpoint.refreshes_per_minute == 0 {
        problems.push(format!(
            "{at}.token_endpoint.refreshes_per_minute: must be at least 1"
        ));
    }
}

/// Where the sign-ins are kept: `None` for this process's memory, else the
/// Redis URL.
fn store(written: Option<&str>, problems: &mut Vec<String>) -> Option<String> {
    match written {
        None | Some("memory") => None,
        Some(url) if url.starts_with("redis://") || url.starts_with("unix://") => {
            Some(url.to_owned())
        }
        Some(other) => {
            problems.push(format!(
                "authorization_server.store: \"{other}\" is not \"memory\" or a Redis URL (redis://host:port/db, unix:///path)"
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests;
