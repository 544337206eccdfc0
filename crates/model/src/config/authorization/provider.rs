//! `[authorization_server.provider]`: the identity provider, as written and
//! checked: its URLs, the gateway's client there and its secret, how it
//! authenticates, the scopes asked for and the name users see.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::super::auth::issuer_url;

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

/// A setting of the provider's, by its full name.
fn pf(name: &str) -> String {
    format!("authorization_server.provider.{name}")
}

/// `p` checked and its secret read (from `env` where it names a variable);
/// every problem is pushed naming its field.
pub(super) fn resolve(
    p: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<String>,
) -> Provider {
    check_urls(p, problems);
    if p.client_id.is_empty() {
        problems.push(format!(
            "{}: missing (the client registered for the gateway at the provider)",
            pf("client_id")
        ));
    }
    let secret = client_secret(p, env, problems);
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
    let name = p.name.clone().unwrap_or_else(|| {
        p.issuer
            .as_deref()
            .or(p.authorization_endpoint.as_deref())
            .and_then(|u| issuer_url(u).ok())
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| "the identity provider".to_owned())
    });
    Provider {
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
    }
}

/// The provider's URLs: each one an authorization server may have, and
/// enough of them to sign a user in (an issuer to discover, or the
/// endpoints and the user info).
fn check_urls(p: &ProviderConfig, problems: &mut Vec<String>) {
    let url = |name: &str, v: &Option<String>, problems: &mut Vec<String>| {
        if let Some(u) = v
            && let Err(why) = issuer_url(u)
        {
            problems.push(format!("{}: \"{u}\" {why}", pf(name)));
        }
    };
    url("issuer", &p.issuer, problems);
    url(
        "authorization_endpoint",
        &p.authorization_endpoint,
        problems,
    );
    url("token_endpoint", &p.token_endpoint, problems);
    url("userinfo_endpoint", &p.userinfo_endpoint, problems);
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
}

/// The gateway's secret at the provider: written, or read from `env`.
fn client_secret(
    p: &ProviderConfig,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<String>,
) -> String {
    match (&p.client_secret, &p.client_secret_env) {
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
    }
}
