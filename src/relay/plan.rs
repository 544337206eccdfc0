//! What the gateway does with one client request, decided from the overlay
//! snapshot (and the upstream tool names seen so far, for render-tool name
//! collisions): forward it untouched, answer it itself (a widget resource,
//! a render-tool call), or forward it and rewrite the matching response.
//! Pure: the relay does the IO on both sides of these functions.
//!
//! A mount without overlays is never rewritten: the gateway is then exactly
//! the upstream, byte for byte.

use std::borrow::Cow;

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
/// of a server, with its schemas): one pass over the text finds each tool's
/// members, only the overlaid tools are rewritten (and of those, only the
/// members their rewrite touches are parsed), and the page is written once.
/// Every other byte, tool, member and separator stays as the upstream sent
/// it. `None` when the page is not the expected shape (the general path
/// then handles it).
fn tools_list_page(
    overlays: &OverlaySet,
    mount: &str,
    response: &[u8],
    upstream_has: &dyn Fn(&str) -> bool,
) -> Option<Applied> {
    let text = std::str::from_utf8(response).ok()?;
    let page = Page::find(text)?;
    let none = crate::overlay::MountOverlays::default();
    let overlaid = overlays.mount(mount).unwrap_or(&none);
    let widgets = overlays.widgets();
    let mut warnings = Vec::new();
    let mut names = Vec::with_capacity(page.tools.len());
    // Replacements of ranges of `text`, in order.
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for tool in &page.tools {
        let Some(name) = tool.name() else {
            continue;
        };
        if let Some(overlay) = overlaid.tool(&name) {
            let span = tool.span(text)?;
            let new = match splice_tool(text, span.clone(), tool, &name, overlay, widgets) {
                Some((new, w)) => {
                    warnings.extend(w);
                    new
                }
                None => {
                    let tool = serde_json::from_str::<Value>(&text[span.clone()]).ok()?;
                    let mut page = json!({ "tools": [tool] });
                    warnings.extend(rewrite::tools_list(&mut page, overlaid, widgets));
                    serde_json::to_string(&page["tools"][0]).ok()?
                }
            };
            edits.push((span, new));
        }
        names.push(name.into_owned());
    }
    // Render tools join the last page (the general rewrite decides; it sees
    // this page's names through `upstream_has`).
    let mut extra = json!({ "tools": [] });
    if let Some(cursor) = page.next_cursor {
        extra["nextCursor"] = serde_json::from_str(cursor.get()).ok()?;
    }
    let on_page = |n: &str| names.iter().any(|p| p == n) || upstream_has(n);
    warnings.extend(rewrite::render::add_render_tools(
        &mut extra, overlaid, widgets, &on_page,
    ));
    let added = extra["tools"].as_array()?;
    if !added.is_empty() {
        // After the last tool; an empty list is left to the general path.
        let end = page.tools.last()?.span(text)?.end;
        let mut new = String::new();
        for tool in added {
            new.push(',');
            new.push_str(&tool.to_string());
        }
        edits.push((end..end, new));
    }
    if edits.is_empty() {
        // Nothing on this page is overlaid: the upstream's bytes stand.
        return Some(Applied {
            body: None,
            warnings,
            upstream_tools: Some(names),
        });
    }
    let grown: usize = edits.iter().map(|(_, new)| new.len()).sum();
    let mut out = String::with_capacity(text.len() + grown);
    let mut at = 0;
    for (range, new) in &edits {
        out.push_str(&text[at..range.start]);
        out.push_str(new);
        at = range.end;
    }
    out.push_str(&text[at..]);
    Some(Applied {
        body: Some(Bytes::from(out)),
        warnings,
        upstream_tools: Some(names),
    })
}

/// The tools of a `tools/list` response, as slices of its text, found in one
/// pass over it.
struct Page<'a> {
    tools: Vec<Members<'a>>,
    next_cursor: Option<&'a RawValue>,
}

/// The members of a JSON object, in order: keys (unescaped; borrowed from
/// the text when written without escapes) and values as their text.
struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Members<'a> {
    /// The `name` member, when it is a string.
    fn name(&self) -> Option<Cow<'a, str>> {
        let mut names = self.0.iter().filter(|(k, _)| k == "name");
        let (_, value) = names.next()?;
        // Twice: no name, as a full parse of the tool would refuse it.
        if names.next().is_some() {
            return None;
        }
        serde_json::from_str::<Cow<'a, str>>(value.get()).ok()
    }

    /// Where the object is in `text`, braces included: from the brace before
    /// its first key to the one after its last value. `None` for an empty
    /// object, or one whose first key is written with escapes.
    fn span(&self, text: &str) -> Option<std::ops::Range<usize>> {
        let Cow::Borrowed(first) = self.0.first()?.0 else {
            return None;
        };
        let (_, last) = self.0.last()?;
        // The key's opening quote, then the brace before it.
        let quote = offset(text, first)?.checked_sub(1)?;
        let start = text[..quote].trim_end().len().checked_sub(1)?;
        let after = offset(text, last.get())? + last.get().len();
        let end = text.len() - text[after..].trim_start().len() + 1;
        let braced = text.as_bytes().get(start) == Some(&b'{')
            && text.as_bytes().get(end - 1) == Some(&b'}');
        braced.then_some(start..end)
    }
}

