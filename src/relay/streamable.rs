//! The relay to a streamable HTTP upstream: each client request becomes one
//! upstream request on a pooled connection, and the answer streams back as
//! received, except the one response a plan rewrites.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::value::RawValue;

use super::{
    Finisher, METHOD_HEADER, NAME_HEADER, PROTOCOL_HEADER, SESSION_HEADER, SessionRef, stream,
    upstream_failure,
};
use crate::config::{AuthChallenge, Transport};
use crate::gateway::Gateway;
use crate::jsonrpc;
use crate::reply::{self, Body};
use crate::session::{Route, Token};
use crate::upstream::http::UpstreamBody;
use crate::upstream::{self, UpstreamError};

/// Request headers the mount's own upstream receives when the client sent
/// them (with the mount's `forward_headers`); never any other upstream's, and
/// never logged: `Authorization` carries the client's token.
static FORWARDED_REQUEST_HEADERS: [HeaderName; 8] = [
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::AUTHORIZATION,
    header::USER_AGENT,
    PROTOCOL_HEADER,
    HeaderName::from_static("last-event-id"),
    METHOD_HEADER,
    NAME_HEADER,
];

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
pub(super) struct Call {
    /// The JSON-RPC id of a single request, as written.
    pub request_id: Option<String>,
    /// Whether it is a `tools/call` (eligible for in-band challenges).
    pub tool_call: bool,
}

pub(super) async fn post_http(
    gw: &Arc<Gateway>,
    mount: usize,
    headers: &HeaderMap,
    body: Bytes,
    sref: SessionRef,
    call: Call,
    finisher: Option<Finisher>,
) -> Response<Body> {
    let Call {
        request_id,
        tool_call,
    } = call;
    let Transport::Http { url } = &gw.mounts[mount].mount.transport else {
        unreachable!("HTTP mount")
    };
    let req = upstream_request(
        gw,
        mount,
        http::Method::POST,
        url.clone(),
        headers,
        &sref,
        body,
    );
    let resp = match upstream::http::send(
        &gw.client,
        &gw.mounts[mount].mount.name,
        req,
        gw.request_timeout(),
    )
    .await
    {
        Ok(resp) => resp,
        Err(e) => return upstream_failure(request_id.as_deref(), &e),
    };
    let (parts, body) = resp.into_parts();
    // A request's answer is JSON or an SSE stream; anything else (an HTML
    // error page from a proxy, a misconfigured URL) is not an MCP answer.
    if parts.status.is_success()
        && parts.status != StatusCode::ACCEPTED
        && let Some(id) = request_id.as_deref()
        && !is_event_stream(&parts.headers)
        && !is_json(&parts.headers)
    {
        let found = parts
            .headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_else(|| "none".into());
        let e = UpstreamError::Protocol {
            upstream: gw.mounts[mount].mount.name.clone(),
            detail: format!(
                "answered {} with Content-Type {found:?}, not application/json or text/event-stream",
                parts.status
            ),
        };
        return upstream_failure(Some(id), &e);
    }
    let mut head = relay_head(gw, mount, &parts, &sref);
    let config = &gw.mounts[mount].mount;
    crate::auth::rewrite_challenges(&gw.auth, mount, config, headers, head.headers_mut());
    if tool_call
        && matches!(
            parts.status,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        )
        && gw.mounts[mount].mount.auth_challenge == AuthChallenge::InBand
        && let (Some(id), Some(base)) = (request_id.as_deref(), gw.auth.base(headers))
        && let Ok(id) = serde_json::from_str::<&RawValue>(id)
    {
        let prm = crate::auth::prm_url(&base, &gw.mounts[mount].mount.path);
        let answer = crate::auth::in_band_result(id, parts.status, head.headers(), &prm);
        let mut r = reply::json(StatusCode::OK, answer);
        if let Some(sid) = head.headers().get(SESSION_HEADER) {
            r.headers_mut().insert(SESSION_HEADER, sid.clone());
        }
        return r;
    }
    // A request's SSE answer that breaks off, or is still open at the request
    // timeout, ends with an error for it.
    let timeout_secs = gw.limits.request_timeout_secs;
    let deadline = tokio::time::Instant::now() + gw.request_timeout();
    let sse_request = parts.status.is_success() && is_event_stream(&parts.headers);
    let error_event = request_id.as_deref().filter(|_| sse_request).map(|id| {
        let id: Box<RawValue> = RawValue::from_string(id.to_owned()).expect("parsed JSON id");
        let upstream = gw.mounts[mount].mount.name.clone();
        move |cause: &str| {
            let message = format!("upstream '{upstream}' stream failed: {cause}");
            super::message_event(&jsonrpc::error_response(
                Some(&id),
                jsonrpc::code::UPSTREAM_ERROR,
                &message,
            ))
        }
    });
    let (Some(finisher), Some(id), true) = (finisher, request_id, parts.status.is_success()) else {
        let body = body.map_err(Into::into).boxed_unsync();
        return match error_event {
            Some(make) => {
                head.map(|()| stream::error_event_on_failure(body, make, deadline, timeout_secs))
            }
            None => head.map(|()| body),
        };
    };
    let id: Box<RawValue> = RawValue::from_string(id).expect("the id was parsed from JSON");
    let key = jsonrpc::id_key(&id);
    if is_event_stream(&parts.headers) {
        let limit = gw.limits.max_message_bytes;
        let body = stream::rewrite_response_events(body, key, finisher, limit);
        return match error_event {
            Some(make) => {
                head.map(|()| stream::error_event_on_failure(body, make, deadline, timeout_secs))
            }
            None => head.map(|()| body),
        };
    }
    // A JSON answer is read whole (bounded): a rewrite needs all of it, and
    // so does the look for an in-band challenge.
    let limit = gw.limits.max_message_bytes;
    let bytes = match read_whole(body, limit).await {
        Ok(bytes) => bytes,
        Err(detail) => {
            let e = UpstreamError::Protocol {
                upstream: gw.mounts[mount].mount.name.clone(),
                detail,
            };
            return upstream_failure(Some(id.get()), &e);
        }
    };
    let bytes = match finisher.keeps(&bytes) {
        true => bytes,
        false => finisher.finish(&bytes).unwrap_or(bytes),
    };
    head.map(|()| reply::full(bytes))
}

