//! A request of the 2026-07-28 revision validated as that revision
//! requires, whatever the upstream: its `_meta` (the revision and the
//! client's capabilities), the headers that repeat the body, the revision
//! it names and the methods the revision removed. The first failure found
//! is the answer, in the order the official SDKs check.
//!
//! Hosts send the revision's `_meta` under a `MCP-Protocol-Version` header
//! of a 2025 revision (Claude's connectors, ChatGPT): the body is what the
//! upstream reads, so a header naming a 2025 revision is not held against
//! the body, and the headers such a host leaves out are not required. A
//! `MCP-Protocol-Version` of any other value must name the body's revision;
//! `Mcp-Method` and `Mcp-Name`, when sent, must say what the body says, and
//! a client whose header names the revision must send them.
//!
//! A retry's `inputResponses` and `requestState` are held to the types the
//! revision gives them (SEP-2322) before anything is served: a protocol
//! error, `-32602`, whatever the upstream would have made of them.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use mcp_ui_wire::jsonrpc::{self, code};
use mcp_ui_wire::protocol::{self, ENVELOPE, KNOWN_VERSIONS, META_PROTOCOL_VERSION};

/// The `_meta` key of the client's capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The methods the revision removed: answered 404 and `-32601`.
pub const REMOVED: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The requests a client of the revision may send: an upstream of the
/// handshake era is asked nothing else on its behalf.
pub const METHODS: &[&str] = &[
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "completion/complete",
    "subscriptions/listen",
];

/// The revisions of the envelope era the gateway serves.
pub const SUPPORTED: &[&str] = &[ENVELOPE];

/// How one header of the request was sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Seen<'a> {
    #[default]
    Absent,
    Once(&'a [u8]),
    /// Sent more than once: it cannot say one thing.
    Repeated,
}

/// The headers of a request that repeat what its body says.
#[derive(Debug, Clone, Copy, Default)]
pub struct Headers<'a> {
    /// `MCP-Protocol-Version`.
    pub version: Seen<'a>,
    /// `Mcp-Method`.
    pub method: Seen<'a>,
    /// `Mcp-Name`.
    pub name: Seen<'a>,
}

/// Why a request is refused: the HTTP status and the JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub status: u16,
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl Refusal {
    fn new(code: i64, message: impl Into<String>) -> Refusal {
        Refusal {
            status: http_status(code),
            code,
            message: message.into(),
            data: None,
        }
    }

    fn with_data(mut self, data: Value) -> Refusal {
        self.data = Some(data);
        self
    }

    /// The error response, carrying the request's id (`null` when it has
    /// none).
    pub fn response(&self, id: Option<&RawValue>) -> Bytes {
        let mut error = Map::new();
        error.insert("code".into(), json!(self.code));
        error.insert("message".into(), json!(self.message));
        if let Some(data) = &self.data {
            error.insert("data".into(), data.clone());
        }
        let id = id.map(RawValue::get).unwrap_or("null");
        Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{}}}"#,
            Value::Object(error)
        ))
    }
}

/// The HTTP status the revision gives a JSON-RPC error: 400 for a request
/// that is wrong as sent, 404 for a method the server does not have, 200
/// otherwise (the error is the answer).
pub fn http_status(code: i64) -> u16 {
    match code {
        code::PARSE_ERROR | code::INVALID_REQUEST | code::INVALID_PARAMS => 400,
        code::HEADER_MISMATCH | code::MISSING_CAPABILITY | code::UNSUPPORTED_VERSION => 400,
        code::METHOD_NOT_FOUND => 404,
        _ => 200,
    }
}

/// The HTTP status of a JSON answer to a request of the revision: its
/// error's, as [`http_status`] maps them (200 for a result).
pub fn status_of(response: &[u8]) -> u16 {
    mcp_ui_wire::jsonrpc::classify_one(response)
        .ok()
        .and_then(|m| {
            let error: Value = serde_json::from_str(m.error?.get()).ok()?;
            error.get("code")?.as_i64()
        })
        .map_or(200, http_status)
}

