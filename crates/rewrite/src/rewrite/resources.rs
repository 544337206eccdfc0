//! The widget resources as MCP results: the `resources/read` answer the
//! gateway gives for a widget URI, the `resources/list` entry, and the merge
//! of those entries into an upstream's paginated list. The same `_meta` goes
//! in both the list entry and the read content, because hosts and checkers
//! each read only one of the two; it is the one for the host asking
//! ([`Target`]), whose widget domain differs.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::warning::Warning;
use mcp_ui_overlay::host::Target;
use mcp_ui_overlay::overlay::Widget;
use mcp_ui_overlay::overlay::widget::MCP_APP_MIME;

/// The `resources/read` result for a widget version, as `target` sees it.
pub fn read_result(widget: &Widget, target: &Target) -> Value {
    let mut content = Map::new();
    content.insert("uri".into(), json!(widget.uri));
    content.insert("mimeType".into(), json!(MCP_APP_MIME));
    content.insert("text".into(), json!(widget.html));
    let meta = widget.meta_for(target);
    if !meta.is_empty() {
        content.insert("_meta".into(), Value::Object(meta.into_owned()));
    }
    json!({ "contents": [content] })
}

/// The `resources/list` entry for a widget, as `target` sees it.
pub(crate) fn list_entry(widget: &Widget, target: &Target) -> Value {
    let mut entry = Map::new();
    entry.insert("uri".into(), json!(widget.uri));
    entry.insert("name".into(), json!(widget.name));
    if let Some(title) = &widget.title {
        entry.insert("title".into(), json!(title));
    }
    if let Some(description) = &widget.description {
        entry.insert("description".into(), json!(description));
    }
    entry.insert("mimeType".into(), json!(MCP_APP_MIME));
    let meta = widget.meta_for(target);
    if !meta.is_empty() {
        entry.insert("_meta".into(), Value::Object(meta.into_owned()));
    }
    Value::Object(entry)
}

/// Appends the widgets' entries to an upstream `resources/list` result, on
/// its last page only (the one without `nextCursor`), so the upstream's
/// opaque cursors stay valid and untouched. A widget whose URI the upstream
/// already lists is not added twice.
pub fn resources_list(result: &mut Value, widgets: &[&Widget], target: &Target) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let Some(result) = result.as_object_mut() else {
        return warnings;
    };
    let last_page = result.get("nextCursor").is_none_or(Value::is_null);
    if !last_page || widgets.is_empty() {
        return warnings;
    }
    let slot = result.entry("resources").or_insert_with(|| json!([]));
    let Some(resources) = slot.as_array_mut() else {
        warnings.push(Warning::new(
            "resources",
            "not an array; widgets not listed",
        ));
        return warnings;
    };
    let mut listed: BTreeSet<String> = resources
        .iter()
        .filter_map(|r| r.get("uri")?.as_str().map(str::to_owned))
        .collect();
    for widget in widgets {
        if listed.insert(widget.uri.clone()) {
            resources.push(list_entry(widget, target));
        } else {
            warnings.push(Warning::new(
                &widget.uri,
                "already listed by the upstream; not added again",
            ));
        }
    }
    warnings
}

