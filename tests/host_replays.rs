//! The hosts as they really call, replayed against real servers of every
//! upstream kind: the Python SDK's server over stdio, over legacy HTTP+SSE
//! and over stateless streamable HTTP, and server-everything (TypeScript
//! SDK) over stateful streamable HTTP. Each replay sends what the public
//! reports record (user agents, which headers are there and which are not,
//! the `_meta` keys, the order, the DELETE never sent) and each call must
//! be answered as the same server answers a well-behaved client: the
//! reference results come from the server directly, over a proper session.
//!
//! The reports (each replay names its own):
//! - ChatGPT: modelcontextprotocol/ext-apps#647 (control plane and tool
//!   plane), the OpenAI forum thread "ChatGPT does not echo back
//!   mcp-session-id anymore" (OpenAI: on purpose), openai-apps-sdk-examples
//!   #165 and #201 (an initialize per batch, the stream closed, never a
//!   DELETE), FlowFuse/flowfuse#8561 (`_meta["openai/session"]`), the forum
//!   thread 1367543 (a GET after a long idle);
//! - Claude: anthropics/claude-ai-mcp#583 (an initialize before every call),
//!   #975 (the id echoed on 0 of 30 requests, `server/discover`), #99
//!   (`notifications/initialized` without the id), anthropics/claude-code
//!   #93290 (the 2026-07-28 envelope under a 2025 header),
//!   modelcontextprotocol/ext-apps#458 (a second initialize mid-conversation,
//!   the widget's calls on the new session).

use std::process::Command;
use std::time::Duration;

use hyper::{Method, StatusCode};
use mcp_ui_model::config::{Config, UpstreamConfig};
use serde_json::{Value, json};
use support::clients::{open_legacy_sse, open_sse, parse_sse, post_json};
use support::gateway::{self as gw, TestGateway};
use support::peers::{Peers, READY_LIMIT, setup, start_everything};
use support::process::{Proc, Stream};

use crate::support;

const CHATGPT_TOOLS: &str = "openai-mcp/1.0.0";
const CHATGPT_CONTROL: &str = "openai-mcp/1.0.0 (ChatGPT)";
const CLAUDE: &str = "Claude-User";
const WAIT: Duration = Duration::from_secs(20);

// ---------------------------------------------------------------------------------------
// The wire

/// One POST as a host sends it: the JSON-RPC response it got (`None` for
/// an accepted notification), the status and the session id it was given.
struct Reply {
    status: StatusCode,
    session: Option<String>,
    message: Option<Value>,
}

async fn send(url: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
    let body_text = body.to_string();
    let bearer = bearer_for(Method::POST, url, headers, &body_text);
    let mut headers = headers.to_vec();
    if let Some(b) = &bearer {
        headers.push(("authorization", b.as_str()));
    }
    let (status, h, bytes) = post_json(url, &headers, body_text).await;
    let session = h
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let sse = h
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let message = match (sse, bytes.is_empty()) {
        (_, true) => None,
        (true, false) => parse_sse(&bytes)
            .iter()
            .filter_map(|e| e.json().ok())
            .find(|m: &Value| m.get("id") == body.get("id") && m.get("method").is_none()),
        (false, false) => serde_json::from_slice(&bytes).ok(),
    };
    Reply {
        status,
        session,
        message,
    }
}

/// A request a replay sent in front of a gateway with `[auth]`, without
/// its token: to send again as it is, tokenless.
struct Sent {
    method: Method,
    url: String,
    headers: Vec<(String, String)>,
    body: String,
}

/// The token the requests of a replay run under [`with_token`] carry, and
/// the requests they were.
struct Bearer {
    authorization: String,
    sent: std::cell::RefCell<Vec<Sent>>,
}

tokio::task_local! {
    static BEARER: Bearer;
}

/// `replay` with `Authorization: Bearer <token>` on each of its requests:
/// what it returned and the requests it sent (without the token).
async fn with_token<T>(token: &str, replay: impl Future<Output = T>) -> (T, Vec<Sent>) {
    let bearer = Bearer {
        authorization: format!("Bearer {token}"),
        sent: Default::default(),
    };
    BEARER
        .scope(bearer, async {
            let out = replay.await;
            (out, BEARER.with(|b| b.sent.take()))
        })
        .await
}

/// The `Authorization` of a request under [`with_token`] (`None`
/// otherwise), the request recorded.
fn bearer_for(method: Method, url: &str, headers: &[(&str, &str)], body: &str) -> Option<String> {
    BEARER
        .try_with(|b| {
            b.sent.borrow_mut().push(Sent {
                method,
                url: url.to_owned(),
                headers: headers
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                body: body.to_owned(),
            });
            b.authorization.clone()
        })
        .ok()
}

/// `base` with the session id, when there is one (a stateless upstream's
/// gateway gives none, and hosts then send none).
fn with_session<'a>(base: &[(&'a str, &'a str)], sid: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = base.to_vec();
    if let Some(s) = sid {
        h.push(("mcp-session-id", s));
    }
    h
}

