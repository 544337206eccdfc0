use serde_json::json;

use super::*;
use mcp_ui_overlay::overlay::ResultShaping;

fn overlay(from_text: bool, widget_only: &[&str], schema: Option<Value>) -> ToolOverlay {
    ToolOverlay {
        output_schema: schema.and_then(|s| s.as_object().cloned()),
        result: ResultShaping {
            structured_from_text: from_text,
            widget_only: widget_only.iter().map(|s| s.to_string()).collect(),
        },
        ..ToolOverlay::default()
    }
}

fn text_result(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": false })
}

fn tasks_schema() -> Value {
    json!({
        "type": "object",
        "properties": { "tasks": { "type": "array", "items": { "type": "object" } } },
        "required": ["tasks"]
    })
}

#[test]
fn default_overlay_leaves_results_alone() {
    let original = text_result("{\"tasks\":[]}");
    let mut result = original.clone();
    assert!(tools_call_result(&mut result, &ToolOverlay::default()).is_empty());
    assert_eq!(result, original);
}

#[test]
fn structured_from_text_success() {
    let mut result = text_result("{\"tasks\":[{\"id\":1}],\"total\":1}");
    let warnings = tools_call_result(&mut result, &overlay(true, &[], Some(tasks_schema())));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": "{\"tasks\":[{\"id\":1}],\"total\":1}" }],
            "isError": false,
            "structuredContent": { "tasks": [{ "id": 1 }], "total": 1 }
        })
    );
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["content", "isError", "structuredContent"]);
}

#[test]
fn without_a_listed_schema_failures_leave_the_result_unchanged() {
    let cases = [("The sum is 5.", "not JSON"), ("[1,2]", "not an object")];
    for (text, expected) in cases {
        let original = text_result(text);
        let mut result = original.clone();
        let warnings = tools_call_result(&mut result, &overlay(true, &[], None));
        assert_eq!(result, original, "{text}");
        assert_eq!(warnings.len(), 1, "{text}");
        assert!(
            warnings[0].reason.contains(expected),
            "{text}: {}",
            warnings[0]
        );
    }
    let mut no_text =
        json!({ "content": [{ "type": "image", "data": "", "mimeType": "image/png" }] });
    let warnings = tools_call_result(&mut no_text, &overlay(true, &[], None));
    assert!(warnings[0].reason.contains("no text item"));
}

/// What a validating client receives instead of a result that breaks
/// the listed schema: a tool error with the upstream's text and a note.
fn refused(text: &str, why: &str) -> Value {
    json!({
        "content": [
            { "type": "text", "text": text },
            { "type": "text", "text": format!("{MISMATCH_NOTE} ({why}).") }
        ],
        "isError": true
    })
}

#[test]
fn a_result_that_breaks_the_listed_schema_becomes_a_tool_error() {
    let cases = [
        // Shaping on: the parsed text does not match.
        ("{\"tasks\":\"none\"}", true, "does not match output_schema"),
        ("{\"other\":1}", true, "does not match output_schema"),
        // Shaping on: the text is no JSON object.
        ("The sum is 5.", true, "not JSON"),
        ("[1,2]", true, "not an object"),
        // Shaping off: nothing structured at all.
        ("{\"tasks\":[]}", false, "no structuredContent"),
    ];
    for (text, from_text, expected) in cases {
        let mut result = text_result(text);
        let warnings =
            tools_call_result(&mut result, &overlay(from_text, &[], Some(tasks_schema())));
        assert_eq!(result["isError"], true, "{text}: {result}");
        assert!(result.get("structuredContent").is_none(), "{text}");
        assert_eq!(
            result["content"][0],
            json!({ "type": "text", "text": text })
        );
        let note = result["content"][1]["text"].as_str().unwrap();
        assert!(note.starts_with(MISMATCH_NOTE), "{note}");
        assert!(note.contains(expected), "{text}: {note}");
        let last = warnings.last().unwrap();
        assert_eq!(last.subject, "outputSchema", "{warnings:?}");
    }
    // The upstream's own structuredContent is held to the listed schema too.
    let mut native = json!({
        "content": [{ "type": "text", "text": "{\"a\":1}" }],
        "structuredContent": { "a": 1 },
        "isError": false
    });
    tools_call_result(&mut native, &overlay(false, &[], Some(tasks_schema())));
    assert_eq!(
        native,
        refused("{\"a\":1}", "/: missing required property `tasks`")
    );
}

/// The Python SDK's result for a tool returning a string.
fn python_sdk_result(text: &str) -> Value {
    json!({
        "content": [{ "type": "text", "text": text }],
        "isError": false,
        "structuredContent": { "result": text }
    })
}

#[test]
fn structured_content_that_only_wraps_the_text_is_shaped_from_the_text() {
    let text = "{\"tasks\": [{\"id\": 1}], \"raw\": 7}";
    let mut result = python_sdk_result(text);
    let warnings = tools_call_result(&mut result, &overlay(true, &["raw"], Some(tasks_schema())));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": "{\"tasks\":[{\"id\":1}]}" }],
            "isError": false,
            "structuredContent": { "tasks": [{ "id": 1 }] },
            "_meta": { "raw": 7 }
        })
    );
    // Without a listed schema of its own the overlay still unwraps (the
    // listing drops the wrapper schema, see `tools`).
    let mut result = python_sdk_result("{\"n\":1}");
    assert!(tools_call_result(&mut result, &overlay(true, &[], None)).is_empty());
    assert_eq!(result["structuredContent"], json!({ "n": 1 }));
    // A wrapper of text that is not JSON: a tool error under a listed schema.
    let mut result = python_sdk_result("No tasks yet.");
    tools_call_result(&mut result, &overlay(true, &[], Some(tasks_schema())));
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none());
    // `{"result": …}` that is not the text is the upstream's data, kept.
    let mut kept = json!({
        "content": [{ "type": "text", "text": "5" }],
        "structuredContent": { "result": "five" }
    });
    let original = kept.clone();
    assert!(tools_call_result(&mut kept, &overlay(true, &[], None)).is_empty());
    assert_eq!(kept, original);
}

