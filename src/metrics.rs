//! Operational metrics: counters and histograms kept in fixed tables of
//! atomics, built once per gateway, and their Prometheus text exposition
//! (format 0.0.4), written by hand.
//!
//! The hot path is a table lookup by (mount index, method index) and a few
//! relaxed atomic adds: no lock, no allocation for the counting itself. A
//! POST's exchange is counted when its response body ends (so an SSE answer
//! is timed to its final event), or when it is dropped unfinished
//! (`cancelled`): its body is wrapped once (one allocation), and the outcome
//! is read from the answer's envelope only, for answers up to 64 KiB (about
//! 1 µs for a 200-byte answer). GET and DELETE are counted when their
//! response head is ready.

use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;

use crate::jsonrpc::{self, code};
use crate::reply::{Body, BoxError};

/// The JSON-RPC methods counted under their own name; anything else counts
/// as `other`. `GET` and `DELETE` are the bodyless HTTP exchanges, `batch` a
/// JSON-RPC array, `response` a client's answer to a server request.
pub const METHODS: &[&str] = &[
    "other",
    "GET",
    "DELETE",
    "batch",
    "response",
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
];

/// An index into [`METHODS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodId(u8);

impl MethodId {
    pub const OTHER: MethodId = MethodId(0);
    pub const GET: MethodId = MethodId(1);
    pub const DELETE: MethodId = MethodId(2);
    pub const BATCH: MethodId = MethodId(3);
    pub const RESPONSE: MethodId = MethodId(4);

    /// The id of a JSON-RPC method name (`other` when not a known one).
    pub fn of(method: &str) -> MethodId {
        METHODS
            .iter()
            .skip(5)
            .position(|m| *m == method)
            .map_or(MethodId::OTHER, |i| MethodId(i as u8 + 5))
    }

    /// The id for a classified POST body.
    pub fn of_body(body: &jsonrpc::Body<'_>) -> MethodId {
        match body {
            jsonrpc::Body::Batch(_) => MethodId::BATCH,
            jsonrpc::Body::Single(m) => match m.method.as_deref() {
                Some(method) => MethodId::of(method),
                None => MethodId::RESPONSE,
            },
        }
    }

    pub fn name(self) -> &'static str {
        METHODS[self.0 as usize]
    }
}

/// How an exchange ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Outcome {
    Ok = 0,
    JsonRpcError,
    Http4xx,
    Http5xx,
    UpstreamError,
    Timeout,
    Cancelled,
}

pub const OUTCOMES: [&str; 7] = [
    "ok",
    "jsonrpc_error",
    "http_4xx",
    "http_5xx",
    "upstream_error",
    "timeout",
    "cancelled",
];

