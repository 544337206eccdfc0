//! Gateway-owned render tools (`[render.<name>]`), the render half of the
//! decoupled data/render pattern: their `tools/list` entries, added beside
//! the upstream's tools, and the answer to their calls, which never reach
//! the upstream. Pure, like every rewrite.
//!
//! Names never collide: when the upstream has a tool of a render tool's
//! name, the upstream's tool wins; the render tool is left out of the
//! listing with a [`Warning`] and the caller routes its calls upstream.

use serde_json::{Map, Value, json};

use super::object::object_at;
use super::schema;
use super::warning::Warning;
use mcp_ui_overlay::overlay::{MountOverlays, RENDER_TOOL_META, RenderTool, Widgets, merge_meta};

/// Adds the mount's render tools to a `tools/list` result, on the last page
/// only (the one without `nextCursor`), after the upstream's tools.
/// `upstream_has` says whether the upstream listed a tool of that name on an
/// earlier page; this page's names are checked here.
pub fn add_render_tools(
    result: &mut Value,
    mount: &MountOverlays,
    widgets: &Widgets,
    upstream_has: &dyn Fn(&str) -> bool,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if result.get("nextCursor").is_some_and(|c| !c.is_null()) {
        return warnings;
    }
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return warnings;
    };
    let on_page: Vec<String> = tools
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    for (name, render) in mount.render_tools() {
        if on_page.iter().any(|n| n == name) || upstream_has(name) {
            warnings.push(collision(name));
            continue;
        }
        match descriptor(name, render, mount, widgets) {
            Ok((tool, overridden)) => {
                tools.push(tool);
                warnings.extend(overridden);
            }
            Err(warning) => warnings.push(warning),
        }
    }
    warnings
}

/// The warning for a render tool an upstream tool shadows.
pub fn collision(name: &str) -> Warning {
    Warning::new(
        name,
        format!(
            "the upstream now has a tool named `{name}`: it wins, and the render tool `[render.{name}]` is left out of tools/list and its calls go upstream until the overlay renames it"
        ),
    )
}

/// The `tools/list` entry of render tool `name`, and a warning for each key
/// of its `meta` that replaced one the gateway writes.
pub fn descriptor(
    name: &str,
    render: &RenderTool,
    mount: &MountOverlays,
    widgets: &Widgets,
) -> Result<(Value, Vec<Warning>), Warning> {
    let uri = widget_uri(name, render, widgets)?;
    let input = mount
        .render_input_schema(render)
        .cloned()
        .unwrap_or_else(|| json!({ "type": "object" }).as_object().unwrap().clone());
    let output = render
        .output_schema
        .clone()
        .unwrap_or_else(|| input.clone());
    let mut tool = Map::new();
    tool.insert("name".into(), json!(name));
    if let Some(title) = &render.title {
        tool.insert("title".into(), json!(title));
    }
    let description = render
        .description
        .clone()
        .unwrap_or_else(|| default_description(render));
    tool.insert("description".into(), json!(description));
    tool.insert("inputSchema".into(), Value::Object(input));
    tool.insert("outputSchema".into(), Value::Object(output));
    let annotations = object_at(&mut tool, "annotations");
    for (key, value) in [
        ("readOnlyHint", true),
        ("destructiveHint", false),
        ("openWorldHint", false),
        ("idempotentHint", true),
    ] {
        annotations.insert(key.into(), json!(value));
    }
    if let Some(hints) = &render.annotations {
        for (key, value) in hints.entries() {
            annotations.insert(key.into(), json!(value));
        }
    }
    let meta = object_at(&mut tool, "_meta");
    template_meta(meta, &uri);
    // Model and app; `ui.visibility` alone says so (see
    // `tools::set_visibility` on ChatGPT's deprecated `openai/visibility`).
    object_at(meta, "ui").insert("visibility".into(), json!(["model", "app"]));
    meta.insert("openai/widgetAccessible".into(), json!(true));
    if let Some(text) = &render.invoking {
        meta.insert("openai/toolInvocation/invoking".into(), json!(text));
    }
    if let Some(text) = &render.invoked {
        meta.insert("openai/toolInvocation/invoked".into(), json!(text));
    }
    meta.insert(
        RENDER_TOOL_META.into(),
        json!({ "dataTools": render.data_tools, "widget": render.widget }),
    );
    let mut warnings = Vec::new();
    if let Some(extra) = &render.meta {
        // Everything in a render tool's `_meta` is the gateway's.
        for key in merge_meta(meta, extra, |_, _| true) {
            warnings.push(Warning::new(
                name,
                format!("meta sets _meta[\"{key}\"], which the gateway writes itself; the meta value is used"),
            ));
        }
    }
    Ok((Value::Object(tool), warnings))
}

