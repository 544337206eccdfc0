//! TLS on both sides of the gateway, with rustls: the connector that
//! verifies an `https://` upstream ([`upstream`]), the listener's rotating
//! certificate ([`listener`]), and the PEM files both read ([`pem`]).

pub mod listener;
pub mod pem;
pub mod upstream;

pub use listener::ListenerTls;
pub use upstream::Connector;

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// The cryptography every TLS connection of the gateway uses.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
