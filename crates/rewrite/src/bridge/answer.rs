//! An upstream's answer in the 2026-07-28 form: `resultType` on every
//! result, `ttlMs` and `cacheScope` on the listings and reads, and, for an
//! upstream of the handshake era that the gateway stands in for, the
//! revision's "resource not found" and the listings the gateway answers
//! for it (an upstream without prompts or resources gets empty ones, as
//! the `server/discover` the gateway writes for it declares). What is added
//! is spliced into the upstream's text: every other byte stays as written.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use mcp_ui_wire::jsonrpc::{self, Kind, code};
pub use mcp_ui_wire::protocol::{CacheScope, Caps, Hints};

/// What answering one request of the revision needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answering {
    /// The request's method.
    pub method: String,
    /// A `resources/read`'s URI.
    pub uri: Option<String>,
    /// A `tools/call`'s or `prompts/get`'s name.
    pub name: Option<String>,
    /// The capabilities the client declared in the request's `_meta`.
    pub caps: Caps,
    /// The freshness its listing or read announces.
    pub hints: Hints,
    /// The upstream speaks only the handshake era: the gateway answers for
    /// it what the revision adds (the listings it lacks, the revision's
    /// error codes).
    pub bridged: bool,
}

/// Whether the revision caches the results of `method`.
pub fn cacheable(method: &str) -> bool {
    matches!(
        method,
        "server/discover"
            | "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

/// The response in the revision's form, or `None` when it is already.
pub fn answer(a: &Answering, response: &[u8]) -> Option<Vec<u8>> {
    let m = jsonrpc::classify_one(response).ok()?;
    if m.kind != Kind::Response {
        return None;
    }
    match (m.result, m.error) {
        (Some(result), _) => complete(a, response, result),
        (None, Some(error)) if a.bridged => stand_in(a, m.id, error),
        _ => None,
    }
}

/// A result with what the revision requires of it added at its end.
fn complete(a: &Answering, response: &[u8], result: &RawValue) -> Option<Vec<u8>> {
    let fields: HashMap<Cow<'_, str>, &RawValue> = serde_json::from_str(result.get()).ok()?;
    let result_type = fields.get("resultType").map(|v| v.get());
    let mut added = Vec::new();
    if result_type.is_none() {
        added.push(r#""resultType":"complete""#.to_owned());
    }
    if cacheable(&a.method) && result_type != Some(r#""input_required""#) {
        if !fields.contains_key("ttlMs") {
            added.push(format!(r#""ttlMs":{}"#, a.hints.ttl_ms));
        }
        if !fields.contains_key("cacheScope") {
            added.push(format!(r#""cacheScope":"{}""#, a.hints.scope.as_str()));
        }
    }
    if added.is_empty() {
        return None;
    }
    let text = result.get();
    let body = text.strip_suffix('}')?;
    let comma = if fields.is_empty() { "" } else { "," };
    let new = format!("{body}{comma}{}}}", added.join(","));
    jsonrpc::splice(response, result, &new)
}

/// For an upstream of the handshake era: the gateway's own answer where
/// the revision says otherwise than the upstream (`None` keeps the
/// upstream's error).
fn stand_in(a: &Answering, id: Option<&RawValue>, error: &RawValue) -> Option<Vec<u8>> {
    let error: Value = serde_json::from_str(error.get()).ok()?;
    let code = error.get("code").and_then(Value::as_i64)?;
    let id = id.map(RawValue::get).unwrap_or("null");
    let empty = |key: &str| {
        let result = json!({
            key: [],
            "resultType": "complete",
            "ttlMs": a.hints.ttl_ms,
            "cacheScope": a.hints.scope.as_str(),
        });
        Some(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#).into_bytes())
    };
    match a.method.as_str() {
        "prompts/list" if code == code::METHOD_NOT_FOUND => empty("prompts"),
        "resources/list" if code == code::METHOD_NOT_FOUND => empty("resources"),
        "resources/templates/list" if code == code::METHOD_NOT_FOUND => empty("resourceTemplates"),
        // FastMCP 1.x says it with code 0.
        "resources/read"
            if matches!(code, code::RESOURCE_NOT_FOUND | code::METHOD_NOT_FOUND | 0) =>
        {
            let uri = a.uri.as_deref().unwrap_or_default();
            let message = match code {
                code::RESOURCE_NOT_FOUND | 0 => error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("Resource not found"),
                _ => "Resource not found",
            };
            let mut data = match error.get("data") {
                Some(Value::Object(d)) => d.clone(),
                _ => Default::default(),
            };
            data.entry("uri").or_insert_with(|| json!(uri));
            let error = json!({
                "code": code::INVALID_PARAMS,
                "message": message,
                "data": data,
            });
            Some(format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#).into_bytes())
        }
        _ => None,
    }
}

/// The `_meta` keys of the revision's envelope, which a request to an
/// upstream of the handshake era goes without (it said them at the
/// gateway's `initialize`, and a strict one refuses a body that names
/// another revision than its session).
pub const ENVELOPE_KEYS: &[&str] = &[
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/logLevel",
];

/// A request of the revision as an upstream of the handshake era is asked
/// it: its `params._meta` without the envelope's keys, every other byte as
/// the client wrote it. `None` when it has none of them.
pub fn to_handshake(request: &[u8]) -> Option<Vec<u8>> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    let m = jsonrpc::classify_one(request).ok()?;
    let params: Params<'_> = serde_json::from_str(m.params?.get()).ok()?;
    let raw = params.meta?;
    let mut meta: serde_json::Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
    let before = meta.len();
    meta.retain(|k, _| !ENVELOPE_KEYS.contains(&k.as_str()));
    if meta.len() == before {
        return None;
    }
    jsonrpc::splice(request, raw, &Value::Object(meta).to_string())
}
