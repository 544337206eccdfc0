//! An app endpoint (`[[app]]`) over real servers: mcp-server-time (stdio),
//! server-everything (streamable HTTP and legacy SSE), a Python SDK server
//! (legacy SSE) and a paging stdio server. The union of
//! their listings, calls reaching each member, pagination across members, a
//! collision refused and resolved by a prefix, a widget's own tool name, and one
//! member dying while the others keep working.

use std::time::Duration;

use mcp_ui_model::config::{AppConfig, Config, MemberConfig, UpstreamConfig};
use serde_json::{Value, json};
use support::clients::{parse_sse, post_json};
use support::gateway::{TestGateway, http, stdio, test_config};
use support::peers::{Peers, setup, start_everything, time_stdio_command};

use crate::support;

/// A client of one app session, speaking raw JSON-RPC over POST.
struct AppClient {
    url: String,
    session: Option<String>,
    next_id: u64,
}

impl AppClient {
    async fn initialize(url: String) -> (AppClient, Value) {
        let mut c = AppClient {
            url,
            session: None,
            next_id: 1,
        };
        let (result, headers) = c
            .request_with_headers(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"sampling": {}},
                    "clientInfo": {"name": "apps-test", "version": "1"},
                }),
            )
            .await;
        c.session = headers
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        assert!(c.session.is_some(), "the app issues a session id");
        c.notify("notifications/initialized", json!({})).await;
        (c, result)
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        let mut h = vec![("mcp-protocol-version", "2025-06-18")];
        if let Some(s) = &self.session {
            h.push(("mcp-session-id", s.as_str()));
        }
        h
    }

    async fn notify(&self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let (status, _, _) = post_json(&self.url, &self.headers(), body.to_string()).await;
        assert_eq!(status, 202, "{method}");
    }

    async fn request_with_headers(
        &mut self,
        method: &str,
        params: Value,
    ) -> (Value, http::HeaderMap) {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, headers, bytes) =
            post_json(&self.url, &self.headers(), body.to_string()).await;
        assert_eq!(status, 200, "{method}: {}", String::from_utf8_lossy(&bytes));
        let sse = headers
            .get("content-type")
            .is_some_and(|v| v.to_str().unwrap().starts_with("text/event-stream"));
        let message = if sse {
            parse_sse(&bytes)
                .into_iter()
                .filter_map(|e| e.json().ok())
                .find(|m| m.get("id") == Some(&json!(id)))
                .expect("a response event")
        } else {
            serde_json::from_slice(&bytes).unwrap()
        };
        assert_eq!(message["id"], json!(id));
        (message, headers)
    }

    /// The whole response message (`result` or `error`).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.request_with_headers(method, params).await.0
    }

    /// The error message of a request that must fail, and the whole response.
    async fn error(&mut self, method: &str, params: Value) -> (String, Value) {
        let m = self.request(method, params).await;
        let message = m["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (message, m)
    }

    async fn result(&mut self, method: &str, params: Value) -> Value {
        let m = self.request(method, params).await;
        assert!(m.get("error").is_none(), "{method}: {m}");
        m["result"].clone()
    }

    /// Every page of a listing: the items' identifiers, and how many pages.
    async fn list_all(&mut self, method: &str, key: &str, field: &str) -> (Vec<String>, usize) {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        for pages in 1..=50 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let r = self.result(method, params).await;
            for item in r[key].as_array().unwrap() {
                names.push(item[field].as_str().unwrap().to_owned());
            }
            match r.get("nextCursor").and_then(Value::as_str) {
                Some(c) => cursor = Some(c.to_owned()),
                None => return (names, pages),
            }
        }
        panic!("{method}: more than 50 pages");
    }
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn app(name: &str, members: Vec<MemberConfig>) -> AppConfig {
    AppConfig {
        name: name.into(),
        path: None,
        upstreams: members,
        auth: None,
    }
}

fn named(upstream: &str) -> MemberConfig {
    MemberConfig::Name(upstream.into())
}

fn prefixed(upstream: &str, prefix: &str) -> MemberConfig {
    MemberConfig::Table {
        upstream: upstream.into(),
        prefix: Some(prefix.into()),
    }
}

fn time_upstream(peers: &Peers) -> UpstreamConfig {
    let cmd = time_stdio_command(peers);
    let args: Vec<&str> = cmd[1..].iter().map(String::as_str).collect();
    stdio("time", &cmd[0], &args)
}

fn paged_upstream(peers: &Peers) -> UpstreamConfig {
    let script = peers.script("paged_server.py").display().to_string();
    stdio("paged", &peers.python.display().to_string(), &[&script])
}

async fn gateway(upstreams: Vec<UpstreamConfig>, apps: Vec<AppConfig>) -> TestGateway {
    TestGateway::start_with(Config {
        upstreams,
        apps,
        ..test_config()
    })
    .await
}