fn initialize(id: u64, client: &str, capabilities: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":capabilities,
        "clientInfo":{"name":client,"version":"1.0.0"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/initialized"})
}

/// `tools/call` of `call` (`{name, arguments}`) as request `id`, with `meta`.
fn tool_call(id: u64, call: &Value, meta: Value) -> Value {
    let mut params = call.clone();
    params["_meta"] = meta;
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

/// What ChatGPT puts in every call's `_meta` (FlowFuse#8561, the Apps SDK
/// reference), for one conversation.
fn openai_meta(conversation: &str) -> Value {
    json!({
        "openai/locale": "en-US",
        "openai/session": format!("v1/{conversation}"),
        "openai/subject": "v1/replay-subject",
        "openai/userAgent": "Mozilla/5.0 (X11; Linux x86_64) replay",
        "openai/organization": "v1/replay-org",
        "openai/userLocation": {"city": "Lisbon", "country": "PT", "timezone": "Europe/Lisbon"},
    })
}

/// The same, under the 2026-07-28 envelope (ChatGPT's calls as seen on
/// 2026-09-15; Claude's connector, claude-code#93290).
fn envelope_meta(conversation: &str) -> Value {
    let mut m = openai_meta(conversation);
    m["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    m["io.modelcontextprotocol/clientInfo"] = json!({"name": "openai-mcp", "version": "1.0.0"});
    m["io.modelcontextprotocol/clientCapabilities"] = json!({
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
    });
    m
}

/// The result of a reply, with what a revision adds to every result (the
/// envelope's `resultType`, its `_meta` server info) left out, so that
/// results of either era compare.
fn result_of(reply: &Reply, what: &str) -> Value {
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "{what}: HTTP {}",
        reply.status
    );
    let m = reply
        .message
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no response"));
    let mut r = m
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{what}: not a result: {m}"));
    if let Some(o) = r.as_object_mut() {
        o.remove("resultType");
        o.remove("_meta");
        o.remove("ttlMs");
        o.remove("cacheScope");
    }
    r
}

// ---------------------------------------------------------------------------------------
// The upstreams

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Stdio,
    LegacySse,
    StatefulHttp,
    StatelessHttp,
}

struct Upstream {
    kind: Kind,
    config: UpstreamConfig,
    /// Its URL (HTTP, SSE) or command (stdio).
    url: Option<String>,
    command: Vec<String>,
    _proc: Option<Proc>,
    /// The calls the replays make: `{name, arguments}`.
    calls: Vec<Value>,
}

fn py_server(peers: &Peers) -> Vec<String> {
    vec![
        peers.python.display().to_string(),
        peers.script("py_server.py").display().to_string(),
    ]
}

/// The Python server with `args`, ready: its URL.
async fn start_py(peers: &Peers, args: &[&str]) -> (Proc, String) {
    let mut cmd = Command::new(&peers.python);
    cmd.arg(peers.script("py_server.py")).args(args);
    let mut p = Proc::spawn(format!("py_server {args:?}"), &mut cmd);
    let url = p
        .wait_for_async("the READY line", READY_LIMIT, |s, l| {
            (s == Stream::Stdout)
                .then(|| l.strip_prefix("READY ").map(str::to_owned))
                .flatten()
        })
        .await;
    (p, url)
}

async fn start_upstream(peers: &Peers, kind: Kind) -> Upstream {
    let py_calls = vec![
        json!({"name":"count_tasks","arguments":{}}),
        json!({"name":"greet","arguments":{"name":"Ada"}}),
        json!({"name":"list_tasks","arguments":{}}),
    ];
    match kind {
        Kind::Stdio => {
            let command = py_server(peers);
            let args: Vec<&str> = command[1..].iter().map(String::as_str).collect();
            Upstream {
                kind,
                config: gw::stdio("py", &command[0], &args),
                url: None,
                command,
                _proc: None,
                calls: py_calls,
            }
        }
        Kind::LegacySse => {
            let (p, url) = start_py(peers, &["--sse"]).await;
            Upstream {
                kind,
                config: gw::sse("py", &url),
                url: Some(url),
                command: Vec::new(),
                _proc: Some(p),
                calls: py_calls,
            }
        }
        Kind::StatelessHttp => {
            let (p, url) = start_py(peers, &["--http", "--stateless"]).await;
            Upstream {
                kind,
                config: gw::http("py", &url),
                url: Some(url),
                command: Vec::new(),
                _proc: Some(p),
                calls: py_calls,
            }
        }
        Kind::StatefulHttp => {
            let (p, url) = start_everything(peers, "streamableHttp").await;
            Upstream {
                kind,
                config: gw::http("everything", &url),
                url: Some(url),
                command: Vec::new(),
                _proc: Some(p),
                calls: vec![
                    json!({"name":"echo","arguments":{"message":"from the replay"}}),
                    json!({"name":"get-sum","arguments":{"a":2,"b":40}}),
                ],
            }
        }
    }
}

/// What the server answers a well-behaved client for each call: directly,
/// over a session opened and initialized as the specification says.
async fn reference(up: &Upstream) -> Vec<Value> {
    let init = initialize(0, "well-behaved", json!({}));
    match up.kind {
        Kind::Stdio => stdio_reference(&up.command, &up.calls).await,
        Kind::LegacySse => {
            let mut s = open_legacy_sse(up.url.as_deref().unwrap()).await.unwrap();
            s.request(&init).await.unwrap();
            s.post(&initialized()).await;
            let mut out = Vec::new();
            for (i, call) in up.calls.iter().enumerate() {
                let reply = s
                    .request(&tool_call(i as u64 + 1, call, json!({})))
                    .await
                    .unwrap();
                out.push(reply["result"].clone());
            }
            out
        }
        Kind::StatefulHttp | Kind::StatelessHttp => {
            let url = up.url.as_deref().unwrap();
            let r = send(url, &[], &init).await;
            let sid = r.session.clone();
            let mut h = vec![("mcp-protocol-version", "2025-11-25")];
            if let Some(s) = &sid {
                h.push(("mcp-session-id", s.as_str()));
            }
            send(url, &h, &initialized()).await;
            let mut out = Vec::new();
            for (i, call) in up.calls.iter().enumerate() {
                let r = send(url, &h, &tool_call(i as u64 + 1, call, json!({}))).await;
                out.push(result_of(&r, "reference call"));
            }
            out
        }
    }
}

/// The calls made over the server's stdio by a client that says
/// initialize, initialized, then each call.
async fn stdio_reference(command: &[String], calls: &[Value]) -> Vec<Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut messages = vec![initialize(0, "well-behaved", json!({})), initialized()];
    for (i, call) in calls.iter().enumerate() {
        messages.push(tool_call(i as u64 + 1, call, json!({})));
    }
    let mut out = Vec::new();
    for m in messages {
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
        if m.get("id").is_none() {
            continue;
        }
        let reply: Value = loop {
            let line = tokio::time::timeout(WAIT, lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .expect("a line");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("id") == m.get("id") {
                break v;
            }
        };
        if m["method"] == "tools/call" {
            out.push(reply["result"].clone());
        }
    }
    out
}

/// A gateway in front of `up`, with `tune` applied to its configuration (with
/// `[auth]`, at a `public_url`: the audience of its tokens).
async fn gateway(up: &Upstream, tune: impl FnOnce(&mut Config)) -> TestGateway {
    let mut config = Config {
        upstreams: vec![up.config.clone()],
        ..gw::test_config()
    };
    tune(&mut config);
    match config.auth {
        Some(_) => TestGateway::start_public(config).await,
        None => TestGateway::start_with(config).await,
    }
}

/// Children the gateway started for its mounts (from `/metrics`).
async fn processes_started(g: &TestGateway) -> u64 {
    counter(g, "mcp_gateway_processes_started_total").await
}

async fn counter(g: &TestGateway, family: &str) -> u64 {
    let text = g.gateway.metrics_text().await;
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

// ---------------------------------------------------------------------------------------
// The replays: each returns the results of the calls it made, in order.

/// ChatGPT's tool plane (ext-apps#647; OpenAI forum "ChatGPT does not echo
/// back mcp-session-id anymore"; FlowFuse#8561): one bootstrap initialize,
/// then every `tools/call` without the session id, under a 2025 protocol
/// header, `_meta` naming the conversation (under the 2026-07-28 envelope
/// when `envelope`).
async fn chatgpt_tool_plane(url: &str, calls: &[Value], envelope: bool) -> Vec<Value> {
    let boot = send(
        url,
        &[("user-agent", CHATGPT_TOOLS)],
        &initialize(0, "openai-mcp", json!({})),
    )
    .await;
    assert_eq!(boot.status, StatusCode::OK);
    let h = [
        ("user-agent", CHATGPT_TOOLS),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let meta = match envelope {
            true => envelope_meta("conversation-1"),
            false => openai_meta("conversation-1"),
        };
        let r = send(url, &h, &tool_call(i as u64 + 1, call, meta)).await;
        out.push(result_of(&r, "ChatGPT tool plane"));
    }
    out
}

/// The tool plane's calls under each protocol header the handshake era
/// has, and none: one call each, without a session.
async fn every_revision_without_a_session(url: &str, calls: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let mut answers = Vec::new();
        for version in [
            None,
            Some("2024-11-05"),
            Some("2025-03-26"),
            Some("2025-06-18"),
            Some("2025-11-25"),
        ] {
            let mut h = vec![("user-agent", CHATGPT_TOOLS)];
            if let Some(v) = version {
                h.push(("mcp-protocol-version", v));
            }
            let r = send(
                url,
                &h,
                &tool_call(i as u64 + 1, call, openai_meta("revisions")),
            )
            .await;
            answers.push(result_of(
                &r,
                &format!("without a session, header {version:?}"),
            ));
        }
        assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
        out.push(answers.remove(0));
    }
    out
}

/// ChatGPT's control plane and its older batches (ext-apps#647;
/// openai-apps-sdk-examples#201): initialize, `tools/list` and the call
/// with the session id, the stream left, never a DELETE; a new session for
/// the next batch.
async fn chatgpt_batches(url: &str, calls: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let init = send(
            url,
            &[("user-agent", CHATGPT_CONTROL)],
            &initialize(0, "openai-mcp", json!({"roots": {"listChanged": true}})),
        )
        .await;
        assert_eq!(init.status, StatusCode::OK);
        let h = with_session(
            &[
                ("user-agent", CHATGPT_CONTROL),
                ("mcp-protocol-version", "2025-11-25"),
            ],
            init.session.as_deref(),
        );
        assert_eq!(
            send(url, &h, &initialized()).await.status,
            StatusCode::ACCEPTED
        );
        let list = send(
            url,
            &h,
            &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        )
        .await;
        assert!(result_of(&list, "tools/list")["tools"].is_array());
        let r = send(
            url,
            &h,
            &tool_call(i as u64 + 2, call, openai_meta("batches")),
        )
        .await;
        out.push(result_of(&r, "ChatGPT batch"));
    }
    out
}

