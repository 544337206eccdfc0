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
use mcp_ui_overlay::overlay::ToolOverlay;

/// The text item a result that breaks the listed `outputSchema` gains (after
/// the upstream's content), before the reason.
pub(crate) const MISMATCH_NOTE: &str =
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
    schema::validate(&Value::Object(output_schema.clone()), structured).map_err(|m| m.to_string())
}

/// Turns a successful result that breaks the listed `outputSchema` into a
/// tool error a validating client accepts: `isError: true`, no
/// `structuredContent` (which the TypeScript SDK validates even on errors),
/// the upstream's content kept, and one text item more saying why.
pub(crate) fn schema_mismatch(result: &mut Map<String, Value>, reason: &str) {
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
mod tests;
