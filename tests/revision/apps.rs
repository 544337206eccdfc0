//! An app endpoint (`[[app]]`) of 2025-era members served in the 2026-07-28 revision:
//! what a client of the revision gets from one mount of a 2025 upstream (discover,
//! validation, answers, rounds, listen, the Python client), it gets from an app that
//! unites several, under the members' prefixes.

use std::path::Path;
use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{Value, json};

use super::{
    Answer, Findings, Front, Kind, META_CAPABILITIES, META_CLIENT_INFO, META_SERVER_INFO,
    META_SUBSCRIPTION, META_VERSION, REVISION, Servers, all_caps, ask, post, request,
    revision_headers,
};
use crate::support::clients::{SseReader, open_sse};
use crate::support::peers::*;

/// The app's name; it is served at `/<APP>/mcp`.
const APP: &str = "suite";
/// The app's members, each at its own mount ([`Kind::mount`]) too, with its prefix.
const MEMBERS: [(Kind, &str); 3] = [
    (Kind::Stdio, "legacy_"),
    (Kind::Time, "time_"),
    (Kind::Sse, "sse_"),
];
/// The members whose server is `legacy_server.py` (they elicit).
const LEGACY_MEMBERS: [(Kind, &str); 2] = [(Kind::Stdio, "legacy_"), (Kind::Sse, "sse_")];
/// The tools the app must list: `legacy_server.py`'s and mcp-server-time's, prefixed.
const LISTED: &[&str] = &[
    "legacy_get_time",
    "legacy_ask_name",
    "time_get_current_time",
    "time_convert_time",
    "sse_get_time",
    "sse_ask_name",
];
/// mcp-server-time's tool as the app lists it, and as its member names it.
const TIME_TOOL: &str = "time_get_current_time";
const TIME_OWN: &str = "get_current_time";
const NAME: &str = "Ada";
/// A notification the gateway must deliver within this.
const DELIVERY: Duration = Duration::from_secs(10);

/// The gateway's tables: every member at its own mount, then the app of all three.
fn tables(peers: &Peers, servers: &Servers) -> String {
    let mut tables: String = MEMBERS
        .iter()
        .map(|(kind, _)| servers.table(peers, *kind, kind.mount(), ""))
        .collect();
    let members = MEMBERS
        .iter()
        .map(|(kind, prefix)| {
            format!(
                "{{ upstream = {}, prefix = {} }}",
                Value::from(kind.mount()),
                Value::from(*prefix)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    tables.push_str(&format!(
        "[[app]]\nname = {}\nupstreams = [{members}]\n",
        Value::from(APP)
    ));
    tables
}

// ---------------------------------------------------------------------------------------
// 1. server/discover

/// `server/discover` as Claude's connector sends it: only its User-Agent, no MCP header,
/// and claude-ai's `_meta` (discover.rs, `Asker::Claude`).
async fn discover_as_claude(url: &str) -> Result<Answer, String> {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {
    "_meta": {
        META_VERSION: REVISION,
        META_CLIENT_INFO: {"name": "claude-ai", "version": "0.1.0"},
        META_CAPABILITIES: {},
    }}});
    post(url, &[("user-agent", "Claude-User")], &body).await
}

/// What a `server/discover` result of the app lacks of the revision's form: 2026-07-28
/// among `supportedVersions`, `resultType`, `ttlMs` and `cacheScope`, `capabilities.tools`
/// and the app's name in `_meta[serverInfo]` (instructions are not required).
fn discover_form(result: &Value) -> Result<(), String> {
    let mut wrong = Vec::new();
    let versions = result["supportedVersions"].as_array();
    if !versions.is_some_and(|v| v.iter().any(|v| v == REVISION)) {
        wrong.push(format!("supportedVersions lacks {REVISION}"));
    }
    if result["resultType"] != "complete" {
        wrong.push(format!("resultType is {}", result["resultType"]));
    }
    if !result["ttlMs"].is_u64() || !result["cacheScope"].is_string() {
        wrong.push(format!(
            "ttlMs/cacheScope are {}/{}",
            result["ttlMs"], result["cacheScope"]
        ));
    }
    if !result["capabilities"]["tools"].is_object() {
        wrong.push("no capabilities.tools".into());
    }
    let info = &result["_meta"][META_SERVER_INFO];
    if info["name"] != APP {
        wrong.push(format!(
            "_meta[{META_SERVER_INFO}] is {info}, not the app's name"
        ));
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(format!("{}; result: {result}", wrong.join("; "))),
    }
}

// ---------------------------------------------------------------------------------------
// 2. Validation

/// One request of the revision and the refusal it must get, `None` when it is served.
struct Case {
    what: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Value,
    refusal: Option<(u16, i64)>,
}

/// mcp-server-time's tool called through the app by a client of the revision.
fn time_call(id: &str) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": TIME_TOOL, "arguments": {"timezone": "UTC"}}),
        json!({}),
    )
}

