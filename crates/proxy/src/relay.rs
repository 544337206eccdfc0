//! The relay: one client exchange (a POST, a GET stream, a DELETE) joined to
//! its session, the overlay snapshot and its upstream. Messages pass as the
//! bytes received; the session id is translated between the client's sealed
//! id and the upstream's own, and a [`plan`] decides the few responses the
//! gateway answers or rewrites.
//!
//! - [`context`]: the exchange, its mount and the session its headers name;
//! - [`streamable`]: to streamable HTTP upstreams, request by request;
//! - [`owned`]: to stdio and legacy SSE upstreams, through sessions that
//!   own their connection (`sessions = "client"`);
//! - [`deliver`]: the answers made of what a message session delivers;
//! - [`pooled`]: through connections clients share (`sessions = "shared"`
//!   or `"conversation"`, and requests without a session);
//! - [`revive`]: a streamable HTTP session opened again after its upstream
//!   forgot it;
//! - [`stream`]: event-by-event transforms of an upstream's SSE stream;
//! - [`finish`]: the planned rewrite of a response;
//! - [`forward`]: the request an HTTP upstream gets for a client's;
//! - [`access`]: what a caller may reach of an endpoint that asks for tokens;
//! - [`answer`]: the answers the relay writes itself;
//! - [`ended`]: the ends of client sessions, timed;
//! - [`watch`]: the spans of requests relayed to the client.

pub(crate) mod access;
pub mod answer;
pub mod context;
pub mod deliver;
pub mod ended;
pub mod finish;
pub mod forward;
pub mod member;
pub mod owned;
pub mod parked;
pub use mcp_ui_rewrite::plan;
pub mod pooled;
pub(crate) mod revision;
pub(crate) mod revive;
pub(crate) mod rounds;
pub mod stream;
pub mod streamable;
pub mod watch;

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::value::RawValue;

use crate::gateway::{Gateway, MountState};
use crate::metrics::MethodId;
use context::{Ctx, SESSION_HEADER};
use finish::{Finisher, ResultChallenges};
use mcp_ui_model::config::Transport;
use mcp_ui_model::outcome::{Failure, Outcome};
use mcp_ui_model::reply::{self, Body};
use mcp_ui_upstream::telemetry::{self, Traced, Tracer, request_spans::Place};
use mcp_ui_wire::jsonrpc::{self, Kind};
use plan::Plan;

// === POST ===

/// One POST exchange, counted in the metrics when its response body ends.
pub async fn post(
    gw: &Arc<Gateway>,
    mount: &MountState,
    parts: http::request::Parts,
    body: Bytes,
) -> Response<Body> {
    let mut exchange = gw.metrics.exchange(mount.index, MethodId::OTHER);
    let parsed = match jsonrpc::classify(&body) {
        Ok(p) => p,
        Err(e) => return exchange.finish_body(Failure::from(e).respond(None)),
    };
    exchange.set_method(MethodId::of_body(&parsed));
    let access = parts
        .extensions
        .get::<crate::oauth::resource_server::Access>()
        .cloned()
        .unwrap_or_default();
    let resp = match Ctx::new(gw, mount, &parts.headers, &access) {
        Ok(mut cx) => {
            if let jsonrpc::Body::Single(m) = &parsed {
                cx.judge_host(m);
                let http = matches!(mount.config.transport, Transport::Http { .. });
                if http && matches!(cx.session, context::SessionRef::None) {
                    cx.envelope = context::EnvelopeHeaders::of(&parts.headers, m);
                }
                if m.kind == Kind::Request {
                    cx.declared = revision::declared(m.method.as_deref(), &parts.headers, m.params);
                }
                if m.kind == Kind::Request && m.method.as_deref() == Some("initialize") {
                    let params = m
                        .params
                        .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok());
                    cx.hello = Some(mcp_ui_model::session_id::Hello::of_initialize(
                        params.as_ref(),
                    ));
                }
                if let Some(tracer) = &gw.telemetry {
                    tracer.answered_by_client(watch::session_of(&parts.headers), m);
                    cx.trace = Some(Box::new(start_trace(
                        tracer,
                        mount,
                        &parts.headers,
                        m,
                        &mut exchange,
                    )));
                }
            }
            if let (jsonrpc::Body::Batch(items), Some(tracer)) = (&parsed, &gw.telemetry) {
                for (m, _) in items {
                    tracer.answered_by_client(watch::session_of(&parts.headers), m);
                }
                exchange.set_batch_spans(batch_spans(tracer, mount, &parts.headers, items));
            }
            post_exchange(&cx, &body, parsed).await
        }
        Err(failure) => failure.respond(None),
    };
    exchange.finish_body(resp)
}

