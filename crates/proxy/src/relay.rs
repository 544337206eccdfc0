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
//!   `batch`: a batch on a message session, its answers as one stream;
//! - [`pooled`]: through connections clients share (`sessions = "shared"`
//!   or `"conversation"`, and requests without a session);
//! - [`revive`]: a streamable HTTP session opened again after its upstream
//!   forgot it;
//! - [`stream`]: event-by-event transforms of an upstream's SSE stream;
//! - `prepare`: what the overlays plan for a message, and what finishes its
//!   answer;
//! - [`forward`]: the request an HTTP upstream gets for a client's;
//! - [`access`]: what a caller may reach of an endpoint that asks for tokens;
//! - [`answer`]: the answers the relay writes itself;
//! - [`ended`]: the ends of client sessions, timed;
//! - [`route`]: where a request leaves the gateway, decided once;
//! - [`watch`]: the spans of requests relayed to the client.

pub(crate) mod access;
pub mod answer;
mod batch;
pub mod context;
pub mod deliver;
pub mod ended;
pub mod forward;
pub mod member;
pub mod owned;
pub mod pooled;
mod prepare;
pub(crate) mod revision;
pub(crate) mod revive;
pub(crate) mod rounds;
pub(crate) mod route;
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
use crate::pending::finish::Finisher;
use context::{Ctx, SESSION_HEADER};
use mcp_ui_model::config::Transport;
use mcp_ui_model::outcome::{Failure, Outcome};
use mcp_ui_model::reply::{self, Body};
use mcp_ui_rewrite::plan::Plan;
use mcp_ui_upstream::telemetry;
use mcp_ui_wire::jsonrpc::{self, Kind};
use prepare::{finisher, plan_one};
use route::{Refused, Route, StandIn};

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
                    cx.trace = Some(Box::new(watch::start_trace(
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
                exchange.set_batch_spans(watch::batch_spans(tracer, mount, &parts.headers, items));
            }
            post_exchange(&cx, &body, parsed).await
        }
        Err(failure) => failure.respond(None),
    };
    exchange.finish_body(resp)
}

async fn post_exchange(cx: &Ctx<'_>, body: &Bytes, parsed: jsonrpc::Body<'_>) -> Response<Body> {
    let gw = cx.gw;
    if let Some(refused) = repeated_ids(&parsed) {
        return refused;
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
        return answered(cx, answer, revision.as_ref(), &overlays, planned_at);
    }
    // An upstream of the handshake era is stood in for.
    let bridged = match &revision {
        Some(_) => revision::bridged(cx).await,
        None => false,
    };
    let route = route_of(cx, &parsed, revision.as_ref().filter(|_| bridged));
    if let (Route::StandIn(stand_in), Some(r), jsonrpc::Body::Single(m)) =
        (&route, &revision, &parsed)
        && let Some(answer) = stand_in_first(cx, stand_in, r, m, &overlays).await
    {
        return answer;
    }
    // Its answers are put in the revision's form where the gateway stands
    // in, or where it writes the HTTP answer itself (a message session's).
    let answering = revision
        .filter(|_| bridged || cx.mount.is_message())
        .map(|r| r.answering(cx, &overlays, bridged));
    let in_flight = match in_flight(cx, &parsed) {
        Ok(guard) => guard,
        Err(failure) => return failure.respond(request_id),
    };
    let finisher = finisher(cx, is_tool_call(&parsed), overlays, plan, target, answering);
    // The message's view is re-read from the bytes that go upstream: what
    // forwards it splices by position (a message session's own ids).
    let translated = translated(body, &parsed, bridged);
    let (body, parsed) = reread(body, translated.as_ref(), parsed);
    let injected = injected(cx, body, &parsed);
    let (body, parsed) = reread(body, injected.as_ref(), parsed);
    let client_span = cx
        .trace
        .as_ref()
        .and_then(|t| t.client(watch::network_transport(cx)));
    let method = MethodId::of_body(&parsed);
    let sent = std::time::Instant::now();
    let response = execute(cx, &route, body, parsed, request_id, finisher).await;
    let said = response.extensions().get::<Outcome>().copied();
    let outcome = said.unwrap_or_else(|| Outcome::of_answer(response.status(), false));
    gw.metrics.record_client(method, outcome, sent.elapsed());
    if let Some(span) = client_span {
        telemetry::request_spans::end_client(span, response.status(), said);
    }
    match in_flight {
        Some(guard) => held_until_the_end(response, guard),
        None => response,
    }
}

