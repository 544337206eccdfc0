//! What a client said of itself at `initialize`, kept in its sealed session
//! id: the protocol revision it asked for, its capabilities (the ones that
//! decide what a server may ask it: sampling, elicitation, roots, and the
//! MCP Apps extension), and its `clientInfo`. With it, a session whose
//! upstream side is gone is opened again as the client opened it, and a
//! connection shared by several clients asks each only what it can answer.
//! Pure: built from the request's `params`, written back as `params`.

use serde_json::{Map, Value, json};

/// The MCP Apps extension's id in `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MCP Apps HTML media type a UI-capable host lists.
pub const UI_MIME: &str = "text/html;profile=mcp-app";

/// Longest `clientInfo.name` kept, in bytes.
const MAX_NAME: usize = 64;
/// Longest `clientInfo.version` and protocol revision kept, in bytes.
const MAX_SHORT: usize = 32;

/// Capability bits (see [`Caps`]).
mod bit {
    pub const SAMPLING: u16 = 1;
    pub const SAMPLING_TOOLS: u16 = 1 << 1;
    pub const SAMPLING_CONTEXT: u16 = 1 << 2;
    pub const ELICITATION: u16 = 1 << 3;
    pub const ELICITATION_FORM: u16 = 1 << 4;
    pub const ELICITATION_URL: u16 = 1 << 5;
    pub const ROOTS: u16 = 1 << 6;
    pub const ROOTS_LIST_CHANGED: u16 = 1 << 7;
    pub const UI: u16 = 1 << 8;
}

/// The client capabilities a gateway acts on, as bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Caps(pub u16);

impl Caps {
    /// Every capability: what the gateway declares on a connection it shares,
    /// so that each client's own capabilities decide what reaches it.
    pub const ALL: Caps = Caps(
        bit::SAMPLING
            | bit::SAMPLING_TOOLS
            | bit::ELICITATION
            | bit::ELICITATION_FORM
            | bit::ELICITATION_URL
            | bit::ROOTS
            | bit::ROOTS_LIST_CHANGED
            | bit::UI,
    );

    /// The bits `capabilities` (an `initialize`'s, or a 2026-07-28
    /// request's `clientCapabilities`) declares.
    pub fn of(capabilities: Option<&Value>) -> Caps {
        let Some(c) = capabilities.and_then(Value::as_object) else {
            return Caps::default();
        };
        let mut bits = 0;
        let mut set = |on: bool, b: u16| {
            if on {
                bits |= b;
            }
        };
        let sampling = c.get("sampling").filter(|v| v.is_object());
        set(sampling.is_some(), bit::SAMPLING);
        set(
            sampling.is_some_and(|s| s.get("tools").is_some()),
            bit::SAMPLING_TOOLS,
        );
        set(
            sampling.is_some_and(|s| s.get("context").is_some()),
            bit::SAMPLING_CONTEXT,
        );
        let elicitation = c.get("elicitation").filter(|v| v.is_object());
        set(elicitation.is_some(), bit::ELICITATION);
        set(
            elicitation.is_some_and(|e| e.get("form").is_some()),
            bit::ELICITATION_FORM,
        );
        set(
            elicitation.is_some_and(|e| e.get("url").is_some()),
            bit::ELICITATION_URL,
        );
        let roots = c.get("roots").filter(|v| v.is_object());
        set(roots.is_some(), bit::ROOTS);
        set(
            roots.is_some_and(|r| r.get("listChanged") == Some(&Value::Bool(true))),
            bit::ROOTS_LIST_CHANGED,
        );
        let ui = c
            .get("extensions")
            .and_then(|e| e.get(UI_EXTENSION))
            .is_some();
        set(ui, bit::UI);
        Caps(bits)
    }

