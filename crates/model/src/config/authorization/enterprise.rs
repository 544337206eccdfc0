//! `[[authorization_server.enterprise_issuers]]`: the enterprise identity
//! providers whose identity assertions (ID-JAG) the token endpoint redeems
//! for access tokens, with no browser step (enterprise-managed
//! authorization):
//!
//! ```toml
//! [[authorization_server.enterprise_issuers]]
//! issuer = "https://acme.okta.com"     # its keys are found by discovery
//! clients = ["0oa8f2…"]                # the clients here it may assert users for
//! subject_claim = "sub"                # the claim that names the user
//! ```

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::super::auth::issuer_url;

/// The longest an assertion may live by default (`exp - iat`): Okta's
/// live five minutes.
pub const DEFAULT_MAX_LIFETIME_SECS: u64 = 300;

/// One `[[authorization_server.enterprise_issuers]]` as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnterpriseIssuerConfig {
    /// Its issuer identifier: the `iss` of its assertions; its metadata
    /// (RFC 8414, else OpenID Connect discovery) names its key set.
    pub issuer: String,
    /// The `client_id`s, here, of the clients it may assert users for
    /// (registered here, or client metadata document URLs); `["*"]` for any
    /// confidential client registered here (each assertion's `client_id`
    /// still binds it to one).
    pub clients: Vec<String>,
    /// The claim of its assertions that names the user (`sub` unless set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_claim: Option<String>,
    /// The longest an assertion may live (`exp - iat`), in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lifetime_secs: Option<u64>,
    /// A PEM bundle of certificate authorities trusted for its metadata and
    /// keys besides the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

/// An enterprise issuer, every rule checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnterpriseIssuer {
    pub issuer: String,
    pub clients: Vec<String>,
    pub subject_claim: String,
    pub max_lifetime_secs: u64,
    pub ca_file: Option<PathBuf>,
}

/// Each of `all` checked; every problem names its field.
pub fn resolve(
    all: &[EnterpriseIssuerConfig],
    gateway_issuer: &str,
    problems: &mut Vec<String>,
) -> Vec<EnterpriseIssuer> {
    let mut out: Vec<EnterpriseIssuer> = Vec::new();
    for (i, e) in all.iter().enumerate() {
        let at = |field: &str| format!("authorization_server.enterprise_issuers[{i}].{field}");
        if e.issuer.is_empty() {
            problems.push(format!("{}: missing", at("issuer")));
        } else if let Err(why) = issuer_url(&e.issuer) {
            problems.push(format!("{}: \"{}\" {why}", at("issuer"), e.issuer));
        } else if e.issuer.trim_end_matches('/') == gateway_issuer {
            problems.push(format!(
                "{}: \"{}\" is the gateway itself: an enterprise issuer is the identity provider whose assertions it redeems",
                at("issuer"),
                e.issuer
            ));
        } else if out.iter().any(|o| o.issuer == e.issuer) {
            problems.push(format!(
                "{}: \"{}\" is listed twice",
                at("issuer"),
                e.issuer
            ));
        }
        if e.clients.is_empty() {
            problems.push(format!(
                "{}: missing: name the client_id (registered here, or a client metadata document URL) of each client it may assert users for",
                at("clients")
            ));
        }
        if let Some(c) = e
            .clients
            .iter()
            .find(|c| c.trim().is_empty() || c.len() > 2048)
        {
            problems.push(format!("{}: {c:?} is not a client_id", at("clients")));
        }
        let subject_claim = e.subject_claim.clone().unwrap_or_else(|| "sub".into());
        if subject_claim.is_empty() {
            problems.push(format!("{}: empty", at("subject_claim")));
        }
        let max_lifetime_secs = e.max_lifetime_secs.unwrap_or(DEFAULT_MAX_LIFETIME_SECS);
        if max_lifetime_secs == 0 || max_lifetime_secs > 3600 {
            problems.push(format!(
                "{}: {max_lifetime_secs} must be between 1 and 3600",
                at("max_lifetime_secs")
            ));
        }
        out.push(EnterpriseIssuer {
            issuer: e.issuer.clone(),
            clients: e.clients.clone(),
            subject_claim,
            max_lifetime_secs,
            ca_file: e.ca_file.clone(),
        });
    }
    out
}
