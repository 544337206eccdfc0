//! Refuses (413) a request whose declared `Content-Length` is over
//! `limits.max_body_bytes`, at once, without reading its body. A body sent
//! without a length is bounded where it is read (the MCP endpoint).

use std::task::{Context, Poll};

use http::{Request, Response, header};
use tower::{Layer, Service};

use super::Refusable;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::Body;

#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyLimitLayer {
    max: usize,
}

impl BodyLimitLayer {
    pub fn new(max: usize) -> Self {
        BodyLimitLayer { max }
    }
}

impl<S> Layer<S> for BodyLimitLayer {
    type Service = BodyLimit<S>;

    fn layer(&self, inner: S) -> BodyLimit<S> {
        BodyLimit {
            inner,
            max: self.max,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct BodyLimit<S> {
    inner: S,
    max: usize,
}

impl<S, B> Service<Request<B>> for BodyLimit<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Future: Unpin,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Refusable<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        match declared {
            Some(n) if n > self.max as u64 => {
                let failure = Failure::BodyTooLarge { limit: self.max };
                Refusable::refused(failure.respond(None))
            }
            _ => Refusable::Inner(self.inner.call(req)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use http::StatusCode;
    use tower::ServiceExt;

    use super::*;
    use mcp_ui_model::reply;

    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused_unread() {
        let inner = tower::service_fn(|_req: Request<()>| {
            std::future::ready(Ok::<_, Infallible>(reply::status(StatusCode::OK)))
        });
        let svc = BodyLimitLayer::new(10).layer(inner);
        let req = |len: &str| {
            Request::post("/mcp")
                .header(header::CONTENT_LENGTH, len)
                .body(())
                .unwrap()
        };
        let r = svc.clone().oneshot(req("11")).await.unwrap();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let r = svc.oneshot(req("10")).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
}
