//! One exchange being timed, and counted once: when its response head is
//! ready (GET, DELETE), when its response body ends (a POST: an SSE answer is
//! timed to its final event), or as `cancelled` when dropped unfinished. A
//! POST's body is wrapped once (one allocation); its outcome is what the
//! gateway said when it answered itself, else the status and the answer's
//! envelope, read for answers up to 64 KiB (about 1 µs for 200 bytes).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::header;
use http::{Response, StatusCode};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;

use super::method::MethodId;
use super::table::Metrics;
use mcp_ui_model::outcome::{Outcome, OutcomeSlot};
use mcp_ui_model::reply::{Body, BoxError};
use mcp_ui_upstream::telemetry::Span;
use mcp_ui_upstream::telemetry::request_spans::end_server;
use mcp_ui_wire::jsonrpc;

impl Metrics {
    /// Start timing an exchange; it counts as `cancelled` unless finished.
    pub fn exchange(self: &Arc<Self>, mount: usize, method: MethodId) -> Exchange {
        Exchange {
            metrics: self.clone(),
            mount,
            method,
            started: Instant::now(),
            done: false,
            span: None,
            batch: Vec::new(),
        }
    }
}

/// An exchange being timed. Dropped unfinished, it counts as `cancelled`
/// (the client went away before the response head).
pub struct Exchange {
    metrics: Arc<Metrics>,
    mount: usize,
    method: MethodId,
    started: Instant,
    done: bool,
    /// The request's server span, when traced: ended with the exchange.
    span: Option<Span>,
    /// The server spans of a batch's requests, when traced: ended with it.
    batch: Vec<Span>,
}

impl Exchange {
    pub(crate) fn set_method(&mut self, method: MethodId) {
        self.method = method;
    }

    /// The server span to end when the exchange is counted.
    pub(crate) fn set_span(&mut self, span: Option<Span>) {
        self.span = span;
    }

    /// The server spans of a batch's requests, ended with the exchange
    /// (with its outcome: the answers of a batch are not told apart).
    pub(crate) fn set_batch_spans(&mut self, spans: Vec<Span>) {
        self.batch = spans;
    }

    /// Count the exchange now, as ended with `outcome` (an exchange with
    /// no HTTP response of its own: an app endpoint's with a member).
    pub fn finish(mut self, outcome: Outcome) {
        self.done = true;
        self.metrics
            .record(self.mount, self.method, outcome, self.started.elapsed());
    }

    /// Count the exchange now, from the response head alone (GET, DELETE).
    pub(crate) fn finish_head(mut self, resp: &Response<Body>) {
        self.done = true;
        let outcome = resp
            .extensions()
            .get::<Outcome>()
            .copied()
            .unwrap_or_else(|| Outcome::of_answer(resp.status(), false));
        self.metrics
            .record(self.mount, self.method, outcome, self.started.elapsed());
    }