/// Claude's connectors (claude-ai-mcp#583, #99): an initialize before
/// every call, `notifications/initialized` from elsewhere without the
/// session id, the call with it, never a DELETE.
async fn claude_per_call(url: &str, calls: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let init = send(
            url,
            &[("user-agent", CLAUDE), ("accept", "application/json, text/event-stream")],
            &initialize(0, "claude-ai", json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})),
        )
        .await;
        assert_eq!(init.status, StatusCode::OK);
        let without = send(url, &[("user-agent", CLAUDE)], &initialized()).await;
        assert!(
            without.status.is_success(),
            "initialized without the id: {}",
            without.status
        );
        let h = with_session(
            &[
                ("user-agent", CLAUDE),
                ("mcp-protocol-version", "2025-11-25"),
            ],
            init.session.as_deref(),
        );
        let r = send(url, &h, &tool_call(i as u64 + 1, call, json!({}))).await;
        out.push(result_of(&r, "Claude call"));
    }
    out
}

/// Claude's custom connector (claude-ai-mcp#975): `server/discover`, then
/// an initialize, and the call without the session id it was given (0 of 30
/// requests echoed it).
async fn claude_never_echoes(url: &str, calls: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let discover = json!({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientInfo":{"name":"claude-ai","version":"0.1.0"},
            "io.modelcontextprotocol/clientCapabilities":{}}}});
        let d = send(url, &[("user-agent", CLAUDE)], &discover).await;
        assert!(
            d.status.is_success() || d.status == StatusCode::NOT_FOUND,
            "discover: {}",
            d.status
        );
        let init = send(
            url,
            &[("user-agent", CLAUDE)],
            &initialize(1, "claude-ai", json!({})),
        )
        .await;
        assert_eq!(init.status, StatusCode::OK);
        let h = [
            ("user-agent", CLAUDE),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let r = send(url, &h, &tool_call(i as u64 + 2, call, json!({}))).await;
        out.push(result_of(&r, "Claude call without its session id"));
    }
    out
}

