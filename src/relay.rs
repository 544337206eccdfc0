//! The relay: one client exchange (a POST, a GET stream, a DELETE) joined to
//! its session and its upstream. Messages pass as the bytes received; only
//! the session id is translated, between the client's sealed id and the
//! upstream's own.

// Handlers return a ready response as their error: it is built once, on a
// failure path, so its size does not matter.
#![allow(clippy::result_large_err)]

pub mod plan;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use crate::config::Transport;
use crate::gateway::{Gateway, OpenError};
use crate::jsonrpc::{self, Kind, Message, code};
use crate::overlay::OverlaySet;
use crate::server::{self, Body};
use crate::session::{Route, Token};
use crate::sse;
use crate::upstream::messages::{Delivery, MessageSession, PendingGuard};
use crate::upstream::{self, UpstreamError};
use plan::{Plan, Rewrite};

pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

/// Request headers every upstream receives when the client sent them.
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

/// Protocol revisions a message-oriented mount accepts in `MCP-Protocol-Version`.
const KNOWN_VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// What the gateway tells live sessions after an overlay reload.
pub const LIST_CHANGED: [&[u8]; 2] = [
    br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
    br#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#,
];

/// Send server messages as SSE comments this often on idle streams.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The client's session, as its header says.
enum SessionRef {
    None,
    /// An HTTP-upstream session; `received` is the client's id, reused when
    /// the upstream repeats its own.
    Http {
        upstream: Option<String>,
        received: HeaderValue,
    },
    Local(u64),
}

fn not_found() -> Response<Body> {
    server::error(
        StatusCode::NOT_FOUND,
        code::SESSION_NOT_FOUND,
        "Session not found",
    )
}

fn resolve_session(
    gw: &Gateway,
    mount: usize,
    headers: &HeaderMap,
) -> Result<SessionRef, Response<Body>> {
    let Some(value) = headers.get(SESSION_HEADER) else {
        return Ok(SessionRef::None);
    };
    let token = value.to_str().ok().and_then(|v| gw.key.open(v));
    let Some(Token { mount: name, route }) = token else {
        return Err(not_found());
    };
    if name != gw.mounts[mount].mount.name {
        return Err(not_found());
    }
    match (route, gw.is_message_mount(mount)) {
        (Route::Http { upstream_session }, false) => Ok(SessionRef::Http {
            upstream: upstream_session,
            received: value.clone(),
        }),
        (Route::Local { instance, id }, true) if instance == gw.instance => {
            Ok(SessionRef::Local(id))
        }
        (Route::Local { .. }, true) => Err(server::error(
            StatusCode::NOT_FOUND,
            code::SESSION_NOT_FOUND,
            "Session not found: it belongs to another gateway process (stdio and legacy SSE sessions live in the process that started them)",
        )),
        _ => Err(not_found()),
    }
}

// === POST ===

