//! Answers made of what a message session delivers, for the clients of a
//! session that owns its connection ([`super::owned`]) and of connections
//! clients share ([`super::pooled`]) alike: JSON when the response is the
//! first thing the upstream says about a request, an SSE stream otherwise
//! that carries the related messages and ends with the response; a batch's
//! messages each on their own; and the 2026-07-28 header checks.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Response, StatusCode};
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;

use super::answer::{accepted, message_event, sse_response};
use super::context::{Ctx, METHOD_HEADER, NAME_HEADER};
use super::finish::Finisher;
use crate::jsonrpc::{self, Kind, Message};
use crate::outcome::{Failure, Outcome, OutcomeSlot};
use crate::reply::{self, Body};
use crate::sse;
use crate::upstream::messages::{Delivery, MessageSession, Mux, Peer, PendingGuard};

/// Send server messages as SSE comments this often on idle streams.
pub(super) const KEEPALIVE: Duration = Duration::from_secs(15);

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