/// Whether a request is one of the revision: its `_meta` names a revision
/// (whatever its value), its `MCP-Protocol-Version` header names one of
/// the envelope era, or it is `server/discover`, which only that revision
/// has.
pub fn is_revision_request(method: &str, header: Option<&str>, params: Option<&RawValue>) -> bool {
    method == "server/discover"
        || header.is_some_and(|h| protocol::is_envelope(h.trim()))
        || names_a_revision(params)
}

/// Whether `params._meta` has the revision's key, read without parsing
/// the rest (every request is asked).
fn names_a_revision(params: Option<&RawValue>) -> bool {
    #[derive(serde::Deserialize)]
    struct P<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<M<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct M<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
        version: Option<&'a RawValue>,
    }
    params
        .and_then(|p| serde_json::from_str::<P<'_>>(p.get()).ok())
        .and_then(|p| p.meta?.version)
        .is_some()
}

/// Validate a request of the revision: `Ok` when the gateway may serve it.
pub fn check(
    method: &str,
    params: Option<&RawValue>,
    headers: &Headers<'_>,
) -> Result<(), Refusal> {
    for (name, seen) in [
        ("MCP-Protocol-Version", headers.version),
        ("Mcp-Method", headers.method),
        ("Mcp-Name", headers.name),
    ] {
        if seen == Seen::Repeated {
            return Err(Refusal::new(
                code::HEADER_MISMATCH,
                format!("{name} header appears more than once"),
            ));
        }
    }
    // The params' members are read one by one, as they are needed: a
    // call's arguments are never parsed here.
    let params = params.and_then(jsonrpc::members);
    let member = |key: &str| -> Option<Value> {
        serde_json::from_str(params.as_ref()?.get(key)?.get()).ok()
    };
    let meta = member("_meta");
    let version = meta_version(meta.as_ref())?;
    headers_match(method, version, headers, &member)?;
    if !SUPPORTED.contains(&version) {
        return Err(
            Refusal::new(code::UNSUPPORTED_VERSION, "Unsupported protocol version")
                .with_data(json!({ "supported": SUPPORTED, "requested": version })),
        );
    }
    if REMOVED.contains(&method) {
        return Err(
            Refusal::new(code::METHOD_NOT_FOUND, "Method not found").with_data(json!(method))
        );
    }
    match params {
        Some(_) => input(&member),
        None => Ok(()),
    }
}

/// The protocol version `params._meta` names: `_meta` must be an object
/// carrying the version, a string, and the client's capabilities, an
/// object.
fn meta_version(meta: Option<&Value>) -> Result<&str, Refusal> {
    let Some(meta) = meta.and_then(Value::as_object) else {
        return Err(Refusal::new(
            code::INVALID_PARAMS,
            format!(
                "params._meta must be an object carrying '{META_PROTOCOL_VERSION}' and '{META_CLIENT_CAPABILITIES}'"
            ),
        ));
    };
    let missing: Vec<&str> = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES]
        .into_iter()
        .filter(|k| !meta.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(Refusal::new(
            code::INVALID_PARAMS,
            format!(
                "params._meta is missing the required key(s): {}",
                missing.join(", ")
            ),
        ));
    }
    let Some(version) = meta.get(META_PROTOCOL_VERSION).and_then(Value::as_str) else {
        return Err(Refusal::new(
            code::INVALID_PARAMS,
            format!("params._meta['{META_PROTOCOL_VERSION}'] must be a string"),
        ));
    };
    if !meta
        .get(META_CLIENT_CAPABILITIES)
        .is_some_and(Value::is_object)
    {
        return Err(Refusal::new(
            code::INVALID_PARAMS,
            format!("params._meta['{META_CLIENT_CAPABILITIES}'] must be an object"),
        ));
    }
    Ok(version)
}

