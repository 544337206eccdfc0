//! What both sides of the gateway's TLS read: the PEM files ([`pem`]), the
//! cryptography every connection uses ([`crypto`]), and the TLS settings of
//! one upstream as the configuration gives them ([`UpstreamTls`]). The
//! connector that uses those settings is the upstream crate's; the
//! listener's rotating certificate is the proxy's.

pub mod crypto;
pub mod pem;

use std::path::PathBuf;

/// The TLS settings of one upstream, as given (files are read when the
/// upstream client is built).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    pub ca_file: Option<PathBuf>,
    /// Certificate chain and key, for mutual TLS.
    pub client_auth: Option<(PathBuf, PathBuf)>,
    /// `tls_server_name`, when the URL's host is not the certificate's name.
    pub server_name: Option<String>,
}

impl UpstreamTls {
    /// Trusting the authorities of `ca_file` only, with no client
    /// certificate and the URL's host as the name.
    pub fn trusting(ca_file: PathBuf) -> UpstreamTls {
        UpstreamTls {
            ca_file: Some(ca_file),
            ..UpstreamTls::default()
        }
    }

    /// Whether anything differs from the defaults (system roots, no client
    /// certificate, the URL's host).
    pub fn is_default(&self) -> bool {
        *self == UpstreamTls::default()
    }
}
