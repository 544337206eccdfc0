//! What a client said of itself at `initialize`, kept in its sealed session
//! id: the protocol revision it asked for, its capabilities
//! ([`Caps`]) and its `clientInfo`. With it, a session whose upstream side
//! is gone is opened again as the client opened it, and a connection shared
//! by several clients asks each only what it can answer. Pure: built from
//! the request's `params`, written back as `params`.

use serde_json::{Value, json};

use mcp_ui_wire::protocol::caps::Caps;

/// Longest `clientInfo.name` kept, in bytes.
const MAX_NAME: usize = 64;
/// Longest `clientInfo.version` and protocol revision kept, in bytes.
const MAX_SHORT: usize = 32;

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
