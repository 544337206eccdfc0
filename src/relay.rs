//! The relay: one client exchange (a POST, a GET stream, a DELETE) joined to
//! its session, the overlay snapshot and its upstream. Messages pass as the
//! bytes received; the session id is translated between the client's sealed
//! id and the upstream's own, and a [`plan`] decides the few responses the
//! gateway answers or rewrites.
//!
//! - `streamable`: to streamable HTTP upstreams, request by request;
//! - `messages`: to stdio and legacy SSE upstreams, through owned sessions;
//! - `stream`: event-by-event transforms of an upstream's SSE stream.

// Handlers return a ready response as their error: it is built once, on a
// failure path, so its size does not matter.
#![allow(clippy::result_large_err)]

mod messages;
pub mod plan;
mod stream;
mod streamable;

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::config::Transport;
use crate::gateway::Gateway;
use crate::jsonrpc::{self, Kind, code};
use crate::metrics::{Exchange, MethodId};
use crate::overlay::OverlaySet;
use crate::reply::{self, Body};
use crate::session::Route;
use crate::sse;
use crate::upstream::UpstreamError;
use plan::{Plan, Rewrite};

pub const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
const METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
const NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

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
    reply::error(
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
    let token = value
        .to_str()
        .ok()
        .and_then(|v| gw.opened_ids.open(&gw.key, v));
    let Some(token) = token else {
        return Err(not_found());
    };
    if token.mount != gw.mounts[mount].mount.name {
        return Err(not_found());
    }
    match (&token.route, gw.is_message_mount(mount)) {
        (Route::Http { upstream_session }, false) => Ok(SessionRef::Http {
            upstream: upstream_session.clone(),
            received: value.clone(),
        }),
        (Route::Local { instance, id }, true) if *instance == gw.instance => {
            Ok(SessionRef::Local(*id))
        }
        (Route::Local { .. }, true) => Err(reply::error(
            StatusCode::NOT_FOUND,
            code::SESSION_NOT_FOUND,
            "Session not found: it belongs to another gateway process (stdio and legacy SSE sessions live in the process that started them)",
        )),
        _ => Err(not_found()),
    }
}

// === POST ===

/// One POST exchange, counted in the metrics when its response body ends.
pub async fn post(
    gw: &Arc<Gateway>,
    mount: usize,
    parts: http::request::Parts,
    body: Bytes,
) -> Response<Body> {
    let mut exchange = gw.metrics.exchange(mount, MethodId::OTHER);
    let resp = post_exchange(gw, mount, parts, body, &mut exchange).await;
    exchange.finish_body(resp)
}

