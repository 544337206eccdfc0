//! The relay to a message-oriented upstream (stdio child, legacy SSE): the
//! session this process owns carries each request, and the answer is JSON
//! when the response is the first thing the upstream says about it, an SSE
//! stream otherwise.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::HeaderValue;
use http::{Response, StatusCode};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::answer::{accepted, message_event, sse_response};
use super::context::{
    Ctx, METHOD_HEADER, NAME_HEADER, PROTOCOL_HEADER, SESSION_HEADER, SessionRef,
};
use super::finish::Finisher;
use crate::jsonrpc::{self, Kind, Message};
use crate::outcome::{Failure, KNOWN_VERSIONS, Outcome, OutcomeSlot};
use crate::reply::{self, Body};
use crate::session::{Hello, Route, Token};
use crate::sse;
use crate::upstream::messages::{Delivery, EndedBy, MessageSession, Mux, Peer, PendingGuard};

/// Send server messages as SSE comments this often on idle streams.
pub(super) const KEEPALIVE: Duration = Duration::from_secs(15);

/// Relay one POST of a client session that owns its connection (`sessions
/// = "client"`): through the session its headers name, opened again when
/// its connection is gone, or a new one for `initialize`. Requests without
/// a session go to the mount's pool ([`super::pooled`]).
pub async fn post(
    cx: &Ctx<'_>,
    body: &Bytes,
    parsed: jsonrpc::Body<'_>,
    finisher: Option<Finisher>,
) -> Response<Body> {
    if let Some(v) = cx.headers.get(PROTOCOL_HEADER)
        && !v.to_str().is_ok_and(|v| KNOWN_VERSIONS.contains(&v.trim()))
    {
        return Failure::UnsupportedVersion.respond(None);
    }
    let initialize = matches!(&parsed, jsonrpc::Body::Single(m)
        if m.kind == Kind::Request && m.method.as_deref() == Some("initialize"));
    if let SessionRef::None = cx.session
        && !initialize
    {
        return super::pooled::post(cx, body, parsed, finisher).await;
    }
    let m = match parsed {
        jsonrpc::Body::Single(m) => m,
        jsonrpc::Body::Batch(items) => {
            return match local_session(cx).await {
                Ok((s, revived)) => {
                    let resp = post_batch(cx, items, s, None, None).await;
                    say_session(cx, revived, resp)
                }
                Err(f) => f.respond(None),
            };
        }
    };
    if let Err(failure) = check_method_headers(cx, &m) {
        return failure.respond(None);
    }
    let request_id = m.id.filter(|_| m.kind == Kind::Request);
    let (session, new_id, revived) = match (&cx.session, initialize) {
        (SessionRef::None, true) => match cx.gw.open_session(cx.mount).await {
            Ok((id, s)) => {
                super::ended::watch(cx.gw.metrics.clone(), s.clone());
                (s, Some(id), false)
            }
            Err(e) => return e.respond(m.id),
        },
        _ => match local_session(cx).await {
            Ok((s, revived)) => (s, None, revived),
            Err(e) => return e.respond(request_id),
        },
    };
    let Some(id) = request_id else {
        let resp = match session
            .notify(body.clone(), m.kind, m.method.as_deref(), m.params)
            .await
        {
            Ok(()) => accepted(),
            Err(_) if session.is_closed() => Failure::SessionNotFound.respond(None),
            Err(e) => e.respond(None),
        };
        return say_session(cx, revived, resp);
    };
    let progress = jsonrpc::params_view(m.params).request_progress_token;
    let resp = match session.request(body, id, progress).await {
        Ok((rx, guard)) => {
            let pending = Pending { rx, guard, id };
            answer(cx, &session, pending, finisher, new_id.is_some()).await
        }
        Err(e) => e.respond(Some(id)),
    };
    match new_id {
        Some(local) => {
            let params = m
                .params
                .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok());
            finish_initialize(cx, local, Hello::of_initialize(params.as_ref()), resp)
        }
        None => say_session(cx, revived, resp),
    }
}