/// `body` with the revision's headers, its `Mcp-Name` replaced by `name`.
fn named(body: &Value, name: &str) -> Vec<(&'static str, String)> {
    let mut h = revision_headers(body);
    h.retain(|(n, _)| *n != "mcp-name");
    h.push(("mcp-name", name.to_owned()));
    h
}

/// The cases checked at the app, with string ids the answers must echo.
fn cases() -> Vec<Case> {
    let no_meta = json!({"jsonrpc": "2.0", "id": "app-no-meta", "method": "tools/list",
        "params": {}});
    let ping = request("app-ping", "ping", json!({}), json!({}));
    let other = time_call("app-name-other");
    let own = time_call("app-name-member-own");
    let listed = time_call("app-name-listed");
    vec![
        Case {
            what: "tools/list without _meta under MCP-Protocol-Version 2026-07-28",
            headers: revision_headers(&no_meta),
            body: no_meta,
            refusal: Some((400, -32602)),
        },
        Case {
            what: "ping of the revision (removed)",
            headers: revision_headers(&ping),
            body: ping,
            refusal: Some((404, -32601)),
        },
        Case {
            what: "tools/call whose Mcp-Name names another of the app's tools",
            headers: named(&other, "legacy_get_time"),
            body: other,
            refusal: Some((400, -32020)),
        },
        Case {
            what: "tools/call whose Mcp-Name is the member's own (unprefixed) name, the body \
                   the app's",
            headers: named(&own, TIME_OWN),
            body: own,
            refusal: Some((400, -32020)),
        },
        Case {
            what: "tools/call whose Mcp-Name is the app's (prefixed) name (served)",
            headers: revision_headers(&listed),
            body: listed,
            refusal: None,
        },
    ]
}

// ---------------------------------------------------------------------------------------
// 3., 4., 6. Answers

/// Every tool the app lists, page after page (at most 5), checking each page's form:
/// `resultType`, `ttlMs` a number and `cacheScope` "private".
async fn list_tools(url: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut cursor: Option<Value> = None;
    for page in 0..5u64 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let a = ask(url, &request(300 + page, "tools/list", params, all_caps())).await?;
        let r = a.ok()?;
        if r["resultType"] != "complete" || !r["ttlMs"].is_u64() || r["cacheScope"] != "private" {
            return Err(format!(
                "page {page}: resultType/ttlMs/cacheScope are {}/{}/{}, not \
                 \"complete\"/a number/\"private\": {a}",
                r["resultType"], r["ttlMs"], r["cacheScope"]
            ));
        }
        let tools = r["tools"]
            .as_array()
            .ok_or_else(|| format!("page {page} has no tools array: {a}"))?;
        names.extend(
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned)),
        );
        match r.get("nextCursor").filter(|c| !c.is_null()) {
            Some(c) => cursor = Some(c.clone()),
            None => return Ok(names),
        }
    }
    Err(format!("more than 5 pages; listed so far: {names:?}"))
}

