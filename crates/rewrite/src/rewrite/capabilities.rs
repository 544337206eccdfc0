//! What the gateway adds to the server capabilities it relays: `resources`
//! (it serves the widgets even when the upstream has none), the MCP Apps
//! extension `io.modelcontextprotocol/ui`, and `listChanged` where the
//! gateway itself will announce changes. Both the `initialize` result and
//! the 2026-07-28 `server/discover` result carry `capabilities` at the top
//! level; everything else in them is left alone.

use serde_json::{Map, Value, json};

use super::object::object_at;
use mcp_ui_overlay::overlay::widget::MCP_APP_MIME;

/// The MCP Apps extension identifier.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// Which list-changed notifications the gateway will send on this
/// connection (e.g. after an overlay reload). Only these are set to `true`;
/// an upstream's own `true` is never lowered, since its notifications still
/// pass through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListChanged {
    pub tools: bool,
    pub resources: bool,
}

/// Rewrites an `initialize` result.
pub fn initialize_result(result: &mut Value, list_changed: ListChanged) {
    add_capabilities(result, list_changed);
}

/// Rewrites a `server/discover` result (protocol 2026-07-28), which carries
/// `capabilities` where `initialize` does.
pub fn discover_result(result: &mut Value, list_changed: ListChanged) {
    add_capabilities(result, list_changed);
}

fn add_capabilities(result: &mut Value, list_changed: ListChanged) {
    let Some(result) = result.as_object_mut() else {
        return;
    };
    let capabilities = object_at(result, "capabilities");
    let resources = object_at(capabilities, "resources");
    if list_changed.resources {
        resources.insert("listChanged".into(), json!(true));
    }
    // An upstream without tools has nothing whose list could change.
    if list_changed.tools
        && let Some(tools) = capabilities.get_mut("tools").and_then(Value::as_object_mut)
    {
        tools.insert("listChanged".into(), json!(true));
    }
    let extensions = object_at(capabilities, "extensions");
    let ui = object_at(extensions, UI_EXTENSION);
    add_mime_type(ui);
}

/// Ensures the extension's `mimeTypes` lists the MCP Apps type, keeping what
/// an upstream that is already an MCP Apps server declared.
fn add_mime_type(ui: &mut Map<String, Value>) {
    let slot = ui.entry("mimeTypes").or_insert_with(|| json!([]));
    if !slot.is_array() {
        *slot = json!([]);
    }
    if let Some(types) = slot.as_array_mut()
        && !types.iter().any(|t| t == MCP_APP_MIME)
    {
        types.push(json!(MCP_APP_MIME));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: ListChanged = ListChanged {
        tools: true,
        resources: true,
    };

    #[test]
    fn initialize_gains_resources_and_the_ui_extension() {
        // mcp-server-time's answer, with an extra unknown field.
        let mut result = json!({
            "capabilities": {
                "prompts": { "listChanged": false },
                "tools": { "listChanged": false },
                "experimental": { "x": {} }
            },
            "protocolVersion": "2025-11-25",
            "serverInfo": { "name": "mcp-time", "version": "2026.10.19" },
            "instructions": "keep me"
        });
        initialize_result(&mut result, BOTH);
        assert_eq!(
            result.to_string(),
            json!({
                "capabilities": {
                    "prompts": { "listChanged": false },
                    "tools": { "listChanged": true },
                    "experimental": { "x": {} },
                    "resources": { "listChanged": true },
                    "extensions": { "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html;profile=mcp-app"] } }
                },
                "protocolVersion": "2025-11-25",
                "serverInfo": { "name": "mcp-time", "version": "2026.10.19" },
                "instructions": "keep me"
            })
            .to_string()
        );
    }

    #[test]
    fn list_changed_only_where_announced_and_never_lowered() {
        let mut result =
            json!({ "capabilities": { "resources": { "subscribe": true, "listChanged": true } } });
        initialize_result(&mut result, ListChanged::default());
        assert_eq!(
            result["capabilities"]["resources"],
            json!({ "subscribe": true, "listChanged": true })
        );
        assert!(
            result["capabilities"].get("tools").is_none(),
            "no tools capability is invented"
        );

        let mut bare = json!({ "capabilities": { "tools": {} } });
        initialize_result(
            &mut bare,
            ListChanged {
                tools: false,
                resources: true,
            },
        );
        assert_eq!(bare["capabilities"]["tools"], json!({}));
        assert_eq!(
            bare["capabilities"]["resources"],
            json!({ "listChanged": true })
        );
    }

    #[test]
    fn an_existing_ui_extension_is_extended_not_replaced() {
        let mut result = json!({ "capabilities": { "extensions": {
            "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html+skybridge"], "features": {} },
            "io.modelcontextprotocol/tasks": {}
        } } });
        initialize_result(&mut result, ListChanged::default());
        assert_eq!(
            result["capabilities"]["extensions"],
            json!({
                "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html+skybridge", "text/html;profile=mcp-app"], "features": {} },
                "io.modelcontextprotocol/tasks": {}
            })
        );
        let twice = result.clone();
        initialize_result(&mut result, ListChanged::default());
        assert_eq!(result, twice, "idempotent");
    }

    #[test]
    fn discover_keeps_its_own_fields() {
        // mcp-server-time's `server/discover` answer.
        let mut result = json!({
            "cacheScope": "private",
            "capabilities": { "tools": { "listChanged": false } },
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "ttlMs": 0,
            "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "mcp-time" } }
        });
        discover_result(&mut result, ListChanged::default());
        let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "cacheScope",
                "capabilities",
                "resultType",
                "supportedVersions",
                "ttlMs",
                "_meta"
            ]
        );
        assert_eq!(result["capabilities"]["resources"], json!({}));
        assert_eq!(
            result["capabilities"]["tools"],
            json!({ "listChanged": false })
        );
        assert!(result["capabilities"]["extensions"][UI_EXTENSION].is_object());
    }
}
