//! The relay to a streamable HTTP upstream: each client request becomes one
//! upstream request on a pooled connection, and the answer streams back as
//! received, except the one response a plan rewrites.
//!
//! - `media`: what the answer is by its Content-Type;
//! - `challenge`: a refused tool call answered with an in-band challenge;
//! - `events`: an SSE answer, relayed event by event;
//! - `pass`: an answer relayed as it streams in;
//! - `whole`: a JSON answer read whole, for the plan's rewrite.

mod challenge;
mod events;
mod media;
mod pass;
mod whole;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::value::RawValue;

use super::context::{Ctx, PROTOCOL_HEADER, SESSION_HEADER, SessionRef};
use super::stream;
use crate::pending::finish::Finisher;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::Body;
use mcp_ui_model::session_id::{Route, Token};
use mcp_ui_upstream::upstream::client::{UpstreamBody, send};
use media::{is_event_stream, protocol_failure};

/// Response headers relayed from an HTTP upstream; the session id is
/// translated separately and hop-by-hop headers never pass.
static FORWARDED_RESPONSE_HEADERS: [HeaderName; 6] = [
    header::CONTENT_TYPE,
    header::CACHE_CONTROL,
    header::WWW_AUTHENTICATE,
    header::RETRY_AFTER,
    header::ALLOW,
    PROTOCOL_HEADER,
];

/// What the relay knows of the request it forwards.
pub struct Call {
    /// The JSON-RPC id of a single request, as written.
    pub request_id: Option<Box<RawValue>>,
    /// Whether it is a `tools/call` (eligible for in-band challenges).
    pub tool_call: bool,
    /// A `subscriptions/listen` (2026-07-28): what it listens for.
    pub subscription: Option<mcp_ui_rewrite::bridge::Filter>,
    /// The client's session is the upstream's, opened again when forgotten
    /// ([`super::route::Route::Streamable`]).
    pub revive: bool,
}

/// Forward one POST and relay its answer.
pub async fn post(
    cx: &Ctx<'_>,
    body: Bytes,
    call: Call,
    finisher: Option<Finisher>,
) -> Response<Body> {
    let Call {
        request_id,
        tool_call,
        subscription,
        revive,
    } = call;
    let id = request_id.as_deref();
    let resp = match send_reviving(cx, http::Method::POST, body, revive).await {
        Ok(resp) => resp,
        Err(f) => return f.respond(id),
    };
    let (parts, body) = resp.into_parts();
    super::ended::expired(cx, parts.status);
    if let Err(failure) = media::refuse_unknown(cx, &parts, id.is_some()) {
        return failure.respond(id);
    }
    let head = match relay_head(cx, &parts) {
        Ok(head) => head,
        Err(failure) => return failure.respond(id),
    };
    if let Some(answer) = challenge::in_band(cx, tool_call, parts.status, id, &head) {
        return answer;
    }
    let success = parts.status.is_success();
    if success && is_event_stream(&parts.headers) {
        return events::relay(cx, head, body, finisher, id, subscription);
    }
    let (Some(finisher), Some(id), true) = (finisher, id, success) else {
        return pass::pass_through(cx, head, body, id).await;
    };
    whole::finished(cx, head, body, finisher, id).await
}

/// Send a request for the client's session; when its route says to
/// `revive` it and the upstream says it does not know it
/// ([`mcp_ui_wire::protocol::forgot_session`]: it forgot the session, which
/// the client did not end), open another in its place and send the request
/// again: it never reached the upstream.
async fn send_reviving(
    cx: &Ctx<'_>,
    method: http::Method,
    body: Bytes,
    revive: bool,
) -> Result<http::Response<UpstreamBody>, Failure> {
    let gw = cx.gw;
    let used = current_session(cx);
    let req = upstream_request(cx, method.clone(), body.clone());
    let resp = send(
        &gw.upstreams.client,
        cx.upstream(),
        req,
        gw.request_timeout(),
    )
    .await
    .map_err(Failure::Upstream)?;
    let (
        true,
        SessionRef::Http {
            upstream: Some(stale),
            ..
        },
    ) = (revive, &cx.session)
    else {
        return Ok(resp);
    };
    let index = cx.mount.index;
    let status = resp.status();
    if !matches!(status, StatusCode::NOT_FOUND | StatusCode::BAD_REQUEST)
        || gw
            .pending
            .reopened
            .is_ended(index, stale, cx.session_started)
    {
        return Ok(resp);
    }
    // A 400 is read to tell a forgotten session from a refusal.
    let (parts, answer) = resp.into_parts();
    let (read, answer) = match status {
        StatusCode::BAD_REQUEST => answer.read_whole(4096).await,
        _ => (None, answer),
    };
    if !mcp_ui_wire::protocol::forgot_session(status, read.as_deref()) {
        return Ok(http::Response::from_parts(parts, answer));
    }
    drop(answer);
    // One reopening per id: requests that found it forgotten at the same
    // moment wait for it, then use the session it opened.
    let _turn = gw.pending.reopening.turn((index, stale.clone())).await;
    if current_session(cx) == used {
        super::revive::reopen(cx, stale).await?;
    }
    let req = upstream_request(cx, method, body);
    send(
        &gw.upstreams.client,
        cx.upstream(),
        req,
        gw.request_timeout(),
    )
    .await
    .map_err(Failure::Upstream)
}

