//! What the gateway does with one client request, decided from the overlay
//! snapshot (and the upstream tool names seen so far, for render-tool name
//! collisions): forward it untouched, answer it itself (a widget resource,
//! a render-tool call), or forward it and rewrite the matching response.
//! Pure: the relay does the IO on both sides of these functions.
//!
//! A mount without overlays is never rewritten: the gateway is then exactly
//! the upstream, byte for byte.

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::jsonrpc::{self, Kind, Message, code};
use crate::overlay::OverlaySet;
use crate::rewrite::{self, ListChanged, Warning};

/// The methods whose responses the gateway may rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewrite {
    Initialize,
    Discover,
    ResourcesList,
    TemplatesList,
    /// A `tools/list` page; the first one (no cursor) restarts the record of
    /// the upstream's tool names.
    ToolsListPage {
        first: bool,
    },
    /// A `tools/call` of a tool whose overlay shapes results.
    ToolCall(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    Forward,
    /// Answer with this complete response; the upstream never sees the request.
    Answer(Bytes),
    Rewrite(Rewrite),
}

/// Decide for one message sent to `mount`. `upstream_has` says whether the
/// upstream listed a tool of that name (it then wins over a render tool).
pub fn plan(
    overlays: &OverlaySet,
    mount: &str,
    m: &Message<'_>,
    upstream_has: &dyn Fn(&str) -> bool,
) -> Plan {
    if m.kind != Kind::Request {
        return Plan::Forward;
    }
    let Some(tools) = overlays.mount(mount) else {
        return Plan::Forward;
    };
    match m.method.as_deref().unwrap_or_default() {
        "initialize" => Plan::Rewrite(Rewrite::Initialize),
        "server/discover" => Plan::Rewrite(Rewrite::Discover),
        "tools/list" => {
            let cursor = m
                .params
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .is_some_and(|p| p.get("cursor").is_some_and(|c| !c.is_null()));
            Plan::Rewrite(Rewrite::ToolsListPage { first: !cursor })
        }
        "resources/list" => Plan::Rewrite(Rewrite::ResourcesList),
        "resources/templates/list" => Plan::Rewrite(Rewrite::TemplatesList),
        "resources/read" => {
            let view = jsonrpc::params_view(m.params);
            match view
                .uri
                .as_deref()
                .and_then(|uri| overlays.widgets().by_uri(uri))
            {
                Some(widget) => Plan::Answer(result_response(m.id, &rewrite::read_result(widget))),
                None => Plan::Forward,
            }
        }
        "tools/call" => {
            let view = jsonrpc::params_view(m.params);
            let render = view
                .name
                .as_deref()
                .filter(|n| !upstream_has(n))
                .and_then(|n| tools.render_tool(n).map(|r| (n, r)));
            if let Some((name, render)) = render {
                let params = m
                    .params
                    .and_then(|p| serde_json::from_str::<Value>(p.get()).ok());
                let arguments = params.as_ref().and_then(|p| p.get("arguments"));
                let mut result = rewrite::render::call_result(
                    name,
                    render,
                    tools,
                    overlays.widgets(),
                    arguments,
                );
                if let (Some(p), Value::Object(result)) = (&params, &mut result) {
                    mark_complete(p, result);
                }
                return Plan::Answer(result_response(m.id, &result));
            }
            match view
                .name
                .as_deref()
                .and_then(|n| tools.tool(n).map(|t| (n, t)))
            {
                Some((name, tool)) if !tool.result.is_noop() => {
                    Plan::Rewrite(Rewrite::ToolCall(name.to_owned()))
                }
                _ => Plan::Forward,
            }
        }
        _ => Plan::Forward,
    }
}

/// What [`apply`] made of a response.
#[derive(Debug, Default)]
pub struct Applied {
    /// The new response; `None` leaves the upstream's bytes as they were.
    pub body: Option<Bytes>,
    pub warnings: Vec<Warning>,
    /// For a `tools/list` page: the upstream's tool names on it, for the
    /// caller to remember (render tools yield to them).
    pub upstream_tools: Option<Vec<String>>,
}

