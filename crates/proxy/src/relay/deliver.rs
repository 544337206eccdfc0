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

use super::answer::{message_event, sse_response};
use super::context::{Ctx, METHOD_HEADER, NAME_HEADER};
use super::finish::Finisher;
use mcp_ui_model::outcome::{Failure, Outcome, OutcomeSlot};
use mcp_ui_model::reply::{self, Body};
use mcp_ui_rewrite::bridge;
use mcp_ui_upstream::upstream::messages::{Delivery, MessageSession, PendingGuard};
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

/// A request sent upstream, waiting for what the upstream says about it:
/// the typed reply a mount's session gives, rendered as HTTP by
/// [`respond`] for the mount's own clients, read message by message by an
/// app endpoint.
pub struct Waiting {
    pub(crate) session: Arc<MessageSession>,
    rx: mpsc::Receiver<Delivery>,
    guard: Option<PendingGuard>,
    id: Box<RawValue>,
    finisher: Option<Finisher>,
    deadline: Instant,
    secs: u64,
    /// Run when the wait is over (a connection of one request only ends).
    _end: Option<EndOnDrop>,
    /// Counted when the wait is over, for an exchange with no HTTP
    /// response of its own.
    exchange: Option<crate::metrics::Exchange>,
    /// The id the response goes out under when the client asks again
    /// under another (a 2026-07-28 round resumed).
    resumed_as: Option<Box<RawValue>>,
}

/// Runs its function once, when dropped.
pub(crate) struct EndOnDrop(Option<Box<dyn FnOnce() + Send + Sync>>);

impl EndOnDrop {
    pub fn new(f: impl FnOnce() + Send + Sync + 'static) -> EndOnDrop {
        EndOnDrop(Some(Box::new(f)))
    }
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// What a session answers a request with.
pub enum Reply {
    /// The answer, written without the upstream (by the overlays' plan, or
    /// for what concerns the client alone).
    Now(Bytes),
    /// The request, sent upstream.
    Waiting(Box<Waiting>),
}

impl Reply {
    /// The response, the related messages passed over.
    pub async fn response(self) -> Result<Bytes, Failure> {
        match self {
            Reply::Now(b) => Ok(b),
            Reply::Waiting(w) => w.response().await,
        }
    }
}

/// What the upstream said next about a waiting request.
pub enum Next {
    /// A message related to the request (progress, a server request, a log).
    Related(Bytes),
    /// Its response, finished (the overlays' rewrite applied): the last.
    Response(Bytes),
    /// Why it has no response (the session ended, the time ran out, the
    /// upstream refused it): the last.
    Failed(Failure),
}

impl Waiting {
    pub(super) fn new(
        cx: &Ctx<'_>,
        session: Arc<MessageSession>,
        (rx, guard): (mpsc::Receiver<Delivery>, PendingGuard),
        id: &RawValue,
        finisher: Option<Finisher>,
    ) -> Waiting {
        Waiting {
            session,
            rx,
            guard: Some(guard),
            id: id.to_owned(),
            finisher,
            deadline: Instant::now() + cx.gw.request_timeout(),
            secs: cx.gw.limits.request_timeout_secs,
            _end: None,
            exchange: None,
            resumed_as: None,
        }
    }

    /// A request of the 2026-07-28 revision the gateway stands in for.
    pub(super) fn bridged(&self) -> Option<&mcp_ui_rewrite::bridge::Answering> {
        self.finisher
            .as_ref()
            .and_then(|f| f.revision.as_ref())
            .filter(|a| a.bridged)
    }

    /// Go on waiting for the client's request `id` (a round's retry), with
    /// a new deadline.
    pub(super) fn resume(&mut self, id: &RawValue, timeout: Duration) {
        self.id = id.to_owned();
        self.resumed_as = Some(id.to_owned());
        self.deadline = Instant::now() + timeout;
    }

    /// The request is set aside for its client's input (`true`: a
    /// 2026-07-28 round), or taken up again.
    pub(super) fn park(&self, parked: bool) {
        if let Some(g) = &self.guard {
            g.park(parked);
        }
    }

    /// Count `exchange` when the wait is over.
    pub(super) fn counted(mut self, exchange: crate::metrics::Exchange) -> Waiting {
        self.exchange = Some(exchange);
        self
    }

    fn count(&mut self, outcome: Outcome) {
        if let Some(e) = self.exchange.take() {
            e.finish(outcome);
        }
    }

    /// End `end` with the wait.
    pub(super) fn ending(mut self, end: Option<EndOnDrop>) -> Waiting {
        self._end = end;
        self
    }

    /// The request's id, as the client sent it.
    pub fn id(&self) -> &RawValue {
        &self.id
    }

    /// The next thing the upstream says about the request, within the
    /// request's time. Cancel-safe.
    pub async fn next(&mut self) -> Next {
        let next = self.receive().await;
        if self.exchange.is_none() {
            return next;
        }
        match &next {
            Next::Related(_) => {}
            Next::Response(b) => {
                let error = jsonrpc::classify_one(b).is_ok_and(|m| m.error.is_some());
                self.count(Outcome::of_answer(StatusCode::OK, error));
            }
            Next::Failed(f) => self.count(f.outcome()),
        }
        next
    }

    async fn receive(&mut self) -> Next {
        match tokio::time::timeout_at(self.deadline, self.rx.recv()).await {
            Ok(Some(Delivery::Related(b))) => Next::Related(b),
            Ok(Some(Delivery::Final(b))) => {
                let b = match &self.resumed_as {
                    Some(id) => reid(b, id),
                    None => b,
                };
                Next::Response(Finisher::apply(self.finisher.as_ref(), b))
            }
            Ok(Some(Delivery::Failed(f))) => Next::Failed(f),
            Ok(None) => Next::Failed(Failure::Ended {
                upstream: self.session.upstream().to_owned(),
                what: "ended the session".into(),
            }),
            Err(_) => {
                if let Some(g) = self.guard.take() {
                    g.timed_out(self.secs);
                }
                Next::Failed(Failure::timeout(self.session.upstream(), self.secs))
            }
        }
    }

    /// The response, the related messages passed over.
    pub async fn response(mut self) -> Result<Bytes, Failure> {
        loop {
            match self.next().await {
                Next::Related(_) => continue,
                Next::Response(b) => return Ok(b),
                Next::Failed(f) => return Err(f),
            }
        }
    }
}

/// `response` under the request id `id`.
fn reid(response: Bytes, id: &RawValue) -> Bytes {
    let spliced = jsonrpc::classify_one(&response)
        .ok()
        .and_then(|m| jsonrpc::splice(&response, m.id?, id.get()));
    spliced.map_or(response, Bytes::from)
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
/// `watch`), a comment when idle, until they end, the client goes or the
/// gateway shuts down.
pub(crate) fn event_stream<S>(
    gw: &crate::gateway::Gateway,
    mut watch: Option<super::stream::Watch>,
    mut messages: S,
) -> Response<Body>
where
    S: futures_util::Stream<Item = Bytes> + Send + Unpin + 'static,
{
    let (tx, out) = mpsc::channel::<Bytes>(16);
    let stop = gw.shutdown.clone();
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