/// A whole body, refused beyond `limit` bytes. One frame is kept as it
/// came; several are gathered into one buffer of the announced length, so
/// the connection's read buffers they were cut from are freed as it goes.
async fn read_whole(mut body: UpstreamBody, limit: usize) -> Result<Bytes, String> {
    let announced = http_body::Body::size_hint(&body)
        .exact()
        .map_or(0, |n| n as usize);
    let mut first: Option<Bytes> = None;
    let mut whole = BytesMut::new();
    let mut len = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("could not read its response: {e}"))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        len += data.len();
        if len > limit {
            return Err(format!(
                "its response exceeds {limit} bytes (limits.max_message_bytes)"
            ));
        }
        match first.take() {
            None if whole.is_empty() => first = Some(data),
            Some(f) => {
                whole.reserve(announced.max(len).min(limit));
                whole.extend_from_slice(&f);
                whole.extend_from_slice(&data);
            }
            None => whole.extend_from_slice(&data),
        }
    }
    Ok(first.unwrap_or_else(|| whole.freeze()))
}

fn upstream_request(
    gw: &Gateway,
    mount: usize,
    method: http::Method,
    url: http::Uri,
    headers: &HeaderMap,
    sref: &SessionRef,
    body: Bytes,
) -> Request<Full<Bytes>> {
    let mut req = Request::new(Full::new(body));
    *req.method_mut() = method;
    *req.uri_mut() = url;
    let out = req.headers_mut();
    let extra = &gw.mounts[mount].mount.forward_headers;
    // One pass over the client's headers, in their order.
    for (name, v) in headers {
        let own = extra.contains(name);
        if !own && !FORWARDED_REQUEST_HEADERS.contains(name) {
            continue;
        }
        let mut v = v.clone();
        // Debug output of a sensitive value (and HPACK indexing) hides it.
        if own || name == header::AUTHORIZATION {
            v.set_sensitive(true);
        }
        out.append(name.clone(), v);
    }
    if let SessionRef::Http {
        upstream: Some(s), ..
    } = sref
        && let Ok(v) = HeaderValue::from_str(s)
    {
        out.insert(SESSION_HEADER, v);
    }
    req
}

/// The head of an HTTP upstream's response as the client gets it: status,
/// allowed headers, and the session id translated.
fn relay_head(
    gw: &Gateway,
    mount: usize,
    parts: &http::response::Parts,
    sref: &SessionRef,
) -> Response<()> {
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
        let id = match sref {
            SessionRef::Http {
                upstream: Some(prev),
                received,
            } if prev == up => received.clone(),
            _ => {
                let token = Token {
                    mount: gw.mounts[mount].mount.name.clone(),
                    route: Route::Http {
                        upstream_session: Some(up.to_owned()),
                    },
                };
                HeaderValue::from_str(&gw.key.seal(&token))
                    .expect("base64url is a valid header value")
            }
        };
        h.insert(SESSION_HEADER, id);
    }
    out
}

fn is_json(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

fn is_event_stream(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

pub(super) async fn forward_bodyless(
    gw: &Arc<Gateway>,
    mount: usize,
    method: http::Method,
    url: &http::Uri,
    headers: &HeaderMap,
    sref: &SessionRef,
) -> Response<Body> {
    let method_is_get = method == http::Method::GET;
    let req = upstream_request(gw, mount, method, url.clone(), headers, sref, Bytes::new());
    match upstream::http::send(
        &gw.client,
        &gw.mounts[mount].mount.name,
        req,
        gw.request_timeout(),
    )
    .await
    {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            let mut head = relay_head(gw, mount, &parts, sref);
            let config = &gw.mounts[mount].mount;
            crate::auth::rewrite_challenges(&gw.auth, mount, config, headers, head.headers_mut());
            // The server's own stream also carries the gateway's list-changed
            // announcements after an overlay reload.
            if method_is_get && parts.status.is_success() && is_event_stream(&parts.headers) {
                let changes = gw.live.subscribe();
                let limit = gw.limits.max_message_bytes;
                let stop = gw.shutdown.clone();
                return head.map(|()| stream::with_announcements(body, changes, limit, stop));
            }
            head.map(|()| body.map_err(Into::into).boxed_unsync())
        }
        Err(e) => upstream_failure(None, &e),
    }
}
