//! Listing pages: what one member's page holds, and its items as the app
//! lists them (a member's prefix put before tool and prompt names).

use serde_json::Value;

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
    pub fn id_field(self) -> &'static str {
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

/// One member's page, as the app lists it.
#[derive(Debug, Default)]
pub struct Page {
    /// The items, prefixed.
    pub items: Vec<Value>,
    /// Each item's (listed, own) identifier, in order.
    pub names: Vec<(String, String)>,
    /// The member's cursor for its next page.
    pub next: Option<String>,
}

/// The page a member's `result` holds, with `prefix` put before names;
/// `None` when the result is not a page of `kind`.
pub fn page(result: &Value, kind: Kind, prefix: &str) -> Option<Page> {
    let items = result.get(kind.key())?.as_array()?;
    let mut page = Page {
        next: result
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned),
        ..Page::default()
    };
    for item in items {
        let mut item = item.clone();
        let Some(own) = item.get(kind.id_field()).and_then(Value::as_str) else {
            continue;
        };
        let own = own.to_owned();
        let listed = if kind.prefixed() && !prefix.is_empty() {
            let listed = format!("{prefix}{own}");
            item[kind.id_field()] = Value::String(listed.clone());
            listed
        } else {
            own.clone()
        };
        page.names.push((listed, own));
        page.items.push(item);
    }
    Some(page)
}

/// The `ui://` resources the tools of a page name as their widget
/// (`_meta.ui.resourceUri`, `_meta["openai/outputTemplate"]`).
pub fn widget_uris(items: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for tool in items {
        let meta = tool.get("_meta");
        for uri in [
            meta.and_then(|m| m.get("ui"))
                .and_then(|u| u.get("resourceUri")),
            meta.and_then(|m| m.get("openai/outputTemplate")),
        ]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        {
            if !out.iter().any(|u| u == uri) {
                out.push(uri.to_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prefixed_names_and_cursor() {
        let result = json!({
            "tools": [
                {"name": "search", "_meta": {"ui": {"resourceUri": "ui://n/search.html"}}},
                {"name": "add"},
                {"title": "no name"}
            ],
            "nextCursor": "2"
        });
        let p = page(&result, Kind::Tools, "notes_").unwrap();
        assert_eq!(p.items.len(), 2);
        assert_eq!(p.items[0]["name"], "notes_search");
        assert_eq!(
            p.names,
            vec![
                ("notes_search".into(), "search".into()),
                ("notes_add".into(), "add".into())
            ]
        );
        assert_eq!(p.next.as_deref(), Some("2"));
        assert_eq!(widget_uris(&p.items), vec!["ui://n/search.html"]);
        let r = page(
            &json!({"resources": [{"uri": "a://1"}]}),
            Kind::Resources,
            "x_",
        )
        .unwrap();
        assert_eq!(r.items[0]["uri"], "a://1", "URIs are not prefixed");
        assert!(page(&json!({"tools": 1}), Kind::Tools, "").is_none());
    }
}