/// `response`, holding `guard` until its body ends.
fn held_until_the_end<G: Send + 'static>(response: Response<Body>, guard: G) -> Response<Body> {
    response.map(|b| {
        b.map_frame(move |f| {
            let _held = &guard;
            f
        })
        .boxed_unsync()
    })
}

/// A batch whose requests share an id is refused whole, each request
/// answered with the error: whatever transport, the answers to it could not
/// be told apart.
fn repeated_ids(parsed: &jsonrpc::Body<'_>) -> Option<Response<Body>> {
    let jsonrpc::Body::Batch(items) = parsed else {
        return None;
    };
    let id = jsonrpc::repeated_request_id(items)?;
    let failure = Failure::RepeatedIdInBatch {
        id: id.get().to_owned(),
    };
    let ids: Vec<&RawValue> = items
        .iter()
        .filter(|(m, _)| m.kind == Kind::Request)
        .filter_map(|(m, _)| m.id)
        .collect();
    Some(failure.respond_batch(&ids))
}

/// The answer the plan wrote (a widget resource, a render tool), in the
/// revision's form when the request was of the 2026-07-28 revision.
fn answered(
    cx: &Ctx<'_>,
    answer: Bytes,
    revision: Option<&revision::Revision>,
    overlays: &mcp_ui_overlay::overlay::OverlaySet,
    planned_at: Option<u64>,
) -> Response<Body> {
    if let (Some(trace), Some(at)) = (&cx.trace, planned_at) {
        trace.answered(at);
    }
    let answer = match revision {
        Some(r) => mcp_ui_rewrite::bridge::answer(&r.answering(cx, overlays, false), &answer)
            .map_or(answer, Bytes::from),
        None => answer,
    };
    reply::json(StatusCode::OK, answer)
}

/// The route of a POST: what [`route::post`] reads, taken from the exchange.
/// `stood_in`: the 2026-07-28 request the gateway stands in for.
fn route_of(
    cx: &Ctx<'_>,
    parsed: &jsonrpc::Body<'_>,
    stood_in: Option<&revision::Revision>,
) -> Route {
    let single = match parsed {
        jsonrpc::Body::Single(m) => Some(m),
        jsonrpc::Body::Batch(_) => None,
    };
    // Only a request without a session may go by the envelope: the others
    // are spared reading their params for it.
    let sessionless = matches!(cx.session, context::SessionRef::None);
    let envelope = single.filter(|_| sessionless).is_some_and(|m| {
        mcp_ui_wire::protocol::era(
            cx.headers
                .get(context::PROTOCOL_HEADER)
                .and_then(|v| v.to_str().ok()),
            m.params,
        ) == mcp_ui_wire::protocol::Era::Envelope
    });
    route::post(&route::Post {
        http: !cx.mount.is_message(),
        client_sessions: !pooled::pooled(cx),
        stateful: cx.gw.upstreams.pools[cx.mount.index].stateful(),
        session: &cx.session,
        single: single.is_some(),
        initialize: single
            .is_some_and(|m| m.kind == Kind::Request && m.method.as_deref() == Some("initialize")),
        envelope,
        stood_in: stood_in.map(|r| r.method.as_str()),
    })
}

/// The steps of a stand-in that answer before anything goes upstream: the
/// revision's own methods, and the retry of a round the gateway gave.
async fn stand_in_first(
    cx: &Ctx<'_>,
    stand_in: &StandIn,
    r: &revision::Revision,
    m: &jsonrpc::Message<'_>,
    overlays: &mcp_ui_overlay::overlay::OverlaySet,
) -> Option<Response<Body>> {
    match stand_in {
        StandIn::Discover => Some(revision::discover(cx, m, overlays).await),
        StandIn::Beyond(refusal) => Some(revision::refused(refusal, m.id)),
        StandIn::Listen => Some(revision::listen(cx, m).await),
        StandIn::Relay => {
            let named = r.uri.as_deref().or(r.name.as_deref());
            rounds::resume(cx, m, &r.method, named).await
        }
    }
}

