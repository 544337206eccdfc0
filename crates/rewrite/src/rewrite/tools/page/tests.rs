//! Tests of the in-text page rewrite against the full rewrite of the parsed
//! page, and the overlay set the plan's tests share.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use mcp_ui_overlay::overlay::{OverlaySet, RenderTool, Widget};

/// A mount `demo` whose tool `list` renders in widget `board`, with a
/// render tool `show`.
pub(crate) fn overlays() -> OverlaySet {
    let widget = Widget::compile(
        "board",
        &Default::default(),
        "<!doctype html><p>hi</p>".into(),
    );
    let tool = ToolOverlay {
        widget: Some("board".into()),
        ..Default::default()
    };
    let render = RenderTool {
        widget: "board".into(),
        data_tools: vec!["list".into()],
        input_schema: json!({"type": "object", "required": ["items"]})
            .as_object()
            .cloned(),
        ..Default::default()
    };
    let mut mounts = BTreeMap::new();
    mounts.insert(
        "demo".to_owned(),
        MountOverlays::new([("list".to_owned(), tool)]).with_render([("show".to_owned(), render)]),
    );
    OverlaySet::new(mounts, Widgets::new([widget]))
}

/// No upstream tool takes a render tool's name.
pub(crate) fn none(_: &str) -> bool {
    false
}

/// The page rewrite in the text against the full rewrite of the parsed
/// page: the same JSON, and every byte outside the rewritten members kept.
#[test]
fn tools_list_pages_are_rewritten_in_their_text() {
    let o = overlays();
    let uri = o.widgets().get("board").unwrap().uri.clone();
    let response = concat!(
        "{ \"jsonrpc\" : \"2.0\", \"id\":1, \"result\": {\"tools\": [\n",
        "  {\"name\": \"other\", \"inputSchema\": {\"d\": \"\\u0041\" }},\n",
        "  {\"name\":\"list\",\"inputSchema\":{\"type\": \"object\", \"x\":1.50},",
        "\"_meta\":{\"vendor\":true, \"ui\":{\"visibility\":[\"app\"]}}, \"z\" : [ ] }\n",
        "], \"nextCursor\" : \"c2\" }, \"extra\" : 1 }"
    );
    let a = tools_list_page(
        response.as_bytes(),
        o.mount("demo").unwrap(),
        o.widgets(),
        &none,
    )
    .unwrap();
    let body = a.text.unwrap();
    // Untouched bytes: the envelope, the other tool, separators, and the
    // members of `list` the rewrite does not touch.
    assert!(body.starts_with(
        "{ \"jsonrpc\" : \"2.0\", \"id\":1, \"result\": {\"tools\": [\n  {\"name\": \"other\", \"inputSchema\": {\"d\": \"\\u0041\" }},\n  {\"name\":\"list\",\"inputSchema\":{\"type\": \"object\", \"x\":1.50},\"_meta\":"
    ), "{body}");
    assert!(
        body.ends_with(", \"z\" : [ ] }\n], \"nextCursor\" : \"c2\" }, \"extra\" : 1 }"),
        "{body}"
    );
    // The same JSON as the full rewrite.
    let mut full: Value = serde_json::from_str(response).unwrap();
    tools_list(&mut full["result"], o.mount("demo").unwrap(), o.widgets());
    let ours: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ours, full);
    assert_eq!(ours["result"]["tools"][1]["_meta"]["vendor"], true);
    assert_eq!(
        ours["result"]["tools"][1]["_meta"]["ui"]["resourceUri"],
        json!(uri)
    );
    assert_eq!(
        ours["result"]["tools"][1]["_meta"]["ui"]["visibility"],
        json!(["app"])
    );
    assert_eq!(a.names, vec!["other".to_owned(), "list".to_owned()]);
}