/// The answer of a request whose session was opened again in this process
/// names the session, as an `initialize` answer does: a load balancer that
/// learns where a session lives from the answers (HAProxy's
/// `stick store-response`) sends its next requests here.
fn say_session(cx: &Ctx<'_>, revived: bool, mut resp: Response<Body>) -> Response<Body> {
    if revived && let Some(sid) = cx.headers.get(SESSION_HEADER) {
        resp.headers_mut().insert(SESSION_HEADER, sid.clone());
    }
    resp
}

/// The session this process owns that the client's id names: the one it
/// numbers, or the one opened again in its place; opened again now (as the
/// client's id says the client opened it) when there is none, so that a
/// client whose connection is gone (a crashed child, a restarted gateway)
/// carries on instead of being told to start over, which hosts do not do.
/// Whether it was opened now.
async fn local_session(cx: &Ctx<'_>) -> Result<(Arc<MessageSession>, bool), Failure> {
    let SessionRef::Local { instance, id } = cx.session else {
        return Err(Failure::SessionNotFound);
    };
    let sessions = &cx.gw.sessions;
    let own = instance == cx.gw.instance;
    if own && let Some(s) = sessions.get(cx.mount.index, id) {
        return Ok((s, false));
    }
    if sessions.ended.contains(&(instance, id)) {
        return Err(Failure::SessionNotFound);
    }
    if let Some(s) = sessions.revived(cx.mount.index, instance, id) {
        return Ok((s, false));
    }
    let hello = cx.hello.clone().unwrap_or_default();
    let s = cx.gw.revive_session(cx.mount, instance, id, &hello).await?;
    super::ended::watch(cx.gw.metrics.clone(), s.clone());
    Ok((s, true))
}

/// 2026-07-28: `Mcp-Method` and `Mcp-Name`, when sent, must match the body.
pub(super) fn check_method_headers(cx: &Ctx<'_>, m: &Message<'_>) -> Result<(), Failure> {
    if let Some(v) = cx.headers.get(METHOD_HEADER)
        && v.to_str().ok() != m.method.as_deref()
    {
        return Err(Failure::HeaderMismatch("Mcp-Method"));
    }
    if let Some(v) = cx.headers.get(NAME_HEADER) {
        let p = jsonrpc::params_view(m.params);
        let name = match m.method.as_deref() {
            Some("resources/read") => p.uri,
            _ => p.name,
        };
        if v.to_str().ok() != name.as_deref() {
            return Err(Failure::HeaderMismatch("Mcp-Name"));
        }
    }
    Ok(())
}

/// Give a successful `initialize` its session id; a failed one ends the
/// session it started.
fn finish_initialize(
    cx: &Ctx<'_>,
    local: u64,
    hello: Hello,
    mut resp: Response<Body>,
) -> Response<Body> {
    let failed = resp.status() != StatusCode::OK
        || resp
            .extensions()
            .get::<Outcome>()
            .is_some_and(|o| *o != Outcome::Ok);
    if failed {
        if let Some(s) = cx.gw.sessions.remove(local) {
            s.end(EndedBy::Unopened, "initialize failed");
        }
        return resp;
    }
    let token = Token {
        mount: cx.upstream().to_owned(),
        route: Route::Local {
            instance: cx.gw.instance,
            id: local,
        },
        host: Some(cx.host),
        started: Some(crate::session::id::now_millis()),
        hello: Some(hello),
    };
    let id =
        HeaderValue::from_str(&cx.gw.key.seal(&token)).expect("base64url is a valid header value");
    resp.headers_mut().insert(SESSION_HEADER, id);
    resp
}

