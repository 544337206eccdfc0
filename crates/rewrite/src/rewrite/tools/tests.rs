//! Table-driven tests of the `tools/list` rewrite, one rule per test.
//!
//! - `file_params`: which file parameters are declared (`openai/fileParams`).

use serde_json::json;

use super::*;
use mcp_ui_overlay::overlay::{Annotations, Audience, SecurityScheme, Widget, WidgetManifest};

mod file_params;

fn clock() -> Widget {
    Widget::compile("clock", &WidgetManifest::default(), "<p>clock</p>".into())
}

fn widgets() -> Widgets {
    Widgets::new([clock()])
}

fn mount(tools: &[(&str, ToolOverlay)]) -> MountOverlays {
    MountOverlays::new(tools.iter().map(|(name, t)| (name.to_string(), t.clone())))
}

fn with_widget() -> ToolOverlay {
    ToolOverlay {
        widget: Some("clock".into()),
        ..ToolOverlay::default()
    }
}

/// Rewrites a one-tool list and returns the tool.
fn rewrite_one(tool: Value, overlay: ToolOverlay) -> (Value, Vec<Warning>) {
    let name = tool["name"].as_str().unwrap().to_owned();
    let mut result = json!({ "tools": [tool] });
    let warnings = tools_list(&mut result, &mount(&[(&name, overlay)]), &widgets());
    (result["tools"][0].clone(), warnings)
}

#[test]
fn a_widget_sets_all_three_uri_keys_and_explicit_visibility() {
    let (tool, warnings) = rewrite_one(
        json!({ "name": "t", "inputSchema": { "type": "object" } }),
        with_widget(),
    );
    assert!(warnings.is_empty());
    let uri = clock().uri;
    assert_eq!(
        tool.to_string(),
        json!({
            "name": "t",
            "inputSchema": { "type": "object" },
            "_meta": {
                "ui": { "resourceUri": uri, "visibility": ["model", "app"] },
                "ui/resourceUri": uri,
                "openai/outputTemplate": uri,
                "openai/widgetAccessible": true
            }
        })
        .to_string()
    );
}

#[test]
fn visibility_mapping() {
    use Audience::{App, Model};
    // ChatGPT's deprecated `openai/visibility` only where it hides a tool
    // from the model; absent wherever the model sees the tool.
    let cases: [(Vec<Audience>, Value, Value, bool); 4] = [
        (vec![Model, App], json!(["model", "app"]), Value::Null, true),
        (vec![App], json!(["app"]), json!("private"), true),
        (vec![Model], json!(["model"]), Value::Null, false),
        (vec![App, Model], json!(["model", "app"]), Value::Null, true),
    ];
    for (visibility, ui, openai, accessible) in cases {
        for widget in [None, Some("clock".to_owned())] {
            let overlay = ToolOverlay {
                widget: widget.clone(),
                visibility: Some(visibility.clone()),
                ..ToolOverlay::default()
            };
            let (tool, _) = rewrite_one(json!({ "name": "t" }), overlay);
            let meta = &tool["_meta"];
            assert_eq!(
                meta["ui"]["visibility"], ui,
                "{visibility:?} widget {widget:?}"
            );
            assert_eq!(meta["openai/visibility"], openai, "{visibility:?}");
            assert_eq!(
                meta["openai/widgetAccessible"], accessible,
                "{visibility:?}"
            );
        }
    }
}

#[test]
fn an_upstream_visibility_is_kept_and_mirrored_unless_overridden() {
    let native = json!({ "name": "t", "_meta": { "ui": { "visibility": ["app"], "x": 1 } } });
    let (tool, _) = rewrite_one(native.clone(), with_widget());
    assert_eq!(tool["_meta"]["ui"]["visibility"], json!(["app"]));
    assert_eq!(tool["_meta"]["ui"]["x"], 1);
    assert_eq!(tool["_meta"]["openai/visibility"], "private");
    let overlay = ToolOverlay {
        visibility: Some(vec![Audience::Model]),
        ..with_widget()
    };
    let (tool, _) = rewrite_one(native, overlay);
    assert_eq!(tool["_meta"]["ui"]["visibility"], json!(["model"]));
    assert_eq!(tool["_meta"]["openai/widgetAccessible"], false);
}