/// A session's requests waiting upstream are bounded; the place is held
/// until the response body ends.
fn in_flight(
    cx: &Ctx<'_>,
    parsed: &jsonrpc::Body<'_>,
) -> Result<Option<mcp_ui_upstream::session::in_flight::InFlightGuard>, Failure> {
    let has_request = match parsed {
        jsonrpc::Body::Single(m) => m.kind == Kind::Request,
        jsonrpc::Body::Batch(items) => items.iter().any(|(m, _)| m.kind == Kind::Request),
    };
    match cx.headers.get(SESSION_HEADER) {
        Some(sid) if has_request => {
            let max = cx.gw.limits.max_in_flight_per_session;
            match cx.gw.pending.in_flight.try_enter(sid.as_bytes(), max) {
                Some(guard) => Ok(Some(guard)),
                None => Err(Failure::TooManyInFlight { max }),
            }
        }
        _ => Ok(None),
    }
}

/// An upstream of the handshake era is asked without the envelope.
fn translated(body: &Bytes, parsed: &jsonrpc::Body<'_>, bridged: bool) -> Option<Bytes> {
    match (parsed, bridged) {
        (jsonrpc::Body::Single(_), true) => {
            mcp_ui_rewrite::bridge::to_handshake(body).map(Bytes::from)
        }
        _ => None,
    }
}

/// A traced request carries its context upstream in `params._meta`.
fn injected(cx: &Ctx<'_>, body: &Bytes, parsed: &jsonrpc::Body<'_>) -> Option<Bytes> {
    match (&cx.trace, parsed) {
        (Some(trace), jsonrpc::Body::Single(m)) => trace.inject(body, m),
        _ => None,
    }
}

/// `body`'s replacement and its view, or `body` and `parsed` as they are.
fn reread<'a>(
    body: &'a Bytes,
    replaced: Option<&'a Bytes>,
    parsed: jsonrpc::Body<'a>,
) -> (&'a Bytes, jsonrpc::Body<'a>) {
    match replaced.map(|b| (b, jsonrpc::classify(b))) {
        Some((b, Ok(p))) => (b, p),
        _ => (body, parsed),
    }
}

/// The route executed: the way out, and the steps its refusals lead to.
async fn execute(
    cx: &Ctx<'_>,
    route: &Route,
    body: &Bytes,
    parsed: jsonrpc::Body<'_>,
    request_id: Option<&RawValue>,
    finisher: Option<Finisher>,
) -> Response<Body> {
    let (revive, refused) = match route {
        Route::StandIn(_) | Route::Pooled => return pooled::post(cx, body, parsed, finisher).await,
        Route::Owned => return owned::post(cx, body, parsed, finisher).await,
        Route::Streamable { revive, refused } => (*revive, *refused),
    };
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
        revive,
    };
    let resp = streamable::post(cx, body.clone(), call, finisher.clone()).await;
    if refused != Refused::HeldSession || resp.status() != StatusCode::BAD_REQUEST {
        return resp;
    }
    tracing::debug!(upstream = %cx.upstream(), "a request without a session was refused: it goes through a session the gateway holds");
    let resp = pooled::post(cx, body, parsed, finisher).await;
    if resp.status().is_success() {
        cx.gw.upstreams.pools[cx.mount.index].set_stateful();
    }
    resp
}

fn is_tool_call(parsed: &jsonrpc::Body<'_>) -> bool {
    matches!(parsed, jsonrpc::Body::Single(m)
        if m.kind == Kind::Request && m.method.as_deref() == Some("tools/call"))
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
    let route = route::bodyless(http, !pooled::pooled(&cx), &cx.session, method);
    let get = method == Method::GET;
    let resp = match route {
        Route::Streamable { revive, refused } => {
            let resp = streamable::forward_bodyless(&cx, method.clone(), revive).await;
            match refused == Refused::OwnStream && resp.status().is_client_error() {
                true => pooled::get(&cx),
                false => resp,
            }
        }
        Route::Owned if get => owned::get(&cx).await,
        Route::Owned => owned::delete(&cx),
        _ if get => pooled::get(&cx),
        _ => pooled::delete(&cx),
    };
    if method == Method::DELETE {
        ended::deleted(&gw.ids, &gw.metrics, headers, resp.status());
    }
    resp
}