/// Answer one request: as JSON when its response is the first thing the
/// upstream says about it, otherwise as an SSE stream that carries the
/// related messages and ends with the response.
pub(super) async fn answer(
    cx: &Ctx<'_>,
    session: &Arc<MessageSession>,
    pending: Pending<'_>,
    finisher: Option<Finisher>,
    // Only a new session's initialize needs to know (see `finish_initialize`).
    mark_errors: bool,
) -> Response<Body> {
    let Pending { mut rx, guard, id } = pending;
    let secs = cx.gw.limits.request_timeout_secs;
    let deadline = Instant::now() + cx.gw.request_timeout();
    let timeout = || Failure::timeout(session.upstream(), secs);
    match tokio::time::timeout_at(deadline, rx.recv()).await {
        Ok(Some(Delivery::Final(b))) => {
            let b = Finisher::apply(finisher.as_ref(), b);
            let error = mark_errors && jsonrpc::classify_one(&b).is_ok_and(|m| m.error.is_some());
            let mut r = reply::json(StatusCode::OK, b);
            if error {
                r.extensions_mut().insert(Outcome::JsonRpcError);
            }
            r
        }
        Ok(Some(Delivery::Failed(failure))) => failure.respond(Some(id)),
        Ok(Some(Delivery::Related(first))) => {
            let slot = OutcomeSlot::new();
            let events = Events {
                id: id.to_owned(),
                slot: slot.clone(),
            };
            let timeout = timeout();
            let (tx, out) = mpsc::channel::<Bytes>(16);
            let mut watch = super::watch::watch(cx);
            // A call in flight outlives a shutdown's start: it ends with its
            // response, its deadline, or its session (closed after the grace).
            tokio::spawn(async move {
                let mut guard = Some(guard);
                if let Some(w) = &mut watch {
                    w(&first);
                }
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
                    };
                    let (bytes, last) = match next {
                        Ok(Some(Delivery::Related(b))) => {
                            if let Some(w) = &mut watch {
                                w(&b);
                            }
                            (b, false)
                        }
                        Ok(Some(Delivery::Final(b))) => {
                            (Finisher::apply(finisher.as_ref(), b), true)
                        }
                        Ok(Some(Delivery::Failed(f))) => (events.failed(&f), true),
                        Ok(None) => return,
                        Err(_) => {
                            if let Some(g) = guard.take() {
                                g.timed_out(secs);
                            }
                            (events.failed(&timeout), true)
                        }
                    };
                    if tx.send(message_event(&bytes)).await.is_err() || last {
                        return;
                    }
                }
            });
            let mut r = sse_response(out);
            r.extensions_mut().insert(slot);
            r
        }
        Ok(None) => Failure::Ended {
            upstream: session.upstream().to_owned(),
            what: "ended the session".into(),
        }
        .respond(Some(id)),
        Err(_) => {
            guard.timed_out(secs);
            timeout().respond(Some(id))
        }
    }
}

/// A request sent, waiting for what the upstream says about it.
pub(super) struct Pending<'a> {
    pub(super) rx: mpsc::Receiver<Delivery>,
    pub(super) guard: PendingGuard,
    pub(super) id: &'a RawValue,
}

/// How an SSE answer to request `id` ends when the gateway ends it.
struct Events {
    id: Box<RawValue>,
    slot: OutcomeSlot,
}

impl Events {
    /// The error that ends the answer, its outcome recorded.
    fn failed(&self, failure: &Failure) -> Bytes {
        self.slot.set(failure.outcome());
        failure.body(Some(&self.id))
    }
}