/// `_meta.ui.visibility` is the one written form: ChatGPT deprecated
/// `openai/visibility` (plugin UI changelog, July 2026) and reads
/// `ui.visibility`, so the alias stays only as `"private"` on a tool hidden
/// from the model, and an upstream's alias on a tool the model sees goes
/// (its `"private"` would hide the tool from ChatGPT's model against
/// `ui.visibility`).
#[test]
fn openai_visibility_is_written_only_to_hide_a_tool_from_the_model() {
    for upstream in ["private", "public"] {
        let native = json!({ "name": "t", "_meta": { "openai/visibility": upstream } });
        let (tool, _) = rewrite_one(native, with_widget());
        assert_eq!(tool["_meta"]["ui"]["visibility"], json!(["model", "app"]));
        assert_eq!(
            tool["_meta"].get("openai/visibility"),
            None,
            "{upstream}: {tool}"
        );
        let app_only = ToolOverlay {
            visibility: Some(vec![Audience::App]),
            ..ToolOverlay::default()
        };
        let native = json!({ "name": "t", "_meta": { "openai/visibility": upstream } });
        let (tool, _) = rewrite_one(native, app_only);
        assert_eq!(
            tool["_meta"]["openai/visibility"], "private",
            "{upstream}: {tool}"
        );
    }
    // A tool without an overlay keeps whatever its upstream wrote.
    let mut result =
        json!({ "tools": [{ "name": "other", "_meta": { "openai/visibility": "public" } }] });
    tools_list(&mut result, &mount(&[("t", with_widget())]), &widgets());
    assert_eq!(result["tools"][0]["_meta"]["openai/visibility"], "public");
}

#[test]
fn a_tool_a_builtin_widget_calls_becomes_callable_from_widgets() {
    let callable = ToolOverlay {
        app_callable: true,
        ..ToolOverlay::default()
    };
    // The upstream kept widgets out: "app" is added, and ChatGPT's alias follows.
    let model_only = json!({ "name": "t", "_meta": { "ui": { "visibility": ["model"] } } });
    let (tool, _) = rewrite_one(model_only, callable.clone());
    assert_eq!(tool["_meta"]["ui"]["visibility"], json!(["model", "app"]));
    assert_eq!(tool["_meta"]["openai/widgetAccessible"], true);
    assert_eq!(tool["_meta"].get("openai/visibility"), None);
    // Nothing declared: MCP's default, written out for ChatGPT.
    let (tool, _) = rewrite_one(json!({ "name": "t" }), callable.clone());
    assert_eq!(tool["_meta"]["openai/widgetAccessible"], true);
    // An app-only tool stays hidden from the model.
    let app_only = json!({ "name": "t", "_meta": { "ui": { "visibility": ["app"] } } });
    let (tool, _) = rewrite_one(app_only, callable);
    assert_eq!(tool["_meta"]["ui"]["visibility"], json!(["app"]));
    assert_eq!(tool["_meta"]["openai/visibility"], "private");
}

#[test]
fn existing_keys_keep_their_order_and_unknown_fields_stay() {
    let upstream = json!({
        "name": "t",
        "title": "Old",
        "description": "Old description",
        "inputSchema": { "type": "object", "$defs": {}, "x-custom": true },
        "annotations": { "title": "Ann", "readOnlyHint": false },
        "execution": { "taskSupport": "forbidden" },
        "icons": [{ "src": "data:," }],
        "_meta": { "vendor/key": 1, "openai/outputTemplate": "ui://old/x.html", "securitySchemes": [] },
        "x-unknown": { "kept": true }
    });
    let overlay = ToolOverlay {
        title: Some("New".into()),
        annotations: Some(Annotations {
            read_only_hint: Some(true),
            open_world_hint: Some(false),
            ..Annotations::default()
        }),
        security_schemes: Some(vec![SecurityScheme::Noauth {}]),
        ..with_widget()
    };
    let (tool, _) = rewrite_one(upstream, overlay);
    let keys: Vec<&String> = tool.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "name",
            "title",
            "description",
            "inputSchema",
            "annotations",
            "execution",
            "icons",
            "_meta",
            "x-unknown",
            "securitySchemes"
        ]
    );
    assert_eq!(tool["title"], "New");
    assert_eq!(tool["description"], "Old description");
    assert_eq!(
        tool["annotations"],
        json!({ "title": "Ann", "readOnlyHint": true, "openWorldHint": false })
    );
    assert_eq!(
        tool["inputSchema"],
        json!({ "type": "object", "$defs": {}, "x-custom": true })
    );
    let meta_keys: Vec<&String> = tool["_meta"].as_object().unwrap().keys().collect();
    assert_eq!(
        meta_keys,
        [
            "vendor/key",
            "openai/outputTemplate",
            "securitySchemes",
            "ui",
            "ui/resourceUri",
            "openai/widgetAccessible"
        ]
    );
    assert_eq!(tool["_meta"]["openai/outputTemplate"], json!(clock().uri));
    assert_eq!(
        tool["_meta"]["securitySchemes"],
        json!([{ "type": "noauth" }])
    );
    assert_eq!(tool["securitySchemes"], json!([{ "type": "noauth" }]));
}