    /// The `capabilities` object these bits stand for.
    pub fn to_json(self) -> Value {
        let has = |b: u16| self.0 & b != 0;
        let mut c = Map::new();
        if has(bit::SAMPLING) {
            let mut s = Map::new();
            if has(bit::SAMPLING_TOOLS) {
                s.insert("tools".into(), json!({}));
            }
            if has(bit::SAMPLING_CONTEXT) {
                s.insert("context".into(), json!({}));
            }
            c.insert("sampling".into(), Value::Object(s));
        }
        if has(bit::ELICITATION) {
            let mut e = Map::new();
            if has(bit::ELICITATION_FORM) {
                e.insert("form".into(), json!({}));
            }
            if has(bit::ELICITATION_URL) {
                e.insert("url".into(), json!({}));
            }
            c.insert("elicitation".into(), Value::Object(e));
        }
        if has(bit::ROOTS) {
            let roots = match has(bit::ROOTS_LIST_CHANGED) {
                true => json!({"listChanged": true}),
                false => json!({}),
            };
            c.insert("roots".into(), roots);
        }
        if has(bit::UI) {
            c.insert(
                "extensions".into(),
                json!({ UI_EXTENSION: { "mimeTypes": [UI_MIME] } }),
            );
        }
        Value::Object(c)
    }

    /// Whether a client with these capabilities can answer a server's
    /// request `method` (methods no capability governs, such as `ping`, are
    /// answerable by every client).
    pub fn answers(self, method: &str) -> bool {
        let need = match method {
            "sampling/createMessage" => bit::SAMPLING,
            "elicitation/create" => bit::ELICITATION,
            "roots/list" => bit::ROOTS,
            _ => return true,
        };
        self.0 & need != 0
    }
}

/// A client's `initialize`, as far as the gateway keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hello {
    /// The protocol revision the client asked for (`""` when it named none).
    pub version: String,
    pub caps: Caps,
    /// `clientInfo.name` and `.version`, cut to a few dozen bytes.
    pub client_name: String,
    pub client_version: String,
}

impl Hello {
    /// From an `initialize` request's `params` (anything unreadable is left
    /// out, never refused: the upstream judges the request).
    pub fn of_initialize(params: Option<&Value>) -> Hello {
        let p = params.and_then(Value::as_object);
        let text = |v: Option<&Value>, max: usize| {
            cut(v.and_then(Value::as_str).unwrap_or_default(), max).to_owned()
        };
        let info = p.and_then(|p| p.get("clientInfo"));
        Hello {
            version: text(p.and_then(|p| p.get("protocolVersion")), MAX_SHORT),
            caps: Caps::of(p.and_then(|p| p.get("capabilities"))),
            client_name: text(info.and_then(|i| i.get("name")), MAX_NAME),
            client_version: text(info.and_then(|i| i.get("version")), MAX_SHORT),
        }
    }

