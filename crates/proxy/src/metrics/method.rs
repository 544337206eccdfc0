//! The JSON-RPC methods the metrics count by name, as small indexes.

use mcp_ui_wire::jsonrpc;

/// The JSON-RPC methods counted under their own name; anything else counts
/// as `other`. `GET` and `DELETE` are the bodyless HTTP exchanges, `batch` a
/// JSON-RPC array, `response` a client's answer to a server request.
pub(crate) const METHODS: &[&str] = &[
    "other",
    "GET",
    "DELETE",
    "batch",
    "response",
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
];

/// An index into [`METHODS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodId(pub(super) u8);

impl MethodId {
    pub const OTHER: MethodId = MethodId(0);
    pub const GET: MethodId = MethodId(1);
    pub const DELETE: MethodId = MethodId(2);
    pub(crate) const BATCH: MethodId = MethodId(3);
    pub(crate) const RESPONSE: MethodId = MethodId(4);

    /// The id of a JSON-RPC method name (`other` when not a known one).
    pub fn of(method: &str) -> MethodId {
        METHODS
            .iter()
            .skip(5)
            .position(|m| *m == method)
            .map_or(MethodId::OTHER, |i| MethodId(i as u8 + 5))
    }

    /// The id for a classified POST body.
    pub(crate) fn of_body(body: &jsonrpc::Body<'_>) -> MethodId {
        match body {
            jsonrpc::Body::Batch(_) => MethodId::BATCH,
            jsonrpc::Body::Single(m) => match m.method.as_deref() {
                Some(method) => MethodId::of(method),
                None => MethodId::RESPONSE,
            },
        }
    }

    pub fn name(self) -> &'static str {
        METHODS[self.0 as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_ids_round_trip() {
        for (i, m) in METHODS.iter().enumerate().skip(5) {
            assert_eq!(MethodId::of(m), MethodId(i as u8));
            assert_eq!(MethodId::of(m).name(), *m);
        }
        assert_eq!(MethodId::of("vendor/thing"), MethodId::OTHER);
        assert_eq!(MethodId::of("GET"), MethodId::OTHER);
    }
}