async fn post_exchange(cx: &Ctx<'_>, body: &Bytes, parsed: jsonrpc::Body<'_>) -> Response<Body> {
    let gw = cx.gw;
    // A batch whose requests share an id is refused whole, each request
    // answered with the error: whatever transport, the answers to it could
    // not be told apart.
    if let jsonrpc::Body::Batch(items) = &parsed
        && let Some(id) = jsonrpc::repeated_request_id(items)
    {
        let failure = Failure::RepeatedIdInBatch {
            id: id.get().to_owned(),
        };
        let ids: Vec<&RawValue> = items
            .iter()
            .filter(|(m, _)| m.kind == Kind::Request)
            .filter_map(|(m, _)| m.id)
            .collect();
        return failure.respond_batch(&ids);
    }
    // A request of the 2026-07-28 revision is held to its rules first.
    let revision = match &parsed {
        jsonrpc::Body::Single(m) if m.kind == Kind::Request => match revision::admit(cx, m) {
            Ok(r) => r,
            Err(refused) => return *refused,
        },
        _ => None,
    };
    // One snapshot for the whole exchange, however long it takes.
    let overlays = gw.live.load();
    // What a caller may reach of an endpoint that asks for tokens.
    if let Some(refused) = access::refused(cx, &parsed, &overlays) {
        return refused;
    }
    let target = cx.target();
    let planned_at = cx.trace.as_ref().map(|_| mcp_ui_model::clock::unix_nanos());
    let (plan, request_id) = match &parsed {
        jsonrpc::Body::Single(m) => (
            plan_one(cx, &overlays, m, &target),
            m.id.filter(|_| m.kind == Kind::Request),
        ),
        jsonrpc::Body::Batch(_) => (Plan::Forward, None),
    };
    if let Plan::Answer(answer) = plan {
        if let (Some(trace), Some(at)) = (&cx.trace, planned_at) {
            trace.answered(at);
        }
        let answer = match &revision {
            Some(r) => mcp_ui_rewrite::bridge::answer(&r.answering(cx, &overlays, false), &answer)
                .map_or(answer, Bytes::from),
            None => answer,
        };
        return reply::json(StatusCode::OK, answer);
    }
    // An upstream of the handshake era is stood in for.
    let bridged = match &revision {
        Some(_) => revision::bridged(cx).await,
        None => false,
    };
    if let (true, Some(r), jsonrpc::Body::Single(m)) = (bridged, &revision, &parsed)
        && r.method == "server/discover"
    {
        return revision::discover(cx, m, &overlays).await;
    }
    if let (true, Some(r), jsonrpc::Body::Single(m)) = (bridged, &revision, &parsed) {
        if let Some(refusal) = mcp_ui_rewrite::bridge::beyond(&r.method) {
            return revision::refused(&refusal, m.id);
        }
        if r.method == "subscriptions/listen" {
            return revision::listen(cx, m).await;
        }
        // The retry of a round the gateway gave for its upstream.
        let named = r.uri.as_deref().or(r.name.as_deref());
        if let Some(resp) = rounds::resume(cx, m, &r.method, named).await {
            return resp;
        }
    }
    // Its answers are put in the revision's form where the gateway stands
    // in, or where it writes the HTTP answer itself (a message session's).
    let answering = revision
        .filter(|_| bridged || cx.mount.is_message())
        .map(|r| r.answering(cx, &overlays, bridged));
    // A session's requests waiting upstream are bounded; the place is held
    // until the response body ends.
    let has_request = match &parsed {
        jsonrpc::Body::Single(m) => m.kind == Kind::Request,
        jsonrpc::Body::Batch(items) => items.iter().any(|(m, _)| m.kind == Kind::Request),
    };
    let in_flight = match cx.headers.get(SESSION_HEADER) {
        Some(sid) if has_request => {
            let max = gw.limits.max_in_flight_per_session;
            match gw.in_flight.try_enter(sid.as_bytes(), max) {
                Some(guard) => Some(guard),
                None => return Failure::TooManyInFlight { max }.respond(request_id),
            }
        }
        _ => None,
    };
    let finisher = finisher(cx, is_tool_call(&parsed), overlays, plan, target, answering);
    // An upstream of the handshake era is asked without the envelope.
    let translated = match (&parsed, bridged) {
        (jsonrpc::Body::Single(_), true) => {
            mcp_ui_rewrite::bridge::to_handshake(body).map(Bytes::from)
        }
        _ => None,
    };
    let (body, parsed) = match translated.as_ref().map(|b| (b, jsonrpc::classify(b))) {
        Some((b, Ok(p))) => (b, p),
        _ => (body, parsed),
    };
    // A traced request carries its context upstream in `params._meta`.
    let injected = match (&cx.trace, &parsed) {
        (Some(trace), jsonrpc::Body::Single(m)) => trace.inject(body, m),
        _ => None,
    };
    // The message's view is re-read from the bytes that go upstream: what
    // forwards it splices by position (a message session's own ids).
    let (body, parsed) = match injected.as_ref().map(|b| (b, jsonrpc::classify(b))) {
        Some((b, Ok(p))) => (b, p),
        _ => (body, parsed),
    };
    let client_span = cx
        .trace
        .as_ref()
        .and_then(|t| t.client(network_transport(cx)));
    let method = MethodId::of_body(&parsed);
    let sent = std::time::Instant::now();
    // A request under the 2026-07-28 envelope needs no session: an HTTP
    // upstream that speaks it answers it as it is, whatever the mode.
    let envelope = matches!((&parsed, &cx.session), (jsonrpc::Body::Single(m), context::SessionRef::None)
        if mcp_ui_wire::protocol::era(
            cx.headers.get(context::PROTOCOL_HEADER).and_then(|v| v.to_str().ok()),
            m.params,
        ) == mcp_ui_wire::protocol::Era::Envelope);
    let http = !cx.mount.is_message();
    let response = if bridged {
        pooled::post(cx, body, parsed, finisher).await
    } else if http && envelope {
        http_post(cx, body, parsed, request_id, finisher).await
    } else if pooled::pooled(cx) {
        pooled::post(cx, body, parsed, finisher).await
    } else if cx.mount.is_message() {
        let initialize = matches!(&parsed, jsonrpc::Body::Single(m)
            if m.kind == Kind::Request && m.method.as_deref() == Some("initialize"));
        match (&cx.session, initialize) {
            // A request without a session goes to the mount's pool.
            (context::SessionRef::None, false) => pooled::post(cx, body, parsed, finisher).await,
            _ => owned::post(cx, body, parsed, finisher).await,
        }
    } else {
        http_post(cx, body, parsed, request_id, finisher).await
    };
    let said = response.extensions().get::<Outcome>().copied();
    let outcome = said.unwrap_or_else(|| Outcome::of_answer(response.status(), false));
    gw.metrics.record_client(method, outcome, sent.elapsed());
    if let Some(span) = client_span {
        telemetry::request_spans::end_client(span, response.status(), said);
    }
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

/// A POST to an HTTP upstream whose clients own their sessions: relayed
/// as it is. One that comes without a session and is refused for it (400:
/// a stateful upstream) goes through a session the gateway holds instead,
/// and so do the next ones, without asking first.
async fn http_post(
    cx: &Ctx<'_>,
    body: &Bytes,
    parsed: jsonrpc::Body<'_>,
    request_id: Option<&RawValue>,
    finisher: Option<Finisher>,
) -> Response<Body> {
    let held = match &parsed {
        jsonrpc::Body::Single(m) => {
            matches!(cx.session, context::SessionRef::None)
                && !(m.kind == Kind::Request && m.method.as_deref() == Some("initialize"))
        }
        jsonrpc::Body::Batch(_) => false,
    };
    let pool = &cx.gw.pools[cx.mount.index];
    let envelope = matches!(&parsed, jsonrpc::Body::Single(m) if mcp_ui_wire::protocol::era(
        cx.headers.get(context::PROTOCOL_HEADER).and_then(|v| v.to_str().ok()),
        m.params,
    ) == mcp_ui_wire::protocol::Era::Envelope);
    if held && !envelope && pool.stateful() {
        return pooled::post(cx, body, parsed, finisher).await;
    }
    let subscription = match &parsed {
        jsonrpc::Body::Single(m) if m.method.as_deref() == Some("subscriptions/listen") => {
            mcp_ui_rewrite::bridge::Filter::of(m.params).ok()
        }
        _ => None,
    };
    let call = streamable::Call {
        request_id: request_id.map(RawValue::to_owned),
        tool_call: is_tool_call(&parsed),
        subscription,
    };
    let resp = streamable::post(cx, body.clone(), call, finisher.clone()).await;
    if !held || resp.status() != StatusCode::BAD_REQUEST {
        return resp;
    }
    tracing::debug!(upstream = %cx.upstream(), "a request without a session was refused: it goes through a session the gateway holds");
    let resp = pooled::post(cx, body, parsed, finisher).await;
    if resp.status().is_success() {
        pool.set_stateful();
    }
    resp
}

fn is_tool_call(parsed: &jsonrpc::Body<'_>) -> bool {
    matches!(parsed, jsonrpc::Body::Single(m)
        if m.kind == Kind::Request && m.method.as_deref() == Some("tools/call"))
}

/// What the overlay snapshot `overlays` plans for one message.
fn plan_one(
    cx: &Ctx<'_>,
    overlays: &mcp_ui_overlay::overlay::OverlaySet,
    m: &jsonrpc::Message<'_>,
    target: &mcp_ui_overlay::host::Target,
) -> Plan {
    let name = cx.upstream();
    plan::plan(overlays, name, m, target, &|tool| {
        cx.gw.upstream_tools.has(name, tool)
    })
}

/// One message planned as the mount's own path plans it: the answer the
/// gateway writes itself (`Err`), or what finishes the upstream's.
pub(crate) fn prepare(cx: &Ctx<'_>, m: &jsonrpc::Message<'_>) -> Result<Option<Finisher>, Bytes> {
    let overlays = cx.gw.live.load();
    let target = cx.target();
    match plan_one(cx, &overlays, m, &target) {
        Plan::Answer(answer) => Err(answer),
        plan => {
            let call = m.kind == Kind::Request && m.method.as_deref() == Some("tools/call");
            Ok(finisher(cx, call, overlays, plan, target, None))
        }
    }
}

/// What finishes the response, when the plan rewrites it or it may carry an
/// in-band challenge (a tool result from a non-stdio upstream).
fn finisher(
    cx: &Ctx<'_>,
    tool_call: bool,
    overlays: Arc<mcp_ui_overlay::overlay::OverlaySet>,
    plan: Plan,
    target: mcp_ui_overlay::host::Target,
    revision: Option<mcp_ui_rewrite::bridge::Answering>,
) -> Option<Finisher> {
    let challenges =
        (tool_call && !matches!(cx.mount.config.transport, Transport::Stdio(_))).then(|| {
            ResultChallenges {
                gateway: cx.gw.clone(),
                mount: cx.mount.index,
                host: cx.headers.get(http::header::HOST).cloned(),
            }
        });
    let rewrite = match plan {
        Plan::Rewrite(rewrite) => Some(rewrite),
        _ => None,
    };
    (rewrite.is_some() || challenges.is_some() || revision.is_some()).then(|| Finisher {
        overlays,
        mount: cx.upstream().to_owned(),
        rewrite,
        target,
        challenges,
        upstream_tools: cx.gw.upstream_tools.clone(),
        trace: cx.trace.as_ref().and_then(|t| t.parent.clone()),
        revision,
    })
}

/// Start the trace of a single message: its server span is ended with the
/// exchange (by the metrics, which know how it ended).
fn start_trace(
    tracer: &Arc<Tracer>,
    mount: &MountState,
    headers: &http::HeaderMap,
    m: &jsonrpc::Message<'_>,
    exchange: &mut crate::metrics::Exchange,
) -> Traced {
    let place = Place {
        path: &mount.config.path,
        upstream: &mount.config.name,
    };
    let (span, traced) = tracer.server(headers, m, &place);
    exchange.set_span(span);
    traced
}

/// A server span for each request of a batch (sampled ones), each from its
/// own `params._meta` context or the headers'. A batch goes upstream as
/// received: no context is added to its messages.
fn batch_spans(
    tracer: &Arc<Tracer>,
    mount: &MountState,
    headers: &http::HeaderMap,
    items: &[(jsonrpc::Message<'_>, &RawValue)],
) -> Vec<telemetry::Span> {
    let place = Place {
        path: &mount.config.path,
        upstream: &mount.config.name,
    };
    items
        .iter()
        .filter(|(m, _)| m.kind == Kind::Request)
        .filter_map(|(m, _)| tracer.server(headers, m, &place).0)
        .collect()
}

/// `network.transport` of the mount's upstream.
fn network_transport(cx: &Ctx<'_>) -> &'static str {
    match cx.mount.config.transport {
        Transport::Stdio(_) => "pipe",
        _ => "tcp",
    }
}

// === GET and DELETE ===

/// A GET (the client's stream of what the server says on its own) or a
/// DELETE (the end of a session).
pub(crate) async fn bodyless(
    gw: &Arc<Gateway>,
    mount: &MountState,
    req: Request<Incoming>,
) -> Response<Body> {
    let access = req
        .extensions()
        .get::<crate::oauth::resource_server::Access>()
        .cloned()
        .unwrap_or_default();
    bodyless_parts(gw, mount, req.method(), req.headers(), &access).await
}

/// [`bodyless`] from a request's method, headers and caller.
pub(crate) async fn bodyless_parts(
    gw: &Arc<Gateway>,
    mount: &MountState,
    method: &Method,
    headers: &http::HeaderMap,
    access: &crate::oauth::resource_server::Access,
) -> Response<Body> {
    let cx = match Ctx::new(gw, mount, headers, access) {
        Ok(cx) => cx,
        Err(failure) => return failure.respond(None),
    };
    let http = matches!(mount.config.transport, Transport::Http { .. });
    let resp = match (&cx.session, method) {
        (context::SessionRef::None, &Method::GET) if http && !pooled::pooled(&cx) => {
            // A host's GET without a session (ChatGPT's, after a long idle)
            // that the upstream refuses gets the gateway's own stream.
            let resp = streamable::forward_bodyless(&cx, method.clone()).await;
            match resp.status().is_client_error() {
                true => pooled::get(&cx),
                false => resp,
            }
        }
        (_, method) if http && !pooled::pooled(&cx) => {
            streamable::forward_bodyless(&cx, method.clone()).await
        }
        (context::SessionRef::Local { .. }, &Method::GET) => owned::get(&cx).await,
        (context::SessionRef::Local { .. }, _) => owned::delete(&cx),
        (_, &Method::GET) => pooled::get(&cx),
        _ => pooled::delete(&cx),
    };
    if method == Method::DELETE {
        ended::deleted(gw, headers, resp.status());
    }
    resp
}