/// The upstream session standing in for the client's now: the one its id
/// carries, or the one opened again in its place.
fn current_session(cx: &Ctx<'_>) -> Option<String> {
    let SessionRef::Http {
        upstream: Some(s), ..
    } = &cx.session
    else {
        return None;
    };
    Some(
        cx.gw
            .pending
            .reopened
            .current(cx.mount.index, s)
            .unwrap_or_else(|| s.clone()),
    )
}

fn upstream_request(cx: &Ctx<'_>, method: http::Method, body: Bytes) -> Request<Full<Bytes>> {
    let sid = current_session(cx).and_then(|s| HeaderValue::from_str(&s).ok());
    super::forward::request_for(cx, method, body, sid.as_ref())
}

/// The head of an HTTP upstream's response as the client gets it: status,
/// allowed headers, the session id translated and OAuth challenges pointed
/// at the gateway. A new upstream session id too long to carry is refused
/// (and that upstream session ended).
fn relay_head(cx: &Ctx<'_>, parts: &http::response::Parts) -> Result<Response<()>, Failure> {
    let mut out = Response::new(());
    *out.status_mut() = parts.status;
    let h = out.headers_mut();
    for (name, v) in &parts.headers {
        if FORWARDED_RESPONSE_HEADERS.contains(name) {
            h.append(name.clone(), v.clone());
        }
    }
    if is_event_stream(&parts.headers) {
        h.insert(
            HeaderName::from_static("x-accel-buffering"),
            HeaderValue::from_static("no"),
        );
    }
    if let Some(up) = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        let id = match &cx.session {
            SessionRef::Http {
                upstream: Some(_),
                received,
            } if current_session(cx).as_deref() == Some(up) => received.clone(),
            _ if !mcp_ui_model::session_id::carries_upstream_id(up) => {
                end_upstream_session(cx, up);
                return Err(protocol_failure(
                    cx,
                    format!(
                        "its session id is {} bytes long; the gateway carries session ids of at most {} bytes",
                        up.len(),
                        mcp_ui_model::session_id::MAX_UPSTREAM_SESSION_ID
                    ),
                ));
            }
            _ => {
                let token = Token {
                    mount: cx.upstream().to_owned(),
                    route: Route::Http {
                        upstream_session: Some(up.to_owned()),
                    },
                    owner: cx.owner,
                    host: Some(cx.host),
                    started: Some(mcp_ui_model::clock::unix_millis()),
                    hello: cx.hello.clone(),
                };
                HeaderValue::from_str(&cx.gw.ids.key.seal(&token))
                    .expect("base64url is a valid header value")
            }
        };
        h.insert(SESSION_HEADER, id);
    }
    let (gw, mount) = (cx.gw, cx.mount);
    crate::oauth::passthrough::rewrite_challenges(
        &gw.oauth.passthrough,
        mount.index,
        &mount.config,
        cx.headers,
        h,
    );
    Ok(out)
}

/// Ask the upstream to end a session the gateway will not use (best effort,
/// in the background, bounded by the connect timeout).
fn end_upstream_session(cx: &Ctx<'_>, upstream_id: &str) {
    let Ok(sid) = HeaderValue::from_str(upstream_id) else {
        return;
    };
    let mut req = upstream_request(cx, http::Method::DELETE, Bytes::new());
    req.headers_mut().insert(SESSION_HEADER, sid);
    let (gw, name) = (cx.gw.clone(), cx.upstream().to_owned());
    let bound = std::time::Duration::from_secs(gw.limits.connect_timeout_secs);
    tokio::spawn(async move {
        let _ = send(&gw.upstreams.client, &name, req, bound).await;
    });
}

/// Forward a GET or DELETE and relay its answer. A GET stream also carries
/// the gateway's list-changed announcements after an overlay reload.
pub(crate) async fn forward_bodyless(
    cx: &Ctx<'_>,
    method: http::Method,
    revive: bool,
) -> Response<Body> {
    let gw = cx.gw;
    let get = method == http::Method::GET;
    if method == http::Method::DELETE
        && let Some(s) = current_session(cx)
    {
        gw.pending
            .reopened
            .end(cx.mount.index, &s, cx.session_started);
        if let SessionRef::Http {
            upstream: Some(old),
            ..
        } = &cx.session
        {
            gw.pending
                .reopened
                .end(cx.mount.index, old, cx.session_started);
        }
    }
    match send_reviving(cx, method, Bytes::new(), revive).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            super::ended::expired(cx, parts.status);
            let head = match relay_head(cx, &parts) {
                Ok(head) => head,
                Err(failure) => return failure.respond(None),
            };
            if get && parts.status.is_success() && is_event_stream(&parts.headers) {
                // The client's stream lasts as long as the session, not a
                // request.
                let body = body.unbounded();
                let changes = gw.live.subscribe();
                let limit = gw.limits.max_message_bytes;
                let stop = gw.shutdown.clone();
                return head.map(|()| {
                    stream::with_announcements(body, changes, limit, stop, super::watch::watch(cx))
                });
            }
            head.map(|()| body.map_err(Into::into).boxed_unsync())
        }
        Err(f) => f.respond(None),
    }
}
