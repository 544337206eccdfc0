//! The cryptography every TLS connection of the gateway uses: ring, chosen
//! explicitly so that no process-wide default has to be installed.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// The provider for a new client or server configuration.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
