//! JSON-RPC 2.0 envelopes: classify a message from its top-level keys without
//! parsing the values, build the gateway's own error bodies, and splice new
//! values into a message without re-serialising the rest of it.
//!
//! Everything the gateway forwards stays as the bytes it received; this module
//! only borrows slices of them (`RawValue`), which is what keeps forwarding
//! lossless and about ten times cheaper than a full parse.

use std::borrow::Cow;

use bytes::Bytes;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// JSON-RPC and MCP error codes the gateway itself produces.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Implementation-defined server error: the upstream could not be reached,
    /// timed out or went away, or the gateway refused the request at one of
    /// its limits or policies (as the official SDKs answer those).
    pub const SERVER_ERROR: i64 = -32000;
    /// The session id is unknown, expired or forged (the TypeScript SDK's code).
    pub const SESSION_NOT_FOUND: i64 = -32001;
    /// MCP: `resources/read` of a URI that does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// The client cancelled the request (`notifications/cancelled`); the
    /// answer a client ignores, as it must any late response.
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// 2026-07-28: `Mcp-Method`/`Mcp-Name` headers disagree with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the request needs a client capability its `_meta` does
    /// not declare.
    pub const MISSING_CAPABILITY: i64 = -32021;
    /// 2026-07-28: the request's `_meta` names a revision the server does
    /// not serve.
    pub const UNSUPPORTED_VERSION: i64 = -32022;
}

/// What a single JSON-RPC message is, judged by which keys it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
}

/// A borrowed view of one message: the values stay raw slices of the input.
#[derive(Debug)]
pub struct Message<'a> {
    pub kind: Kind,
    pub id: Option<&'a RawValue>,
    pub method: Option<Cow<'a, str>>,
    pub params: Option<&'a RawValue>,
    pub result: Option<&'a RawValue>,
    pub error: Option<&'a RawValue>,
}

/// A POST body: one message, or a batch (JSON-RPC arrays, 2025-03-26 only).
#[derive(Debug)]
pub enum Body<'a> {
    Single(Message<'a>),
    Batch(Vec<(Message<'a>, &'a RawValue)>),
}

/// Why a body is not acceptable JSON-RPC.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassifyError {
    #[error("parse error: {0}")]
    Parse(String),
    #[error("invalid request: {0}")]
    Invalid(&'static str),
}

impl ClassifyError {
    pub fn code(&self) -> i64 {
        match self {
            ClassifyError::Parse(_) => code::PARSE_ERROR,
            ClassifyError::Invalid(_) => code::INVALID_REQUEST,
        }
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<Cow<'a, str>>,
    // `Some("null")` for an explicit null id, `None` only when the key is absent.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Classify a POST body or a line from an upstream.
pub fn classify(bytes: &[u8]) -> Result<Body<'_>, ClassifyError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let items: Vec<&RawValue> =
            serde_json::from_slice(bytes).map_err(|e| ClassifyError::Parse(e.to_string()))?;
        if items.is_empty() {
            return Err(ClassifyError::Invalid("empty batch"));
        }
        let messages = items
            .into_iter()
            .map(|raw| classify_one(raw.get().as_bytes()).map(|m| (m, raw)))
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Body::Batch(messages));
    }
    classify_one(bytes).map(Body::Single)
}

/// Classify exactly one message (no batches).
pub fn classify_one(bytes: &[u8]) -> Result<Message<'_>, ClassifyError> {
    let env: Envelope<'_> = match serde_json::from_slice(bytes) {
        Ok(env) => env,
        Err(e) if e.is_data() => {
            // Valid JSON of the wrong shape (a string, a number, wrong key types)
            // is an invalid request, not a parse error.
            return Err(ClassifyError::Invalid("not a JSON-RPC message object"));
        }
        Err(e) => return Err(ClassifyError::Parse(e.to_string())),
    };
    if env.jsonrpc.as_deref() != Some("2.0") {
        return Err(ClassifyError::Invalid("\"jsonrpc\" must be \"2.0\""));
    }
    let kind = match (
        &env.method,
        env.id,
        env.result.is_some() || env.error.is_some(),
    ) {
        (Some(_), Some(id), false) => {
            if !is_valid_id(id) {
                return Err(ClassifyError::Invalid(
                    "request id must be a string or an integer",
                ));
            }
            Kind::Request
        }
        (Some(_), None, false) => Kind::Notification,
        (None, Some(_), true) => {
            if env.result.is_some() && env.error.is_some() {
                return Err(ClassifyError::Invalid(
                    "a response has either result or error",
                ));
            }
            Kind::Response
        }
        _ => {
            return Err(ClassifyError::Invalid(
                "neither a request, a notification nor a response",
            ));
        }
    };
    Ok(Message {
        kind,
        id: env.id,
        method: env.method,
        params: env.params,
        result: env.result,
        error: env.error,
    })
}

