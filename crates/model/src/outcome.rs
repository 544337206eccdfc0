//! How an exchange ended. A [`Failure`] is what the gateway answers for
//! itself; it knows its [`Side`] (the client, the gateway, an upstream), and
//! from it alone come both the answer (HTTP status, JSON-RPC code and
//! message) and the [`Outcome`] the metrics count. Nothing ever reads an
//! error's text back to classify it.
//!
//! A response the gateway built carries its outcome as a response extension;
//! an SSE answer whose end the gateway writes (a timeout, a broken upstream
//! stream) carries an [`OutcomeSlot`] the writer fills in.
//!
//! - `upstream`: why an upstream could not be reached or answered.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use serde_json::value::RawValue;

use crate::reply::{self, Body};
use mcp_ui_wire::jsonrpc::{self, ClassifyError, code};
use mcp_ui_wire::protocol::{BODY_FLOOR_BYTES_PER_SEC, KNOWN_VERSIONS};

mod upstream;

pub use upstream::UpstreamError;

/// Who an exchange's failure is down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The request was refused: the client must change it.
    Client,
    /// The gateway is at one of its limits.
    Gateway,
    /// The upstream could not be reached, failed or did not answer in time.
    Upstream,
}

/// The label an exchange is counted under (`outcome` of
/// `mcp_gateway_requests_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Outcome {
    /// A result (or an accepted notification).
    Ok = 0,
    /// A JSON-RPC error from the upstream.
    JsonRpcError,
    /// Refused as the client's fault, or an upstream's 4xx passed through.
    Http4xx,
    /// Refused at a gateway limit, or an upstream's 5xx passed through.
    Http5xx,
    /// The upstream failed.
    UpstreamError,
    /// The upstream did not answer within `limits.request_timeout_secs`.
    Timeout,
    /// The client cancelled the request or went away before its answer.
    Cancelled,
}

impl Outcome {
    /// Every outcome, in label order.
    pub const ALL: [Outcome; 7] = [
        Outcome::Ok,
        Outcome::JsonRpcError,
        Outcome::Http4xx,
        Outcome::Http5xx,
        Outcome::UpstreamError,
        Outcome::Timeout,
        Outcome::Cancelled,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::JsonRpcError => "jsonrpc_error",
            Outcome::Http4xx => "http_4xx",
            Outcome::Http5xx => "http_5xx",
            Outcome::UpstreamError => "upstream_error",
            Outcome::Timeout => "timeout",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// The outcome of an answer the gateway passed through, from its status
    /// and whether it is a JSON-RPC error.
    pub fn of_answer(status: StatusCode, jsonrpc_error: bool) -> Outcome {
        match status.as_u16() {
            400..=499 => Outcome::Http4xx,
            500..=599 => Outcome::Http5xx,
            _ if jsonrpc_error => Outcome::JsonRpcError,
            _ => Outcome::Ok,
        }
    }
}

/// Where the writer of an SSE answer records the outcome of an end it wrote
/// itself (shared with the metrics wrapper of the same answer).
#[derive(Debug, Clone)]
pub struct OutcomeSlot(Arc<AtomicU8>);

impl Default for OutcomeSlot {
    fn default() -> Self {
        OutcomeSlot(Arc::new(AtomicU8::new(Self::EMPTY)))
    }
}

impl OutcomeSlot {
    const EMPTY: u8 = u8::MAX;

    /// An empty slot.
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&self, outcome: Outcome) {
        self.0.store(outcome as u8, Ordering::Relaxed);
    }

    pub fn get(&self) -> Option<Outcome> {
        let v = self.0.load(Ordering::Relaxed);
        Outcome::ALL.get(usize::from(v)).copied()
    }
}

/// Why a stream from an upstream ended before the answer it owed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StreamCause {
    #[error("no answer within {secs} s (limits.request_timeout_secs)")]
    Timeout { secs: u64 },
    #[error("{0}")]
    Broken(String),
}