#[test]
fn cursors_unknown_result_fields_and_other_tools_are_untouched() {
    let original = json!({
        "tools": [
            { "name": "a", "inputSchema": { "type": "object" }, "_meta": { "z": 1, "a": 2 } },
            { "name": "b", "inputSchema": { "type": "object" } },
            { "no-name": true },
            "not even an object"
        ],
        "nextCursor": "b3BhcXVl",
        "x-result-extra": [1, 2],
        "_meta": { "page": 1 }
    });
    let mut result = original.clone();
    let warnings = tools_list(&mut result, &mount(&[("b", with_widget())]), &widgets());
    assert!(warnings.is_empty());
    assert_eq!(result["nextCursor"], "b3BhcXVl");
    assert_eq!(result["x-result-extra"], original["x-result-extra"]);
    assert_eq!(result["_meta"], original["_meta"]);
    for i in [0, 2, 3] {
        // Byte for byte, key order included.
        assert_eq!(
            result["tools"][i].to_string(),
            original["tools"][i].to_string()
        );
    }
    assert!(result["tools"][1]["_meta"]["ui"]["resourceUri"].is_string());

    let mut untouched = original.clone();
    tools_list(&mut untouched, &MountOverlays::default(), &widgets());
    assert_eq!(untouched.to_string(), original.to_string());
}

#[test]
fn status_texts_profile_output_schema_and_description() {
    let overlay = ToolOverlay {
        description: Some("Shows the time".into()),
        invoking: Some("Reading the clock…".into()),
        invoked: Some("Time read".into()),
        profile: Some(true),
        output_schema: json!({ "type": "object" }).as_object().cloned(),
        security_schemes: Some(vec![SecurityScheme::Oauth2 {
            scopes: vec!["time.read".into()],
        }]),
        ..ToolOverlay::default()
    };
    let (tool, _) = rewrite_one(
        json!({ "name": "t", "outputSchema": { "type": "object", "old": 1 } }),
        overlay,
    );
    assert_eq!(
        tool.to_string(),
        json!({
            "name": "t",
            "outputSchema": { "type": "object" },
            "description": "Shows the time",
            "securitySchemes": [{ "type": "oauth2", "scopes": ["time.read"] }],
            "_meta": {
                "openai/toolInvocation/invoking": "Reading the clock…",
                "openai/toolInvocation/invoked": "Time read",
                "openai/profile": true,
                "securitySchemes": [{ "type": "oauth2", "scopes": ["time.read"] }]
            }
        })
        .to_string()
    );
    let unmark = ToolOverlay {
        profile: Some(false),
        ..ToolOverlay::default()
    };
    let (tool, _) = rewrite_one(
        json!({ "name": "t", "_meta": { "openai/profile": true, "k": 1 } }),
        unmark,
    );
    assert_eq!(tool["_meta"], json!({ "k": 1 }));
}

#[test]
fn a_missing_widget_is_a_warning_not_a_broken_tool() {
    let overlay = ToolOverlay {
        widget: Some("gone".into()),
        ..ToolOverlay::default()
    };
    let (tool, warnings) = rewrite_one(json!({ "name": "t" }), overlay);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].reason.contains("`gone`"));
    assert!(tool["_meta"].get("openai/outputTemplate").is_none());
    assert_eq!(tool["_meta"]["openai/widgetAccessible"], true);
}

