//! Built-in widgets: a UI for a tool without writing one. An overlay names a
//! kind (`widget = "builtin:table"`) and, optionally, a few options
//! (`[tools.<name>.view]`); the gateway compiles them into one self-contained
//! HTML document (its CSS and script are embedded in the binary, the options
//! injected as JSON) served like any widget: a content-hashed `ui://` URI,
//! `text/html;profile=mcp-app`, empty CSP lists (it loads nothing from the
//! network).
//!
//! The document speaks both hosts' bridges (MCP Apps `ui/*` over
//! `postMessage`, and `window.openai`), follows the host's theme and locale,
//! and reports its size. Everything here is pure: the documents come from
//! `include_str!`, the options from the overlay.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::format::{Csp, WidgetManifest};
use super::widget::{Widget, compact};

mod schema;
#[cfg(test)]
mod script_tests;
#[cfg(test)]
mod tests;

use crate::overlay::format::view;
pub(crate) use schema::resolve_pointer;
pub use schema::{
    Resolved, default_array, default_string, is_array as schema_is_array,
    is_string as schema_is_string, items as schema_items, pointer_segment,
};
pub use view::{Field, Format, View};

/// What a `widget` value starts with when it names a built-in widget.
pub const PREFIX: &str = "builtin:";

/// The kinds of built-in widget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// An array of objects as a sortable table.
    Table,
    /// One object (or each of an array of them) as a card.
    Card,
    /// An array as a list of items with a primary and a secondary line.
    List,
    /// One object as key/value pairs.
    Kv,
    /// A text rendered as Markdown, safely (no raw HTML, http(s) links only).
    Markdown,
    /// An array of records as a bar or line chart of their numeric fields.
    Chart,
}

/// What a kind renders: a list, one object, or a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    List,
    Object,
    Text,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Table,
        Kind::Card,
        Kind::List,
        Kind::Kv,
        Kind::Markdown,
        Kind::Chart,
    ];

    /// The spelling after `builtin:`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::Card => "card",
            Kind::List => "list",
            Kind::Kv => "kv",
            Kind::Markdown => "markdown",
            Kind::Chart => "chart",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// What the data pointer must lead to.
    pub fn shape(self) -> Shape {
        match self {
            Kind::Table | Kind::List | Kind::Chart => Shape::List,
            // A card also takes an array: one card per item.
            Kind::Card | Kind::Kv => Shape::Object,
            Kind::Markdown => Shape::Text,
        }
    }

    /// The `view` options this kind reads.
    pub fn options(self) -> &'static [&'static str] {
        match self {
            Kind::Table => &[
                "data", "heading", "columns", "sort", "empty", "actions", "refresh", "domain",
            ],
            Kind::Card => &[
                "data",
                "heading",
                "title",
                "subtitle",
                "image",
                "image_domains",
                "fields",
                "empty",
                "actions",
                "refresh",
                "domain",
            ],
            Kind::List => &[
                "data",
                "heading",
                "primary",
                "secondary",
                "empty",
                "actions",
                "refresh",
                "domain",
            ],
            Kind::Chart => &["data", "heading", "type", "x", "y", "empty", "domain"],
            Kind::Kv => &["data", "heading", "fields", "domain"],
            Kind::Markdown => &["data", "heading", "domain"],
        }
    }

    fn script(self) -> &'static str {
        match self {
            Kind::Table => include_str!("builtin/table.js"),
            Kind::Card => include_str!("builtin/card.js"),
            Kind::List => include_str!("builtin/list.js"),
            Kind::Kv => include_str!("builtin/kv.js"),
            Kind::Markdown => include_str!("builtin/markdown.js"),
            Kind::Chart => include_str!("builtin/chart.js"),
        }
    }
}

/// `Some` when `widget` names a built-in widget (`builtin:<kind>`): the kind,
/// or why it is none; `None` for a widget folder's name.
pub(crate) fn reference(widget: &str) -> Option<Result<Kind, String>> {
    let name = widget.strip_prefix(PREFIX)?;
    Some(Kind::parse(name).ok_or_else(|| {
        let kinds: Vec<String> = Kind::ALL
            .iter()
            .map(|k| format!("`{PREFIX}{}`", k.as_str()))
            .collect();
        format!(
            "`{widget}` is no built-in widget; the built-in widgets are {}",
            kinds.join(", ")
        )
    }))
}

/// The name of the widget compiled for tool `tool` of `mount`: unique per
/// tool, stable across versions, and never a widget folder's name (those
/// have no `.`).
pub fn widget_name(mount: &str, tool: &str, kind: Kind) -> String {
    let mut hasher = Sha256::new();
    hasher.update(mount.as_bytes());
    hasher.update([0u8]);
    hasher.update(tool.as_bytes());
    let digest = hex::encode(hasher.finalize());
    format!("builtin.{}.{}", kind.as_str(), &digest[..10])
}

/// Whether `name` is that of a compiled built-in widget.
pub fn is_builtin_name(name: &str) -> bool {
    name.starts_with("builtin.")
}