/// time + server-everything (prefixed) + a paging server, as one app.
#[tokio::test]
async fn an_app_unites_its_members_listings_calls_and_pages() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let (_everything, url) = start_everything(&peers, "streamableHttp").await;
    let gw = gateway(
        vec![
            time_upstream(&peers),
            http("everything", &url),
            paged_upstream(&peers),
        ],
        vec![app(
            "suite",
            vec![named("time"), prefixed("everything", "ev_"), named("paged")],
        )],
    )
    .await;

    // What each member lists on its own path.
    let (mut direct, _) = AppClient::initialize(gw.url_for("/everything/mcp")).await;
    let (ev_tools, _) = direct.list_all("tools/list", "tools", "name").await;
    let (ev_resources, _) = direct.list_all("resources/list", "resources", "uri").await;
    let (ev_prompts, _) = direct.list_all("prompts/list", "prompts", "name").await;
    assert!(ev_tools.contains(&"echo".to_owned()), "{ev_tools:?}");

    let (mut c, init) = AppClient::initialize(gw.url_for("/suite/mcp")).await;
    let result = &init["result"];
    assert_eq!(result["serverInfo"]["name"], "suite", "{init}");
    for cap in ["tools", "resources", "prompts"] {
        assert!(result["capabilities"].get(cap).is_some(), "{cap}: {init}");
    }
    let instructions = result["instructions"].as_str().unwrap_or_default();
    assert!(instructions.contains("## paged"), "{instructions}");

    // The union, in member order, everything's names prefixed; the paging
    // member's two-tool pages make three app pages of tools.
    let (tools, pages) = c.list_all("tools/list", "tools", "name").await;
    assert!(tools.contains(&"get_current_time".to_owned()), "{tools:?}");
    let prefixed_ev: Vec<String> = ev_tools.iter().map(|t| format!("ev_{t}")).collect();
    for t in &prefixed_ev {
        assert!(tools.contains(t), "{t} in {tools:?}");
    }
    let paged: Vec<String> = (0..5).map(|i| format!("paged_{i}")).collect();
    assert_eq!(tools[tools.len() - 5..], paged[..], "{tools:?}");
    assert_eq!(
        pages, 3,
        "the paging member's pages, the first with the others' tools"
    );

    // Resources: everything's, then the paging member's seven, three a page.
    let (resources, pages) = c.list_all("resources/list", "resources", "uri").await;
    assert_eq!(resources[..ev_resources.len()], ev_resources[..]);
    assert_eq!(resources.len(), ev_resources.len() + 7, "{resources:?}");
    assert_eq!(pages, 3);

    // A cursor the app did not give is refused: garbage, and one made the
    // way unsealed cursors were (base64 of `[member, its cursor]`), which a
    // member would have taken for its own.
    let bad = c.request("tools/list", json!({"cursor": "nope"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    use base64::Engine as _;
    let made_up = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"[1,"evil-cursor"]"#);
    let bad = c.request("tools/list", json!({ "cursor": made_up })).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad.get("result").is_none(), "{bad}");

    // Calls reach each member: by the listed name, and by a member's own
    // name (what its widgets call) when only that member uses it.
    let now = c
        .result(
            "tools/call",
            json!({"name": "get_current_time", "arguments": {"timezone": "UTC"}}),
        )
        .await;
    assert!(text_of(&now).contains("UTC"), "{now}");
    let echo = c
        .result(
            "tools/call",
            json!({"name": "ev_echo", "arguments": {"message": "via app"}}),
        )
        .await;
    assert!(text_of(&echo).contains("via app"), "{echo}");
    let own = c
        .result(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "own name"}}),
        )
        .await;
    assert!(text_of(&own).contains("own name"), "{own}");
    let p = c
        .result("tools/call", json!({"name": "paged_3", "arguments": {}}))
        .await;
    assert_eq!(text_of(&p), "paged_3");
    let unknown = c
        .request("tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // Resources are read from the member that listed them.
    let read = c
        .result("resources/read", json!({"uri": "paged://r/5"}))
        .await;
    assert_eq!(read["contents"][0]["text"], "paged://r/5");
    let first = &ev_resources[0];
    let read = c.result("resources/read", json!({"uri": first})).await;
    assert_eq!(read["contents"][0]["uri"], json!(first), "{read}");

    // Prompts: everything's, prefixed; a prompt got by the listed name.
    let (prompts, _) = c.list_all("prompts/list", "prompts", "name").await;
    let want: Vec<String> = ev_prompts.iter().map(|p| format!("ev_{p}")).collect();
    assert_eq!(prompts, want);
    let simple = ev_prompts
        .iter()
        .find(|p| p.contains("simple"))
        .expect("a simple prompt");
    let got = c
        .result(
            "prompts/get",
            json!({"name": format!("ev_{simple}"), "arguments": {}}),
        )
        .await;
    assert!(
        got["messages"].as_array().is_some_and(|m| !m.is_empty()),
        "{got}"
    );

    // Progress from a member reaches the client through the app.
    let long = json!({
        "name": "ev_trigger-long-running-operation",
        "arguments": {"duration": 1, "steps": 2},
        "_meta": {"progressToken": "p1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": long});
    let (status, _, bytes) = post_json(&c.url, &c.headers(), body.to_string()).await;
    assert_eq!(status, 200);
    let events: Vec<Value> = parse_sse(&bytes)
        .into_iter()
        .filter_map(|e| e.json().ok())
        .collect();
    let progress = events
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == "p1")
        .count();
    assert!(progress >= 1, "{events:?}");
    assert!(
        events
            .iter()
            .any(|m| m["id"] == 99 && m.get("result").is_some()),
        "{events:?}"
    );
    gw.shutdown().await;
}

