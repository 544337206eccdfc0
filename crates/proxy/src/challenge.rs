//! `/.well-known/openai-apps-challenge`: the domain-verification token of
//! ChatGPT's app submission (`openai_apps_challenge`), answered exactly as
//! configured. The submission fetches it at the root of the MCP URL's host,
//! ignoring the URL's path, so one path serves every mount and app of the
//! gateway; without a token the path is not found, as any other.

use http::header::{self, HeaderValue};
use http::{Method, Response, StatusCode};

use mcp_ui_model::reply::{Body, text};

/// Where the submission looks for the token.
pub(crate) const PATH: &str = "/.well-known/openai-apps-challenge";

/// The answer to a request for [`PATH`]: `200 text/plain` with the token and
/// nothing else to `GET` (headers alone to `HEAD`), never cached (a new
/// submission gives a new token); `405` to any other method.
pub(crate) fn answer(token: &str, method: &Method) -> Response<Body> {
    if !matches!(*method, Method::GET | Method::HEAD) {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    // HTTP leaves a HEAD answer's body out on the wire.
    let mut r = text(StatusCode::OK, token.to_owned());
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