/// What the listing lacks: every tool of [`LISTED`], and no name outside the prefixes.
fn listing_complete(names: &[String]) -> Result<(), String> {
    let missing: Vec<&&str> = LISTED
        .iter()
        .filter(|t| !names.iter().any(|n| n == **t))
        .collect();
    let unprefixed: Vec<&String> = names
        .iter()
        .filter(|n| !MEMBERS.iter().any(|(_, p)| n.starts_with(p)))
        .collect();
    match missing.is_empty() && unprefixed.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "missing {missing:?}, unprefixed {unprefixed:?}; listed {names:?}"
        )),
    }
}

/// mcp-server-time's answer through the app: a complete, uncached result whose text is
/// the time in UTC.
fn time_result(a: &Answer) -> Result<(), String> {
    let r = a.ok()?;
    if r["resultType"] != "complete" {
        return Err(format!("resultType is {}: {a}", r["resultType"]));
    }
    if r.get("ttlMs").is_some() || r.get("cacheScope").is_some() {
        return Err(format!("a tools/call result is not cacheable: {a}"));
    }
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    let time: Value =
        serde_json::from_str(text).map_err(|e| format!("the text is not JSON ({e}): {a}"))?;
    match time["timezone"] == "UTC" {
        true => Ok(()),
        false => Err(format!("not the time in UTC: {a}")),
    }
}

/// `method`'s listing at the app: complete, cacheable, with its array.
async fn listing(url: &str, id: u64, method: &str, array: &str) -> Result<(), String> {
    let a = ask(url, &request(id, method, json!({}), all_caps())).await?;
    let r = a.ok()?;
    match r["resultType"] == "complete" && r["ttlMs"].is_u64() && r[array].is_array() {
        true => Ok(()),
        false => Err(format!(
            "not a complete listing with ttlMs and {array:?}: {a}"
        )),
    }
}

// ---------------------------------------------------------------------------------------
// 5. Rounds

/// `tool` called through the app by a client declaring `caps`, with `extra` params.
fn call(id: u64, tool: &str, extra: Value, caps: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    request(id, "tools/call", params, caps)
}

/// `ask_name` under `prefix`: a round asking one `elicitation/create`, then, answered
/// with [`NAME`] under the round's key and state, "Hello, Ada".
async fn ask_name_round(url: &str, prefix: &str, id: u64) -> Result<(), String> {
    let tool = format!("{prefix}ask_name");
    let a = ask(url, &call(id, &tool, json!({}), all_caps())).await?;
    let r = a.ok()?;
    let requests = r["inputRequests"].as_object().cloned().unwrap_or_default();
    let state = r["requestState"].as_str().unwrap_or_default().to_owned();
    if r["resultType"] != "input_required" || requests.is_empty() || state.is_empty() {
        return Err(format!("not an input_required round: {a}"));
    }
    let methods: Vec<&Value> = requests.values().map(|r| &r["method"]).collect();
    if methods != [&json!("elicitation/create")] {
        return Err(format!("the round asks {methods:?}: {a}"));
    }
    let responses: serde_json::Map<String, Value> = requests
        .keys()
        .map(|k| {
            let answer = json!({"action": "accept", "content": {"name": NAME}});
            (k.clone(), answer)
        })
        .collect();
    let extra = json!({"inputResponses": responses, "requestState": state});
    let a = ask(url, &call(id + 1, &tool, extra, all_caps())).await?;
    let r = a.ok()?;
    let text = r["content"][0]["text"].as_str();
    match r["resultType"] == "complete" && text == Some(format!("Hello, {NAME}").as_str()) {
        true => Ok(()),
        false => Err(format!("the retry is not \"Hello, {NAME}\", complete: {a}")),
    }
}

/// `ask_name` under `prefix` from a client that did not declare elicitation: 400
/// `-32021` naming it in `data.requiredCapabilities`.
async fn undeclared_elicitation(url: &str, prefix: &str, id: u64) -> Result<(), String> {
    let tool = format!("{prefix}ask_name");
    let a = ask(url, &call(id, &tool, json!({}), json!({}))).await?;
    let error = a.refused(400, -32021, &json!(id))?;
    match error["data"]["requiredCapabilities"]["elicitation"].is_object() {
        true => Ok(()),
        false => Err(format!("no data.requiredCapabilities.elicitation: {a}")),
    }
}