/// A Python SDK server (`tests/peers/py_server.py`) over the SDK's legacy
/// HTTP+SSE transport, ready: its URL.
async fn start_py_sse(peers: &Peers) -> (support::process::Proc, String) {
    let mut cmd = std::process::Command::new(&peers.python);
    cmd.arg(peers.script("py_server.py"))
        .arg("--sse")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    let server =
        support::process::Proc::start("py_server.py --sse", &mut cmd).expect("python runs");
    let url = server
        .look_for_async(Duration::from_secs(60), |_, line| {
            line.strip_prefix("READY ").map(str::to_owned)
        })
        .await
        .unwrap_or_else(|_| panic!("py_server.py --sse not ready"));
    (server, url)
}

/// Two members offering the same tools: the listing is refused with the
/// collision named; a prefix on one resolves it (two more members over legacy
/// HTTP+SSE: server-everything, prefixed as well, and a Python SDK server).
#[tokio::test]
async fn a_tool_offered_by_two_members_is_refused_until_a_prefix_parts_them() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let (_everything, url) = start_everything(&peers, "streamableHttp").await;
    let (_legacy, sse_url) = start_everything(&peers, "sse").await;
    let (_py, py_url) = start_py_sse(&peers).await;
    let gw = gateway(
        vec![
            http("one", &url),
            http("two", &url),
            support::gateway::sse("legacy", &sse_url),
            support::gateway::sse("py", &py_url),
        ],
        vec![
            app("clash", vec![named("one"), named("two")]),
            app(
                "parted",
                vec![
                    named("one"),
                    prefixed("two", "two_"),
                    prefixed("legacy", "sse_"),
                    named("py"),
                ],
            ),
            app("both", vec![prefixed("one", "a_"), prefixed("two", "b_")]),
        ],
    )
    .await;
    let (mut c, _) = AppClient::initialize(gw.url_for("/clash/mcp")).await;
    let (message, m) = c.error("tools/list", json!({})).await;
    assert!(
        message.starts_with("app `clash`: tool `")
            && message.contains("is offered by both `one` and `two`"),
        "{m}"
    );
    // Called by that name, it is refused the same way, not sent to the
    // first member.
    let (call_message, m) = c
        .error(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "which one?"}}),
        )
        .await;
    assert_eq!(m["error"]["code"], -32000, "{m}");
    assert!(
        call_message.contains("is offered by both `one` and `two`"),
        "{m}"
    );

    let (mut c, _) = AppClient::initialize(gw.url_for("/parted/mcp")).await;
    let (tools, _) = c.list_all("tools/list", "tools", "name").await;
    assert!(
        tools.contains(&"echo".to_owned()) && tools.contains(&"two_echo".to_owned()),
        "{tools:?}"
    );
    let r = c
        .result(
            "tools/call",
            json!({"name": "two_echo", "arguments": {"message": "to two"}}),
        )
        .await;
    assert!(text_of(&r).contains("to two"), "{r}");
    // A legacy HTTP+SSE member, prefixed too.
    assert!(tools.contains(&"sse_echo".to_owned()), "{tools:?}");
    let r = c
        .result(
            "tools/call",
            json!({"name": "sse_echo", "arguments": {"message": "over sse"}}),
        )
        .await;
    assert!(text_of(&r).contains("over sse"), "{r}");
    // A Python SDK server over legacy HTTP+SSE.
    assert!(tools.contains(&"greet".to_owned()), "{tools:?}");
    let r = c
        .result(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "app"}}),
        )
        .await;
    assert_eq!(text_of(&r), "Hello, app!", "{r}");

    // Both prefixed: a bare name both members use cannot be told apart.
    let (mut c, _) = AppClient::initialize(gw.url_for("/both/mcp")).await;
    c.list_all("tools/list", "tools", "name").await;
    let (message, m) = c
        .error(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "?"}}),
        )
        .await;
    assert!(message.contains("`one` and `two`"), "{m}");
    gw.shutdown().await;
}

