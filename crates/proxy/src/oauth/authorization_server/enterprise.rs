//! The enterprise issuers the authorization server trusts for identity
//! assertions (`[[authorization_server.enterprise_issuers]]`): each one's
//! settings and signing keys, and the client that fetches them.

use std::time::Duration;

use crate::oauth::fetch::Fetcher;
use crate::oauth::keys::IssuerKeys;
use mcp_ui_model::config::authorization::EnterpriseIssuer;

/// The enterprise issuers trusted, and the client that fetches their keys.
pub(super) struct Enterprise {
    pub(super) trusted: Vec<Trusted>,
    pub(super) fetcher: Fetcher,
}

pub(super) struct Trusted {
    pub(super) config: EnterpriseIssuer,
    pub(super) keys: IssuerKeys,
}

impl Enterprise {
    pub(super) fn new(
        issuers: &[EnterpriseIssuer],
        connect_timeout: Duration,
    ) -> Result<Enterprise, String> {
        let trusted = issuers
            .iter()
            .filter_map(|e| Some((e.issuer.as_str(), e.ca_file.as_ref()?)));
        let fetcher = Fetcher::new(connect_timeout, trusted)
            .map_err(|p| format!("authorization_server.enterprise_issuers: {}", p.join("; ")))?;
        Ok(Enterprise {
            trusted: issuers
                .iter()
                .map(|e| Trusted {
                    config: e.clone(),
                    keys: IssuerKeys::new(&e.issuer),
                })
                .collect(),
            fetcher,
        })
    }

    /// Whether any issuer is trusted (the grant is offered at all).
    pub(super) fn offered(&self) -> bool {
        !self.trusted.is_empty()
    }
}