// ---------------------------------------------------------------------------------------
// 7. subscriptions/listen

/// The next message on `reader` within `limit`.
async fn next_message(reader: &mut SseReader, limit: Duration) -> Result<Value, String> {
    let event = reader
        .next_event(limit)
        .await
        .map_err(|e| format!("{e:#}"))?
        .ok_or("the stream ended")?;
    event.json().map_err(|e| format!("{e:#}"))
}

/// Opens `subscriptions/listen` (id `id`) on the app for the tools' changes: an SSE
/// stream whose first message acknowledges `toolsListChanged: true`, tagged with `id`.
async fn listen_to_tools(url: &str, id: &Value) -> Result<SseReader, String> {
    let body = request(
        id.clone(),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    );
    let mut headers = revision_headers(&body);
    headers.push(("content-type", "application/json".into()));
    headers.push(("accept", "application/json, text/event-stream".into()));
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let (status, response_headers, mut reader) =
        open_sse(Method::POST, url, &headers, body.to_string())
            .await
            .map_err(|e| format!("{e:#}"))?;
    let media = response_headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if status != StatusCode::OK || !media.starts_with("text/event-stream") {
        // The reader parses SSE only: the same request again, for the answer's text.
        let again = post(url, &headers, &body).await;
        let said = again.map_or_else(|e| e, |a| a.to_string());
        return Err(format!("not an SSE stream ({media:?}): {said}"));
    }
    let ack = next_message(&mut reader, DELIVERY).await?;
    if ack["method"] != "notifications/subscriptions/acknowledged" {
        return Err(format!(
            "the first message is not the acknowledgement: {ack}"
        ));
    }
    if ack["params"]["notifications"]["toolsListChanged"] != true {
        return Err(format!(
            "the acknowledgement does not honor toolsListChanged: {ack}"
        ));
    }
    match ack["params"]["_meta"][META_SUBSCRIPTION] == *id {
        true => Ok(reader),
        false => Err(format!(
            "the acknowledgement is not tagged with the listen id {id}: {ack}"
        )),
    }
}

/// Waits (within [`DELIVERY`]) for `notifications/tools/list_changed` tagged with `id`;
/// on failure, names what the stream delivered instead.
async fn tools_changed(reader: &mut SseReader, id: &Value) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + DELIVERY;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let message = next_message(reader, left).await.map_err(|e| {
            format!("no notifications/tools/list_changed ({e}); delivered {seen:?}")
        })?;
        if message["method"] == "notifications/tools/list_changed" {
            return match message["params"]["_meta"][META_SUBSCRIPTION] == *id {
                true => Ok(()),
                false => Err(format!("not tagged with the listen id {id}: {message}")),
            };
        }
        seen.push(message);
    }
}

/// Replaces `<mount>.toml` in `dir` atomically, as editors save: a title for
/// `legacy_server.py`'s `get_time`.
fn write_overlay(dir: &Path, mount: &str) {
    let file = dir.join(format!("{mount}.toml"));
    let temp = dir.join(format!(".{mount}.toml.saving"));
    std::fs::write(&temp, "[tools.get_time]\ntitle = \"Time, overlaid\"\n").unwrap();
    std::fs::rename(&temp, &file).unwrap();
}

// ---------------------------------------------------------------------------------------
// 8. The Python client

