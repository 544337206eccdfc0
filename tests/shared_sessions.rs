//! Client sessions on one upstream connection (`sessions = "shared"`, the
//! default for stdio and legacy SSE upstreams): each client gets what is
//! its own and nothing of another's. The upstream is the fixture server
//! (rmcp, stdio), whose tools ask the client for sampling, report progress
//! to the caller's token, log, and sleep; two clients use the same request
//! ids and progress tokens throughout.

use std::time::Duration;

use hyper::{Method, StatusCode};
use mcp_ui_model::config::Config;
use serde_json::{Value, json};
use support::clients::{SseReader, open_sse, parse_sse, post_json};
use support::gateway::{self as gw, TestGateway};
use support::upstreams::STDIO_COMMAND;

use crate::support;

const WAIT: Duration = Duration::from_secs(10);

/// A client session: its headers.
struct Client {
    url: String,
    headers: Vec<(String, String)>,
}

impl Client {
    /// Opens a session declaring `capabilities`.
    async fn open(url: &str, capabilities: Value) -> Client {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":capabilities,
            "clientInfo":{"name":"shared-test","version":"1"}}});
        let (status, headers, body) = post_json(url, &[], init.to_string()).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        let sid = headers["mcp-session-id"].to_str().unwrap().to_owned();
        let c = Client {
            url: url.to_owned(),
            headers: vec![
                ("mcp-session-id".into(), sid),
                ("mcp-protocol-version".into(), "2025-11-25".into()),
            ],
        };
        let (status, _, _) = c
            .post(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        assert_eq!(status, StatusCode::ACCEPTED);
        c
    }

    fn refs(&self) -> Vec<(&str, &str)> {
        self.headers
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect()
    }

    async fn post(&self, m: Value) -> (StatusCode, hyper::HeaderMap, Vec<u8>) {
        let (s, h, b) = post_json(&self.url, &self.refs(), m.to_string()).await;
        (s, h, b.to_vec())
    }

    /// A request's answer read as it comes.
    async fn stream(&self, m: Value) -> SseReader {
        let mut h = self.refs();
        h.push(("content-type", "application/json"));
        h.push(("accept", "application/json, text/event-stream"));
        let (status, headers, reader) = open_sse(Method::POST, &self.url, &h, m.to_string())
            .await
            .unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["content-type"], "text/event-stream");
        reader
    }

    /// The JSON-RPC response of a request (JSON, or the last event of SSE).
    async fn call(&self, m: Value) -> Value {
        let (status, headers, body) = self.post(m).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        response(&headers, &body)
    }
}

fn response(headers: &hyper::HeaderMap, body: &[u8]) -> Value {
    if headers["content-type"] == "application/json" {
        return serde_json::from_slice(body).unwrap();
    }
    parse_sse(body)
        .iter()
        .rev()
        .find_map(|e| {
            e.json()
                .ok()
                .filter(|m: &Value| m.get("id").is_some() && m.get("method").is_none())
        })
        .unwrap_or_else(|| panic!("no response in {}", String::from_utf8_lossy(body)))
}

async fn next_json(reader: &mut SseReader) -> Value {
    loop {
        let e = reader.next_event(WAIT).await.unwrap().expect("an event");
        if !e.data.is_empty() {
            return e.json().unwrap();
        }
    }
}

/// The fixture over stdio, mounted as `name` with `sessions = "conversation"`.
fn conversation_mount(name: &str) -> mcp_ui_model::config::UpstreamConfig {
    let mut up = gw::stdio(name, STDIO_COMMAND, &["--protocol", "2025"]);
    up.sessions = Some(mcp_ui_model::config::SessionMode::Conversation);
    up
}

async fn shared_fixture() -> TestGateway {
    TestGateway::start_with(Config {
        upstreams: vec![gw::stdio("fixture", STDIO_COMMAND, &["--protocol", "2025"])],
        ..gw::test_config()
    })
    .await
}

