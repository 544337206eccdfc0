//! The rules of built-in widgets (`widget = "builtin:<kind>"` and its
//! `view` options): the options on their own, and the keys and pointers
//! they name against a tool's output schema (the overlay's when loading, the
//! live listing's in `check`).

use serde_json::Value;

use super::csp::origin;
use super::names::nearest;
use super::problem::Problem;
use super::widget_domain;
use crate::overlay::builtin::{self, Field, Format, Kind, Resolved, Shape, View};
use crate::overlay::builtin::{default_array, default_string, pointer_segment, resolve_pointer};
use crate::overlay::format::view::Confirm;

/// The built-in kind a tool overlay's `widget` names, if it names one that
/// exists.
pub fn kind_of(widget: Option<&str>) -> Option<Kind> {
    builtin::reference(widget?)?.ok()
}

/// Checks `widget` (when it says `builtin:`) and the `view` options, without
/// any schema.
pub fn view(widget: Option<&str>, view: Option<&View>, problems: &mut Vec<Problem>) {
    let kind = match widget.and_then(builtin::reference) {
        Some(Ok(kind)) => kind,
        Some(Err(reason)) => {
            problems.push(Problem::new("widget", reason));
            return;
        }
        None => {
            if view.is_some() {
                problems.push(Problem::new(
                    "view",
                    "options of a built-in widget, but `widget` names none (widget = \"builtin:table\", \"builtin:card\", …)",
                ));
            }
            return;
        }
    };
    let Some(view) = view else {
        return;
    };
    let allowed = kind.options();
    for option in view.set() {
        if !allowed.contains(&option) {
            problems.push(Problem::new(
                format!("view.{option}"),
                format!(
                    "not an option of `builtin:{}` (its options: {})",
                    kind.as_str(),
                    allowed.join(", ")
                ),
            ));
        }
    }
    if let Some(data) = &view.data
        && !data.is_empty()
        && !data.starts_with('/')
    {
        problems.push(Problem::new(
            "view.data",
            format!("`{data}` is not a JSON pointer; write `/{data}` (\"\" is the root)"),
        ));
    }
    for (key, fields) in [
        ("columns", &view.columns),
        ("fields", &view.fields),
        ("y", &view.y),
    ] {
        if let Some(fields) = fields {
            field_list(key, fields, problems);
        }
    }
    actions(view, problems);
    let single = single_keys(view);
    for (key, value) in single {
        if value.as_deref().is_some_and(str::is_empty) {
            problems.push(Problem::new(format!("view.{key}"), "empty key"));
        }
    }
    if let (Some(sort), Some(columns)) = (&view.sort, &view.columns) {
        let key = sort.strip_prefix('-').unwrap_or(sort);
        if !columns.iter().any(|c| c.key == key) {
            problems.push(Problem::new(
                "view.sort",
                format!("`{key}` is none of the columns"),
            ));
        }
    }
    for (i, domain) in view.image_domains.iter().flatten().enumerate() {
        if let Err(reason) = origin(domain) {
            problems.push(Problem::new(format!("view.image_domains[{i}]"), reason));
        }
    }
    if let Some(domain) = &view.domain {
        widget_domain::check("view.domain", domain, problems);
    }
}