#[test]
fn an_unshaped_text_wrapper_is_named_in_the_note() {
    let text = "{\"tasks\": []}";
    let mut result = python_sdk_result(text);
    let warnings = tools_call_result(&mut result, &overlay(false, &[], Some(tasks_schema())));
    assert_eq!(result["isError"], true, "{result}");
    assert!(result.get("structuredContent").is_none(), "{result}");
    let note = result["content"][1]["text"].as_str().unwrap();
    assert_eq!(
        note,
        format!("{MISMATCH_NOTE} (/: missing required property `tasks`: {WRAPPED_TEXT}).")
    );
    assert!(note.contains("structured_from_text = true"), "{note}");
    assert!(warnings[0].reason.contains(WRAPPED_TEXT), "{warnings:?}");
    // Structured content of the upstream's own that breaks the schema:
    // no word of a wrapper.
    let mut native = json!({
        "content": [{ "type": "text", "text": "5" }],
        "structuredContent": { "result": "five" }
    });
    tools_call_result(&mut native, &overlay(false, &[], Some(tasks_schema())));
    let note = native["content"][1]["text"].as_str().unwrap();
    assert!(!note.contains("wrapped"), "{note}");
}

#[test]
fn the_python_sdk_wrapper_schema_is_recognised() {
    let wrapper = json!({
        "properties": { "result": { "title": "Result", "type": "string" } },
        "required": ["result"],
        "type": "object",
        "title": "list_tasksOutput"
    });
    assert!(is_text_wrapper_schema(&wrapper));
    assert!(!is_text_wrapper_schema(&tasks_schema()));
    assert!(!is_text_wrapper_schema(&json!({
        "type": "object",
        "properties": { "result": { "type": "integer" } }
    })));
}

#[test]
fn an_error_result_loses_only_structured_content_that_breaks_the_schema() {
    let mut result = json!({
        "content": [{ "type": "text", "text": "boom" }],
        "structuredContent": { "result": "boom" },
        "isError": true
    });
    let warnings = tools_call_result(&mut result, &overlay(true, &[], Some(tasks_schema())));
    assert_eq!(warnings.len(), 1);
    assert_eq!(
        result,
        json!({ "content": [{ "type": "text", "text": "boom" }], "isError": true })
    );
    let original = json!({ "content": [], "structuredContent": { "tasks": [] }, "isError": true });
    let mut kept = original.clone();
    assert!(tools_call_result(&mut kept, &overlay(false, &[], Some(tasks_schema()))).is_empty());
    assert_eq!(kept, original);
}

#[test]
fn error_results_are_never_shaped() {
    let original = json!({ "content": [{ "type": "text", "text": "{\"a\":1}" }], "isError": true });
    let mut result = original.clone();
    assert!(tools_call_result(&mut result, &overlay(true, &["a"], None)).is_empty());
    assert_eq!(result, original);
}

#[test]
fn widget_only_keys_move_to_meta_and_out_of_the_text() {
    let mut result = text_result("{\n  \"tasks\": [],\n  \"raw\": {\"x\": 1}\n}");
    let warnings = tools_call_result(
        &mut result,
        &overlay(true, &["raw", "absent"], Some(tasks_schema())),
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": "{\"tasks\":[]}" }],
            "isError": false,
            "structuredContent": { "tasks": [] },
            "_meta": { "raw": { "x": 1 } }
        })
    );
}

#[test]
fn native_structured_content_is_kept_and_only_reduced() {
    let mut result = json!({
        "content": [{ "type": "text", "text": "{\"a\":1,\"b\":2}" }],
        "structuredContent": { "a": 1, "b": 2 },
        "_meta": { "keep": true }
    });
    let warnings = tools_call_result(
        &mut result,
        &overlay(
            true,
            &["b"],
            Some(json!({ "type": "object", "required": ["a"] })),
        ),
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        result,
        json!({
            "content": [{ "type": "text", "text": "{\"a\":1}" }],
            "structuredContent": { "a": 1 },
            "_meta": { "keep": true, "b": 2 }
        })
    );
    // Nothing to move: untouched.
    let original = json!({ "content": [], "structuredContent": { "a": 1 } });
    let mut same = original.clone();
    assert!(tools_call_result(&mut same, &overlay(false, &["b"], None)).is_empty());
    assert_eq!(same, original);
}

#[test]
fn a_meta_key_clash_leaves_the_result_unchanged() {
    let original = json!({
        "content": [{ "type": "text", "text": "{\"a\":1}" }],
        "_meta": { "a": "upstream's" }
    });
    let mut result = original.clone();
    let warnings = tools_call_result(&mut result, &overlay(true, &["a"], None));
    assert_eq!(result, original);
    assert_eq!(warnings[0].subject, "_meta.a");
}