/// A server's request reaches the client whose call caused it, under an id
/// of the gateway's; the client's answer reaches the server; a client that
/// did not declare the capability is never asked (the server is answered
/// an error at once: nothing hangs).
#[tokio::test]
async fn a_sampling_request_reaches_the_client_that_caused_it() {
    let g = shared_fixture().await;
    let sampler = Client::open(&g.url(), json!({"sampling": {}})).await;
    let plain = Client::open(&g.url(), json!({})).await;
    let mut call = sampler
        .stream(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"hi"}}}))
        .await;
    let ask = next_json(&mut call).await;
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    let id = ask["id"].clone();
    assert!(
        id.as_str()
            .is_some_and(|s| s.starts_with("mcp-ui-gateway/")),
        "{id}"
    );
    let (status, _, _) = sampler
        .post(json!({"jsonrpc":"2.0","id":id,"result":{"role":"assistant","content":{"type":"text","text":"sampled for you"},"model":"m"}}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let done = next_json(&mut call).await;
    assert_eq!(done["id"], 1);
    assert_eq!(
        done["result"]["content"][0]["text"], "sampled for you",
        "{done}"
    );

    let started = std::time::Instant::now();
    let refused = plain
        .call(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"hi"}}}))
        .await;
    assert!(started.elapsed() < Duration::from_secs(5), "no hang");
    let text = refused.to_string();
    assert!(
        refused["error"].is_object() || refused["result"]["isError"] == true,
        "{refused}"
    );
    assert!(
        text.contains("capability") || text.contains("client request failed"),
        "{text}"
    );
}

/// Two clients, the same request id and progress token at once: each gets
/// its own progress and its own answer.
#[tokio::test]
async fn progress_and_answers_of_two_clients_with_the_same_ids_stay_apart() {
    let g = shared_fixture().await;
    let a = Client::open(&g.url(), json!({})).await;
    let b = Client::open(&g.url(), json!({})).await;
    let call = |steps: u32| json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"progress","arguments":{"steps":steps},"_meta":{"progressToken":"tok"}}});
    let (ra, rb) = tokio::join!(a.post(call(2)), b.post(call(3)));
    for ((status, headers, body), steps) in [(ra, 2), (rb, 3)] {
        assert_eq!(status, StatusCode::OK);
        let events: Vec<Value> = parse_sse(&body)
            .iter()
            .filter_map(|e| e.json().ok())
            .collect();
        let progress: Vec<&Value> = events
            .iter()
            .filter(|m| m["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), steps, "{events:?}");
        assert!(
            progress
                .iter()
                .all(|p| p["params"]["progressToken"] == "tok"
                    && p["params"]["total"] == steps as f64)
        );
        let last = response(&headers, &body);
        assert_eq!(last["id"], 7);
        assert_eq!(
            last["result"]["content"][0]["text"],
            format!("completed {steps} steps")
        );
    }
}

/// One client's cancellation stops its call only, though another's waits
/// under the same id.
#[tokio::test]
async fn a_cancellation_reaches_only_the_cancelled_call() {
    let g = shared_fixture().await;
    let a = Client::open(&g.url(), json!({})).await;
    let b = Client::open(&g.url(), json!({})).await;
    let slow = json!({"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow","arguments":{"ms":1500}}});
    let (a2, slow_a) = (
        Client {
            url: a.url.clone(),
            headers: a.headers.clone(),
        },
        slow.clone(),
    );
    let first = tokio::spawn(async move { a2.post(slow_a).await });
    let second = {
        let b2 = Client {
            url: b.url.clone(),
            headers: b.headers.clone(),
        };
        let slow = slow.clone();
        tokio::spawn(async move { b2.post(slow).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _, _) = a
        .post(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s","reason":"changed my mind"}}))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (_, ha, ba) = first.await.unwrap();
    let va = response(&ha, &ba);
    assert_eq!(va["error"]["code"], -32800, "a's call was cancelled: {va}");
    let (_, hb, bb) = second.await.unwrap();
    let vb = response(&hb, &bb);
    assert!(vb["result"].is_object(), "b's call went on: {vb}");
}

/// Each client's log level decides what reaches it of the log messages
/// that accompany its own calls.
#[tokio::test]
async fn log_messages_follow_each_clients_level() {
    let g = shared_fixture().await;
    let quiet = Client::open(&g.url(), json!({})).await;
    let chatty = Client::open(&g.url(), json!({})).await;
    for (c, level) in [(&quiet, "error"), (&chatty, "debug")] {
        let v = c.call(json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":level}})).await;
        assert_eq!(v["result"], json!({}), "{v}");
    }
    let log = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"log","arguments":{"message":"told"}}});
    let (_, _, body) = chatty.post(log.clone()).await;
    assert!(String::from_utf8_lossy(&body).contains("notifications/message"));
    let (_, _, body) = quiet.post(log).await;
    assert!(
        !String::from_utf8_lossy(&body).contains("notifications/message"),
        "{}",
        String::from_utf8_lossy(&body)
    );
}

/// A request without a session (ChatGPT's tool plane) is answered on the
/// shared connection, whatever it declares; its id may be another's.
#[tokio::test]
async fn sessionless_requests_share_the_connection_with_sessions() {
    let g = shared_fixture().await;
    let a = Client::open(&g.url(), json!({})).await;
    let echo = |text: &str| json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":text}}});
    let url = g.url();
    let (with, without) = tokio::join!(
        a.call(echo("with a session")),
        post_json(
            &url,
            &[("mcp-protocol-version", "2025-11-25")],
            echo("without").to_string()
        )
    );
    assert_eq!(with["result"]["content"][0]["text"], "with a session");
    let (status, headers, body) = without;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        response(&headers, &body)["result"]["content"][0]["text"],
        "without"
    );
    let children =
        mcp_ui_upstream::upstream::stdio::Children::running(&g.gateway.upstreams.children);
    assert_eq!(children, 1, "one child for both");
}