/// MCP request ids are strings or integers: a fraction or an exponent
/// (`1.5`, `1e3`) is refused, as `null`, objects and arrays are, rather
/// than forwarded to an upstream that may never answer it.
fn is_valid_id(id: &RawValue) -> bool {
    let raw = id.get().as_bytes();
    match raw.first() {
        Some(b'"') => true,
        Some(b'-' | b'0'..=b'9') => !raw.iter().any(|b| matches!(b, b'.' | b'e' | b'E')),
        _ => false,
    }
}

/// A canonical text for an id, so ids a server takes for the same match
/// while `1` and `"1"` stay different, as JSON-RPC requires: `"a"` and
/// `"\u0061"`; and numbers by their value as a double (`0` and `-0`, `1`
/// and `1.0`, and integers beyond 2^53 that a JavaScript server rounds to
/// the same number).
pub fn id_key(id: &RawValue) -> String {
    id_key_str(id.get())
}

/// [`id_key`] of an id's raw text.
pub fn id_key_str(raw: &str) -> String {
    if raw.starts_with('"') {
        if raw.contains('\\')
            && let Ok(s) = serde_json::from_str::<String>(raw)
        {
            return serde_json::to_string(&s).unwrap_or_else(|_| raw.to_owned());
        }
        return raw.to_owned();
    }
    number_key(raw).unwrap_or_else(|| raw.to_owned())
}

/// The canonical text of a JSON number `raw` (`None`: as it is): an
/// integer of at most 15 digits is its own (exact in a double, and JSON
/// writes it one way); any other number is the value a double gives it, an
/// integral one written without a fraction (`-0` is `0`).
fn number_key(raw: &str) -> Option<String> {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    let plain =
        !digits.is_empty() && digits.len() <= 15 && digits.bytes().all(|b| b.is_ascii_digit());
    if plain && raw != "-0" {
        return None;
    }
    let v: f64 = raw.parse().ok().filter(|v: &f64| v.is_finite())?;
    if v == v.trunc() && v.abs() < 1e21 {
        // Integral and within i128: written without a fraction or sign of zero.
        return Some(format!("{}", v as i128));
    }
    Some(format!("{v:?}"))
}

/// The id of the first request of a batch that reuses the id of an earlier
/// request of the same batch (ids compared as [`id_key`] does). Such a batch
/// cannot be asked of an upstream unambiguously: its answers are told apart
/// by id only.
pub fn repeated_request_id<'a>(items: &[(Message<'a>, &'a RawValue)]) -> Option<&'a RawValue> {
    let mut seen = std::collections::HashSet::new();
    items
        .iter()
        .filter(|(m, _)| m.kind == Kind::Request)
        .filter_map(|(m, _)| m.id)
        .find(|id| !seen.insert(id_key(id)))
}

/// The gateway's own error response. `id` is `null` when the request could not
/// be identified.
pub fn error_response(id: Option<&RawValue>, code: i64, message: &str) -> Bytes {
    let id = id.map(RawValue::get).unwrap_or("null");
    let message = serde_json::to_string(message).expect("strings serialise");
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message}}}}}"#
    ))
}

/// Byte offset of a borrowed slice inside the buffer it was parsed from.
fn offset_in(buf: &[u8], part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(buf.as_ptr() as usize)?;
    (start + part.len() <= buf.len()).then_some(start)
}

/// Replace one raw value (borrowed from `buf`) with `new` text, keeping every
/// other byte of the message as it was.
pub fn splice(buf: &[u8], part: &RawValue, new: &str) -> Option<Vec<u8>> {
    let start = offset_in(buf, part.get())?;
    let end = start + part.get().len();
    let mut out = Vec::with_capacity(buf.len() - part.get().len() + new.len());
    out.extend_from_slice(&buf[..start]);
    out.extend_from_slice(new.as_bytes());
    out.extend_from_slice(&buf[end..]);
    Some(out)
}

