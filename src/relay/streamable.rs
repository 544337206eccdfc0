//! The relay to a streamable HTTP upstream: each client request becomes one
//! upstream request on a pooled connection, and the answer streams back as
//! received, except the one response a plan rewrites.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::value::RawValue;

use super::context::{Ctx, PROTOCOL_HEADER, SESSION_HEADER, SessionRef};
use super::finish::Finisher;
use super::stream;
use crate::config::AuthChallenge;
use crate::jsonrpc;
use crate::outcome::{Failure, OutcomeSlot, UpstreamError};
use crate::reply::{self, Body, BoxError};
use crate::session::{Route, Token};
use crate::upstream::budget::{Budget, Permit};
use crate::upstream::client::{BodyError, UpstreamBody, send};

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
    } = call;
    let id = request_id.as_deref();
    let gw = cx.gw;
    let resp = match send_reviving(cx, http::Method::POST, body).await {
        Ok(resp) => resp,
        Err(f) => return f.respond(id),
    };
    let (parts, body) = resp.into_parts();
    super::ended::expired(cx, parts.status);
    // A request's answer is JSON or an SSE stream; anything else (an HTML
    // error page from a proxy, a misconfigured URL) is not an MCP answer.
    if parts.status.is_success()
        && parts.status != StatusCode::ACCEPTED
        && id.is_some()
        && !is_event_stream(&parts.headers)
        && !is_json(&parts.headers)
    {
        let found = parts
            .headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_else(|| "none".into());
        let detail = format!(
            "answered {} with Content-Type {found:?}, not application/json or text/event-stream",
            parts.status
        );
        return protocol_failure(cx, detail).respond(id);
    }
    let head = match relay_head(cx, &parts) {
        Ok(head) => head,
        Err(failure) => return failure.respond(id),
    };
    if tool_call
        && matches!(
            parts.status,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        )
        && cx.mount.config.auth_challenge == AuthChallenge::InBand
        && let (Some(id), Some(base)) = (id, gw.auth.base(cx.headers))
    {
        let prm = crate::auth::prm_url(&base, &cx.mount.config.path);
        let answer = crate::auth::in_band_result(id, parts.status, head.headers(), &prm);
        let mut r = reply::json(StatusCode::OK, answer);
        if let Some(sid) = head.headers().get(SESSION_HEADER) {
            r.headers_mut().insert(SESSION_HEADER, sid.clone());
        }
        return r;
    }
    let success = parts.status.is_success();
    if success && is_event_stream(&parts.headers) {
        // A request's SSE answer ends with an error event for it at the
        // request's deadline (below), in place of a cut.
        let deadline = body.deadline();
        let body = match id {
            Some(_) => body.unbounded(),
            None => body,
        };
        let body = match (&finisher, id) {
            (Some(finisher), Some(id)) => {
                let limit = gw.limits.max_message_bytes;
                let key = jsonrpc::id_key(id);
                stream::rewrite_response_events(
                    body,
                    key,
                    finisher.clone(),
                    limit,
                    super::watch::watch(cx),
                )
            }
            _ => match super::watch::watch(cx) {
                Some(watch) => stream::watched(body, gw.limits.max_message_bytes, watch),
                None => body.map_err(Into::into).boxed_unsync(),
            },
        };
        return match id {
            // A request's SSE answer that breaks off, or is still open at the
            // request timeout, ends with an error for it.
            Some(id) => {
                let slot = OutcomeSlot::new();
                let end = stream::FailureEnd {
                    upstream: cx.upstream().to_owned(),
                    id: id.to_owned(),
                    slot: slot.clone(),
                    timeout_secs: gw.limits.request_timeout_secs,
                };
                let deadline =
                    deadline.unwrap_or_else(|| tokio::time::Instant::now() + gw.request_timeout());
                let mut r = head.map(|()| stream::end_on_failure(body, end, deadline));
                r.extensions_mut().insert(slot);
                r
            }
            None => head.map(|()| body),
        };
    }
    let (Some(finisher), Some(id), true) = (finisher, id, success) else {
        return pass_through(cx, head, body, id).await;
    };
    // A JSON answer is read whole (bounded in size, time and the memory all
    // such answers share): a rewrite needs all of it, and so does the look
    // for an in-band challenge.
    let limit = gw.limits.max_message_bytes;
    let (bytes, mut permit) = match read_whole(body, limit, &gw.buffers).await {
        Ok(read) => read,
        Err(unread) => return unread.failure(cx).respond(Some(id)),
    };
    let bytes = match finisher.keeps(&bytes) {
        true => bytes,
        false => finisher.finish(&bytes).unwrap_or(bytes),
    };
    // Accounted until written to the client, or dropped with the response.
    permit.resize(bytes.len());
    head.map(|()| reply::full(permit.hold(bytes)))
}

