//! The shapes of the answers the relay writes itself: an empty 202, and an
//! SSE stream fed from a channel (message events and keep-alive comments).

use bytes::Bytes;
use futures_util::StreamExt;
use http::header::{self, HeaderName, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use mcp_ui_model::reply::{self, Body, BoxError};
use mcp_ui_wire::sse;

/// 202: a notification or response was taken.
pub fn accepted() -> Response<Body> {
    reply::status(StatusCode::ACCEPTED)
}

/// One SSE `message` event.
pub(crate) fn message_event(data: &[u8]) -> Bytes {
    sse::frame(None, Some("message"), data)
}

/// An SSE answer carrying what `rx` yields, as it comes.
pub(crate) fn sse_response(rx: mpsc::Receiver<Bytes>) -> Response<Body> {
    let stream = ReceiverStream::new(rx).map(|b| Ok::<_, BoxError>(Frame::data(b)));
    let mut r = Response::new(StreamBody::new(stream).boxed_unsync());
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    h.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    r
}