/// [`splice`] for several raw values of `buf` at once (they must not
/// overlap); `None` when one is not part of `buf`.
pub fn splice_all(buf: &[u8], parts: &[(&RawValue, String)]) -> Option<Vec<u8>> {
    let mut at: Vec<(std::ops::Range<usize>, &[u8])> = parts
        .iter()
        .map(|(part, new)| Some((span_in(buf, part)?, new.as_bytes())))
        .collect::<Option<_>>()?;
    splice_spans(buf, &mut at)
}

/// Where a raw value borrowed from `buf` lies in it.
pub fn span_in(buf: &[u8], part: &RawValue) -> Option<std::ops::Range<usize>> {
    let start = offset_in(buf, part.get())?;
    Some(start..start + part.get().len())
}

/// `buf` with each range replaced by its bytes, every other byte kept;
/// `None` when ranges overlap or leave `buf`.
pub fn splice_spans(buf: &[u8], parts: &mut [(std::ops::Range<usize>, &[u8])]) -> Option<Vec<u8>> {
    parts.sort_by_key(|(at, _)| at.start);
    let grown: usize = parts.iter().map(|(_, new)| new.len()).sum();
    let mut out = Vec::with_capacity(buf.len() + grown);
    let mut from = 0;
    for (at, new) in parts.iter() {
        if at.start < from || at.end > buf.len() {
            return None;
        }
        out.extend_from_slice(&buf[from..at.start]);
        out.extend_from_slice(new);
        from = at.end;
    }
    out.extend_from_slice(&buf[from..]);
    Some(out)
}

#[derive(Deserialize)]
struct ParamsMeta<'a> {
    #[serde(borrow, rename = "_meta", default)]
    meta: Option<MetaFields<'a>>,
    #[serde(
        borrow,
        rename = "progressToken",
        default,
        deserialize_with = "present"
    )]
    progress_token: Option<&'a RawValue>,
    #[serde(borrow, rename = "requestId", default, deserialize_with = "present")]
    request_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct MetaFields<'a> {
    #[serde(
        borrow,
        rename = "progressToken",
        default,
        deserialize_with = "present"
    )]
    progress_token: Option<&'a RawValue>,
}

/// The few fields of `params` that routing needs, read without parsing the rest.
#[derive(Debug, Default)]
pub struct ParamsView<'a> {
    /// `params._meta.progressToken` of a request.
    pub request_progress_token: Option<&'a RawValue>,
    /// `params.progressToken` of `notifications/progress`.
    pub progress_token: Option<&'a RawValue>,
    /// `params.requestId` of `notifications/cancelled`.
    pub request_id: Option<&'a RawValue>,
    /// `params.name` (tools/call, prompts/get).
    pub name: Option<Cow<'a, str>>,
    /// `params.uri` (resources/read).
    pub uri: Option<Cow<'a, str>>,
}

pub fn params_view(params: Option<&RawValue>) -> ParamsView<'_> {
    let Some(params) = params else {
        return ParamsView::default();
    };
    match serde_json::from_str::<ParamsMeta<'_>>(params.get()) {
        Ok(p) => ParamsView {
            request_progress_token: p.meta.and_then(|m| m.progress_token),
            progress_token: p.progress_token,
            request_id: p.request_id,
            name: p.name,
            uri: p.uri,
        },
        Err(_) => ParamsView::default(),
    }
}

/// A JSON object's members, each left unparsed (a call's arguments may be
/// large); a member given twice counts as its last, as when the object is
/// parsed whole. `None` when `object` is not an object.
pub fn members(object: &RawValue) -> Option<std::collections::HashMap<String, &RawValue>> {
    serde_json::from_str(object.get()).ok()
}

/// Remove raw line breaks so a message fits on one stdio line. Inside valid
/// JSON a raw CR or LF can only be insignificant whitespace (strings escape
/// them), so this never changes a value.
pub fn to_single_line(bytes: &[u8]) -> Cow<'_, [u8]> {
    if bytes.iter().any(|&b| b == b'\n' || b == b'\r') {
        Cow::Owned(
            bytes
                .iter()
                .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
                .collect(),
        )
    } else {
        Cow::Borrowed(bytes)
    }
}

#[cfg(test)]
mod tests;
