//! What every request passes through before it reaches a route, one concern
//! per module, each a tower `Layer` and its `Service` (as tower-http lays
//! them out). [`crate::stack`] stacks them, in one place.
//!
//! Every layer here answers at once or wraps the inner future in a small
//! future of its own: no allocation per layer. The inner future must be
//! `Unpin` (the router's is boxed), so the wrappers need no pin projection.

pub(crate) mod body_limit;
pub(crate) mod cors;
pub(crate) mod http_metrics;
pub(crate) mod origin_policy;
pub mod request_id;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::Response;

use mcp_ui_model::reply::Body;

/// The future of a layer that may answer a request itself.
pub(crate) enum Refusable<F> {
    /// The layer's own answer, taken once (boxed: refusals are rare, and the
    /// future of every request carries this variant's room).
    Refused(Option<Box<Response<Body>>>),
    Inner(F),
}

impl<F> Refusable<F> {
    pub fn refused(response: Response<Body>) -> Self {
        Refusable::Refused(Some(Box::new(response)))
    }
}

impl<F, E> Future for Refusable<F>
where
    F: Future<Output = Result<Response<Body>, E>> + Unpin,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Refusable::Refused(r) => Poll::Ready(Ok(*r.take().expect("polled after completion"))),
            Refusable::Inner(f) => Pin::new(f).poll(cx),
        }
    }
}

/// What a layer does to a response on its way out.
pub(crate) trait OnResponse {
    fn on_response(self, response: &mut Response<Body>);
}

/// The future of a layer that changes the response on its way out.
pub(crate) struct MapResponse<F, M> {
    inner: F,
    /// What the layer does to the response, taken once.
    map: Option<M>,
}

impl<F, M> MapResponse<F, M> {
    pub fn new(inner: F, map: M) -> Self {
        MapResponse {
            inner,
            map: Some(map),
        }
    }
}

impl<F, M, E> Future for MapResponse<F, M>
where
    F: Future<Output = Result<Response<Body>, E>> + Unpin,
    M: OnResponse + Unpin,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut resp = ready!(Pin::new(&mut this.inner).poll(cx))?;
        if let Some(map) = this.map.take() {
            map.on_response(&mut resp);
        }
        Poll::Ready(Ok(resp))
    }
}