pub async fn post(
    gw: &Arc<Gateway>,
    mount: usize,
    parts: http::request::Parts,
    body: Bytes,
) -> Response<Body> {
    let parsed = match jsonrpc::classify(&body) {
        Ok(p) => p,
        Err(e) => return server::error(StatusCode::BAD_REQUEST, e.code(), &e.to_string()),
    };
    let sref = match resolve_session(gw, mount, &parts.headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    // One snapshot for the whole exchange, however long it takes.
    let overlays = gw.live.load();
    let name = &gw.mounts[mount].mount.name;
    let (plan, request_id) = match &parsed {
        jsonrpc::Body::Single(m) => (
            plan::plan(&overlays, name, m),
            m.id.filter(|_| m.kind == Kind::Request),
        ),
        jsonrpc::Body::Batch(_) => (Plan::Forward, None),
    };
    if let Plan::Answer(answer) = plan {
        return server::json(StatusCode::OK, answer);
    }
    let finisher = match plan {
        Plan::Rewrite(rewrite) => Some(Finisher {
            overlays,
            mount: name.clone(),
            rewrite,
        }),
        _ => None,
    };
    if gw.is_message_mount(mount) {
        post_messages(gw, mount, &parts.headers, &body, parsed, sref, finisher).await
    } else {
        let id = request_id.map(|id| id.get().to_owned());
        post_http(gw, mount, &parts.headers, body.clone(), sref, id, finisher).await
    }
}

/// Rewrites the response to one planned request, falling back to the
/// upstream's bytes whenever the rewrite does not apply.
#[derive(Clone)]
struct Finisher {
    overlays: Arc<OverlaySet>,
    mount: String,
    rewrite: Rewrite,
}

impl Finisher {
    /// The rewritten response, or `None` to keep the upstream's.
    fn finish(&self, response: &[u8]) -> Option<Bytes> {
        let applied = plan::apply(&self.overlays, &self.mount, &self.rewrite, response);
        for warning in &applied.warnings {
            tracing::warn!(upstream = %self.mount, rewrite = ?self.rewrite, "{warning}");
        }
        applied.body
    }
}

async fn post_http(
    gw: &Arc<Gateway>,
    mount: usize,
    headers: &HeaderMap,
    body: Bytes,
    sref: SessionRef,
    request_id: Option<String>,
    finisher: Option<Finisher>,
) -> Response<Body> {
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
    let head = relay_head(gw, mount, &parts, &sref);
    let (Some(finisher), Some(id), true) = (finisher, request_id, parts.status.is_success()) else {
        return head.map(|()| body.map_err(Into::into).boxed_unsync());
    };
    let id: Box<RawValue> = RawValue::from_string(id).expect("the id was parsed from JSON");
    let key = jsonrpc::id_key(&id);
    if is_event_stream(&parts.headers) {
        let limit = gw.limits.max_message_bytes;
        return head.map(|()| stream::rewrite_response_events(body, key, finisher, limit));
    }
    // A JSON answer is read whole (bounded), rewritten and sent on.
    let bytes = match http_body_util::Limited::new(body, gw.limits.max_message_bytes)
        .collect()
        .await
    {
        Ok(c) => c.to_bytes(),
        Err(e) => {
            let e = UpstreamError::Protocol {
                upstream: gw.mounts[mount].mount.name.clone(),
                detail: format!("could not read its response: {e}"),
            };
            return upstream_failure(Some(id.get()), &e);
        }
    };
    let bytes = finisher.finish(&bytes).unwrap_or(bytes);
    head.map(|()| server::full(bytes))
}

/// A request whose upstream failed gets a JSON-RPC error naming the
/// upstream (what the client shows its user); anything else gets 502.
fn upstream_failure(request_id: Option<&str>, e: &UpstreamError) -> Response<Body> {
    tracing::warn!(error = %e, "upstream request failed");
    match request_id.and_then(|id| serde_json::from_str::<&RawValue>(id).ok()) {
        Some(id) => server::json(
            StatusCode::OK,
            jsonrpc::error_response(Some(id), code::UPSTREAM_ERROR, &e.to_string()),
        ),
        None => server::error(
            StatusCode::BAD_GATEWAY,
            code::UPSTREAM_ERROR,
            &e.to_string(),
        ),
    }
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
    for name in FORWARDED_REQUEST_HEADERS.iter().chain(extra) {
        for v in headers.get_all(name) {
            out.append(name.clone(), v.clone());
        }
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
    for name in &FORWARDED_RESPONSE_HEADERS {
        for v in parts.headers.get_all(name) {
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

fn is_event_stream(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

async fn post_messages(
    gw: &Arc<Gateway>,
    mount: usize,
    headers: &HeaderMap,
    body: &Bytes,
    parsed: jsonrpc::Body<'_>,
    sref: SessionRef,
    finisher: Option<Finisher>,
) -> Response<Body> {
    if let Some(v) = headers.get(PROTOCOL_HEADER)
        && !v.to_str().is_ok_and(|v| KNOWN_VERSIONS.contains(&v.trim()))
    {
        return server::error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            &format!(
                "Bad Request: unsupported MCP-Protocol-Version (supported: {})",
                KNOWN_VERSIONS.join(", ")
            ),
        );
    }
    match parsed {
        jsonrpc::Body::Single(m) => {
            if let Err(r) = check_method_headers(headers, &m) {
                return r;
            }
            let initialize = m.kind == Kind::Request && m.method.as_deref() == Some("initialize");
            let (session, new_id) = match (sref, initialize) {
                (SessionRef::Local(id), _) => match gw.sessions.get(mount, id) {
                    Some(s) => (s, None),
                    None => return not_found(),
                },
                (SessionRef::None, true) => match gw.open_session(mount).await {
                    Ok((id, s)) => (s, Some(id)),
                    Err(e) => return open_failure(m.id, &e),
                },
                (SessionRef::None, false) => match gw.shared_session(mount).await {
                    Ok(s) => (s, None),
                    Err(e) => return open_failure(m.id.filter(|_| m.kind == Kind::Request), &e),
                },
                (SessionRef::Http { .. }, _) => return not_found(),
            };
            match m.kind {
                Kind::Request => {
                    let id = m.id.expect("requests have ids");
                    let progress = jsonrpc::params_view(m.params).request_progress_token;
                    let resp = match session.request(body, id, progress).await {
                        Ok((rx, guard)) => answer(gw, &session, rx, guard, id, finisher).await,
                        Err(e) => server::json(
                            StatusCode::OK,
                            jsonrpc::error_response(Some(id), code::UPSTREAM_ERROR, &e.to_string()),
                        ),
                    };
                    match new_id {
                        Some(local) => finish_initialize(gw, mount, local, resp),
                        None => resp,
                    }
                }
                kind => match session
                    .notify(body.clone(), kind, m.method.as_deref(), m.params)
                    .await
                {
                    Ok(()) => accepted(),
                    Err(_) => not_found(),
                },
            }
        }
        jsonrpc::Body::Batch(items) => post_batch(gw, mount, items, sref).await,
    }
}

/// 2026-07-28: `Mcp-Method` and `Mcp-Name`, when sent, must match the body.
fn check_method_headers(headers: &HeaderMap, m: &Message<'_>) -> Result<(), Response<Body>> {
    let mismatch = |what: &str| {
        Err(server::error(
            StatusCode::BAD_REQUEST,
            code::HEADER_MISMATCH,
            &format!("Bad Request: the {what} header does not match the message body"),
        ))
    };
    if let Some(v) = headers.get(METHOD_HEADER)
        && v.to_str().ok() != m.method.as_deref()
    {
        return mismatch("Mcp-Method");
    }
    if let Some(v) = headers.get(NAME_HEADER) {
        let p = jsonrpc::params_view(m.params);
        let name = match m.method.as_deref() {
            Some("resources/read") => p.uri,
            _ => p.name,
        };
        if v.to_str().ok() != name.as_deref() {
            return mismatch("Mcp-Name");
        }
    }
    Ok(())
}

fn open_failure(id: Option<&RawValue>, e: &OpenError) -> Response<Body> {
    tracing::warn!(error = %e, "could not open an upstream session");
    match (e, id) {
        (OpenError::Full(_), _) => server::error(
            StatusCode::SERVICE_UNAVAILABLE,
            code::UPSTREAM_ERROR,
            &e.to_string(),
        ),
        (_, Some(id)) => server::json(
            StatusCode::OK,
            jsonrpc::error_response(Some(id), code::UPSTREAM_ERROR, &e.to_string()),
        ),
        (_, None) => server::error(
            StatusCode::BAD_GATEWAY,
            code::UPSTREAM_ERROR,
            &e.to_string(),
        ),
    }
}

/// Give a successful `initialize` its session id; a failed one ends the
/// session it started.
fn finish_initialize(
    gw: &Gateway,
    mount: usize,
    local: u64,
    mut resp: Response<Body>,
) -> Response<Body> {
    let failed =
        resp.status() != StatusCode::OK || resp.extensions().get::<ErrorAnswer>().is_some();
    if failed {
        if let Some(s) = gw.sessions.remove(local) {
            s.close("initialize failed");
        }
        return resp;
    }
    let token = Token {
        mount: gw.mounts[mount].mount.name.clone(),
        route: Route::Local {
            instance: gw.instance,
            id: local,
        },
    };
    let id =
        HeaderValue::from_str(&gw.key.seal(&token)).expect("base64url is a valid header value");
    resp.headers_mut().insert(SESSION_HEADER, id);
    resp
}

/// Marks a JSON answer that is a JSON-RPC error.
#[derive(Clone, Copy)]
struct ErrorAnswer;

fn accepted() -> Response<Body> {
    let mut r = Response::new(server::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

/// Answer one request: as JSON when its response is the first thing the
/// upstream says about it, otherwise as an SSE stream that carries the
/// related messages and ends with the response.
async fn answer(
    gw: &Arc<Gateway>,
    session: &Arc<MessageSession>,
    mut rx: mpsc::Receiver<Delivery>,
    guard: PendingGuard,
    id: &RawValue,
    finisher: Option<Finisher>,
) -> Response<Body> {
    let deadline = Instant::now() + gw.request_timeout();
    let timeout_error = || {
        jsonrpc::error_response(
            Some(id),
            code::UPSTREAM_ERROR,
            &format!(
                "upstream '{}' did not answer within {} s",
                session.upstream(),
                gw.limits.request_timeout_secs
            ),
        )
    };
    match tokio::time::timeout_at(deadline, rx.recv()).await {
        Ok(Some(Delivery::Final(b))) => {
            let b = finish(finisher.as_ref(), b);
            let is_error = jsonrpc::classify_one(&b).is_ok_and(|m| m.error.is_some());
            let mut r = server::json(StatusCode::OK, b);
            if is_error {
                r.extensions_mut().insert(ErrorAnswer);
            }
            r
        }
        Ok(Some(Delivery::Related(first))) => {
            let timeout_body = timeout_error();
            let (tx, out) = mpsc::channel::<Bytes>(16);
            let stop = gw.shutdown.clone();
            tokio::spawn(async move {
                let _guard = guard;
                if tx.send(message_event(&first)).await.is_err() {
                    return;
                }
                loop {
                    let next = tokio::select! {
                        d = tokio::time::timeout_at(deadline, rx.recv()) => d,
                        _ = tokio::time::sleep(KEEPALIVE) => {
                            if tx.send(Bytes::from_static(sse::KEEPALIVE)).await.is_err() { return }
                            continue;
                        }
                        _ = stop.cancelled() => return,
                    };
                    let (bytes, last) = match next {
                        Ok(Some(Delivery::Related(b))) => (b, false),
                        Ok(Some(Delivery::Final(b))) => (finish(finisher.as_ref(), b), true),
                        Ok(None) => return,
                        Err(_) => (timeout_body.clone(), true),
                    };
                    if tx.send(message_event(&bytes)).await.is_err() || last {
                        return;
                    }
                }
            });
            sse_response(out)
        }
        Ok(None) => server::json(
            StatusCode::OK,
            jsonrpc::error_response(
                Some(id),
                code::UPSTREAM_ERROR,
                &format!("upstream '{}' ended the session", session.upstream()),
            ),
        ),
        Err(_) => {
            drop(guard);
            server::json(StatusCode::OK, timeout_error())
        }
    }
}

fn finish(finisher: Option<&Finisher>, response: Bytes) -> Bytes {
    finisher
        .and_then(|f| f.finish(&response))
        .unwrap_or(response)
}

async fn post_batch(
    gw: &Arc<Gateway>,
    mount: usize,
    items: Vec<(Message<'_>, &RawValue)>,
    sref: SessionRef,
) -> Response<Body> {
    if items
        .iter()
        .any(|(m, _)| m.method.as_deref() == Some("initialize"))
    {
        return server::error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            "Invalid Request: initialize cannot be part of a batch",
        );
    }
    let session = match sref {
        SessionRef::Local(id) => match gw.sessions.get(mount, id) {
            Some(s) => s,
            None => return not_found(),
        },
        SessionRef::None => match gw.shared_session(mount).await {
            Ok(s) => s,
            Err(e) => return open_failure(None, &e),
        },
        SessionRef::Http { .. } => return not_found(),
    };
    // Each message goes upstream on its own; stdio servers need not know batches.
    let mut streams = Vec::new();
    for (m, raw) in &items {
        let bytes = raw.get().as_bytes();
        if m.kind == Kind::Request {
            let progress = jsonrpc::params_view(m.params).request_progress_token;
            let id = m.id.expect("requests have ids");
            match session.request(bytes, id, progress).await {
                Ok((rx, guard)) => streams.push(
                    ReceiverStream::new(rx)
                        .map(move |d| {
                            let _keep = &guard;
                            d
                        })
                        .boxed(),
                ),
                Err(e) => {
                    let err =
                        jsonrpc::error_response(Some(id), code::UPSTREAM_ERROR, &e.to_string());
                    streams.push(futures_util::stream::iter([Delivery::Final(err)]).boxed());
                }
            }
        } else if session
            .notify(
                Bytes::copy_from_slice(bytes),
                m.kind,
                m.method.as_deref(),
                m.params,
            )
            .await
            .is_err()
        {
            return not_found();
        }
    }
    if streams.is_empty() {
        return accepted();
    }
    let expected = streams.len();
    let deadline = Instant::now() + gw.request_timeout();
    let upstream_name = session.upstream().to_owned();
    let timeout_secs = gw.limits.request_timeout_secs;
    let (tx, out) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let mut merged = futures_util::stream::select_all(streams);
        let mut finals = 0;
        while finals < expected {
            let d = match tokio::time::timeout_at(deadline, merged.next()).await {
                Ok(Some(d)) => d,
                Ok(None) => return,
                Err(_) => {
                    let msg = format!(
                        "upstream '{upstream_name}' did not answer within {timeout_secs} s"
                    );
                    let _ = tx
                        .send(message_event(&jsonrpc::error_response(
                            None,
                            code::UPSTREAM_ERROR,
                            &msg,
                        )))
                        .await;
                    return;
                }
            };
            let b = match d {
                Delivery::Related(b) => b,
                Delivery::Final(b) => {
                    finals += 1;
                    b
                }
            };
            if tx.send(message_event(&b)).await.is_err() {
                return;
            }
        }
    });
    sse_response(out)
}

fn message_event(data: &[u8]) -> Bytes {
    sse::frame(None, Some("message"), data)
}

fn sse_response(rx: mpsc::Receiver<Bytes>) -> Response<Body> {
    let stream = ReceiverStream::new(rx).map(|b| Ok::<_, server::BoxError>(Frame::data(b)));
    let mut r = Response::new(StreamBody::new(stream).boxed_unsync());
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    h.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    r
}

// === GET and DELETE ===

pub async fn get(gw: &Arc<Gateway>, mount: usize, req: Request<Incoming>) -> Response<Body> {
    let sref = match resolve_session(gw, mount, req.headers()) {
        Ok(s) => s,
        Err(r) => return r,
    };
    match &gw.mounts[mount].mount.transport {
        Transport::Http { url } => {
            forward_bodyless(gw, mount, http::Method::GET, url, req.headers(), &sref).await
        }
        _ => {
            let SessionRef::Local(id) = sref else {
                return method_not_allowed(
                    "GET needs a session (sessionless clients have no server stream)",
                );
            };
            let Some(session) = gw.sessions.get(mount, id) else {
                return not_found();
            };
            let Some(mut rx) = session.attach_stream() else {
                return server::error(
                    StatusCode::CONFLICT,
                    code::INVALID_REQUEST,
                    "Conflict: this session already has a GET stream open",
                );
            };
            let (tx, out) = mpsc::channel::<Bytes>(16);
            let stop = gw.shutdown.clone();
            tokio::spawn(async move {
                loop {
                    let bytes = tokio::select! {
                        m = rx.recv() => match m { Some(m) => message_event(&m), None => return },
                        _ = tokio::time::sleep(KEEPALIVE) => Bytes::from_static(sse::KEEPALIVE),
                        _ = stop.cancelled() => return,
                    };
                    if tx.send(bytes).await.is_err() {
                        return;
                    }
                }
            });
            sse_response(out)
        }
    }
}

pub async fn delete(gw: &Arc<Gateway>, mount: usize, req: Request<Incoming>) -> Response<Body> {
    let sref = match resolve_session(gw, mount, req.headers()) {
        Ok(s) => s,
        Err(r) => return r,
    };
    match &gw.mounts[mount].mount.transport {
        Transport::Http { url } => {
            forward_bodyless(gw, mount, http::Method::DELETE, url, req.headers(), &sref).await
        }
        _ => match sref {
            SessionRef::Local(id) => match gw.sessions.remove(id) {
                Some(s) => {
                    s.close("ended by the client");
                    let mut r = Response::new(server::empty());
                    *r.status_mut() = StatusCode::OK;
                    r
                }
                None => not_found(),
            },
            _ => method_not_allowed("DELETE needs a session"),
        },
    }
}

fn method_not_allowed(why: &str) -> Response<Body> {
    let mut r = server::error(
        StatusCode::METHOD_NOT_ALLOWED,
        code::INVALID_REQUEST,
        &format!("Method Not Allowed: {why}"),
    );
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    r
}

async fn forward_bodyless(
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
            let head = relay_head(gw, mount, &parts, sref);
            // The server's own stream also carries the gateway's list-changed
            // announcements after an overlay reload.
            if method_is_get && parts.status.is_success() && is_event_stream(&parts.headers) {
                let changes = gw.live.subscribe();
                let limit = gw.limits.max_message_bytes;
                return head.map(|()| stream::with_announcements(body, changes, limit));
            }
            head.map(|()| body.map_err(Into::into).boxed_unsync())
        }
        Err(e) => upstream_failure(None, &e),
    }
}