/// Claude Desktop with an app (ext-apps#458): the app bridge's session
/// lists the tools; mid-conversation a second initialize opens another,
/// and the widget's own calls go on the new one.
async fn claude_desktop_two_sessions(url: &str, calls: &[Value]) -> Vec<Value> {
    let base = [
        ("user-agent", CLAUDE),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let a = send(
        url,
        &[("user-agent", CLAUDE)],
        &initialize(0, "claude-ai", json!({})),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    let ha = with_session(&base, a.session.as_deref());
    send(url, &ha, &initialized()).await;
    let list = send(
        url,
        &ha,
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    )
    .await;
    assert!(result_of(&list, "bridge tools/list")["tools"].is_array());
    let b = send(
        url,
        &[("user-agent", CLAUDE)],
        &initialize(0, "claude-ai", json!({})),
    )
    .await;
    assert_eq!(b.status, StatusCode::OK);
    if a.session.is_some() {
        assert_ne!(a.session, b.session);
    }
    let hb = with_session(&base, b.session.as_deref());
    send(url, &hb, &initialized()).await;
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let r = send(url, &hb, &tool_call(i as u64 + 2, call, json!({}))).await;
        out.push(result_of(&r, "widget call on the second session"));
    }
    out
}

/// ChatGPT after a long idle (OpenAI forum thread 1367543): a GET with
/// `Accept: text/event-stream` and no session: a stream, not an error it
/// loops on.
async fn idle_get(url: &str) {
    let mut h = vec![
        ("accept", "text/event-stream"),
        ("user-agent", CHATGPT_TOOLS),
    ];
    let bearer = bearer_for(Method::GET, url, &h, "");
    if let Some(b) = &bearer {
        h.push(("authorization", b.as_str()));
    }
    let (status, headers, _stream) = open_sse(Method::GET, url, &h, "").await.unwrap();
    assert_eq!(status, StatusCode::OK, "the idle GET");
    assert_eq!(headers["content-type"], "text/event-stream");
}

// ---------------------------------------------------------------------------------------
// The tests

/// Every replay, in front of every kind of upstream, is answered as the
/// server answers a well-behaved client. A stdio server is started once per
/// protocol era and set of client capabilities the hosts declare (what a
/// server offers can depend on them), never once per session: replaying
/// everything again starts nothing.
#[tokio::test]
async fn every_host_pattern_is_answered_as_a_well_behaved_client_is() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    for kind in [
        Kind::Stdio,
        Kind::LegacySse,
        Kind::StatefulHttp,
        Kind::StatelessHttp,
    ] {
        let up = start_upstream(&peers, kind).await;
        let expected = reference(&up).await;
        let g = gateway(&up, |_| {}).await;
        let url = g.url();
        let mut started = Vec::new();
        for round in 0..2 {
            let replays: Vec<(&str, Vec<Value>)> = vec![
                // Declares nothing: a connection that declares nothing.
                (
                    "ChatGPT tool plane",
                    chatgpt_tool_plane(&url, &up.calls, false).await,
                ),
                // Declares roots: one that does.
                ("ChatGPT batches", chatgpt_batches(&url, &up.calls).await),
                // Declares the MCP Apps extension: one that does.
                (
                    "Claude, an initialize per call",
                    claude_per_call(&url, &up.calls).await,
                ),
                // Asks server/discover (the envelope era, which the Python
                // SDK speaks: a connection of that era).
                (
                    "Claude, the id never echoed",
                    claude_never_echoes(&url, &up.calls).await,
                ),
                (
                    "Claude Desktop, two sessions",
                    claude_desktop_two_sessions(&url, &up.calls).await,
                ),
                (
                    "ChatGPT tool plane, envelope",
                    chatgpt_tool_plane(&url, &up.calls, true).await,
                ),
                (
                    "every revision's header, no session",
                    every_revision_without_a_session(&url, &up.calls).await,
                ),
            ];
            for (name, got) in &replays {
                assert_eq!(got, &expected, "{kind:?}: {name} (round {round})");
            }
            idle_get(&url).await;
            started.push(processes_started(&g).await);
            eprintln!(
                "[replays] {kind:?}, round {round}: {} replays answered as direct",
                replays.len()
            );
        }
        if kind == Kind::Stdio {
            assert_eq!(
                started,
                [4, 4],
                "one process per era and capability set (none, roots, the UI extension, the envelope era), none per session"
            );
        }
    }
}

