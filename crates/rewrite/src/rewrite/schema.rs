//! A small JSON Schema validator for the subset output schemas use, so that
//! structured content parsed from text can be checked against the overlay's
//! `output_schema` without a large dependency. Keywords outside the subset
//! (`pattern`, `format`, `if`/`then`, …) are ignored: the check can accept a
//! value a full validator would refuse, never the reverse.
//!
//! Supported: boolean schemas, `type` (string or list, `integer` included),
//! `enum`, `const`, `properties`, `required`, `additionalProperties`,
//! `items` (schema, or list as tuples), `prefixItems`, `minItems`, `maxItems`,
//! `minLength`, `maxLength`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`, `allOf`, `anyOf`, `oneOf`, `not`, and local `$ref`
//! (`#`, `#/$defs/…`, `#/definitions/…`).

use serde_json::{Map, Value};

use mcp_ui_overlay::overlay::builtin::pointer_segment;

/// `$ref` hops allowed along one path: enough for real schemas, and a bound
/// on recursive ones applied to a cyclic value.
const MAX_DEPTH: usize = 64;

/// Checks `instance` against `schema`; the error names the first failing
/// place as a JSON pointer, e.g. `/tasks/0/id: expected integer, got string`.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), Mismatch> {
    Validator { root: schema }.check(schema, instance, "", 0)
}

/// Where an instance first fails its schema, and why; shown as
/// `/tasks/0/id: expected integer, got string`. Whose fault it is, the
/// caller knows: the upstream's for a result that breaks its output schema,
/// the client's for arguments that break a tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The failing place, a JSON pointer (`/` for the root).
    pub place: String,
    pub reason: String,
}

impl Mismatch {
    fn at(at: &str, reason: String) -> Mismatch {
        Mismatch {
            place: place(at).to_owned(),
            reason,
        }
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.place, self.reason)
    }
}

impl std::error::Error for Mismatch {}

struct Validator<'a> {
    root: &'a Value,
}

impl Validator<'_> {
    fn check(&self, schema: &Value, value: &Value, at: &str, depth: usize) -> Result<(), Mismatch> {
        let fail = |why: String| Err(Mismatch::at(at, why));
        if depth > MAX_DEPTH {
            return fail("schema nesting too deep".into());
        }
        let schema = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return fail("no value is allowed here".into()),
            Value::Object(schema) => schema,
            _ => return Ok(()),
        };
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let target = reference
                .strip_prefix('#')
                .and_then(|pointer| self.root.pointer(pointer));
            match target {
                Some(target) => self.check(target, value, at, depth + 1)?,
                None => return fail(format!("unresolvable $ref {reference}")),
            }
        }
        if let Some(kind) = schema.get("type")
            && !type_matches(kind, value)
        {
            return fail(format!(
                "expected {}, got {}",
                type_names(kind),
                type_of(value)
            ));
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array)
            && !options.contains(value)
        {
            return fail(format!("{value} is not one of the enum values"));
        }
        if let Some(constant) = schema.get("const")
            && constant != value
        {
            return fail(format!("expected {constant}"));
        }
        self.combinators(schema, value, at, depth)?;
        match value {
            Value::Object(object) => self.object(schema, object, at, depth),
            Value::Array(items) => self.array(schema, items, at, depth),
            Value::String(s) => {
                let len = s.chars().count() as f64;
                bounds(schema, len, "minLength", "maxLength")
                    .map_err(|why| Mismatch::at(at, format!("length {why}")))
            }
            Value::Number(n) => {
                numeric(schema, n.as_f64().unwrap_or(f64::NAN)).map_err(|why| Mismatch::at(at, why))
            }
            _ => Ok(()),
        }
    }

    fn combinators(
        &self,
        schema: &Map<String, Value>,
        value: &Value,
        at: &str,
        depth: usize,
    ) -> Result<(), Mismatch> {
        let list = |key: &str| schema.get(key).and_then(Value::as_array);
        for sub in list("allOf").into_iter().flatten() {
            self.check(sub, value, at, depth + 1)?;
        }
        if let Some(branches) = list("anyOf")
            && !branches
                .iter()
                .any(|b| self.check(b, value, at, depth + 1).is_ok())
        {
            return Err(Mismatch::at(at, "matches none of anyOf".into()));
        }
        if let Some(branches) = list("oneOf") {
            let matching = branches
                .iter()
                .filter(|b| self.check(b, value, at, depth + 1).is_ok())
                .count();
            if matching != 1 {
                return Err(Mismatch::at(
                    at,
                    format!("matches {matching} of oneOf, not exactly one"),
                ));
            }
        }
        if let Some(not) = schema.get("not")
            && self.check(not, value, at, depth + 1).is_ok()
        {
            return Err(Mismatch::at(at, "matches the `not` schema".into()));
        }
        Ok(())
    }

    fn object(
        &self,
        schema: &Map<String, Value>,
        object: &Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<(), Mismatch> {
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(key) = key.as_str()
                && !object.contains_key(key)
            {
                return Err(Mismatch::at(
                    at,
                    format!("missing required property `{key}`"),
                ));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let additional = schema.get("additionalProperties");
        for (key, member) in object {
            let path = format!("{at}/{}", pointer_segment(key));
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => self.check(sub, member, &path, depth + 1)?,
                None => match additional {
                    Some(Value::Bool(false)) => {
                        return Err(Mismatch::at(&path, "property not allowed".into()));
                    }
                    Some(sub @ Value::Object(_)) => self.check(sub, member, &path, depth + 1)?,
                    _ => {}
                },
            }
        }
        Ok(())
    }

    fn array(
        &self,
        schema: &Map<String, Value>,
        items: &[Value],
        at: &str,
        depth: usize,
    ) -> Result<(), Mismatch> {
        bounds(schema, items.len() as f64, "minItems", "maxItems")
            .map_err(|why| Mismatch::at(at, format!("item count {why}")))?;
        // Draft 2020-12 `prefixItems` + `items`, or the older tuple `items`
        // list + `additionalItems`.
        let (prefix, rest) = match (schema.get("prefixItems"), schema.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix.as_slice(), rest),
            (None, Some(Value::Array(prefix))) => {
                (prefix.as_slice(), schema.get("additionalItems"))
            }
            (_, rest) => (&[][..], rest),
        };
        for (i, item) in items.iter().enumerate() {
            let sub = prefix.get(i).or(rest);
            if let Some(sub) = sub {
                self.check(sub, item, &format!("{at}/{i}"), depth + 1)?;
            }
        }
        Ok(())
    }
}