/// The result of calling render tool `name` with `arguments`: them as
/// `structuredContent`, a short text summary and the widget template in
/// `_meta`; or, when they break the input schema, a tool execution error
/// (`isError: true`, MCP 2025-11-25) naming the failing place.
pub fn call_result(
    name: &str,
    render: &RenderTool,
    mount: &MountOverlays,
    widgets: &Widgets,
    arguments: Option<&Value>,
) -> Value {
    let arguments = match arguments {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(a) => a.clone(),
    };
    let error =
        |text: String| json!({ "content": [{ "type": "text", "text": text }], "isError": true });
    if !arguments.is_object() {
        return error(format!(
            "Invalid arguments for `{name}`: expected an object"
        ));
    }
    if let Some(schema) = mount.render_input_schema(render)
        && let Err(why) = schema::validate(&Value::Object(schema.clone()), &arguments)
    {
        let first = render.data_tools.first().map(String::as_str).unwrap_or("");
        return error(format!(
            "Invalid arguments for `{name}` at {why}. Pass the structuredContent of `{first}` unchanged."
        ));
    }
    let uri = match widget_uri(name, render, widgets) {
        Ok(uri) => uri,
        Err(warning) => return error(format!("Cannot render: {}", warning.reason)),
    };
    let mut meta = Map::new();
    template_meta(&mut meta, &uri);
    json!({
        "content": [{ "type": "text", "text": summary(render, &arguments) }],
        "structuredContent": arguments,
        "_meta": meta,
    })
}

fn widget_uri(name: &str, render: &RenderTool, widgets: &Widgets) -> Result<String, Warning> {
    match widgets.get(&render.widget) {
        Some(widget) => Ok(widget.uri.clone()),
        None => Err(Warning::new(
            name,
            format!("widget `{}` is not loaded", render.widget),
        )),
    }
}

/// `ui.resourceUri` and its two aliases, all naming `uri`.
fn template_meta(meta: &mut Map<String, Value>, uri: &str) {
    object_at(meta, "ui").insert("resourceUri".into(), json!(uri));
    meta.insert("ui/resourceUri".into(), json!(uri));
    meta.insert("openai/outputTemplate".into(), json!(uri));
}

fn default_description(render: &RenderTool) -> String {
    let quoted: Vec<String> = render.data_tools.iter().map(|t| format!("`{t}`")).collect();
    let first = quoted.first().cloned().unwrap_or_default();
    let from = match quoted.len() {
        0 | 1 => first.clone(),
        _ => quoted.join(" or "),
    };
    format!(
        "Shows data in the `{}` widget. Call {from} first, then pass its structuredContent here unchanged; call this once, after any filtering, not after every data call.",
        render.widget
    )
}

