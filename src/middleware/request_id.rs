//! Request ids: the client's `X-Request-Id` kept when it is a sane token,
//! else a new one, set on every response (errors and SSE answers included);
//! and the tracing span named `request` that carries it, so every log line
//! written while the request is handled names it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use http::header::{HeaderName, HeaderValue};
use http::{Request, Response};
use tower::{Layer, Service};

use tracing::Instrument;
use tracing::instrument::Instrumented;

use super::{MapResponse, OnResponse};
use crate::reply::Body;

/// The request id header.
pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// Gives every request an id, and runs it inside its span.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestIdLayer;

impl<S> Layer<S> for RequestIdLayer {
    type Service = SetRequestId<S>;

    fn layer(&self, inner: S) -> SetRequestId<S> {
        SetRequestId { inner }
    }
}

#[derive(Debug, Clone)]
pub struct SetRequestId<S> {
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
        let span = tracing::info_span!("request", request_id = %id.to_str().unwrap_or(""));
        MapResponse::new(self.inner.call(req), Echo(id)).instrument(span)
    }
}

/// Sets the id on the response.
pub struct Echo(HeaderValue);

impl OnResponse for Echo {
    fn on_response(self, response: &mut Response<Body>) {
        response.headers_mut().insert(HEADER, self.0);
    }
}

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
}
