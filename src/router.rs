//! Which part of the gateway answers a request, by its path: liveness,
//! protected-resource metadata, metrics, readiness, the preview page, a
//! widget's served files, or a mount's MCP endpoint. The innermost service of [`crate::app`].

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use tower::Service;

use crate::gateway::Gateway;
use crate::middleware::cors;
use crate::reply::{Body, text};
use crate::{assets, auth, endpoint, health, metrics, preview};

/// The router's future, boxed: hyper keeps room for a connection's service
/// future for as long as the connection is open, idle or not, so an
/// exchange's state lives on the heap only while it runs.
pub type RouteFuture = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// Routes requests to the parts of one gateway.
#[derive(Clone)]
pub struct Router {
    gw: Arc<Gateway>,
}

impl Router {
    pub fn new(gw: Arc<Gateway>) -> Self {
        Router { gw }
    }
}

impl Service<Request<Incoming>> for Router {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = RouteFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Incoming>) -> RouteFuture {
        let gw = self.gw.clone();
        Box::pin(async move { Ok(route(&gw, req).await) })
    }
}

async fn route(gw: &Arc<Gateway>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path();
    if path == "/healthz" {
        return text(StatusCode::OK, "ok\n");
    }
    if let Some(target) = auth::prm_target(path) {
        if let auth::PrmTarget::Mount(p) = target
            && let Some(app) = gw.app_at(p)
        {
            return crate::app_endpoint::oauth::metadata(gw, app, req.method(), req.headers())
                .await;
        }
        return metadata(gw, gw.prm_mount(target), &req).await;
    }
    if path == "/metrics" {
        return metrics::response(gw.metrics_text().await);
    }
    if path == "/readyz" {
        return health::readyz(&gw.readiness, &gw.upstreams()).await;
    }
    if let Some(app) = gw.app_at(path) {
        return crate::app_endpoint::serve(gw, app, req).await;
    }
    if let Some(mount) = gw.mount_at(path) {
        return endpoint::serve(gw, mount, req).await;
    }
    if assets::claims(path) {
        return assets::serve(&gw.live.load(), req.method(), path);
    }
    if preview::claims(path) {
        let mounts = gw.mounts.iter().map(|m| &m.config);
        return preview::serve(gw.preview, mounts, req.method(), req.uri());
    }
    text(
        StatusCode::NOT_FOUND,
        "not found: this gateway serves MCP at its mount paths\n",
    )
}

/// A mount's protected-resource metadata (RFC 9728).
async fn metadata(
    gw: &Gateway,
    mount: Option<&crate::gateway::MountState>,
    req: &Request<Incoming>,
) -> Response<Body> {
    match (mount, req.method()) {
        (Some(mount), &Method::GET | &Method::HEAD) => {
            let fetch = auth::Fetch {
                client: &gw.client,
                timeout: gw.request_timeout(),
            };
            auth::serve_prm(&gw.auth, mount.index, &mount.config, &fetch, req.headers()).await
        }
        (Some(_), &Method::OPTIONS) => cors::preflight(),
        (Some(_), _) => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, OPTIONS"));
            r
        }
        (None, _) => text(
            StatusCode::NOT_FOUND,
            "not found: no mount at this protected-resource metadata path\n",
        ),
    }
}