/// Where `part`, a slice of `text`, starts in it.
fn offset(text: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (at + part.len() <= text.len()).then_some(at)
}

struct MembersVisitor;

impl<'de> serde::de::Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some((Key(key), value)) = map.next_entry::<Key<'de>, &'de RawValue>()? {
            out.push((key, value));
        }
        Ok(Members(out))
    }
}

/// An object key, borrowed from the text when it has no escapes (serde's
/// own `Cow<str>` always copies).
struct Key<'a>(Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> serde::de::Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

impl<'a> Page<'a> {
    /// `None` unless the text is an object whose `result` is an object with
    /// a `tools` array of objects (each member once).
    fn find(text: &'a str) -> Option<Self> {
        use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
        use std::fmt;

        struct Envelope;
        impl<'de> Visitor<'de> for Envelope {
            type Value = Option<Page<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC response")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut page = None;
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    if key == "result" {
                        if page.is_some() {
                            return Ok(None);
                        }
                        page = Some(map.next_value_seed(ToolsResult)?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(page.flatten())
            }
        }
        struct ToolsResult;
        impl<'de> DeserializeSeed<'de> for ToolsResult {
            type Value = Option<Page<'de>>;
            fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_map(self)
            }
        }
        impl<'de> Visitor<'de> for ToolsResult {
            type Value = Option<Page<'de>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tools/list result")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut tools, mut next_cursor) = (None, None);
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    match &*key {
                        "tools" if tools.is_none() => tools = Some(map.next_value()?),
                        "nextCursor" if next_cursor.is_none() => {
                            next_cursor = Some(map.next_value::<&'de RawValue>()?)
                        }
                        "tools" | "nextCursor" => return Ok(None),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(tools.map(|tools| Page { tools, next_cursor }))
            }
        }
        let mut de = serde_json::Deserializer::from_str(text);
        let page = serde::Deserializer::deserialize_map(&mut de, Envelope).ok()??;
        de.end().ok()?;
        Some(page)
    }
}

/// One overlaid tool (at `span` in `text`) rewritten in its text: the
/// members the rewrite touches are parsed, rewritten and their values
/// replaced where they stand; members it adds go last (where a full rewrite
/// adds them). Every other byte of the tool stays. `None` (a repeated or
/// removed member) leaves the tool to the full rewrite.
fn splice_tool(
    text: &str,
    span: std::ops::Range<usize>,
    members: &Members<'_>,
    name: &str,
    overlay: &crate::overlay::ToolOverlay,
    widgets: &crate::overlay::Widgets,
) -> Option<(String, Vec<Warning>)> {
    let is_touched = |key: &str| rewrite::tools::touches(overlay, key);
    if !members.0.iter().any(|(k, _)| is_touched(k)) {
        // The common case: the same members added to every listing.
        let bare = rewrite::tools::Bare::of(name, overlay, widgets);
        let mut out = String::with_capacity(span.len() + 512);
        out.push_str(&text[span.start..span.end - 1]);
        for (key, value) in &bare.members {
            out.push(',');
            out.push_str(key);
            out.push(':');
            out.push_str(value);
        }
        out.push('}');
        return Some((out, bare.warnings.clone()));
    }
    let mut touched = Map::new();
    for (key, value) in &members.0 {
        if is_touched(key) {
            let value = serde_json::from_str(value.get()).ok()?;
            if touched.insert(key.to_string(), value).is_some() {
                return None;
            }
        }
    }
    let warnings = rewrite::tools::tool(&mut touched, name, overlay, widgets);
    let mut out = String::with_capacity(span.len() + 512);
    let mut at = span.start;
    for (key, value) in &members.0 {
        if !is_touched(key) {
            continue;
        }
        let new = touched.get(&**key)?;
        let start = offset(text, value.get())?;
        out.push_str(&text[at..start]);
        out.push_str(&serde_json::to_string(new).ok()?);
        at = start + value.get().len();
    }
    // Up to the closing brace, then the added members.
    out.push_str(&text[at..span.end - 1]);
    for (key, value) in &touched {
        if members.0.iter().any(|(m, _)| m == key) {
            continue;
        }
        // A member the rewrite was not given: the text may already have it.
        if !is_touched(key) {
            return None;
        }
        out.push(',');
        out.push_str(&serde_json::to_string(key).ok()?);
        out.push(':');
        out.push_str(&serde_json::to_string(value).ok()?);
    }
    out.push('}');
    Some((out, warnings))
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

    /// The page rewrite in the text against the full rewrite of the parsed
    /// page: the same JSON, and every byte outside the rewritten members kept.
    #[test]
    fn tools_list_pages_are_rewritten_in_their_text() {
        let o = overlays();
        let uri = o.widgets().get("board").unwrap().uri.clone();
        let response = concat!(
            "{ \"jsonrpc\" : \"2.0\", \"id\":1, \"result\": {\"tools\": [\n",
            "  {\"name\": \"other\", \"inputSchema\": {\"d\": \"\\u0041\" }},\n",
            "  {\"name\":\"list\",\"inputSchema\":{\"type\": \"object\", \"x\":1.50},",
            "\"_meta\":{\"vendor\":true, \"ui\":{\"visibility\":[\"app\"]}}, \"z\" : [ ] }\n",
            "], \"nextCursor\" : \"c2\" }, \"extra\" : 1 }"
        );
        let a = apply(&o, "demo", &first_page(), response.as_bytes(), &none);
        let body = String::from_utf8(a.body.unwrap().to_vec()).unwrap();
        // Untouched bytes: the envelope, the other tool, separators, and the
        // members of `list` the rewrite does not touch.
        assert!(body.starts_with(
            "{ \"jsonrpc\" : \"2.0\", \"id\":1, \"result\": {\"tools\": [\n  {\"name\": \"other\", \"inputSchema\": {\"d\": \"\\u0041\" }},\n  {\"name\":\"list\",\"inputSchema\":{\"type\": \"object\", \"x\":1.50},\"_meta\":"
        ), "{body}");
        assert!(
            body.ends_with(", \"z\" : [ ] }\n], \"nextCursor\" : \"c2\" }, \"extra\" : 1 }"),
            "{body}"
        );
        // The same JSON as the full rewrite.
        let mut full: Value = serde_json::from_str(response).unwrap();
        rewrite::tools_list(&mut full["result"], o.mount("demo").unwrap(), o.widgets());
        let ours: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(ours, full);
        assert_eq!(ours["result"]["tools"][1]["_meta"]["vendor"], true);
        assert_eq!(
            ours["result"]["tools"][1]["_meta"]["ui"]["resourceUri"],
            json!(uri)
        );
        assert_eq!(
            ours["result"]["tools"][1]["_meta"]["ui"]["visibility"],
            json!(["app"])
        );
        assert_eq!(
            a.upstream_tools,
            Some(vec!["other".to_owned(), "list".to_owned()])
        );
    }

    #[test]
    fn bare_and_unusual_tools_match_the_full_rewrite() {
        let o = overlays();
        for tools in [
            // No member the rewrite touches: the remembered rewrite, twice.
            r#"[{"name":"list","inputSchema":{}}]"#,
            r#"[{"name":"list","inputSchema":{}}]"#,
            // A key written with escapes, a repeated member, a repeated name.
            r#"[{"\u006eame":"list","inputSchema":{}}]"#,
            r#"[{"name":"list","_meta":{"a":1},"_meta":{"b":2}}]"#,
            r#"[{"name":"other"},{"name":"list"}]"#,
        ] {
            let response = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":{tools}}}}}"#);
            let a = apply(&o, "demo", &first_page(), response.as_bytes(), &none);
            let ours: Value = serde_json::from_slice(&a.body.unwrap()).unwrap();
            let mut full: Value = serde_json::from_str(&response).unwrap();
            rewrite::tools_list(&mut full["result"], o.mount("demo").unwrap(), o.widgets());
            rewrite::render::add_render_tools(
                &mut full["result"],
                o.mount("demo").unwrap(),
                o.widgets(),
                &|n: &str| n == "list" || n == "other",
            );
            assert_eq!(ours, full, "{tools}");
        }
        // A tool that names itself twice has no name: it passes as it came.
        let twice = r#"{"name":"list","name":"list","inputSchema":{}}"#;
        let response = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{twice}]}}}}"#);
        let a = apply(&o, "demo", &first_page(), response.as_bytes(), &none);
        let body = String::from_utf8(a.body.unwrap().to_vec()).unwrap();
        assert!(body.contains(&format!("[{twice},")), "{body}");
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
        // Nothing added: the upstream's bytes are kept as they came.
        assert!(a.body.is_none());
        let v: Value = serde_json::from_slice(clash).unwrap();
        assert_eq!(
            v["result"]["tools"],
            json!([{"name":"show","inputSchema":{}}])
        );
    }
}