async fn post_exchange(
    gw: &Arc<Gateway>,
    mount: usize,
    parts: http::request::Parts,
    body: Bytes,
    exchange: &mut Exchange,
) -> Response<Body> {
    let parsed = match jsonrpc::classify(&body) {
        Ok(p) => p,
        Err(e) => return reply::error(StatusCode::BAD_REQUEST, e.code(), &e.to_string()),
    };
    exchange.set_method(MethodId::of_body(&parsed));
    let sref = match resolve_session(gw, mount, &parts.headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    // One snapshot for the whole exchange, however long it takes.
    let overlays = gw.live.load();
    let name = &gw.mounts[mount].mount.name;
    let (plan, request_id) = match &parsed {
        jsonrpc::Body::Single(m) => (
            plan::plan(&overlays, name, m, &|tool| {
                gw.upstream_tools.has(name, tool)
            }),
            m.id.filter(|_| m.kind == Kind::Request),
        ),
        jsonrpc::Body::Batch(_) => (Plan::Forward, None),
    };
    if let Plan::Answer(answer) = plan {
        return reply::json(StatusCode::OK, answer);
    }
    // A session's requests waiting upstream are bounded; the place is held
    // until the response body ends.
    let has_request = match &parsed {
        jsonrpc::Body::Single(m) => m.kind == Kind::Request,
        jsonrpc::Body::Batch(items) => items.iter().any(|(m, _)| m.kind == Kind::Request),
    };
    let in_flight = match parts.headers.get(SESSION_HEADER) {
        Some(sid) if has_request => {
            let max = gw.limits.max_in_flight_per_session;
            match gw.in_flight.try_enter(sid.as_bytes(), max) {
                Some(guard) => Some(guard),
                None => return too_many_in_flight(request_id, max),
            }
        }
        _ => None,
    };
    let planned = Planned {
        overlays,
        plan,
        request_id,
    };
    let response = post_planned(gw, mount, &parts, &body, parsed, sref, planned).await;
    match in_flight {
        Some(guard) => response.map(|b| {
            b.map_frame(move |f| {
                let _held = &guard;
                f
            })
            .boxed_unsync()
        }),
        None => response,
    }
}

/// 429 for a request over `limits.max_in_flight_per_session`.
fn too_many_in_flight(request_id: Option<&RawValue>, max: usize) -> Response<Body> {
    let message = format!(
        "Too Many Requests: this session already has {max} requests waiting for the upstream (limits.max_in_flight_per_session)"
    );
    let mut r = reply::json(
        StatusCode::TOO_MANY_REQUESTS,
        jsonrpc::error_response(request_id, code::UPSTREAM_ERROR, &message),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// What was decided for a request before it goes upstream.
struct Planned<'a> {
    overlays: Arc<OverlaySet>,
    plan: Plan,
    request_id: Option<&'a RawValue>,
}

async fn post_planned(
    gw: &Arc<Gateway>,
    mount: usize,
    parts: &http::request::Parts,
    body: &Bytes,
    parsed: jsonrpc::Body<'_>,
    sref: SessionRef,
    planned: Planned<'_>,
) -> Response<Body> {
    let Planned {
        overlays,
        plan,
        request_id,
    } = planned;
    let name = &gw.mounts[mount].mount.name;
    let tool_call = matches!(&parsed, jsonrpc::Body::Single(m)
        if m.kind == Kind::Request && m.method.as_deref() == Some("tools/call"));
    // A tool result may carry its own challenge: its metadata URL is
    // rewritten to the gateway's, like the HTTP header's.
    let challenges = (tool_call
        && !matches!(gw.mounts[mount].mount.transport, Transport::Stdio(_)))
    .then(|| ResultChallenges {
        gateway: gw.clone(),
        mount,
        host: parts.headers.get(header::HOST).cloned(),
    });
    let rewrite = match plan {
        Plan::Rewrite(rewrite) => Some(rewrite),
        _ => None,
    };
    let finisher = (rewrite.is_some() || challenges.is_some()).then(|| Finisher {
        overlays,
        mount: name.clone(),
        rewrite,
        challenges,
        upstream_tools: gw.upstream_tools.clone(),
    });
    if gw.is_message_mount(mount) {
        messages::post_messages(gw, mount, &parts.headers, body, parsed, sref, finisher).await
    } else {
        let id = request_id.map(|id| id.get().to_owned());
        let call = streamable::Call {
            request_id: id,
            tool_call,
        };
        streamable::post_http(
            gw,
            mount,
            &parts.headers,
            body.clone(),
            sref,
            call,
            finisher,
        )
        .await
    }
}

/// Rewrites the response to one planned request, falling back to the
/// upstream's bytes whenever the rewrite does not apply.
#[derive(Clone)]
struct Finisher {
    overlays: Arc<OverlaySet>,
    mount: String,
    rewrite: Option<Rewrite>,
    /// For challenges inside a tool result.
    challenges: Option<ResultChallenges>,
    /// Where `tools/list` pages record the upstream's tool names.
    upstream_tools: Arc<crate::gateway::UpstreamTools>,
}

impl Finisher {
    /// Whether a response stays as it is (no rewrite is planned and it
    /// carries no in-band challenge), known without parsing it.
    fn keeps(&self, response: &[u8]) -> bool {
        self.rewrite.is_none()
            && !(self.challenges.is_some() && crate::auth::may_carry_challenge(response))
    }

    /// The rewritten response, or `None` to keep the upstream's.
    fn finish(&self, response: &[u8]) -> Option<Bytes> {
        let mut body = None;
        if let Some(rewrite) = &self.rewrite {
            let known = |tool: &str| self.upstream_tools.has(&self.mount, tool);
            let mut applied = plan::apply(&self.overlays, &self.mount, rewrite, response, &known);
            if let (Some(names), Rewrite::ToolsListPage { first }) =
                (applied.upstream_tools.take(), rewrite)
            {
                self.upstream_tools.record(&self.mount, *first, names);
            }
            for warning in &applied.warnings {
                tracing::warn!(upstream = %self.mount, rewrite = ?rewrite, "{warning}");
            }
            body = applied.body;
        }
        if let Some(c) = &self.challenges {
            let current = body.as_deref().unwrap_or(response);
            if let Some(b) = c.rewrite(current) {
                body = Some(b);
            }
        }
        body
    }
}

/// What rewriting a tool result's in-band challenges needs: the metadata URL
/// and the upstream origin are only worked out for a result that has one.
#[derive(Clone)]
struct ResultChallenges {
    gateway: Arc<Gateway>,
    mount: usize,
    /// The request's `Host`, the gateway's base URL without `public_url`.
    host: Option<HeaderValue>,
}

impl ResultChallenges {
    fn rewrite(&self, response: &[u8]) -> Option<Bytes> {
        if !crate::auth::may_carry_challenge(response) {
            return None;
        }
        let mount = &self.gateway.mounts[self.mount].mount;
        let (Transport::Http { url } | Transport::Sse { url }) = &mount.transport else {
            return None;
        };
        let mut headers = HeaderMap::new();
        if let Some(host) = &self.host {
            headers.insert(header::HOST, host.clone());
        }
        let base = self.gateway.auth.base(&headers)?;
        let prm = crate::auth::prm_url(&base, &mount.path);
        crate::auth::rewrite_result_challenges(response, &prm, &crate::auth::origin_of(url))
    }
}

/// A request whose upstream failed gets a JSON-RPC error naming the
/// upstream (what the client shows its user); anything else gets 502.
fn upstream_failure(request_id: Option<&str>, e: &UpstreamError) -> Response<Body> {
    tracing::warn!(error = %e, "upstream request failed");
    match request_id.and_then(|id| serde_json::from_str::<&RawValue>(id).ok()) {
        Some(id) => reply::json(
            StatusCode::OK,
            jsonrpc::error_response(Some(id), code::UPSTREAM_ERROR, &e.to_string()),
        ),
        None => reply::error(
            StatusCode::BAD_GATEWAY,
            code::UPSTREAM_ERROR,
            &e.to_string(),
        ),
    }
}

fn accepted() -> Response<Body> {
    let mut r = Response::new(reply::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

fn message_event(data: &[u8]) -> Bytes {
    sse::frame(None, Some("message"), data)
}

fn sse_response(rx: mpsc::Receiver<Bytes>) -> Response<Body> {
    let stream = ReceiverStream::new(rx).map(|b| Ok::<_, reply::BoxError>(Frame::data(b)));
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
            streamable::forward_bodyless(gw, mount, http::Method::GET, url, req.headers(), &sref)
                .await
        }
        _ => messages::get(gw, mount, sref),
    }
}

pub async fn delete(gw: &Arc<Gateway>, mount: usize, req: Request<Incoming>) -> Response<Body> {
    let sref = match resolve_session(gw, mount, req.headers()) {
        Ok(s) => s,
        Err(r) => return r,
    };
    match &gw.mounts[mount].mount.transport {
        Transport::Http { url } => {
            streamable::forward_bodyless(gw, mount, http::Method::DELETE, url, req.headers(), &sref)
                .await
        }
        _ => messages::delete(gw, sref),
    }
}

fn method_not_allowed(why: &str) -> Response<Body> {
    let mut r = reply::error(
        StatusCode::METHOD_NOT_ALLOWED,
        code::INVALID_REQUEST,
        &format!("Method Not Allowed: {why}"),
    );
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    r
}