/// `sessions = "conversation"`: one connection per conversation (ChatGPT's
/// `_meta["openai/session"]` by default, FlowFuse#8561), whichever session or
/// none its requests come with; a request that names none gets a
/// connection of its own, never another conversation's; a conversation's
/// connection ends once it has been quiet for `limits.conversation_idle_secs`.
#[tokio::test]
async fn conversations_each_get_a_connection_that_ends_when_they_go_quiet() {
    let up = conversation_mount("fixture");
    let mut config = Config {
        upstreams: vec![up],
        ..gw::test_config()
    };
    config.limits.conversation_idle_secs = 1;
    config.limits.session_reap_interval_secs = 1;
    let g = TestGateway::start_with(config).await;
    let url = g.url();
    let running = || g.gateway.upstreams.children.running();
    let echo = |talk: Option<&str>, text: &str| {
        let mut m = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":text}}});
        if let Some(t) = talk {
            m["params"]["_meta"] = json!({"openai/session": t});
        }
        m.to_string()
    };
    for (talk, text) in [("v1/a", "one"), ("v1/a", "two"), ("v1/b", "three")] {
        let (status, headers, body) = post_json(&url, &[], echo(Some(talk), text)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            response(&headers, &body)["result"]["content"][0]["text"],
            text
        );
    }
    assert_eq!(running(), 2, "one child per conversation");
    // A session whose requests name the conversation uses its connection.
    let s = Client::open(&url, json!({})).await;
    let v = s
        .call(serde_json::from_str(&echo(Some("v1/a"), "from a session")).unwrap())
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "from a session");
    assert_eq!(
        running(),
        2,
        "its initialize was answered from a connection already open"
    );
    // A request naming no conversation and no session: its own, ended after.
    let (status, headers, body) = post_json(&url, &[], echo(None, "alone")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        response(&headers, &body)["result"]["content"][0]["text"],
        "alone"
    );
    let back = support::clients::wait_until(WAIT, || (running() == 2).then_some(())).await;
    assert!(
        back.is_some(),
        "the lone request's child ended: {}",
        running()
    );
    // Quiet conversations end.
    let ended = support::clients::wait_until(WAIT, || (running() == 0).then_some(())).await;
    assert!(ended.is_some(), "{} children still running", running());
    // And start again when spoken to.
    let (status, headers, body) = post_json(&url, &[], echo(Some("v1/a"), "again")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        response(&headers, &body)["result"]["content"][0]["text"],
        "again"
    );
}

