//! `[authorization_server.client_metadata_documents]`: clients known by the
//! HTTPS URL of their metadata document, and how those documents are
//! fetched.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[authorization_server.client_metadata_documents]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetadataDocumentsConfig {
    pub enabled: bool,
    /// The largest document fetched.
    pub max_bytes: usize,
    pub timeout_secs: u64,
    /// How long a fetched document is used before it is fetched again.
    pub cache_secs: u64,
    /// Hosts whose documents may be fetched although they resolve to a
    /// private or loopback address (never otherwise: a client id must not
    /// make the gateway reach into its own network).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub private_hosts: Vec<String>,
    /// Where the documents of a host are fetched from instead of the
    /// addresses its name resolves to (`"chatgpt.com" = "127.0.0.1:8443"`,
    /// as curl's `--connect-to`): a stand-in for tests, or a split-horizon
    /// network. The address is checked as a resolved one is (loopback needs
    /// the host in `private_hosts`); TLS still verifies the host's name.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub connect_to: std::collections::BTreeMap<String, String>,
    /// A PEM bundle of certificate authorities trusted for documents besides
    /// the system's roots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

impl Default for MetadataDocumentsConfig {
    fn default() -> Self {
        MetadataDocumentsConfig {
            enabled: true,
            max_bytes: 5 * 1024,
            timeout_secs: 5,
            cache_secs: 300,
            private_hosts: Vec::new(),
            connect_to: std::collections::BTreeMap::new(),
            ca_file: None,
        }
    }
}

/// `docs` checked; every problem names its field.
pub(super) fn check(docs: &MetadataDocumentsConfig, problems: &mut Vec<String>) {
    let at = "authorization_server";
    for (host, to) in &docs.connect_to {
        if to.parse::<std::net::SocketAddr>().is_err() {
            problems.push(format!(
                "{at}.client_metadata_documents.connect_to.\"{host}\": \"{to}\" is not an address and port (\"127.0.0.1:8443\")"
            ));
        }
    }
    if docs.enabled && (docs.max_bytes < 256 || docs.timeout_secs == 0) {
        problems.push(format!(
            "{at}.client_metadata_documents: max_bytes must be at least 256 and timeout_secs at least 1"
        ));
    }
}
