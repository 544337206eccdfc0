//! Dynamic client registration (RFC 7591): the metadata checked, the client
//! sealed into its `client_id` (nothing is stored, so a flood of
//! registrations fills nothing and every replica knows every client), a
//! secret for a confidential client, bounded in size and rate.

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{Value, json};

use super::basics::{Peer, oauth_error, read_body};
use super::sealed::{self, Purpose, Registered};
use super::state::AuthorizationServer;
use mcp_ui_identity::authorization_server::OAuthError;
use mcp_ui_identity::authorization_server::client::{self, AuthMethod, Limits};
use mcp_ui_model::reply::{self, Body};

pub(super) async fn serve(a: &AuthorizationServer, req: Request<Incoming>) -> Response<Body> {
    let peer = req.extensions().get::<Peer>().map(|p| p.0.ip());
    if let Err(r) = a.rate_registration(peer) {
        return *r;
    }
    let (parts, body) = match read_body(req, a.config.registration.max_bytes).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    if !super::basics::content_type_is(&parts, "application/json") {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            &OAuthError::request("a registration is JSON (Content-Type: application/json)"),
        );
    }
    let Ok(metadata) = serde_json::from_slice::<Value>(&body) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            &OAuthError::new("invalid_client_metadata", "the registration is not JSON"),
        );
    };
    let limits = Limits {
        max_redirect_uris: a.config.registration.max_redirect_uris,
        ..Limits::default()
    };
    let registered = match client::register(&metadata, &limits) {
        Ok(c) => c,
        Err(e) => return oauth_error(StatusCode::BAD_REQUEST, &e),
    };
    let now = mcp_ui_model::clock::unix_secs();
    let secret = (registered.token_endpoint_auth_method != AuthMethod::None)
        .then(|| super::basics::random_text(32));
    let sealed = Registered {
        client: registered.clone(),
        secret: secret.clone(),
        issued_at: now,
    };
    let client_id = sealed::seal(&a.key, Purpose::Client, &sealed);
    if client_id.len() > sealed::MAX_CLIENT_ID {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            &OAuthError::new(
                "invalid_client_metadata",
                "the registration is too large to be carried in a client id: register fewer or shorter redirect URIs and names",
            ),
        );
    }
    tracing::info!(
        client_name = registered.client_name.as_deref().unwrap_or(""),
        redirect_uris = ?registered.redirect_uris,
        "a client registered"
    );
    // RFC 7591 §3.2.1: the metadata as registered, with the client's id.
    let mut answer = json!({
        "client_id": client_id,
        "client_id_issued_at": now,
        "redirect_uris": registered.redirect_uris,
        "token_endpoint_auth_method": registered.token_endpoint_auth_method.as_str(),
        "grant_types": if registered.refresh { json!(["authorization_code", "refresh_token"]) } else { json!(["authorization_code"]) },
        "response_types": ["code"],
    });
    if let Value::Object(m) = &mut answer {
        if let Some(s) = &secret {
            m.insert("client_secret".into(), s.clone().into());
            // It does not expire: a client registered once is used for as
            // long as its connection lasts (ChatGPT does not register again).
            m.insert("client_secret_expires_at".into(), 0.into());
        }
        for (k, v) in [
            ("client_name", &registered.client_name),
            ("client_uri", &registered.client_uri),
            ("scope", &registered.scope),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), v.clone().into());
            }
        }
    }
    reply::json(StatusCode::CREATED, Bytes::from(answer.to_string()))
}
