//! Opt-in shaping of `tools/call` results, for legacy servers that return
//! JSON as text: `structuredContent` parsed from that text, and widget-only
//! keys moved into the result's `_meta` (which hosts hand to the widget,
//! never to the model). All or nothing: when any step fails the upstream's
//! result passes unchanged and a warning says why.
//!
//! One promise holds whatever shaping does: a tool whose overlay lists an
//! `output_schema` never gets a successful result that breaks it. Clients
//! that validate results (the TypeScript and Python SDK clients do) would
//! reject the whole call; the gateway answers a tool error instead
//! ([`schema_mismatch`]), keeping the upstream's content for the model.

use serde_json::{Map, Value, json};

use super::schema;
use super::warning::Warning;
use crate::overlay::ToolOverlay;

/// The text item a result that breaks the listed `outputSchema` gains (after
/// the upstream's content), before the reason.
pub const MISMATCH_NOTE: &str =
    "mcp-ui-gateway: this result does not match the outputSchema listed for this tool";

/// Shapes a `tools/call` result in place as `tool.result` asks, then holds
/// it to the overlay's `output_schema`. A tool with neither (the default)
/// returns at once and changes nothing. Error results (`isError: true`) are
/// never shaped: their text is a message, not data.
///
/// When the upstream already sends `structuredContent` it is kept, and only
/// `widget_only` applies to it, unless it merely wraps the text (the Python
/// SDK's `{"result": "<the text>"}` for a tool that returns a string): with
/// `structured_from_text` that text is parsed as if no structuredContent
/// had come. Moving keys also rewrites the text item that carried the same
/// JSON, so the model does not read them there either.
pub fn tools_call_result(result: &mut Value, tool: &ToolOverlay) -> Vec<Warning> {
    if tool.result.is_noop() && tool.output_schema.is_none() {
        return Vec::new();
    }
    let Some(result) = result.as_object_mut() else {
        return Vec::new();
    };
    if result.get("isError") == Some(&Value::Bool(true)) {
        return error_result(result, tool);
    }
    let mut warnings = Vec::new();
    match plan(result, tool) {
        Ok(Some(plan)) => commit(result, plan),
        Ok(None) => {}
        Err(warning) => warnings.push(warning),
    }
    if let Some(output_schema) = &tool.output_schema
        && let Err(mismatch) = conforms(result, output_schema)
    {
        // The shaping warning, when there is one, says best what went wrong.
        let reason = warnings.first().map_or(mismatch, |w| {
            let why = w.reason.trim_end_matches("; result left unchanged");
            format!("{}: {why}", w.subject)
        });
        let reason = if wrapped_unshaped(result, tool) {
            format!("{reason}: {WRAPPED_TEXT}")
        } else {
            reason
        };
        schema_mismatch(result, &reason);
        warnings.push(Warning::new(
            "outputSchema",
            format!("the result does not match it ({reason}); answered as a tool error"),
        ));
    }
    warnings
}

/// Why a result whose `structuredContent` only wraps its text breaks the
/// listed schema when shaping is off, and the setting that fixes it.
const WRAPPED_TEXT: &str = "the server wrapped its text as structuredContent {\"result\": \"<the text>\"}, as the Python SDK does for a tool returning a string; result.structured_from_text = true in the overlay would parse that text instead";

/// Whether shaping is off and the result's `structuredContent` is the text
/// wrapper that `structured_from_text` would have parsed.
fn wrapped_unshaped(result: &Map<String, Value>, tool: &ToolOverlay) -> bool {
    !tool.result.structured_from_text
        && result
            .get("structuredContent")
            .is_some_and(|s| wraps_text(s, result))
}

/// Whether the result's `structuredContent` matches `output_schema`; a
/// successful result without one does not (validating clients require it).
fn conforms(result: &Map<String, Value>, output_schema: &Map<String, Value>) -> Result<(), String> {
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    let Some(structured) = structured else {
        return Err("no structuredContent".into());
    };
    schema::validate(&Value::Object(output_schema.clone()), structured)
}

/// Turns a successful result that breaks the listed `outputSchema` into a
/// tool error a validating client accepts: `isError: true`, no
/// `structuredContent` (which the TypeScript SDK validates even on errors),
/// the upstream's content kept, and one text item more saying why.
pub fn schema_mismatch(result: &mut Map<String, Value>, reason: &str) {
    result.shift_remove("structuredContent");
    let note = json!({ "type": "text", "text": format!("{MISMATCH_NOTE} ({reason}).") });
    match result.get_mut("content").and_then(Value::as_array_mut) {
        Some(content) => content.push(note),
        None => {
            result.insert("content".into(), json!([note]));
        }
    }
    result.insert("isError".into(), Value::Bool(true));
}

/// An error result is passed as it is, except a `structuredContent` that
/// breaks the listed `outputSchema`, which the TypeScript SDK client would
/// reject even on an error: it goes.
fn error_result(result: &mut Map<String, Value>, tool: &ToolOverlay) -> Vec<Warning> {
    let Some(output_schema) = &tool.output_schema else {
        return Vec::new();
    };
    if result.get("structuredContent").is_none_or(Value::is_null) {
        return Vec::new();
    }
    match conforms(result, output_schema) {
        Ok(()) => Vec::new(),
        Err(mismatch) => {
            result.shift_remove("structuredContent");
            vec![Warning::new(
                "structuredContent",
                format!("an error result's does not match outputSchema ({mismatch}); removed"),
            )]
        }
    }
}

