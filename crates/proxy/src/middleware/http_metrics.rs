//! Counts every HTTP response by status (`mcp_gateway_http_requests_total`),
//! whatever path it was for and whoever answered it.

use std::sync::Arc;
use std::task::{Context, Poll};

use http::{Request, Response};
use tower::{Layer, Service};

use super::{MapResponse, OnResponse};
use crate::metrics::Metrics;
use mcp_ui_model::reply::Body;

#[derive(Clone)]
pub(crate) struct HttpMetricsLayer {
    metrics: Arc<Metrics>,
}

impl HttpMetricsLayer {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        HttpMetricsLayer { metrics }
    }
}

impl<S> Layer<S> for HttpMetricsLayer {
    type Service = HttpMetrics<S>;

    fn layer(&self, inner: S) -> HttpMetrics<S> {
        HttpMetrics {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct HttpMetrics<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B> Service<Request<B>> for HttpMetrics<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Future: Unpin,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = MapResponse<S::Future, CountStatus>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        MapResponse::new(self.inner.call(req), CountStatus(self.metrics.clone()))
    }
}

pub(crate) struct CountStatus(Arc<Metrics>);

impl OnResponse for CountStatus {
    fn on_response(self, response: &mut Response<Body>) {
        self.0.record_status(response.status());
    }
}
