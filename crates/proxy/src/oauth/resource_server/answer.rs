//! The answers of an endpoint that asks for tokens: its refusals and their
//! challenges (RFC 6750 §3), and its protected-resource metadata (RFC 9728).

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};

use mcp_ui_identity::Rejection;
use mcp_ui_identity::resource_server::challenge;
use mcp_ui_model::config::Auth;
use mcp_ui_model::reply::{self, Body};

/// Why a token has no verdict yet, or its refusal.
pub(crate) enum Outcome {
    Refused(Rejection),
    /// The issuer could not be asked (its keys, its introspection).
    Unavailable(String),
    /// The issuer is asked as often as the gateway may ask it: why, and
    /// when to try again.
    Throttled(String, std::time::Duration),
}

impl From<Rejection> for Outcome {
    fn from(r: Rejection) -> Self {
        Outcome::Refused(r)
    }
}

/// The answer refusing a request's token: 401 (none, or wrong), 403 (too
/// few scopes) or 400 (a malformed header), with the challenge that tells
/// the client where to sign in and what to ask for.
pub fn refusal(auth: &Auth, metadata_url: &str, r: &Rejection) -> Response<Body> {
    refusal_for(auth, metadata_url, r, None)
}

/// [`refusal`] of the request `id` (its id in the error body).
pub fn refusal_for(
    auth: &Auth,
    metadata_url: &str,
    r: &Rejection,
    id: Option<&serde_json::value::RawValue>,
) -> Response<Body> {
    let status = StatusCode::from_u16(r.status()).unwrap_or(StatusCode::UNAUTHORIZED);
    let message = match r.description() {
        Some(d) => format!("Unauthorized: {d}"),
        None => "Unauthorized: this endpoint needs a bearer token".to_owned(),
    };
    let mut resp = reply::json(
        status,
        mcp_ui_wire::jsonrpc::error_response(
            id,
            mcp_ui_wire::jsonrpc::code::SERVER_ERROR,
            &message,
        ),
    );
    if let Some(c) = challenge_value(auth, metadata_url, r) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, c);
    }
    resp
}

/// The `WWW-Authenticate` value answering `r`: where to sign in, and the
/// scopes to ask for (the endpoint's, and any a tool lacks).
pub fn challenge_value(auth: &Auth, metadata_url: &str, r: &Rejection) -> Option<HeaderValue> {
    let wanted: Vec<&str> = match r {
        Rejection::InsufficientScope(missing) => auth
            .scopes
            .iter()
            .map(String::as_str)
            .chain(missing.iter().map(String::as_str))
            .fold(Vec::new(), |mut all, s| {
                if !all.contains(&s) {
                    all.push(s);
                }
                all
            }),
        _ => auth.scopes.iter().map(String::as_str).collect(),
    };
    HeaderValue::from_str(&challenge::www_authenticate(metadata_url, &wanted, r)).ok()
}

/// When to try again after the issuer could not be reached.
pub(super) const UNAVAILABLE_RETRY: std::time::Duration = std::time::Duration::from_secs(10);

/// The answer when the issuer cannot be asked (unreachable, or asked as
/// often as the gateway may): 503, to try again after `retry`, never a
/// challenge that would send the client to sign in again for nothing.
pub(super) fn unavailable(why: &str, retry: std::time::Duration) -> Response<Body> {
    let message = format!("the authorization server could not be asked to check the token: {why}");
    let mut resp = reply::json(
        StatusCode::SERVICE_UNAVAILABLE,
        mcp_ui_wire::jsonrpc::error_response(
            None,
            mcp_ui_wire::jsonrpc::code::SERVER_ERROR,
            &message,
        ),
    );
    if let Ok(v) = HeaderValue::from_str(&whole_secs(retry).to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// `wait` in whole seconds, rounded up (a `Retry-After`).
fn whole_secs(wait: std::time::Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// The protected-resource metadata (RFC 9728 §2) of an endpoint that
/// requires `auth`, at `resource`, whose tools' overlays declare the
/// scopes `declared`.
pub fn metadata(auth: &Auth, resource: &str, declared: &[String]) -> Bytes {
    let mut scopes = auth.scopes.clone();
    for s in declared {
        if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
    let doc = serde_json::json!({
        "resource": resource,
        "authorization_servers": [auth.issuer],
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
    });
    Bytes::from(doc.to_string())
}

/// The scopes the `oauth2` schemes of a mount's tool overlays name, in
/// tool order.
pub fn declared_scopes(mount: Option<&mcp_ui_overlay::overlay::MountOverlays>) -> Vec<String> {
    use mcp_ui_overlay::overlay::SecurityScheme;
    let mut out: Vec<String> = Vec::new();
    let Some(mount) = mount else {
        return out;
    };
    let mut tools: Vec<_> = mount.tools().collect();
    tools.sort_by_key(|(name, _)| *name);
    for (_, tool) in tools {
        for scheme in tool.security_schemes.as_deref().unwrap_or_default() {
            if let SecurityScheme::Oauth2 { scopes } = scheme {
                for s in scopes {
                    if !out.contains(s) {
                        out.push(s.clone());
                    }
                }
            }
        }
    }
    out
}

/// The answer to a caller past its `requests_per_minute` with `cost`
/// requests (a batch's, or one): 429, with when to try again.
pub(super) fn too_many(per_minute: u32, cost: u32, wait: std::time::Duration) -> Response<Body> {
    let secs = whole_secs(wait);
    let these = match cost {
        1 => String::new(),
        n => format!(" (this batch is {n} requests, each counted)"),
    };
    let message = format!(
        "Too many requests: this caller may send {per_minute} a minute to this endpoint (auth.requests_per_minute){these}; try again in {secs} s"
    );
    rate_refusal(&message, secs)
}

/// The answer to a batch of `cost` requests, more than a caller may send
/// in a minute (`per_minute`): 429, whatever it waits.
pub(super) fn too_large(per_minute: u32, cost: u32) -> Response<Body> {
    let message = format!(
        "Too many requests: a batch of {cost} requests is more than this caller may send in a minute ({per_minute}, auth.requests_per_minute); send it in smaller batches"
    );
    rate_refusal(&message, 60)
}

fn rate_refusal(message: &str, retry_secs: u64) -> Response<Body> {
    let mut resp = reply::json(
        StatusCode::TOO_MANY_REQUESTS,
        mcp_ui_wire::jsonrpc::error_response(
            None,
            mcp_ui_wire::jsonrpc::code::SERVER_ERROR,
            message,
        ),
    );
    if let Ok(v) = HeaderValue::from_str(&retry_secs.to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}