/// Something the gateway answers for itself instead of an upstream's answer.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    // === the client's ===
    #[error("Forbidden: Host header not allowed")]
    HostNotAllowed,
    #[error("Forbidden: Origin not allowed")]
    OriginNotAllowed,
    /// RFC 9112: a request with more than one `Host` is refused.
    #[error("Bad Request: more than one Host header")]
    DuplicateHost,
    /// `why` says more when the method exists but needs something else.
    #[error("Method Not Allowed{}", why.map(|w| format!(": {w}")).unwrap_or_default())]
    MethodNotAllowed {
        allow: &'static str,
        why: Option<&'static str>,
    },
    #[error("Unsupported Media Type: Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("Not Acceptable: Accept must include {0}")]
    NotAcceptable(&'static str),
    #[error("Payload Too Large: the body exceeds {limit} bytes (limits.max_body_bytes)")]
    BodyTooLarge { limit: usize },
    #[error("could not read the body: {0}")]
    UnreadableBody(String),
    /// The body stopped arriving (`limits.header_read_timeout_secs`, then
    /// a floor rate).
    #[error(
        "Request Timeout: the body stalled after {received} bytes (limits.header_read_timeout_secs = {secs}, then at least {floor} bytes a second)",
        floor = BODY_FLOOR_BYTES_PER_SEC
    )]
    BodyTimeout { secs: u64, received: usize },
    #[error(transparent)]
    NotJsonRpc(#[from] ClassifyError),
    #[error("Session not found")]
    SessionNotFound,
    #[error(
        "Session not found: it belongs to another gateway process (stdio and legacy SSE sessions live in the process that started them)"
    )]
    SessionElsewhere,
    #[error(
        "Too Many Requests: this session already has {max} requests waiting for the upstream (limits.max_in_flight_per_session)"
    )]
    TooManyInFlight { max: usize },
    #[error("Bad Request: unsupported MCP-Protocol-Version (supported: {})", KNOWN_VERSIONS.join(", "))]
    UnsupportedVersion,
    #[error("Bad Request: the {0} header does not match the message body")]
    HeaderMismatch(&'static str),
    #[error("Invalid Request: initialize cannot be part of a batch")]
    InitializeInBatch,
    /// Two requests of one batch share an id: their answers could not be
    /// told apart, so none of the batch is forwarded.
    #[error(
        "Invalid Request: more than one request of this batch has id {id} (request ids must be unique); nothing in the batch was forwarded"
    )]
    RepeatedIdInBatch { id: String },
    /// A request reuses the id of one still waiting in the same session.
    #[error(
        "Invalid Request: a request with id {id} is already waiting for its answer in this session (request ids must be unique)"
    )]
    IdInUse { id: String },
    #[error("Conflict: this session already has a GET stream open")]
    StreamConflict,
    /// `notifications/cancelled` ended the wait for a request.
    #[error("request cancelled by the client")]
    Cancelled,
    /// An upstream reached through a session the gateway holds refused the
    /// client's credentials (HTTP 401 or 403): the client must sign in, so
    /// it gets the status and the challenge, as it would directly.
    #[error("upstream '{upstream}' refused the request: HTTP {status}")]
    Refused {
        upstream: String,
        status: StatusCode,
        challenges: Vec<HeaderValue>,
    },

    // === the gateway's ===
    #[error("this gateway already serves {max} sessions (limits.max_sessions)")]
    Full { max: usize },
    /// No room for another upstream connection of a mount: `who` (this
    /// mount, or the caller on it) holds `max` and every one is busy.
    #[error(
        "upstream '{upstream}' has no room for another connection: {who} already holds {max}, each with a request in flight (limits.{limit}); try again shortly"
    )]
    Crowded {
        upstream: String,
        who: &'static str,
        max: usize,
        limit: &'static str,
    },
    /// An answer to read whole that does not fit in the memory budget for
    /// such answers; `at_least` is how much of it was known.
    #[error(
        "upstream '{upstream}' answered at least {at_least} bytes, more than the gateway can hold now: answers it rewrites share {limit} bytes (limits.max_buffered_bytes)"
    )]
    BufferFull {
        upstream: String,
        at_least: usize,
        limit: usize,
    },

    // === an upstream's ===
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// A session the gateway owns ended, or its upstream refused a message;
    /// `what` completes "upstream 'NAME' …".
    #[error("upstream '{upstream}' {what}")]
    Ended { upstream: String, what: String },
    #[error("upstream '{upstream}' stream failed: {cause}")]
    Stream {
        upstream: String,
        cause: StreamCause,
    },
}

impl Failure {
    /// A request that waited `secs` for `upstream` in vain.
    pub fn timeout(upstream: &str, secs: u64) -> Failure {
        Failure::Upstream(UpstreamError::Timeout {
            upstream: upstream.to_owned(),
            seconds: secs,
        })
    }

    pub fn side(&self) -> Side {
        match self {
            Failure::Full { .. }
            | Failure::Crowded { .. }
            | Failure::BufferFull { .. }
            | Failure::Upstream(UpstreamError::ChildLimit { .. }) => Side::Gateway,
            Failure::Upstream(_) | Failure::Ended { .. } | Failure::Stream { .. } => Side::Upstream,
            _ => Side::Client,
        }
    }

    /// What the metrics count this failure as.
    pub fn outcome(&self) -> Outcome {
        match (self, self.side()) {
            (Failure::Cancelled, _) => Outcome::Cancelled,
            (
                Failure::Upstream(UpstreamError::Timeout { .. })
                | Failure::Stream {
                    cause: StreamCause::Timeout { .. },
                    ..
                },
                _,
            ) => Outcome::Timeout,
            (_, Side::Client) => Outcome::Http4xx,
            (_, Side::Gateway) => Outcome::Http5xx,
            (_, Side::Upstream) => Outcome::UpstreamError,
        }
    }

