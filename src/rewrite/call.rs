//! Opt-in shaping of `tools/call` results, for legacy servers that return
//! JSON as text: `structuredContent` parsed from that text, and widget-only
//! keys moved into the result's `_meta` (which hosts hand to the widget,
//! never to the model). All or nothing: when any step fails the upstream's
//! result passes unchanged and a warning says why.

use serde_json::{Map, Value};

use super::schema;
use super::warning::Warning;
use crate::overlay::ToolOverlay;

/// Shapes a `tools/call` result in place as `tool.result` asks; without
/// shaping options (the default) it returns at once and changes nothing.
/// Error results (`isError: true`) are never shaped: their text is a message,
/// not data.
///
/// When the upstream already sends `structuredContent` it is kept, and only
/// `widget_only` applies to it. Moving keys also rewrites the text item that
/// carried the same JSON, so the model does not read them there either.
pub fn tools_call_result(result: &mut Value, tool: &ToolOverlay) -> Vec<Warning> {
    if tool.result.is_noop() {
        return Vec::new();
    }
    let Some(result) = result.as_object_mut() else {
        return Vec::new();
    };
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Vec::new();
    }
    match plan(result, tool) {
        Ok(Some(plan)) => {
            commit(result, plan);
            Vec::new()
        }
        Ok(None) => Vec::new(),
        Err(warning) => vec![warning],
    }
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
    let native = result.get("structuredContent").filter(|v| !v.is_null());
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
    fn mismatches_leave_the_result_unchanged() {
        let cases = [
            (
                "{\"tasks\":\"none\"}",
                Some(tasks_schema()),
                "does not match output_schema",
            ),
            (
                "{\"other\":1}",
                Some(tasks_schema()),
                "does not match output_schema",
            ),
            ("The sum is 5.", None, "not JSON"),
            ("[1,2]", None, "not an object"),
        ];
        for (text, schema, expected) in cases {
            let original = text_result(text);
            let mut result = original.clone();
            let warnings = tools_call_result(&mut result, &overlay(true, &[], schema));
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
            &overlay(true, &["b"], Some(json!({ "type": "string" }))),
        );
        assert!(
            warnings.is_empty(),
            "native content is not re-validated: {warnings:?}"
        );
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