/// Upper bounds of the latency buckets, in seconds (`+Inf` follows).
pub const BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// One latency histogram: per-bucket (not cumulative) counts, the last one
/// for `+Inf`, and the sum in nanoseconds. `_count` is rendered as the sum of
/// the buckets, so it always agrees with the `+Inf` bucket.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Histogram {
    fn observe(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// Lowest and highest HTTP status counted by code.
const STATUS_MIN: u16 = 100;
const STATUS_MAX: u16 = 599;

/// The gateway's counters; one per gateway, shared by every connection.
pub struct Metrics {
    mounts: Vec<String>,
    /// `[mount][method][outcome]`.
    requests: Box<[AtomicU64]>,
    /// `[mount][method]`.
    durations: Box<[Histogram]>,
    /// By status code, `STATUS_MIN..=STATUS_MAX`; others count as 0 ("other").
    http_status: Box<[AtomicU64]>,
    http_other: AtomicU64,
}

impl Metrics {
    /// Tables for the mounts, in mount order.
    pub fn new(mounts: impl IntoIterator<Item = String>) -> Self {
        let mounts: Vec<String> = mounts.into_iter().collect();
        let pairs = mounts.len() * METHODS.len();
        Metrics {
            requests: (0..pairs * OUTCOMES.len())
                .map(|_| AtomicU64::new(0))
                .collect(),
            durations: (0..pairs).map(|_| Histogram::default()).collect(),
            http_status: (STATUS_MIN..=STATUS_MAX)
                .map(|_| AtomicU64::new(0))
                .collect(),
            http_other: AtomicU64::new(0),
            mounts,
        }
    }

    /// Count one exchange of `mount` that ended with `outcome` after `elapsed`.
    pub fn record(&self, mount: usize, method: MethodId, outcome: Outcome, elapsed: Duration) {
        let pair = mount * METHODS.len() + method.0 as usize;
        if let Some(c) = self.requests.get(pair * OUTCOMES.len() + outcome as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(h) = self.durations.get(pair) {
            h.observe(elapsed);
        }
    }

    /// Count one HTTP response by status.
    pub fn record_status(&self, status: StatusCode) {
        let s = status.as_u16();
        match self.http_status.get(s.wrapping_sub(STATUS_MIN) as usize) {
            Some(c) if s >= STATUS_MIN => c.fetch_add(1, Ordering::Relaxed),
            _ => self.http_other.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// The number of exchanges counted for `mount`/`method`/`outcome`.
    pub fn requests(&self, mount: usize, method: MethodId, outcome: Outcome) -> u64 {
        let pair = mount * METHODS.len() + method.0 as usize;
        self.requests
            .get(pair * OUTCOMES.len() + outcome as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Start timing an exchange; it counts as `cancelled` unless finished.
    pub fn exchange(self: &Arc<Self>, mount: usize, method: MethodId) -> Exchange {
        Exchange {
            metrics: self.clone(),
            mount,
            method,
            started: Instant::now(),
            done: false,
        }
    }

    /// The Prometheus text exposition (format 0.0.4) of everything counted,
    /// with what the gateway knows at the time of the scrape.
    pub fn render(&self, snapshot: &Snapshot) -> String {
        let mut out = String::with_capacity(4096);
        family(
            &mut out,
            "mcp_gateway_build_info",
            "gauge",
            "The gateway's version; always 1.",
        );
        let _ = writeln!(
            out,
            "mcp_gateway_build_info{{version=\"{}\"}} 1",
            escape(env!("CARGO_PKG_VERSION"))
        );

        family(
            &mut out,
            "mcp_gateway_requests_total",
            "counter",
            "MCP exchanges by upstream, JSON-RPC method (GET and DELETE for the bodyless ones) and outcome.",
        );
        for (m, name) in self.mounts.iter().enumerate() {
            let name = escape(name);
            for (k, method) in METHODS.iter().enumerate() {
                for (o, outcome) in OUTCOMES.iter().enumerate() {
                    let i = (m * METHODS.len() + k) * OUTCOMES.len() + o;
                    let n = self.requests[i].load(Ordering::Relaxed);
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "mcp_gateway_requests_total{{upstream=\"{name}\",method=\"{}\",outcome=\"{outcome}\"}} {n}",
                            escape(method)
                        );
                    }
                }
            }
        }

        family(
            &mut out,
            "mcp_gateway_request_duration_seconds",
            "histogram",
            "Time from a request's arrival to the end of its response (a POST's SSE answer to its last event; GET and DELETE to the response head).",
        );
        for (m, name) in self.mounts.iter().enumerate() {
            let name = escape(name);
            for (k, method) in METHODS.iter().enumerate() {
                let h = &self.durations[m * METHODS.len() + k];
                let counts: Vec<u64> = h
                    .buckets
                    .iter()
                    .map(|b| b.load(Ordering::Relaxed))
                    .collect();
                let total: u64 = counts.iter().sum();
                if total == 0 {
                    continue;
                }
                let labels = format!("upstream=\"{name}\",method=\"{}\"", escape(method));
                let mut cumulative = 0;
                for (i, c) in counts.iter().enumerate() {
                    cumulative += c;
                    let le = BUCKETS.get(i).map_or("+Inf".to_owned(), |b| b.to_string());
                    let _ = writeln!(
                        out,
                        "mcp_gateway_request_duration_seconds_bucket{{{labels},le=\"{le}\"}} {cumulative}"
                    );
                }
                let sum = h.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
                let _ = writeln!(
                    out,
                    "mcp_gateway_request_duration_seconds_sum{{{labels}}} {sum}"
                );
                let _ = writeln!(
                    out,
                    "mcp_gateway_request_duration_seconds_count{{{labels}}} {total}"
                );
            }
        }

        family(
            &mut out,
            "mcp_gateway_http_requests_total",
            "counter",
            "HTTP responses by status code (every path; 0 for codes outside 100-599).",
        );
        for (i, c) in self.http_status.iter().enumerate() {
            let n = c.load(Ordering::Relaxed);
            if n > 0 {
                let status = STATUS_MIN as usize + i;
                let _ = writeln!(
                    out,
                    "mcp_gateway_http_requests_total{{status=\"{status}\"}} {n}"
                );
            }
        }
        let other = self.http_other.load(Ordering::Relaxed);
        if other > 0 {
            let _ = writeln!(
                out,
                "mcp_gateway_http_requests_total{{status=\"0\"}} {other}"
            );
        }

        family(
            &mut out,
            "mcp_gateway_sessions_open",
            "gauge",
            "Sessions this process holds open with an upstream (stdio and legacy SSE, the shared sessionless one included); streamable HTTP sessions live in their sealed ids and are not counted.",
        );
        for (m, name) in self.mounts.iter().enumerate() {
            let n = snapshot.sessions_open.get(m).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "mcp_gateway_sessions_open{{upstream=\"{}\"}} {n}",
                escape(name)
            );
        }

        family(
            &mut out,
            "mcp_gateway_stdio_children",
            "gauge",
            "Stdio upstream processes the gateway's sessions started and not yet reaped.",
        );
        let _ = writeln!(
            out,
            "mcp_gateway_stdio_children {}",
            snapshot.stdio_children
        );

        family(
            &mut out,
            "mcp_gateway_overlay_reloads_total",
            "counter",
            "Overlay reloads by result: ok (applied, or nothing to apply) or error (the last good overlays stayed).",
        );
        let _ = writeln!(
            out,
            "mcp_gateway_overlay_reloads_total{{result=\"ok\"}} {}",
            snapshot.reloads_ok
        );
        let _ = writeln!(
            out,
            "mcp_gateway_overlay_reloads_total{{result=\"error\"}} {}",
            snapshot.reloads_failed
        );

        family(
            &mut out,
            "mcp_gateway_upstream_up",
            "gauge",
            "Whether the upstream answered the last readiness probe (1) or not (0); absent before the first /readyz.",
        );
        for (m, name) in self.mounts.iter().enumerate() {
            if let Some(Some(up)) = snapshot.upstream_up.get(m) {
                let _ = writeln!(
                    out,
                    "mcp_gateway_upstream_up{{upstream=\"{}\"}} {}",
                    escape(name),
                    u8::from(*up)
                );
            }
        }
        out
    }
}

/// What the gateway knows at scrape time, apart from the counters.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    /// Open sessions by mount index.
    pub sessions_open: Vec<usize>,
    /// Stdio children running.
    pub stdio_children: usize,
    pub reloads_ok: u64,
    pub reloads_failed: u64,
    /// The last readiness result by mount index, if any.
    pub upstream_up: Vec<Option<bool>>,
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value: backslash, double quote and newline escaped.
pub fn escape(value: &str) -> String {
    let mut s = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// A HELP text: backslash and newline escaped.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The media type of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The `/metrics` response.
pub fn response(body: String) -> Response<Body> {
    let mut r = Response::new(crate::reply::full(body));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}

// === one exchange ===

/// An exchange being timed. Dropped unfinished, it counts as `cancelled`
/// (the client went away before the response head).
pub struct Exchange {
    metrics: Arc<Metrics>,
    mount: usize,
    method: MethodId,
    started: Instant,
    done: bool,
}

impl Exchange {
    pub fn set_method(&mut self, method: MethodId) {
        self.method = method;
    }

    /// Count the exchange now, from the response head alone (GET, DELETE).
    pub fn finish_head(mut self, resp: &Response<Body>) {
        self.done = true;
        let outcome = match resp.status().as_u16() {
            400..=499 => Outcome::Http4xx,
            500..=599 => Outcome::Http5xx,
            _ => Outcome::Ok,
        };
        self.metrics
            .record(self.mount, self.method, outcome, self.started.elapsed());
    }

    /// Count the exchange when the response body ends: its outcome is read
    /// from the status and, for a JSON or SSE answer, from the JSON-RPC
    /// response it carries (the whole JSON body, or the last SSE event).
    pub fn finish_body(self, resp: Response<Body>) -> Response<Body> {
        let kind = body_kind(&resp);
        let status = resp.status();
        resp.map(|inner| {
            Observed {
                inner,
                exchange: Some(self),
                status,
                kind,
                last: None,
                more: None,
            }
            .boxed_unsync()
        })
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
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
        let outcome = if errored {
            Outcome::UpstreamError
        } else {
            let kept = self.more.as_deref().or(self.last.as_deref());
            let answer = kept
                .filter(|b| b.len() <= INSPECT_LIMIT)
                .and_then(|b| match self.kind {
                    BodyKind::Json => answer_outcome(b),
                    BodyKind::EventStream => last_event_outcome(b),
                    BodyKind::Other => None,
                });
            status_outcome(self.status, answer)
        };
        exchange.metrics.record(
            exchange.mount,
            exchange.method,
            outcome,
            exchange.started.elapsed(),
        );
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

/// The outcome a JSON-RPC answer says, `None` when it is not one error.
fn answer_outcome(bytes: &[u8]) -> Option<Outcome> {
    // Most answers are results: no parse for those.
    static ERROR: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"error\""));
    ERROR.find(bytes)?;
    let m = jsonrpc::classify_one(bytes).ok()?;
    let error = m.error?;
    #[derive(serde::Deserialize)]
    struct Error<'a> {
        code: i64,
        #[serde(borrow, default)]
        message: std::borrow::Cow<'a, str>,
    }
    let Ok(e) = serde_json::from_str::<Error<'_>>(error.get()) else {
        return Some(Outcome::JsonRpcError);
    };
    Some(gateway_error_outcome(e.code, &e.message))
}

/// The gateway's own errors about an upstream name it first; anything else
/// is the upstream's (or the client's) JSON-RPC error.
fn gateway_error_outcome(code: i64, message: &str) -> Outcome {
    match code {
        code::UPSTREAM_ERROR if message.starts_with("upstream '") => {
            // "did not answer within N s", "no answer within N s"
            if message.contains(" answer within ") {
                Outcome::Timeout
            } else {
                Outcome::UpstreamError
            }
        }
        code::REQUEST_CANCELLED => Outcome::Cancelled,
        _ => Outcome::JsonRpcError,
    }
}

/// The outcome of the last event of an SSE answer (the response ends it).
fn last_event_outcome(chunk: &[u8]) -> Option<Outcome> {
    let mut parser = crate::sse::Parser::new(chunk.len() + 2);
    parser.push(chunk);
    let mut last = None;
    while let Ok(Some(event)) = parser.next_event() {
        if event.has_data {
            last = Some(event);
        }
    }
    let last = last.or_else(|| parser.finish().filter(|e| e.has_data))?;
    answer_outcome(last.data.as_bytes())
}

fn status_outcome(status: StatusCode, answer: Option<Outcome>) -> Outcome {
    match status.as_u16() {
        400..=499 => Outcome::Http4xx,
        500..=599 => match answer {
            Some(o @ (Outcome::UpstreamError | Outcome::Timeout)) => o,
            _ => Outcome::Http5xx,
        },
        _ => answer.unwrap_or(Outcome::Ok),
    }
}

// === request ids ===

/// Longest `X-Request-Id` taken from a client.
pub const MAX_REQUEST_ID: usize = 128;

/// The client's request id when it is a sane token (1 to 128 visible ASCII
/// characters), else a new one.
pub fn request_id(given: Option<&HeaderValue>) -> HeaderValue {
    if let Some(v) = given {
        let b = v.as_bytes();
        if !b.is_empty() && b.len() <= MAX_REQUEST_ID && b.iter().all(|c| c.is_ascii_graphic()) {
            return v.clone();
        }
    }
    new_request_id()
}

/// 16 hex digits: a process-wide counter from a random start, mixed
/// (a bijection, so ids never repeat within 2^64 requests).
pub fn new_request_id() -> HeaderValue {
    use std::sync::OnceLock;
    static BASE: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(rand::random::<u64>);
    let n = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(base);
    let mut hex = [0u8; 16];
    let v = splitmix64(n);
    for (i, d) in hex.iter_mut().enumerate() {
        *d = b"0123456789abcdef"[(v >> (60 - 4 * i)) as usize & 0xf];
    }
    HeaderValue::from_bytes(&hex).expect("hex is a valid header value")
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_ids_round_trip() {
        for (i, m) in METHODS.iter().enumerate().skip(5) {
            assert_eq!(MethodId::of(m), MethodId(i as u8));
            assert_eq!(MethodId::of(m).name(), *m);
        }
        assert_eq!(MethodId::of("vendor/thing"), MethodId::OTHER);
        assert_eq!(MethodId::of("GET"), MethodId::OTHER);
    }

    #[test]
    fn outcomes_of_answers() {
        assert_eq!(
            answer_outcome(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            None
        );
        assert_eq!(
            answer_outcome(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}"#),
            Some(Outcome::JsonRpcError)
        );
        let timeout = jsonrpc::error_response(
            None,
            code::UPSTREAM_ERROR,
            "upstream 'a' did not answer within 3 s",
        );
        assert_eq!(answer_outcome(&timeout), Some(Outcome::Timeout));
        let stream_timeout = jsonrpc::error_response(
            None,
            code::UPSTREAM_ERROR,
            "upstream 'a' stream failed: no answer within 3 s (limits.request_timeout_secs)",
        );
        assert_eq!(answer_outcome(&stream_timeout), Some(Outcome::Timeout));
        let down = jsonrpc::error_response(
            None,
            code::UPSTREAM_ERROR,
            "upstream 'a' is unreachable: refused",
        );
        assert_eq!(answer_outcome(&down), Some(Outcome::UpstreamError));
        let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":1,\"message\":\"no\"}}\n\n";
        assert_eq!(last_event_outcome(sse), Some(Outcome::JsonRpcError));
        assert_eq!(
            status_outcome(StatusCode::BAD_GATEWAY, Some(Outcome::UpstreamError)),
            Outcome::UpstreamError
        );
        assert_eq!(
            status_outcome(StatusCode::NOT_FOUND, Some(Outcome::JsonRpcError)),
            Outcome::Http4xx
        );
    }

    #[test]
    fn split_answers_are_gathered() {
        let m = Arc::new(Metrics::new(["u".to_owned()]));
        let mut body = Observed {
            inner: crate::reply::empty(),
            exchange: Some(m.exchange(0, MethodId::of("tools/call"))),
            status: StatusCode::OK,
            kind: BodyKind::EventStream,
            last: None,
            more: None,
        };
        for chunk in [
            &b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"[..],
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,",
            b"\"error\":{\"code\":1,\"message\":\"no\"}}\n\n",
        ] {
            body.keep(&Bytes::copy_from_slice(chunk));
        }
        body.end(false);
        let call = MethodId::of("tools/call");
        assert_eq!(m.requests(0, call, Outcome::JsonRpcError), 1);

        let mut json = Observed {
            inner: crate::reply::empty(),
            exchange: Some(m.exchange(0, call)),
            status: StatusCode::OK,
            kind: BodyKind::Json,
            last: None,
            more: None,
        };
        json.keep(&Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"err"));
        json.keep(&Bytes::from_static(
            b"or\":{\"code\":-32000,\"message\":\"upstream 'u' did not answer within 1 s\"}}",
        ));
        drop(json);
        assert_eq!(m.requests(0, call, Outcome::Timeout), 1);
    }

    #[test]
    fn request_ids() {
        let given = HeaderValue::from_static("abc-123");
        assert_eq!(request_id(Some(&given)), given);
        let spaced = HeaderValue::from_static("a b");
        assert_ne!(request_id(Some(&spaced)), spaced);
        let long = HeaderValue::from_str(&"x".repeat(129)).unwrap();
        assert_eq!(request_id(Some(&long)).len(), 16);
        let (a, b) = (new_request_id(), new_request_id());
        assert_ne!(a, b);
        assert!(a.as_bytes().iter().all(u8::is_ascii_hexdigit));
    }

    #[test]
    fn exposition_counts_and_escapes() {
        let m = Arc::new(Metrics::new(["a\"b".to_owned()]));
        m.record(
            0,
            MethodId::of("tools/call"),
            Outcome::Ok,
            Duration::from_millis(3),
        );
        m.record(
            0,
            MethodId::of("tools/call"),
            Outcome::JsonRpcError,
            Duration::from_secs(40),
        );
        m.record_status(StatusCode::OK);
        let text = m.render(&Snapshot::default());
        assert!(text.contains(
            "mcp_gateway_requests_total{upstream=\"a\\\"b\",method=\"tools/call\",outcome=\"ok\"} 1"
        ));
        assert!(text.contains("le=\"0.005\"} 1\n"));
        assert!(text.contains("le=\"30\"} 1\n"));
        assert!(text.contains("le=\"+Inf\"} 2\n"));
        assert!(text.contains("mcp_gateway_request_duration_seconds_count{upstream=\"a\\\"b\",method=\"tools/call\"} 2\n"));
        assert!(text.contains("mcp_gateway_http_requests_total{status=\"200\"} 1\n"));
    }

    #[test]
    fn dropped_exchange_counts_as_cancelled() {
        let m = Arc::new(Metrics::new(["u".to_owned()]));
        drop(m.exchange(0, MethodId::GET));
        assert_eq!(m.requests(0, MethodId::GET, Outcome::Cancelled), 1);
    }
}
