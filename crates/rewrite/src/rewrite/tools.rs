//! The `tools/list` rewrite: each overlaid tool gains the MCP Apps keys and
//! their OpenAI aliases, all pointing at one widget URI, plus the metadata
//! its overlay declares. Also the `openai/fileParams` schema rules, which
//! need the tool's live `inputSchema` and so are checked here, per listing.

pub mod page;
mod visibility;

use serde_json::{Map, Value, json};

use super::object::object_at;
use super::warning::Warning;
use mcp_ui_overlay::overlay::{MountOverlays, ToolOverlay, Widgets, merge_meta};

/// Rewrites a `tools/list` result in place. Tools without an overlay, the
/// order of tools, `nextCursor` and every other field stay as they are.
pub fn tools_list(result: &mut Value, mount: &MountOverlays, widgets: &Widgets) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return warnings;
    };
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let Some(overlay) = mount.tool(name) else {
            continue;
        };
        let name = name.to_owned();
        if let Some(tool) = tool.as_object_mut() {
            apply(tool, &name, overlay, widgets, &mut warnings);
        }
    }
    warnings
}

/// Rewrites one overlaid tool. `tool` needs only the members [`touches`]
/// names (a `tools/list` page rewrites its tools in their text, parsing just
/// those): no other member is read or changed.
pub fn tool(
    tool: &mut Map<String, Value>,
    name: &str,
    overlay: &ToolOverlay,
    widgets: &Widgets,
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    apply(tool, name, overlay, widgets, &mut warnings);
    warnings
}

/// What [`tool`] makes of a tool that has none of the members it
/// [`touches`]: the members it adds, as text, and its warnings. That depends
/// on the overlay, the tool's name and its widget's URI alone, so a listing
/// reuses it (see [`Bare::of`]).
#[derive(Debug, Clone)]
pub struct Bare {
    name: String,
    uri: Option<String>,
    /// `(key, value)`, both as JSON text, in the order the rewrite adds them.
    pub members: Vec<(String, String)>,
    pub warnings: Vec<Warning>,
}

impl Bare {
    /// The rewrite of a bare tool called `name`: the overlay's memo when it
    /// was made for this name and widget URI, else made now.
    pub fn of<'a>(
        name: &str,
        overlay: &'a ToolOverlay,
        widgets: &Widgets,
    ) -> std::borrow::Cow<'a, Bare> {
        let uri = widget_uri(overlay, widgets);
        let make = || {
            let mut tool = Map::new();
            let warnings = self::tool(&mut tool, name, overlay, widgets);
            let members = tool
                .iter()
                .map(|(k, v)| (Value::from(k.as_str()).to_string(), v.to_string()))
                .collect();
            Bare {
                name: name.to_owned(),
                uri: uri.map(str::to_owned),
                members,
                warnings,
            }
        };
        let memo = overlay.bare_rewrite.get_or_init(|| Box::new(make()));
        match memo.downcast_ref::<Bare>() {
            Some(memo) if memo.name == name && memo.uri.as_deref() == uri => {
                std::borrow::Cow::Borrowed(memo)
            }
            _ => std::borrow::Cow::Owned(make()),
        }
    }
}

/// The URI of the overlay's widget, when it names one that is loaded.
fn widget_uri<'a>(overlay: &ToolOverlay, widgets: &'a Widgets) -> Option<&'a str> {
    Some(widgets.get(overlay.widget.as_deref()?)?.uri.as_str())
}

/// Whether rewriting a tool with `overlay` reads or changes its member
/// `key`. Any other member passes through the rewrite untouched.
pub fn touches(overlay: &ToolOverlay, key: &str) -> bool {
    match key {
        "_meta" => true,
        "title" => overlay.title.is_some(),
        "description" => overlay.description.is_some(),
        "annotations" => overlay.annotations.is_some(),
        "outputSchema" => {
            overlay.output_schema.is_some()
                || overlay.result.structured_from_text
                || !overlay.result.widget_only.is_empty()
        }
        "securitySchemes" => overlay.security_schemes.is_some(),
        "inputSchema" => !overlay.file_params.is_empty(),
        _ => false,
    }
}

fn apply(
    tool: &mut Map<String, Value>,
    name: &str,
    overlay: &ToolOverlay,
    widgets: &Widgets,
    warnings: &mut Vec<Warning>,
) {
    let schemes = overlay
        .security_schemes
        .as_ref()
        .map(|schemes| Value::Array(schemes.iter().map(|s| s.to_json()).collect()));
    set_descriptor_fields(tool, overlay, schemes.as_ref());
    widget_only_against_output_schema(tool, name, overlay, warnings);
    let file_params = checked_file_params(tool, name, &overlay.file_params, warnings);
    let uri = overlay
        .widget
        .as_deref()
        .and_then(|widget| match widgets.get(widget) {
            Some(widget) => Some(widget.uri.clone()),
            None => {
                let reason = format!("widget `{widget}` is not loaded; no resourceUri set");
                warnings.push(Warning::new(name, reason));
                None
            }
        });
    let meta = MetaChanges {
        uri,
        file_params,
        schemes,
    };
    let upstream_meta = overlay
        .meta
        .as_ref()
        .and_then(|_| tool.get("_meta").cloned());
    set_meta(tool, overlay, meta);
    if let Some(extra) = &overlay.meta {
        // A key the rewrite wrote is one whose value it changed.
        let upstream = |key: &str| upstream_meta.as_ref().and_then(|m| m.get(key));
        let overridden = merge_meta(object_at(tool, "_meta"), extra, |key, old| {
            upstream(key) != Some(old)
        });
        for key in overridden {
            let reason = format!(
                "meta sets _meta[\"{key}\"], which the gateway writes itself; the meta value is used"
            );
            warnings.push(Warning::new(name, reason));
        }
    }
}

