//! CORS for browser hosts: a response to an allowed `Origin` says so and
//! exposes the MCP headers; preflights are answered by the routes that
//! accept them, with [`preflight`].

use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::{self, HeaderValue};
use http::{Request, Response, StatusCode};
use tower::{Layer, Service};

use super::origin_policy::OriginPolicy;
use super::{MapResponse, OnResponse};
use mcp_ui_model::reply::{self, Body};

/// Headers a browser host may send (CORS preflight).
const ALLOW_HEADERS: &str = "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id, mcp-method, mcp-name, x-request-id";
/// Headers a browser host may read.
const EXPOSE_HEADERS: &str = "mcp-session-id, mcp-protocol-version, www-authenticate, x-request-id";

/// The answer to a preflight on a route that takes browser requests.
pub(crate) fn preflight() -> Response<Body> {
    let mut r = reply::status(StatusCode::NO_CONTENT);
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOW_HEADERS),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("86400"),
    );
    r
}

#[derive(Clone)]
pub(crate) struct CorsLayer {
    policy: Arc<OriginPolicy>,
}

impl CorsLayer {
    pub fn new(policy: Arc<OriginPolicy>) -> Self {
        CorsLayer { policy }
    }
}

impl<S> Layer<S> for CorsLayer {
    type Service = Cors<S>;

    fn layer(&self, inner: S) -> Cors<S> {
        Cors {
            inner,
            policy: self.policy.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct Cors<S> {
    inner: S,
    policy: Arc<OriginPolicy>,
}

impl<S, B> Service<Request<B>> for Cors<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Future: Unpin,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = MapResponse<S::Future, AllowOrigin>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let open = self.policy.open(req.uri().path());
        let origin = req
            .headers()
            .get(header::ORIGIN)
            .filter(|o| (open && o.as_bytes() != b"null") || self.policy.origin_allowed(o))
            .cloned();
        MapResponse::new(self.inner.call(req), AllowOrigin(origin))
    }
}

/// The allowed origin a response is for, if any.
pub(crate) struct AllowOrigin(Option<HeaderValue>);

impl OnResponse for AllowOrigin {
    fn on_response(self, response: &mut Response<Body>) {
        let Some(origin) = self.0 else { return };
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
        h.append(header::VARY, HeaderValue::from_static("origin"));
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tower::ServiceExt;

    use super::*;
    use mcp_ui_model::config::Config;

    async fn respond(origin: Option<&str>) -> Response<Body> {
        let policy = Arc::new(OriginPolicy::new(&Config::default()));
        let inner = tower::service_fn(|_req: Request<()>| {
            std::future::ready(Ok::<_, Infallible>(reply::status(StatusCode::OK)))
        });
        let svc = CorsLayer::new(policy).layer(inner);
        let mut req = Request::get("/mcp");
        if let Some(o) = origin {
            req = req.header(header::ORIGIN, o);
        }
        svc.oneshot(req.body(()).unwrap()).await.unwrap()
    }

    #[tokio::test]
    async fn allowed_origins_are_told_so() {
        let r = respond(Some("http://localhost:5173")).await;
        let h = r.headers();
        assert_eq!(
            h[header::ACCESS_CONTROL_ALLOW_ORIGIN],
            "http://localhost:5173"
        );
        assert!(
            h[header::ACCESS_CONTROL_EXPOSE_HEADERS]
                .to_str()
                .unwrap()
                .contains("mcp-session-id")
        );
        assert_eq!(h[header::VARY], "origin");
        for r in [
            respond(Some("https://evil.example")).await,
            respond(None).await,
        ] {
            assert!(
                !r.headers()
                    .contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN)
            );
        }
    }
}