#[test]
fn widget_only_keys_required_by_the_upstream_output_schema_are_flagged() {
    let overlay = ToolOverlay {
        result: mcp_ui_overlay::overlay::ResultShaping {
            structured_from_text: false,
            widget_only: vec!["raw".into()],
        },
        ..ToolOverlay::default()
    };
    let upstream =
        json!({ "name": "t", "outputSchema": { "type": "object", "required": ["raw"] } });
    let (tool, warnings) = rewrite_one(upstream.clone(), overlay.clone());
    assert_eq!(tool, upstream, "nothing else to change");
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].reason.contains("`raw`"), "{}", warnings[0]);
    let fixed = ToolOverlay {
        output_schema: json!({ "type": "object" }).as_object().cloned(),
        ..overlay
    };
    assert!(rewrite_one(upstream, fixed).1.is_empty());
}

#[test]
fn the_python_sdk_wrapper_schema_goes_when_results_are_shaped_from_text() {
    let wrapper = json!({
        "properties": { "result": { "title": "Result", "type": "string" } },
        "required": ["result"],
        "type": "object",
        "title": "list_tasksOutput"
    });
    let upstream = json!({
        "name": "list_tasks",
        "inputSchema": { "type": "object" },
        "outputSchema": wrapper
    });
    let shaped = ToolOverlay {
        result: mcp_ui_overlay::overlay::ResultShaping {
            structured_from_text: true,
            widget_only: vec![],
        },
        ..ToolOverlay::default()
    };
    let (tool, warnings) = rewrite_one(upstream.clone(), shaped.clone());
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(tool.get("outputSchema").is_none(), "{tool}");
    assert_eq!(tool["inputSchema"], upstream["inputSchema"]);
    // The page rewrite, in the text, gives the same.
    let page = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{upstream}]}}}}"#);
    let m = mount(&[("list_tasks", shaped.clone())]);
    let text = page::tools_list_page(page.as_bytes(), &m, &widgets(), &|_: &str| false)
        .unwrap()
        .text
        .unwrap();
    let listed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(listed["result"]["tools"][0], tool);
    // The overlay's own schema wins; a schema that is not the wrapper stays;
    // without shaping the wrapper stays.
    let own = ToolOverlay {
        output_schema: json!({ "type": "object" }).as_object().cloned(),
        ..shaped.clone()
    };
    assert_eq!(
        rewrite_one(upstream.clone(), own).0["outputSchema"],
        json!({ "type": "object" })
    );
    let real = json!({ "name": "t", "outputSchema": { "type": "object", "required": ["n"] } });
    assert_eq!(rewrite_one(real.clone(), shaped).0, real);
    assert_eq!(
        rewrite_one(upstream.clone(), ToolOverlay::default()).0["outputSchema"],
        wrapper
    );
}

#[test]
fn meta_is_merged_last_and_overriding_a_gateway_key_warns() {
    let overlay = ToolOverlay {
        invoking: Some("Working…".into()),
        meta: json!({
            "vendor/new": { "x": 1 },
            "kept": "overlay's",
            "openai/toolInvocation/invoking": "Mine…"
        })
        .as_object()
        .cloned(),
        ..with_widget()
    };
    let upstream = json!({ "name": "t", "_meta": { "kept": "upstream's", "other": true } });
    let (tool, warnings) = rewrite_one(upstream, overlay.clone());
    let meta = &tool["_meta"];
    assert_eq!(meta["vendor/new"], json!({ "x": 1 }));
    assert_eq!(
        meta["kept"], "overlay's",
        "an upstream key is replaced silently"
    );
    assert_eq!(meta["other"], true);
    assert_eq!(meta["openai/toolInvocation/invoking"], "Mine…");
    assert!(meta["ui"]["resourceUri"].is_string());
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .reason
            .contains("_meta[\"openai/toolInvocation/invoking\"], which the gateway writes"),
        "{}",
        warnings[0]
    );
    // A tool without `_meta` (the memoised bare rewrite) gets it too.
    let (bare, warnings) = rewrite_one(json!({ "name": "t" }), overlay);
    assert_eq!(bare["_meta"]["vendor/new"], json!({ "x": 1 }));
    assert_eq!(warnings.len(), 1);
}
