//! Who is calling, and who may sign them in: the OAuth rules of a gateway
//! that is a resource server in front of servers that have none, and an
//! authorization server for hosts whose identity provider they cannot
//! register with. Pure: the caller fetches, stores and passes the time;
//! nothing here does IO or reads a clock.
//!
//! - [`resource_server`]: a request's bearer token checked (a JWT against
//!   the issuer's keys, an introspection answer) into a [`Verified`] caller
//!   or a [`Rejection`], and the challenge that answers a refusal;
//! - [`authorization_server`]: the gateway as an authorization server: its
//!   requests, clients, grants, refresh-token families and the access
//!   tokens it signs;
//! - [`urls`]: URLs as a browser reads them (redirect URIs, client id URLs,
//!   issuers, resources), parsed once by the WHATWG URL Standard;
//! - [`rate`]: a token bucket, for requests per caller and calls per issuer.

pub mod authorization_server;
pub mod rate;
pub mod resource_server;
pub mod urls;

pub use resource_server::{
    Algorithm, DEFAULT_ALGORITHMS, JwkSet, Policy, Rejection, Verified, is_hmac, scopes_of,
};