/// A member that stops answering takes only its own tools with it.
#[tokio::test]
async fn a_member_dying_leaves_the_others_working() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let (everything, url) = start_everything(&peers, "streamableHttp").await;
    let gw = gateway(
        vec![time_upstream(&peers), http("everything", &url)],
        vec![app("suite", vec![named("time"), named("everything")])],
    )
    .await;
    let (mut c, _) = AppClient::initialize(gw.url_for("/suite/mcp")).await;
    let (tools, _) = c.list_all("tools/list", "tools", "name").await;
    assert!(tools.contains(&"echo".to_owned()));
    drop(everything);
    tokio::time::sleep(Duration::from_millis(200)).await;

    let (tools, _) = c.list_all("tools/list", "tools", "name").await;
    assert!(tools.contains(&"get_current_time".to_owned()), "{tools:?}");
    assert!(!tools.contains(&"echo".to_owned()), "{tools:?}");
    let (message, m) = c
        .error(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "x"}}),
        )
        .await;
    assert!(
        message.contains("everything"),
        "the error names the member: {m}"
    );
    let now = c
        .result(
            "tools/call",
            json!({"name": "get_current_time", "arguments": {"timezone": "UTC"}}),
        )
        .await;
    assert!(text_of(&now).contains("UTC"), "{now}");

    // A new session opens without the dead member.
    let (mut c, init) = AppClient::initialize(gw.url_for("/suite/mcp")).await;
    assert!(init.get("result").is_some(), "{init}");
    let (tools, _) = c.list_all("tools/list", "tools", "name").await;
    assert!(tools.contains(&"get_current_time".to_owned()), "{tools:?}");
    let (message, m) = c
        .error(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "x"}}),
        )
        .await;
    assert!(message.contains("`everything`"), "{m}");
    gw.shutdown().await;
}

/// `check` lists the members' tools and names a collision, exiting 1; with
/// a prefix on one member the same configuration passes.
#[tokio::test]
async fn check_names_a_collision_between_members() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let (_everything, url) = start_everything(&peers, "streamableHttp").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("overlays")).unwrap();
    let run = |members: &str| {
        let config = format!(
            "overlays = \"overlays\"\n\
             [[upstream]]\nname = \"one\"\nurl = \"{url}\"\n\
             [[upstream]]\nname = \"two\"\nurl = \"{url}\"\n\
             [[app]]\nname = \"suite\"\nupstreams = {members}\n"
        );
        std::fs::write(dir.path().join("gw.toml"), config).unwrap();
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
        command
            .args(["check", "--config", "gw.toml"])
            .current_dir(dir.path())
            .kill_on_drop(true);
        for (key, _) in std::env::vars() {
            if key.starts_with("MCP_UI_GATEWAY_") {
                command.env_remove(key);
            }
        }
        async move {
            tokio::time::timeout(Duration::from_secs(60), command.output())
                .await
                .expect("check ends")
                .expect("the binary runs")
        }
    };
    let out = run(r#"["one", "two"]"#).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}")
            .contains("app `suite`: tool `echo` is offered by both `one` and `two`"),
        "{stdout}{stderr}"
    );
    let out = run(r#"["one", { upstream = "two", prefix = "two_" }]"#).await;
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{all}");
}

/// A member's request to the client (sampling) reaches the client with an id
/// the app made, and the client's answer goes back to that member.
#[tokio::test]
async fn sampling_from_a_member_goes_through_the_app_and_back() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let (_everything, url) = start_everything(&peers, "streamableHttp").await;
    let gw = gateway(
        vec![time_upstream(&peers), http("everything", &url)],
        vec![app("suite", vec![named("time"), named("everything")])],
    )
    .await;
    let (c, _) = AppClient::initialize(gw.url_for("/suite/mcp")).await;
    let mut headers = c.headers();
    headers.push(("content-type", "application/json"));
    headers.push(("accept", "application/json, text/event-stream"));
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "trigger-sampling-request", "arguments": {"prompt": "hello", "maxTokens": 10}}});
    let (status, _, mut events) =
        support::clients::open_sse(http::Method::POST, &c.url, &headers, call.to_string())
            .await
            .unwrap();
    assert_eq!(status, 200);
    let limit = Duration::from_secs(30);
    let request = loop {
        let e = events
            .next_event(limit)
            .await
            .unwrap()
            .expect("a sampling request");
        let m = e.json().unwrap();
        if m["method"] == "sampling/createMessage" {
            break m;
        }
    };
    let id = request["id"].clone();
    assert_eq!(
        id.as_str().map(|s| s.starts_with("1~")),
        Some(true),
        "{request}"
    );
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": {
        "role": "assistant", "model": "test",
        "content": {"type": "text", "text": "sampled through the app"}}});
    let (status, _, body) = post_json(&c.url, &c.headers(), answer.to_string()).await;
    assert!(
        status.is_success(),
        "{status}: {}",
        String::from_utf8_lossy(&body)
    );
    let result = loop {
        let e = events
            .next_event(limit)
            .await
            .unwrap()
            .expect("the tool's result");
        let m = e.json().unwrap();
        if m["id"] == 7 {
            break m;
        }
    };
    assert!(
        result.to_string().contains("sampled through the app"),
        "{result}"
    );
    gw.shutdown().await;
}