/// The key can be a header too.
#[tokio::test]
async fn a_conversation_can_be_named_by_a_header() {
    let mut up = conversation_mount("fixture");
    up.conversation_key = Some("header:x-conversation".into());
    let g = TestGateway::start_with(Config {
        upstreams: vec![up],
        ..gw::test_config()
    })
    .await;
    let echo = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}"#;
    for talk in ["a", "a", "b", "b", "a"] {
        let (status, _, _) = post_json(&g.url(), &[("x-conversation", talk)], echo).await;
        assert_eq!(status, StatusCode::OK);
    }
    assert_eq!(g.gateway.upstreams.children.running(), 2);
}

/// `tools/call` of the fixture's `progress` with `steps` steps, under id and
/// progress token `id` as written (JSON text: `0`, `-0`).
fn progress_call(id: &str, steps: u32) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"progress","arguments":{{"steps":{steps}}},"_meta":{{"progressToken":{id}}}}}}}"#
    )
}

/// The data of an answer's messages, as text (a number's spelling kept).
fn messages_of(headers: &hyper::HeaderMap, body: &[u8]) -> Vec<String> {
    if headers["content-type"] == "application/json" {
        return vec![String::from_utf8_lossy(body).into_owned()];
    }
    parse_sse(body)
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| e.data.clone())
        .collect()
}

/// Ids and progress tokens the gateway could tell apart and the server
/// cannot: `0` and `-0`, one number to the server. Two clients' calls at
/// once on one connection (one with a session, one without) each get their
/// own progress and their own answer, under the id as each wrote it; before,
/// the first got the second's answer and progress, and the second waited
/// for its timeout.
#[tokio::test]
async fn look_alike_ids_of_two_clients_stay_apart() {
    let g = shared_fixture().await;
    let a = Client::open(&g.url(), json!({})).await;
    let url = g.url();
    let mut a_headers = a.refs();
    a_headers.push(("content-type", "application/json"));
    let sessionless = [
        ("mcp-protocol-version", "2025-11-25"),
        ("content-type", "application/json"),
    ];
    let started = std::time::Instant::now();
    let (ra, rb) = tokio::join!(
        post_json(&url, &a_headers, progress_call("0", 2)),
        post_json(&url, &sessionless, progress_call("-0", 3)),
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "nothing waited for its timeout"
    );
    for ((status, headers, body), id, steps) in [(ra, "0", 2), (rb, "-0", 3)] {
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        let messages = messages_of(&headers, &body);
        let progress: Vec<&String> = messages
            .iter()
            .filter(|m| m.contains("notifications/progress"))
            .collect();
        assert_eq!(progress.len(), steps, "id {id}: {messages:?}");
        let token = format!(r#""progressToken":{id},"#);
        assert!(
            progress.iter().all(|p| p.contains(&token)),
            "id {id}: {progress:?}"
        );
        let last = messages.last().unwrap();
        assert!(last.contains(&format!(r#""id":{id},"#)), "id {id}: {last}");
        assert!(
            last.contains(&format!("completed {steps} steps")),
            "id {id}: {last}"
        );
    }
}

/// A lone client's `-0` on a connection of its own, answered `0` by the
/// server (which reads it as the number 0): answered at once, under `-0`.
#[tokio::test]
async fn a_lone_minus_zero_is_answered() {
    let g = TestGateway::start_with(Config {
        upstreams: vec![gw::per_client(gw::stdio(
            "fixture",
            STDIO_COMMAND,
            &["--protocol", "2025"],
        ))],
        ..gw::test_config()
    })
    .await;
    let a = Client::open(&g.url(), json!({})).await;
    let mut headers = a.refs();
    headers.push(("content-type", "application/json"));
    let started = std::time::Instant::now();
    let ping = r#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#;
    let (status, response_headers, body) = post_json(&g.url(), &headers, ping.to_owned()).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "no wait for the timeout"
    );
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let last = messages_of(&response_headers, &body).pop().unwrap();
    assert!(
        last.contains(r#""id":-0,"#) && last.contains("result"),
        "{last}"
    );
}

/// A conversation's connection belongs to the caller that started it: the
/// conversation key is the caller's word, so another bearer token, or none,
/// naming the same conversation gets a connection of its own, while the
/// first caller keeps finding its own.
#[tokio::test]
async fn a_conversation_is_bound_to_its_callers_credentials() {
    let up = conversation_mount("fixture");
    let g = TestGateway::start_with(Config {
        upstreams: vec![up],
        ..gw::test_config()
    })
    .await;
    let url = g.url();
    let echo = |text: &str| {
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",
            "arguments":{"text":text},"_meta":{"openai/session":"v1/shared-name"}}})
        .to_string()
    };
    let mut children = Vec::new();
    for (who, auth) in [
        ("alice", Some("Bearer alice-token")),
        ("mallory", Some("Bearer mallory-token")),
        ("no one", None),
        ("alice again", Some("Bearer alice-token")),
    ] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("authorization", a)).into_iter().collect();
        let (status, response_headers, body) = post_json(&url, &headers, echo(who)).await;
        assert_eq!(status, StatusCode::OK, "{who}");
        assert_eq!(
            response(&response_headers, &body)["result"]["content"][0]["text"],
            who
        );
        children.push(g.gateway.upstreams.children.running());
    }
    assert_eq!(
        children,
        [1, 2, 3, 3],
        "one child per caller of the conversation, the first caller's kept"
    );
}

