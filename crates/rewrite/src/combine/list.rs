//! Listing pages: what one member's page holds, and its items as the app
//! lists them (a member's prefix put before tool and prompt names).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// What a listing lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Tools,
    Prompts,
    Resources,
    Templates,
}

impl Kind {
    /// The kind `method` lists, for the four listing methods.
    pub fn of_list(method: &str) -> Option<Kind> {
        Some(match method {
            "tools/list" => Kind::Tools,
            "prompts/list" => Kind::Prompts,
            "resources/list" => Kind::Resources,
            "resources/templates/list" => Kind::Templates,
            _ => return None,
        })
    }

    /// The method that lists this kind.
    pub fn list_method(self) -> &'static str {
        match self {
            Kind::Tools => "tools/list",
            Kind::Prompts => "prompts/list",
            Kind::Resources => "resources/list",
            Kind::Templates => "resources/templates/list",
        }
    }

    /// The result's member holding the items.
    pub fn key(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Prompts => "prompts",
            Kind::Resources => "resources",
            Kind::Templates => "resourceTemplates",
        }
    }

    /// The item member that identifies an item.
    pub(crate) fn id_field(self) -> &'static str {
        match self {
            Kind::Tools | Kind::Prompts => "name",
            Kind::Resources => "uri",
            Kind::Templates => "uriTemplate",
        }
    }

    /// Whether a member's prefix applies (names do; URIs do not).
    pub fn prefixed(self) -> bool {
        matches!(self, Kind::Tools | Kind::Prompts)
    }

    /// For messages: "tool", "prompt", …
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Tools => "tool",
            Kind::Prompts => "prompt",
            Kind::Resources => "resource",
            Kind::Templates => "resource template",
        }
    }
}

/// One member's page, as the app lists it: each item the member's own text
/// (a prefixed one written again with its new name), never the whole page
/// as a tree of values.
#[derive(Debug, Default)]
pub struct Page {
    /// The items, prefixed.
    pub items: Vec<Box<RawValue>>,
    /// Each item's (listed, own) identifier, in order.
    pub names: Vec<(String, String)>,
    /// The member's cursor for its next page.
    pub next: Option<String>,
    /// The `ui://` resources its tools name as their widget
    /// (`_meta.ui.resourceUri`, `_meta["openai/outputTemplate"]`).
    pub widget_uris: Vec<String>,
}

/// What the app reads of a listing result: the items, each kept as text.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
    #[serde(borrow, default)]
    prompts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    resources: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "resourceTemplates")]
    templates: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "nextCursor")]
    next: Option<&'a RawValue>,
}

/// What the app reads of one item: its identifier and its widget.
#[derive(Deserialize)]
struct ItemHead<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "uriTemplate")]
    uri_template: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MetaHead<'a> {
    #[serde(borrow, default)]
    ui: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "openai/outputTemplate")]
    output_template: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct UiHead<'a> {
    #[serde(borrow, default, rename = "resourceUri")]
    resource_uri: Option<&'a RawValue>,
}

/// A raw value that is a string, as one.
fn text(raw: Option<&RawValue>) -> Option<String> {
    serde_json::from_str::<String>(raw?.get()).ok()
}