/// The GET stream merges the members'; a member whose upstream forgot the
/// session (it restarted) goes on in another session, as hosts that never
/// start over need (claude-code#46533); DELETE ends the session, and the
/// app's id is refused from then on, as a mount's is.
#[tokio::test]
async fn get_stream_delete_and_a_member_that_forgot_its_session() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let (everything, url) = start_everything(&peers, "streamableHttp").await;
    let gw = gateway(
        vec![time_upstream(&peers), http("everything", &url)],
        vec![app("suite", vec![named("time"), named("everything")])],
    )
    .await;
    let (mut c, _) = AppClient::initialize(gw.url_for("/suite/mcp")).await;
    c.list_all("tools/list", "tools", "name").await;
    let mut headers = c.headers();
    headers.push(("accept", "text/event-stream"));
    let (status, h, mut stream) =
        support::clients::open_sse(http::Method::GET, &c.url, &headers, "")
            .await
            .unwrap();
    assert_eq!(status, 200);
    assert_eq!(h["content-type"], "text/event-stream");
    // A member's own messages (server-everything's simulated logs, every 5 s)
    // arrive on the app's stream.
    let toggle = json!({"name": "toggle-simulated-logging", "arguments": {}});
    c.result("tools/call", toggle.clone()).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let log = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let e = stream.next_event(left).await.unwrap().expect("an event");
        let m = e.json().unwrap_or_default();
        if m["method"] == "notifications/message" {
            break m;
        }
    };
    assert!(log["params"]["level"].is_string(), "{log}");
    c.result("tools/call", toggle).await;
    drop(stream);

    // Cost of the app against the member's own path: the same call, timed.
    let (mut direct, _) = AppClient::initialize(gw.url_for("/everything/mcp")).await;
    let echo = |name: &str| json!({"name": name, "arguments": {"message": "t"}});
    let rounds = 30;
    let t = std::time::Instant::now();
    for _ in 0..rounds {
        direct.result("tools/call", echo("echo")).await;
    }
    let alone = t.elapsed() / rounds;
    let t = std::time::Instant::now();
    for _ in 0..rounds {
        c.result("tools/call", echo("echo")).await;
    }
    let through_app = t.elapsed() / rounds;
    eprintln!("tools/call echo: {alone:?} on the mount, {through_app:?} through the app");
    assert!(through_app < alone * 20 + Duration::from_millis(200));

    // server-everything restarts on its port: it knows no session now.
    let port: u16 = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    drop(everything);
    let (_everything, again) =
        support::peers::start_everything_on(&peers, "streamableHttp", port).await;
    assert_eq!(again, url);
    let r = c.result("tools/call", echo("echo")).await;
    assert!(text_of(&r).contains('t'), "{r}");

    let (status, _, _) =
        support::clients::request_raw(http::Method::DELETE, &c.url, &c.headers(), "").await;
    assert!(status.is_success(), "{status}");
    let body = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": echo("echo")});
    let (status, _, _) = post_json(&c.url, &c.headers(), body.to_string()).await;
    assert_eq!(status, 404, "ended by its client");
    gw.shutdown().await;
}

/// The conformance suite against an app over server-everything (HTTP) and
/// mcp-server-time (stdio) passes every scenario it passes against
/// server-everything alone, but for the two that call tools no member has.
#[tokio::test]
async fn conformance_through_an_app_passes_what_everything_alone_passes() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let (_everything, url) = start_everything(&peers, "streamableHttp").await;
    let gw = gateway(
        vec![http("everything", &url), time_upstream(&peers)],
        vec![app("suite", vec![named("everything"), named("time")])],
    )
    .await;
    let run = |target: String, label: &'static str| {
        let peers = &peers;
        async move {
            let out = tempfile::NamedTempFile::new().unwrap();
            let mut cmd = std::process::Command::new(peers.script("conformance.sh"));
            cmd.arg(&target)
                .arg(out.path())
                .env(
                    "CONFORMANCE_TIMEOUT",
                    support::peers::CONFORMANCE_OWN_TIMEOUT_S,
                )
                .current_dir(&peers.root);
            if let Ok(dir) = std::env::var("APPS_CONFORMANCE_DIR") {
                cmd.env(
                    "CONFORMANCE_RESULTS_DIR",
                    format!("{dir}/{}", label.replace(" ", "-")),
                );
            }
            let mut proc =
                support::process::Proc::spawn(format!("conformance ({label})"), &mut cmd);
            let (status, _, stderr) = proc
                .finish_async(support::peers::CONFORMANCE_LIMIT)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(status.success(), "conformance against {label}: {stderr}");
            std::fs::read_to_string(out.path())
                .unwrap()
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect::<std::collections::BTreeSet<String>>()
        }
    };
    let alone = run(url.clone(), "server-everything alone").await;
    assert!(alone.contains("tools-list"), "{alone:?}");
    let through = run(gw.url_for("/suite/mcp"), "the app").await;
    let lost: Vec<_> = alone.difference(&through).collect();
    let gained: Vec<_> = through.difference(&alone).collect();
    println!(
        "[conformance] alone {}, through the app {}: gained {gained:?}, lost {lost:?}",
        alone.len(),
        through.len()
    );
    // Two scenarios call tools server-everything does not have
    // (`test_simple_text`, `test_error_handling`): alone it answers a tool
    // result with `isError`, which the suite counts as a pass; the app answers
    // JSON-RPC `-32602` "Unknown tool", the specification's own answer to a
    // name no member lists. Every other scenario passing alone passes here.
    let unknown_tools = ["tools-call-error", "tools-call-simple-text"];
    let lost: Vec<_> = lost
        .into_iter()
        .filter(|s| !unknown_tools.contains(&s.as_str()))
        .collect();
    assert!(
        lost.is_empty(),
        "passing alone, failing through the app: {lost:?}"
    );
    gw.shutdown().await;
}

