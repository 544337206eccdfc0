//! Request ids: the client's `X-Request-Id` kept when it is a sane token,
//! else a new one, set on every response (errors and SSE answers included);
//! and the tracing span named `request` that carries it, so every log line
//! written while the request is handled names it. [`SpanFields`] writes that
//! span's fields for the log formatter directly, once per request, instead of
//! through the formatter's generic field visitor.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use http::header::{HeaderName, HeaderValue};
use http::{Request, Response};
use tower::{Layer, Service};

use tracing::Instrument;
use tracing::instrument::Instrumented;

use super::{MapResponse, OnResponse};
use mcp_ui_model::reply::Body;

/// The request id header.
pub(crate) const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Gives every request an id, and runs it inside its span.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequestIdLayer;

impl<S> Layer<S> for RequestIdLayer {
    type Service = SetRequestId<S>;

    fn layer(&self, inner: S) -> SetRequestId<S> {
        SetRequestId { inner }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct SetRequestId<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for SetRequestId<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Future: Unpin,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Instrumented<MapResponse<S::Future, Echo>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let id = request_id(req.headers().get(HEADER));
        let span = span(&id);
        MapResponse::new(self.inner.call(req), Echo(id)).instrument(span)
    }
}

/// The name of every request's span.
pub(crate) const SPAN: &str = "request";

/// The span a request is handled in. Its field is a `&str`, which
/// [`SpanFields`] takes as it is, without formatting.
pub fn span(id: &HeaderValue) -> tracing::Span {
    tracing::info_span!(SPAN, request_id = id.to_str().unwrap_or(""))
}

/// A tracing layer, placed under the log formatter, that stores the `request`
/// span's formatted fields before the formatter would format them itself.
/// `N` is the formatter's field format (`DefaultFields` or `JsonFields`),
/// whose `FormattedFields<N>` the formatter finds already there. Only for
/// output without ANSI styles, which the formatter would add to the field name.
pub struct SpanFields<N>(PhantomData<fn(N)>);

impl<N: FieldFormat> SpanFields<N> {
    pub fn new() -> Self {
        SpanFields(PhantomData)
    }
}

impl<N: FieldFormat> Default for SpanFields<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// How a field format writes the request span's one field.
pub trait FieldFormat: 'static {
    fn request_id(value: &str) -> String;
}

/// `request_id=<id>`: what the text formatter writes for a displayed value.
impl FieldFormat for tracing_subscriber::fmt::format::DefaultFields {
    fn request_id(value: &str) -> String {
        let mut s = String::with_capacity(value.len() + 11);
        s.push_str("request_id=");
        s.push_str(value);
        s
    }
}

/// `{"request_id":"<id>"}`, the id escaped as a JSON string.
impl FieldFormat for tracing_subscriber::fmt::format::JsonFields {
    fn request_id(value: &str) -> String {
        format!("{{\"request_id\":{}}}", serde_json::Value::from(value))
    }
}

impl<S, N> tracing_subscriber::Layer<S> for SpanFields<N>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: FieldFormat,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let meta = attrs.metadata();
        if meta.name() != SPAN || meta.target() != module_path!() {
            return;
        }
        let mut fields = Fields::<N>(None, PhantomData);
        attrs.record(&mut fields);
        if let (Some(fields), Some(span)) = (fields.0, ctx.span(id)) {
            span.extensions_mut()
                .insert(tracing_subscriber::fmt::FormattedFields::<N>::new(fields));
        }
    }
}

/// The span's fields as `N` writes them, from the `request_id` string.
struct Fields<N>(Option<String>, PhantomData<fn(N)>);

impl<N: FieldFormat> tracing::field::Visit for Fields<N> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "request_id" {
            self.0 = Some(N::request_id(value));
        }
    }

    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

/// Sets the id on the response.
pub struct Echo(HeaderValue);

impl OnResponse for Echo {
    fn on_response(self, response: &mut Response<Body>) {
        response.headers_mut().insert(HEADER, self.0);
    }
}

/// Longest `X-Request-Id` taken from a client.
pub(crate) const MAX_REQUEST_ID: usize = 128;

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
pub(crate) fn new_request_id() -> HeaderValue {
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

    /// A log line's bytes, written by the formatter on `S`.
    fn logged<S>(subscriber: S, span: impl Fn() -> tracing::Span) -> String
    where
        S: tracing::Subscriber + Send + Sync + 'static,
    {
        tracing::subscriber::with_default(subscriber, || {
            let _in = span().entered();
            tracing::warn!(upstream = "a", "upstream request failed");
        });
        let out = LINES.with(|l| std::mem::take(&mut *l.borrow_mut()));
        String::from_utf8(out).unwrap()
    }

    thread_local! {
        static LINES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    struct Lines;

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            LINES.with(|l| l.borrow_mut().extend_from_slice(buf));
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    type Writer = fn() -> Lines;

    fn lines<S>() -> tracing_subscriber::fmt::Layer<
        S,
        tracing_subscriber::fmt::format::DefaultFields,
        tracing_subscriber::fmt::format::Format<tracing_subscriber::fmt::format::Full, ()>,
        Writer,
    > {
        tracing_subscriber::fmt::layer()
            .without_time()
            .with_ansi(false)
            .with_writer((|| Lines) as Writer)
    }

    #[test]
    fn span_fields_are_what_the_formatter_would_write() {
        use tracing_subscriber::layer::SubscriberExt;
        // The formatter alone, given the id as a displayed value (as before
        // `SpanFields`), against the request's own span under `SpanFields`.
        for id in ["log-text-7", "a\"b\\c{}=", "0123456789abcdef"] {
            let value = HeaderValue::from_str(id).unwrap();
            let display = || tracing::info_span!("request", request_id = %id);
            let ours = || span(&value);

            let alone = logged(tracing_subscriber::registry().with(lines()), display);
            let text = logged(
                tracing_subscriber::registry()
                    .with(SpanFields::<tracing_subscriber::fmt::format::DefaultFields>::new())
                    .with(lines()),
                ours,
            );
            assert!(
                text.contains(&format!("request{{request_id={id}}}")),
                "{text}"
            );
            assert_eq!(text, alone);

            let alone = logged(tracing_subscriber::registry().with(lines().json()), display);
            let json = logged(
                tracing_subscriber::registry()
                    .with(SpanFields::<tracing_subscriber::fmt::format::JsonFields>::new())
                    .with(lines().json()),
                ours,
            );
            let line: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
            assert_eq!(line["span"]["request_id"], id, "{json}");
            assert_eq!(json, alone);
        }
    }
}
