//! The response body type every part of the gateway answers with, and the
//! helpers that build the gateway's own plain, JSON and JSON-RPC error
//! responses. A leaf: it knows nothing of mounts, sessions or the listener.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};

use mcp_ui_wire::jsonrpc;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

pub fn empty() -> Body {
    Full::new(Bytes::new())
        .map_err(|e| match e {})
        .boxed_unsync()
}

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|e| match e {})
        .boxed_unsync()
}

/// A response with no body and this status.
pub fn status(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(empty());
    *r.status_mut() = status;
    r
}

pub fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A JSON response with a status.
pub fn json(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// An HTTP error whose body is an id-less JSON-RPC error, as MCP servers answer.
pub fn error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    json(status, jsonrpc::error_response(None, code, message))
}

/// Whether a document the gateway serves may be shown in another page's
/// frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Never (`X-Frame-Options: DENY`; its CSP says `frame-ancestors 'none'`):
    /// a page a person acts on, which a frame could trick them into.
    Deny,
    /// As its CSP says.
    AsItsPolicySays,
}

/// The security headers of a document of the gateway's own (a page, a
/// widget's file): `csp` as its `Content-Security-Policy`, the media type as
/// sent (`nosniff`), no `Referer` from it to where it leads, and `framing`.
/// One place, so that every document carries the same.
pub fn confine(headers: &mut http::HeaderMap, csp: &str, framing: Framing) {
    if let Ok(v) = HeaderValue::from_str(csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if framing == Framing::Deny {
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
}
