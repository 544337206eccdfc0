//! OAuth through an app, as through a single mount: the app is one
//! protected resource (its URL); a member's 401/403 reaches the client with
//! its status and `WWW-Authenticate`, `resource_metadata` pointing at the
//! app's metadata; an in-band challenge in a tool result points there too;
//! and the app serves that metadata (`crate::auth::app`).

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderMap};
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;

use super::member::Answer;
use crate::auth;
use crate::combine::AppState;
use crate::gateway::Gateway;
use crate::middleware::cors;
use crate::relay::context::SESSION_HEADER;
use crate::reply::{self, Body};

/// Largest declared answer searched for an in-band challenge.
const IN_BAND_MAX_BYTES: u64 = 64 * 1024;

/// The app's protected-resource metadata, `GET <PRM_PATH><app path>`.
pub async fn metadata(
    gw: &Arc<Gateway>,
    app: &AppState,
    method: &Method,
    headers: &HeaderMap,
) -> Response<Body> {
    match *method {
        Method::GET | Method::HEAD => {}
        Method::OPTIONS => return cors::preflight(),
        _ => {
            let mut r = reply::text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
            r.headers_mut().insert(
                header::ALLOW,
                header::HeaderValue::from_static("GET, OPTIONS"),
            );
            return r;
        }
    }
    let mut members = Vec::new();
    for m in &app.config.members {
        if let Some(s) = gw.mounts.get(m.mount) {
            members.push((s.index, s.config.clone()));
        }
    }
    let fetch = auth::Fetch {
        client: &gw.client,
        timeout: gw.request_timeout(),
    };
    auth::app::serve_app_prm(
        &gw.auth,
        &app.config.name,
        &app.config.path,
        &members,
        &fetch,
        headers,
    )
    .await
}

/// The app's metadata URL for a request with these headers.
pub fn prm_url(gw: &Gateway, app: &AppState, headers: &HeaderMap) -> Option<String> {
    let base = gw.auth.base(headers)?;
    Some(auth::prm_url(&base, &app.config.path))
}

/// Whether a member refused a request for authorization.
pub fn is_refusal(status: StatusCode) -> bool {
    matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
}

/// A member's refusal (401/403), relayed as the app's: its status, body and
/// challenges, pointed at the app's metadata.
pub fn relay_refusal(prm: Option<&str>, resp: Response<Body>) -> Response<Body> {
    let (mut parts, body) = resp.into_parts();
    parts.headers.remove(SESSION_HEADER);
    if let Some(prm) = prm {
        auth::app::point_challenges_at(&mut parts.headers, prm);
    }
    Response::from_parts(parts, body)
}

/// A refusal already read whole ([`Answer`]), relayed as the app's.
pub fn answer_refusal(prm: Option<&str>, a: &Answer) -> Response<Body> {
    let mut r = match &a.message {
        Some(m) => reply::json(a.status, Bytes::from(m.to_string())),
        None => reply::status(a.status),
    };
    for v in a.headers.get_all(header::WWW_AUTHENTICATE) {
        r.headers_mut().append(header::WWW_AUTHENTICATE, v.clone());
    }
    if let Some(prm) = prm {
        auth::app::point_challenges_at(r.headers_mut(), prm);
    }
    r
}

/// A member's refusal as the in-band tool result a `tools/call` gets (for
/// an app whose members answer challenges in-band), pointed at the app's
/// metadata `prm`.
pub fn in_band_refusal(id: &serde_json::value::RawValue, prm: &str, a: &Answer) -> Response<Body> {
    let mut h = HeaderMap::new();
    for v in a.headers.get_all(header::WWW_AUTHENTICATE) {
        h.append(header::WWW_AUTHENTICATE, v.clone());
    }
    auth::app::point_challenges_at(&mut h, prm);
    reply::json(StatusCode::OK, auth::in_band_result(id, a.status, &h, prm))
}

/// A member's JSON answer with an in-band challenge in its result
/// (`_meta["mcp/www_authenticate"]`) pointed at the app's metadata; other
/// answers pass untouched. The member's mount pointed it at the gateway's
/// metadata for the member (the gateway's `base`); another origin's URL is
/// left alone, as on a single mount. An answer declaring more than 64 KiB
/// passes as it streams (a challenge is a small result).
pub async fn in_band(
    gw: &Gateway,
    app: &AppState,
    headers: &HeaderMap,
    resp: Response<Body>,
) -> Response<Body> {
    let (Some(base), Some(prm)) = (gw.auth.base(headers), prm_url(gw, app, headers)) else {
        return resp;
    };
    // A challenge is a small result: a large answer passes as it streams.
    let declared = resp
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > IN_BAND_MAX_BYTES) {
        return resp;
    }
    let (parts, mut body) = resp.into_parts();
    let limit = gw.limits.max_message_bytes;
    let mut whole = Vec::new();
    let mut failed = None;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(f) => {
                if let Ok(d) = f.into_data() {
                    whole.extend_from_slice(&d);
                }
                if whole.len() > limit {
                    failed = Some(format!("larger than limits.max_message_bytes ({limit})"));
                    break;
                }
            }
            Err(e) => {
                failed = Some(e.to_string());
                break;
            }
        }
    }
    if let Some(why) = failed {
        let message = format!(
            "app `{}`: a member's answer could not be read: {why}",
            app.config.name
        );
        return reply::error(
            StatusCode::BAD_GATEWAY,
            crate::jsonrpc::code::SERVER_ERROR,
            &message,
        );
    }
    let bytes = Bytes::from(whole);
    let out = auth::rewrite_result_challenges(&bytes, &prm, &base).unwrap_or(bytes);
    Response::from_parts(parts, reply::full(out))
}

/// An SSE event's data with an in-band challenge pointed at `prm` (the
/// app's metadata; `base` the gateway's), `None` when nothing changes.
pub fn in_band_event(data: &[u8], prm: &str, base: &str) -> Option<Bytes> {
    auth::rewrite_result_challenges(data, prm, base)
}