/// Whether `schema` is the `outputSchema` the Python SDK generates for a
/// tool that returns a string: an object whose one property, `result`, is a
/// string. Results of such tools wrap their text as `{"result": "<text>"}`.
pub fn is_text_wrapper_schema(schema: &Value) -> bool {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return false;
    };
    schema.get("type").and_then(Value::as_str) == Some("object")
        && properties.len() == 1
        && properties
            .get("result")
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            == Some("string")
}

/// Whether `structured` only wraps the result's first text item:
/// `{"result": "<that text>"}`.
fn wraps_text(structured: &Value, result: &Map<String, Value>) -> bool {
    let Some(structured) = structured.as_object() else {
        return false;
    };
    let Some(Value::String(wrapped)) = structured.get("result") else {
        return false;
    };
    structured.len() == 1 && first_text(result).is_some_and(|(_, text)| text == wrapped)
}

/// What to change, computed before anything changes.
struct Plan {
    /// The model-visible structured content.
    structured: Map<String, Value>,
    /// Whether `structured` is new (parsed from text) or replaces the
    /// upstream's after keys moved out.
    write_structured: bool,
    /// Keys moved to `_meta`.
    moved: Map<String, Value>,
    /// Index in `content` of the text item holding the original JSON.
    text_item: Option<usize>,
}

fn plan(result: &Map<String, Value>, tool: &ToolOverlay) -> Result<Option<Plan>, Warning> {
    let shaping = &tool.result;
    let native = result
        .get("structuredContent")
        .filter(|v| !v.is_null())
        .filter(|v| !(shaping.structured_from_text && wraps_text(v, result)));
    let (original, parsed) = match native {
        Some(Value::Object(native)) => (native.clone(), false),
        Some(_) => {
            return Err(Warning::new(
                "structuredContent",
                "the upstream's is not an object; left unchanged",
            ));
        }
        None if shaping.structured_from_text => (parse_first_text(result)?, true),
        None => return Ok(None),
    };
    let mut structured = original.clone();
    let existing_meta = result.get("_meta").and_then(Value::as_object);
    let mut moved = Map::new();
    for key in &shaping.widget_only {
        if let Some(value) = structured.shift_remove(key) {
            if existing_meta.is_some_and(|m| m.contains_key(key)) {
                return Err(Warning::new(
                    format!("_meta.{key}"),
                    "the upstream's result already has this _meta key; result left unchanged",
                ));
            }
            moved.insert(key.clone(), value);
        }
    }
    if parsed && let Some(output_schema) = &tool.output_schema {
        let output_schema = Value::Object(output_schema.clone());
        let instance = Value::Object(structured.clone());
        if let Err(mismatch) = schema::validate(&output_schema, &instance) {
            return Err(Warning::new(
                "structuredContent",
                format!(
                    "the JSON text does not match output_schema ({mismatch}); result left unchanged"
                ),
            ));
        }
    }
    let text_item = if moved.is_empty() {
        None
    } else {
        text_item_holding(result, &original)
    };
    Ok(Some(Plan {
        structured,
        write_structured: parsed || !moved.is_empty(),
        moved,
        text_item,
    }))
}

fn commit(result: &mut Map<String, Value>, plan: Plan) {
    if let Some(index) = plan.text_item
        && let Some(item) = result.get_mut("content").and_then(|c| c.get_mut(index))
        && let Some(item) = item.as_object_mut()
    {
        let reduced = Value::Object(plan.structured.clone()).to_string();
        item.insert("text".into(), Value::String(reduced));
    }
    if plan.write_structured {
        result.insert("structuredContent".into(), Value::Object(plan.structured));
    }
    if !plan.moved.is_empty() {
        let meta = super::object::object_at(result, "_meta");
        meta.extend(plan.moved);
    }
}

/// The first text content item, parsed as a JSON object.
fn parse_first_text(result: &Map<String, Value>) -> Result<Map<String, Value>, Warning> {
    let text = first_text(result).map(|(_, text)| text).ok_or_else(|| {
        Warning::new(
            "content",
            "no text item to parse structuredContent from; result left unchanged",
        )
    })?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Warning::new(
            "content",
            "the first text item is JSON but not an object; result left unchanged",
        )),
        Err(e) => Err(Warning::new(
            "content",
            format!("the first text item is not JSON ({e}); result left unchanged"),
        )),
    }
}

fn first_text(result: &Map<String, Value>) -> Option<(usize, &str)> {
    let content = result.get("content")?.as_array()?;
    content.iter().enumerate().find_map(|(i, item)| {
        (item.get("type")?.as_str()? == "text").then_some(())?;
        Some((i, item.get("text")?.as_str()?))
    })
}

/// The first text item, if it holds exactly `data` as JSON.
fn text_item_holding(result: &Map<String, Value>, data: &Map<String, Value>) -> Option<usize> {
    let (index, text) = first_text(result)?;
    let parsed: Value = serde_json::from_str(text).ok()?;
    (parsed.as_object() == Some(data)).then_some(index)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::overlay::ResultShaping;

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
        let warnings =
            tools_call_result(&mut result, &overlay(true, &["raw"], Some(tasks_schema())));
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
        let original =
            json!({ "content": [], "structuredContent": { "tasks": [] }, "isError": true });
        let mut kept = original.clone();
        assert!(
            tools_call_result(&mut kept, &overlay(false, &[], Some(tasks_schema()))).is_empty()
        );
        assert_eq!(kept, original);
    }

    #[test]
    fn error_results_are_never_shaped() {
        let original =
            json!({ "content": [{ "type": "text", "text": "{\"a\":1}" }], "isError": true });
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
}