    /// Count the exchange when the response body ends. A failure the
    /// gateway answered says its outcome (the response's [`Outcome`], or the
    /// [`OutcomeSlot`] of an SSE answer whose end it wrote); otherwise the
    /// outcome is the status and whether the JSON-RPC response carried (the
    /// whole JSON body, or the last SSE event) is an error.
    pub(crate) fn finish_body(self, resp: Response<Body>) -> Response<Body> {
        let kind = body_kind(&resp);
        let status = resp.status();
        let said = resp.extensions().get::<Outcome>().copied();
        let slot = resp.extensions().get::<OutcomeSlot>().cloned();
        resp.map(|inner| {
            Observed {
                inner,
                exchange: Some(self),
                status,
                kind,
                said,
                slot,
                last: None,
                more: None,
            }
            .boxed_unsync()
        })
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if let Some(span) = self.span.take() {
            end_server(span, Outcome::Cancelled, None);
        }
        for span in self.batch.drain(..) {
            end_server(span, Outcome::Cancelled, None);
        }
        if !self.done {
            self.done = true;
            self.metrics.record(
                self.mount,
                self.method,
                Outcome::Cancelled,
                self.started.elapsed(),
            );
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Json,
    EventStream,
    Other,
}

fn body_kind(resp: &Response<Body>) -> BodyKind {
    let ct = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim_start();
    if ct.starts_with("application/json") {
        BodyKind::Json
    } else if ct.starts_with("text/event-stream") {
        BodyKind::EventStream
    } else {
        BodyKind::Other
    }
}

/// Most bytes of an answer kept to read its outcome: a JSON body whole, or
/// an SSE answer's last event. JSON-RPC errors are small; a longer answer is
/// counted by its status alone.
const INSPECT_LIMIT: usize = 64 * 1024;

/// A response body that counts its exchange when it ends or is dropped.
struct Observed {
    inner: Body,
    exchange: Option<Exchange>,
    status: StatusCode,
    kind: BodyKind,
    /// The outcome of a failure the gateway answered.
    said: Option<Outcome>,
    /// Where the writer of an SSE answer records an end it wrote itself.
    slot: Option<OutcomeSlot>,
    /// The last data frame (shared, not copied)...
    last: Option<Bytes>,
    /// ...or, when the answer (JSON) or its last event (SSE) spans several
    /// frames, those frames gathered, up to [`INSPECT_LIMIT`].
    more: Option<BytesMut>,
}

/// Whether an SSE chunk ends at an event boundary (a blank line).
fn ends_event(b: &[u8]) -> bool {
    b.ends_with(b"\n\n") || b.ends_with(b"\r\n\r\n") || b.ends_with(b"\r\r")
}

impl Observed {
    fn keep(&mut self, data: &Bytes) {
        let continues = match self.kind {
            BodyKind::Json => self.last.is_some() || self.more.is_some(),
            BodyKind::EventStream => match (&self.more, &self.last) {
                (Some(buf), _) => !ends_event(buf),
                (None, Some(prev)) => !ends_event(prev),
                (None, None) => false,
            },
            BodyKind::Other => return,
        };
        if !continues {
            self.more = None;
            self.last = Some(data.clone());
            return;
        }
        let kept = match (&self.more, &self.last) {
            (Some(buf), _) => buf.len(),
            (None, prev) => prev.as_ref().map_or(0, Bytes::len),
        };
        if kept + data.len() > INSPECT_LIMIT {
            self.more = None;
            self.last = None;
            if self.kind == BodyKind::Json {
                // Too long to be an error: counted by its status.
                self.kind = BodyKind::Other;
            } else {
                // Resynchronise at the next event boundary.
                self.last = Some(data.clone());
            }
            return;
        }
        let mut buf = match (self.more.take(), self.last.take()) {
            (Some(buf), _) => buf,
            (None, prev) => BytesMut::from(prev.as_deref().unwrap_or_default()),
        };
        buf.extend_from_slice(data);
        self.more = Some(buf);
    }

    fn end(&mut self, errored: bool) {
        let Some(mut exchange) = self.exchange.take() else {
            return;
        };
        exchange.done = true;
        let written = self
            .said
            .or_else(|| self.slot.as_ref().and_then(OutcomeSlot::get));
        let outcome = match (written, errored) {
            (Some(outcome), _) => outcome,
            (None, true) => Outcome::UpstreamError,
            (None, false) => {
                let kept = self.more.as_deref().or(self.last.as_deref());
                let error =
                    kept.filter(|b| b.len() <= INSPECT_LIMIT)
                        .is_some_and(|b| match self.kind {
                            BodyKind::Json => is_error(b),
                            BodyKind::EventStream => last_event_is_error(b),
                            BodyKind::Other => false,
                        });
                Outcome::of_answer(self.status, error)
            }
        };
        exchange.metrics.record(
            exchange.mount,
            exchange.method,
            outcome,
            exchange.started.elapsed(),
        );
        if let Some(span) = exchange.span.take() {
            let answer = (self.kind == BodyKind::Json)
                .then(|| self.more.as_deref().or(self.last.as_deref()))
                .flatten();
            end_server(span, outcome, answer);
        }
        for span in exchange.batch.drain(..) {
            end_server(span, outcome, None);
        }
    }
}

impl HttpBody for Observed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.keep(data);
                }
            }
            Poll::Ready(Some(Err(_))) => this.end(true),
            Poll::Ready(None) => this.end(false),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        // A body hyper never polled to the end: ended when it says so
        // (hyper may stop polling a body that reports its end), else the
        // client went away.
        if self.exchange.is_some() {
            if self.inner.is_end_stream() {
                self.end(false);
            } else if let Some(exchange) = self.exchange.take() {
                drop(exchange); // counts as cancelled
            }
        }
    }
}