/// A JSON (or empty, or error) answer passed through as it streams in, once
/// its first bytes have come: until then a deadline or a failure can still
/// be answered as a JSON-RPC error for the request; after, the body is cut
/// (its upstream's error ends it, the deadline included).
async fn pass_through(
    cx: &Ctx<'_>,
    head: Response<()>,
    mut body: UpstreamBody,
    id: Option<&RawValue>,
) -> Response<Body> {
    let first = match body.frame().await {
        None => return head.map(|()| reply::empty()),
        Some(Ok(frame)) => frame,
        Some(Err(BodyError::Timeout { secs })) => {
            return Failure::timeout(cx.upstream(), secs).respond(id);
        }
        Some(Err(e)) => {
            return protocol_failure(cx, format!("could not read its response: {e}")).respond(id);
        }
    };
    head.map(|()| {
        Started {
            first: Some(first),
            rest: body,
        }
        .boxed_unsync()
    })
}

/// A body whose first frame was read ahead.
struct Started {
    first: Option<http_body::Frame<Bytes>>,
    rest: UpstreamBody,
}

impl http_body::Body for Started {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        if let Some(first) = self.first.take() {
            return std::task::Poll::Ready(Some(Ok(first)));
        }
        http_body::Body::poll_frame(std::pin::Pin::new(&mut self.rest), cx)
            .map(|f| f.map(|r| r.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && http_body::Body::is_end_stream(&self.rest)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let ahead = self
            .first
            .as_ref()
            .and_then(http_body::Frame::data_ref)
            .map_or(0, |d| d.len() as u64);
        let rest = http_body::Body::size_hint(&self.rest);
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(rest.lower() + ahead);
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper + ahead);
        }
        hint
    }
}

/// The upstream answered something that is not an MCP answer.
fn protocol_failure(cx: &Ctx<'_>, detail: String) -> Failure {
    Failure::Upstream(UpstreamError::Protocol {
        upstream: cx.upstream().to_owned(),
        detail,
    })
}

/// Why an answer to read whole was not.
enum Unread {
    /// Over `limits.max_message_bytes`.
    TooLarge { limit: usize },
    /// It does not fit in what remains of the memory budget.
    NoRoom { at_least: usize, limit: usize },
    /// Still coming at the request's deadline.
    Timeout { secs: u64 },
    /// The connection failed.
    Failed(String),
}

impl Unread {
    fn failure(self, cx: &Ctx<'_>) -> Failure {
        match self {
            Unread::TooLarge { limit } => protocol_failure(
                cx,
                format!("its response exceeds {limit} bytes (limits.max_message_bytes)"),
            ),
            Unread::NoRoom { at_least, limit } => Failure::BufferFull {
                upstream: cx.upstream().to_owned(),
                at_least,
                limit,
            },
            Unread::Timeout { secs } => Failure::timeout(cx.upstream(), secs),
            Unread::Failed(e) => protocol_failure(cx, format!("could not read its response: {e}")),
        }
    }
}

