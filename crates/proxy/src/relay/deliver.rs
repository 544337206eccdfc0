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
use http::Response;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::answer::{message_event, sse_response};
use super::context::{Ctx, METHOD_HEADER, NAME_HEADER};
use crate::pending::finish::Finisher;
use crate::pending::waiting::{Next, Waiting};
use mcp_ui_model::outcome::{Failure, Outcome, OutcomeSlot};
use mcp_ui_model::reply::{self, Body};
use mcp_ui_rewrite::bridge;
use mcp_ui_wire::jsonrpc::{self, Message};
use mcp_ui_wire::sse;

/// Send server messages as SSE comments this often on idle streams.
pub(super) const KEEPALIVE: Duration = Duration::from_secs(15);

/// 2026-07-28: `Mcp-Method` and `Mcp-Name`, when sent, must match the body
/// (`Mcp-Name` names what `bridge::check::named_by` says).
pub(super) fn check_method_headers(cx: &Ctx<'_>, m: &Message<'_>) -> Result<(), Failure> {
    if let Some(v) = cx.headers.get(METHOD_HEADER)
        && v.to_str().ok().map(str::trim) != m.method.as_deref()
    {
        return Err(Failure::HeaderMismatch("Mcp-Method"));
    }
    let field = m.method.as_deref().and_then(bridge::check::named_by);
    if let (Some(v), Some(field)) = (cx.headers.get(NAME_HEADER), field) {
        let p = jsonrpc::params_view(m.params);
        let name = if field == "uri" { p.uri } else { p.name };
        if bridge::header_value(v.as_bytes()).as_deref() != name.as_deref() {
            return Err(Failure::HeaderMismatch("Mcp-Name"));
        }
    }
    Ok(())
}

/// What a message becomes on its way to the client (an app endpoint tags
/// its members' requests); `true` for the response.
pub type Shape = Arc<dyn Fn(Bytes, bool) -> Bytes + Send + Sync>;

/// Answer one request: as JSON when its response is the first thing the
/// upstream says about it, otherwise as an SSE stream that carries the
/// related messages and ends with the response.
pub(super) async fn answer(
    cx: &Ctx<'_>,
    mut waiting: Waiting,
    // Only a new session's initialize needs to know (see `finish_initialize`).
    mark_errors: bool,
) -> Response<Body> {
    let first = waiting.next().await;
    respond(cx, first, waiting, None, mark_errors)
}

/// What ends an SSE answer early: a related message it takes over, with
/// the rest of the wait, and which gives the answer's last message (a
/// 2026-07-28 round, `relay::rounds`).
pub(crate) struct Interrupt {
    pub takes: fn(&[u8]) -> bool,
    #[allow(clippy::type_complexity)]
    pub then: Box<
        dyn FnOnce(
                Bytes,
                Waiting,
            )
                -> std::pin::Pin<Box<dyn std::future::Future<Output = Bytes> + Send>>
            + Send,
    >,
}

/// The answer that starts with `first`, the rest of it from `waiting`,
/// each message shaped by `shape`.
pub fn respond(
    cx: &Ctx<'_>,
    first: Next,
    waiting: Waiting,
    shape: Option<Shape>,
    mark_errors: bool,
) -> Response<Body> {
    respond_until(cx, first, waiting, shape, mark_errors, None)
}

/// [`respond`], the SSE answer ended early by `interrupt`.
pub(crate) fn respond_until(
    cx: &Ctx<'_>,
    first: Next,
    mut waiting: Waiting,
    shape: Option<Shape>,
    mark_errors: bool,
    mut interrupt: Option<Interrupt>,
) -> Response<Body> {
    let shaped = move |b: Bytes, last: bool| match &shape {
        Some(f) => f(b, last),
        None => b,
    };
    match first {
        Next::Response(b) => {
            let b = shaped(b, true);
            let error = mark_errors && jsonrpc::classify_one(&b).is_ok_and(|m| m.error.is_some());
            let status = Finisher::status(waiting.finisher.as_ref(), &b);
            let mut r = reply::json(status, b);
            if error {
                r.extensions_mut().insert(Outcome::JsonRpcError);
            }
            r
        }
        Next::Failed(failure) => failure.respond(Some(waiting.id())),
        Next::Related(first) => {
            let slot = OutcomeSlot::new();
            let events = Events {
                id: waiting.id.clone(),
                slot: slot.clone(),
            };
            let (tx, out) = mpsc::channel::<Bytes>(16);
            let mut watch = super::watch::watch(cx);
            // A call in flight outlives a shutdown's start: it ends with its
            // response, its deadline, or its session (closed after the grace).
            tokio::spawn(async move {
                if let Some(w) = &mut watch {
                    w(&first);
                }
                if tx.send(message_event(&shaped(first, false))).await.is_err() {
                    return;
                }
                loop {
                    let next = tokio::select! {
                        n = waiting.next() => n,
                        _ = tokio::time::sleep(KEEPALIVE) => {
                            if tx.send(Bytes::from_static(sse::KEEPALIVE)).await.is_err() { return }
                            continue;
                        }
                    };
                    let (bytes, last) = match next {
                        Next::Related(b) if interrupt.as_ref().is_some_and(|i| (i.takes)(&b)) => {
                            let i = interrupt.take().expect("checked");
                            let last = (i.then)(b, waiting).await;
                            let _ = tx.send(message_event(&shaped(last, true))).await;
                            return;
                        }
                        Next::Related(b) => {
                            if let Some(w) = &mut watch {
                                w(&b);
                            }
                            (shaped(b, false), false)
                        }
                        Next::Response(b) => (shaped(b, true), true),
                        Next::Failed(f) => (events.failed(&f), true),
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
    }
}

/// A GET stream: `messages` as SSE events as they come (each seen by
/// `watch`), a comment when idle, until they end, the client goes or
/// `stop` (the gateway's shutdown).
pub(crate) fn event_stream<S>(
    stop: &tokio_util::sync::CancellationToken,
    mut watch: Option<super::stream::Watch>,
    mut messages: S,
) -> Response<Body>
where
    S: futures_util::Stream<Item = Bytes> + Send + Unpin + 'static,
{
    let (tx, out) = mpsc::channel::<Bytes>(16);
    let stop = stop.clone();
    tokio::spawn(async move {
        loop {
            let bytes = tokio::select! {
                m = messages.next() => match m {
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

/// How an SSE answer to request `id` ends when the gateway ends it.
pub(super) struct Events {
    pub(super) id: Box<RawValue>,
    pub(super) slot: OutcomeSlot,
}

impl Events {
    /// The error that ends the answer, its outcome recorded.
    pub(super) fn failed(&self, failure: &Failure) -> Bytes {
        self.slot.set(failure.outcome());
        failure.body(Some(&self.id))
    }
}
