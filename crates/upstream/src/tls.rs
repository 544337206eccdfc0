//! TLS on both sides of the gateway, with rustls: the connector that
//! verifies an `https://` upstream ([`upstream`]), the listener's rotating
//! certificate ([`listener`]), the PEM files both read ([`pem`]) and the
//! cryptography they use ([`crypto`]).

pub mod crypto;
pub mod listener;
pub mod pem;
pub mod upstream;

pub use listener::ListenerTls;
pub(crate) use upstream::{Connector, UpstreamTls};