/// An overlay file naming the app (`suite.toml`): each entry reaches the
/// member that owns its listed name, by the member's prefix or as the one
/// unprefixed member's, and the widget is served through the app.
#[tokio::test]
async fn an_overlay_file_naming_the_app_reaches_its_members() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let overlays = dir.path().join("overlays");
    std::fs::create_dir_all(overlays.join("widgets/clock")).unwrap();
    std::fs::write(
        overlays.join("widgets/clock/index.html"),
        "<!doctype html><p id=\"app-clock\">clock</p>",
    )
    .unwrap();
    std::fs::write(
        overlays.join("suite.toml"),
        "[tools.get_current_time]\nwidget = \"clock\"\n\n\
         [tools.pg_paged_1]\nwidget = \"clock\"\ntitle = \"Page one\"\n\n\
         [render.pg_show]\nwidget = \"clock\"\ndata_tools = [\"pg_paged_1\"]\n\
         input_schema = { type = \"object\" }\n",
    )
    .unwrap();
    let gw = TestGateway::start_with(Config {
        upstreams: vec![time_upstream(&peers), paged_upstream(&peers)],
        apps: vec![app("suite", vec![named("time"), prefixed("paged", "pg_")])],
        overlays,
        ..test_config()
    })
    .await;

    let (mut c, _) = AppClient::initialize(gw.url_for("/suite/mcp")).await;
    let mut tools: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let page = c.result("tools/list", params).await;
        tools.extend(page["tools"].as_array().unwrap().iter().cloned());
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {tools:?}"))
            .clone()
    };
    let time = tool("get_current_time");
    let uri = time["_meta"]["ui"]["resourceUri"]
        .as_str()
        .unwrap_or_else(|| panic!("a widget from suite.toml: {time}"))
        .to_owned();
    assert!(uri.starts_with("ui://"), "{uri}");
    let paged = tool("pg_paged_1");
    assert_eq!(paged["_meta"]["ui"]["resourceUri"], json!(uri), "{paged}");
    assert_eq!(paged["title"], "Page one", "{paged}");
    assert!(
        tool("pg_paged_2")["_meta"]["ui"].is_null(),
        "only the named tool"
    );
    let show = tool("pg_show");
    assert_eq!(show["_meta"]["ui"]["resourceUri"], json!(uri), "{show}");

    // The widget, served through the app.
    let read = c.result("resources/read", json!({"uri": uri})).await;
    let html = read["contents"][0]["text"].as_str().unwrap_or_default();
    assert!(html.contains("app-clock"), "{read}");

    // The member's own path gets the same overlays, under its own names.
    let (mut direct, _) = AppClient::initialize(gw.url_for("/paged/mcp")).await;
    let (own, _) = direct.list_all("tools/list", "tools", "name").await;
    assert!(own.contains(&"show".to_owned()), "{own:?}");
    gw.shutdown().await;
}

/// `check` takes a file naming the app as the members' overlays: no unknown
/// upstream, and each entry compared with its member's live `tools/list`,
/// reported at the name the file writes.
#[tokio::test]
async fn check_compares_an_app_files_entries_with_their_members() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("overlays")).unwrap();
    std::fs::write(
        dir.path().join("overlays/suite.toml"),
        "[tools.get_current_time]\ntitle = \"Now\"\n\n[tools.pg_paged_1]\ntitle = \"One\"\n\n\
         [tools.pg_nope]\ntitle = \"None\"\n",
    )
    .unwrap();
    let time = time_stdio_command(&peers);
    let script = peers.script("paged_server.py").display().to_string();
    let config = format!(
        "overlays = \"overlays\"\n\
         [[upstream]]\nname = \"time\"\ncommand = {:?}\nargs = {:?}\n\
         [[upstream]]\nname = \"paged\"\ncommand = {:?}\nargs = [{script:?}]\n\
         [[app]]\nname = \"suite\"\nupstreams = [\"time\", {{ upstream = \"paged\", prefix = \"pg_\" }}]\n",
        time[0],
        &time[1..],
        peers.python.display().to_string(),
    );
    std::fs::write(dir.path().join("gw.toml"), config).unwrap();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    command
        .args(["check", "--config", "gw.toml"])
        .current_dir(dir.path())
        .kill_on_drop(true);
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") {
            command.env_remove(key);
        }
    }
    let out = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("check ends")
        .expect("the binary runs");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("suite.toml:7: tools.pg_nope: upstream 'paged' has no tool `nope`"),
        "{all}"
    );
    assert!(!all.contains("not configured"), "{all}");
    assert!(all.contains("1 problem in overlays"), "{all}");
    // The app directory's rules name the entry as the file writes it too.
    assert!(
        all.contains("warning: overlays/suite.toml:4: tools.pg_paged_1.annotations:"),
        "{all}"
    );
}

