//! What every endpoint of the authorization server uses: the time, random
//! text, the address a request came from, its body read within bounds, and
//! the OAuth error and redirect answers.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;

use mcp_ui_model::reply::{self, Body};

/// The address a request came from (set by the listener).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// `secs` as a person says it: "90 days", "12 hours", "5 s".
pub(super) fn span(secs: u64) -> String {
    match secs {
        s if s >= 86_400 && s % 86_400 == 0 => format!("{} days", s / 86_400),
        s if s >= 3_600 && s % 3_600 == 0 => format!("{} hours", s / 3_600),
        s => format!("{s} s"),
    }
}

/// Random bytes as base64url text: ids, states, nonces, verifiers.
pub(super) fn random_text(bytes: usize) -> String {
    use base64::Engine as _;
    use rand::RngCore as _;
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf)
}

/// 429 with `Retry-After` (whole seconds, at least one) and an OAuth error
/// saying `why`: too many registrations, token requests or refreshes.
pub(super) fn too_many(wait: Duration, why: &str) -> Response<Body> {
    let mut r = oauth_error(
        StatusCode::TOO_MANY_REQUESTS,
        &mcp_ui_identity::authorization_server::OAuthError::new(
            "temporarily_unavailable",
            format!("{why}; try again later"),
        ),
    );
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    if let Ok(v) = http::HeaderValue::from_str(&secs.max(1).to_string()) {
        r.headers_mut().insert(http::header::RETRY_AFTER, v);
    }
    r
}

/// An OAuth error answer (RFC 6749 §5.2).
pub(super) fn oauth_error(
    status: StatusCode,
    error: &mcp_ui_identity::authorization_server::OAuthError,
) -> Response<Body> {
    reply::json(status, Bytes::from(error.body().to_string()))
}

/// How long a form to the authorization server may take to arrive, plus a
/// second for every [`BODY_FLOOR_BYTES_PER_SEC`](mcp_ui_wire::protocol::BODY_FLOOR_BYTES_PER_SEC)
/// bytes received.
const BODY_PATIENCE: Duration = Duration::from_secs(10);

/// The body of `req`, at most `max` bytes within [`BODY_PATIENCE`]; `Err`
/// with the answer refusing it (413, 408 or 400).
pub(super) async fn read_body(
    req: Request<Incoming>,
    max: usize,
) -> Result<(http::request::Parts, Bytes), Box<Response<Body>>> {
    use mcp_ui_model::body::{Bounds, Cut};
    let (parts, body) = req.into_parts();
    let bounds = Bounds {
        limit: max,
        patience: BODY_PATIENCE,
        floor_bytes_per_sec: Some(mcp_ui_wire::protocol::BODY_FLOOR_BYTES_PER_SEC),
    };
    let status = match mcp_ui_model::body::read(body, bounds).await {
        Ok(b) => return Ok((parts, b)),
        Err(Cut::TooLarge { .. }) => StatusCode::PAYLOAD_TOO_LARGE,
        Err(Cut::Stalled { .. }) => StatusCode::REQUEST_TIMEOUT,
        Err(Cut::Broken(_)) => StatusCode::BAD_REQUEST,
    };
    let why = match status {
        StatusCode::PAYLOAD_TOO_LARGE => format!("the request body is larger than {max} bytes"),
        StatusCode::REQUEST_TIMEOUT => format!(
            "the request body did not arrive within {} s",
            BODY_PATIENCE.as_secs()
        ),
        _ => "the request body could not be read".to_owned(),
    };
    Err(Box::new(oauth_error(
        status,
        &mcp_ui_identity::authorization_server::OAuthError::request(why),
    )))
}

/// Whether the request's `Content-Type` is the media type `want` (its
/// parameters aside; RFC 9110 §8.3.1: type and subtype in any case).
pub(super) fn content_type_is(parts: &http::request::Parts, want: &str) -> bool {
    parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(media_type)
        .is_some_and(|m| m.essence_str().eq_ignore_ascii_case(want))
}

/// `text` read as a media type or range (RFC 9110 §8.3.1, §12.5.1), by the
/// `mime` crate; the optional whitespace RFC 9110 §5.6.6 allows before a
/// `;`, which `mime` does not take, is dropped first.
pub fn media_type(text: &str) -> Option<mime::Mime> {
    let text = text.trim();
    match text.contains([' ', '\t']) {
        false => text.parse().ok(),
        true => text
            .split(';')
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join(";")
            .parse()
            .ok(),
    }
}

/// A redirect (303 See Other after a form, 302 otherwise) to `to`.
pub(super) fn redirect(status: StatusCode, to: &str) -> Response<Body> {
    let mut r = reply::status(status);
    match http::HeaderValue::from_str(to) {
        Ok(v) => {
            r.headers_mut().insert(http::header::LOCATION, v);
            r
        }
        Err(_) => reply::text(
            StatusCode::BAD_REQUEST,
            "the redirect URI cannot be written in a header\n",
        ),
    }
}
