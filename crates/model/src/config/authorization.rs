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

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::auth::issuer_url;

mod documents;
mod enterprise;

pub use documents::MetadataDocumentsConfig;
pub use enterprise::{DEFAULT_MAX_LIFETIME_SECS, EnterpriseIssuer, EnterpriseIssuerConfig};

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

/// The identity provider, and the client the gateway has there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Its name on the consent page ("Google"). Default: its host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An OpenID provider, whose endpoints are discovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The endpoints of a provider without discovery (GitHub), or overriding
    /// what discovery finds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint: Option<String>,
    /// Where the subject is read when there is no ID token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub userinfo_endpoint: Option<String>,
    #[serde(default)]
    pub client_id: String,
    /// The secret, written here (prefer `client_secret_env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// How the gateway authenticates at the provider's token endpoint:
    /// `client_secret_basic` (default) or `client_secret_post`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// Scopes asked of the provider. Default `["openid"]` with an issuer,
    /// none without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// The claim (of the ID token, else of the user info) naming the user.
    /// Default `sub` (GitHub: `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_claim: Option<String>,
    /// A PEM bundle of the certificate authorities to trust for the provider
    /// instead of the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
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

/// How the gateway authenticates at the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderAuth {
    Basic,
    Post,
}

/// The provider, every rule checked and its secret read.
#[derive(Clone, PartialEq, Eq)]
pub struct Provider {
    pub name: String,
    pub issuer: Option<String>,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    pub userinfo_endpoint: Option<String>,
    pub client_id: String,
    pub client_secret: String,
    pub auth: ProviderAuth,
    pub scopes: Vec<String>,
    pub subject_claim: String,
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for Provider {
    // The secret is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
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
    let issuer = match public_url {
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
    };
    let p = &config.provider;
    let pf = |name: &str| format!("{at}.provider.{name}");
    let url = |name: &str, v: &Option<String>, problems: &mut Vec<String>| {
        if let Some(u) = v
            && let Err(why) = issuer_url(u)
        {
            problems.push(format!("{}: \"{u}\" {why}", pf(name)));
        }
    };
    url("issuer", &p.issuer, &mut problems);
    url(
        "authorization_endpoint",
        &p.authorization_endpoint,
        &mut problems,
    );
    url("token_endpoint", &p.token_endpoint, &mut problems);
    url("userinfo_endpoint", &p.userinfo_endpoint, &mut problems);
    if p.issuer.is_none() && (p.authorization_endpoint.is_none() || p.token_endpoint.is_none()) {
        problems.push(format!(
            "{}: missing: name the provider's issuer (OpenID Connect discovery), or its authorization_endpoint and token_endpoint",
            pf("issuer")
        ));
    }
    if p.issuer.is_none() && p.userinfo_endpoint.is_none() {
        problems.push(format!(
            "{}: missing: without an issuer there is no ID token, and the user is read from the user info",
            pf("userinfo_endpoint")
        ));
    }
    if p.client_id.is_empty() {
        problems.push(format!(
            "{}: missing (the client registered for the gateway at the provider)",
            pf("client_id")
        ));
    }
    let secret = match (&p.client_secret, &p.client_secret_env) {
        (Some(s), None) => s.clone(),
        (None, Some(var)) => env(var).unwrap_or_else(|| {
            problems.push(format!(
                "{}: the environment variable {var} is not set",
                pf("client_secret_env")
            ));
            String::new()
        }),
        (Some(_), Some(_)) => {
            problems.push(format!(
                "{}: set client_secret or client_secret_env, not both",
                pf("client_secret")
            ));
            String::new()
        }
        (None, None) => {
            problems.push(format!(
                "{}: missing (or client_secret_env)",
                pf("client_secret")
            ));
            String::new()
        }
    };
    let auth = match p.token_endpoint_auth_method.as_deref() {
        None | Some("client_secret_basic") => ProviderAuth::Basic,
        Some("client_secret_post") => ProviderAuth::Post,
        Some(other) => {
            problems.push(format!(
                "{}: \"{other}\" is not client_secret_basic or client_secret_post",
                pf("token_endpoint_auth_method")
            ));
            ProviderAuth::Basic
        }
    };
    let scopes = p.scopes.clone().unwrap_or_else(|| match p.issuer {
        Some(_) => vec!["openid".to_owned()],
        None => Vec::new(),
    });
    for (field, list) in [
        (pf("scopes"), &scopes),
        (format!("{at}.scopes"), &config.scopes),
    ] {
        for s in list {
            if !super::auth::is_scope_token(s) {
                problems.push(format!("{field}: \"{s}\" is not a scope token"));
            }
        }
    }
    let name = p.name.clone().unwrap_or_else(|| {
        p.issuer
            .as_deref()
            .or(p.authorization_endpoint.as_deref())
            .and_then(|u| issuer_url(u).ok())
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| "the identity provider".to_owned())
    });
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
        &mut problems,
    );
    let refresh = ttl(
        "refresh_token_ttl_secs",
        config.refresh_token_ttl_secs,
        30 * 86_400,
        365 * 86_400,
        &mut problems,
    );
    let reg = &config.registration;
    if reg.enabled && (reg.per_minute == 0 || reg.max_redirect_uris == 0 || reg.max_bytes < 256) {
        problems.push(format!(
            "{at}.registration: per_minute and max_redirect_uris must be at least 1, max_bytes at least 256"
        ));
    }
    let sign_ins_per_user = config.sign_ins_per_user.unwrap_or(100);
    if sign_ins_per_user == 0 {
        problems.push(format!("{at}.sign_ins_per_user: must be at least 1"));
    }
    if config.token_endpoint.refreshes_per_minute == 0 {
        problems.push(format!(
            "{at}.token_endpoint.refreshes_per_minute: must be at least 1"
        ));
    }
    let docs = &config.client_metadata_documents;
    documents::check(docs, &mut problems);
    let store = match config.store.as_deref() {
        None | Some("memory") => None,
        Some(url) if url.starts_with("redis://") || url.starts_with("unix://") => {
            Some(url.to_owned())
        }
        Some(other) => {
            problems.push(format!(
                "{at}.store: \"{other}\" is not \"memory\" or a Redis URL (redis://host:port/db, unix:///path)"
            ));
            None
        }
    };
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
        provider: Provider {
            name,
            issuer: p.issuer.clone(),
            authorization_endpoint: p.authorization_endpoint.clone(),
            token_endpoint: p.token_endpoint.clone(),
            userinfo_endpoint: p.userinfo_endpoint.clone(),
            client_id: p.client_id.clone(),
            client_secret: secret,
            auth,
            scopes,
            subject_claim: p.subject_claim.clone().unwrap_or_else(|| "sub".to_owned()),
            ca_file: p.ca_file.clone(),
        },
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

#[cfg(test)]
mod tests;
