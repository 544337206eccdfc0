use super::table::{humanize, toml_string, widget_name};
use super::*;
use mcp_ui_overlay::overlay::{ToolOverlay, validate};
use serde_json::json;

#[test]
fn keys_and_strings() {
    assert_eq!(toml_key("list_tasks"), "list_tasks");
    assert_eq!(toml_key("github.search"), "\"github.search\"");
    assert_eq!(toml_key(""), "\"\"");
    assert_eq!(toml_string("a\"b\\c\nd\u{7}"), r#""a\"b\\c\nd\u0007""#);
    assert_eq!(widget_name("Get Weather!"), "get-weather-");
    assert_eq!(widget_name("_x"), "w_x");
    assert!(validate::widget_name(&widget_name(&"é".repeat(80))).is_ok());
    assert_eq!(humanize("list_tasks"), "List tasks");
}

/// The example's overlay directory carries the editor schemas its
/// `#:schema` lines point at, so they resolve wherever it is copied:
/// they must be the gateway's own.
#[test]
fn the_example_carries_the_editor_schemas() {
    let copies = [
        include_str!("../../../examples/time/overlays/schema/overlay.schema.json"),
        include_str!("../../../examples/time/overlays/schema/widget.schema.json"),
    ];
    for ((name, schema), copy) in SCHEMAS.iter().zip(copies) {
        assert_eq!(
            *schema, copy,
            "examples/time/overlays/schema/{name} differs from overlays/schema/{name}"
        );
    }
}

#[test]
fn a_tool_with_its_own_widget_keeps_it() {
    let listing = Listing {
        server_info: None,
        protocol_version: probe::PROTOCOL_VERSION.into(),
        tools: vec![
            json!({"name": "show_map", "_meta": {"ui": {
                "resourceUri": "ui://maps/view.html", "visibility": ["app"]}}}),
            json!({"name": "chart", "_meta": {"openai/outputTemplate": "ui://charts/c.html"}}),
            json!({"name": "plain"}),
        ],
    };
    let (text, stubs) = stub("srv", &listing, &BTreeMap::new());
    assert_eq!(stubs, 3);
    let table = |tool: &str| {
        let start = text.find(&format!("[tools.{tool}]")).unwrap();
        let end = text[start + 1..]
            .find("\n[")
            .map_or(text.len(), |e| start + 1 + e);
        text[start..end].to_owned()
    };
    let map = table("show_map");
    assert!(!map.contains("# widget ="), "{map}");
    assert!(
        map.contains("# The server's own widget, kept: _meta.ui.resourceUri = \"ui://maps/view.html\"; a `widget` here would replace it.\n"),
        "{map}"
    );
    assert!(map.contains("# visibility = [\"app\"]\n"), "{map}");
    let chart = table("chart");
    assert!(!chart.contains("# widget ="), "{chart}");
    assert!(
        chart.contains("kept: _meta[\"openai/outputTemplate\"] = \"ui://charts/c.html\""),
        "{chart}"
    );
    let plain = table("plain");
    assert!(plain.contains("# widget = \"plain\"\n"), "{plain}");
    assert!(
        plain.contains("# visibility = [\"model\", \"app\"]\n"),
        "{plain}"
    );
    toml::from_str::<toml::Table>(&text).unwrap();
}

/// A listing of every kind of tool a stub is written for, and the stub
/// (with `taken` overlaid in another file): its text and its count of
/// tool stubs.
fn sample_stub() -> (Listing, String, usize) {
    let listing = Listing {
        server_info: Some(json!({"name": "srv", "version": "2"})),
        protocol_version: probe::PROTOCOL_VERSION.into(),
        tools: vec![
            json!({"name": "plain", "description": "Does it.\nSecond line.\n\nMore."}),
            json!({"name": "odd.name \"q\"", "outputSchema": {"type": "object"}}),
            json!({"name": "upload", "inputSchema": {"type": "object", "properties": {"file": {
                "type": "object",
                "properties": {"download_url": {"type": "string"}, "file_id": {"type": "string"},
                               "mime_type": {"type": "string"}, "file_name": {"type": "string"}},
                "required": ["download_url", "file_id"]}}}}),
            json!({"name": "plain"}),
            json!({"name": "taken"}),
            json!({"name": "tasks", "outputSchema": {"type": "object", "properties": {
                "tasks": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}},
                "count": {"type": "integer"}}}}),
            json!({"name": "task", "outputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}}}),
        ],
    };
    let mut listing = listing;
    // server-memory's read_graph: two arrays of records.
    let record = |key: &str| json!({"type": "array", "items": {"type": "object", "properties": {key: {"type": "string"}}}});
    listing.tools.push(
        json!({"name": "read_graph", "outputSchema": {"type": "object", "properties": {
        "entities": record("name"), "relations": record("from")}}}),
    );
    let elsewhere = BTreeMap::from([("taken", Path::new("overlays/other.toml"))]);
    let (text, stubs) = stub("srv", &listing, &elsewhere);
    (listing, text, stubs)
}

#[test]
fn the_stub_parses_and_changes_nothing() {
    let (_, text, stubs) = sample_stub();
    assert_eq!(stubs, 6);
    assert!(
        text.contains("[tools.read_graph]\n# (no description)\n# widget = \"read_graph\"\n# or, with no HTML to write: widget = \"builtin:table\" with the view below (a table of `entities`; or `/relations`; options in [tools.<name>.view])\n# view = { data = \"/entities\" }\n"),
        "{text}"
    );
    assert!(
        text.contains("[tools.tasks]\n# (no description)\n# widget = \"tasks\"\n# or, with no HTML to write: widget = \"builtin:table\" (a table of `tasks`;"),
        "{text}"
    );
    assert!(
        text.contains("# or, with no HTML to write: widget = \"builtin:kv\""),
        "{text}"
    );
    assert_eq!(
        text.matches("builtin:").count(),
        3,
        "only records get one: {text}"
    );
    assert!(text.starts_with("#:schema ./schema/overlay.schema.json\n"));
    assert!(text.contains("[tools.\"odd.name \\\"q\\\"\"]\n"), "{text}");
    assert!(text.contains("# Does it. Second line.\n"), "{text}");
    assert!(text.contains("# file_params = [\"file\"]\n"), "{text}");
    assert!(
        text.contains("# taken: overlaid in overlays/other.toml\n"),
        "{text}"
    );
    let parsed: toml::Table = toml::from_str(&text).unwrap();
    let tools = parsed["tools"].as_table().unwrap();
    assert_eq!(tools.len(), 6);
    for (_, table) in tools {
        let overlay: ToolOverlay = table.clone().try_into().unwrap();
        assert_eq!(overlay, ToolOverlay::default());
    }
}

#[test]
fn every_suggestion_uncommented_is_a_valid_overlay() {
    let (listing, text, _) = sample_stub();
    // Uncommented, every suggestion is a valid overlay.
    let uncommented = text
        .replace("\n# widget", "\nwidget")
        .replace("\n# title", "\ntitle");
    let uncommented = [
        "visibility",
        "invoking",
        "invoked",
        "annotations",
        "file_params",
        "result",
    ]
    .iter()
    .fold(uncommented, |t, k| {
        t.replace(&format!("\n# {k} ="), &format!("\n{k} ="))
    });
    let parsed: toml::Table = toml::from_str(&uncommented).unwrap();
    // The built-in proposal, taken instead of the folder, is valid too.
    let builtin_taken = text.replace(
        "\n# or, with no HTML to write: widget = \"builtin:table\"",
        "\nwidget = \"builtin:table\" #",
    );
    let taken: toml::Table = toml::from_str(&builtin_taken).unwrap();
    let tasks: ToolOverlay = taken["tools"]["tasks"].clone().try_into().unwrap();
    assert_eq!(tasks.widget.as_deref(), Some("builtin:table"));
    assert!(validate::tool(&tasks, &|_| false).is_empty(), "{tasks:?}");
    // With two arrays, the table and its view, taken, are valid against
    // the tool's own schema (before: `builtin:kv` was proposed).
    let graph_taken = text
        .replace(
            "\n# or, with no HTML to write: widget = \"builtin:table\" with",
            "\nwidget = \"builtin:table\" # with",
        )
        .replace("\n# view = {", "\nview = {");
    let taken: toml::Table = toml::from_str(&graph_taken).unwrap();
    let mut graph: ToolOverlay = taken["tools"]["read_graph"].clone().try_into().unwrap();
    assert_eq!(graph.widget.as_deref(), Some("builtin:table"));
    graph.output_schema = listing.tools.last().unwrap()["outputSchema"]
        .as_object()
        .cloned();
    assert!(validate::tool(&graph, &|_| false).is_empty(), "{graph:?}");
    for (_, table) in parsed["tools"].as_table().unwrap() {
        let overlay: ToolOverlay = table.clone().try_into().unwrap();
        assert!(
            validate::tool(&overlay, &|_| true).is_empty(),
            "{overlay:?}"
        );
    }
}