    /// The JSON-RPC error code of the answer.
    pub fn code(&self) -> i64 {
        match self {
            Failure::MethodNotAllowed { .. }
            | Failure::UnsupportedMediaType
            | Failure::NotAcceptable(_)
            | Failure::BodyTooLarge { .. }
            | Failure::BodyTimeout { .. }
            | Failure::UnsupportedVersion
            | Failure::InitializeInBatch
            | Failure::RepeatedIdInBatch { .. }
            | Failure::IdInUse { .. }
            | Failure::StreamConflict
            | Failure::DuplicateHost => code::INVALID_REQUEST,
            Failure::UnreadableBody(_) => code::PARSE_ERROR,
            Failure::NotJsonRpc(e) => e.code(),
            Failure::SessionNotFound | Failure::SessionElsewhere => code::SESSION_NOT_FOUND,
            Failure::Refused { .. } => code::SERVER_ERROR,
            Failure::HeaderMismatch(_) => code::HEADER_MISMATCH,
            Failure::Cancelled => code::REQUEST_CANCELLED,
            // What the official SDKs answer for a refused Host or Origin,
            // and what clients show their user for a failed upstream.
            Failure::HostNotAllowed
            | Failure::OriginNotAllowed
            | Failure::TooManyInFlight { .. }
            | Failure::Full { .. }
            | Failure::Crowded { .. }
            | Failure::BufferFull { .. }
            | Failure::Upstream(_)
            | Failure::Ended { .. }
            | Failure::Stream { .. } => code::SERVER_ERROR,
        }
    }

    /// The HTTP status of the answer when it cannot go to a request in-band
    /// (no request id).
    pub fn status(&self) -> StatusCode {
        match self {
            Failure::HostNotAllowed | Failure::OriginNotAllowed => StatusCode::FORBIDDEN,
            Failure::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Failure::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Failure::NotAcceptable(_) => StatusCode::NOT_ACCEPTABLE,
            Failure::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Failure::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            Failure::SessionNotFound | Failure::SessionElsewhere => StatusCode::NOT_FOUND,
            Failure::TooManyInFlight { .. } => StatusCode::TOO_MANY_REQUESTS,
            Failure::StreamConflict => StatusCode::CONFLICT,
            Failure::UnreadableBody(_)
            | Failure::NotJsonRpc(_)
            | Failure::UnsupportedVersion
            | Failure::HeaderMismatch(_)
            | Failure::InitializeInBatch
            | Failure::RepeatedIdInBatch { .. }
            | Failure::IdInUse { .. }
            | Failure::DuplicateHost => StatusCode::BAD_REQUEST,
            Failure::Cancelled => StatusCode::OK,
            Failure::Refused { status, .. } => *status,
            _ => match self.side() {
                Side::Gateway => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::BAD_GATEWAY,
            },
        }
    }

    /// The JSON-RPC error message for request `id` (or id-less).
    pub fn body(&self, id: Option<&RawValue>) -> Bytes {
        jsonrpc::error_response(id, self.code(), &self.to_string())
    }

    /// The answer to a batch refused whole: its HTTP status, with this error
    /// for each of its requests, by id, as a JSON array (a JSON-RPC batch
    /// answer), so that no request is left without one.
    pub fn respond_batch(&self, ids: &[&RawValue]) -> Response<Body> {
        let mut body = Vec::from(&b"["[..]);
        for (i, id) in ids.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&self.body(Some(id)));
        }
        body.push(b']');
        let mut r = reply::json(self.status(), Bytes::from(body));
        r.extensions_mut().insert(self.outcome());
        r
    }

    /// The answer to an exchange that failed so. A request's upstream
    /// failure (or cancellation) is answered in-band, 200 with an error for
    /// its id, which is what a client shows its user; everything else is an
    /// HTTP error whose body is an id-less JSON-RPC error, except refusals at
    /// a limit (429, and the gateway's 503s): they name the request they
    /// refused and carry `Retry-After`. The response carries its [`Outcome`].
    pub fn respond(&self, id: Option<&RawValue>) -> Response<Body> {
        let in_band =
            id.is_some() && (self.side() == Side::Upstream || matches!(self, Failure::Cancelled));
        // A refusal at a limit names the request it refused, and says when
        // to try again.
        let at_limit =
            matches!(self, Failure::TooManyInFlight { .. }) || self.side() == Side::Gateway;
        let mut r = match (in_band, at_limit) {
            (true, _) => reply::json(StatusCode::OK, self.body(id)),
            (false, true) => reply::json(self.status(), self.body(id)),
            (false, false) => reply::json(self.status(), self.body(None)),
        };
        let h = r.headers_mut();
        if at_limit {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        match self {
            Failure::MethodNotAllowed { allow, .. } => {
                h.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            Failure::Refused { challenges, .. } => {
                for c in challenges {
                    h.append(header::WWW_AUTHENTICATE, c.clone());
                }
            }
            // The rest of the body may still come: the connection is done.
            Failure::BodyTimeout { .. } | Failure::BodyTooLarge { .. } => {
                h.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            _ => {}
        }
        r.extensions_mut().insert(self.outcome());
        match self.side() {
            Side::Upstream => tracing::warn!(error = %self, "upstream request failed"),
            Side::Gateway => tracing::warn!(error = %self, "request refused at a gateway limit"),
            Side::Client => {}
        }
        r
    }
}

#[cfg(test)]
mod tests;