/// The options that name one key of the data, by their option name.
fn single_keys(view: &View) -> [(&'static str, &Option<String>); 6] {
    [
        ("primary", &view.primary),
        ("secondary", &view.secondary),
        ("title", &view.title),
        ("subtitle", &view.subtitle),
        ("image", &view.image),
        ("x", &view.x),
    ]
}

/// Actions and the refresh call, without the listing: each names a tool and
/// has a label; a refresh only follows an action.
fn actions(view: &View, problems: &mut Vec<Problem>) {
    let tool_name = |place: String, tool: &str, problems: &mut Vec<Problem>| {
        if tool.is_empty() {
            problems.push(Problem::new(place, "empty: name a tool of the same server"));
        }
    };
    if let Some(actions) = &view.actions {
        if actions.is_empty() {
            problems.push(Problem::new(
                "view.actions",
                "empty; omit it for no buttons",
            ));
        }
        let mut labels = Vec::new();
        for (i, action) in actions.iter().enumerate() {
            let place = format!("view.actions[{i}]");
            if action.label.trim().is_empty() {
                problems.push(Problem::new(
                    format!("{place}.label"),
                    "empty: a button needs a text",
                ));
            } else if labels.contains(&action.label.as_str()) {
                problems.push(Problem::new(
                    format!("{place}.label"),
                    format!("`{}` is used by two actions", action.label),
                ));
            }
            labels.push(&action.label);
            tool_name(format!("{place}.tool"), &action.tool, problems);
            if let Some(Confirm::Question(question)) = &action.confirm
                && question.trim().is_empty()
            {
                problems.push(Problem::new(
                    format!("{place}.confirm"),
                    "empty: write the question, or true for the default one",
                ));
            }
        }
    }
    if let Some(refresh) = &view.refresh {
        tool_name("view.refresh".into(), &refresh.tool, problems);
        if view.actions.is_none() {
            problems.push(Problem::new(
                "view.refresh",
                "the data is refreshed after an action, and there are none: add actions or remove refresh",
            ));
        }
    }
}

fn field_list(key: &str, fields: &[Field], problems: &mut Vec<Problem>) {
    if fields.is_empty() {
        problems.push(Problem::new(
            format!("view.{key}"),
            "empty; omit it to show every property",
        ));
    }
    let mut seen = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let place = format!("view.{key}[{i}]");
        if field.key.is_empty() {
            problems.push(Problem::new(&place, "empty key"));
        } else if seen.contains(&field.key.as_str()) {
            problems.push(Problem::new(
                &place,
                format!("`{}` is listed twice", field.key),
            ));
        }
        seen.push(&field.key);
        match (&field.format, &field.currency) {
            (Some(Format::Currency), None) => problems.push(Problem::new(
                format!("{place}.currency"),
                "format = \"currency\" needs an ISO 4217 code (currency = \"EUR\")",
            )),
            (Some(Format::Currency), Some(code)) if !is_currency_code(code) => {
                problems.push(Problem::new(
                    format!("{place}.currency"),
                    format!("`{code}` is not an ISO 4217 code (three capital letters, e.g. EUR)"),
                ));
            }
            (format, Some(_)) if *format != Some(Format::Currency) => problems.push(Problem::new(
                format!("{place}.currency"),
                "only applies with format = \"currency\"",
            )),
            _ => {}
        }
    }
}

fn is_currency_code(code: &str) -> bool {
    code.len() == 3 && code.chars().all(|c| c.is_ascii_uppercase())
}

/// Checks what the options of a `kind` widget name against the tool's
/// output `schema`: the data pointer must lead somewhere (to an array for a
/// table or list, to a string for markdown), and every key must be a
/// property of the records. A schema that does not say (no `properties`)
/// passes.
pub fn against_schema(kind: Kind, view: &View, schema: &Value) -> Vec<Problem> {
    let data = match data_pointer(kind, view, schema) {
        Ok(data) => data,
        Err(stop) => return stop.into_iter().collect(),
    };
    let target = match resolve_pointer(schema, schema, &data) {
        Resolved::Found(target) => target,
        Resolved::Unknown => return Vec::new(),
        Resolved::Nowhere { at, known } => {
            return vec![Problem::new(
                "view.data",
                format!(
                    "`{data}` points nowhere in the output schema: {}",
                    missing(&data, &at, &known)
                ),
            )];
        }
    };
    if let Some(problem) = shape_problem(kind, schema, target, &data) {
        return vec![problem];
    }
    let record = builtin::schema_items(schema, target).unwrap_or(target);
    let mut problems = Vec::new();
    for (place, key) in view_keys(view) {
        let pointer = if key.starts_with('/') {
            key.to_owned()
        } else {
            format!("/{}", pointer_segment(key))
        };
        match resolve_pointer(schema, record, &pointer) {
            Resolved::Nowhere { at, known } => {
                let reason = format!(
                    "`{key}` is not in the output schema's records at `{}`: {}",
                    if data.is_empty() { "/" } else { &data },
                    missing(&pointer, &at, &known)
                );
                problems.push(Problem::new(place, reason));
            }
            Resolved::Found(found) if place.starts_with("view.y[") => {
                let kind = found.get("type").and_then(Value::as_str);
                if kind.is_some_and(|k| k != "number" && k != "integer") {
                    let reason = format!(
                        "`{key}` is a {} in the output schema; a chart draws numbers",
                        kind.unwrap_or_default()
                    );
                    problems.push(Problem::new(place, reason));
                }
            }
            _ => {}
        }
    }
    problems
}