/// One line for the model: which widget shows what (the size of each
/// top-level list, the names of the other keys).
fn summary(render: &RenderTool, arguments: &Value) -> String {
    let parts: Vec<String> = arguments
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| match value {
            Value::Array(items) if items.len() == 1 => format!("{key}: 1 item"),
            Value::Array(items) => format!("{key}: {} items", items.len()),
            _ => key.clone(),
        })
        .collect();
    if parts.is_empty() {
        format!("Shown in the `{}` widget.", render.widget)
    } else {
        format!(
            "Shown in the `{}` widget ({}).",
            render.widget,
            parts.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_ui_overlay::overlay::{Annotations, ToolOverlay, Widget};

    fn setup() -> (MountOverlays, Widgets) {
        let schema = json!({
            "type": "object",
            "required": ["tasks"],
            "properties": {"tasks": {"type": "array", "items": {
                "type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}
            }}}
        });
        let data = ToolOverlay {
            output_schema: schema.as_object().cloned(),
            ..Default::default()
        };
        let render = RenderTool {
            widget: "board".into(),
            data_tools: vec!["list".into()],
            title: Some("Show tasks".into()),
            invoking: Some("Drawing…".into()),
            ..Default::default()
        };
        let mount = MountOverlays::new([("list".to_owned(), data)])
            .with_render([("show".to_owned(), render)]);
        let widget = Widget::compile("board", &Default::default(), "<p>x</p>".into());
        (mount, Widgets::new([widget]))
    }

    fn call(args: Value) -> Value {
        let (mount, widgets) = setup();
        let render = mount.render_tool("show").unwrap().clone();
        call_result("show", &render, &mount, &widgets, Some(&args))
    }

    #[test]
    fn a_valid_call_echoes_its_arguments_with_the_template() {
        let (_, widgets) = setup();
        let uri = widgets.get("board").unwrap().uri.clone();
        let args = json!({"tasks": [{"id": 1}, {"id": 2}]});
        let result = call(args.clone());
        assert_eq!(result["structuredContent"], args);
        assert_eq!(result["_meta"]["ui"]["resourceUri"], json!(uri));
        assert_eq!(result["_meta"]["openai/outputTemplate"], json!(uri));
        assert_eq!(
            result["content"][0]["text"],
            "Shown in the `board` widget (tasks: 2 items)."
        );
        assert!(result.get("isError").is_none());
    }

    #[test]
    fn invalid_arguments_are_tool_errors_naming_the_place() {
        let result = call(json!({"tasks": [{"id": "one"}]}));
        assert_eq!(result["isError"], true);
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("/tasks/0/id"), "{text}");
        assert!(text.contains("`list`"), "{text}");
        assert!(result.get("structuredContent").is_none());
        assert!(result.get("_meta").is_none());

        let missing = call(json!({}));
        assert_eq!(missing["isError"], true);
        assert!(
            missing["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("tasks")
        );
        assert_eq!(call(json!([1]))["isError"], true);
        let (mount, widgets) = setup();
        let render = mount.render_tool("show").unwrap();
        let none = call_result("show", render, &mount, &widgets, None);
        assert_eq!(none["isError"], true);
    }

    #[test]
    fn the_listing_gains_marked_render_tools_on_the_last_page() {
        let (mount, widgets) = setup();
        let mut result = json!({"tools": [{"name": "list", "inputSchema": {"type": "object"}}]});
        let warnings = add_render_tools(&mut result, &mount, &widgets, &|_| false);
        assert!(warnings.is_empty());
        let tool = &result["tools"][1];
        assert_eq!(tool["name"], "show");
        assert_eq!(tool["title"], "Show tasks");
        assert_eq!(tool["inputSchema"]["required"], json!(["tasks"]));
        assert_eq!(tool["outputSchema"], tool["inputSchema"]);
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
        assert_eq!(
            tool["_meta"][RENDER_TOOL_META]["dataTools"],
            json!(["list"])
        );
        assert_eq!(tool["_meta"]["openai/toolInvocation/invoking"], "Drawing…");
        assert!(tool["_meta"]["ui"]["resourceUri"].is_string());
        // Model and app: `ui.visibility` alone says so (ChatGPT's deprecated
        // `openai/visibility` is written only to hide a tool from the model).
        assert_eq!(tool["_meta"]["ui"]["visibility"], json!(["model", "app"]));
        assert_eq!(tool["_meta"].get("openai/visibility"), None);
        assert_eq!(tool["_meta"]["openai/widgetAccessible"], true);
        assert!(
            tool["description"]
                .as_str()
                .unwrap()
                .contains("`list` first")
        );
        // The data tool is not given a template here.
        assert!(result["tools"][0].get("_meta").is_none());

        let mut paged = json!({"tools": [], "nextCursor": "2"});
        add_render_tools(&mut paged, &mount, &widgets, &|_| false);
        assert_eq!(paged["tools"], json!([]));
    }

    #[test]
    fn annotations_merge_over_the_defaults() {
        let (mount, widgets) = setup();
        let mut render = mount.render_tool("show").unwrap().clone();
        render.annotations = Some(Annotations {
            idempotent_hint: Some(false),
            ..Default::default()
        });
        let (tool, _) = descriptor("show", &render, &mount, &widgets).unwrap();
        assert_eq!(tool["annotations"]["idempotentHint"], false);
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
    }

    #[test]
    fn meta_is_merged_into_the_render_tool_with_a_warning_per_gateway_key() {
        let (mount, widgets) = setup();
        let mut render = mount.render_tool("show").unwrap().clone();
        render.meta = json!({ "vendor/x": 1, "openai/widgetAccessible": false })
            .as_object()
            .cloned();
        let (tool, warnings) = descriptor("show", &render, &mount, &widgets).unwrap();
        assert_eq!(tool["_meta"]["vendor/x"], 1);
        assert_eq!(tool["_meta"]["openai/widgetAccessible"], false);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].reason.contains("openai/widgetAccessible"));
    }

    #[test]
    fn an_upstream_tool_of_the_same_name_wins() {
        let (mount, widgets) = setup();
        let mut result = json!({"tools": [{"name": "show", "inputSchema": {}}]});
        let warnings = add_render_tools(&mut result, &mount, &widgets, &|_| false);
        assert_eq!(
            result["tools"],
            json!([{"name": "show", "inputSchema": {}}])
        );
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].reason.contains("wins"));
        // Or listed on an earlier page.
        let mut last = json!({"tools": []});
        let warnings = add_render_tools(&mut last, &mount, &widgets, &|n| n == "show");
        assert_eq!(last["tools"], json!([]));
        assert_eq!(warnings.len(), 1);
    }
}
