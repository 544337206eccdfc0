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

use crate::rewrite::listing::ListedPage;
use crate::rewrite::{self, ListChanged, Warning};
use mcp_ui_overlay::host::Target;
use mcp_ui_overlay::overlay::{MountOverlays, OverlaySet};
use mcp_ui_wire::jsonrpc::{self, Kind, Message, code};

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
    /// A `resources/read` of a `ui://` URI the overlays do not serve (now):
    /// an upstream that cannot answer it is answered "Resource not found".
    ResourceRead(String),
    /// A `tools/call` of a tool whose overlay shapes results or lists an
    /// `output_schema` (which every result is then held to).
    ToolCall(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    Forward,
    /// Answer with this complete response; the upstream never sees the request.
    Answer(Bytes),
    Rewrite(Rewrite),
}

/// Decide for one message sent to `mount` by the host `target` names.
/// `upstream_has` says whether the upstream listed a tool of that name (it
/// then wins over a render tool).
pub fn plan(
    overlays: &OverlaySet,
    mount: &str,
    m: &Message<'_>,
    target: &Target,
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
            let Some(uri) = view.uri.as_deref() else {
                return Plan::Forward;
            };
            match overlays.widgets().by_uri(uri) {
                Some(widget) => {
                    let result = rewrite::read_result(widget, target);
                    Plan::Answer(result_response(m.id, &result))
                }
                None if uri.starts_with("ui://") => {
                    Plan::Rewrite(Rewrite::ResourceRead(uri.to_owned()))
                }
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
                Some((name, tool)) if !tool.result.is_noop() || tool.output_schema.is_some() => {
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
    /// For a `tools/list` page: the upstream's tools on it, for the caller
    /// to remember (render tools yield to them; the overlays are compared
    /// with them).
    pub upstream_tools: Option<ListedPage>,
    /// For a `tools/list` page: whether it ends the listing (no `nextCursor`).
    pub last_page: bool,
}

/// Rewrite the response to a planned request. Anything unexpected (not JSON,
/// no result, another error) leaves the response untouched. `target` and
/// `upstream_has` are as for [`plan`] (`upstream_has`: the names on earlier
/// `tools/list` pages).
pub fn apply(
    overlays: &OverlaySet,
    mount: &str,
    rewrite: &Rewrite,
    response: &[u8],
    target: &Target,
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
        return answer_error(overlays, mount, rewrite, target, message, not_found);
    }
    let Some(result) = message.get_mut("result") else {
        return Applied::default();
    };
    let mut upstream_tools = None;
    let last_page = result.get("nextCursor").is_none();
    let list_changed = ListChanged {
        tools: true,
        resources: true,
    };
    match rewrite {
        Rewrite::Initialize => rewrite::initialize_result(result, list_changed),
        // A 2026-07-28 upstream's changes reach its clients through its own
        // `subscriptions/listen`, which the gateway does not add to.
        Rewrite::Discover => rewrite::discover_result(result, ListChanged::default()),
        Rewrite::ToolsListPage { .. } => {
            let tools = result.get("tools").and_then(Value::as_array);
            let none = MountOverlays::default();
            let overlaid = overlays.mount(mount).unwrap_or(&none);
            let page = ListedPage::of(tools.map_or(&[][..], Vec::as_slice), Some(overlaid));
            if tools.is_some_and(|t| t.iter().any(|t| !t.is_object())) {
                // An item that is no tool: the listing passes as it was sent
                // (written again, a number such as `1e-999` would not be the
                // same), with nothing added.
                return Applied {
                    body: None,
                    warnings,
                    upstream_tools: Some(page),
                    last_page,
                };
            }
            warnings = rewrite::tools_list(result, overlaid, overlays.widgets());
            warnings.extend(rewrite::render::add_render_tools(
                result,
                overlaid,
                overlays.widgets(),
                upstream_has,
            ));
            upstream_tools = Some(page);
        }
        Rewrite::ResourcesList => {
            warnings = rewrite::resources_list(result, &overlays.widgets_for(mount), target);
        }
        Rewrite::TemplatesList | Rewrite::ResourceRead(_) => return Applied::default(),
        Rewrite::ToolCall(name) => match overlays.mount(mount).and_then(|m| m.tool(name)) {
            Some(tool) => warnings = rewrite::tools_call_result(result, tool),
            None => return Applied::default(),
        },
    }
    Applied {
        body: Some(to_bytes(&message)),
        warnings,
        upstream_tools,
        last_page,
    }
}

/// A `tools/list` page rewritten as it was read, without parsing it into a
/// tree; `None` when it must be parsed.
fn tools_list_page(
    overlays: &OverlaySet,
    mount: &str,
    response: &[u8],
    upstream_has: &dyn Fn(&str) -> bool,
) -> Option<Applied> {
    let none = MountOverlays::default();
    let overlaid = overlays.mount(mount).unwrap_or(&none);
    let page = rewrite::tools_list_page(response, overlaid, overlays.widgets(), upstream_has)?;
    Some(Applied {
        body: page.text.map(Bytes::from),
        warnings: page.warnings,
        upstream_tools: Some(ListedPage {
            names: page.names,
            overlaid: page.overlaid,
        }),
        last_page: page.last,
    })
}

/// An upstream's error `message` to a request the gateway can answer
/// itself: a resource listing it lacks (`not_found`: it has no such
/// method), or a read of a widget the overlays own. Any other error is
/// left as it was.
fn answer_error(
    overlays: &OverlaySet,
    mount: &str,
    rewrite: &Rewrite,
    target: &Target,
    mut message: Map<String, Value>,
    not_found: bool,
) -> Applied {
    let local = match rewrite {
        Rewrite::ResourcesList if not_found => {
            rewrite::local_resources_list(&overlays.widgets_for(mount), target)
        }
        Rewrite::TemplatesList if not_found => json!({ "resourceTemplates": [] }),
        Rewrite::ResourceRead(uri) if not_found || overlays_own(overlays, uri) => {
            message.insert("error".into(), resource_not_found(uri));
            return Applied {
                body: Some(to_bytes(&message)),
                warnings: Vec::new(),
                ..Applied::default()
            };
        }
        _ => return Applied::default(),
    };
    message.remove("error");
    message.insert("result".into(), local);
    Applied {
        body: Some(to_bytes(&message)),
        warnings: Vec::new(),
        ..Applied::default()
    }
}

/// `{"code": -32002, "message": "Resource not found", "data": {"uri": …}}`,
/// as the MCP specification spells it.
fn resource_not_found(uri: &str) -> Value {
    json!({
        "code": code::RESOURCE_NOT_FOUND,
        "message": "Resource not found",
        "data": { "uri": uri }
    })
}

/// Whether `uri` is in the namespace of a widget the overlays define
/// (`ui://<widget>/…`): a version that expired, or never existed. Whatever
/// the upstream says of it, the gateway's answer is "Resource not found".
fn overlays_own(overlays: &OverlaySet, uri: &str) -> bool {
    let name = uri
        .strip_prefix("ui://")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default();
    overlays.widgets().get(name).is_some()
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
mod tests;
