//! The composition root of a request: the layers every request passes
//! through, in order, around the [`Router`]. One place, one comment per
//! layer on why it sits where it does.

use std::convert::Infallible;
use std::sync::Arc;

use http::{Request, Response};
use hyper::body::Incoming;
use tower::{Service, ServiceBuilder};

use crate::gateway::Gateway;
use crate::middleware::body_limit::BodyLimitLayer;
use crate::middleware::cors::CorsLayer;
use crate::middleware::http_metrics::HttpMetricsLayer;
use crate::middleware::origin_policy::OriginLayer;
use crate::middleware::request_id::RequestIdLayer;
use crate::router::Router;
use mcp_ui_model::reply::Body;

/// The whole service for one gateway: every request, start to finish.
pub fn service(
    gw: &Arc<Gateway>,
) -> impl Service<
    Request<Incoming>,
    Response = Response<Body>,
    Error = Infallible,
    Future: Send + Unpin + 'static,
> + Clone
+ Send
+ 'static {
    let hosts = gw.origin_policy.clone();
    ServiceBuilder::new()
        // Outermost: every response, refusals included, carries the
        // request's id, and every log line below names it (its span).
        .layer(RequestIdLayer)
        // Counts each response by its final status, whoever answered.
        .layer(HttpMetricsLayer::new(gw.metrics.clone()))
        // Outside the Host/Origin check: a browser page of an allowed
        // origin is told of a refusal it can read.
        .layer(CorsLayer::new(hosts.clone()))
        // Before anything looks at the request: DNS rebinding and foreign
        // origins are refused whatever the path.
        .layer(OriginLayer::new(hosts))
        // A body declared too long is refused before it is read.
        .layer(BodyLimitLayer::new(gw.limits.max_body_bytes))
        .service(Router::new(gw.clone()))
}