/// The pointer to the data a `kind` widget shows: `view.data`, else the one
/// the widget would pick in the output schema. `Err` stops the check, with
/// the problem when there is one (none: the schema does not say).
fn data_pointer(kind: Kind, view: &View, schema: &Value) -> Result<String, Option<Problem>> {
    match &view.data {
        Some(pointer) => Ok(pointer.clone()),
        None if kind.shape() == Shape::List => match default_array(schema).as_slice() {
            [only] => Ok(format!("/{}", pointer_segment(only))),
            [] if schema.get("properties").is_some() => Err(Some(Problem::new(
                "view.data",
                format!(
                    "missing, and the output schema has no array property for the {} to show; point data at the list",
                    if kind == Kind::Table {
                        "table's rows"
                    } else {
                        "list's items"
                    }
                ),
            ))),
            [] => Err(None),
            several => {
                let names: Vec<String> = several.iter().map(|n| format!("`/{n}`")).collect();
                Err(Some(Problem::new(
                    "view.data",
                    format!(
                        "missing, and the output schema has several array properties: set it to one of {}",
                        names.join(", ")
                    ),
                )))
            }
        },
        // As the widget reads it: the root's only string property, else
        // the result's first text, which the output schema does not describe.
        None if kind.shape() == Shape::Text => match default_string(schema).as_slice() {
            [only] => Ok(format!("/{}", pointer_segment(only))),
            _ => Err(None),
        },
        None => Ok(String::new()),
    }
}

/// Whether what `data` points at (`target`) has the shape a `kind` widget
/// shows: a list of records, one object, or a text.
fn shape_problem(kind: Kind, schema: &Value, target: &Value, data: &str) -> Option<Problem> {
    let is_array = builtin::schema_is_array(schema, target);
    let typed = target.get("type").is_some() || target.get("$ref").is_some();
    match kind.shape() {
        Shape::List if typed && !is_array => Some(Problem::new(
            "view.data",
            format!(
                "`{data}` is not an array in the output schema; `builtin:{}` shows a list of records",
                kind.as_str()
            ),
        )),
        Shape::Object if kind == Kind::Kv && is_array => Some(Problem::new(
            "view.data",
            format!("`{data}` is an array; `builtin:kv` shows one object (use `builtin:table`)"),
        )),
        Shape::Text if builtin::schema_is_string(schema, target) == Some(false) => {
            let strings: Vec<String> = default_string(schema)
                .iter()
                .map(|name| format!("`/{}`", pointer_segment(name)))
                .collect();
            let hint = match strings.as_slice() {
                [] => String::new(),
                [one] => format!(": set it to {one}"),
                several => format!(": set it to one of {}", several.join(", ")),
            };
            Some(Problem::new(
                "view.data",
                format!(
                    "`{data}` is not a string in the output schema; `builtin:markdown` renders a text{hint}"
                ),
            ))
        }
        _ => None,
    }
}

/// Every key and pointer the options name, with where each is written:
/// columns, fields and y values, action arguments that are pointers, the
/// single keys, and the sort key when there are no columns.
fn view_keys(view: &View) -> Vec<(String, &str)> {
    let mut keys: Vec<(String, &str)> = Vec::new();
    for (list, fields) in [
        ("columns", &view.columns),
        ("fields", &view.fields),
        ("y", &view.y),
    ] {
        for (i, field) in fields.iter().flatten().enumerate() {
            keys.push((format!("view.{list}[{i}]"), field.key.as_str()));
        }
    }
    for (i, action) in view.actions.iter().flatten().enumerate() {
        for (name, value) in action.arguments.iter().flatten() {
            if let Some(pointer) = value.as_str().filter(|v| v.starts_with('/')) {
                keys.push((format!("view.actions[{i}].arguments.{name}"), pointer));
            }
        }
    }
    let single = single_keys(view);
    for (key, value) in single {
        if let Some(value) = value {
            keys.push((format!("view.{key}"), value.as_str()));
        }
    }
    if view.columns.is_none()
        && let Some(sort) = &view.sort
    {
        keys.push(("view.sort".into(), sort.strip_prefix('-').unwrap_or(sort)));
    }
    keys
}

/// "`/` has no property `x`; did you mean `y`?" (or its properties).
fn missing(pointer: &str, at: &str, known: &[String]) -> String {
    let prefix_len = if at == "/" { 0 } else { at.len() };
    let name = pointer[prefix_len.min(pointer.len())..]
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let mut reason = format!("`{at}` has no property `{name}`");
    let names: Vec<&str> = known.iter().map(String::as_str).collect();
    match nearest(name, &names) {
        Some(near) => reason.push_str(&format!("; did you mean `{near}`?")),
        None if names.is_empty() => reason.push_str(" (it lists none)"),
        None => {
            let quoted: Vec<String> = names.iter().take(12).map(|n| format!("`{n}`")).collect();
            reason.push_str(&format!(" (its properties: {})", quoted.join(", ")));
        }
    }
    reason
}
