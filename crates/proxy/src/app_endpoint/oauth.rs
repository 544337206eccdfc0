//! OAuth through an app, as through a single mount: the app is one
//! protected resource (its URL); a member's 401/403 reaches the client with
//! its status and `WWW-Authenticate`, `resource_metadata` pointing at the
//! app's metadata; an in-band challenge in a tool result points there too;
//! and the app serves that metadata (`crate::oauth::passthrough::app`).

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderMap};
use http::{Method, Response, StatusCode};
use serde_json::value::RawValue;

use crate::apps::AppState;
use crate::gateway::Gateway;
use crate::middleware::cors;
use crate::oauth::passthrough::{self, AuthState};
use crate::relay::context::SESSION_HEADER;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body};

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
    if let Some(required) = &app.config.auth {
        let overlays = gw.live.load();
        let mut declared: Vec<String> = Vec::new();
        for m in &app.config.members {
            for s in crate::oauth::resource_server::declared_scopes(overlays.mount(&m.upstream)) {
                if !declared.contains(&s) {
                    declared.push(s);
                }
            }
        }
        return passthrough::serve_own(
            &gw.oauth.passthrough,
            required,
            &app.config.path,
            &declared,
            headers,
        );
    }
    let mut members = Vec::new();
    for m in &app.config.members {
        if let Some(s) = gw.mounts.get(m.mount) {
            members.push((s.index, s.config.clone()));
        }
    }
    let fetch = passthrough::Fetch {
        client: &gw.upstreams.client,
        timeout: gw.request_timeout(),
    };
    passthrough::app::serve_app_prm(
        &gw.oauth.passthrough,
        &app.config.name,
        &app.config.path,
        &members,
        &fetch,
        headers,
    )
    .await
}

/// The app's metadata URL for a request with these headers.
pub(crate) fn prm_url(
    passthrough: &AuthState,
    app: &AppState,
    headers: &HeaderMap,
) -> Option<String> {
    let base = passthrough.base(headers)?;
    Some(passthrough::prm_url(&base, &app.config.path))
}

/// A member's refusal for authorization (its upstream's 401 or 403), if
/// `f` is one.
pub(crate) fn is_refusal(f: &Failure) -> bool {
    matches!(f, Failure::Refused { .. })
}

/// A member's refusal, answered as the app's: its status and challenges,
/// pointed at the app's metadata `prm`.
pub fn refusal(prm: Option<&str>, f: Failure, id: Option<&RawValue>) -> Response<Body> {
    let mut r = f.respond(id);
    r.headers_mut().remove(SESSION_HEADER);
    if let Some(prm) = prm {
        passthrough::app::point_challenges_at(r.headers_mut(), prm);
    }
    r
}

/// A member's refusal as the in-band tool result a `tools/call` gets (for
/// an app whose members answer challenges in-band), pointed at the app's
/// metadata `prm`.
pub(crate) fn in_band_refusal(id: &RawValue, prm: &str, f: &Failure) -> Response<Body> {
    let Failure::Refused {
        status, challenges, ..
    } = f
    else {
        return f.respond(Some(id));
    };
    let mut h = HeaderMap::new();
    for v in challenges {
        h.append(header::WWW_AUTHENTICATE, v.clone());
    }
    passthrough::app::point_challenges_at(&mut h, prm);
    reply::json(
        StatusCode::OK,
        passthrough::in_band_result(id, *status, &h, prm),
    )
}

/// What points a member's in-band challenges at the app's metadata: the
/// app's metadata URL and the gateway's base, when the request has them.
pub(crate) fn in_band_target(
    passthrough: &AuthState,
    app: &AppState,
    headers: &HeaderMap,
) -> Option<(String, String)> {
    Some((
        prm_url(passthrough, app, headers)?,
        passthrough.base(headers)?,
    ))
}

/// A member's message with an in-band challenge in its result
/// (`_meta["mcp/www_authenticate"]`) pointed at the app's metadata `prm`,
/// `None` when nothing changes. The member's mount pointed it at the
/// gateway's metadata for the member (the gateway's `base`); another
/// origin's URL is left alone, as on a single mount.
pub fn in_band(data: &[u8], prm: &str, base: &str) -> Option<Bytes> {
    passthrough::rewrite_result_challenges(data, prm, base)
}
