//! The requests of the revision that the gateway refuses, whatever the upstream, with the
//! HTTP status and JSON-RPC code the revision gives them and the request's id.

use serde_json::{Value, json};

use super::{
    Findings, Front, Kind, META_CAPABILITIES, META_VERSION, REVISION, Servers, meta, post, request,
    revision_headers,
};
use crate::support::peers::setup;

/// One request and the refusal it must get: `(status, code)`, or `None` when it must
/// be served (a result).
struct Case {
    what: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Value,
    refusal: Option<(u16, i64)>,
}

/// `body` with the revision's headers, `edit`ed.
fn with_headers(
    body: &Value,
    edit: impl FnOnce(&mut Vec<(&'static str, String)>),
) -> Vec<(&'static str, String)> {
    let mut h = revision_headers(body);
    edit(&mut h);
    h
}

fn set(h: &mut Vec<(&'static str, String)>, name: &'static str, value: &str) {
    h.retain(|(n, _)| *n != name);
    h.push((name, value.to_owned()));
}

fn unset(h: &mut Vec<(&'static str, String)>, name: &'static str) {
    h.retain(|(n, _)| *n != name);
}

/// `tools/list` whose `_meta` is `meta` (`Null`: no `_meta`).
fn list_with_meta(id: &str, meta: Value) -> Value {
    let params = match meta {
        Value::Null => json!({}),
        meta => json!({"_meta": meta}),
    };
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
}

/// `get_time` called as a client of the revision.
fn get_time(id: &str) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": "get_time", "arguments": {}}),
        json!({}),
    )
}

/// Every case, with ids of their own (strings, which the answers must echo as sent).
fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut add = |what, headers, body, refusal| {
        cases.push(Case {
            what,
            headers,
            body,
            refusal,
        });
    };
    let mut no_version = meta(json!({}));
    no_version.as_object_mut().unwrap().remove(META_VERSION);
    let mut no_caps = meta(json!({}));
    no_caps.as_object_mut().unwrap().remove(META_CAPABILITIES);
    let mut version_number = meta(json!({}));
    version_number[META_VERSION] = json!(20260728);
    let mut caps_string = meta(json!({}));
    caps_string[META_CAPABILITIES] = json!("none");
    for (what, id, m) in [
        ("no params._meta", "meta-none", Value::Null),
        ("_meta not an object", "meta-string", json!("2026-07-28")),
        (
            "_meta without protocolVersion",
            "meta-no-version",
            no_version,
        ),
        ("_meta without clientCapabilities", "meta-no-caps", no_caps),
        (
            "protocolVersion not a string",
            "meta-version-number",
            version_number,
        ),
        (
            "clientCapabilities not an object",
            "meta-caps-string",
            caps_string,
        ),
    ] {
        let body = list_with_meta(id, m);
        add(what, with_headers(&body, |_| {}), body, Some((400, -32602)));
    }
    let body = list_with_meta("method-other", meta(json!({})));
    let h = with_headers(&body, |h| set(h, "mcp-method", "tools/call"));
    add(
        "Mcp-Method names another method",
        h,
        body,
        Some((400, -32020)),
    );
    let body = list_with_meta("method-absent", meta(json!({})));
    let h = with_headers(&body, |h| unset(h, "mcp-method"));
    add(
        "no Mcp-Method under a 2026-07-28 MCP-Protocol-Version",
        h,
        body,
        Some((400, -32020)),
    );
    let body = list_with_meta("method-twice", meta(json!({})));
    let h = with_headers(&body, |h| h.push(("mcp-method", "tools/list".into())));
    add("Mcp-Method sent twice", h, body, Some((400, -32020)));
    let body = get_time("name-other");
    let h = with_headers(&body, |h| set(h, "mcp-name", "ask_name"));
    add("Mcp-Name names another tool", h, body, Some((400, -32020)));
    let body = get_time("name-absent");
    let h = with_headers(&body, |h| unset(h, "mcp-name"));
    add(
        "no Mcp-Name for tools/call under a 2026-07-28 MCP-Protocol-Version",
        h,
        body,
        Some((400, -32020)),
    );
    let body = get_time("name-base64-other");
    // "ask_name" in the revision's base64 form.
    let h = with_headers(&body, |h| set(h, "mcp-name", "=?base64?YXNrX25hbWU=?="));
    add(
        "Mcp-Name in base64 naming another tool",
        h,
        body,
        Some((400, -32020)),
    );
    let body = get_time("name-base64");
    // "get_time" in the revision's base64 form.
    let h = with_headers(&body, |h| set(h, "mcp-name", "=?base64?Z2V0X3RpbWU=?="));
    add("Mcp-Name in base64 naming the tool (served)", h, body, None);
    let body = get_time("name-spaces");
    let h = with_headers(&body, |h| set(h, "mcp-name", "  get_time "));
    add("Mcp-Name with surrounding spaces (served)", h, body, None);
    let body = get_time("hosts-mix");
    let h = vec![("mcp-protocol-version", "2025-11-25".to_owned())];
    add(
        "a 2025 MCP-Protocol-Version with the revision's body and no Mcp-* header, as hosts \
         send (served)",
        h,
        body,
        None,
    );
    let mut other = meta(json!({}));
    other[META_VERSION] = json!("v999.0.0");
    let body = list_with_meta("header-vs-body", other.clone());
    let h = with_headers(&body, |_| {});
    add(
        "MCP-Protocol-Version 2026-07-28 with _meta naming v999.0.0",
        h,
        body,
        Some((400, -32020)),
    );
    let body = list_with_meta("unsupported", other.clone());
    let h = with_headers(&body, |h| set(h, "mcp-protocol-version", "v999.0.0"));
    add(
        "v999.0.0 in the header and _meta",
        h,
        body,
        Some((400, -32022)),
    );
    let body = list_with_meta("unsupported-no-header", other);
    let h = with_headers(&body, |h| unset(h, "mcp-protocol-version"));
    add(
        "v999.0.0 in _meta, no MCP-Protocol-Version",
        h,
        body,
        Some((400, -32022)),
    );
    // `inputResponses` and `requestState` as the revision types them: an object of
    // results (an elicitation's, a sampling's, a roots listing), and a string.
    let elicited = json!({"action": "accept", "content": {"name": "Ada"}});
    for (what, id, extra) in [
        (
            "inputResponses a number",
            "responses-number",
            json!({"inputResponses": 12345}),
        ),
        (
            "inputResponses null",
            "responses-null",
            json!({"inputResponses": null}),
        ),
        (
            "an input response that is a number",
            "response-number",
            json!({"inputResponses": {"user_name": 12345}}),
        ),
        (
            "an input response that is no result the revision has",
            "response-shapeless",
            json!({"inputResponses": {"user_name": {"name": "Ada"}}}),
        ),
        (
            "requestState a number",
            "state-number",
            json!({"requestState": 7}),
        ),
    ] {
        let mut body = get_time(id);
        body["params"]
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        add(what, with_headers(&body, |_| {}), body, Some((400, -32602)));
    }
    let mut body = get_time("responses-unasked");
    body["params"]["inputResponses"] = json!({"unasked": elicited});
    add(
        "an input response nothing asked for, without a state (served: ignored)",
        with_headers(&body, |_| {}),
        body,
        None,
    );
    for (method, id, params) in [
        (
            "initialize",
            "removed-initialize",
            json!({"protocolVersion": REVISION, "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}),
        ),
        ("ping", "removed-ping", json!({})),
        (
            "logging/setLevel",
            "removed-setlevel",
            json!({"level": "info"}),
        ),
        (
            "resources/subscribe",
            "removed-subscribe",
            json!({"uri": "legacy://counter"}),
        ),
        (
            "resources/unsubscribe",
            "removed-unsubscribe",
            json!({"uri": "legacy://counter"}),
        ),
        ("unknown/method", "unknown-method", json!({})),
        ("tasks/list", "not-in-the-revision", json!({})),
    ] {
        let body = request(id, method, params, json!({}));
        let h = with_headers(&body, |_| {});
        let what = match method {
            "unknown/method" | "tasks/list" => "a method outside the revision",
            _ => "a method the revision removed",
        };
        add(what, h, body, Some((404, -32601)));
    }
    cases
}

/// Each request of the revision that the revision refuses gets its refusal from the
/// gateway, whatever the upstream (legacy_server.py over stdio, legacy SSE and
/// streamable HTTP): a missing or malformed `_meta` 400 `-32602`; `Mcp-Method` or
/// `Mcp-Name` (plain or base64) contradicting the body, missing under a 2026-07-28
/// `MCP-Protocol-Version`, or repeated, 400 `-32020`; `inputResponses` that is not an
/// object of results (a number, `null`, an entry a number or no result the revision
/// has) or a `requestState` that is not a string, 400 `-32602`; a header naming 2026-07-28 over a
/// body naming another revision 400 `-32020`; an unsupported revision 400 `-32022` with
/// `data.supported` and `data.requested`; the methods the revision removed, and any
/// outside it, 404 `-32601`. Every error carries the request's id. The forms the
/// revision allows (base64 and padded `Mcp-Name`, the hosts' 2025 header over a body of
/// the revision, an input response nothing asked for) are served, with `resultType`.
#[tokio::test]
async fn requests_of_the_revision_are_validated() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let kinds = [Kind::Stdio, Kind::Sse, Kind::Http];
    let servers = Servers::start(&peers, &kinds).await;
    let front = Front::of(&peers, &servers, &kinds, None, "").await;
    let mut findings = Findings::default();
    for kind in kinds {
        let url = front.url(kind);
        for case in cases() {
            let headers: Vec<(&str, &str)> =
                case.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let what = format!("{}: {}", kind.label(), case.what);
            let Some(answer) = findings.note(&what, post(&url, &headers, &case.body).await) else {
                continue;
            };
            let id = &case.body["id"];
            let verdict = match case.refusal {
                Some((status, code)) => answer.refused(status, code, id).map(|_| ()),
                None => answer
                    .ok()
                    .and_then(|r| match r["resultType"] == "complete" {
                        true => Ok(()),
                        false => Err(format!("served without resultType: {answer}")),
                    }),
            };
            findings.note(&what, verdict);
            if case.refusal == Some((400, -32022)) {
                let data = &answer.body["error"]["data"];
                findings.check(
                    data["supported"] == json!([REVISION]) && data["requested"] == "v999.0.0",
                    || format!("{what}: data is {data}, not the supported and requested ones"),
                );
            }
        }
    }
    findings.assert_none(&front, "requests of the revision refused as it requires");
    front.gateway.stop().await;
}
