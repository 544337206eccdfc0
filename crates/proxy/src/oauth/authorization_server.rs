//! The gateway as the hosts' OAuth 2.1 authorization server
//! (`[authorization_server]`), for identity providers that hosts cannot
//! register with: hosts register here (RFC 7591, or a Client ID Metadata
//! Document), the user consents to the client (the confused-deputy defence
//! of the MCP security best practices), signs in at the operator's provider
//! with the gateway's own client there, and the host gets a code (with
//! `iss`, RFC 9207), then access tokens the gateway signs (RFC 9068) for one
//! protected endpoint, and rotating refresh tokens.
//!
//! The rules are [`mcp_ui_identity::authorization_server`]'s; this module does the IO.
//! Nothing is stored on the way: the registration is sealed into the
//! `client_id`, the consent ticket, the pending login, the code, the
//! remembered consent and the refresh token are sealed with the gateway's
//! session key, so any replica serves any step. Only what must be
//! remembered between steps is: codes redeemed and refresh tokens replaced
//! (each redeemed once), and families of refresh tokens revoked ([`store`]).
//!
//! - `state`: the authorization server's configuration, keys and tables;
//! - `basics`: time, randomness, bodies and the answers every endpoint uses;
//! - `endpoints`: the paths served, from the issuer;
//! - `metadata`: RFC 8414 metadata and the published keys;
//! - `clients`: a client by its id, sealed or fetched;
//! - `register`: dynamic client registration;
//! - `login`: the authorization endpoint, the consent page and its answer;
//! - `callback`: the provider's answer, and the code;
//! - `token`: the token and revocation endpoints;
//! - `grant`: the token answer every grant ends in, and why one is refused;
//! - `assertion`: the JWT bearer grant with an enterprise's identity
//!   assertion (ID-JAG); `enterprise`: the issuers trusted for them, and
//!   their keys;
//! - `provider`: the identity provider's endpoints and token exchange;
//! - `sealed`: what is sealed, and the cookies that carry some of it;
//! - `store`: what is remembered between requests;
//! - `page`: the HTML pages a person sees.

mod assertion;
mod basics;
mod callback;
mod clients;
mod endpoints;
mod enterprise;
mod grant;
mod login;
mod metadata;
mod page;
mod provider;
mod register;
mod sealed;
pub mod state;
mod store;
mod token;

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;

use mcp_ui_identity::authorization_server::authorize::Resource;
use mcp_ui_model::reply::{self, Body};

pub use basics::{Peer, media_type};
pub use endpoints::Endpoint;
use state::AuthorizationServer;

/// The answer of `a`'s `endpoint` to `req`; `resources`: the protected
/// endpoints whose tokens it issues, as they are now.
pub async fn serve(
    a: &AuthorizationServer,
    resources: impl Fn() -> Vec<Resource>,
    endpoint: Endpoint,
    req: Request<Incoming>,
) -> Response<Body> {
    let registration = a.config.registration.enabled;
    let mut r = match (endpoint, req.method()) {
        (_, &Method::OPTIONS) => crate::middleware::cors::preflight(),
        (Endpoint::Metadata, &Method::GET | &Method::HEAD) => metadata::document(a, &resources()),
        (Endpoint::Keys, &Method::GET | &Method::HEAD) => metadata::keys(a),
        (Endpoint::Register, &Method::POST) if registration => register::serve(a, req).await,
        (Endpoint::Authorize, &Method::GET) => login::authorize(a, &resources(), req).await,
        (Endpoint::Authorize, &Method::POST) => login::decide(a, req).await,
        (Endpoint::Callback, &Method::GET) => callback::serve(a, req).await,
        (Endpoint::Token, &Method::POST) => token::serve(a, &resources(), req).await,
        (Endpoint::Revoke, &Method::POST) => token::revoke(a, req).await,
        (Endpoint::Register, _) if !registration => reply::text(
            StatusCode::NOT_FOUND,
            "not found: dynamic client registration is off (authorization_server.registration.enabled)\n",
        ),
        (e, _) => {
            let mut r = reply::text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
            if let Ok(v) = http::HeaderValue::from_str(e.allow()) {
                r.headers_mut().insert(http::header::ALLOW, v);
            }
            r
        }
    };
    // Nothing the authorization server answers may be kept by a cache, but
    // its metadata and keys (OAuth 2.1 §3.2.3, RFC 6749 §5.1).
    if !matches!(endpoint, Endpoint::Metadata | Endpoint::Keys) {
        let h = r.headers_mut();
        h.insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-store"),
        );
        h.insert(
            http::header::PRAGMA,
            http::HeaderValue::from_static("no-cache"),
        );
    }
    r
}