/// A stdio server behind the gateway keeps no process per session: 10,000
/// calls in the two host patterns (ChatGPT's tool plane, Claude's
/// initialize per call) start one, and the gateway's memory stays flat
/// (the sessions it keeps cost a few hundred bytes each).
#[tokio::test]
async fn ten_thousand_host_calls_start_one_process_and_keep_memory_flat() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let command = py_server(&peers);
    let g =
        support::peers::Gateway::start(&peers, "stdio", support::peers::Upstream::Stdio(&command))
            .await;
    let url = g.url.clone();
    let call = json!({"name":"count_tasks","arguments":{}});
    let rss = |pid: u32| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap()
    };
    let round = |n: usize, url: String, call: Value| async move {
        // Claude: initialize, initialized without the id, the call; and
        // ChatGPT's tool plane: the call with no session at all.
        for i in 0..n / 2 {
            let r = send(
                &url,
                &[("user-agent", CLAUDE)],
                &initialize(0, "claude-ai", json!({})),
            )
            .await;
            let sid = r.session.unwrap();
            send(&url, &[("user-agent", CLAUDE)], &initialized()).await;
            let h = [
                ("mcp-session-id", sid.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ];
            let r = send(&url, &h, &tool_call(1, &call, json!({}))).await;
            assert_eq!(
                result_of(&r, "Claude")["content"][0]["text"],
                "{\"count\": 2}",
                "call {i}"
            );
            let h = [
                ("user-agent", CHATGPT_TOOLS),
                ("mcp-protocol-version", "2025-11-25"),
            ];
            let r = send(&url, &h, &tool_call(2, &call, openai_meta("flat"))).await;
            assert_eq!(
                result_of(&r, "ChatGPT")["content"][0]["text"],
                "{\"count\": 2}"
            );
        }
    };
    // Four clients at a time.
    let parallel = |n: usize| {
        let url = url.clone();
        let call = call.clone();
        async move {
            let tasks: Vec<_> = (0..4)
                .map(|_| tokio::spawn(round(n / 4, url.clone(), call.clone())))
                .collect();
            for t in tasks {
                t.await.unwrap();
            }
        }
    };
    let started = std::time::Instant::now();
    parallel(1_000).await;
    let warm = rss(g.proc.pid);
    parallel(9_000).await;
    let after = rss(g.proc.pid);
    let took = started.elapsed();
    let children = support::process::stdio_children(g.proc.pid);
    let grew = after.saturating_sub(warm);
    eprintln!(
        "[flat] 10000 calls (5000 sessions) in {took:?}: {} stdio process(es); RSS {warm} kB after 1000, {after} kB after 10000 (+{grew} kB, {:.0} B per session)",
        children.len(),
        grew as f64 * 1024.0 / 4_500.0
    );
    assert_eq!(children.len(), 1, "{children:?}");
    assert!(grew < 16 * 1024, "RSS grew by {grew} kB over 9000 calls");
    g.stop().await;
}

