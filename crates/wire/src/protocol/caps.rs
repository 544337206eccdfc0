//! The client capabilities a gateway acts on: those that decide what a
//! server may ask a client (sampling, elicitation, roots) and the MCP Apps
//! extension, as bits, read from an `initialize`'s (or a 2026-07-28
//! request's) `capabilities` and written back. Pure.

use serde_json::{Map, Value, json};

/// The MCP Apps extension's id in `capabilities.extensions`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The MCP Apps HTML media type a UI-capable host lists.
pub(crate) const UI_MIME: &str = "text/html;profile=mcp-app";

/// Capability bits (see [`Caps`]).
mod bit {
    pub(crate) const SAMPLING: u16 = 1;
    pub(crate) const SAMPLING_TOOLS: u16 = 1 << 1;
    pub(crate) const SAMPLING_CONTEXT: u16 = 1 << 2;
    pub(crate) const ELICITATION: u16 = 1 << 3;
    pub(crate) const ELICITATION_FORM: u16 = 1 << 4;
    pub(crate) const ELICITATION_URL: u16 = 1 << 5;
    pub(crate) const ROOTS: u16 = 1 << 6;
    pub(crate) const ROOTS_LIST_CHANGED: u16 = 1 << 7;
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
}