/// The top-level Tool fields an overlay replaces or merges into.
fn set_descriptor_fields(
    tool: &mut Map<String, Value>,
    overlay: &ToolOverlay,
    schemes: Option<&Value>,
) {
    if let Some(title) = &overlay.title {
        tool.insert("title".into(), json!(title));
    }
    if let Some(description) = &overlay.description {
        tool.insert("description".into(), json!(description));
    }
    if let Some(hints) = &overlay.annotations {
        let annotations = object_at(tool, "annotations");
        for (key, value) in hints.entries() {
            annotations.insert(key.into(), json!(value));
        }
    }
    if let Some(schema) = &overlay.output_schema {
        tool.insert("outputSchema".into(), Value::Object(schema.clone()));
    } else if overlay.result.structured_from_text
        && tool
            .get("outputSchema")
            .is_some_and(super::call::is_text_wrapper_schema)
    {
        // The Python SDK's `{"result": string}`: the shaped results are the
        // parsed text, which that schema would refuse, and the overlay
        // declares no schema of its own.
        tool.shift_remove("outputSchema");
    }
    if let Some(schemes) = schemes {
        // A non-standard top-level Tool field (OpenAI), mirrored in `_meta`
        // for clients that only read `_meta`.
        tool.insert("securitySchemes".into(), schemes.clone());
    }
}

/// What `set_meta` writes besides the overlay's plain values.
struct MetaChanges {
    /// The widget's current URI, if the overlay names a loaded widget.
    uri: Option<String>,
    /// The overlay's file parameters that passed the schema rules.
    file_params: Vec<String>,
    schemes: Option<Value>,
}

fn set_meta(tool: &mut Map<String, Value>, overlay: &ToolOverlay, changes: MetaChanges) {
    // `_meta` is only created when something goes into it; removals need
    // one to exist already.
    let adds = changes.uri.is_some()
        || overlay.widget.is_some()
        || overlay.visibility.is_some()
        || overlay.app_callable
        || overlay.invoking.is_some()
        || overlay.invoked.is_some()
        || !changes.file_params.is_empty()
        || overlay.profile == Some(true)
        || changes.schemes.is_some();
    if !adds && !tool.get("_meta").is_some_and(Value::is_object) {
        return;
    }
    let meta = object_at(tool, "_meta");
    if let Some(uri) = &changes.uri {
        object_at(meta, "ui").insert("resourceUri".into(), json!(uri));
        // The deprecated flat key, still read by older hosts, and ChatGPT's
        // alias: all three name the same resource.
        meta.insert("ui/resourceUri".into(), json!(uri));
        meta.insert("openai/outputTemplate".into(), json!(uri));
    }
    if overlay.widget.is_some() || overlay.visibility.is_some() || overlay.app_callable {
        visibility::set(meta, overlay.visibility.as_deref(), overlay.app_callable);
    }
    if let Some(text) = &overlay.invoking {
        meta.insert("openai/toolInvocation/invoking".into(), json!(text));
    }
    if let Some(text) = &overlay.invoked {
        meta.insert("openai/toolInvocation/invoked".into(), json!(text));
    }
    if !overlay.file_params.is_empty() {
        if changes.file_params.is_empty() {
            // An upstream declaration the overlay could not confirm goes too.
            meta.shift_remove("openai/fileParams");
        } else {
            meta.insert("openai/fileParams".into(), json!(changes.file_params));
        }
    }
    match overlay.profile {
        Some(true) => {
            meta.insert("openai/profile".into(), json!(true));
        }
        Some(false) => {
            meta.shift_remove("openai/profile");
        }
        None => {}
    }
    if let Some(schemes) = changes.schemes {
        meta.insert("securitySchemes".into(), schemes);
    }
}

/// Keys that `result.widget_only` moves out of structured content cannot be
/// required by the advertised `outputSchema` (the overlay's, or else the
/// upstream's, which loading cannot see): clients would reject the results.
fn widget_only_against_output_schema(
    tool: &Map<String, Value>,
    name: &str,
    overlay: &ToolOverlay,
    warnings: &mut Vec<Warning>,
) {
    let required = tool
        .get("outputSchema")
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array);
    for key in &overlay.result.widget_only {
        if required.is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key))) {
            let reason = format!(
                "result.widget_only moves `{key}` out of structuredContent, but the outputSchema requires it; override output_schema"
            );
            warnings.push(Warning::new(name, reason));
        }
    }
}