/// Rewrite the response to a planned request. Anything unexpected (not JSON,
/// no result, another error) leaves the response untouched. `upstream_has`
/// is as for [`plan`] (the names on earlier `tools/list` pages).
pub fn apply(
    overlays: &OverlaySet,
    mount: &str,
    rewrite: &Rewrite,
    response: &[u8],
    upstream_has: &dyn Fn(&str) -> bool,
) -> Applied {
    if let Rewrite::ToolsListPage { .. } = rewrite
        && let Some(applied) = tools_list_page(overlays, mount, response, upstream_has)
    {
        return applied;
    }
    let Ok(Value::Object(mut message)) = serde_json::from_slice::<Value>(response) else {
        return Applied::default();
    };
    let mut warnings = Vec::new();
    // The gateway answers the resource listings an upstream lacks.
    if let Some(error) = message.get("error") {
        let not_found = error.get("code").and_then(Value::as_i64) == Some(code::METHOD_NOT_FOUND);
        let local = match rewrite {
            Rewrite::ResourcesList if not_found => {
                rewrite::local_resources_list(&overlays.widgets_for(mount))
            }
            Rewrite::TemplatesList if not_found => json!({ "resourceTemplates": [] }),
            _ => return Applied::default(),
        };
        message.remove("error");
        message.insert("result".into(), local);
        return Applied {
            body: Some(to_bytes(&message)),
            warnings,
            upstream_tools: None,
        };
    }
    let Some(result) = message.get_mut("result") else {
        return Applied::default();
    };
    let mut upstream_tools = None;
    let list_changed = ListChanged {
        tools: true,
        resources: true,
    };
    match rewrite {
        Rewrite::Initialize => rewrite::initialize_result(result, list_changed),
        Rewrite::Discover => rewrite::discover_result(result, list_changed),
        Rewrite::ToolsListPage { .. } => {
            let names: Vec<String> = result
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect();
            let none = crate::overlay::MountOverlays::default();
            let tools = overlays.mount(mount).unwrap_or(&none);
            warnings = rewrite::tools_list(result, tools, overlays.widgets());
            warnings.extend(rewrite::render::add_render_tools(
                result,
                tools,
                overlays.widgets(),
                upstream_has,
            ));
            upstream_tools = Some(names);
        }
        Rewrite::ResourcesList => {
            warnings = rewrite::resources_list(result, &overlays.widgets_for(mount));
        }
        Rewrite::TemplatesList => return Applied::default(),
        Rewrite::ToolCall(name) => match overlays.mount(mount).and_then(|m| m.tool(name)) {
            Some(tool) => warnings = rewrite::tools_call_result(result, tool),
            None => return Applied::default(),
        },
    }
    Applied {
        body: Some(to_bytes(&message)),
        warnings,
        upstream_tools,
    }
}

/// A `tools/list` page, the one rewrite whose answers are large (every tool
/// of a server, with its schemas): only the overlaid tools are parsed and
/// rewritten; every other tool, and every other field, stays the text the
/// upstream sent. `None` when the page is not the expected shape (the
/// general path then handles it).
fn tools_list_page(
    overlays: &OverlaySet,
    mount: &str,
    response: &[u8],
    upstream_has: &dyn Fn(&str) -> bool,
) -> Option<Applied> {
    #[derive(serde::Deserialize)]
    struct Named<'a> {
        #[serde(borrow, default)]
        name: Option<std::borrow::Cow<'a, str>>,
    }
    let text = std::str::from_utf8(response).ok()?;
    let envelope = raw_entries(text)?;
    let result = envelope.iter().find(|(k, _)| k == "result")?.1;
    let fields = raw_entries(result.get())?;
    let tools: Vec<&RawValue> =
        serde_json::from_str(fields.iter().find(|(k, _)| k == "tools")?.1.get()).ok()?;
    let none = crate::overlay::MountOverlays::default();
    let overlaid = overlays.mount(mount).unwrap_or(&none);
    let mut warnings = Vec::new();
    let mut names = Vec::with_capacity(tools.len());
    let mut listed: Vec<std::borrow::Cow<'_, str>> = Vec::with_capacity(tools.len());
    for raw in tools {
        let name = serde_json::from_str::<Named<'_>>(raw.get())
            .ok()
            .and_then(|n| n.name);
        if let Some(name) = &name {
            names.push(name.to_string());
        }
        if name.as_deref().is_some_and(|n| overlaid.tool(n).is_some()) {
            let mut page = json!({ "tools": [serde_json::from_str::<Value>(raw.get()).ok()?] });
            warnings.extend(rewrite::tools_list(&mut page, overlaid, overlays.widgets()));
            listed.push(serde_json::to_string(&page["tools"][0]).ok()?.into());
        } else {
            listed.push(raw.get().into());
        }
    }
    // Render tools join the last page (the general rewrite decides; it sees
    // this page's names through `upstream_has`).
    let mut extra = json!({ "tools": [] });
    if let Some((_, cursor)) = fields.iter().find(|(k, _)| k == "nextCursor") {
        extra["nextCursor"] = serde_json::from_str(cursor.get()).ok()?;
    }
    let on_page = |n: &str| names.iter().any(|p| p == n) || upstream_has(n);
    warnings.extend(rewrite::render::add_render_tools(
        &mut extra,
        overlaid,
        overlays.widgets(),
        &on_page,
    ));
    for tool in extra["tools"].as_array()? {
        listed.push(tool.to_string().into());
    }
    let tools = format!("[{}]", listed.join(","));
    let result = with_entry(&fields, "tools", &tools);
    let body = with_entry(&envelope, "result", &result);
    Some(Applied {
        body: Some(Bytes::from(body)),
        warnings,
        upstream_tools: Some(names),
    })
}