/// A whole body, refused beyond `limit` bytes or beyond what `budget` has
/// left (an announced length is drawn before reading, so an answer that
/// cannot fit is refused unread); the permit holds its bytes. One frame is
/// kept as it came; several are gathered into one buffer of the announced
/// length, so the connection's read buffers they were cut from are freed as
/// it goes.
async fn read_whole(
    mut body: UpstreamBody,
    limit: usize,
    budget: &Arc<Budget>,
) -> Result<(Bytes, Permit), Unread> {
    let announced = http_body::Body::size_hint(&body)
        .exact()
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    if announced > limit {
        return Err(Unread::TooLarge { limit });
    }
    let no_room = |at_least| Unread::NoRoom {
        at_least,
        limit: budget.max(),
    };
    let mut permit = budget
        .try_take(announced)
        .ok_or_else(|| no_room(announced))?;
    let mut first: Option<Bytes> = None;
    let mut whole = BytesMut::new();
    let mut len = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| match e {
            BodyError::Timeout { secs } => Unread::Timeout { secs },
            BodyError::Read(e) => Unread::Failed(e.to_string()),
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        len += data.len();
        if len > limit {
            return Err(Unread::TooLarge { limit });
        }
        if !permit.try_grow(len) {
            return Err(no_room(len));
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
    Ok((first.unwrap_or_else(|| whole.freeze()), permit))
}

/// Send a request for the client's session; when the upstream says it does
/// not know it ([`crate::protocol::forgot_session`]: it forgot the session,
/// which the client did not end), open
/// another in its place and send the request again: it never reached the
/// upstream.
async fn send_reviving(
    cx: &Ctx<'_>,
    method: http::Method,
    body: Bytes,
) -> Result<http::Response<UpstreamBody>, Failure> {
    let gw = cx.gw;
    let req = upstream_request(cx, method.clone(), body.clone());
    let resp = send(&gw.client, cx.upstream(), req, gw.request_timeout())
        .await
        .map_err(Failure::Upstream)?;
    let SessionRef::Http {
        upstream: Some(stale),
        ..
    } = &cx.session
    else {
        return Ok(resp);
    };
    let index = cx.mount.index;
    let status = resp.status();
    if !matches!(status, StatusCode::NOT_FOUND | StatusCode::BAD_REQUEST)
        || method == http::Method::DELETE
        || gw.reopened.is_ended(index, stale)
    {
        return Ok(resp);
    }
    // A 400 is read to tell a forgotten session from a refusal.
    let (parts, answer) = resp.into_parts();
    let (read, answer) = match status {
        StatusCode::BAD_REQUEST => answer.read_whole(4096).await,
        _ => (None, answer),
    };
    if !crate::protocol::forgot_session(status, read.as_deref()) {
        return Ok(http::Response::from_parts(parts, answer));
    }
    drop(answer);
    super::revive::reopen(cx, stale).await?;
    let req = upstream_request(cx, method, body);
    send(&gw.client, cx.upstream(), req, gw.request_timeout())
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
            _ if !crate::session::id::carries_upstream_id(up) => {
                end_upstream_session(cx, up);
                return Err(protocol_failure(
                    cx,
                    format!(
                        "its session id is {} bytes long; the gateway carries session ids of at most {} bytes",
                        up.len(),
                        crate::session::id::MAX_UPSTREAM_SESSION_ID
                    ),
                ));
            }
            _ => {
                let token = Token {
                    mount: cx.upstream().to_owned(),
                    route: Route::Http {
                        upstream_session: Some(up.to_owned()),
                    },
                    host: Some(cx.host),
                    started: Some(crate::session::id::now_millis()),
                    hello: cx.hello.clone(),
                };
                HeaderValue::from_str(&cx.gw.key.seal(&token))
                    .expect("base64url is a valid header value")
            }
        };
        h.insert(SESSION_HEADER, id);
    }
    let (gw, mount) = (cx.gw, cx.mount);
    crate::auth::rewrite_challenges(&gw.auth, mount.index, &mount.config, cx.headers, h);
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
        let _ = send(&gw.client, &name, req, bound).await;
    });
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

/// Forward a GET or DELETE and relay its answer. A GET stream also carries
/// the gateway's list-changed announcements after an overlay reload.
pub async fn forward_bodyless(cx: &Ctx<'_>, method: http::Method) -> Response<Body> {
    let gw = cx.gw;
    let get = method == http::Method::GET;
    if method == http::Method::DELETE
        && let Some(s) = current_session(cx)
    {
        gw.reopened.end(cx.mount.index, &s);
        if let SessionRef::Http {
            upstream: Some(old),
            ..
        } = &cx.session
        {
            gw.reopened.end(cx.mount.index, old);
        }
    }
    match send_reviving(cx, method, Bytes::new()).await {
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