fn type_matches(kind: &Value, value: &Value) -> bool {
    match kind {
        Value::String(name) => is_type(name, value),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .any(|n| is_type(n, value)),
        _ => true,
    }
}

fn is_type(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        // 1.0 is an integer in JSON Schema.
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        _ => true,
    }
}

fn type_names(kind: &Value) -> String {
    match kind {
        Value::Array(names) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            names.join(" or ")
        }
        other => other.as_str().unwrap_or("?").to_owned(),
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn bounds(schema: &Map<String, Value>, n: f64, min: &str, max: &str) -> Result<(), String> {
    if let Some(min) = schema.get(min).and_then(Value::as_f64)
        && n < min
    {
        return Err(format!("{n} is below the minimum {min}"));
    }
    if let Some(max) = schema.get(max).and_then(Value::as_f64)
        && n > max
    {
        return Err(format!("{n} is above the maximum {max}"));
    }
    Ok(())
}

fn numeric(schema: &Map<String, Value>, n: f64) -> Result<(), String> {
    bounds(schema, n, "minimum", "maximum")?;
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(limit) = number("exclusiveMinimum")
        && n <= limit
    {
        return Err(format!("{n} is not above {limit}"));
    }
    if let Some(limit) = number("exclusiveMaximum")
        && n >= limit
    {
        return Err(format!("{n} is not below {limit}"));
    }
    Ok(())
}

/// The JSON pointer for messages: `/` for the root itself.
fn place(at: &str) -> &str {
    if at.is_empty() { "/" } else { at }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    /// The check, its error as shown.
    fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
        super::validate(schema, instance).map_err(|m| m.to_string())
    }

    #[test]
    fn table() {
        let time = json!({
            "type": "object",
            "properties": {
                "timezone": { "type": "string" },
                "is_dst": { "type": "boolean" },
                "offset": { "type": ["integer", "null"], "minimum": -12, "maximum": 14 },
                "when": { "$ref": "#/$defs/When" }
            },
            "required": ["timezone", "is_dst"],
            "additionalProperties": false,
            "$defs": { "When": { "enum": ["past", "now"] } }
        });
        let cases = [
            (json!({ "timezone": "UTC", "is_dst": false }), Ok(())),
            (
                json!({ "timezone": "UTC", "is_dst": false, "offset": 2.0, "when": "now" }),
                Ok(()),
            ),
            (
                json!({ "timezone": "UTC", "is_dst": false, "offset": null }),
                Ok(()),
            ),
            (
                json!({ "timezone": "UTC" }),
                Err("/: missing required property `is_dst`"),
            ),
            (
                json!({ "timezone": 1, "is_dst": true }),
                Err("/timezone: expected string, got number"),
            ),
            (
                json!({ "timezone": "x", "is_dst": true, "offset": 1.5 }),
                Err("/offset: expected integer or null"),
            ),
            (
                json!({ "timezone": "x", "is_dst": true, "offset": 15 }),
                Err("/offset: 15 is above the maximum 14"),
            ),
            (
                json!({ "timezone": "x", "is_dst": true, "when": "later" }),
                Err("/when: \"later\" is not one of"),
            ),
            (
                json!({ "timezone": "x", "is_dst": true, "extra": 1 }),
                Err("/extra: property not allowed"),
            ),
            (json!([]), Err("/: expected object, got array")),
        ];
        for (instance, expected) in cases {
            match (validate(&time, &instance), expected) {
                (Ok(()), Ok(())) => {}
                (Err(got), Err(want)) => assert!(got.starts_with(want), "{instance}: {got}"),
                (got, want) => panic!("{instance}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn arrays_combinators_and_strings() {
        let schema = json!({
            "type": "array",
            "minItems": 1,
            "items": { "anyOf": [{ "type": "string", "maxLength": 3 }, { "type": "integer" }] }
        });
        assert!(validate(&schema, &json!(["abc", 1])).is_ok());
        assert!(
            validate(&schema, &json!([]))
                .unwrap_err()
                .contains("below the minimum 1")
        );
        assert!(
            validate(&schema, &json!(["abcd"]))
                .unwrap_err()
                .starts_with("/0: matches none of anyOf")
        );
        let one_of = json!({ "oneOf": [{ "type": "number" }, { "type": "integer" }] });
        assert!(
            validate(&one_of, &json!(1))
                .unwrap_err()
                .contains("matches 2 of oneOf")
        );
        assert!(validate(&json!({ "not": { "type": "null" } }), &json!(null)).is_err());
        assert!(validate(&json!(false), &json!(1)).is_err());
        assert_eq!(
            validate(&json!({ "minimum": 1 }), &json!(0)).unwrap_err(),
            "/: 0 is below the minimum 1"
        );
        assert!(validate(&json!({ "pattern": "^x$", "format": "email" }), &json!("y")).is_ok());
        let escaped = json!({ "properties": { "a/b": { "type": "string" } } });
        assert_eq!(
            validate(&escaped, &json!({ "a/b": 1 })).unwrap_err(),
            "/a~1b: expected string, got number"
        );
    }

    #[test]
    fn recursive_schemas_terminate() {
        let tree = json!({
            "$defs": { "node": { "type": "object", "properties": { "kids": { "type": "array", "items": { "$ref": "#/$defs/node" } } } } },
            "$ref": "#/$defs/node"
        });
        assert!(validate(&tree, &json!({ "kids": [{ "kids": [] }] })).is_ok());
        let cycle = json!({ "$ref": "#" });
        assert!(
            validate(&cycle, &json!(1))
                .unwrap_err()
                .contains("too deep")
        );
    }

    /// The editor schema of the overlay files, read by this validator.
    #[test]
    fn the_editor_schema_takes_the_documented_view_and_refuses_typos() {
        let schema: Value = serde_json::from_str(include_str!(
            "../../../../overlays/schema/overlay.schema.json"
        ))
        .unwrap();
        let good: Value = toml::from_str(
            r#"
    [tools.list_tasks]
    widget = "builtin:table"
    [tools.list_tasks.view]
    data = "/tasks"
    heading = "Tasks"
    columns = ["title", { key = "due", title = "Due", format = "date" }, { key = "price", format = "currency", currency = "EUR" }]
    sort = "-due"
    empty = "No tasks yet."
    "#,
        )
        .unwrap();
        validate(&schema, &good).unwrap();
        // (The gateway's validator skips `pattern`; editors check the kind and pointer too.)
        for bad in [
            json!({ "tools": { "t": { "widget": "builtin:table", "view": { "colums": ["a"] } } } }),
            json!({ "tools": { "t": { "view": { "columns": [{ "key": "a", "format": "money" }] } } } }),
        ] {
            assert!(validate(&schema, &bad).is_err(), "{bad}");
        }
    }
}