/// A batch (2025-03-26) on `session`, each message sent on its own;
/// `peer` and `mux` for a connection shared by several clients.
pub(super) async fn post_batch(
    cx: &Ctx<'_>,
    items: Vec<(Message<'_>, &RawValue)>,
    session: Arc<MessageSession>,
    peer: Option<Arc<Peer>>,
    mux: Option<&Mux>,
) -> Response<Body> {
    if items
        .iter()
        .any(|(m, _)| m.method.as_deref() == Some("initialize"))
    {
        return Failure::InitializeInBatch.respond(None);
    }
    let _ = cx;
    let slot = OutcomeSlot::new();
    // Each message goes upstream on its own; stdio servers need not know batches.
    let mut streams = Vec::new();
    for (m, raw) in &items {
        let bytes = raw.get().as_bytes();
        if m.kind == Kind::Request {
            let progress = jsonrpc::params_view(m.params).request_progress_token;
            let id = m.id.expect("requests have ids");
            let events = Events {
                id: id.to_owned(),
                slot: slot.clone(),
            };
            match session.request_as(bytes, id, progress, peer.as_ref()).await {
                Ok((rx, guard)) => streams.push(
                    ReceiverStream::new(rx)
                        .map(move |d| {
                            let _keep = &guard;
                            match d {
                                Delivery::Failed(f) => Delivery::Final(events.failed(&f)),
                                d => d,
                            }
                        })
                        .boxed(),
                ),
                Err(f) => {
                    let err = Delivery::Final(events.failed(&f));
                    streams.push(futures_util::stream::iter([err]).boxed());
                }
            }
        } else if let (Some(mux), Kind::Response, Some(id)) = (mux, m.kind, m.id) {
            if let Err(f) = mux.answer(bytes, id) {
                return f.respond(None);
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
            return Failure::SessionNotFound.respond(None);
        }
    }
    if streams.is_empty() {
        return accepted();
    }
    let expected = streams.len();
    let deadline = Instant::now() + cx.gw.request_timeout();
    let timeout = Failure::timeout(session.upstream(), cx.gw.limits.request_timeout_secs);
    let end = slot.clone();
    let (tx, out) = mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let mut merged = futures_util::stream::select_all(streams);
        let mut finals = 0;
        while finals < expected {
            let d = match tokio::time::timeout_at(deadline, merged.next()).await {
                Ok(Some(d)) => d,
                Ok(None) => return,
                Err(_) => {
                    end.set(timeout.outcome());
                    let _ = tx.send(message_event(&timeout.body(None))).await;
                    return;
                }
            };
            let b = match d {
                Delivery::Related(b) => b,
                Delivery::Final(b) => {
                    finals += 1;
                    b
                }
                // Each request's stream maps its failure to a response.
                Delivery::Failed(f) => {
                    finals += 1;
                    f.body(None)
                }
            };
            if tx.send(message_event(&b)).await.is_err() {
                return;
            }
        }
    });
    let mut r = sse_response(out);
    r.extensions_mut().insert(slot);
    r
}

/// The client's GET stream of a session this process owns (opened again
/// when its connection is gone).
pub async fn get(cx: &Ctx<'_>) -> Response<Body> {
    let session = match local_session(cx).await {
        Ok((s, _)) => s,
        Err(f) => return f.respond(None),
    };
    let Some(mut rx) = session.attach_stream() else {
        return Failure::StreamConflict.respond(None);
    };
    let (tx, out) = mpsc::channel::<Bytes>(16);
    let stop = cx.gw.shutdown.clone();
    let mut watch = super::watch::watch(cx);
    // Ends with the session, the client, or the gateway's shutdown.
    tokio::spawn(async move {
        loop {
            let bytes = tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => {
                        if let Some(w) = &mut watch {
                            w(&m);
                        }
                        message_event(&m)
                    }
                    None => return,
                },
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

/// End a session this process owns (its child is stopped).
pub fn delete(cx: &Ctx<'_>) -> Response<Body> {
    let SessionRef::Local { instance, id } = cx.session else {
        return Failure::MethodNotAllowed {
            allow: "POST",
            why: Some("DELETE needs a session"),
        }
        .respond(None);
    };
    let sessions = &cx.gw.sessions;
    let number = match instance == cx.gw.instance {
        true => Some(id),
        false => sessions.revived_number(cx.mount.index, instance, id),
    };
    sessions.ended.insert((instance, id));
    match number.and_then(|n| sessions.remove(n)) {
        Some(s) => {
            s.end(EndedBy::Client, "ended by the client");
            reply::status(StatusCode::OK)
        }
        None => Failure::SessionNotFound.respond(None),
    }
}