/// `serve` lists an app's members once at start, as `check` does, and logs a
/// tool name two members offer before any client meets it.
#[tokio::test]
async fn serve_names_a_collision_at_start() {
    let Some((peers, _turn)) = setup().await else {
        return;
    };
    let (_everything, url) = start_everything(&peers, "streamableHttp").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("overlays")).unwrap();
    let config = format!(
        "overlays = \"overlays\"\nlisten = \"127.0.0.1:0\"\n\
         [[upstream]]\nname = \"one\"\nurl = {url:?}\npath = \"/one/mcp\"\n\
         [[upstream]]\nname = \"two\"\nurl = {url:?}\npath = \"/two/mcp\"\n\
         [[app]]\nname = \"clash\"\nupstreams = [\"one\", \"two\"]\n"
    );
    std::fs::write(dir.path().join("gw.toml"), config).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-ui-gateway"));
    cmd.args(["serve", "--config", "gw.toml"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (key, _) in std::env::vars() {
        if key.starts_with("MCP_UI_GATEWAY_") {
            cmd.env_remove(key);
        }
    }
    let gateway = support::process::Proc::start("serve", &mut cmd).expect("the binary runs");
    let line = gateway
        .look_for_async(Duration::from_secs(60), |_, line| {
            line.contains("is offered by both").then(|| line.to_owned())
        })
        .await
        .unwrap_or_else(|e| {
            panic!(
                "no collision logged at start ({e:?}):\n{}",
                gateway.tail(20)
            )
        });
    assert!(
        line.contains("app `clash`: tool `") && line.contains("`one` and `two`"),
        "{line}"
    );
}

/// A member that never answers (an HTTP upstream that takes requests and
/// says nothing) beside the fixture: the app's `initialize` waits for it
/// `limits.app_member_timeout_secs`, not `request_timeout_secs`, and leaves it
/// out of the session; a name under its prefix answers -32000 naming it; an
/// app of that member alone says no member could be initialized. Before, an
/// app `initialize` waited the whole request timeout (300 s by default).
#[tokio::test]
async fn a_silent_member_is_left_out_after_its_own_bound() {
    use support::upstreams::{BoxResponse, HttpFlavor, spawn_server, start_http};
    let fixture = start_http(HttpFlavor::StatefulSse).await.unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let silent = spawn_server(
        stop.clone(),
        "/mcp",
        |_req: hyper::Request<hyper::body::Incoming>| std::future::pending::<BoxResponse>(),
    )
    .await
    .unwrap();
    let mut config = Config {
        upstreams: vec![http("fixture", &fixture.url), http("silent", &silent.url)],
        apps: vec![
            app(
                "suite",
                vec![named("fixture"), prefixed("silent", "quiet_")],
            ),
            app("alone", vec![prefixed("silent", "quiet_")]),
        ],
        ..test_config()
    };
    config.limits.app_member_timeout_secs = 1;
    config.limits.request_timeout_secs = 30;
    let gw = TestGateway::start_with(config).await;

    let started = std::time::Instant::now();
    let (mut c, init) = AppClient::initialize(gw.url_for("/suite/mcp")).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "initialize took {took:?}: {init}"
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    let tools = c.result("tools/list", json!({})).await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("quiet_")), "{names:?}");
    let (message, m) = c
        .error(
            "tools/call",
            json!({"name": "quiet_anything", "arguments": {}}),
        )
        .await;
    assert_eq!(m["error"]["code"], -32000, "{m}");
    assert!(
        message.contains("member `silent`") && message.contains("not available in this session"),
        "{m}"
    );
    let echo = c
        .result(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still here"}}),
        )
        .await;
    assert_eq!(echo["content"][0]["text"], "still here", "{echo}");

    // An app of the silent member alone: refused within the bound, saying why.
    let started = std::time::Instant::now();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "apps-test", "version": "1"}}});
    let (status, _, bytes) = post_json(&gw.url_for("/alone/mcp"), &[], body.to_string()).await;
    assert_eq!(status, 200);
    let m: Value = serde_json::from_slice(&bytes).unwrap();
    let message = m["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no member could be initialized")
            && message.contains("limits.app_member_timeout_secs"),
        "{m}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    gw.shutdown().await;
    fixture.shutdown().await;
    stop.cancel();
}

