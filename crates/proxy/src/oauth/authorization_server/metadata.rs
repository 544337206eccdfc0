//! The authorization server's metadata (RFC 8414 §2) and its published
//! keys.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use serde_json::{Value, json};

use super::endpoints::Endpoint;
use super::state::AuthorizationServer;
use mcp_ui_identity::authorization_server::authorize::Resource;
use mcp_ui_identity::authorization_server::client::AuthMethod;
use mcp_ui_model::reply::{self, Body};

/// The metadata document.
pub(super) fn document(a: &AuthorizationServer, resources: &[Resource]) -> Response<Body> {
    let url = |e: Endpoint| a.url(e);
    let mut scopes: Vec<String> = Vec::new();
    for r in resources {
        for s in &r.offered {
            if !scopes.contains(s) {
                scopes.push(s.clone());
            }
        }
    }
    let methods: Vec<&str> = AuthMethod::ALL.iter().map(|m| m.as_str()).collect();
    let mut doc = json!({
        "issuer": a.config.issuer,
        "authorization_endpoint": url(Endpoint::Authorize),
        "token_endpoint": url(Endpoint::Token),
        "jwks_uri": url(Endpoint::Keys),
        "revocation_endpoint": url(Endpoint::Revoke),
        "scopes_supported": scopes,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": a.grant_types(),
        "token_endpoint_auth_methods_supported": methods,
        "revocation_endpoint_auth_methods_supported": methods,
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": a.config.documents.enabled,
    });
    if a.config.registration.enabled
        && let Value::Object(m) = &mut doc
    {
        m.insert(
            "registration_endpoint".into(),
            url(Endpoint::Register).into(),
        );
    }
    // Enterprise-managed authorization: the profile of the JWT bearer grant
    // it takes (draft-ietf-oauth-identity-assertion-authz-grant).
    if a.enterprise.offered()
        && let Value::Object(m) = &mut doc
    {
        m.insert(
            "authorization_grant_profiles_supported".into(),
            json!([mcp_ui_identity::authorization_server::assertion::PROFILE]),
        );
    }
    cached(reply::json(StatusCode::OK, Bytes::from(doc.to_string())))
}

/// The published key set.
pub(super) fn keys(a: &AuthorizationServer) -> Response<Body> {
    let body = serde_json::to_vec(&a.keys).unwrap_or_default();
    let mut r = cached(reply::json(StatusCode::OK, Bytes::from(body)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/jwk-set+json"),
    );
    r
}

fn cached(mut r: Response<Body>) -> Response<Body> {
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    r
}