/// New conversation keys once started 256 processes in under 4 s, after
/// which every stdio mount answered 503 for `conversation_idle_secs`. One
/// caller holds at most `limits.max_caller_connections` conversations of a
/// mount: its new one ends its own least recently used idle one, never
/// another caller's; when every one of its own is busy it is refused, 503
/// with `Retry-After` and the id of the request refused.
#[tokio::test]
async fn a_caller_flooding_conversations_ends_only_its_own_and_is_refused_only_when_all_are_busy() {
    let up = conversation_mount("fixture");
    let mut config = Config {
        upstreams: vec![up],
        ..gw::test_config()
    };
    config.limits.max_caller_connections = 3;
    let g = TestGateway::start_with(config).await;
    let url = g.url();
    let running = || g.gateway.upstreams.children.running();
    let started = || g.gateway.upstreams.pools[0].counts().1;
    let call = |talk: &str, id: u32, tool: Value| {
        let mut m = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":tool});
        m["params"]["_meta"] = json!({"openai/session": talk});
        m.to_string()
    };
    let echo = |text: &str| json!({"name":"echo","arguments":{"text":text}});
    let alice = [("authorization", "Bearer alice")];
    let (status, _, _) = post_json(&url, &alice, call("v1/alice", 1, echo("hi"))).await;
    assert_eq!(status, StatusCode::OK);
    // A flood of new conversations from a caller with no credentials.
    for i in 0..30 {
        let (status, headers, body) =
            post_json(&url, &[], call(&format!("v1/flood-{i}"), i, echo("flood"))).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        assert_eq!(
            response(&headers, &body)["result"]["content"][0]["text"],
            "flood"
        );
    }
    let settled = support::clients::wait_until(WAIT, || (running() <= 4).then_some(())).await;
    assert!(
        settled.is_some(),
        "{} processes after 30 conversations of one caller (3 its own at most, and alice's)",
        running()
    );
    // Alice's conversation was not ended for the flood: no process started.
    let before = started();
    let (status, headers, body) = post_json(&url, &alice, call("v1/alice", 2, echo("again"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        response(&headers, &body)["result"]["content"][0]["text"],
        "again"
    );
    assert_eq!(started(), before, "alice's process was kept");
    // Every conversation of the caller busy: the next is refused, saying so.
    let slow = json!({"name":"slow","arguments":{"ms":3000}});
    let mut busy = Vec::new();
    for i in 0..3 {
        let (url, body) = (
            url.clone(),
            call(&format!("v1/busy-{i}"), 100 + i, slow.clone()),
        );
        busy.push(tokio::spawn(
            async move { post_json(&url, &[], body).await },
        ));
    }
    let all_busy = support::clients::wait_until(WAIT, || {
        let waiting: usize = g.gateway.upstreams.pools[0]
            .live()
            .iter()
            .map(|s| s.waiting())
            .sum();
        (waiting >= 3).then_some(())
    })
    .await;
    assert!(all_busy.is_some(), "three slow calls waiting");
    let (status, headers, body) = post_json(&url, &[], call("v1/one-more", 77, echo("x"))).await;
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(headers["retry-after"], "1");
    let refusal: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        refusal["id"], 77,
        "the refusal names the request: {refusal}"
    );
    let text = refusal["error"]["message"].as_str().unwrap();
    assert!(text.contains("limits.max_caller_connections"), "{text}");
    // Alice is not refused for it.
    let (status, _, _) = post_json(&url, &alice, call("v1/alice-2", 3, echo("fine"))).await;
    assert_eq!(status, StatusCode::OK);
    for b in busy {
        let (status, _, _) = b.await.unwrap();
        assert_eq!(status, StatusCode::OK);
    }
}

/// Tables that once grew without a count: at the process limit, every
/// failed start of a new conversation left a place behind (150,000 keys: RSS
/// 31 to 57 MB, kept 600 s); and client sessions of a shared connection had
/// no limit (60,000 added 12.6 MB, kept 3,600 s). A failed start leaves
/// nothing; past `limits.max_client_sessions` the least recently used are
/// forgotten, and a forgotten session goes on working.
#[tokio::test]
async fn failed_starts_and_forgotten_client_sessions_leave_no_table_growing() {
    let talk = conversation_mount("talk");
    let shared = gw::stdio("shared", STDIO_COMMAND, &["--protocol", "2025"]);
    let mut config = Config {
        upstreams: vec![talk, shared],
        ..gw::test_config()
    };
    config.limits.max_stdio_children = 2;
    config.limits.max_client_sessions = 16;
    let g = TestGateway::start_with(config).await;
    let talk_url = g.url_for("/talk/mcp");
    let shared_url = g.url_for("/shared/mcp");
    // The shared mount's connection takes one process; a busy conversation
    // the other.
    let first = Client::open(&shared_url, json!({})).await;
    let slow = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow",
        "arguments":{"ms":3000},"_meta":{"openai/session":"v1/busy"}}});
    let busy = {
        let url = talk_url.clone();
        tokio::spawn(async move { post_json(&url, &[], slow.to_string()).await })
    };
    let waiting = support::clients::wait_until(WAIT, || {
        (g.gateway.upstreams.pools[0]
            .live()
            .iter()
            .map(|s| s.waiting())
            .sum::<usize>()
            == 1)
            .then_some(())
    })
    .await;
    assert!(waiting.is_some(), "the slow call is waiting");
    for i in 0..200 {
        let m = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"echo",
            "arguments":{"text":"x"},"_meta":{"openai/session":format!("v1/new-{i}")}}});
        let (status, headers, body) = post_json(&talk_url, &[], m.to_string()).await;
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            String::from_utf8_lossy(&body)
        );
        assert_eq!(headers["retry-after"], "1");
        let refusal: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(refusal["id"], i, "{refusal}");
    }
    assert_eq!(
        g.gateway.upstreams.pools[0].places(),
        1,
        "200 failed starts left places behind"
    );
    assert_eq!(busy.await.unwrap().0, StatusCode::OK);
    // 300 client sessions of the shared connection (Claude opens one per call).
    for _ in 0..300 {
        Client::open(&shared_url, json!({})).await;
        let kept = g.gateway.upstreams.pools[1].peers().len();
        assert!(kept <= 16, "{kept} client sessions kept");
    }
    // The first, long forgotten, still works.
    let v = first
        .call(json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}))
        .await;
    assert_eq!(v["result"]["content"][0]["text"], "still here");
}
