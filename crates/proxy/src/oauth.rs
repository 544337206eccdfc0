//! OAuth at the gateway, in the three roles it can play for a mount or an
//! app (docs/oauth.md). Each role's rules are pure functions of
//! `mcp_ui_identity`; these modules do their IO (fetches, the store, the
//! clock, the answers).
//!
//! - [`passthrough`]: the upstream has OAuth of its own. The client's
//!   credentials reach it unchanged; its challenges are pointed at the
//!   gateway's protected-resource metadata (RFC 9728), served per mount from
//!   the upstream's document with the mount's own `resource`, in headers or
//!   in band (`_meta["mcp/www_authenticate"]`). The metadata URLs of every
//!   role are made here.
//! - [`resource_server`]: `[auth]`, for upstreams that have none. Every
//!   request's bearer token is checked against its issuer (a JWT against its
//!   published keys, an opaque token by introspection) and the endpoint's
//!   audience, which `public_url` or `audience` fixes and no request header
//!   chooses; the verified caller is put in the request's extensions
//!   ([`resource_server::Access`]), where sessions, conversations, claims and
//!   rates find it.
//! - [`authorization_server`]: `[authorization_server]`, for identity
//!   providers hosts cannot register with. Hosts register here and sign users
//!   in through the operator's provider; the gateway issues the access tokens
//!   its own resource server accepts.
//!
//! - [`fetch`]: what the gateway asks identity providers over HTTP, for
//!   the resource server and the authorization server alike;
//! - [`keys`]: an issuer's signing keys, found by its metadata and fetched
//!   again when it rotates them (the resource server's issuers, the
//!   authorization server's enterprise issuers).
//!
//! Nothing here logs a token, a code or a secret.

pub mod authorization_server;
pub mod fetch;
pub mod keys;
pub mod passthrough;
pub mod resource_server;

use std::sync::Arc;

/// The gateway's three OAuth roles, each for the mounts and apps that
/// choose it.
pub struct OAuth {
    /// An upstream's own OAuth passed through: its metadata locations and
    /// the rewritten documents.
    pub passthrough: Arc<passthrough::AuthState>,
    /// The issuers of the endpoints that require a token (`[auth]`).
    pub resource_server: resource_server::ResourceServer,
    /// The gateway as an authorization server (`[authorization_server]`).
    pub authorization_server: Option<Arc<authorization_server::state::AuthorizationServer>>,
}
