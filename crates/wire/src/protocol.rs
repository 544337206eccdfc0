//! The protocol revisions the gateway knows, and the two eras they fall
//! in: the handshake era (`initialize`, sessions; every revision up to
//! 2025-11-25) and the envelope era (2026-07-28: no handshake, each request
//! names its revision and its client in `params._meta`). Pure.
//!
//! Hosts mix the two: ChatGPT and Claude send the 2026-07-28 envelope in a
//! request's `_meta` under a `MCP-Protocol-Version` header of the 2025
//! revisions. The body is what the upstream reads, so the body decides.

use serde::Deserialize;
use serde_json::value::RawValue;

pub mod cache;
pub mod caps;

pub use cache::{CacheScope, Hints};
pub use caps::Caps;

/// Every revision the gateway relays, oldest first.
pub const KNOWN_VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// The rate a request body must keep up once
/// `limits.header_read_timeout_secs` is spent: a body trickling slower holds
/// a connection and a buffer for nothing (`Failure::BodyTimeout`).
pub const BODY_FLOOR_BYTES_PER_SEC: u64 = 4096;

/// The newest revision with an `initialize` handshake: what the gateway
/// asks for on a connection it opens itself.
pub const LATEST_HANDSHAKE: &str = "2025-11-25";

/// The revision without a handshake or sessions.
pub const ENVELOPE: &str = "2026-07-28";

/// The `_meta` key naming a 2026-07-28 request's revision.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Which era a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// Sessions and `initialize` (2024-11-05 to 2025-11-25), or a request
    /// that names no revision.
    Handshake,
    /// 2026-07-28: the request carries its revision in `params._meta`.
    Envelope,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(rename = "_meta", borrow)]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
    version: Option<std::borrow::Cow<'a, str>>,
}

/// The revision a request's `params._meta` names, if any.
pub fn meta_version(params: Option<&RawValue>) -> Option<String> {
    let p: Params<'_> = serde_json::from_str(params?.get()).ok()?;
    p.meta?.version.map(|v| v.into_owned())
}

/// The era of a request: the envelope when its `_meta` names a revision of
/// it, or when its header does; the handshake era otherwise.
pub fn era(header: Option<&str>, params: Option<&RawValue>) -> Era {
    let named = meta_version(params);
    match named.as_deref().or(header.map(str::trim)) {
        Some(v) if is_envelope(v) => Era::Envelope,
        _ => Era::Handshake,
    }
}

/// Whether `version` is of the envelope era (2026-07-28 or later).
pub fn is_envelope(version: &str) -> bool {
    version >= ENVELOPE && version.len() == ENVELOPE.len()
}

/// The revision a session answered locally speaks: the client's when the
/// gateway knows it and the upstream's connection is not older (each later
/// revision only adds to the earlier ones), the upstream's otherwise (the
/// client then accepts it or leaves, as it would directly).
pub fn negotiate<'a>(client: &'a str, upstream: &'a str) -> &'a str {
    let known = KNOWN_VERSIONS.contains(&client) && !is_envelope(client);
    if known && client <= upstream {
        client
    } else {
        upstream
    }
}

/// Whether an HTTP upstream's answer to a request carrying a session id
/// says it does not know the session (it restarted, or let it expire): the
/// specification's 404, or the 400 whose error names the session that
/// servers on the TypeScript SDK answer ("Bad Request: No valid session ID
/// provided"). Either way the request never reached a session.
pub fn forgot_session(status: http::StatusCode, body: Option<&[u8]>) -> bool {
    match status {
        http::StatusCode::NOT_FOUND => true,
        http::StatusCode::BAD_REQUEST => body.is_some_and(|b| {
            let v: Option<serde_json::Value> = serde_json::from_slice(b).ok();
            let message = v
                .as_ref()
                .and_then(|v| v.get("error")?.get("message")?.as_str())
                .unwrap_or_default();
            message.to_ascii_lowercase().contains("session")
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).unwrap()
    }

    #[test]
    fn the_body_decides_the_era() {
        let envelope = raw(
            r#"{"name":"x","_meta":{"openai/session":"v1/s","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        let chatgpt = raw(r#"{"name":"x","_meta":{"openai/session":"v1/s"}}"#);
        // Claude and ChatGPT: the envelope under a 2025 header.
        assert_eq!(era(Some("2025-11-25"), Some(&envelope)), Era::Envelope);
        assert_eq!(era(None, Some(&envelope)), Era::Envelope);
        assert_eq!(era(Some("2025-11-25"), Some(&chatgpt)), Era::Handshake);
        assert_eq!(era(None, None), Era::Handshake);
        assert_eq!(era(Some("2026-07-28"), None), Era::Envelope);
        assert_eq!(era(Some(" 2026-07-28 "), Some(&chatgpt)), Era::Envelope);
        for junk in [
            "[]",
            "7",
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}"#,
        ] {
            assert_eq!(era(Some("2025-06-18"), Some(&raw(junk))), Era::Handshake);
        }
        assert!(is_envelope("2027-01-01"));
        assert!(!is_envelope("2025-11-25"));
        assert!(!is_envelope("2026-07-28-draft"));
    }

    #[test]
    fn a_local_answer_speaks_the_older_revision() {
        assert_eq!(negotiate("2025-03-26", "2025-11-25"), "2025-03-26");
        assert_eq!(negotiate("2025-11-25", "2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("1999-01-01", "2025-11-25"), "2025-11-25");
        assert_eq!(negotiate("2026-07-28", "2025-11-25"), "2025-11-25");
        assert_eq!(negotiate("", "2025-11-25"), "2025-11-25");
    }

    #[test]
    fn a_forgotten_session_is_a_404_or_a_400_that_names_it() {
        use http::StatusCode;
        let ts = br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#;
        assert!(forgot_session(StatusCode::NOT_FOUND, None));
        assert!(forgot_session(StatusCode::BAD_REQUEST, Some(ts)));
        let other = br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Bad Request: invalid params"},"id":1}"#;
        assert!(!forgot_session(StatusCode::BAD_REQUEST, Some(other)));
        assert!(!forgot_session(StatusCode::BAD_REQUEST, Some(b"not json")));
        assert!(!forgot_session(StatusCode::BAD_REQUEST, None));
        assert!(!forgot_session(StatusCode::UNAUTHORIZED, Some(ts)));
    }
}