/// The overlay's file parameters that the tool's `inputSchema` declares
/// correctly; each one that does not is left out with a warning, because
/// ChatGPT rejects a tool whose file parameter schema breaks the rules.
fn checked_file_params(
    tool: &Map<String, Value>,
    name: &str,
    params: &[String],
    warnings: &mut Vec<Warning>,
) -> Vec<String> {
    let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
    params
        .iter()
        .filter(|param| {
            let problems = file_param_problems(schema, param);
            if !problems.is_empty() {
                let reason = format!(
                    "file param `{param}` left out of openai/fileParams: {}",
                    problems.join("; ")
                );
                warnings.push(Warning::new(name, reason));
            }
            problems.is_empty()
        })
        .cloned()
        .collect()
}

/// The four properties of an OpenAI file object, and the two that must be
/// (and the only ones that may be) required.
const FILE_PROPERTIES: [&str; 4] = ["download_url", "file_id", "mime_type", "file_name"];
const FILE_REQUIRED: [&str; 2] = ["download_url", "file_id"];

/// Why `param` of `input_schema` cannot be a file parameter (empty: it can).
///
/// The rules of the Apps SDK reference: the parameter is a top-level
/// property whose schema (through local `$ref`s, an optional-making
/// `anyOf`/`oneOf` with `null`, and `items` for arrays of files) is an object
/// declaring `download_url`, `file_id`, `mime_type` and `file_name`, requiring
/// `download_url` and `file_id` and nothing else. Further optional
/// properties are allowed.
pub fn file_param_problems(input_schema: &Value, param: &str) -> Vec<String> {
    let Some(property) = input_schema.get("properties").and_then(|p| p.get(param)) else {
        return vec!["not a top-level property of the tool's inputSchema".into()];
    };
    let mut schema = match resolve(input_schema, property) {
        Ok(schema) => schema,
        Err(problem) => return vec![problem],
    };
    if schema.get("type").and_then(Value::as_str) == Some("array") {
        let Some(items) = schema.get("items") else {
            return vec!["an array of files needs `items` describing the file object".into()];
        };
        schema = match resolve(input_schema, items) {
            Ok(schema) => schema,
            Err(problem) => return vec![problem],
        };
    }
    file_object_problems(schema)
}

fn file_object_problems(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(kind) = schema.get("type")
        && kind != "object"
    {
        problems.push(format!("its schema has type {kind}, not \"object\""));
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let missing: Vec<&str> = FILE_PROPERTIES
        .into_iter()
        .filter(|p| !properties.is_some_and(|props| props.contains_key(*p)))
        .collect();
    if !missing.is_empty() {
        problems.push(format!("the file object must declare {}", quoted(&missing)));
    }
    for property in FILE_PROPERTIES {
        let kind = properties
            .and_then(|p| p.get(property))
            .and_then(|p| p.get("type"));
        if let Some(kind) = kind
            && kind != "string"
        {
            problems.push(format!("`{property}` must be a string, not {kind}"));
        }
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let unrequired: Vec<&str> = FILE_REQUIRED
        .into_iter()
        .filter(|p| !required.contains(p))
        .collect();
    if !unrequired.is_empty() {
        problems.push(format!(
            "the file object must require {}",
            quoted(&unrequired)
        ));
    }
    let extra: Vec<&str> = required
        .into_iter()
        .filter(|p| !FILE_REQUIRED.contains(p))
        .collect();
    if !extra.is_empty() {
        problems.push(format!(
            "only download_url and file_id may be required, not {}",
            quoted(&extra)
        ));
    }
    problems
}

fn quoted(names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    names.join(", ")
}

/// Follows local `$ref`s and unwraps `anyOf`/`oneOf` whose only non-null
/// branch is the real schema (how optional parameters are often written).
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> Result<&'a Value, String> {
    // Bounded: a reference cycle must not loop forever.
    for _ in 0..16 {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let pointer = reference
                .strip_prefix('#')
                .ok_or_else(|| format!("`$ref` {reference} is not local to the inputSchema"))?;
            schema = root
                .pointer(pointer)
                .ok_or_else(|| format!("`$ref` {reference} points at nothing"))?;
            continue;
        }
        let union = schema.get("anyOf").or_else(|| schema.get("oneOf"));
        if let Some(branches) = union.and_then(Value::as_array) {
            let real: Vec<&Value> = branches
                .iter()
                .filter(|b| b.get("type") != Some(&json!("null")))
                .collect();
            match real.as_slice() {
                [one] => {
                    schema = one;
                    continue;
                }
                _ => {
                    return Err(
                        "its schema is a union of several kinds; it must be one file object".into(),
                    );
                }
            }
        }
        return Ok(schema);
    }
    Err("`$ref` chain too long (a cycle?)".into())
}

#[cfg(test)]
mod tests;