/// A member whose `tools/list` is 12 MB: through the app the page counts
/// against `limits.max_buffered_bytes` as answers read whole do on a mount
/// (503 with `Retry-After` when over), while the member's own path, which
/// rewrites nothing, streams it; with room, the app lists every tool, each
/// item kept as the member wrote it but for its prefixed name.
#[tokio::test]
async fn a_large_member_listing_counts_against_the_memory_budget() {
    use support::upstreams::{BoxResponse, spawn_server};
    const TOOLS: usize = 20_000;
    let list = {
        let tools: Vec<String> = (0..TOOLS)
            .map(|i| {
                format!(
                    r#"{{"name":"t{i}","description":"{}","inputSchema":{{"type":"object"}}}}"#,
                    "d".repeat(560)
                )
            })
            .collect();
        format!(r#"{{"tools":[{}]}}"#, tools.join(","))
    };
    assert!(list.len() > 12_000_000);
    let list = std::sync::Arc::new(list);
    let stop = tokio_util::sync::CancellationToken::new();
    let up = spawn_server(stop.clone(), "/mcp", move |req: hyper::Request<hyper::body::Incoming>| {
        let list = list.clone();
        async move {
            use http_body_util::{BodyExt, Full};
            let body = req.into_body().collect().await.unwrap().to_bytes();
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let id = v["id"].to_string();
            let text = match v["method"].as_str() {
                Some("initialize") => format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"big","version":"1"}}}}}}"#
                ),
                Some("tools/list") => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{list}}}"#),
                Some(_) => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#),
                None => String::new(),
            };
            let mut r: BoxResponse = hyper::Response::new(Full::new(bytes::Bytes::from(text)).boxed());
            if v.get("id").is_none() {
                *r.status_mut() = http::StatusCode::ACCEPTED;
            } else {
                r.headers_mut()
                    .insert("content-type", "application/json".parse().unwrap());
            }
            r
        }
    })
    .await
    .unwrap();
    for budget in [8 << 20, 256 << 20] {
        let mut config = Config {
            upstreams: vec![http("big", &up.url)],
            apps: vec![app("suite", vec![prefixed("big", "b_")])],
            ..test_config()
        };
        config.limits.max_buffered_bytes = budget;
        let gw = TestGateway::start_with(config).await;
        // The member's own path streams it, whatever the budget.
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
        let (status, _, bytes) = post_json(
            &gw.url(),
            &[("mcp-protocol-version", "2025-06-18")],
            body.to_string(),
        )
        .await;
        assert_eq!(status, 200);
        assert!(bytes.len() > 12_000_000);
        let (status, headers, bytes) = post_json(
            &gw.url_for("/suite/mcp"),
            &[("mcp-protocol-version", "2025-06-18")],
            body.to_string(),
        )
        .await;
        if budget == 8 << 20 {
            assert_eq!(
                status,
                503,
                "{}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(400)])
            );
            assert_eq!(headers["retry-after"], "1");
            let m: Value = serde_json::from_slice(&bytes).unwrap();
            assert!(
                m["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("limits.max_buffered_bytes"),
                "{m}"
            );
        } else {
            assert_eq!(status, 200);
            let m: Value = serde_json::from_slice(&bytes).unwrap();
            let tools = m["result"]["tools"].as_array().unwrap();
            assert_eq!(tools.len(), TOOLS);
            assert_eq!(tools[7]["name"], "b_t7");
            assert_eq!(tools[7]["inputSchema"], json!({"type": "object"}));
        }
        gw.shutdown().await;
    }
    stop.cancel();
}

/// Hosts call a tool without listing first, and several at once (ChatGPT's
/// sessionless calls, a host reconnecting after a restart). On a fresh app,
/// the first such call lists the members to find the tool's owner; the calls
/// that come while it lists wait for that listing instead of being told the
/// tool is unknown.
#[tokio::test]
async fn concurrent_first_calls_to_a_fresh_app_wait_for_its_listing() {
    use support::upstreams::{HttpFlavor, start_http};
    const CALLS: usize = 16;
    let one = start_http(HttpFlavor::StatefulSse).await.expect("fixture");
    let two = start_http(HttpFlavor::StatelessJson)
        .await
        .expect("fixture");
    let gw = gateway(
        vec![http("one", &one.url), http("two", &two.url)],
        vec![app("suite", vec![named("one"), prefixed("two", "t_")])],
    )
    .await;
    let url = gw.url_for("/suite/mcp");
    let clients = futures_util::future::join_all(
        (0..CALLS).map(|_| async { AppClient::initialize(url.clone()).await.0 }),
    )
    .await;
    let answers = futures_util::future::join_all(clients.into_iter().enumerate().map(
        |(i, mut c)| async move {
            let name = if i % 2 == 0 { "echo" } else { "t_echo" };
            let text = format!("call {i}");
            let m = c
                .request(
                    "tools/call",
                    json!({"name": name, "arguments": {"text": text}}),
                )
                .await;
            (text, m)
        },
    ))
    .await;
    let wrong: Vec<String> = answers
        .iter()
        .filter(|(text, m)| text_of(&m["result"]) != *text)
        .map(|(_, m)| m.to_string())
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {CALLS} first calls were not answered by their member: {wrong:?}",
        wrong.len()
    );
}