/// The request's headers against its body: the protocol version (a host
/// mixing in a version of its own era aside), the method, and the name a
/// method is named by (`member` reads a member of the params).
fn headers_match(
    method: &str,
    version: &str,
    headers: &Headers<'_>,
    member: &dyn Fn(&str) -> Option<Value>,
) -> Result<(), Refusal> {
    if let Seen::Once(v) = headers.version {
        let v = std::str::from_utf8(v).unwrap_or_default().trim();
        let hosts_mix = KNOWN_VERSIONS.contains(&v) && !protocol::is_envelope(v);
        if !hosts_mix && v != version {
            return Err(Refusal::new(
                code::HEADER_MISMATCH,
                "MCP-Protocol-Version header does not match the request's protocol version",
            ));
        }
    }
    // A client that names the revision in its header is held to all of
    // the revision's headers: the ones it leaves out are a mismatch too.
    let strict = matches!(headers.version, Seen::Once(v)
        if std::str::from_utf8(v).is_ok_and(|v| protocol::is_envelope(v.trim())));
    let method_header = match headers.method {
        Seen::Absent if strict => Seen::Once(b""),
        seen => seen,
    };
    let name_header = match headers.name {
        Seen::Absent if strict && named_by(method).is_some() => Seen::Once(b""),
        seen => seen,
    };
    if let Seen::Once(v) = method_header
        && std::str::from_utf8(v).map(str::trim) != Ok(method)
    {
        return Err(Refusal::new(
            code::HEADER_MISMATCH,
            "Mcp-Method header does not match the request's method",
        ));
    }
    if let (Seen::Once(v), Some(field)) = (name_header, named_by(method)) {
        let body = member(field);
        if header_value(v).as_deref() != body.as_ref().and_then(Value::as_str) {
            return Err(Refusal::new(
                code::HEADER_MISMATCH,
                format!("Mcp-Name header does not match the request's '{field}'"),
            ));
        }
    }
    Ok(())
}

/// `inputResponses` and `requestState` as the revision types them: an
/// object whose every member is an `InputResponse`, and a string. Either
/// may be absent; `null` is neither.
fn input(member: &dyn Fn(&str) -> Option<Value>) -> Result<(), Refusal> {
    if member("requestState").is_some_and(|s| !s.is_string()) {
        return Err(Refusal::new(
            code::INVALID_PARAMS,
            "params.requestState must be a string",
        ));
    }
    let Some(responses) = member("inputResponses") else {
        return Ok(());
    };
    let Some(responses) = responses.as_object() else {
        return Err(Refusal::new(
            code::INVALID_PARAMS,
            "params.inputResponses must be an object of input responses",
        ));
    };
    match responses.iter().find(|(_, r)| !is_input_response(r)) {
        Some((key, _)) => Err(Refusal::new(
            code::INVALID_PARAMS,
            format!(
                "params.inputResponses[{}] must be the result of an elicitation, a sampling or a roots listing",
                Value::from(key.as_str())
            ),
        )),
        None => Ok(()),
    }
}

/// Whether `v` is an `InputResponse`: an `ElicitResult` (its `action`), a
/// `CreateMessageResult` (its `role`, `content` and `model`) or a
/// `ListRootsResult` (its `roots`), as the revision's schema requires them.
fn is_input_response(v: &Value) -> bool {
    let Some(r) = v.as_object() else {
        return false;
    };
    let elicited = r.get("action").is_some_and(Value::is_string);
    let sampled = r.get("role").is_some_and(Value::is_string)
        && r.get("content")
            .is_some_and(|c| c.is_object() || c.is_array())
        && r.get("model").is_some_and(Value::is_string);
    let roots = r.get("roots").is_some_and(Value::is_array);
    elicited || sampled || roots
}

/// For an upstream of the handshake era, which the gateway stands in for:
/// the refusal of a method the revision does not have (404 and `-32601`,
/// as an upstream of the revision answers; one of the handshake era may
/// answer otherwise).
pub fn beyond(method: &str) -> Option<Refusal> {
    (!METHODS.contains(&method))
        .then(|| Refusal::new(code::METHOD_NOT_FOUND, "Method not found").with_data(json!(method)))
}

/// The parameter `Mcp-Name` repeats for a method, if any.
pub fn named_by(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// A header's value as it names something: plain, or the revision's
/// `=?base64?…?=` form for what a header cannot carry (decoded only when
/// its base64 is canonical). Surrounding whitespace is not part of it.
pub fn header_value(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?.trim();
    match text
        .strip_prefix("=?base64?")
        .and_then(|t| t.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = CANONICAL.decode(encoded).ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(text.to_owned()),
    }
}

/// Standard base64 as the revision writes it: padded, no stray bits.
const CANONICAL: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);
