//! Parity with a native MCP Apps server: the bundled demo's tools, with the overlays in
//! `overlays/`, and the widget resource the gateway serves for them carry every key that
//! `@modelcontextprotocol/server-basic-vanillajs` emits for its own UI tool and resource
//! (captured as raw wire JSON in `tests/golden/parity/`, see tests/browser/README.md).
//!
//! Key sets are compared, not values: every top-level key of the native tool, every key
//! at any depth of its `_meta`, every key of the native `resources/read` result and of
//! its content item (recursively in `_meta`), and every key of its `resources/list`
//! entry (recursively in `_meta`) must be present through the gateway. Extra keys
//! (the ChatGPT vocabulary, annotations, CSP…) are fine. A failure lists every missing
//! key at once.
//!
//! The gateway runs in-process on 127.0.0.1:0 in front of the demo as a stdio child
//! (killed with the gateway); every request is bounded.

use std::collections::BTreeSet;
use std::path::PathBuf;

use hyper::StatusCode;
use serde_json::{Value, json};
use support::clients::{parse_sse, post_json};
use support::gateway::{self as gw, TestGateway};

use crate::support;

const PROTOCOL: &str = "2025-11-25";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn golden(name: &str) -> Value {
    let path = root().join("tests/golden/parity").join(name);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// A 2025-era session with the gateway at `url`, speaking raw JSON-RPC.
struct Session {
    url: String,
    headers: Vec<(String, String)>,
    next_id: u64,
}

impl Session {
    async fn open(url: &str) -> Session {
        let init = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": { "name": "parity-test", "version": "0" }
            }
        });
        let (status, headers, body) = post_json(url, &[], init.to_string()).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "initialize: {}",
            String::from_utf8_lossy(&body)
        );
        let sid = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("initialize answered with an mcp-session-id")
            .to_owned();
        let session = Session {
            url: url.to_owned(),
            headers: vec![
                ("mcp-session-id".into(), sid),
                ("mcp-protocol-version".into(), PROTOCOL.into()),
            ],
            next_id: 1,
        };
        let (status, _, _) = post_json(
            url,
            &session.header_refs(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "notifications/initialized");
        session
    }

    fn header_refs(&self) -> Vec<(&str, &str)> {
        self.headers
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect()
    }

    /// The `result` of `method`, failing on a JSON-RPC error.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let (status, headers, body) =
            post_json(&self.url, &self.header_refs(), message.to_string()).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(status, StatusCode::OK, "{method}: {text}");
        let is_sse = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let messages: Vec<Value> = if is_sse {
            parse_sse(&body)
                .iter()
                .filter(|e| !e.data.is_empty())
                .map(|e| e.json().expect("SSE data is JSON"))
                .collect()
        } else {
            vec![serde_json::from_slice(&body).expect("JSON body")]
        };
        let reply = messages
            .into_iter()
            .find(|m| m["id"] == json!(id) && m.get("method").is_none())
            .unwrap_or_else(|| panic!("{method}: no response with id {id} in {text}"));
        assert!(reply.get("error").is_none(), "{method}: {reply}");
        reply["result"].clone()
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Keys of `native` that `ours` lacks, as paths under `at`; recursing into every object
/// value when `deep`, otherwise only into `_meta` (which is always compared deeply).
fn missing_keys(native: &Value, ours: &Value, at: &str, deep: bool, out: &mut Vec<String>) {
    let Some(native) = native.as_object() else {
        return;
    };
    let Some(ours_map) = ours.as_object() else {
        out.push(format!(
            "{at} (an object natively, {} through the gateway)",
            kind(ours)
        ));
        return;
    };
    for (key, native_value) in native {
        let path = if at.is_empty() {
            key.clone()
        } else {
            format!("{at}.{key}")
        };
        match ours_map.get(key) {
            None => out.push(path),
            Some(ours_value) => {
                if native_value.is_object() && (deep || key == "_meta") {
                    missing_keys(native_value, ours_value, &path, true, out);
                }
            }
        }
    }
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn demo_tools_and_widget_carry_every_key_a_native_mcp_apps_server_emits() {
    let native_tool = golden("basic-vanillajs-tool.json");
    let native_resource = golden("basic-vanillajs-resource.json");
    let native_read = &native_resource["resources_read"];
    let native_content = &native_read["contents"][0];
    let native_entry = &native_resource["resources_list_entry"];
    assert!(
        native_tool["_meta"]["ui"]["resourceUri"].is_string() && native_content.is_object(),
        "the parity captures look wrong (re-run tests/browser/capture-parity.mjs)"
    );

    let mut config = gw::test_config();
    config.upstreams = vec![gw::demo_stdio("demo")];
    config.overlays = root().join("overlays");
    let gateway = TestGateway::start_with(config).await;
    let mut session = Session::open(&gateway.url()).await;

    let mut missing: Vec<String> = Vec::new();

    // Tools: every demo tool that renders a widget.
    let listed = session.request("tools/list", json!({})).await;
    let tools = listed["tools"].as_array().cloned().unwrap_or_default();
    let ui_tools: Vec<&Value> = tools
        .iter()
        .filter(|t| t["_meta"]["ui"]["resourceUri"].is_string())
        .collect();
    let mut names: Vec<String> = ui_tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["add_task", "complete_task", "show_tasks", "task_table"],
        "every demo tool that renders renders a widget through the gateway, the data tool list_tasks does not (its render tools show_tasks and task_table do): {listed}"
    );
    let named = |name: &str| tools.iter().find(|t| t["name"] == name).cloned();
    let list_tasks = named("list_tasks").expect("list_tasks is listed");
    assert!(
        list_tasks["_meta"]["openai/outputTemplate"].is_null(),
        "the data tool carries no template: {list_tasks}"
    );
    let show_tasks = named("show_tasks").expect("the render tool is listed");
    assert_eq!(
        show_tasks["_meta"]["io.github.mcp-ui-gateway/renderTool"]["dataTools"],
        json!(["list_tasks"])
    );
    let refresh = named("refresh_tasks").expect("the app-only helper is listed");
    assert_eq!(refresh["_meta"]["ui"]["visibility"], json!(["app"]));
    assert_eq!(refresh["_meta"]["openai/visibility"], "private");
    assert_eq!(refresh["_meta"]["openai/widgetAccessible"], true);
    // Tools the model sees say so in `_meta.ui.visibility` alone: ChatGPT
    // deprecated `openai/visibility`, kept only where it hides a tool.
    for tool in &ui_tools {
        assert!(
            tool["_meta"]["ui"]["visibility"][0] == "model"
                && tool["_meta"].get("openai/visibility").is_none(),
            "a model-visible tool carries no openai/visibility: {tool}"
        );
    }
    let mut widget_uris = BTreeSet::new();
    for tool in &ui_tools {
        let mut gaps = Vec::new();
        missing_keys(&native_tool, tool, "", false, &mut gaps);
        missing.extend(
            gaps.into_iter()
                .map(|k| format!("tool {}: {k}", tool["name"])),
        );
        widget_uris.insert(
            tool["_meta"]["ui"]["resourceUri"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(
        widget_uris.len(),
        2,
        "the task-board tools share their widget, and task_table has its built-in one: {widget_uris:?}"
    );
    for uri in widget_uris {
        // The widget's resources/list entry.
        let resources = session.request("resources/list", json!({})).await;
        let entry = resources["resources"]
            .as_array()
            .and_then(|list| list.iter().find(|r| r["uri"] == uri.as_str()))
            .cloned()
            .unwrap_or_else(|| panic!("resources/list lacks the tools' widget {uri}: {resources}"));
        let mut gaps = Vec::new();
        missing_keys(native_entry, &entry, "", false, &mut gaps);
        missing.extend(
            gaps.into_iter()
                .map(|k| format!("resources/list entry: {k}")),
        );

        // The widget's resources/read result and its content item.
        let read = session
            .request("resources/read", json!({ "uri": uri }))
            .await;
        let mut gaps = Vec::new();
        missing_keys(native_read, &read, "", false, &mut gaps);
        missing.extend(
            gaps.into_iter()
                .map(|k| format!("resources/read result: {k}")),
        );
        let contents = read["contents"].as_array().cloned().unwrap_or_default();
        assert_eq!(
            contents.len(),
            1,
            "one content item, as natively: {}",
            keys(&read).into_iter().collect::<Vec<_>>().join(", ")
        );
        let mut gaps = Vec::new();
        missing_keys(native_content, &contents[0], "", false, &mut gaps);
        missing.extend(
            gaps.into_iter()
                .map(|k| format!("resources/read contents[0]: {k}")),
        );

        assert!(
            missing.is_empty(),
            "keys that @modelcontextprotocol/server-basic-vanillajs emits and the demo through \
             the gateway lacks:\n  {}",
            missing.join("\n  ")
        );

        // The values that make it an MCP Apps widget at all (not a comparison with the
        // native values, which name its own widget).
        assert_eq!(contents[0]["uri"], uri.as_str());
        assert_eq!(contents[0]["mimeType"], native_content["mimeType"]);
        assert_eq!(entry["mimeType"], native_entry["mimeType"]);
        assert!(
            contents[0]["text"]
                .as_str()
                .is_some_and(|html| html.contains("<html")),
            "the widget is served as HTML text"
        );
    }
    gateway.shutdown().await;
}

/// The comparison itself: it must notice a missing top-level key, a missing `_meta` key
/// at any depth and a `_meta` object that is not one, and ignore values and extra keys.
#[test]
fn the_key_comparison_finds_what_is_missing() {
    let native = golden("basic-vanillajs-tool.json");
    let mut gaps = Vec::new();
    missing_keys(&native, &native, "", false, &mut gaps);
    assert!(gaps.is_empty(), "{gaps:?}");

    let mut ours = native.clone();
    ours["title"] = json!("other value");
    ours["extra"] = json!(true);
    ours["_meta"]["openai/outputTemplate"] = json!("ui://x/y.html");
    ours.as_object_mut().unwrap().remove("outputSchema");
    ours["_meta"]["ui"]
        .as_object_mut()
        .unwrap()
        .remove("resourceUri");
    ours["inputSchema"]
        .as_object_mut()
        .unwrap()
        .remove("$schema");
    let mut gaps = Vec::new();
    missing_keys(&native, &ours, "", false, &mut gaps);
    assert_eq!(gaps, ["_meta.ui.resourceUri", "outputSchema"]);

    ours["_meta"]["ui"] = json!("not an object");
    let mut gaps = Vec::new();
    missing_keys(&native, &ours, "", false, &mut gaps);
    assert_eq!(
        gaps,
        [
            "_meta.ui (an object natively, string through the gateway)",
            "outputSchema"
        ]
    );
}