/// A stale session id after the gateway restarts (claude-code#46533: hosts
/// keep it forever; #48557): a gateway with the same key serves it, whether
/// sessions share the stdio server or own one (opened again as the id says
/// the client opened it), in front of a stateful HTTP server, and through an
/// app endpoint.
#[tokio::test]
async fn a_stale_session_id_after_a_gateway_restart_carries_on() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_everything, http_url) = start_everything(&peers, "streamableHttp").await;
    let stdio = py_server(&peers);
    let two_members = format!(
        "{}[[upstream]]\nname = \"http\"\nurl = \"{http_url}\"\n\
         [[app]]\nname = \"suite\"\npath = \"/suite/mcp\"\nupstreams = [\"up\", \"http\"]\n",
        upstream_toml("command", &stdio, Some("client")),
    );
    let cases: Vec<(&str, String, Value, Option<&str>)> = vec![
        (
            "stdio, shared",
            upstream_toml("command", &stdio, None),
            json!({"name":"count_tasks","arguments":{}}),
            None,
        ),
        (
            "stdio, client",
            upstream_toml("command", &stdio, Some("client")),
            json!({"name":"count_tasks","arguments":{}}),
            None,
        ),
        (
            "stateful HTTP",
            format!("[[upstream]]\nname = \"up\"\nurl = \"{http_url}\"\n"),
            json!({"name":"echo","arguments":{"message":"still here"}}),
            None,
        ),
        (
            "an app, its stdio member",
            two_members.clone(),
            json!({"name":"count_tasks","arguments":{}}),
            Some("/suite/mcp"),
        ),
        (
            "an app, its stateful HTTP member",
            two_members,
            json!({"name":"echo","arguments":{"message":"still here"}}),
            Some("/suite/mcp"),
        ),
    ];
    for (label, upstream, call, path) in cases {
        let file = dir.path().join("gateway.toml");
        std::fs::write(
            &file,
            format!(
                "session_key = \"{}\"\noverlays = \"/nonexistent\"\n{upstream}",
                "7".repeat(64)
            ),
        )
        .unwrap();
        let args = ["--config", file.to_str().unwrap()];
        let g = support::peers::Gateway::start_with(
            &peers,
            label,
            support::peers::Upstream::Configured,
            &args,
            &[],
        )
        .await;
        let at = |g: &support::peers::Gateway| match path {
            Some(p) => format!("{}{p}", &g.url[..g.url[8..].find('/').unwrap() + 8]),
            None => g.url.clone(),
        };
        let url = at(&g);
        let init = send(
            &url,
            &[],
            &initialize(0, "claude-code", json!({"roots": {}})),
        )
        .await;
        let sid = init.session.expect("a session");
        let h = [
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        send(&url, &h, &initialized()).await;
        let before = result_of(
            &send(&url, &h, &tool_call(1, &call, json!({}))).await,
            label,
        );
        g.stop().await;
        let g = support::peers::Gateway::start_with(
            &peers,
            label,
            support::peers::Upstream::Configured,
            &args,
            &[],
        )
        .await;
        let r = send(&at(&g), &h, &tool_call(2, &call, json!({}))).await;
        assert_eq!(result_of(&r, label), before, "{label}: after the restart");
        g.stop().await;
    }
}

fn upstream_toml(key: &str, command: &[String], sessions: Option<&str>) -> String {
    let args: Vec<String> = command[1..].iter().map(|a| format!("{a:?}")).collect();
    let mut t = format!(
        "[[upstream]]\nname = \"up\"\n{key} = {:?}\nargs = [{}]\n",
        command[0],
        args.join(", ")
    );
    if let Some(s) = sessions {
        t.push_str(&format!("sessions = \"{s}\"\n"));
    }
    t
}

