//! One tracing span per request, named `request`, carrying the request id:
//! every log line written while the request is handled names it.

use std::task::{Context, Poll};

use http::Request;
use tower::{Layer, Service};
use tracing::Instrument;
use tracing::instrument::Instrumented;

use super::request_id::RequestId;

/// Runs each request inside its span (inside [`super::request_id`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceLayer;

impl<S> Layer<S> for TraceLayer {
    type Service = Trace<S>;

    fn layer(&self, inner: S) -> Trace<S> {
        Trace { inner }
    }
}

#[derive(Debug, Clone)]
pub struct Trace<S> {
    inner: S,
}

impl<S, B> Service<Request<B>> for Trace<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Instrumented<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let id = req
            .extensions()
            .get::<RequestId>()
            .and_then(|id| id.0.to_str().ok())
            .unwrap_or("");
        let span = tracing::info_span!("request", request_id = %id);
        let _entered = span.enter();
        // The inner service's own work in `call` belongs to the span too.
        let future = self.inner.call(req);
        drop(_entered);
        future.instrument(span)
    }
}
