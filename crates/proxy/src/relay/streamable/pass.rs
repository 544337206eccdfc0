//! An upstream's answer relayed as it streams in: a JSON answer no plan
//! rewrites, an empty one, an error.

use bytes::Bytes;
use http::Response;
use http_body_util::BodyExt;
use serde_json::value::RawValue;

use super::media::protocol_failure;
use crate::relay::context::Ctx;
use mcp_ui_model::outcome::Failure;
use mcp_ui_model::reply::{self, Body, BoxError};
use mcp_ui_upstream::upstream::client::{BodyError, UpstreamBody};

/// A JSON (or empty, or error) answer passed through as it streams in, once
/// its first bytes have come: until then a deadline or a failure can still
/// be answered as a JSON-RPC error for the request; after, the body is cut
/// (its upstream's error ends it, the deadline included).
pub(super) async fn pass_through(
    cx: &Ctx<'_>,
    head: Response<()>,
    mut body: UpstreamBody,
    id: Option<&RawValue>,
) -> Response<Body> {
    let first = match body.frame().await {
        None => return head.map(|()| reply::empty()),
        Some(Ok(frame)) => frame,
        Some(Err(BodyError::Timeout { secs })) => {
            return Failure::timeout(cx.upstream(), secs).respond(id);
        }
        Some(Err(e)) => {
            return protocol_failure(cx, format!("could not read its response: {e}")).respond(id);
        }
    };
    head.map(|()| {
        Started {
            first: Some(first),
            rest: body,
        }
        .boxed_unsync()
    })
}

/// A body whose first frame was read ahead.
struct Started {
    first: Option<http_body::Frame<Bytes>>,
    rest: UpstreamBody,
}

impl http_body::Body for Started {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        if let Some(first) = self.first.take() {
            return std::task::Poll::Ready(Some(Ok(first)));
        }
        http_body::Body::poll_frame(std::pin::Pin::new(&mut self.rest), cx)
            .map(|f| f.map(|r| r.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && http_body::Body::is_end_stream(&self.rest)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let ahead = self
            .first
            .as_ref()
            .and_then(http_body::Frame::data_ref)
            .map_or(0, |d| d.len() as u64);
        let rest = http_body::Body::size_hint(&self.rest);
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(rest.lower() + ahead);
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper + ahead);
        }
        hint
    }
}
