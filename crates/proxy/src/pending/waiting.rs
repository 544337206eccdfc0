//! A request sent upstream through a message session, waiting for what the
//! upstream says about it ([`Waiting`]), and what a session answers a
//! request with ([`Reply`]). A leaf of the relay: it knows what finishes the
//! answer, not the exchange it came from, so a request set aside for its
//! client's input (`relay::rounds`) can be held by the gateway's table.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::finish::Finisher;
use mcp_ui_model::outcome::{Failure, Outcome};
use mcp_ui_upstream::upstream::messages::{Delivery, MessageSession, PendingGuard};
use mcp_ui_wire::jsonrpc;

/// A request sent upstream, waiting for what the upstream says about it:
/// the typed reply a mount's session gives, rendered as HTTP by
/// [`super::deliver::respond`] for the mount's own clients, read message by message by an
/// app endpoint.
pub struct Waiting {
    pub(crate) session: Arc<MessageSession>,
    rx: mpsc::Receiver<Delivery>,
    guard: Option<PendingGuard>,
    pub(crate) id: Box<RawValue>,
    pub(crate) finisher: Option<Finisher>,
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
    /// Waiting `secs` at most (`limits.request_timeout_secs`).
    pub(crate) fn new(
        secs: u64,
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
            deadline: Instant::now() + Duration::from_secs(secs),
            secs,
            _end: None,
            exchange: None,
            resumed_as: None,
        }
    }

    /// A request of the 2026-07-28 revision the gateway stands in for.
    pub(crate) fn bridged(&self) -> Option<&mcp_ui_rewrite::bridge::Answering> {
        self.finisher
            .as_ref()
            .and_then(|f| f.revision.as_ref())
            .filter(|a| a.bridged)
    }

    /// Go on waiting for the client's request `id` (a round's retry), with
    /// a new deadline.
    pub(crate) fn resume(&mut self, id: &RawValue, timeout: Duration) {
        self.id = id.to_owned();
        self.resumed_as = Some(id.to_owned());
        self.deadline = Instant::now() + timeout;
    }

    /// The request is set aside for its client's input (`true`: a
    /// 2026-07-28 round), or taken up again.
    pub(crate) fn park(&self, parked: bool) {
        if let Some(g) = &self.guard {
            g.park(parked);
        }
    }

    /// Count `exchange` when the wait is over.
    pub(crate) fn counted(mut self, exchange: crate::metrics::Exchange) -> Waiting {
        self.exchange = Some(exchange);
        self
    }

    fn count(&mut self, outcome: Outcome) {
        if let Some(e) = self.exchange.take() {
            e.finish(outcome);
        }
    }

    /// End `end` with the wait.
    pub(crate) fn ending(mut self, end: Option<EndOnDrop>) -> Waiting {
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