/// A widget's own calls through an app endpoint (ext-apps#458: the widget
/// calls on the session the host opened last; ChatGPT's widgets call
/// without any): answered as its member answers, app sessions sharing the
/// stdio member's process.
#[tokio::test]
async fn a_widgets_own_calls_through_an_app_endpoint() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let stdio = start_upstream(&peers, Kind::Stdio).await;
    let http = start_upstream(&peers, Kind::StatefulHttp).await;
    let mut py = stdio.config.clone();
    py.name = "py".into();
    let mut everything = http.config.clone();
    everything.name = "everything".into();
    let app = mcp_ui_model::config::AppConfig {
        name: "suite".into(),
        path: Some("/suite/mcp".into()),
        upstreams: vec![
            mcp_ui_model::config::MemberConfig::Name("py".into()),
            mcp_ui_model::config::MemberConfig::Name("everything".into()),
        ],
        auth: None,
    };
    let g = TestGateway::start_with(Config {
        upstreams: vec![py, everything],
        apps: vec![app],
        ..gw::test_config()
    })
    .await;
    let url = g.url_for("/suite/mcp");
    let py_expected = reference(&stdio).await;
    let http_expected = reference(&http).await;
    let calls: Vec<Value> = stdio.calls.iter().chain(&http.calls).cloned().collect();
    let expected: Vec<Value> = py_expected.into_iter().chain(http_expected).collect();
    assert_eq!(
        claude_desktop_two_sessions(&url, &calls).await,
        expected,
        "on the second session"
    );
    assert_eq!(
        chatgpt_tool_plane(&url, &calls, false).await,
        expected,
        "without a session"
    );
    assert_eq!(
        claude_per_call(&url, &calls).await,
        expected,
        "an initialize per call"
    );
    // App sessions reach the stdio member on its shared process (one per
    // set of capabilities clients declared): more of them start none.
    let started = processes_started(&g).await;
    assert!((1..=3).contains(&started), "{started} processes started");
    claude_per_call(&url, &calls).await;
    assert_eq!(processes_started(&g).await, started, "processes started");
}

/// The replays [`host_patterns_with_tokens`] makes, by name: each returns
/// the results of its calls (the idle GET, none).
const PROTECTED_REPLAYS: [&str; 8] = [
    "ChatGPT tool plane",
    "ChatGPT batches",
    "Claude, an initialize per call",
    "Claude, the id never echoed",
    "Claude Desktop, two sessions",
    "ChatGPT tool plane, envelope",
    "every revision's header, no session",
    "ChatGPT after a long idle",
];

async fn replay(name: &str, url: &str, calls: &[Value]) -> Vec<Value> {
    match name {
        "ChatGPT tool plane" => chatgpt_tool_plane(url, calls, false).await,
        "ChatGPT batches" => chatgpt_batches(url, calls).await,
        "Claude, an initialize per call" => claude_per_call(url, calls).await,
        "Claude, the id never echoed" => claude_never_echoes(url, calls).await,
        "Claude Desktop, two sessions" => claude_desktop_two_sessions(url, calls).await,
        "ChatGPT tool plane, envelope" => chatgpt_tool_plane(url, calls, true).await,
        "every revision's header, no session" => every_revision_without_a_session(url, calls).await,
        "ChatGPT after a long idle" => {
            idle_get(url).await;
            Vec::new()
        }
        other => unreachable!("replay {other}"),
    }
}

/// Children the gateway started for the mount of upstream `name`.
async fn processes_started_for(g: &TestGateway, name: &str) -> u64 {
    let line = format!("mcp_gateway_processes_started_total{{upstream=\"{name}\"}} ");
    let text = g.gateway.metrics_text().await;
    text.lines()
        .find_map(|l| l.strip_prefix(line.as_str())?.parse().ok())
        .unwrap_or_else(|| panic!("no {line:?} in /metrics"))
}