    /// The gateway's own, for connections it opens for several clients:
    /// every capability (each client's own decide what reaches it) and the
    /// gateway as the client.
    pub fn gateway(version: &str) -> Hello {
        Hello {
            version: version.to_owned(),
            caps: Caps::ALL,
            client_name: "mcp-ui-gateway".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    /// The `params` of an `initialize` that says this again; `fallback` is
    /// the revision asked for when the client named none.
    pub fn initialize_params(&self, fallback: &str) -> Value {
        let version = match self.version.as_str() {
            "" => fallback,
            v => v,
        };
        let name = match self.client_name.as_str() {
            "" => "mcp-ui-gateway",
            n => n,
        };
        json!({
            "protocolVersion": version,
            "capabilities": self.caps.to_json(),
            "clientInfo": { "name": name, "version": self.client_version },
        })
    }

    /// Appended to a sealed id: caps, then three short strings.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.caps.0.to_be_bytes());
        for s in [&self.version, &self.client_name, &self.client_version] {
            let s = cut(s, u8::MAX as usize);
            out.push(s.len() as u8);
            out.extend_from_slice(s.as_bytes());
        }
    }

    /// What [`Hello::encode`] wrote at the start of `bytes`, and the rest.
    pub fn decode(bytes: &[u8]) -> Option<(Hello, &[u8])> {
        let (caps, mut rest) = bytes.split_at_checked(2)?;
        let caps = Caps(u16::from_be_bytes(caps.try_into().ok()?));
        let mut strings = Vec::with_capacity(3);
        for _ in 0..3 {
            let (&len, tail) = rest.split_first()?;
            let (s, tail) = tail.split_at_checked(len as usize)?;
            strings.push(String::from_utf8(s.to_vec()).ok()?);
            rest = tail;
        }
        let client_version = strings.pop()?;
        let client_name = strings.pop()?;
        let version = strings.pop()?;
        Some((
            Hello {
                version,
                caps,
                client_name,
                client_version,
            },
            rest,
        ))
    }
}

/// `s` cut to at most `max` bytes, on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_round_trip_through_their_bits() {
        let full = json!({
            "sampling": {"tools": {}, "context": {}},
            "elicitation": {"form": {}, "url": {}},
            "roots": {"listChanged": true},
            "extensions": {UI_EXTENSION: {"mimeTypes": [UI_MIME]}},
        });
        assert_eq!(Caps::of(Some(&full)).to_json(), full);
        // An empty elicitation object (form only, by the specification) stays empty.
        let bare = json!({"elicitation": {}, "roots": {}});
        assert_eq!(Caps::of(Some(&bare)).to_json(), bare);
        assert_eq!(Caps::of(Some(&json!({}))), Caps::default());
        assert_eq!(Caps::of(Some(&json!([1]))), Caps::default());
        assert_eq!(Caps::of(None).to_json(), json!({}));
    }

    #[test]
    fn a_client_answers_only_what_it_declared() {
        let c = Caps::of(Some(&json!({"sampling": {}})));
        assert!(c.answers("sampling/createMessage"));
        assert!(!c.answers("elicitation/create"));
        assert!(!c.answers("roots/list"));
        assert!(c.answers("ping"));
        assert!(Caps::ALL.answers("elicitation/create"));
    }

    #[test]
    fn an_initialize_is_kept_and_said_again() {
        let params = json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {"listChanged": true}, "experimental": {"x": {}}},
            "clientInfo": {"name": "claude-ai", "version": "0.1.0"},
        });
        let hello = Hello::of_initialize(Some(&params));
        assert_eq!(hello.version, "2025-06-18");
        assert_eq!(hello.client_name, "claude-ai");
        let again = hello.initialize_params("2025-11-25");
        assert_eq!(again["protocolVersion"], "2025-06-18");
        assert_eq!(
            again["capabilities"],
            json!({"roots": {"listChanged": true}})
        );
        assert_eq!(
            again["clientInfo"],
            json!({"name": "claude-ai", "version": "0.1.0"})
        );
        // Nothing said: the fallback revision and the gateway's name.
        let none = Hello::of_initialize(None).initialize_params("2025-11-25");
        assert_eq!(none["protocolVersion"], "2025-11-25");
        assert_eq!(none["clientInfo"]["name"], "mcp-ui-gateway");
    }

    #[test]
    fn encoded_hellos_decode_and_long_names_are_cut() {
        let long = "é".repeat(100);
        let hello = Hello::of_initialize(Some(&json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": long, "version": "1"},
        })));
        assert!(hello.client_name.len() <= MAX_NAME);
        assert!(hello.client_name.chars().all(|c| c == 'é'));
        let mut bytes = Vec::new();
        hello.encode(&mut bytes);
        bytes.extend_from_slice(b"tail");
        let (back, rest) = Hello::decode(&bytes).unwrap();
        assert_eq!(back, hello);
        assert_eq!(rest, b"tail");
        assert!(Hello::decode(&bytes[..bytes.len() - 6]).is_none());
        assert!(Hello::decode(&[0]).is_none());
    }
}