/// What `py_client.py --mode 2026-07-28` did wrong through the app: its protocol, the
/// tools it listed, its call of mcp-server-time's tool, a request outside the revision.
fn judge_python(summary: &Value) -> Result<(), String> {
    let mut wrong = Vec::new();
    if summary["protocol_version"] != REVISION {
        wrong.push(format!("protocol {}", summary["protocol_version"]));
    }
    let tools: Vec<String> = summary["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if let Err(e) = listing_complete(&tools) {
        wrong.push(format!("tools: {e}"));
    }
    let call = &summary["call"];
    let time: Value =
        serde_json::from_str(call["text"].as_str().unwrap_or_default()).unwrap_or_default();
    if call["is_error"] != false || time["timezone"] != "UTC" {
        wrong.push(format!("{TIME_TOOL}: {call}"));
    }
    let log = summary["http_log"].as_array().cloned().unwrap_or_default();
    if let Some(e) = log
        .iter()
        .find(|e| e["rpc"] == "initialize" || e["mcp-protocol-version"] != REVISION)
    {
        wrong.push(format!("a request outside the revision: {e}"));
    }
    match wrong.is_empty() {
        true => Ok(()),
        false => Err(format!("{}\n    summary: {summary}", wrong.join("; "))),
    }
}

/// An app (`[[app]]`) of 2025-era members — legacy_server.py (mcp 1.30) over stdio as
/// `legacy_`, mcp-server-time 2026.6.4 over stdio as `time_`, legacy_server.py over
/// legacy SSE as `sse_` — is served in the 2026-07-28 revision as one of its mounts is:
/// 1. `server/discover` 200 with 2026-07-28 in `supportedVersions`, `resultType`, `ttlMs`,
///    `cacheScope`, `capabilities.tools` and the app's name in `_meta[serverInfo]`, for a
///    client of the revision and for Claude's connector (no MCP header);
/// 2. a `tools/list` without `_meta` under a 2026-07-28 `MCP-Protocol-Version` 400
///    `-32602`, `ping` 404 `-32601`, an `Mcp-Name` that is not the body's name (another
///    tool, or the member's own unprefixed name) 400 `-32020`, each with the request's id,
///    and an `Mcp-Name` equal to the app's prefixed name served;
/// 3. `tools/list` complete, with `ttlMs` and `cacheScope` "private", every member's
///    tools under its prefix;
/// 4. mcp-server-time's `get_current_time` called as `time_get_current_time`: complete;
/// 5. `ask_name` under each legacy prefix an `input_required` round whose retry is
///    "Hello, Ada", and 400 `-32021` for a client without elicitation;
/// 6. `prompts/list`, `resources/list` complete; `resources/read` of `legacy://counter`
///    complete, of an unknown URI 400 `-32602` with `data.uri`;
/// 7. `subscriptions/listen` acknowledged and tagged with its id, then
///    `notifications/tools/list_changed` so tagged after a member's overlay is written;
/// 8. the Python `mcp` 2.3 client pinned to 2026-07-28 lists the tools and calls
///    `time_get_current_time`, every request of the revision.
#[tokio::test]
async fn an_app_of_2025_members_is_served_as_2026() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let kinds: Vec<Kind> = MEMBERS.iter().map(|(k, _)| *k).collect();
    let overlays = tempfile::tempdir().unwrap();
    let servers = Servers::start(&peers, &kinds).await;
    let front = Front::start(
        &peers,
        "an app of 2025 members",
        Some(overlays.path()),
        &tables(&peers, &servers),
    )
    .await;
    let url = front.url_of(APP);
    let mut findings = Findings::default();
    let f = &mut findings;

    // 1. server/discover, as a client of the revision and as Claude's connector.
    let revision = ask(&url, &request(1, "server/discover", json!({}), json!({}))).await;
    for (asker, answer) in [
        ("a client of the revision", revision),
        ("Claude's connector", discover_as_claude(&url).await),
    ] {
        let form = answer.and_then(|a| a.ok().cloned().and_then(|r| discover_form(&r)));
        f.note(format!("1. server/discover ({asker})"), form);
    }

    // 2. Validation.
    for case in cases() {
        let headers: Vec<(&str, &str)> =
            case.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let what = format!("2. {}", case.what);
        let Some(answer) = f.note(&what, post(&url, &headers, &case.body).await) else {
            continue;
        };
        let verdict = match case.refusal {
            Some((status, code)) => answer.refused(status, code, &case.body["id"]).map(|_| ()),
            None => time_result(&answer),
        };
        f.note(&what, verdict);
    }

    // 3. tools/list.
    let listed = list_tools(&url).await.and_then(|n| listing_complete(&n));
    f.note("3. tools/list of the revision", listed);

    // 4. tools/call of a member's tool.
    let called = ask(&url, &time_call("app-time")).await;
    f.note(
        format!("4. tools/call {TIME_TOOL}"),
        called.and_then(|a| time_result(&a)),
    );

    // 5. Rounds, on each legacy member; -32021 without elicitation.
    for (i, (kind, prefix)) in LEGACY_MEMBERS.iter().enumerate() {
        let id = 500 + 10 * i as u64;
        f.note(
            format!("5. {prefix}ask_name ({}) as a round", kind.label()),
            ask_name_round(&url, prefix, id).await,
        );
        f.note(
            format!("5. {prefix}ask_name without elicitation declared"),
            undeclared_elicitation(&url, prefix, id + 5).await,
        );
    }

    // A round its client leaves open keeps its upstream request waiting: another
    // client's call is asked on a connection where it waits alone.
    let (_, prefix) = LEGACY_MEMBERS[0];
    let tool = format!("{prefix}ask_name");
    let open = ask(&url, &call(590, &tool, json!({}), all_caps())).await;
    let open = open.and_then(|a| match a.ok()?["resultType"] == "input_required" {
        true => Ok(()),
        false => Err(format!("not an input_required round: {a}")),
    });
    if f.note("5. a round left open", open).is_some() {
        f.note(
            "5. another client's round while one is left open",
            ask_name_round(&url, prefix, 592).await,
        );
    }

    // 6. Prompts and resources.
    for (i, (method, array)) in [("prompts/list", "prompts"), ("resources/list", "resources")]
        .into_iter()
        .enumerate()
    {
        f.note(
            format!("6. {method}"),
            listing(&url, 600 + i as u64, method, array).await,
        );
    }
    let read = ask(
        &url,
        &request(
            610,
            "resources/read",
            json!({"uri": "legacy://counter"}),
            all_caps(),
        ),
    )
    .await;
    f.note(
        "6. resources/read of legacy://counter",
        read.and_then(|a| {
            let r = a.ok()?;
            match r["resultType"] == "complete" && r["contents"].is_array() {
                true => Ok(()),
                false => Err(format!("not complete with contents: {a}")),
            }
        }),
    );
    let missing = "legacy://missing";
    let read = ask(
        &url,
        &request(611, "resources/read", json!({"uri": missing}), all_caps()),
    )
    .await;
    f.note(
        format!("6. resources/read of {missing}"),
        read.and_then(|a| {
            a.refused(400, -32602, &json!(611))?;
            match a.body["error"]["data"]["uri"] == missing {
                true => Ok(()),
                false => Err(format!("no data.uri: {a}")),
            }
        }),
    );

    // 7. subscriptions/listen, then an overlay written for the stdio member.
    let id = json!("listen-app");
    if let Some(mut reader) = f.note(
        "7. subscriptions/listen to toolsListChanged",
        listen_to_tools(&url, &id).await,
    ) {
        write_overlay(overlays.path(), Kind::Stdio.mount());
        f.note(
            format!(
                "7. tools/list_changed after {}.toml was written",
                Kind::Stdio.mount()
            ),
            tools_changed(&mut reader, &id).await,
        );
    }

    // 8. The Python client of the revision.
    let args = [
        "--mode",
        REVISION,
        "--call",
        TIME_TOOL,
        "--args",
        r#"{"timezone":"UTC"}"#,
        "--timeout",
        "25",
        "--request-timeout",
        "10",
    ];
    let run = run_client(&peers, ClientKind::Python, Target::Streamable(&url), &args).await;
    f.note(
        "8. py_client --mode 2026-07-28",
        run.and_then(|s| judge_python(&s)),
    );

    findings.assert_none(&front, "an app of 2025 members in the revision");
    front.gateway.stop().await;
}