/// The members of a JSON object, in order, values as raw text.
fn raw_entries(text: &str) -> Option<Vec<(String, &RawValue)>> {
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let entries = serde::Deserializer::deserialize_map(&mut de, Entries).ok()?;
    de.end().ok()?;
    Some(entries)
}

/// An object's text with the value of `key` replaced by `value`.
fn with_entry(entries: &[(String, &RawValue)], key: &str, value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 64);
    out.push('{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(k).expect("strings serialise"));
        out.push(':');
        out.push_str(if k == key { value } else { v.get() });
    }
    out.push('}');
    out
}

/// Protocol revisions from 2026-07-28 on (stateless requests name theirs in
/// `_meta`) require `resultType` on every result the gateway answers itself.
fn mark_complete(params: &Value, result: &mut Map<String, Value>) {
    let version = params
        .pointer("/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    if version.is_some_and(|v| v >= "2026-07-28") {
        result.insert("resultType".into(), json!("complete"));
    }
}

fn to_bytes(message: &Map<String, Value>) -> Bytes {
    Bytes::from(serde_json::to_vec(message).expect("a JSON value serialises"))
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` with the request's id as sent.
fn result_response(id: Option<&RawValue>, result: &Value) -> Bytes {
    let id = id.map(RawValue::get).unwrap_or("null");
    let result = serde_json::to_string(result).expect("a JSON value serialises");
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlay::{MountOverlays, RenderTool, ToolOverlay, Widget, Widgets};
    use std::collections::BTreeMap;

    fn overlays() -> OverlaySet {
        let widget = Widget::compile(
            "board",
            &Default::default(),
            "<!doctype html><p>hi</p>".into(),
        );
        let tool = ToolOverlay {
            widget: Some("board".into()),
            ..Default::default()
        };
        let render = RenderTool {
            widget: "board".into(),
            data_tools: vec!["list".into()],
            input_schema: json!({"type": "object", "required": ["items"]})
                .as_object()
                .cloned(),
            ..Default::default()
        };
        let mut mounts = BTreeMap::new();
        mounts.insert(
            "demo".to_owned(),
            MountOverlays::new([("list".to_owned(), tool)])
                .with_render([("show".to_owned(), render)]),
        );
        OverlaySet::new(mounts, Widgets::new([widget]))
    }

    fn none(_: &str) -> bool {
        false
    }

    fn first_page() -> Rewrite {
        Rewrite::ToolsListPage { first: true }
    }

    fn msg(text: &str) -> Message<'_> {
        jsonrpc::classify_one(text.as_bytes()).unwrap()
    }

    #[test]
    fn mounts_without_overlays_are_left_alone() {
        let o = overlays();
        let m = msg(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(plan(&o, "other", &m, &none), Plan::Forward);
        assert_eq!(
            plan(&o, "demo", &m, &none),
            Plan::Rewrite(Rewrite::ToolsListPage { first: true })
        );
        let page = msg(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"2"}}"#);
        assert_eq!(
            plan(&o, "demo", &page, &none),
            Plan::Rewrite(Rewrite::ToolsListPage { first: false })
        );
        let n = msg(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert_eq!(plan(&o, "demo", &n, &none), Plan::Forward);
    }

    #[test]
    fn widget_reads_are_answered_locally() {
        let o = overlays();
        let uri = o.widgets().get("board").unwrap().uri.clone();
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{{"uri":"{uri}"}}}}"#
        );
        let Plan::Answer(body) = plan(&o, "demo", &msg(&text), &none) else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], "r1");
        assert_eq!(
            v["result"]["contents"][0]["mimeType"],
            "text/html;profile=mcp-app"
        );
        let other = msg(
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x"}}"#,
        );
        assert_eq!(plan(&o, "demo", &other, &none), Plan::Forward);
    }

    #[test]
    fn missing_resource_methods_are_answered() {
        let o = overlays();
        let not_found =
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}"#;
        let a = apply(&o, "demo", &Rewrite::ResourcesList, not_found, &none);
        let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
        assert_eq!(v["id"], 3);
        assert_eq!(v["result"]["resources"][0]["name"], "board");
        let a = apply(&o, "demo", &Rewrite::TemplatesList, not_found, &none);
        let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
        assert_eq!(v["result"]["resourceTemplates"], json!([]));
        // Other errors pass as they are.
        let other = br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"boom"}}"#;
        assert!(
            apply(&o, "demo", &Rewrite::ResourcesList, other, &none)
                .body
                .is_none()
        );
    }

    #[test]
    fn tools_list_gains_the_widget_and_keeps_the_rest() {
        let o = overlays();
        let response = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"list","inputSchema":{"type":"object"},"x-vendor":1},{"name":"other","inputSchema":{}}],"nextCursor":"c2"}}"#;
        let a = apply(&o, "demo", &first_page(), response, &none);
        let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
        let uri = &o.widgets().get("board").unwrap().uri;
        assert_eq!(
            v["result"]["tools"][0]["_meta"]["ui"]["resourceUri"],
            json!(uri)
        );
        assert_eq!(v["result"]["tools"][0]["x-vendor"], 1);
        assert_eq!(
            v["result"]["tools"][1],
            json!({"name":"other","inputSchema":{}})
        );
        assert_eq!(v["result"]["nextCursor"], "c2");
    }

    #[test]
    fn render_calls_are_answered_unless_the_upstream_has_the_name() {
        let o = overlays();
        let call = msg(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"show","arguments":{"items":[1,2]}}}"#,
        );
        let Plan::Answer(body) = plan(&o, "demo", &call, &none) else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["result"]["structuredContent"], json!({"items": [1, 2]}));
        assert!(v["result"]["_meta"]["ui"]["resourceUri"].is_string());
        let bad = msg(
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"show","arguments":{}}}"#,
        );
        let Plan::Answer(body) = plan(&o, "demo", &bad, &none) else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["result"]["isError"], true);
        // The upstream's own `show` wins.
        assert_eq!(plan(&o, "demo", &call, &|n| n == "show"), Plan::Forward);
        // A 2026-07-28 request gets the result type that revision requires.
        let stateless = msg(
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"show","arguments":{"items":[]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        let Plan::Answer(body) = plan(&o, "demo", &stateless, &none) else {
            panic!()
        };
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["result"]["resultType"], "complete");
        // Data calls still go upstream.
        let data = msg(
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list","arguments":{}}}"#,
        );
        assert_eq!(plan(&o, "demo", &data, &none), Plan::Forward);
    }

    #[test]
    fn tools_list_gains_render_tools_and_reports_names() {
        let o = overlays();
        let response = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"list","inputSchema":{"type":"object"}}]}}"#;
        let a = apply(&o, "demo", &first_page(), response, &none);
        assert_eq!(a.upstream_tools, Some(vec!["list".to_owned()]));
        let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
        assert_eq!(v["result"]["tools"][1]["name"], "show");
        let clash =
            br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"show","inputSchema":{}}]}}"#;
        let a = apply(&o, "demo", &first_page(), clash, &none);
        assert_eq!(a.warnings.len(), 1);
        let v: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
        assert_eq!(
            v["result"]["tools"],
            json!([{"name":"show","inputSchema":{}}])
        );
    }
}