/// What a built-in widget's document needs beyond its options.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    /// The tool whose results it shows, which its actions refresh by
    /// default; `None` for a render tool's widget.
    pub tool: Option<&'a str>,
    /// The output schema of its data (the overlay's, when it has one): the
    /// default columns, fields and series.
    pub output_schema: Option<&'a Map<String, Value>>,
    /// Whether an action calling a tool asks first by default: the overlay's
    /// annotations of that tool decide.
    pub asks: &'a dyn Fn(&str) -> bool,
}

/// Compiles the built-in widget `name` (a tool's or a render tool's) of
/// `mount`. The options must have passed `validate::builtin::view`.
pub fn compile(mount: &str, name: &str, kind: Kind, view: &View, cx: Context<'_>) -> Widget {
    let manifest = WidgetManifest {
        title: Some(format!("{name} ({})", kind.as_str())),
        prefers_border: Some(true),
        csp: Some(Csp {
            connect_domains: Some(Vec::new()),
            resource_domains: Some(view.image_domains.clone().unwrap_or_default()),
            ..Csp::default()
        }),
        domain: view.domain.clone(),
        ..WidgetManifest::default()
    };
    let html = document(kind, &options_json(kind, view, cx));
    Widget::compile(&widget_name(mount, name, kind), &manifest, html)
}

/// The options as the document reads them: the view, the kind, the
/// defaults the output schema gives, each action's confirmation question
/// (or `false`), and the call that refreshes the data after an action.
pub(crate) fn options_json(kind: Kind, view: &View, cx: Context<'_>) -> Value {
    let mut options = match serde_json::to_value(view) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    options.insert("kind".into(), json!(kind.as_str()));
    let data = view.data.as_deref();
    if let Some(schema) = cx.output_schema {
        let root = Value::Object(schema.clone());
        let fields = |keys: Vec<String>| -> Value {
            keys.into_iter().map(|k| json!({ "key": k })).collect()
        };
        let key = match kind {
            Kind::Table => Some("columns"),
            Kind::Card | Kind::Kv => Some("fields"),
            _ => None,
        };
        if let Some(key) = key
            && !options.contains_key(key)
        {
            let keys = schema::default_keys(&root, data, kind.shape() == Shape::List);
            if !keys.is_empty() {
                options.insert(key.into(), fields(keys));
            }
        }
        if kind == Kind::Chart {
            let (label, series) = schema::default_chart(&root, data);
            if let (false, Some(label)) = (options.contains_key("x"), label) {
                options.insert("x".into(), json!(label));
            }
            if !options.contains_key("y") && !series.is_empty() {
                options.insert("y".into(), fields(series));
            }
        }
    }
    if let Some(actions) = &view.actions {
        let actions: Vec<Value> = actions
            .iter()
            .map(|action| {
                let confirm = match &action.confirm {
                    Some(view::Confirm::Question(question)) => json!(question),
                    Some(view::Confirm::Ask(false)) => json!(false),
                    Some(view::Confirm::Ask(true)) => json!(format!("{}?", action.label)),
                    None if (cx.asks)(&action.tool) => json!(format!("{}?", action.label)),
                    None => json!(false),
                };
                json!({
                    "label": action.label,
                    "tool": action.tool,
                    "arguments": action.arguments.clone().unwrap_or_default(),
                    "confirm": confirm,
                })
            })
            .collect();
        options.insert("actions".into(), Value::Array(actions));
        let refresh = match (&view.refresh, cx.tool) {
            (Some(refresh), _) => json!({
                "tool": refresh.tool,
                "arguments": refresh.arguments.clone().unwrap_or_default(),
            }),
            (None, Some(tool)) => json!({ "tool": tool, "input": true }),
            (None, None) => Value::Null,
        };
        options.insert("refresh".into(), refresh);
    }
    Value::Object(options)
}

/// The HTML document: the kit's CSS, the options in a JSON script element
/// (escaped so no text in them can end it), the kind's script and the
/// kit's core.
pub fn document(kind: Kind, options: &Value) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{kind}</title><style>{css}</style></head>\
         <body><main id=\"root\" aria-live=\"polite\"><p class=\"note\">Waiting for the tool result\u{2026}</p></main>\
         <p id=\"status\" class=\"sr\" role=\"status\"></p>\
         <script type=\"application/json\" id=\"view-options\">{options}</script>\
         <script>{script}\n{core}</script></body></html>\n",
        kind = kind.as_str(),
        css = compact(include_str!("builtin/kit.css")),
        options = script_json(options),
        script = match options.get("actions") {
            Some(_) => compact(kind.script()) + &compact(include_str!("builtin/actions.js")),
            None => compact(kind.script()),
        },
        core = compact(include_str!("builtin/core.js")),
    )
}

/// JSON that is safe inside `<script type="application/json">`: no `<`, `>`
/// or `&` (so no `</script>` or `<!--`), nor the two line separators some
/// parsers treat as line ends. Each is only ever inside a JSON string, where
/// its `\u` escape means the same.
pub(crate) fn script_json(value: &Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_else(|_| "{}".into());
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}
