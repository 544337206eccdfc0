//! Where a JSON pointer leads in a JSON Schema: what the data pointer and
//! the column keys of a built-in widget name, checked against a tool's
//! output schema (the overlay's or the live listing's), and the default
//! columns it gives.

use serde_json::Value;

/// How deep `$ref`s and combinators are followed: schemas are small, and a
/// cycle must not loop.
const MAX_DEPTH: usize = 16;

/// Where a pointer led.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved<'a> {
    /// The schema of the value there.
    Found(&'a Value),
    /// The schema does not say (no `properties`, an open branch, …).
    Unknown,
    /// Nowhere: at `at` (a pointer prefix), whose properties are `known`.
    Nowhere { at: String, known: Vec<String> },
}

/// Resolves `pointer` (`""` is the root) from `schema`, inside `root` (for
/// local `$ref`s).
/// A key as one JSON pointer segment (RFC 6901: `~` as `~0`, `/` as `~1`).
pub fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

pub(crate) fn resolve_pointer<'a>(
    root: &'a Value,
    schema: &'a Value,
    pointer: &str,
) -> Resolved<'a> {
    if pointer.is_empty() {
        return Resolved::Found(schema);
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Resolved::Unknown;
    };
    let mut current = schema;
    let mut at = String::new();
    for raw in rest.split('/') {
        let segment = raw.replace("~1", "/").replace("~0", "~");
        match step(root, current, &segment, 0) {
            Resolved::Found(next) => current = next,
            Resolved::Unknown => return Resolved::Unknown,
            Resolved::Nowhere { known, .. } => {
                return Resolved::Nowhere {
                    at: if at.is_empty() { "/".into() } else { at },
                    known,
                };
            }
        }
        at.push('/');
        at.push_str(raw);
    }
    Resolved::Found(current)
}

/// The schema of `segment` inside `schema`.
fn step<'a>(root: &'a Value, schema: &'a Value, segment: &str, depth: usize) -> Resolved<'a> {
    if depth > MAX_DEPTH {
        return Resolved::Unknown;
    }
    let schema = deref(root, schema, depth);
    let Some(object) = schema.as_object() else {
        return Resolved::Unknown;
    };
    let properties = object.get("properties").and_then(Value::as_object);
    if let Some(found) = properties.and_then(|p| p.get(segment)) {
        return Resolved::Found(found);
    }
    if let Some(items) = object.get("items").filter(|i| i.is_object())
        && segment.parse::<usize>().is_ok()
    {
        return Resolved::Found(items);
    }
    let mut unknown = false;
    let mut known: Vec<String> = properties
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for combinator in ["allOf", "anyOf", "oneOf"] {
        for branch in object
            .get(combinator)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match step(root, branch, segment, depth + 1) {
                Resolved::Found(found) => return Resolved::Found(found),
                Resolved::Unknown => unknown = true,
                Resolved::Nowhere { known: more, .. } => known.extend(more),
            }
        }
    }
    if let Some(extra) = object.get("additionalProperties").filter(|a| a.is_object()) {
        return Resolved::Found(extra);
    }
    if unknown || properties.is_none() {
        return Resolved::Unknown;
    }
    Resolved::Nowhere {
        at: String::new(),
        known,
    }
}

/// Follows a local `$ref` (`#/…`), boundedly; anything else as it is.
fn deref<'a>(root: &'a Value, schema: &'a Value, depth: usize) -> &'a Value {
    let mut current = schema;
    for _ in depth..MAX_DEPTH {
        let Some(target) = current.get("$ref").and_then(Value::as_str) else {
            break;
        };
        match target
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
        {
            Some(next) => current = next,
            None => break,
        }
    }
    current
}

/// The item schema of an array schema (through `$ref`, and the non-null
/// branch of an `anyOf`/`oneOf`), if it is one.
pub fn items<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let schema = deref(root, schema, 0);
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        return Some(deref(root, items, 0));
    }
    ["anyOf", "oneOf"].iter().find_map(|key| {
        schema
            .get(*key)?
            .as_array()?
            .iter()
            .find_map(|branch| items(root, branch))
    })
}

/// Whether `schema` describes an array (it says so, or has `items`).
pub fn is_array(root: &Value, schema: &Value) -> bool {
    let schema = deref(root, schema, 0);
    schema.get("type").and_then(Value::as_str) == Some("array") || items(root, schema).is_some()
}

/// Whether `schema` describes only strings.
pub fn is_string(root: &Value, schema: &Value) -> Option<bool> {
    let schema = deref(root, schema, 0);
    match schema.get("type")? {
        Value::String(t) => Some(t == "string"),
        Value::Array(types) => Some(
            types
                .iter()
                .all(|t| t.as_str() == Some("string") || t.as_str() == Some("null")),
        ),
        _ => None,
    }
}

/// The names of the root's properties that are arrays: the default data of
/// a list is the only one.
pub fn default_array(root: &Value) -> Vec<String> {
    root_properties(root, |schema| is_array(root, schema))
}

/// The names of the root's properties that are strings: the default text of
/// `builtin:markdown` is the only one (else the result's first text).
pub fn default_string(root: &Value) -> Vec<String> {
    root_properties(root, |schema| is_string(root, schema) == Some(true))
}

fn root_properties(root: &Value, wanted: impl Fn(&Value) -> bool) -> Vec<String> {
    let properties = deref(root, root, 0)
        .get("properties")
        .and_then(Value::as_object);
    properties
        .into_iter()
        .flatten()
        .filter(|(_, schema)| wanted(schema))
        .map(|(name, _)| name.clone())
        .collect()
}

/// The properties, in order, of the records a widget shows from `root` at
/// `data` (default: as the widget picks it: the only array for a `list`
/// widget, else the root). Lists (tables) leave out nested objects and
/// arrays.
pub(crate) fn default_keys(root: &Value, data: Option<&str>, list: bool) -> Vec<String> {
    record_properties(root, data, list)
        .into_iter()
        .filter(|(_, kind)| !list || !matches!(kind, Some("object" | "array")))
        .map(|(name, _)| name)
        .collect()
}

/// A chart's defaults from `root` at `data`: the first string property of
/// the records (the labels) and their number properties (the series).
pub(crate) fn default_chart(root: &Value, data: Option<&str>) -> (Option<String>, Vec<String>) {
    let properties = record_properties(root, data, true);
    let label = properties
        .iter()
        .find(|(_, kind)| *kind == Some("string"))
        .map(|(name, _)| name.clone());
    let series = properties
        .into_iter()
        .filter(|(_, kind)| matches!(kind, Some("number" | "integer")))
        .map(|(name, _)| name)
        .collect();
    (label, series)
}

/// The properties of the records at `data` (see [`default_keys`]), each
/// with its declared `type` when it names one.
fn record_properties<'a>(
    root: &'a Value,
    data: Option<&str>,
    list: bool,
) -> Vec<(String, Option<&'a str>)> {
    let pointer = match (data, list) {
        (Some(pointer), _) => pointer.to_owned(),
        (None, true) => match default_array(root).as_slice() {
            [only] => format!("/{}", pointer_segment(only)),
            _ => return Vec::new(),
        },
        (None, _) => String::new(),
    };
    let Resolved::Found(target) = resolve_pointer(root, root, &pointer) else {
        return Vec::new();
    };
    let record = items(root, target).unwrap_or_else(|| deref(root, target, 0));
    record
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, schema)| {
            let kind = deref(root, schema, 0).get("type").and_then(Value::as_str);
            (name.clone(), kind)
        })
        .collect()
}