/// Whether a JSON-RPC answer is an error (its envelope only; never its text).
fn is_error(bytes: &[u8]) -> bool {
    // Most answers are results: no parse for those.
    static ERROR: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"error\""));
    ERROR.find(bytes).is_some() && jsonrpc::classify_one(bytes).is_ok_and(|m| m.error.is_some())
}

/// Whether the last event of an SSE answer (the response ends it) is an error.
fn last_event_is_error(chunk: &[u8]) -> bool {
    let mut parser = mcp_ui_wire::sse::Parser::new(chunk.len() + 2);
    parser.push(chunk);
    let mut last = None;
    while let Ok(Some(event)) = parser.next_event() {
        if event.has_data {
            last = Some(event);
        }
    }
    last.or_else(|| parser.finish().filter(|e| e.has_data))
        .is_some_and(|e| is_error(e.data.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_read_from_the_envelope() {
        assert!(!is_error(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!is_error(
            br#"{"jsonrpc":"2.0","id":1,"result":{"text":"\"error\""}}"#
        ));
        assert!(is_error(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}"#
        ));
        let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":1,\"message\":\"no\"}}\n\n";
        assert!(last_event_is_error(sse));
    }

    fn observed(m: &Arc<Metrics>, kind: BodyKind, slot: Option<OutcomeSlot>) -> Observed {
        Observed {
            inner: mcp_ui_model::reply::empty(),
            exchange: Some(m.exchange(0, MethodId::of("tools/call"))),
            status: StatusCode::OK,
            kind,
            said: None,
            slot,
            last: None,
            more: None,
        }
    }

    #[test]
    fn split_answers_are_gathered() {
        let m = Arc::new(Metrics::new(["u".to_owned()]));
        let call = MethodId::of("tools/call");
        let mut body = observed(&m, BodyKind::EventStream, None);
        for chunk in [
            &b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"[..],
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,",
            b"\"error\":{\"code\":1,\"message\":\"no\"}}\n\n",
        ] {
            body.keep(&Bytes::copy_from_slice(chunk));
        }
        body.end(false);
        assert_eq!(m.requests(0, call, Outcome::JsonRpcError), 1);

        // An upstream's error that reads like the gateway's own is still
        // the upstream's: only the gateway says when it failed.
        let mut json = observed(&m, BodyKind::Json, None);
        json.keep(&Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"err"));
        json.keep(&Bytes::from_static(
            b"or\":{\"code\":-32000,\"message\":\"upstream 'u' did not answer within 1 s\"}}",
        ));
        drop(json);
        assert_eq!(m.requests(0, call, Outcome::JsonRpcError), 2);
        assert_eq!(m.requests(0, call, Outcome::Timeout), 0);
    }

    #[test]
    fn an_end_the_gateway_wrote_counts_as_it_says() {
        let m = Arc::new(Metrics::new(["u".to_owned()]));
        let call = MethodId::of("tools/call");
        let slot = OutcomeSlot::new();
        let mut body = observed(&m, BodyKind::EventStream, Some(slot.clone()));
        body.keep(&Bytes::from_static(
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000,\"message\":\"x\"}}\n\n",
        ));
        slot.set(Outcome::Timeout);
        body.end(false);
        assert_eq!(m.requests(0, call, Outcome::Timeout), 1);
        // A stream cut by the upstream, with no end written.
        let mut cut = observed(&m, BodyKind::EventStream, Some(OutcomeSlot::new()));
        cut.end(true);
        assert_eq!(m.requests(0, call, Outcome::UpstreamError), 1);
    }

    #[test]
    fn dropped_exchange_counts_as_cancelled() {
        let m = Arc::new(Metrics::new(["u".to_owned()]));
        drop(m.exchange(0, MethodId::GET));
        assert_eq!(m.requests(0, MethodId::GET, Outcome::Cancelled), 1);
    }
}