/// The host patterns in front of mounts `[auth]` protects (the OpenID
/// provider peer as issuer), each request with a token the provider issued
/// for the mount's URL: every call is answered as in the same replay in
/// front of the same mounts unprotected (and as the server answers a
/// well-behaved client), starting as many processes; every request of the
/// replays sent again without its token is refused with 401 and the
/// challenge naming the mount's metadata, starting none. On the mount with
/// `sessions = "conversation"`, ChatGPT's calls naming the same
/// conversation reach a process of their own for each verified caller
/// (`test-client`, `short-lived`), and a caller with a fresh token keeps
/// its own.
#[tokio::test]
async fn host_patterns_with_tokens() {
    use mcp_ui_model::config::{AuthConfig, SessionMode};
    use support::idp::{Idp, SHORT_LIVED_CLIENT_ID, SHORT_LIVED_CLIENT_SECRET, decode_jwt};

    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let t0 = std::time::Instant::now();
    let idp = Idp::start(&peers).await;
    let up = start_upstream(&peers, Kind::Stdio).await;
    let expected = reference(&up).await;
    // The Python server over stdio twice: sessions sharing its processes
    // (the default), and a process per conversation.
    let mounts = |c: &mut Config| {
        let mut shared = up.config.clone();
        shared.name = "py".into();
        shared.path = Some("/py/mcp".into());
        let mut talk = up.config.clone();
        talk.name = "talk".into();
        talk.path = Some("/talk/mcp".into());
        talk.sessions = Some(SessionMode::Conversation);
        c.upstreams = vec![shared, talk];
    };
    let open = gateway(&up, mounts).await;
    let guarded = gateway(&up, |c| {
        mounts(c);
        c.auth = Some(AuthConfig {
            issuer: Some(idp.issuer().to_owned()),
            ..Default::default()
        });
    })
    .await;
    let ready = t0.elapsed();

    for (name, path) in [("py", "/py/mcp"), ("talk", "/talk/mcp")] {
        let t = std::time::Instant::now();
        let plain_url = open.url_for(path);
        let url = guarded.url_for(path);
        let challenge = format!(
            r#"Bearer resource_metadata="{}""#,
            guarded.url_for(&format!("/.well-known/oauth-protected-resource{path}"))
        );
        let token = idp.token(&url, &["tools:call"]).await;
        let (mut requests, mut refused) = (0, 0);
        for pattern in PROTECTED_REPLAYS {
            let what = format!("{name}: {pattern}");
            let plain = replay(pattern, &plain_url, &up.calls).await;
            if pattern != "ChatGPT after a long idle" {
                assert_eq!(plain, expected, "{what}, unprotected");
            }
            let (got, sent) = with_token(&token, replay(pattern, &url, &up.calls)).await;
            assert_eq!(got, plain, "{what}, with a token");
            let started = processes_started_for(&guarded, name).await;
            assert_eq!(
                started,
                processes_started_for(&open, name).await,
                "{what}: processes started with tokens and without"
            );
            requests += sent.len();
            // The same requests without the token (the session ids the
            // tokened run was given included): the challenge, nothing
            // started.
            for s in &sent {
                let headers: Vec<(&str, &str)> = s
                    .headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let (status, h, body) = match s.method {
                    Method::POST => post_json(&s.url, &headers, s.body.clone()).await,
                    _ => {
                        support::clients::request_raw(
                            s.method.clone(),
                            &s.url,
                            &headers,
                            s.body.clone(),
                        )
                        .await
                    }
                };
                let said = String::from_utf8_lossy(&body);
                let request = format!("{what}: {} {} without a token", s.method, s.body);
                assert_eq!(status, StatusCode::UNAUTHORIZED, "{request}: {said}");
                let challenges: Vec<_> = h.get_all("www-authenticate").iter().collect();
                assert_eq!(challenges, [challenge.as_str()], "{request}");
                let m: Value = serde_json::from_slice(&body)
                    .unwrap_or_else(|e| panic!("{request}: not JSON ({e}): {said}"));
                assert_eq!(m["jsonrpc"], "2.0", "{request}: {m}");
                assert_eq!(m["id"], Value::Null, "{request}: {m}");
                assert_eq!(m["error"]["code"], -32000, "{request}: {m}");
                assert!(
                    m["error"]["message"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("Unauthorized")),
                    "{request}: {m}"
                );
                refused += 1;
            }
            assert_eq!(
                processes_started_for(&guarded, name).await,
                started,
                "{what}: a refused request started a process"
            );
        }
        eprintln!(
            "[tokens] {name}: {} replays answered as unprotected, {requests} requests with a token, {refused} refused without, {} processes started each way, in {:.1} s",
            PROTECTED_REPLAYS.len(),
            processes_started_for(&guarded, name).await,
            t.elapsed().as_secs_f64()
        );
    }

    // Two callers naming the same ChatGPT conversation: a process each;
    // one caller, with a fresh token, keeps its own.
    let t = std::time::Instant::now();
    let url = guarded.url_for("/talk/mcp");
    let talk = || processes_started_for(&guarded, "talk");
    let chatgpt = async |token: &str| {
        let (got, _) = with_token(token, chatgpt_tool_plane(&url, &up.calls, false)).await;
        assert_eq!(got, expected, "ChatGPT tool plane");
    };
    // Unprotected, another run of the tool plane starts nothing: every
    // caller without a token is the same caller.
    let before = processes_started_for(&open, "talk").await;
    let got = chatgpt_tool_plane(&open.url_for("/talk/mcp"), &up.calls, false).await;
    assert_eq!(got, expected, "unprotected");
    assert_eq!(
        processes_started_for(&open, "talk").await,
        before,
        "unprotected"
    );
    let first = idp.token(&url, &["tools:call"]).await;
    assert_eq!(decode_jwt(&first).1["sub"], "test-client");
    let before = talk().await;
    chatgpt(&first).await;
    assert_eq!(
        talk().await,
        before,
        "test-client's conversation-1 kept its process (a fresh token)"
    );
    let (status, body) = idp
        .client_credentials(
            SHORT_LIVED_CLIENT_ID,
            SHORT_LIVED_CLIENT_SECRET,
            Some(&url),
            &["tools:call"],
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let other = body["access_token"].as_str().expect("a token").to_owned();
    assert_eq!(decode_jwt(&other).1["sub"], SHORT_LIVED_CLIENT_ID);
    chatgpt(&other).await;
    assert_eq!(
        talk().await,
        before + 1,
        "another subject naming conversation-1: a process of its own"
    );
    chatgpt(&other).await;
    chatgpt(&first).await;
    assert_eq!(
        talk().await,
        before + 1,
        "each subject's conversation-1 kept its process"
    );
    eprintln!(
        "[tokens] two subjects, one conversation id: {} processes started at the mount, in {:.1} s; gateway and provider ready in {:.1} s, all in {:.1} s",
        talk().await,
        t.elapsed().as_secs_f64(),
        ready.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    guarded.shutdown().await;
    open.shutdown().await;
}