/// The page a member's `result` holds, with `prefix` put before names;
/// `None` when the result is not a page of `kind`.
pub fn page(result: &RawValue, kind: Kind, prefix: &str) -> Option<Page> {
    let head: Head<'_> = serde_json::from_str(result.get()).ok()?;
    let items = match kind {
        Kind::Tools => head.tools,
        Kind::Prompts => head.prompts,
        Kind::Resources => head.resources,
        Kind::Templates => head.templates,
    }?;
    let items: Vec<&RawValue> = serde_json::from_str(items.get()).ok()?;
    let mut page = Page {
        next: text(head.next),
        ..Page::default()
    };
    for item in items {
        let Ok(h) = serde_json::from_str::<ItemHead<'_>>(item.get()) else {
            continue;
        };
        let id = match kind {
            Kind::Tools | Kind::Prompts => h.name,
            Kind::Resources => h.uri,
            Kind::Templates => h.uri_template,
        };
        let Some(own) = text(id) else {
            continue;
        };
        if kind == Kind::Tools
            && let Some(meta) = h.meta
            && let Ok(meta) = serde_json::from_str::<MetaHead<'_>>(meta.get())
        {
            let ui = meta
                .ui
                .and_then(|ui| serde_json::from_str::<UiHead<'_>>(ui.get()).ok())
                .and_then(|ui| text(ui.resource_uri));
            for uri in [ui, text(meta.output_template)].into_iter().flatten() {
                if !page.widget_uris.contains(&uri) {
                    page.widget_uris.push(uri);
                }
            }
        }
        let (listed, item) = if kind.prefixed() && !prefix.is_empty() {
            // Only this item is parsed, to write it again with its name.
            let listed = format!("{prefix}{own}");
            let Ok(mut v) = serde_json::from_str::<Map<String, Value>>(item.get()) else {
                continue;
            };
            v.insert(kind.id_field().to_owned(), Value::String(listed.clone()));
            let Ok(item) = serde_json::value::to_raw_value(&v) else {
                continue;
            };
            (listed, item)
        } else {
            (own.clone(), item.to_owned())
        };
        page.names.push((listed, own));
        page.items.push(item);
    }
    Some(page)
}

/// A JSON-RPC response for `id` (its JSON text) whose result lists `items`
/// of `kind` and, when there is more, the app's `next` cursor: written in
/// one buffer around the items' own text.
pub fn response_text(id: &str, kind: Kind, items: &[Box<RawValue>], next: Option<&str>) -> String {
    let mut out = String::with_capacity(
        items.iter().map(|i| i.get().len() + 1).sum::<usize>() + id.len() + 96,
    );
    out.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    out.push_str(id);
    out.push_str(",\"result\":{\"");
    out.push_str(kind.key());
    out.push_str("\":[");
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str(item.get());
    }
    out.push(']');
    if let Some(next) = next {
        out.push_str(",\"nextCursor\":");
        out.push_str(&Value::String(next.to_owned()).to_string());
    }
    out.push_str("}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prefixed_names_and_cursor() {
        let raw = |v: Value| serde_json::value::to_raw_value(&v).unwrap();
        let result = raw(json!({
            "tools": [
                {"name": "search", "_meta": {"ui": {"resourceUri": "ui://n/search.html"}}},
                {"name": "add"},
                {"title": "no name"}
            ],
            "nextCursor": "2"
        }));
        let p = page(&result, Kind::Tools, "notes_").unwrap();
        assert_eq!(p.items.len(), 2);
        let first: Value = serde_json::from_str(p.items[0].get()).unwrap();
        assert_eq!(first["name"], "notes_search");
        assert_eq!(
            p.names,
            vec![
                ("notes_search".into(), "search".into()),
                ("notes_add".into(), "add".into())
            ]
        );
        assert_eq!(p.next.as_deref(), Some("2"));
        assert_eq!(p.widget_uris, vec!["ui://n/search.html"]);
        let r = page(
            &raw(json!({"resources": [{"uri": "a://1"}]})),
            Kind::Resources,
            "x_",
        )
        .unwrap();
        assert_eq!(
            r.items[0].get(),
            r#"{"uri":"a://1"}"#,
            "URIs are not prefixed"
        );
        assert!(page(&raw(json!({"tools": 1})), Kind::Tools, "").is_none());
    }

    #[test]
    fn unprefixed_items_keep_their_text() {
        let text =
            r#"{"tools":[ {"z":1, "name":"a", "_meta":{"openai/outputTemplate":"ui://x"}} ]}"#;
        let result: Box<RawValue> = serde_json::from_str(text).unwrap();
        let p = page(&result, Kind::Tools, "").unwrap();
        assert_eq!(
            p.items[0].get(),
            r#"{"z":1, "name":"a", "_meta":{"openai/outputTemplate":"ui://x"}}"#
        );
        assert_eq!(p.widget_uris, vec!["ui://x"]);
        assert_eq!(
            response_text("7", Kind::Tools, &p.items, Some("c\"1")),
            r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"z":1, "name":"a", "_meta":{"openai/outputTemplate":"ui://x"}}],"nextCursor":"c\"1"}}"#
        );
    }
}