/// A whole `resources/list` result for an upstream without the `resources`
/// capability, which the gateway answers alone.
pub fn local_resources_list(widgets: &[&Widget], target: &Target) -> Value {
    let entries: Vec<Value> = widgets.iter().map(|w| list_entry(w, target)).collect();
    json!({ "resources": entries })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_ui_overlay::overlay::{Csp, DisplayMode, Permissions, WidgetManifest};

    /// A host other than ChatGPT and Claude: the manifest's values as given.
    fn any_host() -> Target {
        Target::default()
    }

    fn full_manifest() -> WidgetManifest {
        WidgetManifest {
            title: Some("Clock".into()),
            description: Some("Shows the time".into()),
            prefers_border: Some(true),
            domain: Some("https://clock.example.com".into()),
            display_modes: Some(vec![DisplayMode::Inline, DisplayMode::Fullscreen]),
            csp: Some(Csp {
                connect_domains: Some(vec!["https://api.example.com".into()]),
                resource_domains: Some(vec![]),
                frame_domains: Some(vec!["https://embed.example.com".into()]),
                base_uri_domains: Some(vec!["https://base.example.com".into()]),
                redirect_domains: Some(vec!["https://checkout.example.com".into()]),
            }),
            permissions: Some(Permissions {
                clipboard_write: true,
                camera: true,
                ..Permissions::default()
            }),
            ..WidgetManifest::default()
        }
    }

    #[test]
    fn read_result_carries_both_vocabularies() {
        let widget = Widget::compile("clock", &full_manifest(), "<p>t</p>".into());
        let read = read_result(&widget, &any_host());
        let expected = json!({ "contents": [{
            "uri": widget.uri,
            "mimeType": "text/html;profile=mcp-app",
            "text": "<p>t</p>",
            "_meta": {
                "ui": {
                    "csp": {
                        "connectDomains": ["https://api.example.com"],
                        "resourceDomains": [],
                        "frameDomains": ["https://embed.example.com"],
                        "baseUriDomains": ["https://base.example.com"]
                    },
                    "domain": "https://clock.example.com",
                    "prefersBorder": true,
                    "permissions": { "camera": {}, "clipboardWrite": {} }
                },
                "openai/widgetCSP": {
                    "connect_domains": ["https://api.example.com"],
                    "resource_domains": [],
                    "frame_domains": ["https://embed.example.com"],
                    "redirect_domains": ["https://checkout.example.com"]
                },
                "openai/widgetDomain": "https://clock.example.com",
                "openai/widgetPrefersBorder": true,
                "openai/widgetDescription": "Shows the time",
                "openai/ui": { "availableDisplayModes": ["inline", "fullscreen"] }
            }
        }]});
        // Compared as text: key order is part of the promise.
        assert_eq!(read.to_string(), expected.to_string());
        let entry = list_entry(&widget, &any_host());
        assert_eq!(entry["_meta"], read["contents"][0]["_meta"]);
        assert_eq!(entry["name"], "clock");
        assert_eq!(entry["title"], "Clock");
    }

    #[test]
    fn only_declared_keys_are_emitted() {
        let widget = Widget::compile("bare", &WidgetManifest::default(), "<p></p>".into());
        assert_eq!(
            read_result(&widget, &any_host()),
            json!({ "contents": [{ "uri": widget.uri, "mimeType": MCP_APP_MIME, "text": "<p></p>" }] })
        );
        let redirects_only = WidgetManifest {
            csp: Some(Csp {
                redirect_domains: Some(vec!["https://x.example.com".into()]),
                ..Csp::default()
            }),
            permissions: Some(Permissions::default()),
            ..WidgetManifest::default()
        };
        let widget = Widget::compile("r", &redirects_only, String::new());
        assert_eq!(
            Value::Object(widget.meta),
            json!({ "openai/widgetCSP": { "connect_domains": [], "resource_domains": [], "redirect_domains": ["https://x.example.com"] } })
        );
    }

    #[test]
    fn widgets_join_the_last_page_only_and_never_twice() {
        let clock = Widget::compile("clock", &WidgetManifest::default(), "c".into());
        let other = Widget::compile("other", &WidgetManifest::default(), "o".into());
        let widgets = [&clock, &other];

        let first_page =
            json!({ "resources": [{ "uri": "a://1", "name": "1" }], "nextCursor": "opaque==" });
        let mut page = first_page.clone();
        assert!(resources_list(&mut page, &widgets, &any_host()).is_empty());
        assert_eq!(page, first_page);

        let mut last = json!({ "resources": [{ "uri": clock.uri, "name": "native" }], "x-extra": 1, "nextCursor": null });
        let warnings = resources_list(&mut last, &widgets, &any_host());
        assert_eq!(warnings.len(), 1);
        let uris: Vec<&str> = last["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap())
            .collect();
        assert_eq!(uris, [clock.uri.as_str(), other.uri.as_str()]);
        assert_eq!(last["resources"][0]["name"], "native");
        assert_eq!(last["x-extra"], 1);

        let mut empty = json!({});
        resources_list(&mut empty, &widgets, &any_host());
        assert_eq!(empty["resources"].as_array().unwrap().len(), 2);
        assert_eq!(local_resources_list(&widgets, &any_host()), empty);
    }
}
